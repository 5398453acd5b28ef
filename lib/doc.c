/* The document's plain operations (doc.h): the queues that hold documents,
 * its outcome and what it says beyond the record. No locks: whoever holds
 * the queue owns it. */
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
