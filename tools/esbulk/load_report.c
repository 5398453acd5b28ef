/* esbulk load's report: each document's result (the record it carried),
 * the failures (on standard error, and with --failed in FILE as _bulk pairs
 * and in FILE.reasons as JSON lines) and the summary at the end. */
#define _XOPEN_SOURCE 700
#include "load.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

const char *input_name(const load_t *L, uint32_t i)
{
    if (L->ninputs == 0 || strcmp(L->inputs[i], "-") == 0)
        return "<stdin>";
    return L->inputs[i];
}

const char *op_name(int op)
{
    static const char *const names[] = {"index", "create", "update", "delete"};
    return op >= 0 && op <= 3 ? names[op] : "?";
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

int aopts_empty(const aopts_t *o)
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

void report_failure(load_t *L, const failure_t *f)
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

/* s[0..len) and a NUL at p: the end. */
static char *put_part(char *p, const char *s, size_t len)
{
    if (len) memcpy(p, s, len);
    p[len] = '\0';
    return p + len + 1;
}

rec_t *rec_new(load_t *L, uint32_t input, uint64_t line, uint64_t bytes, esbulk_op_t op,
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
    p = put_part(rec->data, index, index_len);
    p = put_part(p, id, id_len);
    p = put_part(p, routing, routing_len);
    p = put_part(p, body, body_len);
    if (keep_opts) {
        memcpy(p, opts, sizeof(*opts));
        put_part(p + sizeof(*opts), opts->pipeline, pipeline_len);
    }
    return rec;
}

void on_result(esbulk_t *eb, const esbulk_result_t *result, void *opaque)
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

/* A failure found by load itself. With pair, a document whose action line
 * load refused (a key it cannot express, a bad value): the failures file
 * gets that action line as read, with the --index default as _index when it
 * has none, and the source line: the document is kept whole, and loadable
 * through the _bulk API (or by load once its action is mended). Without, a
 * line that is no document to re-run (not an action line, a missing source
 * line): in the reasons file only. */
void fail_line(load_t *L, uint32_t input, uint64_t line, uint64_t bytes, int op,
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
/* The summary */

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

void print_summary(load_t *L, json_t *stats, double el)
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

