/*
 * esbulk-mysql: shared declarations of its modules.
 *   config.c   the configuration file (tables, indices, columns, id columns)
 *   rowjson.c  MySQL/MariaDB text-protocol values to JSON (the type mapping)
 *   binlog.c   following the binary log (MariaDB Connector/C replication API)
 *   poll.c     --poll-column: polling (column, key) instead of the binlog
 *   import.c   --import-mode, --create-index, --forcemerge (index requests)
 *   esbulk_mysql.c  options, start and exit (main)
 *   job.c      the job's services: documents, results, checkpoints, dead
 *              letters, the state file (job.h)
 *   schema.c   a table's columns and key, the checks at start
 *   snapshot.c the snapshot's keyset pages
 */
#ifndef ESM_H
#define ESM_H

#include <esbulk.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "text.h" /* the buffer, UTF-8, the JSON string escaper */

/* A growable byte buffer: libesbulk's (buf.h, in the text toolkit
 * lib/libesbulk_text.la), with no maximum. A zeroed one is empty; data is
 * NUL-terminated once anything was added. The adds return 0, or -1 for
 * want of memory. */
typedef esbulk__buf_t esm_buf_t;
/* An empty buffer (nothing allocated yet) takes any size. */
static inline void esm_buf_unbounded(esm_buf_t *b)
{
    if (b->data == NULL)
        b->max = SIZE_MAX;
}
static inline int esm_buf_reserve(esm_buf_t *b, size_t more)
{
    esm_buf_unbounded(b);
    return esbulk__buf_reserve(b, more) == ESBULK_OK ? 0 : -1;
}
static inline int esm_buf_add(esm_buf_t *b, const void *data, size_t len)
{
    esm_buf_unbounded(b);
    return esbulk__buf_add(b, data, len) == ESBULK_OK ? 0 : -1;
}
static inline int esm_buf_adds(esm_buf_t *b, const char *s)
{
    return esm_buf_add(b, s, strlen(s));
}
static inline int esm_buf_addc(esm_buf_t *b, char c)
{
    return esm_buf_add(b, &c, 1);
}
static inline void esm_buf_free(esm_buf_t *b)
{
    esbulk__buf_free(b);
    b->max = 0;
}

/* How a column's values are mapped (from information_schema). */
typedef enum {
    ESM_K_INT, ESM_K_BOOL, ESM_K_FLOAT, ESM_K_DECIMAL, ESM_K_DATE, ESM_K_DATETIME,
    ESM_K_TIME, ESM_K_YEAR, ESM_K_BIT, ESM_K_ENUM, ESM_K_SET, ESM_K_JSON, ESM_K_TEXT,
    ESM_K_BINARY
} esm_kind_t;

typedef struct {
    int decimal_number;   /* DECIMAL as a JSON number (else a string) */
    char tz[8];           /* "+00:00": appended to DATETIME and TIMESTAMP */
} esm_map_opts_t;

/* Appends the JSON of one value (v, len; v NULL for SQL NULL). 0, or -1 with
 * the reason in why (the row cannot be mapped). */
int esm_value_json(esm_buf_t *out, esm_kind_t kind, const char *v, size_t len,
                   const esm_map_opts_t *opts, char *why, size_t why_size);
/* Appends s as a JSON string (esbulk__json_string); -1 when s is not
 * valid UTF-8 (then nothing is appended), or for want of memory. */
int esm_json_string(esm_buf_t *out, const char *s, size_t len);
/* Appends a dead-letter line (esbulk-mysql(1), --dead-letter) and its "\n":
 * every key always there; status null when <= 0 (the document was not
 * sent); table, index, id, error_type null when NULL; doc the body itself
 * when it is one valid JSON object, else its text as a string, null when
 * there is none. Strings not valid UTF-8 get U+FFFD for the bad bytes. -1
 * for want of memory. */
int esm_dead_letter_line(esm_buf_t *out, const char *phase, const char *table,
                         const char *index, const char *id, const char *reason, int32_t status,
                         const char *error_type, const char *body, size_t body_len);
/* --poll-column: the external version of a DATETIME/TIMESTAMP value (text,
 * "YYYY-MM-DD HH:MM:SS[.ffffff]"): microseconds since 1970-01-01 (0 for
 * NULL, a zero date, or a time before 1970). */
int64_t esm_poll_version(const char *v, size_t len);

/* rules.c: what a document's result means for its row. */
typedef enum {
    ESM_RESULT_DONE,        /* indexed (or deleted, or not there to delete) */
    ESM_RESULT_SUPERSEDED,  /* 409: the index holds a newer version of the row */
    ESM_RESULT_REFUSED,     /* the cluster refuses the document itself (mapping,
                               too large...): dead-lettered, or the job stops */
    ESM_RESULT_UNAVAILABLE  /* the cluster did not take it (unreachable, overloaded,
                               possibly indexed, its index missing, closed or
                               blocked): the job stops, and the next run sends it */
} esm_result_class_t;
esm_result_class_t esm_result_class(esbulk_outcome_t outcome, esbulk_err_t err, int32_t status,
                                    const char *error_type);
/* rules.c: 1 when statement s[0..n) of the binary log (a QUERY event) is an
 * INSERT, REPLACE, UPDATE, DELETE or LOAD: a change logged as a statement,
 * whose rows are not in the binlog (binlog_format is not ROW for it). */
int esm_stmt_is_dml(const char *s, size_t n);
/* rules.c: 1 when statement s[0..n) names table db.name: as db.name (either
 * part in backquotes or not), or as name alone when the event's default
 * database evdb[0..evdb_len) is db; names are compared without regard to
 * case, and words in strings and comments are not names. */
int esm_stmt_names(const char *s, size_t n, const char *evdb, size_t evdb_len, const char *db,
                   const char *name);

/* rules.c: 1 when statement s[0..n) (a QUERY event of the binary log,
 * whose default database is evdb[0..evdb_len)) removes or replaces rows of
 * table db.name with no row events: TRUNCATE, DROP TABLE or DROP DATABASE
 * of it, RENAME TABLE from or to its name, CREATE OR REPLACE TABLE of it,
 * ALTER TABLE of it with DROP, TRUNCATE or EXCHANGE PARTITION. Names are
 * found as esm_stmt_names finds them. */
int esm_stmt_removes_rows(const char *s, size_t n, const char *evdb, size_t evdb_len,
                          const char *db, const char *name);

/* rules.c: the 1-based position of value among the members of an ENUM
 * column's type as information_schema gives it ("enum('a','b''c')"), 0 if
 * it is none of them. A keyset page's bound on an ENUM key is written as
 * that number: ORDER BY sorts an ENUM by it, where a comparison with a
 * string compares the strings, and the pages would skip rows. */
int esm_enum_index(const char *column_type, const char *value);

/* The configuration file. */
typedef struct {
    char *column;  /* in the table */
    char *field;   /* in the document */
} esm_colmap_t;

typedef struct {
    char *db, *table, *index;
    esm_colmap_t *columns; /* NULL: every column under its own name */
    int ncolumns;
    char **id;             /* NULL: the primary key */
    int nid;
    int line;
} esm_table_conf_t;

typedef struct {
    esm_table_conf_t *tables;
    int ntables;
} esm_config_t;

int esm_config_load(esm_config_t *cfg, const char *path, const char *default_db, char *err,
                    size_t err_size);
void esm_config_free(esm_config_t *cfg);

#endif
