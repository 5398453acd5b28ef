/* The _bulk response parser's entry points, and what its paths share (the
 * capped copies, the explanations, the freeing). The engine asks for a
 * filtered answer (filter_path=errors,items.*._index,...), so nothing here
 * relies on "took" or "errors": only "items" and, per item, its status
 * decide. Unknown fields
 * are ignored; a field used but of the wrong type counts as absent, and a
 * 2xx body that cannot be matched item by item to the documents sent is
 * "may have been applied" (RETRY_AMBIGUOUS), never a guess. */
#include "response_int.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* A copy of the valid UTF-8 string s[0..len), cut to ESBULK__RESP_REASON_MAX
 * bytes at a character boundary. NULL when out of memory. */
char *esbulk__resp_dup_capped(const char *s, size_t len)
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

/* caused_by's type and reason (ctype NULL when it has none), each cut as the
 * server's strings are, into *cause_type and *cause_reason, and appended to
 * *reason (which may be NULL) as " (caused by <type>: <reason>)", <type>
 * "error" when there is none. The whole is not cut again: the reason then
 * ends with exactly that text, which esbulk_result(3) promises. */
esbulk_err_t esbulk__resp_add_caused_by(char **reason, char **cause_type, char **cause_reason,
                                        const char *ctype, const char *creason)
{
    char *t = ctype != NULL ? esbulk__resp_dup_capped(ctype, strlen(ctype)) : NULL,
         *r = esbulk__resp_dup_capped(creason, strlen(creason)), *joined = NULL;
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

/* Classifies out and sets its reason to a library explanation (replacing
 * any reason already set). */
esbulk_err_t esbulk__resp_explain(esbulk__resp_t *out, esbulk__resp_class_t klass, esbulk_err_t err,
                                  const char *fmt, ...)
{
    char why[ESBULK__RESP_WHY_MAX];
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

void esbulk__resp_items_free(esbulk__resp_t *out)
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
        esbulk__resp_fast_items(body, body_len, expected_items, retry_cluster_block, want,
                                path == PATH_QUICK, scratch, out) == 0)
        return ESBULK_OK;
    if (path == PATH_FAST || path == PATH_QUICK)
        return ESBULK_ERR_BAD_RESPONSE; /* out is still zeroed */
    if (http_status >= 200 && http_status <= 299)
        err = esbulk__resp_parse_items(body, body_len, expected_items, retry_cluster_block, out);
    else
        err = esbulk__resp_parse_status(http_status, body, body_len, out);
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
    esbulk__resp_items_free(resp);
    free(resp->error_type);
    free(resp->error_reason);
    free(resp->cause_type);
    free(resp->cause_reason);
    memset(resp, 0, sizeof(*resp));
}
