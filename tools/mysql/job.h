/*
 * esbulk-mysql: the job's shared state and the services over it (job.c:
 * documents, results, checkpoints, dead letters, the state file; schema.c:
 * tables; snapshot.c: the snapshot), which esbulk_mysql.c (options, start,
 * exit) and the followers (binlog.c, poll.c, import.c) call.
 */
#ifndef ESM_JOB_H
#define ESM_JOB_H

#include "esm.h"
#include "../common/logonce.h"

#include <esbulk.h>
#include <jansson.h>
#include <mysql.h>
#include <signal.h>
#include <stdio.h>

#define ESM_EXIT_FAILED 1
#define ESM_EXIT_USAGE 2
#define ESM_EXIT_PURGED 3
#define ESM_EXIT_INTERRUPTED 4

/* After SIGINT/SIGTERM: documents already added get this long to be
 * acknowledged; the rest are dropped (read again at the next start). */
#define ESM_STOP_GRACE_MS 2000

typedef struct {
    char *name;          /* column name in the table */
    char *field;         /* field name in the document */
    esm_kind_t kind;
    char *sqltype;       /* COLUMN_TYPE, e.g. "decimal(10,2)" (--create-index) */
    int ordinal;         /* 0-based position in the table (binlog row images) */
    int is_signed;
    int binlog_as_read;  /* keys: the binlog holds the value as the snapshot reads it */
} esm_col_t;

struct esm_table_s;

/* A unit of work whose documents are acknowledged together: a snapshot page
 * (then key is its last row's key) or a binlog batch (then file/pos is the
 * transaction boundary every earlier event is covered by). */
typedef struct esm_unit_s {
    struct esm_unit_s *next;
    struct esm_table_s *table; /* NULL: a binlog batch */
    int64_t remaining;        /* documents without a result yet */
    int last;                 /* the table's last page: the snapshot is complete */
    int blocked;              /* a document failed with --on-error stop */
    int open;                 /* documents are still being added: not done yet */
    int poll;                 /* a --poll-column page: key is [column value, key...] */
    json_t *key;              /* the last key (array of strings), owned */
    char *file;               /* binlog batches: the position after them */
    uint64_t pos;
    int64_t read_ns;          /* binlog batches: when their first event was read */
} esm_unit_t;

typedef struct esm_table_s {
    char *db, *name, *index, *qname; /* qname: `db`.`name` */
    char *fullname;                  /* db.name, the state file's key */
    esm_col_t *cols;                 /* every output column */
    int ncols;
    esm_col_t *keys;                 /* the key (id) columns, in key order */
    int nkeys;
    char *select_list;               /* output columns, the key columns, [the poll column] */
    int done;                        /* snapshot complete */
    json_t *ack_key;                 /* highest key with every row up to it acked */
    json_t *poll_key;                /* --poll-column: [value, key...] acked up to */
    json_t *poll_read;               /* --poll-column: [value, key...] read up to */
    esm_unit_t *head, *tail;         /* pages in order */
    uint64_t rows_read, rows_failed;
    uint64_t approx_rows;            /* information_schema estimate (progress) */
    char *layout;                    /* every column of the table in order, one letter
                                      * per type family (esm_layout_letter), as
                                      * described: checked against binlog table maps */
    char *layout_ok;                 /* the binlog layout last found compatible */
    /* binlog: keys waiting for a re-read */
    struct esm_pending_s *pend;
    size_t npend, cap_pend;
} esm_table_t;

typedef struct esm_pending_s {
    json_t *key;      /* owned */
    int64_t version;
} esm_pending_t;

typedef struct {
    /* options */
    const char *host, *user, *password, *database, *socket;
    unsigned port;
    /* TLS to MySQL (--ssl*): required when any is set, the server's
     * certificate verified unless ssl_insecure */
    int ssl, ssl_insecure;
    const char *ssl_ca, *ssl_cert, *ssl_key;
    const char *config_path, *state_path, *dead_letter_path, *stats_path;
    int page_rows;
    int binlog_batch_ms;      /* --binlog-batch-ms: changes gathered before a re-read */
    int on_error_stop;
    int snapshot_only, catch_up, resnapshot, quiet;
    int import_mode;
    const char *poll_column;  /* --poll-column: poll instead of the binlog */
    int create_index;         /* --create-index */
    int shards;               /* --shards (0: the cluster's default) */
    int forcemerge;           /* --forcemerge[=N]: max_num_segments, 0: none */
    double poll_lag, poll_interval; /* seconds */
    unsigned server_id;
    esm_map_opts_t map;
    /* connections */
    MYSQL *db;
    /* tables */
    esm_config_t cfg;
    esm_table_t *tables;
    int ntables;
    /* the engine */
    esbulk_t *eb;
    esbulk_docopts_t *opts;
    /* state */
    json_t *state;
    int state_dirty;
    int64_t state_written_ns;
    /* binlog units */
    esm_unit_t *bhead, *btail;
    /* outputs */
    FILE *dead;
    /* counters */
    uint64_t docs_added, docs_indexed, docs_conflict, docs_failed, rows_unmappable;
    uint64_t deletes, binlog_events, binlog_rows, poll_rows, polls;
    uint64_t unavailable; /* documents the cluster did not take (not refused) */
    int stop;          /* --on-error stop triggered, or the cluster unavailable */
    int closing;       /* stopping after a signal: results of ESBULK_ERR_CLOSED are drops */
    int closed;        /* the engine is closed (after a signal) */
    int caught_up;     /* --catch-up reached its target position */
    uint64_t docs_dropped; /* not acknowledged when a signal stopped the job */
    int fatal;         /* a runtime error: exit 1 */
    /* progress */
    int progress;
    int64_t version_floor; /* --resnapshot: the highest version the state's binlog
                              positions gave (0: none) */
    int64_t t0_ns, last_progress_ns;
    int64_t lag_ms;    /* binlog lag: now - timestamp of the last event read */
    uint64_t lag_samples;
    int64_t *lags;     /* ring of recent lag samples (ms), for percentiles */
    size_t nlags, lag_next;
    int64_t *applies;  /* ring: batch read to acknowledged (ms) */
    size_t napplies, apply_next;
    logonce_t lib_logs;   /* libesbulk's messages said lately (on_lib_log; under
                           * stderr's lock) */
} esm_job_t;

extern volatile sig_atomic_t esm_interrupted;

int64_t esm_now_ns(void);
void esm_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Runs a statement; -1 with a message on error. */
int esm_query(esm_job_t *job, MYSQL *db, const char *sql);
/* Runs a statement on the job's connection and stores its result: NULL
 * with a message on error. */
MYSQL_RES *esm_query_res(esm_job_t *job, const char *sql);
/* Appends s quoted as an SQL string literal (the job's connection's
 * escaping). */
void esm_quote_string(esm_job_t *job, esm_buf_t *b, const char *s);
/* The engine's result callback (opaque is the job): a document's outcome
 * counted, dead-lettered if refused, its unit's checkpoint advanced. */
void esm_on_result(esbulk_t *eb, const esbulk_result_t *r, void *opaque);
/* The engine's log callback (opaque is the job): warnings and errors on
 * stderr, each at most once a minute. Called on the library's threads. */
void esm_on_lib_log(int32_t level, const char *facility, const char *message, void *opaque);
/* The progress line on stderr (unless --quiet): at most every 500 ms, and
 * final: the last one, always. */
void esm_show_progress(esm_job_t *job, int final);
/* mysql_init() and the job's connection options (TLS), before
 * mysql_real_connect(): NULL if out of memory. */
MYSQL *esm_mysql_new(esm_job_t *job);
/* Serves results (wait_ms), advances checkpoints, writes the state file when
 * due (force: now). */
void esm_serve(esm_job_t *job, int wait_ms, int force_state);
/* After a signal: gives what was added ESM_STOP_GRACE_MS to be acknowledged,
 * closes the engine (the rest dropped, their units never complete), serves
 * the results and writes the state. Once. */
void esm_stop_engine(esm_job_t *job);
/* Serves until every document added has its result (or a signal: then
 * esm_stop_engine), and writes the state. */
void esm_drain(esm_job_t *job);
/* Adds one document (body NULL: delete) for table with the given external
 * version, into unit; handles a full buffer and refusals. */
void esm_add_doc(esm_job_t *job, esm_unit_t *unit, esm_table_t *t, const char *id,
                 size_t id_len, const char *body, size_t body_len, int64_t version);
/* Maps one result row to a document body; -1 with why when it cannot be. */
int esm_row_json(esm_job_t *job, esm_table_t *t, MYSQL_ROW row, unsigned long *lens,
                 esm_buf_t *out, char *why, size_t why_size);
/* The _id of a key (array of strings). */
void esm_key_id(esm_table_t *t, json_t *key, esm_buf_t *out);
/* The key of a row (array of strings, new reference). */
json_t *esm_row_key(esm_table_t *t, MYSQL_ROW row, unsigned long *lens);
/* Appends the SQL literal of key component i. */
void esm_key_literal(esm_job_t *job, esm_table_t *t, int i, const char *v, esm_buf_t *out);
/* Writes a dead-letter line (esm_dead_letter_line) of table t, or when t
 * is NULL of index (may be NULL too). */
void esm_dead_letter(esm_job_t *job, const char *phase, esm_table_t *t, const char *index,
                     const char *id, const char *reason, int32_t status, const char *error_type,
                     const char *body, size_t body_len);
/* A row that cannot be made a document (why): counted, dead-lettered with
 * phase (and its document body, when it has one), logged for the first
 * few. Returns 1 when --on-error stop: the unit is blocked (no checkpoint
 * passes it) and the job stops. */
int esm_row_unmappable(esm_job_t *job, esm_unit_t *u, esm_table_t *t, const char *phase,
                       const char *id, const char *why, const char *body, size_t body_len);
/* The external version of a binlog position: file number << 32 | offset. */
int64_t esm_version_of(const char *file, uint64_t pos);
/* Appends `name` quoted as an identifier. */
void esm_quote_ident(esm_buf_t *b, const char *name);
/* Appends (k1,...,kn) > (v1,...,vn) as k1 >= v1 AND (k1 > v1 OR (k1 = v1 AND
 * (k2 > v2 OR ...))), the values taken from key[from...]. */
void esm_key_greater(esm_job_t *job, esm_table_t *t, json_t *key, size_t from, esm_buf_t *q);

/* schema.c: describes table t from its configuration (columns, kinds, key,
 * select list, layout). 0, or an exit status with a message:
 * ESM_EXIT_USAGE when the configuration does not fit the table,
 * ESM_EXIT_FAILED else. What it made of t is freed by
 * esm_table_free_described, also after a failure. */
int esm_table_describe(esm_job_t *job, esm_table_conf_t *tc, esm_table_t *t);
void esm_table_free_described(esm_table_t *t);
/* schema.c: 0 when the server logs changes as rows (binlog_format=ROW);
 * else -1, said. */
int esm_binlog_format_row(esm_job_t *job);

/* snapshot.c: reads every table whose snapshot is not complete, in keyset
 * pages inside one consistent transaction, from its checkpoint; records
 * the binlog position (or the poll start) of the first snapshot in the
 * state. 0, or -1 with a message. */
int esm_snapshot_run(esm_job_t *job);

/* poll.c: --poll-column. Polls every table after its poll position until a signal (or, with
 * --catch-up, until a poll finds nothing more). Returns an exit status. */
int esm_poll_follow(esm_job_t *job);

/* import.c: --import-mode. begin saves each index's settings in the state
 * (unless saved already) and sets the fast ones; restore puts the saved
 * ones back and drops them from the state. 0, or -1 with a message. */
int esm_import_begin(esm_job_t *job);
int esm_import_restore(esm_job_t *job);
/* --create-index: creates each target index that does not exist, with
 * --shards and a mapping from its table's column types. 0, or -1. */
int esm_create_indices(esm_job_t *job);
/* The mapping of one column (new reference). */
json_t *esm_field_mapping(const esm_job_t *job, const esm_col_t *c);
/* --forcemerge: each index merged down to job->forcemerge segments. 0, or -1
 * (a signal cuts the wait short: 0). */
int esm_forcemerge(esm_job_t *job);

/* The layout letter of an information_schema DATA_TYPE ('?' when unknown:
 * matches any). */
char esm_layout_letter(const char *data_type);
/* Describes table t again (after a DDL statement): its columns, select list
 * and layout. 0, or -1 with a message (the table is gone, or its key
 * changed: then t is unchanged). */
int esm_table_refresh(esm_job_t *job, esm_table_t *t);

/* binlog.c: follows the binary log from the state's position. Returns an
 * exit status (0: stopped as asked). */
int esm_binlog_follow(esm_job_t *job);
/* -1 with a message when a key column's type cannot be read from row
 * images (checked before the snapshot), else 0. */
int esm_binlog_keys_supported(esm_job_t *job);
/* 1 when file is still on the server, 0 when not, -1 on error. */
int esm_binlog_exists(esm_job_t *job, const char *file);

#endif
