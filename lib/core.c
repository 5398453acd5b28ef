/* The engine core: routing to destinations, batching, retries, per_id
 * ordering, 413 splits, answers to outcomes, expiry and bounded state. See
 * core.h: no I/O, no threads, no clock here. */
#include "core.h"
#include "docmem.h"
#include "map.h"
#include "response.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define LAT_RING 512
#define EXPIRE_SCAN_MS 100
#define SWEEP_MAX_MS 1000
/* the most bytes of arrays the answered requests kept hold (send_free),
 * unless cf.spare_send_bytes says otherwise */
#define SPARE_SEND_BYTES ((size_t)16 << 20)

typedef struct core_target_s {
    char *url;          /* base URL */
    char *node_id;      /* NULL for a seed */
    char *name;
    int present;        /* in the current cluster view (or a seed) */
    int inflight;
    int inflight_unrouted; /* of which from unrouted destinations */
    int64_t down_until; /* > now: treated as down */
    int down_said;      /* its going down was logged, and it has not answered since */
    int slow_said;      /* a request to it that timed out was logged, and it has not
                           answered since */
    uint64_t requests, errors;
    int32_t lat[LAT_RING];
    int nlat, latpos;
    struct core_target_s *next;
} target_t;

/* DEST_ANY: routing.level=off's documents, all alike; DEST_UNROUTED: those
 * the client could not route (an index not read or not existing yet): see
 * dest_target. Both go to any node. */
typedef enum { DEST_NODE, DEST_SHARD, DEST_ANY, DEST_UNROUTED } dest_kind_t;

typedef struct core_ix_s ix_t;

typedef struct core_dest_s {
    char *key;
    dest_kind_t kind;
    char *node_id;      /* DEST_NODE */
    ix_t *ix;           /* DEST_SHARD and per_id's unrouted one: the index (holds a use) */
    int32_t shard;      /* DEST_SHARD */
    esbulk__queue_t q;
    esbulk__ahead_t ahead; /* q's ahead links: send_batch prefetches by them (it
                              may hold up to buffer.max.docs, out of every cache) */
    esbulk__queue_t retry_q; /* ordering=per_id: retries waiting to go first */
    int64_t retry_latest;    /* the latest retry_at in retry_q: it goes then, whole */
    int64_t retry_deadline;  /* the earliest deadline_ms in retry_q (INT64_MAX: none) */
    int inflight;
    size_t batch_cap;   /* after a 413: at most this many documents */
    int cap_ok;         /* full-size successes since; 16 double the cap again */
    int64_t oldest_ms, used_ms;
    int active;         /* in core->active: it holds documents */
    struct core_dest_s *prev, *next;   /* core->dests: all */
    struct core_dest_s *aprev, *anext; /* core->active */
} dest_t;

struct core_ix_s {
    char *name;
    esbulk__index_t *e;       /* the last good fetch; NULL: none yet */
    int fetching;             /* handed to the driver, not answered yet */
    int fetch_failed;         /* the last read failed, and that was logged */
    int want_fetch;           /* in core->fetch_q */
    int64_t next_fetch_ms;    /* due for a fetch (again) at */
    int64_t used_ms;
    int ndests;               /* destinations pointing here */
    esbulk__queue_t wait;     /* documents waiting for the first layout */
    int no_wait;              /* the wait timed out: unrouted until the read ends */
    int concrete;             /* e names this very index as its write index */
    dest_t *udest;            /* per_id: this index's unrouted destination */
    dest_t **shard_dest;      /* e's destination per shard (NULL: not yet) */
    int32_t nshard_dest;      /* valid entries (0: none) */
    int32_t shard_dest_cap;
    uint64_t shard_epoch;     /* core->dest_epoch when shard_dest was filled */
    ix_t *prev, *next;        /* core->ixs */
    ix_t *fnext;              /* core->fetch_q */
};

/* Retries looked for at the same time (retry_look_at), in the order they
 * failed; min_deadline: the earliest deadline_ms among them (INT64_MAX:
 * none), so that the expiry scan skips the bucket until then. */
typedef struct retry_bucket_s {
    int64_t at;
    int64_t min_deadline;
    esbulk__queue_t q;
} retry_bucket_t;

/* A destination found by route() for a hinted document (its index entry's
 * serial and shard), kept for the rest of one esbulk__core_add_list(): the
 * documents after it with the same hint take it without a look-up. (No
 * destination is freed while a list is routed.) */
#define ROUTE_CACHE 64
typedef struct {
    uint64_t serial;
    unsigned gen;             /* the call's (core->rcache_gen); other: empty */
    int32_t shard;
    int concrete;             /* the document's index_concrete */
    struct core_dest_s *dest;
} route_cache_t;

struct esbulk__core_s {
    esbulk__core_conf_t cf;
    esbulk__log_t log;
    uint64_t rng;
    esbulk__map_t dest_map;   /* key -> dest_t */
    dest_t *dests;            /* all, most recently made first */
    dest_t *active;           /* those holding documents (walked every round) */
    size_t active_routed;     /* of which not unrouted ones */
    size_t ndests;
    uint64_t dest_epoch;      /* bumped whenever a destination is freed */
    esbulk__map_t ix_map;     /* name -> ix_t */
    ix_t *ixs;
    size_t nixs;
    ix_t *last_ix;            /* the last looked up: documents come in runs */
    route_cache_t rcache[ROUTE_CACHE]; /* by shard, modulo */
    unsigned rcache_gen;
    ix_t *fetch_head, *fetch_tail;
    target_t *targets;
    char **seeds;
    int nseeds;
    esbulk__cluster_t *cluster; /* the view the targets were built from */
    int cluster_fetching;     /* a cluster read was asked for and not answered */
    int cluster_failed;       /* the last cluster read failed: index reads will too */
    int refresh_wanted;
    int layouts_changed;      /* an index entry came or went (esbulk__core_layouts) */
    int64_t last_ask_ms;      /* the last cluster read asked for */
    int64_t view_ms;          /* the last cluster view received */
    /* documents waiting for their retry time, in buckets by the time they
     * are looked for (retry_look_at), earliest first */
    struct retry_bucket_s *rb;
    size_t nrb, caprb;
    uint64_t retry_walked;    /* waiting retries the scans visited (for the tests) */
    esbulk__send_t *inflight; /* requests in flight */
    size_t ninflight;
    esbulk__send_t *spare_sends; /* answered requests kept with their arrays (send_free) */
    size_t nspare_sends;
    uint64_t sends_made;      /* requests' arrays allocated (for the tests) */
    esbulk__resp_scratch_t scratch; /* the answers' items, read one answer at a time */
    size_t held;              /* documents without an outcome */
    size_t waiting;           /* of which in the indices' wait queues */
    esbulk__queue_t done;     /* outcomes known, for esbulk__core_take_done() */
    esbulk__drops_t drops;    /* the lines deliver() gave back, as a run of one block's */
    esbulk__ahead_t done_ahead; /* its ahead links: the serving thread prefetches by them */
    esbulk__core_counts_t counts;
    unsigned rr;
    int64_t next_expire_ms, next_sweep_ms;
};

static void expire_ordered(esbulk__core_t *c, esbulk__queue_t *q, esbulk__ahead_t *ahead,
                           int64_t now);
static void release_waits(esbulk__core_t *c, int64_t now);

/* ------------------------------------------------------------------------- */
/* Small helpers */

static uint32_t rnd32(esbulk__core_t *c)
{
    c->rng ^= c->rng << 13;
    c->rng ^= c->rng >> 7;
    c->rng ^= c->rng << 17;
    return (uint32_t)(c->rng >> 16);
}

static void deliver(esbulk__core_t *c, esbulk__doc_t *d, esbulk_outcome_t outcome,
                    esbulk_err_t err, int32_t status, const char *type, const char *reason,
                    const char *cause_type, const char *cause_reason)
{
    /* a success with nothing more to say copies and frees nothing there */
    esbulk__doc_set_outcome(d, outcome, err, status, type, reason, cause_type, cause_reason);
    switch (outcome) {
    case ESBULK_OUTCOME_INDEXED: c->counts.indexed++; break;
    case ESBULK_OUTCOME_FAILED: c->counts.failed++; break;
    case ESBULK_OUTCOME_POSSIBLY: c->counts.possibly++; break;
    }
    if (err == ESBULK_ERR_CLOSED)
        c->counts.closed++;
    c->counts.held_bytes += d->body_bytes;
    /* the lines are not needed any more (but for a dead-letter output):
     * given back now, while the record is in cache, a run of them at a
     * time (ended before the outcomes are handed over) */
    if (!c->cf.keep_body || outcome == ESBULK_OUTCOME_INDEXED)
        esbulk__doc_drop_lines_run(d, &c->drops);
    esbulk__queue_push_ahead(&c->done, &c->done_ahead, d);
    c->held--;
}

static int64_t sweep_every(const esbulk__core_t *c)
{
    int64_t half = c->cf.idle_ms / 2;

    return half < 1 ? 1 : (half < SWEEP_MAX_MS ? half : SWEEP_MAX_MS);
}

/* ------------------------------------------------------------------------- */
/* Targets: the HTTP endpoints (discovered nodes and seeds) */

static void target_free(target_t *t)
{
    free(t->url);
    free(t->node_id);
    free(t->name);
    free(t);
}

static target_t *target_get(esbulk__core_t *c, const char *url, const char *node_id,
                            const char *name)
{
    target_t *t;

    for (t = c->targets; t != NULL; t = t->next)
        if (strcmp(t->url, url) == 0)
            break;
    if (t == NULL) {
        t = calloc(1, sizeof(*t));
        if (t == NULL || (t->url = esbulk__strdup(url)) == NULL) {
            free(t);
            return NULL;
        }
        t->next = c->targets;
        c->targets = t;
    }
    if (node_id != NULL && (t->node_id == NULL || strcmp(t->node_id, node_id) != 0)) {
        char *id = esbulk__strdup(node_id), *nm = esbulk__strdup(name ? name : node_id);
        if (id == NULL || nm == NULL) {
            free(id);
            free(nm);
            t->present = 1;
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

/* Targets that left the view and carry no request are freed. */
static void targets_prune(esbulk__core_t *c)
{
    target_t **pp = &c->targets, *t;

    while ((t = *pp) != NULL) {
        if (!t->present && t->inflight == 0) {
            *pp = t->next;
            target_free(t);
        } else {
            pp = &t->next;
        }
    }
}

static void sync_targets(esbulk__core_t *c)
{
    target_t *t;
    int i;

    for (t = c->targets; t != NULL; t = t->next)
        t->present = 0;
    for (i = 0; i < c->nseeds; i++)
        target_get(c, c->seeds[i], NULL, NULL);
    if (c->cluster != NULL && !c->cluster->seeds_only)
        for (i = 0; i < c->cluster->nnodes; i++)
            if (c->cluster->nodes[i].http != NULL && c->cluster->nodes[i].reachable)
                target_get(c, c->cluster->nodes[i].http, c->cluster->nodes[i].id,
                           c->cluster->nodes[i].name);
    targets_prune(c);
}

/* ulimit: at most this many of its requests may be unrouted ones (see
 * dest_target). */
static int target_usable(const esbulk__core_t *c, const target_t *t, int64_t now, int ulimit)
{
    return t->present && t->down_until <= now && t->inflight < c->cf.max_inflight &&
           t->inflight_unrouted < ulimit;
}

static target_t *target_by_node(esbulk__core_t *c, const char *node_id)
{
    target_t *t;

    for (t = c->targets; t != NULL; t = t->next)
        if (t->node_id != NULL && strcmp(t->node_id, node_id) == 0)
            return t;
    return NULL;
}

/* Any usable target, in turn. Discovered nodes are preferred over seeds
 * when the cluster view has them; a target that is down is used only when
 * every one is down (the request then tests whether it is back). */
static target_t *target_any(esbulk__core_t *c, int64_t now, int ulimit)
{
    target_t *t, *pick = NULL;
    unsigned n = 0, k;
    int want_nodes = c->cluster != NULL && !c->cluster->seeds_only;

    for (t = c->targets; t != NULL; t = t->next)
        if (target_usable(c, t, now, ulimit) && (!want_nodes || t->node_id != NULL))
            n++;
    if (n == 0 && want_nodes) {
        want_nodes = 0;
        for (t = c->targets; t != NULL; t = t->next)
            if (target_usable(c, t, now, ulimit))
                n++;
    }
    if (n == 0) {
        /* every one is down: try the one down longest (its documents back
         * off between attempts, so this does not spin) */
        for (t = c->targets; t != NULL; t = t->next)
            if (t->present && t->inflight < c->cf.max_inflight && t->inflight_unrouted < ulimit &&
                (pick == NULL || t->down_until < pick->down_until))
                pick = t;
        return pick;
    }
    k = c->rr++ % n;
    for (t = c->targets; t != NULL; t = t->next)
        if (target_usable(c, t, now, ulimit) && (!want_nodes || t->node_id != NULL) &&
            k-- == 0)
            return t;
    return NULL;
}

static void target_latency(target_t *t, int64_t ms)
{
    t->lat[t->latpos] = (int32_t)(ms > INT32_MAX ? INT32_MAX : ms < 0 ? 0 : ms);
    t->latpos = (t->latpos + 1) % LAT_RING;
    if (t->nlat < LAT_RING)
        t->nlat++;
}

static void mark_down(esbulk__core_t *c, target_t *t, const char *why, int64_t now)
{
    /* once per outage at warning level: a node down is tried again every
     * node.recheck.ms, and fails again until it is back */
    if (t->down_until <= now)
        esbulk__log(&c->log, t->down_said ? ESBULK_LOG_DEBUG : ESBULK_LOG_WARNING, "io",
                    "node %s is down (%s): re-routing", t->name ? t->name : t->url, why);
    t->down_said = 1;
    t->down_until = now + c->cf.recheck_ms;
    c->refresh_wanted = 1;
}

/* ------------------------------------------------------------------------- */
/* Index entries */

static void ix_free(esbulk__core_t *c, ix_t *ix)
{
    esbulk__map_del(&c->ix_map, ix->name);
    if (ix->prev) ix->prev->next = ix->next; else c->ixs = ix->next;
    if (ix->next) ix->next->prev = ix->prev;
    if (c->last_ix == ix)
        c->last_ix = NULL;
    c->nixs--;
    if (ix->e != NULL)
        c->layouts_changed = 1;
    esbulk__index_release(ix->e);
    free(ix->shard_dest);
    free(ix->name);
    free(ix);
}

static ix_t *ix_get(esbulk__core_t *c, const char *name, uint64_t hint_serial, int64_t now)
{
    ix_t *ix;

    /* a hint from the last index's entry names that index (place.c found
     * the entry by this name): no string compare */
    if (c->last_ix != NULL &&
        ((hint_serial != 0 && c->last_ix->e != NULL && c->last_ix->e->serial == hint_serial) ||
         strcmp(c->last_ix->name, name) == 0))
        ix = c->last_ix;
    else
        ix = esbulk__map_get(&c->ix_map, name);
    if (ix == NULL) {
        ix = calloc(1, sizeof(*ix));
        if (ix == NULL || (ix->name = esbulk__strdup(name)) == NULL) {
            free(ix);
            return NULL;
        }
        if (esbulk__map_put(&c->ix_map, ix->name, ix) != ESBULK_OK) {
            free(ix->name);
            free(ix);
            return NULL;
        }
        ix->next_fetch_ms = now;
        ix->next = c->ixs;
        if (c->ixs)
            c->ixs->prev = ix;
        c->ixs = ix;
        c->nixs++;
    }
    ix->used_ms = now;
    c->last_ix = ix;
    return ix;
}

/* Asks for a fetch of ix when it is due and none is outstanding. */
static void ix_maybe_fetch(esbulk__core_t *c, ix_t *ix, int64_t now)
{
    if (ix->fetching || ix->want_fetch || now < ix->next_fetch_ms)
        return;
    ix->want_fetch = 1;
    ix->fnext = NULL;
    if (c->fetch_tail)
        c->fetch_tail->fnext = ix;
    else
        c->fetch_head = ix;
    c->fetch_tail = ix;
}

/* ------------------------------------------------------------------------- */
/* Destinations */

static void dest_activate(esbulk__core_t *c, dest_t *d)
{
    if (d->active)
        return;
    d->active = 1;
    c->active_routed += d->kind != DEST_UNROUTED;
    d->aprev = NULL;
    d->anext = c->active;
    if (c->active)
        c->active->aprev = d;
    c->active = d;
}

static void dest_deactivate(esbulk__core_t *c, dest_t *d)
{
    if (!d->active)
        return;
    d->active = 0;
    c->active_routed -= d->kind != DEST_UNROUTED;
    if (d->aprev) d->aprev->anext = d->anext; else c->active = d->anext;
    if (d->anext) d->anext->aprev = d->aprev;
    d->aprev = d->anext = NULL;
}

static dest_t *dest_get(esbulk__core_t *c, const char *key, dest_kind_t kind,
                        const char *node_id, ix_t *ix, int32_t shard, int64_t now)
{
    dest_t *d = esbulk__map_get(&c->dest_map, key);

    if (d != NULL) {
        d->used_ms = now;
        return d;
    }
    d = calloc(1, sizeof(*d));
    if (d == NULL)
        return NULL;
    d->key = esbulk__strdup(key);
    d->node_id = node_id ? esbulk__strdup(node_id) : NULL;
    if (d->key == NULL || (node_id && !d->node_id) ||
        esbulk__map_put(&c->dest_map, d->key, d) != ESBULK_OK) {
        free(d->key);
        free(d->node_id);
        free(d);
        return NULL;
    }
    d->kind = kind;
    d->ix = ix;
    if (ix != NULL)
        ix->ndests++;
    d->shard = shard;
    d->used_ms = now;
    d->next = c->dests;
    if (c->dests)
        c->dests->prev = d;
    c->dests = d;
    c->ndests++;
    return d;
}

static void dest_free(esbulk__core_t *c, dest_t *d)
{
    esbulk__map_del(&c->dest_map, d->key);
    dest_deactivate(c, d);
    if (d->prev) d->prev->next = d->next; else c->dests = d->next;
    if (d->next) d->next->prev = d->prev;
    c->ndests--;
    c->dest_epoch++;
    if (d->ix != NULL) {
        d->ix->ndests--;
        if (d->ix->udest == d)
            d->ix->udest = NULL;
    }
    free(d->key);
    free(d->node_id);
    free(d);
}

/* Queues doc in dest; since: when it was queued first (a document that
 * waited for its index's layout keeps its place in flush.interval.ms). */
static void dest_push_since(esbulk__core_t *c, dest_t *dest, esbulk__doc_t *doc, int front,
                            int64_t since, int64_t now)
{
    dest_activate(c, dest);
    doc->queued_ms = since;
    dest->used_ms = now;
    if (dest->q.count == 0 || since < dest->oldest_ms)
        dest->oldest_ms = since;
    if (front)
        esbulk__queue_push_front(&dest->q, doc); /* not in dest->ahead: no link */
    else
        esbulk__queue_push_ahead(&dest->q, &dest->ahead, doc);
}

/* The head of dest's queue, taken out (NULL: empty). */
static esbulk__doc_t *dest_pop(dest_t *dest)
{
    return esbulk__queue_pop_ahead(&dest->q, &dest->ahead);
}

static void dest_push(esbulk__core_t *c, dest_t *dest, esbulk__doc_t *doc, int front, int64_t now)
{
    dest_push_since(c, dest, doc, front, now, now);
}

/* The cached destination of shard in ix (NULL: not cached). */
static dest_t *shard_dest_get(const esbulk__core_t *c, const ix_t *ix, int32_t shard)
{
    if (ix->shard_epoch != c->dest_epoch || shard < 0 || shard >= ix->nshard_dest)
        return NULL;
    return ix->shard_dest[shard];
}

static void shard_dest_clear(ix_t *ix)
{
    ix->nshard_dest = 0;
}

static void shard_dest_put(const esbulk__core_t *c, ix_t *ix, int32_t shard, dest_t *dest)
{
    int32_t n = ix->e->layout.shards, i;

    if (shard < 0 || shard >= n)
        return;
    if (ix->nshard_dest == 0 || ix->shard_epoch != c->dest_epoch) {
        if (n > ix->shard_dest_cap) {
            dest_t **p = realloc(ix->shard_dest, sizeof(*p) * (size_t)n);

            if (p == NULL)
                return; /* not cached: looked up by key each time */
            ix->shard_dest = p;
            ix->shard_dest_cap = n;
        }
        for (i = 0; i < n; i++)
            ix->shard_dest[i] = NULL;
        ix->nshard_dest = n;
        ix->shard_epoch = c->dest_epoch;
    }
    ix->shard_dest[shard] = dest;
}

#define ROUTE_WAIT ((dest_t *)1)

/* The destination of a document under the routing level; ROUTE_WAIT when
 * it waits for its index's layout (ordering=per_id); NULL when out of
 * memory. */
static dest_t *route(esbulk__core_t *c, esbulk__doc_t *doc, ix_t **ixp, int64_t now)
{
    char key[1024];
    esbulk__index_t *e;
    int32_t shard, p;
    dest_t *dest;
    ix_t *ix;

    int was_unrouted = doc->unrouted;

    *ixp = NULL;
    doc->unrouted = 0;
    doc->index_concrete = 0;
    if (c->cf.level == ESBULK__ROUTING_OFF && !c->cf.per_id)
        return dest_get(c, "off", DEST_ANY, NULL, NULL, -1, now);
    if ((ix = ix_get(c, doc->index, doc->hint_serial, now)) == NULL)
        goto unrouted;
    *ixp = ix;
    ix_maybe_fetch(c, ix, now);
    e = ix->e;
    if (e == NULL) {
        /* Never read yet. The first read takes milliseconds, so the
         * document waits for it, up to topology.wait.ms: routing is an
         * optimisation, and a slow read must not hold documents back. Only
         * per_id ordering, which needs one destination per id, waits as
         * long as the read takes (bounded by the delivery timeout). */
        if ((ix->fetching || ix->want_fetch) &&
            (c->cf.per_id || (c->cf.wait_ms > 0 && !ix->no_wait && !c->cluster_failed)))
            return ROUTE_WAIT;
        goto unrouted;
    }
    if (e->state != ESBULK__IDX_OK)
        goto unrouted;
    if (doc->hint_serial != 0 && doc->hint_serial == e->serial)
        shard = doc->hint_shard; /* esbulk__index_shard on this very entry, by place.c */
    else if (esbulk__index_shard(e, doc->id, doc->id_len, doc->routing, doc->routing_len,
                                 &shard) != ESBULK_OK)
        goto unrouted; /* a contradicted alias routing: the server refuses it with its reason */
    doc->index_concrete = ix->concrete != 0;
    if ((dest = shard_dest_get(c, ix, shard)) != NULL) {
        dest->used_ms = now;
        return dest;
    }
    p = e->primary != NULL ? e->primary[shard] : -1;
    if (c->cf.level == ESBULK__ROUTING_NODE && !c->cf.per_id && p >= 0 &&
        !e->cluster->seeds_only && e->cluster->nodes[p].http != NULL) {
        snprintf(key, sizeof(key), "n:%s", e->cluster->nodes[p].id);
        dest = dest_get(c, key, DEST_NODE, e->cluster->nodes[p].id, NULL, -1, now);
    } else {
        /* per shard (also the grouping when nodes cannot be reached) */
        snprintf(key, sizeof(key), "s:%s#%d", doc->index, (int)shard);
        dest = dest_get(c, key, DEST_SHARD, NULL, ix, shard, now);
    }
    if (dest != NULL) {
        shard_dest_put(c, ix, shard, dest);
        return dest;
    }
unrouted:
    doc->unrouted = 1;
    if (!was_unrouted)
        c->counts.unrouted++; /* documents, not routings: a retry is not counted again */
    if (c->cf.per_id && ix != NULL) {
        /* one unrouted destination per index, so that the shard ones wait
         * for it (see dest_blocked) */
        if (ix->udest == NULL) {
            snprintf(key, sizeof(key), "u:%s", ix->name);
            ix->udest = dest_get(c, key, DEST_UNROUTED, NULL, ix, -1, now);
        }
        return ix->udest;
    }
    return dest_get(c, "unrouted", DEST_UNROUTED, NULL, NULL, -1, now);
}

/* Queues doc where route() sent it (dest, ix). */
static void route_place(esbulk__core_t *c, esbulk__doc_t *doc, dest_t *dest, ix_t *ix, int front,
                        int64_t since, int64_t now)
{
    if (dest == ROUTE_WAIT) {
        doc->queued_ms = since;
        c->waiting++;
        if (front)
            esbulk__queue_push_front(&ix->wait, doc);
        else
            esbulk__queue_push(&ix->wait, doc);
        return;
    }
    if (dest == NULL) {
        deliver(c, doc, ESBULK_OUTCOME_FAILED, ESBULK_ERR_NOMEM, 0, NULL,
                "out of memory while routing", NULL, NULL);
        return;
    }
    dest_push_since(c, dest, doc, front, since, now);
}

static void route_push_since(esbulk__core_t *c, esbulk__doc_t *doc, int front, int64_t since,
                             int64_t now)
{
    ix_t *ix;
    dest_t *dest = route(c, doc, &ix, now);

    route_place(c, doc, dest, ix, front, since, now);
}

static void route_push(esbulk__core_t *c, esbulk__doc_t *doc, int front, int64_t now)
{
    route_push_since(c, doc, front, now, now);
}

/* The target a destination's next request goes to, NULL if none is free.
 * Unrouted requests may hold all but one of a node's request slots while
 * routed documents are waiting: an unrouted request is often the one that
 * creates an index, which can take the server a second or more, and a node
 * whose every slot waits on that holds up the indices that exist. */
static target_t *dest_target(esbulk__core_t *c, dest_t *dest, int64_t now)
{
    target_t *t = NULL;
    int ulimit = INT_MAX;

    if (dest->kind == DEST_UNROUTED && c->active_routed > 0 && c->cf.max_inflight > 1)
        ulimit = c->cf.max_inflight - 1;
    if (dest->kind == DEST_NODE) {
        t = target_by_node(c, dest->node_id);
    } else if (dest->kind == DEST_SHARD) {
        const esbulk__index_t *e = dest->ix->e;

        if (e != NULL && e->state == ESBULK__IDX_OK && e->primary != NULL &&
            dest->shard < e->layout.shards && e->primary[dest->shard] >= 0 &&
            !e->cluster->seeds_only)
            t = target_by_node(c, e->cluster->nodes[e->primary[dest->shard]].id);
    }
    if (t != NULL && target_usable(c, t, now, ulimit))
        return t;
    if (t != NULL && t->present && t->down_until <= now)
        return NULL; /* its node is busy: wait for it rather than add a hop */
    return target_any(c, now, ulimit);
}

static int dest_blocked(const esbulk__core_t *c, const dest_t *dest)
{
    const dest_t *u;

    if (!c->cf.per_id)
        return 0;
    /* ordering=per_id: one request at a time, retries first, and an index's
     * shard destinations wait until what went unrouted before has ended */
    if (dest->inflight > 0 || dest->retry_q.count > 0)
        return 1;
    u = dest->kind == DEST_SHARD ? dest->ix->udest : NULL;
    return u != NULL && (u->q.count > 0 || u->inflight > 0 || u->retry_q.count > 0);
}

/* ------------------------------------------------------------------------- */
/* Lifecycle */

esbulk__core_t *esbulk__core_new(const esbulk__core_conf_t *conf, const esbulk__log_t *log,
                                 uint64_t seed)
{
    esbulk__core_t *c = calloc(1, sizeof(*c));

    if (c == NULL)
        return NULL;
    c->cf = *conf;
    if (c->cf.max_inflight < 1)
        c->cf.max_inflight = 1;
    if (log != NULL)
        c->log = *log;
    c->rng = seed | 1;
    c->last_ask_ms = INT64_MIN / 2;
    return c;
}

esbulk_err_t esbulk__core_set_seeds(esbulk__core_t *c, const char *const *urls, int n)
{
    char **s = calloc((size_t)(n > 0 ? n : 1), sizeof(*s));
    int i;

    if (s == NULL)
        return ESBULK_ERR_NOMEM;
    for (i = 0; i < n; i++) {
        if ((s[i] = esbulk__strdup(urls[i])) == NULL) {
            while (i-- > 0)
                free(s[i]);
            free(s);
            return ESBULK_ERR_NOMEM;
        }
    }
    for (i = 0; i < c->nseeds; i++)
        free(c->seeds[i]);
    free(c->seeds);
    c->seeds = s;
    c->nseeds = n;
    sync_targets(c);
    return ESBULK_OK;
}

static void free_queue(esbulk__queue_t *q)
{
    esbulk__doc_t *d;

    while ((d = esbulk__queue_pop(q)) != NULL)
        esbulk__doc_free(d);
}

void esbulk__core_free(esbulk__core_t *c)
{
    int i;

    if (c == NULL)
        return;
    esbulk__drops_end(&c->drops); /* before any block could go */
    while (c->inflight != NULL) {
        esbulk__send_t *s = c->inflight;
        size_t k;

        c->inflight = s->next;
        for (k = 0; k < s->ndocs; k++)
            esbulk__doc_free(s->docs[k]);
        free(s->docs);
        free(s);
    }
    while (c->spare_sends != NULL) {
        esbulk__send_t *s = c->spare_sends;

        c->spare_sends = s->next;
        free(s->docs);
        free(s);
    }
    esbulk__response_scratch_free(&c->scratch);
    while (c->dests != NULL) {
        free_queue(&c->dests->q);
        free_queue(&c->dests->retry_q);
        dest_free(c, c->dests);
    }
    while (c->ixs != NULL) {
        free_queue(&c->ixs->wait);
        ix_free(c, c->ixs);
    }
    while (c->nrb > 0)
        free_queue(&c->rb[--c->nrb].q);
    free(c->rb);
    free_queue(&c->done);
    while (c->targets != NULL) {
        target_t *t = c->targets;
        c->targets = t->next;
        target_free(t);
    }
    for (i = 0; i < c->nseeds; i++)
        free(c->seeds[i]);
    free(c->seeds);
    esbulk__cluster_release(c->cluster);
    esbulk__map_free(&c->dest_map);
    esbulk__map_free(&c->ix_map);
    free(c);
}

/* ------------------------------------------------------------------------- */
/* Topology */

/* True when a and b list the same nodes at the same addresses. */
static int same_nodes(const esbulk__cluster_t *a, const esbulk__cluster_t *b)
{
    int i;

    if (a == NULL || b == NULL)
        return a == b;
    if (a->nnodes != b->nnodes || a->seeds_only != b->seeds_only)
        return 0;
    for (i = 0; i < a->nnodes; i++) {
        const esbulk__node_t *x = &a->nodes[i], *y = &b->nodes[i];
        if (strcmp(x->id, y->id) != 0 || x->reachable != y->reachable ||
            (x->http == NULL) != (y->http == NULL) || (x->http && strcmp(x->http, y->http) != 0))
            return 0;
    }
    return 1;
}

void esbulk__core_set_cluster(esbulk__core_t *c, esbulk__cluster_t *cluster, int64_t now)
{
    int changed;
    ix_t *ix;

    c->cluster_fetching = 0;
    c->cluster_failed = cluster == NULL;
    if (cluster != NULL)
        c->view_ms = now;
    else if (c->waiting > 0 && !c->cf.per_id)
        release_waits(c, now); /* no view: the index reads will fail too */
    if (cluster != NULL && cluster == c->cluster) {
        esbulk__cluster_release(cluster);
        return;
    }
    if (cluster == NULL && c->cluster == NULL)
        return;
    changed = !same_nodes(cluster, c->cluster);
    esbulk__cluster_release(c->cluster);
    c->cluster = cluster;
    sync_targets(c);
    if (changed && cluster != NULL) {
        /* primaries may have moved: every index is read again when used */
        for (ix = c->ixs; ix != NULL; ix = ix->next)
            ix->next_fetch_ms = now;
    }
}

void esbulk__core_cluster_failed(esbulk__core_t *c)
{
    c->cluster_fetching = 0;
}

const char *esbulk__core_next_fetch(esbulk__core_t *c, int64_t now)
{
    ix_t *ix = c->fetch_head;

    (void)now;
    if (ix == NULL)
        return NULL;
    c->fetch_head = ix->fnext;
    if (c->fetch_head == NULL)
        c->fetch_tail = NULL;
    ix->fnext = NULL;
    ix->want_fetch = 0;
    ix->fetching = 1;
    c->counts.fetches++;
    return ix->name;
}

void esbulk__core_index_fetched(esbulk__core_t *c, const char *name, esbulk__index_t *e,
                                esbulk_err_t err, const char *errstr, int64_t now)
{
    ix_t *ix = esbulk__map_get(&c->ix_map, name);
    esbulk__queue_t wait;
    esbulk__doc_t *d;

    if (ix == NULL) {
        esbulk__index_release(e);
        return;
    }
    ix->fetching = 0;
    ix->no_wait = 0;
    if (e != NULL) {
        if (ix->fetch_failed)
            esbulk__log(&c->log, ESBULK_LOG_NOTICE, "topology", "index %s: metadata read again",
                        name);
        ix->fetch_failed = 0;
        esbulk__index_release(ix->e);
        ix->e = e;
        c->layouts_changed = 1;
        ix->concrete = e->state == ESBULK__IDX_OK && e->write_index != NULL &&
                       strcmp(e->write_index, ix->name) == 0;
        shard_dest_clear(ix);
        ix->next_fetch_ms = e->state == ESBULK__IDX_OK
                                ? (c->cf.refresh_ms > 0 ? now + c->cf.refresh_ms : INT64_MAX)
                                : now + c->cf.unknown_recheck_ms;
    } else {
        /* once until a read succeeds: it is retried every few seconds */
        esbulk__log(&c->log, ix->fetch_failed ? ESBULK_LOG_DEBUG : ESBULK_LOG_WARNING,
                    "topology", "index %s: %s (%s)", name,
                    errstr && *errstr ? errstr : "metadata not read", esbulk_err2str(err));
        ix->fetch_failed = 1;
        ix->next_fetch_ms = now + c->cf.unknown_recheck_ms;
    }
    /* what waited for the layout goes now, in order */
    wait = ix->wait;
    c->waiting -= wait.count;
    memset(&ix->wait, 0, sizeof(ix->wait));
    while ((d = esbulk__queue_pop(&wait)) != NULL)
        route_push_since(c, d, 0, d->queued_ms, now);
}

/* Sends what waits for ix's layout unrouted, until its read ends (the
 * caller counts c->waiting down). */
static void ix_release_wait(esbulk__core_t *c, ix_t *ix, int64_t now)
{
    esbulk__queue_t wait = ix->wait;
    esbulk__doc_t *d;

    memset(&ix->wait, 0, sizeof(ix->wait));
    ix->no_wait = 1;
    while ((d = esbulk__queue_pop(&wait)) != NULL)
        route_push_since(c, d, 0, d->queued_ms, now);
}

/* Documents that waited topology.wait.ms for their index's first read go
 * unrouted (not under per_id), and those past their delivery timeout
 * fail. */
static void waits_due(esbulk__core_t *c, int64_t now)
{
    ix_t *ix;

    for (ix = c->ixs; ix != NULL && c->waiting > 0; ix = ix->next) {
        size_t before = ix->wait.count;

        expire_ordered(c, &ix->wait, NULL, now);
        if (!c->cf.per_id && ix->wait.head != NULL &&
            now - ix->wait.head->queued_ms >= c->cf.wait_ms)
            ix_release_wait(c, ix, now);
        c->waiting -= before - ix->wait.count;
    }
}

static void release_waits(esbulk__core_t *c, int64_t now)
{
    ix_t *ix;

    for (ix = c->ixs; ix != NULL && c->waiting > 0; ix = ix->next) {
        size_t before = ix->wait.count;

        ix_release_wait(c, ix, now);
        c->waiting -= before;
    }
}

int esbulk__core_refresh_wanted(esbulk__core_t *c, int64_t now)
{
    int due;

    if (c->cluster_fetching || now - c->last_ask_ms < c->cf.refresh_gap_ms)
        return 0;
    due = c->refresh_wanted || c->cluster == NULL ||
          (c->cf.refresh_ms > 0 && now - c->view_ms >= c->cf.refresh_ms);
    if (!due)
        return 0;
    c->refresh_wanted = 0;
    c->cluster_fetching = 1;
    c->last_ask_ms = now;
    return 1;
}

/* ------------------------------------------------------------------------- */
/* Documents and retries */

int esbulk__core_layouts(esbulk__core_t *c, esbulk__index_t **out, int max)
{
    ix_t *top[16], *ix;
    int n = 0, i;

    if (!c->layouts_changed)
        return -1;
    c->layouts_changed = 0;
    if (max > (int)ESBULK__ARRAY_LEN(top))
        max = (int)ESBULK__ARRAY_LEN(top);
    /* the max most lately used, kept in order of used_ms, newest first */
    for (ix = c->ixs; ix != NULL; ix = ix->next) {
        if (ix->e == NULL || ix->e->state != ESBULK__IDX_OK || max <= 0)
            continue;
        if (n == max && ix->used_ms <= top[n - 1]->used_ms)
            continue;
        i = n < max ? n++ : n - 1;
        for (; i > 0 && top[i - 1]->used_ms < ix->used_ms; i--)
            top[i] = top[i - 1];
        top[i] = ix;
    }
    for (i = 0; i < n; i++) {
        atomic_fetch_add(&top[i]->e->refs, 1);
        out[i] = top[i]->e;
    }
    return n;
}

void esbulk__core_add(esbulk__core_t *c, esbulk__doc_t *d, int64_t added_ms, int64_t now)
{
    c->held++;
    route_push_since(c, d, 0, added_ms < now ? added_ms : now, now);
}

void esbulk__core_add_list(esbulk__core_t *c, esbulk__queue_t *in, int64_t now)
{
    esbulk__doc_t *d, *next;
    unsigned gen;

    if ((gen = ++c->rcache_gen) == 0) {
        /* wrapped: no entry may look current */
        memset(c->rcache, 0, sizeof(c->rcache));
        gen = c->rcache_gen = 1;
    }
    for (d = in->head; d != NULL; d = next) {
        route_cache_t *rc = &c->rcache[(uint32_t)d->hint_shard % ROUTE_CACHE];
        int64_t since = d->queued_ms < now ? d->queued_ms : now;
        dest_t *dest;
        ix_t *ix;

        next = d->next;
        /* the two lines routing reads, written on the adding thread */
        esbulk__doc_prefetch_ahead(d, 2, 1);
        c->held++;
        if (d->hint_serial != 0 && rc->gen == gen && rc->serial == d->hint_serial &&
            rc->shard == d->hint_shard && !d->unrouted) {
            /* what route() gave the same entry and shard */
            d->index_concrete = (unsigned char)rc->concrete;
            dest_push_since(c, rc->dest, d, 0, since, now);
            continue;
        }
        dest = route(c, d, &ix, now);
        if (dest != ROUTE_WAIT && dest != NULL && !d->unrouted && d->hint_serial != 0 &&
            ix != NULL && ix->e != NULL && ix->e->serial == d->hint_serial) {
            /* routed by the hint, on this very entry */
            rc->gen = gen;
            rc->serial = d->hint_serial;
            rc->shard = d->hint_shard;
            rc->concrete = d->index_concrete;
            rc->dest = dest;
        }
        route_place(c, d, dest, ix, 0, since, now);
    }
    in->head = in->tail = NULL;
    in->count = in->bytes = 0;
}

/* When retries due at `at` are looked for: `at` rounded down to a step of
 * an eighth of the first backoff, or a 1024th of the longest if more (1 to
 * 100 ms: about a thousand buckets at most over the backoffs' span). The
 * retries wait in buckets by that time (retry_push), so that a look takes
 * whole buckets and walks only the documents due: with each document's own
 * jitter, a whole buffer that failed at once (the cluster down) was walked
 * again for almost each of them, a core busy for nothing. A retry goes at
 * most one step early (never after its time, nor past its deadline when its
 * time was not). */
static int64_t retry_look_at(const esbulk__core_t *c, int64_t at)
{
    int64_t step = c->cf.backoff_ms / 8;

    if (c->cf.backoff_max_ms / 1024 > step)
        step = c->cf.backoff_max_ms / 1024;
    if (step < 1)
        step = 1;
    else if (step > 100)
        step = 100;
    if (at < 0)
        return at;
    return at - at % step;
}

/* Queues doc for a retry at doc->retry_at_ms: in the bucket of its look
 * time, made if there is none. ESBULK_ERR_NOMEM if none could be made
 * (doc is not queued). */
static esbulk_err_t retry_push(esbulk__core_t *c, esbulk__doc_t *doc)
{
    int64_t look = retry_look_at(c, doc->retry_at_ms);
    size_t lo = 0, hi = c->nrb;
    retry_bucket_t *b;

    /* the first bucket at or after look (most often the last one) */
    if (hi > 0 && c->rb[hi - 1].at < look) {
        lo = hi;
    } else {
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;

            if (c->rb[mid].at < look)
                lo = mid + 1;
            else
                hi = mid;
        }
    }
    if (lo == c->nrb || c->rb[lo].at != look) {
        if (c->nrb == c->caprb) {
            size_t cap = c->caprb ? c->caprb * 2 : 16;
            retry_bucket_t *nb = realloc(c->rb, cap * sizeof(*nb));

            if (nb == NULL)
                return ESBULK_ERR_NOMEM;
            c->rb = nb;
            c->caprb = cap;
        }
        memmove(&c->rb[lo + 1], &c->rb[lo], (c->nrb - lo) * sizeof(*c->rb));
        c->nrb++;
        b = &c->rb[lo];
        b->at = look;
        b->min_deadline = INT64_MAX;
        memset(&b->q, 0, sizeof(b->q));
    }
    b = &c->rb[lo];
    esbulk__queue_push(&b->q, doc);
    if (doc->deadline_ms > 0 && doc->deadline_ms < b->min_deadline)
        b->min_deadline = doc->deadline_ms;
    return ESBULK_OK;
}

/* Takes buckets [i, i + n) out (their queues are the caller's now). */
static void retry_buckets_drop(esbulk__core_t *c, size_t i, size_t n)
{
    memmove(&c->rb[i], &c->rb[i + n], (c->nrb - i - n) * sizeof(*c->rb));
    c->nrb -= n;
}

static void retry_or_give_up(esbulk__core_t *c, dest_t *dest, esbulk__doc_t *doc, int ambiguous,
                             esbulk_err_t err, int32_t status, const char *type,
                             const char *reason, const char *cause_type,
                             const char *cause_reason, int64_t now)
{
    esbulk__retry_decision_t dec;
    /* room for the longest reason (the server's, with its cause, which
     * then still ends it), and what is said before it */
    char why[ESBULK__RESP_ERROR_MAX + 256];
    int64_t at = 0;

    if (ambiguous && doc->id == NULL) {
        /* the server's words last, as below: its cause still ends them */
        snprintf(why, sizeof(why), "not retried: the document has no _id, so a retry could "
                 "index it twice: %s", reason ? reason : "request failed after it was sent");
        deliver(c, doc, ESBULK_OUTCOME_POSSIBLY, err, status, type, why, cause_type,
                cause_reason);
        return;
    }
    doc->ambiguous = doc->ambiguous || ambiguous;
    dec = esbulk__retry_decide(doc->attempts, c->cf.retry_max, now, doc->deadline_ms,
                               c->cf.backoff_ms, c->cf.backoff_max_ms, rnd32(c), &at);
    if (dec == ESBULK__RETRY_NOW) {
        /* the attempt's error, for the outcome should no later attempt
         * answer (closed or expired while waiting: deliver_unsent) */
        esbulk__doc_set_outcome(doc, doc->outcome, err, doc->status, type,
                                reason ? reason : "failed", cause_type, cause_reason);
        /* its lines leave the shared block: a retry may wait long */
        esbulk__doc_own_lines(doc);
        doc->retry_at_ms = at;
        c->counts.retried++;
        if (c->cf.per_id && dest != NULL) {
            if (dest->retry_q.count == 0) {
                dest->retry_latest = at;
                dest->retry_deadline = INT64_MAX;
            }
            if (at > dest->retry_latest)
                dest->retry_latest = at;
            if (doc->deadline_ms > 0 && doc->deadline_ms < dest->retry_deadline)
                dest->retry_deadline = doc->deadline_ms;
            esbulk__queue_push(&dest->retry_q, doc);
            dest_activate(c, dest);
            return;
        }
        if (retry_push(c, doc) == ESBULK_OK)
            return;
        c->counts.retried--;
        deliver(c, doc, doc->ambiguous ? ESBULK_OUTCOME_POSSIBLY : ESBULK_OUTCOME_FAILED,
                ESBULK_ERR_NOMEM, status, type, "out of memory queuing its retry", NULL, NULL);
        return;
    }
    snprintf(why, sizeof(why), "%s after %d attempt%s: %s",
             dec == ESBULK__RETRY_GIVE_UP_MAX ? "retries exhausted" : "delivery timed out",
             (int)doc->attempts, doc->attempts == 1 ? "" : "s", reason ? reason : "failed");
    deliver(c, doc, doc->ambiguous ? ESBULK_OUTCOME_POSSIBLY : ESBULK_OUTCOME_FAILED,
            dec == ESBULK__RETRY_GIVE_UP_MAX ? ESBULK_ERR_RETRIES_EXHAUSTED
                                             : ESBULK_ERR_DELIVERY_TIMEOUT,
            status, type, why, cause_type, cause_reason);
}

/* Moves retries that are due back into their destinations, first in line
 * and in their original order. */
static void retries_due(esbulk__core_t *c, int64_t now)
{
    esbulk__queue_t due = {0};
    esbulk__doc_t *d, *rev = NULL, *next;
    dest_t *dest;

    if (c->nrb > 0 && c->rb[0].at <= now) {
        size_t k;

        /* whole buckets: only the documents due are walked */
        for (k = 0; k < c->nrb && c->rb[k].at <= now; k++) {
            c->retry_walked += c->rb[k].q.count;
            esbulk__queue_append(&due, &c->rb[k].q);
        }
        retry_buckets_drop(c, 0, k);
        /* reversed, so that pushing each to the front keeps their order */
        for (d = due.head; d != NULL; d = next) {
            next = d->next;
            d->next = rev;
            rev = d;
        }
        for (d = rev; d != NULL; d = next) {
            next = d->next;
            route_push(c, d, 1, now);
        }
    }
    if (!c->cf.per_id)
        return;
    for (dest = c->active; dest != NULL; dest = dest->anext) {
        if (dest->retry_q.count == 0)
            continue;
        if (dest->retry_latest <= now) {
            c->retry_walked += dest->retry_q.count;
            for (d = dest->retry_q.head; d != NULL; d = d->next)
                d->queued_ms = now;
            esbulk__queue_prepend(&dest->q, &dest->retry_q);
            dest->oldest_ms = now;
        }
    }
}

/* The outcome of a document that no request answered last: what, and the
 * error of its last attempt when it had one (kept by retry_or_give_up). */
static void deliver_unsent(esbulk__core_t *c, esbulk__doc_t *d, esbulk_err_t err,
                           const char *what)
{
    char why[ESBULK__RESP_ERROR_MAX + 512], type[128]; /* as in retry_or_give_up */
    const char *t = NULL, *last_reason = ESBULK__DOC_MORE(d, error_reason);
    const char *last_type = ESBULK__DOC_MORE(d, error_type);
    /* copied: deliver frees d's own (NULL for want of memory: the reason
     * still says it) */
    const char *last_ct = ESBULK__DOC_MORE(d, cause_type),
               *last_cr = ESBULK__DOC_MORE(d, cause_reason);
    char *ct = last_ct != NULL ? esbulk__strdup(last_ct) : NULL,
         *cr = last_cr != NULL ? esbulk__strdup(last_cr) : NULL;

    if (last_reason != NULL) {
        snprintf(why, sizeof(why), "%s; its last attempt: %s", what, last_reason);
        what = why;
    }
    if (last_type != NULL) {
        /* copied: deliver frees d's own */
        snprintf(type, sizeof(type), "%s", last_type);
        t = type;
    }
    deliver(c, d, d->ambiguous ? ESBULK_OUTCOME_POSSIBLY : ESBULK_OUTCOME_FAILED, err, d->status,
            t, what, cr != NULL ? ct : NULL, cr);
    free(ct);
    free(cr);
}

static void expire_one(esbulk__core_t *c, esbulk__doc_t *d)
{
    c->counts.expired++;
    deliver_unsent(c, d, ESBULK_ERR_DELIVERY_TIMEOUT,
                   "not delivered within delivery.timeout.ms (no node accepted it in time)");
}

/* A queue in add order (retries, older, go first) has rising deadlines:
 * the scan stops at the first one not due, and a deep backlog costs
 * nothing. */
static void expire_ordered(esbulk__core_t *c, esbulk__queue_t *q, esbulk__ahead_t *ahead,
                           int64_t now)
{
    esbulk__doc_t *d;

    while ((d = q->head) != NULL && d->deadline_ms > 0 && now >= d->deadline_ms)
        expire_one(c, esbulk__queue_pop_ahead(q, ahead));
}

/* Retry lists are not ordered: scanned whole (they hold only retries). */
static void expire_unordered(esbulk__core_t *c, esbulk__queue_t *q, int64_t now)
{
    esbulk__queue_t keep = {0};
    esbulk__doc_t *d;

    while ((d = esbulk__queue_pop(q)) != NULL) {
        if (d->deadline_ms > 0 && now >= d->deadline_ms)
            expire_one(c, d);
        else
            esbulk__queue_push(&keep, d);
    }
    *q = keep;
}

static void expire_all(esbulk__core_t *c, int64_t now)
{
    dest_t *dest;
    esbulk__doc_t *d;
    size_t i;

    for (dest = c->active; dest != NULL; dest = dest->anext) {
        expire_ordered(c, &dest->q, &dest->ahead, now);
        if (dest->retry_q.head != NULL && now >= dest->retry_deadline) {
            c->retry_walked += dest->retry_q.count;
            expire_unordered(c, &dest->retry_q, now);
            dest->retry_latest = 0;
            dest->retry_deadline = INT64_MAX;
            for (d = dest->retry_q.head; d != NULL; d = d->next) {
                if (d->retry_at_ms > dest->retry_latest)
                    dest->retry_latest = d->retry_at_ms;
                if (d->deadline_ms > 0 && d->deadline_ms < dest->retry_deadline)
                    dest->retry_deadline = d->deadline_ms;
            }
        }
        if (dest->q.head != NULL)
            dest->oldest_ms = dest->q.head->queued_ms;
    }
    /* only the buckets holding a document past its deadline are walked */
    for (i = 0; i < c->nrb;) {
        retry_bucket_t *b = &c->rb[i];

        if (now < b->min_deadline) {
            i++;
            continue;
        }
        c->retry_walked += b->q.count;
        expire_unordered(c, &b->q, now);
        b->min_deadline = INT64_MAX;
        for (d = b->q.head; d != NULL; d = d->next)
            if (d->deadline_ms > 0 && d->deadline_ms < b->min_deadline)
                b->min_deadline = d->deadline_ms;
        if (b->q.count == 0)
            retry_buckets_drop(c, i, 1);
        else
            i++;
    }
}

/* Frees destinations and index entries unused for topology.idle.ms. */
static void sweep(esbulk__core_t *c, int64_t now)
{
    dest_t *dest, *dn;
    ix_t *ix, *in;

    for (dest = c->dests; dest != NULL; dest = dn) {
        dn = dest->next;
        if (dest->q.count == 0 && dest->retry_q.count == 0 && dest->inflight == 0 &&
            now - dest->used_ms >= c->cf.idle_ms)
            dest_free(c, dest);
    }
    for (ix = c->ixs; ix != NULL; ix = in) {
        in = ix->next;
        if (ix->ndests == 0 && ix->wait.count == 0 && !ix->fetching && !ix->want_fetch &&
            now - ix->used_ms >= c->cf.idle_ms)
            ix_free(c, ix);
    }
    targets_prune(c);
}

void esbulk__core_tick(esbulk__core_t *c, int64_t now)
{
    retries_due(c, now);
    if (c->waiting > 0)
        waits_due(c, now);
    if (now >= c->next_expire_ms) {
        expire_all(c, now);
        c->next_expire_ms = now + EXPIRE_SCAN_MS;
    }
    if (now >= c->next_sweep_ms) {
        sweep(c, now);
        c->next_sweep_ms = now + sweep_every(c);
    }
}

int64_t esbulk__core_next_deadline(esbulk__core_t *c, int64_t now)
{
    int64_t due = INT64_MAX, t;
    dest_t *dest, *dn;

    /* A destination already due was offered a send this round: if it still
     * waits, its node has no request slot free, and an answer wakes the
     * driver. Counting it would spin. */
    for (dest = c->active; dest != NULL; dest = dn) {
        dn = dest->anext;
        if (dest->q.count == 0 && dest->retry_q.count == 0) {
            dest_deactivate(c, dest); /* emptied since: no longer walked */
            continue;
        }
        t = esbulk__flush_due_ms(&c->cf.flush, dest->q.count, dest->oldest_ms);
        if (t > now && t < due)
            due = t;
        /* its retries go all at once, at the latest one's time */
        if (dest->retry_q.count > 0 && dest->retry_latest < due)
            due = dest->retry_latest;
    }
    if (c->nrb > 0 && c->rb[0].at < due)
        due = c->rb[0].at; /* the first bucket's look */
    if (c->held > 0 && c->next_expire_ms < due)
        due = c->next_expire_ms;
    if ((c->ndests > 0 || c->nixs > 0) && c->next_sweep_ms < due)
        due = c->next_sweep_ms;
    if (c->waiting > 0) {
        const ix_t *ix;

        for (ix = c->ixs; ix != NULL; ix = ix->next) {
            if (ix->wait.head == NULL)
                continue;
            t = c->cf.per_id ? INT64_MAX : ix->wait.head->queued_ms + c->cf.wait_ms;
            if (ix->wait.head->deadline_ms > 0 && ix->wait.head->deadline_ms < t)
                t = ix->wait.head->deadline_ms;
            if (t < due)
                due = t;
        }
    }
    if (c->fetch_head != NULL)
        due = now;
    return due < now ? now : due;
}

/* ------------------------------------------------------------------------- */
/* Requests */

/* Bytes of a request's arrays for cap documents. */
#define SEND_ARRAYS(s, cap) ((sizeof(*(s)->docs) + sizeof(*(s)->lines) + sizeof(*(s)->want)) * (cap))

/* A request with arrays for at least need documents, and at most limit:
 * the last one answered if it is that large. The arrays are 56 bytes a
 * document (280 KB at flush.docs' default). Made and freed for each
 * request, the allocator gave their pages back to the kernel at a free and
 * faulted them in again at the next request, page by page; so they are
 * kept (send_free), and made a power of two large (up to limit), for a
 * request of a few documents to serve the next full one. */
static esbulk__send_t *send_new(esbulk__core_t *c, size_t need, size_t limit)
{
    esbulk__send_t *s = c->spare_sends;
    esbulk__doc_t **docs = NULL;
    size_t cap = 1;

    if (s != NULL) {
        c->spare_sends = s->next;
        c->nspare_sends--;
        if (s->cap >= need) {
            docs = s->docs;
            cap = s->cap;
        } else { /* a larger one is made below */
            free(s->docs);
        }
    } else if ((s = malloc(sizeof(*s))) == NULL) {
        return NULL;
    }
    if (docs == NULL) {
        while (cap < need)
            cap <<= 1;
        if (cap > limit)
            cap = limit > need ? limit : need;
        if ((docs = malloc(SEND_ARRAYS(s, cap))) == NULL) {
            free(s);
            return NULL;
        }
        c->sends_made++;
    }
    memset(s, 0, sizeof(*s));
    s->docs = docs;
    s->cap = cap;
    /* one allocation for the three arrays (each of 8-byte members) */
    s->lines = (esbulk__send_lines_t *)(void *)(s->docs + cap);
    s->want = (esbulk__resp_want_t *)(void *)(s->lines + cap);
    return s;
}

static esbulk__send_t *send_batch(esbulk__core_t *c, dest_t *dest, target_t *target, int64_t now)
{
    size_t max_docs = c->cf.flush.flush_docs, n, bytes = 0;
    esbulk__send_t *s;
    esbulk__doc_t *d;

    if (dest->batch_cap > 0 && dest->batch_cap < max_docs)
        max_docs = dest->batch_cap;
    if (dest->q.head != NULL && dest->q.head->split > 0 && dest->q.head->split < max_docs)
        max_docs = dest->q.head->split;
    if (max_docs > dest->q.count)
        max_docs = dest->q.count;
    if ((s = send_new(c, max_docs, c->cf.flush.flush_docs)) == NULL)
        return NULL;
    /* documents up to flush.docs and, past the first, flush.bytes, in one
     * walk (each record is a cache miss by now) */
    for (n = 0; n < max_docs && (d = dest->q.head) != NULL; n++) {
        if (n > 0 && bytes + d->lines_len > c->cf.flush.flush_bytes)
            break;
        bytes += d->lines_len;
        s->docs[n] = dest_pop(dest);
        /* the two lines this loop reads, ESBULK__AHEAD records on */
        esbulk__doc_prefetch_ahead(d, 2, 1);
        d->attempts++;
        s->lines[n].p = d->lines;
        s->lines[n].len = d->lines_len;
        s->want[n].index = d->index;
        s->want[n].index_len = d->index_len;
        s->want[n].id = d->id;
        s->want[n].id_len = d->id_len;
        s->want_index |= !d->index_concrete;
        s->want_id |= d->id == NULL;
        s->want_result |= d->op == ESBULK_OP_UPDATE;
    }
    s->ndocs = n;
    s->bytes = bytes;
    dest->oldest_ms = dest->q.head ? dest->q.head->queued_ms : 0;
    s->url = target->url;
    s->target = target;
    s->dest = dest;
    s->start_ms = now;
    target->inflight++;
    target->inflight_unrouted += dest->kind == DEST_UNROUTED;
    target->requests++;
    dest->inflight++;
    dest->used_ms = now;
    c->counts.requests++;
    c->counts.bytes_raw += bytes;
    s->next = c->inflight;
    if (c->inflight != NULL)
        c->inflight->prev = s;
    c->inflight = s;
    c->ninflight++;
    return s;
}

esbulk__send_t *esbulk__core_next_send(esbulk__core_t *c, int force, int64_t now)
{
    dest_t *dest;

    for (dest = c->active; dest != NULL; dest = dest->anext) {
        target_t *t;

        if (dest_blocked(c, dest) ||
            !esbulk__should_flush(&c->cf.flush, dest->q.count, dest->q.bytes, dest->oldest_ms,
                                  now, force))
            continue;
        if ((t = dest_target(c, dest, now)) == NULL)
            continue;
        return send_batch(c, dest, t, now);
    }
    return NULL;
}

static void send_unlink(esbulk__core_t *c, esbulk__send_t *s)
{
    if (s->prev) s->prev->next = s->next; else c->inflight = s->next;
    if (s->next) s->next->prev = s->prev;
    c->ninflight--;
    s->target->inflight--;
    s->target->inflight_unrouted -= s->dest->kind == DEST_UNROUTED;
    s->dest->inflight--;
}

/* s kept for a next request, up to ESBULK__CORE_SPARE_SENDS of them and
 * SPARE_SEND_BYTES of arrays (more are in flight at once only with many
 * nodes or max.inflight.per.node raised), else freed. */
static void send_free(esbulk__core_t *c, esbulk__send_t *s)
{
    size_t bytes = SEND_ARRAYS(s, s->cap),
           max = c->cf.spare_send_bytes > 0 ? c->cf.spare_send_bytes : SPARE_SEND_BYTES;
    const esbulk__send_t *k;

    for (k = c->spare_sends; k != NULL && bytes <= max; k = k->next)
        bytes += SEND_ARRAYS(k, k->cap);
    if (c->nspare_sends < ESBULK__CORE_SPARE_SENDS && bytes <= max) {
        s->next = c->spare_sends;
        c->spare_sends = s;
        c->nspare_sends++;
        return;
    }
    free(s->docs);
    free(s);
}

void esbulk__core_unsend(esbulk__core_t *c, esbulk__send_t *s, int64_t now)
{
    size_t i;

    send_unlink(c, s);
    s->target->requests--;
    c->counts.requests--;
    c->counts.bytes_raw -= s->bytes;
    for (i = s->ndocs; i > 0; i--) {
        s->docs[i - 1]->attempts--;
        dest_push(c, s->dest, s->docs[i - 1], 1, now);
    }
    send_free(c, s);
}

/* A successful item's result when the answer did not give it
 * (esbulk__io_bulk_path() asks for it only for updates): what the server says for that operation and
 * status. An update's 200 is "updated" or "noop", so NULL there. */
static const char *result_from_status(esbulk_op_t op, int32_t status)
{
    switch (op) {
    case ESBULK_OP_INDEX:
    case ESBULK_OP_CREATE:
        return status == 201 ? "created" : status == 200 ? "updated" : NULL;
    case ESBULK_OP_DELETE:
        return status == 200 ? "deleted" : status == 404 ? "not_found" : NULL;
    case ESBULK_OP_UPDATE:
        return status == 201 ? "created" : NULL;
    }
    return NULL;
}

/* The server's index, result and id of an item, copied into d where they
 * say more than d does: the index only when it differs from the one added
 * (an alias, a data stream), the result as a static string when it is one of
 * the usual ones, the id only when the server chose it. An allocation that
 * fails leaves the field NULL: the outcome does not depend on it. */
static void doc_take_item(esbulk__doc_t *d, const esbulk__item_t *it)
{
    static const char *const results[] = {"created", "updated", "deleted", "noop", "not_found"};
    esbulk__doc_more_t *m = d->more;
    size_t k;
    /* the parser hands back d->index itself when the server answered it */
    int other_index = it->index != NULL && it->index != d->index &&
                      strcmp(it->index, d->index) != 0;

    d->status = it->status;
    d->seq_no = it->seq_no;
    d->primary_term = it->primary_term;
    d->version = it->version;
    d->r_result = it->result == NULL && it->klass == ESBULK__ITEM_OK
                      ? result_from_status((esbulk_op_t)d->op, it->status)
                      : NULL;
    if (it->result != NULL && it->result_static) {
        d->r_result = it->result;
    } else if (it->result != NULL) {
        for (k = 0; k < ESBULK__ARRAY_LEN(results) && d->r_result == NULL; k++)
            if (strcmp(it->result, results[k]) == 0)
                d->r_result = results[k];
    }
    /* the rest is in d->more, made only when there is something to keep */
    if (m == NULL && !other_index && (d->id != NULL || it->id == NULL) &&
        (it->result == NULL || d->r_result != NULL))
        return;
    if (m == NULL && (m = esbulk__doc_more(d)) == NULL)
        return;
    free(m->index);
    m->index = other_index ? esbulk__strdup(it->index) : NULL;
    free(m->result_own);
    m->result_own = NULL;
    if (it->result != NULL && d->r_result == NULL)
        d->r_result = m->result_own = esbulk__strdup(it->result);
    if (d->id == NULL) {
        free(m->id);
        m->id = it->id != NULL ? esbulk__strdup(it->id) : NULL;
    }
}

static void answer_items(esbulk__core_t *c, esbulk__send_t *s, const esbulk__resp_t *resp,
                         int64_t now)
{
    dest_t *dest = s->dest;
    size_t i;

    /* after a 413, grow the batch again step by step */
    if (dest->batch_cap > 0 && s->ndocs >= dest->batch_cap && ++dest->cap_ok >= 16) {
        dest->cap_ok = 0;
        dest->batch_cap = dest->batch_cap * 2 >= c->cf.flush.flush_docs ? 0 : dest->batch_cap * 2;
    }
    for (i = 0; i < s->ndocs; i++) {
        const esbulk__item_t *it = &resp->items[i];
        esbulk__doc_t *d = s->docs[i];

        /* a few documents ahead: the record's lines this loop writes (queue
         * link, outcome, result) */
        if (i + 8 < s->ndocs) {
            const char *ahead = (const char *)s->docs[i + 8];

            ESBULK__PREFETCH_W(ahead);
            ESBULK__PREFETCH_W(ahead + ESBULK__CACHE_LINE);
            ESBULK__PREFETCH_W(ahead + 2 * ESBULK__CACHE_LINE);
        }

        doc_take_item(d, it);
        if (it->klass == ESBULK__ITEM_OK) {
            deliver(c, d, ESBULK_OUTCOME_INDEXED, ESBULK_OK, it->status, NULL, NULL, NULL, NULL);
        } else if (it->klass == ESBULK__ITEM_RETRY) {
            if (it->status == 429)
                c->counts.item_429++;
            retry_or_give_up(c, dest, d, 0, ESBULK_ERR_ITEM, it->status, it->error_type,
                             it->error_reason, it->cause_type, it->cause_reason, now);
        } else if (it->status == 409 && d->ambiguous &&
                   (d->op == ESBULK_OP_CREATE || d->conditional)) {
            deliver(c, d, ESBULK_OUTCOME_POSSIBLY, ESBULK_ERR_ITEM, it->status, it->error_type,
                    d->op == ESBULK_OP_CREATE
                        ? "version conflict on a retry after an attempt that broke: most "
                          "likely created by that attempt"
                        : "version conflict on a retry after an attempt that broke: most "
                          "likely applied by that attempt",
                    NULL, NULL);
        } else {
            char why[64];
            snprintf(why, sizeof(why), "the server answered status %d for this document",
                     (int)it->status);
            deliver(c, d, ESBULK_OUTCOME_FAILED, ESBULK_ERR_ITEM, it->status, it->error_type,
                    it->error_reason ? it->error_reason : why, it->cause_type, it->cause_reason);
        }
    }
}

static void answer_http(esbulk__core_t *c, esbulk__send_t *s, const esbulk__answer_t *a,
                        int64_t now)
{
    esbulk__resp_t resp;
    const esbulk__resp_want_t *want = NULL;
    size_t i;

    /* what was sent, for the parser to compare the answer with in place
     * (without it, it copies what it reads: the same outcome) */
    if (a->status >= 200 && a->status <= 299 && s->ndocs > 0)
        want = s->want;
    if (esbulk__response_parse_want(a->status, a->body ? a->body : "", a->body_len, s->ndocs,
                                    c->cf.retry_cluster_block, want, &c->scratch,
                                    &resp) != ESBULK_OK) {
        for (i = 0; i < s->ndocs; i++)
            retry_or_give_up(c, s->dest, s->docs[i], 1, ESBULK_ERR_NOMEM, (int32_t)a->status,
                             NULL, "out of memory reading the response", NULL, NULL, now);
        return;
    }
    if (a->status == 429)
        c->counts.http_429++;
    switch (resp.klass) {
    case ESBULK__RESP_OK:
        answer_items(c, s, &resp, now);
        break;
    case ESBULK__RESP_RETRY:
    case ESBULK__RESP_RETRY_AMBIGUOUS:
        if (a->status >= 500 && a->status != 503)
            s->target->errors++;
        for (i = 0; i < s->ndocs; i++)
            retry_or_give_up(c, s->dest, s->docs[i], resp.klass == ESBULK__RESP_RETRY_AMBIGUOUS,
                             resp.err != ESBULK_OK ? resp.err : ESBULK_ERR_HTTP,
                             (int32_t)a->status, resp.error_type, resp.error_reason,
                             resp.cause_type, resp.cause_reason, now);
        break;
    case ESBULK__RESP_SPLIT:
        c->counts.split_413++;
        if (s->ndocs == 1) {
            deliver(c, s->docs[0], ESBULK_OUTCOME_FAILED, ESBULK_ERR_HTTP, 413, resp.error_type,
                    "HTTP 413: the document alone is larger than the server accepts "
                    "(http.max_content_length)",
                    NULL, NULL);
        } else {
            s->dest->batch_cap = s->ndocs / 2;
            s->dest->cap_ok = 0;
            for (i = s->ndocs; i > 0; i--) {
                s->docs[i - 1]->attempts--; /* a split is not a failed attempt */
                dest_push(c, s->dest, s->docs[i - 1], 1, now);
            }
        }
        break;
    case ESBULK__RESP_FAIL:
        if (a->status == 400 && s->ndocs > 1 && resp.error_type != NULL) {
            /* The server refused the whole request while reading it, for one
             * document's sake (an _id over 512 bytes, an update with neither
             * doc nor script: the request itself is the library's): the
             * halves go again, and again, until that document is alone, and
             * only it fails. The others' batches stay full size. Only for
             * the server's own error (a typed JSON one): a proxy's 400 would
             * cost twice as many requests as documents, to fail them all. */
            c->counts.split_400++;
            for (i = s->ndocs; i > 0; i--) {
                s->docs[i - 1]->split = (uint32_t)(s->ndocs / 2);
                s->docs[i - 1]->attempts--; /* not a failed attempt */
                dest_push(c, s->dest, s->docs[i - 1], 1, now);
            }
            break;
        }
        for (i = 0; i < s->ndocs; i++)
            deliver(c, s->docs[i], ESBULK_OUTCOME_FAILED, resp.err, (int32_t)a->status,
                    resp.error_type, resp.error_reason, resp.cause_type, resp.cause_reason);
        break;
    }
    esbulk__response_free(&resp);
}

static void answer_transport(esbulk__core_t *c, esbulk__send_t *s, const esbulk__answer_t *a,
                             int64_t now)
{
    char why[1024];
    const char *msg = a->message && *a->message ? a->message : "transport error";
    esbulk_err_t err = ESBULK_ERR_TRANSPORT;
    size_t i;

    s->target->errors++;
    switch (a->kind) {
    case ESBULK__ANS_TOO_LARGE:
        snprintf(why, sizeof(why), "%s: the answer is larger than response.max.bytes", s->url);
        break;
    case ESBULK__ANS_NOMEM:
        snprintf(why, sizeof(why), "%s: out of memory reading the answer", s->url);
        err = ESBULK_ERR_NOMEM;
        break;
    default:
        snprintf(why, sizeof(why), "%s: %s", s->url, msg);
        break;
    }
    /* A node that refused, dropped or could not be reached is marked down;
     * one that is only slow to answer (timeout after sending) is not, and
     * that is said once, until it answers again: its documents go again
     * silently otherwise, for as long as their retries last. */
    if (a->kind == ESBULK__ANS_TIMEOUT) {
        esbulk__log(&c->log, s->target->slow_said ? ESBULK_LOG_DEBUG : ESBULK_LOG_WARNING, "io",
                    "%s: no answer within request.timeout.ms (%lld ms): %zu document%s sent "
                    "again (maybe applied)", why, (long long)c->cf.request_timeout_ms, s->ndocs,
                    s->ndocs == 1 ? "" : "s");
        s->target->slow_said = 1;
    }
    if (a->kind == ESBULK__ANS_NOT_SENT || a->kind == ESBULK__ANS_BROKEN ||
        a->kind == ESBULK__ANS_TLS_VERIFY)
        mark_down(c, s->target, why, now);
    if (a->kind == ESBULK__ANS_TLS_VERIFY) {
        /* a certificate that does not verify will not verify on retry */
        for (i = 0; i < s->ndocs; i++)
            deliver(c, s->docs[i], ESBULK_OUTCOME_FAILED, ESBULK_ERR_TRANSPORT, 0, NULL, why, NULL,
                    NULL);
        return;
    }
    for (i = 0; i < s->ndocs; i++)
        retry_or_give_up(c, s->dest, s->docs[i], a->kind != ESBULK__ANS_NOT_SENT, err, 0, NULL,
                         why, NULL, NULL, now);
}

void esbulk__core_answer(esbulk__core_t *c, esbulk__send_t *s, const esbulk__answer_t *a,
                         int64_t now)
{
    send_unlink(c, s);
    target_latency(s->target, now - s->start_ms);
    s->dest->used_ms = now;
    if (a->kind == ESBULK__ANS_HTTP && (s->target->down_said || s->target->slow_said)) {
        s->target->down_said = s->target->slow_said = 0;
        esbulk__log(&c->log, ESBULK_LOG_NOTICE, "io", "node %s answers again",
                    s->target->name ? s->target->name : s->target->url);
    }
    if (a->kind == ESBULK__ANS_HTTP)
        answer_http(c, s, a, now);
    else
        answer_transport(c, s, a, now);
    send_free(c, s);
}

/* ------------------------------------------------------------------------- */
/* Close, results, statistics */

static void fail_queue(esbulk__core_t *c, esbulk__queue_t *q)
{
    esbulk__doc_t *d;

    while ((d = esbulk__queue_pop(q)) != NULL)
        deliver_unsent(c, d, ESBULK_ERR_CLOSED, "not delivered: closed");
}

void esbulk__core_abort(esbulk__core_t *c)
{
    dest_t *dest;
    ix_t *ix;

    /* in flight: sent, so their fate is unknown */
    while (c->inflight != NULL) {
        esbulk__send_t *s = c->inflight;
        size_t k;

        send_unlink(c, s);
        for (k = 0; k < s->ndocs; k++)
            deliver(c, s->docs[k], ESBULK_OUTCOME_POSSIBLY, ESBULK_ERR_CLOSED, 0, NULL,
                    "closed while its request was in flight: it may have been indexed", NULL,
                    NULL);
        send_free(c, s);
    }
    while ((dest = c->active) != NULL) {
        fail_queue(c, &dest->retry_q);
        memset(&dest->ahead, 0, sizeof(dest->ahead));
        fail_queue(c, &dest->q);
        dest_deactivate(c, dest);
    }
    for (ix = c->ixs; ix != NULL; ix = ix->next)
        fail_queue(c, &ix->wait);
    c->waiting = 0;
    while (c->nrb > 0)
        fail_queue(c, &c->rb[--c->nrb].q);
}

void esbulk__core_take_done(esbulk__core_t *c, esbulk__queue_t *out, esbulk__core_counts_t *n)
{
    esbulk__drops_end(&c->drops);
    esbulk__queue_take_ahead(out, &c->done, &c->done_ahead);
    n->indexed += c->counts.indexed;
    n->failed += c->counts.failed;
    n->possibly += c->counts.possibly;
    n->closed += c->counts.closed;
    n->held_bytes += c->counts.held_bytes;
    n->retried += c->counts.retried;
    n->item_429 += c->counts.item_429;
    n->unrouted += c->counts.unrouted;
    n->expired += c->counts.expired;
    n->http_429 += c->counts.http_429;
    n->split_413 += c->counts.split_413;
    n->split_400 += c->counts.split_400;
    n->requests += c->counts.requests;
    n->bytes_raw += c->counts.bytes_raw;
    n->fetches += c->counts.fetches;
    memset(&c->counts, 0, sizeof(c->counts));
}

size_t esbulk__core_inflight(const esbulk__core_t *c) { return c->ninflight; }
uint64_t esbulk__core_retry_walked(const esbulk__core_t *c)
{
    return c->retry_walked;
}

uint64_t esbulk__core_sends_made(const esbulk__core_t *c)
{
    return c->sends_made;
}

size_t esbulk__core_held(const esbulk__core_t *c) { return c->held; }
size_t esbulk__core_nindices(const esbulk__core_t *c) { return c->nixs; }
size_t esbulk__core_ndests(const esbulk__core_t *c) { return c->ndests; }

size_t esbulk__core_buffer_docs(const esbulk__core_t *c)
{
    size_t nodes = 0;
    int i;

    if (c->cluster != NULL && !c->cluster->seeds_only)
        for (i = 0; i < c->cluster->nnodes; i++)
            nodes += c->cluster->nodes[i].http != NULL && c->cluster->nodes[i].reachable;
    if (nodes == 0)
        nodes = (size_t)c->nseeds;
    return esbulk__buffer_docs_for(nodes, c->ndests, c->cf.max_inflight, c->cf.flush.flush_docs);
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

json_t *esbulk__core_node_stats(const esbulk__core_t *c, int64_t now)
{
    json_t *arr = json_array();
    const target_t *t;

    if (arr == NULL)
        return NULL;
    for (t = c->targets; t != NULL; t = t->next) {
        json_t *o = json_object(), *lat = json_object();
        size_t queued = 0;
        const dest_t *dest;

        if (o == NULL || lat == NULL) {
            json_decref(o);
            json_decref(lat);
            continue;
        }
        for (dest = c->dests; dest != NULL; dest = dest->next)
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
    return arr;
}
