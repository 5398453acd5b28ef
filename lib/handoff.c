/* The hand-off between the callers' threads and the I/O thread: documents
 * added go to eb->incoming, outcomes come back to eb->results, statistics
 * are published; each exchange takes eb->lock once. The callers' side
 * (adding, serving) is in esbulk.c; the I/O thread calls only these. */
#include "docmem.h"
#include "engine.h"

#include <stdlib.h>
#include <string.h>

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
