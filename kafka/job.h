/*
 * esbulk-kafka's internal header: the member's state (job_t), its
 * partitions (part_t) and the documents on their way (doc_t), shared by the
 * program's files: esbulk_kafka.c (options, start, the loop, the end),
 * sink.c (messages into documents, the engine, dead letters, back-pressure)
 * and group.c (offsets, commits, rebalances).
 */
#ifndef ESBULK_KAFKA_JOB_H
#define ESBULK_KAFKA_JOB_H

#include "ekf.h"
#include "../tools/common/logonce.h"

#include <esbulk.h>
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2

extern volatile sig_atomic_t interrupted; /* SIGINT, SIGTERM */

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

/* esbulk_kafka.c */
int64_t now_ns(void);
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* sink.c */
part_t *find_part(job_t *job, const char *topic, int32_t partition, int create);
void q_drop_part(docq_t *q, part_t *part);
void q_free(docq_t *q);
void q_abandon(docq_t *q);
void on_dl_report(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque);
void on_result(esbulk_t *eb, const esbulk_result_t *result, void *opaque);
int pump(job_t *job);
void handle_message(job_t *job, const rd_kafka_message_t *m);

/* group.c */
void store(job_t *job, const rd_kafka_topic_partition_list_t *parts);
int commit_sync(job_t *job, const rd_kafka_topic_partition_list_t *parts);
void on_commit(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *offsets,
               void *opaque);
size_t await_results(job_t *job, const rd_kafka_topic_partition_list_t *parts,
                     int64_t timeout_ms);
void on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *parts,
                  void *opaque);
void on_kafka_error(rd_kafka_t *rk, int err, const char *reason, void *opaque);

#endif
