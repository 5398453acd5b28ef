/*
 * esbulk-mysql - keeps Elasticsearch/OpenSearch indices equal to MySQL or
 * MariaDB tables: a consistent snapshot read with keyset pagination, then
 * the binary log, through libesbulk. See esbulk-mysql(1).
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
#define _GNU_SOURCE
#include "job.h"
#include "../examples/awscreds.h"
#include "../examples/envcreds.h"
#include "../examples/firstline.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

volatile sig_atomic_t esm_interrupted;

#define STATE_EVERY_NS 200000000LL
#define PROGRESS_NS 500000000LL

static const char *usage_text =
    "usage: esbulk-mysql --config FILE --state FILE [OPTIONS]\n"
    "Try 'esbulk-mysql --help' for more information.\n";

static const char *help_text =
    "usage: esbulk-mysql --config FILE --state FILE [OPTIONS]\n"
    "\n"
    "Keeps indices equal to MySQL/MariaDB tables: a consistent snapshot, then the\n"
    "binary log (ROW format). Resumes from the state file after any stop.\n"
    "\n"
    "Source:\n"
    "  --host H (127.0.0.1)  --port N (3306)  --user U (root)  --password P\n"
    "  --socket PATH         --database DB (default database of [table] sections)\n"
    "  --ssl                 TLS to the server, its certificate verified (the\n"
    "                        system's authorities); implied by each of:\n"
    "  --ssl-ca FILE         the authorities (PEM) to verify the server with\n"
    "  --ssl-cert FILE --ssl-key FILE  a client certificate and its key\n"
    "  --ssl-insecure        TLS without verifying the server's certificate\n"
    "  --password-file F     the password from the file's first line (--password\n"
    "                        is in argv, which every user of the machine can read;\n"
    "                        MYSQL_PWD in the environment is read too)\n"
    "Target:\n"
    "  --url URL             a node URL (repeatable; default http://127.0.0.1:9200)\n"
    "  --set KEY=VALUE       a libesbulk configuration key (repeatable)\n"
    "  --set-file KEY=FILE   the same, the value the file's first line: for secrets\n"
    "                        (auth.password, auth.api_key, ...), out of argv; or\n"
    "                        ESBULK_PASSWORD (with --set auth.username=U),\n"
    "                        ESBULK_API_KEY or ESBULK_BEARER in the environment\n"
    "  --aws-region R        sign for Amazon OpenSearch Service (--aws-service es,\n"
    "                        or aoss for Serverless), with the credentials of the\n"
    "                        environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,\n"
    "                        AWS_SESSION_TOKEN) or of --aws-credential-process\n"
    "  --aws-credential-process CMD  credentials printed by CMD (AWS's\n"
    "                        credential_process format), asked for again before\n"
    "                        they expire, e.g. 'aws configure export-credentials\n"
    "                        --format process'\n"
    "Job:\n"
    "  --config FILE         tables and indices (see esbulk-mysql(1))\n"
    "  --state FILE          checkpoints and binlog position (created if missing)\n"
    "  --page-rows N         rows per keyset page (default 2000)\n"
    "  --decimal string|number  DECIMAL as a JSON string (default) or number\n"
    "  --time-zone +HH:MM    the session time zone, stated in DATETIME/TIMESTAMP\n"
    "                        values (default +00:00)\n"
    "  --snapshot-only       stop after the snapshot\n"
    "  --catch-up            follow the binlog up to the position the server had\n"
    "                        when following started, then stop\n"
    "  --resnapshot          forget the state's checkpoints and position: snapshot anew\n"
    "  --server-id N         the replica id used to read the binlog (default 4242)\n"
    "  --binlog-batch-ms N   binlog changes are gathered at most N ms, then re-read\n"
    "                        and sent at once (default 100)\n"
    "  --poll-column COL     no binlog: after the snapshot, poll each table for rows\n"
    "                        with (COL, key) after the last seen, COL a DATETIME,\n"
    "                        TIMESTAMP or DATE set on every write (deletes are not\n"
    "                        seen)\n"
    "  --poll-lag SECONDS    only rows with COL <= NOW() - SECONDS (default 5)\n"
    "  --poll-interval SECONDS  between polls that found nothing more (default 1)\n"
    "  --import-mode         during the snapshot: refresh_interval -1, replicas 0,\n"
    "                        async translog; the index's own values are saved in the\n"
    "                        state file and restored after it (also after a signal,\n"
    "                        and at the next start after a crash)\n"
    "  --create-index        create each index that does not exist, with a mapping\n"
    "                        from the column types (see esbulk-mysql(1))\n"
    "  --shards N            number_of_shards of the indices created\n"
    "  --forcemerge[=N]      after a snapshot completed in this run, merge each\n"
    "                        index down to N segments (default 1), before the\n"
    "                        import-mode settings are restored\n"
    "  --on-error skip|stop  a row that fails: to the dead-letter file and go on\n"
    "                        (default), or stop (the checkpoint stays before it)\n"
    "  --dead-letter FILE    NDJSON of rows that failed, with the reason\n"
    "  --stats FILE          a statistics JSON written at the end\n"
    "  --quiet               no progress line\n"
    "  --help\n"
    "\n"
    "Exit status: 0 every row synced; 1 some rows failed, or a runtime error;\n"
    "2 bad usage; 3 the binlog position is gone from the server (purged): run\n"
    "with --resnapshot; 4 stopped by SIGINT/SIGTERM before the snapshot (or\n"
    "--catch-up) was complete: the next start resumes.\n";

int64_t esm_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int progress_shown;

void esm_log(const char *fmt, ...)
{
    flockfile(stderr); /* one piece: on_lib_log writes from the library's threads */
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
static void on_lib_log(int32_t level, const char *facility, const char *message, void *opaque)
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
        out->p[out->len++] = hex[(unsigned char)v[i] >> 4];
        out->p[out->len++] = hex[(unsigned char)v[i] & 15];
    }
    out->p[out->len] = '\0';
}

json_t *esm_row_key(esm_table_t *t, MYSQL_ROW row, unsigned long *lens)
{
    json_t *key = json_array();
    for (int i = 0; i < t->nkeys; i++) {
        int f = t->ncols + i;
        if (binary_kind(t->keys[i].kind)) {
            esm_buf_t b = {0};
            hex_of(row[f], lens[f], &b);
            json_array_append_new(key, json_stringn(b.p ? b.p : "", b.len));
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
    out->p[0] = '\0';
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
        out->p[out->len++] = '\'';
        out->len += mysql_real_escape_string(job->db, out->p + out->len, v, (unsigned long)n);
        out->p[out->len++] = '\'';
        out->p[out->len] = '\0';
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
        fwrite(line.p, 1, line.len, job->dead);
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

static void on_result(esbulk_t *eb, const esbulk_result_t *r, void *opaque)
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

static void show_progress(esm_job_t *job, int final)
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
    show_progress(job, 0);
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

static void quote_string(esm_job_t *job, esm_buf_t *b, const char *s)
{
    size_t n = strlen(s);
    esm_buf_reserve(b, n * 2 + 3);
    b->p[b->len++] = '\'';
    b->len += mysql_real_escape_string(job->db, b->p + b->len, s, (unsigned long)n);
    b->p[b->len++] = '\'';
    b->p[b->len] = '\0';
}

static MYSQL_RES *query_res(esm_job_t *job, const char *sql)
{
    if (esm_query(job, job->db, sql))
        return NULL;
    MYSQL_RES *res = mysql_store_result(job->db);
    if (!res)
        esm_log("query gave no result: %s", mysql_error(job->db));
    return res;
}

/* 0 when the server logs changes as rows (binlog_format=ROW); else -1,
 * said: a change logged as a statement has no rows in the binlog, and the
 * job, which follows rows, would miss it without a word. The binlog shows
 * a session's own format too (esm_binlog_follow stops at such a change). */
static int binlog_format_row(esm_job_t *job)
{
    MYSQL_RES *res = query_res(job, "SELECT @@GLOBAL.binlog_format");
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

static int describe_table(esm_job_t *job, esm_table_conf_t *tc, esm_table_t *t)
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
    t->qname = b.p;
    if (asprintf(&t->fullname, "%s.%s", tc->db, tc->table) < 0)
        goto out;

    esm_buf_adds(&where, " WHERE TABLE_SCHEMA=");
    quote_string(job, &where, tc->db);
    esm_buf_adds(&where, " AND TABLE_NAME=");
    quote_string(job, &where, tc->table);

    /* engine and size estimate */
    esm_buf_adds(&q, "SELECT ENGINE, TABLE_ROWS FROM information_schema.TABLES");
    esm_buf_adds(&q, where.p);
    if (!(res = query_res(job, q.p)))
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
    quote_string(job, &q, tc->db);
    esm_buf_adds(&q, " AND TABLE_NAME=");
    quote_string(job, &q, tc->table);
    if (!(res = query_res(job, q.p)))
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
    esm_buf_adds(&q, where.p);
    esm_buf_adds(&q, " ORDER BY ORDINAL_POSITION");
    if (!(res = query_res(job, q.p))) {
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
    esm_buf_adds(&q, where.p);
    esm_buf_adds(&q, " AND NON_UNIQUE=0 ORDER BY INDEX_NAME='PRIMARY' DESC, INDEX_NAME, "
                     "SEQ_IN_INDEX");
    if (!(res = query_res(job, q.p))) {
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
        t->cols[i].kind = kind_of(c->data_type, c->column_type, strstr(checks.p, pat) != NULL);
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
    t->select_list = sl.p;
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

/* Frees what describe_table made of t. */
static void free_described(esm_table_t *t)
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
    if (describe_table(job, tc, &nt)) {
        free_described(&nt);
        return -1;
    }
    int same_key = nt.nkeys == t->nkeys;
    for (int k = 0; same_key && k < t->nkeys; k++)
        same_key = !strcmp(nt.keys[k].name, t->keys[k].name) && nt.keys[k].kind == t->keys[k].kind;
    if (!same_key) {
        esm_log("table %s: its key changed: the documents' _id would change; delete the index "
                "and run with --resnapshot", t->fullname);
        free_described(&nt);
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
    free_described(&old);
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

/* ------------------------------------------------------------------------
 * The snapshot.
 */
void esm_key_greater(esm_job_t *job, esm_table_t *t, json_t *key, size_t from, esm_buf_t *q)
{
    /* (k1,...,kn) > (v1,...,vn) as k1 >= v1 AND (k1 > v1 OR (k1 = v1 AND
     * (k2 > v2 OR ...))): the leading range lets the optimizer seek. */
    quote_ident(q, t->keys[0].name);
    esm_buf_adds(q, ">=");
    esm_key_literal(job, t, 0, json_string_value(json_array_get(key, from)), q);
    esm_buf_adds(q, " AND (");
    for (int i = 0; i < t->nkeys; i++) {
        if (i)
            esm_buf_adds(q, " OR (");
        else
            esm_buf_addc(q, '(');
        for (int j = 0; j < i; j++) {
            quote_ident(q, t->keys[j].name);
            esm_buf_addc(q, '=');
            esm_key_literal(job, t, j,
                            json_string_value(json_array_get(key, from + (size_t)j)), q);
            esm_buf_adds(q, " AND ");
        }
        quote_ident(q, t->keys[i].name);
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
            quote_ident(&q, t->keys[i].name);
        }
        char lim[32];
        snprintf(lim, sizeof(lim), " LIMIT %d", job->page_rows);
        esm_buf_adds(&q, lim);
        if (esm_query(job, job->db, q.p)) {
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
                if (esm_row_unmappable(job, u, t, "snapshot", id.p, why, NULL, 0))
                    break;
                continue;
            }
            int f = t->ncols + t->nkeys; /* --poll-column's value */
            esm_add_doc(job, u, t, id.p, id.len, body.p, body.len,
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
    MYSQL_RES *res = query_res(job, "SHOW STATUS LIKE 'binlog_snapshot_%'");
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
    quote_string(job, &q, *file);
    char p[32];
    snprintf(p, sizeof(p), ",%" PRIu64 ")", *pos);
    esm_buf_adds(&q, p);
    res = query_res(job, q.p);
    esm_buf_free(&q);
    if (res) {
        row = mysql_fetch_row(res);
        if (row && row[0])
            *gtid = strdup(row[0]);
        mysql_free_result(res);
    }
    return 0;
}

static int run_snapshot(esm_job_t *job)
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
            MYSQL_RES *res = query_res(job, q);
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

/* ------------------------------------------------------------------------
 * Options and main.
 */
enum {
    O_HOST = 256, O_PORT, O_USER, O_PASSWORD, O_SOCKET, O_DATABASE, O_URL, O_SET, O_CONFIG,
    O_STATE, O_PAGE_ROWS, O_DECIMAL, O_TZ, O_SNAPSHOT_ONLY, O_CATCH_UP, O_RESNAPSHOT,
    O_SERVER_ID, O_ON_ERROR, O_DEAD, O_STATS, O_QUIET, O_HELP, O_IMPORT, O_POLL_COLUMN,
    O_POLL_LAG, O_POLL_INTERVAL, O_CREATE_INDEX, O_SHARDS, O_FORCEMERGE, O_BINLOG_BATCH_MS,
    O_AWS_REGION, O_AWS_SERVICE, O_AWS_PROCESS, O_PASSWORD_FILE, O_SET_FILE, O_SSL, O_SSL_CA,
    O_SSL_CERT, O_SSL_KEY, O_SSL_INSECURE
};

static const struct option long_opts[] = {
    {"host", required_argument, NULL, O_HOST},
    {"port", required_argument, NULL, O_PORT},
    {"user", required_argument, NULL, O_USER},
    {"password", required_argument, NULL, O_PASSWORD},
    {"password-file", required_argument, NULL, O_PASSWORD_FILE},
    {"ssl", no_argument, NULL, O_SSL},
    {"ssl-ca", required_argument, NULL, O_SSL_CA},
    {"ssl-cert", required_argument, NULL, O_SSL_CERT},
    {"ssl-key", required_argument, NULL, O_SSL_KEY},
    {"ssl-insecure", no_argument, NULL, O_SSL_INSECURE},
    {"socket", required_argument, NULL, O_SOCKET},
    {"database", required_argument, NULL, O_DATABASE},
    {"url", required_argument, NULL, O_URL},
    {"set", required_argument, NULL, O_SET},
    {"set-file", required_argument, NULL, O_SET_FILE},
    {"aws-region", required_argument, NULL, O_AWS_REGION},
    {"aws-service", required_argument, NULL, O_AWS_SERVICE},
    {"aws-credential-process", required_argument, NULL, O_AWS_PROCESS},
    {"config", required_argument, NULL, O_CONFIG},
    {"state", required_argument, NULL, O_STATE},
    {"page-rows", required_argument, NULL, O_PAGE_ROWS},
    {"binlog-batch-ms", required_argument, NULL, O_BINLOG_BATCH_MS},
    {"decimal", required_argument, NULL, O_DECIMAL},
    {"time-zone", required_argument, NULL, O_TZ},
    {"snapshot-only", no_argument, NULL, O_SNAPSHOT_ONLY},
    {"catch-up", no_argument, NULL, O_CATCH_UP},
    {"resnapshot", no_argument, NULL, O_RESNAPSHOT},
    {"server-id", required_argument, NULL, O_SERVER_ID},
    {"on-error", required_argument, NULL, O_ON_ERROR},
    {"dead-letter", required_argument, NULL, O_DEAD},
    {"stats", required_argument, NULL, O_STATS},
    {"quiet", no_argument, NULL, O_QUIET},
    {"import-mode", no_argument, NULL, O_IMPORT},
    {"poll-column", required_argument, NULL, O_POLL_COLUMN},
    {"poll-lag", required_argument, NULL, O_POLL_LAG},
    {"poll-interval", required_argument, NULL, O_POLL_INTERVAL},
    {"create-index", no_argument, NULL, O_CREATE_INDEX},
    {"shards", required_argument, NULL, O_SHARDS},
    {"forcemerge", optional_argument, NULL, O_FORCEMERGE},
    {"help", no_argument, NULL, O_HELP},
    {NULL, 0, NULL, 0}};

/* A credentials' refresh that failed (awscreds.c's thread). */
static void on_aws_log(const char *message, void *opaque)
{
    (void)opaque;
    esm_log("warning: %s", message);
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

static int usage_error(const char *msg)
{
    fprintf(stderr, "esbulk-mysql: %s\n%s", msg, usage_text);
    return ESM_EXIT_USAGE;
}

static void on_signal(int sig)
{
    (void)sig;
    esm_interrupted = 1;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void write_stats(esm_job_t *job)
{
    if (!job->stats_path)
        return;
    json_t *o = json_object();
    double secs = (double)(esm_now_ns() - job->t0_ns) / 1e9;
    uint64_t rows = 0;
    json_t *tables = json_object();
    for (int i = 0; i < job->ntables; i++) {
        esm_table_t *t = &job->tables[i];
        rows += t->rows_read;
        json_t *to = json_object();
        json_object_set_new(to, "rows_read", json_integer((json_int_t)t->rows_read));
        json_object_set_new(to, "rows_failed", json_integer((json_int_t)t->rows_failed));
        json_object_set_new(to, "snapshot_done", json_boolean(t->done));
        json_object_set_new(to, "index", json_string(t->index));
        json_object_set_new(tables, t->fullname, to);
    }
    json_object_set_new(o, "tables", tables);
    json_object_set_new(o, "seconds", json_real(secs));
    json_object_set_new(o, "snapshot_rows", json_integer((json_int_t)rows));
    json_object_set_new(o, "snapshot_rows_per_s", json_real(secs > 0 ? (double)rows / secs : 0));
    json_object_set_new(o, "docs_added", json_integer((json_int_t)job->docs_added));
    json_object_set_new(o, "docs_indexed", json_integer((json_int_t)job->docs_indexed));
    json_object_set_new(o, "docs_superseded", json_integer((json_int_t)job->docs_conflict));
    json_object_set_new(o, "docs_failed", json_integer((json_int_t)job->docs_failed));
    json_object_set_new(o, "rows_unmappable", json_integer((json_int_t)job->rows_unmappable));
    json_object_set_new(o, "docs_dropped", json_integer((json_int_t)job->docs_dropped));
    json_object_set_new(o, "interrupted", json_boolean(esm_interrupted));
    json_object_set_new(o, "deletes", json_integer((json_int_t)job->deletes));
    json_object_set_new(o, "binlog_events", json_integer((json_int_t)job->binlog_events));
    json_object_set_new(o, "binlog_rows", json_integer((json_int_t)job->binlog_rows));
    if (job->poll_column) {
        json_object_set_new(o, "polls", json_integer((json_int_t)job->polls));
        json_object_set_new(o, "poll_rows", json_integer((json_int_t)job->poll_rows));
    }
    json_t *b = json_object_get(job->state, "binlog");
    json_object_set(o, "binlog_position", b ? b : json_null());
    if (job->nlags) {
        int64_t *sorted = malloc(job->nlags * sizeof(int64_t));
        memcpy(sorted, job->lags, job->nlags * sizeof(int64_t));
        qsort(sorted, job->nlags, sizeof(int64_t), cmp_i64);
        json_t *lag = json_object();
        json_object_set_new(lag, "samples", json_integer((json_int_t)job->lag_samples));
        json_object_set_new(lag, "p50_ms", json_integer(sorted[job->nlags / 2]));
        json_object_set_new(lag, "p99_ms", json_integer(sorted[job->nlags * 99 / 100]));
        json_object_set_new(lag, "max_ms", json_integer(sorted[job->nlags - 1]));
        json_object_set_new(o, "binlog_lag", lag);
        free(sorted);
    }
    if (job->napplies) {
        int64_t *sorted = malloc(job->napplies * sizeof(int64_t));
        memcpy(sorted, job->applies, job->napplies * sizeof(int64_t));
        qsort(sorted, job->napplies, sizeof(int64_t), cmp_i64);
        json_t *ap = json_object();
        json_object_set_new(ap, "batches", json_integer((json_int_t)job->napplies));
        json_object_set_new(ap, "p50_ms", json_integer(sorted[job->napplies / 2]));
        json_object_set_new(ap, "p99_ms", json_integer(sorted[job->napplies * 99 / 100]));
        json_object_set_new(ap, "max_ms", json_integer(sorted[job->napplies - 1]));
        json_object_set_new(o, "binlog_apply", ap);
        free(sorted);
    }
    char *es = esbulk_stats_json(job->eb);
    json_t *ej = es ? json_loads(es, 0, NULL) : NULL;
    esbulk_free(es);
    json_object_set_new(o, "esbulk", ej ? ej : json_null());
    if (json_dump_file(o, job->stats_path, JSON_INDENT(1)))
        esm_log("%s: cannot write the statistics", job->stats_path);
    json_decref(o);
}

int main(int argc, char **argv)
{
    esm_job_t job_s, *job = &job_s;
    memset(job, 0, sizeof(*job));
    job->host = "127.0.0.1";
    job->port = 3306;
    job->user = "root";
    job->page_rows = 2000;
    job->binlog_batch_ms = 100;
    job->server_id = 4242;
    job->poll_lag = 5;
    job->poll_interval = 1;
    snprintf(job->map.tz, sizeof(job->map.tz), "+00:00");
    char urls[4096] = "";
    char *sets[128];
    int nsets = 0;
    int set_file[128]; /* sets[i] is a --set-file's KEY=FILE */
    const char *aws_region = NULL, *aws_service = NULL, *aws_process = NULL;
    const char *password_file = NULL;
    char *password_read = NULL; /* from --password-file or MYSQL_PWD, wiped at the end */
    envcreds_t env = {NULL, NULL, NULL}; /* the cluster's, ESBULK_PASSWORD..., wiped too */
    awscreds_t *aws = NULL;
    char errstr[512];
    int rc = ESM_EXIT_FAILED;

    int c;
    while ((c = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
        switch (c) {
        case O_HOST: job->host = optarg; break;
        case O_PORT: job->port = (unsigned)atoi(optarg); break;
        case O_USER: job->user = optarg; break;
        case O_PASSWORD: job->password = optarg; break;
        case O_PASSWORD_FILE: password_file = optarg; break;
        case O_SSL: job->ssl = 1; break;
        case O_SSL_CA: job->ssl = 1, job->ssl_ca = optarg; break;
        case O_SSL_CERT: job->ssl = 1, job->ssl_cert = optarg; break;
        case O_SSL_KEY: job->ssl = 1, job->ssl_key = optarg; break;
        case O_SSL_INSECURE: job->ssl = 1, job->ssl_insecure = 1; break;
        case O_SOCKET: job->socket = optarg; break;
        case O_DATABASE: job->database = optarg; break;
        case O_URL:
            if (strlen(urls) + strlen(optarg) + 2 > sizeof(urls))
                return usage_error("too many --url");
            if (*urls)
                strcat(urls, ",");
            strcat(urls, optarg);
            break;
        case O_SET:
        case O_SET_FILE:
            if (nsets == 128 || !strchr(optarg, '='))
                return usage_error(c == O_SET ? "--set KEY=VALUE" : "--set-file KEY=FILE");
            set_file[nsets] = c == O_SET_FILE;
            sets[nsets++] = optarg;
            break;
        case O_CONFIG: job->config_path = optarg; break;
        case O_AWS_REGION: aws_region = optarg; break;
        case O_AWS_SERVICE: aws_service = optarg; break;
        case O_AWS_PROCESS: aws_process = optarg; break;
        case O_STATE: job->state_path = optarg; break;
        case O_PAGE_ROWS:
            job->page_rows = atoi(optarg);
            if (job->page_rows < 1 || job->page_rows > 1000000)
                return usage_error("--page-rows: 1 to 1000000");
            break;
        case O_BINLOG_BATCH_MS: {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (*end || end == optarg || v < 1 || v > 60000)
                return usage_error("--binlog-batch-ms: 1 to 60000");
            job->binlog_batch_ms = (int)v;
            break;
        }
        case O_DECIMAL:
            if (!strcmp(optarg, "number"))
                job->map.decimal_number = 1;
            else if (strcmp(optarg, "string"))
                return usage_error("--decimal string|number");
            break;
        case O_TZ:
            if (strlen(optarg) != 6 || (optarg[0] != '+' && optarg[0] != '-') ||
                !isdigit((unsigned char)optarg[1]) || !isdigit((unsigned char)optarg[2]) ||
                optarg[3] != ':' || !isdigit((unsigned char)optarg[4]) ||
                !isdigit((unsigned char)optarg[5]))
                return usage_error("--time-zone +HH:MM");
            snprintf(job->map.tz, sizeof(job->map.tz), "%s", optarg);
            break;
        case O_SNAPSHOT_ONLY: job->snapshot_only = 1; break;
        case O_CATCH_UP: job->catch_up = 1; break;
        case O_RESNAPSHOT: job->resnapshot = 1; break;
        case O_SERVER_ID: job->server_id = (unsigned)strtoul(optarg, NULL, 10); break;
        case O_ON_ERROR:
            if (!strcmp(optarg, "stop"))
                job->on_error_stop = 1;
            else if (strcmp(optarg, "skip"))
                return usage_error("--on-error skip|stop");
            break;
        case O_DEAD: job->dead_letter_path = optarg; break;
        case O_STATS: job->stats_path = optarg; break;
        case O_QUIET: job->quiet = 1; break;
        case O_IMPORT: job->import_mode = 1; break;
        case O_POLL_COLUMN: job->poll_column = optarg; break;
        case O_CREATE_INDEX: job->create_index = 1; break;
        case O_SHARDS:
            job->shards = atoi(optarg);
            if (job->shards < 1 || job->shards > 1024)
                return usage_error("--shards: 1 to 1024");
            break;
        case O_FORCEMERGE:
            job->forcemerge = optarg ? atoi(optarg) : 1;
            if (job->forcemerge < 1 || job->forcemerge > 1000)
                return usage_error("--forcemerge[=N]: N segments, 1 to 1000");
            break;
        case O_POLL_LAG:
        case O_POLL_INTERVAL: {
            char *end;
            double v = strtod(optarg, &end);
            if (*end || !(v >= 0 && v <= 86400) || (c == O_POLL_INTERVAL && v < 0.01))
                return usage_error(c == O_POLL_LAG ? "--poll-lag: 0 to 86400 seconds"
                                                   : "--poll-interval: 0.01 to 86400 seconds");
            if (c == O_POLL_LAG)
                job->poll_lag = v;
            else
                job->poll_interval = v;
            break;
        }
        case O_HELP: fputs(help_text, stdout); return 0;
        default: fputs(usage_text, stderr); return ESM_EXIT_USAGE;
        }
    }
    if (optind < argc)
        return usage_error("unexpected argument");
    if (!job->config_path || !job->state_path)
        return usage_error("--config and --state are required");
    if (esm_config_load(&job->cfg, job->config_path, job->database, errstr, sizeof(errstr)))
        return usage_error(errstr);
    if (password_file != NULL && job->password != NULL)
        return usage_error("--password and --password-file: give one");
    if (password_file != NULL) {
        if (firstline_read("--password-file", password_file, &password_read, errstr,
                           sizeof(errstr)))
            return usage_error(errstr);
        job->password = password_read;
    } else if (job->password == NULL && getenv("MYSQL_PWD") != NULL) {
        /* as the MySQL tools read it; taken out of the environment, which
         * a credential process would otherwise inherit */
        if ((password_read = strdup(getenv("MYSQL_PWD"))) == NULL)
            return usage_error("out of memory");
        job->password = password_read;
    }
    unsetenv("MYSQL_PWD");
    if (aws_region == NULL && (aws_service != NULL || aws_process != NULL)) {
        firstline_free(password_read);
        return usage_error("--aws-service and --aws-credential-process need --aws-region");
    }
    /* the cluster's credentials, out of the environment too (before a
     * credential process could inherit them) */
    if (envcreds_take(&env) != 0) {
        firstline_free(password_read);
        return usage_error("out of memory");
    }
    if (aws_region != NULL) {
        /* from where the AWS tools take them, never argv (which any user
         * on the machine can read) */
        char why[400];

        if ((aws = awscreds_new(aws_region, aws_service, aws_process, on_aws_log, NULL, why,
                                sizeof(why))) == NULL) {
            snprintf(errstr, sizeof(errstr), "--aws-region: %s", why);
            envcreds_free(&env);
            firstline_free(password_read);
            return usage_error(errstr);
        }
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    job->t0_ns = esm_now_ns();
    job->progress = !job->quiet && isatty(STDERR_FILENO);

    /* the state file */
    json_error_t jerr;
    if (access(job->state_path, F_OK) == 0) {
        job->state = json_load_file(job->state_path, 0, &jerr);
        if (!job->state || !json_is_object(job->state)) {
            esm_log("%s: not a state file: %s", job->state_path, jerr.text);
            rc = ESM_EXIT_USAGE;
            goto out;
        }
    } else {
        job->state = json_object();
        json_object_set_new(job->state, "format", json_integer(1));
    }
    if (job->resnapshot) {
        /* the documents in the index carry versions up to the state's
         * positions: a new snapshot below them would be refused as older */
        static const char *const kept[] = {"start", "binlog"};
        for (size_t k = 0; k < sizeof(kept) / sizeof(kept[0]); k++) {
            json_t *b = json_object_get(job->state, kept[k]);
            const char *f = json_string_value(json_object_get(b, "file"));
            int64_t v = f ? esm_version_of(f, (uint64_t)json_integer_value(
                                                  json_object_get(b, "pos")))
                          : 0;
            if (v > job->version_floor)
                job->version_floor = v;
        }
        json_object_del(job->state, "start");
        json_object_del(job->state, "binlog");
        json_object_del(job->state, "tables");
    }
    {
        /* a state file belongs to one way of following: the documents'
         * versions differ (binlog positions, or --poll-column times) */
        json_t *start = json_object_get(job->state, "start");
        int polled = json_object_get(start, "poll_from") != NULL;
        int binlogged = json_object_get(job->state, "binlog") != NULL ||
                        json_object_get(start, "file") != NULL;
        if (job->poll_column ? binlogged : polled) {
            rc = usage_error(job->poll_column
                                 ? "the state file follows the binlog: --poll-column needs a "
                                   "new state file (or --resnapshot into a new index)"
                                 : "the state file was made with --poll-column: give it again "
                                   "(or --resnapshot into a new index)");
            goto out;
        }
    }

    /* MySQL */
    if ((job->db = esm_mysql_new(job)) == NULL) {
        esm_log("out of memory");
        goto out;
    }
    mysql_options(job->db, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    if (!mysql_real_connect(job->db, job->socket ? NULL : job->host, job->user, job->password,
                            NULL, job->port, job->socket, 0)) {
        esm_log("cannot connect to MySQL at %s:%u: %s", job->host, job->port,
                mysql_error(job->db));
        goto out;
    }
    {
        char tzq[512];
        snprintf(tzq, sizeof(tzq), "SET time_zone='%s'", job->map.tz);
        if (esm_query(job, job->db, tzq))
            goto out;
    }

    job->tables = calloc((size_t)job->cfg.ntables, sizeof(esm_table_t));
    job->ntables = job->cfg.ntables;
    json_t *st_tables = json_object_get(job->state, "tables");
    for (int i = 0; i < job->ntables; i++) {
        esm_table_t *t = &job->tables[i];
        int e = describe_table(job, &job->cfg.tables[i], t);
        if (e) {
            rc = e; /* a table, column or key that does not fit: exit 2 */
            goto out;
        }
        json_t *ts = json_object_get(st_tables, t->fullname);
        if (ts) {
            json_t *k = json_object_get(ts, "key");
            if (json_is_array(k) && json_array_size(k) == (size_t)t->nkeys)
                t->ack_key = json_incref(k);
            json_t *pk = json_object_get(ts, "poll");
            if (job->poll_column && json_is_array(pk) &&
                json_array_size(pk) == (size_t)t->nkeys + 1)
                t->poll_key = json_incref(pk);
            t->done = json_is_true(json_object_get(ts, "done"));
        }
    }
    if (job->dead_letter_path) {
        job->dead = fopen(job->dead_letter_path, "a");
        if (!job->dead) {
            esm_log("%s: %s", job->dead_letter_path, strerror(errno));
            rc = ESM_EXIT_USAGE;
            goto out;
        }
    }

    /* libesbulk */
    {
        esbulk_conf_t *conf = esbulk_conf_new();
        if (*urls && esbulk_conf_set(conf, "urls", urls, errstr, sizeof(errstr))) {
            esbulk_conf_destroy(conf);
            rc = usage_error(errstr);
            goto out;
        }
        esbulk_conf_set(conf, "result.keep_body", "true", errstr, sizeof(errstr));
        esbulk_conf_set(conf, "body.validate", "true", errstr, sizeof(errstr));
        esbulk_conf_set(conf, "flush.docs", "1000", errstr, sizeof(errstr));
        if (aws != NULL) {
            /* a managed domain answers at one endpoint; its nodes'
             * addresses are private (--set still wins) */
            esbulk_conf_set(conf, "topology.discovery", "false", errstr, sizeof(errstr));
            if (awscreds_conf(aws, conf, errstr, sizeof(errstr))) {
                esbulk_conf_destroy(conf);
                rc = usage_error(errstr);
                goto out;
            }
        }
        for (int i = 0; i < nsets; i++) {
            /* KEY=VALUE split in place (a value may be long: a bearer
             * token, http.headers) */
            char *value = NULL, *eq = strchr(sets[i], '=');
            *eq = '\0';
            /* --set-file: the value is the file's first line (a secret kept
             * out of argv) */
            if (set_file[i] &&
                firstline_read("--set-file", eq + 1, &value, errstr, sizeof(errstr))) {
                esbulk_conf_destroy(conf);
                rc = usage_error(errstr);
                goto out;
            }
            esbulk_err_t e = esbulk_conf_set(conf, sets[i], value != NULL ? value : eq + 1,
                                             errstr, sizeof(errstr));
            firstline_free(value);
            if (e) {
                esbulk_conf_destroy(conf);
                rc = usage_error(errstr);
                goto out;
            }
        }
        /* what --set leaves out, from the environment */
        if (envcreds_conf(&env, conf, "--set auth.username=U", errstr, sizeof(errstr))) {
            esbulk_conf_destroy(conf);
            rc = usage_error(errstr);
            goto out;
        }
        esbulk_conf_set_result_cb(conf, on_result);
        esbulk_conf_set_log_cb(conf, on_lib_log);
        esbulk_conf_set_opaque(conf, job);
        /* the engine's threads never take SIGINT/SIGTERM: this thread does,
         * so that a blocking MySQL read returns (EINTR) and the flag is seen */
        sigset_t stops, old;
        sigemptyset(&stops);
        sigaddset(&stops, SIGINT);
        sigaddset(&stops, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &stops, &old);
        job->eb = esbulk_new(conf, errstr, sizeof(errstr));
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        esbulk_conf_destroy(conf);
        if (!job->eb) {
            /* the configuration refused as a whole (two kinds of
             * credentials, ...): bad usage, as a refused --set is */
            rc = usage_error(errstr);
            goto out;
        }
        if (aws != NULL && awscreds_start(aws, job->eb, errstr, sizeof(errstr))) {
            esm_log("%s", errstr);
            goto out;
        }
        job->opts = esbulk_docopts_new();
    }

    /* a key the binlog cannot be followed on, or a server that logs
     * changes as statements: said before the snapshot, not after it */
    if (!job->snapshot_only && !job->poll_column) {
        int e = esm_binlog_keys_supported(job) ? -2 : binlog_format_row(job);
        if (e) {
            /* refused at start, nothing read or sent: the configuration (or
             * the server's) must change, a restart cannot help */
            if (e == -2)
                rc = ESM_EXIT_USAGE;
            goto out;
        }
    }
    /* a position to follow from must still be on the server */
    if (!job->snapshot_only && !job->poll_column) {
        json_t *b = json_object_get(job->state, "binlog");
        if (!b)
            b = json_object_get(job->state, "start");
        const char *f = json_string_value(json_object_get(b, "file"));
        if (f) {
            int e = esm_binlog_exists(job, f);
            if (e < 0)
                goto out;
            if (e == 0) {
                esm_log("the binary log %s (position %" JSON_INTEGER_FORMAT
                        ") is no longer on the server (purged): the index cannot be brought "
                        "up to date from it; run again with --resnapshot to read the tables "
                        "anew", f, json_integer_value(json_object_get(b, "pos")));
                rc = ESM_EXIT_PURGED;
                goto out;
            }
        }
    }

    if (job->create_index && esm_create_indices(job))
        job->fatal = 1;
    int pending = 0;
    for (int i = 0; i < job->ntables; i++)
        pending += !job->tables[i].done;
    if (!job->fatal) {
        /* a run that died in import mode left the saved values: with
         * --import-mode they are kept (the snapshot goes on), else restored */
        if (pending && job->import_mode) {
            if (esm_import_begin(job))
                job->fatal = 1;
        } else if (esm_import_restore(job)) {
            job->fatal = 1;
        }
    }
    if (!job->fatal && run_snapshot(job) && !esm_interrupted)
        job->fatal = 1;
    /* every snapshot document acknowledged before the binlog phase (after a
     * signal: what is acknowledged within the grace, the rest dropped) */
    esm_drain(job);
    int snapshot_done = 1;
    for (int i = 0; i < job->ntables; i++)
        snapshot_done &= job->tables[i].done;
    /* --forcemerge after a snapshot completed in this run, before the
     * replicas come back (they then copy the merged segments) */
    if (job->forcemerge && pending && snapshot_done && !esm_interrupted && !job->fatal &&
        !job->stop) {
        esm_drain(job);
        if (esm_forcemerge(job))
            job->fatal = 1;
    }
    /* the index's own settings back, before following the binlog (also
     * after a signal or a failure) */
    if (json_object_get(job->state, "import")) {
        esm_drain(job);
        if (esm_import_restore(job))
            job->fatal = 1;
        esm_serve(job, 0, 1);
    }
    if (snapshot_done && !job->quiet) {
        uint64_t rows = 0;
        for (int i = 0; i < job->ntables; i++)
            rows += job->tables[i].rows_read;
        double secs = (double)(esm_now_ns() - job->t0_ns) / 1e9;
        show_progress(job, 1);
        esm_log("snapshot complete: %" PRIu64 " rows read this run in %.1f s (%.0f rows/s)", rows,
                secs, secs > 0 ? (double)rows / secs : 0.0);
    }
    if (snapshot_done && !job->snapshot_only && !job->stop && !job->fatal && !esm_interrupted) {
        if (!job->poll_column && !json_object_get(job->state, "binlog")) {
            json_object_set(job->state, "binlog", json_object_get(job->state, "start"));
            job->state_dirty = 1;
            esm_serve(job, 0, 1);
        }
        int brc = job->poll_column ? esm_poll_follow(job) : esm_binlog_follow(job);
        if (brc == ESM_EXIT_PURGED)
            rc = brc;
        else if (brc)
            job->fatal = 1;
    }
    esm_drain(job);
    if (!job->closed) { /* after a runtime error: what is buffered still */
        esbulk_flush(job->eb, 30000);
        esm_serve(job, 0, 1);
    }
    snapshot_done = 1;
    for (int i = 0; i < job->ntables; i++)
        snapshot_done &= job->tables[i].done;
    /* cut short by a signal: the snapshot, or --catch-up, is not complete */
    int incomplete = !snapshot_done || (job->catch_up && !job->snapshot_only && !job->caught_up);
    if (rc != ESM_EXIT_PURGED && rc != ESM_EXIT_USAGE)
        rc = (job->fatal || job->docs_failed || job->rows_unmappable || job->stop)
                 ? ESM_EXIT_FAILED
             : esm_interrupted && incomplete ? ESM_EXIT_INTERRUPTED
                                             : 0;
    show_progress(job, 1);
    if (!job->quiet || rc)
        esm_log("%s: %" PRIu64 " documents sent, %" PRIu64 " indexed, %" PRIu64
                " superseded, %" PRIu64 " failed, %" PRIu64 " dropped at the stop, %" PRIu64
                " rows unmappable, %" PRIu64 " binlog rows",
                esm_interrupted ? "stopped by a signal" : job->stop ? "stopped at a failure"
                                                                    : "done",
                job->docs_added, job->docs_indexed, job->docs_conflict, job->docs_failed,
                job->docs_dropped, job->rows_unmappable, job->binlog_rows);
    write_stats(job);
out:
    awscreds_destroy(aws); /* its thread updates the handle */
    if (job->eb)
        esbulk_destroy(job->eb);
    esbulk_docopts_destroy(job->opts);
    if (job->dead)
        fclose(job->dead);
    if (job->db)
        mysql_close(job->db);
    for (int i = 0; i < job->ntables; i++) {
        esm_table_t *t = &job->tables[i];
        free_described(t);
        free(t->layout_ok);
        json_decref(t->ack_key);
        json_decref(t->poll_key);
        json_decref(t->poll_read);
        while (t->head) {
            esm_unit_t *u = t->head;
            t->head = u->next;
            json_decref(u->key);
            free(u);
        }
        for (size_t j = 0; j < t->npend; j++)
            json_decref(t->pend[j].key);
        free(t->pend);
    }
    while (job->bhead) {
        esm_unit_t *u = job->bhead;
        job->bhead = u->next;
        free(u->file);
        free(u);
    }
    free(job->tables);
    free(job->lags);
    free(job->applies);
    json_decref(job->state);
    esm_config_free(&job->cfg);
    mysql_library_end();
    firstline_free(password_read);
    envcreds_free(&env);
    return rc;
}
