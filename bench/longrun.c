/*
 * longrun - one handle over many documents: what a long-running client
 * costs, round after round.
 *
 * Generates --docs documents of about 200 bytes once, then adds them
 * --rounds times to one handle (ids unique across rounds), flushing after
 * each round. Per round it prints one JSON line: the process CPU per
 * document over the round, and each thread's minor page faults so far
 * (from /proc/self/task: Linux only; {} elsewhere). A thread whose faults
 * grow round after round gives memory back and takes it again: the
 * steady state should fault nothing. Also each thread's CPU per document
 * over the round (Linux: its CPU clock, by thread id), so that the adding
 * thread's share and the I/O thread's can be told apart.
 *
 * The exit status is 1 if a document had no success (against a null sink
 * every one succeeds), 2 for a usage error. For example, against
 * `bench/nullsink --port 19285`:
 *     bench/longrun --url http://127.0.0.1:19285 --set result.failures_only=true
 */
#define _GNU_SOURCE 1
#include "common.h"

#include <dirent.h>
#include <esbulk.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_DOCS 1000000
#define DEFAULT_ROUNDS 5
#define MAX_DOCS 20000000
#define POLL_EVERY 1000

static const char usage[] =
    "usage: longrun --url URL [--docs N] [--rounds R] [--set KEY=VALUE]...\n"
    "  --url URL       the cluster or null sink (bench/nullsink)\n"
    "  --docs N        documents a round (default 1000000)\n"
    "  --rounds R      rounds on the same handle (default 5)\n"
    "  --set KEY=VALUE configuration (repeatable; enqueue.timeout.ms=0 is set first)\n";

typedef struct {
    uint64_t indexed, other;
} counts_t;

static void on_result(esbulk_t *eb, const esbulk_result_t *r, void *opaque)
{
    counts_t *c = opaque;

    (void)eb;
    if (esbulk_result_outcome(r) == ESBULK_OUTCOME_INDEXED)
        c->indexed++;
    else
        c->other++;
}

/* Linux's CPU clock of any thread of the process, by its id (the kernel's
 * MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)). */
static double thread_cpu_s(long tid)
{
    struct timespec ts;
    clockid_t id = (clockid_t)((~(unsigned long)tid << 3) | 6);

    if (clock_gettime(id, &ts) != 0)
        return -1;
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define MAX_THREADS 64
static struct {
    long tid;
    double cpu_s;
} seen_threads[MAX_THREADS];
static size_t nseen_threads;

/* The CPU thread tid used since the last call for it (all of it at the
 * first). */
static double thread_cpu_delta(long tid)
{
    double now = thread_cpu_s(tid), was = 0;
    size_t i;

    if (now < 0)
        return 0;
    for (i = 0; i < nseen_threads && seen_threads[i].tid != tid; i++)
        ;
    if (i < nseen_threads)
        was = seen_threads[i].cpu_s;
    else if (nseen_threads < MAX_THREADS)
        seen_threads[nseen_threads++].tid = tid;
    else
        return 0;
    seen_threads[i].cpu_s = now;
    return now - was;
}

/* Prints "name":faults for every thread of this process, or with ndocs > 0
 * "name":CPU ns a document since the last such call; with ndocs < 0 it
 * prints nothing and only starts every thread's CPU period. */
static void print_thread_faults(int64_t ndocs)
{
    DIR *dir = opendir("/proc/self/task");
    struct dirent *e;
    int first = 1;

    if (ndocs >= 0)
        printf("{");
    while (dir != NULL && (e = readdir(dir)) != NULL) {
        char path[300], buf[1024];
        const char *open_p, *close_p, *q;
        unsigned long minflt;
        size_t n;
        FILE *f;
        int field;

        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "/proc/self/task/%s/stat", e->d_name);
        if ((f = fopen(path, "r")) == NULL)
            continue;
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        /* pid (comm) state ppid pgrp session tty_nr tpgid flags minflt */
        open_p = strchr(buf, '(');
        close_p = strrchr(buf, ')');
        if (open_p == NULL || close_p == NULL || close_p < open_p)
            continue;
        for (q = close_p + 2, field = 3; q != NULL && field < 10; field++) {
            q = strchr(q, ' ');
            if (q != NULL)
                q++;
        }
        if (q == NULL)
            continue;
        minflt = strtoul(q, NULL, 10);
        if (ndocs < 0)
            (void)thread_cpu_delta(strtol(e->d_name, NULL, 10));
        else if (ndocs > 0)
            printf("%s\"%s:%.*s\":%.1f", first ? "" : ",", e->d_name,
                   (int)(close_p - open_p - 1), open_p + 1,
                   thread_cpu_delta(strtol(e->d_name, NULL, 10)) * 1e9 / (double)ndocs);
        else
            printf("%s\"%s:%.*s\":%lu", first ? "" : ",", e->d_name,
                   (int)(close_p - open_p - 1), open_p + 1, minflt);
        first = 0;
    }
    if (dir != NULL)
        closedir(dir);
    if (ndocs >= 0)
        printf("}");
}

int main(int argc, char **argv)
{
    const char *url = NULL, *sets[BENCH_MAX_SETS];
    int64_t ndocs = DEFAULT_DOCS, rounds = DEFAULT_ROUNDS, r;
    size_t nsets = 0, i, body_cap = 256;
    esbulk_conf_t *conf;
    esbulk_t *eb;
    counts_t counts = {0, 0};
    char msg[512], *bodies;
    size_t *lens;
    int a, rc = 0;

    for (a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--url") == 0 && a + 1 < argc) {
            url = argv[++a];
        } else if (strcmp(argv[a], "--docs") == 0 && a + 1 < argc) {
            if (bench_parse_i64(argv[++a], 1, MAX_DOCS, &ndocs) != 0) {
                fprintf(stderr, "longrun: --docs must be 1..%d\n", MAX_DOCS);
                return 2;
            }
        } else if (strcmp(argv[a], "--rounds") == 0 && a + 1 < argc) {
            if (bench_parse_i64(argv[++a], 1, 1000, &rounds) != 0) {
                fprintf(stderr, "longrun: --rounds must be 1..1000\n");
                return 2;
            }
        } else if (strcmp(argv[a], "--set") == 0 && a + 1 < argc) {
            if (nsets == BENCH_MAX_SETS) {
                fprintf(stderr, "longrun: at most %d --set options\n", BENCH_MAX_SETS);
                return 2;
            }
            sets[nsets++] = argv[++a];
        } else if (strcmp(argv[a], "--help") == 0) {
            fputs(usage, stdout);
            return 0;
        } else {
            fputs(usage, stderr);
            return 2;
        }
    }
    if (url == NULL) {
        fputs(usage, stderr);
        return 2;
    }

    bodies = malloc((size_t)ndocs * body_cap);
    lens = malloc((size_t)ndocs * sizeof(*lens));
    if (bodies == NULL || lens == NULL) {
        fprintf(stderr, "longrun: out of memory for %" PRId64 " documents\n", ndocs);
        free(bodies);
        free(lens);
        return 1;
    }
    for (i = 0; i < (size_t)ndocs; i++) {
        int n = snprintf(bodies + i * body_cap, body_cap,
                         "{\"@timestamp\":\"2026-12-05T10:%02zu:%02zuZ\",\"n\":%zu,\"level\":\"%s\","
                         "\"msg\":\"the quick brown fox jumps over the lazy dog, request %zu "
                         "served in %zu ms\",\"host\":\"web-%02zu\"}",
                         (i / 60) % 60, i % 60, i, i % 7 ? "info" : "warn", i * 7919 % 100000,
                         i % 997, i % 40);

        lens[i] = n > 0 && (size_t)n < body_cap ? (size_t)n : 0;
    }

    conf = esbulk_conf_new();
    if (conf == NULL || esbulk_conf_set(conf, "urls", url, msg, sizeof(msg)) != ESBULK_OK ||
        esbulk_conf_set(conf, "enqueue.timeout.ms", "0", msg, sizeof(msg)) != ESBULK_OK) {
        fprintf(stderr, "longrun: %s\n", conf ? msg : "out of memory");
        rc = 1;
        goto out_conf;
    }
    for (i = 0; i < nsets; i++) {
        const char *eq = strchr(sets[i], '=');
        char key[128];

        if (eq == NULL || eq == sets[i] || (size_t)(eq - sets[i]) >= sizeof(key)) {
            fprintf(stderr, "longrun: --set %s: expected KEY=VALUE\n", sets[i]);
            rc = 2;
            goto out_conf;
        }
        memcpy(key, sets[i], (size_t)(eq - sets[i]));
        key[eq - sets[i]] = '\0';
        if (esbulk_conf_set(conf, key, eq + 1, msg, sizeof(msg)) != ESBULK_OK) {
            fprintf(stderr, "longrun: --set %s: %s\n", sets[i], msg);
            rc = 2;
            goto out_conf;
        }
    }
    esbulk_conf_set_result_cb(conf, on_result);
    esbulk_conf_set_opaque(conf, &counts);
    eb = esbulk_new(conf, msg, sizeof(msg));
    esbulk_conf_destroy(conf);
    conf = NULL;
    if (eb == NULL) {
        fprintf(stderr, "longrun: esbulk_new: %s\n", msg);
        rc = 1;
        goto out_conf;
    }

    for (r = 0; r < rounds; r++) {
        double c0, t0;
        char *stats;
        uint64_t indexed;

        print_thread_faults(-1);
        c0 = bench_cpu_s();
        t0 = bench_now_s();
        for (i = 0; i < (size_t)ndocs; i++) {
            char id[24];
            size_t id_len = bench_u64_str(id, (uint64_t)r * (uint64_t)ndocs + i + 1);
            esbulk_err_t err;

            while ((err = esbulk_add(eb, ESBULK_OP_INDEX, "longrun", id, id_len, NULL, 0,
                                     bodies + i * body_cap, lens[i], NULL, msg,
                                     sizeof(msg))) == ESBULK_ERR_QUEUE_FULL)
                esbulk_poll(eb, 10);
            if (err != ESBULK_OK) {
                fprintf(stderr, "longrun: document %zu not added: %s\n", i + 1, msg);
                counts.other++;
            }
            if ((i + 1) % POLL_EVERY == 0)
                esbulk_poll(eb, 0);
        }
        if (esbulk_flush(eb, -1) != ESBULK_OK)
            rc = 1;
        /* with result.failures_only the successes are counted, not served */
        stats = esbulk_stats_json(eb);
        indexed = counts.indexed;
        if (stats != NULL && strstr(stats, "\"indexed\":") != NULL) {
            uint64_t v = strtoull(strstr(stats, "\"indexed\":") + 10, NULL, 10);

            if (v > indexed)
                indexed = v;
        }
        esbulk_free(stats);
        if (r == rounds - 1 && indexed != (uint64_t)rounds * (uint64_t)ndocs)
            rc = 1;
        printf("{\"round\":%" PRId64 ",\"docs\":%" PRId64 ",\"cpu_ns_per_doc\":%.1f,"
               "\"wall_s\":%.3f,\"indexed_so_far\":%" PRIu64 ",\"not_indexed_so_far\":%" PRIu64
               ",\"thread_minor_faults\":",
               r, ndocs, (bench_cpu_s() - c0) * 1e9 / (double)ndocs, bench_now_s() - t0, indexed,
               counts.other);
        print_thread_faults(0);
        printf(",\"thread_cpu_ns_per_doc\":");
        print_thread_faults(ndocs);
        printf("}\n");
        fflush(stdout);
    }
    if (counts.other > 0)
        rc = 1;
    esbulk_destroy(eb);
out_conf:
    esbulk_conf_destroy(conf);
    free(bodies);
    free(lens);
    return rc;
}
