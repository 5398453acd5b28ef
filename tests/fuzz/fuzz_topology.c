/* libFuzzer harness: the topology parsers (lib/topology.c) behind the real
 * request sequence. Linked with -Wl,--wrap=esbulk__http_request, so every
 * GET the topology makes (/, _nodes/http, each node's /, _alias,
 * _data_stream, _resolve/index, _cluster/state, _settings, _search_shards and
 * its routing probes) is answered from the input instead of the network.
 *
 * Input: answers separated by lines "@@". An answer starting with three
 * digits and a space has that HTTP status ("403 {...}"), "XXX " is a
 * transport failure, anything else is a 200 with the whole chunk as body.
 * When the answers run out, requests fail as a dead server would.
 * Then: fetch index "idx" (through an alias or data stream when the answers
 * say so), route a few ids, describe it; checks that a usable entry is
 * consistent (layout in range, every primary a node of its cluster, every
 * routed shard below the shard count) and nothing leaks or crashes. */
#include "esbulk.h"
#include "http.h"
#include "topology.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
esbulk_err_t __wrap_esbulk__http_request(const esbulk__http_opts_t *opts, const char *method,
                                         const char *url, const char *content_type,
                                         const char *body, size_t body_len, long timeout_ms,
                                         long *status, esbulk__buf_t *response, char *errstr,
                                         size_t errstr_size);

#define FAIL(...) (fprintf(stderr, "fuzz_topology: " __VA_ARGS__), fputc('\n', stderr), abort())

/* make check-fuzz links with -Wl,--wrap=esbulk__now_ms: the topology's
 * clock (when answers go stale, when a failed fetch may be retried) moves
 * one millisecond per reading, so that a run tries the same inputs every
 * time, whatever the machine's speed */
int64_t __wrap_esbulk__now_ms(void);
int64_t __wrap_esbulk__now_ms(void)
{
    static int64_t now = 1000000;

    return now++;
}

static const uint8_t *in_p, *in_end;
static int requests;

esbulk_err_t __wrap_esbulk__http_request(const esbulk__http_opts_t *opts, const char *method,
                                         const char *url, const char *content_type,
                                         const char *body, size_t body_len, long timeout_ms,
                                         long *status, esbulk__buf_t *response, char *errstr,
                                         size_t errstr_size)
{
    const uint8_t *start = in_p, *stop;
    size_t n;

    (void)opts; (void)method; (void)content_type; (void)body; (void)body_len;
    (void)timeout_ms;
    if (url == NULL || strncmp(url, "http://", 7) != 0)
        FAIL("request to an unexpected URL %s", url ? url : "(null)");
    requests++;
    esbulk__buf_reset(response);
    if (in_p == NULL || in_p >= in_end || requests > 200) {
        snprintf(errstr, errstr_size, "no more answers");
        return ESBULK_ERR_TRANSPORT;
    }
    stop = in_p;
    for (;;) {
        stop = memchr(stop, '@', (size_t)(in_end - stop));
        if (stop == NULL || (stop + 2 < in_end && stop[1] == '@' && stop[2] == '\n' &&
                             (stop == start || stop[-1] == '\n')))
            break;
        stop++;
    }
    if (stop == NULL)
        stop = in_end;
    n = (size_t)(stop - start);
    in_p = stop == in_end ? in_end : stop + 3;
    *status = 200;
    if (n >= 4 && start[3] == ' ') {
        if (memcmp(start, "XXX", 3) == 0) {
            snprintf(errstr, errstr_size, "connection refused (fuzz)");
            return ESBULK_ERR_TRANSPORT;
        }
        if (start[0] >= '1' && start[0] <= '5' && start[1] >= '0' && start[1] <= '9' &&
            start[2] >= '0' && start[2] <= '9') {
            *status = (start[0] - '0') * 100 + (start[1] - '0') * 10 + (start[2] - '0');
            start += 4;
            n -= 4;
        }
    }
    if (esbulk__buf_add(response, start, n) != ESBULK_OK) {
        snprintf(errstr, errstr_size, "answer too large");
        return ESBULK_ERR_TOO_LARGE;
    }
    return ESBULK_OK;
}

static void check_entry(const esbulk__index_t *e)
{
    int32_t s;

    if (e->state != ESBULK__IDX_OK) {
        if (e->reason == NULL)
            FAIL("index state %d without a reason", e->state);
        return;
    }
    if (e->layout.shards < 1 || e->layout.partition_size < 1 ||
        e->layout.partition_size > e->layout.shards * 1024 || e->cluster == NULL ||
        e->write_index == NULL)
        FAIL("bad entry: %d shards, partition %d, cluster %p, write index %s",
             e->layout.shards, e->layout.partition_size, (void *)e->cluster,
             e->write_index ? e->write_index : "(null)");
    if (esbulk_layout_routing_shards(&e->layout) < e->layout.shards ||
        esbulk_layout_routing_shards(&e->layout) % e->layout.shards != 0)
        FAIL("routing shards %d for %d shards", esbulk_layout_routing_shards(&e->layout),
             e->layout.shards);
    for (s = 0; e->primary != NULL && s < e->layout.shards; s++)
        if (e->primary[s] < -1 || e->primary[s] >= e->cluster->nnodes)
            FAIL("shard %d: primary on node %d of %d", s, e->primary[s], e->cluster->nnodes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static esbulk_conf_t *conf;
    static const char *const ids[] = {"1", "a", "esbulk", "\xc3\xa9t\xc3\xa9", "x\xf0\x9f\x98\x80"};
    esbulk_topology_t *topo;
    esbulk__index_t *e = NULL;
    char errstr[512], node[64];
    size_t i;

    if (conf == NULL) {
        conf = esbulk_conf_new();
        if (conf == NULL || esbulk_conf_set(conf, "urls", "http://127.0.0.1:9", NULL, 0) != 0)
            abort();
    }
    in_p = data;
    in_end = data + size;
    requests = 0;
    topo = esbulk_topology_new(conf, errstr, sizeof(errstr));
    if (topo == NULL)
        FAIL("esbulk_topology_new: %s", errstr);
    if (esbulk__topology_fetch_index(topo, "idx", &e, errstr, sizeof(errstr)) == ESBULK_OK) {
        if (e == NULL)
            FAIL("OK without an entry");
        check_entry(e);
        esbulk__index_release(e);
    }
    /* the stored path, routing through it, and the description */
    for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
        int32_t shard = -1;
        esbulk__index_t *g = NULL;

        if (esbulk_topology_route(topo, "idx", ids[i], strlen(ids[i]), i & 1 ? ids[i] : NULL,
                                  i & 1 ? strlen(ids[i]) : 0, &shard, node, sizeof(node), errstr,
                                  sizeof(errstr)) == ESBULK_OK) {
            if (esbulk__topology_get_index(topo, "idx", &g, errstr, sizeof(errstr)) !=
                ESBULK_OK)
                FAIL("routed, then the stored entry is gone: %s", errstr);
            if (shard < 0 || shard >= g->layout.shards)
                FAIL("shard %d of %d", shard, g->layout.shards);
            check_entry(g);
            esbulk__index_release(g);
        }
    }
    free(esbulk_topology_describe(topo, "idx", errstr, sizeof(errstr)));
    esbulk_topology_destroy(topo);
    return 0;
}
