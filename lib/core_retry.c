/* Documents after a failed attempt: put back in line at their backoff
 * time (per_id: ahead of newer ones), or given up; and the expiry of those
 * past delivery.timeout.ms. */
#include "core_int.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

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

void esbulk__core_retry_or_give_up(esbulk__core_t *c, dest_t *dest, esbulk__doc_t *doc,
                                   int ambiguous, esbulk_err_t err, int32_t status,
                                   const char *type, const char *reason, const char *cause_type,
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
        esbulk__core_deliver(c, doc, ESBULK_OUTCOME_POSSIBLY, err, status, type, why, cause_type,
                             cause_reason);
        return;
    }
    doc->ambiguous = doc->ambiguous || ambiguous;
    dec = esbulk__retry_decide(doc->attempts, c->cf.retry_max, now, doc->deadline_ms,
                               c->cf.backoff_ms, c->cf.backoff_max_ms, esbulk__core_rnd32(c), &at);
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
            esbulk__core_dest_activate(c, dest);
            return;
        }
        if (retry_push(c, doc) == ESBULK_OK)
            return;
        c->counts.retried--;
        esbulk__core_deliver(c, doc,
                             doc->ambiguous ? ESBULK_OUTCOME_POSSIBLY : ESBULK_OUTCOME_FAILED,
                             ESBULK_ERR_NOMEM, status, type, "out of memory queuing its retry",
                             NULL, NULL);
        return;
    }
    snprintf(why, sizeof(why), "%s after %d attempt%s: %s",
             dec == ESBULK__RETRY_GIVE_UP_MAX ? "retries exhausted" : "delivery timed out",
             (int)doc->attempts, doc->attempts == 1 ? "" : "s", reason ? reason : "failed");
    esbulk__core_deliver(c, doc, doc->ambiguous ? ESBULK_OUTCOME_POSSIBLY : ESBULK_OUTCOME_FAILED,
                         dec == ESBULK__RETRY_GIVE_UP_MAX ? ESBULK_ERR_RETRIES_EXHAUSTED
                         : ESBULK_ERR_DELIVERY_TIMEOUT,
                         status, type, why, cause_type, cause_reason);
}

/* Moves retries that are due back into their destinations, first in line
 * and in their original order. */
void esbulk__core_retries_due(esbulk__core_t *c, int64_t now)
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
            esbulk__core_route_push(c, d, 1, now);
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
void esbulk__core_deliver_unsent(esbulk__core_t *c, esbulk__doc_t *d, esbulk_err_t err,
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
    esbulk__core_deliver(c, d, d->ambiguous ? ESBULK_OUTCOME_POSSIBLY : ESBULK_OUTCOME_FAILED, err,
                         d->status, t, what, cr != NULL ? ct : NULL, cr);
    free(ct);
    free(cr);
}

static void expire_one(esbulk__core_t *c, esbulk__doc_t *d)
{
    c->counts.expired++;
    esbulk__core_deliver_unsent(c, d, ESBULK_ERR_DELIVERY_TIMEOUT,
                                "not delivered within delivery.timeout.ms (no node accepted it "
                                "in time)");
}

/* A queue in add order (retries, older, go first) has rising deadlines:
 * the scan stops at the first one not due, and a deep backlog costs
 * nothing. */
void esbulk__core_expire_ordered(esbulk__core_t *c, esbulk__queue_t *q, esbulk__ahead_t *ahead,
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

void esbulk__core_expire_all(esbulk__core_t *c, int64_t now)
{
    dest_t *dest;
    esbulk__doc_t *d;
    size_t i;

    for (dest = c->active; dest != NULL; dest = dest->anext) {
        esbulk__core_expire_ordered(c, &dest->q, &dest->ahead, now);
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
