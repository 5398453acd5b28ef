/*
 * esbulk-mysql: a table's schema: its columns, their kinds and its key read
 * from information_schema, the checks made at start (binlog_format, the
 * table's layout), and a row mapped to its document.
 */
#define _GNU_SOURCE 1
#include "job.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------------
 * Tables: columns, kinds, keys (information_schema).
 */
static esm_kind_t kind_of(const char *data_type, const char *column_type, int is_json)
{
    if (is_json || !strcmp(data_type, "json"))
        return ESM_K_JSON;
    if (!strcmp(data_type, "tinyint"))
        return !strncmp(column_type, "tinyint(1)", 10) ? ESM_K_BOOL : ESM_K_INT;
    static const char *ints[] = {"smallint", "mediumint", "int", "bigint", NULL};
    for (int i = 0; ints[i]; i++)
        if (!strcmp(data_type, ints[i]))
            return ESM_K_INT;
    if (!strcmp(data_type, "float") || !strcmp(data_type, "double") || !strcmp(data_type, "real"))
        return ESM_K_FLOAT;
    if (!strcmp(data_type, "decimal") || !strcmp(data_type, "numeric"))
        return ESM_K_DECIMAL;
    if (!strcmp(data_type, "date"))
        return ESM_K_DATE;
    if (!strcmp(data_type, "datetime") || !strcmp(data_type, "timestamp"))
        return ESM_K_DATETIME;
    if (!strcmp(data_type, "time"))
        return ESM_K_TIME;
    if (!strcmp(data_type, "year"))
        return ESM_K_YEAR;
    if (!strcmp(data_type, "bit"))
        return ESM_K_BIT;
    if (!strcmp(data_type, "enum"))
        return ESM_K_ENUM;
    if (!strcmp(data_type, "set"))
        return ESM_K_SET;
    static const char *bins[] = {"binary", "varbinary", "tinyblob", "blob", "mediumblob",
                                 "longblob", "geometry", "point", "linestring", "polygon",
                                 "multipoint", "multilinestring", "multipolygon",
                                 "geometrycollection", NULL};
    for (int i = 0; bins[i]; i++)
        if (!strcmp(data_type, bins[i]))
            return ESM_K_BINARY;
    return ESM_K_TEXT;
}

char esm_layout_letter(const char *data_type)
{
    static const char *const map[][2] = {
        {"tinyint", "1"}, {"smallint", "2"}, {"mediumint", "3"}, {"int", "4"},
        {"bigint", "8"}, {"float", "f"}, {"double", "d"}, {"real", "d"}, {"decimal", "n"},
        {"numeric", "n"}, {"date", "D"}, {"datetime", "T"}, {"timestamp", "S"},
        {"time", "t"}, {"year", "y"}, {"bit", "b"}, {"varchar", "v"}, {"varbinary", "v"},
        {"char", "c"}, {"binary", "c"}, {"enum", "c"}, {"set", "c"}, {"tinyblob", "B"},
        {"blob", "B"}, {"mediumblob", "B"}, {"longblob", "B"}, {"tinytext", "B"},
        {"text", "B"}, {"mediumtext", "B"}, {"longtext", "B"}, {"json", "B"}};
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (!strcmp(data_type, map[i][0]))
            return map[i][1][0];
    return '?';
}

void esm_quote_ident(esm_buf_t *b, const char *name)
{
    esm_buf_addc(b, '`');
    for (const char *p = name; *p; p++) {
        if (*p == '`')
            esm_buf_addc(b, '`');
        esm_buf_addc(b, *p);
    }
    esm_buf_addc(b, '`');
}

static void quote_ident(esm_buf_t *b, const char *name)
{
    esm_quote_ident(b, name);
}

/* 0 when the server logs changes as rows (binlog_format=ROW); else -1,
 * said: a change logged as a statement has no rows in the binlog, and the
 * job, which follows rows, would miss it without a word. The binlog shows
 * a session's own format too (esm_binlog_follow stops at such a change). */
int esm_binlog_format_row(esm_job_t *job)
{
    MYSQL_RES *res = esm_query_res(job, "SELECT @@GLOBAL.binlog_format");
    if (!res)
        return -1;
    MYSQL_ROW row = mysql_fetch_row(res);
    int ok = row && row[0] && !strcasecmp(row[0], "ROW");
    if (!ok)
        esm_log("the server logs changes as statements (binlog_format=%s), whose rows are not "
                "in the binary log: this job would miss them; set binlog_format=ROW (in the "
                "server's configuration, and SET GLOBAL binlog_format=ROW), or use "
                "--snapshot-only or --poll-column",
                row && row[0] ? row[0] : "unknown");
    mysql_free_result(res);
    return ok ? 0 : -2;
}

typedef struct {
    char *name, *data_type, *column_type, *charset; /* charset NULL: not text */
    int ordinal, nullable, is_signed;
} colinfo_t;

/* 1 when a key column's value in the binlog's row images is the text the
 * snapshot reads, so that a change found there gives the snapshot's _id:
 * integers and binary strings, and text of CHAR, VARCHAR and TEXT types in
 * UTF-8 or ASCII. Not text in another character set (latin1's "\xe9" is
 * the snapshot's UTF-8 "\xc3\xa9"), nor types that are text only when
 * read (MariaDB's UUID and INET6 are raw bytes in the binlog). */
static int binlog_key_as_read(esm_kind_t kind, const colinfo_t *c)
{
    static const char *const texts[] = {"char", "varchar", "tinytext", "text", "mediumtext",
                                        "longtext", NULL};
    if (kind == ESM_K_INT || kind == ESM_K_BINARY)
        return 1;
    if (kind != ESM_K_TEXT || !c->charset)
        return 0;
    int text = 0;
    for (int i = 0; texts[i]; i++)
        text |= !strcmp(c->data_type, texts[i]);
    return text && (!strcasecmp(c->charset, "utf8mb4") || !strcasecmp(c->charset, "utf8mb3") ||
                    !strcasecmp(c->charset, "utf8") || !strcasecmp(c->charset, "ascii"));
}

int esm_table_describe(esm_job_t *job, esm_table_conf_t *tc, esm_table_t *t)
{
    int rc = ESM_EXIT_FAILED; /* ESM_EXIT_USAGE where the configuration does not fit */
    colinfo_t *ci = NULL;
    int nci = 0;
    char **pk = NULL;
    int npk = 0;
    esm_buf_t q = {0}, where = {0};
    MYSQL_RES *res = NULL;
    MYSQL_ROW row;

    t->db = strdup(tc->db);
    t->name = strdup(tc->table);
    t->index = strdup(tc->index);
    esm_buf_t b = {0};
    quote_ident(&b, tc->db);
    esm_buf_addc(&b, '.');
    quote_ident(&b, tc->table);
    t->qname = b.data;
    if (asprintf(&t->fullname, "%s.%s", tc->db, tc->table) < 0)
        goto out;

    esm_buf_adds(&where, " WHERE TABLE_SCHEMA=");
    esm_quote_string(job, &where, tc->db);
    esm_buf_adds(&where, " AND TABLE_NAME=");
    esm_quote_string(job, &where, tc->table);

    /* engine and size estimate */
    esm_buf_adds(&q, "SELECT ENGINE, TABLE_ROWS FROM information_schema.TABLES");
    esm_buf_adds(&q, where.data);
    if (!(res = esm_query_res(job, q.data)))
        goto out;
    row = mysql_fetch_row(res);
    if (!row) {
        esm_log("table %s does not exist", t->fullname);
        rc = ESM_EXIT_USAGE;
        goto out;
    }
    if (!row[0] || strcasecmp(row[0], "InnoDB")) {
        esm_log("table %s: engine %s: a consistent snapshot needs InnoDB", t->fullname,
                row[0] ? row[0] : "(view)");
        rc = ESM_EXIT_USAGE;
        goto out;
    }
    t->approx_rows = row[1] ? strtoull(row[1], NULL, 10) : 0;
    mysql_free_result(res);
    res = NULL;

    /* JSON columns of MariaDB are LONGTEXT with CHECK (json_valid(`c`)) */
    q.len = 0;
    esm_buf_adds(&q, "SELECT CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS WHERE "
                     "CONSTRAINT_SCHEMA=");
    esm_quote_string(job, &q, tc->db);
    esm_buf_adds(&q, " AND TABLE_NAME=");
    esm_quote_string(job, &q, tc->table);
    if (!(res = esm_query_res(job, q.data)))
        goto out;
    esm_buf_t checks = {0};
    esm_buf_adds(&checks, "\n");
    while ((row = mysql_fetch_row(res)))
        if (row[0]) {
            esm_buf_adds(&checks, row[0]);
            esm_buf_adds(&checks, "\n");
        }
    mysql_free_result(res);
    res = NULL;

    q.len = 0;
    esm_buf_adds(&q, "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, ORDINAL_POSITION, IS_NULLABLE, "
                     "CHARACTER_SET_NAME FROM information_schema.COLUMNS");
    esm_buf_adds(&q, where.data);
    esm_buf_adds(&q, " ORDER BY ORDINAL_POSITION");
    if (!(res = esm_query_res(job, q.data))) {
        esm_buf_free(&checks);
        goto out;
    }
    nci = (int)mysql_num_rows(res);
    ci = calloc((size_t)nci + 1, sizeof(*ci));
    for (int i = 0; (row = mysql_fetch_row(res)); i++) {
        ci[i].name = strdup(row[0]);
        ci[i].data_type = strdup(row[1]);
        ci[i].column_type = strdup(row[2]);
        ci[i].ordinal = atoi(row[3]) - 1;
        ci[i].nullable = !strcmp(row[4], "YES");
        ci[i].is_signed = !strstr(row[2], "unsigned");
        ci[i].charset = row[5] ? strdup(row[5]) : NULL;
    }
    mysql_free_result(res);
    res = NULL;

    /* the key: the configured id columns (a unique key of NOT NULL columns,
     * in its order), else the primary key */
    q.len = 0;
    esm_buf_adds(&q, "SELECT INDEX_NAME, COLUMN_NAME FROM information_schema.STATISTICS");
    esm_buf_adds(&q, where.data);
    esm_buf_adds(&q, " AND NON_UNIQUE=0 ORDER BY INDEX_NAME='PRIMARY' DESC, INDEX_NAME, "
                     "SEQ_IN_INDEX");
    if (!(res = esm_query_res(job, q.data))) {
        esm_buf_free(&checks);
        goto out;
    }
    {
        /* group by index; pick the primary key or the index equal to tc->id */
        char *cur = NULL;
        char **cols = NULL;
        int ncols = 0, found = 0;
        for (;;) {
            row = mysql_fetch_row(res);
            if (!row || (cur && strcmp(cur, row[0]))) {
                if (cur && !found) {
                    int match;
                    if (tc->nid) {
                        match = ncols == tc->nid;
                        for (int i = 0; match && i < ncols; i++)
                            match = !strcmp(cols[i], tc->id[i]);
                    } else {
                        match = !strcmp(cur, "PRIMARY");
                    }
                    if (match) {
                        pk = cols;
                        npk = ncols;
                        cols = NULL;
                        found = 1;
                    }
                }
                for (int i = 0; cols && i < ncols; i++)
                    free(cols[i]);
                free(cols);
                cols = NULL;
                ncols = 0;
                free(cur);
                cur = NULL;
                if (!row)
                    break;
            }
            if (!cur)
                cur = strdup(row[0]);
            cols = realloc(cols, sizeof(char *) * (size_t)(ncols + 1));
            cols[ncols++] = strdup(row[1]);
        }
        mysql_free_result(res);
        res = NULL;
        if (!found) {
            if (tc->nid)
                esm_log("table %s: the id columns are not a unique key in that order",
                        t->fullname);
            else
                esm_log("table %s has no primary key: give the id columns (a unique key)",
                        t->fullname);
            esm_buf_free(&checks);
            rc = ESM_EXIT_USAGE;
            goto out;
        }
    }

    /* output columns */
    int nout = tc->ncolumns ? tc->ncolumns : nci;
    t->cols = calloc((size_t)nout + 1, sizeof(*t->cols));
    t->ncols = nout;
    for (int i = 0; i < nout; i++) {
        const char *cname = tc->ncolumns ? tc->columns[i].column : ci[i].name;
        colinfo_t *c = NULL;
        for (int j = 0; j < nci; j++)
            if (!strcmp(ci[j].name, cname))
                c = &ci[j];
        if (!c) {
            esm_log("table %s has no column %s", t->fullname, cname);
            esm_buf_free(&checks);
            rc = ESM_EXIT_USAGE;
            goto out;
        }
        char pat[512];
        snprintf(pat, sizeof(pat), "json_valid(`%s`)", c->name);
        t->cols[i].name = strdup(c->name);
        t->cols[i].sqltype = strdup(c->column_type);
        t->cols[i].field = strdup(tc->ncolumns ? tc->columns[i].field : c->name);
        t->cols[i].kind = kind_of(c->data_type, c->column_type, strstr(checks.data, pat) != NULL);
        t->cols[i].ordinal = c->ordinal;
        t->cols[i].is_signed = c->is_signed;
    }
    t->keys = calloc((size_t)npk, sizeof(*t->keys));
    t->nkeys = npk;
    for (int i = 0; i < npk; i++) {
        colinfo_t *c = NULL;
        for (int j = 0; j < nci; j++)
            if (!strcmp(ci[j].name, pk[i]))
                c = &ci[j];
        if (!c || c->nullable) {
            esm_log("table %s: key column %s is nullable", t->fullname, pk[i]);
            esm_buf_free(&checks);
            rc = ESM_EXIT_USAGE;
            goto out;
        }
        t->keys[i].name = strdup(c->name);
        t->keys[i].field = strdup(c->name);
        t->keys[i].sqltype = strdup(c->column_type);
        t->keys[i].kind = kind_of(c->data_type, c->column_type, 0);
        t->keys[i].ordinal = c->ordinal;
        t->keys[i].is_signed = c->is_signed;
        t->keys[i].binlog_as_read = binlog_key_as_read(t->keys[i].kind, c);
        if (t->keys[i].kind == ESM_K_JSON || t->keys[i].kind == ESM_K_SET) {
            esm_log("table %s: key column %s has a type that cannot be a key here",
                    t->fullname, pk[i]);
            esm_buf_free(&checks);
            rc = ESM_EXIT_USAGE;
            goto out;
        }
    }
    esm_buf_free(&checks);
    esm_buf_t sl = {0};
    for (int i = 0; i < t->ncols; i++) {
        if (i)
            esm_buf_addc(&sl, ',');
        quote_ident(&sl, t->cols[i].name);
    }
    for (int i = 0; i < t->nkeys; i++) {
        esm_buf_addc(&sl, ',');
        quote_ident(&sl, t->keys[i].name);
    }
    if (job->poll_column) {
        /* --poll-column: last in every row read (the document's version) */
        colinfo_t *c = NULL;
        for (int j = 0; j < nci; j++)
            if (!strcmp(ci[j].name, job->poll_column))
                c = &ci[j];
        esm_kind_t k = c ? kind_of(c->data_type, c->column_type, 0) : ESM_K_TEXT;
        if (!c || k != ESM_K_DATETIME) {
            esm_log("table %s: %s: --poll-column needs a DATETIME or TIMESTAMP column of the "
                    "table", t->fullname, c ? "not a DATETIME or TIMESTAMP" : "no such column");
            esm_buf_free(&sl);
            rc = ESM_EXIT_USAGE;
            goto out;
        }
        esm_buf_addc(&sl, ',');
        quote_ident(&sl, c->name);
    }
    t->select_list = sl.data;
    if ((t->layout = calloc((size_t)nci + 1, 1)) == NULL) {
        esm_log("%s: out of memory", t->fullname);
        goto out;
    }
    for (int i = 0; i < nci; i++)
        t->layout[i] = esm_layout_letter(ci[i].data_type);
    rc = 0;
out:
    if (res)
        mysql_free_result(res);
    for (int i = 0; i < nci; i++) {
        free(ci[i].name);
        free(ci[i].data_type);
        free(ci[i].column_type);
        free(ci[i].charset);
    }
    free(ci);
    for (int i = 0; i < npk; i++)
        free(pk[i]);
    free(pk);
    esm_buf_free(&q);
    esm_buf_free(&where);
    return rc;
}

/* Frees what esm_table_describe made of t. */
void esm_table_free_described(esm_table_t *t)
{
    free(t->db);
    free(t->name);
    free(t->index);
    free(t->qname);
    free(t->fullname);
    free(t->select_list);
    free(t->layout);
    for (int j = 0; j < t->ncols; j++) {
        free(t->cols[j].name);
        free(t->cols[j].field);
        free(t->cols[j].sqltype);
    }
    for (int j = 0; j < t->nkeys; j++) {
        free(t->keys[j].name);
        free(t->keys[j].field);
        free(t->keys[j].sqltype);
    }
    free(t->cols);
    free(t->keys);
}

int esm_table_refresh(esm_job_t *job, esm_table_t *t)
{
    esm_table_conf_t *tc = NULL;
    for (int i = 0; i < job->cfg.ntables; i++)
        if (!strcmp(job->cfg.tables[i].db, t->db) && !strcmp(job->cfg.tables[i].table, t->name))
            tc = &job->cfg.tables[i];
    if (!tc)
        return -1;
    esm_table_t nt;
    memset(&nt, 0, sizeof(nt));
    if (esm_table_describe(job, tc, &nt)) {
        esm_table_free_described(&nt);
        return -1;
    }
    int same_key = nt.nkeys == t->nkeys;
    for (int k = 0; same_key && k < t->nkeys; k++)
        same_key = !strcmp(nt.keys[k].name, t->keys[k].name) && nt.keys[k].kind == t->keys[k].kind;
    if (!same_key) {
        esm_log("table %s: its key changed: the documents' _id would change; delete the index "
                "and run with --resnapshot", t->fullname);
        esm_table_free_described(&nt);
        return -1;
    }
    /* the new description in place of the old (same names, so same strings) */
    esm_table_t old = *t;
    t->qname = nt.qname;
    t->db = nt.db;
    t->name = nt.name;
    t->index = nt.index;
    t->fullname = nt.fullname;
    t->cols = nt.cols;
    t->ncols = nt.ncols;
    t->keys = nt.keys;
    t->nkeys = nt.nkeys;
    t->select_list = nt.select_list;
    t->layout = nt.layout;
    esm_table_free_described(&old);
    return 0;
}

int esm_row_json(esm_job_t *job, esm_table_t *t, MYSQL_ROW row, unsigned long *lens,
                 esm_buf_t *out, char *why, size_t why_size)
{
    out->len = 0;
    esm_buf_addc(out, '{');
    for (int i = 0; i < t->ncols; i++) {
        if (i)
            esm_buf_addc(out, ',');
        esm_json_string(out, t->cols[i].field, strlen(t->cols[i].field));
        esm_buf_addc(out, ':');
        char w[200];
        if (esm_value_json(out, t->cols[i].kind, row[i], row[i] ? lens[i] : 0, &job->map, w,
                           sizeof(w))) {
            snprintf(why, why_size, "column %s: %s", t->cols[i].name, w);
            return -1;
        }
    }
    return esm_buf_addc(out, '}');
}

