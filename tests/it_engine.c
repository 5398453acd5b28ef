/*
 * Integration test of the bulk engine against the real cluster.
 *
 *   tests/it_engine URL            the main suite
 *   tests/it_engine URL --rejections   against a cluster with a tiny write
 *                                  queue: real 429s, nothing lost
 *   tests/it_engine URL --node-failure CLUSTER_SCRIPT
 *                                  a node holding primaries is killed mid-load
 *                                  (CLUSTER_SCRIPT kill-node I) and restarted
 *
 * Main suite: 225,000 documents through every routing level (node, shard,
 * off) with ids, without ids (client-generated) and with custom routing:
 * each gets exactly one result, the index count after refresh equals the
 * indexed results; mapping errors come back per document with the server's
 * reason while the rest indexes; ordering=per_id keeps the last write of
 * each id; gzip; update and delete results; an index created by the first
 * write; credentials never appear in logs, errors, statistics or results.
 */
#define _GNU_SOURCE 1
#include <esbulk.h>

#include "it_common.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_t main_thread;
static int off_thread;

static int64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void on_result(esbulk_t *eb, const esbulk_result_t *r, void *opaque)
{
    (void)eb;
    (void)opaque;
    if (!pthread_equal(pthread_self(), main_thread))
        off_thread++;
    seen_record(r);
}


/* Logs, kept to check that no secret shows. */
static char *log_text;
static size_t log_len;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static void on_log(int32_t level, const char *fac, const char *msg, void *opaque)
{
    size_t n = strlen(fac) + strlen(msg) + 8;

    (void)level;
    (void)opaque;
    if (getenv("IT_LOG") != NULL)
        fprintf(stderr, "log %d %s: %s\n", (int)level, fac, msg);
    pthread_mutex_lock(&log_lock);
    log_text = realloc(log_text, log_len + n + 1);
    log_len += (size_t)snprintf(log_text + log_len, n + 1, "%s: %s\n", fac, msg);
    pthread_mutex_unlock(&log_lock);
}

static esbulk_t *handle(const char *const *kv)
{
    esbulk_conf_t *conf = esbulk_conf_new();
    char errstr[512];
    esbulk_t *eb;

    if (esbulk_conf_set(conf, "urls", base_url, errstr, sizeof(errstr)) != ESBULK_OK)
        die("conf: %s", errstr);
    for (; kv != NULL && kv[0] != NULL; kv += 2)
        if (esbulk_conf_set(conf, kv[0], kv[1], errstr, sizeof(errstr)) != ESBULK_OK)
            die("conf %s=%s: %s", kv[0], kv[1], errstr);
    esbulk_conf_set_result_cb(conf, on_result);
    esbulk_conf_set_log_cb(conf, on_log);
    eb = esbulk_new(conf, errstr, sizeof(errstr));
    esbulk_conf_destroy(conf);
    if (eb == NULL)
        die("esbulk_new: %s", errstr);
    return eb;
}

static void fresh_index(const char *name, const char *mappings)
{
    char path[256], body[1024];
    long status;

    snprintf(path, sizeof(path), "/%s", name);
    json_decref(req("DELETE", path, NULL, &status));
    snprintf(body, sizeof(body),
             "{\"settings\":{\"number_of_shards\":6,\"number_of_replicas\":0}%s%s}",
             mappings ? ",\"mappings\":" : "", mappings ? mappings : "");
    must_ok("PUT", path, body);
}

static long count_of(const char *index)
{
    char path[256];
    json_t *j;
    long n;

    snprintf(path, sizeof(path), "/%s/_refresh", index);
    must_ok("POST", path, NULL);
    snprintf(path, sizeof(path), "/%s/_count", index);
    j = must("GET", path, NULL);
    n = (long)json_integer_value(json_object_get(j, "count"));
    json_decref(j);
    return n;
}

static json_t *stats_of(esbulk_t *eb)
{
    char *text = esbulk_stats_json(eb);
    json_t *j = text ? json_loads(text, 0, NULL) : NULL;

    esbulk_free(text);
    if (j == NULL)
        die("stats are not JSON");
    return j;
}

static long stat(json_t *st, const char *key)
{
    return (long)json_integer_value(json_object_get(st, key));
}

static void add_or_die(esbulk_t *eb, esbulk_op_t op, const char *index, const char *id,
                       const char *routing, const char *body, size_t i)
{
    char errstr[512];
    esbulk_err_t err;

    for (;;) {
        err = esbulk_add(eb, op, index, id, id ? strlen(id) : 0, routing,
                         routing ? strlen(routing) : 0, body, body ? strlen(body) : 0,
                         (void *)(uintptr_t)i, errstr, sizeof(errstr));
        if (err != ESBULK_ERR_QUEUE_FULL)
            break;
        esbulk_poll(eb, 100);
    }
    if (err != ESBULK_OK)
        die("esbulk_add: %s", errstr);
    if (i % 2000 == 0)
        esbulk_poll(eb, 0);
}

/* Every document got exactly one result, and how many were indexed. */
static size_t tally(size_t n, size_t *not_once, size_t *failed_out)
{
    size_t i, indexed = 0;

    *not_once = 0;
    *failed_out = 0;
    for (i = 0; i < n; i++) {
        if (seen[i].results != 1)
            (*not_once)++;
        else if (seen[i].outcome == ESBULK_OUTCOME_INDEXED)
            indexed++;
        else
            (*failed_out)++;
    }
    return indexed;
}

/* ------------------------------------------------------------------------- */

static void volume(const char *level, const char *mode, size_t n)
{
    static const char *const routings[] = {"tenant-a", "tenant-b", "tenant-\xe4\xb8\xad", "42"};
    const char *kv[] = {"routing.level", level, "flush.docs", "500", "max.inflight.per.node", "2",
                        NULL};
    char index[64], id[48], body[160];
    size_t i, not_once, nfail, indexed;
    esbulk_t *eb;
    json_t *st;
    long count;
    int64_t t0;

    snprintf(index, sizeof(index), "it-eng-%s-%s", level, mode);
    fresh_index(index, NULL);
    seen_reset(n);
    eb = handle(kv);
    t0 = (int64_t)time(NULL);
    for (i = 0; i < n; i++) {
        snprintf(id, sizeof(id), "%s-%zu", mode, i * 2654435761u % 100000007u);
        snprintf(body, sizeof(body), "{\"n\":%zu,\"mode\":\"%s\",\"text\":\"document number %zu\"}",
                 i, mode, i);
        add_or_die(eb, ESBULK_OP_INDEX, index, strcmp(mode, "noids") == 0 ? NULL : id,
                   strcmp(mode, "routing") == 0 ? routings[i % 4] : NULL, body, i);
    }
    check(esbulk_flush(eb, 120000) == ESBULK_OK, "%s/%s: flush returned in time", level, mode);
    st = stats_of(eb);
    esbulk_destroy(eb);
    indexed = tally(n, &not_once, &nfail);
    count = count_of(index);
    check(not_once == 0, "%s/%s: each of %zu documents got exactly one result (%zu did not)",
          level, mode, n, not_once);
    check(indexed == n, "%s/%s: %zu indexed, %zu failed", level, mode, indexed, nfail);
    check(count == (long)indexed, "%s/%s: index count %ld equals the %zu indexed results "
          "(no duplicates, none lost)", level, mode, count, indexed);
    if (strcmp(level, "off") != 0)
        check(stat(st, "unrouted") == 0, "%s/%s: every document routed (unrouted %ld)", level,
              mode, stat(st, "unrouted"));
    {
        /* buffer.max.docs left at 0: sized by the cluster's nodes (their
         * HTTP addresses reachable here) and the destinations */
        json_t *nodes = must("GET", "/_nodes/http", NULL);
        long nn = (long)json_object_size(json_object_get(nodes, "nodes"));
        long dests = stat(st, "destinations"), q = dests > nn ? dests : nn;
        long want = 2 * (nn * 2 + q) * 500;

        json_decref(nodes);
        if (want < 10000)
            want = 10000;
        check(nn >= 3 && stat(st, "buffer_max_docs") == want,
              "%s/%s: buffer.max.docs sized by the cluster: %ld for %ld nodes and %ld "
              "destinations (%ld expected)", level, mode, stat(st, "buffer_max_docs"), nn, dests,
              want);
    }
    if (strcmp(mode, "noids") == 0)
        check(strlen(seen[0].id) == 20 && strlen(seen[n - 1].id) == 20,
              "%s/%s: results carry the generated 20-character ids (%s)", level, mode, seen[0].id);
    printf("  %s/%s: %zu documents, %ld requests, %lds\n", level, mode, n, stat(st, "requests"),
           (long)((int64_t)time(NULL) - t0));
    json_decref(st);
}

static void mapping_errors(void)
{
    const char *index = "it-eng-mapping";
    size_t n = 2000, i, bad = 0, good = 0, reasons = 0, not_once, nfail;
    char id[32], body[128];
    esbulk_t *eb;

    fresh_index(index, "{\"properties\":{\"n\":{\"type\":\"integer\"}}}");
    seen_reset(n);
    eb = handle(NULL);
    for (i = 0; i < n; i++) {
        snprintf(id, sizeof(id), "m%zu", i);
        if (i % 20 == 7)
            snprintf(body, sizeof(body), "{\"n\":\"not a number %zu\"}", i);
        else
            snprintf(body, sizeof(body), "{\"n\":%zu}", i);
        add_or_die(eb, ESBULK_OP_INDEX, index, id, NULL, body, i);
    }
    esbulk_flush(eb, 60000);
    esbulk_destroy(eb);
    tally(n, &not_once, &nfail);
    for (i = 0; i < n; i++) {
        if (i % 20 == 7) {
            bad += seen[i].outcome == ESBULK_OUTCOME_FAILED && seen[i].status == 400;
            reasons += strstr(seen[i].error_type, "parsing_exception") != NULL &&
                       seen[i].reason[0] != '\0';
        } else {
            good += seen[i].outcome == ESBULK_OUTCOME_INDEXED;
        }
    }
    check(not_once == 0, "mapping errors: every document got exactly one result");
    check(bad == n / 20, "mapping errors: %zu of %zu bad documents failed with status 400", bad,
          n / 20);
    check(reasons == n / 20, "mapping errors: each carries the server's type and reason "
          "(e.g. %s: %.80s)", seen[7].error_type, seen[7].reason);
    check(good == n - n / 20, "mapping errors: the other %zu documents indexed", good);
    check(count_of(index) == (long)good, "mapping errors: index count equals the indexed ones");
}

/* A request the server refuses whole for one document's sake (an update
 * with neither doc nor script: 400 for the request) is halved until that
 * document is alone: only it fails, the others are indexed. */
static void request_refusals(void)
{
    const char *index = "it-eng-refused";
    size_t n = 1000, i, good = 0, bad = 0, not_once, nfail;
    char id[32], body[128];
    json_t *st;
    esbulk_t *eb;

    fresh_index(index, NULL);
    seen_reset(n);
    eb = handle(NULL);
    for (i = 0; i < n; i++) {
        snprintf(id, sizeof(id), "r%zu", i);
        if (i == 300 || i == 777) {
            add_or_die(eb, ESBULK_OP_UPDATE, index, id, NULL, "{\"a\":2}", i);
            continue;
        }
        snprintf(body, sizeof(body), "{\"n\":%zu}", i);
        add_or_die(eb, ESBULK_OP_INDEX, index, id, NULL, body, i);
    }
    esbulk_flush(eb, 60000);
    st = stats_of(eb);
    esbulk_destroy(eb);
    tally(n, &not_once, &nfail);
    for (i = 0; i < n; i++) {
        if (i == 300 || i == 777)
            bad += seen[i].outcome == ESBULK_OUTCOME_FAILED && seen[i].status == 400 &&
                   seen[i].error_type[0] != '\0' && seen[i].reason[0] != '\0';
        else
            good += seen[i].outcome == ESBULK_OUTCOME_INDEXED;
    }
    check(not_once == 0, "request refusals: every document got exactly one result");
    check(bad == 2, "request refusals: the 2 updates without doc failed alone with 400 and the "
          "server's reason (e.g. %s: %.80s)", seen[300].error_type, seen[300].reason);
    check(good == n - 2, "request refusals: the other %zu of %zu documents indexed", good, n - 2);
    check(stat(st, "split_400") > 0, "request refusals: stats split_400 = %ld",
          stat(st, "split_400"));
    check(count_of(index) == (long)good, "request refusals: index count equals the indexed ones");
    json_decref(st);
}

static void per_id_ordering(void)
{
    const char *index = "it-eng-order";
    const char *kv[] = {"ordering", "per_id", "flush.docs", "50", "max.inflight.per.node", "4",
                        "result.meta", "true", NULL};
    size_t ids = 500, versions = 6, v, k, wrong = 0, not_once, nfail;
    char id[32], body[64];
    json_t *j, *hits, *h;
    esbulk_t *eb;

    fresh_index(index, NULL);
    seen_reset(ids * versions);
    eb = handle(kv);
    for (v = 0; v < versions; v++) {
        for (k = 0; k < ids; k++) {
            snprintf(id, sizeof(id), "o%zu", k);
            snprintf(body, sizeof(body), "{\"v\":%zu}", v);
            add_or_die(eb, ESBULK_OP_INDEX, index, id, NULL, body, v * ids + k);
        }
    }
    esbulk_flush(eb, 60000);
    esbulk_destroy(eb);
    tally(ids * versions, &not_once, &nfail);
    check(not_once == 0 && nfail == 0, "ordering=per_id: %zu writes, each indexed once",
          ids * versions);
    count_of(index);
    j = must("POST", "/it-eng-order/_search", "{\"size\":1000,\"query\":{\"match_all\":{}}}");
    hits = json_object_get(json_object_get(j, "hits"), "hits");
    json_array_foreach(hits, k, h)
        if (json_integer_value(json_object_get(json_object_get(h, "_source"), "v")) !=
            (json_int_t)(versions - 1))
            wrong++;
    check(json_array_size(hits) == ids && wrong == 0,
          "ordering=per_id: all %zu ids hold their last write (%zu do not)", json_array_size(hits),
          wrong);
    /* and the versions rose one by one: write v of an id (in the order added)
     * is its version v + 1, with a _seq_no above the write before it */
    for (k = 0, wrong = 0; k < ids; k++)
        for (v = 0; v < versions; v++) {
            const seen_t *w = &seen[v * ids + k];

            if (w->version != (int64_t)v + 1 || w->seq_no < 0 ||
                (v > 0 && w->seq_no <= seen[(v - 1) * ids + k].seq_no))
                wrong++;
        }
    check(wrong == 0, "ordering=per_id: each id's writes got versions 1..%zu and rising _seq_no "
          "in the order added (%zu do not; last write: version %lld, seq_no %lld)", versions,
          wrong, (long long)seen[ids * versions - 1].version,
          (long long)seen[ids * versions - 1].seq_no);
    json_decref(j);
}

static void gzip_and_ops(void)
{
    const char *index = "it-eng-gzip";
    const char *kv[] = {"compression", "gzip", "compression.level", "6", NULL};
    size_t n = 10000, i, not_once, nfail, updated = 0, deleted = 0, missing = 0;
    char id[32], body[200];
    esbulk_t *eb;
    json_t *st;

    fresh_index(index, NULL);
    seen_reset(n + 300);
    eb = handle(kv);
    for (i = 0; i < n; i++) {
        snprintf(id, sizeof(id), "g%zu", i);
        snprintf(body, sizeof(body), "{\"n\":%zu,\"pad\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                 "aaaaaaaaaaaaaaaaaaaaaa\"}", i);
        add_or_die(eb, ESBULK_OP_INDEX, index, id, NULL, body, i);
    }
    esbulk_flush(eb, 60000);
    /* then 100 updates, 100 deletes and 100 deletes of missing ids */
    for (i = 0; i < 100; i++) {
        snprintf(id, sizeof(id), "g%zu", i);
        add_or_die(eb, ESBULK_OP_UPDATE, index, id, NULL, "{\"doc\":{\"updated\":true}}", n + i);
        snprintf(id, sizeof(id), "g%zu", 100 + i);
        add_or_die(eb, ESBULK_OP_DELETE, index, id, NULL, NULL, n + 100 + i);
        snprintf(id, sizeof(id), "missing%zu", i);
        add_or_die(eb, ESBULK_OP_DELETE, index, id, NULL, NULL, n + 200 + i);
    }
    esbulk_flush(eb, 60000);
    st = stats_of(eb);
    esbulk_destroy(eb);
    tally(n + 300, &not_once, &nfail);
    for (i = 0; i < 100; i++) {
        updated += strcmp(seen[n + i].result, "updated") == 0;
        deleted += strcmp(seen[n + 100 + i].result, "deleted") == 0;
        missing += strcmp(seen[n + 200 + i].result, "not_found") == 0 &&
                   seen[n + 200 + i].outcome == ESBULK_OUTCOME_INDEXED;
    }
    check(not_once == 0 && nfail == 0, "gzip: %zu documents and operations, each one result",
          n + 300);
    check(stat(st, "bytes_sent") * 2 < stat(st, "bytes_uncompressed"),
          "gzip: %ld bytes sent for %ld uncompressed", stat(st, "bytes_sent"),
          stat(st, "bytes_uncompressed"));
    check(updated == 100 && deleted == 100 && missing == 100,
          "update/delete results: %zu updated, %zu deleted, %zu not_found", updated, deleted,
          missing);
    check(count_of(index) == (long)(n - 100), "gzip: index count after deletes");
    json_decref(st);
}

/* An index whose primary cannot be assigned (red): the server holds a bulk
 * for it up to the bulk's timeout (1m by default), and request.timeout.ms
 * broke the request off first, its documents sent again silently for
 * minutes. Asked to answer within 5/6 of request.timeout.ms, the server
 * answers each document 503 in time: it fails with the server's reason. */
static void red_index(void)
{
    const char *kv[] = {"request.timeout.ms", "3000", "retry.max", "0", "flush.interval.ms", "10",
                        NULL};
    const char *path = "/it-eng-red";
    long status;
    int64_t t0, took;
    esbulk_t *eb;

    json_decref(req("DELETE", path, NULL, &status));
    must_ok("PUT", "/it-eng-red?wait_for_active_shards=0",
            "{\"settings\":{\"number_of_shards\":1,\"number_of_replicas\":0,"
            "\"index.routing.allocation.require._name\":\"no-such-node\"}}");
    seen_reset(1);
    eb = handle(kv);
    t0 = mono_ms();
    add_or_die(eb, ESBULK_OP_INDEX, "it-eng-red", "r1", NULL, "{\"n\":1}", 0);
    check(esbulk_flush(eb, 20000) == ESBULK_OK, "red index: flush returned in time");
    took = mono_ms() - t0;
    esbulk_destroy(eb);
    must_ok("DELETE", path, NULL); /* the cluster green again for the others */
    check(seen[0].results == 1 && seen[0].outcome == ESBULK_OUTCOME_FAILED &&
              seen[0].status == 503 && strstr(seen[0].error_type, "unavailable_shards") != NULL,
          "red index: the document failed with the server's 503 (outcome %d, status %d, %s: "
          "%.120s)", (int)seen[0].outcome, (int)seen[0].status, seen[0].error_type,
          seen[0].reason);
    check(took < 2900, "red index: answered in %lld ms, before request.timeout.ms (3000)",
          (long long)took);
}

static int stats_calls, stats_bad;

static void on_stats(esbulk_t *eb, const char *json, size_t len, void *opaque)
{
    json_t *j = json_loadb(json, len, 0, NULL);

    (void)eb;
    (void)opaque;
    stats_calls++;
    if (!pthread_equal(pthread_self(), main_thread) || j == NULL ||
        !json_is_integer(json_object_get(j, "added")) || !json_is_array(json_object_get(j, "nodes")))
        stats_bad++;
    json_decref(j);
}

/* result.failures_only: only the failures reach the callback, with the
 * server's status and reason although the server is asked for less; deletes
 * of missing ids still count as done; the periodic statistics callback runs
 * on the polling thread. */
static void failures_only_and_stats(void)
{
    const char *index = "it-eng-failonly";
    size_t n = 3000, ndel = 50, i, calls = 0, bad_ok = 0;
    char id[32], body[64], errstr[256];
    esbulk_conf_t *conf = esbulk_conf_new();
    esbulk_t *eb;
    int64_t t0;

    fresh_index(index, "{\"properties\":{\"n\":{\"type\":\"integer\"}}}");
    seen_reset(n + ndel);
    esbulk_conf_set(conf, "urls", base_url, NULL, 0);
    esbulk_conf_set(conf, "result.failures_only", "true", NULL, 0);
    esbulk_conf_set(conf, "stats.interval.ms", "100", NULL, 0);
    esbulk_conf_set_result_cb(conf, on_result);
    esbulk_conf_set_stats_cb(conf, on_stats);
    eb = esbulk_new(conf, errstr, sizeof(errstr));
    esbulk_conf_destroy(conf);
    if (eb == NULL)
        die("esbulk_new: %s", errstr);
    for (i = 0; i < n; i++) {
        snprintf(id, sizeof(id), "fo%zu", i);
        snprintf(body, sizeof(body), i % 100 == 0 ? "{\"n\":\"bad\"}" : "{\"n\":%zu}", i);
        add_or_die(eb, ESBULK_OP_INDEX, index, id, NULL, body, i);
    }
    for (i = 0; i < ndel; i++) {
        snprintf(id, sizeof(id), "missing%zu", i);
        add_or_die(eb, ESBULK_OP_DELETE, index, id, NULL, NULL, n + i);
    }
    check(esbulk_flush(eb, 60000) == ESBULK_OK && esbulk_pending(eb) == 0,
          "failures_only: flush returns with nothing pending");
    {
        char *sj = esbulk_stats_json(eb);
        json_t *st = sj ? json_loads(sj, 0, NULL) : NULL;

        check(stat(st, "indexed") == (long)(n - n / 100 + ndel) &&
                  stat(st, "failed") == (long)(n / 100),
              "failures_only: stats count %ld done (%zu indexed + %zu deletes of missing ids) "
              "and %ld failed", stat(st, "indexed"), n - n / 100, ndel, stat(st, "failed"));
        json_decref(st);
        esbulk_free(sj);
    }
    t0 = mono_ms();
    while (mono_ms() - t0 < 450)
        esbulk_poll(eb, 100);
    esbulk_destroy(eb);
    for (i = 0; i < n; i++) {
        calls += (size_t)seen[i].results;
        bad_ok += i % 100 == 0 && seen[i].results == 1 && seen[i].outcome == ESBULK_OUTCOME_FAILED &&
                  seen[i].status == 400 && strstr(seen[i].error_type, "parsing") != NULL &&
                  seen[i].reason[0] != '\0';
    }
    for (i = n; i < n + ndel; i++)
        calls += (size_t)seen[i].results;
    check(calls == n / 100 && bad_ok == n / 100,
          "result.failures_only: %zu callbacks, for exactly the %zu failures (status 400, a "
          "parsing error and its reason)", calls, n / 100);
    check(count_of(index) == (long)(n - n / 100), "failures_only: the others were indexed");
    check(stats_calls >= 3 && stats_bad == 0,
          "stats.interval.ms=100: %d statistics callbacks, on the polling thread, valid JSON",
          stats_calls);
}

static void auto_created_index(void)
{
    const char *index = "it-eng-autocreate";
    size_t n = 3000, i, not_once, nfail;
    char id[32], path[64];
    esbulk_t *eb;
    json_t *st;
    long status;

    snprintf(path, sizeof(path), "/%s", index);
    json_decref(req("DELETE", path, NULL, &status));
    seen_reset(n);
    eb = handle(NULL);
    for (i = 0; i < n; i++) {
        snprintf(id, sizeof(id), "a%zu", i);
        add_or_die(eb, ESBULK_OP_INDEX, index, id, NULL, "{\"a\":1}", i);
    }
    esbulk_flush(eb, 60000);
    st = stats_of(eb);
    esbulk_destroy(eb);
    check(tally(n, &not_once, &nfail) == n && not_once == 0,
          "an index created by the first write: all %zu indexed (%ld sent unrouted first)", n,
          stat(st, "unrouted"));
    check(count_of(index) == (long)n, "auto-created index: count %zu", n);
    json_decref(st);
}

static void secrets_stay_secret(void)
{
    char urls[512], *text;
    const char *kv[] = {"urls", urls, "log.level", "7", "auth.password", "s3cr3t-pass",
                        "auth.username", "someone", "retry.max", "1", "retry.backoff.ms", "10",
                        NULL};
    size_t i, not_once, nfail, leaks = 0;
    esbulk_t *eb;
    char id[16];

    /* a second seed that is dead and has credentials in its URL */
    snprintf(urls, sizeof(urls), "%s,http://user:s3cr3t-url@127.0.0.1:1", base_url);
    seen_reset(200);
    log_len = 0;
    eb = handle(kv);
    for (i = 0; i < 200; i++) {
        snprintf(id, sizeof(id), "s%zu", i);
        add_or_die(eb, ESBULK_OP_INDEX, i % 2 ? "it-eng-secret" : "it-eng-secret-\xe4\xb8\xad", id,
                   NULL, "{\"a\":1}", i);
    }
    esbulk_flush(eb, 60000);
    text = esbulk_stats_json(eb);
    leaks += strstr(text, "s3cr3t") != NULL;
    esbulk_free(text);
    text = NULL;
    {
        char buf[64];
        esbulk_conf_t *conf = esbulk_conf_new();
        esbulk_conf_set(conf, "auth.password", "s3cr3t-pass", NULL, 0);
        esbulk_conf_get(conf, "auth.password", buf, sizeof(buf), NULL);
        leaks += strstr(buf, "s3cr3t") != NULL;
        esbulk_conf_destroy(conf);
    }
    esbulk_destroy(eb);
    tally(200, &not_once, &nfail);
    for (i = 0; i < 200; i++)
        leaks += strstr(seen[i].reason, "s3cr3t") != NULL;
    pthread_mutex_lock(&log_lock);
    leaks += log_text != NULL && strstr(log_text, "s3cr3t") != NULL;
    check(log_len > 0, "debug logging produced %zu bytes of log", log_len);
    pthread_mutex_unlock(&log_lock);
    check(not_once == 0, "credentials test: every document got one result");
    check(leaks == 0, "no credential appears in logs, statistics, results or configuration");
}

/* ------------------------------------------------------------------------- */

static void rejections(void)
{
    const char *index = "it-eng-429";
    const char *kv[] = {"flush.docs", "300", "max.inflight.per.node", "8", "retry.max", "100",
                        "retry.backoff.ms", "20", "retry.backoff.max.ms", "1000",
                        "delivery.timeout.ms", "600000", NULL};
    size_t n = 20000, i, not_once, nfail, indexed;
    char id[32], body[96];
    esbulk_t *eb;
    json_t *st;

    fresh_index(index, NULL);
    seen_reset(n);
    eb = handle(kv);
    for (i = 0; i < n; i++) {
        snprintf(id, sizeof(id), "r%zu", i);
        snprintf(body, sizeof(body), "{\"n\":%zu,\"t\":\"rejections test document\"}", i);
        add_or_die(eb, ESBULK_OP_INDEX, index, id, NULL, body, i);
    }
    check(esbulk_flush(eb, 300000) == ESBULK_OK, "429: flush returned");
    st = stats_of(eb);
    esbulk_destroy(eb);
    indexed = tally(n, &not_once, &nfail);
    /* item-level 429s (one document rejected inside a 200 answer) are the
     * ones retried alone: request-level 429s alone would not show they are */
    check(stat(st, "item_429") > 0,
          "the tiny write queue produced real item-level rejections: %ld item 429s (and %ld "
          "request 429s)", stat(st, "item_429"), stat(st, "http_429"));
    check(stat(st, "retried") > 0, "429: %ld retries", stat(st, "retried"));
    check(not_once == 0, "429: every document got exactly one result");
    check(indexed == n, "429: all %zu indexed (%zu failed), nothing lost", indexed, nfail);
    check(count_of(index) == (long)n, "429: index count %zu", n);
    json_decref(st);
}

/* A field of the node at url in the library's statistics (-1: absent). */
static long node_stat(esbulk_t *eb, const char *url, const char *field)
{
    json_t *st = stats_of(eb), *n;
    long r = -1;
    size_t i;

    json_array_foreach(json_object_get(st, "nodes"), i, n) {
        json_t *v = json_object_get(n, field);
        if (json_is_string(json_object_get(n, "url")) &&
            strcmp(json_string_value(json_object_get(n, "url")), url) == 0)
            r = json_is_boolean(v) ? (long)json_is_true(v) : (long)json_integer_value(v);
    }
    json_decref(st);
    return r;
}

/* A node is killed (SIGKILL) in the middle of a load and started again: the
 * library marks it down, refreshes the topology, re-routes, retries what was
 * in flight (ids make that safe), and uses the node again once it is back. */
/* A node that holds a primary of index and is not the elected cluster
 * manager (so the cluster keeps working while it is down); its number. */
static int pick_victim(const char *index, char *name, size_t name_size)
{
    char path[256];
    json_t *mgr = must("GET", "/_cat/cluster_manager?format=json", NULL), *rows, *row;
    const char *m = json_string_value(json_object_get(json_array_get(mgr, 0), "node"));
    int victim = -1;
    size_t i;

    snprintf(path, sizeof(path), "/_cat/shards/%s?format=json&h=prirep,node", index);
    rows = must("GET", path, NULL);
    json_array_foreach(rows, i, row) {
        const char *n = json_string_value(json_object_get(row, "node"));
        const char *pr = json_string_value(json_object_get(row, "prirep"));
        if (victim < 0 && n && pr && strcmp(pr, "p") == 0 && (m == NULL || strcmp(n, m) != 0) &&
            strncmp(n, "os-node-", 8) == 0) {
            victim = atoi(n + 8);
            snprintf(name, name_size, "%s", n);
        }
    }
    json_decref(rows);
    json_decref(mgr);
    if (victim < 0)
        die("no node holds a primary of %s besides the cluster manager", index);
    return victim;
}

/* Runs the restart command (once more if it failed, e.g. on a port still
 * held by the killed process) and waits until the cluster has 3 nodes. */
static int restart_node(const char *cmd)
{
    int tries;

    if (system(cmd) != 0) {
        sleep(2);
        if (system(cmd) != 0)
            printf("  the restart command failed twice: waiting for the node anyway\n");
    }
    for (tries = 0; tries < 120; tries++) {
        long status;
        json_t *j = req("GET", "/_cat/nodes?format=json", NULL, &status);
        size_t n = json_array_size(j);

        json_decref(j);
        if (status == 200 && n == 3)
            return 1;
        sleep(1);
    }
    return 0;
}

static void node_failure(const char *script)
{
    const char *index = "it-eng-fail";
    char urls[256];
    const char *kv[] = {"urls", urls, "flush.docs", "200", "flush.interval.ms", "50", "retry.max", "60",
                        "retry.backoff.ms", "50", "retry.backoff.max.ms", "2000",
                        "node.recheck.ms", "500", "request.timeout.ms", "60000",
                        /* only a failed request tells the library: no timed refresh */
                        "topology.refresh.interval.ms", "600000", NULL};
    size_t n = 40000, i, not_once, nfail, indexed;
    long errors = -1, down = -1;
    char id[32], body[96], victim[32], kill_cmd[1024], restart_cmd[1024], victim_url[64];
    esbulk_t *eb;
    json_t *st;
    long status;
    int v;

    json_decref(req("DELETE", "/it-eng-fail", NULL, &status));
    must_ok("PUT", "/it-eng-fail",
            "{\"settings\":{\"number_of_shards\":4,\"number_of_replicas\":1}}");
    wait_green();
    {
        /* every node as a seed, as a real client is configured */
        int port = atoi(strrchr(base_url, ':') + 1);
        snprintf(urls, sizeof(urls), "%s,http://127.0.0.1:%d,http://127.0.0.1:%d", base_url,
                 port + 1, port + 2);
    }
    v = pick_victim(index, victim, sizeof(victim));
    snprintf(victim_url, sizeof(victim_url), "http://127.0.0.1:%d",
             atoi(strrchr(base_url, ':') + 1) + v);
    snprintf(kill_cmd, sizeof(kill_cmd), "%s kill-node %d >/dev/null", script, v);
    snprintf(restart_cmd, sizeof(restart_cmd), "%s start-node %d >/dev/null", script, v);
    seen_reset(n);
    eb = handle(kv);
    for (i = 0; i < n; i++) {
        snprintf(id, sizeof(id), "f%zu", i);
        snprintf(body, sizeof(body), "{\"n\":%zu,\"t\":\"node failure test\"}", i);
        add_or_die(eb, ESBULK_OP_INDEX, index, id, NULL, body, i);
        if (i == 10000) {
            /* first the library must know the node and send to it; only a
             * failed request then tells it the node is gone */
            esbulk_flush(eb, 60000);
            usleep(600000); /* one statistics snapshot */
            check(node_stat(eb, victim_url, "requests") > 0,
                  "before the kill, %s receives its documents directly", victim);
            check(system(kill_cmd) == 0, "killed %s (SIGKILL, it holds primaries) in the "
                  "middle of the load", victim);
        }
        if (i == 20000) {
            check(restart_node(restart_cmd), "%s started again and rejoined", victim);
            esbulk_flush(eb, 120000);
            usleep(600000); /* one statistics snapshot */
            errors = node_stat(eb, victim_url, "errors");
        }
        if (i % 500 == 0)
            esbulk_poll(eb, 0);
    }
    check(esbulk_flush(eb, 180000) == ESBULK_OK, "node failure: flush returned");
    usleep(600000); /* one statistics snapshot */
    down = node_stat(eb, victim_url, "down");
    st = stats_of(eb);
    esbulk_destroy(eb);
    indexed = tally(n, &not_once, &nfail);
    check(not_once == 0, "node failure: every document got exactly one result");
    check(indexed == n, "node failure: all %zu indexed (%zu failed)", indexed, nfail);
    check(count_of(index) == (long)n, "node failure: index count %zu, no duplicates", n);
    check(errors > 0, "the library saw %s fail (%ld failed requests) and re-routed", victim,
          errors);
    if (errors <= 0) {
        char *dump = json_dumps(json_object_get(st, "nodes"), JSON_COMPACT);
        printf("  nodes: %s\n", dump ? dump : "?");
        free(dump);
    }
    check(down == 0, "%s is back: listed and not marked down once it answers again", victim);
    printf("  node failure: %ld retried, %ld requests\n", stat(st, "retried"), stat(st, "requests"));
    json_decref(st);
}

/* ------------------------------------------------------------------------- */
/* Per-document action options and the kept body of failures */

typedef struct {
    int results;
    esbulk_outcome_t outcome;
    int32_t status;
    int64_t seq_no, primary_term;
    char error_type[64], reason[512], body[256];
    int has_body;
} opt_seen_t;

static opt_seen_t opt_seen[32];

static void on_opt_result(esbulk_t *eb, const esbulk_result_t *r, void *opaque)
{
    size_t k = (size_t)esbulk_result_opaque(r), len = 0;
    const char *body = esbulk_result_body(r, &len);
    opt_seen_t *o;

    (void)eb;
    (void)opaque;
    if (k >= sizeof(opt_seen) / sizeof(opt_seen[0]))
        return;
    o = &opt_seen[k];
    o->results++;
    o->outcome = esbulk_result_outcome(r);
    o->status = esbulk_result_status(r);
    o->seq_no = esbulk_result_seq_no(r);
    o->primary_term = esbulk_result_primary_term(r);
    snprintf(o->error_type, sizeof(o->error_type), "%s",
             esbulk_result_error_type(r) ? esbulk_result_error_type(r) : "");
    snprintf(o->reason, sizeof(o->reason), "%s",
             esbulk_result_error_reason(r) ? esbulk_result_error_reason(r) : "");
    o->has_body = body != NULL;
    snprintf(o->body, sizeof(o->body), "%.*s", (int)(len < 255 ? len : 255), body ? body : "");
}

/* Adds document k with opts and waits for its result. */
static opt_seen_t *opt_add(esbulk_t *eb, size_t k, esbulk_op_t op, const char *index,
                           const char *id, const char *body, const esbulk_docopts_t *opts)
{
    char errstr[512];

    memset(&opt_seen[k], 0, sizeof(opt_seen[k]));
    if (esbulk_add_opts(eb, op, index, id, strlen(id), NULL, 0, body, body ? strlen(body) : 0,
                        opts, (void *)k, errstr, sizeof(errstr)) != ESBULK_OK)
        die("esbulk_add_opts %zu: %s", k, errstr);
    if (esbulk_flush(eb, 30000) != ESBULK_OK)
        die("flush after document %zu timed out", k);
    return &opt_seen[k];
}

static void doc_options(void)
{
    const char *index = "it-eng-opts";
    esbulk_docopts_t *o = esbulk_docopts_new();
    esbulk_conf_t *conf = esbulk_conf_new();
    char errstr[512];
    opt_seen_t *r;
    int64_t seq, term;
    json_t *doc;
    esbulk_t *eb;

    fresh_index(index, "{\"properties\":{\"n\":{\"type\":\"integer\"}}}");
    must_ok("PUT", "/_ingest/pipeline/it-eng-set",
            "{\"processors\":[{\"set\":{\"field\":\"piped\",\"value\":true}}]}");
    if (o == NULL || conf == NULL ||
        esbulk_conf_set(conf, "urls", base_url, errstr, sizeof(errstr)) != ESBULK_OK ||
        esbulk_conf_set(conf, "result.keep_body", "true", errstr, sizeof(errstr)) != ESBULK_OK ||
        esbulk_conf_set(conf, "result.meta", "true", errstr, sizeof(errstr)) != ESBULK_OK)
        die("docopts setup: %s", errstr);
    esbulk_conf_set_result_cb(conf, on_opt_result);
    eb = esbulk_new(conf, errstr, sizeof(errstr));
    esbulk_conf_destroy(conf);
    if (eb == NULL)
        die("esbulk_new: %s", errstr);

    /* external versions: an older one is refused, a newer one applied */
    esbulk_docopts_set_version(o, 10, ESBULK_VERSION_EXTERNAL);
    r = opt_add(eb, 0, ESBULK_OP_INDEX, index, "v", "{\"n\":10}", o);
    check(r->results == 1 && r->outcome == ESBULK_OUTCOME_INDEXED,
          "external version 10 on a new document: indexed (%d %s)", r->status, r->reason);
    esbulk_docopts_set_version(o, 5, ESBULK_VERSION_EXTERNAL);
    r = opt_add(eb, 1, ESBULK_OP_INDEX, index, "v", "{\"n\":5}", o);
    check(r->outcome == ESBULK_OUTCOME_FAILED && r->status == 409 &&
          strstr(r->error_type, "version_conflict") != NULL,
          "an older external version (5 < 10) is refused: %d %s", r->status, r->error_type);
    check(r->has_body && strcmp(r->body, "{\"n\":5}") == 0,
          "the refused document's body is kept for dead-letter output (%s)", r->body);
    esbulk_docopts_set_version(o, 10, ESBULK_VERSION_EXTERNAL_GTE);
    r = opt_add(eb, 2, ESBULK_OP_INDEX, index, "v", "{\"n\":11}", o);
    check(r->outcome == ESBULK_OUTCOME_INDEXED && !r->has_body,
          "external_gte with the same version: indexed, and no body kept for a success");
    doc = must("GET", "/it-eng-opts/_doc/v", NULL);
    check(json_integer_value(json_object_get(doc, "_version")) == 10 &&
              json_integer_value(json_object_get(json_object_get(doc, "_source"), "n")) == 11,
          "the stored document has version 10 and the newest body");
    json_decref(doc);

    /* if_seq_no: the current one applies, a stale one conflicts */
    esbulk_docopts_clear(o);
    r = opt_add(eb, 3, ESBULK_OP_INDEX, index, "s", "{\"n\":1}", NULL);
    seq = r->seq_no;
    term = r->primary_term;
    check(r->outcome == ESBULK_OUTCOME_INDEXED && seq >= 0 && term >= 1,
          "a plain index reports _seq_no %lld and _primary_term %lld", (long long)seq,
          (long long)term);
    esbulk_docopts_set_if_seq_no(o, seq, term);
    r = opt_add(eb, 4, ESBULK_OP_UPDATE, index, "s", "{\"doc\":{\"n\":2}}", o);
    check(r->outcome == ESBULK_OUTCOME_INDEXED, "update with the current if_seq_no: applied");
    r = opt_add(eb, 5, ESBULK_OP_INDEX, index, "s", "{\"n\":3}", o);
    check(r->outcome == ESBULK_OUTCOME_FAILED && r->status == 409,
          "index with a stale if_seq_no: conflict reported (%d %s)", r->status, r->error_type);

    /* a pipeline per document */
    esbulk_docopts_clear(o);
    esbulk_docopts_set_pipeline(o, "it-eng-set");
    r = opt_add(eb, 6, ESBULK_OP_INDEX, index, "p", "{\"n\":6}", o);
    doc = must("GET", "/it-eng-opts/_doc/p", NULL);
    check(r->outcome == ESBULK_OUTCOME_INDEXED &&
              json_is_true(json_object_get(json_object_get(doc, "_source"), "piped")),
          "the document's pipeline ran (piped=true in the stored source)");
    json_decref(doc);
    r = opt_add(eb, 7, ESBULK_OP_INDEX, index, "q", "{\"n\":7}", NULL);
    doc = must("GET", "/it-eng-opts/_doc/q", NULL);
    check(r->outcome == ESBULK_OUTCOME_INDEXED &&
              json_object_get(json_object_get(doc, "_source"), "piped") == NULL,
          "a document without the option is not piped");
    json_decref(doc);

    /* require_alias on a concrete index: refused by the server */
    esbulk_docopts_clear(o);
    esbulk_docopts_set_require_alias(o, 1);
    r = opt_add(eb, 8, ESBULK_OP_INDEX, index, "a", "{\"n\":8}", o);
    check(r->outcome == ESBULK_OUTCOME_FAILED && strstr(r->reason, "alias") != NULL,
          "require_alias on a concrete index: refused (%d %.100s)", r->status, r->reason);

    /* retry_on_conflict is sent with an update */
    esbulk_docopts_clear(o);
    esbulk_docopts_set_retry_on_conflict(o, 3);
    r = opt_add(eb, 9, ESBULK_OP_UPDATE, index, "s", "{\"doc\":{\"n\":9}}", o);
    check(r->outcome == ESBULK_OUTCOME_INDEXED, "update with retry_on_conflict=3: applied");

    /* a mapping error keeps its body; options that do not fit are refused at add */
    r = opt_add(eb, 10, ESBULK_OP_INDEX, index, "bad", "{\"n\":\"not a number\"}", NULL);
    check(r->outcome == ESBULK_OUTCOME_FAILED && r->status == 400 &&
              strcmp(r->body, "{\"n\":\"not a number\"}") == 0,
          "a mapping error carries the body as sent (%s)", r->body);
    check(esbulk_add_opts(eb, ESBULK_OP_INDEX, index, "x", 1, NULL, 0, "{}", 2, o, NULL, errstr,
                          sizeof(errstr)) == ESBULK_ERR_INVALID_ARG &&
              strstr(errstr, "retry_on_conflict") != NULL,
          "retry_on_conflict on an index is refused at add: %s", errstr);
    esbulk_docopts_clear(o);
    esbulk_docopts_set_version(o, 1, ESBULK_VERSION_EXTERNAL);
    check(esbulk_add_opts(eb, ESBULK_OP_UPDATE, index, "x", 1, NULL, 0, "{\"doc\":{}}", 10, o,
                          NULL, errstr, sizeof(errstr)) == ESBULK_ERR_INVALID_ARG,
          "an external version on an update is refused at add: %s", errstr);
    esbulk_destroy(eb);
    esbulk_docopts_destroy(o);
}

/* ------------------------------------------------------------------------- */
/* The fields of each result, whatever the answer was asked to carry: the
 * concrete index through an alias, the server's id when none was given. */

#define SHAPE_DOCS 300

typedef struct {
    int results;
    esbulk_outcome_t outcome;
    char index[64], id[64], result[16];
    int64_t seq_no, primary_term, version;
} shape_seen_t;

static shape_seen_t shape_seen[3 * SHAPE_DOCS];

static void on_shape_result(esbulk_t *eb, const esbulk_result_t *r, void *opaque)
{
    size_t k = (size_t)esbulk_result_opaque(r);
    shape_seen_t *o;

    (void)eb;
    (void)opaque;
    if (k >= sizeof(shape_seen) / sizeof(shape_seen[0]))
        return;
    o = &shape_seen[k];
    o->results++;
    o->outcome = esbulk_result_outcome(r);
    snprintf(o->index, sizeof(o->index), "%s", esbulk_result_index(r));
    snprintf(o->id, sizeof(o->id), "%s", esbulk_result_id(r) ? esbulk_result_id(r) : "");
    snprintf(o->result, sizeof(o->result), "%s",
             esbulk_result_result(r) ? esbulk_result_result(r) : "");
    o->seq_no = esbulk_result_seq_no(r);
    o->primary_term = esbulk_result_primary_term(r);
    o->version = esbulk_result_version(r);
}

static void answer_fields(void)
{
    const char *index = "it-eng-shape", *alias = "it-eng-shape-w";
    /* the first two with result.meta (_seq_no, _primary_term and _version
     * asked for), the third without (the default: they are -1, and the
     * result, not asked for either, comes from the status) */
    static const char *const kinds[] = {"the index, with ids, result.meta",
                                        "the alias, with ids, result.meta",
                                        "the index, ids from the server, no result.meta"};
    esbulk_conf_t *conf;
    esbulk_t *eb;
    char errstr[512], id[32];
    size_t k, bad[3] = {0, 0, 0};
    int pass;

    fresh_index(index, NULL);
    must_ok("POST", "/_aliases",
            "{\"actions\":[{\"add\":{\"index\":\"it-eng-shape\",\"alias\":\"it-eng-shape-w\","
            "\"is_write_index\":true}}]}");
    memset(shape_seen, 0, sizeof(shape_seen));
    for (pass = 0; pass < 2; pass++) {
        conf = esbulk_conf_new();
        if (esbulk_conf_set(conf, "urls", base_url, errstr, sizeof(errstr)) != ESBULK_OK ||
            esbulk_conf_set(conf, "routing.level", "node", errstr, sizeof(errstr)) != ESBULK_OK ||
            esbulk_conf_set(conf, "id.generate", pass ? "none" : "time", errstr,
                            sizeof(errstr)) != ESBULK_OK ||
            (pass == 0 &&
             esbulk_conf_set(conf, "result.meta", "true", errstr, sizeof(errstr)) != ESBULK_OK))
            die("conf: %s", errstr);
        esbulk_conf_set_result_cb(conf, on_shape_result);
        eb = esbulk_new(conf, errstr, sizeof(errstr));
        esbulk_conf_destroy(conf);
        if (eb == NULL)
            die("esbulk_new: %s", errstr);
        for (k = 0; k < SHAPE_DOCS; k++) {
            size_t slot = pass ? 2 * SHAPE_DOCS + k : k;

            snprintf(id, sizeof(id), "shape-%zu", slot);
            if (esbulk_add(eb, ESBULK_OP_INDEX, index, pass ? NULL : id, pass ? 0 : strlen(id),
                           NULL, 0, "{\"n\":1}", 7, (void *)slot, errstr,
                           sizeof(errstr)) != ESBULK_OK)
                die("esbulk_add: %s", errstr);
            if (pass == 0) {
                slot = SHAPE_DOCS + k;
                snprintf(id, sizeof(id), "shape-%zu", slot);
                if (esbulk_add(eb, ESBULK_OP_INDEX, alias, id, strlen(id), NULL, 0, "{\"n\":2}",
                               7, (void *)slot, errstr, sizeof(errstr)) != ESBULK_OK)
                    die("esbulk_add: %s", errstr);
            }
        }
        if (esbulk_flush(eb, 60000) != ESBULK_OK)
            die("flush timed out");
        esbulk_destroy(eb);
    }
    for (k = 0; k < 3 * SHAPE_DOCS; k++) {
        const shape_seen_t *o = &shape_seen[k];
        char want_id[32];
        int ok;

        snprintf(want_id, sizeof(want_id), "shape-%zu", k);
        ok = o->results == 1 && o->outcome == ESBULK_OUTCOME_INDEXED &&
             strcmp(o->index, index) == 0 && strcmp(o->result, "created") == 0 &&
             (k < 2 * SHAPE_DOCS
                  ? o->seq_no >= 0 && o->primary_term >= 1 && o->version == 1
                  : o->seq_no == -1 && o->primary_term == -1 && o->version == -1) &&
             (k < 2 * SHAPE_DOCS ? strcmp(o->id, want_id) == 0 : strlen(o->id) >= 10);
        if (ok && k >= 2 * SHAPE_DOCS) {
            char path[128];
            long status = 0;

            /* the id reported is the one the server stored */
            snprintf(path, sizeof(path), "/%s/_doc/%s", index, o->id);
            json_decref(req("GET", path, NULL, &status));
            ok = status == 200;
        }
        if (!ok && bad[k / SHAPE_DOCS]++ < 2)
            printf("  document %zu: %d results, outcome %d, index %s, id %s, result %s, "
                   "seq_no %lld, term %lld, version %lld\n", k, o->results, o->outcome, o->index,
                   o->id, o->result, (long long)o->seq_no, (long long)o->primary_term,
                   (long long)o->version);
    }
    for (k = 0; k < 3; k++)
        check(bad[k] == 0, "%s: every result names %s, its id, created, and _seq_no, "
              "_primary_term and _version 1 (-1 without result.meta) (%zu of %d wrong)",
              kinds[k], index, bad[k],
              SHAPE_DOCS);
    check(count_of(index) == 3 * SHAPE_DOCS, "answer fields: count %d", 3 * SHAPE_DOCS);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: it_engine URL [--rejections]\n");
        return 2;
    }
    base_url = argv[1];
    main_thread = pthread_self();
    setvbuf(stdout, NULL, _IOLBF, 0);
    must_ok("GET", "/", NULL);
    if (argc > 2 && strcmp(argv[2], "--rejections") == 0) {
        rejections();
    } else if (argc > 3 && strcmp(argv[2], "--node-failure") == 0) {
        node_failure(argv[3]);
    } else {
        static const char *const levels[] = {"node", "shard", "off"};
        static const char *const modes[] = {"ids", "noids", "routing"};
        size_t l, m;

        for (l = 0; l < 3; l++)
            for (m = 0; m < 3; m++)
                volume(levels[l], modes[m], 25000);
        mapping_errors();
        request_refusals();
        red_index();
        per_id_ordering();
        gzip_and_ops();
        failures_only_and_stats();
        auto_created_index();
        secrets_stay_secret();
        doc_options();
        answer_fields();
    }
    check(off_thread == 0, "results were delivered only on the polling thread");
    return finish();
}
