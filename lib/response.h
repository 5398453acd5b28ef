/* The _bulk response parser: classifies one HTTP answer (status + body) and
 * each of its items for the retry logic. Pure code over plain data, no I/O. */
#ifndef ESBULK_RESPONSE_H
#define ESBULK_RESPONSE_H

#include "common.h"

/* Server strings kept for errors (error_type, error_reason, and their
 * caused_by's) are cut to at most this many bytes, at a UTF-8 boundary,
 * ending in "...", each before a cause is appended to its reason: a batch's
 * results must not hold one copy of a megabyte reason per document. */
#define ESBULK__RESP_REASON_MAX 2048
/* The longest error_reason: a reason, its cause's type and its cause's
 * reason, each cut, joined. */
#define ESBULK__RESP_ERROR_MAX (3 * ESBULK__RESP_REASON_MAX + 32)
/* A body that is not a JSON error is quoted up to this many bytes. */
#define ESBULK__RESP_TEXT_MAX 200

typedef enum {
    ESBULK__RESP_OK = 0,          /* 2xx with one item per document: see items[] */
    ESBULK__RESP_RETRY,           /* whole request not applied, retry: HTTP 429, 503 */
    ESBULK__RESP_RETRY_AMBIGUOUS, /* may have been applied: HTTP 500, 502, 504 (and any
                                     other 5xx); a 2xx whose body is truncated, not JSON,
                                     lacks "items", has the wrong item count, or has an
                                     item without a status; an HTTP status outside
                                     100..599 */
    ESBULK__RESP_SPLIT,           /* HTTP 413: split the batch and resend the halves */
    ESBULK__RESP_FAIL             /* whole request refused, not applied: 400, 401, 403,
                                     404, 405, other 4xx; 1xx and 3xx */
} esbulk__resp_class_t;

typedef enum { ESBULK__ITEM_OK = 0, ESBULK__ITEM_RETRY, ESBULK__ITEM_FAIL } esbulk__item_class_t;

typedef struct {
    esbulk__item_class_t klass;
    int32_t status;              /* item status */
    char *index, *id, *result;   /* NULL when absent; owned by the response (its arena
                                    or their own allocations): copy what is kept */
    char *error_type, *error_reason; /* malloc'ed, NULL when no error (or absent from it) */
    char *cause_type, *cause_reason; /* the error's caused_by, malloc'ed, NULL when none (and
                                    cause_type when it has no type); error_reason then ends
                                    with " (caused by <cause_type or error>: <cause_reason>)" */
    int64_t seq_no, primary_term, version; /* -1 when absent */
    int result_static;           /* result is a string literal (one of the usual results):
                                    it outlives the response */
} esbulk__item_t;

typedef struct {
    esbulk__resp_class_t klass;
    long http_status;
    esbulk_err_t err;            /* for FAIL: ESBULK_ERR_AUTH (401/403) or ESBULK_ERR_HTTP; for
                                    RETRY_AMBIGUOUS from a bad 2xx body or a bad status:
                                    ESBULK_ERR_BAD_RESPONSE; else ESBULK_OK */
    char *error_type, *error_reason; /* top-level error from the body when present (ES/OS shape
                                    {"error":{"type","reason"},"status"}, {"error":"text"}, or
                                    a plain-text body's first 200 bytes), else a library
                                    explanation such as "response truncated or not JSON",
                                    "3 items for 4 documents". When klass != OK, error_reason
                                    is never NULL; error_type may be. Both NULL when OK. */
    char *cause_type, *cause_reason; /* that error's caused_by, as for an item */
    esbulk__item_t *items;       /* expected_items entries when klass == OK, else NULL */
    size_t nitems;
    int borrowed;                /* the items' index, id and result are not theirs to free:
                                    they live in the arena, in the caller's want strings or
                                    are static (the single-pass reader) */
    int item_errors;             /* borrowed: an item may hold error_type or error_reason
                                    (else none does: nothing to free per item) */
    char *arena;                 /* index, id and result that had to be copied (one
                                    allocation for all, made when the first is needed) */
    size_t arena_len, arena_cap;
    int items_scratch;           /* items is the caller's scratch's: not freed with out */
} esbulk__resp_t;

/* Room for the items of one answer after another, kept by the caller (the
 * engine core keeps one): an answer's items are 96 bytes each, 480 KB for
 * 5,000, and an allocation that large made and freed for every answer went
 * back to the kernel at each free, to be faulted in again page by page.
 * Zero it to start; it grows to the most items an answer had; free it with
 * esbulk__response_scratch_free. */
typedef struct {
    esbulk__item_t *items;
    size_t cap;
} esbulk__resp_scratch_t;

/* What the caller sent as items[i]: the document's index and id (NULL when
 * it has none). An item that answers exactly these gets the caller's
 * pointer, not a copy. */
typedef struct {
    const char *index;
    size_t index_len;
    const char *id;
    size_t id_len;
} esbulk__resp_want_t;

/* Parses one _bulk answer: http_status, and body[0..body_len) (not
 * NUL-terminated; NULL when body_len is 0). Returns ESBULK_OK (the
 * classification is in out->klass; free it with esbulk__response_free) or
 * ESBULK_ERR_NOMEM (then out holds nothing to free). retry_cluster_block:
 * treat item 403 cluster_block_exception as retryable. Thread-safe. */
esbulk_err_t esbulk__response_parse(long http_status, const char *body, size_t body_len,
                                    size_t expected_items, int retry_cluster_block,
                                    esbulk__resp_t *out);

/* As esbulk__response_parse, with want[0..expected_items) what was sent
 * (or NULL): an item's index (id) that equals want[i].index (id) is that
 * very pointer, so that want must outlive out. Same classification and
 * same strings otherwise. With a scratch (or NULL), out->items may be the
 * scratch's: free out before the scratch is used again or freed. */
esbulk_err_t esbulk__response_parse_want(long http_status, const char *body, size_t body_len,
                                         size_t expected_items, int retry_cluster_block,
                                         const esbulk__resp_want_t *want,
                                         esbulk__resp_scratch_t *scratch, esbulk__resp_t *out);

/* Frees what out holds and zeroes it. NULL and a zeroed resp are accepted. */
void esbulk__response_free(esbulk__resp_t *resp);

/* Frees what the scratch holds and zeroes it. */
void esbulk__response_scratch_free(esbulk__resp_scratch_t *scratch);

#endif
