/* Where a document goes: the core's index entries (layouts read, documents
 * waiting for one), its destinations (a node's, a shard's, or any node's
 * queue of documents) and the route of each document added. */
#include "core_int.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define ROUTE_WAIT ((dest_t *)1)

void esbulk__core_ix_free(esbulk__core_t *c, ix_t *ix)
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

void esbulk__core_dest_activate(esbulk__core_t *c, dest_t *d)
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

void esbulk__core_dest_deactivate(esbulk__core_t *c, dest_t *d)
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

void esbulk__core_dest_free(esbulk__core_t *c, dest_t *d)
{
    esbulk__map_del(&c->dest_map, d->key);
    esbulk__core_dest_deactivate(c, d);
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
    esbulk__core_dest_activate(c, dest);
    doc->queued_ms = since;
    dest->used_ms = now;
    if (dest->q.count == 0 || since < dest->oldest_ms)
        dest->oldest_ms = since;
    if (front)
        esbulk__queue_push_front(&dest->q, doc); /* not in dest->ahead: no link */
    else
        esbulk__queue_push_ahead(&dest->q, &dest->ahead, doc);
}

void esbulk__core_dest_push(esbulk__core_t *c, dest_t *dest, esbulk__doc_t *doc, int front,
                            int64_t now)
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

void esbulk__core_shard_dest_clear(ix_t *ix)
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
        esbulk__core_deliver(c, doc, ESBULK_OUTCOME_FAILED, ESBULK_ERR_NOMEM, 0, NULL,
                             "out of memory while routing", NULL, NULL);
        return;
    }
    dest_push_since(c, dest, doc, front, since, now);
}

void esbulk__core_route_push_since(esbulk__core_t *c, esbulk__doc_t *doc, int front, int64_t since,
                                   int64_t now)
{
    ix_t *ix;
    dest_t *dest = route(c, doc, &ix, now);

    route_place(c, doc, dest, ix, front, since, now);
}

void esbulk__core_route_push(esbulk__core_t *c, esbulk__doc_t *doc, int front, int64_t now)
{
    esbulk__core_route_push_since(c, doc, front, now, now);
}

void esbulk__core_add(esbulk__core_t *c, esbulk__doc_t *d, int64_t added_ms, int64_t now)
{
    c->held++;
    esbulk__core_route_push_since(c, d, 0, added_ms < now ? added_ms : now, now);
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
