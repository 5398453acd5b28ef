/* Shared by the benchmark programs: the data file, clocks, number parsing,
 * and the add/flush loop over libesbulk's public API (esbulk_bench and
 * micro run the same loop). */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* Largest data file read into memory. */
#define BENCH_MAX_FILE_BYTES ((size_t)16 << 30)
/* --set KEY=VALUE options accepted. */
#define BENCH_MAX_SETS 64

/* One document body: a line of the data file, without its line end. */
typedef struct {
    const char *p;
    size_t len;
} bench_line_t;

/* A data file in memory: one document body per non-blank line. */
typedef struct {
    char *data;
    size_t size;
    int mapped; /* data is the file mapped (munmap), else malloc'd */
    bench_line_t *lines;
    size_t n;
} bench_data_t;

/* Reads path into d (the whole file, mapped or read, then an index of its
 * lines; CR before LF and blank lines are dropped). 0 on success, -1 with a message. */
int bench_data_load(const char *path, bench_data_t *d, char *errstr, size_t errstr_size);
void bench_data_free(bench_data_t *d);

/* Monotonic wall clock, process CPU time (all threads: user + system, from
 * getrusage), in seconds. */
double bench_now_s(void);
double bench_cpu_s(void);
/* Kernel (system) CPU seconds of this process so far. */
double bench_sys_s(void);
/* The process's minor page faults so far (0 if unknown). */
uint64_t bench_minor_faults(void);
/* perf record's control FIFO, from the environment (common.c) */
void bench_perf_ctl(const char *cmd);

/* Parses a decimal integer in [min, max]. 0 on success, -1 otherwise. */
int bench_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out);

/* Writes v in decimal to out (at least 21 bytes), NUL-terminated; returns
 * the length. */
size_t bench_u64_str(char *out, uint64_t v);

/* The engine run shared by esbulk_bench and micro. */
typedef struct {
    const char *url;
    const char *index;
    const bench_line_t *lines;
    size_t n;
    int ids;                  /* _id of document k (1-based) is "k" */
    const bench_line_t *id_lines; /* with ids: those ids already written (n of them), as
                                     the no-network part of micro takes them; NULL: each
                                     written as it is added (the contenders of the
                                     cluster benchmark all do that) */
    const char *const *sets;  /* "KEY=VALUE", applied after the defaults */
    size_t nsets;
    int warm;                 /* add and flush every document once, untimed, on the same
                                 handle first (the counts are the timed run's) */
    int ready;                /* before the clock starts, untimed: a delete of an _id no
                                 document has (BENCH_READY_ID), flushed, so that the
                                 handle has found the nodes and resolved the index, as
                                 the limit program routes before its clock starts */
} bench_engine_opts_t;

/* The _id of the ready step's delete: the data's ids are "1".."n". The
 * server answers 404 not_found and keeps no document. */
#define BENCH_READY_ID "esbulk-bench-ready"

typedef struct {
    uint64_t docs;            /* documents offered */
    uint64_t added;           /* accepted by esbulk_add */
    uint64_t add_errors;      /* refused by esbulk_add (no result comes) */
    uint64_t indexed, failed, possibly;
    uint64_t queue_full;      /* QUEUE_FULL answers waited out with esbulk_poll */
    int flush_timed_out;
    double wall_s;            /* first add to the end of esbulk_flush */
    double cpu_s;             /* process CPU over the same span */
    double sys_s;             /* of it, in the kernel (on loopback that includes the
                                 receiving side's TCP work, done in the sender's context) */
    uint64_t minor_faults;    /* pages the kernel mapped in over the same span (memory
                                 touched for the first time, or again after a free gave
                                 it back) */
    uint64_t warm_requests;   /* with warm or ready: the requests of the untimed part,
                                 which stats counts too */
    double ready_s;           /* with ready: the ready step's wall time (the handle's
                                 discovery, the index's resolution, one request) */
    char *stats;              /* esbulk_stats_json() after the flush; esbulk_free() it */
} bench_engine_result_t;

/* Creates a handle (urls, enqueue.timeout.ms=0, log.level=4, then sets),
 * adds every document, flushes, takes the statistics and destroys the
 * handle. 0 when the run took place (look at the counts), -1 with a
 * message when it could not start. */
int bench_engine_run(const bench_engine_opts_t *opts, bench_engine_result_t *res,
                     char *errstr, size_t errstr_size);

#endif
