/* The _bulk response parser, driven by the answers in tests/data/response/
 * (real OpenSearch 2.19 bodies where a test cluster could produce them,
 * Elasticsearch 8 and proxy bodies as those servers send them). */
#include "response.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    {"item_caused_by.json", 1, 0, 400, "x", "1", NULL, "mapper_parsing_exception",
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

/* ---------------------------------------------------------------------------
 * Bounds on what is kept. */

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

int main(void)
{
    Suite *s = suite_create("response");
    TCase *tc = tcase_create("core");
    SRunner *sr;
    int failed;

    tcase_add_loop_test(tc, test_classification, 0, (int)ESBULK__ARRAY_LEN(resp_cases));
    tcase_add_loop_test(tc, test_item_fields, 0, (int)ESBULK__ARRAY_LEN(item_cases));
    tcase_add_test(tc, test_huge_reason);
    tcase_add_test(tc, test_reason_cut_keeps_whole_character);
    tcase_add_test(tc, test_text_quote);
    tcase_add_test(tc, test_every_prefix);
    tcase_add_test(tc, test_status_table);
    tcase_add_test(tc, test_zero_items_and_free);
    tcase_set_timeout(tc, 60); /* test_every_prefix under valgrind */
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
