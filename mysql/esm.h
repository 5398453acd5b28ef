/*
 * esbulk-mysql: shared declarations of its modules.
 *   config.c   the configuration file (tables, indices, columns, id columns)
 *   rowjson.c  MySQL/MariaDB text-protocol values to JSON (the type mapping)
 *   binlog.c   following the binary log (MariaDB Connector/C replication API)
 *   poll.c     --poll-column: polling (column, key) instead of the binlog
 *   import.c   --import-mode, --create-index, --forcemerge (index requests)
 *   esbulk_mysql.c  options, the snapshot, results and checkpoints
 */
#ifndef ESM_H
#define ESM_H

#include <stddef.h>
#include <stdint.h>

/* A growable byte buffer. */
typedef struct {
    char *p;
    size_t len, cap;
} esm_buf_t;
int esm_buf_reserve(esm_buf_t *b, size_t more);
int esm_buf_add(esm_buf_t *b, const void *data, size_t len);
int esm_buf_adds(esm_buf_t *b, const char *s);
int esm_buf_addc(esm_buf_t *b, char c);
void esm_buf_free(esm_buf_t *b);

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
/* Appends s as a JSON string; -1 when s is not valid UTF-8. */
int esm_json_string(esm_buf_t *out, const char *s, size_t len);
/* 1 when s[0..len) is valid UTF-8. */
int esm_utf8_valid(const char *s, size_t len);
/* --poll-column: the external version of a DATETIME/TIMESTAMP value (text,
 * "YYYY-MM-DD HH:MM:SS[.ffffff]"): microseconds since 1970-01-01 (0 for
 * NULL, a zero date, or a time before 1970). */
int64_t esm_poll_version(const char *v, size_t len);

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
