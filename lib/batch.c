/* Document queues, outcomes and the flush decision: plain code over plain
 * data. */
#include "core.h"
#include "doc.h"

#include <stdlib.h>
#include <string.h>

void esbulk__queue_push(esbulk__queue_t *q, esbulk__doc_t *d)
{
    d->next = NULL;
    if (q->tail != NULL)
        q->tail->next = d;
    else
        q->head = d;
    q->tail = d;
    q->count++;
    q->bytes += d->lines_len;
}

void esbulk__queue_push_front(esbulk__queue_t *q, esbulk__doc_t *d)
{
    d->next = q->head;
    q->head = d;
    if (q->tail == NULL)
        q->tail = d;
    q->count++;
    q->bytes += d->lines_len;
}

esbulk__doc_t *esbulk__queue_pop(esbulk__queue_t *q)
{
    esbulk__doc_t *d = q->head;

    if (d == NULL)
        return NULL;
    q->head = d->next;
    if (q->head == NULL)
        q->tail = NULL;
    q->count--;
    q->bytes -= d->lines_len;
    d->next = NULL;
    return d;
}

void esbulk__queue_push_ahead(esbulk__queue_t *q, esbulk__ahead_t *ahead, esbulk__doc_t *d)
{
    esbulk__doc_t **r = &ahead->doc[ahead->pushes++ % ESBULK__AHEAD];

    d->ahead = NULL;
    if (*r != NULL)
        (*r)->ahead = d;
    *r = d;
    esbulk__queue_push(q, d);
}

esbulk__doc_t *esbulk__queue_pop_ahead(esbulk__queue_t *q, esbulk__ahead_t *ahead)
{
    int i;

    if (ahead != NULL && q->count <= ESBULK__AHEAD && q->head != NULL)
        for (i = 0; i < ESBULK__AHEAD; i++)
            if (ahead->doc[i] == q->head)
                ahead->doc[i] = NULL;
    return esbulk__queue_pop(q);
}

void esbulk__queue_take_ahead(esbulk__queue_t *dst, esbulk__queue_t *src, esbulk__ahead_t *ahead)
{
    esbulk__queue_append(dst, src);
    memset(ahead, 0, sizeof(*ahead));
}

void esbulk__queue_prepend(esbulk__queue_t *dst, esbulk__queue_t *src)
{
    if (src->head == NULL)
        return;
    src->tail->next = dst->head;
    if (dst->tail == NULL)
        dst->tail = src->tail;
    dst->head = src->head;
    dst->count += src->count;
    dst->bytes += src->bytes;
    src->head = src->tail = NULL;
    src->count = src->bytes = 0;
}

void esbulk__queue_append(esbulk__queue_t *dst, esbulk__queue_t *src)
{
    if (src->head == NULL)
        return;
    if (dst->tail != NULL)
        dst->tail->next = src->head;
    else
        dst->head = src->head;
    dst->tail = src->tail;
    dst->count += src->count;
    dst->bytes += src->bytes;
    src->head = src->tail = NULL;
    src->count = src->bytes = 0;
}

void esbulk__doc_set_outcome(esbulk__doc_t *d, esbulk_outcome_t outcome, esbulk_err_t err,
                             int32_t status, const char *error_type, const char *reason,
                             const char *cause_type, const char *cause_reason)
{
    esbulk__doc_more_t *m = d->more;

    d->outcome = (unsigned char)outcome;
    d->err = (signed char)err;
    d->status = status;
    if (m == NULL && error_type == NULL && reason == NULL)
        return;
    if (m == NULL && (m = esbulk__doc_more(d)) == NULL)
        return;
    free(m->error_type);
    free(m->error_reason);
    free(m->cause_type);
    free(m->cause_reason);
    m->error_type = error_type ? esbulk__strdup(error_type) : NULL;
    m->error_reason = reason ? esbulk__strdup(reason) : NULL;
    /* a cause without its reason would be a cause of nothing */
    m->cause_reason = cause_reason && m->error_reason ? esbulk__strdup(cause_reason) : NULL;
    m->cause_type = cause_type && m->cause_reason ? esbulk__strdup(cause_type) : NULL;
}

esbulk__doc_more_t *esbulk__doc_more(esbulk__doc_t *d)
{
    if (d->more == NULL)
        d->more = calloc(1, sizeof(*d->more));
    return d->more;
}

int esbulk__should_flush(const esbulk__flush_policy_t *p, size_t count, size_t bytes,
                         int64_t oldest_ms, int64_t now_ms, int force)
{
    if (count == 0)
        return 0;
    return force || count >= p->flush_docs || bytes >= p->flush_bytes ||
           now_ms - oldest_ms >= p->flush_interval_ms;
}

int64_t esbulk__flush_due_ms(const esbulk__flush_policy_t *p, size_t count, int64_t oldest_ms)
{
    return count == 0 ? INT64_MAX : oldest_ms + p->flush_interval_ms;
}

size_t esbulk__buffer_docs_for(size_t nodes, size_t dests, int inflight, size_t flush_docs)
{
    /* in 64 bits and clamped at each step: nothing here can overflow */
    uint64_t n = nodes > 0 ? nodes : 1, q = dests > n ? dests : n, docs;
    uint64_t per = (uint64_t)(inflight > 0 ? inflight : 1);

    if (n > ESBULK__BUFFER_DOCS_MAX)
        n = ESBULK__BUFFER_DOCS_MAX;
    if (q > ESBULK__BUFFER_DOCS_MAX)
        q = ESBULK__BUFFER_DOCS_MAX;
    if (per > 64)
        per = 64;
    docs = 2 * (n * per + q);
    if (flush_docs > ESBULK__BUFFER_DOCS_MAX ||
        docs > ESBULK__BUFFER_DOCS_MAX / (flush_docs > 0 ? flush_docs : 1))
        return ESBULK__BUFFER_DOCS_MAX;
    docs *= flush_docs > 0 ? flush_docs : 1;
    if (docs < ESBULK__BUFFER_DOCS_MIN)
        docs = ESBULK__BUFFER_DOCS_MIN;
    return (size_t)docs;
}
