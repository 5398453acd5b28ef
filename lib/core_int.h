/* The engine core's own definitions, shared by its files and no other:
 * the state of targets, destinations and index entries, the core itself,
 * and the functions one of its files gives the others. core.h is the
 * core's interface; this is its inside. */
#ifndef ESBULK_CORE_INT_H
#define ESBULK_CORE_INT_H

#include "core.h"
#include "docmem.h"
#include "map.h"
#include "response.h"

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
    esbulk__drops_t drops;    /* the lines esbulk__core_deliver() gave back,
    as a run of one block's */
    esbulk__ahead_t done_ahead; /* its ahead links: the serving thread prefetches by them */
    esbulk__core_counts_t counts;
    unsigned rr;
    int64_t next_expire_ms, next_sweep_ms;
};

static inline uint32_t esbulk__core_rnd32(esbulk__core_t *c)
{
    c->rng ^= c->rng << 13;
    c->rng ^= c->rng >> 7;
    c->rng ^= c->rng << 17;
    return (uint32_t)(c->rng >> 16);
}

/* The head of dest's queue, taken out (NULL: empty). */
static inline esbulk__doc_t *esbulk__core_dest_pop(dest_t *dest)
{
    return esbulk__queue_pop_ahead(&dest->q, &dest->ahead);
}

/* core_target.c: the HTTP endpoints. The targets follow the cluster view
 * (or the seeds without one). */
void esbulk__core_sync_targets(esbulk__core_t *c);
void esbulk__core_target_free(target_t *t);
/* Targets that left the view and carry no request are freed. */
void esbulk__core_targets_prune(esbulk__core_t *c);
/* A request to t took ms; t is down (why: for the log) until node.recheck.ms. */
void esbulk__core_target_latency(target_t *t, int64_t ms);
void esbulk__core_mark_down(esbulk__core_t *c, target_t *t, const char *why, int64_t now);
/* The target a destination's next request goes to, NULL if none is free.
 * Unrouted requests may hold all but one of a node's request slots while
 * routed documents are waiting: an unrouted request is often the one that
 * creates an index, which can take the server a second or more, and a node
 * whose every slot waits on that holds up the indices that exist. */
target_t *esbulk__core_dest_target(esbulk__core_t *c, dest_t *dest, int64_t now);

/* core_route.c: index entries, destinations and the route. A document is
 * queued on its destination (front: first in line), routed first by the
 * route_ functions; since: when it was added (flush.interval.ms counts). */
void esbulk__core_ix_free(esbulk__core_t *c, ix_t *ix);
void esbulk__core_dest_free(esbulk__core_t *c, dest_t *d);
void esbulk__core_dest_deactivate(esbulk__core_t *c, dest_t *d);
void esbulk__core_dest_activate(esbulk__core_t *c, dest_t *d);
void esbulk__core_dest_push(esbulk__core_t *c, dest_t *dest, esbulk__doc_t *doc, int front,
                            int64_t now);
void esbulk__core_shard_dest_clear(ix_t *ix);
void esbulk__core_route_push_since(esbulk__core_t *c, esbulk__doc_t *doc, int front, int64_t since,
                                   int64_t now);
void esbulk__core_route_push(esbulk__core_t *c, esbulk__doc_t *doc, int front, int64_t now);

/* core_answer.c: answers to outcomes */
/* Sets d's outcome and hands it to core->done (its lines given back unless
 * kept for the result). */
void esbulk__core_deliver(esbulk__core_t *c, esbulk__doc_t *d, esbulk_outcome_t outcome,
                          esbulk_err_t err, int32_t status, const char *type, const char *reason,
                          const char *cause_type, const char *cause_reason);

/* core_retry.c: retries and expiry */
/* The outcome of a document that no request answered last: what, and the
 * error of its last attempt when it had one (kept by retry_or_give_up). */
void esbulk__core_deliver_unsent(esbulk__core_t *c, esbulk__doc_t *d, esbulk_err_t err,
                                 const char *what);
/* A queue in add order (retries, older, go first) has rising deadlines:
 * the scan stops at the first one not due, and a deep backlog costs
 * nothing. */
void esbulk__core_expire_ordered(esbulk__core_t *c, esbulk__queue_t *q, esbulk__ahead_t *ahead,
                                 int64_t now);
/* Moves retries that are due back into their destinations, first in line
 * and in their original order. */
void esbulk__core_retries_due(esbulk__core_t *c, int64_t now);
/* Fails every document past delivery.timeout.ms; and a document that
 * failed an attempt: retried, or given its outcome. */
void esbulk__core_expire_all(esbulk__core_t *c, int64_t now);
void esbulk__core_retry_or_give_up(esbulk__core_t *c, dest_t *dest, esbulk__doc_t *doc,
                                   int ambiguous, esbulk_err_t err, int32_t status,
                                   const char *type, const char *reason, const char *cause_type,
                                   const char *cause_reason, int64_t now);

/* core_send.c: requests */
/* s is no longer in flight. */
void esbulk__core_send_unlink(esbulk__core_t *c, esbulk__send_t *s);
/* s kept for a next request, up to ESBULK__CORE_SPARE_SENDS of them and
 * SPARE_SEND_BYTES of arrays (more are in flight at once only with many
 * nodes or max.inflight.per.node raised), else freed. */
void esbulk__core_send_free(esbulk__core_t *c, esbulk__send_t *s);

#endif
