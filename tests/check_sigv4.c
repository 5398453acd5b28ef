/* AWS SigV4 signing (lib/sigv4.c): the canonical request, the URL sent and
 * the signature, against what AWS's own SDK computes for the same request.
 * The expected canonical requests and signatures were computed with botocore
 * 1.29 (SigV4Auth.canonical_request / string_to_sign / signature, the
 * request's context timestamp set to 20150830T123600Z) on the URL this
 * library sends; botocore is what opensearch-py signs with. */
#include "sigv4.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#define KEY_ID "AKIDEXAMPLE"
#define SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define WHEN ((time_t)1440938160) /* 2015-08-30T12:36:00Z */

typedef struct {
    const char *method, *url, *body, *region, *service, *token;
    const char *wire_url, *canonical, *signature;
    const char *host; /* the Host line's value; NULL: the URL's authority */
} case_t;

static const case_t cases[] = {
    /* a bulk request: the query's ',' and '*' encoded, its pairs sorted */
    {"POST", "http://127.0.0.1:19200/_bulk?timeout=25000ms&filter_path=items.*.status,error.type",
     "{\"index\":{}}\n{}\n", "eu-west-1", "es", NULL,
     "http://127.0.0.1:19200/_bulk?filter_path=items.%2A.status%2Cerror.type&timeout=25000ms",
     "POST\n/_bulk\nfilter_path=items.%2A.status%2Cerror.type&timeout=25000ms\n"
     "host:127.0.0.1:19200\n"
     "x-amz-content-sha256:06a2766a5890317dbe97487cd7110947b5be9999f2b40012538d03f273fec030\n"
     "x-amz-date:20150830T123600Z\n\nhost;x-amz-content-sha256;x-amz-date\n"
     "06a2766a5890317dbe97487cd7110947b5be9999f2b40012538d03f273fec030",
     "88e6d033bfee207f71dbcefd426167e507ccb45b59be2d515ec19a915d6ab6c4", NULL},
    /* metadata with a session token: a ',' in the path, encoded in the
     * canonical URI only (botocore's reading, which the service shares) */
    {"GET",
     "https://search-x.eu-west-1.es.amazonaws.com/_cluster/state/metadata,routing_table/logs-1"
     "?local=true&filter_path=metadata.indices.*.settings",
     "", "eu-west-1", "aoss", "FQoGZXIvYXdzEJr//////////wEaDOi+tok/en=",
     "https://search-x.eu-west-1.es.amazonaws.com/_cluster/state/metadata,routing_table/logs-1"
     "?filter_path=metadata.indices.%2A.settings&local=true",
     "GET\n/_cluster/state/metadata%2Crouting_table/logs-1\n"
     "filter_path=metadata.indices.%2A.settings&local=true\n"
     "host:search-x.eu-west-1.es.amazonaws.com\n"
     "x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
     "x-amz-date:20150830T123600Z\n"
     "x-amz-security-token:FQoGZXIvYXdzEJr//////////wEaDOi+tok/en=\n\n"
     "host;x-amz-content-sha256;x-amz-date;x-amz-security-token\n"
     "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
     "789b7ba4d434355405a17a5671a861841ae0ce5b84cb08b9289c2c936bbe6eb2", NULL},
    /* a path prefix with empty, "." and ".." segments and an escaped '/':
     * encoded once more ("%2F" signs as "%252F"); a name without '=' and
     * repeated names sorted by value */
    {"PUT", "http://h:9200/es//a/./b/../c%2Fd?b=2&a=1&a=0&flag", "x", "us-east-1", "es", NULL,
     "http://h:9200/es//a/./b/../c%2Fd?a=0&a=1&b=2&flag=",
     "PUT\n/es/a/c%252Fd\na=0&a=1&b=2&flag=\nhost:h:9200\n"
     "x-amz-content-sha256:2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881\n"
     "x-amz-date:20150830T123600Z\n\nhost;x-amz-content-sha256;x-amz-date\n"
     "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881",
     "7319ba9b4c0e8cc3a456dd9585f94fb64415920b60909bd599cabdacfc08ea50", NULL},
    /* a base URL as the library writes it, with https's port: the Host
     * signed and sent is in lower case and without ":443" (botocore's, and
     * what Amazon OpenSearch Service checks) */
    {"POST", "https://Search-X.EU-west-1.es.amazonaws.com:443/logs/_bulk?filter_path=items.*.status",
     "{\"index\":{}}\n{}\n", "eu-west-1", "es", NULL,
     "https://Search-X.EU-west-1.es.amazonaws.com:443/logs/_bulk?filter_path=items.%2A.status",
     "POST\n/logs/_bulk\nfilter_path=items.%2A.status\n"
     "host:search-x.eu-west-1.es.amazonaws.com\n"
     "x-amz-content-sha256:06a2766a5890317dbe97487cd7110947b5be9999f2b40012538d03f273fec030\n"
     "x-amz-date:20150830T123600Z\n\nhost;x-amz-content-sha256;x-amz-date\n"
     "06a2766a5890317dbe97487cd7110947b5be9999f2b40012538d03f273fec030",
     "d753f57ec729113a24926d914502ad35ba6aeb17f21c4eb67da353b9eccce437",
     "search-x.eu-west-1.es.amazonaws.com"},
    /* http's port 80 left out too; a last ".." segment: curl sends the
     * path as "/a/", so "/a/" is signed */
    {"GET", "http://h:80/a/b/..", "", "us-east-1", "es", NULL, "http://h:80/a/b/..",
     "GET\n/a/\n\nhost:h\nx-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
     "x-amz-date:20150830T123600Z\n\nhost;x-amz-content-sha256;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
     "810e05521a718ae92f94d7d7d61d8a6860845e5cda90411d45b22ab51892eee7", "h"},
    /* a query as the server reads it: '+' is a space, ';' separates pairs
     * as '&' does; sent as signed */
    {"GET", "http://h:9200/_search?q=a+b;c=d", "", "us-east-1", "es", NULL,
     "http://h:9200/_search?c=d&q=a%20b",
     "GET\n/_search\nc=d&q=a%20b\nhost:h:9200\nx-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
     "x-amz-date:20150830T123600Z\n\nhost;x-amz-content-sha256;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
     "0d52a450c38d1a20ab6b5f01034bf5b755a62fc796a73bef41204762f87f6e97", NULL},
    /* an IPv6 literal: only the scheme's own default port is left out */
    {"GET", "https://[::1]:443/x", "", "us-east-1", "es", NULL, "https://[::1]:443/x",
     "GET\n/x\n\nhost:[::1]\nx-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
     "x-amz-date:20150830T123600Z\n\nhost;x-amz-content-sha256;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
     "0badccb76d93cd557dcabf1000921446eb0572e07f805a79b06f967d5e51ce7f", "[::1]"},
    {"GET", "http://[::1]:443/x", "", "us-east-1", "es", NULL, "http://[::1]:443/x",
     "GET\n/x\n\nhost:[::1]:443\nx-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
     "x-amz-date:20150830T123600Z\n\nhost;x-amz-content-sha256;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
     "a30a091c6979eaea46f407663c44ae4f7895c5d2cac39464c86b8ec48a678246", "[::1]:443"},
};

static void sign(const case_t *c, esbulk__sigv4_t *s)
{
    esbulk__aws_t aws = {(char *)c->region, (char *)c->service, KEY_ID, SECRET, (char *)c->token};
    unsigned char payload[ESBULK__SHA256_LEN];

    esbulk__sha256(c->body, strlen(c->body), payload);
    ck_assert_int_eq(esbulk__sigv4_sign(&aws, c->method, c->url, payload, WHEN, s), ESBULK_OK);
}

START_TEST(test_as_botocore_signs)
{
    const case_t *c = &cases[_i];
    esbulk__sigv4_t s;
    char want[512];
    size_t n = 0;

    sign(c, &s);
    ck_assert_str_eq(s.url, c->wire_url);
    ck_assert_str_eq(s.canonical, c->canonical);
    ck_assert_ptr_nonnull(s.lines[n]);
    if (c->host != NULL) {
        snprintf(want, sizeof(want), "Host: %s", c->host);
    } else {
        snprintf(want, sizeof(want), "Host: %s", strstr(c->url, "://") + 3);
        *strpbrk(want + 6, "/?") = '\0';
    }
    ck_assert_str_eq(s.lines[n++], want);
    ck_assert_str_eq(s.lines[n++], "X-Amz-Date: 20150830T123600Z");
    ck_assert_ptr_nonnull(strstr(c->canonical, s.lines[n] + strlen("X-Amz-Content-Sha256: ")));
    ck_assert_int_eq(strncmp(s.lines[n++], "X-Amz-Content-Sha256: ", 22), 0);
    if (c->token != NULL) {
        snprintf(want, sizeof(want), "X-Amz-Security-Token: %s", c->token);
        ck_assert_str_eq(s.lines[n++], want);
    }
    snprintf(want, sizeof(want),
             "Authorization: AWS4-HMAC-SHA256 Credential=" KEY_ID "/20150830/%s/%s/aws4_request, "
             "SignedHeaders=host;x-amz-content-sha256;x-amz-date%s, Signature=%s",
             c->region, c->service, c->token != NULL ? ";x-amz-security-token" : "",
             c->signature);
    ck_assert_str_eq(s.lines[n++], want);
    ck_assert_ptr_null(s.lines[n]);
    esbulk__sigv4_free(&s);
    ck_assert_ptr_null(s.url);
    ck_assert_ptr_null(s.lines[0]);
}
END_TEST

/* Anything signed changes the signature: the secret, the day, the region,
 * the service, the body, the method, the path, the query. */
START_TEST(test_each_part_signed)
{
    const case_t base = cases[0];
    case_t c = base;
    esbulk__aws_t aws = {"eu-west-1", "es", KEY_ID, "other-secret", NULL};
    unsigned char payload[ESBULK__SHA256_LEN];
    esbulk__sigv4_t s0, s;
    const char *auth0;
    int k;

    sign(&base, &s0);
    auth0 = s0.lines[3];
    esbulk__sha256(base.body, strlen(base.body), payload);
    ck_assert_int_eq(esbulk__sigv4_sign(&aws, c.method, c.url, payload, WHEN, &s), ESBULK_OK);
    ck_assert_str_ne(s.lines[3], auth0);
    esbulk__sigv4_free(&s);
    for (k = 0; k < 6; k++) {
        c = base;
        switch (k) {
        case 0: c.region = "eu-west-2"; break;
        case 1: c.service = "aoss"; break;
        case 2: c.body = "{\"index\":{}}\n{ }\n"; break;
        case 3: c.method = "PUT"; break;
        case 4: c.url = "http://127.0.0.1:19200/_bulk2?timeout=25000ms"; break;
        default: c.url = "http://127.0.0.1:19200/_bulk?timeout=25001ms&filter_path=items.*.status,error.type"; break;
        }
        sign(&c, &s);
        ck_assert_msg(strcmp(s.lines[3], auth0) != 0, "change %d left the signature", k);
        esbulk__sigv4_free(&s);
    }
    /* the next day signs with another key */
    aws.secret = SECRET;
    ck_assert_int_eq(esbulk__sigv4_sign(&aws, base.method, base.url, payload, WHEN + 86400, &s),
                     ESBULK_OK);
    ck_assert_ptr_nonnull(strstr(s.lines[3], "/20150831/"));
    ck_assert_str_ne(strstr(s.lines[3], "Signature="), strstr(auth0, "Signature="));
    esbulk__sigv4_free(&s);
    esbulk__sigv4_free(&s0);
}
END_TEST

START_TEST(test_not_a_url)
{
    esbulk__aws_t aws = {"eu-west-1", "es", KEY_ID, SECRET, NULL};
    unsigned char payload[ESBULK__SHA256_LEN] = {0};
    esbulk__sigv4_t s;

    ck_assert_int_eq(esbulk__sigv4_sign(&aws, "GET", "127.0.0.1:9200/", payload, WHEN, &s),
                     ESBULK_ERR_INVALID_ARG);
    ck_assert_ptr_null(s.url);
    ck_assert_int_eq(esbulk__sigv4_sign(&aws, "GET", "http:///x", payload, WHEN, &s),
                     ESBULK_ERR_INVALID_ARG);
    /* no path: "/" is signed, nothing added to the URL */
    ck_assert_int_eq(esbulk__sigv4_sign(&aws, "GET", "http://h:1", payload, WHEN, &s), ESBULK_OK);
    ck_assert_str_eq(s.url, "http://h:1");
    ck_assert_int_eq(strncmp(s.canonical, "GET\n/\n\nhost:h:1\n", 16), 0);
    esbulk__sigv4_free(&s);
    /* a scheme with no default port keeps any port, 0 too (the fuzzer's) */
    ck_assert_int_eq(esbulk__sigv4_sign(&aws, "GET", "h2tp://h:00/x", payload, WHEN, &s), ESBULK_OK);
    ck_assert_str_eq(s.lines[0], "Host: h:00");
    esbulk__sigv4_free(&s);
    /* a default port with leading zeros is the default port */
    ck_assert_int_eq(esbulk__sigv4_sign(&aws, "GET", "https://h:0443/x", payload, WHEN, &s),
                     ESBULK_OK);
    ck_assert_str_eq(s.lines[0], "Host: h");
    esbulk__sigv4_free(&s);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sigv4");
    TCase *tc = tcase_create("core");
    SRunner *sr;
    int failed;

    tcase_add_loop_test(tc, test_as_botocore_signs, 0, (int)(sizeof(cases) / sizeof(cases[0])));
    tcase_add_test(tc, test_each_part_signed);
    tcase_add_test(tc, test_not_a_url);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
