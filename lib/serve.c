/* Serving results: esbulk_poll and the serving that flush and close do,
 * which run the result and statistics callbacks on the caller's thread, and
 * the pull API (esbulk_poll_results, esbulk_results_release) for a handle
 * without result callbacks. */
#include "docmem.h"
#include "engine.h"

#include <errno.h>
#include <string.h>

/* Results handed to a batch callback at once. */
#define RESULTS_BATCH 256

/* Calls the statistics callback when stats.interval.ms has passed. Runs on
 * the serving thread like the other callbacks. */
static void maybe_stats(esbulk_t *eb)
{
    int64_t iv = esbulk__conf_int(eb->conf, ESBULK__C_STATS_INTERVAL_MS), now;
    char *json;

    if (eb->conf->stats_cb == NULL || iv <= 0 || esbulk__destroy_requested(eb))
        return; /* no statistics for a handle the program has destroyed */
    now = esbulk__now_ms();
    if (eb->next_stats_ms == 0)
        eb->next_stats_ms = now + iv;
    if (now < eb->next_stats_ms)
        return;
    eb->next_stats_ms = now + iv;
    json = esbulk_stats_json(eb);
    if (json != NULL)
        eb->conf->stats_cb(eb, json, strlen(json), eb->conf->opaque);
    esbulk_free(json);
}

/* Milliseconds until the statistics callback is due (INT32_MAX: never). */
static int64_t stats_due_in(esbulk_t *eb)
{
    int64_t iv = esbulk__conf_int(eb->conf, ESBULK__C_STATS_INTERVAL_MS), now;

    if (eb->conf->stats_cb == NULL || iv <= 0)
        return INT32_MAX;
    now = esbulk__now_ms();
    return eb->next_stats_ms == 0 ? iv : (eb->next_stats_ms > now ? eb->next_stats_ms - now : 0);
}

/* A handle with neither a result nor a results callback keeps its results
 * for esbulk_poll_results(): serving calls only note that their outcome is
 * known (the conf is the handle's own copy: this never changes). */
static int pull_mode(const esbulk_t *eb)
{
    return eb->conf->result_cb == NULL && eb->conf->results_cb == NULL;
}

/* Serves what is queued now; returns how many. Caller does not hold lock. */
int32_t esbulk__serve(esbulk_t *eb)
{
    esbulk__queue_t q;
    esbulk__doc_t *d;
    const esbulk_result_t *batch[RESULTS_BATCH];
    size_t n = 0;
    int32_t served = 0;

    maybe_stats(eb);
    if (pull_mode(eb)) {
        esbulk__handoff_pull_absorb(eb);
        return 0;
    }
    esbulk__handoff_results(eb, &q);
    if (q.head == NULL)
        return 0;

    /* RESULTS_BATCH at a time: their callbacks, then their records given
     * back while still in cache (an answer's thousands of records were
     * walked twice, and the second walk missed the cache at each) */
    d = q.head;
    while (d != NULL) {
        esbulk__doc_t *first = d, *last = d;
        size_t i;

        for (n = 0; d != NULL && n < RESULTS_BATCH; d = d->next) {
            /* the lines the callbacks, the marks and the free read, written
             * on the I/O thread */
            esbulk__doc_prefetch_ahead(d, 3, 0);
            batch[n++] = d;
            last = d;
        }
        last->next = NULL;
        if (eb->conf->results_cb != NULL)
            eb->conf->results_cb(eb, batch, n, eb->conf->opaque);
        else if (eb->conf->result_cb != NULL)
            for (i = 0; i < n; i++)
                eb->conf->result_cb(eb, batch[i], eb->conf->opaque);
        esbulk__handoff_served(eb, first, n);
        esbulk__doc_free_list(first);
        served += (int32_t)n;
    }
    return served;
}

/* esbulk_poll's serving; stops waiting once a destroy is requested. A pull
 * handle's poll serves nothing: it returns once results are ready to pull. */
static void poll_serve(esbulk_t *eb, int32_t timeout_ms)
{
    struct timespec until;

    if (esbulk__serve(eb) > 0 || timeout_ms == 0 || esbulk__handoff_pull_ready(eb) > 0)
        return;
    while (!esbulk__destroy_requested(eb)) {
        /* wake for the statistics callback too, if it falls due first */
        int64_t due = stats_due_in(eb), wait = timeout_ms < 0 ? due : (due < timeout_ms ? due : timeout_ms);
        int stats_first = wait == due && wait != INT32_MAX;

        if (wait == INT32_MAX) {
            esbulk__handoff_wait(eb, NULL);
        } else {
            esbulk__deadline_from_now(&until, wait);
            esbulk__handoff_wait(eb, &until);
        }
        if (esbulk__serve(eb) > 0 || !stats_first || esbulk__handoff_pull_ready(eb) > 0)
            return;
        if (timeout_ms > 0 && (timeout_ms -= (int32_t)wait) <= 0)
            return;
    }
}

int32_t esbulk_poll(esbulk_t *eb, int32_t timeout_ms)
{
    esbulk__caller_t self;

    if (eb == NULL)
        return ESBULK_ERR_INVALID_ARG;
    if (esbulk__caller_enter(eb, &self) != ESBULK_OK)
        return ESBULK_ERR_IN_CALLBACK;
    poll_serve(eb, timeout_ms);
    esbulk__caller_leave(eb, &self); /* may free eb (a callback destroyed it) */
    return self.served;
}

/* Serves results until every document m counts is served, or the deadline
 * passes (ESBULK_ERR_TIMED_OUT), or a destroy is requested
 * (ESBULK_ERR_CLOSED). */
esbulk_err_t esbulk__drain(esbulk_t *eb, const esbulk__mark_t *m, int32_t timeout_ms)
{
    int64_t end = timeout_ms >= 0 ? esbulk__now_ms() + timeout_ms : INT64_MAX;

    for (;;) {
        int done, stop;
        int64_t now, left;
        struct timespec until;

        esbulk__serve(eb);
        pthread_mutex_lock(&eb->lock);
        done = m->left == 0;
        stop = eb->destroy_deferred;
        pthread_mutex_unlock(&eb->lock);
        if (done)
            return ESBULK_OK;
        if (stop)
            return ESBULK_ERR_CLOSED;
        now = esbulk__now_ms();
        if (now >= end)
            return ESBULK_ERR_TIMED_OUT;
        left = end - now < 100 ? end - now : 100;
        esbulk__deadline_from_now(&until, left);
        esbulk__handoff_wait(eb, &until);
    }
}

/* Moves up to max results into the held batch and out[]: those a serving
 * call made pullable first (they are older), then the queue. Caller holds
 * eb->lock. */
static int32_t pull_take(esbulk_t *eb, const esbulk_result_t **out, size_t max)
{
    esbulk__doc_t *d;
    size_t n = 0;

    while (n < max && (d = esbulk__queue_pop(&eb->pull_ready)) != NULL) {
        esbulk__queue_push(&eb->pull_held, d);
        out[n++] = d;
    }
    while (n < max && (d = esbulk__queue_pop(&eb->results)) != NULL) {
        esbulk__live_done(eb, d); /* delivered: a flush on another thread need not wait */
        esbulk__queue_push(&eb->pull_held, d);
        out[n++] = d;
    }
    return (int32_t)n;
}

/* Registers a frame like the serving calls (so that a callback's call is
 * refused, and a deferred destroy waits for this call to return), but runs
 * no callback and serves nothing: it only takes. */
int32_t esbulk_poll_results(esbulk_t *eb, const esbulk_result_t **out, size_t max,
                            int32_t timeout_ms)
{
    esbulk__caller_t self;
    struct timespec until;
    int32_t n = 0;
    int rc = 0;

    if (eb == NULL || out == NULL || max == 0)
        return ESBULK_ERR_INVALID_ARG;
    if (max > INT32_MAX)
        max = INT32_MAX;
    if (esbulk__caller_enter(eb, &self) != ESBULK_OK)
        return ESBULK_ERR_IN_CALLBACK;
    if (timeout_ms > 0)
        esbulk__deadline_from_now(&until, timeout_ms);
    pthread_mutex_lock(&eb->lock);
    if (eb->pull_held.count > 0) {
        n = ESBULK_ERR_RESULTS_HELD;
    } else {
        for (;;) {
            if (eb->destroy_deferred) {
                n = ESBULK_ERR_CLOSED;
                break;
            }
            n = pull_take(eb, out, max);
            /* a closed handle's I/O thread is gone: nothing more can come */
            if (n > 0 || timeout_ms == 0 || eb->closed || rc == ETIMEDOUT)
                break;
            if (timeout_ms < 0)
                pthread_cond_wait(&eb->cond_results, &eb->lock);
            else
                rc = pthread_cond_timedwait(&eb->cond_results, &eb->lock, &until);
        }
    }
    pthread_mutex_unlock(&eb->lock);
    esbulk__caller_leave(eb, &self);
    return n;
}

/* Refused from a callback: the batch belongs to the program's poller, which
 * may be reading it around the serving call that runs the callback. */
esbulk_err_t esbulk_results_release(esbulk_t *eb)
{
    esbulk__queue_t q;
    esbulk__doc_t *d;

    if (eb == NULL)
        return ESBULK_ERR_INVALID_ARG;
    pthread_mutex_lock(&eb->lock);
    if (esbulk__caller_self(eb) != NULL) {
        pthread_mutex_unlock(&eb->lock);
        return ESBULK_ERR_IN_CALLBACK;
    }
    /* released documents stop counting against buffer.max.docs */
    esbulk__handoff_uncount(eb, &eb->pull_held, &q);
    pthread_mutex_unlock(&eb->lock);
    while ((d = esbulk__queue_pop(&q)) != NULL)
        esbulk__doc_free(d);
    return ESBULK_OK;
}
