/*
 * esbulk-mysql: the snapshot: each table read in keyset pages inside one
 * consistent transaction, the binlog position that goes with it.
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
 * The snapshot.
 */
void esm_key_greater(esm_job_t *job, esm_table_t *t, json_t *key, size_t from, esm_buf_t *q)
{
    /* (k1,...,kn) > (v1,...,vn) as k1 >= v1 AND (k1 > v1 OR (k1 = v1 AND
     * (k2 > v2 OR ...))): the leading range lets the optimizer seek. */
    esm_quote_ident(q, t->keys[0].name);
    esm_buf_adds(q, ">=");
    esm_key_literal(job, t, 0, json_string_value(json_array_get(key, from)), q);
    esm_buf_adds(q, " AND (");
    for (int i = 0; i < t->nkeys; i++) {
        if (i)
            esm_buf_adds(q, " OR (");
        else
            esm_buf_addc(q, '(');
        for (int j = 0; j < i; j++) {
            esm_quote_ident(q, t->keys[j].name);
            esm_buf_addc(q, '=');
            esm_key_literal(job, t, j,
                            json_string_value(json_array_get(key, from + (size_t)j)), q);
            esm_buf_adds(q, " AND ");
        }
        esm_quote_ident(q, t->keys[i].name);
        esm_buf_addc(q, '>');
        esm_key_literal(job, t, i, json_string_value(json_array_get(key, from + (size_t)i)),
                        q);
        esm_buf_addc(q, ')');
    }
    esm_buf_addc(q, ')');
}

static int snapshot_table(esm_job_t *job, esm_table_t *t, int64_t version)
{
    esm_buf_t q = {0}, body = {0}, id = {0};
    json_t *last = t->ack_key ? json_incref(t->ack_key) : NULL;
    int rc = -1;
    for (;;) {
        if (esm_interrupted || job->stop || job->fatal) {
            rc = 0;
            break;
        }
        q.len = 0;
        esm_buf_adds(&q, "SELECT ");
        esm_buf_adds(&q, t->select_list);
        esm_buf_adds(&q, " FROM ");
        esm_buf_adds(&q, t->qname);
        if (last) {
            esm_buf_adds(&q, " WHERE ");
            esm_key_greater(job, t, last, 0, &q);
        }
        esm_buf_adds(&q, " ORDER BY ");
        for (int i = 0; i < t->nkeys; i++) {
            if (i)
                esm_buf_addc(&q, ',');
            esm_quote_ident(&q, t->keys[i].name);
        }
        char lim[32];
        snprintf(lim, sizeof(lim), " LIMIT %d", job->page_rows);
        esm_buf_adds(&q, lim);
        if (esm_query(job, job->db, q.data)) {
            if (esm_interrupted)
                rc = 0;
            break;
        }
        MYSQL_RES *res = mysql_use_result(job->db);
        if (!res) {
            if (esm_interrupted) {
                rc = 0;
                break;
            }
            esm_log("%s: %s", t->fullname, mysql_error(job->db));
            break;
        }
        esm_unit_t *u = calloc(1, sizeof(*u));
        u->table = t;
        u->open = 1; /* a full buffer serves results while the page is added */
        if (t->tail)
            t->tail->next = u;
        else
            t->head = u;
        t->tail = u;
        MYSQL_ROW row;
        int n = 0, cut = 0;
        json_t *key = NULL;
        while ((row = mysql_fetch_row(res))) {
            unsigned long *lens = mysql_fetch_lengths(res);
            n++;
            t->rows_read++;
            json_decref(key);
            key = esm_row_key(t, row, lens);
            esm_key_id(t, key, &id);
            char why[300];
            if (esm_row_json(job, t, row, lens, &body, why, sizeof(why))) {
                if (esm_row_unmappable(job, u, t, "snapshot", id.data, why, NULL, 0))
                    break;
                continue;
            }
            int f = t->ncols + t->nkeys; /* --poll-column's value */
            esm_add_doc(job, u, t, id.data, id.len, body.data, body.len,
                        job->poll_column ? esm_poll_version(row[f], row[f] ? lens[f] : 0)
                                         : version);
            if ((n & 255) == 0)
                esbulk_poll(job->eb, 0);
            if (esm_interrupted) {
                /* the page ends here: every row up to key was added */
                cut = 1;
                break;
            }
        }
        if (!cut && mysql_errno(job->db)) {
            if (esm_interrupted) {
                /* a blocking read cut by the signal (EINTR): a stop, not an
                 * error; the rows read of this page stay unchecked */
                u->open = 0;
                u->blocked = 1;
                mysql_free_result(res);
                json_decref(key);
                rc = 0;
                break;
            }
            esm_log("%s: reading rows: %s", t->fullname, mysql_error(job->db));
            u->open = 0;
            u->blocked = 1;
            mysql_free_result(res);
            json_decref(key);
            break;
        }
        mysql_free_result(res);
        u->open = 0;
        u->key = key; /* NULL for an empty page */
        if (n < job->page_rows && !job->stop && !cut)
            u->last = 1;
        json_decref(last);
        last = key ? json_incref(key) : NULL;
        esm_serve(job, 0, 0);
        if (u->last || job->stop) {
            rc = 0;
            break;
        }
    }
    json_decref(last);
    esm_buf_free(&q);
    esm_buf_free(&body);
    esm_buf_free(&id);
    return rc;
}

/* SHOW STATUS LIKE 'binlog_snapshot_%' inside the snapshot transaction: the
 * binlog position consistent with it (MariaDB), without a global lock. */
static int snapshot_position(esm_job_t *job, char **file, uint64_t *pos, char **gtid)
{
    *file = NULL;
    *pos = 0;
    *gtid = NULL;
    MYSQL_RES *res = esm_query_res(job, "SHOW STATUS LIKE 'binlog_snapshot_%'");
    if (!res)
        return -1;
    MYSQL_ROW row;
    while ((row = mysql_fetch_row(res))) {
        if (!strcasecmp(row[0], "Binlog_snapshot_file") && row[1] && *row[1])
            *file = strdup(row[1]);
        else if (!strcasecmp(row[0], "Binlog_snapshot_position") && row[1])
            *pos = strtoull(row[1], NULL, 10);
    }
    mysql_free_result(res);
    if (!*file) {
        esm_log("the server has no binary log (binlog_snapshot_file is empty): start it "
                "with log_bin and binlog_format=ROW, or use --snapshot-only");
        return -1;
    }
    esm_buf_t q = {0};
    esm_buf_adds(&q, "SELECT BINLOG_GTID_POS(");
    esm_quote_string(job, &q, *file);
    char p[32];
    snprintf(p, sizeof(p), ",%" PRIu64 ")", *pos);
    esm_buf_adds(&q, p);
    res = esm_query_res(job, q.data);
    esm_buf_free(&q);
    if (res) {
        row = mysql_fetch_row(res);
        if (row && row[0])
            *gtid = strdup(row[0]);
        mysql_free_result(res);
    }
    return 0;
}

int esm_snapshot_run(esm_job_t *job)
{
    int pending = 0;
    for (int i = 0; i < job->ntables; i++)
        pending += !job->tables[i].done;
    if (!pending)
        return 0;
    if (esm_query(job, job->db, "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ") ||
        esm_query(job, job->db, "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"))
        return -1;
    char *file = NULL, *gtid = NULL;
    uint64_t pos = 0;
    if (job->poll_column) {
        /* polling starts from the first snapshot's time less the lag: a row
         * committed after the snapshot has a later value, or is at most
         * --poll-lag older (the lag window's promise) */
        if (!json_object_get(job->state, "start")) {
            char q[128];
            snprintf(q, sizeof(q), "SELECT NOW(6) - INTERVAL %.0f MICROSECOND",
                     job->poll_lag * 1e6);
            MYSQL_RES *res = esm_query_res(job, q);
            MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
            if (!row || !row[0]) {
                if (res)
                    mysql_free_result(res);
                return -1;
            }
            json_t *st = json_object();
            json_object_set_new(st, "poll_from", json_string(row[0]));
            json_object_set_new(job->state, "start", st);
            job->state_dirty = 1;
            mysql_free_result(res);
            esm_serve(job, 0, 1);
        }
        file = strdup("none.000000");
    } else if (snapshot_position(job, &file, &pos, &gtid)) {
        if (!job->snapshot_only)
            return -1;
        file = strdup("none.000000");
    } else if (esm_version_of(file, pos) < job->version_floor) {
        /* RESET MASTER, or another server: its binlog numbering started
         * again below the positions whose versions the index's documents
         * carry, so every document sent now would be refused as older
         * (409) and counted as superseded: the index would stay as it was */
        esm_log("the server's binary log position %s:%" PRIu64 " is before the state's (its "
                "numbering started again: RESET MASTER, or another server): the documents "
                "in the index carry higher versions and would win over every row read now; "
                "delete the index and the state file, then run again",
                file, pos);
        free(file);
        free(gtid);
        return -1;
    }
    /* The binlog is followed from the first snapshot's position: rows below
     * a checkpoint were read then, and their later changes are in the binlog
     * from there on. */
    if (!job->poll_column && !json_object_get(job->state, "start")) {
        json_t *s = json_object();
        json_object_set_new(s, "file", json_string(file));
        json_object_set_new(s, "pos", json_integer((json_int_t)pos));
        json_object_set_new(s, "gtid", gtid ? json_string(gtid) : json_null());
        json_object_set_new(job->state, "start", s);
        job->state_dirty = 1;
        esm_serve(job, 0, 1);
    }
    int64_t version = esm_version_of(file, pos);
    if (!job->quiet && job->poll_column)
        esm_log("snapshot; polling from %s", json_string_value(json_object_get(
                                                  json_object_get(job->state, "start"),
                                                  "poll_from")));
    else if (!job->quiet)
        esm_log("snapshot at %s:%" PRIu64 " (gtid %s)", file, pos, gtid ? gtid : "-");
    free(file);
    free(gtid);
    int rc = 0;
    for (int i = 0; i < job->ntables && rc == 0; i++) {
        esm_table_t *t = &job->tables[i];
        if (t->done)
            continue;
        rc = snapshot_table(job, t, version);
    }
    if (!esm_interrupted) /* else the connection may be cut (EINTR) */
        esm_query(job, job->db, "COMMIT");
    return rc;
}

