/* The hand-off between the callers' threads and the I/O thread, both sides:
 * documents added go to eb->incoming, outcomes come back to eb->results
 * (and, for a pull handle, eb->pull_ready), statistics are published; each
 * exchange takes eb->lock once. What flush and close wait for (the marks)
 * is counted here as documents are served. */
#include "docmem.h"
#include "engine.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------- */
/* What flush and close wait for */

void esbulk__live_done(esbulk_t *eb, const esbulk__doc_t *d)
{
    esbulk__mark_t *m;

    eb->live--;
    for (m = eb->marks; m != NULL; m = m->next)
        if (d->seq < m->upto)
            m->left--;
}

void esbulk__live_done_list(esbulk_t *eb, const esbulk__doc_t *head, size_t n)
{
    const esbulk__doc_t *d;

    if (eb->marks == NULL) {
        eb->live -= n;
        return;
    }
    for (d = head; d != NULL; d = d->next)
        esbulk__live_done(eb, d);
    /* what the last flush asked to go at once has all been served: nothing
     * more to count (a flush puts it back) */
    if (eb->force_mark.left == 0)
        esbulk__mark_remove(eb, &eb->force_mark);
}

void esbulk__mark_add(esbulk_t *eb, esbulk__mark_t *m)
{
    /* every unserved document was added before now */
    m->upto = eb->next_seq;
    m->left = eb->live;
    m->next = eb->marks;
    eb->marks = m;
}

void esbulk__mark_remove(esbulk_t *eb, esbulk__mark_t *m)
{
    esbulk__mark_t **p;

    for (p = &eb->marks; *p != NULL; p = &(*p)->next)
        if (*p == m) {
            *p = m->next;
            return;
        }
}

/* ------------------------------------------------------------------------- */
/* The I/O thread's side */

void esbulk__handoff_take(esbulk_t *eb, esbulk__queue_t *incoming,
                          esbulk__handoff_flags_t *flags)
{
    pthread_mutex_lock(&eb->lock);
    esbulk__queue_take_ahead(incoming, &eb->incoming, &eb->incoming_ahead);
    eb->io_sleep_until = 0; /* awake: it looks at incoming again before it sleeps */
    /* an add found no space and none was freed since: send everything */
    flags->force = eb->flushers > 0 || eb->closing || eb->buffer_full ||
                   eb->force_mark.left > 0;
    flags->terminate = eb->terminate;
    flags->abort_all = eb->abort_all;
    pthread_mutex_unlock(&eb->lock);
}

int64_t esbulk__handoff_sleep(esbulk_t *eb, int64_t now, int64_t due)
{
    pthread_mutex_lock(&eb->lock);
    if (eb->incoming.head != NULL) {
        /* added since the take, without a wake-up: the oldest must be
         * looked at within flush.interval.ms, a large incoming at once */
        int64_t by = eb->incoming.head->queued_ms + eb->wake_interval_ms;

        if (eb->incoming.count >= eb->wake_docs || eb->incoming.bytes >= eb->wake_bytes)
            by = now;
        if (by < due)
            due = by;
    }
    eb->io_sleep_until = due > now ? due : 0;
    pthread_mutex_unlock(&eb->lock);
    return due;
}

void esbulk__handoff_deliver(esbulk_t *eb, esbulk__queue_t *q, const esbulk__core_counts_t *n,
                             uint64_t bytes_sent, uint64_t handles_made)
{
    int failures_only = (int)esbulk__conf_int(eb->conf, ESBULK__C_RESULT_FAILURES_ONLY);
    esbulk__queue_t drop = {0}, keep = {0};
    esbulk__doc_t *d, *next;
    size_t freed_bytes = (size_t)n->held_bytes;

    /* the core counted the outcomes and gave back the lines as it delivered
     * them: nothing per document here, but with result.failures_only, where
     * the successes are served here, by the I/O thread: set apart now,
     * freed after the lock in one go (one by one, each took the records'
     * lock against the adding thread's, which doubled the CPU of a
     * document) */
    if (failures_only) {
        for (d = q->head; d != NULL; d = next) {
            next = d->next;
            esbulk__queue_push(d->outcome == ESBULK_OUTCOME_INDEXED ? &drop : &keep, d);
        }
        *q = keep;
    }
    pthread_mutex_lock(&eb->lock);
    eb->buffered_bytes -= freed_bytes;
    if (freed_bytes > 0)
        eb->buffer_full = 0; /* room again: an add that still finds none says so */
    eb->stats.retried += n->retried;
    eb->stats.item_429 += n->item_429;
    eb->stats.unrouted += n->unrouted;
    eb->stats.expired += n->expired;
    eb->stats.http_429 += n->http_429;
    eb->stats.split_413 += n->split_413;
    eb->stats.split_400 += n->split_400;
    eb->stats.requests += n->requests;
    eb->stats.bytes_raw += n->bytes_raw;
    eb->stats.fetches += n->fetches;
    eb->stats.bytes_sent += bytes_sent;
    eb->stats.http_handles += handles_made;
    eb->stats.indexed += n->indexed;
    eb->stats.failed += n->failed;
    eb->stats.possibly += n->possibly;
    eb->stats.closed += n->closed;
    if (drop.count > 0) {
        /* served at once: nobody asked to see successes */
        esbulk__live_done_list(eb, drop.head, drop.count);
        eb->buffered_docs -= drop.count;
        eb->buffer_full = 0;
    }
    esbulk__queue_append(&eb->results, q);
    pthread_cond_broadcast(&eb->cond_space);
    pthread_cond_broadcast(&eb->cond_results);
    pthread_mutex_unlock(&eb->lock);
    esbulk__doc_free_list(drop.head);
}

void esbulk__handoff_publish(esbulk_t *eb, char *node_stats, size_t indices,
                             size_t destinations)
{
    pthread_mutex_lock(&eb->lock);
    if (node_stats != NULL) {
        free(eb->node_stats);
        eb->node_stats = node_stats;
    }
    eb->stats.indices = indices;
    eb->stats.destinations = destinations;
    pthread_mutex_unlock(&eb->lock);
}

void esbulk__handoff_buffer_docs(esbulk_t *eb, size_t docs, size_t destinations)
{
    pthread_mutex_lock(&eb->lock);
    eb->stats.destinations = destinations;
    if (eb->max_docs_auto && docs != eb->max_docs) {
        if (docs > eb->max_docs)
            pthread_cond_broadcast(&eb->cond_space);
        eb->max_docs = docs;
    }
    pthread_mutex_unlock(&eb->lock);
}

/* ------------------------------------------------------------------------- */
/* The callers' side */

/* ESBULK_ERR_QUEUE_FULL, said. Caller holds eb->lock. */
static esbulk_err_t queue_full(esbulk_t *eb, size_t max_bytes, char *errstr, size_t errstr_size)
{
    esbulk__errstr(errstr, errstr_size, "queue full: %zu document%s, %zu bytes buffered "
                   "(buffer.max.docs %zu, buffer.max.bytes %zu)", eb->buffered_docs,
                   eb->buffered_docs == 1 ? "" : "s", eb->buffered_bytes, eb->max_docs,
                   max_bytes);
    return ESBULK_ERR_QUEUE_FULL;
}

/* ESBULK_ERR_QUEUE_FULL before a document is built, when the buffer is
 * full by its count and the add would not wait (enqueue.timeout.ms 0, or a
 * callback): building it (its body checked and copied) cost every retry of
 * a caller waiting for room as much as an add, 46 us for 1 MiB. Looked at
 * only while an add found the buffer full and nothing was freed since. */
esbulk_err_t esbulk__handoff_full_now(esbulk_t *eb, char *errstr, size_t errstr_size)
{
    esbulk_err_t err = ESBULK_OK;

    if (!atomic_load_explicit(&eb->buffer_full, memory_order_relaxed))
        return ESBULK_OK;
    pthread_mutex_lock(&eb->lock);
    if (!eb->closing && !eb->closed && eb->buffered_docs > 0 &&
        eb->buffered_docs + 1 > eb->max_docs &&
        (esbulk__conf_int(eb->conf, ESBULK__C_ENQUEUE_TIMEOUT_MS) == 0 ||
         esbulk__caller_self(eb) != NULL))
        err = queue_full(eb, (size_t)esbulk__conf_int(eb->conf, ESBULK__C_BUFFER_MAX_BYTES),
                         errstr, errstr_size);
    pthread_mutex_unlock(&eb->lock);
    return err;
}

/* Queues docs[0..n) in order under one lock, each waiting for space as
 * enqueue.timeout.ms allows. *done gets how many were queued (those are
 * the caller's no more); on an error docs[*done..n) are still the
 * caller's. */
esbulk_err_t esbulk__handoff_add(esbulk_t *eb, esbulk__doc_t *const *docs, size_t n, size_t *done,
                                 char *errstr, size_t errstr_size)
{
    size_t max_bytes = (size_t)esbulk__conf_int(eb->conf, ESBULK__C_BUFFER_MAX_BYTES);
    int64_t wait_ms = esbulk__conf_int(eb->conf, ESBULK__C_ENQUEUE_TIMEOUT_MS);
    int64_t dt = esbulk__conf_int(eb->conf, ESBULK__C_DELIVERY_TIMEOUT_MS);
    esbulk_err_t err = ESBULK_OK;
    struct timespec until;
    int wake;
    size_t i;
    int64_t now_ms = esbulk__now_ms_coarse();

    *done = 0;
    pthread_mutex_lock(&eb->lock);
    /* inside a callback only this thread could free space: never wait */
    if (esbulk__caller_self(eb) != NULL)
        wait_ms = 0;
    for (i = 0; i < n && err == ESBULK_OK; i++) {
        esbulk__doc_t *d = docs[i];
        int waiting = 0;

        for (;;) {
            if (eb->closing || eb->closed) {
                esbulk__errstr(errstr, errstr_size, "the handle is closing");
                err = ESBULK_ERR_CLOSED;
                break;
            }
            /* one document always fits in an empty buffer */
            if ((eb->buffered_docs == 0 || eb->buffered_bytes + d->body_bytes <= max_bytes) &&
                eb->buffered_docs + 1 <= eb->max_docs)
                break;
            /* full: what is buffered goes now rather than at flush.docs or
             * flush.interval.ms (the I/O thread sees the buffer full), this
             * call's documents so far included */
            if (!eb->buffer_full || i > 0) {
                eb->buffer_full = 1;
                esbulk__io_wakeup(eb);
            }
            if (wait_ms > 0 && !waiting)
                esbulk__deadline_from_now(&until, wait_ms);
            waiting = 1;
            if (wait_ms == 0 || (wait_ms > 0 && pthread_cond_timedwait(&eb->cond_space, &eb->lock,
                                                                      &until) == ETIMEDOUT)) {
                err = queue_full(eb, max_bytes, errstr, errstr_size);
                break;
            }
            if (wait_ms < 0)
                pthread_cond_wait(&eb->cond_space, &eb->lock);
        }
        if (err != ESBULK_OK)
            break;
        d->seq = eb->next_seq++;
        d->queued_ms = waiting ? esbulk__now_ms() : now_ms;
        d->deadline_ms = dt > 0 ? d->queued_ms + dt : 0;
        eb->live++;
        eb->buffered_bytes += d->body_bytes;
        eb->buffered_docs++;
        eb->stats.added++;
        esbulk__queue_push_ahead(&eb->incoming, &eb->incoming_ahead, d);
        (*done)++;
    }
    /* wake the I/O thread only when it would look too late by itself: it
     * looks at incoming before it sleeps, and publishes when it wakes */
    wake = *done > 0 && eb->io_sleep_until != 0 &&
           (eb->io_sleep_until > docs[0]->queued_ms + eb->wake_interval_ms ||
            eb->incoming.count >= eb->wake_docs || eb->incoming.bytes >= eb->wake_bytes);
    if (wake)
        eb->io_sleep_until = 0;
    pthread_mutex_unlock(&eb->lock);
    if (wake)
        esbulk__io_wakeup(eb);
    return err;
}

void esbulk__handoff_uncount(esbulk_t *eb, esbulk__queue_t *from, esbulk__queue_t *q)
{
    *q = *from;
    memset(from, 0, sizeof(*from));
    eb->buffered_docs -= q->count;
    if (q->count > 0)
        eb->buffer_full = 0; /* room again: an add that still finds none says so */
    if (q->count > 0)
        pthread_cond_broadcast(&eb->cond_space);
}

/* Served documents stop counting against buffer.max.docs before their
 * callbacks run, so that a callback can re-queue without waiting. */
void esbulk__handoff_results(esbulk_t *eb, esbulk__queue_t *q)
{
    pthread_mutex_lock(&eb->lock);
    esbulk__handoff_uncount(eb, &eb->results, q);
    pthread_mutex_unlock(&eb->lock);
}

void esbulk__handoff_served(esbulk_t *eb, const esbulk__doc_t *first, size_t n)
{
    esbulk__caller_t *c;

    pthread_mutex_lock(&eb->lock);
    esbulk__live_done_list(eb, first, n);
    if ((c = esbulk__caller_self(eb)) != NULL)
        c->served += (int32_t)n;
    pthread_mutex_unlock(&eb->lock);
}

/* A pull handle's serving: the results queued now become pullable and count
 * as served (their outcome is known: a flush or close need not wait for
 * them); they keep counting against buffer.max.docs until released. */
void esbulk__handoff_pull_absorb(esbulk_t *eb)
{
    pthread_mutex_lock(&eb->lock);
    esbulk__live_done_list(eb, eb->results.head, eb->results.count);
    esbulk__queue_append(&eb->pull_ready, &eb->results);
    pthread_mutex_unlock(&eb->lock);
}

/* Waits until results are queued, a destroy is requested, or the deadline
 * (NULL: forever) passes. Returns 0 when no result is queued. */
int esbulk__handoff_wait(esbulk_t *eb, const struct timespec *until)
{
    int rc = 0;

    pthread_mutex_lock(&eb->lock);
    while (eb->results.head == NULL && !eb->destroy_deferred && rc != ETIMEDOUT) {
        if (until == NULL)
            pthread_cond_wait(&eb->cond_results, &eb->lock);
        else
            rc = pthread_cond_timedwait(&eb->cond_results, &eb->lock, until);
    }
    rc = eb->results.head != NULL;
    pthread_mutex_unlock(&eb->lock);
    return rc;
}

/* Results a pull handle holds ready to pull. */
size_t esbulk__handoff_pull_ready(esbulk_t *eb)
{
    size_t n;

    pthread_mutex_lock(&eb->lock);
    n = eb->pull_ready.count;
    pthread_mutex_unlock(&eb->lock);
    return n;
}
