/*
 * The engine's topology work must not stall delivery, its per-index state
 * must stay bounded, and close()/request.timeout.ms must hold against a server
 * that never answers. Public API only (include/esbulk.h), against the real
 * OpenSearch cluster.
 *
 *   tests/it_topology [CLUSTER_URL] [PART]...
 *
 * CLUSTER_URL defaults to ESBULK_IT_CLUSTER or http://127.0.0.1:19200. PARTs
 * (all of them, in this order, when none is given):
 *
 *   gap         metadata requests answered GAP_META_DELAY_S late (through
 *               tests/faultproxy.py --slow-meta, started here), bulks at once:
 *               the results of an index whose metadata is known keep flowing
 *               while a brand-new index appears every second
 *   newindices  100,000 documents round-robin over 300 indices that do not
 *               exist yet, against the same load into 300 existing ones
 *   silent      a loopback listener that never accepts nor answers: close(T)
 *               returns within T + slack, request.timeout.ms holds
 *   many        >= 2,000 distinct indices in turn (daily-rollover style),
 *               deleted as it goes: memory, CPU per document and the "indices"
 *               / "destinations" statistics stay flat
 *
 * Each part runs in its own child process with a hard time bound
 * (*_HARD_S): a part that hangs is killed and counted as failed, and the
 * other parts still run. Every measured figure is printed; every threshold is
 * a named constant below.
 *
 * The fault proxy (part gap) is tests/faultproxy.py, found through
 * IT_FAULTPROXY, else $top_srcdir/tests/faultproxy.py, else
 * tests/faultproxy.py; it listens on IT_TOPO_PROXY_PORT (default 19280).
 * IT_TOPO_MANY_LEVEL sets part many's routing.level (default node; shard
 * gives a destination per index and shard). IT_LOG=1 prints the library's
 * log on stderr.
 */
#define _GNU_SOURCE 1
#include <esbulk.h>

#include "it_common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* ------------------------------------------------------------------------- */
/* Thresholds and sizes: tune here. */

/* gap */
#define GAP_META_DELAY_S 4          /* the proxy holds every metadata request this long */
#define GAP_PROXY_PORT 19280        /* default; IT_TOPO_PROXY_PORT overrides */
#define GAP_FLUSH_DOCS "200"
#define GAP_FLUSH_INTERVAL_MS "50"
#define GAP_WARMUP_DOCS 10
#define GAP_WARMUP_FLUSH_MS 120000  /* the warm-up may take a few delays */
#define GAP_LOAD_MS 9000            /* how long the producer runs */
#define GAP_RATE_PER_S 2000         /* documents per second into the known index */
#define GAP_NEW_INDEX_EVERY_MS 1000 /* one document into a brand-new index this often */
#define GAP_MAX_GAP_MS 2000         /* the largest gap between two results: below this;
                                       a read that blocked delivery would show as the
                                       proxy's 4 s, and a loaded 2-core machine (index
                                       creation, GC) has shown 1.1 s; the rule that keeps
                                       a slot for routed documents is check_core's
                                       test_unrouted_leaves_a_slot */
#define GAP_DRAIN_MS 200000         /* flush after the load: each new index needs several
                                       metadata requests, GAP_META_DELAY_S each */
#define GAP_HARD_S 360

/* newindices */
#define NEWIDX_DOCS 100000
#define NEWIDX_INDICES 300
#define NEWIDX_SLACK_MS 15000       /* new-indices time <= existing time + creation + this */
#define NEWIDX_LOAD_HARD_MS 180000  /* a load that takes longer fails, stops waiting */
#define NEWIDX_HARD_S 600

/* silent */
#define SILENT_DOCS 100
#define SILENT_CLOSE_SLACK_MS 700   /* close(T) returns within T + this */
#define SILENT_REQUEST_TIMEOUT_MS 2000
#define SILENT_TIMEOUT_SLACK_MS 1500 /* the result comes within request.timeout.ms + this
                                      (flush.interval.ms, 1 s by default, included) */
/* A document added right after esbulk_new first waits for its index's
 * first metadata read, which ends within the smaller of topology.wait.ms
 * (2 s by default) and request.timeout.ms (against a silent server the read
 * times out): that much more is allowed then. */
#define SILENT_FIRST_READ_MS 2000
#define SILENT_RESULT_HARD_MS 30000 /* stop waiting for that result after this */
#define SILENT_SETTLE_MS 5000       /* the second variant adds its document this long after
                                       esbulk_new, when the handle's first cluster read has
                                       failed (request.timeout.ms after esbulk_new) and the
                                       I/O thread knows it: then the document does not wait for
                                       its index's read */
#define SILENT_HARD_S 240

/* many */
#define MANY_INDICES 2000           /* distinct index names, >= 2000 */
#define MANY_DOCS_PER_INDEX 5
#define MANY_FLUSH_EVERY 20         /* flush after this many indices */
#define MANY_DELETE_EVERY 100       /* delete the written indices in batches of this many */
#define MANY_SAMPLE_EVERY 100       /* RSS, CPU and statistics every this many indices */
#define MANY_IDLE_MS "2000"         /* topology.idle.ms */
#define MANY_ROUTING_LEVEL "node"   /* default; IT_TOPO_MANY_LEVEL overrides (shard: a
                                       destination per index and shard) */
#define MANY_RSS_SLACK_KIB (16 * 1024) /* peak RSS over the last 500 <= RSS at 100 + this */
#define MANY_RSS_WINDOW 500
#define MANY_RSS_HALF_SLACK_KIB 128 /* RSS growth over the second half of the indices: at
                                       most this (the engine before idle entries were freed
                                       grew ~290 bytes an index: ~280 KiB over 1000) */
#define MANY_CPU_FACTOR 3.0         /* CPU/doc of the last 100 <= this x that of 100-200 */
#define MANY_CPU_SLACK_US 100.0     /* ... + this many microseconds per document */
#define MANY_MAX_INDICES_STAT 200   /* the "indices" statistic stays below this */
#define MANY_FLUSH_MS 120000
#define MANY_LOAD_HARD_MS 480000    /* stop adding (and fail) after this */
#define MANY_HARD_S 600

/* ------------------------------------------------------------------------- */

static int64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

/* The time each document's (last) result was served, by opaque; NULL: not
 * recorded. */
static int64_t *result_ms;

static void on_result(esbulk_t *eb, const esbulk_result_t *r, void *opaque)
{
    size_t i = (size_t)(uintptr_t)esbulk_result_opaque(r);

    (void)eb;
    (void)opaque;
    seen_record(r);
    if (result_ms != NULL && i < nseen)
        result_ms[i] = mono_ms();
}

static void on_log(int32_t level, const char *fac, const char *msg, void *opaque)
{
    (void)opaque;
    if (getenv("IT_LOG") != NULL)
        fprintf(stderr, "log %d %s: %s\n", (int)level, fac, msg);
}

/* A handle on urls with kv pairs; a key in optional[] that the library does
 * not know is noted and skipped (*missing set) rather than fatal. */
static esbulk_t *handle_opt(const char *urls, const char *const *kv, const char *optional,
                            int *missing, int64_t *new_ms)
{
    esbulk_conf_t *conf = esbulk_conf_new();
    char errstr[512];
    esbulk_t *eb;
    int64_t t0;

    if (conf == NULL)
        die("out of memory");
    if (esbulk_conf_set(conf, "urls", urls, errstr, sizeof(errstr)) != ESBULK_OK)
        die("conf urls: %s", errstr);
    for (; kv != NULL && kv[0] != NULL; kv += 2) {
        esbulk_err_t err = esbulk_conf_set(conf, kv[0], kv[1], errstr, sizeof(errstr));

        if (err == ESBULK_ERR_UNKNOWN_KEY && optional != NULL && strcmp(kv[0], optional) == 0) {
            printf("NOTE: %s is not a configuration key of this library (%s): going on "
                   "without it\n", kv[0], errstr);
            if (missing != NULL)
                *missing = 1;
            continue;
        }
        if (err != ESBULK_OK)
            die("conf %s=%s: %s", kv[0], kv[1], errstr);
    }
    esbulk_conf_set_result_cb(conf, on_result);
    esbulk_conf_set_log_cb(conf, on_log);
    t0 = mono_ms();
    eb = esbulk_new(conf, errstr, sizeof(errstr));
    if (new_ms != NULL)
        *new_ms = mono_ms() - t0;
    esbulk_conf_destroy(conf);
    if (eb == NULL)
        die("esbulk_new: %s", errstr);
    return eb;
}

static esbulk_t *handle(const char *urls, const char *const *kv, int64_t *new_ms)
{
    return handle_opt(urls, kv, NULL, NULL, new_ms);
}

/* Adds one document; QUEUE_FULL is waited out (polling) until deadline_ms
 * (monotonic). Returns the error (ESBULK_OK: a result will come). */
static esbulk_err_t add_doc(esbulk_t *eb, const char *index, const char *id, const char *body,
                            size_t i, int64_t deadline_ms)
{
    char errstr[512];
    esbulk_err_t err;

    for (;;) {
        err = esbulk_add(eb, ESBULK_OP_INDEX, index, id, id ? strlen(id) : 0, NULL, 0, body,
                         strlen(body), (void *)(uintptr_t)i, errstr, sizeof(errstr));
        if (err != ESBULK_ERR_QUEUE_FULL || mono_ms() >= deadline_ms)
            break;
        esbulk_poll(eb, 20);
    }
    if (err != ESBULK_OK && err != ESBULK_ERR_QUEUE_FULL)
        die("esbulk_add %s: %s", index, errstr);
    return err;
}


/* The first document of seen[from..to) that is not INDEXED once, or to. */
static size_t first_bad(size_t from, size_t to)
{
    for (; from < to; from++)
        if (seen[from].results != 1 || seen[from].outcome != ESBULK_OUTCOME_INDEXED)
            break;
    return from;
}

static void report_bad(const char *what, size_t from, size_t to)
{
    size_t b = first_bad(from, to);

    if (b < to)
        printf("  %s: e.g. document %zu: %d results, outcome %d, err %d (%s), status %d: "
               "%.200s\n", what, b, seen[b].results, (int)seen[b].outcome, (int)seen[b].err,
               esbulk_err2str(seen[b].err), (int)seen[b].status, seen[b].reason);
}

/* An index of `shards` shards, 0 replicas, an explicit mapping. */
static void fresh_index(const char *name, int shards)
{
    char path[256], body[512];
    long status;

    snprintf(path, sizeof(path), "/%s", name);
    json_decref(req("DELETE", path, NULL, &status));
    snprintf(body, sizeof(body),
             "{\"settings\":{\"number_of_shards\":%d,\"number_of_replicas\":0},"
             "\"mappings\":{\"properties\":{\"n\":{\"type\":\"long\"}}}}",
             shards);
    must_ok("PUT", path, body);
    /* every shard started before the part starts: a cluster that cannot
     * start one fails here, with the cluster's reason, not as a slow load */
    wait_green();
}

/* An index template: pattern -> 1 shard, 0 replicas (creation is cheap). */
static void put_template(const char *name, const char *pattern)
{
    char path[256], body[512];

    snprintf(path, sizeof(path), "/_index_template/%s", name);
    snprintf(body, sizeof(body),
             "{\"index_patterns\":[\"%s\"],\"priority\":500,\"template\":{\"settings\":"
             "{\"number_of_shards\":1,\"number_of_replicas\":0},\"mappings\":{\"properties\":"
             "{\"n\":{\"type\":\"long\"}}}}}",
             pattern);
    must_ok("PUT", path, body);
}

static void delete_template(const char *name)
{
    char path[256];
    long status;

    snprintf(path, sizeof(path), "/_index_template/%s", name);
    json_decref(req("DELETE", path, NULL, &status));
}

/* Deletes the indices fmt % [from, to) (missing ones ignored), in batches. */
static void delete_indices(const char *fmt, int from, int to)
{
    char path[4000], name[128];
    size_t len;
    long status;
    int i;

    while (from < to) {
        len = (size_t)snprintf(path, sizeof(path), "/");
        for (i = from; i < to && len + sizeof(name) + 40 < sizeof(path); i++) {
            snprintf(name, sizeof(name), fmt, i);
            len += (size_t)snprintf(path + len, sizeof(path) - len, "%s%s", i > from ? "," : "",
                                    name);
        }
        snprintf(path + len, sizeof(path) - len, "?ignore_unavailable=true");
        json_decref(req("DELETE", path, NULL, &status));
        if (status != 200 && status != 404)
            printf("NOTE: DELETE of %d indices answered %ld\n", i - from, status);
        from = i;
    }
}

static long count_of(const char *pattern)
{
    char path[512];
    json_t *j;
    long n;

    snprintf(path, sizeof(path), "/%s/_refresh", pattern);
    must_ok("POST", path, NULL);
    snprintf(path, sizeof(path), "/%s/_count", pattern);
    j = must("GET", path, NULL);
    n = (long)json_integer_value(json_object_get(j, "count"));
    json_decref(j);
    return n;
}

/* An integer field of the statistics JSON; -1 when absent. */
static long stat_field(esbulk_t *eb, const char *key)
{
    char *text = esbulk_stats_json(eb);
    json_t *j = text ? json_loads(text, 0, NULL) : NULL;
    json_t *v = j ? json_object_get(j, key) : NULL;
    long n = json_is_integer(v) ? (long)json_integer_value(v) : -1;

    json_decref(j);
    esbulk_free(text);
    return n;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return x < y ? -1 : x > y;
}

/* ------------------------------------------------------------------------- */
/* gap: metadata slow, results keep flowing. */

static const char *proxy_script(void)
{
    static char path[4096];
    const char *p = getenv("IT_FAULTPROXY");

    if (p != NULL && *p != '\0')
        return p;
    if ((p = getenv("top_srcdir")) != NULL && *p != '\0') {
        snprintf(path, sizeof(path), "%s/tests/faultproxy.py", p);
        return path;
    }
    return "tests/faultproxy.py";
}

/* Starts the proxy; returns its pid (waits until it listens). */
static pid_t start_proxy(int port, const char *pidfile, const char *logfile)
{
    char sport[16], sdelay[16], smax[16];
    const char *script = proxy_script();
    char *argv[] = {"python3", (char *)script, "--listen", sport, "--upstream", (char *)base_url,
                    "--slow-meta", sdelay, "--pidfile", (char *)pidfile, "--log",
                    (char *)logfile, "--max-seconds", smax, NULL};
    struct stat st;
    pid_t pid;
    int i, rc;

    if (access(script, R_OK) != 0)
        die("gap: the fault proxy %s is not readable (set IT_FAULTPROXY or top_srcdir)", script);
    snprintf(sport, sizeof(sport), "%d", port);
    snprintf(sdelay, sizeof(sdelay), "%d", GAP_META_DELAY_S);
    snprintf(smax, sizeof(smax), "%d", GAP_HARD_S + 30);
    rc = posix_spawnp(&pid, "python3", NULL, NULL, argv, environ);
    if (rc != 0)
        die("gap: cannot start python3 %s: %s", script, strerror(rc));
    for (i = 0; i < 200; i++) { /* 10 s */
        int status;

        if (stat(pidfile, &st) == 0 && st.st_size > 0)
            return pid;
        if (waitpid(pid, &status, WNOHANG) == pid)
            die("gap: the fault proxy exited at once (port %d busy?)", port);
        sleep_ms(50);
    }
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    die("gap: the fault proxy did not start on port %d", port);
}

static void stop_proxy(pid_t pid)
{
    int i;

    kill(pid, SIGTERM);
    for (i = 0; i < 50; i++) {
        if (waitpid(pid, NULL, WNOHANG) == pid)
            return;
        sleep_ms(100);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* Lines of the proxy log whose FAULT column is fault. */
static size_t proxy_log_count(const char *logfile, const char *fault)
{
    FILE *f = fopen(logfile, "r");
    char line[8192], m[16], p[4096], flt[32];
    long bytes;
    int status;
    size_t n = 0;

    if (f == NULL)
        return 0;
    while (fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "%15s %4095s %ld %d %31s", m, p, &bytes, &status, flt) == 5 &&
            strcmp(flt, fault) == 0)
            n++;
    fclose(f);
    return n;
}

static void part_gap(void)
{
    const char *index = "it-topo-gap-a", *newfmt = "it-topo-gap-new-%03d";
    const size_t load_max = (size_t)GAP_RATE_PER_S * GAP_LOAD_MS / 1000 + 1000;
    const int new_max = GAP_LOAD_MS / GAP_NEW_INDEX_EVERY_MS + 2;
    char dir[] = "/tmp/it_topology.XXXXXX", pidfile[256], logfile[256], url[64], name[64];
    char id[32], body[64];
    const char *port_env = getenv("IT_TOPO_PROXY_PORT");
    int port = port_env ? atoi(port_env) : GAP_PROXY_PORT;
    const char *kv[] = {"topology.discovery", "false", "flush.interval.ms", GAP_FLUSH_INTERVAL_MS,
                        "flush.docs", GAP_FLUSH_DOCS, "enqueue.timeout.ms", "0", NULL};
    size_t cap = GAP_WARMUP_DOCS + load_max + (size_t)new_max, next = 0, nload = 0, i, ngap = 0;
    size_t *new_doc, nnew = 0, refused = 0, late = 0;
    int64_t t_new, t0, warm_ms, load_start, load_end, now, next_new, drain_ms, prev, *gaps;
    int64_t max_gap = 0, max_gap_at = 0, median = 0, win_gap = 0, win_prev;
    esbulk_err_t ferr;
    esbulk_t *eb;
    pid_t proxy;
    tally_t t;
    long cnt, cnt_new;
    int k, iter;

    if (mkdtemp(dir) == NULL)
        die("gap: mkdtemp: %s", strerror(errno));
    snprintf(pidfile, sizeof(pidfile), "%s/proxy.pid", dir);
    snprintf(logfile, sizeof(logfile), "%s/proxy.log", dir);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
    fresh_index(index, 3);
    delete_indices(newfmt, 0, new_max);
    proxy = start_proxy(port, pidfile, logfile);
    printf("gap: proxy on %s holds every metadata request %d s, bulks pass at once\n", url,
           GAP_META_DELAY_S);

    seen_reset(cap);
    result_ms = calloc(cap, sizeof(*result_ms));
    new_doc = calloc((size_t)new_max, sizeof(*new_doc));
    gaps = calloc(load_max + 1, sizeof(*gaps));
    if (result_ms == NULL || new_doc == NULL || gaps == NULL)
        die("out of memory");

    eb = handle(url, kv, &t_new);
    printf("gap: esbulk_new took %lld ms\n", (long long)t_new);

    /* warm-up: index A's metadata is fetched (slowly) once */
    t0 = mono_ms();
    for (i = 0; i < GAP_WARMUP_DOCS; i++, next++) {
        snprintf(id, sizeof(id), "w%zu", i);
        snprintf(body, sizeof(body), "{\"n\":%zu}", i);
        add_doc(eb, index, id, body, next, t0 + 10000);
    }
    ferr = esbulk_flush(eb, GAP_WARMUP_FLUSH_MS);
    warm_ms = mono_ms() - t0;
    printf("gap: warm-up (%d documents into %s, then flush) took %lld ms\n", GAP_WARMUP_DOCS,
           index, (long long)warm_ms);
    check(ferr == ESBULK_OK, "gap: the warm-up flush returned within %d ms", GAP_WARMUP_FLUSH_MS);

    /* the load: GAP_RATE_PER_S into A, a new index every GAP_NEW_INDEX_EVERY_MS */
    load_start = mono_ms();
    next_new = load_start + GAP_NEW_INDEX_EVERY_MS / 2;
    for (iter = 0; iter < 1000 * GAP_LOAD_MS; iter++) { /* bounded in count and time */
        size_t due;

        now = mono_ms();
        if (now - load_start >= GAP_LOAD_MS)
            break;
        due = (size_t)((now - load_start) * GAP_RATE_PER_S / 1000);
        while (nload < due && nload < load_max) {
            snprintf(id, sizeof(id), "l%zu", nload);
            snprintf(body, sizeof(body), "{\"n\":%zu}", nload);
            if (add_doc(eb, index, id, body, next, now) != ESBULK_OK) {
                refused++;
                break;
            }
            next++;
            nload++;
        }
        if (now >= next_new && nnew < (size_t)new_max) {
            snprintf(name, sizeof(name), newfmt, (int)nnew);
            if (add_doc(eb, name, "x", "{\"n\":1}", next, now) == ESBULK_OK)
                new_doc[nnew++] = next++;
            else
                refused++;
            next_new += GAP_NEW_INDEX_EVERY_MS;
        }
        esbulk_poll(eb, 2);
    }
    load_end = mono_ms();
    printf("gap: load: %zu documents into %s and %zu into new indices in %lld ms; %zu adds "
           "refused (queue full)\n", nload, index, nnew, (long long)(load_end - load_start),
           refused);
    ferr = esbulk_flush(eb, GAP_DRAIN_MS);
    drain_ms = mono_ms() - load_end;
    printf("gap: the final flush took %lld ms\n", (long long)drain_ms);
    check(ferr == ESBULK_OK, "gap: the final flush returned within %d ms", GAP_DRAIN_MS);
    esbulk_destroy(eb);

    /* gaps between consecutive results of A's load documents, from the
     * start of the load */
    {
        int64_t *times = malloc(sizeof(*times) * (nload + 1));
        size_t nt = 0;

        if (times == NULL)
            die("out of memory");
        for (i = GAP_WARMUP_DOCS; i < next; i++) {
            size_t j;
            int is_new = 0;

            for (j = 0; j < nnew; j++)
                is_new |= new_doc[j] == i;
            if (!is_new && seen[i].results > 0) {
                times[nt++] = result_ms[i];
                late += result_ms[i] > load_end;
            }
        }
        qsort(times, nt, sizeof(*times), cmp_i64);
        /* the same within the load window only (its end counts as a point):
         * what a producer sees while it runs */
        win_prev = load_start;
        for (i = 0; i < nt && times[i] <= load_end; i++) {
            if (times[i] - win_prev > win_gap)
                win_gap = times[i] - win_prev;
            win_prev = times[i];
        }
        if (load_end - win_prev > win_gap)
            win_gap = load_end - win_prev;
        prev = load_start;
        for (i = 0; i < nt; i++) {
            gaps[ngap] = times[i] - prev;
            if (gaps[ngap] > max_gap) {
                max_gap = gaps[ngap];
                max_gap_at = prev - load_start;
            }
            ngap++;
            prev = times[i];
        }
        free(times);
    }
    if (ngap > 0) {
        qsort(gaps, ngap, sizeof(*gaps), cmp_i64);
        median = gaps[ngap / 2];
    }
    printf("gap: largest result gap: %lld ms (starting %.1f s into the load); median gap: %lld "
           "ms; %zu results of %s, %zu of them after the load ended\n", (long long)max_gap,
           (double)max_gap_at / 1000.0, (long long)median, ngap, index, late);
    printf("gap: largest gap within the %d ms load window: %lld ms\n", GAP_LOAD_MS,
           (long long)win_gap);
    for (k = 0; k < (int)nnew; k++) {
        size_t d = new_doc[k];
        printf("  new index %d: result %lld ms after the load start\n", k,
               seen[d].results ? (long long)(result_ms[d] - load_start) : -1LL);
    }
    printf("gap: the proxy held %zu metadata requests, passed %zu bulk requests\n",
           proxy_log_count(logfile, "slow-meta"), proxy_log_count(logfile, "forwarded"));

    t = seen_tally(0, next);
    check(t.not_once == 0, "gap: each of %zu documents got exactly one result (%zu did not)",
          next, t.not_once);
    check(t.indexed == next, "gap: all %zu INDEXED (%zu failed, %zu possibly)", next, t.failed,
          t.possibly);
    report_bad("gap", 0, next);
    check(ngap > 0 && max_gap < GAP_MAX_GAP_MS,
          "gap: largest gap between results of %s %lld ms < %d ms (median %lld ms)", index,
          (long long)max_gap, GAP_MAX_GAP_MS, (long long)median);
    cnt = count_of(index);
    check(cnt == (long)(GAP_WARMUP_DOCS + nload), "gap: %s holds %ld documents, %zu added",
          index, cnt, GAP_WARMUP_DOCS + nload);
    cnt_new = count_of("it-topo-gap-new-*");
    check(cnt_new == (long)nnew, "gap: the new indices hold %ld documents, %zu added", cnt_new,
          nnew);

    stop_proxy(proxy);
    unlink(pidfile);
    unlink(logfile);
    rmdir(dir);
    delete_indices(newfmt, 0, new_max);
    json_decref(req("DELETE", "/it-topo-gap-a", NULL, &cnt));
    free(new_doc);
    free(gaps);
    free(result_ms);
    result_ms = NULL;
}

/* ------------------------------------------------------------------------- */
/* newindices: 100,000 documents over 300 indices that do not exist yet,
 * against the same load into 300 existing ones. */

/* Loads NEWIDX_DOCS round-robin over fmt % [0, NEWIDX_INDICES); returns the
 * elapsed ms, -1 when it did not finish within NEWIDX_LOAD_HARD_MS. */
static int64_t load_round_robin(const char *what, const char *fmt)
{
    char name[64], body[64];
    int64_t t0 = mono_ms(), deadline = t0 + NEWIDX_LOAD_HARD_MS, left, el;
    esbulk_err_t ferr = ESBULK_OK;
    size_t i, n = 0;
    esbulk_t *eb;
    tally_t t;

    seen_reset(NEWIDX_DOCS);
    eb = handle(base_url, NULL, NULL);
    for (i = 0; i < NEWIDX_DOCS; i++) {
        snprintf(name, sizeof(name), fmt, (int)(i % NEWIDX_INDICES));
        snprintf(body, sizeof(body), "{\"n\":%zu}", i);
        if (add_doc(eb, name, NULL, body, i, deadline) != ESBULK_OK)
            break;
        n++;
        if (i % 1000 == 0)
            esbulk_poll(eb, 0);
    }
    left = deadline - mono_ms();
    if (n < NEWIDX_DOCS || left <= 0)
        ferr = ESBULK_ERR_TIMED_OUT;
    else
        ferr = esbulk_flush(eb, (int32_t)left);
    el = mono_ms() - t0;
    check(ferr == ESBULK_OK, "newindices/%s: %zu documents added and flushed within %d ms "
          "(%lld ms)", what, n, NEWIDX_LOAD_HARD_MS, (long long)el);
    esbulk_close(eb, 0);
    esbulk_destroy(eb);
    t = seen_tally(0, NEWIDX_DOCS);
    check(n == NEWIDX_DOCS && t.not_once == 0,
          "newindices/%s: each of %d documents got exactly one result (%zu did not)", what,
          NEWIDX_DOCS, t.not_once);
    check(t.indexed == NEWIDX_DOCS, "newindices/%s: all INDEXED (%zu failed, %zu possibly)",
          what, t.failed, t.possibly);
    report_bad(what, 0, NEWIDX_DOCS);
    return ferr == ESBULK_OK ? el : -1;
}

static void part_newindices(void)
{
    const char *newfmt = "it-topo-new-%03d", *oldfmt = "it-topo-old-%03d";
    char path[128], body[256];
    int64_t new_ms, old_ms, create_ms, t0;
    long cnt;
    int i;

    delete_indices(newfmt, 0, NEWIDX_INDICES);
    delete_indices(oldfmt, 0, NEWIDX_INDICES);
    put_template("it-topo-new", "it-topo-new-*");

    new_ms = load_round_robin("new", newfmt);
    cnt = count_of("it-topo-new-*");
    check(cnt == NEWIDX_DOCS, "newindices/new: _count over it-topo-new-* = %ld (%d added)", cnt,
          NEWIDX_DOCS);
    printf("newindices: %d documents into %d new indices: %lld ms\n", NEWIDX_DOCS, NEWIDX_INDICES,
           (long long)new_ms);
    delete_indices(newfmt, 0, NEWIDX_INDICES);
    delete_template("it-topo-new");

    t0 = mono_ms();
    for (i = 0; i < NEWIDX_INDICES; i++) {
        snprintf(path, sizeof(path), "/");
        snprintf(path + 1, sizeof(path) - 1, oldfmt, i);
        snprintf(body, sizeof(body), "{\"settings\":{\"number_of_shards\":1,"
                 "\"number_of_replicas\":0},\"mappings\":{\"properties\":{\"n\":"
                 "{\"type\":\"long\"}}}}");
        must_ok("PUT", path, body);
    }
    create_ms = mono_ms() - t0;
    printf("newindices: creating %d indices with the admin client: %lld ms\n", NEWIDX_INDICES,
           (long long)create_ms);
    wait_green();

    old_ms = load_round_robin("existing", oldfmt);
    cnt = count_of("it-topo-old-*");
    check(cnt == NEWIDX_DOCS, "newindices/existing: _count over it-topo-old-* = %ld (%d added)",
          cnt, NEWIDX_DOCS);
    printf("newindices: %d documents into %d existing indices: %lld ms\n", NEWIDX_DOCS,
           NEWIDX_INDICES, (long long)old_ms);
    if (new_ms >= 0 && old_ms > 0)
        printf("newindices: new/existing = %.2f; new - (existing + creation) = %lld ms\n",
               (double)new_ms / (double)old_ms, (long long)(new_ms - old_ms - create_ms));
    check(new_ms >= 0 && old_ms >= 0 && new_ms <= old_ms + create_ms + NEWIDX_SLACK_MS,
          "newindices: new indices %lld ms <= existing %lld ms + creation %lld ms + %d ms",
          (long long)new_ms, (long long)old_ms, (long long)create_ms, NEWIDX_SLACK_MS);
    delete_indices(oldfmt, 0, NEWIDX_INDICES);
}

/* ------------------------------------------------------------------------- */
/* silent: a server that accepts connections (the kernel's backlog does) and
 * never answers. */

static int silent_listener(char *url, size_t url_size)
{
    struct sockaddr_in a;
    socklen_t alen = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    if (fd < 0)
        die("silent: socket: %s", strerror(errno));
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 4096) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &alen) != 0)
        die("silent: bind/listen: %s", strerror(errno));
    snprintf(url, url_size, "http://127.0.0.1:%d", (int)ntohs(a.sin_port));
    return fd;
}

static void silent_close(int32_t close_ms)
{
    char url[64], id[32], body[64];
    int64_t new_ms, t0, el, destroy_ms;
    esbulk_err_t err;
    esbulk_t *eb;
    size_t i;
    tally_t t;
    int fd = silent_listener(url, sizeof(url));

    seen_reset(SILENT_DOCS);
    eb = handle(url, NULL, &new_ms);
    for (i = 0; i < SILENT_DOCS; i++) {
        snprintf(id, sizeof(id), "s%zu", i);
        snprintf(body, sizeof(body), "{\"n\":%zu}", i);
        add_doc(eb, "it-topo-silent", id, body, i, mono_ms() + 5000);
    }
    t0 = mono_ms();
    err = esbulk_close(eb, close_ms);
    el = mono_ms() - t0;
    t0 = mono_ms();
    esbulk_destroy(eb);
    destroy_ms = mono_ms() - t0;
    close(fd);
    t = seen_tally(0, SILENT_DOCS);
    printf("silent: close(%d) returned %s after %lld ms (esbulk_new %lld ms, destroy %lld ms); "
           "%zu FAILED, %zu POSSIBLY, %zu with ERR_CLOSED, %zu INDEXED; first: err %d (%s) "
           "%.160s\n", (int)close_ms, esbulk_err2str(err), (long long)el, (long long)new_ms,
           (long long)destroy_ms, t.failed, t.possibly, t.closed, t.indexed, (int)seen[0].err,
           esbulk_err2str(seen[0].err), seen[0].reason);
    check(el <= close_ms + SILENT_CLOSE_SLACK_MS, "silent: close(%d) returned within %d ms + %d "
          "ms (%lld ms)", (int)close_ms, (int)close_ms, SILENT_CLOSE_SLACK_MS, (long long)el);
    check(err == ESBULK_ERR_TIMED_OUT, "silent: close(%d) says not everything was delivered "
          "(%s)", (int)close_ms, esbulk_err2str(err));
    check(t.not_once == 0, "silent: close(%d): each of %d documents got exactly one result (%zu "
          "did not)", (int)close_ms, SILENT_DOCS, t.not_once);
    check(t.indexed == 0 && t.failed + t.possibly == SILENT_DOCS - t.not_once,
          "silent: close(%d): none INDEXED (%zu FAILED, %zu POSSIBLY, %zu with ERR_CLOSED)",
          (int)close_ms, t.failed, t.possibly, t.closed);
    check(destroy_ms <= SILENT_CLOSE_SLACK_MS, "silent: destroy after close(%d) took %lld ms "
          "(<= %d)", (int)close_ms, (long long)destroy_ms, SILENT_CLOSE_SLACK_MS);
}

/* One document on a handle with request.timeout.ms=SILENT_REQUEST_TIMEOUT_MS
 * and retry.max=0, added settle_ms after esbulk_new: its result must come
 * within the timeout plus slack of the add (plus the first metadata read
 * when added at once). */
static void silent_request_timeout(int settle_ms)
{
    char url[64], rt[16];
    const char *kv[] = {"request.timeout.ms", rt, "retry.max", "0", NULL};
    int64_t new_ms, t0, el = -1, destroy_ms;
    esbulk_t *eb;
    int iter, fd = silent_listener(url, sizeof(url));

    snprintf(rt, sizeof(rt), "%d", SILENT_REQUEST_TIMEOUT_MS);
    seen_reset(1);
    eb = handle(url, kv, &new_ms);
    if (settle_ms > 0)
        sleep_ms(settle_ms);
    add_doc(eb, "it-topo-silent", "one", "{\"n\":1}", 0, mono_ms() + 5000);
    t0 = mono_ms();
    for (iter = 0; iter < SILENT_RESULT_HARD_MS / 20 + 10; iter++) {
        esbulk_poll(eb, 50);
        if (seen[0].results > 0) {
            el = mono_ms() - t0;
            break;
        }
        if (mono_ms() - t0 >= SILENT_RESULT_HARD_MS)
            break;
    }
    if (el < 0)
        printf("silent: request.timeout.ms=%d, added %d ms after esbulk_new: no result after "
               "%lld ms; stopped waiting\n", SILENT_REQUEST_TIMEOUT_MS, settle_ms,
               (long long)(mono_ms() - t0));
    else
        printf("silent: request.timeout.ms=%d, retry.max=0, added %d ms after esbulk_new: the "
               "document's result came %lld ms after the add (esbulk_new %lld ms): outcome %d, "
               "err %d (%s): %.160s\n", SILENT_REQUEST_TIMEOUT_MS, settle_ms, (long long)el,
               (long long)new_ms,
               (int)seen[0].outcome, (int)seen[0].err, esbulk_err2str(seen[0].err),
               seen[0].reason);
    {
        /* added later, the document finds the cluster's read failed and
         * waits for no index read. CI runs saw up to 3994 ms here: the I/O
         * thread took the document up to flush.interval.ms after its add
         * (it is woken only when it would look too late by itself), and
         * flush.interval.ms counted from then; it counts from the add now
         * (check_core's test_add_time_counts) */
        int first = settle_ms == 0 ? SILENT_FIRST_READ_MS : 0;

        check(el >= 0 && el <= first + SILENT_REQUEST_TIMEOUT_MS + SILENT_TIMEOUT_SLACK_MS,
              "silent: request.timeout.ms=%d, added after %d ms: the result came within "
              "%d (first metadata read) + %d + %d ms (%lld ms)", SILENT_REQUEST_TIMEOUT_MS,
              settle_ms, first, SILENT_REQUEST_TIMEOUT_MS, SILENT_TIMEOUT_SLACK_MS,
              (long long)el);
    }
    check(el >= 0 && seen[0].results == 1 && seen[0].outcome != ESBULK_OUTCOME_INDEXED,
          "silent: request.timeout.ms: the document is not INDEXED (outcome %d)",
          (int)seen[0].outcome);
    t0 = mono_ms();
    esbulk_close(eb, 0);
    esbulk_destroy(eb);
    destroy_ms = mono_ms() - t0;
    printf("silent: close(0) + destroy took %lld ms\n", (long long)destroy_ms);
    check(destroy_ms <= SILENT_CLOSE_SLACK_MS, "silent: close(0) + destroy within %d ms (%lld ms)",
          SILENT_CLOSE_SLACK_MS, (long long)destroy_ms);
    close(fd);
}

static void part_silent(void)
{
    silent_close(3000);
    silent_close(5000);
    silent_request_timeout(0);
    silent_request_timeout(SILENT_SETTLE_MS);
}

/* ------------------------------------------------------------------------- */
/* many: daily-rollover style, >= 2,000 indices in turn. */

typedef struct {
    int at;              /* indices written */
    int64_t ms;          /* since the start */
    long rss_kib;
    double cpu_ms;
    size_t docs;
    long indices, dests; /* statistics; -1 when absent */
} sample_t;

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, res = 0;

    if (f == NULL)
        return -1;
    if (fscanf(f, "%ld %ld", &size, &res) != 2)
        res = -1;
    fclose(f);
    return res < 0 ? -1 : res * (sysconf(_SC_PAGESIZE) / 1024);
}

static double cpu_ms(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec * 1000.0 + (double)ru.ru_utime.tv_usec / 1000.0 +
           (double)ru.ru_stime.tv_sec * 1000.0 + (double)ru.ru_stime.tv_usec / 1000.0;
}

static const char *fmt_stat(char *buf, size_t size, long v)
{
    if (v < 0)
        snprintf(buf, size, "n/a");
    else
        snprintf(buf, size, "%ld", v);
    return buf;
}

/* CPU microseconds per document between samples a and b. */
static double cpu_us_per_doc(const sample_t *a, const sample_t *b)
{
    return b->docs > a->docs ? (b->cpu_ms - a->cpu_ms) * 1000.0 / (double)(b->docs - a->docs) : 0;
}

static void part_many(void)
{
    const char *fmt = "it-topo-many-%05d";
    const char *level = getenv("IT_TOPO_MANY_LEVEL") ? getenv("IT_TOPO_MANY_LEVEL")
                                                      : MANY_ROUTING_LEVEL;
    const char *kv[] = {"routing.level", level, "topology.idle.ms", MANY_IDLE_MS, NULL};
    const int nsamples = MANY_INDICES / MANY_SAMPLE_EVERY + 1;
    char name[64], body[64], b1[32], b2[32];
    int64_t t0, deadline, el;
    size_t ndocs = (size_t)MANY_INDICES * MANY_DOCS_PER_INDEX, next = 0;
    sample_t *s;
    int i, d, ns = 0, missing = 0, deleted = 0, stopped = 0, k;
    long max_indices = -1, max_dests = -1, peak = 0, base_rss;
    esbulk_t *eb;
    tally_t t;

    s = calloc((size_t)nsamples + 1, sizeof(*s));
    if (s == NULL)
        die("out of memory");
    delete_indices(fmt, 0, MANY_INDICES);
    put_template("it-topo-many", "it-topo-many-*");
    seen_reset(ndocs);
    /* touch the bookkeeping now: its pages (~700 bytes a document) would
     * otherwise become resident as results come, and look like a leak */
    memset(seen, 0, sizeof(*seen) * ndocs);
    eb = handle_opt(base_url, kv, "topology.idle.ms", &missing, NULL);
    t0 = mono_ms();
    deadline = t0 + MANY_LOAD_HARD_MS;
    for (i = 0; i < MANY_INDICES && !stopped; i++) {
        snprintf(name, sizeof(name), fmt, i);
        for (d = 0; d < MANY_DOCS_PER_INDEX; d++) {
            snprintf(body, sizeof(body), "{\"n\":%d}", d);
            if (add_doc(eb, name, NULL, body, next, deadline) != ESBULK_OK) {
                stopped = 1;
                break;
            }
            next++;
        }
        esbulk_poll(eb, 0);
        if ((i + 1) % MANY_FLUSH_EVERY == 0 || i + 1 == MANY_INDICES) {
            int64_t left = deadline - mono_ms();

            if (left <= 0 || esbulk_flush(eb, (int32_t)(left < MANY_FLUSH_MS ? left
                                                                           : MANY_FLUSH_MS)) !=
                                 ESBULK_OK)
                stopped = 1;
        }
        if (!stopped && ((i + 1) % MANY_DELETE_EVERY == 0 || i + 1 == MANY_INDICES)) {
            delete_indices(fmt, deleted, i + 1);
            deleted = i + 1;
        }
        if (!stopped && (i + 1) % MANY_SAMPLE_EVERY == 0 && ns < nsamples) {
            s[ns].at = i + 1;
            s[ns].ms = mono_ms() - t0;
            s[ns].rss_kib = rss_kib();
            s[ns].cpu_ms = cpu_ms();
            s[ns].docs = next;
            s[ns].indices = stat_field(eb, "indices");
            s[ns].dests = stat_field(eb, "destinations");
            if (s[ns].indices > max_indices)
                max_indices = s[ns].indices;
            if (s[ns].dests > max_dests)
                max_dests = s[ns].dests;
            ns++;
        }
    }
    el = mono_ms() - t0;
    check(!stopped, "many: %d indices x %d documents written and flushed within %d ms (%s at "
          "index %d, %lld ms)", MANY_INDICES, MANY_DOCS_PER_INDEX, MANY_LOAD_HARD_MS,
          stopped ? "stopped" : "done", i, (long long)el);
    esbulk_flush(eb, 10000);
    esbulk_close(eb, 0);
    esbulk_destroy(eb);
    delete_indices(fmt, deleted, MANY_INDICES);
    delete_template("it-topo-many");

    printf("many: %d indices, %d documents each, routing.level=%s, topology.idle.ms=%s%s: %lld "
           "ms in all\n", MANY_INDICES, MANY_DOCS_PER_INDEX, level, MANY_IDLE_MS,
           missing ? " (unknown key: not set)" : "", (long long)el);
    printf("  %7s %8s %9s %9s %10s %8s %12s\n", "indices", "time_s", "rss_kib", "cpu_ms",
           "cpu_us/doc", "indices", "destinations");
    for (k = 0; k < ns; k++)
        printf("  %7d %8.1f %9ld %9.0f %10.1f %8s %12s\n", s[k].at, (double)s[k].ms / 1000.0,
               s[k].rss_kib, s[k].cpu_ms, k > 0 ? cpu_us_per_doc(&s[k - 1], &s[k]) : 0.0,
               fmt_stat(b1, sizeof(b1), s[k].indices), fmt_stat(b2, sizeof(b2), s[k].dests));

    t = seen_tally(0, next);
    check(next == ndocs && t.not_once == 0,
          "many: each of %zu documents got exactly one result (%zu added, %zu did not)", ndocs,
          next, t.not_once);
    check(t.indexed == ndocs, "many: all INDEXED (%zu failed, %zu possibly)", t.failed,
          t.possibly);
    report_bad("many", 0, next);

    /* memory: the peak over the last MANY_RSS_WINDOW indices against the
     * figure at the first sample (index 100: the engine is warm) */
    base_rss = ns > 0 ? s[0].rss_kib : -1;
    for (k = 0; k < ns; k++)
        if (s[k].at >= MANY_INDICES - MANY_RSS_WINDOW && s[k].rss_kib > peak)
            peak = s[k].rss_kib;
    printf("many: RSS at index %d: %ld KiB; peak over the last %d indices: %ld KiB (+%ld KiB)\n",
           ns > 0 ? s[0].at : 0, base_rss, MANY_RSS_WINDOW, peak, peak - base_rss);
    if (ns >= 2) {
        const sample_t *mid = &s[(ns - 1) / 2], *end = &s[ns - 1];
        long grew = end->rss_kib - mid->rss_kib;

        printf("many: RSS growth over indices %d-%d: %ld KiB (%.0f bytes per index)\n", mid->at,
               end->at, grew,
               end->at > mid->at ? (double)grew * 1024.0 / (double)(end->at - mid->at) : 0.0);
        check(grew <= MANY_RSS_HALF_SLACK_KIB, "many: RSS grew %ld KiB over indices %d-%d (<= "
              "%d KiB: flat once idle entries are freed)", grew, mid->at, end->at,
              MANY_RSS_HALF_SLACK_KIB);
    }
    check(ns == nsamples - 1 && base_rss > 0 && peak <= base_rss + MANY_RSS_SLACK_KIB,
          "many: peak RSS over the last %d indices %ld KiB <= RSS at index %d %ld KiB + %d KiB",
          MANY_RSS_WINDOW, peak, ns > 0 ? s[0].at : 0, base_rss, MANY_RSS_SLACK_KIB);

    /* CPU per document: the last 100 indices against indices 100-200. A
     * noisy shared 2-core machine (the cluster's JVMs run on it too): a
     * factor and an absolute slack, not a tight bound. */
    if (ns >= 3) {
        double early = cpu_us_per_doc(&s[0], &s[1]);
        double last = cpu_us_per_doc(&s[ns - 2], &s[ns - 1]);

        printf("many: CPU per document: %.1f us over indices %d-%d, %.1f us over %d-%d\n", early,
               s[0].at, s[1].at, last, s[ns - 2].at, s[ns - 1].at);
        check(last <= MANY_CPU_FACTOR * early + MANY_CPU_SLACK_US,
              "many: CPU per document over the last %d indices %.1f us <= %.1f x %.1f us + %.0f "
              "us", MANY_SAMPLE_EVERY, last, MANY_CPU_FACTOR, early, MANY_CPU_SLACK_US);
    } else {
        check(0, "many: too few samples (%d) to compare CPU per document", ns);
    }

    if (max_indices < 0) {
        printf("many: the statistics have no \"indices\" field (n/a): bound not checked\n");
    } else {
        check(max_indices < MANY_MAX_INDICES_STAT, "many: statistics \"indices\" stayed below %d "
              "(at most %ld; \"destinations\" at most %ld)", MANY_MAX_INDICES_STAT, max_indices,
              max_dests);
    }
    if (max_dests < 0)
        printf("many: the statistics have no \"destinations\" field (n/a)\n");
    free(s);
}

/* ------------------------------------------------------------------------- */

typedef struct {
    const char *name;
    void (*fn)(void);
    int hard_s;
} part_t;

static const part_t parts[] = {
    {"gap", part_gap, GAP_HARD_S},
    {"newindices", part_newindices, NEWIDX_HARD_S},
    {"silent", part_silent, SILENT_HARD_S},
    {"many", part_many, MANY_HARD_S},
};
#define NPARTS (sizeof(parts) / sizeof(parts[0]))

/* Runs one part in a child process, killed after its hard bound; adds its
 * totals to ours. */
static void run_part(const part_t *p)
{
    int fds[2], status = 0, got = 0, cp = 0, cf = 0;
    int64_t t0 = mono_ms(), el;
    char buf[64];
    ssize_t n;
    pid_t pid, parent = getpid();
    long i;

    if (pipe(fds) != 0)
        die("pipe: %s", strerror(errno));
    printf("== %s\n", p->name);
    fflush(stdout);
    pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        setpgid(0, 0); /* its own group: a kill reaches the fault proxy too */
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* and it does not outlive us */
        if (getppid() != parent)
            _exit(4);
        close(fds[0]);
        passed = failed = 0;
        p->fn();
        free(seen);
        seen = NULL;
        snprintf(buf, sizeof(buf), "%d %d\n", passed, failed);
        if (write(fds[1], buf, strlen(buf)) < 0)
            _exit(3);
        fflush(stdout);
        _exit(0);
    }
    close(fds[1]);
    for (i = 0; i < (long)p->hard_s * 10; i++) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
            got = 1;
            break;
        }
        sleep_ms(100);
    }
    el = mono_ms() - t0;
    if (!got) {
        kill(-pid, SIGKILL);
        waitpid(pid, &status, 0);
        check(0, "%s: did not finish within %d s: killed", p->name, p->hard_s);
    }
    n = read(fds[0], buf, sizeof(buf) - 1);
    close(fds[0]);
    if (n > 0) {
        buf[n] = '\0';
        if (sscanf(buf, "%d %d", &cp, &cf) == 2) {
            passed += cp;
            failed += cf;
        }
    } else if (got) {
        check(0, "%s: ended (status %d) without its totals", p->name, status);
    }
    printf("== %s: %d passed, %d failed, %.1f s\n", p->name, cp, cf, (double)el / 1000.0);
}

int main(int argc, char **argv)
{
    int want[NPARTS] = {0}, any = 0, a;
    size_t i;

    setvbuf(stdout, NULL, _IOLBF, 0);
    base_url = getenv("ESBULK_IT_CLUSTER") ? getenv("ESBULK_IT_CLUSTER") : "http://127.0.0.1:19200";
    for (a = 1; a < argc; a++) {
        if (strncmp(argv[a], "http://", 7) == 0 || strncmp(argv[a], "https://", 8) == 0) {
            base_url = argv[a];
            continue;
        }
        for (i = 0; i < NPARTS; i++)
            if (strcmp(argv[a], parts[i].name) == 0)
                break;
        if (i == NPARTS) {
            fprintf(stderr, "usage: it_topology [CLUSTER_URL] [gap|newindices|silent|many]...\n");
            return 2;
        }
        want[i] = any = 1;
    }
    must_ok("GET", "/", NULL);
    wait_green();
    for (i = 0; i < NPARTS; i++)
        if (!any || want[i])
            run_part(&parts[i]);
    return finish();
}
