/*
 * esbulk-kafka: what happens to a message. It becomes a document (or a
 * delete, or is skipped or refused: ekf_plan in message.c decides), is
 * added to libesbulk, waits while the engine's buffer is full (the
 * partitions paused), is sent again when its result cannot be known or the
 * cluster did not take it, and, when refused for itself, goes to the
 * dead-letter topic; its offset is done in its partition's tracker once
 * its result is known (for a dead letter: once the broker acknowledged it).
 */
#define _GNU_SOURCE 1
#include "job.h"
#include "../tools/common/logonce.h"
#include "esm.h" /* esm_result_class: what a result means (tools/mysql/rules.c) */

#include <errno.h>
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------------
 * Partitions and queues.
 */
part_t *find_part(job_t *job, const char *topic, int32_t partition, int create)
{
    part_t *p = job->last_part;

    if (p != NULL && p->partition == partition && strcmp(p->topic, topic) == 0)
        return p;
    for (p = job->parts; p != NULL; p = p->next)
        if (p->partition == partition && strcmp(p->topic, topic) == 0)
            return job->last_part = p;
    if (!create || (p = calloc(1, sizeof(*p))) == NULL)
        return NULL;
    if ((p->topic = strdup(topic)) == NULL) {
        free(p);
        return NULL;
    }
    p->partition = partition;
    p->committed = p->stored = -1;
    ekf_track_init(&p->track);
    p->next = job->parts;
    job->parts = p;
    return job->last_part = p;
}

static void q_push(docq_t *q, doc_t *d)
{
    d->next = NULL;
    if (q->tail)
        q->tail->next = d;
    else
        q->head = d;
    q->tail = d;
    q->n++;
}

static doc_t *q_pop(docq_t *q)
{
    doc_t *d = q->head;

    if (d) {
        q->head = d->next;
        if (!q->head)
            q->tail = NULL;
        q->n--;
    }
    return d;
}

/* Drops the documents of part (revoked) from q: they are read again by the
 * partition's next owner. Their offsets leave the tracker too, or the
 * revoke would wait for results that never come. */
void q_drop_part(docq_t *q, part_t *part)
{
    doc_t **pp = &q->head, *d;

    q->tail = NULL;
    while ((d = *pp) != NULL) {
        if (d->part == part) {
            *pp = d->next;
            q->n--;
            if (d->gen == part->gen)
                ekf_track_drop(&part->track, d->offset);
            free(d);
        } else {
            q->tail = d;
            pp = &d->next;
        }
    }
}

void q_free(docq_t *q)
{
    doc_t *d;

    while ((d = q_pop(q)) != NULL)
        free(d);
}

static int doc_current(const doc_t *d)
{
    return d->part->assigned && d->part->gen == d->gen;
}

/* A stop at a failure: what waits to be sent never will be in this run;
 * its offsets hold their partitions' watermarks. */
void q_abandon(docq_t *q)
{
    doc_t *d;

    while ((d = q_pop(q)) != NULL) {
        if (doc_current(d))
            ekf_track_set(&d->part->track, d->offset, EKF_FAILED);
        free(d);
    }
}

static void set_done(job_t *job, doc_t *d)
{
    if (doc_current(d) && ekf_track_set(&d->part->track, d->offset, EKF_DONE) != 0)
        say("internal: offset %" PRId64 " of %s[%" PRId32 "] not in flight", d->offset,
            d->part->topic, d->part->partition);
    (void)job;
}

/* ------------------------------------------------------------------------
 * Refusals: the dead-letter topic, or a stop.
 */
static void refuse(job_t *job, doc_t *d, const char *reason, int32_t status,
                   const char *error_type)
{
    if (!doc_current(d)) {
        free(d);
        return;
    }
    if (job->o.on_error == EKF_ON_ERROR_STOP || job->dl == NULL) {
        if (!job->fatal)
            say("%s[%" PRId32 "] offset %" PRId64 " refused (%" PRId32 " %s: %s): stopping "
                "(--on-error stop); nothing from it on is committed",
                d->part->topic, d->part->partition, d->offset, status,
                error_type ? error_type : "", reason ? reason : "");
        job->fatal = 1;
        ekf_track_set(&d->part->track, d->offset, EKF_FAILED);
        free(d);
        return;
    }
    ekf_header_t h[EKF_DL_HEADERS];
    ekf_dl_nums_t nums;
    rd_kafka_headers_t *hdrs = rd_kafka_headers_new(EKF_DL_HEADERS);
    if (hdrs == NULL) {
        say("out of memory");
        job->fatal = 1;
        free(d);
        return;
    }
    ekf_dl_headers(h, &nums, reason, status, error_type, d->part->topic, d->part->partition,
                   d->offset);
    for (int i = 0; i < EKF_DL_HEADERS; i++)
        rd_kafka_header_add(hdrs, h[i].name, -1, h[i].value, -1);
    ekf_track_set(&d->part->track, d->offset, EKF_DEAD_PENDING);
    /* (the macros cast their argument unparenthesized) */
    void *key = d->has_key ? (void *)d->key : NULL, *value = d->has_value ? (void *)d->value : NULL;
    size_t key_len = d->has_key ? d->key_len : 0, value_len = d->has_value ? d->value_len : 0;
    for (;;) {
        rd_kafka_resp_err_t e = rd_kafka_producev(
            job->dl, RD_KAFKA_V_TOPIC(job->o.dead_letter_topic),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_KEY(key, key_len),
            RD_KAFKA_V_VALUE(value, value_len),
            RD_KAFKA_V_HEADERS(hdrs), RD_KAFKA_V_OPAQUE(d), RD_KAFKA_V_END);
        if (e == RD_KAFKA_RESP_ERR_NO_ERROR)
            return; /* the headers are the producer's now; d comes back in the report */
        if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL || interrupted) {
            say("dead-letter topic %s: %s", job->o.dead_letter_topic, rd_kafka_err2str(e));
            rd_kafka_headers_destroy(hdrs);
            job->fatal = 1;
            free(d);
            return;
        }
        rd_kafka_poll(job->dl, 100);
    }
}

void on_dl_report(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    job_t *job = opaque;
    doc_t *d = m->_private;

    (void)rk;
    if (d == NULL)
        return;
    if (m->err) {
        /* not acknowledged: the offset stays where it is, and the member
         * stops (the next owner reads the message again) */
        say("dead letter of %s[%" PRId32 "] offset %" PRId64 " not written to %s: %s",
            d->part->topic, d->part->partition, d->offset, job->o.dead_letter_topic,
            rd_kafka_err2str(m->err));
        job->fatal = 1;
    } else {
        job->dead_letters++;
        set_done(job, d);
    }
    free(d);
}

/* ------------------------------------------------------------------------
 * Adding documents and their results.
 */

/* 0 accepted (or refused for good), 1 the buffer is full (keep it). */
static int add_doc(job_t *job, doc_t *d)
{
    char errstr[512];
    esbulk_err_t err;
    const esbulk_docopts_t *opts = NULL;

    if (d->has_opts) {
        esbulk_docopts_clear(job->docopts);
        err = ESBULK_OK;
        if (d->version >= 0)
            err = esbulk_docopts_set_version(job->docopts, d->version,
                                             (esbulk_version_type_t)d->version_type);
        if (err == ESBULK_OK && d->if_seq_no >= 0)
            err = esbulk_docopts_set_if_seq_no(job->docopts, d->if_seq_no, d->if_primary_term);
        if (err == ESBULK_OK && d->pipeline != NULL)
            err = esbulk_docopts_set_pipeline(job->docopts, d->pipeline);
        if (err == ESBULK_OK && d->require_alias)
            err = esbulk_docopts_set_require_alias(job->docopts, 1);
        if (err == ESBULK_OK && d->retry_on_conflict >= 0)
            err = esbulk_docopts_set_retry_on_conflict(job->docopts, d->retry_on_conflict);
        if (err != ESBULK_OK) {
            refuse(job, d, "the action line's options are out of range", 400,
                   "invalid_argument");
            return 0;
        }
        opts = job->docopts;
    }
    err = esbulk_add_opts(job->eb, d->op, d->index, d->id, d->id_len, d->routing,
                          d->routing_len, d->body, d->body_len, opts, d, errstr, sizeof(errstr));
    switch (err) {
    case ESBULK_OK: return 0;
    case ESBULK_ERR_QUEUE_FULL: return 1;
    case ESBULK_ERR_INVALID_JSON: refuse(job, d, errstr, 400, "invalid_json"); return 0;
    case ESBULK_ERR_DOC_TOO_LARGE: refuse(job, d, errstr, 413, "document_too_large"); return 0;
    case ESBULK_ERR_INVALID_UTF8: refuse(job, d, errstr, 400, "invalid_utf8"); return 0;
    case ESBULK_ERR_INVALID_ARG: refuse(job, d, errstr, 400, "invalid_argument"); return 0;
    default:
        say("cannot add a document: %s", errstr);
        job->fatal = 1;
        free(d);
        return 0;
    }
}

void on_result(esbulk_t *eb, const esbulk_result_t *result, void *opaque)
{
    job_t *job = opaque;
    doc_t *d = esbulk_result_opaque(result);
    esbulk_outcome_t outcome = esbulk_result_outcome(result);
    esbulk_err_t err = esbulk_result_err(result);
    int32_t status = esbulk_result_status(result);
    const char *type = esbulk_result_error_type(result);

    (void)eb;
    if (d == NULL)
        return;
    if (job->closing || !doc_current(d)) {
        free(d); /* its partition was revoked: the next owner reads it again */
        return;
    }
    switch (esm_result_class(outcome, err, status, type)) {
    case ESM_RESULT_DONE:
    case ESM_RESULT_SUPERSEDED: /* a newer version is indexed (a replay) */
        job->docs++;
        job->backoff_ns = 0;
        set_done(job, d);
        free(d);
        return;
    case ESM_RESULT_REFUSED:
        refuse(job, d, esbulk_result_error_reason(result), status, type);
        return;
    case ESM_RESULT_UNAVAILABLE:
        break;
    }
    /* the credentials refused, for the request or for this index (a
     * security plugin's rights on one item; a write block is a 403 too, and
     * passes: it is lifted, and the document sent again) */
    if (err == ESBULK_ERR_AUTH ||
        (err == ESBULK_ERR_ITEM && (status == 401 || status == 403) &&
         (type == NULL || strcmp(type, "cluster_block_exception") != 0))) {
        if (!job->fatal)
            say("the cluster refuses the credentials (%" PRId32 "): %s", status,
                esbulk_result_error_reason(result));
        job->fatal = 1;
        free(d);
        return;
    }
    /* possibly indexed, or the cluster did not take it: again, after a
     * backoff that grows while nothing is indexed (1 s to 30 s), once per
     * backoff (the documents of one failed request wait alike) */
    int64_t now = now_ns();
    if (job->backoff_ns == 0 || now - job->backoff_at_ns >= job->backoff_ns) {
        job->backoff_ns = job->backoff_ns ? job->backoff_ns * 2 : 1000000000LL;
        if (job->backoff_ns > 30000000000LL)
            job->backoff_ns = 30000000000LL;
        job->backoff_at_ns = now;
    }
    d->not_before_ns = job->backoff_at_ns + job->backoff_ns;
    job->resent++;
    flockfile(stderr);
    char line[600];
    snprintf(line, sizeof(line), "sent again after %d s: %s[%d] offset %lld: %s%s%s",
             (int)(job->backoff_ns / 1000000000LL), d->part->topic, (int)d->part->partition,
             (long long)d->offset,
             outcome == ESBULK_OUTCOME_POSSIBLY ? "possibly indexed: " : "",
             type ? type : "", esbulk_result_error_reason(result)
                                   ? esbulk_result_error_reason(result) : "");
    if (logonce_new(&job->lib_logs, line, now_ns(), 60 * 1000000000LL))
        fprintf(stderr, "esbulk-kafka: %s\n", line);
    funlockfile(stderr);
    q_push(&job->resend, d);
}

static void set_pause(job_t *job, int pause)
{
    rd_kafka_topic_partition_list_t *l = NULL;

    if (rd_kafka_assignment(job->rk, &l) == RD_KAFKA_RESP_ERR_NO_ERROR && l != NULL) {
        if (l->cnt > 0)
            (pause ? rd_kafka_pause_partitions : rd_kafka_resume_partitions)(job->rk, l);
        rd_kafka_topic_partition_list_destroy(l);
    }
    job->paused = pause;
    if (pause)
        job->paused_pending = esbulk_pending(job->eb);
}

/* Sends what waits (documents to send again first, once their backoff is
 * over, then those read while the buffer was full). While something waits,
 * the main loop stops reading; when it has waited PAUSE_AFTER_NS (a slow
 * cluster, not a full batch), every partition is paused, so that the loop
 * can go on serving rebalances within max.poll.interval.ms without reading
 * more; they are resumed once the buffer has drained to half of what it
 * held at the pause (each resume costs a fetch from the broker). */
#define PAUSE_AFTER_NS 1000000000LL
int pump(job_t *job)
{
    int64_t now = now_ns();

    while (job->resend.head != NULL && job->resend.head->not_before_ns <= now && !job->fatal) {
        if (add_doc(job, job->resend.head) != 0)
            break;
        q_pop(&job->resend);
    }
    while (job->resend.head == NULL && job->held.head != NULL && !job->fatal) {
        if (add_doc(job, job->held.head) != 0)
            break;
        q_pop(&job->held);
    }
    int waiting = job->resend.head != NULL || job->held.head != NULL;
    if (!waiting)
        job->waiting_since_ns = 0;
    else if (job->waiting_since_ns == 0)
        job->waiting_since_ns = now;
    if (waiting && !job->paused && now - job->waiting_since_ns >= PAUSE_AFTER_NS)
        set_pause(job, 1);
    else if (!waiting && job->paused && esbulk_pending(job->eb) <= job->paused_pending / 2)
        set_pause(job, 0);
    return waiting;
}

/* ------------------------------------------------------------------------
 * A message to a document.
 */
void handle_message(job_t *job, const rd_kafka_message_t *m)
{
    const char *topic = rd_kafka_topic_name(m->rkt);
    part_t *part = find_part(job, topic, m->partition, 0);
    char index[512];
    ekf_plan_t pl;

    if (part == NULL || !part->assigned)
        return; /* not ours (any more) */
    part->eof = 0;
    int r = ekf_track_add(&part->track, m->offset);
    if (r == -2)
        return; /* read before: it is tracked already */
    if (r == -1 || ekf_plan(&pl, &job->o, topic, m->partition, m->offset, m->key, m->key_len,
                            m->payload, m->len) != 0) {
        if (r == 0)
            ekf_plan_free(&pl);
        say("out of memory");
        job->fatal = 1;
        return;
    }
    if (pl.kind == EKF_PLAN_SKIP) {
        job->skipped++;
        ekf_track_set(&part->track, m->offset, EKF_DONE);
        ekf_plan_free(&pl);
        return;
    }
    index[0] = '\0';
    if (pl.kind == EKF_PLAN_ADD) {
        if (pl.index != NULL) {
            snprintf(index, sizeof(index), "%s", pl.index);
        } else {
            rd_kafka_timestamp_type_t tst;
            int64_t ts = rd_kafka_message_timestamp(m, &tst);
            if (ts < 0) {
                struct timespec now;
                clock_gettime(CLOCK_REALTIME, &now);
                ts = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
            }
            if (ekf_template_expand(job->o.index, topic, m->partition, ts, index,
                                    sizeof(index)))
                ekf_plan_refuse_index(&pl);
        }
    }
    size_t ilen = strlen(index), plen = pl.pipeline ? strlen(pl.pipeline) : 0;
    size_t size = sizeof(doc_t) + ilen + 1 + pl.id_len + 1 + pl.routing_len + 1 + plen + 1 +
                  m->key_len + m->len + 2;
    doc_t *d = malloc(size);
    char *p;
    if (d == NULL) {
        ekf_plan_free(&pl);
        say("out of memory");
        job->fatal = 1;
        return;
    }
    memset(d, 0, sizeof(*d));
    d->part = part;
    d->gen = part->gen;
    d->offset = m->offset;
    d->op = pl.op;
    p = d->data;
    /* the original value and key first: the body points into the value */
    d->has_value = m->payload != NULL;
    d->value = p;
    d->value_len = m->len;
    if (m->len)
        memcpy(p, m->payload, m->len);
    p += m->len;
    *p++ = '\0';
    d->has_key = m->key != NULL;
    d->key = p;
    d->key_len = m->key_len;
    if (m->key_len)
        memcpy(p, m->key, m->key_len);
    p += m->key_len;
    *p++ = '\0';
    if (pl.body != NULL) {
        d->body = d->value + (pl.body - (const char *)m->payload);
        d->body_len = pl.body_len;
    }
    d->index = memcpy(p, index, ilen + 1);
    p += ilen + 1;
    if (pl.id != NULL) {
        d->id = memcpy(p, pl.id, pl.id_len);
        p[pl.id_len] = '\0';
        d->id_len = pl.id_len;
    }
    p += pl.id_len + 1;
    if (pl.routing != NULL) {
        d->routing = memcpy(p, pl.routing, pl.routing_len);
        p[pl.routing_len] = '\0';
        d->routing_len = pl.routing_len;
    }
    p += pl.routing_len + 1;
    if (plen)
        d->pipeline = memcpy(p, pl.pipeline, plen + 1);
    d->version = pl.version;
    d->version_type = pl.version_type;
    d->if_seq_no = pl.if_seq_no;
    d->if_primary_term = pl.if_primary_term;
    d->require_alias = pl.require_alias;
    d->retry_on_conflict = pl.retry_on_conflict;
    d->has_opts = pl.has_opts;
    if (pl.kind == EKF_PLAN_REFUSE) {
        refuse(job, d, pl.reason, 400, pl.error_type);
    } else if (job->held.head != NULL || job->resend.head != NULL || add_doc(job, d) != 0) {
        q_push(&job->held, d);
        if (job->waiting_since_ns == 0)
            job->waiting_since_ns = now_ns();
    }
    ekf_plan_free(&pl);
}
