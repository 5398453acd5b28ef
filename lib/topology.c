/* Cluster topology: distribution, nodes, index layouts and primaries. */
#include "topology.h"
#include "http.h"
#include "murmur3.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* An index not found is looked for again after this long, so that documents
 * for an index created meanwhile become routed soon. */
#define UNKNOWN_RECHECK_MS 1000
/* The longest a topology request may take. */
#define TOPOLOGY_TIMEOUT_MS 10000

struct esbulk_topology_s {
    pthread_mutex_t lock;
    esbulk__http_opts_t http;
    esbulk__url_t *seeds;
    int nseeds;
    atomic_int good_seed;   /* the seed that answered last */
    atomic_int *seed_down;  /* per seed: its failure was logged, and it has not answered
                               since (the next failures go at debug level) */
    int discovery;
    int64_t refresh_ms;
    esbulk__log_t log;
    esbulk__cluster_t *cluster; /* NULL until first fetched */
    int64_t cluster_fetched_ms;
    esbulk__index_t **indices;
    int nindices;
    atomic_int logged_state_forbidden, logged_seeds_only, logged_nodes_forbidden; /* log once */
    /* the last failed cluster fetch: not tried again for CLUSTER_RETRY_MS */
    int64_t cluster_fail_ms;
    esbulk_err_t cluster_fail_err;
    char cluster_fail_msg[256];
    /* One cluster read at a time (esbulk__topology_get_cluster): the others
     * asking meanwhile wait for it (cluster_cond) and take its outcome. */
    pthread_cond_t cluster_cond;
    int cluster_reading;     /* a read is in flight */
    uint64_t cluster_reads;  /* reads begun, numbered from 1 */
    uint64_t cluster_done;   /* the number of the last read that ended */
    int cluster_done_ok;     /* and whether it read the cluster */
};

#define CLUSTER_RETRY_MS 500

/* ------------------------------------------------------------------------- */
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

static esbulk__cluster_t *cluster_ref(esbulk__cluster_t *c)
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

static esbulk__index_t *index_new(const char *name)
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
static int64_t json_int_value(json_t *v, int *ok)
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
static esbulk_err_t layout_from_settings(json_t *settings, int64_t routing_num_shards, int is_es,
                                         esbulk__index_t *e, char *errstr, size_t errstr_size)
{
    int ok;
    int64_t shards = json_int_value(setting_get(settings, "index.number_of_shards"), &ok);
    int64_t psize, created, rs;
    json_t *mode, *rpath;

    if (!ok || shards < 1 || shards > 100000) {
        esbulk__errstr(errstr, errstr_size,
                       "index %s: settings lack a valid index.number_of_shards", e->write_index);
        return ESBULK_ERR_BAD_RESPONSE;
    }
    e->layout.shards = (int32_t)shards;
    psize = json_int_value(setting_get(settings, "index.routing_partition_size"), &ok);
    if (!ok)
        psize = 1;
    if (psize < 1 || psize > shards * 1024) {
        esbulk__errstr(errstr, errstr_size, "index %s: invalid routing_partition_size %lld",
                       e->write_index, (long long)psize);
        return ESBULK_ERR_BAD_RESPONSE;
    }
    e->layout.partition_size = (int32_t)psize;
    created = json_int_value(setting_get(settings, "index.version.created"), &ok);
    e->version_created = ok ? created : 0;

    rs = routing_num_shards;
    if (rs <= 0) {
        rs = json_int_value(setting_get(settings, "index.number_of_routing_shards"), &ok);
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

static void free_ids(char **ids, int32_t n)
{
    int32_t i;

    if (ids == NULL)
        return;
    for (i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
}

/* Parses a shard's copies (array of {primary, node, state}) into ids[shard]. */
static esbulk_err_t take_primary(json_t *copies, int32_t shard, char **ids)
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
    rns = json_int_value(json_object_get(meta, "routing_num_shards"), &ok);
    err = layout_from_settings(json_object_get(meta, "settings"), ok ? rns : 0, is_es, e, errstr,
                               errstr_size);
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
            free_ids(ids, e->layout.shards);
            esbulk__errstr(errstr, errstr_size,
                           "cluster state: bad shard entry \"%s\" for %s (%d shards)", key,
                           index, (int)e->layout.shards);
            return ESBULK_ERR_BAD_RESPONSE;
        }
        if (take_primary(copies, (int32_t)s, ids) != ESBULK_OK) {
            free_ids(ids, e->layout.shards);
            return ESBULK_ERR_NOMEM;
        }
    }
    *node_ids = ids;
    return ESBULK_OK;
}

/* ------------------------------------------------------------------------- */
/* Requests */

/* GET path from the seeds in turn until one answers. body is decoded JSON
 * (NULL if the answer is not JSON). */
static esbulk_err_t seed_get(esbulk_topology_t *topo, const char *path, long *status,
                             json_t **body, char *errstr, size_t errstr_size)
{
    esbulk_err_t err = ESBULK_ERR_TRANSPORT;
    esbulk__buf_t buf;
    int i, k;

    *body = NULL;
    esbulk__buf_init(&buf, topo->http.response_max_bytes);
    /* start from the seed that answered last: a dead first seed costs once */
    for (k = 0; k < topo->nseeds; k++) {
        char url[2048];

        i = (atomic_load(&topo->good_seed) + k) % topo->nseeds;
        snprintf(url, sizeof(url), "%s%s", topo->seeds[i].base, path);
        /* metadata requests are small: do not let one hold the caller for long */
        err = esbulk__http_request(&topo->http, "GET", url, NULL, NULL, 0,
                                   topo->http.request_timeout_ms < TOPOLOGY_TIMEOUT_MS
                                       ? topo->http.request_timeout_ms : TOPOLOGY_TIMEOUT_MS,
                                   status, &buf, errstr, errstr_size);
        if (err == ESBULK_OK) {
            atomic_store(&topo->good_seed, i);
            if (atomic_exchange(&topo->seed_down[i], 0))
                esbulk__log(&topo->log, ESBULK_LOG_NOTICE, "topology", "%s answers again",
                            topo->seeds[i].base);
            break;
        }
        /* the handle is closing: nothing the user must hear of, and no
         * other seed is asked */
        if (err == ESBULK_ERR_CLOSED)
            break;
        /* once per outage: the reads are retried every CLUSTER_RETRY_MS */
        esbulk__log(&topo->log,
                    atomic_exchange(&topo->seed_down[i], 1) ? ESBULK_LOG_DEBUG
                                                            : ESBULK_LOG_WARNING,
                    "topology", "%s", errstr);
    }
    if (err == ESBULK_OK) {
        json_error_t jerr;

        if (*status == 401 || (*status == 403 && strcmp(path, "/") == 0)) {
            esbulk__errstr(errstr, errstr_size,
                           "GET %s: HTTP %ld: the server refused the credentials", path, *status);
            err = ESBULK_ERR_AUTH;
        } else if (buf.len > 0) {
            *body = json_loadb(buf.data, buf.len, JSON_REJECT_DUPLICATES, &jerr);
            if (*body == NULL && *status == 200) {
                esbulk__errstr(errstr, errstr_size, "GET %s: answer is not JSON: %s", path,
                               jerr.text);
                err = ESBULK_ERR_BAD_RESPONSE;
            }
        }
    }
    esbulk__buf_free(&buf);
    return err;
}

static int node_answers(esbulk_topology_t *topo, const char *base)
{
    esbulk__buf_t buf;
    char url[2048];
    long status = 0;
    esbulk_err_t err;

    esbulk__buf_init(&buf, 1 << 16);
    snprintf(url, sizeof(url), "%s/", base);
    err = esbulk__http_request(&topo->http, "GET", url, NULL, NULL, 0,
                               topo->http.connect_timeout_ms, &status, &buf, NULL, 0);
    esbulk__buf_free(&buf);
    return err == ESBULK_OK && status == 200;
}

static esbulk_err_t fetch_cluster(esbulk_topology_t *topo, esbulk__cluster_t **out, char *errstr,
                                  size_t errstr_size)
{
    esbulk__cluster_t *c = calloc(1, sizeof(*c));
    json_t *root = NULL, *nodes;
    const char *scheme_end, *id;
    esbulk_err_t err;
    long status;
    json_t *n;
    int reachable = 0;

    *out = NULL;
    if (c == NULL)
        return ESBULK_ERR_NOMEM;
    atomic_init(&c->refs, 1);
    err = seed_get(topo, "/", &status, &root, errstr, errstr_size);
    if (err != ESBULK_OK)
        goto out;
    if (status != 200) {
        esbulk__errstr(errstr, errstr_size, "GET /: HTTP %ld", status);
        err = ESBULK_ERR_HTTP;
        goto out;
    }
    err = esbulk__topology_parse_root(root, &c->distribution, &c->version, errstr, errstr_size);
    if (err != ESBULK_OK)
        goto out;
    c->is_elasticsearch = strcmp(c->distribution, "elasticsearch") == 0;
    json_decref(root);
    root = NULL;

    err = seed_get(topo, "/_nodes/http?filter_path=nodes.*.name,nodes.*.http.publish_address",
                   &status, &root, errstr, errstr_size);
    if (err != ESBULK_OK)
        goto out;
    if (status == 403) {
        if (!topo->logged_nodes_forbidden++)
            esbulk__log(&topo->log, ESBULK_LOG_NOTICE, "topology",
                        "_nodes/http forbidden (HTTP 403): sending to the seed URLs only");
        c->seeds_only = 1;
        goto done;
    }
    nodes = json_object_get(root, "nodes");
    if (status != 200 || !json_is_object(nodes)) {
        esbulk__errstr(errstr, errstr_size, "GET /_nodes/http: HTTP %ld, no \"nodes\" object",
                       status);
        err = status == 200 ? ESBULK_ERR_BAD_RESPONSE : ESBULK_ERR_HTTP;
        goto out;
    }
    c->nodes = calloc(json_object_size(nodes) + 1, sizeof(*c->nodes));
    if (c->nodes == NULL) {
        err = ESBULK_ERR_NOMEM;
        goto out;
    }
    scheme_end = strstr(topo->seeds[0].base, "://");
    json_object_foreach(nodes, id, n) {
        esbulk__node_t *node = &c->nodes[c->nnodes];
        json_t *name = json_object_get(n, "name");
        json_t *pa = json_object_get(json_object_get(n, "http"), "publish_address");

        if (!json_is_string(name)) {
            esbulk__errstr(errstr, errstr_size, "_nodes/http: node %s has no name", id);
            err = ESBULK_ERR_BAD_RESPONSE;
            goto out;
        }
        c->nnodes++;
        node->id = esbulk__strdup(id);
        node->name = esbulk__strdup(json_string_value(name));
        if (node->id == NULL || node->name == NULL) {
            err = ESBULK_ERR_NOMEM;
            goto out;
        }
        if (json_is_string(pa)) {
            char *hp = esbulk__publish_address_to_hostport(json_string_value(pa));
            size_t len;

            if (hp == NULL) {
                err = ESBULK_ERR_NOMEM;
                goto out;
            }
            len = (size_t)(scheme_end - topo->seeds[0].base) + 3 + strlen(hp) + 1;
            node->http = malloc(len);
            if (node->http == NULL) {
                free(hp);
                err = ESBULK_ERR_NOMEM;
                goto out;
            }
            snprintf(node->http, len, "%.*s://%s", (int)(scheme_end - topo->seeds[0].base),
                     topo->seeds[0].base, hp);
            free(hp);
            /* One node answering at its published address shows the client
             * can reach the nodes' network; a slow or dead one among them is
             * found by its failed requests (marked down, re-routed), not by a
             * probe that a busy node can miss. */
            if (topo->discovery && (reachable > 0 || node_answers(topo, node->http))) {
                node->reachable = 1;
                reachable++;
            }
        }
    }
    if (!topo->discovery || reachable == 0) {
        c->seeds_only = 1;
        if (topo->discovery && !topo->logged_seeds_only++)
            esbulk__log(&topo->log, ESBULK_LOG_NOTICE, "topology",
                        "no node answers at its published HTTP address: sending to the seed "
                        "URLs only, still grouped by shard");
    }
done:
    esbulk__log(&topo->log, ESBULK_LOG_INFO, "topology", "cluster: %s %s, %d nodes, sending to %s",
                c->distribution, c->version, c->nnodes,
                c->seeds_only ? "the seed URLs" : "each node's HTTP address");
    err = ESBULK_OK;
    *out = c;
    c = NULL;
out:
    json_decref(root);
    esbulk__cluster_release(c);
    return err;
}

static int node_index(const esbulk__cluster_t *c, const char *id)
{
    int i;

    for (i = 0; c != NULL && id != NULL && i < c->nnodes; i++)
        if (strcmp(c->nodes[i].id, id) == 0)
            return i;
    return -1;
}

/* Resolves an alias or data stream to its write index (e->write_index). */
static esbulk_err_t resolve_name(esbulk_topology_t *topo, esbulk__index_t *e, const char *esc,
                                 char *errstr, size_t errstr_size)
{
    char path[1024];
    json_t *root = NULL;
    esbulk_err_t err;
    long status;

    snprintf(path, sizeof(path), "/_alias/%s", esc);
    err = seed_get(topo, path, &status, &root, errstr, errstr_size);
    if (err != ESBULK_OK)
        return err;
    if (status == 200 && json_is_object(root)) {
        const char *index, *only = NULL, *writer = NULL;
        json_t *v, *only_alias = NULL, *writer_alias = NULL;
        size_t members = 0;

        json_object_foreach(root, index, v) {
            json_t *a = json_object_get(json_object_get(v, "aliases"), e->name);
            if (a == NULL)
                continue;
            members++;
            only = index;
            only_alias = a;
            if (json_is_true(json_object_get(a, "is_write_index"))) {
                writer = index;
                writer_alias = a;
            }
        }
        if (members > 0) {
            json_t *a = writer ? writer_alias : only_alias;
            json_t *r = json_object_get(a, "index_routing");

            if (writer == NULL && members > 1) {
                e->state = ESBULK__IDX_UNROUTABLE;
                e->reason = esbulk__strdup("alias points to several indices and none is its "
                                           "write index");
                json_decref(root);
                return e->reason ? ESBULK_OK : ESBULK_ERR_NOMEM;
            }
            e->write_index = esbulk__strdup(writer ? writer : only);
            if (json_is_string(r) && (e->alias_routing = esbulk__strdup(json_string_value(r))) == NULL)
                err = ESBULK_ERR_NOMEM;
            json_decref(root);
            return e->write_index == NULL ? ESBULK_ERR_NOMEM : err;
        }
    }
    json_decref(root);
    root = NULL;

    snprintf(path, sizeof(path), "/_data_stream/%s", esc);
    err = seed_get(topo, path, &status, &root, errstr, errstr_size);
    if (err != ESBULK_OK)
        return err;
    if (status != 200) {
        /* Elasticsearch builds without the data-streams module answer 405:
         * _resolve/index still lists data streams and their backing indices. */
        const char *best = NULL;
        json_t *ds, *backing, *b;
        size_t i;

        json_decref(root);
        root = NULL;
        snprintf(path, sizeof(path), "/_resolve/index/%s", esc);
        err = seed_get(topo, path, &status, &root, errstr, errstr_size);
        if (err != ESBULK_OK)
            return err;
        ds = json_array_get(json_object_get(root, "data_streams"), 0);
        backing = json_object_get(ds, "backing_indices");
        /* the write index is the newest generation: the highest -NNNNNN suffix */
        json_array_foreach(backing, i, b) {
            const char *n = json_string_value(b);
            if (n != NULL && (best == NULL || strcmp(strrchr(n, '-') ? strrchr(n, '-') : n,
                                                     strrchr(best, '-') ? strrchr(best, '-') : best) > 0))
                best = n;
        }
        if (status == 200 && best != NULL) {
            e->write_index = esbulk__strdup(best);
            json_decref(root);
            return e->write_index ? ESBULK_OK : ESBULK_ERR_NOMEM;
        }
        status = 0;
    }
    if (status == 200) {
        json_t *ds = json_array_get(json_object_get(root, "data_streams"), 0);
        json_t *backing = json_object_get(ds, "indices");
        json_t *last = json_array_get(backing, json_array_size(backing) - 1);
        json_t *iname = json_object_get(last, "index_name");

        if (json_is_string(iname)) {
            e->write_index = esbulk__strdup(json_string_value(iname));
            json_decref(root);
            return e->write_index ? ESBULK_OK : ESBULK_ERR_NOMEM;
        }
    }
    json_decref(root);
    e->write_index = esbulk__strdup(e->name);
    return e->write_index ? ESBULK_OK : ESBULK_ERR_NOMEM;
}

/* The shards the server maps routing r to, from _search_shards?routing=r,
 * as a bit set (shards < 64 are compared; that is enough to tell layouts
 * apart). */
static esbulk_err_t probe_shards(esbulk_topology_t *topo, const char *esc, const char *r,
                                 uint64_t *set, char *errstr, size_t errstr_size)
{
    char path[1024];
    json_t *root = NULL, *group;
    esbulk_err_t err;
    long status;
    size_t i;

    *set = 0;
    snprintf(path, sizeof(path), "/%s/_search_shards?routing=%s", esc, r);
    err = seed_get(topo, path, &status, &root, errstr, errstr_size);
    if (err == ESBULK_OK && status != 200)
        err = ESBULK_ERR_HTTP;
    json_array_foreach(json_object_get(root, "shards"), i, group) {
        int ok;
        int64_t sh = json_int_value(json_object_get(json_array_get(group, 0), "shard"), &ok);
        if (ok && sh >= 0 && sh < 64)
            *set |= (uint64_t)1 << sh;
    }
    json_decref(root);
    return err;
}

/* Without cluster state, Elasticsearch does not show an explicit
 * number_of_routing_shards in _settings. Find it by asking the server where
 * a few routing values go and keeping the candidate (a multiple of the
 * shard count) that agrees with every answer; the default rule wins ties. */
static void probe_routing_shards(esbulk_topology_t *topo, esbulk__index_t *e, const char *esc)
{
    int32_t n = e->layout.shards, k, kmax = 1024, alive = 0, i;
    int32_t def = e->layout.routing_shards > 0 ? e->layout.routing_shards
                                               : esbulk_default_routing_shards(n);
    unsigned char *ok;

    if (n >= 64 || e->layout.fn == ESBULK_ROUTE_MOD || (ok = malloc((size_t)kmax + 1)) == NULL)
        return;
    memset(ok, 1, (size_t)kmax + 1);
    alive = kmax;
    for (i = 0; i < 24 && (alive > 1 || i < 4); i++) {
        char r[32];
        uint64_t server, mine;
        int32_t h, o, s;

        snprintf(r, sizeof(r), "esbulk-probe-%d", (int)i);
        if (probe_shards(topo, esc, r, &server, NULL, 0) != ESBULK_OK || server == 0)
            break;
        esbulk__murmur3_utf16(r, strlen(r), &h);
        for (k = 1; k <= kmax; k++) {
            esbulk_layout_t l = e->layout;
            if (!ok[k])
                continue;
            l.routing_shards = n * k;
            mine = 0;
            for (o = 0; o < l.partition_size; o++) {
                int32_t hh = esbulk__u32_to_i32((uint32_t)h + (uint32_t)o);
                s = esbulk__floor_mod(hh, l.routing_shards) / k;
                mine |= (uint64_t)1 << s;
            }
            if (mine != server) {
                ok[k] = 0;
                alive--;
            }
        }
    }
    if (alive > 0 && !(def % n == 0 && def / n <= kmax && ok[def / n])) {
        for (k = 1; k <= kmax; k++)
            if (ok[k]) {
                esbulk__log(&topo->log, ESBULK_LOG_INFO, "topology",
                            "%s: routing_num_shards %d found by probing _search_shards",
                            e->write_index, (int)(n * k));
                e->layout.routing_shards = n * k;
                break;
            }
    }
    free(ok);
}

/* The 403 fallback: _settings for the layout, _search_shards for primaries. */
static esbulk_err_t fetch_fallback(esbulk_topology_t *topo, esbulk__cluster_t *c,
                                   esbulk__index_t *e, const char *esc, char ***ids_out,
                                   char *errstr, size_t errstr_size)
{
    json_t *root = NULL, *groups, *group;
    char path[1024];
    esbulk_err_t err;
    char **ids = NULL;
    long status;
    size_t i;

    *ids_out = NULL;
    snprintf(path, sizeof(path), "/%s/_settings?flat_settings=true", esc);
    err = seed_get(topo, path, &status, &root, errstr, errstr_size);
    if (err != ESBULK_OK)
        return err;
    if (status == 404) {
        json_decref(root);
        e->state = ESBULK__IDX_UNKNOWN;
        return ESBULK_OK;
    }
    if (status != 200) {
        json_decref(root);
        esbulk__errstr(errstr, errstr_size, "GET %s: HTTP %ld", path, status);
        return status == 403 ? ESBULK_ERR_AUTH : ESBULK_ERR_HTTP;
    }
    err = layout_from_settings(json_object_get(json_object_get(root, e->write_index), "settings"),
                               0, c->is_elasticsearch, e, errstr, errstr_size);
    json_decref(root);
    root = NULL;
    if (err != ESBULK_OK)
        return err;

    snprintf(path, sizeof(path), "/%s/_search_shards", esc);
    err = seed_get(topo, path, &status, &root, errstr, errstr_size);
    if (err != ESBULK_OK)
        return err;
    groups = json_object_get(root, "shards");
    if (status != 200 || !json_is_array(groups)) {
        json_decref(root);
        esbulk__errstr(errstr, errstr_size, "GET %s: HTTP %ld, no shards array", path, status);
        return status == 200 ? ESBULK_ERR_BAD_RESPONSE : ESBULK_ERR_HTTP;
    }
    ids = calloc((size_t)e->layout.shards, sizeof(*ids));
    if (ids == NULL) {
        json_decref(root);
        return ESBULK_ERR_NOMEM;
    }
    json_array_foreach(groups, i, group) {
        json_t *first = json_array_get(group, 0);
        int ok;
        int64_t s = json_int_value(json_object_get(first, "shard"), &ok);

        if (!ok || s < 0 || s >= e->layout.shards) {
            free_ids(ids, e->layout.shards);
            json_decref(root);
            esbulk__errstr(errstr, errstr_size, "_search_shards: bad shard number");
            return ESBULK_ERR_BAD_RESPONSE;
        }
        if (take_primary(group, (int32_t)s, ids) != ESBULK_OK) {
            free_ids(ids, e->layout.shards);
            json_decref(root);
            return ESBULK_ERR_NOMEM;
        }
    }
    json_decref(root);
    if (e->state == ESBULK__IDX_OK)
        probe_routing_shards(topo, e, esc);
    e->from_fallback = 1;
    *ids_out = ids;
    return ESBULK_OK;
}

static int state_has_index(json_t *root, const char *index)
{
    return json_object_get(json_object_get(json_object_get(root, "metadata"), "indices"),
                           index) != NULL;
}

/* True when GET /<index>/_settings says 404. */
static int index_missing(esbulk_topology_t *topo, const char *esc)
{
    char path[1024];
    json_t *root = NULL;
    long status = 0;

    snprintf(path, sizeof(path), "/%s/_settings?filter_path=*.settings.index.uuid", esc);
    if (seed_get(topo, path, &status, &root, NULL, 0) != ESBULK_OK)
        status = 0;
    json_decref(root);
    return status == 404;
}

static esbulk_err_t fetch_index(esbulk_topology_t *topo, esbulk__cluster_t *c, const char *name,
                                esbulk__index_t **out, int *missing_node, char *errstr,
                                size_t errstr_size)
{
    esbulk__index_t *e = index_new(name);
    char *esc = NULL, *wesc = NULL, path[2048];
    json_t *root = NULL;
    char **ids = NULL;
    int32_t s, nids = 0;
    esbulk_err_t err;
    long status;

    *out = NULL;
    *missing_node = 0;
    if (e == NULL)
        return ESBULK_ERR_NOMEM;
    if (*name == '\0' || strpbrk(name, "*,?\"<>| \\/#") != NULL) {
        esbulk__errstr(errstr, errstr_size, "invalid index name \"%s\"", name);
        esbulk__index_release(e);
        return ESBULK_ERR_INVALID_ARG;
    }
    err = ESBULK_ERR_NOMEM;
    if ((esc = esbulk__url_escape(name)) == NULL)
        goto out;
    err = resolve_name(topo, e, esc, errstr, errstr_size);
    if (err != ESBULK_OK)
        goto out; /* not done: that would hand out a default layout as the index's */
    if (e->state != ESBULK__IDX_OK)
        goto done;
    err = ESBULK_ERR_NOMEM;
    if ((wesc = esbulk__url_escape(e->write_index)) == NULL)
        goto out;
    snprintf(path, sizeof(path),
             "/_cluster/state/metadata,routing_table/%s?local=true&filter_path="
             "metadata.indices.*.state,metadata.indices.*.routing_num_shards,"
             "metadata.indices.*.settings.index.number_of_shards,"
             "metadata.indices.*.settings.index.number_of_routing_shards,"
             "metadata.indices.*.settings.index.routing_partition_size,"
             "metadata.indices.*.settings.index.version.created,"
             "metadata.indices.*.settings.index.mode,"
             "metadata.indices.*.settings.index.routing_path,"
             "metadata.indices.*.settings.index.logsdb,"
             "routing_table.indices.*.shards.*.primary,"
             "routing_table.indices.*.shards.*.node",
             wesc);
    err = seed_get(topo, path, &status, &root, errstr, errstr_size);
    if (err != ESBULK_OK)
        goto out;
    if (status == 404) {
        e->state = ESBULK__IDX_UNKNOWN;
    } else if (status == 403) {
        if (!topo->logged_state_forbidden++)
            esbulk__log(&topo->log, ESBULK_LOG_NOTICE, "topology",
                        "cluster state forbidden (HTTP 403): using _settings and "
                        "_search_shards instead");
        err = fetch_fallback(topo, c, e, wesc, &ids, errstr, errstr_size);
        if (err != ESBULK_OK)
            goto out;
    } else if (status == 200 && !state_has_index(root, e->write_index) &&
               index_missing(topo, wesc)) {
        /* OpenSearch answers 200 with no metadata for an index that is not there */
        e->state = ESBULK__IDX_UNKNOWN;
    } else if (status == 200) {
        err = esbulk__topology_parse_state(root, e->write_index, c->is_elasticsearch, e, &ids,
                                           errstr, errstr_size);
        if (err != ESBULK_OK)
            goto out;
    } else {
        esbulk__errstr(errstr, errstr_size, "GET /_cluster/state for %s: HTTP %ld",
                       e->write_index, status);
        err = ESBULK_ERR_HTTP;
        goto out;
    }
done:
    if (ids != NULL)
        nids = e->layout.shards;
    if (e->state == ESBULK__IDX_UNKNOWN && e->reason == NULL) {
        snprintf(path, sizeof(path), "index %s does not exist (yet)",
                 e->write_index ? e->write_index : name);
        if ((e->reason = esbulk__strdup(path)) == NULL) {
            err = ESBULK_ERR_NOMEM;
            goto out;
        }
    }
    if (ids != NULL) {
        e->primary = malloc(sizeof(*e->primary) * (size_t)e->layout.shards);
        if (e->primary == NULL) {
            err = ESBULK_ERR_NOMEM;
            goto out;
        }
        for (s = 0; s < e->layout.shards; s++) {
            e->primary[s] = node_index(c, ids[s]);
            if (ids[s] != NULL && e->primary[s] < 0 && !c->seeds_only)
                *missing_node = 1;
        }
    }
    e->cluster = cluster_ref(c);
    e->fetched_ms = esbulk__now_ms();
    if (e->state == ESBULK__IDX_OK)
        esbulk__log(&topo->log, ESBULK_LOG_DEBUG, "topology",
                    "index %s -> %s: %d shards, routing_num_shards %d, partition %d, %s function",
                    name, e->write_index, (int)e->layout.shards,
                    (int)esbulk_layout_routing_shards(&e->layout), (int)e->layout.partition_size,
                    e->layout.fn == ESBULK_ROUTE_MOD ? "mod" : "legacy");
    else
        esbulk__log(&topo->log, ESBULK_LOG_DEBUG, "topology", "index %s: not routed: %s", name,
                    e->reason);
    *out = e;
    e = NULL;
    err = ESBULK_OK;
out:
    free_ids(ids, nids); /* ids is only set once done: has run */
    json_decref(root);
    free(esc);
    free(wesc);
    esbulk__index_release(e);
    if (err == ESBULK_ERR_NOMEM)
        esbulk__errstr(errstr, errstr_size, "out of memory");
    return err;
}

/* ------------------------------------------------------------------------- */
/* The object */

void esbulk__topology_set_log(esbulk_topology_t *topo, const esbulk__log_t *log)
{
    topo->log = *log;
}

esbulk__http_opts_t *esbulk__topology_http(esbulk_topology_t *topo)
{
    return &topo->http;
}

esbulk_topology_t *esbulk_topology_new(const esbulk_conf_t *conf, char *errstr,
                                       size_t errstr_size)
{
    esbulk_topology_t *topo;
    char *user = NULL, *pass = NULL;

    if (conf == NULL) {
        esbulk__errstr(errstr, errstr_size, "conf must not be NULL");
        return NULL;
    }
    topo = calloc(1, sizeof(*topo));
    if (topo == NULL) {
        esbulk__errstr(errstr, errstr_size, "out of memory");
        return NULL;
    }
    if (esbulk__urls_parse(esbulk__conf_str(conf, ESBULK__C_URLS), &topo->seeds, &topo->nseeds,
                           &user, &pass, errstr, errstr_size) != ESBULK_OK)
        goto fail;
    if ((topo->seed_down = calloc((size_t)topo->nseeds, sizeof(*topo->seed_down))) == NULL) {
        esbulk__errstr(errstr, errstr_size, "out of memory");
        goto fail;
    }
    if (esbulk__http_opts_init(&topo->http, conf, user, pass, errstr, errstr_size) != ESBULK_OK)
        goto fail;
    if (pthread_mutex_init(&topo->lock, NULL) != 0) {
        esbulk__errstr(errstr, errstr_size, "pthread_mutex_init failed");
        esbulk__http_opts_free(&topo->http);
        goto fail;
    }
    if (pthread_cond_init(&topo->cluster_cond, NULL) != 0) {
        esbulk__errstr(errstr, errstr_size, "pthread_cond_init failed");
        pthread_mutex_destroy(&topo->lock);
        esbulk__http_opts_free(&topo->http);
        goto fail;
    }
    topo->discovery = (int)esbulk__conf_int(conf, ESBULK__C_TOPOLOGY_DISCOVERY);
    topo->refresh_ms = esbulk__conf_int(conf, ESBULK__C_TOPOLOGY_REFRESH_MS);
    topo->log.cb = conf->log_cb;
    topo->log.opaque = conf->opaque;
    topo->log.level = (int32_t)esbulk__conf_int(conf, ESBULK__C_LOG_LEVEL);
    esbulk__wipe_str(pass);
    free(user);
    free(pass);
    return topo;
fail:
    esbulk__wipe_str(pass);
    free(user);
    free(pass);
    esbulk__urls_free(topo->seeds, topo->nseeds);
    free(topo->seed_down);
    free(topo);
    return NULL;
}

void esbulk_topology_destroy(esbulk_topology_t *topo)
{
    int i;

    if (topo == NULL)
        return;
    for (i = 0; i < topo->nindices; i++)
        esbulk__index_release(topo->indices[i]);
    free(topo->indices);
    esbulk__cluster_release(topo->cluster);
    esbulk__urls_free(topo->seeds, topo->nseeds);
    esbulk__http_opts_free(&topo->http);
    pthread_cond_destroy(&topo->cluster_cond);
    pthread_mutex_destroy(&topo->lock);
    free(topo->seed_down);
    free(topo);
}

static int stale(const esbulk_topology_t *topo, int64_t fetched_ms, int64_t now, int unknown)
{
    if (unknown)
        return now - fetched_ms >= UNKNOWN_RECHECK_MS;
    return topo->refresh_ms > 0 && now - fetched_ms >= topo->refresh_ms;
}

/* Under topo->lock: the last cluster read's failure, as its error. */
static esbulk_err_t cluster_failure(const esbulk_topology_t *topo, char *errstr,
                                    size_t errstr_size)
{
    esbulk__errstr(errstr, errstr_size, "%s", topo->cluster_fail_msg);
    return topo->cluster_fail_err;
}

/* One read at a time: several topology workers start at once and each
 * asks, and every one of them used to read the cluster (2 to 4 reads at
 * every start). A caller that finds a read in flight waits for it and
 * takes its outcome (ESBULK__CLUSTER_AFTER, whose reason may be newer than
 * that read, the outcome of the next). */
esbulk_err_t esbulk__topology_get_cluster(esbulk_topology_t *topo, esbulk__cluster_fresh_t fresh,
                                          esbulk__cluster_t **out, char *errstr,
                                          size_t errstr_size)
{
    int force = fresh != ESBULK__CLUSTER_CACHED;
    esbulk__cluster_t *c;
    esbulk_err_t err;
    uint64_t since, mine;

    pthread_mutex_lock(&topo->lock);
    /* a read numbered above since will do: begun after this call, or (JOIN)
     * in flight at it */
    since = topo->cluster_reads;
    if (fresh == ESBULK__CLUSTER_JOIN && topo->cluster_reading)
        since--;
    for (;;) {
        if (force && topo->cluster_done > since) {
            /* such a read has ended: its outcome */
            err = topo->cluster_done_ok ? ESBULK_OK : cluster_failure(topo, errstr, errstr_size);
            if (err == ESBULK_OK)
                *out = cluster_ref(topo->cluster);
            pthread_mutex_unlock(&topo->lock);
            return err;
        }
        if (!force && topo->cluster != NULL &&
            !stale(topo, topo->cluster_fetched_ms, esbulk__now_ms(), 0)) {
            *out = cluster_ref(topo->cluster);
            pthread_mutex_unlock(&topo->lock);
            return ESBULK_OK;
        }
        if (!force && topo->cluster_fail_ms != 0 &&
            esbulk__now_ms() - topo->cluster_fail_ms < CLUSTER_RETRY_MS) {
            /* a cluster that just failed to answer is not asked again at once */
            err = cluster_failure(topo, errstr, errstr_size);
            pthread_mutex_unlock(&topo->lock);
            return err;
        }
        if (!topo->cluster_reading)
            break;
        pthread_cond_wait(&topo->cluster_cond, &topo->lock);
    }
    topo->cluster_reading = 1;
    mine = ++topo->cluster_reads;
    pthread_mutex_unlock(&topo->lock);
    err = fetch_cluster(topo, &c, errstr, errstr_size);
    pthread_mutex_lock(&topo->lock);
    if (err != ESBULK_OK) {
        topo->cluster_fail_ms = esbulk__now_ms();
        topo->cluster_fail_err = err;
        snprintf(topo->cluster_fail_msg, sizeof(topo->cluster_fail_msg), "%s",
                 errstr != NULL && errstr_size > 0 ? errstr : esbulk_err2str(err));
    } else {
        topo->cluster_fail_ms = 0;
        esbulk__cluster_release(topo->cluster);
        topo->cluster = cluster_ref(c);
        topo->cluster_fetched_ms = esbulk__now_ms();
        *out = c;
    }
    topo->cluster_done = mine;
    topo->cluster_done_ok = err == ESBULK_OK;
    topo->cluster_reading = 0;
    pthread_cond_broadcast(&topo->cluster_cond);
    pthread_mutex_unlock(&topo->lock);
    return err;
}

/* Stores e as the entry for its name, replacing an older one. */
static esbulk_err_t store_index(esbulk_topology_t *topo, esbulk__index_t *e)
{
    esbulk__index_t **grown;
    int i;

    pthread_mutex_lock(&topo->lock);
    for (i = 0; i < topo->nindices; i++) {
        if (strcmp(topo->indices[i]->name, e->name) == 0) {
            esbulk__index_release(topo->indices[i]);
            topo->indices[i] = e;
            atomic_fetch_add(&e->refs, 1);
            pthread_mutex_unlock(&topo->lock);
            return ESBULK_OK;
        }
    }
    grown = realloc(topo->indices, sizeof(*grown) * (size_t)(topo->nindices + 1));
    if (grown == NULL) {
        pthread_mutex_unlock(&topo->lock);
        return ESBULK_ERR_NOMEM;
    }
    topo->indices = grown;
    topo->indices[topo->nindices++] = e;
    atomic_fetch_add(&e->refs, 1);
    pthread_mutex_unlock(&topo->lock);
    return ESBULK_OK;
}

static void remember_failure(esbulk_topology_t *topo, const char *name, esbulk_err_t err,
                             const char *why);

/* Fetches index name against the current cluster; refetches the cluster once
 * when a primary sits on a node it does not know yet. */
static esbulk_err_t load_index(esbulk_topology_t *topo, const char *name, int force_cluster,
                               int store, esbulk__index_t **out, char *errstr,
                               size_t errstr_size)
{
    esbulk__cluster_t *c = NULL;
    esbulk__index_t *e = NULL;
    esbulk_err_t err;
    int attempt, missing = 0;

    for (attempt = 0; attempt < 2; attempt++) {
        err = esbulk__topology_get_cluster(topo, force_cluster || attempt > 0
                                                     ? ESBULK__CLUSTER_AFTER
                                                     : ESBULK__CLUSTER_CACHED,
                                           &c, errstr, errstr_size);
        if (err != ESBULK_OK)
            return err;
        err = fetch_index(topo, c, name, &e, &missing, errstr, errstr_size);
        esbulk__cluster_release(c);
        if (err != ESBULK_OK) {
            if (store)
                remember_failure(topo, name, err, errstr);
            return err;
        }
        if (!missing)
            break;
        if (attempt == 0)
            esbulk__index_release(e);
    }
    if (!store) {
        *out = e;
        return ESBULK_OK;
    }
    err = store_index(topo, e);
    if (err != ESBULK_OK) {
        esbulk__index_release(e);
        return err;
    }
    *out = e;
    return ESBULK_OK;
}

esbulk_err_t esbulk__topology_get_index(esbulk_topology_t *topo, const char *name,
                                        esbulk__index_t **entry, char *errstr,
                                        size_t errstr_size)
{
    esbulk__index_t *e = NULL;
    int i;

    pthread_mutex_lock(&topo->lock);
    for (i = 0; i < topo->nindices; i++) {
        if (strcmp(topo->indices[i]->name, name) == 0) {
            e = topo->indices[i];
            break;
        }
    }
    if (e != NULL && !stale(topo, e->fetched_ms, esbulk__now_ms(),
                            e->state == ESBULK__IDX_UNKNOWN || e->state == ESBULK__IDX_ERROR)) {
        if (e->state == ESBULK__IDX_ERROR) {
            /* a fetch that just failed is not repeated for every document */
            esbulk_err_t err = e->error;
            esbulk__errstr(errstr, errstr_size, "%s", e->reason ? e->reason : esbulk_err2str(err));
            pthread_mutex_unlock(&topo->lock);
            return err;
        }
        atomic_fetch_add(&e->refs, 1);
        pthread_mutex_unlock(&topo->lock);
        *entry = e;
        return ESBULK_OK;
    }
    pthread_mutex_unlock(&topo->lock);
    return load_index(topo, name, 0, 1, entry, errstr, errstr_size);
}

/* Remembers that fetching name failed: an older good entry is kept (and
 * asked again in UNKNOWN_RECHECK_MS), else an error entry stands in. */
static void remember_failure(esbulk_topology_t *topo, const char *name, esbulk_err_t err,
                             const char *why)
{
    int64_t now = esbulk__now_ms();
    esbulk__index_t *e;
    int i;

    pthread_mutex_lock(&topo->lock);
    for (i = 0; i < topo->nindices; i++) {
        e = topo->indices[i];
        if (strcmp(e->name, name) == 0 && e->state != ESBULK__IDX_ERROR) {
            e->fetched_ms = topo->refresh_ms > UNKNOWN_RECHECK_MS
                                ? now - topo->refresh_ms + UNKNOWN_RECHECK_MS : now;
            pthread_mutex_unlock(&topo->lock);
            return;
        }
    }
    pthread_mutex_unlock(&topo->lock);
    if (err == ESBULK_ERR_NOMEM || err == ESBULK_ERR_INVALID_ARG || (e = index_new(name)) == NULL)
        return;
    e->state = ESBULK__IDX_ERROR;
    e->error = err;
    e->reason = why ? esbulk__strdup(why) : NULL;
    e->fetched_ms = now;
    if (store_index(topo, e) != ESBULK_OK) {
        esbulk__index_release(e);
        return;
    }
    esbulk__index_release(e);
}

esbulk_err_t esbulk__topology_fetch_index(esbulk_topology_t *topo, const char *name,
                                          esbulk__index_t **entry, char *errstr,
                                          size_t errstr_size)
{
    *entry = NULL;
    return load_index(topo, name, 0, 0, entry, errstr, errstr_size);
}

esbulk_err_t esbulk_topology_refresh(esbulk_topology_t *topo, char *errstr, size_t errstr_size)
{
    esbulk__cluster_t *c;
    esbulk_err_t err;
    char **names;
    int i, n;

    if (topo == NULL)
        return ESBULK_ERR_INVALID_ARG;
    err = esbulk__topology_get_cluster(topo, ESBULK__CLUSTER_AFTER, &c, errstr, errstr_size);
    if (err != ESBULK_OK)
        return err;
    esbulk__cluster_release(c);
    pthread_mutex_lock(&topo->lock);
    n = topo->nindices;
    names = calloc((size_t)n + 1, sizeof(*names));
    for (i = 0; names != NULL && i < n; i++)
        names[i] = esbulk__strdup(topo->indices[i]->name);
    pthread_mutex_unlock(&topo->lock);
    if (names == NULL)
        return ESBULK_ERR_NOMEM;
    for (i = 0; i < n && err == ESBULK_OK; i++) {
        esbulk__index_t *e;

        if (names[i] == NULL) {
            err = ESBULK_ERR_NOMEM;
            break;
        }
        err = load_index(topo, names[i], 0, 1, &e, errstr, errstr_size);
        if (err == ESBULK_OK)
            esbulk__index_release(e);
    }
    for (i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return err;
}

esbulk_err_t esbulk_topology_route(esbulk_topology_t *topo, const char *index, const char *id,
                                   size_t id_len, const char *routing, size_t routing_len,
                                   int32_t *shard, char *node, size_t node_size, char *errstr,
                                   size_t errstr_size)
{
    esbulk__index_t *e;
    esbulk_err_t err;
    int32_t p;

    if (topo == NULL || index == NULL || shard == NULL || (id == NULL && id_len > 0) ||
        (routing == NULL && routing_len > 0)) {
        esbulk__errstr(errstr, errstr_size, "invalid argument");
        return ESBULK_ERR_INVALID_ARG;
    }
    if (node != NULL && node_size > 0)
        node[0] = '\0';
    err = esbulk__topology_get_index(topo, index, &e, errstr, errstr_size);
    if (err != ESBULK_OK)
        return err;
    if (e->state != ESBULK__IDX_OK) {
        esbulk__errstr(errstr, errstr_size, "%s: %s", index, e->reason);
        err = e->state == ESBULK__IDX_UNKNOWN ? ESBULK_ERR_UNKNOWN_INDEX : ESBULK_ERR_NOT_ROUTABLE;
        goto out;
    }
    if (e->alias_routing != NULL) {
        if (routing_len > 0 && (strlen(e->alias_routing) != routing_len ||
                                memcmp(e->alias_routing, routing, routing_len) != 0)) {
            esbulk__errstr(errstr, errstr_size,
                           "alias %s has index_routing; a different routing is rejected", index);
            err = ESBULK_ERR_ROUTING_CONFLICT;
            goto out;
        }
        routing = e->alias_routing;
        routing_len = strlen(routing);
    }
    err = esbulk_layout_shard(&e->layout, id, id_len, routing, routing_len, shard);
    if (err != ESBULK_OK) {
        esbulk__errstr(errstr, errstr_size, "%s: %s", index,
                       err == ESBULK_ERR_INVALID_UTF8 ? "id or routing is not valid UTF-8"
                                                      : "a document needs an _id or a routing");
        goto out;
    }
    p = e->primary != NULL ? e->primary[*shard] : -1;
    if (node != NULL && node_size > 0 && p >= 0)
        snprintf(node, node_size, "%s", e->cluster->nodes[p].name);
out:
    esbulk__index_release(e);
    return err;
}

static json_t *cluster_json(const esbulk__cluster_t *c)
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

static json_t *index_json(const esbulk__index_t *e)
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

char *esbulk_topology_describe(esbulk_topology_t *topo, const char *index, char *errstr,
                               size_t errstr_size)
{
    esbulk__cluster_t *c = NULL;
    esbulk__index_t *e = NULL;
    json_t *root = NULL, *ij;
    char *out = NULL;

    if (topo == NULL) {
        esbulk__errstr(errstr, errstr_size, "invalid argument");
        return NULL;
    }
    if (index != NULL &&
        esbulk__topology_get_index(topo, index, &e, errstr, errstr_size) != ESBULK_OK)
        return NULL;
    if (e != NULL)
        c = cluster_ref(e->cluster);
    else if (esbulk__topology_get_cluster(topo, ESBULK__CLUSTER_CACHED, &c, errstr,
                                          errstr_size) != ESBULK_OK)
        return NULL;
    root = cluster_json(c);
    if (root != NULL && e != NULL) {
        ij = index_json(e);
        if (ij == NULL || json_object_set_new(root, "index", ij) != 0) {
            json_decref(root);
            root = NULL;
        }
    }
    if (root != NULL)
        out = json_dumps(root, JSON_COMPACT);
    if (out == NULL)
        esbulk__errstr(errstr, errstr_size, "out of memory");
    json_decref(root);
    esbulk__index_release(e);
    esbulk__cluster_release(c);
    return out;
}
