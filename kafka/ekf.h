/*
 * esbulk-kafka: shared declarations of its modules.
 *   tracker.c   per-partition offsets in flight -> the offset that may be
 *               committed (the contiguous "done" watermark)
 *   message.c   a message to a document: the index template, the _id, the
 *               routing, bulk-format action lines, dead-letter headers
 *   config.c    options, the configuration file and --set
 *   esbulk_kafka.c  the consumer, the engine, the dead-letter producer
 * tracker.c, message.c and config.c do no I/O and need no librdkafka (unit
 * tested in tests/check_kafka.c, which compiles them in).
 */
#ifndef EKF_H
#define EKF_H

#include <esbulk.h>
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------------
 * The offset tracker of one partition. Messages are added in the order the
 * consumer hands them out (increasing offsets, with gaps where a topic is
 * compacted or holds transaction markers); each gets its result later, in
 * any order. The watermark is the offset below which every message added
 * has its result: the offset to commit (Kafka commits "the next offset to
 * read").
 */
typedef enum {
    EKF_PENDING = 0,      /* sent to the cluster, no result yet */
    EKF_DEAD_PENDING = 1, /* refused: its dead letter is not acknowledged yet */
    EKF_DONE = 2,         /* has its result (indexed, deleted, dead-lettered, skipped) */
    EKF_FAILED = 3        /* will have none in this run (--on-error stop, a stop at a
                             failure): the watermark stays below it for good */
} ekf_state_t;

typedef struct {
    int64_t *off;   /* circular buffer of the offsets without a result yet... */
    uint8_t *st;    /* ...and their states */
    size_t head, len, cap;
    int64_t next;   /* the offset after the last one added; -1: none added */
    size_t dead;    /* how many are EKF_DEAD_PENDING */
} ekf_track_t;

void ekf_track_init(ekf_track_t *t);
void ekf_track_free(ekf_track_t *t);
/* Forgets every offset (a revoked or lost partition): what is done is
 * known by the last commit, what is not will be read again. */
void ekf_track_reset(ekf_track_t *t);
/* A message read: 0; -1 out of memory; -2 offset not above the last one. */
int ekf_track_add(ekf_track_t *t, int64_t offset);
/* Sets the state of an offset added: 0; -1 when it is not in flight (never
 * added, already done, or forgotten by a reset). */
int ekf_track_set(ekf_track_t *t, int64_t offset, ekf_state_t state);
/* A document dropped unsent (its partition revoked while it waited in the
 * program's queues): it gets no result in this run, so it no longer counts
 * as in flight, and the watermark stays below it (the next owner reads it
 * again from there). 0; -1 when the offset is not in flight. */
int ekf_track_drop(ekf_track_t *t, int64_t offset);
/* The offset to commit: the first without its result, or, when all have
 * theirs, the one after the last added. -1 when none was added. */
int64_t ekf_track_watermark(const ekf_track_t *t);
/* Messages added that still wait for their result (dead letters pending
 * included, EKF_FAILED ones not). */
size_t ekf_track_inflight(const ekf_track_t *t);

/* ------------------------------------------------------------------------
 * A message to a document.
 */
typedef enum { EKF_ID_OFFSET = 0, EKF_ID_KEY = 1, EKF_ID_FIELD = 2 } ekf_id_mode_t;

/* Checks an index template: "{topic}", "{partition}", strftime's
 * conversions ("%Y", "%%"...), and characters an index name may hold (no
 * upper case, none of \ / * ? " < > | , # : or space, not starting with
 * -, _ or +). 0, or -1 with the reason in err. */
int ekf_template_check(const char *tmpl, char *err, size_t err_size);
/* Expands a template checked by ekf_template_check for a message of topic
 * and partition whose timestamp is ts_ms (milliseconds since 1970, UTC).
 * The topic is lower-cased (index names are). 0, or -1 when the name does
 * not fit out_size or is longer than 255 bytes. */
int ekf_template_expand(const char *tmpl, const char *topic, int32_t partition, int64_t ts_ms,
                        char *out, size_t out_size);

/* The default _id of a message: "{topic}-{partition}-{offset}". Returns its
 * length (snprintf's rule: out_size or more means it was cut). */
int ekf_offset_id(const char *topic, int32_t partition, int64_t offset, char *out,
                  size_t out_size);

/* The text of a top-level field of a JSON object for an _id or a routing:
 * a string as it is, an integer in decimal; anything else (absent, null,
 * another type, an empty string) is refused. On success *out is a malloc'ed
 * NUL-terminated copy (free() it) and 0 is returned; -1 with the reason in
 * err; -2 out of memory. */
int ekf_field_text(const json_t *obj, const char *field, char **out, size_t *out_len, char *err,
                   size_t err_size);

/* A bulk-format value: an action line, '\n', and (except for delete) a
 * source line. The fields point into the value (the meta strings are
 * copies in strs, freed by ekf_bulk_free). */
typedef struct {
    esbulk_op_t op;
    char *index, *id, *routing, *pipeline; /* NULL when absent */
    int64_t version;     /* -1 absent */
    int version_type;    /* 0 internal, ESBULK_VERSION_EXTERNAL(_GTE) */
    int64_t if_seq_no, if_primary_term; /* -1 absent */
    int require_alias;
    int32_t retry_on_conflict; /* -1 absent */
    const char *source;  /* NULL for delete */
    size_t source_len;
} ekf_bulk_t;
/* Parses value[0..len). 0, or -1 with the reason in err (then nothing is
 * held); -2 out of memory. */
int ekf_bulk_parse(const char *value, size_t len, ekf_bulk_t *out, char *err, size_t err_size);
void ekf_bulk_free(ekf_bulk_t *b);

/* The headers of a dead letter, in this order: esbulk.reason,
 * esbulk.status, esbulk.error_type, esbulk.topic, esbulk.partition,
 * esbulk.offset. The numbers are written into nums (which must outlive the
 * headers); a NULL reason or error type is written as "". */
#define EKF_DL_HEADERS 6
typedef struct {
    const char *name;
    const char *value;
} ekf_header_t;
typedef struct {
    char status[16], partition[16], offset[24];
} ekf_dl_nums_t;
void ekf_dl_headers(ekf_header_t out[EKF_DL_HEADERS], ekf_dl_nums_t *nums, const char *reason,
                    int32_t status, const char *error_type, const char *topic,
                    int32_t partition, int64_t offset);

/* ------------------------------------------------------------------------
 * Options and configuration.
 */
typedef enum { EKF_FMT_JSON = 0, EKF_FMT_BULK = 1 } ekf_format_t;
typedef enum { EKF_ON_ERROR_DEFAULT = 0, EKF_ON_ERROR_DEAD = 1, EKF_ON_ERROR_STOP = 2 } ekf_on_error_t;
typedef enum { EKF_VERSION_DEFAULT = 0, EKF_VERSION_NONE = 1, EKF_VERSION_OFFSET = 2 } ekf_versioning_t;

typedef struct {
    char *key, *value;
} ekf_kv_t;

typedef struct {
    char *group;
    char **topics;
    int ntopics, topics_from_cli;
    char *urls;            /* comma-joined --url values; NULL: libesbulk's default */
    int urls_from_cli;
    char *index;           /* the template */
    ekf_id_mode_t id_mode;
    char *id_field;
    char *routing_field;
    ekf_format_t format;
    char *dead_letter_topic;
    ekf_on_error_t on_error;
    char *static_id;
    int64_t revoke_timeout_ms;
    int64_t stats_interval_s;
    int64_t broker_timeout_ms;
    int64_t commit_interval_ms;
    int64_t drain_timeout_ms;
    ekf_versioning_t versioning;
    int exit_at_end;
    int quiet;
    ekf_kv_t *kafka;       /* kafka.* keys, the prefix removed, in order */
    int nkafka;
    esbulk_conf_t *conf;   /* libesbulk keys */
} ekf_opts_t;

/* Options at their defaults and a libesbulk configuration with the sink's
 * defaults. 0, or -1 out of memory. */
int ekf_opts_init(ekf_opts_t *o);
void ekf_opts_free(ekf_opts_t *o);
/* Applies one setting: a long option by its name ("group", "topic",
 * "exit-at-end"...; flags take true/false, 1/0, yes/no), a kafka.* key
 * (kept for librdkafka, which checks it), or a libesbulk key (checked by
 * esbulk_conf_set). from_cli: a list option given on the command line
 * replaces the configuration file's list. 0, or -1 with the reason in err
 * (an unknown key, a bad value), -2 out of memory. */
int ekf_opts_set(ekf_opts_t *o, const char *key, const char *value, int from_cli, char *err,
                 size_t err_size);
/* Applies a configuration file: lines KEY=VALUE (spaces around both
 * trimmed), blank lines and lines starting with # ignored. 0, or -1 with
 * "FILE:LINE: reason" in err, -2 out of memory. */
int ekf_opts_load(ekf_opts_t *o, const char *path, char *err, size_t err_size);
/* After every setting: what is required and what fits together. 0, or -1
 * with the reason in err. */
int ekf_opts_check(ekf_opts_t *o, char *err, size_t err_size);

/* ------------------------------------------------------------------------
 * What one message becomes (message.c): a document to add, a refusal, or
 * nothing (a tombstone that names no document). Pure: the index name (from
 * the template and the message's time) is the caller's.
 */
typedef enum { EKF_PLAN_ADD = 0, EKF_PLAN_SKIP = 1, EKF_PLAN_REFUSE = 2 } ekf_plan_kind_t;
typedef struct {
    ekf_plan_kind_t kind;
    esbulk_op_t op;
    const char *id, *routing; /* NULL: none; into the key, or copies the plan owns */
    size_t id_len, routing_len;
    const char *body;         /* into the value; NULL for a delete */
    size_t body_len;
    const char *index;        /* the bulk action's _index; NULL: the template's */
    const char *pipeline;     /* the bulk action's; NULL: none */
    int64_t version;          /* -1: none */
    int version_type;
    int64_t if_seq_no, if_primary_term; /* -1: none */
    int require_alias;
    int32_t retry_on_conflict; /* -1: none */
    int has_opts;             /* any of the five above */
    const char *reason, *error_type; /* EKF_PLAN_REFUSE: why (status 400) */
    /* storage */
    char idbuf[300], why[400];
    char *field_id, *field_routing;
    ekf_bulk_t bulk;
} ekf_plan_t;
/* Plans the message at offset of topic/partition: key (NULL: none) and
 * value (NULL: a tombstone), under o's --id, --routing-field, --format and
 * --versioning. 0, or -2 out of memory. Free with ekf_plan_free (also
 * after an error). */
int ekf_plan(ekf_plan_t *pl, const ekf_opts_t *o, const char *topic, int32_t partition,
             int64_t offset, const char *key, size_t key_len, const char *value,
             size_t value_len);
void ekf_plan_free(ekf_plan_t *pl);
/* Turns a plan into a refusal: its index name (the template's) is too long. */
void ekf_plan_refuse_index(ekf_plan_t *pl);

#endif
