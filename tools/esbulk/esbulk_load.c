/*
 * esbulk load - bulk-load NDJSON or _bulk-format input through libesbulk.
 *
 * One thread reads the input line by line and calls esbulk_add(); results
 * come back through the result callback, which libesbulk runs only inside
 * esbulk_poll()/esbulk_flush()/esbulk_close() on this same thread, so the
 * counters and the failure files need no locking. Only the log callback
 * runs on the library's threads: it writes under stderr's lock (on_log).
 * The handle is made at the first document (start_engine).
 *
 * Each accepted document carries a small malloc'ed record (line number,
 * action fields and, with --failed, a copy of its source line) as its
 * doc_opaque; the callback writes failures from it and frees it.
 */
#define _XOPEN_SOURCE 700
#include "esbulk_load.h"
#include "../common/awscreds.h"
#include "../common/envcreds.h"
#include "../common/firstline.h"
#include "../common/logonce.h"

#include <esbulk.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define EXIT_USAGE 2
#define MAX_URLS 64
#define MAX_SETS 128
#define MAX_HEADERS 64
#define SHOWN_FAILURES 20  /* failures printed in detail on stderr */
#define LOG_REPEAT_NS (60 * 1000000000LL) /* a library message said again after */
#define POLL_EVERY 1000    /* lines between esbulk_poll(eb, 0) calls */
#define PROGRESS_NS 250000000LL

static const char *load_usage =
    "usage: esbulk load [OPTIONS] [FILE ...]\n"
    "Try 'esbulk load --help' for more information.\n";

static const char *load_help =
    "usage: esbulk load [OPTIONS] [FILE ...]\n"
    "\n"
    "Loads documents into Elasticsearch/OpenSearch through libesbulk. FILE \"-\" or\n"
    "no FILE reads standard input. Blank lines are skipped, and so is a UTF-8 byte\n"
    "order mark at the start of an input.\n"
    "\n"
    "Input:\n"
    "  --format auto|ndjson|bulk  ndjson: one document per line; bulk: action and\n"
    "                        source line pairs as the _bulk API takes them (delete has\n"
    "                        no source line; one missing is detected when the line\n"
    "                        in its place is an action line of metadata keys only:\n"
    "                        see esbulk(1)). auto (default): bulk when the first\n"
    "                        non-blank line of a file is an object whose only key is\n"
    "                        index/create/update/delete holding an object, else ndjson.\n"
    "                        Action keys: _index, _id, routing, version with\n"
    "                        version_type external|external_gte, if_seq_no with\n"
    "                        if_primary_term, pipeline, require_alias,\n"
    "                        retry_on_conflict; _type is ignored; another key, a bad\n"
    "                        value or an option that does not fit the action fails\n"
    "                        the document\n"
    "  --index NAME          target index, alias or data stream (required for ndjson;\n"
    "                        for bulk, the default of actions without _index)\n"
    "  --op OP               ndjson: index (default), create, update (each line is sent\n"
    "                        as {\"doc\": LINE}) or delete (the line only supplies the id)\n"
    "  --id-field F          ndjson: take _id from the top-level field F (a string, or\n"
    "                        a number as its text; missing or null: no _id; the\n"
    "                        empty string fails the document)\n"
    "  --routing-field F     ndjson: take routing from the top-level field F\n"
    "\n"
    "Connection:\n"
    "  --url URL             a node URL (repeatable); default http://127.0.0.1:9200\n"
    "  --user U --password P | --api-key K | --bearer T\n"
    "                        (or from the environment, out of argv: ESBULK_PASSWORD\n"
    "                        with --user, ESBULK_API_KEY, ESBULK_BEARER)\n"
    "  --aws-region R [--aws-service es|aoss]  sign for Amazon OpenSearch Service\n"
    "                        (Serverless: aoss) with the credentials of the\n"
    "                        environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,\n"
    "                        AWS_SESSION_TOKEN (auth.aws.*)\n"
    "  --aws-credential-process CMD  or those CMD prints (AWS's credential_process\n"
    "                        format), asked for again before they expire; e.g.\n"
    "                        'aws configure export-credentials --format process'\n"
    "  -H, --header 'NAME: VALUE'  an HTTP header for every request, such as\n"
    "                        'X-Opaque-Id: nightly' (repeatable; http.headers)\n"
    "  --insecure            do not verify TLS certificates\n"
    "  --ca-file F           CA certificates to verify the server with\n"
    "\n"
    "Tuning (each maps onto a configuration key, see esbulk-config(7)):\n"
    "  --id-generate none|time|content  ids for documents without one (id.generate)\n"
    "  --flush-docs N  --flush-bytes N  --flush-interval-ms N\n"
    "  --inflight N          requests in flight per node (max.inflight.per.node)\n"
    "  --routing-level node|shard|off\n"
    "  --compression none|gzip\n"
    "  --set KEY=VALUE       any configuration key (repeatable; applied last, so it\n"
    "                        overrides the options above and load's own defaults:\n"
    "                        body.validate=true (false saves CPU; the server then\n"
    "                        reports bad JSON as \"failed to parse\"), and\n"
    "                        enqueue.timeout.ms=0 (a full buffer is waited for in\n"
    "                        esbulk_poll, which frees it; -1 can hang)\n"
    "  --set-file KEY=FILE   the same, the value the first line of FILE: a secret\n"
    "                        (auth.password, auth.api_key, auth.bearer) out of the\n"
    "                        command line, which every user of the machine can read\n"
    "\n";

/* (two strings: ISO C promises literals of 4095 characters only) */
static const char *load_help_output =
    "Output:\n"
    "  --failed FILE         write every document that was not indexed to FILE as\n"
    "                        _bulk pairs (action line with _index, _id, routing and\n"
    "                        the action keys above, then the original source line),\n"
    "                        ready to re-run with 'esbulk load --format bulk FILE'\n"
    "                        (a document whose action line load refused is written\n"
    "                        with that line as read, _index added); and one JSON\n"
    "                        line per failure to FILE.reasons: {\"file\",\"line\",\n"
    "                        \"index\",\"id\",\"status\",\"error_type\",\"reason\",\"err\",\n"
    "                        \"outcome\"}\n"
    "                        (outcome \"failed\" or \"possibly_indexed\"; line is where the\n"
    "                        document starts: its action line in bulk input). A bulk\n"
    "                        line that is no document to re-run (not an action line,\n"
    "                        an action line whose source line is missing) is only in\n"
    "                        .reasons\n"
    "  --stats               after the summary, a table of per-node requests, errors\n"
    "                        and latency percentiles\n"
    "  --quiet               no progress line\n"
    "  --help                this text\n"
    "\n"
    "A progress line (lines read, results, rate, failures, percent done and ETA)\n"
    "is shown on standard error when it is a terminal. The first 20 failures are\n"
    "printed there with their reason, then a count; a summary is always printed\n"
    "there at the end (not after a usage error). Standard output is not used.\n"
    "\n"
    "Documents that libesbulk refuses before sending (not a JSON object, invalid\n"
    "JSON or UTF-8, larger than max.doc.bytes) count as failed as well. A first\n"
    "SIGINT/SIGTERM stops reading and gives the documents in flight 5 seconds;\n"
    "what is left is reported as failed (\"not delivered: closed\").\n"
    "\n"
    "Exit status: 0 every document was indexed; 1 some failed or are possibly\n"
    "indexed (\"N documents failed\"), or a runtime error; 2 bad usage (also: an\n"
    "input file that cannot be opened, or a directory).\n";

typedef enum { FMT_AUTO, FMT_NDJSON, FMT_BULK } format_t;

/* A bulk action's options, as esbulk_docopts_t takes them. Kept apart from
 * the library's object, which cannot be read back: the failures file writes
 * them into the document's action line. */
typedef struct {
    int64_t version, if_seq_no, if_primary_term;
    int32_t retry_on_conflict; /* -1: none */
    uint8_t version_type;      /* 0: no version, else an esbulk_version_type_t */
    uint8_t has_seq_no, require_alias;
    const char *pipeline;      /* NUL-terminated; NULL: none */
} aopts_t;

/* What each accepted document carries as doc_opaque until its result. */
typedef struct {
    uint64_t line;
    uint64_t bytes;    /* input bytes it accounts for (progress) */
    uint32_t input;    /* index into load_t.inputs */
    uint8_t op;
    uint8_t has_body;  /* body kept (only with --failed) */
    uint8_t has_opts;  /* options kept (only with --failed, when there are any) */
    uint32_t index_len, id_len, routing_len, body_len;
    char data[];       /* index \0 id \0 routing \0 body \0 [aopts_t pipeline \0] */
} rec_t;

/* A failure to report (from a result or from a refusal at add time). */
typedef struct {
    uint32_t input;
    uint64_t line;
    int op;            /* -1: not a document (a broken action line) */
    int no_pair;       /* not written to the failures file (no document to re-run) */
    json_t *raw_action; /* non-NULL: written as the action line instead of one made
                        * of the fields below (an action load refused) */
    const aopts_t *opts; /* NULL: none */
    const char *index; /* as given (the failures file); NULL: none */
    const char *result_index;
    const char *id;
    size_t id_len;
    const char *routing;
    size_t routing_len;
    const char *body;
    size_t body_len;
    int32_t status;
    const char *error_type;
    const char *reason;
    esbulk_err_t err;
    int possibly;
} failure_t;

/* A parsed bulk action line. Strings point into root (or the buffers). */
typedef struct {
    json_t *root;
    int big_int; /* the line holds an integer past int64, read as a real */
    esbulk_op_t op;
    const char *index, *id, *routing;
    size_t id_len, routing_len;
    char idbuf[32], routingbuf[32];
    aopts_t opts;
    char why[256];     /* non-empty: the document fails for this reason */
    uint64_t line, bytes;
} action_t;

typedef struct {
    /* options */
    format_t format;
    const char *index;
    esbulk_op_t op;
    const char *id_field, *routing_field;
    const char *failed_path;
    int quiet, show_stats;
    int gen_ids;       /* id.generate is not "none" */
    /* inputs */
    char **inputs;
    int ninputs;
    uint64_t total_bytes; /* 0: unknown */
    /* the engine */
    esbulk_t *eb;
    esbulk_docopts_t *docopts; /* for every document with options, cleared each time */
    /* counters */
    uint64_t lines_read, bytes_read; /* input consumed, all inputs (progress) */
    uint64_t read_docs, added, indexed, failed, possibly;
    uint64_t bytes_done; /* input bytes of documents with a result, and blank lines */
    uint64_t failures_shown, failures_total;
    uint64_t unpaired; /* failures in the reasons file only (no document to re-run) */
    /* outputs */
    FILE *failed_fp, *reasons_fp;
    char *reasons_path;
    int write_error;
    /* progress */
    int progress;
    struct timespec t0;
    int64_t last_progress_ns;
    int progress_shown;
    const esbulk_conf_t *conf; /* what start_engine() makes the handle from */
    awscreds_t *aws;           /* --aws-region: the credentials, kept fresh */
    int engine_failed;         /* start_engine() could not make it (said) */
    logonce_t logs;            /* the library's messages said lately (on_log; under
                                * stderr's lock) */
    /* where reading stopped (the message after an interruption) */
    uint32_t at_input;
    uint64_t at_line;
    /* one-time warnings */
    int warned_id_type, warned_routing_type, warned_ignored_key;
    /* scratch for decoded field values */
    char *scratch;
    size_t scratch_cap;
} load_t;

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

static int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static double elapsed_s(const load_t *L)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)(ts.tv_sec - L->t0.tv_sec) + (double)(ts.tv_nsec - L->t0.tv_nsec) / 1e9;
}

static const char *input_name(const load_t *L, uint32_t i)
{
    if (L->ninputs == 0 || strcmp(L->inputs[i], "-") == 0)
        return "<stdin>";
    return L->inputs[i];
}

static const char *op_name(int op)
{
    static const char *const names[] = {"index", "create", "update", "delete"};
    return op >= 0 && op <= 3 ? names[op] : "?";
}

static int usage_error(const char *msg, const char *arg)
{
    fprintf(stderr, "esbulk load: ");
    fprintf(stderr, msg, arg);
    fprintf(stderr, "\n%s", load_usage);
    return EXIT_USAGE;
}

/* ------------------------------------------------------------------------- */
/* Progress */

static void clear_progress(load_t *L)
{
    if (L->progress_shown) {
        fputs("\r\033[K", stderr);
        L->progress_shown = 0;
    }
}

static void fmt_eta(char *out, size_t size, double s)
{
    long t = (long)(s + 0.5);

    if (t >= 3600)
        snprintf(out, size, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(out, size, "%ld:%02ld", t / 60, t % 60);
}

static void show_progress(load_t *L, int force)
{
    int64_t now;
    double el, rate, mbs;
    uint64_t done;
    char eta[32];

    if (!L->progress)
        return;
    now = now_ns();
    if (!force && now - L->last_progress_ns < PROGRESS_NS)
        return;
    L->last_progress_ns = now;
    flockfile(stderr); /* one piece: on_log writes from other threads */
    el = elapsed_s(L);
    /* Lines read move from the start; results come only after the first
     * flush (up to flush.interval.ms later, plus the request). */
    done = L->indexed + L->failed + L->possibly;
    rate = el > 0 ? (double)done / el : 0;
    mbs = el > 0 ? (double)L->bytes_done / el / 1e6 : 0;
    fprintf(stderr, "\r%" PRIu64 " lines read", L->lines_read);
    if (L->total_bytes > 0)
        fprintf(stderr, " (%.1f%%)", L->bytes_read >= L->total_bytes ? 100.0
                : (double)L->bytes_read * 100 / (double)L->total_bytes);
    fprintf(stderr, "  %" PRIu64 " results  %.0f docs/s  %.1f MB/s", done, rate, mbs);
    if (L->failed + L->possibly > 0)
        fprintf(stderr, "  %" PRIu64 " failed", L->failed + L->possibly);
    if (L->total_bytes > 0) {
        double frac = (double)L->bytes_done / (double)L->total_bytes;

        if (frac > 1)
            frac = 1;
        if (frac > 0.001 && frac < 1) {
            fmt_eta(eta, sizeof(eta), el * (1 - frac) / frac);
            fprintf(stderr, "  ETA %s", eta);
        }
    }
    fputs("\033[K", stderr);
    funlockfile(stderr);
    L->progress_shown = 1;
}

/* ------------------------------------------------------------------------- */
/* Failures */

static json_t *jstrn(const char *s, size_t len)
{
    /* nocheck: a refused document's id may be invalid UTF-8; write its bytes */
    return s != NULL ? json_stringn_nocheck(s, len) : json_null();
}

static json_t *jstr(const char *s)
{
    return s != NULL ? json_stringn_nocheck(s, strlen(s)) : json_null();
}

static void put_json_line(load_t *L, FILE *fp, json_t *j)
{
    char *text = j != NULL ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;

    if (text == NULL || fputs(text, fp) == EOF || fputc('\n', fp) == EOF)
        L->write_error = 1;
    free(text);
}

static int aopts_empty(const aopts_t *o)
{
    return o == NULL || (o->version_type == 0 && !o->has_seq_no && o->pipeline == NULL &&
                         !o->require_alias && o->retry_on_conflict < 0);
}

/* The options into an action line's metadata, as the server takes them. */
static void put_opts(json_t *meta, const aopts_t *o)
{
    if (o->version_type != 0) {
        json_object_set_new(meta, "version", json_integer((json_int_t)o->version));
        json_object_set_new(meta, "version_type",
                            json_string(o->version_type == ESBULK_VERSION_EXTERNAL_GTE
                                            ? "external_gte" : "external"));
    }
    if (o->has_seq_no) {
        json_object_set_new(meta, "if_seq_no", json_integer((json_int_t)o->if_seq_no));
        json_object_set_new(meta, "if_primary_term",
                            json_integer((json_int_t)o->if_primary_term));
    }
    if (o->pipeline != NULL)
        json_object_set_new(meta, "pipeline", jstr(o->pipeline));
    if (o->require_alias)
        json_object_set_new(meta, "require_alias", json_true());
    if (o->retry_on_conflict >= 0)
        json_object_set_new(meta, "retry_on_conflict", json_integer(o->retry_on_conflict));
}

static void report_failure(load_t *L, const failure_t *f)
{
    const char *type = f->error_type, *reason = f->reason;

    L->failures_total++;
    if (L->failures_shown < SHOWN_FAILURES) {
        clear_progress(L);
        L->failures_shown++;
        fprintf(stderr, "esbulk load: %s:%" PRIu64 ": ", input_name(L, f->input), f->line);
        if (f->op >= 0) {
            fprintf(stderr, "%s %s", op_name(f->op),
                    f->result_index ? f->result_index : f->index ? f->index : "-");
            if (f->id != NULL)
                fprintf(stderr, "/%.*s", (int)f->id_len, f->id);
            fputs(": ", stderr);
        }
        fputs(f->possibly ? "possibly indexed" : "failed", stderr);
        if (f->status > 0)
            fprintf(stderr, " (%d)", (int)f->status);
        if (type != NULL)
            fprintf(stderr, ": %s", type);
        fprintf(stderr, ": %s\n", reason ? reason : esbulk_err2str(f->err));
    }
    if (f->op < 0 || f->no_pair)
        L->unpaired++;
    if (L->failed_fp != NULL && f->op >= 0 && !f->no_pair) {
        json_t *action = json_object(), *meta = json_object();

        if (action != NULL && meta != NULL) {
            if (f->raw_action != NULL) {
                put_json_line(L, L->failed_fp, f->raw_action);
            } else {
                if (f->index != NULL)
                    json_object_set_new(meta, "_index", jstr(f->index));
                if (f->id != NULL)
                    json_object_set_new(meta, "_id", jstrn(f->id, f->id_len));
                if (f->routing != NULL)
                    json_object_set_new(meta, "routing", jstrn(f->routing, f->routing_len));
                if (f->opts != NULL)
                    put_opts(meta, f->opts);
                json_object_set(action, op_name(f->op), meta);
                put_json_line(L, L->failed_fp, action);
            }
            if (f->op != ESBULK_OP_DELETE &&
                (fwrite(f->body ? f->body : "{}", 1, f->body ? f->body_len : 2, L->failed_fp) !=
                     (f->body ? f->body_len : 2) ||
                 fputc('\n', L->failed_fp) == EOF))
                L->write_error = 1;
        } else {
            L->write_error = 1;
        }
        json_decref(meta);
        json_decref(action);
    }
    if (L->reasons_fp != NULL) {
        json_t *o = json_object();

        if (o != NULL) {
            json_object_set_new(o, "file", jstr(input_name(L, f->input)));
            json_object_set_new(o, "line", json_integer((json_int_t)f->line));
            json_object_set_new(o, "index",
                                jstr(f->result_index ? f->result_index : f->index));
            json_object_set_new(o, "id", jstrn(f->id, f->id_len));
            json_object_set_new(o, "status",
                                f->status > 0 ? json_integer(f->status) : json_null());
            json_object_set_new(o, "error_type", jstr(type));
            json_object_set_new(o, "reason", jstr(reason));
            json_object_set_new(o, "err", jstr(f->err != ESBULK_OK ? esbulk_err2str(f->err)
                                                                   : NULL));
            json_object_set_new(o, "outcome",
                                json_string(f->possibly ? "possibly_indexed" : "failed"));
        }
        put_json_line(L, L->reasons_fp, o);
        json_decref(o);
    }
}

/* ------------------------------------------------------------------------- */
/* Records and results */

static rec_t *rec_new(load_t *L, uint32_t input, uint64_t line, uint64_t bytes, esbulk_op_t op,
                      const char *index, const char *id, size_t id_len, const char *routing,
                      size_t routing_len, const char *body, size_t body_len,
                      const aopts_t *opts)
{
    size_t index_len = index ? strlen(index) : 0, opts_len = 0, pipeline_len = 0;
    int keep_body = L->failed_fp != NULL && body != NULL;
    int keep_opts = L->failed_fp != NULL && !aopts_empty(opts);
    rec_t *rec;
    char *p;

    if (!keep_body)
        body_len = 0;
    if (keep_opts) {
        /* the struct (copied unaligned), then its pipeline's text */
        pipeline_len = opts->pipeline ? strlen(opts->pipeline) : 0;
        opts_len = sizeof(*opts) + pipeline_len + 1;
    }
    rec = malloc(sizeof(*rec) + index_len + id_len + routing_len + body_len + 4 + opts_len);
    if (rec == NULL)
        return NULL;
    rec->line = line;
    rec->bytes = bytes;
    rec->input = input;
    rec->op = (uint8_t)op;
    rec->has_body = (uint8_t)keep_body;
    rec->has_opts = (uint8_t)keep_opts;
    rec->index_len = (uint32_t)index_len;
    rec->id_len = (uint32_t)id_len;
    rec->routing_len = (uint32_t)routing_len;
    rec->body_len = (uint32_t)body_len;
    p = rec->data;
    if (index_len) memcpy(p, index, index_len);
    p[index_len] = '\0';
    p += index_len + 1;
    if (id_len) memcpy(p, id, id_len);
    p[id_len] = '\0';
    p += id_len + 1;
    if (routing_len) memcpy(p, routing, routing_len);
    p[routing_len] = '\0';
    p += routing_len + 1;
    if (body_len) memcpy(p, body, body_len);
    p[body_len] = '\0';
    p += body_len + 1;
    if (keep_opts) {
        memcpy(p, opts, sizeof(*opts));
        p += sizeof(*opts);
        if (pipeline_len) memcpy(p, opts->pipeline, pipeline_len);
        p[pipeline_len] = '\0';
    }
    return rec;
}

/* The library's warnings and errors (a node down, the cluster not readable),
 * on stderr as they happen: without them a load against a wrong URL or a
 * dead cluster said nothing until its documents ran out of retries. Each
 * at most once a minute (logonce.h). Called on the library's threads:
 * stderr's lock, which show_progress() holds too, guards the line and the
 * messages said; the progress line is cleared first (the next one redraws
 * it). */
static void on_log(int32_t level, const char *facility, const char *message, void *opaque)
{
    load_t *L = opaque;

    (void)facility;
    if (level > ESBULK_LOG_WARNING)
        return;
    flockfile(stderr);
    if (logonce_new(&L->logs, message, now_ns(), LOG_REPEAT_NS))
        fprintf(stderr, "%sesbulk load: %s: %s\n", L->progress ? "\r\033[K" : "",
                level == ESBULK_LOG_WARNING ? "warning" : "error", message);
    funlockfile(stderr);
}

/* A credentials' refresh that failed (awscreds.c's thread). */
static void on_aws_log(const char *message, void *opaque)
{
    load_t *L = opaque;

    flockfile(stderr);
    fprintf(stderr, "%sesbulk load: warning: %s\n", L->progress ? "\r\033[K" : "", message);
    funlockfile(stderr);
}

static void on_result(esbulk_t *eb, const esbulk_result_t *result, void *opaque)
{
    load_t *L = opaque;
    rec_t *rec = esbulk_result_opaque(result);
    esbulk_outcome_t outcome = esbulk_result_outcome(result);
    const char *p;
    failure_t f;
    aopts_t opts;

    (void)eb;
    if (rec == NULL)
        return; /* not ours: cannot happen */
    L->bytes_done += rec->bytes;
    if (outcome == ESBULK_OUTCOME_INDEXED) {
        L->indexed++;
        free(rec);
        return;
    }
    if (outcome == ESBULK_OUTCOME_POSSIBLY)
        L->possibly++;
    else
        L->failed++;
    memset(&f, 0, sizeof(f));
    f.input = rec->input;
    f.line = rec->line;
    f.op = rec->op;
    p = rec->data;
    f.index = rec->index_len ? p : NULL;
    p += rec->index_len + 1;
    if (rec->id_len) {
        f.id = p;
        f.id_len = rec->id_len;
    } else if (L->gen_ids && (rec->op == ESBULK_OP_INDEX || rec->op == ESBULK_OP_CREATE) &&
               esbulk_result_id(result) != NULL) {
        /* the library's generated id: re-running with it cannot duplicate a
         * document that was possibly indexed */
        f.id = esbulk_result_id(result);
        f.id_len = strlen(f.id);
    }
    p += rec->id_len + 1;
    if (rec->routing_len) {
        f.routing = p;
        f.routing_len = rec->routing_len;
    }
    p += rec->routing_len + 1;
    if (rec->has_body) {
        f.body = p;
        f.body_len = rec->body_len;
    }
    p += rec->body_len + 1;
    if (rec->has_opts) {
        memcpy(&opts, p, sizeof(opts));
        opts.pipeline = opts.pipeline != NULL ? p + sizeof(opts) : NULL;
        f.opts = &opts;
    }
    f.result_index = esbulk_result_index(result);
    f.status = esbulk_result_status(result);
    f.error_type = esbulk_result_error_type(result);
    f.reason = esbulk_result_error_reason(result);
    f.err = esbulk_result_err(result);
    f.possibly = outcome == ESBULK_OUTCOME_POSSIBLY;
    report_failure(L, &f);
    free(rec);
}

/* Makes the handle, when the first document is to be added: until then
 * nothing contacts the cluster, so that bad usage found in the input (ndjson
 * without --index) ends with its message alone. 0, or -1 after a message.
 * The library's threads start with SIGINT and SIGTERM blocked: the signals
 * come to this thread. */
static int start_engine(load_t *L)
{
    char errstr[512];
    sigset_t block, old;

    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    L->eb = esbulk_new(L->conf, errstr, sizeof(errstr));
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (L->eb == NULL) {
        clear_progress(L);
        fprintf(stderr, "esbulk load: %s\n", errstr);
        L->engine_failed = 1;
        return -1;
    }
    if (L->aws != NULL && awscreds_start(L->aws, L->eb, errstr, sizeof(errstr)) != 0) {
        clear_progress(L);
        fprintf(stderr, "esbulk load: %s\n", errstr);
        return -1;
    }
    return 0;
}

/* L->docopts holds o alone. The values were checked when the action line
 * was read; whether they fit the operation is esbulk_add_opts's to say. */
static esbulk_err_t docopts_set(load_t *L, const aopts_t *o)
{
    esbulk_err_t err = ESBULK_OK;

    if (L->docopts == NULL && (L->docopts = esbulk_docopts_new()) == NULL)
        return ESBULK_ERR_NOMEM;
    esbulk_docopts_clear(L->docopts);
    if (o->version_type != 0)
        err = esbulk_docopts_set_version(L->docopts, o->version,
                                         (esbulk_version_type_t)o->version_type);
    if (err == ESBULK_OK && o->has_seq_no)
        err = esbulk_docopts_set_if_seq_no(L->docopts, o->if_seq_no, o->if_primary_term);
    if (err == ESBULK_OK && o->pipeline != NULL)
        err = esbulk_docopts_set_pipeline(L->docopts, o->pipeline);
    if (err == ESBULK_OK && o->require_alias)
        err = esbulk_docopts_set_require_alias(L->docopts, 1);
    if (err == ESBULK_OK && o->retry_on_conflict >= 0)
        err = esbulk_docopts_set_retry_on_conflict(L->docopts, o->retry_on_conflict);
    return err;
}

/* One add, through esbulk_add_opts when the document has options. */
static esbulk_err_t add_one(load_t *L, esbulk_op_t op, const char *index, const char *id,
                            size_t id_len, const char *routing, size_t routing_len,
                            const char *body, size_t body_len, const aopts_t *opts, rec_t *rec,
                            char *errstr, size_t errstr_size)
{
    esbulk_err_t err;

    if (opts == NULL)
        return esbulk_add(L->eb, op, index, id, id_len, routing, routing_len, body, body_len,
                          rec, errstr, errstr_size);
    if ((err = docopts_set(L, opts)) != ESBULK_OK) {
        snprintf(errstr, errstr_size, "document options: %s", esbulk_err2str(err));
        return err;
    }
    /* the options are copied into the document: one object does for all */
    return esbulk_add_opts(L->eb, op, index, id, id_len, routing, routing_len, body, body_len,
                           L->docopts, rec, errstr, errstr_size);
}

/* Adds one document (body NULL for delete; opts NULL for none). Refusals
 * are reported as failures. Returns 0, -1 when interrupted before it was
 * accepted, or -2 when the handle could not be made (said). */
static int add_doc(load_t *L, uint32_t input, uint64_t line, uint64_t bytes, esbulk_op_t op,
                   const char *index, const char *id, size_t id_len, const char *routing,
                   size_t routing_len, const char *body, size_t body_len, const aopts_t *opts)
{
    char errstr[512];
    esbulk_err_t err;
    rec_t *rec;
    failure_t f;

    if (L->eb == NULL && start_engine(L) != 0)
        return -2;
    L->read_docs++;
    if (aopts_empty(opts))
        opts = NULL;
    rec = NULL;
    if (id != NULL && id_len == 0) {
        /* an --id-field value of "": esbulk_add takes an id_len of 0 as no
         * _id (a generated one, a new copy at every load), and the server
         * refuses an empty one: the document fails, and its pair in the
         * failures file keeps the "_id":"" to be fixed */
        err = ESBULK_ERR_INVALID_ARG;
        snprintf(errstr, sizeof(errstr), "--id-field \"%s\" is the empty string (the server "
                 "refuses an empty _id)", L->id_field != NULL ? L->id_field : "");
    } else if ((rec = rec_new(L, input, line, bytes, op, index, id, id_len, routing, routing_len,
                              body, body_len, opts)) == NULL) {
        err = ESBULK_ERR_NOMEM;
        snprintf(errstr, sizeof(errstr), "out of memory");
    } else {
        for (;;) {
            err = add_one(L, op, index, id, id_len, routing, routing_len, body, body_len, opts,
                          rec, errstr, sizeof(errstr));
            if (err != ESBULK_ERR_QUEUE_FULL || interrupted)
                break;
            /* Space is freed only as results are served: serve them here. */
            esbulk_poll(L->eb, 100);
            show_progress(L, 0);
        }
        if (err == ESBULK_OK) {
            L->added++;
            return 0;
        }
        if (err == ESBULK_ERR_QUEUE_FULL)
            snprintf(errstr, sizeof(errstr), "not sent: interrupted");
    }
    L->failed++;
    L->bytes_done += bytes;
    memset(&f, 0, sizeof(f));
    f.input = input;
    f.line = line;
    f.op = (int)op;
    f.index = index;
    f.id = id;
    f.id_len = id_len;
    f.routing = routing_len ? routing : NULL;
    f.routing_len = routing_len;
    f.body = body;
    f.body_len = body_len;
    f.opts = opts;
    f.reason = errstr;
    f.err = err;
    report_failure(L, &f);
    free(rec);
    return err == ESBULK_ERR_QUEUE_FULL ? -1 : 0;
}

/* A failure found by load itself. With pair, a document whose action line
 * load refused (a key it cannot express, a bad value): the failures file
 * gets that action line as read, with the --index default as _index when it
 * has none, and the source line: the document is kept whole, and loadable
 * through the _bulk API (or by load once its action is mended). Without, a
 * line that is no document to re-run (not an action line, a missing source
 * line): in the reasons file only. */
static void fail_line(load_t *L, uint32_t input, uint64_t line, uint64_t bytes, int op,
                      const action_t *a, const char *why, const char *body, size_t body_len,
                      int pair)
{
    failure_t f;

    L->read_docs++;
    L->failed++;
    L->bytes_done += bytes;
    memset(&f, 0, sizeof(f));
    f.input = input;
    f.line = line;
    f.op = op;
    if (a != NULL) {
        f.index = a->index;
        f.id = a->id;
        f.id_len = a->id_len;
        f.routing = a->routing;
        f.routing_len = a->routing_len;
    }
    if (pair && a != NULL && a->root != NULL && op >= 0) {
        json_t *meta = json_object_get(a->root, op_name(op));

        if (a->index != NULL && json_object_get(meta, "_index") == NULL)
            json_object_set_new(meta, "_index", jstr(a->index));
        f.raw_action = a->root;
        f.body = body;
        f.body_len = body_len;
    } else {
        f.no_pair = 1;
    }
    f.reason = why;
    f.err = ESBULK_OK;
    report_failure(L, &f);
}

/* ------------------------------------------------------------------------- */
/* A small scanner for top-level fields of a JSON object (no full parse) */

static size_t skip_ws(const char *s, size_t i, size_t n)
{
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n'))
        i++;
    return i;
}

/* s[i] is '"': the index after the closing quote, 0 if there is none. */
static size_t skip_string(const char *s, size_t i, size_t n)
{
    for (i++; i < n; i++) {
        if (s[i] == '\\')
            i++;
        else if (s[i] == '"')
            return i + 1;
    }
    return 0;
}

/* The index after the value starting at s[i], 0 if malformed. */
static size_t skip_value(const char *s, size_t i, size_t n)
{
    size_t start = i;
    int depth = 0;

    if (i >= n)
        return 0;
    if (s[i] == '"')
        return skip_string(s, i, n);
    if (s[i] == '{' || s[i] == '[') {
        while (i < n) {
            char c = s[i];

            if (c == '"') {
                if ((i = skip_string(s, i, n)) == 0)
                    return 0;
                continue;
            }
            if (c == '{' || c == '[')
                depth++;
            else if ((c == '}' || c == ']') && --depth == 0)
                return i + 1;
            i++;
        }
        return 0;
    }
    while (i < n && s[i] != ',' && s[i] != '}' && s[i] != ']' && s[i] != ' ' && s[i] != '\t' &&
           s[i] != '\r' && s[i] != '\n')
        i++;
    return i > start ? i : 0;
}

static int scratch_fit(load_t *L, size_t len)
{
    if (len + 1 > L->scratch_cap) {
        char *p = realloc(L->scratch, len + 1);

        if (p == NULL)
            return -1;
        L->scratch = p;
        L->scratch_cap = len + 1;
    }
    return 0;
}

/* Decodes the JSON string token s[0..len) (quotes included) into L->scratch. */
static int decode_string(load_t *L, const char *s, size_t len, const char **out, size_t *out_len)
{
    json_t *j;

    if (memchr(s, '\\', len) == NULL) {
        *out = s + 1;
        *out_len = len - 2;
        return 0;
    }
    j = json_loadb(s, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (!json_is_string(j) || scratch_fit(L, json_string_length(j)) != 0) {
        json_decref(j);
        return -1;
    }
    *out_len = json_string_length(j);
    memcpy(L->scratch, json_string_value(j), *out_len);
    L->scratch[*out_len] = '\0';
    *out = L->scratch;
    json_decref(j);
    return 0;
}

typedef enum { FV_MISSING, FV_FOUND, FV_BADTYPE } field_t;

/* Finds top-level field name in object s[0..n): a string (decoded; into
 * L->scratch when it has escapes, so one field at a time) or a number (its
 * text). Malformed JSON reads as missing: the library or the server will
 * report the document itself. */
static field_t top_field(load_t *L, const char *s, size_t n, const char *name,
                         const char **val, size_t *val_len)
{
    size_t name_len = strlen(name), i = skip_ws(s, 0, n);

    if (i >= n || s[i] != '{')
        return FV_MISSING;
    i = skip_ws(s, i + 1, n);
    if (i < n && s[i] == '}')
        return FV_MISSING;
    while (i < n) {
        size_t kstart = i, kend, vstart, vend;
        const char *key;
        size_t key_len;
        int match;

        if (s[i] != '"' || (kend = skip_string(s, i, n)) == 0)
            return FV_MISSING;
        i = skip_ws(s, kend, n);
        if (i >= n || s[i] != ':')
            return FV_MISSING;
        vstart = skip_ws(s, i + 1, n);
        if ((vend = skip_value(s, vstart, n)) == 0)
            return FV_MISSING;
        if (memchr(s + kstart, '\\', kend - kstart) == NULL) {
            match = kend - kstart - 2 == name_len && memcmp(s + kstart + 1, name, name_len) == 0;
        } else {
            match = decode_string(L, s + kstart, kend - kstart, &key, &key_len) == 0 &&
                    key_len == name_len && memcmp(key, name, name_len) == 0;
        }
        if (match) {
            char c = s[vstart];

            if (c == '"')
                return decode_string(L, s + vstart, vend - vstart, val, val_len) == 0
                           ? FV_FOUND
                           : FV_MISSING;
            if (c == '-' || (c >= '0' && c <= '9')) {
                *val = s + vstart;
                *val_len = vend - vstart;
                return FV_FOUND;
            }
            return vend - vstart == 4 && memcmp(s + vstart, "null", 4) == 0 ? FV_MISSING
                                                                             : FV_BADTYPE;
        }
        i = skip_ws(s, vend, n);
        if (i >= n || s[i] != ',')
            return FV_MISSING;
        i = skip_ws(s, i + 1, n);
    }
    return FV_MISSING;
}

/* ------------------------------------------------------------------------- */
/* Input lines */

static int is_blank(const char *s, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
            return 0;
    return 1;
}

static int op_from_name(const char *s, esbulk_op_t *op)
{
    static const char *const names[] = {"index", "create", "update", "delete"};
    int i;

    for (i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0) {
            *op = (esbulk_op_t)i;
            return 0;
        }
    return -1;
}

/* Is the line an action line: {"index"|"create"|"update"|"delete": {...}}?
 * On success a->root holds the parse. */
static int parse_action_shape(const char *s, size_t n, action_t *a)
{
    json_error_t jerr;
    json_t *root = json_loadb(s, n, 0, &jerr), *meta;
    const char *key;

    if (root == NULL && json_error_code(&jerr) == json_error_numeric_overflow) {
        /* an integer past jansson's int64 is valid JSON: the line's shape
         * still says whether it is an action line (the document then fails,
         * parse_action) */
        root = json_loadb(s, n, JSON_DECODE_INT_AS_REAL, NULL);
        a->big_int = root != NULL;
    }

    if (!json_is_object(root) || json_object_size(root) != 1) {
        json_decref(root);
        return -1;
    }
    json_object_foreach(root, key, meta) {
        if (op_from_name(key, &a->op) != 0 || !json_is_object(meta)) {
            json_decref(root);
            return -1;
        }
    }
    a->root = root;
    return 0;
}

/* A string or integer action value as text. */
static int meta_text(json_t *v, char *buf, size_t size, const char **out, size_t *out_len)
{
    if (json_is_string(v)) {
        *out = json_string_value(v);
        *out_len = json_string_length(v);
        return 0;
    }
    if (json_is_integer(v)) {
        snprintf(buf, size, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        *out = buf;
        *out_len = strlen(buf);
        return 0;
    }
    return json_is_null(v) ? 0 : -1;
}

/* The action metadata keys of the servers' bulk parsers (Elasticsearch 8's
 * and OpenSearch 2's BulkRequestParser, and the legacy _routing), whether
 * esbulk load supports them or not. Where a source line is due, a line of
 * one of the four actions whose object holds only these keys is taken for
 * the next action line: the source line before it is missing. */
static const char *const bulk_meta_keys[] = {
    "_index", "_id", "routing", "_routing", "version", "version_type", "if_seq_no",
    "if_primary_term", "pipeline", "require_alias", "retry_on_conflict", "_type",
    "require_data_stream", "dynamic_templates", "_source", "list_executed_pipelines",
    "op_type", NULL};

static int is_meta_key(const char *key)
{
    int i;

    for (i = 0; bulk_meta_keys[i] != NULL; i++)
        if (strcmp(key, bulk_meta_keys[i]) == 0)
            return 1;
    return 0;
}

/* The first reason the document fails for. */
static void why(action_t *a, const char *fmt, ...)
{
    va_list ap;

    if (a->why[0] != '\0')
        return;
    va_start(ap, fmt);
    vsnprintf(a->why, sizeof(a->why), fmt, ap);
    va_end(ap);
}

/* An integer action value from min to max: a JSON integer, or a string
 * holding one, as the servers take it ("version":"5"). */
static int meta_int(json_t *v, int64_t min, int64_t max, int64_t *out)
{
    long long x;

    if (json_is_integer(v)) {
        x = (long long)json_integer_value(v);
    } else if (json_is_string(v)) {
        const char *s = json_string_value(v);
        char *end;

        if (*s != '-' && (*s < '0' || *s > '9'))
            return -1;
        errno = 0;
        x = strtoll(s, &end, 10);
        if (errno != 0 || *end != '\0' || end == s)
            return -1;
    } else {
        return -1;
    }
    if (x < min || x > max)
        return -1;
    *out = (int64_t)x;
    return 0;
}

/* A boolean action value: true/false, or "true"/"false" as the servers take. */
static int meta_bool(json_t *v, int *out)
{
    if (json_is_boolean(v)) {
        *out = json_is_true(v);
        return 0;
    }
    if (json_is_string(v) && (strcmp(json_string_value(v), "true") == 0 ||
                              strcmp(json_string_value(v), "false") == 0)) {
        *out = strcmp(json_string_value(v), "true") == 0;
        return 0;
    }
    return -1;
}

enum { VT_NONE, VT_INTERNAL, VT_EXTERNAL, VT_EXTERNAL_GTE, VT_FORCE };

/* Parses a bulk action line into a. Returns -1 when it is not one. A value
 * load cannot take, or a key it cannot express, sets a->why: the document
 * fails, the rest goes on. */
static int parse_action(load_t *L, const char *s, size_t n, action_t *a)
{
    const char *key;
    json_t *meta = NULL, *v;
    int vt = VT_NONE, has_version = 0, has_seq_no = 0, has_term = 0, flag;
    int64_t x;

    memset(a, 0, sizeof(*a));
    a->opts.retry_on_conflict = -1;
    if (parse_action_shape(s, n, a) != 0)
        return -1;
    if (a->big_int)
        why(a, "the action line holds an integer past int64, which load cannot read exactly "
               "(an _id or routing: give it as a string)");
    json_object_foreach(a->root, key, v)
        meta = v;
    a->index = L->index;
    json_object_foreach(meta, key, v) {
        if (strcmp(key, "_index") == 0) {
            if (!json_is_string(v) || json_string_length(v) == 0)
                why(a, "_index is not a non-empty string");
            else
                a->index = json_string_value(v);
        } else if (strcmp(key, "_id") == 0) {
            if (meta_text(v, a->idbuf, sizeof(a->idbuf), &a->id, &a->id_len) != 0)
                why(a, "_id is not a string or an integer");
            else if (a->id_len == 0)
                why(a, "_id is empty (the server refuses an empty _id)"); /* not a generated one */
        } else if (strcmp(key, "routing") == 0 || strcmp(key, "_routing") == 0) {
            if (meta_text(v, a->routingbuf, sizeof(a->routingbuf), &a->routing,
                          &a->routing_len) != 0)
                why(a, "routing is not a string or an integer");
        } else if (strcmp(key, "version") == 0) {
            if (meta_int(v, 0, INT64_MAX, &a->opts.version) != 0)
                why(a, "version is not an integer >= 0");
            has_version = 1;
        } else if (strcmp(key, "version_type") == 0) {
            const char *t = json_is_string(v) ? json_string_value(v) : "";

            if (strcmp(t, "internal") == 0) vt = VT_INTERNAL;
            /* external_gt: the servers' other name for external */
            else if (strcmp(t, "external") == 0 || strcmp(t, "external_gt") == 0)
                vt = VT_EXTERNAL;
            else if (strcmp(t, "external_gte") == 0) vt = VT_EXTERNAL_GTE;
            else if (strcmp(t, "force") == 0) vt = VT_FORCE;
            else why(a, "version_type is not internal, external or external_gte");
        } else if (strcmp(key, "if_seq_no") == 0) {
            if (meta_int(v, 0, INT64_MAX, &a->opts.if_seq_no) != 0)
                why(a, "if_seq_no is not an integer >= 0");
            has_seq_no = 1;
        } else if (strcmp(key, "if_primary_term") == 0) {
            if (meta_int(v, 1, INT64_MAX, &a->opts.if_primary_term) != 0)
                why(a, "if_primary_term is not an integer >= 1");
            has_term = 1;
        } else if (strcmp(key, "pipeline") == 0) {
            /* "" or null: none, as for the library */
            if (json_is_string(v))
                a->opts.pipeline = json_string_length(v) > 0 ? json_string_value(v) : NULL;
            else if (!json_is_null(v))
                why(a, "pipeline is not a string");
        } else if (strcmp(key, "require_alias") == 0) {
            if (meta_bool(v, &flag) != 0)
                why(a, "require_alias is not true or false");
            else
                a->opts.require_alias = (uint8_t)flag;
        } else if (strcmp(key, "retry_on_conflict") == 0) {
            if (meta_int(v, 0, 1000000, &x) != 0)
                why(a, "retry_on_conflict is not an integer from 0 to 1000000");
            else
                a->opts.retry_on_conflict = (int32_t)x;
        } else if (strcmp(key, "_type") == 0) {
            /* harmless to drop: a legacy mapping type */
            if (!L->warned_ignored_key) {
                L->warned_ignored_key = 1;
                clear_progress(L);
                fprintf(stderr, "esbulk load: note: action key \"_type\" is ignored\n");
            }
        } else if (is_meta_key(key)) {
            /* require_data_stream, dynamic_templates, list_executed_pipelines,
             * op_type, _source (of an update): dropping them would change what
             * the operation does, and the library cannot send them */
            why(a, "action key \"%s\" is not supported by esbulk load", key);
        } else {
            why(a, "action key \"%s\" is not a _bulk metadata key", key);
        }
    }
    if (has_version && (vt == VT_NONE || vt == VT_INTERNAL))
        why(a, "version without version_type external or external_gte: the server refuses "
               "internal versioning for writes; use if_seq_no/if_primary_term or "
               "version_type external");
    else if (vt == VT_FORCE)
        why(a, "version_type force is not supported by the server");
    else if (!has_version && (vt == VT_EXTERNAL || vt == VT_EXTERNAL_GTE))
        why(a, "version_type %s needs a version", vt == VT_EXTERNAL ? "external" : "external_gte");
    else if (has_version)
        a->opts.version_type = (uint8_t)(vt == VT_EXTERNAL ? ESBULK_VERSION_EXTERNAL
                                                           : ESBULK_VERSION_EXTERNAL_GTE);
    if (has_seq_no != has_term)
        why(a, "if_seq_no and if_primary_term go together");
    a->opts.has_seq_no = (uint8_t)has_seq_no;
    if (a->index == NULL)
        why(a, "no _index in the action line and no --index given");
    if (a->id_len == 0)
        a->id = NULL;
    if (a->routing_len == 0)
        a->routing = NULL;
    return 0;
}

/* Is the line, where a source line is due, an action line instead? A
 * document of one key index/create/update/delete whose value is an object
 * of metadata keys only ({"index":{}} too) is taken for one: the man page
 * says so. Most source lines are told apart by their first key without a
 * parse. */
static int is_action_line(const char *s, size_t n)
{
    static const char *const names[] = {"index", "create", "update", "delete"};
    size_t i = skip_ws(s, 0, n), kend, klen;
    action_t a;
    json_t *meta;
    const char *op, *key;
    int k, known = 0;

    if (i >= n || s[i] != '{')
        return 0;
    i = skip_ws(s, i + 1, n);
    if (i >= n || s[i] != '"' || (kend = skip_string(s, i, n)) == 0)
        return 0;
    klen = kend - i - 2;
    if (memchr(s + i, '\\', kend - i) == NULL) {
        /* no escapes: the key must be one of the four, its value an object */
        for (k = 0; k < 4; k++)
            if (klen == strlen(names[k]) && memcmp(s + i + 1, names[k], klen) == 0)
                known = 1;
        i = skip_ws(s, kend, n);
        if (!known || i >= n || s[i] != ':' || (i = skip_ws(s, i + 1, n)) >= n || s[i] != '{')
            return 0;
    }
    memset(&a, 0, sizeof(a));
    if (parse_action_shape(s, n, &a) != 0)
        return 0;
    known = 1;
    json_object_foreach(a.root, op, meta) {
        json_t *v;

        json_object_foreach(meta, key, v)
            if (!is_meta_key(key))
                known = 0;
    }
    json_decref(a.root);
    return known;
}

static int looks_like_bulk(const char *s, size_t n)
{
    action_t a;

    memset(&a, 0, sizeof(a));
    if (parse_action_shape(s, n, &a) != 0)
        return 0;
    json_decref(a.root);
    return 1;
}

/* Strips a trailing LF and CR. */
static size_t chomp(const char *s, size_t n)
{
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r'))
        n--;
    return n;
}

/* One ndjson document. */
static int ndjson_line(load_t *L, uint32_t input, uint64_t lineno, const char *s, size_t n,
                       uint64_t bytes)
{
    const char *id = NULL, *routing = NULL, *v;
    size_t id_len = 0, routing_len = 0, vlen;
    char *idcopy = NULL;
    int rc;

    if (L->id_field != NULL) {
        field_t r = top_field(L, s, n, L->id_field, &v, &vlen);

        if (r == FV_FOUND) {
            /* "" too: add_doc fails it (not "no _id") */
            id = v;
            id_len = vlen;
            /* a decoded value lives in the scratch buffer, which the routing
             * lookup may reuse */
            if (v == L->scratch && L->routing_field != NULL) {
                if ((idcopy = malloc(vlen + 1)) == NULL) {
                    fail_line(L, input, lineno, bytes, (int)L->op, NULL, "out of memory", NULL, 0, 0);
                    return 0;
                }
                memcpy(idcopy, v, vlen);
                idcopy[vlen] = '\0';
                id = idcopy;
            }
        } else if (r == FV_BADTYPE && !L->warned_id_type) {
            L->warned_id_type = 1;
            clear_progress(L);
            fprintf(stderr, "esbulk load: %s:%" PRIu64 ": note: --id-field \"%s\" is not a "
                    "string or number; such documents get no _id from it\n",
                    input_name(L, input), lineno, L->id_field);
        }
    }
    if (L->routing_field != NULL) {
        field_t r = top_field(L, s, n, L->routing_field, &routing, &routing_len);

        if (r != FV_FOUND) {
            routing = NULL;
            routing_len = 0;
        }
        if (r == FV_BADTYPE && !L->warned_routing_type) {
            L->warned_routing_type = 1;
            clear_progress(L);
            fprintf(stderr, "esbulk load: %s:%" PRIu64 ": note: --routing-field \"%s\" is not "
                    "a string or number; such documents get no routing from it\n",
                    input_name(L, input), lineno, L->routing_field);
        }
    }
    if (L->op == ESBULK_OP_DELETE) {
        rc = add_doc(L, input, lineno, bytes, L->op, L->index, id, id_len, routing, routing_len,
                     NULL, 0, NULL);
    } else if (L->op == ESBULK_OP_UPDATE) {
        /* a partial update: {"doc": LINE} */
        char *body = malloc(n + 8);

        if (body == NULL) {
            fail_line(L, input, lineno, bytes, (int)L->op, NULL, "out of memory", NULL, 0, 0);
            rc = 0;
        } else {
            memcpy(body, "{\"doc\":", 7);
            memcpy(body + 7, s, n);
            body[n + 7] = '}';
            rc = add_doc(L, input, lineno, bytes, L->op, L->index, id, id_len, routing,
                         routing_len, body, n + 8, NULL);
            free(body);
        }
    } else {
        rc = add_doc(L, input, lineno, bytes, L->op, L->index, id, id_len, routing, routing_len,
                     s, n, NULL);
    }
    free(idcopy);
    return rc;
}

/* Reads one input. Returns 0, -1 on a read error or interruption, or
 * EXIT_USAGE when it needs --index. */
static int load_input(load_t *L, uint32_t input, FILE *fp)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    uint64_t lineno = 0;
    format_t fmt = L->format;
    action_t pending;
    int have_pending = 0, orphan = 0, rc = 0;

    memset(&pending, 0, sizeof(pending));
    while (!interrupted && (got = getline(&line, &cap, fp)) >= 0) {
        size_t n = chomp(line, (size_t)got);
        char *s = line;

        lineno++;
        /* A UTF-8 byte order mark (editors on Windows write one) is no part
         * of the first document: left there, the first line is no JSON and
         * the format detection takes bulk input for ndjson. */
        if (lineno == 1 && n >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0) {
            s += 3;
            n -= 3;
        }
        L->lines_read++;
        L->bytes_read += (uint64_t)got;
        L->at_input = input;
        L->at_line = lineno;
        if (lineno % POLL_EVERY == 0 && L->eb != NULL)
            esbulk_poll(L->eb, 0);
        if ((lineno & 63) == 0)
            show_progress(L, 0);
        if (is_blank(s, n)) {
            L->bytes_done += (uint64_t)got;
            continue;
        }
        if (fmt == FMT_AUTO) {
            fmt = looks_like_bulk(s, n) ? FMT_BULK : FMT_NDJSON;
        }
        if (fmt == FMT_NDJSON) {
            if (L->index == NULL) {
                clear_progress(L);
                fprintf(stderr, "esbulk load: --index is required: %s is ndjson (line %" PRIu64
                        " is not a _bulk action line)\n%s", input_name(L, input), lineno,
                        load_usage);
                rc = EXIT_USAGE;
                break;
            }
            if (ndjson_line(L, input, lineno, s, n, (uint64_t)got) != 0) {
                rc = -1;
                break;
            }
            continue;
        }
        /* bulk */
        if (have_pending && is_action_line(s, n)) {
            /* Pairing it as the source would index the document with this
             * action line as its body, and shift every pair after it. */
            have_pending = 0;
            fail_line(L, input, pending.line, pending.bytes, (int)pending.op, &pending,
                      "its source line is missing: the next line is an action line", NULL, 0,
                      0);
            json_decref(pending.root);
            pending.root = NULL;
            /* and this line is read as the action line it is */
        } else if (have_pending) {
            have_pending = 0;
            pending.bytes += (uint64_t)got;
            if (pending.why[0] != '\0')
                fail_line(L, input, pending.line, pending.bytes, (int)pending.op, &pending,
                          pending.why, s, n, 1);
            else if (add_doc(L, input, pending.line, pending.bytes, pending.op, pending.index,
                             pending.id, pending.id_len, pending.routing, pending.routing_len,
                             s, n, &pending.opts) != 0)
                rc = -1;
            json_decref(pending.root);
            pending.root = NULL;
            if (rc != 0)
                break;
            continue;
        }
        if (parse_action(L, s, n, &pending) != 0) {
            if (orphan) {
                /* the source line of the broken action line before it */
                orphan = 0;
                L->bytes_done += (uint64_t)got;
                continue;
            }
            fail_line(L, input, lineno, (uint64_t)got, -1, NULL,
                      "not a bulk action line ({\"index\"|\"create\"|\"update\"|\"delete\": "
                      "{...}}); it and the line after it (unless that is an action) are skipped",
                      NULL, 0, 0);
            orphan = 1;
            continue;
        }
        orphan = 0;
        pending.line = lineno;
        pending.bytes = (uint64_t)got;
        if (pending.op == ESBULK_OP_DELETE) {
            if (pending.why[0] != '\0')
                fail_line(L, input, lineno, pending.bytes, (int)pending.op, &pending,
                          pending.why, NULL, 0, 1);
            else if (add_doc(L, input, lineno, pending.bytes, pending.op, pending.index,
                             pending.id, pending.id_len, pending.routing, pending.routing_len,
                             NULL, 0, &pending.opts) != 0)
                rc = -1;
            json_decref(pending.root);
            pending.root = NULL;
            if (rc != 0)
                break;
            continue;
        }
        have_pending = 1;
    }
    if (rc == 0 && have_pending && !interrupted)
        fail_line(L, input, pending.line, pending.bytes, (int)pending.op, &pending,
                  "the input ends after an action line: its source line is missing", NULL, 0, 0);
    json_decref(pending.root);
    if (rc == 0 && ferror(fp) && !interrupted) {
        clear_progress(L);
        fprintf(stderr, "esbulk load: reading %s: %s\n", input_name(L, input), strerror(errno));
        rc = -1;
    }
    if (interrupted && rc == 0)
        rc = -1;
    free(line);
    return rc;
}

/* ------------------------------------------------------------------------- */
/* Summary and statistics */

static int64_t jint(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

/* 1234567 -> "1.2 MB" */
static void fmt_bytes(char *out, size_t size, double b)
{
    if (b < 1e3)
        snprintf(out, size, "%.0f B", b);
    else if (b < 1e6)
        snprintf(out, size, "%.1f kB", b / 1e3);
    else if (b < 1e9)
        snprintf(out, size, "%.1f MB", b / 1e6);
    else
        snprintf(out, size, "%.2f GB", b / 1e9);
}

static void print_summary(load_t *L, json_t *stats, double el)
{
    char sent[32], raw[32];

    uint64_t done = L->indexed + L->failed + L->possibly;

    clear_progress(L);
    if (L->failures_total > L->failures_shown)
        fprintf(stderr, "esbulk load: %" PRIu64 " more failure%s not shown%s%s%s\n",
                L->failures_total - L->failures_shown,
                L->failures_total - L->failures_shown == 1 ? "" : "s",
                L->reasons_path ? " (all are in " : "", L->reasons_path ? L->reasons_path : "",
                L->reasons_path ? ")" : "");
    fprintf(stderr, "esbulk load: %" PRIu64 " document%s read, %" PRIu64 " indexed, %" PRIu64
            " failed, %" PRIu64 " possibly indexed\n",
            L->read_docs, L->read_docs == 1 ? "" : "s", L->indexed, L->failed, L->possibly);
    fprintf(stderr, "esbulk load: %.2f s, %.0f docs/s, %.1f MB/s of input\n", el,
            el > 0 ? (double)done / el : 0.0, el > 0 ? (double)L->bytes_done / el / 1e6 : 0.0);
    if (stats != NULL) {
        fmt_bytes(sent, sizeof(sent), (double)jint(stats, "bytes_sent"));
        fmt_bytes(raw, sizeof(raw), (double)jint(stats, "bytes_uncompressed"));
        fprintf(stderr, "esbulk load: %" PRId64 " requests, %" PRId64 " retried, %" PRId64
                " 429s (%" PRId64 " whole requests, %" PRId64 " items), %" PRId64
                " unrouted, %s sent (%s uncompressed)\n",
                jint(stats, "requests"), jint(stats, "retried"),
                jint(stats, "http_429") + jint(stats, "item_429"), jint(stats, "http_429"),
                jint(stats, "item_429"), jint(stats, "unrouted"), sent, raw);
    }
}

static void print_latency(json_t *lat, const char *key)
{
    json_t *v = json_object_get(lat, key);

    if (json_is_integer(v))
        fprintf(stderr, " %7" JSON_INTEGER_FORMAT, json_integer_value(v));
    else
        fprintf(stderr, " %7s", "-");
}

static void print_node_stats(json_t *stats)
{
    json_t *nodes = json_object_get(stats, "nodes"), *node;
    size_t i;

    fprintf(stderr, "%-24s %9s %7s %7s %7s %7s\n", "NODE", "REQUESTS", "ERRORS", "P50 ms",
            "P95 ms", "P99 ms");
    json_array_foreach(nodes, i, node) {
        json_t *name = json_object_get(node, "name"), *url = json_object_get(node, "url");
        json_t *lat = json_object_get(node, "latency_ms");

        fprintf(stderr, "%-24s %9" PRId64 " %7" PRId64,
                json_is_string(name) ? json_string_value(name)
                                     : json_is_string(url) ? json_string_value(url) : "-",
                jint(node, "requests"), jint(node, "errors"));
        print_latency(lat, "p50");
        print_latency(lat, "p95");
        print_latency(lat, "p99");
        fputc('\n', stderr);
    }
    if (json_array_size(nodes) == 0)
        fprintf(stderr, "(no node statistics)\n");
}

/* ------------------------------------------------------------------------- */
/* Options */

enum {
    O_FORMAT = 256, O_URL, O_INDEX, O_OP, O_ID_FIELD, O_ROUTING_FIELD, O_ID_GENERATE,
    O_FLUSH_DOCS, O_FLUSH_BYTES, O_FLUSH_INTERVAL, O_INFLIGHT, O_ROUTING_LEVEL, O_COMPRESSION,
    O_USER, O_PASSWORD, O_API_KEY, O_BEARER, O_INSECURE, O_CA_FILE, O_SET, O_FAILED, O_QUIET,
    O_STATS, O_HELP, O_AWS_REGION, O_AWS_SERVICE, O_AWS_PROCESS, O_SET_FILE, O_HEADER = 'H'
};

static const struct option load_opts[] = {
    {"format", required_argument, NULL, O_FORMAT},
    {"url", required_argument, NULL, O_URL},
    {"index", required_argument, NULL, O_INDEX},
    {"op", required_argument, NULL, O_OP},
    {"id-field", required_argument, NULL, O_ID_FIELD},
    {"routing-field", required_argument, NULL, O_ROUTING_FIELD},
    {"id-generate", required_argument, NULL, O_ID_GENERATE},
    {"flush-docs", required_argument, NULL, O_FLUSH_DOCS},
    {"flush-bytes", required_argument, NULL, O_FLUSH_BYTES},
    {"flush-interval-ms", required_argument, NULL, O_FLUSH_INTERVAL},
    {"inflight", required_argument, NULL, O_INFLIGHT},
    {"routing-level", required_argument, NULL, O_ROUTING_LEVEL},
    {"compression", required_argument, NULL, O_COMPRESSION},
    {"user", required_argument, NULL, O_USER},
    {"password", required_argument, NULL, O_PASSWORD},
    {"api-key", required_argument, NULL, O_API_KEY},
    {"bearer", required_argument, NULL, O_BEARER},
    {"aws-region", required_argument, NULL, O_AWS_REGION},
    {"aws-service", required_argument, NULL, O_AWS_SERVICE},
    {"aws-credential-process", required_argument, NULL, O_AWS_PROCESS},
    {"set-file", required_argument, NULL, O_SET_FILE},
    {"header", required_argument, NULL, O_HEADER},
    {"insecure", no_argument, NULL, O_INSECURE},
    {"ca-file", required_argument, NULL, O_CA_FILE},
    {"set", required_argument, NULL, O_SET},
    {"failed", required_argument, NULL, O_FAILED},
    {"quiet", no_argument, NULL, O_QUIET},
    {"stats", no_argument, NULL, O_STATS},
    {"help", no_argument, NULL, O_HELP},
    {NULL, 0, NULL, 0}};

typedef struct {
    const char *key, *value, *option;
} kv_t;

static int conf_put(esbulk_conf_t *conf, const kv_t *kv)
{
    char errstr[512];

    if (esbulk_conf_set(conf, kv->key, kv->value, errstr, sizeof(errstr)) != ESBULK_OK) {
        fprintf(stderr, "esbulk load: %s: %s\n%s", kv->option, errstr, load_usage);
        return EXIT_USAGE;
    }
    return 0;
}

/* Sets key to the n items joined by sep (in *joined, the caller's to free),
 * as option said them. */
static int conf_put_list(esbulk_conf_t *conf, const char *key, const char *option,
                         const char *const *items, int n, char sep, char **joined)
{
    size_t len = 1, off = 0, k;
    kv_t kv;
    int i;

    for (i = 0; i < n; i++)
        len += strlen(items[i]) + 1;
    if ((*joined = malloc(len)) == NULL) {
        fprintf(stderr, "esbulk load: out of memory\n");
        return 1;
    }
    for (i = 0; i < n; i++) {
        if (i > 0)
            (*joined)[off++] = sep;
        k = strlen(items[i]);
        memcpy(*joined + off, items[i], k);
        off += k;
    }
    (*joined)[off] = '\0';
    kv.key = key;
    kv.value = *joined;
    kv.option = option;
    return conf_put(conf, &kv);
}

static int conf_is(const esbulk_conf_t *conf, const char *key, const char *value)
{
    char buf[64];

    return esbulk_conf_get(conf, key, buf, sizeof(buf), NULL) == ESBULK_OK &&
           strcmp(buf, value) == 0;
}

/* Opens input i ("-": standard input). */
static FILE *open_input(load_t *L, int i)
{
    if (L->ninputs == 0 || strcmp(L->inputs[i], "-") == 0)
        return stdin;
    return fopen(L->inputs[i], "r");
}

int esbulk_cmd_load(int argc, char **argv)
{
    static const kv_t load_defaults[] = {
        /* Add does not wait inside the library: buffer.max.docs counts results
         * not yet served, and only esbulk_poll (this thread) serves them, so a
         * blocking add could wait forever. The add loop polls instead. */
        {"enqueue.timeout.ms", "0", "default"},
        /* report invalid JSON/UTF-8 at add time with the line, not as a
         * server "failed to parse" */
        {"body.validate", "true", "default"},
    };
    kv_t opts[64], sets[MAX_SETS];
    const char *urls[MAX_URLS], *headers[MAX_HEADERS];
    int nopts = 0, nsets = 0, nurls = 0, nheaders = 0, c, i, li, rc = 0, fatal = 0, aws = 0;
    const char *aws_region = NULL, *aws_service = NULL, *aws_process = NULL;
    char *set_values[MAX_SETS] = {NULL}; /* --set-file's values, wiped at the end */
    envcreds_t env = {NULL, NULL, NULL}; /* ESBULK_PASSWORD, ..., wiped at the end */
    char optnames[64][32];
    char *urlbuf = NULL, *headerbuf = NULL, errstr[512], *stats_text;
    esbulk_conf_t *conf = NULL;
    json_t *stats = NULL;
    esbulk_topology_t *topo;
    struct sigaction sa, old_int, old_term;
    int handlers = 0;
    load_t L;
    double el;

    memset(&L, 0, sizeof(L));
    L.format = FMT_AUTO;
    L.op = ESBULK_OP_INDEX;
    interrupted = 0;
    optind = 1;
    opterr = 0; /* the message is load's own, said once (":": a missing argument) */
    while ((li = -1, c = getopt_long(argc, argv, ":H:", load_opts, &li)) != -1) {
        const char *key = NULL;

        if (nopts == (int)(sizeof(opts) / sizeof(opts[0])))
            return usage_error("too many options%s", "");

        switch (c) {
        case O_FORMAT:
            if (strcmp(optarg, "auto") == 0) L.format = FMT_AUTO;
            else if (strcmp(optarg, "ndjson") == 0) L.format = FMT_NDJSON;
            else if (strcmp(optarg, "bulk") == 0) L.format = FMT_BULK;
            else return usage_error("--format wants auto, ndjson or bulk, got \"%s\"", optarg);
            break;
        case O_URL:
            if (nurls == MAX_URLS)
                return usage_error("too many --url options%s", "");
            urls[nurls++] = optarg;
            break;
        case O_HEADER:
            if (nheaders == MAX_HEADERS)
                return usage_error("too many --header options%s", "");
            headers[nheaders++] = optarg;
            break;
        case O_INDEX:
            if (*optarg == '\0')
                return usage_error("--index wants a name%s", "");
            L.index = optarg;
            break;
        case O_OP:
            if (op_from_name(optarg, &L.op) != 0)
                return usage_error("--op wants index, create, update or delete, got \"%s\"",
                                   optarg);
            break;
        case O_ID_FIELD: L.id_field = optarg; break;
        case O_ROUTING_FIELD: L.routing_field = optarg; break;
        case O_ID_GENERATE: key = "id.generate"; break;
        case O_FLUSH_DOCS: key = "flush.docs"; break;
        case O_FLUSH_BYTES: key = "flush.bytes"; break;
        case O_FLUSH_INTERVAL: key = "flush.interval.ms"; break;
        case O_INFLIGHT: key = "max.inflight.per.node"; break;
        case O_ROUTING_LEVEL: key = "routing.level"; break;
        case O_COMPRESSION: key = "compression"; break;
        case O_USER: key = "auth.username"; break;
        case O_PASSWORD: key = "auth.password"; break;
        case O_API_KEY: key = "auth.api_key"; break;
        case O_BEARER: key = "auth.bearer"; break;
        case O_AWS_REGION:
            key = "auth.aws.region";
            if (!aws && nopts < (int)(sizeof(opts) / sizeof(opts[0])) - 1) {
                /* a managed domain answers at one endpoint; its nodes'
                 * addresses are private (--set still wins) */
                opts[nopts].key = "topology.discovery";
                opts[nopts].value = "false";
                opts[nopts++].option = "--aws-region";
            }
            aws = 1;
            aws_region = optarg;
            break;
        case O_AWS_SERVICE:
            key = "auth.aws.service";
            aws_service = optarg;
            break;
        case O_AWS_PROCESS: aws_process = optarg; break;
        case O_CA_FILE: key = "tls.ca.file"; break;
        case O_INSECURE:
            opts[nopts].key = "tls.insecure";
            opts[nopts].value = "true";
            opts[nopts++].option = "--insecure";
            break;
        case O_SET: {
            char *eq = strchr(optarg, '=');

            if (eq == NULL || eq == optarg)
                return usage_error("--set wants KEY=VALUE, got \"%s\"", optarg);
            if (nsets == MAX_SETS)
                return usage_error("too many --set options%s", "");
            *eq = '\0';
            sets[nsets].key = optarg;
            sets[nsets].value = eq + 1;
            sets[nsets++].option = "--set";
            break;
        }
        case O_SET_FILE: {
            /* the value from a file: a secret kept out of argv */
            char *eq = strchr(optarg, '='), why[600];

            if (eq == NULL || eq == optarg)
                return usage_error("--set-file wants KEY=FILE, got \"%s\"", optarg);
            if (nsets == MAX_SETS)
                return usage_error("too many --set options%s", "");
            *eq = '\0';
            if (firstline_read("--set-file", eq + 1, &set_values[nsets], why, sizeof(why)))
                return usage_error("%s", why);
            sets[nsets].key = optarg;
            sets[nsets].value = set_values[nsets];
            sets[nsets++].option = "--set-file";
            break;
        }
        case O_FAILED: L.failed_path = optarg; break;
        case O_QUIET: L.quiet = 1; break;
        case O_STATS: L.show_stats = 1; break;
        case O_HELP:
            fputs(load_help, stdout);
            fputs(load_help_output, stdout);
            return 0;
        case ':': return usage_error("option %s needs an argument", argv[optind - 1]);
        default:
            if (optopt > 0 && optopt < 128) { /* an unknown short option */
                char opt[3] = {'-', (char)optopt, '\0'};

                return usage_error("unknown option %s", opt);
            }
            return usage_error("unknown option %s", argv[optind - 1]);
        }
        if (key != NULL) {
            snprintf(optnames[nopts], sizeof(optnames[nopts]), "--%s",
                     li >= 0 ? load_opts[li].name : key);
            opts[nopts].key = key;
            opts[nopts].value = optarg;
            opts[nopts].option = optnames[nopts];
            nopts++;
        }
    }
    L.inputs = argv + optind;
    L.ninputs = argc - optind;
    if (L.format == FMT_NDJSON && L.index == NULL)
        return usage_error("--index is required for --format ndjson%s", "");
    if ((L.op == ESBULK_OP_DELETE || L.op == ESBULK_OP_UPDATE) && L.id_field == NULL)
        return usage_error("--op %s needs --id-field", op_name((int)L.op));
    if (L.format == FMT_BULK && (L.id_field || L.routing_field || L.op != ESBULK_OP_INDEX))
        return usage_error("--op, --id-field and --routing-field are for ndjson input, "
                           "not --format bulk%s", "");

    /* Inputs: all must open; the total size is known when all are files. */
    {
        int known = 1;

        for (i = 0; i < (L.ninputs ? L.ninputs : 1); i++) {
            struct stat st;
            FILE *fp = open_input(&L, i);

            if (fp == NULL) {
                fprintf(stderr, "esbulk load: cannot open %s: %s\n", L.inputs[i],
                        strerror(errno));
                return EXIT_USAGE;
            }
            if (fstat(fileno(fp), &st) == 0 && S_ISDIR(st.st_mode)) {
                /* opens, then fails at the first read: as a file that cannot be
                 * opened, bad usage */
                fprintf(stderr, "esbulk load: cannot read %s: %s\n", L.inputs[i],
                        strerror(EISDIR));
                fclose(fp);
                return EXIT_USAGE;
            }
            if (fstat(fileno(fp), &st) == 0 && S_ISREG(st.st_mode))
                L.total_bytes += (uint64_t)st.st_size;
            else
                known = 0;
            if (fp != stdin)
                fclose(fp);
        }
        if (!known)
            L.total_bytes = 0;
    }

    /* out of the environment before a credential process could inherit
     * them */
    if (envcreds_take(&env) != 0) {
        fprintf(stderr, "esbulk load: out of memory\n");
        return 1;
    }
    if (aws) {
        /* the credentials from where the AWS tools take them, never argv
         * (which any user on the machine can read) */
        char why[512];

        if ((L.aws = awscreds_new(aws_region, aws_service, aws_process, on_aws_log, &L, why,
                                  sizeof(why))) == NULL) {
            rc = usage_error("--aws-region: %s", why);
            goto out;
        }
    } else if (aws_process != NULL) {
        rc = usage_error("--aws-credential-process needs --aws-region%s", "");
        goto out;
    }

    /* Configuration: load's defaults, the options, the AWS credentials,
     * then --set. */
    if ((conf = esbulk_conf_new()) == NULL) {
        fprintf(stderr, "esbulk load: out of memory\n");
        return 1;
    }
    for (i = 0; i < (int)(sizeof(load_defaults) / sizeof(load_defaults[0])); i++)
        if ((rc = conf_put(conf, &load_defaults[i])) != 0)
            goto out;
    if (nurls > 0 && (rc = conf_put_list(conf, "urls", "--url", urls, nurls, ',', &urlbuf)))
        goto out;
    if (nheaders > 0 &&
        (rc = conf_put_list(conf, "http.headers", "--header", headers, nheaders, '\n', &headerbuf)))
        goto out;
    for (i = 0; i < nopts; i++)
        if ((rc = conf_put(conf, &opts[i])) != 0)
            goto out;
    if (L.aws != NULL) {
        char why[512];

        if (awscreds_conf(L.aws, conf, why, sizeof(why)) != 0) {
            rc = usage_error("%s", why);
            goto out;
        }
    }
    for (i = 0; i < nsets; i++)
        if ((rc = conf_put(conf, &sets[i])) != 0)
            goto out;
    {
        char why[600];

        /* what the command line leaves out, from the environment */
        if (envcreds_conf(&env, conf, "--user", why, sizeof(why)) != 0) {
            rc = usage_error("%s", why);
            goto out;
        }
    }
    if (conf_is(conf, "result.failures_only", "true")) {
        /* successes would then have no result, and their records no owner */
        rc = usage_error("result.failures_only=true is not supported by load%s", "");
        goto out;
    }
    L.gen_ids = !conf_is(conf, "id.generate", "none");
    esbulk_conf_set_result_cb(conf, on_result);
    esbulk_conf_set_log_cb(conf, on_log);
    esbulk_conf_set_opaque(conf, &L);
    /* before the library's threads start: on_log reads it */
    L.progress = !L.quiet && isatty(2);

    if (L.failed_path != NULL) {
        size_t len = strlen(L.failed_path);

        if ((L.reasons_path = malloc(len + 9)) == NULL) {
            rc = 1;
            goto out;
        }
        memcpy(L.reasons_path, L.failed_path, len);
        memcpy(L.reasons_path + len, ".reasons", 9);
        if ((L.failed_fp = fopen(L.failed_path, "w")) == NULL ||
            (L.reasons_fp = fopen(L.reasons_path, "w")) == NULL) {
            fprintf(stderr, "esbulk load: cannot write %s: %s\n",
                    L.failed_fp ? L.reasons_path : L.failed_path, strerror(errno));
            rc = EXIT_USAGE;
            goto out;
        }
    }

    /* The URLs and settings are checked now (a topology does no I/O until
     * asked); the handle is made at the first document (start_engine). */
    if ((topo = esbulk_topology_new(conf, errstr, sizeof(errstr))) == NULL) {
        fprintf(stderr, "esbulk load: %s\n", errstr);
        rc = EXIT_USAGE;
        goto out;
    }
    esbulk_topology_destroy(topo);
    L.conf = conf;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sa.sa_flags = (int)SA_RESETHAND; /* a second signal ends the process */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    handlers = 1;

    clock_gettime(CLOCK_MONOTONIC, &L.t0);
    L.last_progress_ns = now_ns();

    for (i = 0; i < (L.ninputs ? L.ninputs : 1) && !interrupted; i++) {
        FILE *fp = open_input(&L, i);
        int r;

        if (fp == NULL) {
            clear_progress(&L);
            fprintf(stderr, "esbulk load: cannot open %s: %s\n", L.inputs[i], strerror(errno));
            fatal = 1;
            break;
        }
        r = load_input(&L, (uint32_t)i, fp);
        if (fp != stdin)
            fclose(fp);
        if (r == EXIT_USAGE) {
            fatal = EXIT_USAGE;
            break;
        }
        if (r != 0) {
            fatal = 1;
            break;
        }
    }
    if (L.engine_failed) {
        /* esbulk_new refused the configuration (said): as bad usage */
        rc = EXIT_USAGE;
        goto out;
    }
    if (fatal == EXIT_USAGE && L.read_docs == 0) {
        /* nothing was read (--index missing): the message and the usage are
         * all there is to say, no "0 documents read" summary */
        rc = EXIT_USAGE;
        goto out;
    }
    if (interrupted) {
        clear_progress(&L);
        fprintf(stderr, "esbulk load: interrupted after line %" PRIu64 " of %s (the rest of "
                "the input is not read)%s\n", L.at_line, input_name(&L, L.at_input),
                L.eb != NULL ? "; waiting up to 5 s for the documents in flight" : "");
        if (L.eb != NULL)
            esbulk_close(L.eb, 5000);
    } else if (L.eb != NULL) {
        /* flush in slices to keep the progress line moving */
        while (esbulk_flush(L.eb, 250) == ESBULK_ERR_TIMED_OUT && !interrupted)
            show_progress(&L, 1);
        esbulk_close(L.eb, interrupted ? 5000 : -1);
    }
    el = elapsed_s(&L);
    if (L.eb != NULL) {
        /* (no document, no handle: nothing was sent) */
        stats_text = esbulk_stats_json(L.eb);
        if (stats_text != NULL)
            stats = json_loads(stats_text, 0, NULL);
        esbulk_free(stats_text);
        awscreds_destroy(L.aws); /* its thread updates the handle */
        L.aws = NULL;
        esbulk_destroy(L.eb);
        L.eb = NULL;
    }

    print_summary(&L, stats, el);
    if (L.show_stats && stats != NULL)
        print_node_stats(stats);
    if (L.failed_fp != NULL) {
        if (fclose(L.failed_fp) != 0)
            L.write_error = 1;
        L.failed_fp = NULL;
        if (fclose(L.reasons_fp) != 0)
            L.write_error = 1;
        L.reasons_fp = NULL;
        if (L.write_error)
            fprintf(stderr, "esbulk load: writing %s or %s failed\n", L.failed_path,
                    L.reasons_path);
        else if (L.failed + L.possibly > L.unpaired)
            fprintf(stderr, "esbulk load: failed documents are in %s (re-run with --format "
                            "bulk), reasons in %s%s\n", L.failed_path, L.reasons_path,
                    L.unpaired > 0 ? "; lines that are no document to re-run (not an action "
                                     "line, a missing source line) are in the reasons only"
                                   : "");
        else if (L.unpaired > 0)
            fprintf(stderr, "esbulk load: no document to re-run: the failures (lines that are "
                            "not an action line, missing source lines) are in %s\n",
                    L.reasons_path);
    }
    if (L.failed + L.possibly > 0) {
        uint64_t n = L.failed + L.possibly;

        fprintf(stderr, "esbulk load: %" PRIu64 " document%s failed", n, n == 1 ? "" : "s");
        if (L.possibly > 0)
            fprintf(stderr, " (%" PRIu64 " of them possibly indexed)", L.possibly);
        fputc('\n', stderr);
        rc = 1;
    }
    if (fatal)
        rc = fatal;
    else if (L.write_error)
        rc = 1;
out:
    if (handlers) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
    }
    json_decref(stats);
    for (i = 0; i < MAX_SETS; i++)
        firstline_free(set_values[i]);
    envcreds_free(&env);
    awscreds_destroy(L.aws);
    if (L.eb != NULL)
        esbulk_destroy(L.eb);
    if (L.failed_fp != NULL)
        fclose(L.failed_fp);
    if (L.reasons_fp != NULL)
        fclose(L.reasons_fp);
    free(L.reasons_path);
    free(L.scratch);
    esbulk_docopts_destroy(L.docopts);
    free(urlbuf);
    free(headerbuf);
    esbulk_conf_destroy(conf);
    return rc;
}
