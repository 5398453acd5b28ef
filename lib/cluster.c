/* The cluster model: refcounted snapshots of the cluster (distribution,
 * nodes) and of an index's layout and primaries, the parsers that build them
 * from the servers' JSON answers, and the shard of a document under an
 * index entry. Plain code over plain data: the reads are in topology_read.c. */
#include "cluster.h"
#include "murmur3.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Snapshots */

void esbulk__cluster_release(esbulk__cluster_t *c)
{
    int i;

    if (c == NULL || atomic_fetch_sub(&c->refs, 1) != 1)
        return;
    for (i = 0; i < c->nnodes; i++) {
        free(c->nodes[i].id);
        free(c->nodes[i].name);
        free(c->nodes[i].http);
    }
    free(c->nodes);
    free(c->distribution);
    free(c->version);
    free(c);
}

esbulk__cluster_t *esbulk__cluster_ref(esbulk__cluster_t *c)
{
    if (c != NULL)
        atomic_fetch_add(&c->refs, 1);
    return c;
}

void esbulk__index_release(esbulk__index_t *e)
{
    if (e == NULL || atomic_fetch_sub(&e->refs, 1) != 1)
        return;
    free(e->name);
    free(e->write_index);
    free(e->alias_routing);
    free(e->reason);
    free(e->primary);
    esbulk__cluster_release(e->cluster);
    free(e);
}

esbulk_err_t esbulk__index_shard(const esbulk__index_t *e, const char *id, size_t id_len,
                                 const char *routing, size_t routing_len, int32_t *shard)
{
    if (e->alias_routing != NULL) {
        size_t al = strlen(e->alias_routing);

        if (routing_len > 0 && (routing_len != al || memcmp(routing, e->alias_routing, al) != 0))
            return ESBULK_ERR_ROUTING_CONFLICT;
        routing = e->alias_routing;
        routing_len = al;
    }
    return esbulk_layout_shard(&e->layout, id, id_len, routing, routing_len, shard);
}

/* Entries are numbered across every handle of the process, from 1. */
static _Atomic uint64_t index_serials;

esbulk__index_t *esbulk__index_new(const char *name)
{
    esbulk__index_t *e = calloc(1, sizeof(*e));

    if (e == NULL)
        return NULL;
    atomic_init(&e->refs, 1);
    e->serial = atomic_fetch_add(&index_serials, 1) + 1;
    esbulk__layout_init(&e->layout);
    if ((e->name = esbulk__strdup(name)) == NULL) {
        free(e);
        return NULL;
    }
    return e;
}

/* ------------------------------------------------------------------------- */
/* JSON helpers: tolerant of unknown fields, strict about the ones used. */

/* The value at a dotted path in nested or flat settings ("index.x.y"). */
static json_t *setting_get(json_t *obj, const char *path)
{
    json_t *v;
    const char *dot;

    if (!json_is_object(obj))
        return NULL;
    if ((v = json_object_get(obj, path)) != NULL)
        return v;
    for (dot = strchr(path, '.'); dot != NULL; dot = strchr(dot + 1, '.')) {
        char prefix[128];
        size_t n = (size_t)(dot - path);

        if (n >= sizeof(prefix))
            return NULL;
        memcpy(prefix, path, n);
        prefix[n] = '\0';
        v = json_object_get(obj, prefix);
        if (json_is_object(v)) {
            json_t *r = setting_get(v, dot + 1);
            if (r != NULL)
                return r;
        }
    }
    return NULL;
}

/* An integer from a JSON integer or a decimal string. -1 when absent or bad. */
int64_t esbulk__json_int(json_t *v, int *ok)
{
    *ok = 0;
    if (json_is_integer(v)) {
        *ok = 1;
        return json_integer_value(v);
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        char *end;
        long long n;

        errno = 0;
        n = strtoll(s, &end, 10);
        if (errno == 0 && end != s && *end == '\0') {
            *ok = 1;
            return n;
        }
    }
    return -1;
}

static int json_truthy(json_t *v)
{
    return json_is_true(v) || (json_is_string(v) && strcmp(json_string_value(v), "true") == 0);
}

/* ------------------------------------------------------------------------- */
/* Parsers */

esbulk_err_t esbulk__topology_parse_root(json_t *root, char **distribution, char **version,
                                         char *errstr, size_t errstr_size)
{
    json_t *ver = json_object_get(root, "version");
    json_t *number = json_object_get(ver, "number");
    json_t *dist = json_object_get(ver, "distribution");

    if (!json_is_string(number)) {
        esbulk__errstr(errstr, errstr_size,
                       "GET / answer has no version.number: not Elasticsearch or OpenSearch?");
        return ESBULK_ERR_BAD_RESPONSE;
    }
    *version = esbulk__strdup(json_string_value(number));
    *distribution = esbulk__strdup(
        json_is_string(dist) && strcmp(json_string_value(dist), "opensearch") == 0
            ? "opensearch" : "elasticsearch");
    if (*version == NULL || *distribution == NULL) {
        free(*version);
        free(*distribution);
        *version = *distribution = NULL;
        return ESBULK_ERR_NOMEM;
    }
    return ESBULK_OK;
}

char *esbulk__publish_address_to_hostport(const char *pa)
{
    const char *slash = strchr(pa, '/'), *colon;
    char *out;
    size_t hlen;

    if (slash == NULL)
        return esbulk__strdup(pa);
    /* "hostname/ip:port": keep the hostname (TLS verification), take the port */
    colon = strrchr(slash, ':');
    if (colon == NULL || slash == pa)
        return esbulk__strdup(slash + 1);
    hlen = (size_t)(slash - pa);
    out = malloc(hlen + strlen(colon) + 1);
    if (out == NULL)
        return NULL;
    memcpy(out, pa, hlen);
    strcpy(out + hlen, colon);
    return out;
}

/* Fills the layout and routability of e from the index's settings object.
 * routing_num_shards: the metadata value when > 0. */
esbulk_err_t esbulk__index_parse_layout(json_t *settings, int64_t routing_num_shards, int is_es,
                                        esbulk__index_t *e, char *errstr, size_t errstr_size)
{
    int ok;
    int64_t shards = esbulk__json_int(setting_get(settings, "index.number_of_shards"), &ok);
    int64_t psize, created, rs;
    json_t *mode, *rpath;

    if (!ok || shards < 1 || shards > 100000) {
        esbulk__errstr(errstr, errstr_size,
                       "index %s: settings lack a valid index.number_of_shards", e->write_index);
        return ESBULK_ERR_BAD_RESPONSE;
    }
    e->layout.shards = (int32_t)shards;
    psize = esbulk__json_int(setting_get(settings, "index.routing_partition_size"), &ok);
    if (!ok)
        psize = 1;
    if (psize < 1 || psize > shards * 1024) {
        esbulk__errstr(errstr, errstr_size, "index %s: invalid routing_partition_size %lld",
                       e->write_index, (long long)psize);
        return ESBULK_ERR_BAD_RESPONSE;
    }
    e->layout.partition_size = (int32_t)psize;
    created = esbulk__json_int(setting_get(settings, "index.version.created"), &ok);
    e->version_created = ok ? created : 0;

    rs = routing_num_shards;
    if (rs <= 0) {
        rs = esbulk__json_int(setting_get(settings, "index.number_of_routing_shards"), &ok);
        if (!ok)
            rs = 0;
    }
    /* Indices created before 7.0 default routing_num_shards to shards. */
    if (rs <= 0 && e->version_created > 0 && e->version_created < 7000099)
        rs = shards;
    if (rs > 0 && (rs < shards || rs % shards != 0 || rs > INT32_MAX)) {
        esbulk__errstr(errstr, errstr_size,
                       "index %s: routing_num_shards %lld is not a multiple of %lld shards",
                       e->write_index, (long long)rs, (long long)shards);
        return ESBULK_ERR_BAD_RESPONSE;
    }
    e->layout.routing_shards = (int32_t)(rs > 0 ? rs : 0);
    /* Elasticsearch 9.4's MOD_ROUTING_FUNCTION; OpenSearch ids are unrelated. */
    e->layout.fn = (is_es && e->version_created >= 9064000) ? ESBULK_ROUTE_MOD
                                                            : ESBULK_ROUTE_LEGACY;

    mode = setting_get(settings, "index.mode");
    rpath = setting_get(settings, "index.routing_path");
    if (json_is_string(mode) && strcmp(json_string_value(mode), "time_series") == 0) {
        e->state = ESBULK__IDX_UNROUTABLE;
        e->reason = esbulk__strdup("time_series index: routes on index.routing_path fields");
    } else if ((json_is_string(rpath) && json_string_length(rpath) > 0) ||
               (json_is_array(rpath) && json_array_size(rpath) > 0)) {
        e->state = ESBULK__IDX_UNROUTABLE;
        e->reason = esbulk__strdup("index.routing_path is set: routes on source fields");
    } else if (json_truthy(setting_get(settings, "index.logsdb.route_on_sort_fields"))) {
        e->state = ESBULK__IDX_UNROUTABLE;
        e->reason = esbulk__strdup("LogsDB index routing on sort fields");
    }
    if (e->state == ESBULK__IDX_UNROUTABLE && e->reason == NULL)
        return ESBULK_ERR_NOMEM;
    return ESBULK_OK;
}

void esbulk__node_ids_free(char **ids, int32_t n)
{
    int32_t i;

    if (ids == NULL)
        return;
    for (i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
}

/* Parses a shard's copies (array of {primary, node, state}) into ids[shard]. */
esbulk_err_t esbulk__index_take_primary(json_t *copies, int32_t shard, char **ids)
{
    size_t i;
    json_t *c;

    json_array_foreach(copies, i, c) {
        json_t *node = json_object_get(c, "node");
        if (json_is_true(json_object_get(c, "primary")) && json_is_string(node)) {
            free(ids[shard]);
            if ((ids[shard] = esbulk__strdup(json_string_value(node))) == NULL)
                return ESBULK_ERR_NOMEM;
        }
    }
    return ESBULK_OK;
}

esbulk_err_t esbulk__topology_parse_state(json_t *root, const char *index, int is_es,
                                          esbulk__index_t *e, char ***node_ids, char *errstr,
                                          size_t errstr_size)
{
    json_t *meta = json_object_get(json_object_get(json_object_get(root, "metadata"), "indices"),
                                   index);
    json_t *shards_obj = json_object_get(
        json_object_get(json_object_get(json_object_get(root, "routing_table"), "indices"), index),
        "shards");
    json_t *state, *copies;
    const char *key;
    esbulk_err_t err;
    int64_t rns;
    char **ids;
    int ok;

    *node_ids = NULL;
    if (!json_is_object(meta)) {
        esbulk__errstr(errstr, errstr_size, "cluster state has no metadata for index %s", index);
        return ESBULK_ERR_BAD_RESPONSE;
    }
    rns = esbulk__json_int(json_object_get(meta, "routing_num_shards"), &ok);
    err = esbulk__index_parse_layout(json_object_get(meta, "settings"), ok ? rns : 0, is_es, e,
                                     errstr, errstr_size);
    if (err != ESBULK_OK)
        return err;
    state = json_object_get(meta, "state");
    if (json_is_string(state) && strcmp(json_string_value(state), "close") == 0 &&
        e->state == ESBULK__IDX_OK) {
        e->state = ESBULK__IDX_UNROUTABLE;
        if ((e->reason = esbulk__strdup("index is closed")) == NULL)
            return ESBULK_ERR_NOMEM;
    }
    ids = calloc((size_t)e->layout.shards, sizeof(*ids));
    if (ids == NULL)
        return ESBULK_ERR_NOMEM;
    if (shards_obj != NULL && !json_is_object(shards_obj)) {
        free(ids);
        esbulk__errstr(errstr, errstr_size, "cluster state: routing table of %s is not an object",
                       index);
        return ESBULK_ERR_BAD_RESPONSE;
    }
    json_object_foreach(shards_obj, key, copies) {
        char *end;
        long s;

        errno = 0;
        s = strtol(key, &end, 10);
        if (errno || *end != '\0' || s < 0 || s >= e->layout.shards || !json_is_array(copies)) {
            esbulk__node_ids_free(ids, e->layout.shards);
            esbulk__errstr(errstr, errstr_size,
                           "cluster state: bad shard entry \"%s\" for %s (%d shards)", key,
                           index, (int)e->layout.shards);
            return ESBULK_ERR_BAD_RESPONSE;
        }
        if (esbulk__index_take_primary(copies, (int32_t)s, ids) != ESBULK_OK) {
            esbulk__node_ids_free(ids, e->layout.shards);
            return ESBULK_ERR_NOMEM;
        }
    }
    *node_ids = ids;
    return ESBULK_OK;
}

/* ------------------------------------------------------------------------- */
/* Look-ups and descriptions */

int esbulk__cluster_node_index(const esbulk__cluster_t *c, const char *id)
{
    int i;

    for (i = 0; c != NULL && id != NULL && i < c->nnodes; i++)
        if (strcmp(c->nodes[i].id, id) == 0)
            return i;
    return -1;
}

int esbulk__state_has_index(json_t *root, const char *index)
{
    return json_object_get(json_object_get(json_object_get(root, "metadata"), "indices"),
                           index) != NULL;
}

json_t *esbulk__cluster_json(const esbulk__cluster_t *c)
{
    json_t *root = json_object(), *nodes = json_array();
    int i;

    if (root == NULL || nodes == NULL) {
        json_decref(root);
        json_decref(nodes);
        return NULL;
    }
    json_object_set_new(root, "distribution", json_string(c->distribution));
    json_object_set_new(root, "version", json_string(c->version));
    json_object_set_new(root, "mode", json_string(c->seeds_only ? "seeds" : "nodes"));
    for (i = 0; i < c->nnodes; i++) {
        json_t *n = json_object();
        if (n == NULL)
            break;
        json_object_set_new(n, "id", json_string(c->nodes[i].id));
        json_object_set_new(n, "name", json_string(c->nodes[i].name));
        json_object_set_new(n, "http", c->nodes[i].http ? json_string(c->nodes[i].http) : json_null());
        json_object_set_new(n, "reachable", json_boolean(c->nodes[i].reachable));
        json_array_append_new(nodes, n);
    }
    json_object_set_new(root, "nodes", nodes);
    return root;
}

json_t *esbulk__index_json(const esbulk__index_t *e)
{
    json_t *o = json_object(), *prim = json_array();
    int32_t s;

    if (o == NULL || prim == NULL) {
        json_decref(o);
        json_decref(prim);
        return NULL;
    }
    json_object_set_new(o, "name", json_string(e->name));
    json_object_set_new(o, "write_index", e->write_index ? json_string(e->write_index) : json_null());
    json_object_set_new(o, "routable", json_boolean(e->state == ESBULK__IDX_OK));
    json_object_set_new(o, "reason", e->reason ? json_string(e->reason) : json_null());
    if (e->state == ESBULK__IDX_UNKNOWN || e->write_index == NULL) {
        json_decref(prim);
        return o;
    }
    json_object_set_new(o, "shards", json_integer(e->layout.shards));
    json_object_set_new(o, "routing_shards", json_integer(esbulk_layout_routing_shards(&e->layout)));
    json_object_set_new(o, "partition_size", json_integer(e->layout.partition_size));
    json_object_set_new(o, "function", json_string(e->layout.fn == ESBULK_ROUTE_MOD ? "mod" : "legacy"));
    json_object_set_new(o, "version_created", json_integer(e->version_created));
    json_object_set_new(o, "alias_routing", e->alias_routing ? json_string(e->alias_routing) : json_null());
    json_object_set_new(o, "source", json_string(e->from_fallback ? "settings+search_shards" : "cluster_state"));
    for (s = 0; e->primary != NULL && s < e->layout.shards; s++) {
        json_t *p = json_object();
        int32_t n = e->primary[s];
        if (p == NULL)
            break;
        json_object_set_new(p, "shard", json_integer(s));
        json_object_set_new(p, "node", n >= 0 ? json_string(e->cluster->nodes[n].name) : json_null());
        json_object_set_new(p, "http", n >= 0 && e->cluster->nodes[n].http
                                           ? json_string(e->cluster->nodes[n].http) : json_null());
        json_array_append_new(prim, p);
    }
    json_object_set_new(o, "primaries", prim);
    return o;
}
