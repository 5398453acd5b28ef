/*
 * esbulk_bench - the libesbulk contender of the benchmark.
 *
 * Reads the whole data file into memory (reading is not timed), makes the
 * handle ready (untimed: one delete of an _id no document has, flushed; the
 * handle then knows the nodes and the index, as the limit program has routed
 * before its clock starts), then times from the first esbulk_add() to the end
 * of esbulk_flush() and prints one JSON line on stdout; "ready_s" is the
 * ready step's wall time (--cold: no ready step, the clock starts at once).
 * Exit status 1 when a document was not indexed (or the run could not
 * start), 2 for a usage error.
 */
#define _GNU_SOURCE 1
#include "common.h"

#include <esbulk.h>

#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: esbulk_bench --url URL --index NAME --file DATA [--ids] [--cold] [--set KEY=VALUE]...\n"
    "\n"
    "Indexes every line of DATA (one JSON document per line) through libesbulk and\n"
    "prints {\"docs\",\"seconds\",\"indexed\",\"failed\",\"possibly\",\"requests\",\"retried\",\n"
    "\"bytes_sent\",\"docs_per_s\",\"cpu_s\",\"ready_s\",\"stats\"} as one JSON line.\n"
    "  --ids             the _id of line k (1-based) is \"k\"; else no _id is given\n"
    "                    (then id.generate decides)\n"
    "  --cold            no untimed ready step (a delete of the _id \"" BENCH_READY_ID "\",\n"
    "                    which no document has): the clock starts before the handle\n"
    "                    has found the nodes and resolved the index\n"
    "  --set KEY=VALUE   any configuration key (esbulk-config(7)), repeatable, applied\n"
    "                    after the defaults enqueue.timeout.ms=0 and log.level=4\n";

static uint64_t stat_u64(json_t *stats, const char *key)
{
    json_t *v = json_object_get(stats, key);

    return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"url", required_argument, NULL, 'u'},  {"index", required_argument, NULL, 'i'},
        {"file", required_argument, NULL, 'f'}, {"ids", no_argument, NULL, 'd'},
        {"set", required_argument, NULL, 's'},  {"help", no_argument, NULL, 'h'},
        {"cold", no_argument, NULL, 'c'},
        {NULL, 0, NULL, 0}};
    const char *sets[BENCH_MAX_SETS];
    bench_engine_opts_t opts;
    bench_engine_result_t res;
    bench_data_t data;
    json_t *stats = NULL;
    char errstr[512];
    const char *file = NULL;
    int c, rc;

    memset(&opts, 0, sizeof(opts));
    opts.sets = sets;
    opts.ready = 1;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'u': opts.url = optarg; break;
        case 'i': opts.index = optarg; break;
        case 'f': file = optarg; break;
        case 'd': opts.ids = 1; break;
        case 'c': opts.ready = 0; break;
        case 's':
            if (opts.nsets == BENCH_MAX_SETS) {
                fprintf(stderr, "esbulk_bench: at most %d --set options\n", BENCH_MAX_SETS);
                return 2;
            }
            sets[opts.nsets++] = optarg;
            break;
        case 'h': fputs(usage, stdout); return 0;
        default: fputs(usage, stderr); return 2;
        }
    }
    if (optind != argc || opts.url == NULL || opts.index == NULL || file == NULL) {
        fputs(usage, stderr);
        return 2;
    }
    if (bench_data_load(file, &data, errstr, sizeof(errstr)) != 0) {
        fprintf(stderr, "esbulk_bench: %s\n", errstr);
        return 1;
    }
    opts.lines = data.lines;
    opts.n = data.n;
    if (bench_engine_run(&opts, &res, errstr, sizeof(errstr)) != 0) {
        fprintf(stderr, "esbulk_bench: %s\n", errstr);
        bench_data_free(&data);
        return 1;
    }
    if (res.stats != NULL)
        stats = json_loads(res.stats, 0, NULL);
    printf("{\"docs\":%" PRIu64 ",\"seconds\":%.6f,\"indexed\":%" PRIu64 ",\"failed\":%" PRIu64
           ",\"possibly\":%" PRIu64 ",\"not_added\":%" PRIu64 ",\"requests\":%" PRIu64
           ",\"retried\":%" PRIu64 ",\"bytes_sent\":%" PRIu64 ",\"docs_per_s\":%.1f"
           ",\"cpu_s\":%.6f,\"sys_s\":%.6f,\"queue_full\":%" PRIu64 ",\"ready_s\":%.6f"
           ",\"stats\":%s}\n",
           res.docs, res.wall_s, res.indexed, res.failed, res.possibly, res.add_errors,
           stat_u64(stats, "requests") - res.warm_requests, stat_u64(stats, "retried"),
           stat_u64(stats, "bytes_sent"), res.wall_s > 0 ? (double)res.docs / res.wall_s : 0.0,
           res.cpu_s, res.sys_s, res.queue_full, res.ready_s,
           res.stats != NULL ? res.stats : "null");
    fflush(stdout);
    rc = res.indexed == res.docs && !res.flush_timed_out ? 0 : 1;
    if (rc != 0)
        fprintf(stderr, "esbulk_bench: %" PRIu64 " of %" PRIu64 " documents not indexed\n",
                res.docs - res.indexed, res.docs);
    json_decref(stats);
    esbulk_free(res.stats);
    bench_data_free(&data);
    return rc;
}
