/* The I/O thread: routes documents to destinations, flushes them as bulk
 * requests over one curl multi handle, and turns answers into results or
 * retries. Everything here is owned by the I/O thread; eb->lock is taken
 * only to exchange documents with the caller threads. */
#include "engine.h"
#include "response.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* Buffers kept for reuse, at most SPARE_BYTES of them in all. */
#define SPARE_BUFS 16
#define SPARE_BYTES ((size_t)32 << 20)
#define DEST_BUCKETS 1024
#define LAT_RING 512
#define EXPIRE_SCAN_MS 100
#define SNAPSHOT_MS 500
#define REFRESH_MIN_GAP_MS 1000

typedef enum { DEST_NODE, DEST_SHARD, DEST_ANY } dest_kind_t;

typedef struct target_s {
    char *url;          /* base URL */
    char *node_id;      /* NULL for a seed */
    char *name;
    int present;        /* in the current cluster view (or a seed) */
    int inflight;
    int64_t down_until; /* > now: treated as down */
    uint64_t requests, errors;
    int32_t lat[LAT_RING];
    int nlat, latpos;
    struct target_s *next;
} target_t;

typedef struct dest_s {
    char *key;
    dest_kind_t kind;
    char *node_id;      /* DEST_NODE */
    char *index;        /* DEST_SHARD: the name as added */
    int32_t shard;
    esbulk__queue_t q;
    esbulk__queue_t retry_q; /* ordering=per_id: retries waiting to go first */
    int inflight;
    size_t batch_cap;   /* after a 413: at most this many documents */
    int cap_ok;         /* full-size successes since; 16 double the cap again */
    int64_t oldest_ms;
    struct dest_s *hnext, *next;
} dest_t;

typedef struct req_s {
    CURL *easy;
    struct curl_slist *headers;
    esbulk__buf_t body, resp;
    int prereqs;        /* requests curl was about to send for it */
    esbulk__doc_t **docs;
    size_t ndocs;
    target_t *target;
    dest_t *dest;
    int64_t start_ms;
    char errbuf[CURL_ERROR_SIZE];
    struct req_s *prev, *next;  /* io->reqs: in flight */
} req_t;

typedef struct {
    CURLM *multi;
    dest_t *buckets[DEST_BUCKETS];
    dest_t *dests;
    target_t *targets;
    esbulk__cluster_t *cluster; /* the view targets were built from */
    esbulk__queue_t retry;      /* documents waiting for their retry time */
    req_t *reqs;                /* requests in flight */
    esbulk__index_t *cached;    /* the last index entry looked up, this round */
    dest_t **shard_dest;        /* cached's destination per shard (NULL: not yet) */
    int32_t nshard_dest;        /* entries valid in shard_dest (0: none) */
    int32_t shard_dest_cap;
    esbulk__queue_t done;       /* results of this round, handed over by flush_done() */
    struct { uint64_t retried, item_429, unrouted, expired; } st; /* this round's counts */
    int running;
    unsigned rr;
    uint64_t rng;
    int64_t next_expire_ms, next_snapshot_ms, last_refresh_ms;
    int refresh_wanted;
    int idle_snapshot;          /* the last snapshot was taken with nothing in flight */
    int cluster_failing;        /* the cluster view could not be read (logged once) */
    /* configuration, read once */
    esbulk__flush_policy_t flush;
    int level;                  /* 0 node, 1 shard, 2 off */
    int per_id;
    int max_inflight;
    int gzip, gzip_level;
    int32_t retry_max;
    int64_t backoff_ms, backoff_max_ms, request_timeout_ms, recheck_ms;
    int retry_cluster_block;
    char *bulk_path;
    /* request and response buffers kept for the next requests: no
     * allocation, growth or page faults per request */
    esbulk__buf_t spare[SPARE_BUFS];
    int nspare;
    size_t spare_bytes;
} io_t;

/* ------------------------------------------------------------------------- */
/* Small helpers */

static uint32_t rnd32(io_t *io)
{
    io->rng ^= io->rng << 13;
    io->rng ^= io->rng >> 7;
    io->rng ^= io->rng << 17;
    return (uint32_t)(io->rng >> 16);
}

static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u;

    while (*s)
        h = (h ^ (unsigned char)*s++) * 16777619u;
    return h;
}

static io_t *io_of(esbulk_t *eb)
{
    return eb->io;
}

/* Results are collected during a loop round and handed over at once
 * (flush_done): one lock and one wake-up per round, not per document. */
static void deliver(esbulk_t *eb, esbulk__doc_t *d, esbulk_outcome_t outcome, esbulk_err_t err,
                    int32_t status, const char *type, const char *reason)
{
    esbulk__doc_set_outcome(d, outcome, err, status, type, reason);
    esbulk__queue_push(&io_of(eb)->done, d);
}

static void flush_done(esbulk_t *eb, io_t *io)
{
    uint64_t counts[4] = {io->st.retried, io->st.item_429, io->st.unrouted, io->st.expired};

    if (io->done.head == NULL && !(counts[0] | counts[1] | counts[2] | counts[3]))
        return;
    esbulk__deliver_queue(eb, &io->done, counts);
    memset(&io->st, 0, sizeof(io->st));
}

/* ------------------------------------------------------------------------- */
/* Targets: the HTTP endpoints (discovered nodes and seeds) */

static target_t *target_get(io_t *io, const char *url, const char *node_id, const char *name)
{
    target_t *t;

    for (t = io->targets; t != NULL; t = t->next)
        if (strcmp(t->url, url) == 0)
            break;
    if (t == NULL) {
        t = calloc(1, sizeof(*t));
        if (t == NULL || (t->url = esbulk__strdup(url)) == NULL) {
            free(t);
            return NULL;
        }
        t->next = io->targets;
        io->targets = t;
    }
    if (node_id != NULL && (t->node_id == NULL || strcmp(t->node_id, node_id) != 0)) {
        char *id = esbulk__strdup(node_id), *nm = esbulk__strdup(name ? name : node_id);
        if (id == NULL || nm == NULL) {
            free(id);
            free(nm);
            return t;
        }
        free(t->node_id);
        free(t->name);
        t->node_id = id;
        t->name = nm;
    }
    t->present = 1;
    return t;
}

/* Brings the target list in line with the topology's current cluster view. */
static void sync_targets(esbulk_t *eb, io_t *io)
{
    esbulk__cluster_t *c = NULL;
    char errstr[256];
    target_t *t;
    int i;

    if (esbulk__topology_get_cluster(eb->topo, 0, &c, errstr, sizeof(errstr)) != ESBULK_OK) {
        if (!io->cluster_failing++)
            esbulk__log(&eb->log, ESBULK_LOG_WARNING, "io", "cluster view: %s", errstr);
        c = NULL;
    } else if (io->cluster_failing) {
        io->cluster_failing = 0;
        esbulk__log(&eb->log, ESBULK_LOG_NOTICE, "io", "cluster view is back");
    }
    if (c != NULL && c == io->cluster) {
        esbulk__cluster_release(c);
        return;
    }
    for (t = io->targets; t != NULL; t = t->next)
        t->present = 0;
    for (i = 0; i < eb->nseeds; i++)
        target_get(io, eb->seeds[i].base, NULL, NULL);
    if (c != NULL && !c->seeds_only) {
        for (i = 0; i < c->nnodes; i++)
            if (c->nodes[i].http != NULL && c->nodes[i].reachable)
                target_get(io, c->nodes[i].http, c->nodes[i].id, c->nodes[i].name);
    }
    if (io->cluster != NULL)
        esbulk__cluster_release(io->cluster);
    io->cluster = c;
}

static int target_usable(io_t *io, const target_t *t, int64_t now)
{
    return t->present && t->down_until <= now && t->inflight < io->max_inflight;
}

static target_t *target_by_node(io_t *io, const char *node_id)
{
    target_t *t;

    for (t = io->targets; t != NULL; t = t->next)
        if (t->node_id != NULL && strcmp(t->node_id, node_id) == 0)
            return t;
    return NULL;
}

/* Any usable target, in turn. Discovered nodes are preferred over seeds
 * when the cluster view has them; a target that is down is used only when
 * every one is down (the request then tests whether it is back). */
static target_t *target_any(io_t *io, int64_t now)
{
    target_t *t, *pick = NULL;
    unsigned n = 0, k;
    int want_nodes = io->cluster != NULL && !io->cluster->seeds_only;

    for (t = io->targets; t != NULL; t = t->next)
        if (target_usable(io, t, now) && (!want_nodes || t->node_id != NULL))
            n++;
    if (n == 0 && want_nodes) {
        want_nodes = 0;
        for (t = io->targets; t != NULL; t = t->next)
            if (target_usable(io, t, now))
                n++;
    }
    if (n == 0) {
        /* every one is down: try the one down longest (its documents back
         * off between attempts, so this does not spin) */
        for (t = io->targets; t != NULL; t = t->next)
            if (t->present && t->inflight < io->max_inflight &&
                (pick == NULL || t->down_until < pick->down_until))
                pick = t;
        return pick;
    }
    k = io->rr++ % n;
    for (t = io->targets; t != NULL; t = t->next) {
        if (target_usable(io, t, now) && (!want_nodes || t->node_id != NULL)) {
            if (k-- == 0) {
                pick = t;
                break;
            }
        }
    }
    return pick;
}

static void target_latency(target_t *t, int64_t ms)
{
    t->lat[t->latpos] = (int32_t)(ms > INT32_MAX ? INT32_MAX : ms);
    t->latpos = (t->latpos + 1) % LAT_RING;
    if (t->nlat < LAT_RING)
        t->nlat++;
}

/* ------------------------------------------------------------------------- */
/* Destinations */

static dest_t *dest_get(io_t *io, const char *key, dest_kind_t kind, const char *node_id,
                        const char *index, int32_t shard)
{
    uint32_t b = hash_str(key) % DEST_BUCKETS;
    dest_t *d;

    for (d = io->buckets[b]; d != NULL; d = d->hnext)
        if (strcmp(d->key, key) == 0)
            return d;
    d = calloc(1, sizeof(*d));
    if (d == NULL)
        return NULL;
    d->key = esbulk__strdup(key);
    d->node_id = node_id ? esbulk__strdup(node_id) : NULL;
    d->index = index ? esbulk__strdup(index) : NULL;
    if (d->key == NULL || (node_id && !d->node_id) || (index && !d->index)) {
        free(d->key);
        free(d->node_id);
        free(d->index);
        free(d);
        return NULL;
    }
    d->kind = kind;
    d->shard = shard;
    d->hnext = io->buckets[b];
    io->buckets[b] = d;
    d->next = io->dests;
    io->dests = d;
    return d;
}

static void dest_push(dest_t *dest, esbulk__doc_t *doc, int front, int64_t now)
{
    doc->queued_ms = now;
    if (dest->q.count == 0 || (front && now < dest->oldest_ms))
        dest->oldest_ms = now;
    if (front)
        esbulk__queue_push_front(&dest->q, doc);
    else
        esbulk__queue_push(&dest->q, doc);
}

/* The index entry for name, kept for the rest of the loop round: documents
 * come in runs for one index, and this saves a lock and a lookup per
 * document. A new reference; the caller releases it. */
static esbulk_err_t entry_for(esbulk_t *eb, io_t *io, const char *name, esbulk__index_t **e,
                              char *errstr, size_t errstr_size)
{
    esbulk_err_t err;

    if (io->cached != NULL && strcmp(io->cached->name, name) == 0) {
        atomic_fetch_add(&io->cached->refs, 1);
        *e = io->cached;
        return ESBULK_OK;
    }
    err = esbulk__topology_get_index(eb->topo, name, e, errstr, errstr_size);
    if (err == ESBULK_OK) {
        esbulk__index_release(io->cached);
        atomic_fetch_add(&(*e)->refs, 1);
        io->cached = *e;
        io->nshard_dest = 0;
    }
    return err;
}

static void entry_cache_clear(io_t *io)
{
    esbulk__index_release(io->cached);
    io->cached = NULL;
    io->nshard_dest = 0;
}

/* The cached destination of shard in e (NULL: not cached). Valid while e
 * is io->cached: an entry is an immutable snapshot of the index, and
 * destinations live as long as the I/O thread. */
static dest_t *shard_dest_get(io_t *io, const esbulk__index_t *e, int32_t shard)
{
    if (e != io->cached || shard < 0 || shard >= io->nshard_dest)
        return NULL;
    return io->shard_dest[shard];
}

static void shard_dest_put(io_t *io, const esbulk__index_t *e, int32_t shard, dest_t *dest)
{
    int32_t n = e->layout.shards, i;

    if (e != io->cached || shard < 0 || shard >= n)
        return;
    if (io->nshard_dest == 0) {
        if (n > io->shard_dest_cap) {
            dest_t **p = realloc(io->shard_dest, sizeof(*p) * (size_t)n);

            if (p == NULL)
                return; /* not cached: looked up by key each time */
            io->shard_dest = p;
            io->shard_dest_cap = n;
        }
        for (i = 0; i < n; i++)
            io->shard_dest[i] = NULL;
        io->nshard_dest = n;
    }
    if (shard < io->nshard_dest)
        io->shard_dest[shard] = dest;
}

/* The destination of a document under the routing level. */
static dest_t *route(esbulk_t *eb, io_t *io, esbulk__doc_t *doc)
{
    esbulk__index_t *e = NULL;
    const char *routing = doc->routing;
    size_t routing_len = doc->routing_len;
    char key[1024], errstr[256];
    int32_t shard, p;
    dest_t *dest = NULL;

    doc->unrouted = 0;
    if (io->level == 2 && !io->per_id)
        return dest_get(io, "off", DEST_ANY, NULL, NULL, -1);
    if (entry_for(eb, io, doc->index, &e, errstr, sizeof(errstr)) != ESBULK_OK)
        goto unrouted;
    if (e->state != ESBULK__IDX_OK)
        goto unrouted;
    if (e->alias_routing != NULL) {
        if (routing_len > 0 && (routing_len != strlen(e->alias_routing) ||
                                memcmp(routing, e->alias_routing, routing_len) != 0))
            goto unrouted; /* the server will refuse it with its own reason */
        routing = e->alias_routing;
        routing_len = strlen(routing);
    }
    if (esbulk_layout_shard(&e->layout, doc->id, doc->id_len, routing, routing_len, &shard) !=
        ESBULK_OK)
        goto unrouted;
    if ((dest = shard_dest_get(io, e, shard)) != NULL) {
        esbulk__index_release(e);
        return dest;
    }
    p = e->primary != NULL ? e->primary[shard] : -1;
    if (io->level == 0 && !io->per_id && p >= 0 && !e->cluster->seeds_only &&
        e->cluster->nodes[p].http != NULL) {
        snprintf(key, sizeof(key), "n:%s", e->cluster->nodes[p].id);
        dest = dest_get(io, key, DEST_NODE, e->cluster->nodes[p].id, NULL, -1);
    } else {
        /* per shard (also the grouping when nodes cannot be reached) */
        snprintf(key, sizeof(key), "s:%s#%d", doc->index, (int)shard);
        dest = dest_get(io, key, DEST_SHARD, NULL, doc->index, shard);
    }
    if (dest != NULL)
        shard_dest_put(io, e, shard, dest);
    esbulk__index_release(e);
    if (dest != NULL)
        return dest;
    e = NULL;
unrouted:
    esbulk__index_release(e);
    doc->unrouted = 1;
    io->st.unrouted++;
    return dest_get(io, "unrouted", DEST_ANY, NULL, NULL, -1);
}

static void route_push(esbulk_t *eb, io_t *io, esbulk__doc_t *doc, int front, int64_t now)
{
    dest_t *dest = route(eb, io, doc);

    if (dest == NULL) {
        deliver(eb, doc, ESBULK_OUTCOME_FAILED, ESBULK_ERR_NOMEM, 0, NULL,
                "out of memory while routing");
        return;
    }
    dest_push(dest, doc, front, now);
}

/* The target a destination's next request goes to, NULL if none is free. */
static target_t *dest_target(esbulk_t *eb, io_t *io, dest_t *dest, int64_t now)
{
    target_t *t = NULL;

    if (dest->kind == DEST_NODE) {
        t = target_by_node(io, dest->node_id);
    } else if (dest->kind == DEST_SHARD) {
        esbulk__index_t *e = NULL;
        char errstr[256];

        if (entry_for(eb, io, dest->index, &e, errstr, sizeof(errstr)) == ESBULK_OK &&
            e->state == ESBULK__IDX_OK && e->primary != NULL && dest->shard < e->layout.shards &&
            e->primary[dest->shard] >= 0 && !e->cluster->seeds_only)
            t = target_by_node(io, e->cluster->nodes[e->primary[dest->shard]].id);
        esbulk__index_release(e);
    }
    if (t != NULL && target_usable(io, t, now))
        return t;
    if (t != NULL && t->present && t->down_until <= now)
        return NULL; /* its node is busy: wait for it rather than add a hop */
    return target_any(io, now);
}

/* ------------------------------------------------------------------------- */
/* Retries */

static void retry_or_give_up(esbulk_t *eb, io_t *io, dest_t *dest, esbulk__doc_t *doc,
                             int ambiguous, esbulk_err_t err, int32_t status, const char *type,
                             const char *reason, int64_t now)
{
    esbulk__retry_decision_t dec;
    char why[512];
    int64_t at = 0;

    if (ambiguous && doc->id == NULL) {
        snprintf(why, sizeof(why), "%s; the document has no _id, so a retry could index it "
                 "twice", reason ? reason : "request failed after it was sent");
        deliver(eb, doc, ESBULK_OUTCOME_POSSIBLY, err, status, type, why);
        return;
    }
    doc->ambiguous |= ambiguous;
    dec = esbulk__retry_decide(doc->attempts, io->retry_max, now, doc->deadline_ms,
                               io->backoff_ms, io->backoff_max_ms, rnd32(io), &at);
    if (dec == ESBULK__RETRY_NOW) {
        doc->retry_at_ms = at;
        io->st.retried++;
        if (io->per_id && dest != NULL)
            esbulk__queue_push(&dest->retry_q, doc);
        else
            esbulk__queue_push(&io->retry, doc);
        return;
    }
    snprintf(why, sizeof(why), "%s after %d attempt%s: %s",
             dec == ESBULK__RETRY_GIVE_UP_MAX ? "retries exhausted" : "delivery timed out",
             (int)doc->attempts, doc->attempts == 1 ? "" : "s", reason ? reason : "failed");
    deliver(eb, doc, doc->ambiguous ? ESBULK_OUTCOME_POSSIBLY : ESBULK_OUTCOME_FAILED,
            dec == ESBULK__RETRY_GIVE_UP_MAX ? ESBULK_ERR_RETRIES_EXHAUSTED
                                             : ESBULK_ERR_DELIVERY_TIMEOUT,
            status, type, why);
}

/* Moves retries that are due back into their destinations, first in line. */
static void retries_due(esbulk_t *eb, io_t *io, int64_t now)
{
    esbulk__queue_t keep = {0}, due = {0};
    esbulk__doc_t *d;
    dest_t *dest;

    while ((d = esbulk__queue_pop(&io->retry)) != NULL)
        esbulk__queue_push(d->retry_at_ms <= now ? &due : &keep, d);
    io->retry = keep;
    /* reverse order so that push_front keeps the original order */
    {
        esbulk__doc_t *rev = NULL, *next;
        for (d = due.head; d != NULL; d = next) {
            next = d->next;
            d->next = rev;
            rev = d;
        }
        for (d = rev; d != NULL; d = next) {
            next = d->next;
            route_push(eb, io, d, 1, now);
        }
    }
    if (io->per_id) {
        for (dest = io->dests; dest != NULL; dest = dest->next) {
            int64_t latest = 0;
            for (d = dest->retry_q.head; d != NULL; d = d->next)
                if (d->retry_at_ms > latest)
                    latest = d->retry_at_ms;
            if (dest->retry_q.count > 0 && latest <= now) {
                for (d = dest->retry_q.head; d != NULL; d = d->next)
                    d->queued_ms = now;
                esbulk__queue_prepend(&dest->q, &dest->retry_q);
                dest->oldest_ms = now;
            }
        }
    }
}

static void expire_one(esbulk_t *eb, esbulk__doc_t *d)
{
    io_of(eb)->st.expired++;
    deliver(eb, d, d->ambiguous ? ESBULK_OUTCOME_POSSIBLY : ESBULK_OUTCOME_FAILED,
            ESBULK_ERR_DELIVERY_TIMEOUT, d->status, NULL,
            "not delivered within delivery.timeout.ms (no node accepted it in time)");
}

/* Fails documents whose delivery.timeout.ms passed while they waited. A
 * destination queue is in add order (retries, older, go first), so its
 * deadlines rise: the scan stops at the first one not due, and a deep
 * backlog costs nothing. */
static void expire_queue(esbulk_t *eb, esbulk__queue_t *q, int64_t now)
{
    esbulk__doc_t *d;

    while ((d = q->head) != NULL && d->deadline_ms > 0 && now >= d->deadline_ms)
        expire_one(eb, esbulk__queue_pop(q));
}

/* The retry list is not ordered: scanned whole (it holds only retries). */
static void expire_unordered(esbulk_t *eb, esbulk__queue_t *q, int64_t now)
{
    esbulk__queue_t keep = {0};
    esbulk__doc_t *d;

    while ((d = esbulk__queue_pop(q)) != NULL) {
        if (d->deadline_ms > 0 && now >= d->deadline_ms)
            expire_one(eb, d);
        else
            esbulk__queue_push(&keep, d);
    }
    *q = keep;
}

static void expire_all(esbulk_t *eb, io_t *io, int64_t now)
{
    dest_t *dest;

    for (dest = io->dests; dest != NULL; dest = dest->next) {
        expire_queue(eb, &dest->q, now);
        expire_unordered(eb, &dest->retry_q, now);
        if (dest->q.head != NULL)
            dest->oldest_ms = dest->q.head->queued_ms;
    }
    expire_unordered(eb, &io->retry, now);
}

/* ------------------------------------------------------------------------- */
/* Requests */

static size_t on_body(char *data, size_t size, size_t nmemb, void *userdata)
{
    req_t *r = userdata;

    if (esbulk__buf_add(&r->resp, data, size * nmemb) != ESBULK_OK)
        return 0;
    return size * nmemb;
}

/* Called by curl before each request it sends for a transfer. libcurl
 * re-sends a request by itself when a kept-alive connection dies without an
 * answer ("Connection died, retrying a fresh connect"): a request the server
 * had applied would be applied twice (documents without _id indexed twice)
 * with nobody knowing. Only the first request goes; the transfer then fails
 * (CURLE_ABORTED_BY_CALLBACK) and the retry decision stays here. */
static int on_prereq(void *userdata, char *primary_ip, char *local_ip, int primary_port,
                     int local_port)
{
    req_t *r = userdata;

    (void)primary_ip;
    (void)local_ip;
    (void)primary_port;
    (void)local_port;
    return r->prereqs++ == 0 ? CURL_PREREQFUNC_OK : CURL_PREREQFUNC_ABORT;
}

/* A kept buffer, emptied, with the given maximum (or a new one). */
static void buf_take(io_t *io, esbulk__buf_t *b, size_t max)
{
    if (io->nspare > 0) {
        *b = io->spare[--io->nspare];
        io->spare_bytes -= b->cap;
        esbulk__buf_reset(b);
        b->max = max;
    } else {
        esbulk__buf_init(b, max);
    }
}

/* Keeps b's allocation for a later buf_take, or frees it; b is left empty. */
static void buf_give(io_t *io, esbulk__buf_t *b)
{
    if (b->data != NULL && io->nspare < SPARE_BUFS && io->spare_bytes + b->cap <= SPARE_BYTES) {
        io->spare_bytes += b->cap;
        io->spare[io->nspare++] = *b;
        esbulk__buf_init(b, 0);
    } else {
        esbulk__buf_free(b);
    }
}

static void req_free(req_t *r)
{
    if (r == NULL)
        return;
    if (r->easy != NULL)
        curl_easy_cleanup(r->easy);
    curl_slist_free_all(r->headers);
    esbulk__buf_free(&r->body);
    esbulk__buf_free(&r->resp);
    free(r->docs);
    free(r);
}

static esbulk_err_t gzip_body(const esbulk__buf_t *in, esbulk__buf_t *out, int level)
{
    z_stream zs;
    size_t cap = compressBound((uLong)in->len) + 64;
    int rc;

    memset(&zs, 0, sizeof(zs));
    if (deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return ESBULK_ERR_NOMEM;
    out->data = malloc(cap);
    if (out->data == NULL) {
        deflateEnd(&zs);
        return ESBULK_ERR_NOMEM;
    }
    out->cap = cap;
    zs.next_in = (Bytef *)in->data;
    zs.avail_in = (uInt)in->len;
    zs.next_out = (Bytef *)out->data;
    zs.avail_out = (uInt)cap;
    rc = deflate(&zs, Z_FINISH);
    out->len = cap - zs.avail_out;
    deflateEnd(&zs);
    return rc == Z_STREAM_END ? ESBULK_OK : ESBULK_ERR_NOMEM;
}

/* The server's index, result and id of an item, copied into d where they
 * say more than d does: the index only when it differs from the one added
 * (an alias, a data stream), the result as a static string when it is one of
 * the usual ones, the id only when the server chose it. An allocation that
 * fails leaves the field NULL: the outcome does not depend on it. */
static void doc_take_item(esbulk__doc_t *d, const esbulk__item_t *it)
{
    static const char *const results[] = {"created", "updated", "deleted", "noop", "not_found"};
    size_t k;

    free(d->r_index);
    d->r_index = it->index != NULL && strcmp(it->index, d->index) != 0
                     ? esbulk__strdup(it->index) : NULL;
    free(d->r_result_own);
    d->r_result_own = NULL;
    d->r_result = NULL;
    if (it->result != NULL) {
        for (k = 0; k < ESBULK__ARRAY_LEN(results) && d->r_result == NULL; k++)
            if (strcmp(it->result, results[k]) == 0)
                d->r_result = results[k];
        if (d->r_result == NULL)
            d->r_result = d->r_result_own = esbulk__strdup(it->result);
    }
    if (d->id == NULL) {
        free(d->r_id);
        d->r_id = it->id != NULL ? esbulk__strdup(it->id) : NULL;
    }
}

/* Takes a batch from dest and starts it on target. */
static esbulk_err_t send_batch(esbulk_t *eb, io_t *io, dest_t *dest, target_t *target,
                               int64_t now)
{
    size_t max_docs = io->flush.flush_docs, i;
    req_t *r = calloc(1, sizeof(*r));
    esbulk__buf_t raw;
    char url[4096];
    esbulk__doc_t *d;

    if (r == NULL)
        return ESBULK_ERR_NOMEM;
    if (dest->batch_cap > 0 && dest->batch_cap < max_docs)
        max_docs = dest->batch_cap;
    if (max_docs > dest->q.count)
        max_docs = dest->q.count;
    r->docs = malloc(sizeof(*r->docs) * max_docs);
    if (r->docs == NULL) {
        free(r);
        return ESBULK_ERR_NOMEM;
    }
    buf_take(io, &raw, (size_t)-1);
    buf_take(io, &r->resp, eb->http.response_max_bytes);
    {
        /* documents up to flush.docs and, past the first, flush.bytes:
         * counted first, so that the body is allocated once */
        size_t n = 0, bytes = 0;

        for (d = dest->q.head; d != NULL && n < max_docs; d = d->next, n++) {
            if (n > 0 && bytes + d->lines_len > io->flush.flush_bytes)
                break;
            bytes += d->lines_len;
        }
        if (esbulk__buf_reserve(&raw, bytes) == ESBULK_OK)
            while (r->ndocs < n && esbulk__buf_add(&raw, dest->q.head->lines,
                                                   dest->q.head->lines_len) == ESBULK_OK)
                r->docs[r->ndocs++] = esbulk__queue_pop(&dest->q);
    }
    if (r->ndocs == 0) {
        buf_give(io, &raw);
        buf_give(io, &r->resp);
        req_free(r);
        return ESBULK_ERR_NOMEM;
    }
    dest->oldest_ms = dest->q.head ? dest->q.head->queued_ms : 0;
    if (io->gzip) {
        if (gzip_body(&raw, &r->body, io->gzip_level) != ESBULK_OK) {
            esbulk__buf_free(&r->body);
            r->body = raw;
            esbulk__buf_init(&raw, 0);
        } else {
            buf_give(io, &raw);
            r->headers = curl_slist_append(r->headers, "Content-Encoding: gzip");
        }
    } else {
        r->body = raw;
    }
    pthread_mutex_lock(&eb->lock);
    eb->stats.requests++;
    for (i = 0; i < r->ndocs; i++)
        eb->stats.bytes_raw += r->docs[i]->lines_len;
    eb->stats.bytes_sent += r->body.len;
    pthread_mutex_unlock(&eb->lock);

    r->easy = curl_easy_init();
    if (r->easy == NULL)
        goto nomem;
    {
        struct curl_slist *h = curl_slist_append(r->headers, "Content-Type: application/x-ndjson");
        if (h == NULL)
            goto nomem;
        r->headers = h;
        /* no "Expect: 100-continue" round trip before large bodies */
        if ((h = curl_slist_append(r->headers, "Expect:")) == NULL)
            goto nomem;
        r->headers = h;
    }
    if (esbulk__http_apply(r->easy, &eb->http, &r->headers) != ESBULK_OK)
        goto nomem;
    snprintf(url, sizeof(url), "%s%s", target->url, io->bulk_path);
    curl_easy_setopt(r->easy, CURLOPT_URL, url);
    curl_easy_setopt(r->easy, CURLOPT_POST, 1L);
    curl_easy_setopt(r->easy, CURLOPT_POSTFIELDS, r->body.data);
    curl_easy_setopt(r->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body.len);
    curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, r->headers);
    curl_easy_setopt(r->easy, CURLOPT_TIMEOUT_MS, (long)io->request_timeout_ms);
    curl_easy_setopt(r->easy, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(r->easy, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(r->easy, CURLOPT_PRIVATE, r);
    curl_easy_setopt(r->easy, CURLOPT_PREREQFUNCTION, on_prereq);
    curl_easy_setopt(r->easy, CURLOPT_PREREQDATA, r);
    curl_easy_setopt(r->easy, CURLOPT_ERRORBUFFER, r->errbuf);
    /* Compressed answers only with compression=gzip: OpenSearch gzips any
     * answer the client accepts so, and on a fast network that costs both
     * sides more CPU than the bytes it saves (filter_path keeps answers small) */
    if (io->gzip)
        curl_easy_setopt(r->easy, CURLOPT_ACCEPT_ENCODING, "");
    if (curl_multi_add_handle(io->multi, r->easy) != CURLM_OK)
        goto nomem;
    for (i = 0; i < r->ndocs; i++)
        r->docs[i]->attempts++;
    r->target = target;
    r->dest = dest;
    r->start_ms = now;
    io->idle_snapshot = 0;
    target->inflight++;
    target->requests++;
    dest->inflight++;
    io->running++;
    r->next = io->reqs;
    if (io->reqs != NULL)
        io->reqs->prev = r;
    io->reqs = r;
    return ESBULK_OK;
nomem:
    /* put the documents back, first in line, in order */
    for (i = r->ndocs; i > 0; i--)
        dest_push(dest, r->docs[i - 1], 1, now);
    r->ndocs = 0;
    req_free(r);
    return ESBULK_ERR_NOMEM;
}

static int dest_blocked(io_t *io, const dest_t *dest)
{
    /* ordering=per_id: one request at a time, and retries go first */
    return io->per_id && (dest->inflight > 0 || dest->retry_q.count > 0);
}

static void send_ready(esbulk_t *eb, io_t *io, int force, int64_t now)
{
    dest_t *dest;

    for (dest = io->dests; dest != NULL; dest = dest->next) {
        while (!dest_blocked(io, dest) &&
               esbulk__should_flush(&io->flush, dest->q.count, dest->q.bytes, dest->oldest_ms,
                                    now, force)) {
            target_t *t = dest_target(eb, io, dest, now);
            if (t == NULL || send_batch(eb, io, dest, t, now) != ESBULK_OK)
                break;
        }
    }
}

static void mark_down(esbulk_t *eb, io_t *io, target_t *t, const char *why, int64_t now)
{
    if (t->down_until <= now)
        esbulk__log(&eb->log, ESBULK_LOG_WARNING, "io", "node %s is down (%s): re-routing",
                    t->name ? t->name : t->url, why);
    t->down_until = now + io->recheck_ms;
    io->refresh_wanted = 1;
}

/* Handles one finished request. */
static void complete(esbulk_t *eb, io_t *io, req_t *r, CURLcode rc, int64_t now)
{
    long status = 0;
    size_t i;

    target_latency(r->target, now - r->start_ms);
    r->target->inflight--;
    r->dest->inflight--;
    io->running--;
    if (rc != CURLE_OK) {
        /* Sent: some byte of the request went out (CURLINFO_REQUEST_SIZE
         * counts them, over curl's own attempts). A refused connection, a
         * TLS handshake or certificate failure, a connect timeout send
         * nothing: not applied, safe to retry. */
        long request_size = 0;
        int sent;
        char why[CURL_ERROR_SIZE + 128];

        curl_easy_getinfo(r->easy, CURLINFO_REQUEST_SIZE, &request_size);
        sent = request_size > 0 || r->prereqs > 1;
        r->target->errors++;
        if (r->prereqs > 1)
            snprintf(why, sizeof(why), "%s: the connection closed without an answer",
                     r->target->url);
        else
            snprintf(why, sizeof(why), "%s: %s", r->target->url,
                     r->errbuf[0] ? r->errbuf : curl_easy_strerror(rc));
        if (rc == CURLE_WRITE_ERROR)
            snprintf(why, sizeof(why), "%s: the answer is larger than response.max.bytes",
                     r->target->url);
        else if (rc != CURLE_OPERATION_TIMEDOUT || !sent)
            mark_down(eb, io, r->target, why, now);
        if (!sent && (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE ||
                      rc == CURLE_SSL_CERTPROBLEM || rc == CURLE_SSL_ISSUER_ERROR)) {
            /* a certificate that does not verify will not verify on retry */
            for (i = 0; i < r->ndocs; i++)
                deliver(eb, r->docs[i], ESBULK_OUTCOME_FAILED, ESBULK_ERR_TRANSPORT, 0, NULL, why);
            return;
        }
        for (i = 0; i < r->ndocs; i++)
            retry_or_give_up(eb, io, r->dest, r->docs[i], sent, ESBULK_ERR_TRANSPORT, 0, NULL,
                             why, now);
        return;
    }
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
    esbulk__log(&eb->log, ESBULK_LOG_DEBUG, "io", "%s: %zu documents, %zu bytes: HTTP %ld in %lld ms",
                r->target->url, r->ndocs, r->body.len, status, (long long)(now - r->start_ms));
    {
        esbulk__resp_t resp;
        esbulk__doc_t **docs = r->docs;

        if (esbulk__response_parse(status, r->resp.data ? r->resp.data : "", r->resp.len,
                                   r->ndocs, io->retry_cluster_block, &resp) != ESBULK_OK) {
            for (i = 0; i < r->ndocs; i++)
                retry_or_give_up(eb, io, r->dest, docs[i], 1, ESBULK_ERR_NOMEM, (int32_t)status,
                                 NULL, "out of memory reading the response", now);
            return;
        }
        if (status == 429) {
            pthread_mutex_lock(&eb->lock);
            eb->stats.http_429++;
            pthread_mutex_unlock(&eb->lock);
        }
        switch (resp.klass) {
        case ESBULK__RESP_OK:
            /* after a 413, grow the batch again step by step */
            if (r->dest->batch_cap > 0 && r->ndocs >= r->dest->batch_cap &&
                ++r->dest->cap_ok >= 16) {
                r->dest->cap_ok = 0;
                r->dest->batch_cap = r->dest->batch_cap * 2 >= io->flush.flush_docs
                                         ? 0 : r->dest->batch_cap * 2;
            }
            for (i = 0; i < r->ndocs; i++) {
                esbulk__item_t *it = &resp.items[i];
                esbulk__doc_t *d = docs[i];

                d->status = it->status;
                doc_take_item(d, it);
                d->seq_no = it->seq_no;
                d->primary_term = it->primary_term;
                d->version = it->version;
                if (it->klass == ESBULK__ITEM_OK) {
                    deliver(eb, d, ESBULK_OUTCOME_INDEXED, ESBULK_OK, it->status, NULL, NULL);
                } else if (it->klass == ESBULK__ITEM_RETRY) {
                    if (it->status == 429) {
                        io->st.item_429++;
                    }
                    retry_or_give_up(eb, io, r->dest, d, 0, ESBULK_ERR_ITEM, it->status,
                                     it->error_type, it->error_reason, now);
                } else if (it->status == 409 && d->ambiguous && d->op == ESBULK_OP_CREATE) {
                    deliver(eb, d, ESBULK_OUTCOME_POSSIBLY, ESBULK_ERR_ITEM, it->status,
                            it->error_type,
                            "version conflict on a retry after an attempt that broke: most "
                            "likely created by that attempt");
                } else {
                    char why[64];
                    snprintf(why, sizeof(why), "the server answered status %d for this document",
                             (int)it->status);
                    deliver(eb, d, ESBULK_OUTCOME_FAILED, ESBULK_ERR_ITEM, it->status,
                            it->error_type, it->error_reason ? it->error_reason : why);
                }
            }
            break;
        case ESBULK__RESP_RETRY:
        case ESBULK__RESP_RETRY_AMBIGUOUS:
            if (status >= 500 && status != 503)
                r->target->errors++;
            for (i = 0; i < r->ndocs; i++)
                retry_or_give_up(eb, io, r->dest, docs[i], resp.klass == ESBULK__RESP_RETRY_AMBIGUOUS,
                                 resp.err != ESBULK_OK ? resp.err : ESBULK_ERR_HTTP,
                                 (int32_t)status, resp.error_type, resp.error_reason, now);
            break;
        case ESBULK__RESP_SPLIT:
            pthread_mutex_lock(&eb->lock);
            eb->stats.split_413++;
            pthread_mutex_unlock(&eb->lock);
            if (r->ndocs == 1) {
                deliver(eb, docs[0], ESBULK_OUTCOME_FAILED, ESBULK_ERR_HTTP, 413,
                        resp.error_type,
                        "HTTP 413: the document alone is larger than the server accepts "
                        "(http.max_content_length)");
            } else {
                r->dest->batch_cap = r->ndocs / 2;
                r->dest->cap_ok = 0;
                for (i = r->ndocs; i > 0; i--) {
                    docs[i - 1]->attempts--; /* a split is not a failed attempt */
                    dest_push(r->dest, docs[i - 1], 1, now);
                }
            }
            break;
        case ESBULK__RESP_FAIL:
            for (i = 0; i < r->ndocs; i++)
                deliver(eb, docs[i], ESBULK_OUTCOME_FAILED, resp.err, (int32_t)status,
                        resp.error_type, resp.error_reason);
            break;
        }
        esbulk__response_free(&resp);
    }
}

static void read_completions(esbulk_t *eb, io_t *io, int64_t now)
{
    CURLMsg *msg;
    int left;

    while ((msg = curl_multi_info_read(io->multi, &left)) != NULL) {
        req_t *r = NULL;

        if (msg->msg != CURLMSG_DONE)
            continue;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&r);
        curl_multi_remove_handle(io->multi, msg->easy_handle);
        if (r->prev) r->prev->next = r->next; else io->reqs = r->next;
        if (r->next) r->next->prev = r->prev;
        complete(eb, io, r, msg->data.result, now);
        r->ndocs = 0;
        buf_give(io, &r->body);
        buf_give(io, &r->resp);
        req_free(r);
    }
}

/* ------------------------------------------------------------------------- */
/* Statistics snapshot (per node), published under eb->lock */

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static void snapshot(esbulk_t *eb, io_t *io, int64_t now)
{
    json_t *arr = json_array();
    target_t *t;
    char *text;

    if (arr == NULL)
        return;
    for (t = io->targets; t != NULL; t = t->next) {
        json_t *o = json_object(), *lat = json_object();
        size_t queued = 0;
        dest_t *dest;

        if (o == NULL || lat == NULL) {
            json_decref(o);
            json_decref(lat);
            continue;
        }
        for (dest = io->dests; dest != NULL; dest = dest->next)
            if (dest->kind == DEST_NODE && t->node_id && strcmp(dest->node_id, t->node_id) == 0)
                queued += dest->q.count;
        json_object_set_new(o, "url", json_string(t->url));
        json_object_set_new(o, "name", t->name ? json_string(t->name) : json_null());
        json_object_set_new(o, "node_id", t->node_id ? json_string(t->node_id) : json_null());
        json_object_set_new(o, "seed", json_boolean(t->node_id == NULL));
        json_object_set_new(o, "queued_docs", json_integer((json_int_t)queued));
        json_object_set_new(o, "inflight", json_integer(t->inflight));
        json_object_set_new(o, "requests", json_integer((json_int_t)t->requests));
        json_object_set_new(o, "errors", json_integer((json_int_t)t->errors));
        json_object_set_new(o, "down", json_boolean(t->down_until > now));
        if (t->nlat > 0) {
            int32_t sorted[LAT_RING];
            memcpy(sorted, t->lat, sizeof(int32_t) * (size_t)t->nlat);
            qsort(sorted, (size_t)t->nlat, sizeof(int32_t), cmp_i32);
            json_object_set_new(lat, "p50", json_integer(sorted[(t->nlat - 1) * 50 / 100]));
            json_object_set_new(lat, "p95", json_integer(sorted[(t->nlat - 1) * 95 / 100]));
            json_object_set_new(lat, "p99", json_integer(sorted[(t->nlat - 1) * 99 / 100]));
        }
        json_object_set_new(o, "latency_ms", lat);
        json_array_append_new(arr, o);
    }
    text = json_dumps(arr, JSON_COMPACT);
    json_decref(arr);
    if (text == NULL)
        return;
    pthread_mutex_lock(&eb->lock);
    free(eb->node_stats);
    eb->node_stats = text;
    pthread_mutex_unlock(&eb->lock);
}

/* ------------------------------------------------------------------------- */
/* Shutdown: whatever is left gets its result */

static void fail_queue(esbulk_t *eb, esbulk__queue_t *q)
{
    esbulk__doc_t *d;

    while ((d = esbulk__queue_pop(q)) != NULL)
        deliver(eb, d, d->ambiguous ? ESBULK_OUTCOME_POSSIBLY : ESBULK_OUTCOME_FAILED,
                ESBULK_ERR_CLOSED, d->status, NULL, "not delivered: closed");
}

static void abort_everything(esbulk_t *eb, io_t *io)
{
    esbulk__queue_t incoming;
    dest_t *dest;

    /* in-flight requests: sent, so their fate is unknown */
    while (io->reqs != NULL) {
        req_t *r = io->reqs;
        size_t k;

        io->reqs = r->next;
        curl_multi_remove_handle(io->multi, r->easy);
        for (k = 0; k < r->ndocs; k++)
            deliver(eb, r->docs[k], ESBULK_OUTCOME_POSSIBLY, ESBULK_ERR_CLOSED, 0, NULL,
                    "closed while its request was in flight: it may have been indexed");
        r->target->inflight--;
        r->dest->inflight--;
        r->ndocs = 0;
        req_free(r);
    }
    io->running = 0;
    for (dest = io->dests; dest != NULL; dest = dest->next) {
        fail_queue(eb, &dest->retry_q);
        fail_queue(eb, &dest->q);
    }
    fail_queue(eb, &io->retry);
    pthread_mutex_lock(&eb->lock);
    incoming = eb->incoming;
    memset(&eb->incoming, 0, sizeof(eb->incoming));
    pthread_mutex_unlock(&eb->lock);
    fail_queue(eb, &incoming);
}

/* ------------------------------------------------------------------------- */
/* The loop */

static int64_t next_timeout(io_t *io, int64_t now)
{
    int64_t due = now + 100, t;
    dest_t *dest;
    esbulk__doc_t *d;

    /* A destination already due was offered to send_ready() this round:
     * if it is still waiting, its node has no request slot free, and a
     * completion (socket activity) wakes the poll. Counting it would spin. */
    for (dest = io->dests; dest != NULL; dest = dest->next) {
        t = esbulk__flush_due_ms(&io->flush, dest->q.count, dest->oldest_ms);
        if (t > now && t < due)
            due = t;
        for (d = dest->retry_q.head; d != NULL; d = d->next)
            if (d->retry_at_ms > now && d->retry_at_ms < due)
                due = d->retry_at_ms;
    }
    for (d = io->retry.head; d != NULL; d = d->next)
        if (d->retry_at_ms < due)
            due = d->retry_at_ms;
    return due <= now ? 0 : due - now;
}

static void io_free(io_t *io)
{
    dest_t *dest, *dn;
    target_t *t, *tn;

    for (dest = io->dests; dest != NULL; dest = dn) {
        dn = dest->next;
        free(dest->key);
        free(dest->node_id);
        free(dest->index);
        free(dest);
    }
    for (t = io->targets; t != NULL; t = tn) {
        tn = t->next;
        free(t->url);
        free(t->node_id);
        free(t->name);
        free(t);
    }
    if (io->cluster != NULL)
        esbulk__cluster_release(io->cluster);
    entry_cache_clear(io);
    if (io->multi != NULL)
        curl_multi_cleanup(io->multi);
    free(io->bulk_path);
    free(io->shard_dest);
    while (io->nspare > 0)
        esbulk__buf_free(&io->spare[--io->nspare]);
    free(io);
}

static void *io_main(void *arg)
{
    esbulk_t *eb = arg;
    io_t *io = eb->io;

    for (;;) {
        esbulk__queue_t incoming;
        esbulk__doc_t *d;
        int force, terminate, abort_all, still;
        int64_t now, timeout;

        pthread_mutex_lock(&eb->lock);
        incoming = eb->incoming;
        memset(&eb->incoming, 0, sizeof(eb->incoming));
        force = eb->flushers > 0 || eb->closing;
        terminate = eb->terminate;
        abort_all = eb->abort_all;
        pthread_mutex_unlock(&eb->lock);

        now = esbulk__now_ms();
        entry_cache_clear(io); /* a new round sees the topology's latest */
        if (io->refresh_wanted && now - io->last_refresh_ms >= REFRESH_MIN_GAP_MS) {
            char errstr[256];
            io->refresh_wanted = 0;
            io->last_refresh_ms = now;
            if (esbulk_topology_refresh(eb->topo, errstr, sizeof(errstr)) != ESBULK_OK)
                esbulk__log(&eb->log, ESBULK_LOG_WARNING, "io", "topology refresh: %s", errstr);
            now = esbulk__now_ms();
        }
        sync_targets(eb, io);
        while ((d = esbulk__queue_pop(&incoming)) != NULL)
            route_push(eb, io, d, 0, now);
        if (abort_all) {
            abort_everything(eb, io);
            flush_done(eb, io);
            if (terminate)
                break;
        }
        retries_due(eb, io, now);
        if (now >= io->next_expire_ms) {
            expire_all(eb, io, now);
            io->next_expire_ms = now + EXPIRE_SCAN_MS;
        }
        send_ready(eb, io, force, now);
        curl_multi_perform(io->multi, &still);
        read_completions(eb, io, esbulk__now_ms());
        flush_done(eb, io);
        now = esbulk__now_ms();
        if (now >= io->next_snapshot_ms || (io->running == 0 && io->next_snapshot_ms != 0 &&
                                            !io->idle_snapshot)) {
            io->idle_snapshot = io->running == 0;
            snapshot(eb, io, now);
            io->next_snapshot_ms = now + SNAPSHOT_MS;
        }
        timeout = next_timeout(io, now);
        if (timeout > 0)
            curl_multi_poll(io->multi, NULL, 0, (int)timeout, NULL);
    }
    snapshot(eb, io, esbulk__now_ms());
    return NULL;
}

esbulk_err_t esbulk__io_start(esbulk_t *eb, char *errstr, size_t errstr_size)
{
    io_t *io = calloc(1, sizeof(*io));
    const esbulk_conf_t *conf = eb->conf;
    esbulk__buf_t path;

    if (io == NULL || (io->multi = curl_multi_init()) == NULL) {
        free(io);
        esbulk__errstr(errstr, errstr_size, "out of memory");
        return ESBULK_ERR_NOMEM;
    }
    io->rng = eb->node_tag | 1;
    io->flush.flush_bytes = (size_t)esbulk__conf_int(conf, ESBULK__C_FLUSH_BYTES);
    io->flush.flush_docs = (size_t)esbulk__conf_int(conf, ESBULK__C_FLUSH_DOCS);
    io->flush.flush_interval_ms = esbulk__conf_int(conf, ESBULK__C_FLUSH_INTERVAL_MS);
    io->level = (int)esbulk__conf_int(conf, ESBULK__C_ROUTING_LEVEL);
    io->per_id = esbulk__conf_int(conf, ESBULK__C_ORDERING) == 1;
    io->max_inflight = (int)esbulk__conf_int(conf, ESBULK__C_MAX_INFLIGHT_PER_NODE);
    io->gzip = esbulk__conf_int(conf, ESBULK__C_COMPRESSION) == 1;
    io->gzip_level = (int)esbulk__conf_int(conf, ESBULK__C_COMPRESSION_LEVEL);
    io->retry_max = (int32_t)esbulk__conf_int(conf, ESBULK__C_RETRY_MAX);
    io->backoff_ms = esbulk__conf_int(conf, ESBULK__C_RETRY_BACKOFF_MS);
    io->backoff_max_ms = esbulk__conf_int(conf, ESBULK__C_RETRY_BACKOFF_MAX_MS);
    io->request_timeout_ms = esbulk__conf_int(conf, ESBULK__C_REQUEST_TIMEOUT_MS);
    io->recheck_ms = esbulk__conf_int(conf, ESBULK__C_NODE_RECHECK_MS);
    io->retry_cluster_block = (int)esbulk__conf_int(conf, ESBULK__C_RETRY_ON_CLUSTER_BLOCK);
    esbulk__buf_init(&path, 4096);
    /* Only what the results show. With result.failures_only the successes
     * are never shown: status and result (a delete's "not_found") say which
     * item succeeded, and a failure needs only its error. */
    if (esbulk__buf_adds(&path, esbulk__conf_int(conf, ESBULK__C_RESULT_FAILURES_ONLY)
                                    ? "/_bulk?filter_path=items.*.status,items.*.result,"
                                    : "/_bulk?filter_path=items.*._index,items.*._id,"
                                      "items.*.status,items.*.result,items.*._seq_no,"
                                      "items.*._primary_term,items.*._version,") != ESBULK_OK ||
        esbulk__buf_adds(&path, "items.*.error.type,items.*.error.reason,"
                                "items.*.error.caused_by.type,items.*.error.caused_by.reason,"
                                "error.type,error.reason,status") != ESBULK_OK)
        goto nomem;
    if (*esbulk__conf_str(conf, ESBULK__C_BULK_PIPELINE) != '\0') {
        char *esc = esbulk__url_escape(esbulk__conf_str(conf, ESBULK__C_BULK_PIPELINE));
        if (esc == NULL || esbulk__buf_adds(&path, "&pipeline=") || esbulk__buf_adds(&path, esc)) {
            free(esc);
            goto nomem;
        }
        free(esc);
    }
    if (esbulk__conf_int(conf, ESBULK__C_BULK_REFRESH) != 0 &&
        (esbulk__buf_adds(&path, "&refresh=") ||
         esbulk__buf_adds(&path, esbulk__conf_int(conf, ESBULK__C_BULK_REFRESH) == 1 ? "true"
                                                                               : "wait_for")))
        goto nomem;
    io->bulk_path = path.data;
    eb->io = io;
    if (pthread_create(&eb->thread, NULL, io_main, eb) != 0) {
        eb->io = NULL;
        io_free(io);
        esbulk__errstr(errstr, errstr_size, "cannot start the I/O thread");
        return ESBULK_ERR_NOMEM;
    }
    eb->thread_started = 1;
    return ESBULK_OK;
nomem:
    esbulk__buf_free(&path);
    io_free(io);
    esbulk__errstr(errstr, errstr_size, "out of memory");
    return ESBULK_ERR_NOMEM;
}

void esbulk__io_wakeup(esbulk_t *eb)
{
    io_t *io = eb->io;

    if (io != NULL)
        curl_multi_wakeup(io->multi);
}

void esbulk__io_join(esbulk_t *eb)
{
    if (!eb->thread_started)
        return;
    pthread_join(eb->thread, NULL);
    eb->thread_started = 0;
    io_free(eb->io);
    eb->io = NULL;
}
