/* The core's requests: the next batch due, taken from a destination for a
 * target with a free slot, and the arrays answered requests keep for the
 * next ones. */
#include "core_int.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

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
        s->docs[n] = esbulk__core_dest_pop(dest);
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

esbulk__send_t *esbulk__core_next_send(esbulk__core_t *c, int force, int64_t now)
{
    dest_t *dest;

    for (dest = c->active; dest != NULL; dest = dest->anext) {
        target_t *t;

        if (dest_blocked(c, dest) ||
            !esbulk__should_flush(&c->cf.flush, dest->q.count, dest->q.bytes, dest->oldest_ms,
                                  now, force))
            continue;
        if ((t = esbulk__core_dest_target(c, dest, now)) == NULL)
            continue;
        return send_batch(c, dest, t, now);
    }
    return NULL;
}

void esbulk__core_send_unlink(esbulk__core_t *c, esbulk__send_t *s)
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
void esbulk__core_send_free(esbulk__core_t *c, esbulk__send_t *s)
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

    esbulk__core_send_unlink(c, s);
    s->target->requests--;
    c->counts.requests--;
    c->counts.bytes_raw -= s->bytes;
    for (i = s->ndocs; i > 0; i--) {
        s->docs[i - 1]->attempts--;
        esbulk__core_dest_push(c, s->dest, s->docs[i - 1], 1, now);
    }
    esbulk__core_send_free(c, s);
}
