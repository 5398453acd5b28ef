/*
 * esbulk-kafka - a Kafka-to-index sink: one member of a consumer group,
 * each message one document, through libesbulk. See esbulk-kafka(1).
 *
 * One thread: it polls the consumer (whose rebalance and commit callbacks
 * run inside rd_kafka_consumer_poll on it), adds documents, serves their
 * results (esbulk_poll runs the result callback on it) and the dead-letter
 * producer's delivery reports (rd_kafka_poll): the partitions' trackers
 * need no locking.
 *
 * Offsets: every message's offset enters its partition's tracker when read
 * and is done when its result is known (indexed, deleted, superseded,
 * skipped, or its dead letter acknowledged by the broker). Only the
 * tracker's watermark (the first offset without its result) is committed,
 * by this program (librdkafka's auto commit and offset store are off).
 * A document whose result cannot be known (possibly indexed) or whose
 * cluster was unavailable is sent again: its _id makes that safe.
 */
#define _GNU_SOURCE 1
#include "ekf.h"
#include "../tools/common/envcreds.h"
#include "../tools/common/logonce.h"
#include "esm.h" /* esm_result_class: what a result means (tools/mysql/rules.c) */

#include <errno.h>
#include <getopt.h>
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

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2

static volatile sig_atomic_t interrupted;

/* One partition this member has been given (kept, and reused, after it is
 * revoked: documents in flight point to it; their gen tells them apart). */
typedef struct part_s {
    struct part_s *next;
    char *topic;
    int32_t partition;
    uint32_t gen;
    int assigned, eof;
    ekf_track_t track;
    int64_t committed; /* acknowledged by the broker; -1 unknown or none */
    int64_t stored;    /* the watermark last stored for librdkafka's committer; -1 none */
} part_t;

/* A message on its way: the document and what its dead letter needs. */
typedef struct doc_s {
    struct doc_s *next;
    part_t *part;
    uint32_t gen;
    int64_t offset;
    int64_t not_before_ns; /* a document sent again waits for its backoff */
    esbulk_op_t op;
    int64_t version;
    int version_type;
    int64_t if_seq_no, if_primary_term;
    int require_alias, has_opts;
    int32_t retry_on_conflict;
    const char *index, *id, *routing, *pipeline, *body, *key, *value;
    size_t id_len, routing_len, body_len, key_len, value_len;
    int has_key, has_value;
    char data[]; /* the strings above */
} doc_t;

typedef struct {
    doc_t *head, *tail;
    size_t n;
} docq_t;

typedef struct {
    ekf_opts_t o;
    rd_kafka_t *rk, *dl; /* the consumer, the dead-letter producer */
    esbulk_t *eb;
    esbulk_docopts_t *docopts;
    part_t *parts, *last_part;
    docq_t held;   /* read while the engine's buffer was full */
    docq_t resend; /* to send again (possibly indexed, cluster unavailable) */
    int paused, cooperative, fatal, closing, leaving;
    int64_t paused_pending, waiting_since_ns;
    int64_t backoff_ns, backoff_at_ns, brokers_down_ns, t0_ns;
    uint64_t docs, docs_last, dead_letters, skipped, resent;
    int64_t stats_last_ns, commit_last_ns;
    logonce_t lib_logs;
} job_t;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void say(const char *fmt, ...)
{
    va_list ap;

    flockfile(stderr);
    fputs("esbulk-kafka: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    funlockfile(stderr);
}

/* The library's warnings, each at most once a minute (logonce.h); called on
 * its threads: stderr's lock guards the line and lib_logs. */
static void on_lib_log(int32_t level, const char *facility, const char *message, void *opaque)
{
    job_t *job = opaque;

    (void)facility;
    if (level > ESBULK_LOG_WARNING)
        return;
    flockfile(stderr);
    if (logonce_new(&job->lib_logs, message, now_ns(), 60 * 1000000000LL))
        fprintf(stderr, "esbulk-kafka: %s: %s\n", level == ESBULK_LOG_WARNING ? "warning" : "error",
                message);
    funlockfile(stderr);
}

static void on_kafka_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    /* the consumer's properties given to the producer too (and back) are
     * said to be ignored: no news */
    if (level > 4 || strcmp(fac, "CONFWARN") == 0)
        return;
    say("kafka %s: %s: %s", rd_kafka_name(rk), fac, buf);
}

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* ------------------------------------------------------------------------
 * Partitions and queues.
 */
static part_t *find_part(job_t *job, const char *topic, int32_t partition, int create)
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
static void q_drop_part(docq_t *q, part_t *part)
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

static void q_free(docq_t *q)
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
static void q_abandon(docq_t *q)
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

static void on_dl_report(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
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

static void on_result(esbulk_t *eb, const esbulk_result_t *result, void *opaque)
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
static int pump(job_t *job)
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
static void handle_message(job_t *job, const rd_kafka_message_t *m)
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

/* ------------------------------------------------------------------------
 * Commits, rebalances.
 */

/* Whether p is one of parts (NULL: all). */
static int part_in(const part_t *p, const rd_kafka_topic_partition_list_t *parts)
{
    return p->assigned && (parts == NULL || rd_kafka_topic_partition_list_find(
                                                parts, p->topic, p->partition) != NULL);
}

/* Stores the watermark of each assigned partition of parts (NULL: all of
 * them) that moved since it was last stored: librdkafka's committer
 * commits what is stored, every --commit-interval, and only while no
 * rebalance is under way (a commit during one that meets a new generation
 * makes librdkafka 2.0 drop the whole assignment as lost: librdkafka issue
 * 4059, fixed in 2.8). */
static void store(job_t *job, const rd_kafka_topic_partition_list_t *parts)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(8);

    if (l == NULL)
        return;
    for (part_t *p = job->parts; p != NULL; p = p->next) {
        int64_t w = ekf_track_watermark(&p->track);
        if (part_in(p, parts) && w >= 0 && w != p->stored)
            rd_kafka_topic_partition_list_add(l, p->topic, p->partition)->offset = w;
    }
    if (l->cnt > 0) {
        rd_kafka_offsets_store(job->rk, l);
        for (int i = 0; i < l->cnt; i++) {
            part_t *p = find_part(job, l->elems[i].topic, l->elems[i].partition, 0);
            if (p != NULL && !l->elems[i].err)
                p->stored = l->elems[i].offset;
        }
    }
    rd_kafka_topic_partition_list_destroy(l);
}

/* Forgets what is stored for parts: nothing of them is committed when they
 * are given up (a lost assignment; or one just committed, which
 * librdkafka would commit again as they are removed). */
static void unstore(job_t *job, const rd_kafka_topic_partition_list_t *parts)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_copy(parts);

    if (l == NULL)
        return;
    for (int i = 0; i < l->cnt; i++)
        l->elems[i].offset = RD_KAFKA_OFFSET_INVALID;
    rd_kafka_offsets_store(job->rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    for (part_t *p = job->parts; p != NULL; p = p->next)
        if (part_in(p, parts))
            p->stored = -1;
}

/* Stores, then commits synchronously, the watermarks of parts (NULL: all)
 * not committed yet; says failures. 0, or -1 when a commit failed. */
static int commit_sync(job_t *job, const rd_kafka_topic_partition_list_t *parts)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(8);
    int rc = 0;

    if (l == NULL)
        return -1;
    store(job, parts);
    for (part_t *p = job->parts; p != NULL; p = p->next)
        if (part_in(p, parts) && p->stored >= 0 && p->stored != p->committed)
            rd_kafka_topic_partition_list_add(l, p->topic, p->partition)->offset = p->stored;
    if (l->cnt > 0) {
        rd_kafka_resp_err_t e = rd_kafka_commit(job->rk, l, 0);
        if (e) {
            say("commit: %s", rd_kafka_err2str(e));
            rc = -1;
        }
        for (int i = 0; i < l->cnt; i++) {
            part_t *p = find_part(job, l->elems[i].topic, l->elems[i].partition, 0);
            if (p != NULL && !e && !l->elems[i].err) {
                p->committed = l->elems[i].offset;
            } else if (l->elems[i].err) {
                say("commit of %s[%" PRId32 "]: %s", l->elems[i].topic, l->elems[i].partition,
                    rd_kafka_err2str(l->elems[i].err));
                rc = -1;
            }
        }
    }
    rd_kafka_topic_partition_list_destroy(l);
    return rc;
}

static void on_commit(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                      rd_kafka_topic_partition_list_t *offsets, void *opaque)
{
    job_t *job = opaque;

    (void)rk;
    if (err == RD_KAFKA_RESP_ERR__NO_OFFSET || offsets == NULL)
        return;
    for (int i = 0; i < offsets->cnt; i++) {
        part_t *p = find_part(job, offsets->elems[i].topic, offsets->elems[i].partition, 0);
        if (p != NULL && !err && !offsets->elems[i].err && offsets->elems[i].offset > p->committed)
            p->committed = offsets->elems[i].offset;
    }
    if (err)
        say("commit: %s", rd_kafka_err2str(err));
}

static size_t inflight_of(job_t *job, const rd_kafka_topic_partition_list_t *parts)
{
    size_t n = 0;

    for (part_t *p = job->parts; p != NULL; p = p->next)
        if (p->assigned && (parts == NULL || rd_kafka_topic_partition_list_find(
                                                 parts, p->topic, p->partition) != NULL))
            n += ekf_track_inflight(&p->track);
    return n;
}

/* Serves results and delivery reports until the partitions (NULL: all)
 * have every result, or timeout_ms passed. Returns what is left. */
static size_t await_results(job_t *job, const rd_kafka_topic_partition_list_t *parts,
                            int64_t timeout_ms)
{
    int64_t deadline = now_ns() + timeout_ms * 1000000LL;
    size_t left;

    esbulk_flush(job->eb, 0); /* what is buffered goes now, not at the linger */
    while ((left = inflight_of(job, parts)) > 0 && now_ns() < deadline) {
        if (job->fatal) {
            /* what is in flight still gets its result; nothing more is sent */
            q_abandon(&job->held);
            q_abandon(&job->resend);
            if ((left = inflight_of(job, parts)) == 0)
                break;
        }
        pump(job);
        esbulk_poll(job->eb, job->resend.head ? 10 : 50);
        if (job->dl)
            rd_kafka_poll(job->dl, 0);
    }
    return left;
}

static void on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts, void *opaque)
{
    job_t *job = opaque;
    rd_kafka_error_t *error = NULL;

    /* cooperative-sticky by default; an eager assignor given with
     * kafka.partition.assignment.strategy assigns and revokes everything */
    job->cooperative = strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE") == 0;
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        for (int i = 0; i < parts->cnt; i++) {
            part_t *p = find_part(job, parts->elems[i].topic, parts->elems[i].partition, 1);
            if (p == NULL) {
                say("out of memory");
                job->fatal = 1;
                continue;
            }
            p->gen++;
            ekf_track_reset(&p->track);
            p->assigned = 1;
            p->eof = 0;
            p->committed = p->stored = -1;
        }
        /* where the group is, for the lag (not needed to resume: the
         * consumer starts there) */
        rd_kafka_topic_partition_list_t *c = rd_kafka_topic_partition_list_copy(parts);
        if (c != NULL && rd_kafka_committed(rk, c, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR)
            for (int i = 0; i < c->cnt; i++) {
                part_t *p = find_part(job, c->elems[i].topic, c->elems[i].partition, 0);
                if (p != NULL && c->elems[i].offset >= 0)
                    p->committed = c->elems[i].offset;
            }
        if (c != NULL)
            rd_kafka_topic_partition_list_destroy(c);
        if (job->cooperative)
            error = rd_kafka_incremental_assign(rk, parts);
        else
            rd_kafka_assign(rk, parts);
        if (job->paused)
            rd_kafka_pause_partitions(rk, parts);
        if (!job->o.quiet)
            say("assigned %d partition%s", parts->cnt, parts->cnt == 1 ? "" : "s");
    } else if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS) {
        int lost = rd_kafka_assignment_lost(rk);
        for (int i = 0; i < parts->cnt; i++) {
            part_t *p = find_part(job, parts->elems[i].topic, parts->elems[i].partition, 0);
            if (p != NULL) {
                q_drop_part(&job->held, p);
                q_drop_part(&job->resend, p);
            }
        }
        if (!lost) {
            /* (at the close, the results have been awaited already) */
            size_t left = job->leaving ? 0 : await_results(job, parts, job->o.revoke_timeout_ms);
            if (left > 0)
                say("revoked with %zu document%s without a result after %" PRId64
                    " ms: not committed, the next owner reads them again", left,
                    left == 1 ? "" : "s", job->o.revoke_timeout_ms);
            commit_sync(job, parts);
            unstore(job, parts);
        } else {
            unstore(job, parts);
            say("%d partition%s lost (the group moved on without this member): nothing of "
                "them committed", parts->cnt, parts->cnt == 1 ? "" : "s");
        }
        for (int i = 0; i < parts->cnt; i++) {
            part_t *p = find_part(job, parts->elems[i].topic, parts->elems[i].partition, 0);
            if (p != NULL) {
                p->assigned = 0;
                p->gen++;
                ekf_track_reset(&p->track);
            }
        }
        if (job->cooperative)
            error = rd_kafka_incremental_unassign(rk, parts);
        else
            rd_kafka_assign(rk, NULL);
        if (!job->o.quiet && !job->closing)
            say("revoked %d partition%s", parts->cnt, parts->cnt == 1 ? "" : "s");
    } else {
        say("rebalance: %s", rd_kafka_err2str(err));
        rd_kafka_assign(rk, NULL);
    }
    if (error != NULL) {
        say("rebalance: %s", rd_kafka_error_string(error));
        rd_kafka_error_destroy(error);
        job->fatal = 1;
    }
}

static void on_kafka_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    job_t *job = opaque;

    if (err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN) {
        if (job->brokers_down_ns == 0)
            job->brokers_down_ns = now_ns();
        return;
    }
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        char why[512];
        rd_kafka_fatal_error(rk, why, sizeof(why));
        say("kafka %s: fatal: %s", rd_kafka_name(rk), why);
        job->fatal = 1;
        return;
    }
    if (err != RD_KAFKA_RESP_ERR__TRANSPORT) /* said by the log, and retried */
        say("kafka %s: %s", rd_kafka_name(rk), reason);
}

/* ------------------------------------------------------------------------
 * Statistics and the end.
 */
static void print_stats(job_t *job)
{
    int64_t now = now_ns();
    double secs = (double)(now - job->stats_last_ns) / 1e9;
    json_t *parts = json_array(), *root;

    for (part_t *p = job->parts; p != NULL; p = p->next) {
        int64_t lo = -1, hi = -1;
        if (!p->assigned)
            continue;
        rd_kafka_get_watermark_offsets(job->rk, p->topic, p->partition, &lo, &hi);
        int64_t lag = hi < 0 ? -1 : hi - (p->committed >= 0 ? p->committed : (lo > 0 ? lo : 0));
        json_array_append_new(parts, json_pack("{s:s,s:i,s:I,s:I,s:I}", "topic", p->topic,
                                               "partition", (int)p->partition, "committed",
                                               (json_int_t)p->committed, "end", (json_int_t)hi,
                                               "lag", (json_int_t)lag));
    }
    root = json_pack("{s:{s:I,s:f,s:I,s:I,s:I,s:o}}", "stats", "docs", (json_int_t)job->docs,
                     "docs_per_s",
                     secs > 0 ? (double)(int64_t)((double)(job->docs - job->docs_last) / secs * 10) / 10
                              : 0.0,
                     "dead_letters", (json_int_t)job->dead_letters, "skipped",
                     (json_int_t)job->skipped, "resent", (json_int_t)job->resent, "partitions",
                     parts);
    char *s = root ? json_dumps(root, JSON_COMPACT | JSON_REAL_PRECISION(10)) : NULL;
    if (s != NULL) {
        flockfile(stderr);
        fprintf(stderr, "%s\n", s);
        funlockfile(stderr);
    }
    free(s);
    json_decref(root);
    job->stats_last_ns = now;
    job->docs_last = job->docs;
}

/* --exit-at-end: every assigned partition read to its end and every result
 * in (the watermarks are then committed, synchronously, on the way out). */
static int at_end(job_t *job)
{
    int n = 0;

    if (job->held.head || job->resend.head)
        return 0;
    for (part_t *p = job->parts; p != NULL; p = p->next) {
        if (!p->assigned)
            continue;
        n++;
        if (!p->eof || ekf_track_inflight(&p->track) > 0)
            return 0;
    }
    return n > 0;
}

static const char *usage_text =
    "usage: esbulk-kafka -b BROKERS -g GROUP -t TOPIC [OPTIONS]\n"
    "Try 'esbulk-kafka --help' for more information.\n";

static const char *help_text =
    "usage: esbulk-kafka -b BROKERS -g GROUP -t TOPIC [OPTIONS]\n"
    "\n"
    "Indexes Kafka messages into Elasticsearch/OpenSearch as one member of a\n"
    "consumer group; commits only offsets whose messages all have their result.\n"
    "\n"
    "  -b, --brokers LIST        bootstrap servers (kafka.bootstrap.servers)\n"
    "  -g, --group ID            consumer group id (required)\n"
    "  -t, --topic NAME          a topic (repeatable); ^NAME is a regex\n"
    "  -u, --url URL             a cluster node URL (repeatable)\n"
    "  -i, --index TEMPLATE      {topic}, {partition}, strftime %-fields of the\n"
    "                            message time (UTC); default {topic}\n"
    "      --id offset|key|field:NAME  _id (default offset: topic-partition-offset)\n"
    "      --routing-field NAME  routing from a top-level field\n"
    "      --format json|bulk    one JSON object (default), or an action line and a\n"
    "                            source line\n"
    "      --versioning offset|none  the offset as external_gte version (default:\n"
    "                            offset with --id key, else none)\n"
    "      --dead-letter-topic T refused documents go there, with esbulk.* headers\n"
    "      --on-error dead-letter|stop  (default dead-letter with a topic, else stop)\n"
    "      --static-id ID        static membership (group.instance.id)\n"
    "      --revoke-timeout MS   wait for revoked partitions' results (30000)\n"
    "      --drain-timeout MS    at SIGTERM, wait for results (30000)\n"
    "      --broker-timeout MS   brokers unreachable that long: exit 1 (30000)\n"
    "      --commit-interval MS  commit watermarks that often (1000)\n"
    "      --stats-interval S    a statistics JSON line on stderr every S s (0 off)\n"
    "      --exit-at-end         exit once every partition is read and committed\n"
    "  -c, --config FILE         KEY=VALUE lines: options by long name, kafka.*\n"
    "                            (librdkafka) and libesbulk keys\n"
    "      --set KEY=VALUE       the same, on the command line (wins over the file)\n"
    "  -q, --quiet               no assignment lines nor summary\n"
    "\n"
    "Exit status: 0 drained, committed and left the group; 1 runtime failure;\n"
    "2 bad usage or configuration.\n";

static const struct option long_opts[] = {
    {"brokers", required_argument, NULL, 'b'},
    {"group", required_argument, NULL, 'g'},
    {"topic", required_argument, NULL, 't'},
    {"url", required_argument, NULL, 'u'},
    {"index", required_argument, NULL, 'i'},
    {"config", required_argument, NULL, 'c'},
    {"quiet", no_argument, NULL, 'q'},
    {"id", required_argument, NULL, 1},
    {"routing-field", required_argument, NULL, 1},
    {"format", required_argument, NULL, 1},
    {"dead-letter-topic", required_argument, NULL, 1},
    {"on-error", required_argument, NULL, 1},
    {"static-id", required_argument, NULL, 1},
    {"revoke-timeout", required_argument, NULL, 1},
    {"drain-timeout", required_argument, NULL, 1},
    {"broker-timeout", required_argument, NULL, 1},
    {"commit-interval", required_argument, NULL, 1},
    {"stats-interval", required_argument, NULL, 1},
    {"versioning", required_argument, NULL, 1},
    {"exit-at-end", no_argument, NULL, 1},
    {"set", required_argument, NULL, 2},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int usage_error(const char *msg)
{
    say("%s", msg);
    fputs(usage_text, stderr);
    return EXIT_USAGE;
}

/* The librdkafka configuration of the consumer (dl = 0) or of the
 * dead-letter producer: the sink's defaults, the kafka.* keys, then what
 * the sink needs. NULL with the reason in err. */
static rd_kafka_conf_t *kafka_conf(job_t *job, int dl, char *err, size_t err_size)
{
    rd_kafka_conf_t *kc = rd_kafka_conf_new();
    /* memory: librdkafka's pre-fetch is bounded by bytes and by a count of
     * messages per partition (100000 by default: with small messages that
     * count, each message with librdkafka's own record of it, and 1 MiB per
     * partition and fetch took a member to 150 MB); a join: heartbeats every
     * second (librdkafka's 3 s made each phase of a join wait seconds) */
    static const char *const consumer_defaults[][2] = {
        {"partition.assignment.strategy", "cooperative-sticky"},
        {"auto.offset.reset", "earliest"},
        {"queued.max.messages.kbytes", "8192"},
        {"queued.min.messages", "1000"},
        {"fetch.max.bytes", "8388608"}, /* room for 32 partitions' fetches: a
                                           smaller one starves the last ones */
        {"max.partition.fetch.bytes", "262144"},
        {"heartbeat.interval.ms", "1000"},
    };
    static const char *const producer_needs[][2] = {
        {"acks", "all"}, {"enable.idempotence", "true"}, {"linger.ms", "5"}};

    if (kc == NULL) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    if (!dl)
        for (size_t i = 0; i < sizeof(consumer_defaults) / sizeof(consumer_defaults[0]); i++)
            rd_kafka_conf_set(kc, consumer_defaults[i][0], consumer_defaults[i][1], err,
                              err_size);
    for (int i = 0; i < job->o.nkafka; i++) {
        char why[512];
        if (rd_kafka_conf_set(kc, job->o.kafka[i].key, job->o.kafka[i].value, why,
                              sizeof(why)) != RD_KAFKA_CONF_OK) {
            snprintf(err, err_size, "kafka.%s: %s", job->o.kafka[i].key, why);
            rd_kafka_conf_destroy(kc);
            return NULL;
        }
    }
    if (dl) {
        for (size_t i = 0; i < sizeof(producer_needs) / sizeof(producer_needs[0]); i++)
            rd_kafka_conf_set(kc, producer_needs[i][0], producer_needs[i][1], err, err_size);
        rd_kafka_conf_set_dr_msg_cb(kc, on_dl_report);
    } else {
        char interval[24];
        snprintf(interval, sizeof(interval), "%" PRId64, job->o.commit_interval_ms);
        if (rd_kafka_conf_set(kc, "group.id", job->o.group, err, err_size) ||
            (job->o.static_id != NULL &&
             rd_kafka_conf_set(kc, "group.instance.id", job->o.static_id, err, err_size)) ||
            rd_kafka_conf_set(kc, "enable.auto.commit", "true", err, err_size) ||
            rd_kafka_conf_set(kc, "auto.commit.interval.ms", interval, err, err_size) ||
            rd_kafka_conf_set(kc, "enable.auto.offset.store", "false", err, err_size) ||
            rd_kafka_conf_set(kc, "enable.partition.eof", "true", err, err_size)) {
            rd_kafka_conf_destroy(kc);
            return NULL;
        }
        rd_kafka_conf_set_rebalance_cb(kc, on_rebalance);
        rd_kafka_conf_set_offset_commit_cb(kc, on_commit);
    }
    rd_kafka_conf_set_log_cb(kc, on_kafka_log);
    rd_kafka_conf_set_error_cb(kc, on_kafka_error);
    rd_kafka_conf_set_opaque(kc, job);
    return kc;
}

/* Whether the brokers answer, and the topics exist. 0; 1 unreachable
 * (runtime), 2 an unknown topic (usage), with a message said. */
static int check_topics(job_t *job)
{
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t e =
        rd_kafka_metadata(job->rk, 1, NULL, &md, (int)job->o.broker_timeout_ms);

    if (e) {
        say("cannot read the cluster's metadata from the brokers within %" PRId64 " ms: %s",
            job->o.broker_timeout_ms, rd_kafka_err2str(e));
        return EXIT_RUNTIME;
    }
    int rc = 0;
    for (int i = 0; i <= job->o.ntopics && rc == 0; i++) {
        const char *name = i < job->o.ntopics ? job->o.topics[i] : job->o.dead_letter_topic;
        int found = 0;
        if (name == NULL || name[0] == '^')
            continue;
        for (int t = 0; t < md->topic_cnt; t++)
            if (strcmp(md->topics[t].topic, name) == 0 && md->topics[t].err == 0)
                found = 1;
        if (!found) {
            say("%s %s does not exist (the brokers do not know it)",
                i < job->o.ntopics ? "topic" : "dead-letter topic", name);
            rc = EXIT_USAGE;
        }
    }
    rd_kafka_metadata_destroy(md);
    return rc;
}

int main(int argc, char **argv)
{
    job_t job_s, *job = &job_s;
    char err[1024];
    const char *config = NULL;
    envcreds_t env = {NULL, NULL, NULL};
    struct {
        const char *key;
        char *value;
    } cli[256];
    int ncli = 0, c, li, rc = EXIT_RUNTIME;
    sigset_t stops, old;

    memset(job, 0, sizeof(*job));
    if (ekf_opts_init(&job->o)) {
        say("out of memory");
        return EXIT_RUNTIME;
    }
    while ((li = -1, c = getopt_long(argc, argv, "b:g:t:u:i:c:qh", long_opts, &li)) != -1) {
        const char *key = NULL;
        switch (c) {
        case 'b': key = "brokers"; break;
        case 'g': key = "group"; break;
        case 't': key = "topic"; break;
        case 'u': key = "url"; break;
        case 'i': key = "index"; break;
        case 'q': key = "quiet"; break;
        case 'c': config = optarg; continue;
        case 'h': fputs(help_text, stdout); ekf_opts_free(&job->o); return 0;
        case 1: key = long_opts[li].name; break;
        case 2: {
            char *eq = strchr(optarg, '=');
            if (eq == NULL || eq == optarg) {
                ekf_opts_free(&job->o);
                return usage_error("--set KEY=VALUE");
            }
            *eq = '\0';
            key = optarg;
            optarg = eq + 1;
            break;
        }
        default: ekf_opts_free(&job->o); fputs(usage_text, stderr); return EXIT_USAGE;
        }
        if (ncli == (int)(sizeof(cli) / sizeof(cli[0]))) {
            ekf_opts_free(&job->o);
            return usage_error("too many options");
        }
        cli[ncli].key = key;
        cli[ncli++].value = optarg ? optarg : (char *)"true";
    }
    if (optind < argc) {
        ekf_opts_free(&job->o);
        return usage_error("unexpected argument (topics are given with --topic)");
    }
    /* the file first, then the command line, which wins */
    if (config != NULL) {
        int e = ekf_opts_load(&job->o, config, err, sizeof(err));
        if (e) {
            ekf_opts_free(&job->o);
            return e == -2 ? (say("out of memory"), EXIT_RUNTIME) : usage_error(err);
        }
    }
    for (int i = 0; i < ncli; i++) {
        char why[800];
        int e = ekf_opts_set(&job->o, cli[i].key, cli[i].value, 1, why, sizeof(why));
        if (e) {
            ekf_opts_free(&job->o);
            if (e == -2) {
                say("out of memory");
                return EXIT_RUNTIME;
            }
            snprintf(err, sizeof(err), "%s", why);
            return usage_error(err);
        }
    }
    if (ekf_opts_check(&job->o, err, sizeof(err))) {
        ekf_opts_free(&job->o);
        return usage_error(err);
    }
    int have_brokers = 0;
    for (int i = 0; i < job->o.nkafka; i++)
        have_brokers |= !strcmp(job->o.kafka[i].key, "bootstrap.servers") ||
                        !strcmp(job->o.kafka[i].key, "metadata.broker.list");
    if (!have_brokers) {
        ekf_opts_free(&job->o);
        return usage_error("--brokers is required");
    }
    if (envcreds_take(&env) != 0 ||
        envcreds_conf(&env, job->o.conf, "--set auth.username=U", err, sizeof(err)) != 0) {
        envcreds_free(&env);
        ekf_opts_free(&job->o);
        return usage_error(err);
    }
    envcreds_free(&env);

    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* the libraries' threads never take the signals: this one does */
    sigemptyset(&stops);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGTERM);

    rd_kafka_conf_t *kc = kafka_conf(job, 0, err, sizeof(err));
    if (kc == NULL) {
        ekf_opts_free(&job->o);
        return usage_error(err);
    }
    rd_kafka_conf_t *pc = NULL;
    if (job->o.dead_letter_topic && (pc = kafka_conf(job, 1, err, sizeof(err))) == NULL) {
        rd_kafka_conf_destroy(kc);
        ekf_opts_free(&job->o);
        return usage_error(err);
    }
    pthread_sigmask(SIG_BLOCK, &stops, &old);
    job->rk = rd_kafka_new(RD_KAFKA_CONSUMER, kc, err, sizeof(err));
    if (job->rk == NULL) {
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        rd_kafka_conf_destroy(kc);
        if (pc)
            rd_kafka_conf_destroy(pc);
        ekf_opts_free(&job->o);
        return usage_error(err);
    }
    if (pc != NULL && (job->dl = rd_kafka_new(RD_KAFKA_PRODUCER, pc, err, sizeof(err))) == NULL) {
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        rd_kafka_conf_destroy(pc);
        rc = usage_error(err);
        goto out;
    }
    esbulk_conf_set_result_cb(job->o.conf, on_result);
    esbulk_conf_set_log_cb(job->o.conf, on_lib_log);
    esbulk_conf_set_opaque(job->o.conf, job);
    job->eb = esbulk_new(job->o.conf, err, sizeof(err));
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (job->eb == NULL) {
        rc = usage_error(err);
        goto out;
    }
    if ((job->docopts = esbulk_docopts_new()) == NULL) {
        say("out of memory");
        goto out;
    }
    if ((rc = check_topics(job)) != 0)
        goto out;
    rc = EXIT_RUNTIME;
    rd_kafka_poll_set_consumer(job->rk);
    {
        rd_kafka_topic_partition_list_t *sub =
            rd_kafka_topic_partition_list_new(job->o.ntopics);
        for (int i = 0; i < job->o.ntopics; i++)
            rd_kafka_topic_partition_list_add(sub, job->o.topics[i], RD_KAFKA_PARTITION_UA);
        rd_kafka_resp_err_t e = rd_kafka_subscribe(job->rk, sub);
        rd_kafka_topic_partition_list_destroy(sub);
        if (e) {
            say("subscribe: %s", rd_kafka_err2str(e));
            goto out;
        }
    }
    job->t0_ns = job->stats_last_ns = job->commit_last_ns = now_ns();

    while (!interrupted && !job->fatal) {
        rd_kafka_message_t *m;
        int64_t now;

        esbulk_poll(job->eb, 0);
        if (job->dl)
            rd_kafka_poll(job->dl, 0);
        int waiting = pump(job);
        if (job->fatal)
            break;
        now = now_ns();
        if (now - job->commit_last_ns >= 100000000LL) { /* librdkafka commits them */
            store(job, NULL);
            job->commit_last_ns = now;
        }
        if (job->o.stats_interval_s > 0 &&
            now - job->stats_last_ns >= job->o.stats_interval_s * 1000000000LL)
            print_stats(job);
        if (job->o.exit_at_end && at_end(job))
            break;
        if (job->brokers_down_ns != 0 &&
            now - job->brokers_down_ns >= job->o.broker_timeout_ms * 1000000LL) {
            const struct rd_kafka_metadata *md = NULL;
            if (rd_kafka_metadata(job->rk, 0, NULL, &md, 2000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
                rd_kafka_metadata_destroy(md);
                job->brokers_down_ns = 0;
            } else {
                say("the brokers have been unreachable for %" PRId64 " ms: stopping",
                    job->o.broker_timeout_ms);
                job->fatal = 1;
                break;
            }
        }
        if (waiting) {
            /* the buffer is full: results free it; paused, the consumer is
             * polled for its events (rebalances) */
            esbulk_poll(job->eb, job->held.head ? 10 : 5);
            if (!job->paused)
                continue;
            m = rd_kafka_consumer_poll(job->rk, 0);
        } else {
            m = rd_kafka_consumer_poll(job->rk, esbulk_pending(job->eb) > 0 ? 5 : 100);
        }
        if (m == NULL)
            continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            part_t *p = find_part(job, rd_kafka_topic_name(m->rkt), m->partition, 0);
            if (p != NULL && p->assigned)
                p->eof = 1;
        } else if (m->err) {
            if (m->err == RD_KAFKA_RESP_ERR__FATAL || rd_kafka_fatal_error(job->rk, NULL, 0)) {
                say("kafka: fatal: %s", rd_kafka_message_errstr(m));
                job->fatal = 1;
            } else {
                char line[600];
                snprintf(line, sizeof(line), "kafka: %s%s%s", m->rkt ? rd_kafka_topic_name(m->rkt) : "",
                         m->rkt ? ": " : "", rd_kafka_message_errstr(m));
                flockfile(stderr);
                if (logonce_new(&job->lib_logs, line, now_ns(), 60 * 1000000000LL))
                    fprintf(stderr, "esbulk-kafka: %s\n", line);
                funlockfile(stderr);
            }
        } else {
            job->brokers_down_ns = 0;
            handle_message(job, m);
        }
        rd_kafka_message_destroy(m);
    }

    /* the end: every result (bounded), the watermarks committed, the group
     * left (the revoke callback runs inside the close) */
    {
        int64_t t0 = now_ns();
        size_t left = await_results(job, NULL, job->o.drain_timeout_ms);
        int commit_failed = commit_sync(job, NULL) != 0;
        if (left > 0)
            say("%zu document%s without a result after %.1f s: not committed (read "
                "again at the next start)", left, left == 1 ? "" : "s",
                (double)(now_ns() - t0) / 1e9);
        if (job->o.stats_interval_s > 0)
            print_stats(job);
        job->leaving = 1;
        rd_kafka_resp_err_t e = rd_kafka_consumer_close(job->rk);
        if (e)
            say("leaving the group: %s", rd_kafka_err2str(e));
        if (job->dl)
            rd_kafka_flush(job->dl, 10000);
        rc = job->fatal || left > 0 || e || commit_failed ? EXIT_RUNTIME : 0;
        if (!job->o.quiet || rc)
            say("%s: %" PRIu64 " documents indexed, %" PRIu64 " dead letters, %" PRIu64
                " tombstones skipped, %" PRIu64 " sent again, in %.1f s",
                job->fatal ? "stopped at a failure" : interrupted ? "stopped by a signal"
                                                                   : "at the end",
                job->docs, job->dead_letters, job->skipped, job->resent,
                (double)(now_ns() - job->t0_ns) / 1e9);
    }
out:
    job->closing = 1;
    if (job->eb)
        esbulk_destroy(job->eb);
    esbulk_docopts_destroy(job->docopts);
    if (job->dl)
        rd_kafka_destroy(job->dl);
    if (job->rk)
        rd_kafka_destroy(job->rk);
    q_free(&job->held);
    q_free(&job->resend);
    while (job->parts) {
        part_t *p = job->parts;
        job->parts = p->next;
        ekf_track_free(&p->track);
        free(p->topic);
        free(p);
    }
    ekf_opts_free(&job->o);
    return rc;
}
