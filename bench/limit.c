/*
 * limit - "the most a client could get from this cluster".
 *
 * Builds every bulk request body in memory before timing anything: with
 * --ids, documents are routed with libesbulk's own topology and shard
 * function and grouped per primary node; without ids they cannot be routed
 * and are spread round-robin over the nodes. Bodies hold --flush-docs
 * documents each. Then only the sending is timed: a raw curl multi loop with
 * at most --inflight requests in flight per node, keep-alive, no
 * "Expect: 100-continue", and filter_path=errors,items.*.error so that
 * answers are tiny. Every answer must be 200 with "errors":false; item
 * errors are counted (and the first ones shown). No retries.
 *
 * Prints one JSON line; exit status 1 on any error, 2 on a usage error.
 */
#define _GNU_SOURCE 1
#include "common.h"

#include "buf.h"
#include "ndjson.h"
#include "http.h"
#include "topology.h"

#include <curl/curl.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RESPONSE_MAX_BYTES ((size_t)64 << 20)
#define REQUEST_TIMEOUT_MS 300000L
#define SHOWN_ERRORS 10
#define MAX_TARGETS 256

typedef struct {
    char *data;
    size_t len;
    size_t ndocs;
} body_t;

typedef struct {
    char *base;           /* the node's HTTP base URL */
    char *url;            /* base + the bulk path */
    body_t *bodies;
    size_t nbodies, cap;
    size_t next;          /* next body to send */
    esbulk__buf_t cur;    /* the body being built */
    size_t cur_docs;
} target_t;

typedef struct {
    CURL *easy;
    target_t *target;
    body_t *body;
    esbulk__buf_t resp;
    size_t sent;          /* bytes of body given to curl (--upload callback) */
    char errbuf[CURL_ERROR_SIZE];
} slot_t;

typedef struct {
    target_t targets[MAX_TARGETS];
    int ntargets;
    uint64_t requests, bytes_sent, failed, shown;
    int transport_errors;
    /* what building reads: all at once before sending, or (--stream) as the
     * sending needs each target's next body */
    esbulk__index_t *e;
    const char *index;
    size_t index_len;
    const bench_data_t *data;
    int ids;
    size_t flush_docs;
    size_t k;             /* the next document to place */
    int node_target[MAX_TARGETS];
    char errstr[256];
} run_t;

/* The answer's shape: errors only (the default), or, with --answer full,
 * also every item's fields that libesbulk asks for with result.meta (its
 * filter_path without the item's _index and _id), to see what the answer
 * costs the server; --answer /PATH sends the requests to PATH instead */
static const char *bulk_path = "/_bulk?filter_path=errors,items.*.error";
static const char full_path[] =
    "/_bulk?filter_path=errors,items.*.status,items.*.result,items.*._seq_no,"
    "items.*._primary_term,items.*._version,items.*.error";

static int target_add(run_t *run, const char *base)
{
    target_t *t = &run->targets[run->ntargets];
    const char *path = bulk_path;

    if (run->ntargets == MAX_TARGETS)
        return -1;
    memset(t, 0, sizeof(*t));
    t->base = esbulk__strdup(base);
    t->url = malloc(strlen(base) + strlen(path) + 1);
    if (t->base == NULL || t->url == NULL) {
        free(t->base);
        free(t->url);
        return -1;
    }
    strcpy(t->url, base);
    strcat(t->url, path);
    esbulk__buf_init(&t->cur, (size_t)-1);
    return run->ntargets++;
}

/* Closes the body being built into the target's list. */
static int target_seal(target_t *t)
{
    if (t->cur_docs == 0)
        return 0;
    if (t->nbodies == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        body_t *b = realloc(t->bodies, cap * sizeof(*b));
        if (b == NULL)
            return -1;
        t->bodies = b;
        t->cap = cap;
    }
    t->bodies[t->nbodies].data = t->cur.data;
    t->bodies[t->nbodies].len = t->cur.len;
    t->bodies[t->nbodies].ndocs = t->cur_docs;
    t->nbodies++;
    esbulk__buf_init(&t->cur, (size_t)-1);
    t->cur_docs = 0;
    return 0;
}

static void run_free(run_t *run)
{
    int i;
    size_t k;

    for (i = 0; i < run->ntargets; i++) {
        target_t *t = &run->targets[i];
        for (k = 0; k < t->nbodies; k++)
            free(t->bodies[k].data);
        free(t->bodies);
        esbulk__buf_free(&t->cur);
        free(t->base);
        free(t->url);
    }
    run->ntargets = 0;
}

/* The targets: one per node, or the seed alone when the nodes cannot be
 * reached at their own addresses. */
static int build_setup(run_t *run, esbulk__index_t *e, const char *seed, const char *index,
                       const bench_data_t *data, int ids, size_t flush_docs, char *errstr,
                       size_t errstr_size)
{
    const esbulk__cluster_t *c = e->cluster;
    int i;

    if (c->nnodes > MAX_TARGETS) {
        snprintf(errstr, errstr_size, "more than %d nodes", MAX_TARGETS);
        return -1;
    }
    run->e = e;
    run->index = index;
    run->index_len = strlen(index);
    run->data = data;
    run->ids = ids;
    run->flush_docs = flush_docs;
    run->k = 0;
    for (i = 0; i < c->nnodes; i++)
        run->node_target[i] = -1;
    if (c->seeds_only) {
        /* the nodes' own addresses cannot be reached: everything to the seed */
        fprintf(stderr, "limit: the nodes cannot be reached at their addresses: sending "
                        "everything to %s\n", seed);
        if (target_add(run, seed) < 0)
            goto nomem;
    } else {
        for (i = 0; i < c->nnodes; i++)
            if (c->nodes[i].http != NULL && c->nodes[i].reachable &&
                (run->node_target[i] = target_add(run, c->nodes[i].http)) < 0)
                goto nomem;
        if (run->ntargets == 0) {
            snprintf(errstr, errstr_size, "no node has a reachable HTTP address");
            return -1;
        }
    }
    return 0;
nomem:
    snprintf(errstr, errstr_size, "out of memory");
    return -1;
}

/* Routes (with ids) or spreads the documents from run->k on and builds
 * bodies of them, until `want` has a body not yet sent (want NULL: until
 * every document is placed); the last documents are sealed in bodies of
 * their own. 0, or -1 with run->errstr set. */
static int build_more(run_t *run, const target_t *want)
{
    const esbulk__index_t *e = run->e;
    const esbulk__cluster_t *c = e->cluster;
    const bench_data_t *data = run->data;
    int i;

    while (run->k < data->n && (want == NULL || want->next == want->nbodies)) {
        size_t k = run->k++;
        char id[24];
        size_t id_len = run->ids ? bench_u64_str(id, (uint64_t)k + 1) : 0;
        target_t *t;
        int ti;

        if (run->ids && !c->seeds_only) {
            const char *routing = e->alias_routing;
            int32_t shard, p;

            if (esbulk_layout_shard(&e->layout, id, id_len, routing,
                                    routing ? strlen(routing) : 0, &shard) != ESBULK_OK) {
                snprintf(run->errstr, sizeof(run->errstr), "cannot route id %s", id);
                return -1;
            }
            p = e->primary != NULL ? e->primary[shard] : -1;
            if (p < 0 || run->node_target[p] < 0) {
                snprintf(run->errstr, sizeof(run->errstr), "shard %d of %s has no reachable "
                         "primary", (int)shard, run->index);
                return -1;
            }
            ti = run->node_target[p];
        } else {
            ti = (int)(k % (size_t)run->ntargets);
        }
        t = &run->targets[ti];
        if (esbulk__action_line(&t->cur, ESBULK_OP_INDEX, run->index, run->index_len,
                                run->ids ? id : NULL, id_len, NULL, 0) != ESBULK_OK ||
            esbulk__buf_add(&t->cur, data->lines[k].p, data->lines[k].len) != ESBULK_OK ||
            esbulk__buf_addc(&t->cur, '\n') != ESBULK_OK)
            goto nomem;
        if (++t->cur_docs == run->flush_docs && target_seal(t) != 0)
            goto nomem;
    }
    if (run->k == data->n)
        for (i = 0; i < run->ntargets; i++)
            if (target_seal(&run->targets[i]) != 0)
                goto nomem;
    return 0;
nomem:
    snprintf(run->errstr, sizeof(run->errstr), "out of memory building the bodies");
    return -1;
}

/* ------------------------------------------------------------------------- */
/* Sending */

static size_t on_body(char *data, size_t size, size_t nmemb, void *userdata)
{
    slot_t *s = userdata;

    if (esbulk__buf_add(&s->resp, data, size * nmemb) != ESBULK_OK)
        return 0;
    return size * nmemb;
}

/* --upload callback: curl asks for the body through a read callback into
 * its own 512 KiB buffer, as libesbulk's requests do, instead of sending it
 * from the caller's memory */
static int upload_callback;
/* --gap-us N: the loop sleeps N µs after each answer before it sends the
 * next body (as a client busy with the answer would) */
static long gap_us;

static size_t on_read(char *out, size_t size, size_t nmemb, void *userdata)
{
    slot_t *s = userdata;
    size_t n = s->body->len - s->sent;

    if (n > size * nmemb)
        n = size * nmemb;
    memcpy(out, s->body->data + s->sent, n);
    s->sent += n;
    return n;
}

/* Starts the target's next body on s. 1 started, 0 nothing left, -1 error. */
static int slot_start(CURLM *multi, slot_t *s, run_t *run)
{
    target_t *t = s->target;

    /* --stream: this target's next body is built now, from the documents
     * not yet placed (some go to the other targets' bodies meanwhile) */
    if (t->next == t->nbodies && build_more(run, t) != 0)
        return -1;
    if (t->next == t->nbodies)
        return 0;
    s->body = &t->bodies[t->next++];
    esbulk__buf_reset(&s->resp);
    s->errbuf[0] = '\0';
    if (upload_callback) {
        s->sent = 0;
        curl_easy_setopt(s->easy, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(s->easy, CURLOPT_READDATA, s);
        curl_easy_setopt(s->easy, CURLOPT_UPLOAD_BUFFERSIZE, 512L * 1024);
    } else {
        curl_easy_setopt(s->easy, CURLOPT_POSTFIELDS, s->body->data);
    }
    curl_easy_setopt(s->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)s->body->len);
    if (curl_multi_add_handle(multi, s->easy) != CURLM_OK)
        return -1;
    run->requests++;
    run->bytes_sent += s->body->len;
    return 1;
}

/* Checks one answer; counts the documents it did not index. */
static void slot_done(slot_t *s, CURLcode rc, run_t *run)
{
    static const char ok[] = "{\"errors\":false";
    long status = 0;
    json_t *root, *items;
    size_t failed;

    if (rc != CURLE_OK) {
        run->transport_errors++;
        run->failed += s->body->ndocs;
        if (run->shown++ < SHOWN_ERRORS)
            fprintf(stderr, "limit: %s: %s\n", s->target->base,
                    s->errbuf[0] ? s->errbuf : curl_easy_strerror(rc));
        return;
    }
    curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &status);
    /* {"errors":false} or {"errors":false,"items":[...]} */
    if (status == 200 && s->resp.len >= sizeof(ok) && memcmp(s->resp.data, ok, sizeof(ok) - 1) == 0 &&
        (s->resp.data[sizeof(ok) - 1] == '}' || s->resp.data[sizeof(ok) - 1] == ','))
        return;
    root = s->resp.len > 0 ? json_loadb(s->resp.data, s->resp.len, 0, NULL) : NULL;
    items = json_object_get(root, "items");
    if (status == 200 && json_is_false(json_object_get(root, "errors")))
        failed = 0;
    else if (status == 200 && json_is_array(items) && json_array_size(items) > 0)
        failed = json_array_size(items);
    else
        failed = s->body->ndocs;
    run->failed += failed;
    if (failed > 0 && run->shown++ < SHOWN_ERRORS)
        fprintf(stderr, "limit: %s: HTTP %ld, %zu of %zu documents failed: %.300s\n",
                s->target->base, status, failed, s->body->ndocs,
                s->resp.data ? s->resp.data : "");
    json_decref(root);
}

/* Sends every body; returns the seconds it took, < 0 on a setup error. */
static double send_all(run_t *run, int inflight)
{
    int nslots = run->ntargets * inflight, i, active = 0, still;
    struct curl_slist *headers = NULL, *h;
    slot_t *slots = calloc((size_t)nslots, sizeof(*slots));
    CURLM *multi = curl_multi_init();
    double t0 = -1, elapsed = -1;
    CURLMsg *msg;

    h = curl_slist_append(headers, "Content-Type: application/x-ndjson");
    if (h != NULL)
        headers = h;
    h = h ? curl_slist_append(headers, "Expect:") : NULL;
    if (slots == NULL || multi == NULL || h == NULL)
        goto out;
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, (long)nslots + 4);
    for (i = 0; i < nslots; i++) {
        slot_t *s = &slots[i];

        s->target = &run->targets[i / inflight];
        esbulk__buf_init(&s->resp, RESPONSE_MAX_BYTES);
        if ((s->easy = curl_easy_init()) == NULL)
            goto out;
        curl_easy_setopt(s->easy, CURLOPT_URL, s->target->url);
        curl_easy_setopt(s->easy, CURLOPT_POST, 1L);
        curl_easy_setopt(s->easy, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(s->easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
        curl_easy_setopt(s->easy, CURLOPT_TCP_NODELAY, 1L);
        curl_easy_setopt(s->easy, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(s->easy, CURLOPT_TIMEOUT_MS, REQUEST_TIMEOUT_MS);
        curl_easy_setopt(s->easy, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(s->easy, CURLOPT_WRITEDATA, s);
        curl_easy_setopt(s->easy, CURLOPT_PRIVATE, s);
        curl_easy_setopt(s->easy, CURLOPT_ERRORBUFFER, s->errbuf);
    }
    t0 = bench_now_s();
    for (i = 0; i < nslots; i++) {
        int r = slot_start(multi, &slots[i], run);
        if (r < 0)
            goto out;
        active += r;
    }
    while (active > 0) {
        if (curl_multi_perform(multi, &still) != CURLM_OK)
            goto out;
        while ((msg = curl_multi_info_read(multi, &still)) != NULL) {
            slot_t *s = NULL;
            int r;

            if (msg->msg != CURLMSG_DONE)
                continue;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&s);
            curl_multi_remove_handle(multi, s->easy);
            active--;
            slot_done(s, msg->data.result, run);
            if (gap_us > 0) {
                struct timespec ts = {gap_us / 1000000, (gap_us % 1000000) * 1000};
                nanosleep(&ts, NULL);
            }
            if ((r = slot_start(multi, s, run)) < 0)
                goto out;
            active += r;
        }
        if (active > 0 && curl_multi_poll(multi, NULL, 0, 1000, NULL) != CURLM_OK)
            goto out;
    }
    elapsed = bench_now_s() - t0;
out:
    for (i = 0; slots != NULL && i < nslots; i++) {
        if (slots[i].easy != NULL) {
            curl_multi_remove_handle(multi, slots[i].easy);
            curl_easy_cleanup(slots[i].easy);
        }
        esbulk__buf_free(&slots[i].resp);
    }
    free(slots);
    if (multi != NULL)
        curl_multi_cleanup(multi);
    curl_slist_free_all(headers);
    return elapsed;
}

/* ------------------------------------------------------------------------- */

static const char usage[] =
    "usage: limit --url URL --index NAME --file DATA [--ids] --flush-docs N --inflight K\n"
    "             [--answer errors|full|/PATH] [--upload buffer|callback] [--gap-us N]\n"
    "             [--stream]\n"
    "Pre-builds every bulk body (per primary node with --ids, round-robin without),\n"
    "then times only sending them with at most K requests in flight per node.\n"
    "--stream builds each node's next body when it is to be sent, in the timed loop\n"
    "(the least a client that routes and serializes as it sends must do).\n"
    "NAME must exist. Prints {\"docs\",\"seconds\",\"indexed\",\"failed\",\"requests\",\n"
    "\"bytes_sent\",\"docs_per_s\",\"nodes\",\"routed\",\"flush_docs\",\"inflight\",\"build_s\"}.\n";

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"url", required_argument, NULL, 'u'},       {"index", required_argument, NULL, 'i'},
        {"file", required_argument, NULL, 'f'},      {"ids", no_argument, NULL, 'd'},
        {"flush-docs", required_argument, NULL, 'n'}, {"inflight", required_argument, NULL, 'k'},
        {"answer", required_argument, NULL, 'a'},    {"upload", required_argument, NULL, 'p'},
        {"gap-us", required_argument, NULL, 'g'},    {"stream", no_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},            {NULL, 0, NULL, 0}};
    const char *url = NULL, *index = NULL, *file = NULL, *fd_arg = NULL, *k_arg = NULL;
    int64_t flush_docs = 0, inflight = 0;
    esbulk_conf_t *conf = NULL;
    esbulk_topology_t *topo = NULL;
    esbulk__index_t *e = NULL;
    bench_data_t data;
    char errstr[512];
    double b0, build_s, seconds;
    int c, ids = 0, rc = 1, routed, stream = 0;
    run_t *run = NULL;

    memset(&data, 0, sizeof(data));
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'u': url = optarg; break;
        case 'i': index = optarg; break;
        case 'f': file = optarg; break;
        case 'd': ids = 1; break;
        case 'n': fd_arg = optarg; break;
        case 'k': k_arg = optarg; break;
        case 'a':
            if (strcmp(optarg, "full") == 0) {
                bulk_path = full_path;
            } else if (optarg[0] == '/') {
                bulk_path = optarg; /* a path of one's own, to compare answers */
            } else if (strcmp(optarg, "errors") != 0) {
                fputs(usage, stderr);
                return 2;
            }
            break;
        case 'p':
            if (strcmp(optarg, "callback") == 0) {
                upload_callback = 1;
            } else if (strcmp(optarg, "buffer") != 0) {
                fputs(usage, stderr);
                return 2;
            }
            break;
        case 'g': {
            int64_t g;

            if (bench_parse_i64(optarg, 0, 10000000, &g) != 0) {
                fputs(usage, stderr);
                return 2;
            }
            gap_us = (long)g;
            break;
        }
        case 's': stream = 1; break;
        case 'h': fputs(usage, stdout); return 0;
        default: fputs(usage, stderr); return 2;
        }
    }
    if (optind != argc || url == NULL || index == NULL || file == NULL ||
        bench_parse_i64(fd_arg, 1, 1000000, &flush_docs) != 0 ||
        bench_parse_i64(k_arg, 1, 64, &inflight) != 0) {
        fputs(usage, stderr);
        return 2;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "limit: curl_global_init failed\n");
        return 1;
    }
    if (bench_data_load(file, &data, errstr, sizeof(errstr)) != 0)
        goto fail;
    snprintf(errstr, sizeof(errstr), "out of memory");
    if ((conf = esbulk_conf_new()) == NULL ||
        esbulk_conf_set(conf, "urls", url, errstr, sizeof(errstr)) != ESBULK_OK ||
        (topo = esbulk_topology_new(conf, errstr, sizeof(errstr))) == NULL ||
        esbulk__topology_get_index(topo, index, &e, errstr, sizeof(errstr)) != ESBULK_OK)
        goto fail;
    if (e->state != ESBULK__IDX_OK) {
        snprintf(errstr, sizeof(errstr), "%s: %s", index, e->reason ? e->reason : "not routable");
        goto fail;
    }
    if ((run = calloc(1, sizeof(*run))) == NULL) {
        snprintf(errstr, sizeof(errstr), "out of memory");
        goto fail;
    }
    b0 = bench_now_s();
    if (build_setup(run, e, url, index, &data, ids, (size_t)flush_docs, errstr,
                    sizeof(errstr)) != 0)
        goto fail;
    if (!stream && build_more(run, NULL) != 0) {
        snprintf(errstr, sizeof(errstr), "%s", run->errstr);
        goto fail;
    }
    build_s = bench_now_s() - b0;
    routed = ids && !e->cluster->seeds_only;
    /* the bodies hold copies: the file is not needed while sending */
    if (!stream)
        bench_data_free(&data);
    seconds = send_all(run, (int)inflight);
    if (seconds < 0) {
        snprintf(errstr, sizeof(errstr), "%s", run->errstr[0] ? run->errstr : "curl setup failed");
        goto fail;
    }
    {
        uint64_t docs = 0;
        int i;
        size_t k;

        for (i = 0; i < run->ntargets; i++)
            for (k = 0; k < run->targets[i].nbodies; k++)
                docs += run->targets[i].bodies[k].ndocs;
        printf("{\"docs\":%" PRIu64 ",\"seconds\":%.6f,\"indexed\":%" PRIu64 ",\"failed\":%" PRIu64
               ",\"requests\":%" PRIu64 ",\"bytes_sent\":%" PRIu64 ",\"docs_per_s\":%.1f"
               ",\"nodes\":%d,\"routed\":%s,\"flush_docs\":%" PRId64 ",\"inflight\":%" PRId64
               ",\"build_s\":%.3f,\"stream\":%s}\n",
               docs, seconds, docs - run->failed, run->failed, run->requests, run->bytes_sent,
               seconds > 0 ? (double)docs / seconds : 0.0, run->ntargets,
               routed ? "true" : "false", flush_docs, inflight, build_s,
               stream ? "true" : "false");
        fflush(stdout);
        rc = run->failed == 0 && run->transport_errors == 0 ? 0 : 1;
    }
    goto out;
fail:
    fprintf(stderr, "limit: %s\n", errstr);
out:
    if (run != NULL)
        run_free(run);
    free(run);
    esbulk__index_release(e);
    esbulk_topology_destroy(topo);
    esbulk_conf_destroy(conf);
    bench_data_free(&data);
    curl_global_cleanup();
    return rc;
}
