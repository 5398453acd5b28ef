/* Configuration: defaults, typed validation, errors, secrets, dup. */
#include "conf.h"
#include "http.h"

#include <check.h>
#include <stdio.h>
#include <string.h>

START_TEST(test_defaults_and_set)
{
    esbulk_conf_t *conf = esbulk_conf_new();
    char buf[256], errstr[256];
    size_t len;

    ck_assert_ptr_nonnull(conf);
    ck_assert_int_eq(esbulk_conf_get(conf, "request.timeout.ms", buf, sizeof(buf), &len), ESBULK_OK);
    ck_assert_str_eq(buf, "30000");
    ck_assert_int_eq(len, 5);
    ck_assert_int_eq(esbulk_conf_set(conf, "request.timeout.ms", "1500", errstr, sizeof(errstr)),
                     ESBULK_OK);
    ck_assert_int_eq(esbulk__conf_int(conf, ESBULK__C_REQUEST_TIMEOUT_MS), 1500);
    ck_assert_int_eq(esbulk_conf_set(conf, "tls.insecure", "yes", errstr, sizeof(errstr)), ESBULK_OK);
    ck_assert_int_eq(esbulk__conf_int(conf, ESBULK__C_TLS_INSECURE), 1);
    ck_assert_int_eq(esbulk_conf_set(conf, "urls", "http://a:1,http://b:2", errstr, sizeof(errstr)),
                     ESBULK_OK);
    ck_assert_str_eq(esbulk__conf_str(conf, ESBULK__C_URLS), "http://a:1,http://b:2");
    /* buffer.max.docs: 0 (sized by the cluster) by default, and settable back to it */
    ck_assert_int_eq(esbulk_conf_get(conf, "buffer.max.docs", buf, sizeof(buf), &len), ESBULK_OK);
    ck_assert_str_eq(buf, "0");
    ck_assert_int_eq(esbulk_conf_set(conf, "buffer.max.docs", "500", errstr, sizeof(errstr)),
                     ESBULK_OK);
    ck_assert_int_eq(esbulk_conf_set(conf, "buffer.max.docs", "0", errstr, sizeof(errstr)),
                     ESBULK_OK);
    ck_assert_int_eq(esbulk_conf_set(conf, "buffer.max.docs", "-1", errstr, sizeof(errstr)),
                     ESBULK_ERR_BAD_VALUE);
    esbulk_conf_destroy(conf);
}
END_TEST

START_TEST(test_errors)
{
    esbulk_conf_t *conf = esbulk_conf_new();
    char buf[4], errstr[256];
    size_t len = 0;

    ck_assert_int_eq(esbulk_conf_set(conf, "no.such.key", "1", errstr, sizeof(errstr)),
                     ESBULK_ERR_UNKNOWN_KEY);
    ck_assert_ptr_nonnull(strstr(errstr, "no.such.key"));
    ck_assert_int_eq(esbulk_conf_set(conf, "request.timeout.ms", "abc", errstr, sizeof(errstr)),
                     ESBULK_ERR_BAD_VALUE);
    ck_assert_ptr_nonnull(strstr(errstr, "integer"));
    ck_assert_int_eq(esbulk_conf_set(conf, "request.timeout.ms", "0", errstr, sizeof(errstr)),
                     ESBULK_ERR_BAD_VALUE);
    ck_assert_ptr_nonnull(strstr(errstr, "out of range"));
    ck_assert_int_eq(esbulk_conf_set(conf, "request.timeout.ms", "12x", errstr, sizeof(errstr)),
                     ESBULK_ERR_BAD_VALUE);
    ck_assert_int_eq(esbulk_conf_set(conf, "tls.insecure", "maybe", errstr, sizeof(errstr)),
                     ESBULK_ERR_BAD_VALUE);
    ck_assert_int_eq(esbulk_conf_set(conf, NULL, "1", errstr, sizeof(errstr)), ESBULK_ERR_INVALID_ARG);
    /* the value is unchanged after an error */
    ck_assert_int_eq(esbulk__conf_int(conf, ESBULK__C_REQUEST_TIMEOUT_MS), 30000);
    /* errstr of size 0 is fine */
    ck_assert_int_eq(esbulk_conf_set(conf, "nope", "1", NULL, 0), ESBULK_ERR_UNKNOWN_KEY);
    /* a too-small destination says how much is needed */
    ck_assert_int_eq(esbulk_conf_get(conf, "request.timeout.ms", buf, sizeof(buf), &len),
                     ESBULK_ERR_TOO_LARGE);
    ck_assert_int_eq(len, 5);
    ck_assert_int_eq(esbulk_conf_get(conf, "nope", buf, sizeof(buf), &len), ESBULK_ERR_UNKNOWN_KEY);
    esbulk_conf_destroy(conf);
}
END_TEST

/* The named constants the engine compares with stand where their names do
 * in the keys' "a|b|c" lists. */
START_TEST(test_enum_constants)
{
    static const struct {
        esbulk__cid_t id;
        int v;
        const char *name;
    } t[] = {
        {ESBULK__C_ROUTING_LEVEL, ESBULK__ROUTING_NODE, "node"},
        {ESBULK__C_ROUTING_LEVEL, ESBULK__ROUTING_SHARD, "shard"},
        {ESBULK__C_ROUTING_LEVEL, ESBULK__ROUTING_OFF, "off"},
        {ESBULK__C_ID_GENERATE, ESBULK__IDGEN_NONE, "none"},
        {ESBULK__C_ID_GENERATE, ESBULK__IDGEN_TIME, "time"},
        {ESBULK__C_ID_GENERATE, ESBULK__IDGEN_CONTENT, "content"},
        {ESBULK__C_COMPRESSION, ESBULK__COMPRESS_NONE, "none"},
        {ESBULK__C_COMPRESSION, ESBULK__COMPRESS_GZIP, "gzip"},
        {ESBULK__C_ORDERING, ESBULK__ORDER_NONE, "none"},
        {ESBULK__C_ORDERING, ESBULK__ORDER_PER_ID, "per_id"},
        {ESBULK__C_BULK_REFRESH, ESBULK__REFRESH_FALSE, "false"},
        {ESBULK__C_BULK_REFRESH, ESBULK__REFRESH_TRUE, "true"},
        {ESBULK__C_BULK_REFRESH, ESBULK__REFRESH_WAIT_FOR, "wait_for"},
    };
    size_t i;
    esbulk_conf_t *c = esbulk_conf_new();

    for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        const char *name = esbulk__conf_enum_name(t[i].id, t[i].v);
        ck_assert_msg(name != NULL && strcmp(name, t[i].name) == 0, "%s: %d is \"%s\", not %s",
                      esbulk__conf_key_at((int)t[i].id), t[i].v, name ? name : "(none)",
                      t[i].name);
        /* and setting the name yields the constant */
        ck_assert_int_eq(esbulk_conf_set(c, esbulk__conf_key_at((int)t[i].id), t[i].name, NULL, 0),
                         ESBULK_OK);
        ck_assert_int_eq(esbulk__conf_int(c, t[i].id), t[i].v);
    }
    /* each list has no more names than constants */
    ck_assert_ptr_null(esbulk__conf_enum_name(ESBULK__C_ROUTING_LEVEL, ESBULK__ROUTING_OFF + 1));
    ck_assert_ptr_null(esbulk__conf_enum_name(ESBULK__C_ID_GENERATE, ESBULK__IDGEN_CONTENT + 1));
    ck_assert_ptr_null(esbulk__conf_enum_name(ESBULK__C_COMPRESSION, ESBULK__COMPRESS_GZIP + 1));
    ck_assert_ptr_null(esbulk__conf_enum_name(ESBULK__C_ORDERING, ESBULK__ORDER_PER_ID + 1));
    ck_assert_ptr_null(esbulk__conf_enum_name(ESBULK__C_BULK_REFRESH, ESBULK__REFRESH_WAIT_FOR + 1));
    ck_assert_ptr_null(esbulk__conf_enum_name(ESBULK__C_URLS, 0));
    esbulk_conf_destroy(c);
}
END_TEST

START_TEST(test_secrets_redacted_and_dup)
{
    esbulk_conf_t *conf = esbulk_conf_new(), *dup;
    char buf[64];

    ck_assert_int_eq(esbulk_conf_get(conf, "auth.password", buf, sizeof(buf), NULL), ESBULK_OK);
    ck_assert_str_eq(buf, "");
    ck_assert_int_eq(esbulk_conf_set(conf, "auth.password", "hunter2", NULL, 0), ESBULK_OK);
    ck_assert_int_eq(esbulk_conf_get(conf, "auth.password", buf, sizeof(buf), NULL), ESBULK_OK);
    ck_assert_str_eq(buf, "[redacted]");
    ck_assert_int_eq(esbulk_conf_set(conf, "auth.api_key", "k", NULL, 0), ESBULK_OK);
    ck_assert_int_eq(esbulk_conf_get(conf, "auth.api_key", buf, sizeof(buf), NULL), ESBULK_OK);
    ck_assert_str_eq(buf, "[redacted]");
    esbulk_conf_set(conf, "log.level", "7", NULL, 0);
    esbulk_conf_set_opaque(conf, buf);
    dup = esbulk_conf_dup(conf);
    ck_assert_ptr_nonnull(dup);
    ck_assert_str_eq(esbulk__conf_str(dup, ESBULK__C_AUTH_PASSWORD), "hunter2");
    ck_assert_int_eq(esbulk__conf_int(dup, ESBULK__C_LOG_LEVEL), 7);
    ck_assert_ptr_eq(dup->opaque, buf);
    esbulk_conf_set(conf, "log.level", "3", NULL, 0);
    ck_assert_int_eq(esbulk__conf_int(dup, ESBULK__C_LOG_LEVEL), 7); /* deep copy */
    esbulk_conf_destroy(conf);
    esbulk_conf_destroy(dup);
    esbulk_conf_destroy(NULL);
}
END_TEST

/* http.headers: the lines a value holds, in order, as name=value pairs
 * joined by '|', or "ERR" when esbulk__header_next refuses one. */
static const char *header_lines(const char *value, char *out, size_t size, char *errstr,
                                size_t errstr_size)
{
    esbulk__header_t h;
    const char *p = value;
    size_t n = 0;
    int rc;

    out[0] = '\0';
    while ((rc = esbulk__header_next(&p, &h, errstr, errstr_size)) > 0)
        n += (size_t)snprintf(out + n, size - n, "%s%.*s=%.*s", n > 0 ? "|" : "",
                              (int)h.name_len, h.name, (int)h.value_len, h.value);
    return rc < 0 ? "ERR" : out;
}

START_TEST(test_http_headers_parsed)
{
    char out[256], errstr[256];

    ck_assert_str_eq(header_lines("", out, sizeof(out), errstr, sizeof(errstr)), "");
    ck_assert_str_eq(header_lines("X-Opaque-Id: job-7", out, sizeof(out), errstr, sizeof(errstr)),
                     "X-Opaque-Id=job-7");
    /* CRLF or LF between lines, blank lines skipped, blanks around values
     * dropped, an empty value kept, tabs inside a value kept */
    ck_assert_str_eq(header_lines("X-A:1\r\nX-B:\n\n \t\nsecuritytenant:  global \t\n"
                                  "X-C: a\tb\n",
                                  out, sizeof(out), errstr, sizeof(errstr)),
                     "X-A=1|X-B=|securitytenant=global|X-C=a\tb");
}
END_TEST

START_TEST(test_http_headers_refused)
{
    static const struct {
        const char *value, *says;
    } bad[] = {
        {"X-Opaque-Id job-7", "has no ':'"},
        {" X-A: 1", "does not start with a name"},
        {": v", "does not start with a name"},
        {"X A: 1", "a byte an HTTP name cannot"},
        {"X-A: 1\nX(B): 2", "a byte an HTTP name cannot"},
        {"X-A: a\rb", "X-A holds a control byte (0x0d)"},
        {"X-A: a\001", "X-A holds a control byte (0x01)"},
        {"X-A: a\177", "X-A holds a control byte (0x7f)"},
        {"X-A: 1\nauthorization: Basic c2VjcmV0", "authorization is the library's to set: use "
                                                  "auth.username"},
        {"Accept-Encoding: gzip", "use compression"},
        {"CONTENT-TYPE: text/plain", "CONTENT-TYPE is the library's to set"},
        {"Host: elsewhere", "Host is the library's to set"},
        {"Transfer-Encoding: chunked", "library's to set"},
        {"Expect: 100-continue", "library's to set"},
    };
    esbulk_conf_t *conf = esbulk_conf_new();
    char out[256], errstr[256];
    size_t i;

    ck_assert_ptr_nonnull(conf);
    ck_assert_int_eq(esbulk_conf_set(conf, "http.headers", "X-Opaque-Id: ok", errstr,
                                     sizeof(errstr)), ESBULK_OK);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        errstr[0] = '\0';
        ck_assert_str_eq(header_lines(bad[i].value, out, sizeof(out), errstr, sizeof(errstr)),
                         "ERR");
        ck_assert_msg(strstr(errstr, bad[i].says) != NULL, "\"%s\": %s", bad[i].value, errstr);
        ck_assert_msg(strstr(errstr, "http.headers") != NULL, "%s", errstr);
        /* the key is secret: no value in the message */
        ck_assert_ptr_null(strstr(errstr, "c2VjcmV0"));
        ck_assert_ptr_null(strstr(errstr, "gzip"));
        ck_assert_ptr_null(strstr(errstr, "elsewhere"));
        /* refused by esbulk_conf_set, which keeps the value it had */
        ck_assert_int_eq(esbulk_conf_set(conf, "http.headers", bad[i].value, NULL, 0),
                         ESBULK_ERR_BAD_VALUE);
        ck_assert_str_eq(esbulk__conf_str(conf, ESBULK__C_HTTP_HEADERS), "X-Opaque-Id: ok");
    }
    /* secret: read back redacted */
    ck_assert_int_eq(esbulk_conf_get(conf, "http.headers", out, sizeof(out), NULL), ESBULK_OK);
    ck_assert_str_eq(out, "[redacted]");
    esbulk_conf_destroy(conf);
}
END_TEST

/* auth.aws.*: each value checked when set, a secret's never repeated; the
 * keys together checked when a handle's options are made. */
START_TEST(test_aws_keys)
{
    static const struct {
        const char *key, *value, *says;
    } bad[] = {
        {"auth.aws.region", "eu west-1", "is not a name of letters"},
        {"auth.aws.region", "eu-west-1\n", "is not a name of letters"},
        {"auth.aws.service", "", "empty (\"es\""},
        {"auth.aws.service", "es/x", "is not a name"},
        {"auth.aws.access_key_id", "AKIA-EXAMPLE", "is not an access key id"},
        {"auth.aws.secret_access_key", "s3cr3t\n", "holds a control byte (a line break"},
        {"auth.aws.secret_access_key", "s3cr3t x", "holds a space"},
        {"auth.aws.session_token", "t0k3n\r\nX-Evil: 1", "holds a control byte"},
        /* sent in the Authorization line as they are: a line break would
         * start a header of the value's choosing */
        {"auth.api_key", "s3cr3t\r\nX-Evil: 1", "holds a control byte"},
        {"auth.api_key", "s3cr3t x", "holds a space"},
        {"auth.bearer", "t0k3n\n", "holds a control byte (a line break"},
        /* Basic: curl encodes them, but RFC 7617 takes neither */
        {"auth.password", "s3cr3t\n", "holds a control byte (a line break"},
        {"auth.username", "us:er", "holds a ':'"},
        {"auth.username", "user\t", "holds a control byte"},
    };
    static const struct {
        const char *set[5][2];
        const char *says; /* NULL: taken */
    } sets[] = {
        {{{"auth.aws.region", "eu-west-1"}, {"auth.aws.access_key_id", "AKIDEXAMPLE"},
          {"auth.aws.secret_access_key", "s3cr3t"}}, NULL},
        {{{"auth.aws.region", "eu-west-1"}, {"auth.aws.access_key_id", "AKIDEXAMPLE"},
          {"auth.aws.secret_access_key", "s3cr3t"}, {"auth.username", "u"}},
         "set only one of auth.username"},
        {{{"auth.aws.region", "eu-west-1"}, {"auth.aws.access_key_id", "AKIDEXAMPLE"},
          {"auth.aws.secret_access_key", "s3cr3t"}, {"auth.api_key", "k"}},
         "set only one of auth.username"},
        {{{"auth.aws.access_key_id", "AKIDEXAMPLE"}, {"auth.aws.secret_access_key", "s3cr3t"}},
         "auth.aws.region is not"},
        {{{"auth.aws.session_token", "t0k3n"}}, "auth.aws.region is not"},
        {{{"auth.aws.region", "eu-west-1"}, {"auth.aws.secret_access_key", "s3cr3t"}},
         "needs auth.aws.access_key_id and auth.aws.secret_access_key"},
        {{{"auth.aws.region", "eu-west-1"}, {"auth.aws.access_key_id", "AKIDEXAMPLE"}},
         "needs auth.aws.access_key_id and auth.aws.secret_access_key"},
    };
    esbulk_conf_t *conf = esbulk_conf_new();
    char errstr[256], out[64];
    size_t i, k;

    ck_assert_ptr_nonnull(conf);
    ck_assert_str_eq(esbulk__conf_str(conf, ESBULK__C_AUTH_AWS_SERVICE), "es");
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        errstr[0] = '\0';
        ck_assert_int_eq(esbulk_conf_set(conf, bad[i].key, bad[i].value, errstr, sizeof(errstr)),
                         ESBULK_ERR_BAD_VALUE);
        ck_assert_msg(strstr(errstr, bad[i].says) != NULL, "%s: %s", bad[i].key, errstr);
        ck_assert_msg(strstr(errstr, bad[i].key) != NULL, "%s", errstr);
        ck_assert_ptr_null(strstr(errstr, "s3cr3t"));
        ck_assert_ptr_null(strstr(errstr, "t0k3n"));
    }
    /* a password may hold blanks and a ':' */
    ck_assert_int_eq(esbulk_conf_set(conf, "auth.password", "s3 cr:3t", NULL, 0), ESBULK_OK);
    ck_assert_int_eq(esbulk_conf_set(conf, "auth.aws.service", "aoss", NULL, 0), ESBULK_OK);
    ck_assert_int_eq(esbulk_conf_set(conf, "auth.aws.secret_access_key", "s3cr3t", NULL, 0),
                     ESBULK_OK);
    ck_assert_int_eq(esbulk_conf_get(conf, "auth.aws.secret_access_key", out, sizeof(out), NULL),
                     ESBULK_OK);
    ck_assert_str_eq(out, "[redacted]");
    ck_assert_int_eq(esbulk_conf_set(conf, "auth.aws.session_token", "t0k3n/+=", NULL, 0),
                     ESBULK_OK);
    ck_assert_int_eq(esbulk_conf_get(conf, "auth.aws.session_token", out, sizeof(out), NULL),
                     ESBULK_OK);
    ck_assert_str_eq(out, "[redacted]");
    /* the signing headers are the library's */
    ck_assert_int_eq(esbulk_conf_set(conf, "http.headers", "x-amz-date: 20150830T123600Z",
                                     errstr, sizeof(errstr)), ESBULK_ERR_BAD_VALUE);
    ck_assert_msg(strstr(errstr, "auth.aws.*") != NULL, "%s", errstr);
    ck_assert_int_eq(esbulk_conf_set(conf, "http.headers", "X-Amz-Security-Token: t",
                                     errstr, sizeof(errstr)), ESBULK_ERR_BAD_VALUE);
    ck_assert_msg(strstr(errstr, "auth.aws.session_token") != NULL, "%s", errstr);
    esbulk_conf_destroy(conf);

    for (i = 0; i < sizeof(sets) / sizeof(sets[0]); i++) {
        esbulk__http_opts_t opts;
        esbulk_err_t err;

        conf = esbulk_conf_new();
        ck_assert_ptr_nonnull(conf);
        for (k = 0; k < 5 && sets[i].set[k][0] != NULL; k++)
            ck_assert_int_eq(esbulk_conf_set(conf, sets[i].set[k][0], sets[i].set[k][1], NULL, 0),
                             ESBULK_OK);
        errstr[0] = '\0';
        err = esbulk__http_opts_init(&opts, conf, NULL, NULL, errstr, sizeof(errstr));
        if (sets[i].says == NULL) {
            ck_assert_int_eq(err, ESBULK_OK);
            ck_assert_str_eq(opts.aws.region, "eu-west-1");
            ck_assert_str_eq(opts.aws.service, "es");
            ck_assert_str_eq(opts.aws.key_id, "AKIDEXAMPLE");
            ck_assert_str_eq(opts.aws.secret, "s3cr3t");
            ck_assert_ptr_null(opts.aws.token);
            esbulk__http_opts_free(&opts);
        } else {
            ck_assert_int_eq(err, ESBULK_ERR_BAD_VALUE);
            ck_assert_msg(strstr(errstr, sets[i].says) != NULL, "set %zu: %s", i, errstr);
            ck_assert_ptr_null(strstr(errstr, "s3cr3t"));
        }
        esbulk_conf_destroy(conf);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("conf");
    TCase *tc = tcase_create("core");
    SRunner *sr;
    int failed;

    tcase_add_test(tc, test_defaults_and_set);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_secrets_redacted_and_dup);
    tcase_add_test(tc, test_enum_constants);
    tcase_add_test(tc, test_http_headers_parsed);
    tcase_add_test(tc, test_http_headers_refused);
    tcase_add_test(tc, test_aws_keys);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
