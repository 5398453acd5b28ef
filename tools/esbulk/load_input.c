/* esbulk load's input reader: NDJSON lines and _bulk action/source pairs
 * read from each input, the top-level fields of --id-field/--routing-field
 * found without a full parse, and each document added to the handle, which
 * is made at the first one (start_engine), or reported failed. */
#define _XOPEN_SOURCE 700
#include "load.h"

#include "../common/awscreds.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Set by the first SIGINT/SIGTERM (esbulk_load.c): reading stops. */
volatile sig_atomic_t interrupted;

/* Makes the handle, when the first document is to be added: until then
 * nothing contacts the cluster, so that bad usage found in the input (ndjson
 * without --index) ends with its message alone. 0, or -1 after a message.
 * The library's threads start with SIGINT and SIGTERM blocked: the signals
 * come to this thread. */
int start_engine(load_t *L)
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

int op_from_name(const char *s, esbulk_op_t *op)
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

/* A bulk action with its source line (body NULL for delete): failed for
 * the reason its action line gave, or added. 0, or -1 as add_doc. */
static int take_action(load_t *L, uint32_t input, action_t *a, const char *body,
                       size_t body_len)
{
    int rc = 0;

    if (a->why[0] != '\0')
        fail_line(L, input, a->line, a->bytes, (int)a->op, a, a->why, body, body_len, 1);
    else if (add_doc(L, input, a->line, a->bytes, a->op, a->index, a->id, a->id_len,
                     a->routing, a->routing_len, body, body_len, &a->opts) != 0)
        rc = -1;
    json_decref(a->root);
    a->root = NULL;
    return rc;
}

/* Reads one input. Returns 0, -1 on a read error or interruption, or
 * EXIT_USAGE when it needs --index. */
int load_input(load_t *L, uint32_t input, FILE *fp)
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
                        LOAD_USAGE);
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
            if ((rc = take_action(L, input, &pending, s, n)) != 0)
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
            if ((rc = take_action(L, input, &pending, NULL, 0)) != 0)
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

