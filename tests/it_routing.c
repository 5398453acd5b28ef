/*
 * Integration test: the library's shard and primary node equal the server's
 * for every document, on a real cluster.
 *
 *   tests/it_routing URL [PROXY_URL]
 *
 * Creates indices of 1, 2, 3, 5, 6, 7, 12 and 30 shards, one with an
 * explicit number_of_routing_shards, a partitioned one with custom routing,
 * one split 3 -> 6, one shrunk 6 -> 3, an alias with index_routing, an alias
 * with is_write_index over two indices and a data stream; indexes more than
 * 20,000 documents with ids of every kind through plain _bulk; then asks the
 * server where each document is (a search per shard restricted with
 * preference=_shards:N) and which node holds each primary (_cat/shards), and
 * compares with esbulk_topology_route() for every document.
 *
 * With PROXY_URL (tests/faultproxy.py in front of the same cluster), it also
 * checks the fallbacks: cluster state forbidden (403) -> _settings and
 * _search_shards, and node addresses unreachable -> seed URLs only.
 *
 * Output: one line per check, "N passed, N failed" at the end; exit 1 on any
 * failure.
 */
#define _GNU_SOURCE 1
#include <esbulk.h>

#include <curl/curl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PREFIX "it-route-"

#include "it_common.h"

/* ------------------------------------------------------------------------- */
/* Documents */

typedef struct {
    char *target;  /* the name written to: index, alias or data stream */
    char *id;
    char *routing; /* NULL: none */
    char *concrete;/* filled after indexing: where the server put it */
    int server_shard;
} doc_t;

static doc_t *docs;
static size_t ndocs, capdocs;
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

static void put_utf8(char **p, uint32_t cp)
{
    unsigned char *u = (unsigned char *)*p;

    if (cp < 0x80) {
        *u++ = (unsigned char)cp;
    } else if (cp < 0x800) {
        *u++ = (unsigned char)(0xc0 | (cp >> 6));
        *u++ = (unsigned char)(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        *u++ = (unsigned char)(0xe0 | (cp >> 12));
        *u++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        *u++ = (unsigned char)(0x80 | (cp & 0x3f));
    } else {
        *u++ = (unsigned char)(0xf0 | (cp >> 18));
        *u++ = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
        *u++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        *u++ = (unsigned char)(0x80 | (cp & 0x3f));
    }
    *p = (char *)u;
}

/* An id of kind k (numeric, UUID, random ASCII, CJK, emoji, 512 bytes),
 * unique through the counter n written in the kind's own alphabet. */
static char *make_id(int k, unsigned n)
{
    char buf[1024], *p = buf;
    unsigned v = n;
    int i, len;

    switch (k) {
    case 0:
        snprintf(buf, sizeof(buf), "%u", n * 7919u + 1000000u);
        return strdup(buf);
    case 1:
        snprintf(buf, sizeof(buf), "%08x-%04x-4%03x-%04x-%08x%04x", rnd(), rnd() & 0xffff,
                 rnd() & 0xfff, (rnd() & 0x3fff) | 0x8000, rnd(), n & 0xffff);
        /* make it unique: the last 4 hex digits carry n's low bits, the first 8 random */
        snprintf(buf + 24, sizeof(buf) - 24, "%08x%04x", n, rnd() & 0xffff);
        return strdup(buf);
    case 2:
        len = 1 + (int)(rnd() % 30);
        for (i = 0; i < len; i++) {
            static const char alpha[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789-_.:~!$()*+=@\"\\ ";
            *p++ = alpha[rnd() % (sizeof(alpha) - 1)];
        }
        p += sprintf(p, "#%u", n);
        *p = '\0';
        return strdup(buf);
    case 3:
        for (i = 0; i < 1 + (int)(rnd() % 6); i++)
            put_utf8(&p, 0x4e00 + rnd() % 0x5000);
        do { /* the counter in CJK digits */
            put_utf8(&p, 0x4e00 + (v % 512));
            v /= 512;
        } while (v);
        *p = '\0';
        return strdup(buf);
    case 4:
        p += sprintf(p, "e%u", n);
        for (i = 0; i < 1 + (int)(rnd() % 4); i++)
            put_utf8(&p, 0x1f300 + rnd() % 0x300);
        put_utf8(&p, 0xe9);
        *p = '\0';
        return strdup(buf);
    default:
        p += sprintf(p, "L%u-", n);
        while (p - buf < 512)
            *p++ = "abcdefghijklmnopqrstuvwxyz0123456789"[rnd() % 36];
        buf[512] = '\0';
        return strdup(buf);
    }
}

static unsigned id_counter;

static void add_docs(const char *target, size_t n, const char *const *routings, size_t nroutings)
{
    size_t i;

    for (i = 0; i < n; i++) {
        doc_t *d;

        if (ndocs == capdocs) {
            capdocs = capdocs ? capdocs * 2 : 4096;
            docs = realloc(docs, capdocs * sizeof(*docs));
            if (docs == NULL)
                die("out of memory");
        }
        d = &docs[ndocs++];
        memset(d, 0, sizeof(*d));
        d->target = strdup(target);
        d->id = make_id((int)(id_counter % 6), id_counter);
        id_counter++;
        d->routing = nroutings ? strdup(routings[rnd() % nroutings]) : NULL;
        d->server_shard = -1;
    }
}

/* Indexes docs[from..to) with plain _bulk and checks every item succeeded. */
static void bulk_index(size_t from, size_t to, int op_create)
{
    size_t i = from;

    while (i < to) {
        size_t end = i + 2000 < to ? i + 2000 : to, k, bad = 0;
        char *text;
        json_t *items, *res, *it;
        size_t cap = 1 << 20, len = 0;
        char *body = malloc(cap);

        for (k = i; k < end; k++) {
            json_t *meta = json_object(), *action = json_object();
            char src[128];
            size_t need;

            json_object_set_new(meta, "_index", json_string(docs[k].target));
            json_object_set_new(meta, "_id", json_string(docs[k].id));
            if (docs[k].routing)
                json_object_set_new(meta, "routing", json_string(docs[k].routing));
            json_object_set_new(action, op_create ? "create" : "index", meta);
            text = json_dumps(action, JSON_COMPACT);
            snprintf(src, sizeof(src), "{\"n\":%zu,\"@timestamp\":\"2026-12-02T10:00:00Z\"}", k);
            need = strlen(text) + strlen(src) + 2;
            while (len + need + 1 > cap)
                body = realloc(body, cap *= 2);
            len += (size_t)sprintf(body + len, "%s\n%s\n", text, src);
            free(text);
            json_decref(action);
        }
        res = must("POST", "/_bulk", body);
        items = json_object_get(res, "items");
        if (json_array_size(items) != end - i)
            die("_bulk answered %zu items for %zu documents", json_array_size(items), end - i);
        for (k = 0; k < end - i; k++) {
            json_t *r;
            const char *ix;

            it = json_array_get(items, k);
            r = json_object_get(it, op_create ? "create" : "index");
            ix = json_string_value(json_object_get(r, "_index"));
            if (json_integer_value(json_object_get(r, "status")) / 100 != 2 || ix == NULL) {
                if (bad++ < 3) {
                    char *dump = json_dumps(r, JSON_COMPACT);
                    printf("  item failed: %s\n", dump);
                    free(dump);
                }
                continue;
            }
            free(docs[i + k].concrete);
            docs[i + k].concrete = strdup(ix);
        }
        if (bad)
            die("%zu of %zu bulk items failed", bad, end - i);
        json_decref(res);
        free(body);
        i = end;
    }
}

/* ------------------------------------------------------------------------- */
/* Where the server put each document */

typedef struct {
    char *key; /* concrete \x01 id */
    int shard;
} loc_t;

static int loc_cmp(const void *a, const void *b)
{
    return strcmp(((const loc_t *)a)->key, ((const loc_t *)b)->key);
}

static char *loc_key(const char *concrete, const char *id)
{
    char *k;

    if (asprintf(&k, "%s\x01%s", concrete, id) < 0)
        die("out of memory");
    return k;
}

static loc_t *locs;
static size_t nlocs, caplocs;

static int shard_count(const char *concrete)
{
    char path[512];
    json_t *j, *v;
    int n;

    snprintf(path, sizeof(path), "/%s/_settings/index.number_of_shards", concrete);
    j = must("GET", path, NULL);
    v = json_object_get(json_object_get(json_object_get(json_object_get(j, concrete), "settings"),
                                        "index"), "number_of_shards");
    n = atoi(json_string_value(v) ? json_string_value(v) : "0");
    json_decref(j);
    if (n < 1)
        die("cannot read number_of_shards of %s", concrete);
    return n;
}

static void collect_server_locations(const char *concrete)
{
    int shards = shard_count(concrete), s;

    for (s = 0; s < shards; s++) {
        char path[512];
        json_t *j, *hits, *h;
        size_t i;
        json_int_t total;

        snprintf(path, sizeof(path), "/%s/_search?preference=_shards:%d", concrete, s);
        j = must("POST", path,
                 "{\"size\":10000,\"_source\":false,\"track_total_hits\":true,"
                 "\"query\":{\"match_all\":{}}}");
        hits = json_object_get(json_object_get(j, "hits"), "hits");
        total = json_integer_value(
            json_object_get(json_object_get(json_object_get(j, "hits"), "total"), "value"));
        if ((json_int_t)json_array_size(hits) != total)
            die("%s shard %d: %zu hits of %lld", concrete, s, json_array_size(hits),
                (long long)total);
        json_array_foreach(hits, i, h) {
            if (nlocs == caplocs) {
                caplocs = caplocs ? caplocs * 2 : 4096;
                locs = realloc(locs, caplocs * sizeof(*locs));
            }
            locs[nlocs].key = loc_key(concrete, json_string_value(json_object_get(h, "_id")));
            locs[nlocs].shard = s;
            nlocs++;
        }
        json_decref(j);
    }
}

/* The primary's node name for each shard of concrete, from _cat/shards. */
static char **primary_nodes(const char *concrete, int *n)
{
    char path[512], **out;
    json_t *j, *row;
    size_t i;

    *n = shard_count(concrete);
    out = calloc((size_t)*n, sizeof(*out));
    snprintf(path, sizeof(path), "/_cat/shards/%s?format=json&h=shard,prirep,node,state",
             concrete);
    j = must("GET", path, NULL);
    json_array_foreach(j, i, row) {
        int s = atoi(json_string_value(json_object_get(row, "shard")));
        const char *pr = json_string_value(json_object_get(row, "prirep"));
        const char *node = json_string_value(json_object_get(row, "node"));

        if (pr && strcmp(pr, "p") == 0 && node && s >= 0 && s < *n)
            out[s] = strdup(node);
    }
    json_decref(j);
    return out;
}

/* ------------------------------------------------------------------------- */
/* Fixtures */

static void create_index(const char *name, const char *body)
{
    char path[256];

    snprintf(path, sizeof(path), "/%s", name);
    must_ok("PUT", path, body);
}

static char *shards_body(int shards, const char *extra)
{
    char *b;

    if (asprintf(&b, "{\"settings\":{\"number_of_shards\":%d,\"number_of_replicas\":0%s%s}}",
                 shards, extra ? "," : "", extra ? extra : "") < 0)
        die("out of memory");
    return b;
}

static char *first_node_name(void)
{
    json_t *j = must("GET", "/_cat/nodes?format=json&h=name&s=name", NULL);
    char *n = strdup(json_string_value(json_object_get(json_array_get(j, 0), "name")));

    json_decref(j);
    return n;
}

/* Waits until every shard of index sits on node (shrink needs it). */
static void wait_all_on(const char *index, const char *node)
{
    int tries;

    for (tries = 0; tries < 240; tries++) {
        char path[256];
        json_t *j, *row;
        size_t i;
        int ok = 1;

        snprintf(path, sizeof(path), "/_cat/shards/%s?format=json&h=node,state", index);
        j = must("GET", path, NULL);
        json_array_foreach(j, i, row) {
            const char *n = json_string_value(json_object_get(row, "node"));
            const char *st = json_string_value(json_object_get(row, "state"));
            if (n == NULL || strcmp(n, node) != 0 || st == NULL || strcmp(st, "STARTED") != 0)
                ok = 0;
        }
        json_decref(j);
        if (ok)
            return;
        usleep(250000);
    }
    die("shards of %s did not move to %s", index, node);
}

static const char *const routings[] = {"user1", "user2", "tenant-\xe4\xb8\xad", "r\xf0\x9f\x98\x80",
                                       "42", "acme", "x", "zeta-routing-value"};

static char ds_name[64];

static void build_fixtures(int with_data_stream)
{
    static const int plain[] = {1, 2, 3, 5, 6, 7, 12, 30};
    static const size_t plain_docs[] = {1000, 1500, 2000, 2000, 2000, 2000, 2000, 3000};
    char name[64], *b, *node;
    size_t i, mark;
    long status = 0;

    /* a data stream of this run's own (Elasticsearch here cannot delete one) */
    snprintf(ds_name, sizeof(ds_name), PREFIX "ds-%ld", (long)time(NULL));
    /* delete by name: Elasticsearch refuses wildcard deletes by default */
    {
        json_t *list = req("GET", "/_cat/indices/" PREFIX "*?format=json&h=index&expand_wildcards=all",
                           NULL, &status), *row;
        size_t k;
        json_array_foreach(list, k, row) {
            char path[256];
            snprintf(path, sizeof(path), "/%s", json_string_value(json_object_get(row, "index")));
            json_decref(req("DELETE", path, NULL, &status));
        }
        json_decref(list);
    }
    json_decref(req("DELETE", "/_index_template/" PREFIX "ds-template", NULL, &status));

    for (i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
        snprintf(name, sizeof(name), PREFIX "s%d", plain[i]);
        create_index(name, b = shards_body(plain[i], NULL));
        free(b);
        add_docs(name, plain_docs[i], NULL, 0);
    }
    /* explicit number_of_routing_shards */
    create_index(PREFIX "rs", b = shards_body(5, "\"number_of_routing_shards\":40"));
    free(b);
    add_docs(PREFIX "rs", 1500, NULL, 0);
    /* partitioned, custom routing (routing required by the mapping) */
    create_index(PREFIX "part",
                 "{\"settings\":{\"number_of_shards\":6,\"number_of_replicas\":0,"
                 "\"number_of_routing_shards\":24,\"routing_partition_size\":3},"
                 "\"mappings\":{\"_routing\":{\"required\":true}}}");
    add_docs(PREFIX "part", 1500, routings, sizeof(routings) / sizeof(routings[0]));
    /* custom routing on a plain index */
    add_docs(PREFIX "s7", 500, routings, sizeof(routings) / sizeof(routings[0]));
    /* two alias fixtures */
    create_index(PREFIX "w1", b = shards_body(3, NULL));
    free(b);
    create_index(PREFIX "w2", b = shards_body(5, NULL));
    free(b);
    must_ok("POST", "/_aliases",
            "{\"actions\":[{\"add\":{\"index\":\"" PREFIX "w1\",\"alias\":\"" PREFIX "alias-w\"}},"
            "{\"add\":{\"index\":\"" PREFIX "w2\",\"alias\":\"" PREFIX "alias-w\","
            "\"is_write_index\":true}},"
            "{\"add\":{\"index\":\"" PREFIX "s6\",\"alias\":\"" PREFIX "alias-r\","
            "\"index_routing\":\"user42\"}}]}");
    add_docs(PREFIX "alias-w", 1000, NULL, 0);
    add_docs(PREFIX "alias-r", 500, NULL, 0);
    if (with_data_stream) {
        must_ok("PUT", "/_index_template/" PREFIX "ds-template",
                "{\"index_patterns\":[\"" PREFIX "ds*\"],\"data_stream\":{},\"priority\":500,"
                "\"template\":{\"settings\":{\"number_of_shards\":4,\"number_of_replicas\":0}}}");
    }
    /* split: 3 shards with documents, then split to 6 */
    create_index(PREFIX "split-src", b = shards_body(3, NULL));
    free(b);
    mark = ndocs;
    add_docs(PREFIX "split-src", 1000, NULL, 0);
    bulk_index(0, ndocs, 0);
    if (with_data_stream) {
        size_t from = ndocs;
        /* the first write creates the data stream from the template */
        add_docs(ds_name, 800, NULL, 0);
        bulk_index(from, ndocs, 1);
    }
    must_ok("PUT", "/" PREFIX "split-src/_settings", "{\"index.blocks.write\":true}");
    must_ok("POST", "/" PREFIX "split-src/_split/" PREFIX "split",
            "{\"settings\":{\"index.number_of_shards\":6,\"index.blocks.write\":null}}");
    /* shrink: 6 shards with documents, all moved to one node, shrunk to 3 */
    node = first_node_name();
    {
        char extra[256];
        snprintf(extra, sizeof(extra), "\"index.routing.allocation.require._name\":\"%s\"", node);
        create_index(PREFIX "shrink-src", b = shards_body(6, extra));
        free(b);
    }
    wait_green();
    {
        size_t from = ndocs;
        add_docs(PREFIX "shrink-src", 1000, NULL, 0);
        bulk_index(from, ndocs, 0);
    }
    wait_all_on(PREFIX "shrink-src", node);
    must_ok("PUT", "/" PREFIX "shrink-src/_settings", "{\"index.blocks.write\":true}");
    must_ok("POST", "/" PREFIX "shrink-src/_shrink/" PREFIX "shrink",
            "{\"settings\":{\"index.number_of_shards\":3,\"index.number_of_replicas\":0,"
            "\"index.blocks.write\":null,\"index.routing.allocation.require._name\":null}}");
    free(node);
    wait_green();
    /* the documents of the sources now live in the targets */
    for (i = mark; i < ndocs; i++) {
        if (strcmp(docs[i].target, PREFIX "split-src") == 0 ||
            strcmp(docs[i].target, PREFIX "shrink-src") == 0) {
            char *t;
            if (asprintf(&t, "%s", strcmp(docs[i].target, PREFIX "split-src") == 0
                                       ? PREFIX "split" : PREFIX "shrink") < 0)
                die("out of memory");
            free(docs[i].target);
            docs[i].target = t;
            free(docs[i].concrete);
            docs[i].concrete = strdup(t);
        }
    }
    /* and new documents go to the targets directly */
    mark = ndocs;
    add_docs(PREFIX "split", 1000, NULL, 0);
    add_docs(PREFIX "shrink", 1000, NULL, 0);
    bulk_index(mark, ndocs, 0);
    must_ok("POST", "/" PREFIX "*/_refresh?expand_wildcards=all", NULL);
}

/* ------------------------------------------------------------------------- */

typedef struct {
    size_t routed, shard_ok, node_ok, missing;
} route_tally_t;

/* Compares the library's answer with the server's for every document. */
static route_tally_t compare_all(esbulk_topology_t *topo, const char *label)
{
    route_tally_t t = {0, 0, 0, 0};
    size_t i, shown = 0;
    char **concretes = NULL;
    size_t nconc = 0;

    /* primary nodes per concrete index */
    char ***prim = NULL;
    int *nprim = NULL;

    for (i = 0; i < ndocs; i++) {
        size_t k;
        for (k = 0; k < nconc; k++)
            if (strcmp(concretes[k], docs[i].concrete) == 0)
                break;
        if (k == nconc) {
            concretes = realloc(concretes, (nconc + 1) * sizeof(*concretes));
            prim = realloc(prim, (nconc + 1) * sizeof(*prim));
            nprim = realloc(nprim, (nconc + 1) * sizeof(*nprim));
            concretes[nconc] = docs[i].concrete;
            prim[nconc] = primary_nodes(docs[i].concrete, &nprim[nconc]);
            nconc++;
        }
    }
    for (i = 0; i < ndocs; i++) {
        doc_t *d = &docs[i];
        char node[256], errstr[512];
        int32_t shard = -1;
        esbulk_err_t err;
        size_t k;

        err = esbulk_topology_route(topo, d->target, d->id, strlen(d->id), d->routing,
                                    d->routing ? strlen(d->routing) : 0, &shard, node,
                                    sizeof(node), errstr, sizeof(errstr));
        if (d->server_shard < 0) {
            t.missing++;
            continue;
        }
        if (err != ESBULK_OK) {
            if (shown++ < 5)
                printf("  %s: %s: route failed: %s\n", label, d->target, errstr);
            continue;
        }
        t.routed++;
        for (k = 0; k < nconc; k++)
            if (strcmp(concretes[k], d->concrete) == 0)
                break;
        if (shard == d->server_shard)
            t.shard_ok++;
        else if (shown++ < 5)
            printf("  %s: %s id %s routing %s: library shard %d, server shard %d\n", label,
                   d->target, d->id, d->routing ? d->routing : "-", (int)shard, d->server_shard);
        if (shard >= 0 && shard < nprim[k] && prim[k][shard] && strcmp(prim[k][shard], node) == 0)
            t.node_ok++;
        else if (shown++ < 5)
            printf("  %s: %s shard %d: library node \"%s\", server \"%s\"\n", label, d->concrete,
                   (int)shard, node,
                   shard >= 0 && shard < nprim[k] && prim[k][shard] ? prim[k][shard] : "?");
    }
    for (i = 0; i < nconc; i++) {
        int s;
        for (s = 0; s < nprim[i]; s++)
            free(prim[i][s]);
        free(prim[i]);
    }
    free(prim);
    free(nprim);
    free(concretes);
    return t;
}

static esbulk_topology_t *topo_for(const char *url, const char *k1, const char *v1)
{
    esbulk_conf_t *conf = esbulk_conf_new();
    esbulk_topology_t *topo;
    char errstr[512];

    esbulk_conf_set(conf, "urls", url, NULL, 0);
    if (k1 != NULL && esbulk_conf_set(conf, k1, v1, errstr, sizeof(errstr)) != ESBULK_OK)
        die("conf: %s", errstr);
    topo = esbulk_topology_new(conf, errstr, sizeof(errstr));
    esbulk_conf_destroy(conf);
    if (topo == NULL)
        die("esbulk_topology_new: %s", errstr);
    return topo;
}

static json_t *describe(esbulk_topology_t *topo, const char *index)
{
    char errstr[512], *text = esbulk_topology_describe(topo, index, errstr, sizeof(errstr));
    json_t *j;

    if (text == NULL)
        die("describe %s: %s", index ? index : "(cluster)", errstr);
    j = json_loads(text, 0, NULL);
    esbulk_free(text);
    return j;
}

static void check_tally(route_tally_t t, const char *label)
{
    check(t.missing == 0, "%s: the server holds all %zu documents", label, ndocs);
    check(t.routed == ndocs, "%s: the library routed %zu of %zu documents", label, t.routed, ndocs);
    check(t.shard_ok == ndocs, "%s: shard equal to the server's for %zu of %zu documents", label,
          t.shard_ok, ndocs);
    check(t.node_ok == ndocs, "%s: primary node equal to the server's for %zu of %zu documents",
          label, t.node_ok, ndocs);
}

int main(int argc, char **argv)
{
    const char *proxy = argc > 2 ? argv[2] : NULL;
    esbulk_topology_t *topo;
    json_t *root, *j;
    const char *dist;
    size_t i;
    char errstr[512];
    int32_t shard;
    esbulk_err_t err;


    if (argc < 2) {
        fprintf(stderr, "usage: it_routing URL [PROXY_URL]\n");
        return 2;
    }
    base_url = argv[1];
    curl_global_init(CURL_GLOBAL_DEFAULT);
    setvbuf(stdout, NULL, _IOLBF, 0);

    root = must("GET", "/", NULL);
    dist = json_string_value(json_object_get(json_object_get(root, "version"), "distribution"));
    printf("cluster at %s: %s %s\n", base_url, dist ? dist : "elasticsearch",
           json_string_value(json_object_get(json_object_get(root, "version"), "number")));
    json_decref(root);


    /* No rebalancing while the test compares primaries (restored at the end). */
    must_ok("PUT", "/_cluster/settings",
            "{\"transient\":{\"cluster.routing.rebalance.enable\":\"none\"}}");
    build_fixtures(1);
    wait_green();
    for (i = 0; i < ndocs; i++)
        if (docs[i].concrete == NULL)
            die("document %zu has no concrete index", i);
    {
        char **done_ix = NULL;
        size_t ndone = 0, k;
        for (i = 0; i < ndocs; i++) {
            for (k = 0; k < ndone; k++)
                if (strcmp(done_ix[k], docs[i].concrete) == 0)
                    break;
            if (k == ndone) {
                done_ix = realloc(done_ix, (ndone + 1) * sizeof(*done_ix));
                done_ix[ndone++] = docs[i].concrete;
                collect_server_locations(docs[i].concrete);
            }
        }
        free(done_ix);
    }
    qsort(locs, nlocs, sizeof(*locs), loc_cmp);
    for (i = 0; i < ndocs; i++) {
        loc_t key, *hit;
        key.key = loc_key(docs[i].concrete, docs[i].id);
        hit = bsearch(&key, locs, nlocs, sizeof(*locs), loc_cmp);
        if (hit != NULL)
            docs[i].server_shard = hit->shard;
        free(key.key);
    }
    check(ndocs >= 20000, "indexed %zu documents (at least 20,000)", ndocs);
    check(nlocs == ndocs, "the server reports %zu documents, %zu were indexed", nlocs, ndocs);

    /* 1. Direct: cluster state, node addresses. */
    topo = topo_for(base_url, NULL, NULL);
    check_tally(compare_all(topo, "cluster state"), "cluster state");

    /* The layout values the library read. */
    j = describe(topo, PREFIX "rs");
    check(json_integer_value(json_object_get(json_object_get(j, "index"), "routing_shards")) == 40,
          "explicit number_of_routing_shards read as 40");
    json_decref(j);
    j = describe(topo, PREFIX "part");
    check(json_integer_value(json_object_get(json_object_get(j, "index"), "partition_size")) == 3,
          "routing_partition_size read as 3");
    json_decref(j);
    j = describe(topo, PREFIX "split");
    check(json_integer_value(json_object_get(json_object_get(j, "index"), "shards")) == 6 &&
              json_integer_value(json_object_get(json_object_get(j, "index"), "routing_shards")) == 768,
          "split index: 6 shards, routing_num_shards 768");
    json_decref(j);
    j = describe(topo, PREFIX "shrink");
    check(json_integer_value(json_object_get(json_object_get(j, "index"), "shards")) == 3 &&
              json_integer_value(json_object_get(json_object_get(j, "index"), "routing_shards")) == 768,
          "shrunk index: 3 shards, routing_num_shards 768");
    json_decref(j);
    j = describe(topo, PREFIX "alias-w");
    check(strcmp(json_string_value(json_object_get(json_object_get(j, "index"), "write_index")),
                 PREFIX "w2") == 0,
          "alias with is_write_index resolves to " PREFIX "w2");
    json_decref(j);
    j = describe(topo, PREFIX "alias-r");
    check(json_is_string(json_object_get(json_object_get(j, "index"), "alias_routing")) &&
              strcmp(json_string_value(json_object_get(json_object_get(j, "index"), "alias_routing")),
                     "user42") == 0,
          "alias index_routing read as user42");
    json_decref(j);
    j = describe(topo, NULL);
    check(strcmp(json_string_value(json_object_get(j, "mode")), "nodes") == 0 &&
              json_array_size(json_object_get(j, "nodes")) >= 3,
          "discovery found %zu nodes, sending to their HTTP addresses",
          json_array_size(json_object_get(j, "nodes")));
    json_decref(j);

    /* A routing that contradicts the alias's index_routing is refused. */
    err = esbulk_topology_route(topo, PREFIX "alias-r", "a", 1, "other", 5, &shard, NULL, 0,
                                errstr, sizeof(errstr));
    check(err == ESBULK_ERR_ROUTING_CONFLICT, "routing against an alias's index_routing: %s",
          esbulk_err2str(err));
    /* Invalid UTF-8 in an id is an error, not a guess. */
    err = esbulk_topology_route(topo, PREFIX "s3", "\xff\xfe", 2, NULL, 0, &shard, NULL, 0,
                                errstr, sizeof(errstr));
    check(err == ESBULK_ERR_INVALID_UTF8, "invalid UTF-8 id: %s", esbulk_err2str(err));

    /* An unknown index is reported, and becomes routable once created. */
    err = esbulk_topology_route(topo, PREFIX "late", "a", 1, NULL, 0, &shard, NULL, 0, errstr,
                                sizeof(errstr));
    check(err == ESBULK_ERR_UNKNOWN_INDEX, "unknown index: %s (%s)", esbulk_err2str(err), errstr);
    {
        char *b = shards_body(4, NULL);
        create_index(PREFIX "late", b);
        free(b);
        wait_green();
        sleep(1); /* past the library's recheck interval for unknown indices */
        err = esbulk_topology_route(topo, PREFIX "late", "a", 1, NULL, 0, &shard, NULL, 0,
                                    errstr, sizeof(errstr));
        check(err == ESBULK_OK, "index created later is routed: %s", esbulk_err2str(err));
    }
    esbulk_topology_destroy(topo);

    /* 2. Discovery off: seeds only, still the same shards. */
    topo = topo_for(base_url, "topology.discovery", "false");
    j = describe(topo, NULL);
    check(strcmp(json_string_value(json_object_get(j, "mode")), "seeds") == 0,
          "topology.discovery=false sends to the seed URLs only");
    json_decref(j);
    {
        route_tally_t t = compare_all(topo, "discovery off");
        check(t.shard_ok == ndocs, "discovery off: shard equal for %zu of %zu", t.shard_ok, ndocs);
    }
    esbulk_topology_destroy(topo);

    /* 3. Through the fault proxy: cluster state forbidden, nodes unreachable. */
    if (proxy != NULL) {
        char url[512];

        snprintf(url, sizeof(url), "%s", proxy);
        topo = topo_for(url, NULL, NULL);
        j = describe(topo, PREFIX "s12");
        check(strcmp(json_string_value(json_object_get(json_object_get(j, "index"), "source")),
                     "settings+search_shards") == 0,
              "cluster state forbidden (403): layout from _settings and _search_shards");
        check(strcmp(json_string_value(json_object_get(j, "mode")), "seeds") == 0,
              "node addresses unreachable: sending to the seed URLs only");
        json_decref(j);
        check_tally(compare_all(topo, "fallback"), "fallback");
        esbulk_topology_destroy(topo);
    }

    must_ok("PUT", "/_cluster/settings",
            "{\"transient\":{\"cluster.routing.rebalance.enable\":null}}");
    printf("%d passed, %d failed\n", passed, failed);
    curl_global_cleanup();
    return failed ? 1 : 0;
}
