/*
 * esbulk-mysql: the job's services, called by the snapshot and by every
 * follower (binlog.c, poll.c, import.c): the log, queries, keys and ids,
 * documents and their results, checkpoints, dead letters, the state file.
 *
 * One thread: it reads rows, adds documents, and serves their results
 * (libesbulk runs the result callback inside esbulk_poll() on this thread),
 * so counters, checkpoints and the state file need no locking.
 *
 * Checkpoints: every document carries its unit (a snapshot page, or a binlog
 * batch) as doc_opaque. A table's checkpoint moves to a page's last key only
 * when that page and every earlier one have all their results; the binlog
 * position likewise. The state file is replaced atomically (write, fsync,
 * rename, fsync of the directory).
 */
#define _GNU_SOURCE 1
#include "job.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

volatile sig_atomic_t esm_interrupted;

#define STATE_EVERY_NS 200000000LL
#define PROGRESS_NS 500000000LL

int64_t esm_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int progress_shown;

void esm_log(const char *fmt, ...)
{
    flockfile(stderr); /* one piece: esm_on_lib_log writes from the library's threads */
    if (progress_shown) {
        fputs("\r\033[K", stderr);
        progress_shown = 0;
    }
    va_list ap;
    va_start(ap, fmt);
    fputs("esbulk-mysql: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    funlockfile(stderr);
}

/* The library's warnings and errors (a node down, the cluster not
 * readable), as they happen, each at most once a minute (logonce.h): a job
 * whose cluster went away said nothing until its documents ran out of
 * retries. Called on the library's threads (opaque is the job): stderr's
 * lock guards the line and job->lib_logs; job->progress, set before the
 * library's threads start, says to clear a progress line first. */
void esm_on_lib_log(int32_t level, const char *facility, const char *message, void *opaque)
{
    esm_job_t *job = opaque;

    (void)facility;
    if (level > ESBULK_LOG_WARNING)
        return;
    flockfile(stderr);
    if (logonce_new(&job->lib_logs, message, esm_now_ns(), 60 * 1000000000LL))
        fprintf(stderr, "%sesbulk-mysql: %s: %s\n", job->progress ? "\r\033[K" : "",
                level == ESBULK_LOG_WARNING ? "warning" : "error", message);
    funlockfile(stderr);
}

int esm_query(esm_job_t *job, MYSQL *db, const char *sql)
{
    (void)job;
    if (mysql_real_query(db, sql, strlen(sql))) {
        if (!esm_interrupted) /* a read cut by the signal is no news */
            esm_log("query failed: %s: %.200s", mysql_error(db), sql);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------------
 * Versions, keys and ids.
 */
int64_t esm_version_of(const char *file, uint64_t pos)
{
    const char *dot = strrchr(file, '.');
    uint64_t n = dot ? strtoull(dot + 1, NULL, 10) : 0;
    return (int64_t)((n & 0x7FFFFFFF) << 32 | (pos & 0xFFFFFFFFu));
}

static int binary_kind(esm_kind_t k)
{
    return k == ESM_K_BINARY || k == ESM_K_BIT;
}

static int numeric_kind(esm_kind_t k)
{
    return k == ESM_K_INT || k == ESM_K_BOOL || k == ESM_K_DECIMAL || k == ESM_K_FLOAT ||
           k == ESM_K_YEAR;
}

static void hex_of(const char *v, size_t len, esm_buf_t *out)
{
    static const char hex[] = "0123456789abcdef";
    esm_buf_reserve(out, len * 2);
    for (size_t i = 0; i < len; i++) {
        out->data[out->len++] = hex[(unsigned char)v[i] >> 4];
        out->data[out->len++] = hex[(unsigned char)v[i] & 15];
    }
    out->data[out->len] = '\0';
}

json_t *esm_row_key(esm_table_t *t, MYSQL_ROW row, unsigned long *lens)
{
    json_t *key = json_array();
    for (int i = 0; i < t->nkeys; i++) {
        int f = t->ncols + i;
        if (binary_kind(t->keys[i].kind)) {
            esm_buf_t b = {0};
            hex_of(row[f], lens[f], &b);
            json_array_append_new(key, json_stringn(b.data ? b.data : "", b.len));
            esm_buf_free(&b);
        } else {
            json_array_append_new(key, json_stringn(row[f], lens[f]));
        }
    }
    return key;
}

/* _id: one key column: its value; several: each value with "\" and "|"
 * escaped by "\", joined by "|". Binary key values are in hex. */
void esm_key_id(esm_table_t *t, json_t *key, esm_buf_t *out)
{
    out->len = 0;
    esm_buf_reserve(out, 64);
    out->data[0] = '\0';
    for (int i = 0; i < t->nkeys; i++) {
        json_t *v = json_array_get(key, (size_t)i);
        const char *s = json_string_value(v);
        size_t n = json_string_length(v);
        if (t->nkeys == 1) {
            esm_buf_add(out, s, n);
            break;
        }
        if (i)
            esm_buf_addc(out, '|');
        for (size_t j = 0; j < n; j++) {
            if (s[j] == '\\' || s[j] == '|')
                esm_buf_addc(out, '\\');
            esm_buf_addc(out, s[j]);
        }
    }
}

void esm_key_literal(esm_job_t *job, esm_table_t *t, int i, const char *v, esm_buf_t *out)
{
    esm_kind_t k = t->keys[i].kind;
    if (binary_kind(k)) {
        esm_buf_adds(out, "X'");
        esm_buf_adds(out, v);
        esm_buf_addc(out, '\'');
    } else if (k == ESM_K_ENUM) {
        /* its position among the members, as ORDER BY sorts it (a string
         * would be compared as a string); a value that is no member (the
         * type changed) compares below all of them */
        char n[16];
        snprintf(n, sizeof(n), "%d",
                 esm_enum_index(t->keys[i].sqltype ? t->keys[i].sqltype : "", v));
        esm_buf_adds(out, n);
    } else if (numeric_kind(k)) {
        /* digits, sign, point, exponent only: it came from the server */
        for (const char *p = v; *p; p++)
            if (!(isdigit((unsigned char)*p) || strchr("+-.eE", *p)))
                return;
        esm_buf_adds(out, v);
    } else {
        size_t n = strlen(v);
        esm_buf_reserve(out, n * 2 + 3);
        out->data[out->len++] = '\'';
        out->len += mysql_real_escape_string(job->db, out->data + out->len, v, (unsigned long)n);
        out->data[out->len++] = '\'';
        out->data[out->len] = '\0';
    }
}

/* ------------------------------------------------------------------------
 * Dead letters and results.
 */
/* The phase a unit's rows come from, as dead-letter lines name it. */
static const char *unit_phase(const esm_unit_t *u)
{
    return u->poll ? "poll" : u->table ? "snapshot" : "binlog";
}

int esm_row_unmappable(esm_job_t *job, esm_unit_t *u, esm_table_t *t, const char *phase,
                       const char *id, const char *why, const char *body, size_t body_len)
{
    job->rows_unmappable++;
    if (u->table)
        t->rows_failed++;
    esm_dead_letter(job, phase, t, NULL, id, why, 0, "unmappable_row", body, body_len);
    if (job->rows_unmappable <= 5)
        esm_log("%s %s: %s", t->fullname, id[0] ? id : "''", why);
    if (!job->on_error_stop)
        return 0;
    u->blocked = 1;
    job->stop = 1;
    return 1;
}

void esm_dead_letter(esm_job_t *job, const char *phase, esm_table_t *t, const char *index,
                     const char *id, const char *reason, int32_t status, const char *error_type,
                     const char *body, size_t body_len)
{
    if (!job->dead)
        return;
    esm_buf_t line = {0};
    if (esm_dead_letter_line(&line, phase, t ? t->fullname : NULL, t ? t->index : index, id,
                             reason, status, error_type, body, body_len) == 0)
        fwrite(line.data, 1, line.len, job->dead);
    else
        esm_log("%s %s: out of memory writing its dead-letter line", t ? t->fullname : "-",
                id ? id : "-");
    esm_buf_free(&line);
    fflush(job->dead);
}

/* The error_type of a dead letter for a document libesbulk refused before
 * sending it: the error's name (esbulk.h) in lower case, without
 * ESBULK_ERR_. */
static const char *local_error_type(esbulk_err_t err)
{
    switch (err) {
    case ESBULK_ERR_INVALID_JSON: return "invalid_json";
    case ESBULK_ERR_DOC_TOO_LARGE: return "doc_too_large";
    case ESBULK_ERR_INVALID_UTF8: return "invalid_utf8";
    case ESBULK_ERR_INVALID_ARG: return "invalid_arg";
    case ESBULK_ERR_NOMEM: return "nomem";
    default: return "esbulk_error";
    }
}

/* The one table whose configured index is index, or NULL. */
static esm_table_t *table_of_index(esm_job_t *job, const char *index)
{
    esm_table_t *found = NULL;
    for (int i = 0; index && i < job->ntables; i++)
        if (!strcmp(job->tables[i].index, index)) {
            if (found)
                return NULL;
            found = &job->tables[i];
        }
    return found;
}

void esm_on_result(esbulk_t *eb, const esbulk_result_t *r, void *opaque)
{
    (void)eb;
    esm_job_t *job = opaque;
    esm_unit_t *u = esbulk_result_opaque(r);
    esbulk_outcome_t oc = esbulk_result_outcome(r);
    int32_t status = esbulk_result_status(r);
    if (job->closing && oc != ESBULK_OUTCOME_INDEXED &&
        esbulk_result_err(r) == ESBULK_ERR_CLOSED) {
        /* dropped by the stop after a signal (not sent, or its request cut
         * off): not a failure; its unit never completes, so no checkpoint
         * passes it, and the next start reads it again */
        job->docs_dropped++;
        u->blocked = 1;
        u->remaining--;
        return;
    }
    esm_result_class_t rc =
        esm_result_class(oc, esbulk_result_err(r), status, esbulk_result_error_type(r));
    if (rc == ESM_RESULT_DONE) {
        job->docs_indexed++;
    } else if (rc == ESM_RESULT_SUPERSEDED) {
        /* the index already holds a newer version of the row (a replay) */
        job->docs_conflict++;
    } else if (rc == ESM_RESULT_UNAVAILABLE) {
        /* the cluster did not take it (unreachable, overloaded, timed out,
         * it may have been indexed, or its index is missing, closed or
         * blocked): not the row's fault, so it is not skipped: the job
         * stops with no checkpoint past it, and the next run sends it again
         * (the same external version) */
        job->docs_failed++;
        job->unavailable++;
        if (job->unavailable == 1)
            esm_log("%s %s: the cluster did not take the document (%s%s): stopping; the "
                    "next run resumes from the last checkpoint", esbulk_result_index(r),
                    esbulk_result_id(r) ? esbulk_result_id(r) : "-",
                    oc == ESBULK_OUTCOME_POSSIBLY ? "possibly indexed: " : "",
                    esbulk_result_error_reason(r) ? esbulk_result_error_reason(r)
                                                  : esbulk_err2str(esbulk_result_err(r)));
        u->blocked = 1;
        job->stop = 1;
    } else {
        job->docs_failed++;
        size_t blen = 0;
        const char *body = esbulk_result_body(r, &blen);
        char reason[512];
        snprintf(reason, sizeof(reason), "%s%s",
                 oc == ESBULK_OUTCOME_POSSIBLY ? "possibly indexed: " : "",
                 esbulk_result_error_reason(r) ? esbulk_result_error_reason(r)
                                               : esbulk_err2str(esbulk_result_err(r)));
        /* a binlog batch holds the changes of every table: the table is
         * the one whose index answered (none when several share it) */
        esm_table_t *t = u->table ? u->table : table_of_index(job, esbulk_result_index(r));
        esm_dead_letter(job, unit_phase(u), t, esbulk_result_index(r), esbulk_result_id(r),
                        reason, status,
                        esbulk_result_error_type(r) ? esbulk_result_error_type(r)
                                                    : local_error_type(esbulk_result_err(r)),
                        body, blen);
        if (job->docs_failed <= 5)
            esm_log("%s %s: %s", esbulk_result_index(r),
                    esbulk_result_id(r) ? esbulk_result_id(r) : "-", reason);
        if (u->table)
            u->table->rows_failed++;
        if (job->on_error_stop) {
            u->blocked = 1;
            job->stop = 1;
        }
    }
    u->remaining--;
}

/* Pops the units whose documents all have results; moves checkpoints. */
static void advance(esm_job_t *job)
{
    for (int i = 0; i < job->ntables; i++) {
        esm_table_t *t = &job->tables[i];
        while (t->head && t->head->remaining == 0 && !t->head->blocked && !t->head->open) {
            esm_unit_t *u = t->head;
            t->head = u->next;
            if (!t->head)
                t->tail = NULL;
            if (u->key && u->poll) {
                json_decref(t->poll_key);
                t->poll_key = json_incref(u->key);
                job->state_dirty = 1;
            } else if (u->key) {
                json_decref(t->ack_key);
                t->ack_key = json_incref(u->key);
                job->state_dirty = 1;
            }
            if (u->last) {
                t->done = 1;
                job->state_dirty = 1;
            }
            json_decref(u->key);
            free(u);
        }
    }
    while (job->bhead && job->bhead->remaining == 0 && !job->bhead->blocked &&
           !job->bhead->open) {
        esm_unit_t *u = job->bhead;
        job->bhead = u->next;
        if (!job->bhead)
            job->btail = NULL;
        json_t *cur = json_object_get(job->state, "binlog");
        const char *cfile = json_string_value(json_object_get(cur, "file"));
        if (!cfile || strcmp(cfile, u->file) ||
            json_integer_value(json_object_get(cur, "pos")) != (json_int_t)u->pos) {
            /* (an idle binlog's heartbeats give batches at the same
             * position: the state file is not rewritten for them) */
            json_t *b = json_pack("{s:s, s:I}", "file", u->file, "pos", (json_int_t)u->pos);
            if (!b || json_object_set_new(job->state, "binlog", b)) {
                esm_log("out of memory");
                job->fatal = 1;
            }
            job->state_dirty = 1;
        }
        if (u->read_ns) {
            if (!job->applies)
                job->applies = malloc(100000 * sizeof(int64_t));
            if (job->applies) {
                job->applies[job->apply_next] = (esm_now_ns() - u->read_ns) / 1000000;
                job->apply_next = (job->apply_next + 1) % 100000;
                if (job->napplies < 100000)
                    job->napplies++;
            }
        }
        free(u->file);
        free(u);
    }
}

/* ------------------------------------------------------------------------
 * The state file.
 */
static int write_state(esm_job_t *job)
{
    json_t *tables = json_object();
    for (int i = 0; i < job->ntables; i++) {
        esm_table_t *t = &job->tables[i];
        json_t *o = json_object();
        json_object_set_new(o, "done", json_boolean(t->done));
        json_object_set(o, "key", t->ack_key ? t->ack_key : json_null());
        json_object_set_new(o, "index", json_string(t->index));
        if (t->poll_key)
            json_object_set(o, "poll", t->poll_key);
        json_object_set_new(tables, t->fullname, o);
    }
    json_object_set_new(job->state, "tables", tables);
    char *text = json_dumps(job->state, JSON_INDENT(1) | JSON_SORT_KEYS);
    if (!text)
        return -1;
    size_t n = strlen(text);
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s.tmp", job->state_path);
    int rc = -1;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        esm_log("%s: %s", tmp, strerror(errno));
        goto out;
    }
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(fd, text + off, n - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            esm_log("%s: %s", tmp, strerror(errno));
            close(fd);
            goto out;
        }
        off += (size_t)w;
    }
    if (write(fd, "\n", 1) != 1 || fsync(fd) != 0) {
        esm_log("%s: %s", tmp, strerror(errno));
        close(fd);
        goto out;
    }
    close(fd);
    if (rename(tmp, job->state_path) != 0) {
        esm_log("%s: %s", job->state_path, strerror(errno));
        goto out;
    }
    /* the rename itself durable */
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", job->state_path);
    int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    rc = 0;
    job->state_dirty = 0;
    job->state_written_ns = esm_now_ns();
out:
    free(text);
    return rc;
}

void esm_show_progress(esm_job_t *job, int final)
{
    if (!job->progress)
        return;
    int64_t now = esm_now_ns();
    if (!final && now - job->last_progress_ns < PROGRESS_NS)
        return;
    job->last_progress_ns = now;
    double secs = (double)(now - job->t0_ns) / 1e9;
    uint64_t rows = 0, total = 0;
    for (int i = 0; i < job->ntables; i++) {
        rows += job->tables[i].rows_read;
        total += job->tables[i].approx_rows;
    }
    char extra[96] = "";
    if (job->polls)
        snprintf(extra, sizeof(extra), ", polled %" PRIu64 " rows", job->poll_rows);
    else if (job->binlog_events)
        snprintf(extra, sizeof(extra), ", binlog %" PRIu64 " rows, lag %.1f s", job->binlog_rows,
                 (double)job->lag_ms / 1000.0);
    else if (total && rows < total && rows > 0)
        snprintf(extra, sizeof(extra), ", ~%.0f%%, ETA %.0f s", 100.0 * (double)rows / (double)total,
                 secs * (double)(total - rows) / (double)rows);
    flockfile(stderr);
    fprintf(stderr, "\r\033[K%" PRIu64 " rows, %.0f rows/s, %" PRIu64 " failed%s", rows,
            secs > 0 ? (double)rows / secs : 0.0, job->docs_failed + job->rows_unmappable, extra);
    progress_shown = 1;
    if (final) {
        fputc('\n', stderr);
        progress_shown = 0;
    }
    funlockfile(stderr);
}

void esm_serve(esm_job_t *job, int wait_ms, int force_state)
{
    esbulk_poll(job->eb, wait_ms);
    advance(job);
    if (job->state_dirty &&
        (force_state || esm_now_ns() - job->state_written_ns >= STATE_EVERY_NS))
        if (write_state(job))
            job->fatal = 1;
    esm_show_progress(job, 0);
}

void esm_stop_engine(esm_job_t *job)
{
    if (job->closed || !job->eb)
        return;
    job->closing = 1;
    esbulk_close(job->eb, ESM_STOP_GRACE_MS);
    job->closed = 1;
    esm_serve(job, 0, 1);
    if (job->docs_dropped && !job->quiet)
        esm_log("stopping: %" PRIu64 " documents not acknowledged are dropped (read again "
                "at the next start)", job->docs_dropped);
}

void esm_drain(esm_job_t *job)
{
    /* what is buffered is sent now: the engine would otherwise hold the
     * last partial request per node for up to flush.interval.ms */
    if (!job->closed && job->eb)
        esbulk_flush(job->eb, 0);
    while (!job->closed && !job->fatal && !esm_interrupted && esbulk_pending(job->eb) > 0)
        esm_serve(job, 100, 0);
    if (esm_interrupted)
        esm_stop_engine(job);
    esm_serve(job, 0, 1);
}

void esm_add_doc(esm_job_t *job, esm_unit_t *unit, esm_table_t *t, const char *id,
                 size_t id_len, const char *body, size_t body_len, int64_t version)
{
    char errstr[512];
    if (id_len == 0) {
        /* a one-column key of '' (a string column may hold it): no document
         * can have it as _id, and one under a generated _id could never be
         * updated or deleted by its row again. The row is unmappable. */
        esm_row_unmappable(job, unit, t, unit_phase(unit), "",
                           "its primary key is the empty string, which cannot be a document _id",
                           body, body_len);
        return;
    }
    esbulk_docopts_set_version(job->opts, version, ESBULK_VERSION_EXTERNAL_GTE);
    unit->remaining++;
    for (;;) {
        esbulk_err_t err = esbulk_add_opts(job->eb, body ? ESBULK_OP_INDEX : ESBULK_OP_DELETE,
                                           t->index, id, id_len, NULL, 0, body, body_len,
                                           job->opts, unit, errstr, sizeof(errstr));
        if (err == ESBULK_OK) {
            job->docs_added++;
            if (!body)
                job->deletes++;
            return;
        }
        if (err == ESBULK_ERR_QUEUE_FULL && !esm_interrupted) {
            esm_serve(job, 100, 0);
            continue;
        }
        /* refused before sending: no result will come */
        unit->remaining--;
        if (esm_interrupted || job->closed) {
            /* stopping: the document is not added; its unit never completes */
            unit->blocked = 1;
            job->docs_dropped++;
            return;
        }
        char idbuf[512];
        snprintf(idbuf, sizeof(idbuf), "%.*s", (int)id_len, id);
        if (err == ESBULK_ERR_CLOSED) {
            job->fatal = 1;
            return;
        }
        job->docs_failed++;
        if (unit->table)
            t->rows_failed++;
        /* the document as it was given, the row's content kept */
        esm_dead_letter(job, unit_phase(unit), t, NULL, idbuf, errstr, 0, local_error_type(err),
                        body, body_len);
        if (job->on_error_stop) {
            unit->blocked = 1;
            job->stop = 1;
        }
        return;
    }
}


MYSQL *esm_mysql_new(esm_job_t *job)
{
    MYSQL *db = mysql_init(NULL);
    my_bool on = 1, verify = !job->ssl_insecure;

    if (db == NULL || !job->ssl)
        return db;
    /* TLS or no connection; the server's certificate (and that it names
     * the host) checked against --ssl-ca, or the system's authorities */
    mysql_options(db, MYSQL_OPT_SSL_ENFORCE, &on);
    mysql_options(db, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &verify);
    if (job->ssl_ca != NULL)
        mysql_options(db, MYSQL_OPT_SSL_CA, job->ssl_ca);
    if (job->ssl_cert != NULL)
        mysql_options(db, MYSQL_OPT_SSL_CERT, job->ssl_cert);
    if (job->ssl_key != NULL)
        mysql_options(db, MYSQL_OPT_SSL_KEY, job->ssl_key);
    return db;
}

void esm_quote_string(esm_job_t *job, esm_buf_t *b, const char *s)
{
    size_t n = strlen(s);
    esm_buf_reserve(b, n * 2 + 3);
    b->data[b->len++] = '\'';
    b->len += mysql_real_escape_string(job->db, b->data + b->len, s, (unsigned long)n);
    b->data[b->len++] = '\'';
    b->data[b->len] = '\0';
}

MYSQL_RES *esm_query_res(esm_job_t *job, const char *sql)
{
    if (esm_query(job, job->db, sql))
        return NULL;
    MYSQL_RES *res = mysql_store_result(job->db);
    if (!res)
        esm_log("query gave no result: %s", mysql_error(job->db));
    return res;
}
