/*
 * esbulk-kafka: offsets and the group. The watermark of each partition
 * (the first offset without its result) is stored for librdkafka's
 * committer, which commits only while no rebalance is under way; on a
 * revoke the revoked partitions' documents get their results (bounded by
 * --revoke-timeout), their offsets are committed synchronously, and what is
 * still queued for them is dropped (the next owner reads it again); on a
 * lost assignment nothing is committed.
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
void store(job_t *job, const rd_kafka_topic_partition_list_t *parts)
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
int commit_sync(job_t *job, const rd_kafka_topic_partition_list_t *parts)
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

void on_commit(rd_kafka_t *rk, rd_kafka_resp_err_t err,
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
size_t await_results(job_t *job, const rd_kafka_topic_partition_list_t *parts,
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

void on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
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

void on_kafka_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
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
