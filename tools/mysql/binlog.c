/*
 * Following the binary log (ROW format) with MariaDB Connector/C's
 * replication API: mariadb_rpl_open() / mariadb_rpl_fetch(), TABLE_MAP and
 * WRITE/UPDATE/DELETE_ROWS events. Row images are decoded here, as far as
 * value sizes and the key columns go: mariadb_rpl_extract_rows() of the
 * Connector/C 3.3.20 in Debian 12 failed on the row events of the tests'
 * mixed-type table ("Malformed row data packet stream"), and only the key
 * is needed here.
 *
 * Of each changed row only the key is taken from the event (both images of
 * an update: a key change is then a delete of the old _id and an index of
 * the new one). At each transaction boundary the keys gathered so far are
 * re-read from the table in one locking read per table (LOCK IN SHARE MODE
 * waits for a transaction still committing, so the read sees it) and
 * become index operations, or deletes for keys no longer there. Each carries
 * the external version of its event's binlog position (file number << 32 |
 * end offset, version_type external_gte): a replay after a restart, or a
 * retry, can never overwrite a document written for a later event, and a
 * document the snapshot wrote (versioned with the snapshot's position) is
 * replaced only by events after it. The document is always the row's
 * current content, so the index converges to the table once the follower
 * has read up to the server's position.
 *
 * The position is saved only when every earlier batch's documents have
 * results (job.c, advance()).
 */
#define _GNU_SOURCE 1
#include "job.h"

#include <inttypes.h>
#include <mariadb_rpl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FLUSH_KEYS 2000          /* keys gathered before a re-read (or --binlog-batch-ms) */
#define IN_CHUNK 500             /* keys per IN (...) list */
#define LAG_RING 100000

int esm_binlog_exists(esm_job_t *job, const char *file)
{
    if (esm_query(job, job->db, "SHOW BINARY LOGS"))
        return -1;
    MYSQL_RES *res = mysql_store_result(job->db);
    if (!res)
        return -1;
    MYSQL_ROW row;
    int found = 0;
    while ((row = mysql_fetch_row(res)))
        if (row[0] && !strcmp(row[0], file))
            found = 1;
    mysql_free_result(res);
    return found;
}

static void add_pending(esm_table_t *t, json_t *key, int64_t version)
{
    if (t->npend == t->cap_pend) {
        size_t cap = t->cap_pend ? t->cap_pend * 2 : 256;
        t->pend = realloc(t->pend, cap * sizeof(*t->pend));
        t->cap_pend = cap;
    }
    t->pend[t->npend].key = key;
    t->pend[t->npend].version = version;
    t->npend++;
}

static int key_kind_supported(esm_kind_t k)
{
    return k == ESM_K_INT || k == ESM_K_TEXT || k == ESM_K_BINARY;
}

/* ---- the row image (only as far as sizes and key values go) ----------
 * A row image is a bitmap of NULLs over the columns present, then the
 * present, non-NULL values in column order. A value's size follows from its
 * binlog type and the TABLE_MAP metadata of the column. */
enum {
    BT_DECIMAL = 0, BT_TINY = 1, BT_SHORT = 2, BT_LONG = 3, BT_FLOAT = 4, BT_DOUBLE = 5,
    BT_NULL = 6, BT_TIMESTAMP = 7, BT_LONGLONG = 8, BT_INT24 = 9, BT_DATE = 10, BT_TIME = 11,
    BT_DATETIME = 12, BT_YEAR = 13, BT_NEWDATE = 14, BT_VARCHAR = 15, BT_BIT = 16,
    BT_TIMESTAMP2 = 17, BT_DATETIME2 = 18, BT_TIME2 = 19, BT_JSON = 245, BT_NEWDECIMAL = 246,
    BT_ENUM = 247, BT_SET = 248, BT_TINY_BLOB = 249, BT_MEDIUM_BLOB = 250, BT_LONG_BLOB = 251,
    BT_BLOB = 252, BT_VAR_STRING = 253, BT_STRING = 254, BT_GEOMETRY = 255
};

typedef struct {
    uint32_t ncols;
    const unsigned char *types;
    uint16_t *meta;      /* per column, decoded */
} colmeta_t;

static int meta_bytes(unsigned type)
{
    switch (type) {
    case BT_FLOAT: case BT_DOUBLE: case BT_BLOB: case BT_GEOMETRY: case BT_JSON:
    case BT_TIMESTAMP2: case BT_DATETIME2: case BT_TIME2: case BT_TINY_BLOB:
    case BT_MEDIUM_BLOB: case BT_LONG_BLOB:
        return 1;
    case BT_VARCHAR: case BT_VAR_STRING: case BT_BIT: case BT_NEWDECIMAL: case BT_STRING:
    case BT_ENUM: case BT_SET: case BT_DECIMAL:
        return 2;
    default:
        return 0;
    }
}

static int decode_meta(const struct st_mariadb_rpl_table_map_event *tm, colmeta_t *cm)
{
    cm->ncols = tm->column_count;
    cm->types = (const unsigned char *)tm->column_types.str;
    cm->meta = calloc(cm->ncols + 1, sizeof(uint16_t));
    const unsigned char *m = (const unsigned char *)tm->metadata.str;
    size_t off = 0, len = tm->metadata.length;
    for (uint32_t i = 0; i < cm->ncols; i++) {
        unsigned t = cm->types[i];
        int nb = meta_bytes(t);
        if (off + (size_t)nb > len)
            return -1;
        if (nb == 1)
            cm->meta[i] = m[off];
        else if (nb == 2) {
            /* VARCHAR: little-endian length; the others: two bytes in order */
            if (t == BT_VARCHAR || t == BT_VAR_STRING)
                cm->meta[i] = (uint16_t)(m[off] | m[off + 1] << 8);
            else
                cm->meta[i] = (uint16_t)(m[off] << 8 | m[off + 1]);
        }
        off += (size_t)nb;
    }
    return 0;
}

static size_t decimal_size(unsigned precision, unsigned scale)
{
    static const unsigned char dig2bytes[10] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 4};
    unsigned intg = precision - scale;
    return (intg / 9) * 4 + dig2bytes[intg % 9] + (scale / 9) * 4 + dig2bytes[scale % 9];
}

static uint64_t le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* A CHAR/BINARY column's (BT_STRING) maximum length in bytes, and its real
 * type (ENUM and SET are logged as BT_STRING too). */
static unsigned string_maxlen(unsigned meta, unsigned *real)
{
    unsigned b0 = meta >> 8, b1 = meta & 0xFF, maxlen = b1;
    *real = b0;
    if ((b0 & 0x30) != 0x30) {
        maxlen = b1 | (((b0 & 0x30) ^ 0x30) << 4);
        *real = b0 | 0x30;
    }
    return maxlen;
}

/* The size of the value at p (at most avail bytes); -1 when unknown. For
 * strings, *data and *dlen get the bytes without their length prefix. */
static long value_size(const colmeta_t *cm, uint32_t col, const unsigned char *p, size_t avail,
                       const unsigned char **data, size_t *dlen)
{
    unsigned t = cm->types[col], meta = cm->meta[col];
    long n = -1;
    *data = p;
    switch (t) {
    case BT_TINY: case BT_YEAR: n = 1; break;
    case BT_SHORT: n = 2; break;
    case BT_INT24: case BT_DATE: case BT_TIME: case BT_NEWDATE: n = 3; break;
    case BT_LONG: case BT_TIMESTAMP: n = 4; break;
    case BT_LONGLONG: case BT_DATETIME: n = 8; break;
    case BT_FLOAT: n = 4; break;
    case BT_DOUBLE: n = 8; break;
    case BT_NULL: n = 0; break;
    case BT_TIMESTAMP2: n = 4 + (long)(meta + 1) / 2; break;
    case BT_DATETIME2: n = 5 + (long)(meta + 1) / 2; break;
    case BT_TIME2: n = 3 + (long)(meta + 1) / 2; break;
    case BT_NEWDECIMAL: n = (long)decimal_size(meta >> 8, meta & 0xFF); break;
    case BT_BIT: n = (long)((meta & 0xFF) + ((meta >> 8) ? 1 : 0)); break;
    case BT_ENUM: case BT_SET: n = meta & 0xFF; break;
    case BT_VARCHAR: case BT_VAR_STRING: {
        int pre = meta < 256 ? 1 : 2;
        if ((size_t)pre > avail)
            return -1;
        *dlen = (size_t)le(p, pre);
        *data = p + pre;
        n = pre + (long)*dlen;
        break;
    }
    case BT_BLOB: case BT_GEOMETRY: case BT_JSON: case BT_TINY_BLOB: case BT_MEDIUM_BLOB:
    case BT_LONG_BLOB: {
        int pre = (int)meta;
        if (pre < 1 || pre > 4 || (size_t)pre > avail)
            return -1;
        *dlen = (size_t)le(p, pre);
        *data = p + pre;
        n = pre + (long)*dlen;
        break;
    }
    case BT_STRING: {
        unsigned real, maxlen = string_maxlen(meta, &real);
        if (real == BT_ENUM || real == BT_SET) {
            unsigned b1 = meta & 0xFF;
            n = (long)b1;
        } else {
            int pre = maxlen < 256 ? 1 : 2;
            if ((size_t)pre > avail)
                return -1;
            *dlen = (size_t)le(p, pre);
            *data = p + pre;
            n = pre + (long)*dlen;
        }
        break;
    }
    default:
        return -1;
    }
    if (n < 0 || (size_t)n > avail)
        return -1;
    if (t != BT_VARCHAR && t != BT_VAR_STRING && t != BT_STRING && t != BT_BLOB &&
        t != BT_GEOMETRY && t != BT_JSON && t != BT_TINY_BLOB && t != BT_MEDIUM_BLOB &&
        t != BT_LONG_BLOB)
        *dlen = (size_t)n;
    return n;
}

/* The key component of a row image value, as the text protocol prints it
 * (so that the _id is the snapshot's). */
static int key_text(const esm_col_t *kc, unsigned type, unsigned meta, const unsigned char *d,
                    size_t dlen, esm_buf_t *out)
{
    char tmp[32];
    out->len = 0;
    esm_buf_reserve(out, 1);
    out->data[0] = '\0';
    if (kc->kind == ESM_K_INT) {
        int n;
        switch (type) {
        case BT_TINY: n = 1; break;
        case BT_SHORT: n = 2; break;
        case BT_INT24: n = 3; break;
        case BT_LONG: n = 4; break;
        case BT_LONGLONG: n = 8; break;
        default: return -1;
        }
        uint64_t u = le(d, n);
        if (kc->is_signed) {
            int64_t v = n == 8 ? (int64_t)u : (int64_t)(u ^ (1ULL << (n * 8 - 1))) - (int64_t)(1ULL << (n * 8 - 1));
            snprintf(tmp, sizeof(tmp), "%" PRId64, v);
        } else {
            snprintf(tmp, sizeof(tmp), "%" PRIu64, u);
        }
        return esm_buf_adds(out, tmp);
    }
    if (kc->kind == ESM_K_BINARY) {
        static const char hex[] = "0123456789abcdef";
        for (size_t i = 0; i < dlen; i++) {
            esm_buf_addc(out, hex[d[i] >> 4]);
            esm_buf_addc(out, hex[d[i] & 15]);
        }
        if (type == BT_STRING) {
            /* BINARY(n): the binlog leaves out the trailing 0x00 bytes that
             * the table (and so the snapshot's _id) has */
            unsigned real, maxlen = string_maxlen(meta, &real);
            for (size_t i = dlen; i < maxlen; i++)
                esm_buf_adds(out, "00");
        }
        return 0;
    }
    return esm_buf_add(out, d, dlen);
}

/* Decodes one image at p; appends the key (array of strings) of the row
 * to t's pending keys. Returns the bytes used, -1 on a malformed image. */
static long decode_image(esm_table_t *t, const colmeta_t *cm, const unsigned char *bitmap,
                         const unsigned char *p, size_t avail, int64_t version)
{
    uint32_t present = 0;
    for (uint32_t i = 0; i < cm->ncols; i++)
        present += (bitmap[i / 8] >> (i % 8)) & 1;
    size_t nb = (present + 7) / 8;
    if (nb > avail)
        return -1;
    const unsigned char *nulls = p;
    size_t off = nb;
    json_t *key = json_array();
    json_t *parts[64] = {0};
    int found = 0;
    esm_buf_t v = {0};
    uint32_t k = 0; /* index among present columns */
    for (uint32_t i = 0; i < cm->ncols; i++) {
        if (!((bitmap[i / 8] >> (i % 8)) & 1))
            continue;
        int is_null = (nulls[k / 8] >> (k % 8)) & 1;
        k++;
        if (is_null)
            continue;
        const unsigned char *d;
        size_t dlen = 0;
        long n = value_size(cm, i, p + off, avail - off, &d, &dlen);
        if (n < 0)
            goto bad;
        for (int j = 0; j < t->nkeys && j < 64; j++)
            if ((uint32_t)t->keys[j].ordinal == i) {
                if (key_text(&t->keys[j], cm->types[i], cm->meta[i], d, dlen, &v))
                    goto bad;
                parts[j] = json_stringn(v.data, v.len);
                found++;
            }
        off += (size_t)n;
    }
    if (found != t->nkeys)
        goto bad;
    for (int j = 0; j < t->nkeys; j++)
        json_array_append_new(key, parts[j]);
    add_pending(t, key, version);
    esm_buf_free(&v);
    return (long)off;
bad:
    for (int j = 0; j < 64; j++)
        json_decref(parts[j]);
    json_decref(key);
    esm_buf_free(&v);
    return -1;
}

typedef struct {
    uint64_t table_id;
    MARIADB_RPL_EVENT *ev; /* the TABLE_MAP event, owned */
    esm_table_t *table;    /* NULL: not configured */
    colmeta_t cm;
} tmap_t;

typedef struct {
    esm_job_t *job;
    MARIADB_RPL *rpl;
    tmap_t *maps;
    size_t nmaps;
    char *file;          /* current binlog file */
    char *bfile;         /* last transaction boundary */
    uint64_t bpos;
    uint64_t npend;      /* keys gathered, all tables */
    int64_t first_pend_ns;
    int64_t batch_event_ts; /* the oldest event timestamp of the batch (s) */
} follow_t;


typedef struct {
    char *id;
    json_t *key;
    int64_t version;
    int found;
} pk_t;

static int cmp_pk(const void *a, const void *b)
{
    return strcmp(((const pk_t *)a)->id, ((const pk_t *)b)->id);
}

/* Re-reads a table's gathered keys and adds their documents into unit. */
static int flush_table(esm_job_t *job, esm_table_t *t, esm_unit_t *unit)
{
    esm_buf_t id = {0}, q = {0}, body = {0};
    pk_t *pk = calloc(t->npend, sizeof(*pk));
    size_t n = 0;
    int rc = -1;
    for (size_t i = 0; i < t->npend; i++) {
        esm_key_id(t, t->pend[i].key, &id);
        pk[n].id = strdup(id.data);
        pk[n].key = t->pend[i].key;
        pk[n].version = t->pend[i].version;
        n++;
    }
    /* one entry per _id, with the newest version */
    qsort(pk, n, sizeof(*pk), cmp_pk);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && !strcmp(pk[m - 1].id, pk[i].id)) {
            if (pk[i].version > pk[m - 1].version)
                pk[m - 1].version = pk[i].version;
            free(pk[i].id);
            continue;
        }
        pk[m++] = pk[i];
    }
    int refreshed = 0;
    for (size_t start = 0; start < m; start += IN_CHUNK) {
        size_t end = start + IN_CHUNK < m ? start + IN_CHUNK : m;
    again:
        q.len = 0;
        esm_buf_adds(&q, "SELECT ");
        esm_buf_adds(&q, t->select_list);
        esm_buf_adds(&q, " FROM ");
        esm_buf_adds(&q, t->qname);
        esm_buf_adds(&q, " WHERE (");
        for (int k = 0; k < t->nkeys; k++) {
            if (k)
                esm_buf_addc(&q, ',');
            esm_buf_addc(&q, '`');
            esm_buf_adds(&q, t->keys[k].name);
            esm_buf_addc(&q, '`');
        }
        esm_buf_adds(&q, ") IN (");
        for (size_t i = start; i < end; i++) {
            if (i > start)
                esm_buf_addc(&q, ',');
            esm_buf_addc(&q, '(');
            for (int k = 0; k < t->nkeys; k++) {
                if (k)
                    esm_buf_addc(&q, ',');
                esm_key_literal(job, t, k, json_string_value(json_array_get(pk[i].key, (size_t)k)),
                                &q);
            }
            esm_buf_addc(&q, ')');
        }
        esm_buf_adds(&q, ") LOCK IN SHARE MODE");
        MYSQL_RES *res = NULL;
        for (int attempt = 0; attempt < 5; attempt++) {
            if (mysql_real_query(job->db, q.data, q.len) == 0 &&
                (res = mysql_store_result(job->db)))
                break;
            unsigned e = mysql_errno(job->db);
            if (e == 1054 && !refreshed) {
                /* unknown column: renamed or dropped by a DDL statement whose
                 * table map did not show it (same types) */
                refreshed = 1;
                if (esm_table_refresh(job, t))
                    goto out;
                if (!job->quiet)
                    esm_log("%s: its columns changed (now %d in the documents)", t->fullname,
                            t->ncols);
                goto again;
            }
            if (e != 1205 && e != 1213) { /* lock wait timeout, deadlock: again */
                esm_log("%s: re-reading changed rows: %s", t->fullname, mysql_error(job->db));
                goto out;
            }
        }
        if (!res)
            goto out;
        MYSQL_ROW row;
        while ((row = mysql_fetch_row(res))) {
            unsigned long *lens = mysql_fetch_lengths(res);
            json_t *key = esm_row_key(t, row, lens);
            esm_key_id(t, key, &id);
            json_decref(key);
            pk_t probe = {.id = id.data};
            pk_t *hit = bsearch(&probe, pk + start, end - start, sizeof(*pk), cmp_pk);
            if (!hit)
                continue; /* collation equal but not byte-equal: the next event fixes it */
            hit->found = 1;
            char why[300];
            if (esm_row_json(job, t, row, lens, &body, why, sizeof(why))) {
                esm_row_unmappable(job, unit, t, "binlog", id.data, why, NULL, 0);
                continue;
            }
            esm_add_doc(job, unit, t, id.data, id.len, body.data, body.len, hit->version);
        }
        mysql_free_result(res);
    }
    for (size_t i = 0; i < m; i++)
        if (!pk[i].found)
            esm_add_doc(job, unit, t, pk[i].id, strlen(pk[i].id), NULL, 0, pk[i].version);
    rc = 0;
out:
    for (size_t i = 0; i < m; i++)
        free(pk[i].id);
    free(pk);
    for (size_t i = 0; i < t->npend; i++)
        json_decref(t->pend[i].key);
    t->npend = 0;
    esm_buf_free(&id);
    esm_buf_free(&q);
    esm_buf_free(&body);
    return rc;
}

/* A binlog unit covering everything up to the last boundary. */
static int flush_batch(follow_t *F)
{
    esm_job_t *job = F->job;
    if (!F->bfile)
        return 0;
    esm_unit_t *u = calloc(1, sizeof(*u));
    u->file = strdup(F->bfile);
    u->pos = F->bpos;
    u->open = 1;
    u->read_ns = F->npend ? F->first_pend_ns : 0;
    if (job->btail)
        job->btail->next = u;
    else
        job->bhead = u;
    job->btail = u;
    int rc = 0;
    for (int i = 0; i < job->ntables && rc == 0; i++)
        if (job->tables[i].npend)
            rc = flush_table(job, &job->tables[i], u);
    u->open = 0;
    if (rc)
        u->blocked = 1; /* never saved past a batch that was not sent */
    /* Sent now: the batch was gathered for up to --binlog-batch-ms already;
     * left to the engine it would wait up to flush.interval.ms (1 s) for a
     * bulk request per node to fill, most of the lag at a steady rate.
     * Requests stay large when the cluster is slow: what is added while a
     * node's max.inflight.per.node requests are out goes in the next one. */
    if (F->npend)
        esbulk_flush(job->eb, 0); /* ESBULK_ERR_TIMED_OUT: not waited for, as meant */
    if (F->npend && F->batch_event_ts) {
        /* lag of this batch when read and re-read: now - the oldest event's
         * timestamp (whole seconds: an upper bound) */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t lag = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 - F->batch_event_ts * 1000;
        if (lag < 0)
            lag = 0;
        job->lag_ms = lag;
        if (!job->lags)
            job->lags = malloc(LAG_RING * sizeof(int64_t));
        job->lags[job->lag_next] = lag;
        job->lag_next = (job->lag_next + 1) % LAG_RING;
        if (job->nlags < LAG_RING)
            job->nlags++;
        job->lag_samples++;
    }
    F->npend = 0;
    F->first_pend_ns = 0;
    F->batch_event_ts = 0;
    return rc;
}

static tmap_t *find_map(follow_t *F, uint64_t table_id)
{
    for (size_t i = 0; i < F->nmaps; i++)
        if (F->maps[i].table_id == table_id)
            return &F->maps[i];
    return NULL;
}

/* The layout letter of a binlog column type (esm_layout_letter's). */
static char binlog_letter(unsigned type)
{
    switch (type) {
    case BT_TINY: return '1';
    case BT_SHORT: return '2';
    case BT_INT24: return '3';
    case BT_LONG: return '4';
    case BT_LONGLONG: return '8';
    case BT_FLOAT: return 'f';
    case BT_DOUBLE: return 'd';
    case BT_DECIMAL: case BT_NEWDECIMAL: return 'n';
    case BT_DATE: case BT_NEWDATE: return 'D';
    case BT_DATETIME: case BT_DATETIME2: return 'T';
    case BT_TIMESTAMP: case BT_TIMESTAMP2: return 'S';
    case BT_TIME: case BT_TIME2: return 't';
    case BT_YEAR: return 'y';
    case BT_BIT: return 'b';
    case BT_VARCHAR: case BT_VAR_STRING: return 'v';
    case BT_STRING: case BT_ENUM: case BT_SET: return 'c';
    case BT_BLOB: case BT_TINY_BLOB: case BT_MEDIUM_BLOB: case BT_LONG_BLOB: case BT_JSON:
    case BT_GEOMETRY: return 'B';
    default: return '?';
    }
}

/* 1 when the key of t can be taken from row images of the binlog layout bl:
 * the two layouts agree column by column as far as both go (the shorter one
 * is the table before an ADD COLUMN at the end, or after a DROP of the last
 * columns), and the key columns are within both. */
static int layout_fits(const esm_table_t *t, const char *bl)
{
    size_t nb = strlen(bl), nt = strlen(t->layout), n = nb < nt ? nb : nt;
    for (size_t i = 0; i < n; i++)
        if (bl[i] != t->layout[i] && bl[i] != '?' && t->layout[i] != '?')
            return 0;
    for (int k = 0; k < t->nkeys; k++)
        if ((size_t)t->keys[k].ordinal >= n)
            return 0;
    return 1;
}

/* A table map of a configured table: its columns must be the ones the key
 * ordinals were taken from. When they differ (a DDL statement: ALTER TABLE
 * ADD/DROP/MODIFY COLUMN), the table is described again (the new columns
 * are then in its documents); when they still differ, the row images are
 * of a layout the table no longer has (a DDL statement after this point of
 * the binlog): the key cannot be found in them, which is an error rather
 * than documents of wrong keys. 0, or -1. */
static int check_layout(follow_t *F, esm_table_t *t, const colmeta_t *cm, uint64_t pos)
{
    /* every transaction's table map comes here: no allocation unless the
     * layout changed (a table of up to 255 columns) */
    char small[256], *bl = cm->ncols < sizeof(small) ? small : malloc(cm->ncols + 1);
    if (bl == NULL) {
        esm_log("%s: out of memory", t->fullname);
        return -1;
    }
    for (uint32_t i = 0; i < cm->ncols; i++)
        bl[i] = binlog_letter(cm->types[i]);
    bl[cm->ncols] = '\0';
    if ((t->layout_ok && !strcmp(bl, t->layout_ok)) ||
        (strlen(bl) == strlen(t->layout) && layout_fits(t, bl))) {
        if (bl != small)
            free(bl);
        return 0;
    }
    if (bl == small && (bl = strdup(small)) == NULL) {
        esm_log("%s: out of memory", t->fullname);
        return -1;
    }
    if (esm_table_refresh(F->job, t)) {
        free(bl);
        return -1;
    }
    if (!layout_fits(t, bl)) {
        esm_log("%s: its rows at %s:%" PRIu64 " in the binlog have %u columns (%s), the table "
                "now has %zu (%s): a DDL statement after that point changed it, and the key "
                "cannot be found in those rows; delete the index and run with --resnapshot",
                t->fullname, F->file, pos, cm->ncols, bl, strlen(t->layout), t->layout);
        free(bl);
        return -1;
    }
    if (!F->job->quiet)
        esm_log("%s: its columns changed (%s, now %d in the documents)", t->fullname, bl,
                t->ncols);
    free(t->layout_ok);
    t->layout_ok = bl;
    return 0;
}

/* The followed table an INSERT, REPLACE, UPDATE, DELETE or LOAD statement
 * names (rules.c), or NULL. */
static esm_table_t *statement_dml_table(follow_t *F, const char *s, size_t n, const char *evdb,
                                        size_t evdb_len)
{
    if (!esm_stmt_is_dml(s, n))
        return NULL;
    for (int t = 0; t < F->job->ntables; t++) {
        esm_table_t *tb = &F->job->tables[t];
        if (esm_stmt_names(s, n, evdb, evdb_len, tb->db, tb->name))
            return tb;
    }
    return NULL;
}

/* The followed table whose rows a DDL statement removes or replaces with
 * no row events (rules.c: TRUNCATE, DROP TABLE or DATABASE, RENAME TABLE,
 * CREATE OR REPLACE TABLE, DROP/TRUNCATE/EXCHANGE PARTITION), or NULL. */
static esm_table_t *statement_ddl_table(follow_t *F, const char *s, size_t n, const char *evdb,
                                        size_t evdb_len)
{
    for (int t = 0; t < F->job->ntables; t++) {
        esm_table_t *tb = &F->job->tables[t];
        if (esm_stmt_removes_rows(s, n, evdb, evdb_len, tb->db, tb->name))
            return tb;
    }
    return NULL;
}

/* A statement that changes a followed table's rows with no row events:
 * a change logged as a statement (binlog_format MIXED or STATEMENT, for
 * the server or the session that made it), or DDL that drops or replaces
 * the table's rows (TRUNCATE, DROP...). Their documents would silently stay
 * as they were: said, and 1; the follower stops before it (nothing after
 * it is sent or saved: a run after the fix starts here again). */
static int rows_without_events(follow_t *F, MARIADB_RPL_EVENT *ev)
{
    const char *s = ev->event.query.statement.str, *db = ev->event.query.database.str;
    size_t n = ev->event.query.statement.length, dbn = ev->event.query.database.length, k;
    const char *note = "", *so = "the documents of its rows cannot be deleted one by one",
               *pre = "";
    char what[96];
    esm_table_t *tt;

    if ((tt = statement_dml_table(F, s, n, db, dbn)) != NULL) {
        snprintf(what, sizeof(what), "a change logged as a statement");
        note = " (binlog_format is not ROW for it)";
        so = "the documents of the rows it changed cannot be found";
        pre = "set binlog_format=ROW on the server, ";
    } else if ((tt = statement_ddl_table(F, s, n, db, dbn)) != NULL) {
        /* the statement's start, on one line */
        what[0] = '"';
        for (k = 0; k < n && k + 1 < 81; k++)
            what[k + 1] = (unsigned char)s[k] < ' ' ? ' ' : s[k];
        snprintf(what + k + 1, sizeof(what) - k - 1, "%s\"", k < n ? "..." : "");
        note = " (it removes or replaces the table's rows)";
    } else {
        return 0;
    }
    esm_log("%s: %s at %s:%" PRIu64 " in the binlog%s: the binlog has no rows for it, so %s; "
            "%sdelete the index (or its documents of this table) and run with --resnapshot",
            tt->fullname, what, F->file, (uint64_t)ev->next_event_pos, note, so, pre);
    return 1;
}

static int on_table_map(follow_t *F, MARIADB_RPL_EVENT *ev)
{
    struct st_mariadb_rpl_table_map_event *tm = &ev->event.table_map;
    tmap_t *m = find_map(F, tm->table_id);
    if (!m) {
        F->maps = realloc(F->maps, (F->nmaps + 1) * sizeof(*F->maps));
        m = &F->maps[F->nmaps++];
        m->ev = NULL;
        m->cm.meta = NULL;
    } else {
        free(m->cm.meta);
    }
    if (m->ev)
        mariadb_free_rpl_event(m->ev);
    memset(&m->cm, 0, sizeof(m->cm));
    m->table_id = tm->table_id;
    m->ev = ev;
    m->table = NULL;
    for (int i = 0; i < F->job->ntables; i++) {
        esm_table_t *t = &F->job->tables[i];
        if (strlen(t->db) == tm->database.length && !memcmp(t->db, tm->database.str, tm->database.length) &&
            strlen(t->name) == tm->table.length && !memcmp(t->name, tm->table.str, tm->table.length))
            m->table = t;
    }
    if (m->table && decode_meta(tm, &m->cm)) {
        /* its rows cannot be read: stop, rather than pass them by */
        esm_log("%s: a table map with bad metadata at %s:%" PRIu64 ": its rows cannot be read",
                m->table->fullname, F->file, (uint64_t)ev->next_event_pos);
        return -1;
    }
    if (m->table && check_layout(F, m->table, &m->cm, ev->next_event_pos))
        return -1;
    return 0;
}

static int on_rows(follow_t *F, MARIADB_RPL_EVENT *ev)
{
    esm_job_t *job = F->job;
    tmap_t *m = find_map(F, ev->event.rows.table_id);
    if (!m || !m->table)
        return 0;
    esm_table_t *t = m->table;
    struct st_mariadb_rpl_rows_event *rows = &ev->event.rows;
    if (rows->compressed || ev->event_type >= WRITE_ROWS_COMPRESSED_EVENT) {
        esm_log("%s: compressed row events are not supported (log_bin_compress=OFF)",
                t->fullname);
        return -1;
    }
    colmeta_t *cm = &m->cm;
    if (rows->column_count != cm->ncols) {
        esm_log("%s: a rows event of %u columns for a table map of %u", t->fullname,
                rows->column_count, cm->ncols);
        return -1;
    }
    int64_t version = esm_version_of(F->file, ev->next_event_pos);
    int update = ev->event_type == UPDATE_ROWS_EVENT || ev->event_type == UPDATE_ROWS_EVENT_V1;
    const unsigned char *p = rows->row_data;
    size_t left = rows->row_data_size;
    while (left > 0) {
        size_t before = t->npend;
        long n = decode_image(t, cm, rows->column_bitmap, p, left, version);
        if (n >= 0 && update) {
            p += n;
            left -= (size_t)n;
            n = decode_image(t, cm,
                             rows->column_update_bitmap ? rows->column_update_bitmap
                                                        : rows->column_bitmap,
                             p, left, version);
        }
        if (n < 0) {
            esm_log("%s: cannot decode a row image at %s:%u (is binlog_row_image FULL, and "
                    "the key in it?)", t->fullname, F->file, ev->next_event_pos);
            return -1;
        }
        p += n;
        left -= (size_t)n;
        F->npend += t->npend - before;
        job->binlog_rows++;
    }
    if (!F->first_pend_ns)
        F->first_pend_ns = esm_now_ns();
    if (!F->batch_event_ts)
        F->batch_event_ts = ev->timestamp;
    return 0;
}

int esm_binlog_keys_supported(esm_job_t *job)
{
    for (int i = 0; i < job->ntables; i++)
        for (int k = 0; k < job->tables[i].nkeys; k++)
            if (!key_kind_supported(job->tables[i].keys[k].kind) ||
                !job->tables[i].keys[k].binlog_as_read) {
                esm_log("%s: key column %s: its type cannot be followed in the binlog (keys "
                        "of integer, CHAR/VARCHAR/TEXT in UTF-8 or ASCII and "
                        "BINARY/VARBINARY/BLOB types can: the binlog holds other types and "
                        "character sets as bytes that are not the snapshot's text); give "
                        "other id columns, or use --snapshot-only or --poll-column",
                        job->tables[i].fullname, job->tables[i].keys[k].name);
                return -1;
            }
    return 0;
}

static int caught_up(follow_t *F, const char *tfile, uint64_t tpos)
{
    if (!F->bfile)
        return 0;
    int64_t a = esm_version_of(F->bfile, F->bpos), b = esm_version_of(tfile, tpos);
    return a >= b;
}

int esm_binlog_follow(esm_job_t *job)
{
    json_t *b = json_object_get(job->state, "binlog");
    const char *sfile = json_string_value(json_object_get(b, "file"));
    uint64_t spos = (uint64_t)json_integer_value(json_object_get(b, "pos"));
    if (!sfile) {
        esm_log("the state file has no binlog position");
        return ESM_EXIT_FAILED;
    }
    if (esm_binlog_keys_supported(job))
        return ESM_EXIT_FAILED;
    /* re-reads see committed rows; no gap locks */
    if (esm_query(job, job->db, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED"))
        return ESM_EXIT_FAILED;

    char *tfile = NULL;
    uint64_t tpos = 0;
    if (job->catch_up) {
        if (esm_query(job, job->db, "SHOW MASTER STATUS"))
            return ESM_EXIT_FAILED;
        MYSQL_RES *res = mysql_store_result(job->db);
        MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
        if (!row) {
            esm_log("SHOW MASTER STATUS: no binary log");
            if (res)
                mysql_free_result(res);
            return ESM_EXIT_FAILED;
        }
        tfile = strdup(row[0]);
        tpos = strtoull(row[1], NULL, 10);
        mysql_free_result(res);
        if (esm_version_of(sfile, spos) >= esm_version_of(tfile, tpos)) {
            free(tfile);
            job->caught_up = 1;
            return 0;
        }
    }

    follow_t F;
    memset(&F, 0, sizeof(F));
    F.job = job;
    F.file = strdup(sfile);
    int rc = ESM_EXIT_FAILED;
    MYSQL *rdb = esm_mysql_new(job);
    unsigned timeout = 30;
    if (rdb == NULL) {
        esm_log("binlog connection: out of memory");
        goto out;
    }
    mysql_options(rdb, MYSQL_OPT_READ_TIMEOUT, &timeout);
    if (!mysql_real_connect(rdb, job->socket ? NULL : job->host, job->user, job->password, NULL,
                            job->port, job->socket, 0)) {
        esm_log("binlog connection: %s", mysql_error(rdb));
        goto out;
    }
    if (esm_query(job, rdb, "SET @master_binlog_checksum=@@global.binlog_checksum") ||
        esm_query(job, rdb, "SET @mariadb_slave_capability=4"))
        goto out;
    /* A heartbeat when the binlog is idle for the batch window: the keys
     * gathered are then sent without waiting for another event. */
    char hb[64];
    snprintf(hb, sizeof(hb), "SET @master_heartbeat_period=%lld",
             (long long)job->binlog_batch_ms * 1000000LL);
    if (esm_query(job, rdb, hb))
        goto out;
    F.rpl = mariadb_rpl_init(rdb);
    if (!F.rpl) {
        esm_log("mariadb_rpl_init failed");
        goto out;
    }
    mariadb_rpl_optionsv(F.rpl, MARIADB_RPL_FILENAME, sfile, strlen(sfile));
    mariadb_rpl_optionsv(F.rpl, MARIADB_RPL_START, (unsigned long)spos);
    mariadb_rpl_optionsv(F.rpl, MARIADB_RPL_SERVER_ID, (uint32_t)job->server_id);
    mariadb_rpl_optionsv(F.rpl, MARIADB_RPL_FLAGS, 0);
    mariadb_rpl_optionsv(F.rpl, MARIADB_RPL_VERIFY_CHECKSUM, 1);
    if (mariadb_rpl_open(F.rpl)) {
        esm_log("cannot read the binlog from %s:%" PRIu64 ": %s", sfile, spos,
                mysql_error(rdb));
        rc = mysql_errno(rdb) == 1236 ? ESM_EXIT_PURGED : ESM_EXIT_FAILED;
        goto out;
    }
    if (!job->quiet)
        esm_log("following the binlog from %s:%" PRIu64 "%s%s", sfile, spos,
                tfile ? " up to " : "", tfile ? tfile : "");
    F.bfile = strdup(sfile);
    F.bpos = spos;
    const int64_t batch_ns = (int64_t)job->binlog_batch_ms * 1000000LL;
    for (;;) {
        if (esm_interrupted || job->stop || job->fatal) {
            rc = 0;
            break;
        }
        MARIADB_RPL_EVENT *ev = mariadb_rpl_fetch(F.rpl, NULL);
        if (!ev) {
            unsigned e = mysql_errno(rdb);
            if (esm_interrupted) {
                rc = 0;
                break;
            }
            esm_log("reading the binlog at %s:%" PRIu64 ": %s", F.bfile, F.bpos,
                    e ? mysql_error(rdb) : mariadb_rpl_error(F.rpl));
            rc = e == 1236 ? ESM_EXIT_PURGED : ESM_EXIT_FAILED;
            break;
        }
        int keep = 0, boundary = 0;
        int artificial = (ev->flags & LOG_EVENT_ARTIFICIAL_F) != 0;
        switch (ev->event_type) {
        case ROTATE_EVENT:
            free(F.file);
            F.file = strndup(ev->event.rotate.filename.str, ev->event.rotate.filename.length);
            if (!artificial) {
                /* a real rotate: the next file starts clean */
                free(F.bfile);
                F.bfile = strdup(F.file);
                F.bpos = ev->event.rotate.position;
                boundary = 1;
            }
            break;
        case TABLE_MAP_EVENT:
            keep = 1;
            if (on_table_map(&F, ev))
                goto out; /* ev is kept in F.maps */
            break;
        case WRITE_ROWS_EVENT_V1:
        case UPDATE_ROWS_EVENT_V1:
        case DELETE_ROWS_EVENT_V1:
        case WRITE_ROWS_EVENT:
        case UPDATE_ROWS_EVENT:
        case DELETE_ROWS_EVENT:
        case WRITE_ROWS_COMPRESSED_EVENT:
        case UPDATE_ROWS_COMPRESSED_EVENT:
        case DELETE_ROWS_COMPRESSED_EVENT:
        case WRITE_ROWS_COMPRESSED_EVENT_V1:
        case UPDATE_ROWS_COMPRESSED_EVENT_V1:
        case DELETE_ROWS_COMPRESSED_EVENT_V1:
            job->binlog_events++;
            if (on_rows(&F, ev)) {
                mariadb_free_rpl_event(ev);
                goto out;
            }
            break;
        case XID_EVENT:
            boundary = 1;
            break;
        case QUERY_EVENT: {
            /* COMMIT of a non-transactional group, or a DDL statement */
            const char *s = ev->event.query.statement.str;
            size_t n = ev->event.query.statement.length;
            if (!(n == 5 && !strncasecmp(s, "BEGIN", 5)))
                boundary = 1;
            if (rows_without_events(&F, ev)) {
                mariadb_free_rpl_event(ev);
                goto out;
            }
            break;
        }
        case HEARTBEAT_LOG_EVENT:
            break;
        default:
            break;
        }
        if (boundary && ev->event_type != ROTATE_EVENT && ev->next_event_pos) {
            free(F.bfile);
            F.bfile = strdup(F.file);
            F.bpos = ev->next_event_pos;
        }
        int heartbeat = ev->event_type == HEARTBEAT_LOG_EVENT;
        if (!keep)
            mariadb_free_rpl_event(ev);
        ev = NULL;
        int64_t now = esm_now_ns();
        int done = tfile && boundary && caught_up(&F, tfile, tpos);
        if (boundary && (F.npend >= FLUSH_KEYS || (F.npend && now - F.first_pend_ns >= batch_ns) ||
                         done || (!F.npend && job->state_written_ns + 1000000000LL < now))) {
            if (flush_batch(&F))
                goto out;
        } else if (heartbeat) {
            /* idle at the end of the binlog: send what is gathered, move on */
            if (flush_batch(&F))
                goto out;
        }
        esm_serve(job, 0, 0);
        if (done) {
            job->caught_up = 1;
            rc = 0;
            break;
        }
    }
    /* what was gathered up to the last boundary is still worth sending */
    if (rc == 0 && F.npend)
        flush_batch(&F);
out:
    for (size_t i = 0; i < F.nmaps; i++)
        if (F.maps[i].ev) {
            mariadb_free_rpl_event(F.maps[i].ev);
            free(F.maps[i].cm.meta);
        }
    free(F.maps);
    if (F.rpl)
        mariadb_rpl_close(F.rpl);
    mysql_close(rdb);
    free(F.file);
    free(F.bfile);
    free(tfile);
    return rc;
}
