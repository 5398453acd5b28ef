/* The _bulk response parser, driven by the answers in tests/data/response/
 * (real OpenSearch 2.19 bodies where a test cluster could produce them,
 * Elasticsearch 8 and proxy bodies as those servers send them). */
#include "response.h"
#include "unit_util.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* lib/response.c's test hooks: its jansson parser alone, its fast path
 * alone (ESBULK_ERR_BAD_RESPONSE for an answer it leaves to jansson). */
esbulk_err_t esbulk__response_parse_slow(long http_status, const char *body, size_t body_len,
                                         size_t expected_items, int retry_cluster_block,
                                         esbulk__resp_t *out);
esbulk_err_t esbulk__response_parse_fast(long http_status, const char *body, size_t body_len,
                                         size_t expected_items, int retry_cluster_block,
                                         esbulk__resp_t *out);
/* ... and its common-item path alone (quick_item: ESBULK_ERR_BAD_RESPONSE
 * unless it reads every item). */
esbulk_err_t esbulk__response_parse_quick(long http_status, const char *body, size_t body_len,
                                          size_t expected_items, int retry_cluster_block,
                                          const esbulk__resp_want_t *want, esbulk__resp_t *out);

/* The bytes of tests/data/response/<name>; NULL name: no body. */
static char *slurp(const char *name, size_t *len)
{
    char path[4096];
    FILE *f;
    char *buf;
    long n;

    *len = 0;
    if (name == NULL)
        return NULL;
    snprintf(path, sizeof(path), "%s/tests/data/response/%s",
             getenv("top_srcdir") ? getenv("top_srcdir") : ".", name);
    f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
    n = ftell(f);
    ck_assert_int_ge(n, 0);
    rewind(f);
    buf = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}

static void parse_file(const char *name, long http_status, size_t expected_items,
                       int retry_cluster_block, esbulk__resp_t *resp)
{
    size_t len;
    char *body = slurp(name, &len);

    ck_assert_int_eq(esbulk__response_parse(http_status, body, len, expected_items,
                                            retry_cluster_block, resp),
                     ESBULK_OK);
    free(body);
}

static int str_eq_or_null(const char *got, const char *want)
{
    if (want == NULL || got == NULL)
        return want == got;
    return strcmp(got, want) == 0;
}

static int contains_or_null(const char *got, const char *part)
{
    if (part == NULL || got == NULL)
        return part == got;
    return strstr(got, part) != NULL;
}

/* ---------------------------------------------------------------------------
 * Whole-response classification: one row per data file (and status). */
typedef struct {
    const char *file;          /* NULL: no body */
    long http_status;
    size_t expected_items;
    int retry_cluster_block;
    esbulk__resp_class_t klass;
    esbulk_err_t err;
    const char *error_type;    /* exact; NULL: must be NULL */
    const char *reason_part;   /* substring of error_reason; NULL: must be NULL */
    const char *item_classes;  /* klass OK: one letter per item, o(k) r(etry) f(ail) */
} resp_case_t;

#define OK_ ESBULK__RESP_OK
#define RETRY_ ESBULK__RESP_RETRY
#define AMBIG_ ESBULK__RESP_RETRY_AMBIGUOUS
#define SPLIT_ ESBULK__RESP_SPLIT
#define FAIL_ ESBULK__RESP_FAIL
#define BAD_ ESBULK_ERR_BAD_RESPONSE

static const resp_case_t resp_cases[] = {
    /* 2xx, one item per document */
    {"all_ok.json", 200, 3, 0, OK_, ESBULK_OK, NULL, NULL, "ooo"},
    {"all_ok_es_unfiltered.json", 200, 4, 0, OK_, ESBULK_OK, NULL, NULL, "oooo"},
    {"mixed_errors.json", 200, 3, 0, OK_, ESBULK_OK, NULL, NULL, "fof"},
    {"item_429_es.json", 200, 3, 0, OK_, ESBULK_OK, NULL, NULL, "ror"},
    {"item_429_os.json", 200, 2, 0, OK_, ESBULK_OK, NULL, NULL, "ro"},
    {"item_503.json", 200, 2, 0, OK_, ESBULK_OK, NULL, NULL, "or"},
    /* 403 cluster_block retried only when asked; the 429 flood-stage block
     * always; a 403 security_exception never */
    {"cluster_block.json", 200, 4, 0, OK_, ESBULK_OK, NULL, NULL, "forf"},
    {"cluster_block.json", 200, 4, 1, OK_, ESBULK_OK, NULL, NULL, "rorf"},
    {"delete_not_found.json", 200, 2, 0, OK_, ESBULK_OK, NULL, NULL, "oo"},
    {"update_noop.json", 200, 3, 0, OK_, ESBULK_OK, NULL, NULL, "oof"},
    {"item_odd.json", 200, 9, 1, OK_, ESBULK_OK, NULL, NULL, "fffoooffo"},
    {"huge_reason.json", 200, 2, 0, OK_, ESBULK_OK, NULL, NULL, "fo"},
    /* 2xx that cannot be matched to the documents: may have been applied */
    {"truncated.json", 200, 3, 0, AMBIG_, BAD_, NULL, "response truncated or not JSON", NULL},
    {"not_json.txt", 200, 3, 0, AMBIG_, BAD_, NULL, "response truncated or not JSON", NULL},
    {NULL, 200, 3, 0, AMBIG_, BAD_, NULL, "response truncated or not JSON: empty body", NULL},
    {"root_array.json", 200, 1, 0, AMBIG_, BAD_, NULL, "response is not a JSON object", NULL},
    {"wrong_count.json", 200, 4, 0, AMBIG_, BAD_, NULL, "3 items for 4 documents", NULL},
    {"all_ok.json", 200, 2, 0, AMBIG_, BAD_, NULL, "3 items for 2 documents", NULL},
    {"no_items.json", 200, 1, 0, AMBIG_, BAD_, NULL, "response has no \"items\" array", NULL},
    {"no_items_error.json", 200, 1, 0, AMBIG_, BAD_, "illegal_state_exception",
     "There are no ingest nodes in this cluster", NULL},
    {"item_without_status.json", 200, 2, 0, AMBIG_, BAD_, NULL, "items[1] has no status", NULL},
    {"item_bad_status.json", 200, 1, 0, AMBIG_, BAD_, NULL, "items[0] has no status", NULL},
    {"item_status_range.json", 200, 2, 0, AMBIG_, BAD_, NULL, "items[1] has an invalid status 0",
     NULL},
    {"item_not_object.json", 200, 2, 0, AMBIG_, BAD_, NULL, "items[1] is not an object", NULL},
    {"item_no_op.json", 200, 1, 0, AMBIG_, BAD_, NULL, "items[0] has no operation object", NULL},
    {"item_two_ops.json", 200, 1, 0, AMBIG_, BAD_, NULL,
     "items[0] has more than one operation object", NULL},
    /* not 2xx: the status decides, the body explains */
    {"top_413.txt", 413, 3, 0, SPLIT_, ESBULK_OK, NULL,
     "<html> <head><title>413 Request Entity Too Large</title></head> <body>", NULL},
    {"top_413_empty.txt", 413, 3, 0, SPLIT_, ESBULK_OK, NULL, "HTTP 413 with an empty body", NULL},
    {"top_429.json", 429, 3, 0, RETRY_, ESBULK_OK, "es_rejected_execution_exception",
     "rejected execution of coordinating operation", NULL},
    {"top_429_breaker.json", 429, 3, 0, RETRY_, ESBULK_OK, "circuit_breaking_exception",
     "[parent] Data too large", NULL},
    {"top_503.json", 503, 3, 0, RETRY_, ESBULK_OK, "cluster_block_exception",
     "blocked by: [SERVICE_UNAVAILABLE/2/no master];", NULL},
    {"top_503_null_reason.json", 503, 3, 0, RETRY_, ESBULK_OK, "master_not_discovered_exception",
     "HTTP 503, no reason given", NULL},
    {"top_500.json", 500, 3, 0, AMBIG_, ESBULK_OK, "illegal_state_exception",
     "no ingest nodes", NULL},
    {"top_502.txt", 502, 3, 0, AMBIG_, ESBULK_OK, NULL,
     "<html> <head><title>502 Bad Gateway</title></head> <body> <center>", NULL},
    {"top_504.txt", 504, 3, 0, AMBIG_, ESBULK_OK, NULL,
     "charset=iso-8859-1\"> <TITLE>ERROR...", NULL},
    {"top_401.json", 401, 3, 0, FAIL_, ESBULK_ERR_AUTH, "security_exception",
     "missing authentication credentials for REST request", NULL},
    {"top_401_os.txt", 401, 3, 0, FAIL_, ESBULK_ERR_AUTH, NULL, "Unauthorized", NULL},
    {"top_403.json", 403, 3, 0, FAIL_, ESBULK_ERR_AUTH, "security_exception",
     "no permissions for [indices:data/write/bulk]", NULL},
    {"top_403_aws.json", 403, 3, 0, FAIL_, ESBULK_ERR_AUTH, NULL,
     "{\"message\":\"User: anonymous is not authorized", NULL},
    {"top_400.json", 400, 3, 0, FAIL_, ESBULK_ERR_HTTP, "illegal_argument_exception",
     "Malformed action/metadata line [1]", NULL},
    {"top_405.json", 405, 3, 0, FAIL_, ESBULK_ERR_HTTP, NULL,
     "Incorrect HTTP method for uri [/_bulk?", NULL},
    {"top_404.txt", 404, 3, 0, FAIL_, ESBULK_ERR_HTTP, NULL, "404 page not found", NULL},
    {"top_301.txt", 301, 3, 0, FAIL_, ESBULK_ERR_HTTP, NULL, "<html><body><h1>Moved</h1>", NULL},
    /* the status wins over a body that says otherwise */
    {"all_ok.json", 500, 3, 0, AMBIG_, ESBULK_OK, NULL, "{\"errors\":false,\"items\":[", NULL},
    {"top_429.json", 0, 3, 0, AMBIG_, BAD_, NULL, "invalid HTTP status 0", NULL},
};

START_TEST(test_classification)
{
    const resp_case_t *c = &resp_cases[_i];
    esbulk__resp_t resp;
    size_t k;

    parse_file(c->file, c->http_status, c->expected_items, c->retry_cluster_block, &resp);
    ck_assert_msg(resp.klass == c->klass, "%s/%ld: class %d, want %d (%s)", c->file,
                  c->http_status, resp.klass, c->klass,
                  resp.error_reason ? resp.error_reason : "-");
    ck_assert_msg(resp.err == c->err, "%s/%ld: err %d, want %d", c->file, c->http_status,
                  resp.err, c->err);
    ck_assert_int_eq(resp.http_status, c->http_status);
    ck_assert_msg(str_eq_or_null(resp.error_type, c->error_type), "%s/%ld: type \"%s\"", c->file,
                  c->http_status, resp.error_type ? resp.error_type : "(null)");
    ck_assert_msg(contains_or_null(resp.error_reason, c->reason_part), "%s/%ld: reason \"%s\"",
                  c->file, c->http_status, resp.error_reason ? resp.error_reason : "(null)");
    if (c->klass == ESBULK__RESP_OK) {
        ck_assert_uint_eq(resp.nitems, c->expected_items);
        ck_assert_uint_eq(strlen(c->item_classes), c->expected_items);
        ck_assert_ptr_nonnull(resp.items);
        for (k = 0; k < resp.nitems; k++) {
            esbulk__item_class_t want = c->item_classes[k] == 'o'   ? ESBULK__ITEM_OK
                                        : c->item_classes[k] == 'r' ? ESBULK__ITEM_RETRY
                                                                    : ESBULK__ITEM_FAIL;
            ck_assert_msg(resp.items[k].klass == want, "%s: items[%zu] class %d, want %c",
                          c->file, k, resp.items[k].klass, c->item_classes[k]);
        }
    } else {
        ck_assert_ptr_null(resp.items);
        ck_assert_uint_eq(resp.nitems, 0);
        ck_assert_ptr_nonnull(resp.error_reason); /* always explained */
    }
    esbulk__response_free(&resp);
}
END_TEST

/* ---------------------------------------------------------------------------
 * Item fields. */
typedef struct {
    const char *file;
    size_t expected_items, i;
    int32_t status;
    const char *index, *id, *result, *error_type; /* exact; NULL: must be NULL */
    const char *reason_part;                      /* substring; NULL: must be NULL */
    int64_t seq_no, primary_term, version;
} item_case_t;

static const item_case_t item_cases[] = {
    {"all_ok.json", 3, 2, 201, "resp-scratch-a", "NKN7N6IBb87KllGVqhn6", "created", NULL, NULL,
     2, 1, 1},
    {"all_ok_es_unfiltered.json", 4, 3, 200, "logs-2024.06", "a4", "deleted", NULL, NULL, 44, 2,
     2},
    {"mixed_errors.json", 3, 0, 400, "resp-scratch-a", "3", NULL, "mapper_parsing_exception",
     "failed to parse field [n] of type [integer] in document with id '3'", -1, -1, -1},
    {"mixed_errors.json", 3, 1, 201, "resp-scratch-a", "4", "created", NULL, NULL, 0, 1, 1},
    /* the server's detail in caused_by is kept in the reason */
    {"item_caused_by.json", 3, 0, 400, "x", "1", NULL, "mapper_parsing_exception",
     "failed to parse (caused by json_parse_exception: Unexpected character", -1, -1, -1},
    {"mixed_errors.json", 3, 2, 409, "resp-scratch-a", "1", NULL,
     "version_conflict_engine_exception", "[1]: version conflict, document already exists", -1,
     -1, -1},
    {"item_429_es.json", 3, 0, 429, "logs-2024.06", "b1", NULL, "es_rejected_execution_exception",
     "rejected execution of primary operation", -1, -1, -1},
    {"item_429_es.json", 3, 2, 429, "logs-2024.06", "b3", NULL, "circuit_breaking_exception",
     "[parent] Data too large", -1, -1, -1},
    {"item_429_os.json", 2, 0, 429, "logs-2024.06", "c1", NULL, "rejected_execution_exception",
     "OpenSearchThreadPoolExecutor[name = os-node-0/write", -1, -1, -1},
    {"item_503.json", 2, 1, 503, "resp-scratch-a", "d2", NULL, "unavailable_shards_exception",
     "primary shard is not active", -1, -1, -1},
    {"cluster_block.json", 4, 0, 403, "resp-scratch-b", "1", NULL, "cluster_block_exception",
     "blocked by: [FORBIDDEN/8/index write (api)];", -1, -1, -1},
    {"cluster_block.json", 4, 3, 403, "secret", "e4", NULL, "security_exception",
     "is unauthorized for user [writer]", -1, -1, -1},
    {"delete_not_found.json", 2, 0, 404, "resp-scratch-a", "nope", "not_found", NULL, NULL, 1, 1,
     1},
    {"update_noop.json", 3, 0, 200, "resp-scratch-a", "2", "noop", NULL, NULL, 1, 1, 1},
    {"update_noop.json", 3, 2, 404, "resp-scratch-a", "missing", NULL,
     "document_missing_exception", "[missing]: document missing", -1, -1, -1},
    /* odd servers: error as a string, partial errors, wrong types */
    {"item_odd.json", 9, 0, 400, "x", "1", NULL, NULL, "mapper_parsing_exception: failed to parse",
     -1, -1, -1},
    {"item_odd.json", 9, 1, 409, "x", "2", NULL, "version_conflict_engine_exception", NULL, -1, -1,
     -1},
    {"item_odd.json", 9, 2, 500, "x", "3", NULL, "null_pointer_exception", NULL, -1, -1, -1},
    {"item_odd.json", 9, 3, 201, NULL, "4", "created", NULL, NULL, -1, -1, -1},
    {"item_odd.json", 9, 4, 200, NULL, NULL, NULL, NULL, NULL, -1, -1, -1},
    {"item_odd.json", 9, 5, 404, "x", "5", "not_found", NULL, NULL, -1, -1, -1},
    {"item_odd.json", 9, 6, 404, "x", "6", "not_found", NULL, NULL, -1, -1, -1},
    {"item_odd.json", 9, 7, 404, "x", "7", "not_found", "index_not_found_exception",
     "no such index [x]", -1, -1, -1},
    {"item_odd.json", 9, 8, 200, "x", "8", "updated", NULL, NULL, INT64_C(9007199254740993), 3,
     12},
};

START_TEST(test_item_fields)
{
    const item_case_t *c = &item_cases[_i];
    const esbulk__item_t *item;
    esbulk__resp_t resp;

    parse_file(c->file, 200, c->expected_items, 0, &resp);
    ck_assert_msg(resp.klass == ESBULK__RESP_OK, "%s: %s", c->file,
                  resp.error_reason ? resp.error_reason : "-");
    ck_assert_uint_gt(resp.nitems, c->i);
    item = &resp.items[c->i];
#define STR_FIELD(f)                                                                              \
    ck_assert_msg(str_eq_or_null(item->f, c->f), "%s: items[%zu]." #f " \"%s\"", c->file, c->i,   \
                  item->f ? item->f : "(null)")
    STR_FIELD(index);
    STR_FIELD(id);
    STR_FIELD(result);
    STR_FIELD(error_type);
#undef STR_FIELD
    ck_assert_msg(contains_or_null(item->error_reason, c->reason_part),
                  "%s: items[%zu].error_reason \"%s\"", c->file, c->i,
                  item->error_reason ? item->error_reason : "(null)");
    ck_assert_int_eq(item->status, c->status);
    ck_assert_int_eq(item->seq_no, c->seq_no);
    ck_assert_int_eq(item->primary_term, c->primary_term);
    ck_assert_int_eq(item->version, c->version);
    esbulk__response_free(&resp);
}
END_TEST

/* An error's caused_by: its type and reason apart, and appended to the
 * reason as " (caused by <type, or error>: <reason>)", the same by the fast
 * path and by jansson; a cause without a reason is none. */
START_TEST(test_item_causes)
{
    static const struct {
        const char *type, *reason, *cause_type, *cause_reason;
    } want[] = {
        {"mapper_parsing_exception",
         "failed to parse (caused by json_parse_exception: Unexpected character ('}' (code 125)))",
         "json_parse_exception", "Unexpected character ('}' (code 125))"},
        {"mapper_parsing_exception",
         "failed to parse field [n] (caused by a_exception: b) (caused by error: no type)", NULL,
         "no type"},
        {"illegal_argument_exception", "plain", NULL, NULL},
    };
    esbulk__resp_t resp;
    size_t len, i;
    int way;
    char *body = slurp("item_caused_by.json", &len);

    for (way = 0; way < 2; way++) {
        ck_assert_int_eq(way == 0 ? esbulk__response_parse_fast(200, body, len, 3, 0, &resp)
                                  : esbulk__response_parse_slow(200, body, len, 3, 0, &resp),
                         ESBULK_OK);
        ck_assert_uint_eq(resp.nitems, 3);
        for (i = 0; i < 3; i++) {
            const esbulk__item_t *it = &resp.items[i];

            ck_assert_msg(str_eq_or_null(it->error_type, want[i].type), "%d/%zu", way, i);
            ck_assert_msg(str_eq_or_null(it->error_reason, want[i].reason), "%d/%zu: %s", way, i,
                          it->error_reason);
            ck_assert_msg(str_eq_or_null(it->cause_type, want[i].cause_type), "%d/%zu", way, i);
            ck_assert_msg(str_eq_or_null(it->cause_reason, want[i].cause_reason), "%d/%zu", way,
                          i);
        }
        esbulk__response_free(&resp);
    }
    free(body);
}
END_TEST

/* A request's error (not an item's) keeps its cause the same way. */
START_TEST(test_request_cause)
{
    static const char body[] =
        "{\"error\":{\"type\":\"x_content_parse_exception\",\"reason\":\"[1:2] bad\","
        "\"caused_by\":{\"type\":\"json_parse_exception\",\"reason\":\"Unexpected end\"}},"
        "\"status\":400}";
    esbulk__resp_t resp;

    ck_assert_int_eq(esbulk__response_parse(400, body, sizeof(body) - 1, 2, 0, &resp), ESBULK_OK);
    ck_assert_int_eq(resp.klass, ESBULK__RESP_FAIL);
    ck_assert_str_eq(resp.error_reason,
                     "[1:2] bad (caused by json_parse_exception: Unexpected end)");
    ck_assert_str_eq(resp.cause_type, "json_parse_exception");
    ck_assert_str_eq(resp.cause_reason, "Unexpected end");
    esbulk__response_free(&resp);
}
END_TEST

/* ---------------------------------------------------------------------------
 * Bounds on what is kept. */

/* A long reason and a long cause are each cut before they are joined: the
 * reason still ends with the whole " (caused by ...)" of the cut cause, as
 * esbulk_result(3) promises (a binding cuts that ending off). */
START_TEST(test_long_cause_kept_whole)
{
    char body[7000], suffix[2200];
    esbulk__resp_t resp;
    size_t o = long_cause_answer(body, sizeof(body), 400, 3000, 2500), rl, sl;
    int way;

    for (way = 0; way < 2; way++) {
        const esbulk__item_t *it;

        ck_assert_int_eq(way == 0 ? esbulk__response_parse_fast(200, body, o, 1, 0, &resp)
                                  : esbulk__response_parse_slow(200, body, o, 1, 0, &resp),
                         ESBULK_OK);
        it = &resp.items[0];
        ck_assert_str_eq(it->cause_type, "c_exception");
        ck_assert_uint_eq(strlen(it->cause_reason), ESBULK__RESP_REASON_MAX);
        ck_assert_str_eq(it->cause_reason + ESBULK__RESP_REASON_MAX - 3, "...");
        snprintf(suffix, sizeof(suffix), " (caused by %s: %s)", it->cause_type, it->cause_reason);
        rl = strlen(it->error_reason);
        sl = strlen(suffix);
        ck_assert_uint_eq(rl, ESBULK__RESP_REASON_MAX + sl);
        ck_assert_str_eq(it->error_reason + rl - sl, suffix);
        ck_assert_uint_eq(strspn(it->error_reason, "x"), ESBULK__RESP_REASON_MAX - 3);
        esbulk__response_free(&resp);
    }
}
END_TEST

/* A 120 KB reason is cut to at most ESBULK__RESP_REASON_MAX bytes, without
 * splitting the 3-byte character that straddles the limit. */
START_TEST(test_huge_reason)
{
    esbulk__resp_t resp;
    const char *r;
    size_t len;

    parse_file("huge_reason.json", 200, 2, 0, &resp);
    ck_assert_int_eq(resp.klass, ESBULK__RESP_OK);
    r = resp.items[0].error_reason;
    ck_assert_ptr_nonnull(r);
    len = strlen(r);
    ck_assert_uint_le(len, ESBULK__RESP_REASON_MAX);
    ck_assert_uint_eq(len, 2044 + 3);
    ck_assert_uint_eq(strspn(r, "x"), 2044);
    ck_assert_str_eq(r + 2044, "...");
    ck_assert_str_eq(resp.items[0].error_type, "mapper_parsing_exception");
    ck_assert_str_eq(resp.items[1].result, "created");
    esbulk__response_free(&resp);
}
END_TEST

/* A multibyte character that ends exactly at the limit is kept. */
START_TEST(test_reason_cut_keeps_whole_character)
{
    static const char head[] = "{\"error\":{\"type\":\"t\",\"reason\":\"";
    static const char tail[] = "\"},\"status\":500}";
    char body[sizeof(head) + 2042 + 3 * 10 + sizeof(tail)];
    esbulk__resp_t resp;
    size_t o = 0, k;

    memcpy(body, head, sizeof(head) - 1);
    o += sizeof(head) - 1;
    memset(body + o, 'x', 2042);
    o += 2042;
    for (k = 0; k < 10; k++) {
        memcpy(body + o, "\xe2\x82\xac", 3); /* U+20AC */
        o += 3;
    }
    memcpy(body + o, tail, sizeof(tail) - 1);
    o += sizeof(tail) - 1;
    ck_assert_int_eq(esbulk__response_parse(500, body, o, 1, 0, &resp), ESBULK_OK);
    ck_assert_int_eq(resp.klass, ESBULK__RESP_RETRY_AMBIGUOUS);
    ck_assert_uint_eq(strlen(resp.error_reason), ESBULK__RESP_REASON_MAX);
    ck_assert_str_eq(resp.error_reason + 2042, "\xe2\x82\xac...");
    esbulk__response_free(&resp);
}
END_TEST

/* A plain-text body is quoted up to ESBULK__RESP_TEXT_MAX bytes, whitespace
 * folded, invalid UTF-8 replaced, no character cut in half. */
START_TEST(test_text_quote)
{
    char body[400];
    esbulk__resp_t resp;
    size_t len;
    char *file;

    file = slurp("top_504.txt", &len);
    ck_assert_int_eq(esbulk__response_parse(504, file, len, 1, 0, &resp), ESBULK_OK);
    free(file);
    ck_assert_uint_le(strlen(resp.error_reason), ESBULK__RESP_TEXT_MAX + 3);
    ck_assert_ptr_null(strchr(resp.error_reason, '\n'));
    ck_assert_ptr_null(strstr(resp.error_reason, "  "));
    ck_assert_str_eq(resp.error_reason + strlen(resp.error_reason) - 3, "...");
    esbulk__response_free(&resp);

    parse_file("top_400_binary.txt", 400, 1, 0, &resp);
    ck_assert_str_eq(resp.error_reason, "Bad request caf? ?? end");
    esbulk__response_free(&resp);

    parse_file("top_401_os.txt", 401, 1, 0, &resp);
    ck_assert_str_eq(resp.error_reason, "Unauthorized");
    esbulk__response_free(&resp);

    /* 199 'a' then U+00E9 across the 200-byte limit */
    memset(body, 'a', 199);
    memcpy(body + 199, "\xc3\xa9 and more text", 16);
    ck_assert_int_eq(esbulk__response_parse(502, body, 199 + 16, 1, 0, &resp), ESBULK_OK);
    ck_assert_uint_eq(strlen(resp.error_reason), 199 + 3);
    ck_assert_str_eq(resp.error_reason + 199, "...");
    esbulk__response_free(&resp);

    /* whitespace only counts as empty */
    ck_assert_int_eq(esbulk__response_parse(502, " \r\n\t ", 5, 1, 0, &resp), ESBULK_OK);
    ck_assert_str_eq(resp.error_reason, "HTTP 502 with an empty body");
    esbulk__response_free(&resp);
}
END_TEST

/* ---------------------------------------------------------------------------
 * Robustness. */

/* Every prefix of a good answer is "may have been applied", never a crash
 * nor a guess; the whole answer parses. */
START_TEST(test_every_prefix)
{
    static const struct { const char *file; size_t n; } files[] = {
        {"all_ok.json", 3}, {"mixed_errors.json", 3}, {"update_noop.json", 3},
        {"item_odd.json", 9}, {"all_ok_es_unfiltered.json", 4},
    };
    esbulk__resp_t resp;
    size_t f, len, cut;
    char *body;

    for (f = 0; f < ESBULK__ARRAY_LEN(files); f++) {
        body = slurp(files[f].file, &len);
        while (len > 0 && (body[len - 1] == '\n' || body[len - 1] == ' '))
            len--;
        for (cut = 0; cut < len; cut++) {
            char *copy = malloc(cut + 1); /* exactly cut bytes: valgrind sees overreads */

            ck_assert_ptr_nonnull(copy);
            memcpy(copy, body, cut);
            ck_assert_int_eq(esbulk__response_parse(200, cut ? copy : NULL, cut, files[f].n, 0,
                                                    &resp),
                             ESBULK_OK);
            ck_assert_msg(resp.klass == ESBULK__RESP_RETRY_AMBIGUOUS, "%s cut at %zu: class %d",
                          files[f].file, cut, resp.klass);
            ck_assert_int_eq(resp.err, ESBULK_ERR_BAD_RESPONSE);
            ck_assert_ptr_nonnull(strstr(resp.error_reason, "response truncated or not JSON"));
            esbulk__response_free(&resp);
            free(copy);
        }
        ck_assert_int_eq(esbulk__response_parse(200, body, len, files[f].n, 0, &resp), ESBULK_OK);
        ck_assert_int_eq(resp.klass, ESBULK__RESP_OK);
        esbulk__response_free(&resp);
        free(body);
    }
}
END_TEST

/* The HTTP status alone, without a body. */
START_TEST(test_status_table)
{
    static const struct {
        long status;
        esbulk__resp_class_t klass;
        esbulk_err_t err;
    } v[] = {
        {429, RETRY_, ESBULK_OK},        {503, RETRY_, ESBULK_OK},
        {413, SPLIT_, ESBULK_OK},        {500, AMBIG_, ESBULK_OK},
        {502, AMBIG_, ESBULK_OK},        {504, AMBIG_, ESBULK_OK},
        {501, AMBIG_, ESBULK_OK},        {507, AMBIG_, ESBULK_OK},
        {400, FAIL_, ESBULK_ERR_HTTP},   {404, FAIL_, ESBULK_ERR_HTTP},
        {405, FAIL_, ESBULK_ERR_HTTP},   {406, FAIL_, ESBULK_ERR_HTTP},
        {409, FAIL_, ESBULK_ERR_HTTP},   {499, FAIL_, ESBULK_ERR_HTTP},
        {401, FAIL_, ESBULK_ERR_AUTH},   {403, FAIL_, ESBULK_ERR_AUTH},
        {301, FAIL_, ESBULK_ERR_HTTP},   {100, FAIL_, ESBULK_ERR_HTTP},
        {0, AMBIG_, BAD_},               {-1, AMBIG_, BAD_},
        {600, AMBIG_, BAD_},             {99, AMBIG_, BAD_},
    };
    esbulk__resp_t resp;
    char want[64];
    size_t i;

    for (i = 0; i < ESBULK__ARRAY_LEN(v); i++) {
        ck_assert_int_eq(esbulk__response_parse(v[i].status, NULL, 0, 2, 0, &resp), ESBULK_OK);
        ck_assert_msg(resp.klass == v[i].klass, "%ld: class %d", v[i].status, resp.klass);
        ck_assert_msg(resp.err == v[i].err, "%ld: err %d", v[i].status, resp.err);
        ck_assert_ptr_null(resp.items);
        ck_assert_ptr_null(resp.error_type);
        if (v[i].err == BAD_)
            snprintf(want, sizeof(want), "invalid HTTP status %ld", v[i].status);
        else
            snprintf(want, sizeof(want), "HTTP %ld with an empty body", v[i].status);
        ck_assert_str_eq(resp.error_reason, want);
        esbulk__response_free(&resp);
    }
}
END_TEST

START_TEST(test_zero_items_and_free)
{
    static const char body[] = "{\"errors\":false,\"items\":[]}";
    esbulk__resp_t resp;

    ck_assert_int_eq(esbulk__response_parse(200, body, sizeof(body) - 1, 0, 0, &resp), ESBULK_OK);
    ck_assert_int_eq(resp.klass, ESBULK__RESP_OK);
    ck_assert_uint_eq(resp.nitems, 0);
    ck_assert_ptr_null(resp.items);
    ck_assert_ptr_null(resp.error_reason);
    esbulk__response_free(&resp);
    esbulk__response_free(&resp); /* zeroed: harmless */
    esbulk__response_free(NULL);
    /* a body pointer of NULL with a length is an empty body, not a crash */
    ck_assert_int_eq(esbulk__response_parse(200, NULL, 10, 1, 0, &resp), ESBULK_OK);
    ck_assert_int_eq(resp.klass, ESBULK__RESP_RETRY_AMBIGUOUS);
    esbulk__response_free(&resp);
    /* bytes after the object are not JSON: the answer is not what was sent */
    ck_assert_int_eq(esbulk__response_parse(200, "{\"items\":[]} x", 14, 0, 0, &resp), ESBULK_OK);
    ck_assert_int_eq(resp.klass, ESBULK__RESP_RETRY_AMBIGUOUS);
    esbulk__response_free(&resp);
}
END_TEST

/* ---------------------------------------------------------------------------
 * The fast path against the jansson parser: same answers, field by field. */

static int opt_str_eq(const char *a, const char *b)
{
    return a == NULL || b == NULL ? a == b : strcmp(a, b) == 0;
}

/* NULL when a and b are the same, else the first difference. */
static const char *resp_diff(const esbulk__resp_t *a, const esbulk__resp_t *b, char *why,
                             size_t why_size)
{
    size_t i;

    if (a->klass != b->klass || a->http_status != b->http_status || a->err != b->err) {
        snprintf(why, why_size, "class %d/%d, status %ld/%ld, err %d/%d", a->klass, b->klass,
                 a->http_status, b->http_status, a->err, b->err);
        return why;
    }
    if (!opt_str_eq(a->error_type, b->error_type) ||
        !opt_str_eq(a->error_reason, b->error_reason) ||
        !opt_str_eq(a->cause_type, b->cause_type) ||
        !opt_str_eq(a->cause_reason, b->cause_reason)) {
        snprintf(why, why_size, "error \"%s\": \"%s\" / \"%s\": \"%s\"",
                 a->error_type ? a->error_type : "(null)",
                 a->error_reason ? a->error_reason : "(null)",
                 b->error_type ? b->error_type : "(null)",
                 b->error_reason ? b->error_reason : "(null)");
        return why;
    }
    if (a->nitems != b->nitems || (a->items == NULL) != (b->items == NULL)) {
        snprintf(why, why_size, "%zu/%zu items", a->nitems, b->nitems);
        return why;
    }
    for (i = 0; i < a->nitems; i++) {
        const esbulk__item_t *x = &a->items[i], *y = &b->items[i];

        if (x->klass != y->klass || x->status != y->status || x->seq_no != y->seq_no ||
            x->primary_term != y->primary_term || x->version != y->version ||
            !opt_str_eq(x->index, y->index) || !opt_str_eq(x->id, y->id) ||
            !opt_str_eq(x->result, y->result) || !opt_str_eq(x->error_type, y->error_type) ||
            !opt_str_eq(x->error_reason, y->error_reason) ||
            !opt_str_eq(x->cause_type, y->cause_type) ||
            !opt_str_eq(x->cause_reason, y->cause_reason)) {
            snprintf(why, why_size,
                     "items[%zu]: class %d/%d status %d/%d seq_no %lld/%lld primary_term "
                     "%lld/%lld version %lld/%lld index \"%s\"/\"%s\" id \"%s\"/\"%s\" result "
                     "\"%s\"/\"%s\" error \"%s\": \"%.300s\" / \"%s\": \"%.300s\" cause "
                     "\"%s\": \"%.200s\" / \"%s\": \"%.200s\"",
                     i, x->klass, y->klass, x->status, y->status, (long long)x->seq_no,
                     (long long)y->seq_no, (long long)x->primary_term,
                     (long long)y->primary_term, (long long)x->version, (long long)y->version,
                     x->index ? x->index : "(null)", y->index ? y->index : "(null)",
                     x->id ? x->id : "(null)", y->id ? y->id : "(null)",
                     x->result ? x->result : "(null)", y->result ? y->result : "(null)",
                     x->error_type ? x->error_type : "(null)",
                     x->error_reason ? x->error_reason : "(null)",
                     y->error_type ? y->error_type : "(null)",
                     y->error_reason ? y->error_reason : "(null)",
                     x->cause_type ? x->cause_type : "(null)",
                     x->cause_reason ? x->cause_reason : "(null)",
                     y->cause_type ? y->cause_type : "(null)",
                     y->cause_reason ? y->cause_reason : "(null)");
            return why;
        }
    }
    return NULL;
}

/* Parses body both ways (and the fast way alone) and checks that they
 * agree. Returns TOOK_FAST when the fast path took it, plus SLOW_OK when
 * the answer is OK. body is copied to a buffer
 * of exactly len bytes, so that overreads show under valgrind and ASan. */
enum { TOOK_FAST = 1, SLOW_OK = 2 };

static int check_both(const char *what, long http_status, const char *body, size_t len,
                      size_t expected_items, int retry_cluster_block)
{
    esbulk__resp_t fast, slow, both;
    char why[4096];
    const char *d;
    char *copy = len ? malloc(len) : NULL;
    esbulk_err_t se, be, fe;
    int took;

    /* if + ck_abort_msg, not ck_assert: each ck_assert records its line
     * (a write), which makes tens of thousands of checks slow under
     * valgrind */
    if (len) {
        ck_assert_ptr_nonnull(copy);
        memcpy(copy, body, len);
    }
    se = esbulk__response_parse_slow(http_status, copy, len, expected_items, retry_cluster_block,
                                     &slow);
    be = esbulk__response_parse(http_status, copy, len, expected_items, retry_cluster_block,
                                &both);
    fe = esbulk__response_parse_fast(http_status, copy, len, expected_items, retry_cluster_block,
                                     &fast);
    if (se != ESBULK_OK || be != ESBULK_OK || (fe != ESBULK_OK && fe != ESBULK_ERR_BAD_RESPONSE))
        ck_abort_msg("%s: jansson %d, parse %d, fast path %d", what, se, be, fe);
    d = resp_diff(&both, &slow, why, sizeof(why));
    if (d != NULL)
        ck_abort_msg("%s (status %ld, %zu expected, block %d): parse vs jansson: %s", what,
                     http_status, expected_items, retry_cluster_block, d);
    if (fe == ESBULK_OK) {
        d = slow.klass != ESBULK__RESP_OK ? "jansson: not OK"
                                          : resp_diff(&fast, &slow, why, sizeof(why));
        if (d != NULL)
            ck_abort_msg("%s (status %ld, %zu expected, block %d): fast vs jansson: %s", what,
                         http_status, expected_items, retry_cluster_block, d);
    } else if (fast.klass != 0 || fast.items != NULL || fast.error_reason != NULL) {
        ck_abort_msg("%s: the fast path declined but kept something", what);
    }
    took = (fe == ESBULK_OK ? TOOK_FAST : 0) | (slow.klass == ESBULK__RESP_OK ? SLOW_OK : 0);
    esbulk__response_free(&fast);
    esbulk__response_free(&slow);
    esbulk__response_free(&both);
    free(copy);
    return took;
}

/* Every data file, as a 2xx with every item count up to 12 (3 for the
 * large) and both cluster_block settings, and as other statuses; every
 * prefix of the small ones. */
START_TEST(test_both_paths_data_files)
{
    static const long statuses[] = {201, 299, 400, 429, 500, 503, 0};
    char dir[4096];
    struct dirent *de;
    DIR *dp;
    size_t nfiles = 0, taken = 0;

    snprintf(dir, sizeof(dir), "%s/tests/data/response",
             getenv("top_srcdir") ? getenv("top_srcdir") : ".");
    dp = opendir(dir);
    ck_assert_msg(dp != NULL, "%s: %s", dir, strerror(errno));
    while ((de = readdir(dp)) != NULL) {
        size_t len, expected, k, cut, right = 3;
        char *body;
        int block, r;

        if (de->d_name[0] == '.')
            continue;
        body = slurp(de->d_name, &len);
        nfiles++;
        for (expected = 0; expected <= (len <= 4096 ? 12u : 3u); expected++)
            for (block = 0; block <= 1; block++) {
                r = check_both(de->d_name, 200, body, len, expected, block);
                if (r & SLOW_OK)
                    right = expected;
                if ((r & TOOK_FAST) && block == 0)
                    taken++;
            }
        for (k = 0; k < ESBULK__ARRAY_LEN(statuses); k++)
            check_both(de->d_name, statuses[k], body, len, right, 1);
        /* a cut answer is never taken (jansson refuses it: compared when
         * the fast path takes one all the same) */
        if (len <= 4096)
            for (cut = 0; cut < len; cut++) {
                char *copy = malloc(cut + 1); /* exactly cut bytes: overreads show */
                esbulk__resp_t resp;

                if (copy == NULL)
                    ck_abort_msg("out of memory");
                memcpy(copy, body, cut);
                if (esbulk__response_parse_fast(200, copy, cut, right, 0, &resp) == ESBULK_OK) {
                    esbulk__response_free(&resp);
                    check_both(de->d_name, 200, copy, cut, right, 0);
                } else if (resp.items != NULL) {
                    ck_abort_msg("%s cut at %zu: declined but kept items", de->d_name, cut);
                }
                free(copy);
            }
        free(body);
    }
    closedir(dp);
    ck_assert_uint_ge(nfiles, 40);
    ck_assert_uint_ge(taken, 12); /* the 2xx answers with items, each at its count */
}
END_TEST

/* The answers the engine gets most go the fast way. */
START_TEST(test_fast_path_takes)
{
    static const struct {
        const char *file;
        size_t n;
    } files[] = {
        {"all_ok.json", 3},          {"all_ok_es_unfiltered.json", 4}, {"mixed_errors.json", 3},
        {"item_429_es.json", 3},     {"item_429_os.json", 2},          {"item_503.json", 2},
        {"cluster_block.json", 4},   {"delete_not_found.json", 2},     {"update_noop.json", 3},
        {"item_odd.json", 9},        {"huge_reason.json", 2},          {"item_caused_by.json", 3},
        {"os_filtered_common.json", 8},
    };
    static const char ws_body[] = " \r\n{ \"items\" :\t[ { \"index\" : { \"status\" : 201 , "
                                  "\"_id\" : \"\\u00e9\\ud83d\\ude00\\n\" } } ] } \n";
    esbulk__resp_t resp;
    size_t f, len;
    char *body;

    for (f = 0; f < ESBULK__ARRAY_LEN(files); f++) {
        body = slurp(files[f].file, &len);
        ck_assert_msg(esbulk__response_parse_fast(200, body, len, files[f].n, 0, &resp) ==
                          ESBULK_OK,
                      "%s: not taken by the fast path", files[f].file);
        ck_assert_int_eq(resp.klass, ESBULK__RESP_OK);
        esbulk__response_free(&resp);
        free(body);
    }
    ck_assert_int_eq(esbulk__response_parse_fast(200, ws_body, sizeof(ws_body) - 1, 1, 0, &resp),
                     ESBULK_OK);
    ck_assert_str_eq(resp.items[0].id, "\xc3\xa9\xf0\x9f\x98\x80\n");
    esbulk__response_free(&resp);
    /* more documents than the body can hold: counted by jansson, not allocated */
    body = slurp("all_ok.json", &len);
    ck_assert_int_eq(esbulk__response_parse_fast(200, body, len, SIZE_MAX, 0, &resp),
                     ESBULK_ERR_BAD_RESPONSE);
    check_both("all_ok.json", 200, body, len, SIZE_MAX, 0);
    check_both("all_ok.json", 200, body, len, len / 16, 0);
    free(body);
    /* and those it does not understand it leaves */
    ck_assert_int_eq(esbulk__response_parse_fast(200, "{\"items\":[]} x", 14, 0, 0, &resp),
                     ESBULK_ERR_BAD_RESPONSE);
    ck_assert_int_eq(esbulk__response_parse_fast(500, "{\"items\":[]}", 12, 0, 0, &resp),
                     ESBULK_ERR_BAD_RESPONSE);
    ck_assert_int_eq(esbulk__response_parse_fast(200, "{\"items\":[],\"items\":[]}", 24, 0, 0,
                                                 &resp),
                     ESBULK_ERR_BAD_RESPONSE);
    ck_assert_ptr_null(resp.items);
}
END_TEST

/* Random answers: random key order, unknown members and nested junk,
 * escapes and multibyte characters in strings, errors with caused_by, odd
 * types; a few with what the fast path must leave to jansson (duplicate or
 * escaped keys, reals with exponents, bad or missing statuses, wrong
 * counts, truncation, a changed byte). */
typedef struct {
    char *p;
    size_t n, cap;
    uint64_t rng;
    int clean; /* nothing the fast path must leave: it must take it */
    int spaces;
} gen_t;

static void gput(gen_t *g, const char *s, size_t n)
{
    if (g->n + n + 1 > g->cap) {
        while (g->n + n + 1 > g->cap)
            g->cap = g->cap ? g->cap * 2 : 4096;
        g->p = realloc(g->p, g->cap);
        ck_assert_ptr_nonnull(g->p);
    }
    memcpy(g->p + g->n, s, n);
    g->n += n;
    g->p[g->n] = '\0';
}

static void gputs(gen_t *g, const char *s)
{
    gput(g, s, strlen(s));
}

static void gprintf(gen_t *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void gprintf(gen_t *g, const char *fmt, ...)
{
    char tmp[128];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(tmp))
        ck_abort_msg("gprintf: %d", n);
    gput(g, tmp, (size_t)n);
}

static uint32_t rnd(gen_t *g, uint32_t n)
{
    g->rng ^= g->rng << 13;
    g->rng ^= g->rng >> 7;
    g->rng ^= g->rng << 17;
    return (uint32_t)((g->rng >> 16) % n);
}

static int chance(gen_t *g, uint32_t pct)
{
    return rnd(g, 100) < pct;
}

static void gws(gen_t *g)
{
    static const char *const ws[] = {" ", "\n", "\t", "\r\n  ", "  "};

    if (g->spaces && chance(g, 30))
        gputs(g, ws[rnd(g, ESBULK__ARRAY_LEN(ws))]);
}

/* A JSON string of about len characters: ASCII, escapes, \u escapes
 * (surrogate pairs too), raw UTF-8. */
static void gstring(gen_t *g, size_t len)
{
    static const char plain[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                " _-.:;,[]{}()<>'!?#$%&*+=|~^`@\x7f";
    static const char *const esc[] = {"\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t"};
    static const char *const utf8[] = {"\xc3\xa9", "\xc3\x9f", "\xe2\x82\xac", "\xe4\xb8\xad",
                                       "\xf0\x9f\x98\x80", "\xef\xbf\xbd", "\xdf\xbf"};
    size_t i;
    uint32_t r, u;

    gputs(g, "\"");
    for (i = 0; i < len; i++) {
        r = rnd(g, 100);
        if (r < 70) {
            gput(g, &plain[rnd(g, sizeof(plain) - 1)], 1);
        } else if (r < 80) {
            gputs(g, esc[rnd(g, ESBULK__ARRAY_LEN(esc))]);
        } else if (r < 88) {
            u = chance(g, 50) ? 1 + rnd(g, 0xd7ff) : 0xe000 + rnd(g, 0x2000);
            if (rnd(g, 1000) == 0) {
                u = 0; /* \u0000: jansson refuses it */
                g->clean = 0;
            }
            gprintf(g, chance(g, 50) ? "\\u%04x" : "\\u%04X", u);
        } else if (r < 92) {
            gprintf(g, "\\u%04x\\u%04X", 0xd800 + rnd(g, 0x400), 0xdc00 + rnd(g, 0x400));
        } else {
            gputs(g, utf8[rnd(g, ESBULK__ARRAY_LEN(utf8))]);
        }
    }
    gputs(g, "\"");
}

static void gshort_string(gen_t *g)
{
    if (chance(g, 70)) {
        /* as servers send them: plain */
        static const char *const plain[] = {"\"logs-2024.06\"", "\"x\"", "\"resp-scratch-a\"",
                                            "\"NKN7N6IBb87KllGVqhn6\"", "\"\"", "\"a4\""};

        gputs(g, plain[rnd(g, ESBULK__ARRAY_LEN(plain))]);
    } else {
        gstring(g, rnd(g, 24));
    }
}

static void gint(gen_t *g)
{
    switch (rnd(g, 6)) {
    case 0: gputs(g, "0"); break;
    case 1: gprintf(g, "%u", rnd(g, 1000)); break;
    case 2: gprintf(g, "%llu", (unsigned long long)(g->rng >> 11)); break;
    case 3: gputs(g, chance(g, 50) ? "9223372036854775807" : "-9223372036854775808"); break;
    case 4: gprintf(g, "-%u", rnd(g, 100000)); break;
    default: gputs(g, "-0"); break;
    }
}

static void gjunk(gen_t *g, int depth);

/* A member "key":value of a junk object, any key. */
static void gjunk_members(gen_t *g, int depth, int any_keys)
{
    uint32_t k, n = rnd(g, 5);

    for (k = 0; k < n; k++) {
        if (k)
            gputs(g, ",");
        gws(g);
        if (any_keys)
            gstring(g, rnd(g, 8));
        else
            gprintf(g, "\"junk_%u\"", k);
        gws(g);
        gputs(g, ":");
        gws(g);
        gjunk(g, depth + 1);
        gws(g);
    }
}

/* Junk; plain_keys: an object's own keys are plain (it is an error or a
 * caused_by, whose keys are looked up: the fast path leaves escaped keys
 * there to jansson). */
static void gjunk2(gen_t *g, int depth, int plain_keys)
{
    uint32_t r = rnd(g, depth > 4 ? 8 : 10), k, n;

    switch (r) {
    case 0: gstring(g, rnd(g, 12)); break;
    case 1: gint(g); break;
    case 2:
        if (chance(g, 1)) {
            gputs(g, chance(g, 50) ? "1e5" : "-2.5E-3"); /* exponents: left to jansson */
            g->clean = 0;
        } else {
            gprintf(g, "%s%u.%u", chance(g, 30) ? "-" : "", rnd(g, 1000), rnd(g, 100000));
        }
        break;
    case 3: gputs(g, "true"); break;
    case 4: gputs(g, "false"); break;
    case 5: gputs(g, "null"); break;
    case 6: gshort_string(g); break;
    case 7: gint(g); break;
    case 8:
        gputs(g, "{");
        gws(g);
        gjunk_members(g, depth, !plain_keys);
        gputs(g, "}");
        break;
    default:
        gputs(g, "[");
        gws(g);
        n = rnd(g, 5);
        for (k = 0; k < n; k++) {
            if (k)
                gputs(g, ",");
            gws(g);
            gjunk(g, depth + 1);
            gws(g);
        }
        gputs(g, "]");
    }
}

static void gjunk(gen_t *g, int depth)
{
    gjunk2(g, depth, 0);
}

static void gkey(gen_t *g, const char *key)
{
    gws(g);
    gprintf(g, "\"%s\"", key);
    gws(g);
    gputs(g, ":");
    gws(g);
}

static void shuffle(gen_t *g, int *v, int n)
{
    int i, j, t;

    for (i = n - 1; i > 0; i--) {
        j = (int)rnd(g, (uint32_t)i + 1);
        t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

/* A value for a field that counts only as a string or only as a count:
 * mostly the right type. */
static void gfield(gen_t *g, int want_string)
{
    if (chance(g, 90)) {
        if (want_string)
            gshort_string(g);
        else
            gint(g);
    } else {
        gjunk(g, 4);
    }
}

static void gcaused_by(gen_t *g, int depth)
{
    int order[5] = {0, 1, 2, 3, 4}, k, first = 1;

    gputs(g, "{");
    shuffle(g, order, 5);
    for (k = 0; k < 5; k++) {
        if (order[k] == 3 && (depth > 2 || chance(g, 60)))
            continue;
        if (order[k] >= 2 && order[k] != 3 && chance(g, 50))
            continue;
        if (!first)
            gputs(g, ",");
        first = 0;
        switch (order[k]) {
        case 0:
            gkey(g, "type");
            if (chance(g, 85))
                gputs(g, chance(g, 50) ? "\"json_parse_exception\""
                                       : "\"illegal_argument_exception\"");
            else
                gjunk(g, 5);
            break;
        case 1:
            gkey(g, "reason");
            if (chance(g, 85))
                gstring(g, chance(g, 2) ? 2030 + rnd(g, 60) : rnd(g, 60));
            else
                gjunk(g, 5);
            break;
        case 2:
            gkey(g, "stack_trace");
            gstring(g, rnd(g, 30));
            break;
        case 3:
            gkey(g, "caused_by");
            gcaused_by(g, depth + 1);
            break;
        default:
            gkey(g, "header");
            gjunk(g, 5);
        }
        gws(g);
    }
    gputs(g, "}");
}

static void gerror(gen_t *g)
{
    static const char *const types[] = {"\"mapper_parsing_exception\"",
                                        "\"cluster_block_exception\"",
                                        "\"version_conflict_engine_exception\"",
                                        "\"es_rejected_execution_exception\""};
    int order[6] = {0, 1, 2, 3, 4, 5}, k, first = 1;

    switch (rnd(g, 10)) {
    case 0: gputs(g, "null"); return;
    case 1: gstring(g, rnd(g, 40)); return;
    case 2: gjunk2(g, 4, 1); return;
    default: break;
    }
    gputs(g, "{");
    shuffle(g, order, 6);
    for (k = 0; k < 6; k++) {
        if (order[k] >= 2 && chance(g, 40))
            continue;
        if (!first)
            gputs(g, ",");
        first = 0;
        switch (order[k]) {
        case 0:
            gkey(g, "type");
            if (chance(g, 85))
                gputs(g, types[rnd(g, ESBULK__ARRAY_LEN(types))]);
            else
                gjunk(g, 5);
            break;
        case 1:
            gkey(g, "reason");
            if (chance(g, 85))
                gstring(g, chance(g, 3) ? 2030 + rnd(g, 60) : rnd(g, 80));
            else
                gjunk(g, 5);
            break;
        case 2:
            gkey(g, "caused_by");
            if (chance(g, 85))
                gcaused_by(g, 1);
            else
                gjunk2(g, 5, 1);
            break;
        case 3:
            gkey(g, "root_cause");
            gputs(g, "[");
            gcaused_by(g, 3);
            gputs(g, "]");
            break;
        case 4:
            gkey(g, "index_uuid");
            gshort_string(g);
            break;
        default:
            gkey(g, "shard");
            gjunk(g, 5);
        }
        gws(g);
    }
    gputs(g, "}");
}

static void gop_body(gen_t *g)
{
    static const char *const results[] = {"\"created\"", "\"updated\"", "\"deleted\"",
                                          "\"noop\"", "\"not_found\""};
    static const char *const statuses[] = {"200", "201", "201", "404", "409", "429", "503",
                                           "403", "400", "500", "100", "599"};
    int order[12], k, n = 12, first = 1;

    for (k = 0; k < n; k++)
        order[k] = k;
    shuffle(g, order, n);
    gputs(g, "{");
    for (k = 0; k < n; k++) {
        int f = order[k];

        if (f != 7 && f >= 3 && chance(g, f >= 8 ? 70 : 20))
            continue; /* the optional fields and the junk: not always */
        if (f == 7 && rnd(g, 300) == 0) {
            g->clean = 0; /* no status */
            continue;
        }
        if (!first)
            gputs(g, ",");
        first = 0;
        switch (f) {
        case 0: gkey(g, "_index"); gfield(g, 1); break;
        case 1: gkey(g, "_id"); gfield(g, 1); break;
        case 2: gkey(g, "_version"); gfield(g, 0); break;
        case 3:
            gkey(g, "result");
            if (chance(g, 80))
                gputs(g, results[rnd(g, ESBULK__ARRAY_LEN(results))]);
            else
                gfield(g, 1);
            break;
        case 4: gkey(g, "_primary_term"); gfield(g, 0); break;
        case 5: gkey(g, "_seq_no"); gfield(g, 0); break;
        case 6: gkey(g, "error"); gerror(g); break;
        case 7:
            gkey(g, "status");
            switch (rnd(g, 300)) {
            case 0: gputs(g, "\"201\""); g->clean = 0; break;
            case 1: gputs(g, chance(g, 50) ? "99" : "600"); g->clean = 0; break;
            case 2: gputs(g, "201.0"); g->clean = 0; break;
            default: gputs(g, statuses[rnd(g, ESBULK__ARRAY_LEN(statuses))]);
            }
            break;
        case 8:
            gkey(g, "_shards");
            gputs(g, "{\"total\":2,\"successful\":1,\"failed\":0}");
            break;
        case 9: gkey(g, "get"); gjunk(g, 4); break;
        case 10: gkey(g, "forced_refresh"); gjunk(g, 4); break;
        default:
            if (chance(g, 3)) {
                /* a duplicate, or a key jansson unescapes: left to jansson */
                gkey(g, chance(g, 50) ? "status" : "_i\\u0064");
                gjunk(g, 4);
                g->clean = 0;
            } else {
                gkey(g, "_type");
                gjunk(g, 4);
            }
        }
        gws(g);
    }
    gputs(g, "}");
}

static void gitem(gen_t *g)
{
    static const char *const ops[] = {"index", "create", "update", "delete"};
    const char *op = chance(g, 2) ? "frobnicate" : ops[rnd(g, ESBULK__ARRAY_LEN(ops))];
    int extra = chance(g, 5), before = chance(g, 50);

    gputs(g, "{");
    if (extra && before) {
        gkey(g, "meta"); /* not an object: not an operation */
        gshort_string(g);
        gputs(g, ",");
    }
    gkey(g, op);
    gop_body(g);
    gws(g);
    if (extra && !before) {
        gputs(g, ",");
        if (chance(g, 20)) {
            gkey(g, op); /* the operation's name again: left to jansson */
            g->clean = 0;
        } else {
            gkey(g, "meta");
        }
        if (chance(g, 50))
            gputs(g, "[{\"nested\":{}}]");
        else
            gint(g);
    }
    gputs(g, "}");
}

/* One answer; *expected: the item count to parse it with. */
static void gresponse(gen_t *g, size_t *expected)
{
    int order[5] = {0, 1, 2, 3, 4}, k, first = 1;
    size_t n = chance(g, 5) ? 0 : rnd(g, 9), i;

    g->n = 0;
    g->clean = 1;
    g->spaces = chance(g, 30);
    *expected = n;
    shuffle(g, order, 5);
    gws(g);
    gputs(g, "{");
    for (k = 0; k < 5; k++) {
        if (order[k] >= 1 && order[k] != 2 && chance(g, 50))
            continue;
        if (!first)
            gputs(g, ",");
        first = 0;
        switch (order[k]) {
        case 0:
            gkey(g, "items");
            gputs(g, "[");
            for (i = 0; i < n; i++) {
                if (i)
                    gputs(g, ",");
                gws(g);
                gitem(g);
                gws(g);
            }
            gputs(g, "]");
            break;
        case 1: gkey(g, "took"); gint(g); break;
        case 2: gkey(g, "errors"); gputs(g, chance(g, 50) ? "true" : "false"); break;
        case 3: gkey(g, "ingest_took"); gjunk(g, 1); break;
        default:
            if (chance(g, 10)) {
                gkey(g, "items"); /* twice: left to jansson */
                gputs(g, "[]");
                g->clean = 0;
            } else {
                gkey(g, "_nodes");
                gjunk(g, 1);
            }
        }
        gws(g);
    }
    gputs(g, "}");
    gws(g);
    if (chance(g, 3)) {
        *expected = n == 0 || chance(g, 50) ? n + 1 : n - 1; /* the wrong count */
        g->clean = 0;
    }
    if (chance(g, 3)) {
        g->n = rnd(g, (uint32_t)g->n); /* truncated */
        g->clean = 0;
    } else if (chance(g, 3)) {
        g->p[rnd(g, (uint32_t)g->n)] = "\"\\{}[],:0a \x01\xc3\xff"[rnd(g, 15)];
        g->clean = 0;
    }
}

START_TEST(test_both_paths_random)
{
    gen_t g;
    int i, taken = 0, clean = 0;

    memset(&g, 0, sizeof(g));
    /* RESPONSE_SEED=n: another run of answers */
    g.rng = getenv("RESPONSE_SEED") ? strtoull(getenv("RESPONSE_SEED"), NULL, 0) * 2 + 1
                                    : UINT64_C(0x9e3779b97f4a7c15);
    for (i = 0; i < 2000; i++) {
        char what[64];
        size_t expected;
        long status = chance(&g, 90) ? 200 : chance(&g, 50) ? 201 : 500;
        int block = chance(&g, 50), took;

        gresponse(&g, &expected);
        snprintf(what, sizeof(what), "random answer %d (%zu bytes)", i, g.n);
        took = check_both(what, status, g.p, g.n, expected, block) & TOOK_FAST;
        if (g.clean && status != 500) {
            clean++;
            if (!took)
                ck_abort_msg("%s: not taken by the fast path: %.2000s", what, g.p);
        }
        taken += took;
    }
    /* about 1300 clean; of the others, a few the fast path takes too (a
     * changed byte that leaves valid JSON) */
    ck_assert_int_ge(clean, 1000);
    ck_assert_int_ge(taken, clean);
    ck_assert_int_le(taken, 1900);
    free(g.p);
}
END_TEST

/* ---------------------------------------------------------------------------
 * The common-item path (quick_item) and what was sent (want): every answer
 * read the same as the jansson parser reads it, whichever path takes it. */

/* Parses {"items":[<items>]} with want (NULL: none) by
 * esbulk__response_parse_want and by the common-item path alone, checks both
 * against the jansson parser (and check_both: parse and the fast path
 * without want), and that the common-item path took it iff quick. The
 * answers are left in *both_out (when not NULL) for more checks. */
static void check_want(const char *what, const char *items, size_t n,
                       const esbulk__resp_want_t *want, int quick, esbulk__resp_t *both_out)
{
    size_t len = strlen(items) + 12;
    char *body = malloc(len + 1), *copy = malloc(len); /* exactly len: overreads show */
    esbulk__resp_t slow, both, q;
    char why[4096];
    const char *d;
    esbulk_err_t qe;
    int block;

    ck_assert_ptr_nonnull(body);
    ck_assert_ptr_nonnull(copy);
    snprintf(body, len + 1, "{\"items\":[%s]}", items);
    memcpy(copy, body, len);
    for (block = 0; block <= 1; block++) {
        ck_assert_int_eq(esbulk__response_parse_slow(200, copy, len, n, block, &slow), ESBULK_OK);
        ck_assert_int_eq(esbulk__response_parse_want(200, copy, len, n, block, want, NULL, &both),
                         ESBULK_OK);
        qe = esbulk__response_parse_quick(200, copy, len, n, block, want, &q);
        d = resp_diff(&both, &slow, why, sizeof(why));
        if (d != NULL)
            ck_abort_msg("%s: parse_want vs jansson: %s", what, d);
        if (qe == ESBULK_OK) {
            d = resp_diff(&q, &slow, why, sizeof(why));
            if (d != NULL)
                ck_abort_msg("%s: the common-item path vs jansson: %s", what, d);
        } else if (q.items != NULL || q.arena != NULL || q.klass != 0) {
            ck_abort_msg("%s: the common-item path declined but kept something", what);
        }
        if ((qe == ESBULK_OK) != (quick != 0))
            ck_abort_msg("%s: the common-item path %s it", what, qe == ESBULK_OK ? "took" : "left");
        check_both(what, 200, copy, len, n, block);
        esbulk__response_free(&slow);
        esbulk__response_free(&q);
        if (block == 1 && both_out != NULL)
            *both_out = both;
        else
            esbulk__response_free(&both);
    }
    free(copy);
    free(body);
}

#define ITEM(op, rest) "{\"" op "\":{" rest "}}"
#define COMMON(id, seq) "\"_index\":\"bench-micro\",\"_id\":\"" id "\",\"_version\":1," \
                        "\"result\":\"created\",\"_seq_no\":" seq ",\"_primary_term\":1"

/* The shape the servers write is read by the common-item path, with the
 * caller's strings handed back where the answer is what was sent. */
START_TEST(test_quick_common)
{
    static const char bench[] = "bench-micro";
    esbulk__resp_want_t want[3] = {{bench, 11, "123", 3}, {bench, 11, "124", 3},
                                   {bench, 11, NULL, 0}};
    esbulk__resp_t r;

    check_want("common", ITEM("index", COMMON("123", "5") ",\"status\":201") ","
               ITEM("index", COMMON("124", "6") ",\"status\":201") ","
               ITEM("index", COMMON("srv-id", "7") ",\"status\":201"), 3, want, 1, &r);
    ck_assert_int_eq(r.klass, ESBULK__RESP_OK);
    ck_assert_ptr_eq(r.items[0].index, bench); /* the caller's, not a copy */
    ck_assert_ptr_eq(r.items[1].index, bench);
    ck_assert_ptr_eq(r.items[2].index, bench);
    ck_assert_ptr_eq(r.items[0].id, want[0].id);
    ck_assert_ptr_eq(r.items[1].id, want[1].id);
    ck_assert_str_eq(r.items[2].id, "srv-id"); /* the server's id: a copy */
    ck_assert_int_eq(r.items[2].seq_no, 7);
    ck_assert(r.items[0].result_static);
    ck_assert_str_eq(r.items[0].result, "created");
    ck_assert_int_eq(r.items[0].status, 201);
    ck_assert_int_eq(r.items[0].version, 1);
    ck_assert_int_eq(r.items[0].primary_term, 1);
    ck_assert_uint_eq(r.arena_len, sizeof("srv-id")); /* the only string copied */
    esbulk__response_free(&r);
    /* without want: the same strings, copied */
    check_want("common, no want", ITEM("index", COMMON("123", "5") ",\"status\":201"), 1, NULL, 1,
               &r);
    ck_assert_str_eq(r.items[0].index, "bench-micro");
    ck_assert_str_eq(r.items[0].id, "123");
    esbulk__response_free(&r);
    /* each operation, each usual result, other statuses */
    check_want("ops",
               ITEM("create", COMMON("1", "1") ",\"status\":201") ","
               ITEM("update", "\"_index\":\"i\",\"_id\":\"2\",\"_version\":2,\"result\":\"updated\","
                              "\"_seq_no\":2,\"_primary_term\":1,\"status\":200") ","
               ITEM("update", "\"_index\":\"i\",\"_id\":\"3\",\"_version\":2,\"result\":\"noop\","
                              "\"_seq_no\":2,\"_primary_term\":1,\"status\":200") ","
               ITEM("delete", "\"_index\":\"i\",\"_id\":\"4\",\"_version\":3,\"result\":\"deleted\","
                              "\"_seq_no\":3,\"_primary_term\":1,\"status\":200") ","
               ITEM("delete", "\"_index\":\"i\",\"_id\":\"5\",\"_version\":1,"
                              "\"result\":\"not_found\",\"_seq_no\":4,\"_primary_term\":1,"
                              "\"status\":404") ","
               ITEM("index", "\"_index\":\"i\",\"_id\":\"6\",\"_version\":1,\"result\":\"not_found\","
                             "\"status\":404") ","
               ITEM("index", "\"_index\":\"i\",\"_id\":\"7\",\"status\":503") ","
               ITEM("index", "\"_index\":\"i\",\"_id\":\"8\",\"status\":429") ","
               ITEM("index", "\"_index\":\"i\",\"_id\":\"9\",\"status\":299") ","
               ITEM("index", "\"status\":100") "," ITEM("index", "\"status\":599"),
               11, NULL, 1, &r);
    ck_assert_int_eq(r.items[4].klass, ESBULK__ITEM_OK);   /* a delete of nothing: done */
    ck_assert_int_eq(r.items[5].klass, ESBULK__ITEM_FAIL); /* not for an index operation */
    ck_assert_int_eq(r.items[6].klass, ESBULK__ITEM_RETRY);
    ck_assert_int_eq(r.items[7].klass, ESBULK__ITEM_RETRY);
    ck_assert_int_eq(r.items[8].klass, ESBULK__ITEM_OK);
    ck_assert_str_eq(r.items[2].result, "noop");
    ck_assert(r.items[2].result_static);
    esbulk__response_free(&r);
    /* fields missing: the filter of result.failures_only, and fewer */
    check_want("missing fields",
               ITEM("index", "\"result\":\"created\",\"status\":201") ","
               ITEM("index", "\"status\":201") ","
               ITEM("index", "\"_id\":\"x\",\"status\":201") ","
               ITEM("index", "\"_index\":\"bench-micro\",\"status\":201") ","
               ITEM("index", "\"_version\":4,\"_seq_no\":0,\"status\":201"),
               5, NULL, 1, &r);
    ck_assert_ptr_null(r.items[1].index);
    ck_assert_ptr_null(r.items[1].result);
    ck_assert_int_eq(r.items[1].seq_no, -1);
    ck_assert_int_eq(r.items[4].version, 4);
    ck_assert_int_eq(r.items[4].seq_no, 0);
    ck_assert_int_eq(r.items[4].primary_term, -1);
    esbulk__response_free(&r);
}
END_TEST

/* An index or id that is not what was sent, or is escaped, is the server's
 * string (a copy); the last index read is no shortcut for another one. */
START_TEST(test_quick_differs)
{
    static const char bench[] = "bench-micro", quote[] = "a\"b";
    esbulk__resp_want_t want[5] = {{bench, 11, "1", 1}, {bench, 11, "2", 1},
                                   {"bench-micrO", 11, "3", 1}, {bench, 11, "4", 1},
                                   {quote, 3, "5", 1}};
    esbulk__resp_t r;

    check_want("differs",
               /* an alias: the server's write index */
               ITEM("index", "\"_index\":\"bench-micro-000001\",\"_id\":\"1\",\"status\":201") ","
               /* as sent */
               ITEM("index", "\"_index\":\"bench-micro\",\"_id\":\"2\",\"status\":201") ","
               /* the bytes of the last index, not the document's */
               ITEM("index", "\"_index\":\"bench-micro\",\"_id\":\"3\",\"status\":201") ","
               /* escaped: the same name, decoded into a copy */
               ITEM("index", "\"_index\":\"bench\\u002dmicro\",\"_id\":\"\\u0034\",\"status\":201")
               ","
               /* the document's name has a quote: it is escaped in the answer */
               ITEM("index", "\"_index\":\"a\\\"b\",\"_id\":\"55\",\"status\":201"),
               5, want, 1, &r);
    ck_assert_str_eq(r.items[0].index, "bench-micro-000001");
    ck_assert_ptr_eq(r.items[1].index, bench);
    ck_assert_str_eq(r.items[2].index, "bench-micro");
    ck_assert_ptr_ne(r.items[2].index, want[2].index);
    ck_assert_str_eq(r.items[3].index, "bench-micro");
    ck_assert_str_eq(r.items[3].id, "4");
    ck_assert_str_eq(r.items[4].index, "a\"b");
    ck_assert_str_eq(r.items[4].id, "55");
    ck_assert_ptr_ne(r.items[4].id, want[4].id);
    esbulk__response_free(&r);
    /* an id with a quote in the bytes that follow what was sent */
    want[0].id = "1";
    check_want("id prefix", ITEM("index", "\"_index\":\"bench-micro\",\"_id\":\"12\",\"status\":201"),
               1, want, 1, &r);
    ck_assert_str_eq(r.items[0].id, "12");
    esbulk__response_free(&r);
    /* a result that is not one of the usual ones, and one escaped */
    check_want("odd results",
               ITEM("index", "\"result\":\"createdX\",\"status\":201") ","
               ITEM("index", "\"result\":\"creat\",\"status\":201") ","
               ITEM("index", "\"result\":\"cr\\u0065ated\",\"status\":201") ","
               ITEM("index", "\"result\":\"\",\"status\":201"),
               4, NULL, 1, &r);
    ck_assert_str_eq(r.items[0].result, "createdX");
    ck_assert(!r.items[0].result_static);
    ck_assert_str_eq(r.items[1].result, "creat");
    ck_assert_str_eq(r.items[2].result, "created");
    ck_assert_str_eq(r.items[3].result, "");
    esbulk__response_free(&r);
}
END_TEST

/* What the common-item path leaves to the general scanner (or to jansson),
 * read the same way all the same. */
START_TEST(test_quick_leaves)
{
    static const struct {
        const char *what, *items;
        size_t n;
        int quick; /* the common-item path takes it */
    } cases[] = {
        {"keys in another order",
         ITEM("index", "\"status\":201,\"_index\":\"i\",\"_id\":\"1\",\"result\":\"created\""), 1, 0},
        {"_id before _index", ITEM("index", "\"_id\":\"1\",\"_index\":\"i\",\"status\":201"), 1, 0},
        {"status not last", ITEM("index", "\"status\":201,\"_seq_no\":3"), 1, 0},
        {"an unknown member", ITEM("index", "\"_index\":\"i\",\"forced_refresh\":true,\"status\":201"), 1, 0},
        {"_shards", ITEM("index", "\"result\":\"created\",\"_shards\":{\"total\":2},\"status\":201"), 1, 0},
        {"whitespace", "{ \"index\":{\"status\":201}}", 1, 0},
        {"whitespace inside", "{\"index\":{\"status\": 201}}", 1, 0},
        {"whitespace after", "{\"index\":{\"status\":201} }", 1, 0},
        {"another operation name", "{\"other\":{\"status\":201}}", 1, 0},
        {"no status", ITEM("index", "\"_index\":\"i\",\"_id\":\"1\""), 1, 0},
        {"empty operation", ITEM("index", ""), 1, 0},
        {"status a string", ITEM("index", "\"status\":\"201\""), 1, 0},
        {"status a real", ITEM("index", "\"status\":201.0"), 1, 0},
        {"status out of range", ITEM("index", "\"status\":600"), 1, 0},
        {"status 99", ITEM("index", "\"status\":99"), 1, 0},
        {"status 0201", ITEM("index", "\"status\":0201"), 1, 0},
        {"status 2010", ITEM("index", "\"status\":2010"), 1, 0},
        {"_version negative", ITEM("index", "\"_version\":-1,\"status\":201"), 1, 0},
        {"_version real", ITEM("index", "\"_version\":1.0,\"status\":201"), 1, 0},
        {"_version exponent", ITEM("index", "\"_version\":1e2,\"status\":201"), 1, 0},
        {"_version leading zero", ITEM("index", "\"_version\":01,\"status\":201"), 1, 0},
        {"_version zero", ITEM("index", "\"_version\":0,\"_seq_no\":0,\"status\":201"), 1, 1},
        {"_seq_no 18 digits", ITEM("index", "\"_seq_no\":999999999999999999,\"status\":201"), 1, 1},
        {"_seq_no 19 digits (INT64_MAX)",
         ITEM("index", "\"_seq_no\":9223372036854775807,\"status\":201"), 1, 0},
        {"_seq_no INT64_MAX + 1", ITEM("index", "\"_seq_no\":9223372036854775808,\"status\":201"), 1, 0},
        {"_seq_no 20 digits", ITEM("index", "\"_seq_no\":18446744073709551616,\"status\":201"), 1, 0},
        {"_seq_no INT64_MIN", ITEM("index", "\"_seq_no\":-9223372036854775808,\"status\":201"), 1, 0},
        {"_primary_term true", ITEM("index", "\"_primary_term\":true,\"status\":201"), 1, 0},
        {"_index null", ITEM("index", "\"_index\":null,\"_id\":\"1\",\"status\":201"), 1, 0},
        {"_id a number", ITEM("index", "\"_id\":1,\"status\":201"), 1, 0},
        {"result null", ITEM("index", "\"result\":null,\"status\":201"), 1, 0},
        {"a duplicate _id", ITEM("index", "\"_id\":\"1\",\"_id\":\"2\",\"status\":201"), 1, 0},
        {"a duplicate status", ITEM("index", "\"status\":500,\"status\":201"), 1, 0},
        {"a duplicate status after", ITEM("index", "\"status\":201,\"status\":500"), 1, 0},
        {"a duplicate operation",
         "{\"index\":{\"status\":201},\"index\":{\"status\":500}}", 1, 0},
        {"a second member in the item", "{\"index\":{\"status\":201},\"x\":1}", 1, 0},
        {"a comma first", "{\"index\":{,\"status\":201}}", 1, 0},
        {"a comma first, then _id", "{\"index\":{,\"_id\":\"1\",\"status\":201}}", 1, 0},
        {"an escaped key", ITEM("index", "\"_\\u0069d\":\"1\",\"status\":201"), 1, 0},
        {"a 429 with error and caused_by",
         ITEM("index", "\"_index\":\"i\",\"_id\":\"1\",\"status\":429,\"error\":{\"type\":"
                       "\"es_rejected_execution_exception\",\"reason\":\"rejected execution\","
                       "\"caused_by\":{\"type\":\"x\",\"reason\":\"queue full\"}}"), 1, 0},
        {"a 409",
         ITEM("create", "\"_index\":\"i\",\"_id\":\"1\",\"status\":409,\"error\":{\"type\":"
                        "\"version_conflict_engine_exception\",\"reason\":\"[1]: version conflict, "
                        "document already exists\",\"index\":\"i\",\"shard\":\"0\"}"), 1, 0},
        {"a 400 with caused_by",
         ITEM("index", "\"_index\":\"i\",\"_id\":\"1\",\"status\":400,\"error\":{\"type\":"
                       "\"mapper_parsing_exception\",\"reason\":\"failed to parse\",\"caused_by\":"
                       "{\"type\":\"json_parse_exception\",\"reason\":\"Unexpected character\"}}"), 1, 0},
        {"error null after status", ITEM("index", "\"status\":201,\"error\":null"), 1, 0},
        {"a control character", ITEM("index", "\"_id\":\"a\x01\",\"status\":201"), 1, 0},
        {"invalid UTF-8", ITEM("index", "\"_id\":\"a\xc3\",\"status\":201"), 1, 0},
        {"a bad escape", ITEM("index", "\"_id\":\"a\\x\",\"status\":201"), 1, 0},
        {"a lone surrogate", ITEM("index", "\"_id\":\"\\ud800\",\"status\":201"), 1, 0},
        {"\\u0000", ITEM("index", "\"_id\":\"\\u0000\",\"status\":201"), 1, 0},
        {"a value without its comma",
         ITEM("index", "\"_index\":\"i\"\"_id\":\"1\",\"status\":201"), 1, 0},
        {"a brace for a comma", ITEM("index", "\"_index\":\"i\"{\"_id\":\"1\",\"status\":201"), 1, 0},
        {"a number glued to a key", ITEM("index", "\"_version\":1\"status\":201"), 1, 0},
        {"_id without a value", ITEM("index", "\"_id\":,\"status\":201"), 1, 0},
        {"_id without a value, then result",
         ITEM("index", "\"_id\":,\"result\":\"created\",\"status\":201"), 1, 0},
        {"result without a value", ITEM("index", "\"result\":,\"status\":201"), 1, 0},
        {"result without a value, then _seq_no",
         ITEM("index", "\"_id\":\"1\",\"result\":,\"_seq_no\":0,\"status\":201"), 1, 0},
        {"_version without a value", ITEM("index", "\"_version\":,\"status\":201"), 1, 0},
        {"_seq_no without a value", ITEM("index", "\"_seq_no\":,\"status\":201"), 1, 0},
        {"_primary_term without a value",
         ITEM("index", "\"_primary_term\":,\"status\":201"), 1, 0},
        {"status without a value", ITEM("index", "\"_id\":\"1\",\"status\":}"), 1, 0},
        {"too few items", ITEM("index", "\"status\":201"), 2, 0},
        {"too many items", ITEM("index", "\"status\":201") "," ITEM("index", "\"status\":201"), 1, 0},
    };
    size_t i;

    for (i = 0; i < ESBULK__ARRAY_LEN(cases); i++)
        check_want(cases[i].what, cases[i].items, cases[i].n, NULL, cases[i].quick, NULL);
}
END_TEST

/* A changed common answer of two items (what, a and b say how): the
 * common-item path takes it only if jansson reads it the same, and
 * parse_want (the common path, else the general scanner, else jansson)
 * reads it as jansson does. */
static void quick_agrees(const char *copy, size_t n, int block, const esbulk__resp_want_t *want,
                         const char *what, size_t a, size_t b)
{
    esbulk__resp_t r, slow;
    char why[4096];
    const char *d;
    esbulk_err_t qe = esbulk__response_parse_quick(200, copy, n, 2, block, want, &r);

    ck_assert_int_eq(esbulk__response_parse_slow(200, copy, n, 2, block, &slow), ESBULK_OK);
    if (qe == ESBULK_OK) {
        d = slow.klass != ESBULK__RESP_OK ? "jansson: not OK"
                                          : resp_diff(&r, &slow, why, sizeof(why));
        if (d != NULL)
            ck_abort_msg("%s (%zu, at %zu): %s", what, a, b, d);
        esbulk__response_free(&r);
    }
    ck_assert_int_eq(esbulk__response_parse_want(200, copy, n, 2, block, want, NULL, &r), ESBULK_OK);
    d = resp_diff(&r, &slow, why, sizeof(why));
    if (d != NULL)
        ck_abort_msg("%s (%zu, at %zu), parse_want: %s", what, a, b, d);
    esbulk__response_free(&r);
    esbulk__response_free(&slow);
}

/* A scratch serves the items of one answer after another: they are the
 * scratch's, it grows for a larger answer (and only then), and freeing a
 * response, or an answer cut short, leaves it to its owner. */
START_TEST(test_scratch_reused)
{
    static const char two[] = "{\"errors\":false,\"items\":[{\"index\":{\"status\":201}},"
                              "{\"index\":{\"status\":200}}]}";
    static const char three[] = "{\"errors\":true,\"items\":[{\"index\":{\"status\":201}},"
                                "{\"index\":{\"status\":201}},{\"index\":{\"status\":400,"
                                "\"error\":{\"type\":\"mapper_parsing_exception\","
                                "\"reason\":\"bad\"}}}]}";
    esbulk__resp_scratch_t sc = {NULL, 0};
    esbulk__resp_t r;
    esbulk__item_t *first;

    ck_assert_int_eq(esbulk__response_parse_want(200, two, strlen(two), 2, 0, NULL, &sc, &r),
                     ESBULK_OK);
    ck_assert_int_eq(r.klass, ESBULK__RESP_OK);
    ck_assert_ptr_nonnull(sc.items);
    ck_assert_ptr_eq(r.items, sc.items);
    ck_assert_uint_eq(sc.cap, 2);
    ck_assert_int_eq(r.items[1].status, 200);
    first = sc.items;
    esbulk__response_free(&r);

    ck_assert_int_eq(esbulk__response_parse_want(200, two, strlen(two), 2, 0, NULL, &sc, &r),
                     ESBULK_OK);
    ck_assert_ptr_eq(r.items, first);
    esbulk__response_free(&r);

    ck_assert_int_eq(esbulk__response_parse_want(200, three, strlen(three), 3, 0, NULL, &sc, &r),
                     ESBULK_OK);
    ck_assert_uint_eq(sc.cap, 3);
    ck_assert_ptr_eq(r.items, sc.items);
    ck_assert_int_eq(r.items[2].klass, ESBULK__ITEM_FAIL);
    ck_assert_str_eq(r.items[2].error_reason, "bad");
    esbulk__response_free(&r);
    first = sc.items;

    /* fewer items than the scratch holds: the same room */
    ck_assert_int_eq(esbulk__response_parse_want(200, two, strlen(two), 2, 0, NULL, &sc, &r),
                     ESBULK_OK);
    ck_assert_ptr_eq(r.items, first);
    ck_assert_uint_eq(sc.cap, 3);
    esbulk__response_free(&r);

    /* cut short: the fast path gives up after it took the scratch, and the
     * scratch stays its owner's, whole */
    ck_assert_int_eq(esbulk__response_parse_want(200, three, strlen(three) - 4, 3, 0, NULL, &sc,
                                                 &r),
                     ESBULK_OK);
    ck_assert_int_eq(r.klass, ESBULK__RESP_RETRY_AMBIGUOUS);
    ck_assert_ptr_null(r.items);
    esbulk__response_free(&r);
    ck_assert_ptr_eq(sc.items, first);
    ck_assert_int_eq(esbulk__response_parse_want(200, three, strlen(three), 3, 0, NULL, &sc, &r),
                     ESBULK_OK);
    ck_assert_ptr_eq(r.items, first);
    ck_assert_str_eq(r.items[2].error_type, "mapper_parsing_exception");
    esbulk__response_free(&r);

    esbulk__response_scratch_free(&sc);
    ck_assert_ptr_null(sc.items);
    ck_assert_uint_eq(sc.cap, 0);
}
END_TEST

/* Every cut of a common answer, and every byte of it changed: the
 * common-item path takes only what jansson reads the same. */
/* Every cut of body, every run of up to 16 bytes taken out, every byte
 * changed: the common-item path takes it only if jansson reads it the same,
 * and parse_want reads it as jansson does. */
static void cuts_and_bytes(const char *body, const esbulk__resp_want_t *want)
{
    const size_t len = strlen(body);
    static const unsigned char repl[] = {'"', '\\', ',', '}', '{', ':', '0', '9', 'x', ' ',
                                         0x01, 0x80, ']'};
    esbulk__resp_t r, slow;
    char why[4096];
    const char *d;
    size_t cut, i, k;
    char *copy;

    for (cut = 0; cut < len; cut++) {
        copy = malloc(cut + 1);
        ck_assert_ptr_nonnull(copy);
        memcpy(copy, body, cut);
        if (esbulk__response_parse_quick(200, copy, cut, 2, 0, want, &r) == ESBULK_OK)
            ck_abort_msg("cut at %zu: taken", cut);
        ck_assert_ptr_null(r.items);
        ck_assert_int_eq(esbulk__response_parse_want(200, copy, cut, 2, 0, want, NULL, &r), ESBULK_OK);
        ck_assert_int_eq(esbulk__response_parse_slow(200, copy, cut, 2, 0, &slow), ESBULK_OK);
        d = resp_diff(&r, &slow, why, sizeof(why));
        if (d != NULL)
            ck_abort_msg("cut at %zu: %s", cut, d);
        esbulk__response_free(&r);
        esbulk__response_free(&slow);
        free(copy);
    }
    copy = malloc(len);
    ck_assert_ptr_nonnull(copy);
    for (i = 0; i < len; i++)
        for (k = 1; k <= 16 && i + k <= len; k++) {
            memcpy(copy, body, i);
            memcpy(copy + i, body + i + k, len - k - i);
            quick_agrees(copy, len - k, 0, want, "bytes out", k, i);
        }
    for (i = 0; i < len; i++)
        for (k = 0; k < sizeof(repl); k++) {
            memcpy(copy, body, len);
            copy[i] = (char)repl[k];
            quick_agrees(copy, len, 1, want, "a byte changed", repl[k], i);
        }
    free(copy);
}

START_TEST(test_quick_cuts_and_bytes)
{
    static const char body[] =
        "{\"items\":[" ITEM("index", COMMON("123", "5") ",\"status\":201") ","
        ITEM("delete", "\"_index\":\"bench-micro\",\"_id\":\"9\",\"_version\":2,"
                       "\"result\":\"not_found\",\"_seq_no\":77,\"_primary_term\":3,\"status\":404")
        "]}";
    /* the default answer to documents sent with their _id: the status alone */
    static const char status_only[] =
        "{\"errors\":false,\"items\":[{\"index\":{\"status\":201}},{\"create\":{\"status\":201}}]}";
    static const char bench[] = "bench-micro";
    const esbulk__resp_want_t want[2] = {{bench, 11, "123", 3}, {bench, 11, "9", 1}};

    cuts_and_bytes(body, want);
    cuts_and_bytes(status_only, NULL);
    cuts_and_bytes(status_only, want);
}
END_TEST

/* The items most answers are made of, {"index":{"status":201}} and
 * {"create":{"status":201}}, read whole: every field as the general reading
 * gives it (check_want compares them with jansson's), nothing kept. */
START_TEST(test_status_only_items)
{
    static const char bench[] = "bench-micro";
    esbulk__resp_want_t want[4] = {{bench, 11, "1", 1}, {bench, 11, "2", 1},
                                   {bench, 11, "3", 1}, {bench, 11, "4", 1}};
    esbulk__resp_t r;
    size_t i;

    check_want("status only", "{\"index\":{\"status\":201}},{\"create\":{\"status\":201}},"
               "{\"index\":{\"status\":200}},{\"index\":{\"status\":201}}", 4, want, 1, &r);
    ck_assert_int_eq(r.klass, ESBULK__RESP_OK);
    for (i = 0; i < 4; i++) {
        ck_assert_int_eq(r.items[i].klass, ESBULK__ITEM_OK);
        ck_assert_int_eq(r.items[i].status, i == 2 ? 200 : 201);
        ck_assert_ptr_null(r.items[i].index);
        ck_assert_ptr_null(r.items[i].id);
        ck_assert_ptr_null(r.items[i].result);
        ck_assert_ptr_null(r.items[i].error_type);
        ck_assert_int_eq(r.items[i].seq_no, -1);
        ck_assert_int_eq(r.items[i].primary_term, -1);
        ck_assert_int_eq(r.items[i].version, -1);
        ck_assert_int_eq(r.items[i].result_static, 0);
    }
    esbulk__response_free(&r);
    /* the same words with something after them are not that item */
    check_want("status only, then a member",
               "{\"index\":{\"status\":201},\"x\":1},{\"create\":{\"status\":201}}", 2, NULL, 0,
               NULL);
    check_want("status only, a longer status", "{\"create\":{\"status\":2011}}", 1, NULL, 0, NULL);
    check_want("a 201 that failed",
               "{\"index\":{\"status\":201,\"error\":{\"type\":\"x\",\"reason\":\"y\"}}}", 1, NULL,
               0, NULL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("response");
    TCase *tc = tcase_create("core");
    SRunner *sr;
    int failed;

    tcase_add_loop_test(tc, test_classification, 0, (int)ESBULK__ARRAY_LEN(resp_cases));
    tcase_add_loop_test(tc, test_item_fields, 0, (int)ESBULK__ARRAY_LEN(item_cases));
    tcase_add_test(tc, test_huge_reason);
    tcase_add_test(tc, test_item_causes);
    tcase_add_test(tc, test_request_cause);
    tcase_add_test(tc, test_long_cause_kept_whole);
    tcase_add_test(tc, test_reason_cut_keeps_whole_character);
    tcase_add_test(tc, test_text_quote);
    tcase_add_test(tc, test_every_prefix);
    tcase_add_test(tc, test_status_table);
    tcase_add_test(tc, test_zero_items_and_free);
    tcase_set_timeout(tc, 60); /* test_every_prefix under valgrind */
    suite_add_tcase(s, tc);
    /* the fast path against the jansson parser */
    tc = tcase_create("paths");
    tcase_add_test(tc, test_fast_path_takes);
    tcase_add_test(tc, test_both_paths_data_files);
    tcase_add_test(tc, test_both_paths_random);
    tcase_add_test(tc, test_quick_common);
    tcase_add_test(tc, test_quick_differs);
    tcase_add_test(tc, test_quick_leaves);
    tcase_add_test(tc, test_quick_cuts_and_bytes);
    tcase_add_test(tc, test_status_only_items);
    tcase_add_test(tc, test_scratch_reused);
    tcase_set_timeout(tc, 120); /* under valgrind */
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
