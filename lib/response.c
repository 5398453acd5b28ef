/* The _bulk response parser. The engine asks for a filtered answer
 * (filter_path=errors,items.*._index,...), so nothing here relies on "took"
 * or "errors": only "items" and, per item, its status decide. Unknown fields
 * are ignored; a field used but of the wrong type counts as absent, and a
 * 2xx body that cannot be matched item by item to the documents sent is
 * "may have been applied" (RETRY_AMBIGUOUS), never a guess. */
#include "response.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define WHY_MAX 512

/* The length of the valid UTF-8 sequence at s[0..len), 0 when it is invalid
 * or cut short. */
static size_t utf8_seq(const unsigned char *s, size_t len)
{
    uint32_t cp;
    size_t n, i;

    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xc2 && s[0] <= 0xdf) {
        n = 2;
        cp = s[0] & 0x1f;
    } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
        n = 3;
        cp = s[0] & 0x0f;
    } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
        n = 4;
        cp = s[0] & 0x07;
    } else {
        return 0;
    }
    if (len < n)
        return 0;
    for (i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

/* A copy of the valid UTF-8 string s[0..len), cut to ESBULK__RESP_REASON_MAX
 * bytes at a character boundary. NULL when out of memory. */
static char *dup_capped(const char *s, size_t len)
{
    size_t keep;
    char *p;

    if (len <= ESBULK__RESP_REASON_MAX)
        return esbulk__strndup(s, len);
    keep = ESBULK__RESP_REASON_MAX - 3;
    /* s[keep] is the first byte dropped: do not split the character it is in */
    while (keep > 0 && ((unsigned char)s[keep] & 0xc0) == 0x80)
        keep--;
    p = malloc(keep + 4);
    if (p == NULL)
        return NULL;
    memcpy(p, s, keep);
    memcpy(p + keep, "...", 4);
    return p;
}

/* A one-line quote of the first ESBULK__RESP_TEXT_MAX bytes of a body that
 * is not a JSON error (an HTML page from a proxy, "Unauthorized"): runs of
 * whitespace and control characters become one space, invalid UTF-8 bytes
 * '?', so that the result is printable UTF-8. *text is NULL when nothing
 * printable is left. */
static esbulk_err_t text_quote(const char *body, size_t len, char **text)
{
    const unsigned char *s = (const unsigned char *)body;
    size_t n = len < ESBULK__RESP_TEXT_MAX ? len : ESBULK__RESP_TEXT_MAX;
    size_t i = 0, o = 0, k;
    int space = 0;
    char *p;

    *text = NULL;
    p = malloc(n + 4);
    if (p == NULL)
        return ESBULK_ERR_NOMEM;
    while (i < n) {
        if (s[i] <= 0x20 || s[i] == 0x7f) {
            space = 1;
            i++;
            continue;
        }
        k = utf8_seq(s + i, len - i);
        if (k > 0 && i + k > n)
            break; /* a character cut by the limit */
        if (space && o > 0)
            p[o++] = ' ';
        space = 0;
        if (k == 0) {
            p[o++] = '?';
            i++;
        } else {
            memcpy(p + o, s + i, k);
            o += k;
            i += k;
        }
    }
    if (o == 0) {
        free(p);
        return ESBULK_OK;
    }
    if (n < len) {
        memcpy(p + o, "...", 3);
        o += 3;
    }
    p[o] = '\0';
    *text = p;
    return ESBULK_OK;
}

/* *dst = a copy of obj[key] when it is a string (capped: for error text),
 * else NULL. */
static esbulk_err_t take_string(const json_t *obj, const char *key, int capped, char **dst)
{
    const json_t *v = json_object_get(obj, key);

    *dst = NULL;
    if (!json_is_string(v))
        return ESBULK_OK;
    *dst = capped ? dup_capped(json_string_value(v), json_string_length(v))
                  : esbulk__strndup(json_string_value(v), json_string_length(v));
    return *dst != NULL ? ESBULK_OK : ESBULK_ERR_NOMEM;
}

/* obj[key] when it is a non-negative integer, else -1. */
static int64_t take_int(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);

    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return -1;
    return (int64_t)json_integer_value(v);
}

/* caused_by's type and reason (ctype NULL when it has none), each cut as the
 * server's strings are, into *cause_type and *cause_reason, and appended to
 * *reason (which may be NULL) as " (caused by <type>: <reason>)", <type>
 * "error" when there is none. The whole is not cut again: the reason then
 * ends with exactly that text, which esbulk_result(3) promises. */
static esbulk_err_t add_caused_by(char **reason, char **cause_type, char **cause_reason,
                                  const char *ctype, const char *creason)
{
    char *t = ctype != NULL ? dup_capped(ctype, strlen(ctype)) : NULL,
         *r = dup_capped(creason, strlen(creason)), *joined = NULL;
    size_t n;

    if (r != NULL && (ctype == NULL || t != NULL)) {
        n = (*reason ? strlen(*reason) : 0) + strlen(r) + (t ? strlen(t) : 5) + 16;
        if ((joined = malloc(n)) != NULL)
            snprintf(joined, n, "%s (caused by %s: %s)", *reason ? *reason : "",
                     t ? t : "error", r);
    }
    if (joined == NULL) {
        free(t);
        free(r);
        return ESBULK_ERR_NOMEM;
    }
    free(*reason);
    *reason = joined;
    free(*cause_type);
    free(*cause_reason);
    *cause_type = t;
    *cause_reason = r;
    return ESBULK_OK;
}

/* The type and reason of an "error" value: {"type":..,"reason":..} (either
 * may be missing or null) or, from odd servers, a plain string (the
 * reason). */
static esbulk_err_t error_fields(const json_t *error, char **type, char **reason,
                                 char **cause_type, char **cause_reason)
{
    esbulk_err_t err;

    *type = *reason = *cause_type = *cause_reason = NULL;
    if (json_is_string(error)) {
        *reason = dup_capped(json_string_value(error), json_string_length(error));
        return *reason != NULL ? ESBULK_OK : ESBULK_ERR_NOMEM;
    }
    if (!json_is_object(error))
        return ESBULK_OK;
    err = take_string(error, "type", 1, type);
    if (err == ESBULK_OK)
        err = take_string(error, "reason", 1, reason);
    if (err == ESBULK_OK) {
        /* the server's detail ("Unexpected character ... at column 6") is
         * often only in caused_by: keep it */
        const json_t *cb = json_object_get(error, "caused_by");
        const json_t *cr = json_object_get(cb, "reason"), *ct = json_object_get(cb, "type");

        if (json_is_string(cr))
            err = add_caused_by(reason, cause_type, cause_reason,
                                json_is_string(ct) ? json_string_value(ct) : NULL,
                                json_string_value(cr));
    }
    if (err != ESBULK_OK) {
        free(*type);
        free(*reason);
        free(*cause_type);
        free(*cause_reason);
        *type = *reason = *cause_type = *cause_reason = NULL;
    }
    return err;
}

static esbulk_err_t explain(esbulk__resp_t *out, esbulk__resp_class_t klass, esbulk_err_t err,
                            const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Classifies out and sets its reason to a library explanation (replacing
 * any reason already set). */
static esbulk_err_t explain(esbulk__resp_t *out, esbulk__resp_class_t klass, esbulk_err_t err,
                            const char *fmt, ...)
{
    char why[WHY_MAX];
    va_list ap;
    char *reason;

    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    reason = esbulk__strdup(why);
    if (reason == NULL)
        return ESBULK_ERR_NOMEM;
    free(out->error_reason);
    out->error_reason = reason;
    out->klass = klass;
    out->err = err;
    return ESBULK_OK;
}

static void item_free(esbulk__item_t *item)
{
    free(item->index);
    free(item->id);
    free(item->result);
    free(item->error_type);
    free(item->error_reason);
    free(item->cause_type);
    free(item->cause_reason);
}

static void items_free(esbulk__resp_t *out)
{
    size_t i;

    for (i = 0; i < out->nitems && (!out->borrowed || out->item_errors); i++) {
        esbulk__item_t *item = &out->items[i];

        if (!out->borrowed) {
            item_free(item);
        } else if (item->error_type != NULL || item->error_reason != NULL) {
            /* index, id and result are in the arena, the caller's or static */
            free(item->error_type);
            free(item->error_reason);
            free(item->cause_type);
            free(item->cause_reason);
        }
    }
    if (!out->items_scratch)
        free(out->items);
    free(out->arena);
    out->items = NULL;
    out->nitems = 0;
    out->arena = NULL;
    out->arena_len = out->arena_cap = 0;
    out->borrowed = out->item_errors = out->items_scratch = 0;
}

/* The class of a parsed item; is_delete: its operation is "delete". */
static esbulk__item_class_t item_class(const esbulk__item_t *item, int has_error, int is_delete,
                                       int retry_cluster_block)
{
    int32_t st = item->status;

    if (st >= 200 && st <= 299)
        return ESBULK__ITEM_OK;
    /* deleting what is not there: no error, done (the result, "not_found",
     * is asked for only with updates in the request) */
    if (st == 404 && !has_error && is_delete &&
        (item->result == NULL || strcmp(item->result, "not_found") == 0))
        return ESBULK__ITEM_OK;
    if (st == 429 || st == 503)
        return ESBULK__ITEM_RETRY; /* rejected execution, circuit breaker, no shard */
    if (st == 403 && retry_cluster_block && item->error_type != NULL &&
        strcmp(item->error_type, "cluster_block_exception") == 0)
        return ESBULK__ITEM_RETRY; /* e.g. read-only-allow-delete until disk is freed */
    return ESBULK__ITEM_FAIL;
}

/* Parses items[i] into item. When the entry cannot be interpreted at all,
 * returns ESBULK_OK with why set (item then holds nothing). */
static esbulk_err_t item_parse(const json_t *entry, size_t i, int retry_cluster_block,
                               esbulk__item_t *item, char why[WHY_MAX])
{
    const json_t *v, *body = NULL, *status, *error;
    const char *key, *op = NULL;
    json_int_t st;
    esbulk_err_t err;
    int has_error, nops = 0;

    if (!json_is_object(entry)) {
        snprintf(why, WHY_MAX, "items[%zu] is not an object", i);
        return ESBULK_OK;
    }
    /* {"<op>":{...}}: any operation name, other members ignored */
    json_object_foreach((json_t *)entry, key, v) {
        if (json_is_object(v)) {
            body = v;
            op = key;
            nops++;
        }
    }
    if (nops != 1) {
        snprintf(why, WHY_MAX, "items[%zu] has %s operation object", i, nops ? "more than one" : "no");
        return ESBULK_OK;
    }
    status = json_object_get(body, "status");
    if (!json_is_integer(status)) {
        snprintf(why, WHY_MAX, "items[%zu] has no status", i);
        return ESBULK_OK;
    }
    st = json_integer_value(status);
    if (st < 100 || st > 599) {
        snprintf(why, WHY_MAX, "items[%zu] has an invalid status %" JSON_INTEGER_FORMAT, i, st);
        return ESBULK_OK;
    }
    item->status = (int32_t)st;
    item->seq_no = take_int(body, "_seq_no");
    item->primary_term = take_int(body, "_primary_term");
    item->version = take_int(body, "_version");
    error = json_object_get(body, "error");
    has_error = error != NULL && !json_is_null(error);
    err = take_string(body, "_index", 0, &item->index);
    if (err == ESBULK_OK)
        err = take_string(body, "_id", 0, &item->id);
    if (err == ESBULK_OK)
        err = take_string(body, "result", 0, &item->result);
    if (err == ESBULK_OK && has_error)
        err = error_fields(error, &item->error_type, &item->error_reason, &item->cause_type,
                           &item->cause_reason);
    if (err != ESBULK_OK)
        return err; /* the caller frees what was taken */

    item->klass = item_class(item, has_error, strcmp(op, "delete") == 0, retry_cluster_block);
    return ESBULK_OK;
}

/* json_loadb's NULL was for want of memory: either it says so, or it failed
 * before writing any message (jansson 2.14 returns early when its lexer
 * buffer cannot be allocated; jerr is zeroed beforehand). */
static int load_nomem(const json_error_t *jerr)
{
    return json_error_code(jerr) == json_error_out_of_memory || jerr->text[0] == '\0';
}

/* A 2xx: the body must be {"items":[...]} with one item per document. */
static esbulk_err_t parse_items(const char *body, size_t body_len, size_t expected_items,
                                int retry_cluster_block, esbulk__resp_t *out)
{
    json_t *root = NULL;
    const json_t *items;
    json_error_t jerr;
    char why[WHY_MAX];
    char *text = NULL;
    esbulk_err_t err = ESBULK_OK;
    size_t i, n;

    if (body_len == 0) {
        err = explain(out, ESBULK__RESP_RETRY_AMBIGUOUS, ESBULK_ERR_BAD_RESPONSE,
                      "response truncated or not JSON: empty body");
        goto done;
    }
    memset(&jerr, 0, sizeof(jerr));
    root = json_loadb(body, body_len, 0, &jerr);
    if (root == NULL) {
        if (load_nomem(&jerr)) {
            err = ESBULK_ERR_NOMEM;
            goto done;
        }
        /* jansson's message may quote bytes of the body */
        err = text_quote(jerr.text, strlen(jerr.text), &text);
        if (err == ESBULK_OK)
            err = explain(out, ESBULK__RESP_RETRY_AMBIGUOUS, ESBULK_ERR_BAD_RESPONSE,
                          "response truncated or not JSON: %s (byte %d of %zu)",
                          text != NULL ? text : "parse error", jerr.position, body_len);
        goto done;
    }
    if (!json_is_object(root)) {
        err = explain(out, ESBULK__RESP_RETRY_AMBIGUOUS, ESBULK_ERR_BAD_RESPONSE,
                      "response is not a JSON object");
        goto done;
    }
    items = json_object_get(root, "items");
    if (!json_is_array(items)) {
        /* a server error in a 2xx body says more than "no items" */
        err = error_fields(json_object_get(root, "error"), &out->error_type, &out->error_reason,
                           &out->cause_type, &out->cause_reason);
        if (err == ESBULK_OK) {
            out->klass = ESBULK__RESP_RETRY_AMBIGUOUS;
            out->err = ESBULK_ERR_BAD_RESPONSE;
            if (out->error_reason == NULL)
                err = explain(out, ESBULK__RESP_RETRY_AMBIGUOUS, ESBULK_ERR_BAD_RESPONSE,
                              "response has no \"items\" array");
        }
        goto done;
    }
    n = json_array_size(items);
    if (n != expected_items) {
        err = explain(out, ESBULK__RESP_RETRY_AMBIGUOUS, ESBULK_ERR_BAD_RESPONSE,
                      "%zu items for %zu documents", n, expected_items);
        goto done;
    }
    if (n > 0) {
        out->items = calloc(n, sizeof(*out->items));
        if (out->items == NULL) {
            err = ESBULK_ERR_NOMEM;
            goto done;
        }
        out->nitems = n;
    }
    for (i = 0; i < n; i++) {
        esbulk__item_t *item = &out->items[i];

        item->seq_no = item->primary_term = item->version = -1;
        why[0] = '\0';
        err = item_parse(json_array_get(items, i), i, retry_cluster_block, item, why);
        if (err != ESBULK_OK)
            goto done;
        if (why[0] != '\0') {
            items_free(out);
            err = explain(out, ESBULK__RESP_RETRY_AMBIGUOUS, ESBULK_ERR_BAD_RESPONSE, "%s", why);
            goto done;
        }
    }
    out->klass = ESBULK__RESP_OK;
    out->err = ESBULK_OK;
done:
    free(text);
    json_decref(root);
    return err;
}

/* ---------------------------------------------------------------------------
 * The fast path for a 2xx answer: one pass over the bytes, no tree. It
 * takes only what it understands completely: a body that jansson (flags 0)
 * accepts, shaped {"items":[{"<op>":{...}}, ...]} with expected_items
 * items, each with an integer status in 100..599, no duplicate or escaped
 * keys where keys are looked up, nesting below FAST_DEPTH_MAX, no reals with
 * an exponent. Anything else (a malformed, truncated or odd answer, even an
 * allocation failure) it leaves, with nothing kept, to parse_items, which
 * classifies and explains it. What it takes, it takes with the result
 * parse_items would give. */

#define FAST_DEPTH_MAX 64

/* the scanners of every string and key: inlined where they are used */
#define ALWAYS_INLINE inline __attribute__((always_inline))

typedef struct {
    const unsigned char *p, *end;
} scan_t;

/* A string value or key: the bytes between its quotes, still escaped when
 * esc. p is NULL for a member that is absent or not a string. */
typedef struct {
    const unsigned char *p;
    size_t n;
    int esc;
} span_t;

/* The fields of one item as read, before anything is copied. */
typedef struct {
    span_t index, id, result;
    int64_t status, seq_no, primary_term, version;
    int has_status;
    int error;                 /* ERR_NONE, ERR_STRING (reason in ereason), ERR_OBJECT, ERR_OTHER */
    span_t etype, ereason, cbtype, cbreason;
} fast_item_t;

enum { ERR_NONE = 0, ERR_STRING, ERR_OBJECT, ERR_OTHER };

static inline const unsigned char *skip_ws(const unsigned char *p, const unsigned char *end)
{
    while (p < end && *p <= ' ' && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    return p;
}

static inline void ws(scan_t *s)
{
    s->p = skip_ws(s->p, s->end);
}

/* The next byte, -1 at the end. */
static inline int peek(const scan_t *s)
{
    return s->p < s->end ? *s->p : -1;
}

static int hex4(const unsigned char *p, uint32_t *u)
{
    int i;

    *u = 0;
    for (i = 0; i < 4; i++) {
        unsigned c = p[i];

        if (c >= '0' && c <= '9')
            c -= '0';
        else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
            c = (c | 0x20) - 'a' + 10;
        else
            return -1;
        *u = (*u << 4) | c;
    }
    return 0;
}

/* 1 for the bytes that end a run of plain string bytes: control
 * characters, '"', '\\', and those of multibyte UTF-8 characters. */
static const unsigned char str_special[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x00 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x10 */
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x20: '"' */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x30 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x40 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, /* 0x50: '\\' */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x60 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x70 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x80 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x90 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0xa0 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0xb0 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0xc0 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0xd0 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0xe0 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0xf0 */
};

/* str_scan past its first run of plain bytes, at p: escapes, multibyte
 * characters, and what is not allowed. */
static const unsigned char *str_scan_rest(const unsigned char *start, const unsigned char *p,
                                          const unsigned char *end, span_t *out)
{
    int esc = 0;

    for (;;) {
        unsigned c;

        while (p < end && !str_special[*p])
            p++;
        if (p >= end)
            return NULL;
        c = *p;
        if (c == '"')
            break;
        if (c == '\\') {
            esc = 1;
            if (end - p < 2)
                return NULL;
            c = p[1];
            if (c == 'u') {
                uint32_t u, lo;

                if (end - p < 6 || hex4(p + 2, &u) != 0)
                    return NULL;
                p += 6;
                if (u == 0 || (u >= 0xdc00 && u <= 0xdfff))
                    return NULL;
                if (u >= 0xd800 && u <= 0xdbff) {
                    if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || hex4(p + 2, &lo) != 0 ||
                        lo < 0xdc00 || lo > 0xdfff)
                        return NULL;
                    p += 6;
                }
            } else if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' ||
                       c == 'r' || c == 't') {
                p += 2;
            } else {
                return NULL;
            }
        } else if (c < 0x20) {
            return NULL;
        } else { /* >= 0x80 */
            size_t k = utf8_seq(p, (size_t)(end - p));

            if (k == 0)
                return NULL;
            p += k;
        }
    }
    out->p = start;
    out->n = (size_t)(p - start);
    out->esc = esc;
    return p + 1;
}

/* The string at q (its opening quote, q < end), checked as jansson checks
 * one: no control characters, valid UTF-8, known escapes, \u escapes that
 * are not \u0000 nor a lone or unpaired surrogate. Returns the position
 * past its closing quote, or NULL. */
static ALWAYS_INLINE const unsigned char *str_scan(const unsigned char *q,
                                                  const unsigned char *end, span_t *out)
{
    const unsigned char *start = q + 1, *p = q + 1;

#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* eight bytes at a time: the first byte that is '"', '\\', below 0x20
     * or above 0x7f sets the lowest flagged bit (flags above it may be
     * false: borrows) */
    while (end - p >= 8) {
        const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
        uint64_t w, quote, bslash, m;

        memcpy(&w, p, 8);
        quote = w ^ (ones * '"');
        bslash = w ^ (ones * '\\');
        m = (((quote - ones) & ~quote) | ((bslash - ones) & ~bslash) | (w - ones * 0x20) | w) &
            highs;
        if (m != 0) {
            p += __builtin_ctzll(m) / 8;
            goto found;
        }
        p += 8;
    }
#endif
    while (p < end && !str_special[*p])
        p++;
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
found:
#endif
    if (p < end && *p == '"') {
        out->p = start;
        out->n = (size_t)(p - start);
        out->esc = 0;
        return p + 1;
    }
    return str_scan_rest(start, p, end, out);
}

/* str_scan at s->p: 0 with s->p past the string, or -1. */
static inline int scan_string(scan_t *s, span_t *out)
{
    const unsigned char *p = str_scan(s->p, s->end, out);

    if (p == NULL)
        return -1;
    s->p = p;
    return 0;
}

/* Decodes the checked string sp into dst (room for sp->n + 1 bytes: no
 * escape decodes to more bytes than it takes), NUL-terminated; returns its
 * length. */
static size_t unescape(const span_t *sp, char *dst)
{
    const unsigned char *r = sp->p;
    size_t i = 0, o = 0, n = sp->n;

    if (!sp->esc) {
        memcpy(dst, r, n);
        dst[n] = '\0';
        return n;
    }
    while (i < n) {
        unsigned char c = r[i];
        uint32_t u, lo;

        if (c != '\\') {
            dst[o++] = (char)c;
            i++;
            continue;
        }
        c = r[i + 1];
        i += 2;
        switch (c) {
        case 'b': dst[o++] = '\b'; break;
        case 'f': dst[o++] = '\f'; break;
        case 'n': dst[o++] = '\n'; break;
        case 'r': dst[o++] = '\r'; break;
        case 't': dst[o++] = '\t'; break;
        case 'u':
            hex4(r + i, &u);
            i += 4;
            if (u >= 0xd800 && u <= 0xdbff) {
                hex4(r + i + 2, &lo);
                i += 6;
                u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
            }
            if (u < 0x80) {
                dst[o++] = (char)u;
            } else if (u < 0x800) {
                dst[o++] = (char)(0xc0 | (u >> 6));
                dst[o++] = (char)(0x80 | (u & 0x3f));
            } else if (u < 0x10000) {
                dst[o++] = (char)(0xe0 | (u >> 12));
                dst[o++] = (char)(0x80 | ((u >> 6) & 0x3f));
                dst[o++] = (char)(0x80 | (u & 0x3f));
            } else {
                dst[o++] = (char)(0xf0 | (u >> 18));
                dst[o++] = (char)(0x80 | ((u >> 12) & 0x3f));
                dst[o++] = (char)(0x80 | ((u >> 6) & 0x3f));
                dst[o++] = (char)(0x80 | (u & 0x3f));
            }
            break;
        default: dst[o++] = (char)c; /* " \ / */
        }
    }
    dst[o] = '\0';
    return o;
}

/* A malloc'ed, decoded copy of sp; NULL when out of memory. */
static char *span_dup(const span_t *sp)
{
    char *p = malloc(sp->n + 1);

    if (p != NULL)
        unescape(sp, p);
    return p;
}

/* A decoded copy of sp in the response's arena (sized for the whole body:
 * a decoded string is never longer than its escaped form). */
static char *span_arena(esbulk__resp_t *out, const span_t *sp)
{
    char *p;

    if (out->arena == NULL && (out->arena = malloc(out->arena_cap)) == NULL)
        return NULL;
    if (out->arena_cap - out->arena_len < sp->n + 1)
        return NULL;
    p = out->arena + out->arena_len;
    out->arena_len += unescape(sp, p) + 1;
    return p;
}

/* As span_dup, capped as dup_capped caps. */
static char *span_dup_capped(const span_t *sp)
{
    char *p = malloc(sp->n + 1), *capped;
    size_t n;

    if (p == NULL)
        return NULL;
    n = unescape(sp, p);
    if (n <= ESBULK__RESP_REASON_MAX)
        return p;
    capped = dup_capped(p, n);
    free(p);
    return capped;
}

/* The number at s->p. *is_int: it is an integer (no fraction, no exponent),
 * then *v is its value. -1 for a malformed number, an integer outside
 * int64_t (jansson: "too big integer") and, not to reproduce strtod's
 * overflow, a real with an exponent or of more than 300 bytes. */
static int scan_number(scan_t *s, int *is_int, int64_t *v)
{
    const unsigned char *p = s->p, *end = s->end, *digits;
    uint64_t m = 0;
    int neg = p < end && *p == '-';

    p += neg;
    digits = p;
    if (p < end && *p == '0')
        p++;
    else
        while (p < end && (unsigned)(*p - '0') < 10)
            m = m * 10 + (uint64_t)(*p++ - '0'); /* 19 digits fit, more are refused below */
    if (p == digits || p - digits > 19)
        return -1;
    if (p < end && (*p == '.' || *p == 'e' || *p == 'E')) {
        if (*p != '.')
            return -1;
        p++;
        if (p >= end || (unsigned)(*p - '0') >= 10)
            return -1;
        while (p < end && (unsigned)(*p - '0') < 10)
            p++;
        if ((p < end && (*p == 'e' || *p == 'E')) || p - s->p > 300)
            return -1;
        *is_int = 0;
        *v = 0;
        s->p = p;
        return 0;
    }
    if (m > (uint64_t)INT64_MAX + (uint64_t)neg)
        return -1;
    *is_int = 1;
    *v = !neg ? (int64_t)m : m == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)m;
    s->p = p;
    return 0;
}

static int scan_literal(scan_t *s, const char *lit, size_t n)
{
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, lit, n) != 0)
        return -1;
    s->p += n;
    return 0;
}

/* The next member of the object being read: call with *first set just past
 * its '{'. 1: a member, *key its name (unescaped keys only when !any_key),
 * s->p at its value; 0: the object ended, s->p past its '}'; -1. */
static ALWAYS_INLINE int member(scan_t *s, int *first, span_t *key, int any_key)
{
    const unsigned char *p = skip_ws(s->p, s->end), *end = s->end;

    if (p >= end)
        return -1;
    if (*p == '}') {
        s->p = p + 1;
        return 0;
    }
    if (!*first) {
        if (*p != ',')
            return -1;
        p = skip_ws(p + 1, end);
        if (p >= end)
            return -1;
    }
    *first = 0;
    if (*p != '"' || (p = str_scan(p, end, key)) == NULL || (key->esc && !any_key))
        return -1;
    p = skip_ws(p, end);
    if (p >= end || *p != ':')
        return -1;
    s->p = skip_ws(p + 1, end);
    return 1;
}

/* After an array element: 1 for another one (s->p at it), 0 at the end
 * (s->p past ']'), -1. */
static int next_element(scan_t *s)
{
    ws(s);
    if (peek(s) == ']') {
        s->p++;
        return 0;
    }
    if (peek(s) != ',')
        return -1;
    s->p++;
    ws(s);
    return 1;
}

/* Skips the value at s->p, nested in depth containers. */
static int skip_value(scan_t *s, int depth)
{
    span_t sp;
    int64_t v;
    int r, first = 1, is_int;

    switch (peek(s)) {
    case '"':
        return scan_string(s, &sp);
    case '{':
        if (++depth > FAST_DEPTH_MAX)
            return -1;
        s->p++;
        while ((r = member(s, &first, &sp, 1)) == 1)
            if (skip_value(s, depth) != 0)
                return -1;
        return r;
    case '[':
        if (++depth > FAST_DEPTH_MAX)
            return -1;
        s->p++;
        ws(s);
        if (peek(s) == ']') {
            s->p++;
            return 0;
        }
        do {
            if (skip_value(s, depth) != 0)
                return -1;
        } while ((r = next_element(s)) == 1);
        return r;
    case 't':
        return scan_literal(s, "true", 4);
    case 'f':
        return scan_literal(s, "false", 5);
    case 'n':
        return scan_literal(s, "null", 4);
    default:
        return scan_number(s, &is_int, &v);
    }
}

static inline uint64_t load8(const void *p)
{
    uint64_t v;

    memcpy(&v, p, 8);
    return v;
}

static inline uint32_t load4(const void *p)
{
    uint32_t v;

    memcpy(&v, p, 4);
    return v;
}

static inline uint16_t load2(const void *p)
{
    uint16_t v;

    memcpy(&v, p, 2);
    return v;
}

/* p[0..n) is lit[0..n) (n a constant, p[0..n) readable): two overlapping
 * loads each side, which compilers fold to constants (memcmp they do not
 * always inline). */
static ALWAYS_INLINE int bytes_are(const unsigned char *p, const char *lit, size_t n)
{
    if (n > 24)
        return memcmp(p, lit, n) == 0;
    if (n > 16)
        return load8(p) == load8(lit) && load8(p + 8) == load8(lit + 8) &&
               load8(p + n - 8) == load8(lit + n - 8);
    if (n >= 8)
        return load8(p) == load8(lit) && load8(p + n - 8) == load8(lit + n - 8);
    if (n >= 4)
        return load4(p) == load4(lit) && load4(p + n - 4) == load4(lit + n - 4);
    if (n >= 2)
        return load2(p) == load2(lit) && load2(p + n - 2) == load2(lit + n - 2);
    return n == 0 || p[0] == (unsigned char)lit[0];
}

/* a[0..n) == b[0..n), n not a constant: short strings (names and ids)
 * without a call */
static ALWAYS_INLINE int mem_eq(const void *a, const void *b, size_t n)
{
    const unsigned char *x = a, *y = b;
    size_t i;

    if (n > 16) {
        for (i = 0; i + 8 < n; i += 8)
            if (load8(x + i) != load8(y + i))
                return 0;
        return load8(x + n - 8) == load8(y + n - 8);
    }
    if (n >= 8)
        return load8(x) == load8(y) && load8(x + n - 8) == load8(y + n - 8);
    if (n >= 4)
        return load4(x) == load4(y) && load4(x + n - 4) == load4(y + n - 4);
    if (n >= 2)
        return load2(x) == load2(y) && load2(x + n - 2) == load2(y + n - 2);
    return n == 0 || x[0] == y[0];
}

/* k is the unescaped key lit[0..n). */
static inline int key_is(const span_t *k, const char *lit, size_t n)
{
    return k->n == n && bytes_are(k->p, lit, n);
}

#define KEY_IS(k, lit) key_is(&(k), lit, sizeof(lit) - 1)

/* A member value that counts only as a string (else absent). */
static int read_string(scan_t *s, span_t *out, int depth)
{
    if (peek(s) == '"')
        return scan_string(s, out);
    out->p = NULL;
    return skip_value(s, depth);
}

/* A member value that counts only as a non-negative integer (else -1). */
static int read_count(scan_t *s, int64_t *out, int depth)
{
    int c = peek(s), is_int;

    if (c == '-' || (c >= '0' && c <= '9')) {
        if (scan_number(s, &is_int, out) != 0)
            return -1;
        if (!is_int || *out < 0)
            *out = -1;
        return 0;
    }
    *out = -1;
    return skip_value(s, depth);
}

/* An error object at s->p: its type and reason into *type and *reason; for
 * the item's error (cb != NULL) also its caused_by, read the same way into
 * cb's fields. A key seen twice is left to the slow path. */
static int read_error_obj(scan_t *s, span_t *type, span_t *reason, fast_item_t *cb, int depth)
{
    span_t key;
    int r, first = 1, seen = 0;

    s->p++;
    while ((r = member(s, &first, &key, 0)) == 1) {
        if (KEY_IS(key, "type")) {
            if (seen & 1)
                return -1;
            seen |= 1;
            r = read_string(s, type, depth);
        } else if (KEY_IS(key, "reason")) {
            if (seen & 2)
                return -1;
            seen |= 2;
            r = read_string(s, reason, depth);
        } else if (cb != NULL && KEY_IS(key, "caused_by")) {
            if (seen & 4)
                return -1;
            seen |= 4;
            r = peek(s) == '{' ? read_error_obj(s, &cb->cbtype, &cb->cbreason, NULL, depth + 1)
                               : skip_value(s, depth);
        } else {
            r = skip_value(s, depth);
        }
        if (r != 0)
            return -1;
    }
    return r;
}

enum {
    F_INDEX = 1 << 0,
    F_ID = 1 << 1,
    F_RESULT = 1 << 2,
    F_STATUS = 1 << 3,
    F_SEQ_NO = 1 << 4,
    F_PRIMARY_TERM = 1 << 5,
    F_VERSION = 1 << 6,
    F_ERROR = 1 << 7
};

/* The operation object of an item, at s->p. */
static int read_op(scan_t *s, fast_item_t *f)
{
    const int depth = 3; /* root, items, the item: the op's members are in 4 */
    span_t key;
    int r, first = 1, seen = 0, bit, c, is_int;

    s->p++;
    while ((r = member(s, &first, &key, 0)) == 1) {
        bit = 0;
        switch (key.n) {
        case 3:
            if (KEY_IS(key, "_id"))
                bit = F_ID;
            break;
        case 5:
            if (KEY_IS(key, "error"))
                bit = F_ERROR;
            break;
        case 6:
            if (KEY_IS(key, "_index"))
                bit = F_INDEX;
            else if (KEY_IS(key, "status"))
                bit = F_STATUS;
            else if (KEY_IS(key, "result"))
                bit = F_RESULT;
            break;
        case 7:
            if (KEY_IS(key, "_seq_no"))
                bit = F_SEQ_NO;
            break;
        case 8:
            if (KEY_IS(key, "_version"))
                bit = F_VERSION;
            break;
        case 13:
            if (KEY_IS(key, "_primary_term"))
                bit = F_PRIMARY_TERM;
            break;
        default:
            break;
        }
        if (seen & bit)
            return -1; /* a duplicate: jansson keeps the last one */
        seen |= bit;
        switch (bit) {
        case F_INDEX: r = read_string(s, &f->index, depth + 1); break;
        case F_ID: r = read_string(s, &f->id, depth + 1); break;
        case F_RESULT: r = read_string(s, &f->result, depth + 1); break;
        case F_SEQ_NO: r = read_count(s, &f->seq_no, depth + 1); break;
        case F_PRIMARY_TERM: r = read_count(s, &f->primary_term, depth + 1); break;
        case F_VERSION: r = read_count(s, &f->version, depth + 1); break;
        case F_STATUS:
            c = peek(s);
            if (c != '-' && (c < '0' || c > '9'))
                return -1; /* not an integer: "has no status" */
            r = scan_number(s, &is_int, &f->status);
            if (r == 0 && (!is_int || f->status < 100 || f->status > 599))
                return -1;
            f->has_status = 1;
            break;
        case F_ERROR:
            c = peek(s);
            if (c == '"') {
                f->error = ERR_STRING;
                r = scan_string(s, &f->ereason);
            } else if (c == '{') {
                f->error = ERR_OBJECT;
                r = read_error_obj(s, &f->etype, &f->ereason, f, depth + 2);
            } else if (c == 'n') {
                f->error = ERR_NONE;
                r = scan_literal(s, "null", 4);
            } else {
                f->error = ERR_OTHER;
                r = skip_value(s, depth + 1);
            }
            break;
        default:
            r = skip_value(s, depth + 1);
        }
        if (r != 0)
            return -1;
    }
    return r < 0 || !f->has_status ? -1 : 0;
}

/* sp as a string of the item: the caller's own pointer w when it is the
 * same string (w[0..wn)), else a copy in the arena. NULL when out of
 * memory. */
static ALWAYS_INLINE char *span_take(esbulk__resp_t *out, const span_t *sp, const char *w, size_t wn)
{
    if (w != NULL && !sp->esc && sp->n == wn && mem_eq(sp->p, w, wn))
        return (char *)w; /* borrowed (items_free does not free it) */
    return span_arena(out, sp);
}

/* The usual results, handed out as they are (item->result_static). */
static const char created[] = "created", updated[] = "updated", deleted[] = "deleted",
                  noop[] = "noop", not_found[] = "not_found";

/* An item's result: one of the usual ones as a static string, else a copy
 * in the arena. */
static ALWAYS_INLINE char *result_take(esbulk__resp_t *out, const span_t *sp, esbulk__item_t *item)
{
    const char *r = NULL;

    if (!sp->esc) {
        if (sp->n == 7) {
            r = bytes_are(sp->p, created, 7)   ? created
                : bytes_are(sp->p, updated, 7) ? updated
                : bytes_are(sp->p, deleted, 7) ? deleted
                                               : NULL;
        } else if (sp->n == 4 && bytes_are(sp->p, noop, 4)) {
            r = noop;
        } else if (sp->n == 9 && bytes_are(sp->p, not_found, 9)) {
            r = not_found;
        }
    }
    if (r != NULL) {
        item->result_static = 1;
        return (char *)r; /* static (items_free does not free it) */
    }
    return span_arena(out, sp);
}

/* The item at s->p into item (zeroed); on -1 item may hold strings for the
 * caller to free. */
static int read_item(scan_t *s, int retry_cluster_block, const esbulk__resp_want_t *want,
                     esbulk__resp_t *out, esbulk__item_t *item)
{
    fast_item_t f;
    span_t key, op = {NULL, 0, 0}, others[4];
    size_t nothers = 0, k;
    int r, first = 1, has_error;
    char *cbtype = NULL, *cbreason = NULL;

    if (peek(s) != '{')
        return -1;
    memset(&f, 0, sizeof(f));
    f.seq_no = f.primary_term = f.version = -1;
    s->p++;
    while ((r = member(s, &first, &key, 0)) == 1) {
        if (peek(s) == '{') {
            if (op.p != NULL)
                return -1; /* more than one operation */
            op = key;
            r = read_op(s, &f);
        } else {
            if (nothers == ESBULK__ARRAY_LEN(others))
                return -1;
            others[nothers++] = key;
            r = skip_value(s, 3);
        }
        if (r != 0)
            return -1;
    }
    if (r < 0 || op.p == NULL)
        return -1;
    for (k = 0; k < nothers; k++)
        if (others[k].n == op.n && memcmp(others[k].p, op.p, op.n) == 0)
            return -1; /* the operation's name twice: jansson keeps the last one */

    item->status = (int32_t)f.status;
    item->seq_no = f.seq_no;
    item->primary_term = f.primary_term;
    item->version = f.version;
    if ((f.index.p != NULL &&
         (item->index = span_take(out, &f.index, want ? want->index : NULL,
                                  want ? want->index_len : 0)) == NULL) ||
        (f.id.p != NULL &&
         (item->id = span_take(out, &f.id, want ? want->id : NULL, want ? want->id_len : 0)) ==
             NULL) ||
        (f.result.p != NULL && (item->result = result_take(out, &f.result, item)) == NULL))
        return -1;
    has_error = f.error != ERR_NONE;
    if (f.error == ERR_STRING || f.error == ERR_OBJECT) {
        if ((f.etype.p != NULL && (item->error_type = span_dup_capped(&f.etype)) == NULL) ||
            (f.ereason.p != NULL && (item->error_reason = span_dup_capped(&f.ereason)) == NULL))
            return -1;
        if (f.cbreason.p != NULL) {
            r = -1;
            if ((f.cbtype.p == NULL || (cbtype = span_dup(&f.cbtype)) != NULL) &&
                (cbreason = span_dup(&f.cbreason)) != NULL &&
                add_caused_by(&item->error_reason, &item->cause_type, &item->cause_reason, cbtype,
                              cbreason) == ESBULK_OK)
                r = 0;
            free(cbtype);
            free(cbreason);
            if (r != 0)
                return -1;
        }
    }
    item->klass = item_class(item, has_error, KEY_IS(op, "delete"), retry_cluster_block);
    return 0;
}

/* A plain non-negative integer of at most 18 digits at p (so that it fits
 * int64_t), not followed by a digit: what servers write for counts and
 * statuses. The position past it, or NULL (anything else: -1, 1.0, 1e3,
 * 01, a 19-digit number, is left to read_item). */
static ALWAYS_INLINE const unsigned char *quick_count(const unsigned char *p,
                                                     const unsigned char *end, int64_t *v)
{
    const unsigned char *lim;
    uint64_t m;
    unsigned c;

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (end - p >= 8) {
        /* up to 7 digits at once: the bytes below '0' or above '9' flag
         * their high bit (borrows and carries only go up, so the lowest
         * flag is right); the digits are then summed in three
         * multiplications, the first one in the lowest byte */
        uint64_t w = load8(p), x = w - 0x3030303030303030u,
                 nd = (x | (w + 0x4646464646464646u)) & 0x8080808080808080u;
        unsigned n;

        if (nd != 0) {
            n = (unsigned)__builtin_ctzll(nd) / 8;
            if (n == 1) {
                *v = (int64_t)(x & 0xff);
                return p + 1;
            }
            if (n == 0 || *p == '0')
                return NULL;
            x <<= 64 - 8 * n; /* the digits high, zeros (leading zeros) low */
            x = ((x & 0x0f0f0f0f0f0f0f0fu) * 2561) >> 8;
            x = ((x & 0x00ff00ff00ff00ffu) * 6553601) >> 16;
            x = ((x & 0x0000ffff0000ffffu) * UINT64_C(42949672960001)) >> 32;
            *v = (int64_t)x;
            return p + n;
        }
    }
#endif
    if (p >= end || (m = (unsigned)(*p - '0')) >= 10)
        return NULL;
    lim = end - p > 18 ? p + 18 : end;
    p++;
    if (m == 0) {
        if (p < end && (unsigned)(*p - '0') < 10)
            return NULL; /* 01: not JSON */
    } else {
        while (p < lim && (c = (unsigned)(*p - '0')) < 10) {
            m = m * 10 + c;
            p++;
        }
        if (p < end && (unsigned)(*p - '0') < 10)
            return NULL; /* 19 digits or more */
    }
    *v = (int64_t)m;
    return p;
}

/* What quick_item remembers from one item to the next. */
typedef struct {
    const unsigned char *plain; /* an _index value of this body, str_scan checked and not
                                   escaped */
    size_t plain_n;             /* its length; SIZE_MAX: none yet */
} quick_t;

/* The common item exactly as OpenSearch and Elasticsearch write it
 * filtered: {"<index|create|update|delete>":{...}} without whitespace, the
 * members among _index, _id, _version, result, _seq_no, _primary_term,
 * status (in that order, the servers' order; any may be absent but status),
 * strings as str_scan checks them, counts as quick_count reads them, and
 * nothing else (no error). Keys are compared in place as words; the order
 * also rules out duplicates. Returns 0 with the item read (s->p past it), 1
 * when it is not that shape (s untouched: read_item reads it), -1 when out
 * of memory. item is written only on 0. */
/* The fields quick_rest reads. */
typedef struct {
    span_t id, result;
    const char *r_result; /* result as a static string (result.p is then NULL) */
    int64_t status, seq_no, primary_term, version;
} quick_fields_t;

#define QAT(lit) ((size_t)(end - p) >= sizeof(lit) - 1 && bytes_are(p, lit, sizeof(lit) - 1))

/* A string value at p, as quick_count reads a count: the position past it,
 * or NULL when p is not at a valid string ("_id":, or "_id":1 is not the
 * common shape, not a member to skip). */
static ALWAYS_INLINE const unsigned char *quick_string(const unsigned char *p,
                                                      const unsigned char *end, span_t *out)
{
    return p < end && *p == '"' ? str_scan(p, end, out) : NULL;
}

/* The members of the operation after _index, p at the first (first: there
 * was no _index, so no ',' before it), to the end of the item: the
 * position past it, or NULL when it is not the common shape. Inlined twice,
 * with first a constant: the common copy compares each key with its ','
 * in one go. */
static ALWAYS_INLINE const unsigned char *quick_rest(const unsigned char *p,
                                                    const unsigned char *end, const int first_in,
                                                    quick_fields_t *f)
{
    int first = first_in;

    /* the member key "k": (the ',' before it, but for the first member) and
     * the ':' after it, compared as words */
#define QKEY(k) (first ? QAT(k ":") : QAT("," k ":"))
#define QSKIP(k) (p += sizeof(k ":") - (size_t)first, first = 0)
    /* once a key is read, its value must follow, of its type */
    if (QKEY("\"_id\"") && (QSKIP("\"_id\""), 1) && (p = quick_string(p, end, &f->id)) == NULL)
        return NULL;
    if (QKEY("\"_version\"") && (QSKIP("\"_version\""), 1) &&
        (p = quick_count(p, end, &f->version)) == NULL)
        return NULL;
    if (QKEY("\"result\"")) {
        QSKIP("\"result\"");
        /* the usual ones as words, the others through quick_string */
        if (end - p >= 9 && *p == '"' && load8(p + 1) == load8("created\"")) {
            f->r_result = created;
            p += 9;
        } else if (end - p >= 9 && *p == '"' && load8(p + 1) == load8("updated\"")) {
            f->r_result = updated;
            p += 9;
        } else if ((p = quick_string(p, end, &f->result)) == NULL) {
            return NULL;
        }
    }
    if (QKEY("\"_seq_no\"") && (QSKIP("\"_seq_no\""), 1) &&
        (p = quick_count(p, end, &f->seq_no)) == NULL)
        return NULL;
    if (QKEY("\"_primary_term\"") && (QSKIP("\"_primary_term\""), 1) &&
        (p = quick_count(p, end, &f->primary_term)) == NULL)
        return NULL;
    /* status last, then the end of the operation and of the item: anything
     * else (no status, another member, one out of this order, a string
     * where a number was, an error after the status) is left to read_item */
    if (!first && QAT(",\"status\":201}}")) { /* the usual ones as two words */
        f->status = 201;
        return p + 15;
    }
    if (!first && QAT(",\"status\":200}}")) {
        f->status = 200;
        return p + 15;
    }
    if (!QKEY("\"status\""))
        return NULL;
    QSKIP("\"status\"");
    if ((p = quick_count(p, end, &f->status)) == NULL || f->status < 100 || f->status > 599 ||
        end - p < 2 || p[0] != '}' || p[1] != '}')
        return NULL;
    return p + 2;
#undef QSKIP
#undef QKEY
}

static int quick_item(scan_t *s, int retry_cluster_block, const esbulk__resp_want_t *want,
                      quick_t *q, esbulk__resp_t *out, esbulk__item_t *item)
{
    const unsigned char *p = s->p, *end = s->end;
    quick_fields_t f;
    span_t index;
    int is_delete = 0, same_index = 0;
    char *r_index = NULL, *r_id = NULL, *r_result;

    index.p = f.id.p = f.result.p = NULL;
    f.r_result = NULL;
    f.seq_no = f.primary_term = f.version = -1;
    if (QAT("{\"index\":{"))
        p += 10;
    else if (QAT("{\"create\":{") || QAT("{\"update\":{"))
        p += 11;
    else if (QAT("{\"delete\":{"))
        p += 11, is_delete = 1;
    else
        return 1;
    if (QAT("\"_index\":\"")) {
        /* no plain_n is SIZE_MAX - 1 (a body is smaller) */
        size_t wn = want != NULL && want->index != NULL ? want->index_len : SIZE_MAX - 1;

        p += 10;
        /* the bytes of the last index read (checked then), and the
         * document's: the same string, taken without a second check */
        if (wn == q->plain_n && (size_t)(end - p) > wn && p[wn] == '"' &&
            mem_eq(p, q->plain, wn) && mem_eq(p, want->index, wn)) {
            same_index = 1;
            p += wn + 1;
        } else {
            if ((p = str_scan(p - 1, end, &index)) == NULL)
                return 1;
            if (!index.esc) {
                q->plain = index.p;
                q->plain_n = index.n;
            }
        }
        p = quick_rest(p, end, 0, &f);
    } else {
        p = quick_rest(p, end, 1, &f);
    }
    if (p == NULL)
        return 1;

    r_result = (char *)f.r_result; /* static (items_free does not free it) */
    item->result_static = r_result != NULL;
    if (same_index)
        r_index = (char *)want->index;
    if ((index.p != NULL &&
         (r_index = span_take(out, &index, want ? want->index : NULL,
                              want ? want->index_len : 0)) == NULL) ||
        (f.id.p != NULL &&
         (r_id = span_take(out, &f.id, want ? want->id : NULL, want ? want->id_len : 0)) ==
             NULL) ||
        (f.result.p != NULL && (r_result = result_take(out, &f.result, item)) == NULL))
        return -1;
    item->index = r_index;
    item->id = r_id;
    item->result = r_result;
    item->status = (int32_t)f.status;
    item->seq_no = f.seq_no;
    item->primary_term = f.primary_term;
    item->version = f.version;
    item->error_type = item->error_reason = item->cause_type = item->cause_reason = NULL;
    item->klass = f.status >= 200 && f.status <= 299
                      ? ESBULK__ITEM_OK
                      : item_class(item, 0, is_delete, retry_cluster_block);
    s->p = p;
    return 0;
}
#undef QAT

/* The item most answers are made of when only the status is asked for (the
 * default filter_path for documents added with their _id to a concrete
 * index): {"index":{"status":201}} or {"create":{"status":201}}, compared
 * as whole words. 1 with item written as quick_item would write it and s
 * past it; 0 (s and item untouched) for anything else, which quick_item
 * reads. */
static ALWAYS_INLINE int status_only_item(scan_t *s, esbulk__item_t *item)
{
    static const char ix[] = "{\"index\":{\"status\":201}}";
    static const char cr[] = "{\"create\":{\"status\":201}}";
    const unsigned char *p = s->p;
    size_t left = (size_t)(s->end - p);

    if (left >= sizeof(ix) - 1 && load8(p) == load8(ix) && load8(p + 8) == load8(ix + 8) &&
        load8(p + 16) == load8(ix + 16)) {
        s->p = p + sizeof(ix) - 1;
    } else if (left >= sizeof(cr) - 1 && load8(p) == load8(cr) &&
               load8(p + 8) == load8(cr + 8) && load8(p + 16) == load8(cr + 16) && p[24] == '}') {
        s->p = p + sizeof(cr) - 1;
    } else {
        return 0;
    }
    item->index = item->id = item->result = NULL;
    item->result_static = 0;
    item->status = 201;
    item->seq_no = item->primary_term = item->version = -1;
    item->error_type = item->error_reason = item->cause_type = item->cause_reason = NULL;
    item->klass = ESBULK__ITEM_OK;
    return 1;
}

/* The whole 2xx answer: 0 with out classified OK and its items set, or -1
 * with out as it was (nothing kept). */
static int fast_items(const char *body, size_t body_len, size_t expected_items,
                      int retry_cluster_block, const esbulk__resp_want_t *want, int quick_only,
                      esbulk__resp_scratch_t *scratch, esbulk__resp_t *out)
{
    scan_t s;
    span_t key;
    quick_t q = {NULL, SIZE_MAX};
    size_t n = 0;
    int r, first = 1, seen_items = 0;

    s.p = (const unsigned char *)body;
    s.end = s.p + body_len;
    ws(&s);
    if (peek(&s) != '{')
        return -1;
    s.p++;
    while ((r = member(&s, &first, &key, 0)) == 1) {
        if (!KEY_IS(key, "items")) {
            if (skip_value(&s, 1) != 0)
                goto bail;
            continue;
        }
        if (seen_items || peek(&s) != '[')
            goto bail;
        seen_items = 1;
        s.p++;
        /* allocated before the items are counted: not for more than the
         * body can hold ({"":{"status":100}} is 19 bytes) */
        if (expected_items > body_len / 16)
            goto bail;
        if (expected_items > 0) {
            /* not zeroed: out->nitems counts those written */
            if (scratch == NULL) {
                out->items = malloc(expected_items * sizeof(*out->items));
            } else {
                if (scratch->cap < expected_items) {
                    esbulk__item_t *p = malloc(expected_items * sizeof(*p));

                    if (p == NULL)
                        goto bail;
                    free(scratch->items);
                    scratch->items = p;
                    scratch->cap = expected_items;
                }
                out->items = scratch->items;
                out->items_scratch = 1;
            }
            if (out->items == NULL)
                goto bail;
            out->borrowed = 1;
            /* the strings kept: at most the body's bytes, and a NUL each
             * (allocated when the first is copied: span_arena) */
            out->arena_cap = body_len + 3 * expected_items;
        }
        ws(&s);
        if (peek(&s) == ']') {
            s.p++;
            continue;
        }
        do {
            if (n == expected_items)
                goto bail; /* too many */
            if (status_only_item(&s, &out->items[n])) {
                r = 0;
            } else {
                r = quick_item(&s, retry_cluster_block, want ? &want[n] : NULL, &q, out,
                               &out->items[n]);
            }
            if (r > 0 && !quick_only) {
                memset(&out->items[n], 0, sizeof(out->items[n]));
                out->nitems = n + 1; /* it may hold error strings to free */
                out->item_errors = 1;
                r = read_item(&s, retry_cluster_block, want ? &want[n] : NULL, out,
                              &out->items[n]);
            }
            if (r != 0)
                goto bail;
            out->nitems = ++n;
            /* the servers' ",{" between items, else the general way */
            if (s.end - s.p >= 2 && s.p[0] == ',' && s.p[1] == '{') {
                s.p++;
                r = 1;
            } else {
                r = next_element(&s);
            }
        } while (r == 1);
        if (r < 0)
            goto bail;
    }
    if (r < 0 || !seen_items || n != expected_items)
        goto bail;
    ws(&s);
    if (s.p != s.end)
        goto bail;
    out->klass = ESBULK__RESP_OK;
    out->err = ESBULK_OK;
    return 0;
bail:
    items_free(out);
    return -1;
}

/* Not a 2xx: the status decides; the body only explains. */
static esbulk_err_t parse_status(long http_status, const char *body, size_t body_len,
                                 esbulk__resp_t *out)
{
    json_t *root = NULL;
    json_error_t jerr;
    esbulk_err_t err = ESBULK_OK;

    if (http_status == 429 || http_status == 503) {
        out->klass = ESBULK__RESP_RETRY;
    } else if (http_status == 413) {
        out->klass = ESBULK__RESP_SPLIT;
    } else if (http_status == 401 || http_status == 403) {
        out->klass = ESBULK__RESP_FAIL;
        out->err = ESBULK_ERR_AUTH;
    } else if (http_status >= 500 && http_status <= 599) {
        /* 500, 502, 504 and the unknown ones: the request may have been
         * (partly) applied before the failure */
        out->klass = ESBULK__RESP_RETRY_AMBIGUOUS;
    } else if (http_status >= 100 && http_status <= 499) {
        /* 4xx; and 1xx/3xx as final answers, which no bulk handler sends */
        out->klass = ESBULK__RESP_FAIL;
        out->err = ESBULK_ERR_HTTP;
    } else {
        return explain(out, ESBULK__RESP_RETRY_AMBIGUOUS, ESBULK_ERR_BAD_RESPONSE,
                       "invalid HTTP status %ld", http_status);
    }

    if (body_len > 0) {
        memset(&jerr, 0, sizeof(jerr));
        root = json_loadb(body, body_len, 0, &jerr);
        if (root == NULL && load_nomem(&jerr)) {
            err = ESBULK_ERR_NOMEM;
            goto done;
        }
    }
    if (json_is_object(root))
        err = error_fields(json_object_get(root, "error"), &out->error_type, &out->error_reason,
                           &out->cause_type, &out->cause_reason);
    if (err == ESBULK_OK && out->error_type == NULL && out->error_reason == NULL)
        err = text_quote(body, body_len, &out->error_reason);
    if (err == ESBULK_OK && out->error_reason == NULL) {
        esbulk__resp_class_t klass = out->klass;

        if (out->error_type != NULL)
            err = explain(out, klass, out->err, "HTTP %ld, no reason given", http_status);
        else
            err = explain(out, klass, out->err, "HTTP %ld with an empty body", http_status);
    }
done:
    json_decref(root);
    return err;
}

/* For tests: the jansson parser alone; the fast path alone (ESBULK_ERR_BAD_RESPONSE, out
 * zeroed, for an answer it leaves to the jansson parser); the common-item
 * path alone (quick_item: ESBULK_ERR_BAD_RESPONSE, out zeroed, unless it
 * reads every item), with want as esbulk__response_parse_want takes it. */
esbulk_err_t esbulk__response_parse_slow(long http_status, const char *body, size_t body_len,
                                         size_t expected_items, int retry_cluster_block,
                                         esbulk__resp_t *out);
esbulk_err_t esbulk__response_parse_fast(long http_status, const char *body, size_t body_len,
                                         size_t expected_items, int retry_cluster_block,
                                         esbulk__resp_t *out);
esbulk_err_t esbulk__response_parse_quick(long http_status, const char *body, size_t body_len,
                                          size_t expected_items, int retry_cluster_block,
                                          const esbulk__resp_want_t *want, esbulk__resp_t *out);

enum { PATH_BOTH, PATH_SLOW, PATH_FAST, PATH_QUICK };

static esbulk_err_t parse(long http_status, const char *body, size_t body_len,
                          size_t expected_items, int retry_cluster_block,
                          const esbulk__resp_want_t *want, esbulk__resp_scratch_t *scratch,
                          int path, esbulk__resp_t *out)
{
    esbulk_err_t err;

    memset(out, 0, sizeof(*out));
    out->http_status = http_status;
    if (body == NULL)
        body_len = 0;
    if (http_status >= 200 && http_status <= 299 && path != PATH_SLOW && body_len > 0 &&
        fast_items(body, body_len, expected_items, retry_cluster_block, want,
                   path == PATH_QUICK, scratch, out) == 0)
        return ESBULK_OK;
    if (path == PATH_FAST || path == PATH_QUICK)
        return ESBULK_ERR_BAD_RESPONSE; /* out is still zeroed */
    if (http_status >= 200 && http_status <= 299)
        err = parse_items(body, body_len, expected_items, retry_cluster_block, out);
    else
        err = parse_status(http_status, body, body_len, out);
    if (err != ESBULK_OK)
        esbulk__response_free(out);
    return err;
}

esbulk_err_t esbulk__response_parse(long http_status, const char *body, size_t body_len,
                                    size_t expected_items, int retry_cluster_block,
                                    esbulk__resp_t *out)
{
    return parse(http_status, body, body_len, expected_items, retry_cluster_block, NULL,
                 NULL, PATH_BOTH, out);
}

esbulk_err_t esbulk__response_parse_want(long http_status, const char *body, size_t body_len,
                                         size_t expected_items, int retry_cluster_block,
                                         const esbulk__resp_want_t *want,
                                         esbulk__resp_scratch_t *scratch, esbulk__resp_t *out)
{
    return parse(http_status, body, body_len, expected_items, retry_cluster_block, want,
                 scratch, PATH_BOTH, out);
}

esbulk_err_t esbulk__response_parse_slow(long http_status, const char *body, size_t body_len,
                                         size_t expected_items, int retry_cluster_block,
                                         esbulk__resp_t *out)
{
    return parse(http_status, body, body_len, expected_items, retry_cluster_block, NULL,
                 NULL, PATH_SLOW, out);
}

esbulk_err_t esbulk__response_parse_fast(long http_status, const char *body, size_t body_len,
                                         size_t expected_items, int retry_cluster_block,
                                         esbulk__resp_t *out)
{
    esbulk_err_t err = parse(http_status, body, body_len, expected_items, retry_cluster_block,
                             NULL, NULL, PATH_FAST, out);

    if (err != ESBULK_OK)
        memset(out, 0, sizeof(*out));
    return err;
}

esbulk_err_t esbulk__response_parse_quick(long http_status, const char *body, size_t body_len,
                                          size_t expected_items, int retry_cluster_block,
                                          const esbulk__resp_want_t *want, esbulk__resp_t *out)
{
    esbulk_err_t err = parse(http_status, body, body_len, expected_items, retry_cluster_block,
                             want, NULL, PATH_QUICK, out);

    if (err != ESBULK_OK)
        memset(out, 0, sizeof(*out));
    return err;
}

void esbulk__response_scratch_free(esbulk__resp_scratch_t *scratch)
{
    free(scratch->items);
    scratch->items = NULL;
    scratch->cap = 0;
}

void esbulk__response_free(esbulk__resp_t *resp)
{
    if (resp == NULL)
        return;
    items_free(resp);
    free(resp->error_type);
    free(resp->error_reason);
    free(resp->cause_type);
    free(resp->cause_reason);
    memset(resp, 0, sizeof(*resp));
}
