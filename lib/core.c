/* The engine core (core.h): its life, the cluster view and index reads it
 * is given, time passing (tick, deadlines, the sweep of idle state), and
 * the outcomes it hands back. The rest of the core is in core_*.c (see
 * core_int.h); no I/O, no threads, no clock here. */
#include "core_int.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static void release_waits(esbulk__core_t *c, int64_t now);

static int64_t sweep_every(const esbulk__core_t *c)
{
    int64_t half = c->cf.idle_ms / 2;

    return half < 1 ? 1 : (half < SWEEP_MAX_MS ? half : SWEEP_MAX_MS);
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
    esbulk__core_sync_targets(c);
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
        esbulk__core_dest_free(c, c->dests);
    }
    while (c->ixs != NULL) {
        free_queue(&c->ixs->wait);
        esbulk__core_ix_free(c, c->ixs);
    }
    while (c->nrb > 0)
        free_queue(&c->rb[--c->nrb].q);
    free(c->rb);
    free_queue(&c->done);
    while (c->targets != NULL) {
        target_t *t = c->targets;
        c->targets = t->next;
        esbulk__core_target_free(t);
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
    esbulk__core_sync_targets(c);
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
        esbulk__core_shard_dest_clear(ix);
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
        esbulk__core_route_push_since(c, d, 0, d->queued_ms, now);
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
        esbulk__core_route_push_since(c, d, 0, d->queued_ms, now);
}

/* Documents that waited topology.wait.ms for their index's first read go
 * unrouted (not under per_id), and those past their delivery timeout
 * fail. */
static void waits_due(esbulk__core_t *c, int64_t now)
{
    ix_t *ix;

    for (ix = c->ixs; ix != NULL && c->waiting > 0; ix = ix->next) {
        size_t before = ix->wait.count;

        esbulk__core_expire_ordered(c, &ix->wait, NULL, now);
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

/* ------------------------------------------------------------------------- */
/* Time */

/* Frees destinations and index entries unused for topology.idle.ms. */
static void sweep(esbulk__core_t *c, int64_t now)
{
    dest_t *dest, *dn;
    ix_t *ix, *in;

    for (dest = c->dests; dest != NULL; dest = dn) {
        dn = dest->next;
        if (dest->q.count == 0 && dest->retry_q.count == 0 && dest->inflight == 0 &&
            now - dest->used_ms >= c->cf.idle_ms)
            esbulk__core_dest_free(c, dest);
    }
    for (ix = c->ixs; ix != NULL; ix = in) {
        in = ix->next;
        if (ix->ndests == 0 && ix->wait.count == 0 && !ix->fetching && !ix->want_fetch &&
            now - ix->used_ms >= c->cf.idle_ms)
            esbulk__core_ix_free(c, ix);
    }
    esbulk__core_targets_prune(c);
}

void esbulk__core_tick(esbulk__core_t *c, int64_t now)
{
    esbulk__core_retries_due(c, now);
    if (c->waiting > 0)
        waits_due(c, now);
    if (now >= c->next_expire_ms) {
        esbulk__core_expire_all(c, now);
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
            esbulk__core_dest_deactivate(c, dest); /* emptied since: no longer walked */
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
/* Close, outcomes, statistics */

static void fail_queue(esbulk__core_t *c, esbulk__queue_t *q)
{
    esbulk__doc_t *d;

    while ((d = esbulk__queue_pop(q)) != NULL)
        esbulk__core_deliver_unsent(c, d, ESBULK_ERR_CLOSED, "not delivered: closed");
}

void esbulk__core_abort(esbulk__core_t *c)
{
    dest_t *dest;
    ix_t *ix;

    /* in flight: sent, so their fate is unknown */
    while (c->inflight != NULL) {
        esbulk__send_t *s = c->inflight;
        size_t k;

        esbulk__core_send_unlink(c, s);
        for (k = 0; k < s->ndocs; k++)
            esbulk__core_deliver(c, s->docs[k], ESBULK_OUTCOME_POSSIBLY, ESBULK_ERR_CLOSED, 0, NULL,
                                 "closed while its request was in flight: it may have been "
                                 "indexed", NULL,
                                 NULL);
        esbulk__core_send_free(c, s);
    }
    while ((dest = c->active) != NULL) {
        fail_queue(c, &dest->retry_q);
        memset(&dest->ahead, 0, sizeof(dest->ahead));
        fail_queue(c, &dest->q);
        esbulk__core_dest_deactivate(c, dest);
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
