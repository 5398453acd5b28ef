/*
 * The bulk engine through tests/faultproxy.py, with the real cluster behind
 * it: whatever a fake server would be needed for (413, 429/5xx, a node that
 * dies after the request was sent, a truncated answer, authentication, TLS).
 *
 *   tests/it_faults PROXY_URL MODE PROXY_LOG [ARG]
 *
 * One mode per proxy configuration (tests/it_faults.test starts each proxy):
 *
 *   split413          --max-body 60000
 *   retry5xx STATUS   --fail-first 6:STATUS          (429, 503, 502, 504)
 *   exhausted         --fail-every 1:503
 *   dropped           --drop-after-send 3
 *   dropped-reused    --skip-bulk 1 --drop-after-send 1 (the drop hits a request
 *                     sent on a kept-alive connection)
 *   garbage           --garbage 2
 *   auth VARIANT      --require-auth "Basic <u:pw-s3cr3t>" | "ApiKey key-s3cr3t" |
 *                     "Bearer tok-s3cr3t"         (VARIANT basic, apikey, bearer)
 *   headers           --require-header "X-Opaque-Id: it-faults-7" (and two more)
 *   tls CA_FILE       --tls server.pem server.key, PROXY_URL https://...
 *
 * Every handle sets topology.discovery=false: with discovery the library would
 * send bulks straight to the nodes' own addresses, around the proxy. The
 * cluster itself is queried directly (ESBULK_IT_CLUSTER, default
 * http://127.0.0.1:19200) for counts. PROXY_LOG is the proxy's --log file.
 */
#define _GNU_SOURCE 1
#include <esbulk.h>

#include "it_common.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *proxy_url, *proxy_log;

/* ------------------------------------------------------------------------- */


static void on_result(esbulk_t *eb, const esbulk_result_t *r, void *opaque)
{
    (void)eb;
    (void)opaque;
    seen_record(r);
}


/* Logs, kept to check that no secret shows. */
static char *log_text;
static size_t log_len;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static void on_log(int32_t level, const char *fac, const char *msg, void *opaque)
{
    size_t n = strlen(fac) + strlen(msg) + 8;
    char *grown;

    (void)level;
    (void)opaque;
    pthread_mutex_lock(&log_lock);
    grown = realloc(log_text, log_len + n + 1);
    if (grown != NULL) {
        log_text = grown;
        log_len += (size_t)snprintf(log_text + log_len, n + 1, "%s: %s\n", fac, msg);
    }
    pthread_mutex_unlock(&log_lock);
    if (getenv("IT_VERBOSE"))
        fprintf(stderr, "log %s: %s\n", fac, msg);
}

static int log_contains(const char *needle)
{
    int found;

    pthread_mutex_lock(&log_lock);
    found = log_text != NULL && strstr(log_text, needle) != NULL;
    pthread_mutex_unlock(&log_lock);
    return found;
}

/* A configuration for the proxy: every request through it. kv may override
 * any key, "urls" included. */
static esbulk_conf_t *conf_for(const char *const *kv)
{
    static const char *const base[] = {"topology.discovery", "false", "node.recheck.ms", "100",
                                       "log.level", "7", "connect.timeout.ms", "3000",
                                       "request.timeout.ms", "20000", NULL};
    esbulk_conf_t *conf = esbulk_conf_new();
    char errstr[512];
    const char *const *p;

    if (conf == NULL)
        die("out of memory");
    if (esbulk_conf_set(conf, "urls", proxy_url, errstr, sizeof(errstr)) != ESBULK_OK)
        die("conf urls: %s", errstr);
    for (p = base; *p != NULL; p += 2)
        if (esbulk_conf_set(conf, p[0], p[1], errstr, sizeof(errstr)) != ESBULK_OK)
            die("conf %s=%s: %s", p[0], p[1], errstr);
    for (p = kv; p != NULL && *p != NULL; p += 2)
        if (esbulk_conf_set(conf, p[0], p[1], errstr, sizeof(errstr)) != ESBULK_OK)
            die("conf %s: %s", p[0], errstr); /* the value may be a secret */
    esbulk_conf_set_result_cb(conf, on_result);
    esbulk_conf_set_log_cb(conf, on_log);
    return conf;
}

static esbulk_t *handle(const char *const *kv)
{
    esbulk_conf_t *conf = conf_for(kv);
    char errstr[512];
    esbulk_t *eb = esbulk_new(conf, errstr, sizeof(errstr));

    esbulk_conf_destroy(conf);
    if (eb == NULL)
        die("esbulk_new: %s", errstr);
    return eb;
}

/* A new empty index; explicit mappings spare the cluster mapping updates. */
static void fresh_index(const char *name, int shards)
{
    char path[256], body[512];
    long status;

    snprintf(path, sizeof(path), "/%s", name);
    json_decref(req("DELETE", path, NULL, &status));
    snprintf(body, sizeof(body),
             "{\"settings\":{\"number_of_shards\":%d,\"number_of_replicas\":0},"
             "\"mappings\":{\"properties\":{\"n\":{\"type\":\"long\"},"
             "\"kind\":{\"type\":\"keyword\"},\"pad\":{\"type\":\"keyword\",\"index\":false,"
             "\"doc_values\":false},\"big\":{\"type\":\"text\",\"index\":false}}}}",
             shards);
    must_ok("PUT", path, body);
}

/* Documents in index after a refresh; q (may be NULL) a query string. */
static long count_q(const char *index, const char *q)
{
    char path[512];
    json_t *j;
    long n;

    snprintf(path, sizeof(path), "/%s/_refresh", index);
    must_ok("POST", path, NULL);
    snprintf(path, sizeof(path), "/%s/_count%s%s", index, q ? "?q=" : "", q ? q : "");
    j = must("GET", path, NULL);
    n = (long)json_integer_value(json_object_get(j, "count"));
    json_decref(j);
    return n;
}

static long count_of(const char *index)
{
    return count_q(index, NULL);
}

static json_t *stats_of(esbulk_t *eb, char **text_out)
{
    char *text = esbulk_stats_json(eb);
    json_t *j = text ? json_loads(text, 0, NULL) : NULL;

    if (j == NULL)
        die("stats are not JSON");
    if (text_out != NULL)
        *text_out = text;
    else
        esbulk_free(text);
    return j;
}

static long stat(json_t *st, const char *key)
{
    return (long)json_integer_value(json_object_get(st, key));
}

static void add_or_die(esbulk_t *eb, esbulk_op_t op, const char *index, const char *id,
                       const char *body, size_t i)
{
    char errstr[512];
    esbulk_err_t err;
    int tries = 0;

    for (;;) {
        err = esbulk_add(eb, op, index, id, id ? strlen(id) : 0, NULL, 0, body,
                         body ? strlen(body) : 0, (void *)(uintptr_t)i, errstr, sizeof(errstr));
        if (err != ESBULK_ERR_QUEUE_FULL || ++tries > 600)
            break;
        esbulk_poll(eb, 100);
    }
    if (err != ESBULK_OK)
        die("esbulk_add: %s", errstr);
}


/* Lines of the proxy's log for _bulk requests: "METHOD PATH BYTES STATUS FAULT". */
typedef struct {
    long bytes;
    int status;
    char fault[32];
    char accept_encoding[128]; /* "-": the request had none */
} logline_t;

static logline_t *bulk_log(size_t *n)
{
    FILE *f = fopen(proxy_log, "r");
    logline_t *out = NULL;
    size_t cap = 0;
    char line[8192];

    *n = 0;
    if (f == NULL)
        die("cannot read the proxy log %s", proxy_log);
    while (fgets(line, sizeof(line), f) != NULL) {
        char method[16], path[4096], fault[32], ae[128] = "-";
        long bytes;
        int status;

        if (sscanf(line, "%15s %4095s %ld %d %31s %127s", method, path, &bytes, &status, fault,
                   ae) < 5 ||
            strstr(path, "_bulk") == NULL)
            continue;
        if (*n == cap) {
            logline_t *grown = realloc(out, sizeof(*out) * (cap = cap ? cap * 2 : 64));
            if (grown == NULL)
                die("out of memory");
            out = grown;
        }
        out[*n].bytes = bytes;
        out[*n].status = status;
        snprintf(out[*n].fault, sizeof(out[*n].fault), "%s", fault);
        snprintf(out[*n].accept_encoding, sizeof(out[*n].accept_encoding), "%s", ae);
        (*n)++;
    }
    fclose(f);
    return out;
}

static size_t log_count(const logline_t *l, size_t n, const char *fault)
{
    size_t i, k = 0;

    for (i = 0; i < n; i++)
        k += strcmp(l[i].fault, fault) == 0;
    return k;
}

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits up to timeout_ms until the proxy log has at least n lines containing
 * needle; returns whether it did. */
static int wait_log(const char *needle, size_t n, int64_t timeout_ms)
{
    int64_t end = now_ms() + timeout_ms;
    struct timespec pause = {0, 20 * 1000000};

    for (;;) {
        FILE *f = fopen(proxy_log, "r");
        char line[8192];
        size_t k = 0;

        if (f != NULL) {
            while (fgets(line, sizeof(line), f) != NULL)
                k += strstr(line, needle) != NULL;
            fclose(f);
        }
        if (k >= n)
            return 1;
        if (now_ms() >= end)
            return 0;
        nanosleep(&pause, NULL);
    }
}

/* ------------------------------------------------------------------------- */
/* split413: batches larger than the proxy's limit are split until they fit. */

static void mode_split413(void)
{
    const char *index = "it-faults-split413";
    const char *kv[] = {"flush.docs", "1000", "flush.interval.ms", "60000",
                        "retry.backoff.ms", "10", "retry.backoff.max.ms", "50", NULL};
    const char *kv_big[] = {"routing.level", "off", "max.doc.bytes", "1048576",
                            "flush.interval.ms", "60000", NULL};
    size_t n = 5000, i, nlog, ok_over = 0, n413 = 0, n200 = 0, attempts_one = 0;
    long max_ok = 0;
    char id[32], body[256], *big;
    logline_t *l;
    esbulk_t *eb;
    json_t *st;
    tally_t t;

    fresh_index(index, 3);
    seen_reset(n + 3);
    eb = handle(kv);
    for (i = 0; i < n; i++) {
        snprintf(id, sizeof(id), "s%zu", i);
        snprintf(body, sizeof(body), "{\"n\":%zu,\"pad\":\"%0180zu\"}", i, i);
        add_or_die(eb, ESBULK_OP_INDEX, index, id, body, i);
    }
    check(esbulk_flush(eb, 60000) == ESBULK_OK, "split413: flush returned in time");
    st = stats_of(eb, NULL);
    esbulk_destroy(eb);
    t = seen_tally(0, n);
    for (i = 0; i < n; i++)
        attempts_one += seen[i].attempts == 1;
    check(t.not_once == 0, "split413: each of %zu documents got exactly one result (%zu did not)",
          n, t.not_once);
    check(t.indexed == n, "split413: all %zu indexed (%zu failed, %zu possibly)", n, t.failed,
          t.possibly);
    check(count_of(index) == (long)t.indexed, "split413: index count equals the %zu indexed",
          t.indexed);
    check(stat(st, "split_413") > 0, "split413: stats split_413 = %ld", stat(st, "split_413"));
    check(attempts_one == n, "split413: a split is not a failed attempt (%zu of %zu documents "
          "have attempts == 1)", attempts_one, n);
    json_decref(st);
    l = bulk_log(&nlog);
    for (i = 0; i < nlog; i++) {
        if (l[i].status == 413) {
            n413++;
        } else if (l[i].status == 200) {
            n200++;
            if (l[i].bytes > max_ok)
                max_ok = l[i].bytes;
            ok_over += l[i].bytes > 60000;
        }
    }
    check(n413 > 0 && n200 > 0 && ok_over == 0,
          "split413: proxy saw %zu answers 413 and %zu accepted bodies, the largest %ld bytes "
          "(<= 60000)", n413, n200, max_ok);
    free(l);

    /* one document alone larger than the limit, between two small ones */
    big = malloc(70100);
    if (big == NULL)
        die("out of memory");
    memcpy(big, "{\"big\":\"", 8);
    memset(big + 8, 'x', 70000);
    memcpy(big + 70008, "\"}", 3);
    eb = handle(kv_big);
    add_or_die(eb, ESBULK_OP_INDEX, index, "small-1", "{\"n\":-1}", n);
    add_or_die(eb, ESBULK_OP_INDEX, index, "big", big, n + 1);
    add_or_die(eb, ESBULK_OP_INDEX, index, "small-2", "{\"n\":-2}", n + 2);
    esbulk_flush(eb, 30000);
    esbulk_destroy(eb);
    free(big);
    t = seen_tally(n, n + 3);
    check(t.not_once == 0, "split413: the large document and its neighbours got one result each");
    check(seen[n + 1].outcome == ESBULK_OUTCOME_FAILED && seen[n + 1].status == 413 &&
              seen[n + 1].err == ESBULK_ERR_HTTP && seen[n + 1].reason[0] != '\0',
          "split413: a 70 KB document alone: FAILED, status %d, err %d (%s), reason: %.120s",
          (int)seen[n + 1].status, (int)seen[n + 1].err, esbulk_err2str(seen[n + 1].err),
          seen[n + 1].reason);
    check(seen[n].outcome == ESBULK_OUTCOME_INDEXED && seen[n + 2].outcome == ESBULK_OUTCOME_INDEXED,
          "split413: the small documents in its batch were split off and indexed");
    check(count_of(index) == (long)n + 2, "split413: index count %ld (the large one is not "
          "there)", count_of(index));
}

/* ------------------------------------------------------------------------- */
/* retry5xx: the first 6 bulk requests get STATUS; everything is indexed. */

static void mode_retry5xx(int status)
{
    char index[64];
    const char *kv[] = {"routing.level", "off", "flush.docs", "100", "retry.backoff.ms", "5",
                        "retry.backoff.max.ms", "40", NULL};
    size_t n = 1000, i, nlog;
    char id[32], body[96];
    logline_t *l;
    esbulk_t *eb;
    json_t *st;
    tally_t t;

    snprintf(index, sizeof(index), "it-faults-retry5xx-%d", status);
    fresh_index(index, 3);
    seen_reset(n);
    eb = handle(kv);
    for (i = 0; i < n; i++) {
        snprintf(id, sizeof(id), "r%zu", i);
        snprintf(body, sizeof(body), "{\"n\":%zu}", i);
        add_or_die(eb, ESBULK_OP_INDEX, index, id, body, i);
    }
    check(esbulk_flush(eb, 60000) == ESBULK_OK, "retry5xx/%d: flush returned in time", status);
    st = stats_of(eb, NULL);
    esbulk_destroy(eb);
    t = seen_tally(0, n);
    check(t.not_once == 0, "retry5xx/%d: each of %zu documents got exactly one result", status, n);
    check(t.indexed == n, "retry5xx/%d: all %zu indexed (%zu failed, %zu possibly)", status, n,
          t.failed, t.possibly);
    check(count_of(index) == (long)t.indexed, "retry5xx/%d: index count equals the indexed "
          "(no duplicates, none lost)", status);
    check(t.retried >= 100, "retry5xx/%d: %zu documents needed more than one attempt", status,
          t.retried);
    check(stat(st, "retried") >= 100, "retry5xx/%d: stats retried = %ld", status,
          stat(st, "retried"));
    if (status == 429)
        check(stat(st, "http_429") == 6, "retry5xx/429: stats http_429 = %ld (the proxy sent 6)",
              stat(st, "http_429"));
    json_decref(st);
    l = bulk_log(&nlog);
    check(log_count(l, nlog, "fail-first") == 6, "retry5xx/%d: the proxy failed %zu requests "
          "(6)", status, log_count(l, nlog, "fail-first"));
    free(l);
}

/* ------------------------------------------------------------------------- */
/* exhausted: every bulk request gets 503. */

static void mode_exhausted(void)
{
    const char *index = "it-faults-exhausted";
    const char *kv_max[] = {"routing.level", "off", "flush.docs", "50", "retry.max", "2",
                            "retry.backoff.ms", "5", "retry.backoff.max.ms", "20", NULL};
    const char *kv_dt[] = {"routing.level", "off", "flush.docs", "50", "retry.max", "1000",
                           "retry.backoff.ms", "200", "delivery.timeout.ms", "300", NULL};
    size_t n = 200, i, ok = 0, with_503 = 0;
    char id[32], body[64];
    int64_t t0, took;
    esbulk_t *eb;
    tally_t t;

    fresh_index(index, 3);
    seen_reset(2 * n);
    eb = handle(kv_max);
    for (i = 0; i < n; i++) {
        snprintf(id, sizeof(id), "x%zu", i);
        snprintf(body, sizeof(body), "{\"n\":%zu}", i);
        add_or_die(eb, ESBULK_OP_INDEX, index, id, body, i);
    }
    check(esbulk_flush(eb, 30000) == ESBULK_OK, "exhausted: flush returned in time");
    esbulk_destroy(eb);
    t = seen_tally(0, n);
    for (i = 0; i < n; i++) {
        ok += seen[i].outcome == ESBULK_OUTCOME_FAILED &&
              seen[i].err == ESBULK_ERR_RETRIES_EXHAUSTED && seen[i].attempts == 3 &&
              seen[i].status == 503;
        with_503 += strstr(seen[i].reason, "503") != NULL;
    }
    check(t.not_once == 0, "exhausted: each of %zu documents got exactly one result", n);
    check(ok == n, "exhausted: %zu of %zu FAILED with RETRIES_EXHAUSTED, status 503, attempts 3 "
          "(e.g. outcome %d err %d status %d attempts %d)", ok, n, (int)seen[0].outcome,
          (int)seen[0].err, (int)seen[0].status, (int)seen[0].attempts);
    check(with_503 == n, "exhausted: every reason mentions 503 (%.160s)", seen[0].reason);

    /* delivery.timeout.ms: 300 ms with a backoff of 200 ms */
    eb = handle(kv_dt);
    t0 = now_ms();
    for (i = 0; i < n; i++) {
        snprintf(id, sizeof(id), "y%zu", i);
        snprintf(body, sizeof(body), "{\"n\":%zu}", i);
        add_or_die(eb, ESBULK_OP_INDEX, index, id, body, n + i);
    }
    check(esbulk_flush(eb, 30000) == ESBULK_OK, "exhausted: delivery timeout: flush returned");
    took = now_ms() - t0;
    esbulk_destroy(eb);
    t = seen_tally(n, 2 * n);
    for (ok = 0, i = n; i < 2 * n; i++)
        ok += seen[i].outcome == ESBULK_OUTCOME_FAILED &&
              seen[i].err == ESBULK_ERR_DELIVERY_TIMEOUT && seen[i].reason[0] != '\0';
    check(t.not_once == 0, "exhausted: delivery timeout: each document got exactly one result");
    check(ok == n, "exhausted: %zu of %zu FAILED with DELIVERY_TIMEOUT after %lld ms (%.160s)",
          ok, n, (long long)took, seen[n].reason);
    check(took < 5000, "exhausted: delivery.timeout.ms 300 ends it quickly (%lld ms)",
          (long long)took);
    check(count_of(index) == 0, "exhausted: nothing indexed");
}

/* ------------------------------------------------------------------------- */
/* dropped: the first 3 bulk requests are applied, then the connection closes
 * without an answer. Never a silent duplicate, never a silent loss. */

enum { K_ID, K_NOID, K_CREATE, K_GEN };
static const char *const kinds[] = {"id", "noid", "create", "gen"};

static void mode_dropped(void)
{
    const char *index = "it-faults-dropped";
    const char *kv_a[] = {"routing.level", "off", "id.generate", "none", "flush.docs", "300",
                          "flush.interval.ms", "60000", "retry.backoff.ms", "1",
                          "retry.backoff.max.ms", "20", NULL};
    const char *kv_b[] = {"routing.level", "off", "flush.docs", "100", "flush.interval.ms",
                          "60000", "retry.backoff.ms", "1", "retry.backoff.max.ms", "20", NULL};
    size_t per = 100, i, k, nlog;
    size_t ok[4] = {0, 0, 0, 0}, retried[4] = {0, 0, 0, 0};
    char id[32], body[96], q[64];
    esbulk_t *a, *b;
    logline_t *l;
    long total;
    tally_t t;

    fresh_index(index, 3);
    seen_reset(4 * per);
    a = handle(kv_a);
    b = handle(kv_b);
    /* both have their cluster view before the first documents, so that the
     * first request of each is one of the first two the proxy drops */
    check(wait_log("GET / ", 2, 20000), "dropped: both handles asked the cluster who it is");
    wait_log("GET /_nodes/http", 2, 2000); /* the rest of the cluster fetch, if made */
    /* seen[k * per + i]: kind k. A gets ids, no ids, creates (one batch of 300);
     * B gets no ids, which it fills in itself (id.generate=time) */
    for (i = 0; i < per; i++) {
        for (k = K_ID; k <= K_CREATE; k++) {
            snprintf(id, sizeof(id), "%s-%zu", kinds[k], i);
            snprintf(body, sizeof(body), "{\"kind\":\"%s\",\"n\":%zu}", kinds[k], i);
            add_or_die(a, k == K_CREATE ? ESBULK_OP_CREATE : ESBULK_OP_INDEX, index,
                       k == K_NOID ? NULL : id, body, k * per + i);
        }
        snprintf(body, sizeof(body), "{\"kind\":\"gen\",\"n\":%zu}", i);
        add_or_die(b, ESBULK_OP_INDEX, index, NULL, body, K_GEN * per + i);
    }
    check(esbulk_flush(a, 60000) == ESBULK_OK && esbulk_flush(b, 60000) == ESBULK_OK,
          "dropped: flush returned in time");
    esbulk_destroy(a);
    esbulk_destroy(b);
    t = seen_tally(0, 4 * per);
    check(t.not_once == 0, "dropped: each of %zu documents got exactly one result", 4 * per);
    for (k = 0; k < 4; k++) {
        for (i = k * per; i < (k + 1) * per; i++) {
            seen_t *s = &seen[i];
            retried[k] += s->attempts > 1;
            switch (k) {
            case K_ID:
            case K_GEN:
                ok[k] += s->outcome == ESBULK_OUTCOME_INDEXED;
                break;
            case K_NOID:
                ok[k] += s->outcome == ESBULK_OUTCOME_POSSIBLY && s->err == ESBULK_ERR_TRANSPORT &&
                         strstr(s->reason, "_id") != NULL && s->attempts == 1;
                break;
            case K_CREATE:
                ok[k] += s->outcome == ESBULK_OUTCOME_POSSIBLY && s->err == ESBULK_ERR_ITEM &&
                         s->status == 409 && s->reason[0] != '\0';
                break;
            }
        }
    }
    check(ok[K_ID] == per && retried[K_ID] == per,
          "dropped: %zu of %zu documents with ids INDEXED, %zu after a retry", ok[K_ID], per,
          retried[K_ID]);
    check(ok[K_GEN] == per && retried[K_GEN] == per && strlen(seen[K_GEN * per].id) == 20,
          "dropped: %zu of %zu documents with generated ids INDEXED, %zu after a retry (id %s)",
          ok[K_GEN], per, retried[K_GEN], seen[K_GEN * per].id);
    check(ok[K_NOID] == per,
          "dropped: %zu of %zu documents without ids (id.generate=none) POSSIBLY, err TRANSPORT, "
          "not retried, with a reason (%.200s)", ok[K_NOID], per, seen[K_NOID * per].reason);
    check(ok[K_CREATE] == per,
          "dropped: %zu of %zu creates whose retry met 409 are POSSIBLY, not FAILED "
          "(outcome %d, status %d: %.160s)", ok[K_CREATE], per, (int)seen[K_CREATE * per].outcome,
          (int)seen[K_CREATE * per].status, seen[K_CREATE * per].reason);
    for (k = 0; k < 4; k++) {
        snprintf(q, sizeof(q), "kind:%s", kinds[k]);
        check(count_q(index, q) == (long)per, "dropped: the index holds %ld documents of kind %s "
              "(%zu: each exactly once)", count_q(index, q), kinds[k], per);
    }
    total = count_of(index);
    check(total == (long)(t.indexed + t.possibly),
          "dropped: index count %ld equals INDEXED %zu + POSSIBLY %zu (all were applied)", total,
          t.indexed, t.possibly);
    l = bulk_log(&nlog);
    check(log_count(l, nlog, "drop") == 3, "dropped: the proxy dropped %zu answers (3)",
          log_count(l, nlog, "drop"));
    free(l);
}

/* dropped-reused: the drop hits a request sent on a kept-alive connection. */
static void mode_dropped_reused(void)
{
    const char *index = "it-faults-dropped-reused";
    const char *kv[] = {"routing.level", "off", "id.generate", "none", "flush.docs", "1000",
                        "flush.interval.ms", "60000", "retry.backoff.ms", "1",
                        "retry.backoff.max.ms", "20", "max.inflight.per.node", "1", NULL};
    size_t warm = 10, per = 100, i, ok_id = 0, ok_noid = 0, nlog;
    char id[32], body[96];
    esbulk_t *eb;
    logline_t *l;
    long noid_count;
    tally_t t;

    fresh_index(index, 3);
    seen_reset(warm + 2 * per);
    eb = handle(kv);
    /* a first request passes and leaves its connection open for the next */
    for (i = 0; i < warm; i++) {
        snprintf(id, sizeof(id), "warm-%zu", i);
        add_or_die(eb, ESBULK_OP_INDEX, index, id, "{\"kind\":\"warm\"}", i);
    }
    check(esbulk_flush(eb, 30000) == ESBULK_OK && seen_tally(0, warm).indexed == warm,
          "dropped-reused: the first request indexed its %zu documents", warm);
    for (i = 0; i < per; i++) {
        snprintf(id, sizeof(id), "id-%zu", i);
        snprintf(body, sizeof(body), "{\"kind\":\"id\",\"n\":%zu}", i);
        add_or_die(eb, ESBULK_OP_INDEX, index, id, body, warm + i);
        snprintf(body, sizeof(body), "{\"kind\":\"noid\",\"n\":%zu}", i);
        add_or_die(eb, ESBULK_OP_INDEX, index, NULL, body, warm + per + i);
    }
    check(esbulk_flush(eb, 60000) == ESBULK_OK, "dropped-reused: flush returned in time");
    esbulk_destroy(eb);
    t = seen_tally(0, warm + 2 * per);
    for (i = 0; i < per; i++) {
        ok_id += seen[warm + i].outcome == ESBULK_OUTCOME_INDEXED;
        ok_noid += seen[warm + per + i].outcome == ESBULK_OUTCOME_POSSIBLY;
    }
    noid_count = count_q(index, "kind:noid");
    check(t.not_once == 0, "dropped-reused: each document got exactly one result");
    check(ok_id == per, "dropped-reused: %zu of %zu documents with ids INDEXED", ok_id, per);
    check(noid_count == (long)per,
          "dropped-reused: the index holds %ld documents without ids for %zu added (more: a "
          "silent duplicate, the request was sent twice)", noid_count, per);
    check(ok_noid == per, "dropped-reused: %zu of %zu documents without ids are POSSIBLY "
          "(outcome of the first: %d, %.160s)", ok_noid, per, (int)seen[warm + per].outcome,
          seen[warm + per].reason);
    check(count_q(index, "kind:id") == (long)per, "dropped-reused: documents with ids: each once");
    l = bulk_log(&nlog);
    check(log_count(l, nlog, "drop") == 1, "dropped-reused: the proxy dropped %zu answers (1)",
          log_count(l, nlog, "drop"));
    free(l);
}

/* ------------------------------------------------------------------------- */
/* garbage: the first 2 answers are cut in half. */

static void mode_garbage(void)
{
    const char *index = "it-faults-garbage";
    const char *kv[] = {"routing.level", "off", "flush.docs", "100", "retry.backoff.ms", "5",
                        "retry.backoff.max.ms", "40", NULL};
    size_t n = 500, i, nlog;
    char id[32], body[96];
    esbulk_t *eb;
    logline_t *l;
    json_t *st;
    tally_t t;

    fresh_index(index, 3);
    seen_reset(n);
    eb = handle(kv);
    for (i = 0; i < n; i++) {
        snprintf(id, sizeof(id), "g%zu", i);
        snprintf(body, sizeof(body), "{\"n\":%zu}", i);
        add_or_die(eb, ESBULK_OP_INDEX, index, id, body, i);
    }
    check(esbulk_flush(eb, 60000) == ESBULK_OK, "garbage: flush returned in time");
    st = stats_of(eb, NULL);
    esbulk_destroy(eb);
    t = seen_tally(0, n);
    check(t.not_once == 0, "garbage: each of %zu documents got exactly one result", n);
    check(t.indexed == n, "garbage: all %zu indexed (%zu failed, %zu possibly)", n, t.failed,
          t.possibly);
    check(t.retried >= 100 && stat(st, "retried") >= 100,
          "garbage: %zu documents retried after a truncated answer (stats retried %ld)",
          t.retried, stat(st, "retried"));
    check(count_of(index) == (long)n, "garbage: index count %ld equals %zu: indexed once",
          count_of(index), n);
    json_decref(st);
    l = bulk_log(&nlog);
    check(log_count(l, nlog, "garbage") == 2, "garbage: the proxy cut %zu answers (2)",
          log_count(l, nlog, "garbage"));
    free(l);
}

/* ------------------------------------------------------------------------- */
/* encoding: bulk requests ask for compressed answers only with
 * compression=gzip (the server compresses whatever the client accepts). */

static void mode_encoding(void)
{
    const char *index = "it-faults-encoding";
    const char *kv_none[] = {"routing.level", "off", "flush.docs", "100", NULL};
    const char *kv_gzip[] = {"routing.level", "off", "flush.docs", "100", "compression", "gzip",
                             NULL};
    size_t n = 300, i, nlog, plain = 0, gz = 0, round;
    char id[32], body[64];
    logline_t *l;
    esbulk_t *eb;
    tally_t t;

    fresh_index(index, 3);
    seen_reset(2 * n);
    for (round = 0; round < 2; round++) {
        eb = handle(round == 0 ? kv_none : kv_gzip);
        for (i = 0; i < n; i++) {
            snprintf(id, sizeof(id), "e%zu-%zu", round, i);
            snprintf(body, sizeof(body), "{\"n\":%zu}", i);
            add_or_die(eb, ESBULK_OP_INDEX, index, id, body, round * n + i);
        }
        check(esbulk_flush(eb, 30000) == ESBULK_OK, "encoding: flush %zu returned in time",
              round + 1);
        esbulk_destroy(eb);
        l = bulk_log(&nlog);
        for (i = 0; i < nlog; i++) {
            if (round == 0)
                plain += strcmp(l[i].accept_encoding, "-") == 0;
            else
                gz += strstr(l[i].accept_encoding, "gzip") != NULL;
        }
        check(nlog == (round + 1) * (n / 100), "encoding: %zu bulk requests seen, %zu expected",
              nlog, (round + 1) * (n / 100));
        free(l);
    }
    t = seen_tally(0, 2 * n);
    check(t.not_once == 0 && t.indexed == 2 * n, "encoding: all %zu documents indexed once",
          2 * n);
    check(plain == n / 100, "encoding: compression=none: %zu of %zu bulk requests without "
          "Accept-Encoding", plain, n / 100);
    check(gz == n / 100, "encoding: compression=gzip: %zu of %zu bulk requests accept gzip", gz,
          n / 100);
}

/* ------------------------------------------------------------------------- */
/* auth: the proxy wants one Authorization header. */

#define SECRET "s3cr3t"

/* Adds n documents on a handle, flushes; returns how many indexed. seen[from..]. */
static size_t run_batch(const char *what, const char *const *kv, const char *index,
                        size_t from, size_t n, char **stats_text)
{
    char id[48], body[64];
    esbulk_t *eb;
    size_t i;
    tally_t t;
    json_t *st;

    eb = handle(kv);
    for (i = 0; i < n; i++) {
        snprintf(id, sizeof(id), "%s-%zu", what, i);
        snprintf(body, sizeof(body), "{\"n\":%zu}", i);
        add_or_die(eb, ESBULK_OP_INDEX, index, id, body, from + i);
    }
    check(esbulk_flush(eb, 30000) == ESBULK_OK, "%s: flush returned in time", what);
    st = stats_of(eb, stats_text);
    json_decref(st);
    esbulk_destroy(eb);
    t = seen_tally(from, from + n);
    check(t.not_once == 0, "%s: each of %zu documents got exactly one result", what, n);
    return t.indexed;
}

/* Every document of seen[from..from+n) FAILED with ERR_AUTH and 401; no
 * secret anywhere. */
static void expect_auth_failure(const char *what, size_t from, size_t n, const char *stats_text,
                                const char *secret)
{
    size_t i, ok = 0, leaks = 0;

    for (i = from; i < from + n; i++) {
        ok += seen[i].outcome == ESBULK_OUTCOME_FAILED && seen[i].err == ESBULK_ERR_AUTH &&
              seen[i].status == 401;
        leaks += strstr(seen[i].reason, secret) != NULL ||
                 strstr(seen[i].error_type, secret) != NULL || strstr(seen[i].id, secret) != NULL;
    }
    check(ok == n, "%s: %zu of %zu FAILED with ERR_AUTH, status 401 (err %d status %d: %s: "
          "%.120s)", what, ok, n, (int)seen[from].err, (int)seen[from].status,
          seen[from].error_type, seen[from].reason);
    check(leaks == 0 && strstr(stats_text, secret) == NULL && !log_contains(secret),
          "%s: the secret appears in no result (%zu), statistics or log", what, leaks);
}

static void mode_auth(const char *variant)
{
    char index[64], urls[512], errstr[512], label[64];
    const char *good_secret, *good_key, *wrong_secret = "wrong-" SECRET "-value";
    const char *kv_none[] = {"routing.level", "off", NULL};
    const char *kv_good[] = {"routing.level", "off", NULL, NULL, NULL, NULL, NULL};
    const char *kv_wrong[] = {"routing.level", "off", NULL, NULL, NULL, NULL, NULL};
    const char *kv_url[] = {"routing.level", "off", "urls", urls, NULL};
    size_t n = 100, from = 0, indexed;
    char *text = NULL;
    long expected = 0;

    snprintf(index, sizeof(index), "it-faults-auth-%s", variant);
    fresh_index(index, 3);
    seen_reset(6 * n);
    if (strcmp(variant, "basic") == 0) {
        good_key = "auth.password";
        good_secret = "pw-" SECRET;
        kv_good[2] = kv_wrong[2] = "auth.username";
        kv_good[3] = kv_wrong[3] = "u";
        kv_good[4] = kv_wrong[4] = good_key;
        kv_good[5] = good_secret;
        kv_wrong[5] = wrong_secret;
    } else {
        good_key = strcmp(variant, "apikey") == 0 ? "auth.api_key" : "auth.bearer";
        good_secret = strcmp(variant, "apikey") == 0 ? "key-" SECRET : "tok-" SECRET;
        kv_good[2] = kv_wrong[2] = good_key;
        kv_good[3] = good_secret;
        kv_wrong[3] = wrong_secret;
    }

    snprintf(label, sizeof(label), "auth/%s/good", variant);
    indexed = run_batch(label, kv_good, index, from, n, &text);
    check(indexed == n, "auth/%s: the right %s indexes all %zu (%zu; %.120s)", variant, good_key,
          n, indexed, seen[from].reason);
    expected += (long)indexed;
    esbulk_free(text);
    from += n;

    log_len = 0;
    snprintf(label, sizeof(label), "auth/%s/wrong", variant);
    run_batch(label, kv_wrong, index, from, n, &text);
    expect_auth_failure(label, from, n, text, wrong_secret);
    esbulk_free(text);
    from += n;

    log_len = 0;
    snprintf(label, sizeof(label), "auth/%s/none", variant);
    run_batch(label, kv_none, index, from, n, &text);
    expect_auth_failure(label, from, n, text, good_secret);
    esbulk_free(text);
    from += n;

    /* the topology's own requests fail the same way, without the secret */
    {
        esbulk_conf_t *conf = conf_for(kv_wrong);
        esbulk_topology_t *topo = esbulk_topology_new(conf, errstr, sizeof(errstr));
        char *desc = topo ? esbulk_topology_describe(topo, index, errstr, sizeof(errstr)) : NULL;

        check(topo != NULL && desc == NULL && strstr(errstr, "401") != NULL &&
                  strstr(errstr, wrong_secret) == NULL,
              "auth/%s: the topology fetch with the wrong secret fails: %s", variant, errstr);
        esbulk_free(desc);
        esbulk_topology_destroy(topo);
        esbulk_conf_destroy(conf);
    }

    if (strcmp(variant, "basic") == 0) {
        const char *host = strstr(proxy_url, "://");

        host = host ? host + 3 : proxy_url;
        snprintf(urls, sizeof(urls), "http://u:%s@%s", good_secret, host);
        log_len = 0;
        indexed = run_batch("auth/basic/url", kv_url, index, from, n, &text);
        check(indexed == n, "auth/basic: credentials in the URL index all %zu (%zu; %.120s)", n,
              indexed, seen[from].reason);
        check(strstr(text, good_secret) == NULL && !log_contains(good_secret),
              "auth/basic: the URL's password appears in no statistics or log");
        expected += (long)indexed;
        esbulk_free(text);
        from += n;

        snprintf(urls, sizeof(urls), "http://u:%s@%s", wrong_secret, host);
        log_len = 0;
        run_batch("auth/basic/url-wrong", kv_url, index, from, n, &text);
        expect_auth_failure("auth/basic/url-wrong", from, n, text, wrong_secret);
        esbulk_free(text);
        from += n;
    }
    check(count_of(index) == expected, "auth/%s: index count %ld equals the %ld indexed", variant,
          count_of(index), expected);
}

/* ------------------------------------------------------------------------- */
/* headers: the proxy wants three headers on every request (http.headers). */

/* A topology made with kv_ok reads index through the proxy; one made with
 * kv_refused is refused (403) by it. */
static void topology_reads(const char *mode, const char *const *kv_ok,
                           const char *const *kv_refused, const char *index)
{
    char errstr[512];
    int k;

    for (k = 0; k < 2; k++) {
        esbulk_conf_t *conf = conf_for(k == 0 ? kv_ok : kv_refused);
        esbulk_topology_t *topo = esbulk_topology_new(conf, errstr, sizeof(errstr));
        char *desc = topo ? esbulk_topology_describe(topo, index, errstr, sizeof(errstr)) : NULL;

        if (k == 0)
            check(desc != NULL, "%s: the topology reads the index: %s", mode,
                  desc ? "ok" : errstr);
        else
            check(desc == NULL && strstr(errstr, "403") != NULL,
                  "%s: the topology's requests are refused without the credentials: %s", mode,
                  desc ? "it read the index" : errstr);
        esbulk_free(desc);
        esbulk_topology_destroy(topo);
        esbulk_conf_destroy(conf);
    }
}

static void mode_headers(void)
{
    /* CRLF and LF between the lines, a blank line, blanks around a value,
     * an empty value */
    const char *all = "X-Opaque-Id: it-faults-7\r\nsecuritytenant:  tenant-" SECRET
                      " \n\nX-Empty:\n";
    const char *kv_all[] = {"routing.level", "off", "http.headers", all, NULL};
    const char *kv_some[] = {"routing.level", "off", "http.headers", "X-Opaque-Id: it-faults-7",
                             NULL};
    const char *kv_none[] = {"routing.level", "off", NULL};
    const char *const *kvs[] = {kv_some, kv_none};
    const char *index = "it-faults-headers";
    size_t n = 100, from = n, indexed, i, k;
    char *text = NULL;

    fresh_index(index, 3);
    seen_reset(3 * n);
    log_len = 0;
    indexed = run_batch("headers/all", kv_all, index, 0, n, &text);
    check(indexed == n, "headers: with all three headers, all %zu indexed (%zu; %.120s)", n,
          indexed, seen[0].reason);
    check(strstr(text, "tenant-" SECRET) == NULL && !log_contains("tenant-" SECRET),
          "headers: a header's value appears in no statistics or log");
    esbulk_free(text);
    /* the proxy refuses a request without one of them: every document fails */
    for (k = 0; k < 2; k++, from += n) {
        size_t ok = 0;

        run_batch(k == 0 ? "headers/some" : "headers/none", kvs[k], index, from, n, &text);
        esbulk_free(text);
        for (i = from; i < from + n; i++)
            ok += seen[i].outcome == ESBULK_OUTCOME_FAILED && seen[i].err == ESBULK_ERR_AUTH &&
                  seen[i].status == 403;
        check(ok == n, "headers: with %s, %zu of %zu FAILED with ERR_AUTH, status 403 (%.120s)",
              k == 0 ? "one header of three" : "none", ok, n, seen[from].reason);
    }
    /* the topology's own requests carry them too */
    topology_reads("headers", kv_all, kv_some, index);
    check(count_of(index) == (long)n, "headers: index count %ld equals the %zu indexed",
          count_of(index), n);
}

/* ------------------------------------------------------------------------- */
/* sigv4: the proxy checks every request's AWS SigV4 signature with botocore
 * (tests/faultproxy.py --require-sigv4), as Amazon OpenSearch Service
 * would. arg "token": temporary credentials (a session token) and gzip
 * bodies, signed compressed. */

/* Lines of the proxy's log that contain needle (and also, when not NULL,
 * also). */
static size_t proxy_lines2(const char *needle, const char *also)
{
    FILE *f = fopen(proxy_log, "r");
    char line[16384];
    size_t k = 0;

    if (f == NULL)
        die("cannot read the proxy log %s", proxy_log);
    while (fgets(line, sizeof(line), f) != NULL)
        k += strstr(line, needle) != NULL && (also == NULL || strstr(line, also) != NULL);
    fclose(f);
    return k;
}

static size_t proxy_lines(const char *needle)
{
    return proxy_lines2(needle, NULL);
}

/* The auth.* pairs of kv as a configuration of their own. */
static esbulk_conf_t *auth_conf(const char *const *kv)
{
    esbulk_conf_t *conf = esbulk_conf_new();
    char errstr[512];
    size_t i;

    if (conf == NULL)
        die("out of memory");
    for (i = 0; kv[i] != NULL; i += 2)
        if (strncmp(kv[i], "auth.", 5) == 0 &&
            esbulk_conf_set(conf, kv[i], kv[i + 1], errstr, sizeof(errstr)) != ESBULK_OK)
            die("%s: %s", kv[i], errstr);
    return conf;
}

/* One handle through a rotation (esbulk_auth_update): made with a wrong
 * secret, updated to good credentials, then to a wrong secret again, a
 * batch after each. The handle's topology, which could not read the
 * cluster with the wrong secret, reads it with the updated credentials. */
static void sigv4_rotation(const char *const *kv_good, const char *const *kv_wrong,
                           const char *index)
{
    char id[48], body[64], errstr[512];
    const char *const *steps[] = {kv_wrong, kv_good, kv_wrong};
    size_t n = 100, base = 600, i, k;
    esbulk_t *eb = handle(kv_wrong);
    long before = count_of(index);

    seen_reset(base + 3 * n);
    for (k = 0; k < 3; k++) {
        esbulk_conf_t *auth = auth_conf(steps[k]);
        size_t views = proxy_lines("GET / 0 200 forwarded");
        tally_t t;

        if (k > 0)
            check(esbulk_auth_update(eb, auth, errstr, sizeof(errstr)) == ESBULK_OK,
                  "sigv4/rotation %zu: esbulk_auth_update: %s", k, k ? "ok" : errstr);
        esbulk_conf_destroy(auth);
        /* the handle looks at the cluster again (GET /) within seconds of a
         * failed look: with the good credentials, that one is answered */
        if (k == 1)
            check(wait_log("GET / 0 200 forwarded", views + 1, 15000),
                  "sigv4/rotation: the handle's topology reads the cluster with the updated "
                  "credentials");
        for (i = 0; i < n; i++) {
            snprintf(id, sizeof(id), "rot%zu-%zu", k, i);
            snprintf(body, sizeof(body), "{\"n\":%zu}", i);
            add_or_die(eb, ESBULK_OP_INDEX, index, id, body, base + k * n + i);
        }
        check(esbulk_flush(eb, 30000) == ESBULK_OK, "sigv4/rotation %zu: flush in time", k);
        t = seen_tally(base + k * n, base + (k + 1) * n);
        if (k != 1)
            check(t.failed == n && seen[base + k * n].status == 403 &&
                      seen[base + k * n].err == ESBULK_ERR_AUTH,
                  "sigv4/rotation %zu: with a wrong secret, %zu of %zu FAILED with ERR_AUTH "
                  "403 (%.120s)", k, t.failed, n, seen[base + k * n].reason);
        else
            check(t.indexed == n, "sigv4/rotation %zu: %zu of %zu indexed (%.120s)", k,
                  t.indexed, n, seen[base + k * n].reason);
    }
    esbulk_destroy(eb);
    check(count_of(index) == before + (long)n, "sigv4/rotation: the count is the indexed (%ld)",
          count_of(index) - before);
}

#define AWS_KEY_ID "AKIDITFAULTS"
#define AWS_SECRET "wJalrXUtnFEMI-" SECRET
#define AWS_TOKEN "FQoGZXIvYXdzE//tok+" SECRET "="

static void mode_sigv4(const char *arg)
{
    int token = strcmp(arg, "token") == 0;
    /* node routing, through the proxy alone: the metadata reads (the
     * cluster state, with ',' and '*' in their paths and queries) are
     * signed and checked too */
    const char *kv_good[] = {"topology.discovery", "false", "auth.aws.region", "eu-west-1",
                             "auth.aws.access_key_id", AWS_KEY_ID,
                             "auth.aws.secret_access_key", AWS_SECRET,
                             "compression", token ? "gzip" : "none",
                             token ? "auth.aws.session_token" : NULL, AWS_TOKEN, NULL};
    const char *kv_wrong[] = {"topology.discovery", "false", "auth.aws.region", "eu-west-1",
                              "auth.aws.access_key_id", AWS_KEY_ID,
                              "auth.aws.secret_access_key", "wJalrXUtnFEMI-wrong",
                              token ? "auth.aws.session_token" : NULL, AWS_TOKEN, NULL};
    const char *kv_notoken[] = {"topology.discovery", "false", "auth.aws.region", "eu-west-1",
                                "auth.aws.access_key_id", AWS_KEY_ID,
                                "auth.aws.secret_access_key", AWS_SECRET, NULL};
    const char *index = token ? "it-faults-sigv4-token" : "it-faults-sigv4";
    size_t n = 200, from = n, indexed, i, k, before;
    char *text = NULL;

    fresh_index(index, 3);
    seen_reset(3 * n);
    log_len = 0;
    before = proxy_lines("/_bulk");
    indexed = run_batch(token ? "sigv4/token" : "sigv4/good", kv_good, index, 0, n, &text);
    check(indexed == n, "sigv4: signed, all %zu indexed (%zu; %.200s)", n, indexed,
          seen[0].reason);
    check(proxy_lines("FAULT sigv4") == 0, "sigv4: the proxy (botocore) took every signature "
          "(%zu refused)", proxy_lines("FAULT sigv4"));
    check(proxy_lines("/_bulk") > before && proxy_lines("GET /_cluster/state") > 0,
          "sigv4: bulk requests and the cluster-state reads went through the proxy");
    check(strstr(text, SECRET) == NULL && !log_contains(SECRET),
          "sigv4: the secret and the token appear in no statistics or log");
    esbulk_free(text);

    /* a wrong secret (or, with temporary credentials, no token): every
     * document FAILED with ERR_AUTH, the service's 403 and its words */
    for (k = 0; k < (token ? 2u : 1u); k++, from += n) {
        size_t ok = 0;

        run_batch(k == 0 ? "sigv4/wrong" : "sigv4/notoken", k == 0 ? kv_wrong : kv_notoken, index,
                  from, n, &text);
        esbulk_free(text);
        for (i = from; i < from + n; i++)
            ok += seen[i].outcome == ESBULK_OUTCOME_FAILED && seen[i].err == ESBULK_ERR_AUTH &&
                  seen[i].status == 403;
        check(ok == n, "sigv4: with %s, %zu of %zu FAILED with ERR_AUTH, status 403 (%.200s)",
              k == 0 ? "a wrong secret" : "no session token", ok, n, seen[from].reason);
        check(k > 0 || strstr(seen[from].reason, "signature") != NULL,
              "sigv4: the reason is the service's: %.200s", seen[from].reason);
    }
    /* the topology's own requests are signed */
    topology_reads("sigv4", kv_good, kv_wrong, index);
    check(count_of(index) == (long)n, "sigv4: index count %ld equals the %zu indexed",
          count_of(index), n);
    if (token)
        sigv4_rotation(kv_good, kv_wrong, index);
}

/* ------------------------------------------------------------------------- */
/* tls: the proxy serves HTTPS with a certificate of a throwaway CA. */

static void mode_tls(const char *ca_file)
{
    const char *index = "it-faults-tls";
    const char *kv_noca[] = {"routing.level", "off", "id.generate", "none", "retry.max", "1",
                             "retry.backoff.ms", "5", "retry.backoff.max.ms", "20", NULL};
    const char *kv_ca[] = {"routing.level", "off", "tls.ca.file", ca_file, NULL};
    const char *kv_insecure[] = {"routing.level", "off", "tls.insecure", "true", NULL};
    size_t n = 100, i, failed_ids = 0, failed_noids = 0, cert = 0;
    char id[32], body[64], errstr[512];
    esbulk_t *eb;
    tally_t t;

    fresh_index(index, 3);
    seen_reset(4 * n);

    /* without the CA: nothing can be sent; with and without ids */
    eb = handle(kv_noca);
    for (i = 0; i < n; i++) {
        snprintf(id, sizeof(id), "t%zu", i);
        snprintf(body, sizeof(body), "{\"n\":%zu}", i);
        add_or_die(eb, ESBULK_OP_INDEX, index, i % 2 ? id : NULL, body, i);
    }
    check(esbulk_flush(eb, 30000) == ESBULK_OK, "tls/no-ca: flush returned in time");
    esbulk_destroy(eb);
    t = seen_tally(0, n);
    for (i = 0; i < n; i++) {
        if (seen[i].outcome == ESBULK_OUTCOME_FAILED)
            *(i % 2 ? &failed_ids : &failed_noids) += 1;
        cert += strstr(seen[i].reason, "certificate") != NULL ||
                strstr(seen[i].reason, "SSL") != NULL;
    }
    check(t.not_once == 0, "tls/no-ca: each of %zu documents got exactly one result", n);
    check(failed_ids == n / 2, "tls/no-ca: %zu of %zu documents with ids FAILED (err %d: %.200s)",
          failed_ids, n / 2, (int)seen[1].err, seen[1].reason);
    check(failed_noids == n / 2, "tls/no-ca: %zu of %zu documents without ids FAILED, not "
          "POSSIBLY: nothing was sent (outcome %d, err %d: %.200s)", failed_noids, n / 2,
          (int)seen[0].outcome, (int)seen[0].err, seen[0].reason);
    check(cert == n, "tls/no-ca: %zu of %zu reasons are about the certificate", cert, n);
    {
        esbulk_conf_t *conf = conf_for(kv_noca);
        esbulk_topology_t *topo = esbulk_topology_new(conf, errstr, sizeof(errstr));
        char *desc = topo ? esbulk_topology_describe(topo, NULL, errstr, sizeof(errstr)) : NULL;

        check(topo != NULL && desc == NULL &&
                  (strstr(errstr, "certificate") != NULL || strstr(errstr, "SSL") != NULL),
              "tls/no-ca: the topology fetch fails too: %s", errstr);
        esbulk_free(desc);
        esbulk_topology_destroy(topo);
        esbulk_conf_destroy(conf);
    }
    check(count_of(index) == 0, "tls/no-ca: nothing indexed");

    check(run_batch("tls/ca-file", kv_ca, index, n, n, NULL) == n,
          "tls/ca-file: with tls.ca.file all %zu indexed (%.160s)", n, seen[n].reason);
    check(run_batch("tls/insecure", kv_insecure, index, 2 * n, n, NULL) == n,
          "tls/insecure: with tls.insecure=true and no CA all %zu indexed (%.160s)", n,
          seen[2 * n].reason);
    check(count_of(index) == (long)(2 * n), "tls: index count %ld equals the %zu indexed",
          count_of(index), 2 * n);
}

/* ------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    const char *mode, *arg;

    if (argc < 4) {
        fprintf(stderr, "usage: it_faults PROXY_URL MODE PROXY_LOG [ARG]\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    proxy_url = argv[1];
    mode = argv[2];
    proxy_log = argv[3];
    arg = argc > 4 ? argv[4] : NULL;
    base_url = getenv("ESBULK_IT_CLUSTER") ? getenv("ESBULK_IT_CLUSTER") : "http://127.0.0.1:19200";
    must_ok("GET", "/", NULL);
    if (strcmp(mode, "split413") == 0)
        mode_split413();
    else if (strcmp(mode, "retry5xx") == 0)
        mode_retry5xx(arg ? atoi(arg) : 429);
    else if (strcmp(mode, "exhausted") == 0)
        mode_exhausted();
    else if (strcmp(mode, "dropped") == 0)
        mode_dropped();
    else if (strcmp(mode, "dropped-reused") == 0)
        mode_dropped_reused();
    else if (strcmp(mode, "garbage") == 0)
        mode_garbage();
    else if (strcmp(mode, "encoding") == 0)
        mode_encoding();
    else if (strcmp(mode, "auth") == 0 && arg != NULL)
        mode_auth(arg);
    else if (strcmp(mode, "headers") == 0)
        mode_headers();
    else if (strcmp(mode, "sigv4") == 0 && arg != NULL)
        mode_sigv4(arg);
    else if (strcmp(mode, "tls") == 0 && arg != NULL)
        mode_tls(arg);
    else
        die("unknown mode %s (or its argument is missing)", mode);
    free(seen);
    free(log_text);
    return finish();
}
