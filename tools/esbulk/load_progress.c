/* esbulk load's progress: the progress line on standard error (a terminal),
 * the elapsed time, and the per-node statistics table of --stats. */
#define _XOPEN_SOURCE 700
#include "load.h"

#include <inttypes.h>
#include <string.h>
#include <unistd.h>

int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

double elapsed_s(const load_t *L)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)(ts.tv_sec - L->t0.tv_sec) + (double)(ts.tv_nsec - L->t0.tv_nsec) / 1e9;
}

/* ------------------------------------------------------------------------- */
/* Progress */

void clear_progress(load_t *L)
{
    if (L->progress_shown) {
        fputs("\r\033[K", stderr);
        L->progress_shown = 0;
    }
}

static void fmt_eta(char *out, size_t size, double s)
{
    long t = (long)(s + 0.5);

    if (t >= 3600)
        snprintf(out, size, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(out, size, "%ld:%02ld", t / 60, t % 60);
}

void show_progress(load_t *L, int force)
{
    int64_t now;
    double el, rate, mbs;
    uint64_t done;
    char eta[32];

    if (!L->progress)
        return;
    now = now_ns();
    if (!force && now - L->last_progress_ns < PROGRESS_NS)
        return;
    L->last_progress_ns = now;
    flockfile(stderr); /* one piece: on_log writes from other threads */
    el = elapsed_s(L);
    /* Lines read move from the start; results come only after the first
     * flush (up to flush.interval.ms later, plus the request). */
    done = L->indexed + L->failed + L->possibly;
    rate = el > 0 ? (double)done / el : 0;
    mbs = el > 0 ? (double)L->bytes_done / el / 1e6 : 0;
    fprintf(stderr, "\r%" PRIu64 " lines read", L->lines_read);
    if (L->total_bytes > 0)
        fprintf(stderr, " (%.1f%%)", L->bytes_read >= L->total_bytes ? 100.0
                : (double)L->bytes_read * 100 / (double)L->total_bytes);
    fprintf(stderr, "  %" PRIu64 " results  %.0f docs/s  %.1f MB/s", done, rate, mbs);
    if (L->failed + L->possibly > 0)
        fprintf(stderr, "  %" PRIu64 " failed", L->failed + L->possibly);
    if (L->total_bytes > 0) {
        double frac = (double)L->bytes_done / (double)L->total_bytes;

        if (frac > 1)
            frac = 1;
        if (frac > 0.001 && frac < 1) {
            fmt_eta(eta, sizeof(eta), el * (1 - frac) / frac);
            fprintf(stderr, "  ETA %s", eta);
        }
    }
    fputs("\033[K", stderr);
    funlockfile(stderr);
    L->progress_shown = 1;
}

int64_t jint(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

/* 1234567 -> "1.2 MB" */
static void print_latency(json_t *lat, const char *key)
{
    json_t *v = json_object_get(lat, key);

    if (json_is_integer(v))
        fprintf(stderr, " %7" JSON_INTEGER_FORMAT, json_integer_value(v));
    else
        fprintf(stderr, " %7s", "-");
}

void print_node_stats(json_t *stats)
{
    json_t *nodes = json_object_get(stats, "nodes"), *node;
    size_t i;

    fprintf(stderr, "%-24s %9s %7s %7s %7s %7s\n", "NODE", "REQUESTS", "ERRORS", "P50 ms",
            "P95 ms", "P99 ms");
    json_array_foreach(nodes, i, node) {
        json_t *name = json_object_get(node, "name"), *url = json_object_get(node, "url");
        json_t *lat = json_object_get(node, "latency_ms");

        fprintf(stderr, "%-24s %9" PRId64 " %7" PRId64,
                json_is_string(name) ? json_string_value(name)
                                     : json_is_string(url) ? json_string_value(url) : "-",
                jint(node, "requests"), jint(node, "errors"));
        print_latency(lat, "p50");
        print_latency(lat, "p95");
        print_latency(lat, "p99");
        fputc('\n', stderr);
    }
    if (json_array_size(nodes) == 0)
        fprintf(stderr, "(no node statistics)\n");
}

