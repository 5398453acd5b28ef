/* The _bulk response parser's inside, shared by its files: response.c (the
 * entry points and what the paths share), response_tree.c (any answer, as a
 * jansson tree) and response_fast.c (a 2xx answer in one pass over the
 * bytes, by response_scan.h's scanner). */
#ifndef ESBULK_RESPONSE_INT_H
#define ESBULK_RESPONSE_INT_H

#include "response.h"

#include <string.h>

/* The longest library explanation (esbulk__resp_explain). */
#define ESBULK__RESP_WHY_MAX 512

/* The class of a parsed item; is_delete: its operation is "delete". */
static inline esbulk__item_class_t esbulk__resp_item_class(const esbulk__item_t *item,
                                                           int has_error, int is_delete,
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

/* response.c */
/* A copy of the valid UTF-8 string s[0..len), cut to ESBULK__RESP_REASON_MAX
 * bytes at a character boundary. NULL when out of memory. */
char *esbulk__resp_dup_capped(const char *s, size_t len);
/* caused_by's type and reason (ctype NULL when it has none), each cut as the
 * server's strings are, into *cause_type and *cause_reason, and appended to
 * *reason (which may be NULL) as " (caused by <type>: <reason>)", <type>
 * "error" when there is none. The whole is not cut again: the reason then
 * ends with exactly that text, which esbulk_result(3) promises. */
esbulk_err_t esbulk__resp_add_caused_by(char **reason, char **cause_type, char **cause_reason,
                                        const char *ctype, const char *creason);
void esbulk__resp_items_free(esbulk__resp_t *out);
/* Classifies out and sets its reason to a library explanation (replacing
 * any reason already set). */
esbulk_err_t esbulk__resp_explain(esbulk__resp_t *out, esbulk__resp_class_t klass, esbulk_err_t err,
                                  const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* response_tree.c */
/* A 2xx: the body must be {"items":[...]} with one item per document. */
esbulk_err_t esbulk__resp_parse_items(const char *body, size_t body_len, size_t expected_items,
                                      int retry_cluster_block, esbulk__resp_t *out);
/* Not a 2xx: the status decides; the body only explains. */
esbulk_err_t esbulk__resp_parse_status(long http_status, const char *body, size_t body_len,
                                       esbulk__resp_t *out);

/* response_fast.c */
/* The whole 2xx answer: 0 with out classified OK and its items set, or -1
 * with out as it was (nothing kept). */
int esbulk__resp_fast_items(const char *body, size_t body_len, size_t expected_items,
                            int retry_cluster_block, const esbulk__resp_want_t *want,
                            int quick_only, esbulk__resp_scratch_t *scratch, esbulk__resp_t *out);

#endif
