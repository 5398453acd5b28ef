/* libFuzzer harness: the _bulk response parser (lib/response.c).
 *
 * Input: byte 0 picks the HTTP status, byte 1 the expected item count
 * (0..15) and retry_cluster_block (bit 4); the rest is the body. Checks:
 * - no crash, leak or sanitizer report on any input, whichever path;
 * - esbulk__response_parse (fast path, else jansson) gives exactly what the
 *   jansson parser alone gives;
 * - when the fast scanner takes an answer, jansson (flags 0) accepts the
 *   same body and the jansson parser classifies it OK with the same items;
 * - the documented invariants: OK means expected_items items, each with a
 *   status in 100..599; otherwise error_reason is set and there are no items. */
#include "response.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

esbulk_err_t esbulk__response_parse_slow(long http_status, const char *body, size_t body_len,
                                         size_t expected_items, int retry_cluster_block,
                                         esbulk__resp_t *out);
esbulk_err_t esbulk__response_parse_fast(long http_status, const char *body, size_t body_len,
                                         size_t expected_items, int retry_cluster_block,
                                         esbulk__resp_t *out);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FAIL(...) (fprintf(stderr, "fuzz_response: " __VA_ARGS__), fputc('\n', stderr), abort())

static int str_eq(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static void same(const char *what, const esbulk__resp_t *a, const esbulk__resp_t *b)
{
    size_t i;

    if (a->klass != b->klass || a->http_status != b->http_status || a->err != b->err)
        FAIL("%s: class %d/%d err %d/%d", what, a->klass, b->klass, a->err, b->err);
    if (!str_eq(a->error_type, b->error_type) || !str_eq(a->error_reason, b->error_reason))
        FAIL("%s: error \"%s\" \"%s\" / \"%s\" \"%s\"", what, a->error_type, a->error_reason,
             b->error_type, b->error_reason);
    if (a->nitems != b->nitems || (a->items == NULL) != (b->items == NULL))
        FAIL("%s: %zu/%zu items", what, a->nitems, b->nitems);
    for (i = 0; i < a->nitems; i++) {
        const esbulk__item_t *x = &a->items[i], *y = &b->items[i];

        if (x->klass != y->klass || x->status != y->status || x->seq_no != y->seq_no ||
            x->primary_term != y->primary_term || x->version != y->version ||
            !str_eq(x->index, y->index) || !str_eq(x->id, y->id) ||
            !str_eq(x->result, y->result) || !str_eq(x->error_type, y->error_type) ||
            !str_eq(x->error_reason, y->error_reason))
            FAIL("%s: item %zu differs: class %d/%d status %d/%d id \"%s\"/\"%s\" "
                 "error \"%s: %s\"/\"%s: %s\"", what, i, x->klass, y->klass, x->status,
                 y->status, x->id, y->id, x->error_type, x->error_reason, y->error_type,
                 y->error_reason);
    }
}

static void invariants(const esbulk__resp_t *r, size_t expected)
{
    size_t i;

    if (r->klass == ESBULK__RESP_OK) {
        if (r->nitems != expected || (expected > 0 && r->items == NULL))
            FAIL("OK with %zu items for %zu", r->nitems, expected);
        for (i = 0; i < r->nitems; i++)
            if (r->items[i].status < 100 || r->items[i].status > 599)
                FAIL("OK item %zu with status %d", i, r->items[i].status);
    } else if (r->error_reason == NULL || r->items != NULL) {
        FAIL("class %d without a reason, or with items", r->klass);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const long statuses[] = {200, 200, 200, 200, 201, 299, 400, 401, 413,
                                    429, 500, 503, 404, 100, 0,   600};
    esbulk__resp_t slow, both, fast;
    size_t expected, len;
    long status;
    int block;
    char *body;
    esbulk_err_t se, be, fe;

    if (size < 2)
        return 0;
    status = statuses[data[0] % 16];
    expected = data[1] & 15;
    block = (data[1] >> 4) & 1;
    len = size - 2;
    /* an exact-size copy: an overread by one byte shows under ASan */
    body = len ? malloc(len) : NULL;
    if (len)
        memcpy(body, data + 2, len);

    se = esbulk__response_parse_slow(status, body, len, expected, block, &slow);
    be = esbulk__response_parse(status, body, len, expected, block, &both);
    fe = esbulk__response_parse_fast(status, body, len, expected, block, &fast);
    if (se != ESBULK_OK || be != ESBULK_OK)
        FAIL("jansson path %d, parse %d (only allocation failures may fail)", se, be);
    if (fe != ESBULK_OK && fe != ESBULK_ERR_BAD_RESPONSE)
        FAIL("fast path returned %d", fe);
    invariants(&slow, expected);
    same("parse vs the jansson parser", &both, &slow);
    if (fe == ESBULK_OK) {
        json_error_t jerr;
        json_t *j = json_loadb(body, len, 0, &jerr);

        if (j == NULL)
            FAIL("the fast path took a body jansson refuses: %s", jerr.text);
        json_decref(j);
        if (slow.klass != ESBULK__RESP_OK)
            FAIL("the fast path took an answer the jansson parser classifies %d", slow.klass);
        same("fast vs the jansson parser", &fast, &slow);
    } else if (fast.klass != 0 || fast.items != NULL || fast.error_reason != NULL ||
               fast.arena != NULL) {
        FAIL("the fast path declined but kept something");
    }
    esbulk__response_free(&fast);
    esbulk__response_free(&slow);
    esbulk__response_free(&both);
    free(body);
    return 0;
}
