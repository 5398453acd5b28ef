/*
 * --poll-column COL: where the binary log cannot be read, changes are found
 * by polling each table for the rows whose (COL, key) comes after the last
 * one seen, in that order, in pages of --page-rows:
 *
 *   SELECT ... WHERE COL <= NOW(6) - INTERVAL lag
 *     AND COL >= c AND (COL > c OR (COL = c AND (key) > (k)))
 *   ORDER BY COL, key LIMIT n
 *
 * The key breaks ties, so rows that share a value of COL (several writes
 * in one second of a DATETIME) are taken one after the other across pages,
 * none skipped. The lag window leaves out the rows of the last --poll-lag
 * seconds: a row written at time T but committed (visible) later than the
 * poll that passed T would be missed; the window gives such commits that
 * long. COL must be set on every insert and update (e.g. DEFAULT
 * CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP) and never go back.
 *
 * Deletes are not seen: a deleted row leaves no row to poll.
 *
 * Every document carries the external version COL in microseconds since
 * 1970 (version_type external_gte), the snapshot's too: a retry or a replay
 * of an older content never overwrites a newer one. A table's poll position
 * [COL value, key...] is saved in the state file only when every earlier
 * document has its result (job.c, advance()).
 *
 * Polling starts from the first snapshot's time less the lag (the state's
 * start.poll_from), so that the rows changed while the snapshot was read are
 * polled again.
 */
#define _GNU_SOURCE 1
#include "job.h"

#include <stdlib.h>
#include <string.h>

static void add_literal(esm_job_t *job, esm_buf_t *q, const char *s)
{
    size_t n = strlen(s);
    esm_buf_reserve(q, n * 2 + 3);
    q->data[q->len++] = '\'';
    q->len += mysql_real_escape_string(job->db, q->data + q->len, s, (unsigned long)n);
    q->data[q->len++] = '\'';
    q->data[q->len] = '\0';
}

/* One page of table t after its poll position. Returns the rows read, or
 * -1 on an error. */
static int poll_page(esm_job_t *job, esm_table_t *t)
{
    esm_buf_t q = {0}, body = {0}, id = {0};
    int rc = -1;
    json_t *from = t->poll_read ? t->poll_read : t->poll_key;
    char lag[96];
    snprintf(lag, sizeof(lag), " <= NOW(6) - INTERVAL %.0f MICROSECOND AND ",
             job->poll_lag * 1e6);
    esm_buf_adds(&q, "SELECT ");
    esm_buf_adds(&q, t->select_list);
    esm_buf_adds(&q, " FROM ");
    esm_buf_adds(&q, t->qname);
    esm_buf_adds(&q, " WHERE ");
    esm_quote_ident(&q, job->poll_column);
    esm_buf_adds(&q, lag);
    esm_quote_ident(&q, job->poll_column);
    esm_buf_adds(&q, ">=");
    if (from) {
        const char *c = json_string_value(json_array_get(from, 0));
        add_literal(job, &q, c);
        esm_buf_adds(&q, " AND (");
        esm_quote_ident(&q, job->poll_column);
        esm_buf_addc(&q, '>');
        add_literal(job, &q, c);
        esm_buf_adds(&q, " OR (");
        esm_quote_ident(&q, job->poll_column);
        esm_buf_addc(&q, '=');
        add_literal(job, &q, c);
        esm_buf_adds(&q, " AND ");
        esm_key_greater(job, t, from, 1, &q);
        esm_buf_adds(&q, "))");
    } else {
        const char *pf = json_string_value(
            json_object_get(json_object_get(job->state, "start"), "poll_from"));
        add_literal(job, &q, pf ? pf : "0000-00-00");
    }
    esm_buf_adds(&q, " ORDER BY ");
    esm_quote_ident(&q, job->poll_column);
    for (int i = 0; i < t->nkeys; i++) {
        esm_buf_addc(&q, ',');
        esm_quote_ident(&q, t->keys[i].name);
    }
    char lim[32];
    snprintf(lim, sizeof(lim), " LIMIT %d", job->page_rows);
    esm_buf_adds(&q, lim);
    if (esm_query(job, job->db, q.data))
        goto out;
    MYSQL_RES *res = mysql_use_result(job->db);
    if (!res) {
        if (!esm_interrupted)
            esm_log("%s: %s", t->fullname, mysql_error(job->db));
        goto out;
    }
    esm_unit_t *u = NULL;
    MYSQL_ROW row;
    int n = 0;
    json_t *cursor = NULL;
    int f = t->ncols + t->nkeys; /* the poll column */
    while ((row = mysql_fetch_row(res))) {
        unsigned long *lens = mysql_fetch_lengths(res);
        if (!u) {
            u = calloc(1, sizeof(*u));
            u->table = t;
            u->poll = 1;
            u->open = 1;
            if (t->tail)
                t->tail->next = u;
            else
                t->head = u;
            t->tail = u;
        }
        n++;
        job->poll_rows++;
        json_t *key = esm_row_key(t, row, lens);
        json_decref(cursor);
        cursor = json_array();
        json_array_append_new(cursor, json_stringn(row[f] ? row[f] : "", row[f] ? lens[f] : 0));
        json_array_extend(cursor, key);
        esm_key_id(t, key, &id);
        json_decref(key);
        char why[300];
        if (esm_row_json(job, t, row, lens, &body, why, sizeof(why))) {
            if (esm_row_unmappable(job, u, t, "poll", id.data, why, NULL, 0))
                break;
            continue;
        }
        esm_add_doc(job, u, t, id.data, id.len, body.data, body.len,
                    esm_poll_version(row[f], row[f] ? lens[f] : 0));
        if ((n & 255) == 0)
            esbulk_poll(job->eb, 0);
        if (esm_interrupted)
            break; /* every row up to cursor was added */
    }
    if (mysql_errno(job->db) && !esm_interrupted) {
        esm_log("%s: polling: %s", t->fullname, mysql_error(job->db));
        if (u) {
            u->open = 0;
            u->blocked = 1;
        }
        mysql_free_result(res);
        json_decref(cursor);
        goto out;
    }
    if (mysql_errno(job->db) && u)
        u->blocked = 1; /* a read cut by the signal: the rows of this page stay unchecked */
    mysql_free_result(res);
    if (u) {
        u->open = 0;
        u->key = cursor;
        json_decref(t->poll_read);
        t->poll_read = json_incref(cursor);
    }
    rc = n;
out:
    esm_buf_free(&q);
    esm_buf_free(&body);
    esm_buf_free(&id);
    return rc;
}

int esm_poll_follow(esm_job_t *job)
{
    if (!job->quiet)
        esm_log("polling %d table%s on %s every %.2f s, lag %.2f s", job->ntables,
                job->ntables == 1 ? "" : "s", job->poll_column, job->poll_interval,
                job->poll_lag);
    for (;;) {
        if (esm_interrupted || job->stop || job->fatal)
            return 0;
        int full = 0;
        for (int i = 0; i < job->ntables; i++) {
            int n = poll_page(job, &job->tables[i]);
            if (n < 0)
                return esm_interrupted ? 0 : ESM_EXIT_FAILED;
            if (n >= job->page_rows)
                full = 1;
        }
        job->polls++;
        esm_serve(job, 0, 0);
        if (full)
            continue;
        /* the poll's last rows are sent now, not after flush.interval.ms */
        esbulk_flush(job->eb, 0);
        if (job->catch_up) {
            job->caught_up = 1;
            return 0;
        }
        int64_t until = esm_now_ns() + (int64_t)(job->poll_interval * 1e9);
        for (;;) {
            int64_t left = (until - esm_now_ns()) / 1000000;
            if (left <= 0 || esm_interrupted || job->stop || job->fatal)
                break;
            esm_serve(job, left < 100 ? (int)left : 100, 0);
        }
    }
}
