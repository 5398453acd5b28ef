/*
 * micro - the client-only micro-benchmark.
 *
 * (a) No network: what libesbulk does per document before any I/O, with its
 *     own internal functions over N pre-generated ~200-byte documents with
 *     decimal ids: check the strings (UTF-8, no NUL), route (Murmur3 over
 *     the id's UTF-16 + the 6-shard layout + the primary table), write the
 *     action and body lines and append them to the node's batch buffer (a
 *     batch is "sent" - reset - every flush.docs documents). Measured in
 *     process CPU time and wall time; parts of it are measured alone, and
 *     once more with the per-document copies the engine makes (document
 *     record with its index and id, lines in one more allocation). Best of
 *     3 passes.
 * (b) The full public path, esbulk_add -> esbulk_flush, against the null
 *     sink (bench/nullsink, started here on a free port in 19280-19289
 *     unless --sink is given): documents per second and client CPU (user +
 *     system of this process, every thread) per document, over the same
 *     documents and the same ids, written before either part (as the
 *     no-network part takes them, so that neither side of the ratio pays
 *     for writing them). Best of 3
 *     passes, a new handle each (every pass's CPU is printed too). A new
 *     handle's pass includes the kernel faulting in its buffer, once; with
 *     --warm, the passes again on handles that took the documents once
 *     first, untimed, as the no-network part has its warm-up pass.
 *
 * Prints one JSON line on stdout.
 */
#define _GNU_SOURCE 1
#include "common.h"

#include "buf.h"
#include "murmur3.h"
#include "ndjson.h"
#include "route.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_DOCS 1000000
#define MAX_DOCS 20000000
#define SHARDS 6
#define ROUTING_SHARDS 768
#define NODES 3
#define FLUSH_DOCS 5000 /* libesbulk's default flush.docs */
#define SINK_PORT_FIRST 19280
#define SINK_PORT_LAST 19289
#define SINK_START_MS 5000
#define INDEX "bench-micro"
#define REPEATS 3

/* ------------------------------------------------------------------------- */
/* Documents */

typedef struct {
    char *arena;          /* bodies, then ids */
    bench_line_t *bodies;
    bench_line_t *ids;
    size_t n;
    size_t body_bytes;
} docs_t;

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* N log-like documents of about 200 bytes, ids "1".."N". */
static int docs_make(docs_t *d, size_t n)
{
    static const char *const words[] = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta",
                                        "eta", "theta", "iota", "kappa", "lambda", "sigma"};
    static const char *const levels[] = {"info", "warn", "error", "debug"};
    const size_t per_doc = 320, per_id = 21;
    uint64_t s = 0x9e3779b97f4a7c15ull;
    size_t i, off = 0;

    memset(d, 0, sizeof(d[0]));
    if (n > SIZE_MAX / (per_doc + per_id + 2 * sizeof(bench_line_t)))
        return -1;
    d->arena = malloc(n * (per_doc + per_id));
    d->bodies = malloc(n * sizeof(*d->bodies));
    d->ids = malloc(n * sizeof(*d->ids));
    if (d->arena == NULL || d->bodies == NULL || d->ids == NULL)
        return -1;
    for (i = 0; i < n; i++) {
        char msg[128];
        size_t ml = 0;
        int w, len;

        for (w = 0; w < 6; w++) {
            const char *word = words[rng_next(&s) % (sizeof(words) / sizeof(words[0]))];
            ml += (size_t)snprintf(msg + ml, sizeof(msg) - ml, "%s%s", w ? " " : "", word);
        }
        len = snprintf(d->arena + off, per_doc,
                       "{\"ts\":\"2024-05-%02uT%02u:%02u:%02u.%03uZ\",\"host\":\"web-%02u\","
                       "\"level\":\"%s\",\"user\":\"user-%05u\",\"latency_ms\":%u,"
                       "\"path\":\"/api/v1/items/%u\",\"status\":200,\"bytes\":%u,"
                       "\"msg\":\"%s\"}",
                       (unsigned)(1 + i % 28), (unsigned)(i % 24), (unsigned)(i % 60),
                       (unsigned)(i * 7 % 60), (unsigned)(i % 1000), (unsigned)(i % 17),
                       levels[rng_next(&s) % 4], (unsigned)(rng_next(&s) % 100000),
                       (unsigned)(rng_next(&s) % 2000), (unsigned)(rng_next(&s) % 1000000),
                       (unsigned)(rng_next(&s) % 65536), msg);
        if (len < 0 || (size_t)len >= per_doc)
            return -1;
        d->bodies[i].p = d->arena + off;
        d->bodies[i].len = (size_t)len;
        d->body_bytes += (size_t)len;
        off += (size_t)len;
    }
    for (i = 0; i < n; i++) {
        d->ids[i].p = d->arena + off;
        d->ids[i].len = bench_u64_str(d->arena + off, (uint64_t)i + 1);
        off += d->ids[i].len;
    }
    d->n = n;
    return 0;
}

static void docs_free(docs_t *d)
{
    free(d->arena);
    free(d->bodies);
    free(d->ids);
    memset(d, 0, sizeof(d[0]));
}

/* ------------------------------------------------------------------------- */
/* (a) no network */

typedef struct {
    esbulk_layout_t layout;
    int32_t primary[SHARDS];  /* node of each shard's primary */
    esbulk__buf_t batch[NODES];
    size_t batch_docs[NODES];
    uint64_t sent_bytes;      /* what "sending" the batches would have sent */
    uint64_t checksum;        /* keeps the compiler from dropping work */
} pipe_t;

typedef enum { WORK_ROUTE, WORK_BUILD, WORK_ALL, WORK_ALL_COPIES } work_t;

static double cpu_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Appends doc i's lines to batch b, "sending" it when full. */
static esbulk_err_t append(pipe_t *p, int b, const docs_t *d, size_t i)
{
    char errstr[128];
    esbulk_err_t err;

    err = esbulk__action_line(&p->batch[b], ESBULK_OP_INDEX, INDEX, sizeof(INDEX) - 1,
                              d->ids[i].p, d->ids[i].len, NULL, 0);
    if (err == ESBULK_OK)
        err = esbulk__body_line(&p->batch[b], d->bodies[i].p, d->bodies[i].len, 0, errstr,
                                sizeof(errstr));
    if (err != ESBULK_OK)
        return err;
    if (++p->batch_docs[b] == FLUSH_DOCS) {
        p->sent_bytes += p->batch[b].len;
        esbulk__buf_reset(&p->batch[b]);
        p->batch_docs[b] = 0;
    }
    return ESBULK_OK;
}

/* The engine's doc_build copies: one allocation for the document record
 * with its index and id, one for the action + body lines (sized once); then
 * (send_batch) the lines are copied into the request body. */
static esbulk_err_t append_with_copies(pipe_t *p, int b, const docs_t *d, size_t i)
{
    struct doc_s {
        void *next;
        char *index, *id, *lines;
        size_t id_len, lines_len;
        int64_t fields[16];
    } *doc;
    size_t index_len = sizeof(INDEX) - 1, id_len = d->ids[i].len;
    char errstr[128];
    esbulk__buf_t lines;
    esbulk_err_t err = ESBULK_ERR_NOMEM;

    esbulk__buf_init(&lines, (size_t)-1);
    doc = calloc(1, sizeof(*doc) + index_len + 1 + id_len + 1);
    if (doc == NULL)
        goto out;
    doc->index = memcpy((char *)(doc + 1), INDEX, index_len);
    doc->id = memcpy((char *)(doc + 1) + index_len + 1, d->ids[i].p, id_len);
    err = esbulk__buf_reserve(&lines, 48 + index_len + id_len + d->bodies[i].len + 1);
    if (err == ESBULK_OK)
        err = esbulk__action_line(&lines, ESBULK_OP_INDEX, INDEX, index_len, doc->id, id_len,
                                  NULL, 0);
    if (err == ESBULK_OK)
        err = esbulk__body_line(&lines, d->bodies[i].p, d->bodies[i].len, 0, errstr,
                                sizeof(errstr));
    if (err == ESBULK_OK)
        err = esbulk__buf_add(&p->batch[b], lines.data, lines.len);
    if (err != ESBULK_OK)
        goto out;
    if (++p->batch_docs[b] == FLUSH_DOCS) {
        p->sent_bytes += p->batch[b].len;
        esbulk__buf_reset(&p->batch[b]);
        p->batch_docs[b] = 0;
    }
out:
    free(doc);
    esbulk__buf_free(&lines);
    return err;
}

/* Runs one kind of work over every document; *cpu_ns / *wall_ns per doc. */
static int run_work(pipe_t *p, const docs_t *d, work_t w, double *cpu_ns, double *wall_ns)
{
    double c0 = cpu_now(), t0 = bench_now_s();
    size_t i;

    for (i = 0; i < d->n; i++) {
        const char *id = d->ids[i].p;
        size_t id_len = d->ids[i].len;
        int32_t shard = 0;
        int b = 0;

        if (w != WORK_ROUTE) {
            /* esbulk_add's argument checks */
            if (!esbulk__utf8_valid(INDEX, sizeof(INDEX) - 1) ||
                !esbulk__utf8_valid(id, id_len) || memchr(id, 0, id_len) != NULL)
                return -1;
        }
        if (w != WORK_BUILD) {
            if (esbulk_layout_shard(&p->layout, id, id_len, NULL, 0, &shard) != ESBULK_OK)
                return -1;
            b = p->primary[shard];
        }
        p->checksum += (uint64_t)shard;
        if (w == WORK_ROUTE)
            continue;
        if ((w == WORK_ALL_COPIES ? append_with_copies(p, b, d, i) : append(p, b, d, i)) !=
            ESBULK_OK)
            return -1;
    }
    *cpu_ns = (cpu_now() - c0) * 1e9 / (double)d->n;
    *wall_ns = (bench_now_s() - t0) * 1e9 / (double)d->n;
    return 0;
}

/* ------------------------------------------------------------------------- */
/* The null sink child */

/* Starts path on a free port of 19280-19289; its URL into url. -1 if none
 * could start. */
static pid_t sink_start(const char *path, int nodes, char *url, size_t url_size)
{
    char nodestr[16];
    int port;

    snprintf(nodestr, sizeof(nodestr), "%d", nodes);

    for (port = SINK_PORT_FIRST; port <= SINK_PORT_LAST; port++) {
        char portstr[16], line[256];
        struct pollfd pfd;
        size_t got = 0;
        int fds[2], status;
        pid_t pid;
        double until;

        if (pipe2(fds, O_CLOEXEC) != 0)
            return -1;
        snprintf(portstr, sizeof(portstr), "%d", port);
        pid = fork();
        if (pid < 0) {
            close(fds[0]);
            close(fds[1]);
            return -1;
        }
        if (pid == 0) {
            /* the child: its ready line goes to the pipe; it dies with us */
            prctl(PR_SET_PDEATHSIG, SIGTERM);
            if (dup2(fds[1], STDOUT_FILENO) < 0)
                _exit(127);
            execl(path, path, "--port", portstr, "--nodes", nodestr, "--max-seconds", "600",
                  "--quiet", (char *)NULL);
            _exit(127);
        }
        close(fds[1]);
        pfd.fd = fds[0];
        pfd.events = POLLIN;
        until = bench_now_s() + SINK_START_MS / 1000.0;
        while (got < sizeof(line) - 1 && memchr(line, '\n', got) == NULL) {
            int left = (int)((until - bench_now_s()) * 1000);
            ssize_t r;

            if (left <= 0 || poll(&pfd, 1, left) <= 0)
                break;
            r = read(fds[0], line + got, sizeof(line) - 1 - got);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                break; /* it exited: the port is taken */
            got += (size_t)r;
        }
        close(fds[0]);
        line[got] = '\0';
        if (strstr(line, "\"nullsink\"") != NULL) {
            snprintf(url, url_size, "http://127.0.0.1:%d", port);
            return pid;
        }
        kill(pid, SIGTERM);
        waitpid(pid, &status, 0);
    }
    return -1;
}

static void sink_stop(pid_t pid)
{
    int status;

    if (pid <= 0)
        return;
    kill(pid, SIGTERM);
    waitpid(pid, &status, 0);
}

/* bench/nullsink next to this program (or to argv[0]). */
static int sink_path(const char *argv0, char *out, size_t out_size)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    const char *slash;

    if (n > 0) {
        self[n] = '\0';
        slash = strrchr(self, '/');
        if (slash != NULL) {
            snprintf(out, out_size, "%.*s/nullsink", (int)(slash - self), self);
            if (access(out, X_OK) == 0)
                return 0;
        }
    }
    slash = strrchr(argv0, '/');
    snprintf(out, out_size, "%.*s%snullsink", slash ? (int)(slash - argv0) : 0, argv0,
             slash ? "/" : "./");
    return access(out, X_OK) == 0 ? 0 : -1;
}

/* ------------------------------------------------------------------------- */

static const char usage[] =
    "usage: micro [--docs N] [--sink URL] [--nullsink PATH] [--sink-nodes N] [--no-engine]\n"
    "             [--engine-only] [--no-ids] [--set KEY=VALUE]...\n"
    "  --docs N        documents (default 1000000)\n"
    "  --sink URL      a null sink already running (default: start bench/nullsink on a\n"
    "                  free port in 19280-19289 and stop it at the end)\n"
    "  --nullsink PATH the null sink program to start\n"
    "  --sink-nodes N  the null sink started is a cluster of N nodes (1-8, default 1):\n"
    "                  with routing.level=node, one destination per node, as on a\n"
    "                  real cluster\n"
    "  --no-engine     only the no-network part\n"
    "  --engine-only   one pass of the no-network part, not the best of 3 (profiling)\n"
    "  --no-ids        the engine part adds documents without _id (id.generate decides)\n"
    "  --warm          the engine part's passes again, each handle having taken the\n"
    "                  documents once first, untimed (\"engine_null_sink_warm\")\n"
    "  --set KEY=VALUE configuration for the engine part (repeatable)\n";

static uint64_t stat_u64(json_t *stats, const char *key)
{
    json_t *v = json_object_get(stats, key);

    return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

/* The best of npass engine passes (each a new handle), as for the
 * no-network part: the same estimate on both sides of the ratio; every
 * pass's figure is printed too, as ,"name":{...}. With opts->warm, each
 * handle first takes the documents once, untimed: the no-network part
 * has its warm-up pass too, and a cold pass's CPU includes the kernel
 * faulting in the handle's buffer (up to buffer.max.docs records and their
 * lines), once per handle. 0, 1 when a pass lost documents, -1 when one
 * could not start. */
static int engine_passes(const bench_engine_opts_t *opts, int npass, const char *name,
                         const char *sink, int sink_nodes)
{
    bench_engine_result_t res;
    json_t *stats = NULL;
    double pass_ns[REPEATS];
    char errstr[512];
    int i, rc = 0;

    memset(&res, 0, sizeof(res));
    for (i = 0; i < npass; i++) {
        bench_engine_result_t r;

        if (bench_engine_run(opts, &r, errstr, sizeof(errstr)) != 0) {
            fprintf(stderr, "micro: %s\n", errstr);
            esbulk_free(res.stats);
            return -1;
        }
        if (r.indexed != r.docs || r.flush_timed_out)
            rc = 1;
        pass_ns[i] = r.cpu_s * 1e9 / (double)r.docs;
        if (i == 0 || r.cpu_s < res.cpu_s) {
            esbulk_free(res.stats);
            res = r;
        } else {
            esbulk_free(r.stats);
        }
    }
    if (res.stats != NULL)
        stats = json_loads(res.stats, 0, NULL);
    printf(",\"%s\":{\"docs_per_s\":%.0f,\"cpu_ns_per_doc\":%.1f,"
           "\"user_ns_per_doc\":%.1f,\"sys_ns_per_doc\":%.1f,"
           "\"wall_s\":%.6f,\"cpu_s\":%.6f,\"cores_used\":%.2f,\"indexed\":%" PRIu64
           ",\"failed\":%" PRIu64 ",\"possibly\":%" PRIu64 ",\"requests\":%" PRIu64
           ",\"minor_faults\":%" PRIu64 ",\"queue_full\":%" PRIu64 ",\"warm\":%s"
           ",\"sink\":\"%s\",\"sink_nodes\":%d,\"cpu_ns_per_doc_passes\":[",
           name, res.wall_s > 0 ? (double)res.docs / res.wall_s : 0.0,
           res.cpu_s * 1e9 / (double)res.docs, (res.cpu_s - res.sys_s) * 1e9 / (double)res.docs,
           res.sys_s * 1e9 / (double)res.docs, res.wall_s, res.cpu_s,
           res.wall_s > 0 ? res.cpu_s / res.wall_s : 0.0, res.indexed, res.failed, res.possibly,
           stat_u64(stats, "requests") - res.warm_requests, res.minor_faults,
           res.queue_full, opts->warm ? "true" : "false", sink, sink_nodes);
    for (i = 0; i < npass; i++)
        printf("%s%.1f", i > 0 ? "," : "", pass_ns[i]);
    printf("]}");
    json_decref(stats);
    esbulk_free(res.stats);
    return rc;
}

int main(int argc, char **argv)
{
    const char *sink = NULL, *sets[BENCH_MAX_SETS];
    char sink_url[64], sink_prog[PATH_MAX + 16];
    double ns_all, wall_all, ns_route, ns_build, ns_copies;
    int64_t ndocs = DEFAULT_DOCS;
    size_t nsets = 0;
    int i, engine = 1, engine_only = 0, ids = 1, rc = 1, sink_nodes = 1, warm = 0;
    pid_t child = -1;
    docs_t d;
    pipe_t p;

    sink_prog[0] = '\0';
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--docs") == 0 && i + 1 < argc) {
            if (bench_parse_i64(argv[++i], 1, MAX_DOCS, &ndocs) != 0) {
                fprintf(stderr, "micro: --docs must be 1..%d\n", MAX_DOCS);
                return 2;
            }
        } else if (strcmp(argv[i], "--sink") == 0 && i + 1 < argc) {
            sink = argv[++i];
        } else if (strcmp(argv[i], "--sink-nodes") == 0 && i + 1 < argc) {
            int64_t v;

            if (bench_parse_i64(argv[++i], 1, 8, &v) != 0) {
                fprintf(stderr, "micro: --sink-nodes must be 1..8\n");
                return 2;
            }
            sink_nodes = (int)v;
        } else if (strcmp(argv[i], "--nullsink") == 0 && i + 1 < argc) {
            snprintf(sink_prog, sizeof(sink_prog), "%s", argv[++i]);
        } else if (strcmp(argv[i], "--no-engine") == 0) {
            engine = 0;
        } else if (strcmp(argv[i], "--engine-only") == 0) {
            engine_only = 1;
        } else if (strcmp(argv[i], "--no-ids") == 0) {
            ids = 0;
        } else if (strcmp(argv[i], "--warm") == 0) {
            warm = 1;
        } else if (strcmp(argv[i], "--set") == 0 && i + 1 < argc) {
            if (nsets == BENCH_MAX_SETS) {
                fprintf(stderr, "micro: at most %d --set options\n", BENCH_MAX_SETS);
                return 2;
            }
            sets[nsets++] = argv[++i];
        } else if (strcmp(argv[i], "--help") == 0) {
            fputs(usage, stdout);
            return 0;
        } else {
            fputs(usage, stderr);
            return 2;
        }
    }

    memset(&p, 0, sizeof(p));
    esbulk__layout_init(&p.layout);
    p.layout.shards = SHARDS;
    p.layout.routing_shards = ROUTING_SHARDS;
    for (i = 0; i < SHARDS; i++)
        p.primary[i] = i % NODES;
    for (i = 0; i < NODES; i++)
        esbulk__buf_init(&p.batch[i], (size_t)-1);
    if (docs_make(&d, (size_t)ndocs) != 0) {
        fprintf(stderr, "micro: out of memory for %" PRId64 " documents\n", ndocs);
        docs_free(&d);
        return 1;
    }

    /* a warm-up pass (page faults, buffer growth), then the best of
     * REPEATS passes of each: the machine is shared, the minimum is the
     * cost of the work itself */
    if (run_work(&p, &d, WORK_ALL, &ns_all, &wall_all) != 0)
        goto fail_a;
    ns_all = ns_route = ns_build = ns_copies = wall_all = 1e300;
    for (i = 0; i < (engine_only ? 1 : REPEATS); i++) {
        double c, w;

        if (run_work(&p, &d, WORK_ROUTE, &c, &w) != 0)
            goto fail_a;
        ns_route = c < ns_route ? c : ns_route;
        if (run_work(&p, &d, WORK_BUILD, &c, &w) != 0)
            goto fail_a;
        ns_build = c < ns_build ? c : ns_build;
        if (run_work(&p, &d, WORK_ALL, &c, &w) != 0)
            goto fail_a;
        ns_all = c < ns_all ? c : ns_all;
        wall_all = w < wall_all ? w : wall_all;
        if (run_work(&p, &d, WORK_ALL_COPIES, &c, &w) != 0)
            goto fail_a;
        ns_copies = c < ns_copies ? c : ns_copies;
    }
    printf("{\"docs\":%" PRId64 ",\"doc_bytes_avg\":%.1f,\"build_route_serialize_ns_per_doc\":%.1f,"
           "\"docs_per_s_per_core\":%.0f,\"build_route_serialize_wall_ns_per_doc\":%.1f,"
           "\"breakdown_cpu_ns_per_doc\":{\"route\":%.1f,\"checks_build_append\":%.1f,"
           "\"with_engine_doc_copies\":%.1f},\"checksum\":%" PRIu64,
           ndocs, (double)d.body_bytes / (double)d.n, ns_all, 1e9 / ns_all, wall_all, ns_route,
           ns_build, ns_copies, p.checksum % 1000);

    if (engine) {
        bench_engine_opts_t opts;
        int npass;

        if (sink == NULL) {
            if (sink_prog[0] == '\0' && sink_path(argv[0], sink_prog, sizeof(sink_prog)) != 0) {
                fprintf(stderr, "micro: cannot find bench/nullsink (give --nullsink PATH)\n");
                printf("}\n");
                goto out;
            }
            child = sink_start(sink_prog, sink_nodes, sink_url, sizeof(sink_url));
            if (child < 0) {
                fprintf(stderr, "micro: cannot start %s on a port in %d-%d\n", sink_prog,
                        SINK_PORT_FIRST, SINK_PORT_LAST);
                printf("}\n");
                goto out;
            }
            sink = sink_url;
        }
        memset(&opts, 0, sizeof(opts));
        opts.url = sink;
        opts.index = INDEX;
        opts.lines = d.bodies;
        opts.n = d.n;
        opts.ids = ids;
        opts.id_lines = d.ids; /* the ids the no-network part takes, not written again */
        opts.sets = sets;
        opts.nsets = nsets;
        npass = engine_only ? 1 : REPEATS;
        rc = engine_passes(&opts, npass, "engine_null_sink", sink,
                           sink == sink_url ? sink_nodes : 0);
        if (rc == 0 && warm) {
            opts.warm = 1;
            rc = engine_passes(&opts, npass, "engine_null_sink_warm", sink,
                               sink == sink_url ? sink_nodes : 0);
        }
        if (rc < 0) {
            rc = 1;
            printf("}\n");
            goto out;
        }
        printf("}\n");
    } else {
        printf("}\n");
        rc = 0;
    }
    goto out;
fail_a:
    fprintf(stderr, "micro: the no-network pass failed (out of memory?)\n");
out:
    fflush(stdout);
    sink_stop(child);
    for (i = 0; i < NODES; i++)
        esbulk__buf_free(&p.batch[i]);
    docs_free(&d);
    return rc;
}
