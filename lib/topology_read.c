/* The blocking reads of the cluster's metadata from the servers: the
 * nodes (GET /, _nodes/http), and an index's layout and primaries
 * (_cluster/state, else _settings and _search_shards), asked of the seeds
 * in turn. The topology object (topology.c) and the topology thread call
 * them; what they parse is cluster.c's. */
#include "murmur3.h"
#include "topology_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
        /* metadata requests are small: do not let one hold the caller for long */
        int64_t timeout_ms = topo->http.request_timeout_ms < ESBULK__TOPOLOGY_TIMEOUT_MS
                                 ? topo->http.request_timeout_ms : ESBULK__TOPOLOGY_TIMEOUT_MS;

        i = (atomic_load(&topo->good_seed) + k) % topo->nseeds;
        snprintf(url, sizeof(url), "%s%s", topo->seeds[i].base, path);
        err = esbulk__http_request(&topo->http, "GET", url, NULL, NULL, 0, timeout_ms,
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
        /* once per outage: the reads are retried every ESBULK__CLUSTER_RETRY_MS */
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

esbulk_err_t esbulk__topology_read_cluster(esbulk_topology_t *topo, esbulk__cluster_t **out,
                                           char *errstr, size_t errstr_size)
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
        int64_t sh = esbulk__json_int(json_object_get(json_array_get(group, 0), "shard"), &ok);
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
    err = esbulk__index_parse_layout(json_object_get(json_object_get(root, e->write_index),
                                                     "settings"),
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
        int64_t s = esbulk__json_int(json_object_get(first, "shard"), &ok);

        if (!ok || s < 0 || s >= e->layout.shards) {
            esbulk__node_ids_free(ids, e->layout.shards);
            json_decref(root);
            esbulk__errstr(errstr, errstr_size, "_search_shards: bad shard number");
            return ESBULK_ERR_BAD_RESPONSE;
        }
        if (esbulk__index_take_primary(group, (int32_t)s, ids) != ESBULK_OK) {
            esbulk__node_ids_free(ids, e->layout.shards);
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

esbulk_err_t esbulk__topology_read_index(esbulk_topology_t *topo, esbulk__cluster_t *c,
                                         const char *name, esbulk__index_t **out,
                                         int *missing_node, char *errstr, size_t errstr_size)
{
    esbulk__index_t *e = esbulk__index_new(name);
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
    } else if (status == 200 && !esbulk__state_has_index(root, e->write_index) &&
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
            e->primary[s] = esbulk__cluster_node_index(c, ids[s]);
            if (ids[s] != NULL && e->primary[s] < 0 && !c->seeds_only)
                *missing_node = 1;
        }
    }
    e->cluster = esbulk__cluster_ref(c);
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
    esbulk__node_ids_free(ids, nids); /* ids is only set once done: has run */
    json_decref(root);
    free(esc);
    free(wesc);
    esbulk__index_release(e);
    if (err == ESBULK_ERR_NOMEM)
        esbulk__errstr(errstr, errstr_size, "out of memory");
    return err;
}
