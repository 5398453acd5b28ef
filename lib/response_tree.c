/* The _bulk response parser's tree path (response_int.h): any answer,
 * decoded by jansson: a 2xx answer's items when the fast path leaves it,
 * and the error of an answer that is not a 2xx, or a quote of its text. */
#include "response_int.h"
#include "utf8.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

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
        k = esbulk__utf8_seq(s + i, len - i);
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
    *dst = capped ? esbulk__resp_dup_capped(json_string_value(v), json_string_length(v))
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

/* The type and reason of an "error" value: {"type":..,"reason":..} (either
 * may be missing or null) or, from odd servers, a plain string (the
 * reason). */
static esbulk_err_t error_fields(const json_t *error, char **type, char **reason,
                                 char **cause_type, char **cause_reason)
{
    esbulk_err_t err;

    *type = *reason = *cause_type = *cause_reason = NULL;
    if (json_is_string(error)) {
        *reason = esbulk__resp_dup_capped(json_string_value(error), json_string_length(error));
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
            err = esbulk__resp_add_caused_by(reason, cause_type, cause_reason,
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

/* Parses items[i] into item. When the entry cannot be interpreted at all,
 * returns ESBULK_OK with why set (item then holds nothing). */
static esbulk_err_t item_parse(const json_t *entry, size_t i, int retry_cluster_block,
                               esbulk__item_t *item, char why[ESBULK__RESP_WHY_MAX])
{
    const json_t *v, *body = NULL, *status, *error;
    const char *key, *op = NULL;
    json_int_t st;
    esbulk_err_t err;
    int has_error, nops = 0;

    if (!json_is_object(entry)) {
        snprintf(why, ESBULK__RESP_WHY_MAX, "items[%zu] is not an object", i);
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
        snprintf(why, ESBULK__RESP_WHY_MAX, "items[%zu] has %s operation object", i,
                 nops ? "more than one" : "no");
        return ESBULK_OK;
    }
    status = json_object_get(body, "status");
    if (!json_is_integer(status)) {
        snprintf(why, ESBULK__RESP_WHY_MAX, "items[%zu] has no status", i);
        return ESBULK_OK;
    }
    st = json_integer_value(status);
    if (st < 100 || st > 599) {
        snprintf(why, ESBULK__RESP_WHY_MAX,
                 "items[%zu] has an invalid status %" JSON_INTEGER_FORMAT, i, st);
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

    item->klass = esbulk__resp_item_class(item, has_error, strcmp(op, "delete") == 0,
                                          retry_cluster_block);
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
esbulk_err_t esbulk__resp_parse_items(const char *body, size_t body_len, size_t expected_items,
                                      int retry_cluster_block, esbulk__resp_t *out)
{
    json_t *root = NULL;
    const json_t *items;
    json_error_t jerr;
    char why[ESBULK__RESP_WHY_MAX];
    char *text = NULL;
    esbulk_err_t err = ESBULK_OK;
    size_t i, n;

    if (body_len == 0) {
        err = esbulk__resp_explain(out, ESBULK__RESP_RETRY_AMBIGUOUS, ESBULK_ERR_BAD_RESPONSE,
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
            err = esbulk__resp_explain(out, ESBULK__RESP_RETRY_AMBIGUOUS, ESBULK_ERR_BAD_RESPONSE,
                                       "response truncated or not JSON: %s (byte %d of %zu)",
                                       text != NULL ? text : "parse error", jerr.position,
                                       body_len);
        goto done;
    }
    if (!json_is_object(root)) {
        err = esbulk__resp_explain(out, ESBULK__RESP_RETRY_AMBIGUOUS, ESBULK_ERR_BAD_RESPONSE,
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
                err = esbulk__resp_explain(out, ESBULK__RESP_RETRY_AMBIGUOUS,
                                           ESBULK_ERR_BAD_RESPONSE,
                                           "response has no \"items\" array");
        }
        goto done;
    }
    n = json_array_size(items);
    if (n != expected_items) {
        err = esbulk__resp_explain(out, ESBULK__RESP_RETRY_AMBIGUOUS, ESBULK_ERR_BAD_RESPONSE,
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
            esbulk__resp_items_free(out);
            err = esbulk__resp_explain(out, ESBULK__RESP_RETRY_AMBIGUOUS, ESBULK_ERR_BAD_RESPONSE,
                                       "%s", why);
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

/* Not a 2xx: the status decides; the body only explains. */
esbulk_err_t esbulk__resp_parse_status(long http_status, const char *body, size_t body_len,
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
        return esbulk__resp_explain(out, ESBULK__RESP_RETRY_AMBIGUOUS, ESBULK_ERR_BAD_RESPONSE,
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
            err = esbulk__resp_explain(out, klass, out->err, "HTTP %ld, no reason given",
                                       http_status);
        else
            err = esbulk__resp_explain(out, klass, out->err, "HTTP %ld with an empty body",
                                       http_status);
    }
done:
    json_decref(root);
    return err;
}
