/* The JSON syntax check of body.validate (lib/json.c): valid and invalid
 * documents, numbers of every size, and esbulk_add sending big numbers as
 * their digits. */
#include "json.h"
#include "ndjson.h"
#include "unit_util.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

static esbulk_err_t check(const char *s)
{
    return esbulk__json_check(s, strlen(s), NULL, NULL);
}

/* Valid documents: every number is only its digits, whatever its size. */
static const char *const valid[] = {
    "{}",
    " \t\r\n{ \t\r\n} \t\r\n",
    "{\"a\":0}",
    "{\"a\":-0}",
    "{\"a\":9223372036854775807}",                 /* 2^63 - 1 */
    "{\"a\":9223372036854775808}",                 /* 2^63 */
    "{\"a\":-9223372036854775808}",                /* -2^63 */
    "{\"a\":-9223372036854775809}",                /* -2^63 - 1 */
    "{\"a\":18446744073709551615}",                /* 2^64 - 1 */
    "{\"a\":18446744073709551616}",                /* 2^64 */
    "{\"a\":-18446744073709551616}",
    "{\"a\":1e400}",
    "{\"a\":-1E-400}",
    "{\"a\":1e+999999999999999999999999}",
    "{\"a\":0.000000000000000000000000000000000000000000000000000000000001}",
    "{\"a\":12345678901234567890123456789012345678901234567890123456789012345.123456789012345678901234567890}",
    "{\"a\":1.5e-7,\"b\":0e0,\"c\":0.0E+0,\"d\":-0.5}",
    "{\"a\":[1,2,[3,{\"b\":[]}]],\"c\":{}}",
    "{\"a\":true,\"b\":false,\"c\":null}",
    "{\"a\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u0000\\u00e9\\uD83D\\uDE00\"}",
    "{\"\\u00e9t\\u00e9\":\"\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xef\xbf\xbf \xf4\x8f\xbf\xbf\"}",
    "{\"a\":1,\"b\":{\"a\":1},\"c\":[{\"a\":1},{\"a\":2}]}", /* the same key in other objects */
    "{\"a\":1,\"A\":2,\"a \":3,\"\\u0062\":4}",
    "{\"k1\":1,\"k2\":2,\"k3\":3,\"k4\":4,\"k5\":5,\"k6\":6,\"k7\":7,\"k8\":8,\"k9\":9,\"k10\":0}",
};

/* Invalid documents, each with the reason. */
static const char *const invalid[] = {
    "",
    "   ",
    "[]",
    "\"s\"",
    "1",
    "{",
    "}",
    "{\"a\"}",
    "{\"a\":}",
    "{\"a\" 1}",
    "{a:1}",
    "{'a':1}",
    "{\"a\":1,}",
    "{,\"a\":1}",
    "{,}",
    "{\"a\":1 \"b\":2}",
    "{\"a\":[1,]}",
    "{\"a\":[,1]}",
    "{\"a\":[}",
    "{\"a\":{]}",
    "{\"a\":[1}",
    "{\"a\":01}",           /* leading zeros */
    "{\"a\":-01}",
    "{\"a\":00}",
    "{\"a\":+1}",
    "{\"a\":1.}",
    "{\"a\":.5}",
    "{\"a\":-.5}",
    "{\"a\":1e}",
    "{\"a\":1e+}",
    "{\"a\":1E-}",
    "{\"a\":1.e5}",
    "{\"a\":-}",            /* bare minus */
    "{\"a\":--1}",
    "{\"a\":NaN}",
    "{\"a\":-Infinity}",
    "{\"a\":Infinity}",
    "{\"a\":0x10}",
    "{\"a\":1_000}",
    "{\"a\":tru}",
    "{\"a\":True}",
    "{\"a\":nul}",
    "{\"a\":\"x}",
    "{\"a\":\"\\x\"}",      /* escapes */
    "{\"a\":\"\\u12\"}",
    "{\"a\":\"\\u12G4\"}",
    "{\"a\":\"\\uD800\"}",  /* a lone surrogate */
    "{\"a\":\"\\uDC00\"}",
    "{\"a\":\"\\uD800\\u0041\"}",
    "{\"a\":\"\\uD800x\"}",
    "{\"a\":\"\\\"}",
    "{\"a\":\"tab\there\"}", /* a raw control byte */
    "{\"a\":\"nl\nhere\"}",
    "{\"a\":\"\xff\"}",     /* invalid UTF-8 */
    "{\"a\":\"\xc0\x80\"}", /* overlong */
    "{\"a\":\"\xc3\"}",     /* cut */
    "{\"a\":\"\xe2\x82\"}",
    "{\"a\":\"\xed\xa0\x80\"}", /* an encoded surrogate */
    "{\"a\":\"\xf4\x90\x80\x80\"}", /* past U+10FFFF */
    "{\"a\":\"\x80\"}",
    "{\"\xff\":1}",
    "{\"a\":1}x",           /* trailing garbage */
    "{\"a\":1}{}",
    "{\"a\":1},",
    "{\"a\":1}]",
    "{\"a\":1}\x0b",        /* not JSON white space */
    "\xef\xbb\xbf{}",       /* a byte order mark */
    "{\"a\":1,\"a\":2}",    /* a key twice */
    "{\"a\":1,\"b\":{\"c\":1,\"c\":2}}",
    "{\"a\":1,\"\\u0061\":2}",
    "{\"\xc3\xa9\":1,\"\\u00e9\":2}",
    "{\"k1\":1,\"k2\":2,\"k3\":3,\"k4\":4,\"k5\":5,\"k6\":6,\"k7\":7,\"k8\":8,\"k9\":9,\"k1\":0}",
};

START_TEST(test_valid)
{
    const char *s = valid[_i];

    ck_assert_msg(check(s) == ESBULK_OK, "refused: %s", s);
}
END_TEST

START_TEST(test_invalid)
{
    const char *s = invalid[_i], *what = NULL;
    size_t pos = (size_t)-1;

    ck_assert_msg(esbulk__json_check(s, strlen(s), &what, &pos) == ESBULK_ERR_INVALID_JSON,
                  "accepted: %s", s);
    ck_assert_ptr_nonnull(what);
    ck_assert_uint_le(pos, strlen(s));
}
END_TEST

/* No NUL-termination is read: the check stops at len. */
START_TEST(test_length_bound)
{
    ck_assert_int_eq(esbulk__json_check("{\"a\":1}garbage", 7, NULL, NULL), ESBULK_OK);
    ck_assert_int_eq(esbulk__json_check("{\"a\":12", 6, NULL, NULL), ESBULK_ERR_INVALID_JSON);
    ck_assert_int_eq(esbulk__json_check("{\"a\":\"\\u00e9\"}", 10, NULL, NULL),
                     ESBULK_ERR_INVALID_JSON);
    /* a NUL byte inside a string is a control character */
    ck_assert_int_eq(esbulk__json_check("{\"a\":\"\0\"}", 9, NULL, NULL), ESBULK_ERR_INVALID_JSON);
}
END_TEST

/* Where it went wrong, and why. */
START_TEST(test_position)
{
    const char *what = NULL;
    size_t pos = 0;

    ck_assert_int_eq(esbulk__json_check("{\"a\": 01}", 9, &what, &pos), ESBULK_ERR_INVALID_JSON);
    ck_assert_uint_eq(pos, 6);
    ck_assert_str_eq(what, "invalid number (leading zero)");
    ck_assert_int_eq(esbulk__json_check("{\"a\":1,\"a\":2}", 13, &what, &pos),
                     ESBULK_ERR_INVALID_JSON);
    ck_assert_uint_eq(pos, 7);
    ck_assert_str_eq(what, "duplicate key in object");
}
END_TEST

/* Numbers built digit by digit: every length from 1 to 400, integer,
 * negative, with a fraction and an exponent, all valid. */
START_TEST(test_numbers_every_size)
{
    char doc[1024];
    int len, k;

    for (len = 1; len <= 400; len++) {
        for (k = 0; k < 4; k++) {
            size_t o = (size_t)snprintf(doc, sizeof(doc), "{\"n\":%s", k == 1 ? "-" : "");
            int d;

            for (d = 0; d < len; d++)
                doc[o++] = (char)('1' + (d % 9));
            if (k == 2)
                o += (size_t)snprintf(doc + o, sizeof(doc) - o, ".%0*d", len % 50 + 1, 7);
            if (k == 3)
                o += (size_t)snprintf(doc + o, sizeof(doc) - o, "e%d", len * 1000);
            doc[o++] = '}';
            doc[o] = '\0';
            ck_assert_msg(esbulk__json_check(doc, o, NULL, NULL) == ESBULK_OK, "refused: %s", doc);
        }
    }
}
END_TEST

/* Nesting up to the limit is valid, one more level is not: arrays,
 * objects, and the two mixed. */
static size_t nested(char *out, int levels, int kind)
{
    size_t o = 0;
    int i;

    out[o++] = '{';
    out[o++] = '"';
    out[o++] = 'a';
    out[o++] = '"';
    out[o++] = ':';
    for (i = 1; i < levels; i++) {
        int obj = kind == 1 || (kind == 2 && i % 2);

        if (obj) {
            memcpy(out + o, "{\"a\":", 5);
            o += 5;
        } else {
            out[o++] = '[';
        }
    }
    out[o++] = '1';
    for (i = levels - 1; i >= 1; i--) {
        int obj = kind == 1 || (kind == 2 && i % 2);

        out[o++] = obj ? '}' : ']';
    }
    out[o++] = '}';
    return o;
}

START_TEST(test_depth_limit)
{
    char *buf = malloc(6 * (ESBULK__JSON_MAX_DEPTH + 2) + 16);
    int kind;

    ck_assert_ptr_nonnull(buf);
    for (kind = 0; kind < 3; kind++) {
        size_t n = nested(buf, ESBULK__JSON_MAX_DEPTH, kind);
        const char *what = NULL;

        ck_assert_int_eq(esbulk__json_check(buf, n, NULL, NULL), ESBULK_OK);
        n = nested(buf, ESBULK__JSON_MAX_DEPTH + 1, kind);
        ck_assert_int_eq(esbulk__json_check(buf, n, &what, NULL), ESBULK_ERR_INVALID_JSON);
        ck_assert_str_eq(what, "nested too deep");
    }
    free(buf);
}
END_TEST

/* Many keys in one object (past the check's on-stack room and its sort), a
 * duplicate at the end found, and nested objects' keys kept apart. */
START_TEST(test_many_keys)
{
    esbulk__buf_t b;
    char k[64];
    int i;

    esbulk__buf_init(&b, (size_t)-1);
    ck_assert_int_eq(esbulk__buf_addc(&b, '{'), ESBULK_OK);
    for (i = 0; i < 3000; i++) {
        snprintf(k, sizeof(k), "%s\"k%d\":{\"k%d\":%d,\"x\":[{\"x\":1}]}", i ? "," : "", i,
                 i, i);
        ck_assert_int_eq(esbulk__buf_adds(&b, k), ESBULK_OK);
    }
    ck_assert_int_eq(esbulk__buf_addc(&b, '}'), ESBULK_OK);
    ck_assert_int_eq(esbulk__json_check(b.data, b.len, NULL, NULL), ESBULK_OK);
    b.len--;
    ck_assert_int_eq(esbulk__buf_adds(&b, ",\"k1234\":0}"), ESBULK_OK);
    ck_assert_int_eq(esbulk__json_check(b.data, b.len, NULL, NULL), ESBULK_ERR_INVALID_JSON);
    b.len -= 5;
    ck_assert_int_eq(esbulk__buf_adds(&b, "\\u0034\":0}"), ESBULK_OK); /* "k123\u0034" */
    ck_assert_int_eq(esbulk__json_check(b.data, b.len, NULL, NULL), ESBULK_ERR_INVALID_JSON);
    esbulk__buf_free(&b);
}
END_TEST

/* body.validate's body line: the number's digits as they came. */
START_TEST(test_body_line_keeps_digits)
{
    static const char body[] = "{\"u\":18446744073709551615,\"big\":1e400,"
                               "\"neg\":-98765432109876543210987654321,\"d\":0.1000000000000000000001}";
    char errstr[256];
    esbulk__buf_t b;

    esbulk__buf_init(&b, (size_t)-1);
    ck_assert_int_eq(esbulk__body_line(&b, body, strlen(body), 1, errstr, sizeof(errstr)),
                     ESBULK_OK);
    ck_assert_uint_eq(b.len, strlen(body) + 1);
    ck_assert_int_eq(memcmp(b.data, body, strlen(body)), 0);
    esbulk__buf_reset(&b);
    ck_assert_int_eq(esbulk__body_line(&b, "{\"a\":01}", 8, 1, errstr, sizeof(errstr)),
                     ESBULK_ERR_INVALID_JSON);
    ck_assert_str_eq(errstr, "body is not valid JSON: invalid number (leading zero) at byte 5");
    esbulk__buf_free(&b);
}
END_TEST

static struct {
    int n;
    char body[4][600];
    esbulk_err_t err[4];
} got;

static void on_result(esbulk_t *eb, const esbulk_result_t *r, void *opaque)
{
    size_t len = 0;
    const char *body = esbulk_result_body(r, &len);

    (void)eb;
    (void)opaque;
    if (got.n < 4) {
        ck_assert_uint_lt(len, sizeof(got.body[0]));
        memcpy(got.body[got.n], body ? body : "", body ? len : 0);
        got.body[got.n][body ? len : 0] = '\0';
        got.err[got.n] = esbulk_result_err(r);
    }
    got.n++;
}

/* esbulk_add with body.validate=true takes 2^64 and 10^400, and its
 * result's body (result.keep_body) is the body given, byte for byte; an
 * invalid number is still refused. */
START_TEST(test_add_validate_big_numbers)
{
    char ten400[520], errstr[256];
    const char *docs[3];
    esbulk_conf_t *conf = dead_conf("3000", "10", "100", "0");
    esbulk_t *eb;
    size_t o;
    int i;

    o = (size_t)snprintf(ten400, sizeof(ten400), "{\"n\":1");
    for (i = 0; i < 400; i++)
        ten400[o++] = '0';
    memcpy(ten400 + o, "}", 2);
    docs[0] = "{\"n\":18446744073709551616}";
    docs[1] = ten400;
    docs[2] = "{\"n\":-18446744073709551616.5e-3,\"m\":[9223372036854775808]}";
    ck_assert_int_eq(esbulk_conf_set(conf, "body.validate", "true", NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "result.keep_body", "true", NULL, 0), 0);
    esbulk_conf_set_result_cb(conf, on_result);
    eb = esbulk_new(conf, errstr, sizeof(errstr));
    ck_assert_msg(eb != NULL, "%s", errstr);
    esbulk_conf_destroy(conf);
    memset(&got, 0, sizeof(got));
    for (i = 0; i < 3; i++) {
        char id[8];

        snprintf(id, sizeof(id), "d%d", i);
        ck_assert_msg(esbulk_add(eb, ESBULK_OP_INDEX, "idx", id, strlen(id), NULL, 0, docs[i],
                                 strlen(docs[i]), NULL, errstr, sizeof(errstr)) == ESBULK_OK,
                      "refused %s: %s", docs[i], errstr);
    }
    ck_assert_int_eq(esbulk_add(eb, ESBULK_OP_INDEX, "idx", "x", 1, NULL, 0, "{\"n\":1.}", 8,
                                NULL, errstr, sizeof(errstr)), ESBULK_ERR_INVALID_JSON);
    /* the dead port fails them (retry.max 0): each result keeps its body */
    esbulk_flush(eb, 20000);
    ck_assert_int_eq(got.n, 3);
    for (i = 0; i < 3; i++) {
        int k, found = 0;

        for (k = 0; k < 3; k++)
            found += strcmp(got.body[k], docs[i]) == 0;
        ck_assert_msg(found == 1, "body of %s not kept exactly", docs[i]);
    }
    esbulk_destroy(eb);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("json");
    TCase *pure = tcase_create("pure"), *handle = tcase_create("handle");
    SRunner *sr;
    int failed;

    tcase_add_loop_test(pure, test_valid, 0, (int)(sizeof(valid) / sizeof(valid[0])));
    tcase_add_loop_test(pure, test_invalid, 0, (int)(sizeof(invalid) / sizeof(invalid[0])));
    tcase_add_test(pure, test_length_bound);
    tcase_add_test(pure, test_position);
    tcase_add_test(pure, test_numbers_every_size);
    tcase_add_test(pure, test_depth_limit);
    tcase_add_test(pure, test_many_keys);
    tcase_add_test(pure, test_body_line_keeps_digits);
    tcase_set_timeout(handle, 60);
    tcase_add_test(handle, test_add_validate_big_numbers);
    suite_add_tcase(s, pure);
    suite_add_tcase(s, handle);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
