/* Answers to outcomes: an HTTP answer's items (indexed, failed, retried),
 * a refusal of the whole request (413 and 400 splits, 429), or a transport
 * failure (not sent, broken, timed out), each document's outcome set. */
#include "core_int.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

void esbulk__core_deliver(esbulk__core_t *c, esbulk__doc_t *d, esbulk_outcome_t outcome,
                          esbulk_err_t err, int32_t status, const char *type, const char *reason,
                          const char *cause_type, const char *cause_reason)
{
    /* a success with nothing more to say copies and frees nothing there */
    esbulk__doc_set_outcome(d, outcome, err, status, type, reason, cause_type, cause_reason);
    switch (outcome) {
    case ESBULK_OUTCOME_INDEXED: c->counts.indexed++; break;
    case ESBULK_OUTCOME_FAILED: c->counts.failed++; break;
    case ESBULK_OUTCOME_POSSIBLY: c->counts.possibly++; break;
    }
    if (err == ESBULK_ERR_CLOSED)
        c->counts.closed++;
    c->counts.held_bytes += d->body_bytes;
    /* the lines are not needed any more (but for a dead-letter output):
     * given back now, while the record is in cache, a run of them at a
     * time (ended before the outcomes are handed over) */
    if (!c->cf.keep_body || outcome == ESBULK_OUTCOME_INDEXED)
        esbulk__doc_drop_lines_run(d, &c->drops);
    esbulk__queue_push_ahead(&c->done, &c->done_ahead, d);
    c->held--;
}

/* A successful item's result when the answer did not give it
 * (esbulk__io_bulk_path() asks for it only for updates): what the server says for that operation and
 * status. An update's 200 is "updated" or "noop", so NULL there. */
static const char *result_from_status(esbulk_op_t op, int32_t status)
{
    switch (op) {
    case ESBULK_OP_INDEX:
    case ESBULK_OP_CREATE:
        return status == 201 ? "created" : status == 200 ? "updated" : NULL;
    case ESBULK_OP_DELETE:
        return status == 200 ? "deleted" : status == 404 ? "not_found" : NULL;
    case ESBULK_OP_UPDATE:
        return status == 201 ? "created" : NULL;
    }
    return NULL;
}

/* The server's index, result and id of an item, copied into d where they
 * say more than d does: the index only when it differs from the one added
 * (an alias, a data stream), the result as a static string when it is one of
 * the usual ones, the id only when the server chose it. An allocation that
 * fails leaves the field NULL: the outcome does not depend on it. */
static void doc_take_item(esbulk__doc_t *d, const esbulk__item_t *it)
{
    static const char *const results[] = {"created", "updated", "deleted", "noop", "not_found"};
    esbulk__doc_more_t *m = d->more;
    size_t k;
    /* the parser hands back d->index itself when the server answered it */
    int other_index = it->index != NULL && it->index != d->index &&
                      strcmp(it->index, d->index) != 0;

    d->status = it->status;
    d->seq_no = it->seq_no;
    d->primary_term = it->primary_term;
    d->version = it->version;
    d->r_result = it->result == NULL && it->klass == ESBULK__ITEM_OK
                      ? result_from_status((esbulk_op_t)d->op, it->status)
                      : NULL;
    if (it->result != NULL && it->result_static) {
        d->r_result = it->result;
    } else if (it->result != NULL) {
        for (k = 0; k < ESBULK__ARRAY_LEN(results) && d->r_result == NULL; k++)
            if (strcmp(it->result, results[k]) == 0)
                d->r_result = results[k];
    }
    /* the rest is in d->more, made only when there is something to keep */
    if (m == NULL && !other_index && (d->id != NULL || it->id == NULL) &&
        (it->result == NULL || d->r_result != NULL))
        return;
    if (m == NULL && (m = esbulk__doc_more(d)) == NULL)
        return;
    free(m->index);
    m->index = other_index ? esbulk__strdup(it->index) : NULL;
    free(m->result_own);
    m->result_own = NULL;
    if (it->result != NULL && d->r_result == NULL)
        d->r_result = m->result_own = esbulk__strdup(it->result);
    if (d->id == NULL) {
        free(m->id);
        m->id = it->id != NULL ? esbulk__strdup(it->id) : NULL;
    }
}

static void answer_items(esbulk__core_t *c, esbulk__send_t *s, const esbulk__resp_t *resp,
                         int64_t now)
{
    dest_t *dest = s->dest;
    size_t i;

    /* after a 413, grow the batch again step by step */
    if (dest->batch_cap > 0 && s->ndocs >= dest->batch_cap && ++dest->cap_ok >= 16) {
        dest->cap_ok = 0;
        dest->batch_cap = dest->batch_cap * 2 >= c->cf.flush.flush_docs ? 0 : dest->batch_cap * 2;
    }
    for (i = 0; i < s->ndocs; i++) {
        const esbulk__item_t *it = &resp->items[i];
        esbulk__doc_t *d = s->docs[i];

        /* a few documents ahead: the record's lines this loop writes (queue
         * link, outcome, result) */
        if (i + 8 < s->ndocs) {
            const char *ahead = (const char *)s->docs[i + 8];

            ESBULK__PREFETCH_W(ahead);
            ESBULK__PREFETCH_W(ahead + ESBULK__CACHE_LINE);
            ESBULK__PREFETCH_W(ahead + 2 * ESBULK__CACHE_LINE);
        }

        doc_take_item(d, it);
        if (it->klass == ESBULK__ITEM_OK) {
            esbulk__core_deliver(c, d, ESBULK_OUTCOME_INDEXED, ESBULK_OK, it->status, NULL, NULL,
                                 NULL, NULL);
        } else if (it->klass == ESBULK__ITEM_RETRY) {
            if (it->status == 429)
                c->counts.item_429++;
            esbulk__core_retry_or_give_up(c, dest, d, 0, ESBULK_ERR_ITEM, it->status,
                                          it->error_type, it->error_reason, it->cause_type,
                                          it->cause_reason, now);
        } else if (it->status == 409 && d->ambiguous &&
                   (d->op == ESBULK_OP_CREATE || d->conditional)) {
            esbulk__core_deliver(c, d, ESBULK_OUTCOME_POSSIBLY, ESBULK_ERR_ITEM, it->status,
                                 it->error_type,
                                 d->op == ESBULK_OP_CREATE
                                 ? "version conflict on a retry after an attempt that broke: most "
                                 "likely created by that attempt"
                                 : "version conflict on a retry after an attempt that broke: most "
                                 "likely applied by that attempt",
                                 NULL, NULL);
        } else {
            char why[64];
            snprintf(why, sizeof(why), "the server answered status %d for this document",
                     (int)it->status);
            esbulk__core_deliver(c, d, ESBULK_OUTCOME_FAILED, ESBULK_ERR_ITEM, it->status,
                                 it->error_type, it->error_reason ? it->error_reason : why,
                                 it->cause_type, it->cause_reason);
        }
    }
}

static void answer_http(esbulk__core_t *c, esbulk__send_t *s, const esbulk__answer_t *a,
                        int64_t now)
{
    esbulk__resp_t resp;
    const esbulk__resp_want_t *want = NULL;
    size_t i;

    /* what was sent, for the parser to compare the answer with in place
     * (without it, it copies what it reads: the same outcome) */
    if (a->status >= 200 && a->status <= 299 && s->ndocs > 0)
        want = s->want;
    if (esbulk__response_parse_want(a->status, a->body ? a->body : "", a->body_len, s->ndocs,
                                    c->cf.retry_cluster_block, want, &c->scratch,
                                    &resp) != ESBULK_OK) {
        for (i = 0; i < s->ndocs; i++)
            esbulk__core_retry_or_give_up(c, s->dest, s->docs[i], 1, ESBULK_ERR_NOMEM,
                                          (int32_t)a->status, NULL,
                                          "out of memory reading the response", NULL, NULL, now);
        return;
    }
    if (a->status == 429)
        c->counts.http_429++;
    switch (resp.klass) {
    case ESBULK__RESP_OK:
        answer_items(c, s, &resp, now);
        break;
    case ESBULK__RESP_RETRY:
    case ESBULK__RESP_RETRY_AMBIGUOUS:
        if (a->status >= 500 && a->status != 503)
            s->target->errors++;
        for (i = 0; i < s->ndocs; i++)
            esbulk__core_retry_or_give_up(c, s->dest, s->docs[i],
                                          resp.klass == ESBULK__RESP_RETRY_AMBIGUOUS,
                                          resp.err != ESBULK_OK ? resp.err : ESBULK_ERR_HTTP,
                                          (int32_t)a->status, resp.error_type, resp.error_reason,
                                          resp.cause_type, resp.cause_reason, now);
        break;
    case ESBULK__RESP_SPLIT:
        c->counts.split_413++;
        if (s->ndocs == 1) {
            esbulk__core_deliver(c, s->docs[0], ESBULK_OUTCOME_FAILED, ESBULK_ERR_HTTP, 413,
                                 resp.error_type,
                                 "HTTP 413: the document alone is larger than the server accepts "
                                 "(http.max_content_length)",
                                 NULL, NULL);
        } else {
            s->dest->batch_cap = s->ndocs / 2;
            s->dest->cap_ok = 0;
            for (i = s->ndocs; i > 0; i--) {
                s->docs[i - 1]->attempts--; /* a split is not a failed attempt */
                esbulk__core_dest_push(c, s->dest, s->docs[i - 1], 1, now);
            }
        }
        break;
    case ESBULK__RESP_FAIL:
        if (a->status == 400 && s->ndocs > 1 && resp.error_type != NULL) {
            /* The server refused the whole request while reading it, for one
             * document's sake (an _id over 512 bytes, an update with neither
             * doc nor script: the request itself is the library's): the
             * halves go again, and again, until that document is alone, and
             * only it fails. The others' batches stay full size. Only for
             * the server's own error (a typed JSON one): a proxy's 400 would
             * cost twice as many requests as documents, to fail them all. */
            c->counts.split_400++;
            for (i = s->ndocs; i > 0; i--) {
                s->docs[i - 1]->split = (uint32_t)(s->ndocs / 2);
                s->docs[i - 1]->attempts--; /* not a failed attempt */
                esbulk__core_dest_push(c, s->dest, s->docs[i - 1], 1, now);
            }
            break;
        }
        for (i = 0; i < s->ndocs; i++)
            esbulk__core_deliver(c, s->docs[i], ESBULK_OUTCOME_FAILED, resp.err, (int32_t)a->status,
                                 resp.error_type, resp.error_reason, resp.cause_type,
                                 resp.cause_reason);
        break;
    }
    esbulk__response_free(&resp);
}

static void answer_transport(esbulk__core_t *c, esbulk__send_t *s, const esbulk__answer_t *a,
                             int64_t now)
{
    char why[1024];
    const char *msg = a->message && *a->message ? a->message : "transport error";
    esbulk_err_t err = ESBULK_ERR_TRANSPORT;
    size_t i;

    s->target->errors++;
    switch (a->kind) {
    case ESBULK__ANS_TOO_LARGE:
        snprintf(why, sizeof(why), "%s: the answer is larger than response.max.bytes", s->url);
        break;
    case ESBULK__ANS_NOMEM:
        snprintf(why, sizeof(why), "%s: out of memory reading the answer", s->url);
        err = ESBULK_ERR_NOMEM;
        break;
    default:
        snprintf(why, sizeof(why), "%s: %s", s->url, msg);
        break;
    }
    /* A node that refused, dropped or could not be reached is marked down;
     * one that is only slow to answer (timeout after sending) is not, and
     * that is said once, until it answers again: its documents go again
     * silently otherwise, for as long as their retries last. */
    if (a->kind == ESBULK__ANS_TIMEOUT) {
        esbulk__log(&c->log, s->target->slow_said ? ESBULK_LOG_DEBUG : ESBULK_LOG_WARNING, "io",
                    "%s: no answer within request.timeout.ms (%lld ms): %zu document%s sent "
                    "again (maybe applied)", why, (long long)c->cf.request_timeout_ms, s->ndocs,
                    s->ndocs == 1 ? "" : "s");
        s->target->slow_said = 1;
    }
    if (a->kind == ESBULK__ANS_NOT_SENT || a->kind == ESBULK__ANS_BROKEN ||
        a->kind == ESBULK__ANS_TLS_VERIFY)
        esbulk__core_mark_down(c, s->target, why, now);
    if (a->kind == ESBULK__ANS_TLS_VERIFY) {
        /* a certificate that does not verify will not verify on retry */
        for (i = 0; i < s->ndocs; i++)
            esbulk__core_deliver(c, s->docs[i], ESBULK_OUTCOME_FAILED, ESBULK_ERR_TRANSPORT, 0,
                                 NULL, why, NULL, NULL);
        return;
    }
    for (i = 0; i < s->ndocs; i++)
        esbulk__core_retry_or_give_up(c, s->dest, s->docs[i], a->kind != ESBULK__ANS_NOT_SENT, err,
                                      0, NULL, why, NULL, NULL, now);
}

void esbulk__core_answer(esbulk__core_t *c, esbulk__send_t *s, const esbulk__answer_t *a,
                         int64_t now)
{
    esbulk__core_send_unlink(c, s);
    esbulk__core_target_latency(s->target, now - s->start_ms);
    s->dest->used_ms = now;
    if (a->kind == ESBULK__ANS_HTTP && (s->target->down_said || s->target->slow_said)) {
        s->target->down_said = s->target->slow_said = 0;
        esbulk__log(&c->log, ESBULK_LOG_NOTICE, "io", "node %s answers again",
                    s->target->name ? s->target->name : s->target->url);
    }
    if (a->kind == ESBULK__ANS_HTTP)
        answer_http(c, s, a, now);
    else
        answer_transport(c, s, a, now);
    esbulk__core_send_free(c, s);
}
