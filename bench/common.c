/* Shared code of the benchmark programs (see common.h). */
#define _GNU_SOURCE 1
#include "common.h"

#include <esbulk.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Results shown in detail on stderr; the rest are only counted. */
#define SHOWN_FAILURES 10
/* Adds between two esbulk_poll(eb, 0). */
#define POLL_EVERY 1000

/* ------------------------------------------------------------------------- */
/* The data file */

/* Reads the whole file: mapped when it can be (no copy; the pages are read
 * in at once), else read into memory. */
static int data_read(int fd, const char *path, bench_data_t *d, char *errstr, size_t errstr_size)
{
    size_t got = 0;

    if (d->size == 0)
        return 0;
    d->data = mmap(NULL, d->size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (d->data != MAP_FAILED) {
        d->mapped = 1;
        return 0;
    }
    d->data = malloc(d->size);
    if (d->data == NULL) {
        snprintf(errstr, errstr_size, "%s: out of memory for %zu bytes", path, d->size);
        return -1;
    }
    while (got < d->size) {
        ssize_t r = read(fd, d->data + got, d->size - got);

        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            snprintf(errstr, errstr_size, "%s: %s", path, r < 0 ? strerror(errno)
                                                                : "file shrank while read");
            return -1;
        }
        got += (size_t)r;
    }
    return 0;
}

/* The next line end at or after p, or end. */
static const char *line_end(const char *p, const char *end)
{
    const char *nl = memchr(p, '\n', (size_t)(end - p));

    return nl != NULL ? nl : end;
}

int bench_data_load(const char *path, bench_data_t *d, char *errstr, size_t errstr_size)
{
    struct stat st;
    const char *p, *end;
    size_t n = 0;
    int fd;

    memset(d, 0, sizeof(*d));
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(errstr, errstr_size, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(errstr, errstr_size, "%s: not a regular file", path);
        goto fail;
    }
    if ((uint64_t)st.st_size > BENCH_MAX_FILE_BYTES) {
        snprintf(errstr, errstr_size, "%s: larger than %zu bytes", path, BENCH_MAX_FILE_BYTES);
        goto fail;
    }
    d->size = (size_t)st.st_size;
    if (data_read(fd, path, d, errstr, errstr_size) != 0)
        goto fail;
    close(fd);
    fd = -1;
    /* memchr, not a loop over every byte: that loop cost ~0.4 s of CPU per
     * million documents, and the copy of read() ~0.2 s, counted in the
     * client CPU of every C contender */
    end = d->data + d->size;
    for (p = d->data; p < end; p = line_end(p, end) + 1)
        n++;
    d->lines = malloc(sizeof(*d->lines) * (n ? n : 1));
    if (d->lines == NULL) {
        snprintf(errstr, errstr_size, "%s: out of memory for %zu lines", path, n);
        goto fail;
    }
    for (p = d->data; p < end;) {
        const char *nl = line_end(p, end);
        size_t len = (size_t)(nl - p);

        if (len > 0 && p[len - 1] == '\r')
            len--;
        while (len > 0 && (*p == ' ' || *p == '\t')) {
            p++;
            len--;
        }
        if (len > 0) {
            d->lines[d->n].p = p;
            d->lines[d->n].len = len;
            d->n++;
        }
        p = nl + 1;
    }
    return 0;
fail:
    if (fd >= 0)
        close(fd);
    bench_data_free(d);
    return -1;
}

void bench_data_free(bench_data_t *d)
{
    if (d->mapped)
        munmap(d->data, d->size);
    else
        free(d->data);
    free(d->lines);
    memset(d, 0, sizeof(*d));
}

/* ------------------------------------------------------------------------- */
/* Small utilities */

double bench_now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* user + system (all) or system alone, from getrusage; 0 if it fails */
static double rusage_s(int sys_only)
{
    struct rusage ru;
    double sys;

    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    return sys_only ? sys : sys + (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
}

double bench_cpu_s(void)
{
    return rusage_s(0);
}

double bench_sys_s(void)
{
    return rusage_s(1);
}

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define BENCH_CALLGRIND 1
#endif
#endif

/* With BENCH_PERF_CTL naming perf record's control FIFO (perf record
 * --control=fifo:CTL[,ACK] --delay=-1), the timed part alone is recorded:
 * "enable" before it, "disable" after, each waiting for perf's ack when
 * BENCH_PERF_ACK names its FIFO. Nothing without them. Under valgrind
 * --tool=callgrind --instr-atstart=no, the same part alone is counted. */
void bench_perf_ctl(const char *cmd)
{
    const char *ctl = getenv("BENCH_PERF_CTL"), *ack = getenv("BENCH_PERF_ACK");
    char buf[16];
    FILE *f;

#if BENCH_CALLGRIND
    /* under callgrind --instr-atstart=no, the same part alone, every thread */
    if (strcmp(cmd, "enable") == 0)
        CALLGRIND_START_INSTRUMENTATION;
    else
        CALLGRIND_STOP_INSTRUMENTATION;
#endif
    if (ctl == NULL || ctl[0] == '\0')
        return;
    if ((f = fopen(ctl, "w")) == NULL)
        return;
    fprintf(f, "%s\n", cmd);
    fclose(f);
    if (ack != NULL && ack[0] != '\0' && (f = fopen(ack, "r")) != NULL) {
        if (fgets(buf, sizeof(buf), f) == NULL)
            buf[0] = '\0';
        fclose(f);
    }
}

uint64_t bench_minor_faults(void)
{
    struct rusage ru;

    return getrusage(RUSAGE_SELF, &ru) == 0 && ru.ru_minflt > 0 ? (uint64_t)ru.ru_minflt : 0;
}

int bench_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out)
{
    char *end;
    long long v;

    if (s == NULL || *s == '\0')
        return -1;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max)
        return -1;
    *out = (int64_t)v;
    return 0;
}

size_t bench_u64_str(char *out, uint64_t v)
{
    /* two digits per division: the ids are the harness's work, not the
     * library's, and every contender's CPU counts them */
    static const char pairs[201] = "00010203040506070809101112131415161718192021222324"
                                   "25262728293031323334353637383940414243444546474849"
                                   "50515253545556575859606162636465666768697071727374"
                                   "75767778798081828384858687888990919293949596979899";
    char tmp[24];
    char *p = tmp + sizeof(tmp);
    size_t n;

    while (v >= 100) {
        unsigned k = (unsigned)(v % 100) * 2;

        v /= 100;
        *--p = pairs[k + 1];
        *--p = pairs[k];
    }
    if (v >= 10) {
        *--p = pairs[v * 2 + 1];
        *--p = pairs[v * 2];
    } else {
        *--p = (char)('0' + v);
    }
    n = (size_t)(tmp + sizeof(tmp) - p);
    memcpy(out, p, n);
    out[n] = '\0';
    return n;
}

/* ------------------------------------------------------------------------- */
/* The engine run */

typedef struct {
    bench_engine_result_t *res;
    int shown;
} counts_t;

static void on_log(int32_t level, const char *facility, const char *message, void *opaque)
{
    (void)opaque;
    fprintf(stderr, "esbulk: [%d] %s: %s\n", (int)level, facility, message);
}

static void on_result(esbulk_t *eb, const esbulk_result_t *r, void *opaque)
{
    counts_t *c = opaque;
    esbulk_outcome_t o = esbulk_result_outcome(r);

    (void)eb;
    if (o == ESBULK_OUTCOME_INDEXED) {
        c->res->indexed++;
        return;
    }
    if (o == ESBULK_OUTCOME_FAILED)
        c->res->failed++;
    else
        c->res->possibly++;
    if (c->shown++ < SHOWN_FAILURES) {
        const char *id = esbulk_result_id(r), *type = esbulk_result_error_type(r),
                   *reason = esbulk_result_error_reason(r);
        fprintf(stderr, "document %s: %s, status %d, %s: %s\n", id ? id : "(no id)",
                o == ESBULK_OUTCOME_FAILED ? "failed" : "possibly indexed",
                (int)esbulk_result_status(r), type ? type : esbulk_err2str(esbulk_result_err(r)),
                reason ? reason : "");
    }
}

/* Sets KEY=VALUE on conf. */
static int conf_set_kv(esbulk_conf_t *conf, const char *kv, char *errstr, size_t errstr_size)
{
    const char *eq = strchr(kv, '=');
    char key[128], msg[256];

    if (eq == NULL || eq == kv || (size_t)(eq - kv) >= sizeof(key)) {
        snprintf(errstr, errstr_size, "--set %s: expected KEY=VALUE", kv);
        return -1;
    }
    memcpy(key, kv, (size_t)(eq - kv));
    key[eq - kv] = '\0';
    if (esbulk_conf_set(conf, key, eq + 1, msg, sizeof(msg)) != ESBULK_OK) {
        snprintf(errstr, errstr_size, "--set %s: %s", kv, msg);
        return -1;
    }
    return 0;
}

/* A count of the handle's statistics so far (0 if unknown). */
static uint64_t stat_count(esbulk_t *eb, const char *key)
{
    char *st = esbulk_stats_json(eb);
    json_t *root = st ? json_loads(st, 0, NULL) : NULL;
    json_t *v = json_object_get(root, key);
    uint64_t n = json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v)
                                                                 : 0;

    json_decref(root);
    esbulk_free(st);
    return n;
}

/* Adds every document, meeting QUEUE_FULL with a short esbulk_poll. */
static void add_all(esbulk_t *eb, const bench_engine_opts_t *opts, bench_engine_result_t *res,
                    int *shown_add)
{
    char msg[512];
    size_t i;

    for (i = 0; i < opts->n; i++) {
        char buf[24];
        const char *id = NULL;
        size_t id_len = 0;
        esbulk_err_t err;

        if (opts->ids && opts->id_lines != NULL) {
            id = opts->id_lines[i].p;
            id_len = opts->id_lines[i].len;
        } else if (opts->ids) {
            id_len = bench_u64_str(buf, (uint64_t)i + 1);
            id = buf;
        }
        for (;;) {
            err = esbulk_add(eb, ESBULK_OP_INDEX, opts->index, id, id_len,
                             NULL, 0, opts->lines[i].p, opts->lines[i].len, NULL, msg,
                             sizeof(msg));
            if (err != ESBULK_ERR_QUEUE_FULL)
                break;
            res->queue_full++;
            esbulk_poll(eb, 10);
        }
        if (err == ESBULK_OK) {
            res->added++;
        } else {
            res->add_errors++;
            if ((*shown_add)++ < SHOWN_FAILURES)
                fprintf(stderr, "document %zu not added: %s: %s\n", i + 1, esbulk_err2str(err),
                        msg);
        }
        if ((i + 1) % POLL_EVERY == 0)
            esbulk_poll(eb, 0);
    }
}

/* The end of an untimed part (warm, ready): flushed, its requests and
 * successes noted (the statistics count them too), the counts zeroed for
 * the timed part. */
static void untimed_end(esbulk_t *eb, bench_engine_result_t *res, uint64_t *indexed_before)
{
    if (esbulk_flush(eb, -1) != ESBULK_OK)
        res->flush_timed_out = 1;
    res->warm_requests = stat_count(eb, "requests");
    *indexed_before = stat_count(eb, "indexed");
    res->added = res->indexed = res->failed = res->possibly = res->queue_full = 0;
}

int bench_engine_run(const bench_engine_opts_t *opts, bench_engine_result_t *res,
                     char *errstr, size_t errstr_size)
{
    /* enqueue.timeout.ms=0: a document counts against buffer.max.docs until
     * its result is served, and only esbulk_poll on this thread serves it, so
     * an add that blocks could wait forever; QUEUE_FULL is met with a short
     * esbulk_poll instead (as `esbulk load` does). */
    static const char *const defaults[] = {"enqueue.timeout.ms=0", "log.level=4"};
    esbulk_conf_t *conf;
    esbulk_t *eb;
    counts_t counts;
    char msg[512];
    double t0, c0, s0;
    uint64_t f0, warm_indexed = 0;
    size_t i;
    int shown_add = 0, failures_only = 0;

    memset(res, 0, sizeof(*res));
    memset(&counts, 0, sizeof(counts));
    counts.res = res;
    res->docs = opts->n;
    conf = esbulk_conf_new();
    if (conf == NULL) {
        snprintf(errstr, errstr_size, "out of memory");
        return -1;
    }
    if (esbulk_conf_set(conf, "urls", opts->url, msg, sizeof(msg)) != ESBULK_OK) {
        snprintf(errstr, errstr_size, "--url %s: %s", opts->url, msg);
        esbulk_conf_destroy(conf);
        return -1;
    }
    for (i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
        if (conf_set_kv(conf, defaults[i], errstr, errstr_size) != 0)
            goto fail_conf;
    for (i = 0; i < opts->nsets; i++)
        if (conf_set_kv(conf, opts->sets[i], errstr, errstr_size) != 0)
            goto fail_conf;
    if (esbulk_conf_get(conf, "result.failures_only", msg, sizeof(msg), NULL) == ESBULK_OK)
        failures_only = !strcmp(msg, "true") || !strcmp(msg, "1") || !strcmp(msg, "yes");
    esbulk_conf_set_log_cb(conf, on_log);
    esbulk_conf_set_result_cb(conf, on_result);
    esbulk_conf_set_opaque(conf, &counts);
    eb = esbulk_new(conf, msg, sizeof(msg));
    esbulk_conf_destroy(conf);
    if (eb == NULL) {
        snprintf(errstr, errstr_size, "esbulk_new: %s", msg);
        return -1;
    }

    if (opts->warm) {
        /* the same documents once, untimed: what the handle allocates and
         * the kernel faults in is then in place, as in a long run */
        add_all(eb, opts, res, &shown_add);
        untimed_end(eb, res, &warm_indexed);
    }
    if (opts->ready) {
        double r0 = bench_now_s();

        if (esbulk_add(eb, ESBULK_OP_DELETE, opts->index, BENCH_READY_ID,
                       sizeof(BENCH_READY_ID) - 1, NULL, 0, NULL, 0, NULL, msg,
                       sizeof(msg)) != ESBULK_OK) {
            snprintf(errstr, errstr_size, "the ready step's delete: %s", msg);
            esbulk_destroy(eb);
            return -1;
        }
        untimed_end(eb, res, &warm_indexed);
        res->ready_s = bench_now_s() - r0;
    }
    t0 = bench_now_s();
    c0 = bench_cpu_s();
    s0 = bench_sys_s();
    f0 = bench_minor_faults();
    bench_perf_ctl("enable");
    add_all(eb, opts, res, &shown_add);
    if (esbulk_flush(eb, -1) != ESBULK_OK)
        res->flush_timed_out = 1;
    bench_perf_ctl("disable");
    res->wall_s = bench_now_s() - t0;
    res->cpu_s = bench_cpu_s() - c0;
    res->sys_s = bench_sys_s() - s0;
    res->minor_faults = bench_minor_faults() - f0;
    res->stats = esbulk_stats_json(eb);
    if (failures_only && res->stats != NULL) {
        /* result.failures_only: successes are counted by the library, not
         * served; take its count of them */
        json_t *st = json_loads(res->stats, 0, NULL);
        json_t *v = json_object_get(st, "indexed");

        if (json_is_integer(v) && json_integer_value(v) >= 0 &&
            (uint64_t)json_integer_value(v) >= warm_indexed)
            res->indexed = (uint64_t)json_integer_value(v) - warm_indexed;
        json_decref(st);
    }
    esbulk_destroy(eb);
    return 0;
fail_conf:
    esbulk_conf_destroy(conf);
    return -1;
}
