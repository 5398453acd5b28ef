/* Engine unit tests without a cluster: flush thresholds with injected time,
 * the retry policy, action-line escaping, body checks, client ids, queue
 * full and blocking add, and close with pending documents. */
#include "docmem.h"
#include "engine.h"
#include "ndjson.h"

#include <arpa/inet.h>
#include <check.h>
#include <jansson.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------------- */

START_TEST(test_flush_thresholds)
{
    esbulk__flush_policy_t p = {1000, 10, 500};

    ck_assert(!esbulk__should_flush(&p, 0, 0, 0, 1000000, 1)); /* nothing to send */
    ck_assert(!esbulk__should_flush(&p, 9, 999, 1000, 1499, 0));
    ck_assert(esbulk__should_flush(&p, 10, 10, 1000, 1000, 0));   /* count */
    ck_assert(esbulk__should_flush(&p, 1, 1000, 1000, 1000, 0));  /* bytes */
    ck_assert(esbulk__should_flush(&p, 1, 1, 1000, 1500, 0));     /* age */
    ck_assert(esbulk__should_flush(&p, 1, 1, 1000, 1001, 1));     /* flush in progress */
    ck_assert_int_eq(esbulk__flush_due_ms(&p, 3, 1000), 1500);
    ck_assert_int_eq(esbulk__flush_due_ms(&p, 0, 1000), INT64_MAX);
}
END_TEST

START_TEST(test_backoff)
{
    int32_t a;

    /* full jitter: 0 with rnd 0, the ceiling with rnd max */
    for (a = 1; a <= 20; a++) {
        int64_t ceiling = 100;
        int32_t i;
        for (i = 1; i < a && ceiling < 10000; i++)
            ceiling *= 2;
        if (ceiling > 10000)
            ceiling = 10000;
        ck_assert_int_eq(esbulk__backoff_ms(a, 100, 10000, 0), 0);
        ck_assert_int_eq(esbulk__backoff_ms(a, 100, 10000, UINT32_MAX), ceiling);
        ck_assert_int_le(esbulk__backoff_ms(a, 100, 10000, 0x80000000u), ceiling / 2 + 1);
    }
    ck_assert_int_eq(esbulk__backoff_ms(1, 100, 10000, UINT32_MAX), 100);
    ck_assert_int_eq(esbulk__backoff_ms(3, 100, 10000, UINT32_MAX), 400);
    ck_assert_int_eq(esbulk__backoff_ms(30, 100, 10000, UINT32_MAX), 10000); /* cap */
}
END_TEST

START_TEST(test_retry_decide)
{
    int64_t at = 0;

    ck_assert_int_eq(esbulk__retry_decide(1, 3, 1000, 0, 100, 1000, UINT32_MAX, &at),
                     ESBULK__RETRY_NOW);
    ck_assert_int_eq(at, 1100);
    ck_assert_int_eq(esbulk__retry_decide(3, 3, 1000, 0, 100, 1000, 0, &at), ESBULK__RETRY_NOW);
    ck_assert_int_eq(esbulk__retry_decide(4, 3, 1000, 0, 100, 1000, 0, &at),
                     ESBULK__RETRY_GIVE_UP_MAX);
    ck_assert_int_eq(esbulk__retry_decide(1, 0, 1000, 0, 100, 1000, 0, &at),
                     ESBULK__RETRY_GIVE_UP_MAX); /* retry.max 0: no retry */
    /* the retry would land past the delivery deadline */
    ck_assert_int_eq(esbulk__retry_decide(2, 10, 1000, 1150, 100, 1000, UINT32_MAX, &at),
                     ESBULK__RETRY_GIVE_UP_DEADLINE);
    ck_assert_int_eq(esbulk__retry_decide(2, 10, 1000, 5000, 100, 1000, UINT32_MAX, &at),
                     ESBULK__RETRY_NOW);
}
END_TEST

static char *action(esbulk_op_t op, const char *index, const char *id, size_t id_len,
                    const char *routing)
{
    esbulk__buf_t b;

    esbulk__buf_init(&b, 1 << 20);
    ck_assert_int_eq(esbulk__action_line(&b, op, index, strlen(index), id, id_len, routing,
                                         routing ? strlen(routing) : 0),
                     ESBULK_OK);
    return b.data;
}

START_TEST(test_action_line)
{
    char *s;

    s = action(ESBULK_OP_INDEX, "logs", "1", 1, NULL);
    ck_assert_str_eq(s, "{\"index\":{\"_index\":\"logs\",\"_id\":\"1\"}}\n");
    free(s);
    s = action(ESBULK_OP_CREATE, "a\"b", "x\\y\n\t\x01z", 7, "r\"");
    ck_assert_str_eq(s, "{\"create\":{\"_index\":\"a\\\"b\",\"_id\":\"x\\\\y\\n\\t\\u0001z\","
                        "\"routing\":\"r\\\"\"}}\n");
    free(s);
    s = action(ESBULK_OP_UPDATE, "i", "\xe4\xb8\xad\xf0\x9f\x98\x80", 7, NULL); /* UTF-8 as is */
    ck_assert_str_eq(s, "{\"update\":{\"_index\":\"i\",\"_id\":\"\xe4\xb8\xad\xf0\x9f\x98\x80\"}}\n");
    free(s);
    s = action(ESBULK_OP_DELETE, "i", "\x7f\x1f", 2, NULL);
    ck_assert_str_eq(s, "{\"delete\":{\"_index\":\"i\",\"_id\":\"\x7f\\u001f\"}}\n");
    free(s);
    s = action(ESBULK_OP_INDEX, "i", NULL, 0, NULL); /* no id: server assigns */
    ck_assert_str_eq(s, "{\"index\":{\"_index\":\"i\"}}\n");
    free(s);
    {
        /* every escaped action line parses back to the same strings */
        json_t *j;
        char id[64];
        int c;
        for (c = 0; c < 32; c++)
            id[c] = (char)(c + 1);
        s = action(ESBULK_OP_INDEX, "i", id, 31, NULL);
        j = json_loads(s, 0, NULL);
        ck_assert_ptr_nonnull(j);
        ck_assert_int_eq(json_string_length(json_object_get(json_object_get(j, "index"), "_id")), 31);
        ck_assert_int_eq(memcmp(json_string_value(json_object_get(json_object_get(j, "index"), "_id")), id, 31), 0);
        json_decref(j);
        free(s);
    }
}
END_TEST

static esbulk_err_t body(const char *in, int validate, char **out)
{
    esbulk__buf_t b;
    char errstr[256];
    esbulk_err_t err;

    esbulk__buf_init(&b, 1 << 20);
    err = esbulk__body_line(&b, in, strlen(in), validate, errstr, sizeof(errstr));
    *out = b.data;
    return err;
}

/* Per-document options in the action line, and which ops they fit. */
START_TEST(test_action_line_opts)
{
    esbulk_docopts_t *o = esbulk_docopts_new();
    char errstr[256];
    esbulk__buf_t b;

    ck_assert_ptr_nonnull(o);
    esbulk__buf_init(&b, 1 << 20);
    ck_assert_int_eq(esbulk_docopts_set_version(o, 42, ESBULK_VERSION_EXTERNAL_GTE), ESBULK_OK);
    ck_assert_int_eq(esbulk_docopts_set_pipeline(o, "p\"1"), ESBULK_OK);
    ck_assert_int_eq(esbulk_docopts_set_require_alias(o, 1), ESBULK_OK);
    ck_assert_int_eq(esbulk__docopts_check(o, ESBULK_OP_INDEX, 1, errstr, sizeof(errstr)), ESBULK_OK);
    ck_assert_int_eq(esbulk__action_line_opts(&b, ESBULK_OP_INDEX, "i", 1, "1", 1, "r", 1, o),
                     ESBULK_OK);
    ck_assert_str_eq(b.data, "{\"index\":{\"_index\":\"i\",\"_id\":\"1\",\"routing\":\"r\","
                             "\"version\":42,\"version_type\":\"external_gte\","
                             "\"pipeline\":\"p\\\"1\",\"require_alias\":true}}\n");
    ck_assert(esbulk__docopts_conditional(o));
    esbulk_docopts_clear(o);
    ck_assert(!esbulk__docopts_conditional(o));
    ck_assert_int_eq(esbulk_docopts_set_if_seq_no(o, 7, 2), ESBULK_OK);
    ck_assert_int_eq(esbulk_docopts_set_retry_on_conflict(o, 3), ESBULK_OK);
    esbulk__buf_reset(&b);
    ck_assert_int_eq(esbulk__action_line_opts(&b, ESBULK_OP_UPDATE, "i", 1, "1", 1, NULL, 0, o),
                     ESBULK_OK);
    ck_assert_str_eq(b.data, "{\"update\":{\"_index\":\"i\",\"_id\":\"1\",\"if_seq_no\":7,"
                             "\"if_primary_term\":2,\"retry_on_conflict\":3}}\n");
    ck_assert_int_eq(esbulk__docopts_check(o, ESBULK_OP_UPDATE, 1, errstr, sizeof(errstr)),
                     ESBULK_OK);
    /* what does not fit */
    ck_assert_int_eq(esbulk__docopts_check(o, ESBULK_OP_INDEX, 1, errstr, sizeof(errstr)),
                     ESBULK_ERR_INVALID_ARG); /* retry_on_conflict */
    ck_assert_ptr_nonnull(strstr(errstr, "retry_on_conflict"));
    esbulk_docopts_set_retry_on_conflict(o, -1);
    ck_assert_int_eq(esbulk__docopts_check(o, ESBULK_OP_CREATE, 1, errstr, sizeof(errstr)),
                     ESBULK_ERR_INVALID_ARG); /* if_seq_no on a create */
    esbulk_docopts_set_version(o, 1, ESBULK_VERSION_EXTERNAL);
    ck_assert_int_eq(esbulk__docopts_check(o, ESBULK_OP_INDEX, 1, errstr, sizeof(errstr)),
                     ESBULK_ERR_INVALID_ARG); /* version and if_seq_no */
    esbulk_docopts_clear(o);
    esbulk_docopts_set_version(o, 1, ESBULK_VERSION_EXTERNAL);
    ck_assert_int_eq(esbulk__docopts_check(o, ESBULK_OP_UPDATE, 1, errstr, sizeof(errstr)),
                     ESBULK_ERR_INVALID_ARG);
    ck_assert_int_eq(esbulk__docopts_check(o, ESBULK_OP_DELETE, 1, errstr, sizeof(errstr)),
                     ESBULK_OK);
    /* a condition needs an _id of the caller's: an index without one is
     * refused (a generated one would make it hold every time) */
    ck_assert_int_eq(esbulk__docopts_check(o, ESBULK_OP_INDEX, 1, errstr, sizeof(errstr)),
                     ESBULK_OK);
    ck_assert_int_eq(esbulk__docopts_check(o, ESBULK_OP_INDEX, 0, errstr, sizeof(errstr)),
                     ESBULK_ERR_INVALID_ARG);
    ck_assert_str_eq(errstr, "document options do not fit an index: an external version needs "
                             "an _id");
    esbulk_docopts_clear(o);
    esbulk_docopts_set_if_seq_no(o, 3, 1);
    ck_assert_int_eq(esbulk__docopts_check(o, ESBULK_OP_INDEX, 0, errstr, sizeof(errstr)),
                     ESBULK_ERR_INVALID_ARG);
    ck_assert_str_eq(errstr, "document options do not fit an index: if_seq_no needs an _id");
    esbulk_docopts_clear(o);
    esbulk_docopts_set_pipeline(o, "p");
    esbulk_docopts_set_require_alias(o, 1);
    ck_assert_int_eq(esbulk__docopts_check(o, ESBULK_OP_INDEX, 0, errstr, sizeof(errstr)),
                     ESBULK_OK); /* unconditional options need no _id */
    ck_assert_int_eq(esbulk__docopts_check(o, ESBULK_OP_DELETE, 1, errstr, sizeof(errstr)),
                     ESBULK_ERR_INVALID_ARG);
    /* setters refuse what is out of range */
    ck_assert_int_eq(esbulk_docopts_set_version(o, -1, ESBULK_VERSION_EXTERNAL),
                     ESBULK_ERR_INVALID_ARG);
    ck_assert_int_eq(esbulk_docopts_set_version(o, 1, (esbulk_version_type_t)9),
                     ESBULK_ERR_INVALID_ARG);
    ck_assert_int_eq(esbulk_docopts_set_if_seq_no(o, 0, 0), ESBULK_ERR_INVALID_ARG);
    ck_assert_int_eq(esbulk_docopts_set_retry_on_conflict(o, -2), ESBULK_ERR_INVALID_ARG);
    ck_assert_int_eq(esbulk_docopts_set_pipeline(o, "\xff"), ESBULK_ERR_INVALID_UTF8);
    ck_assert_int_eq(esbulk_docopts_set_pipeline(NULL, "p"), ESBULK_ERR_INVALID_ARG);
    esbulk_docopts_set_pipeline(o, ""); /* unsets */
    ck_assert_ptr_null(o->pipeline);
    esbulk__buf_free(&b);
    esbulk_docopts_destroy(o);
    esbulk_docopts_destroy(NULL);
}
END_TEST

START_TEST(test_body_line)
{
    char *s = NULL;

    ck_assert_int_eq(body("{\"a\":1}", 0, &s), ESBULK_OK);
    ck_assert_str_eq(s, "{\"a\":1}\n");
    free(s);
    /* pretty-printed input is compacted: raw CR/LF are whitespace in JSON */
    ck_assert_int_eq(body("{\r\n  \"a\": 1,\n  \"b\": \"x\\ny\"\n}\n", 1, &s), ESBULK_OK);
    ck_assert_str_eq(s, "{  \"a\": 1,  \"b\": \"x\\ny\"}\n");
    free(s);
    s = NULL;
    ck_assert_int_eq(body("[1,2]", 0, &s), ESBULK_ERR_INVALID_JSON);
    free(s);
    s = NULL;
    ck_assert_int_eq(body("\"str\"", 0, &s), ESBULK_ERR_INVALID_JSON);
    free(s);
    s = NULL;
    ck_assert_int_eq(body("{", 0, &s), ESBULK_ERR_INVALID_JSON);
    free(s);
    s = NULL;
    /* shape passes, content does not: caught only with body.validate */
    ck_assert_int_eq(body("{\"a\":}", 0, &s), ESBULK_OK);
    free(s);
    s = NULL;
    ck_assert_int_eq(body("{\"a\":}", 1, &s), ESBULK_ERR_INVALID_JSON);
    free(s);
    s = NULL;
    /* a key twice, which the server refuses (Duplicate field) */
    ck_assert_int_eq(body("{\"a\":1,\"b\":{\"a\":1},\"a\":2}", 1, &s), ESBULK_ERR_INVALID_JSON);
    free(s);
    s = NULL;
    ck_assert_int_eq(body("{\"a\":1,\"b\":{\"a\":1}}", 1, &s), ESBULK_OK);
    free(s);
}
END_TEST

START_TEST(test_ids)
{
    char a[21], b[21], c[23], d[23];
    size_t i;

    esbulk__id_time(a, 1764670000000, 1, 0x123456789abcull);
    esbulk__id_time(b, 1764670000000, 2, 0x123456789abcull);
    ck_assert_int_eq(strlen(a), 20);
    ck_assert_str_ne(a, b);
    ck_assert_int_lt(strcmp(a, b), 0);           /* time-ordered within a ms */
    esbulk__id_time(b, 1764670000001, 0, 0x123456789abcull);
    ck_assert_int_lt(strcmp(a, b), 0);           /* and across ms */
    for (i = 0; i < 20; i++)
        ck_assert(strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", a[i]));
    esbulk__id_content(c, "{\"a\":1}", 7);
    esbulk__id_content(d, "{\"a\":1}", 7);
    ck_assert_int_eq(strlen(c), 22);
    ck_assert_str_eq(c, d);                      /* same body, same id */
    esbulk__id_content(d, "{\"a\":2}", 7);
    ck_assert_str_ne(c, d);
}
END_TEST

/* ------------------------------------------------------------------------- */
/* The handle against an address where nothing listens. */

static int results_seen, closed_seen, failed_seen, possibly_seen;
static pthread_t poll_thread;
static int wrong_thread;

static void on_result(esbulk_t *eb, const esbulk_result_t *r, void *opaque)
{
    (void)eb;
    (void)opaque;
    results_seen++;
    if (!pthread_equal(pthread_self(), poll_thread))
        wrong_thread++;
    if (esbulk_result_err(r) == ESBULK_ERR_CLOSED)
        closed_seen++;
    if (esbulk_result_outcome(r) == ESBULK_OUTCOME_FAILED)
        failed_seen++;
    if (esbulk_result_outcome(r) == ESBULK_OUTCOME_POSSIBLY)
        possibly_seen++;
}

/* A handle on conf (destroyed) whose results on_result counts, served on
 * this thread. */
static esbulk_t *counted_handle(esbulk_conf_t *conf)
{
    char errstr[256];
    esbulk_t *eb;

    esbulk_conf_set_result_cb(conf, on_result);
    eb = esbulk_new(conf, errstr, sizeof(errstr));
    ck_assert_msg(eb != NULL, "%s", errstr);
    esbulk_conf_destroy(conf);
    results_seen = closed_seen = failed_seen = possibly_seen = wrong_thread = 0;
    poll_thread = pthread_self();
    return eb;
}

/* dead_handle_b's configuration, for a test to change before the handle. */
static esbulk_conf_t *dead_conf(const char *max_docs, const char *enqueue_ms, const char *retry_max,
                                const char *backoff_ms)
{
    esbulk_conf_t *conf = esbulk_conf_new();
    char errstr[256];

    ck_assert_int_eq(esbulk_conf_set(conf, "urls", "http://127.0.0.1:1", errstr, sizeof(errstr)), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "connect.timeout.ms", "200", NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "flush.interval.ms", "600000", NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "flush.docs", "100000", NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "buffer.max.docs", max_docs, NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "enqueue.timeout.ms", enqueue_ms, NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "retry.max", retry_max, NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "retry.backoff.ms", backoff_ms, NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "retry.backoff.max.ms", backoff_ms, NULL, 0), 0);
    return conf;
}

static esbulk_t *dead_handle_b(const char *max_docs, const char *enqueue_ms, const char *retry_max,
                               const char *backoff_ms)
{
    return counted_handle(dead_conf(max_docs, enqueue_ms, retry_max, backoff_ms));
}

static esbulk_t *dead_handle(const char *max_docs, const char *enqueue_ms, const char *retry_max)
{
    return dead_handle_b(max_docs, enqueue_ms, retry_max, "10");
}

static esbulk_err_t add_one(esbulk_t *eb, int i)
{
    char id[16], errstr[256];

    snprintf(id, sizeof(id), "id%d", i);
    return esbulk_add(eb, ESBULK_OP_INDEX, "idx", id, strlen(id), NULL, 0, "{\"a\":1}", 7,
                      (void *)(intptr_t)i, errstr, sizeof(errstr));
}

START_TEST(test_add_errors)
{
    esbulk_t *eb = dead_handle("100", "0", "0");
    char errstr[256], big[64];

    ck_assert_int_eq(esbulk_add(eb, ESBULK_OP_INDEX, NULL, NULL, 0, NULL, 0, "{}", 2, NULL,
                                errstr, sizeof(errstr)), ESBULK_ERR_INVALID_ARG);
    ck_assert_int_eq(esbulk_add(eb, ESBULK_OP_INDEX, "i", "\xff", 1, NULL, 0, "{}", 2, NULL,
                                errstr, sizeof(errstr)), ESBULK_ERR_INVALID_UTF8);
    ck_assert_int_eq(esbulk_add(eb, ESBULK_OP_INDEX, "i", "a", 1, "\xc0\x80", 2, "{}", 2, NULL,
                                errstr, sizeof(errstr)), ESBULK_ERR_INVALID_UTF8);
    ck_assert_int_eq(esbulk_add(eb, ESBULK_OP_INDEX, "\xe4\xb8", NULL, 0, NULL, 0, "{}", 2, NULL,
                                errstr, sizeof(errstr)), ESBULK_ERR_INVALID_UTF8);
    /* a NUL is not plain: the full checks refuse it */
    ck_assert_int_eq(esbulk_add(eb, ESBULK_OP_INDEX, "i", "a\0b", 3, NULL, 0, "{}", 2, NULL,
                                errstr, sizeof(errstr)), ESBULK_ERR_INVALID_UTF8);
    ck_assert_int_eq(esbulk_add(eb, ESBULK_OP_INDEX, "i", "a", 1, "r\0", 2, "{}", 2, NULL,
                                errstr, sizeof(errstr)), ESBULK_ERR_INVALID_UTF8);
    ck_assert_int_eq(esbulk_add(eb, ESBULK_OP_INDEX, "i", "a", 1, NULL, 0, "[]", 2, NULL, errstr,
                                sizeof(errstr)), ESBULK_ERR_INVALID_JSON);
    ck_assert_int_eq(esbulk_add(eb, ESBULK_OP_INDEX, "i", "a", 1, NULL, 0, NULL, 0, NULL, errstr,
                                sizeof(errstr)), ESBULK_ERR_INVALID_JSON);
    ck_assert_int_eq(esbulk_add(eb, ESBULK_OP_DELETE, "i", NULL, 0, NULL, 0, NULL, 0, NULL, errstr,
                                sizeof(errstr)), ESBULK_ERR_INVALID_ARG);
    ck_assert_int_eq(esbulk_add(eb, ESBULK_OP_DELETE, "i", "a", 1, NULL, 0, "{}", 2, NULL, errstr,
                                sizeof(errstr)), ESBULK_ERR_INVALID_ARG);
    ck_assert_int_eq(esbulk_add(eb, (esbulk_op_t)9, "i", "a", 1, NULL, 0, "{}", 2, NULL, errstr,
                                sizeof(errstr)), ESBULK_ERR_INVALID_ARG);
    /* a condition without an _id: refused, not sent under a generated one
     * (whatever id points to, id_len 0 is none) */
    {
        esbulk_docopts_t *o = esbulk_docopts_new();

        ck_assert_ptr_nonnull(o);
        esbulk_docopts_set_version(o, 7, ESBULK_VERSION_EXTERNAL_GTE);
        ck_assert_int_eq(esbulk_add_opts(eb, ESBULK_OP_INDEX, "i", "", 0, NULL, 0, "{}", 2, o,
                                         NULL, errstr, sizeof(errstr)), ESBULK_ERR_INVALID_ARG);
        ck_assert_ptr_nonnull(strstr(errstr, "an external version needs an _id"));
        esbulk_docopts_clear(o);
        esbulk_docopts_set_if_seq_no(o, 1, 1);
        ck_assert_int_eq(esbulk_add_opts(eb, ESBULK_OP_INDEX, "i", NULL, 0, NULL, 0, "{}", 2, o,
                                         NULL, errstr, sizeof(errstr)), ESBULK_ERR_INVALID_ARG);
        ck_assert_ptr_nonnull(strstr(errstr, "if_seq_no needs an _id"));
        ck_assert_int_eq(esbulk_pending(eb), 0);
        esbulk_docopts_destroy(o);
    }
    /* an _id past the server's 512 bytes (it would refuse the whole
     * request), a routing past ESBULK__KEY_MAX (the record's lengths are
     * 32-bit) */
    {
        size_t n = ESBULK__KEY_MAX + 1;
        char *key = malloc(n);

        ck_assert_ptr_nonnull(key);
        memset(key, 'k', n);
        ck_assert_int_eq(esbulk_add(eb, ESBULK_OP_INDEX, "i", key, 513, NULL, 0, "{}", 2, NULL,
                                    errstr, sizeof(errstr)), ESBULK_ERR_INVALID_ARG);
        ck_assert_ptr_nonnull(strstr(errstr, "_id longer than 512 bytes"));
        ck_assert_int_eq(esbulk_add(eb, ESBULK_OP_DELETE, "i", key, 513, NULL, 0, NULL, 0, NULL,
                                    errstr, sizeof(errstr)), ESBULK_ERR_INVALID_ARG);
        ck_assert_int_eq(esbulk_add(eb, ESBULK_OP_INDEX, "i", "a", 1, key, n, "{}", 2, NULL,
                                    errstr, sizeof(errstr)), ESBULK_ERR_INVALID_ARG);
        ck_assert_ptr_nonnull(strstr(errstr, "routing longer than"));
        /* the longest taken */
        ck_assert_int_eq(esbulk_add(eb, ESBULK_OP_INDEX, "i", key, 512, NULL, 0, "{}", 2, NULL,
                                    errstr, sizeof(errstr)), ESBULK_OK);
        ck_assert_int_eq(esbulk_add(eb, ESBULK_OP_INDEX, "i", "a", 1, key, n - 1, "{}", 2, NULL,
                                    errstr, sizeof(errstr)), ESBULK_OK);
        free(key);
    }
    esbulk_destroy(eb);
    /* max.doc.bytes */
    {
        esbulk_conf_t *conf = esbulk_conf_new();
        esbulk_conf_set(conf, "urls", "http://127.0.0.1:1", NULL, 0);
        esbulk_conf_set(conf, "max.doc.bytes", "16", NULL, 0);
        eb = esbulk_new(conf, errstr, sizeof(errstr));
        esbulk_conf_destroy(conf);
        memset(big, ' ', sizeof(big));
        big[0] = '{';
        big[62] = '}';
        big[63] = '\0';
        ck_assert_int_eq(esbulk_add(eb, ESBULK_OP_INDEX, "i", "a", 1, NULL, 0, big, strlen(big),
                                    NULL, errstr, sizeof(errstr)), ESBULK_ERR_DOC_TOO_LARGE);
        ck_assert_ptr_nonnull(strstr(errstr, "max.doc.bytes"));
        ck_assert_int_eq(esbulk_pending(eb), 0);
        esbulk_destroy(eb);
    }
    /* no result was delivered for any refused document: two, for the
     * longest keys', which were taken */
    ck_assert_int_eq(results_seen, 2);
}
END_TEST

/* Adds n documents to eb, whose buffer takes exactly n and which delivers
 * nothing before its close (a dead port, retries far apart): the next add
 * meets QUEUE_FULL at once, and the close that times out gives each
 * accepted document exactly one result, closed. */
static void fill_then_close(esbulk_t *eb, int n)
{
    int i;

    for (i = 0; i < n; i++)
        ck_assert_int_eq(add_one(eb, i), ESBULK_OK);
    ck_assert_int_eq(add_one(eb, n), ESBULK_ERR_QUEUE_FULL);
    ck_assert_int_eq(esbulk_pending(eb), n);
    ck_assert_int_eq(esbulk_close(eb, 300), ESBULK_ERR_TIMED_OUT);
    ck_assert_int_eq(results_seen, n);
    ck_assert_int_eq(closed_seen, n);
}

/* The buffer's size in the statistics (-1: absent). */
static long stat_max_docs(esbulk_t *eb)
{
    char *stats = esbulk_stats_json(eb);
    json_t *st = json_loads(stats, 0, NULL), *v = json_object_get(st, "buffer_max_docs");
    long n = json_is_integer(v) ? (long)json_integer_value(v) : -1;

    json_decref(st);
    esbulk_free(stats);
    return n;
}

/* buffer.max.docs left at 0: sized by the nodes (here the one seed, the
 * cluster unreadable) as esbulk__buffer_docs_for says, and enforced as a
 * set value is. */
START_TEST(test_buffer_sized_by_cluster)
{
    esbulk_t *eb = dead_handle_b("0", "0", "100", "100000");
    esbulk_conf_t *conf;

    /* flush.docs 100000 (dead_handle_b): 2 x (1 x 2 in flight + 1) x 100000 */
    ck_assert_int_eq(stat_max_docs(eb), 600000);
    esbulk_destroy(eb);

    conf = dead_conf("0", "0", "100", "100000");
    ck_assert_int_eq(esbulk_conf_set(conf, "flush.docs", "2000", NULL, 0), 0);
    eb = counted_handle(conf);
    ck_assert_int_eq(stat_max_docs(eb), 12000);
    fill_then_close(eb, 12000);
    esbulk_destroy(eb);

    /* a value set stays */
    eb = dead_handle("10", "0", "0");
    ck_assert_int_eq(stat_max_docs(eb), 10);
    esbulk_destroy(eb);
}
END_TEST

START_TEST(test_queue_full_at_once)
{
    /* retries far apart: nothing is delivered before the close */
    esbulk_t *eb = dead_handle_b("10", "0", "100", "100000");

    fill_then_close(eb, 10);
    ck_assert_int_eq(failed_seen, 10);
    ck_assert_int_eq(wrong_thread, 0);
    {
        /* and the statistics say so */
        char *stats = esbulk_stats_json(eb);
        json_t *st = json_loads(stats, 0, NULL);

        ck_assert_int_eq(json_integer_value(json_object_get(st, "closed")), 10);
        ck_assert_int_eq(json_integer_value(json_object_get(st, "failed")), 10);
        ck_assert_int_eq(json_integer_value(json_object_get(st, "indexed")), 0);
        ck_assert_int_eq(json_integer_value(json_object_get(st, "buffered_bytes")), 0);
        json_decref(st);
        esbulk_free(stats);
    }
    ck_assert_int_eq(add_one(eb, 11), ESBULK_ERR_CLOSED);
    esbulk_destroy(eb);
}
END_TEST

/* A full buffer, and an add that would not wait: refused before its
 * document is built (a caller retrying until there is room paid a build,
 * its body checked and copied, at each try). A body that is not JSON shows
 * it: QUEUE_FULL, not INVALID_JSON; once there is room, INVALID_JSON. */
START_TEST(test_queue_full_before_build)
{
    esbulk_t *eb = dead_handle_b("10", "0", "100", "100000");
    const int32_t ops[2] = {ESBULK_OP_INDEX, ESBULK_OP_INDEX};
    const char *const indices[2] = {"logs", "logs"}, *const bodies[2] = {"{}", "not json"};
    const size_t lens[2] = {2, 8};
    size_t accepted = 7;
    char errstr[256];
    int i;

    for (i = 0; i < 10; i++)
        ck_assert_int_eq(add_one(eb, i), ESBULK_OK);
    /* the first add to find it full is built (nothing said so yet) */
    ck_assert_int_eq(add_one(eb, 10), ESBULK_ERR_QUEUE_FULL);
    ck_assert_int_eq(esbulk_add(eb, ESBULK_OP_INDEX, "logs", NULL, 0, NULL, 0, "not json", 8, NULL,
                                errstr, sizeof(errstr)),
                     ESBULK_ERR_QUEUE_FULL);
    ck_assert_ptr_nonnull(strstr(errstr, "queue full: 10 documents"));
    ck_assert_int_eq(esbulk_add_batch(eb, 2, ops, indices, NULL, NULL, NULL, NULL, bodies, lens,
                                      NULL, &accepted, errstr, sizeof(errstr)),
                     ESBULK_ERR_QUEUE_FULL);
    ck_assert_uint_eq(accepted, 0);
    ck_assert_int_eq(esbulk_close(eb, 300), ESBULK_ERR_TIMED_OUT);
    esbulk_destroy(eb);

    /* with room, the same body is looked at */
    eb = dead_handle_b("10", "0", "100", "100000");
    ck_assert_int_eq(esbulk_add(eb, ESBULK_OP_INDEX, "logs", NULL, 0, NULL, 0, "not json", 8, NULL,
                                errstr, sizeof(errstr)),
                     ESBULK_ERR_INVALID_JSON);
    esbulk_destroy(eb);
}
END_TEST

/* A full buffer is sent at once, not at flush.docs or flush.interval.ms
 * (10 minutes here): otherwise a buffer.max.docs below flush.docs would
 * stall every add until the interval. */
START_TEST(test_full_buffer_sends_now)
{
    esbulk_t *eb = dead_handle_b("10", "0", "0", "10");
    int64_t t0;
    int i, n = 0;

    for (i = 0; i < 10; i++)
        ck_assert_int_eq(add_one(eb, i), ESBULK_OK);
    ck_assert_int_eq(add_one(eb, 10), ESBULK_ERR_QUEUE_FULL);
    t0 = esbulk__now_ms();
    while (n < 10 && esbulk__now_ms() - t0 < 5000)
        n += esbulk_poll(eb, 100);
    ck_assert_int_eq(n, 10); /* sent, refused by the dead port, retry.max 0: failed */
    ck_assert_int_lt(esbulk__now_ms() - t0, 3000);
    ck_assert_int_eq(failed_seen, 10);
    ck_assert_int_eq(add_one(eb, 11), ESBULK_OK); /* room again */
    esbulk_destroy(eb);
}
END_TEST

/* Escaping, eight bytes at a time then bytewise: each byte JSON must escape
 * at every position of a 24-byte string, against jansson's encoding; bytes
 * from 0x20 up (UTF-8 included) go as they are. */
START_TEST(test_json_string_every_position)
{
    static const unsigned char special[] = {'"', '\\', '\n', '\r', '\t', 0x01, 0x1f, 0x00};
    char in[32];
    size_t p, k;

    for (p = 0; p < 24; p++)
        for (k = 0; k < sizeof(special); k++) {
            esbulk__buf_t b;
            json_t *js;
            char *want;

            memset(in, 'a', 24);
            in[p] = (char)special[k];
            esbulk__buf_init(&b, 1 << 10);
            ck_assert_int_eq(esbulk__json_string(&b, in, 24), ESBULK_OK);
            js = json_stringn(in, 24);
            want = json_dumps(js, JSON_ENCODE_ANY);
            ck_assert_msg(strcasecmp(b.data, want) == 0, "byte 0x%02x at %zu: %s, want %s",
                          special[k], p, b.data, want);
            free(want);
            json_decref(js);
            esbulk__buf_free(&b);
        }
    for (p = 0; p < 24; p++) {
        esbulk__buf_t b;

        memset(in, 'a', 24);
        in[p] = p % 2 ? ' ' : (char)0x7f;
        esbulk__buf_init(&b, 1 << 10);
        ck_assert_int_eq(esbulk__json_string(&b, in, 24), ESBULK_OK);
        ck_assert_uint_eq(b.len, 26);
        ck_assert(memcmp(b.data + 1, in, 24) == 0);
        esbulk__buf_free(&b);
    }
}
END_TEST

/* esbulk__plain_ascii against a bytewise reference: every byte value at
 * every position of strings from 0 to 24 bytes (the 8-byte step and the
 * tail). */
START_TEST(test_plain_ascii_every_byte)
{
    char in[24];
    size_t len, p;
    int c;

    for (len = 0; len <= sizeof(in); len++) {
        memset(in, 'a', sizeof(in));
        ck_assert_int_eq(esbulk__plain_ascii(in, len), 1);
        for (p = 0; p < len; p++)
            for (c = 0; c < 256; c++) {
                int want = c >= 0x20 && c < 0x80 && c != '"' && c != '\\';

                in[p] = (char)c;
                ck_assert_msg(esbulk__plain_ascii(in, len) == want, "byte 0x%02x at %zu of %zu",
                              c, p, len);
                in[p] = 'a';
            }
    }
    ck_assert_int_eq(esbulk__plain_ascii(NULL, 0), 1);
}
END_TEST

/* The plain action line: the same bytes as the general writer's, for every
 * op, with and without id and routing, and the length it announced. */
START_TEST(test_action_line_plain_same_bytes)
{
    static const char *const ids[] = {"", "1", "abcdefgh", "a id with spaces ~!@#$%^&*()"};
    static const char *const routings[] = {"", "r", "user-12345678901234567890"};
    char out[256];
    size_t op, i, r;

    for (op = 0; op <= ESBULK_OP_DELETE; op++)
        for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
            for (r = 0; r < sizeof(routings) / sizeof(routings[0]); r++) {
                esbulk__buf_t b;
                size_t n, want_len;

                esbulk__buf_init(&b, 1 << 10);
                ck_assert_int_eq(esbulk__action_line(&b, (esbulk_op_t)op, "my-index", 8, ids[i],
                                                     strlen(ids[i]), routings[r],
                                                     strlen(routings[r])),
                                 ESBULK_OK);
                want_len = esbulk__action_line_plain_len((esbulk_op_t)op, 8, strlen(ids[i]),
                                                         strlen(routings[r]));
                memset(out, '#', sizeof(out));
                n = esbulk__action_line_plain(out, (esbulk_op_t)op, "my-index", 8, ids[i],
                                              strlen(ids[i]), routings[r], strlen(routings[r]));
                ck_assert_uint_eq(n, want_len);
                ck_assert_uint_eq(n, b.len);
                ck_assert_msg(memcmp(out, b.data, n) == 0, "%.*s, want %s", (int)n, out, b.data);
                ck_assert_int_eq(out[n], '#'); /* not a byte more */
                esbulk__buf_free(&b);
            }
}
END_TEST

/* A loopback listener that never accepts and never answers: a connect
 * succeeds (the kernel's backlog), a request hangs until its timeout. Its
 * URL goes into url; close the returned fd when done. */
static int silent_listener(char *url, size_t url_size)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    ck_assert_int_ge(fd, 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(listen(fd, 64), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    snprintf(url, url_size, "http://127.0.0.1:%d", (int)ntohs(sa.sin_port));
    return fd;
}

/* A flush that times out still sends what was added before it at once (as
 * librdkafka's flush does): a short flush is how a caller says "send now"
 * without waiting for flush.interval.ms. The server never answers, so no
 * document can have an outcome before the flush returns (a refused port
 * could fail them all first, and the flush would see them done); each is
 * sent, and fails at its request timeout. */
START_TEST(test_flush_timed_out_still_sends)
{
    esbulk_conf_t *conf = esbulk_conf_new();
    char url[64];
    int fd = silent_listener(url, sizeof(url));
    esbulk_t *eb;
    int64_t t0;
    int i, n = 0;

    ck_assert_int_eq(esbulk_conf_set(conf, "urls", url, NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "flush.interval.ms", "600000", NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "flush.docs", "100000", NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "request.timeout.ms", "1000", NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "retry.max", "0", NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "topology.wait.ms", "0", NULL, 0), 0);
    eb = counted_handle(conf);
    for (i = 0; i < 3; i++)
        ck_assert_int_eq(add_one(eb, i), ESBULK_OK);
    t0 = esbulk__now_ms();
    ck_assert_int_eq(esbulk_flush(eb, 0), ESBULK_ERR_TIMED_OUT);
    while (n < 3 && esbulk__now_ms() - t0 < 8000)
        n += esbulk_poll(eb, 10);
    ck_assert_int_eq(n, 3); /* sent and timed out, not kept for 10 minutes */
    ck_assert_int_eq(closed_seen, 0);
    ck_assert_int_eq(possibly_seen, 3); /* sent: the silent server may have applied them */
    esbulk_destroy(eb);
    close(fd);
}
END_TEST

/* A loopback server that keeps every _bulk request body it gets and answers
 * each item created (its _id read from the action line), or refused with a
 * 400 when the _id begins with "fail"; anything else gets a 404. */
typedef struct {
    int fd;
    pthread_mutex_t lock;   /* guards the two below */
    esbulk__buf_t bodies;   /* every _bulk body, concatenated (the requests come
                               one at a time: max.inflight.per.node=1) */
    int requests;
    char path[2048];        /* the last _bulk request's path and query */
    char head[8192];        /* the last _bulk request's head, and the last other one's */
    char meta_head[8192];
    esbulk__buf_t metas;    /* every other request's head, in order (freed by recorder_stop) */
    char root_head[8192];   /* the first GET / request's head */
} recorder_t;

static int read_full(int fd, char *p, size_t n)
{
    while (n > 0) {
        ssize_t k = read(fd, p, n);

        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* One request on c: 0, or -1 when the connection ends. */
static int recorder_one(recorder_t *r, int c)
{
    char head[8192], *end, *cl, *body = NULL, *line;
    size_t len = 0, n = 0, blen;
    esbulk__buf_t ans;
    int bulk;

    while ((end = len ? strstr(head, "\r\n\r\n") : NULL) == NULL) {
        ssize_t k;

        if (len + 1 >= sizeof(head) || (k = read(c, head + len, 1)) <= 0)
            return -1;
        len += (size_t)k;
        head[len] = '\0';
    }
    cl = strcasestr(head, "content-length:");
    blen = cl ? strtoul(cl + 15, NULL, 10) : 0;
    bulk = strstr(head, " /_bulk") != NULL;
    if (blen > 0) {
        body = malloc(blen + 1);
        ck_assert_ptr_nonnull(body);
        if (read_full(c, body, blen) != 0) {
            free(body);
            return -1;
        }
        body[blen] = '\0';
    }
    esbulk__buf_init(&ans, (size_t)-1);
    if (bulk) {
        pthread_mutex_lock(&r->lock);
        r->requests++;
        snprintf(r->path, sizeof(r->path), "%.*s", (int)strcspn(strstr(head, " /_bulk") + 1, " "),
                 strstr(head, " /_bulk") + 1);
        ck_assert_int_eq(esbulk__buf_add(&r->bodies, body, blen), ESBULK_OK);
        memcpy(r->head, head, len + 1);
        pthread_mutex_unlock(&r->lock);
        ck_assert_int_eq(esbulk__buf_adds(&ans, "{\"errors\":false,\"items\":["), ESBULK_OK);
        /* action lines are the odd ones: one item each */
        for (line = body; line != NULL && line < body + blen; n++) {
            char *nl = strchr(line, '\n'), *id = strstr(line, "\"_id\":\"");

            ck_assert_ptr_nonnull(nl);
            if (n % 2 == 0) {
                char item[256];

                ck_assert_ptr_nonnull(id);
                if (strncmp(id + 7, "fail", 4) == 0) /* a document the server refuses */
                    snprintf(item, sizeof(item),
                             "%s{\"index\":{\"_index\":\"idx\",\"_id\":\"%.*s\",\"status\":400,"
                             "\"error\":{\"type\":\"mapper_parsing_exception\",\"reason\":"
                             "\"failed to parse\"}}}", n > 0 ? "," : "",
                             (int)strcspn(id + 7, "\""), id + 7);
                else
                    snprintf(item, sizeof(item),
                             "%s{\"index\":{\"_index\":\"idx\",\"_id\":\"%.*s\",\"_version\":1,"
                             "\"result\":\"created\",\"_seq_no\":%zu,\"_primary_term\":1,"
                             "\"status\":201}}", n > 0 ? "," : "",
                             (int)strcspn(id + 7, "\""), id + 7, n / 2);
                ck_assert_int_eq(esbulk__buf_adds(&ans, item), ESBULK_OK);
            }
            line = nl + 1;
        }
        ck_assert_int_eq(esbulk__buf_adds(&ans, "]}"), ESBULK_OK);
    } else {
        pthread_mutex_lock(&r->lock);
        memcpy(r->meta_head, head, len + 1);
        ck_assert_int_eq(esbulk__buf_add(&r->metas, head, len), ESBULK_OK);
        if (r->root_head[0] == '\0' && strncmp(head, "GET / ", 6) == 0)
            memcpy(r->root_head, head, len + 1);
        pthread_mutex_unlock(&r->lock);
        ck_assert_int_eq(esbulk__buf_adds(&ans, "{}"), ESBULK_OK);
    }
    free(body);
    snprintf(head, sizeof(head),
             "HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
             bulk ? "200 OK" : "404 Not Found", ans.len);
    /* MSG_NOSIGNAL: a client that went away (a handle destroyed while its
     * topology read was answered) must not end the test run with SIGPIPE */
    if (send(c, head, strlen(head), MSG_NOSIGNAL) < 0 ||
        send(c, ans.data, ans.len, MSG_NOSIGNAL) < 0) {
        esbulk__buf_free(&ans);
        return -1;
    }
    esbulk__buf_free(&ans);
    return 0;
}

typedef struct {
    recorder_t *r;
    int c;
} conn_t;

static void *recorder_conn(void *arg)
{
    conn_t *k = arg;

    while (recorder_one(k->r, k->c) == 0)
        ;
    close(k->c);
    return NULL;
}

/* Accepts until the listener is shut down, a thread per connection (the
 * topology reads and the requests come on connections of their own). */
static void *recorder_run(void *arg)
{
    recorder_t *r = arg;
    pthread_t th[16];
    conn_t conn[16];
    int n = 0, i;

    while (n < 16) {
        int c = accept(r->fd, NULL, NULL), one = 1;

        if (c < 0)
            break;
        /* the head and the body are two writes: no wait for an ACK */
        ck_assert_int_eq(setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)), 0);
        conn[n].r = r;
        conn[n].c = c;
        ck_assert_int_eq(pthread_create(&th[n], NULL, recorder_conn, &conn[n]), 0);
        n++;
    }
    for (i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    return NULL;
}

/* A recorder listening on loopback (its URL into url), on thread *th. */
static void recorder_start(recorder_t *r, pthread_t *th, char *url, size_t url_size)
{
    memset(r, 0, sizeof(*r));
    pthread_mutex_init(&r->lock, NULL);
    esbulk__buf_init(&r->bodies, (size_t)-1);
    esbulk__buf_init(&r->metas, (size_t)-1);
    r->fd = silent_listener(url, url_size);
    ck_assert_int_eq(pthread_create(th, NULL, recorder_run, r), 0);
}

/* Ends the recorder's thread (once its clients closed their connections);
 * r->bodies stays for the caller to read and free. */
static void recorder_stop(recorder_t *r, pthread_t th)
{
    shutdown(r->fd, SHUT_RDWR);
    pthread_join(th, NULL);
    close(r->fd);
    pthread_mutex_destroy(&r->lock);
    esbulk__buf_free(&r->metas);
}

/* A configuration for a handle on a new recorder: routing.level=off, the
 * given flush.docs, no flush by interval. */
static esbulk_conf_t *recorder_conf(recorder_t *rec, pthread_t *th, const char *flush_docs)
{
    esbulk_conf_t *conf = esbulk_conf_new();
    char url[64];

    recorder_start(rec, th, url, sizeof(url));
    ck_assert_int_eq(esbulk_conf_set(conf, "urls", url, NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "routing.level", "off", NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "flush.docs", flush_docs, NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "flush.interval.ms", "600000", NULL, 0), 0);
    return conf;
}

/* The request bodies are the documents' lines, whole and in order: 300
 * documents over several requests, bodies from 2 bytes to past the upload
 * buffer (curl reads a request in pieces, and a piece ends inside a
 * document), one past a quarter block (lines of its own, not in a block). */
START_TEST(test_request_bodies_are_the_lines)
{
    esbulk_conf_t *conf = esbulk_conf_new();
    recorder_t rec;
    pthread_t th;
    char url[64], errstr[256], *big;
    size_t big_len = 700 * 1024, off = 0;
    const char *p;
    esbulk_t *eb;
    int n;

    recorder_start(&rec, &th, url, sizeof(url));
    ck_assert_int_eq(esbulk_conf_set(conf, "urls", url, NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "routing.level", "off", NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "flush.docs", "64", NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "max.inflight.per.node", "1", NULL, 0), 0);
    eb = counted_handle(conf);
    big = malloc(big_len + 1);
    ck_assert_ptr_nonnull(big);
    memset(big, 'x', big_len);
    memcpy(big, "{\"b\":\"", 6);
    memcpy(big + big_len - 2, "\"}", 2);
    big[big_len] = '\0';
    for (n = 0; n < 300; n++) {
        char id[16], body[64];
        const char *b = body;
        size_t blen;

        snprintf(id, sizeof(id), "id%d", n);
        if (n % 50 == 49) {
            b = big;
            blen = big_len;
        } else {
            blen = (size_t)snprintf(body, sizeof(body), n % 3 ? "{\"n\":%d}" : "{}", n);
        }
        ck_assert_int_eq(esbulk_add(eb, ESBULK_OP_INDEX, "idx", id, strlen(id), NULL, 0, b,
                                    blen, NULL, errstr, sizeof(errstr)), ESBULK_OK);
    }
    ck_assert_int_eq(esbulk_flush(eb, 30000), ESBULK_OK);
    ck_assert_int_eq(results_seen, 300);
    ck_assert_int_eq(failed_seen + possibly_seen, 0);
    {
        /* one request at a time: each one after the first reuses the curl
         * handle of the one before (with its options all set again: the
         * bodies below are whole) */
        char *stats = esbulk_stats_json(eb);
        json_t *st = json_loads(stats, 0, NULL);

        ck_assert_ptr_nonnull(st);
        ck_assert_int_ge(json_integer_value(json_object_get(st, "requests")), 5);
        ck_assert_int_eq(json_integer_value(json_object_get(st, "http_handles")), 1);
        json_decref(st);
        esbulk_free(stats);
    }
    esbulk_destroy(eb); /* its connections close: their threads end */
    recorder_stop(&rec, th);
    ck_assert_int_ge(rec.requests, 5);
    /* the lines, document by document */
    p = rec.bodies.data;
    for (n = 0; n < 300; n++) {
        char want[64];
        const char *nl;

        snprintf(want, sizeof(want), "\"_id\":\"id%d\"", n);
        nl = memchr(p + off, '\n', rec.bodies.len - off);
        ck_assert_ptr_nonnull(nl);
        ck_assert_msg(memmem(p + off, (size_t)(nl - (p + off)), want, strlen(want)) != NULL,
                      "document %d: action line %.*s", n, (int)(nl - (p + off)), p + off);
        off = (size_t)(nl - p) + 1;
        nl = memchr(p + off, '\n', rec.bodies.len - off);
        ck_assert_ptr_nonnull(nl);
        if (n % 50 == 49) {
            ck_assert_uint_eq((size_t)(nl - (p + off)), big_len);
            ck_assert_int_eq(memcmp(p + off, big, big_len), 0);
        } else {
            char body[64];
            size_t blen = (size_t)snprintf(body, sizeof(body), n % 3 ? "{\"n\":%d}" : "{}", n);

            ck_assert_uint_eq((size_t)(nl - (p + off)), blen);
            ck_assert_int_eq(memcmp(p + off, body, blen), 0);
        }
        off = (size_t)(nl - p) + 1;
    }
    ck_assert_uint_eq(off, rec.bodies.len);
    free(big);
    esbulk__buf_free(&rec.bodies);
}
END_TEST

/* Adds PREFIX0..PREFIX2 ({}) to idx and flushes. */
static void add_three(esbulk_t *eb, const char *prefix)
{
    char id[32], errstr[256];
    int n;

    for (n = 0; n < 3; n++) {
        snprintf(id, sizeof(id), "%s%d", prefix, n);
        ck_assert_int_eq(esbulk_add(eb, ESBULK_OP_INDEX, "idx", id, strlen(id), NULL, 0, "{}", 2,
                                    NULL, errstr, sizeof(errstr)), ESBULK_OK);
    }
    ck_assert_int_eq(esbulk_flush(eb, 30000), ESBULK_OK);
}

/* http.headers go with every request, bulk and metadata, as set: an empty
 * value sent empty (not dropped, as curl drops "Name:"). */
START_TEST(test_custom_headers_sent)
{
    esbulk_conf_t *conf;
    recorder_t rec;
    pthread_t th;
    char errstr[256];
    esbulk_t *eb;

    conf = recorder_conf(&rec, &th, "10");
    ck_assert_int_eq(esbulk_conf_set(conf, "http.headers",
                                     "X-Opaque-Id: job-7\r\nsecuritytenant:  t1 \n\nX-Empty:",
                                     errstr, sizeof(errstr)), ESBULK_OK);
    eb = counted_handle(conf);
    add_three(eb, "id");
    ck_assert_int_eq(results_seen, 3);
    esbulk_destroy(eb);
    recorder_stop(&rec, th);
    ck_assert_int_eq(rec.requests, 1);
    ck_assert_ptr_nonnull(strstr(rec.head, "\r\nX-Opaque-Id: job-7\r\n"));
    ck_assert_ptr_nonnull(strstr(rec.head, "\r\nsecuritytenant: t1\r\n"));
    ck_assert_ptr_nonnull(strstr(rec.head, "\r\nX-Empty:\r\n"));
    ck_assert_ptr_nonnull(strstr(rec.head, "\r\nContent-Type: application/x-ndjson\r\n"));
    /* the handle's first look at the cluster (GET /) carries them too */
    ck_assert_ptr_nonnull(strstr(rec.meta_head, "\r\nX-Opaque-Id: job-7\r\n"));
    ck_assert_ptr_nonnull(strstr(rec.meta_head, "\r\nX-Empty:\r\n"));
    esbulk__buf_free(&rec.bodies);
}
END_TEST

/* The value of header name in a recorded head (NUL-terminated in out). */
static int head_value(const char *head, const char *name, char *out, size_t out_size)
{
    char needle[64];
    const char *v;

    snprintf(needle, sizeof(needle), "\r\n%s: ", name);
    if ((v = strstr(head, needle)) == NULL)
        return -1;
    v += strlen(needle);
    snprintf(out, out_size, "%.*s", (int)strcspn(v, "\r"), v);
    return 0;
}

/* Asserts that head (with its body) is signed as lib/sigv4.c signs it,
 * with the body it carried and the time it says. */
static void assert_signed(const char *head, const char *body, size_t body_len,
                          const esbulk__aws_t *aws)
{
    char host[256], date[64], sha[80], auth[512], url[4096], method[16], want_sha[65];
    unsigned char payload[ESBULK__SHA256_LEN];
    const char *target = strchr(head, ' ') + 1;
    esbulk__sigv4_t sig;
    struct tm tm;
    size_t i;

    snprintf(method, sizeof(method), "%.*s", (int)(target - 1 - head), head);
    ck_assert_int_eq(head_value(head, "Host", host, sizeof(host)), 0);
    ck_assert_int_eq(head_value(head, "X-Amz-Date", date, sizeof(date)), 0);
    ck_assert_int_eq(head_value(head, "X-Amz-Content-Sha256", sha, sizeof(sha)), 0);
    ck_assert_int_eq(head_value(head, "Authorization", auth, sizeof(auth)), 0);
    esbulk__sha256(body, body_len, payload);
    esbulk__hex(payload, sizeof(payload), want_sha);
    ck_assert_str_eq(sha, want_sha); /* the body as received */
    /* the query as sent is the canonical one: nothing left to encode */
    for (i = 0; target[i] != ' '; i++)
        ck_assert_msg(target[i] != ',' && target[i] != '*', "not encoded: %.60s", target);
    memset(&tm, 0, sizeof(tm));
    ck_assert_ptr_nonnull(strptime(date, "%Y%m%dT%H%M%SZ", &tm));
    snprintf(url, sizeof(url), "http://%s%.*s", host, (int)strcspn(target, " "), target);
    ck_assert_int_eq(esbulk__sigv4_sign(aws, method, url, payload, timegm(&tm), &sig), ESBULK_OK);
    ck_assert_str_eq(sig.url, url); /* already in the form signed */
    for (i = 0; sig.lines[i] != NULL; i++)
        if (strncmp(sig.lines[i], "Authorization: ", 15) == 0)
            ck_assert_str_eq(sig.lines[i] + 15, auth);
    esbulk__sigv4_free(&sig);
}

/* auth.aws.*: every request, bulk and metadata, carries a signature of its
 * method, path, canonical query, host, date, token and body. */
START_TEST(test_aws_signed)
{
    esbulk__aws_t aws = {"eu-west-1", "es", "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                         "tok/en+="};
    static const char *const keys[][2] = {
        {"auth.aws.region", "eu-west-1"},
        {"auth.aws.access_key_id", "AKIDEXAMPLE"},
        {"auth.aws.secret_access_key", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"},
        {"auth.aws.session_token", "tok/en+="},
    };
    esbulk_conf_t *conf;
    recorder_t rec;
    pthread_t th;
    char errstr[256], tok[64];
    esbulk_t *eb;
    size_t k;

    conf = recorder_conf(&rec, &th, "10");
    for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
        ck_assert_int_eq(esbulk_conf_set(conf, keys[k][0], keys[k][1], errstr, sizeof(errstr)),
                         ESBULK_OK);
    eb = counted_handle(conf);
    add_three(eb, "id");
    ck_assert_int_eq(results_seen, 3);
    esbulk_destroy(eb);
    recorder_stop(&rec, th);
    ck_assert_int_eq(rec.requests, 1);
    ck_assert_int_eq(head_value(rec.head, "X-Amz-Security-Token", tok, sizeof(tok)), 0);
    ck_assert_str_eq(tok, "tok/en+=");
    ck_assert_int_eq(strncmp(rec.head, "POST /_bulk?filter_path=", 24), 0);
    assert_signed(rec.head, rec.bodies.data, rec.bodies.len, &aws);
    /* the handle's first look at the cluster (GET /, no body) */
    ck_assert_int_eq(strncmp(rec.root_head, "GET / ", 6), 0);
    assert_signed(rec.root_head, "", 0, &aws);
    esbulk__buf_free(&rec.bodies);
}
END_TEST

static void aws_keys_set(esbulk_conf_t *conf, const char *secret, const char *token)
{
    ck_assert_int_eq(esbulk_conf_set(conf, "auth.aws.region", "eu-west-1", NULL, 0), ESBULK_OK);
    ck_assert_int_eq(esbulk_conf_set(conf, "auth.aws.access_key_id", "AKIDEXAMPLE", NULL, 0),
                     ESBULK_OK);
    ck_assert_int_eq(esbulk_conf_set(conf, "auth.aws.secret_access_key", secret, NULL, 0),
                     ESBULK_OK);
    ck_assert_int_eq(esbulk_conf_set(conf, "auth.aws.session_token", token, NULL, 0), ESBULK_OK);
}

static esbulk_conf_t *aws_conf(const char *secret, const char *token)
{
    esbulk_conf_t *conf = esbulk_conf_new();

    ck_assert_ptr_nonnull(conf);
    aws_keys_set(conf, secret, token);
    return conf;
}

/* esbulk_auth_update(): the requests that start after it carry the new
 * credentials (AWS temporary ones rotated: the signature and the token);
 * an update of another kind, or not whole, is refused and changes
 * nothing. */
START_TEST(test_auth_update_rotates)
{
    esbulk__aws_t a = {"eu-west-1", "es", "AKIDEXAMPLE", "secret-one", "token-one"};
    esbulk__aws_t b = {"eu-west-1", "es", "AKIDEXAMPLE", "secret-two", "token-two"};
    esbulk_conf_t *conf, *upd;
    recorder_t rec;
    pthread_t th;
    char errstr[256], tok[64];
    esbulk_t *eb;
    size_t first_len;

    conf = recorder_conf(&rec, &th, "3");
    aws_keys_set(conf, "secret-one", "token-one");
    eb = counted_handle(conf);
    add_three(eb, "a");
    pthread_mutex_lock(&rec.lock);
    first_len = rec.bodies.len;
    assert_signed(rec.head, rec.bodies.data, rec.bodies.len, &a);
    pthread_mutex_unlock(&rec.lock);

    /* another kind, a conf that is not whole, NULLs: refused, nothing changed */
    upd = esbulk_conf_new();
    ck_assert_int_eq(esbulk_conf_set(upd, "auth.username", "u", NULL, 0), ESBULK_OK);
    ck_assert_int_eq(esbulk_auth_update(eb, upd, errstr, sizeof(errstr)), ESBULK_ERR_INVALID_ARG);
    ck_assert_msg(strstr(errstr, "authenticates with auth.aws.*; the update gives "
                                 "auth.username") != NULL, "%s", errstr);
    esbulk_conf_destroy(upd);
    upd = esbulk_conf_new();
    ck_assert_int_eq(esbulk_conf_set(upd, "auth.aws.region", "eu-west-1", NULL, 0), ESBULK_OK);
    ck_assert_int_eq(esbulk_auth_update(eb, upd, errstr, sizeof(errstr)), ESBULK_ERR_BAD_VALUE);
    ck_assert_msg(strstr(errstr, "needs auth.aws.access_key_id") != NULL, "%s", errstr);
    esbulk_conf_destroy(upd);
    ck_assert_int_eq(esbulk_auth_update(NULL, NULL, errstr, sizeof(errstr)),
                     ESBULK_ERR_INVALID_ARG);
    ck_assert_int_eq(esbulk_auth_update(eb, NULL, errstr, sizeof(errstr)),
                     ESBULK_ERR_INVALID_ARG);

    upd = aws_conf("secret-two", "token-two");
    ck_assert_int_eq(esbulk_auth_update(eb, upd, errstr, sizeof(errstr)), ESBULK_OK);
    esbulk_conf_destroy(upd);
    add_three(eb, "b");
    ck_assert_int_eq(results_seen, 6);
    esbulk_destroy(eb);
    recorder_stop(&rec, th);
    ck_assert_int_eq(rec.requests, 2);
    ck_assert_int_eq(head_value(rec.head, "X-Amz-Security-Token", tok, sizeof(tok)), 0);
    ck_assert_str_eq(tok, "token-two");
    assert_signed(rec.head, rec.bodies.data + first_len, rec.bodies.len - first_len, &b);
    esbulk__buf_free(&rec.bodies);
}
END_TEST

/* A rotated password: basic credentials after the update. */
START_TEST(test_auth_update_basic)
{
    esbulk_conf_t *conf, *upd;
    recorder_t rec;
    pthread_t th;
    char errstr[256];
    esbulk_t *eb;

    conf = recorder_conf(&rec, &th, "3");
    ck_assert_int_eq(esbulk_conf_set(conf, "auth.username", "u", NULL, 0), ESBULK_OK);
    ck_assert_int_eq(esbulk_conf_set(conf, "auth.password", "p1", NULL, 0), ESBULK_OK);
    eb = counted_handle(conf);
    add_three(eb, "a");
    pthread_mutex_lock(&rec.lock);
    ck_assert_ptr_nonnull(strstr(rec.head, "\r\nAuthorization: Basic dTpwMQ==\r\n")); /* u:p1 */
    pthread_mutex_unlock(&rec.lock);
    upd = esbulk_conf_new();
    ck_assert_int_eq(esbulk_conf_set(upd, "auth.username", "u", NULL, 0), ESBULK_OK);
    ck_assert_int_eq(esbulk_conf_set(upd, "auth.password", "p2", NULL, 0), ESBULK_OK);
    ck_assert_int_eq(esbulk_auth_update(eb, upd, errstr, sizeof(errstr)), ESBULK_OK);
    esbulk_conf_destroy(upd);
    add_three(eb, "b");
    esbulk_destroy(eb);
    recorder_stop(&rec, th);
    ck_assert_int_eq(rec.requests, 2);
    ck_assert_ptr_nonnull(strstr(rec.head, "\r\nAuthorization: Basic dTpwMg==\r\n")); /* u:p2 */
    esbulk__buf_free(&rec.bodies);
}
END_TEST

/* Updates from another thread while requests are signed (run under TSan
 * in CI): every request is signed with one whole set of credentials. */
static void *updater(void *arg)
{
    esbulk_t *eb = arg;
    int i;

    for (i = 0; i < 200; i++) {
        esbulk_conf_t *upd = aws_conf(i % 2 ? "secret-one" : "secret-two",
                                      i % 2 ? "token-one" : "token-two");
        char errstr[256];

        ck_assert_int_eq(esbulk_auth_update(eb, upd, errstr, sizeof(errstr)), ESBULK_OK);
        esbulk_conf_destroy(upd);
    }
    return NULL;
}

START_TEST(test_auth_update_concurrent)
{
    esbulk__aws_t a = {"eu-west-1", "es", "AKIDEXAMPLE", "secret-one", "token-one"};
    esbulk__aws_t b = {"eu-west-1", "es", "AKIDEXAMPLE", "secret-two", "token-two"};
    esbulk_conf_t *conf;
    recorder_t rec;
    pthread_t th, up;
    char tok[64];
    esbulk_t *eb;
    int round;

    conf = recorder_conf(&rec, &th, "3");
    aws_keys_set(conf, "secret-one", "token-one");
    eb = counted_handle(conf);
    ck_assert_int_eq(pthread_create(&up, NULL, updater, eb), 0);
    for (round = 0; round < 10; round++) {
        size_t before;
        char prefix[16];

        pthread_mutex_lock(&rec.lock);
        before = rec.bodies.len;
        pthread_mutex_unlock(&rec.lock);
        snprintf(prefix, sizeof(prefix), "r%d-", round);
        add_three(eb, prefix);
        pthread_mutex_lock(&rec.lock);
        /* signed with the set its token names, whole */
        ck_assert_int_eq(head_value(rec.head, "X-Amz-Security-Token", tok, sizeof(tok)), 0);
        assert_signed(rec.head, rec.bodies.data + before, rec.bodies.len - before,
                      strcmp(tok, "token-one") == 0 ? &a : &b);
        pthread_mutex_unlock(&rec.lock);
    }
    pthread_join(up, NULL);
    esbulk_destroy(eb);
    recorder_stop(&rec, th);
    esbulk__buf_free(&rec.bodies);
}
END_TEST

/* esbulk_request(): one request with the handle's credentials and headers,
 * against its seeds in order until one answers; HEAD waits for no body;
 * bad arguments refused before anything is sent. */
START_TEST(test_request)
{
    esbulk_conf_t *conf;
    recorder_t rec;
    pthread_t th;
    char errstr[256], *resp = NULL, url[64], urls[160];
    size_t len = 99;
    int32_t st = 0;
    esbulk_t *eb;
    int64_t t0;

    conf = recorder_conf(&rec, &th, "10");
    ck_assert_int_eq(esbulk_conf_get(conf, "urls", url, sizeof(url), NULL), ESBULK_OK);
    snprintf(urls, sizeof(urls), "http://127.0.0.1:1,%s", url); /* the first one is dead */
    ck_assert_int_eq(esbulk_conf_set(conf, "urls", urls, NULL, 0), ESBULK_OK);
    ck_assert_int_eq(esbulk_conf_set(conf, "auth.bearer", "tok-7", NULL, 0), ESBULK_OK);
    ck_assert_int_eq(esbulk_conf_set(conf, "http.headers", "X-Opaque-Id: admin", NULL, 0),
                     ESBULK_OK);
    eb = counted_handle(conf);
    ck_assert_int_eq(esbulk_request(eb, "PUT", "/idx/_settings?x=1", "{\"a\":1}", 7, 5000, &st,
                                    &resp, &len, errstr, sizeof(errstr)), ESBULK_OK);
    ck_assert_int_eq(st, 404); /* the recorder's answer to what is not a bulk */
    ck_assert_str_eq(resp, "{}");
    ck_assert_uint_eq(len, 2);
    esbulk_free(resp);
    pthread_mutex_lock(&rec.lock);
    {
        /* its head among the handle's own (GET /, ...: they may come after) */
        const char *h = strstr(rec.metas.data, "PUT /idx/_settings?x=1 HTTP/1.1\r\n");
        char one[2048];

        ck_assert_ptr_nonnull(h);
        snprintf(one, sizeof(one), "%.*s", (int)(strstr(h, "\r\n\r\n") + 2 - h), h);
        ck_assert_ptr_nonnull(strstr(one, "\r\nAuthorization: Bearer tok-7\r\n"));
        ck_assert_ptr_nonnull(strstr(one, "\r\nX-Opaque-Id: admin\r\n"));
        ck_assert_ptr_nonnull(strstr(one, "\r\nContent-Type: application/json\r\n"));
        ck_assert_ptr_nonnull(strstr(one, "\r\nContent-Length: 7\r\n"));
    }
    pthread_mutex_unlock(&rec.lock);
    /* HEAD: the answer's Content-Length is not waited for */
    t0 = esbulk__now_ms();
    ck_assert_int_eq(esbulk_request(eb, "HEAD", "/idx", NULL, 0, 5000, &st, &resp, &len, errstr,
                                    sizeof(errstr)), ESBULK_OK);
    ck_assert_int_lt(esbulk__now_ms() - t0, 2000);
    ck_assert_int_eq(st, 404);
    ck_assert_str_eq(resp, "");
    ck_assert_uint_eq(len, 0);
    esbulk_free(resp);
    /* no response wanted */
    ck_assert_int_eq(esbulk_request(eb, "GET", "/", NULL, 0, 0, &st, NULL, NULL, NULL, 0),
                     ESBULK_OK);
    /* refused, nothing sent */
    ck_assert_int_eq(esbulk_request(eb, "PATCH", "/", NULL, 0, 0, &st, NULL, NULL, errstr,
                                    sizeof(errstr)), ESBULK_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(errstr, "GET, HEAD, PUT, POST or DELETE"));
    ck_assert_int_eq(esbulk_request(eb, "GET", "idx", NULL, 0, 0, &st, NULL, NULL, errstr,
                                    sizeof(errstr)), ESBULK_ERR_INVALID_ARG);
    ck_assert_int_eq(esbulk_request(eb, "GET", "/a b", NULL, 0, 0, &st, NULL, NULL, errstr,
                                    sizeof(errstr)), ESBULK_ERR_INVALID_ARG);
    ck_assert_int_eq(esbulk_request(eb, "GET", "/a\r\nX: 1", NULL, 0, 0, &st, NULL, NULL,
                                    errstr, sizeof(errstr)), ESBULK_ERR_INVALID_ARG);
    ck_assert_int_eq(esbulk_request(eb, "HEAD", "/", "{}", 2, 0, &st, NULL, NULL, errstr,
                                    sizeof(errstr)), ESBULK_ERR_INVALID_ARG);
    ck_assert_int_eq(esbulk_request(eb, "GET", "/", NULL, 0, -1, &st, NULL, NULL, errstr,
                                    sizeof(errstr)), ESBULK_ERR_INVALID_ARG);
    ck_assert_int_eq(esbulk_request(eb, "GET", "/", NULL, 0, 0, NULL, NULL, NULL, errstr,
                                    sizeof(errstr)), ESBULK_ERR_INVALID_ARG);
    ck_assert_int_eq(esbulk_request(NULL, "GET", "/", NULL, 0, 0, &st, NULL, NULL, errstr,
                                    sizeof(errstr)), ESBULK_ERR_INVALID_ARG);
    esbulk_destroy(eb);
    recorder_stop(&rec, th);
    esbulk__buf_free(&rec.bodies);

    /* no seed answers: the transport's error, no response */
    conf = esbulk_conf_new();
    ck_assert_int_eq(esbulk_conf_set(conf, "urls", "http://127.0.0.1:1", NULL, 0), ESBULK_OK);
    eb = counted_handle(conf);
    resp = (char *)"x";
    ck_assert_int_eq(esbulk_request(eb, "GET", "/", NULL, 0, 2000, &st, &resp, &len, errstr,
                                    sizeof(errstr)), ESBULK_ERR_TRANSPORT);
    ck_assert_ptr_null(resp);
    ck_assert_int_eq(st, 0);
    ck_assert_ptr_nonnull(strstr(errstr, "127.0.0.1:1"));
    esbulk_destroy(eb);
}
END_TEST

/* What each bulk request asks the server for (filter_path): every item's
 * status and errors; its _seq_no, _primary_term and _version only with
 * result.meta; its result only when the request holds an update; none of
 * the three with result.failures_only (the successes are not shown). */
START_TEST(test_answer_fields_asked)
{
    static const struct {
        const char *meta, *failures_only;
        esbulk_op_t op;
        int seq_no, result;
    } cases[] = {
        {"false", "false", ESBULK_OP_INDEX, 0, 0},  {"true", "false", ESBULK_OP_INDEX, 1, 0},
        {"false", "false", ESBULK_OP_UPDATE, 0, 1}, {"true", "true", ESBULK_OP_UPDATE, 0, 0},
        {"false", "false", ESBULK_OP_DELETE, 0, 0},
    };
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        esbulk_conf_t *conf = esbulk_conf_new();
        recorder_t rec;
        pthread_t th;
        char url[64], errstr[256];
        const char *body = cases[i].op == ESBULK_OP_UPDATE ? "{\"doc\":{}}" : "{}";
        esbulk_t *eb;

        recorder_start(&rec, &th, url, sizeof(url));
        ck_assert_int_eq(esbulk_conf_set(conf, "urls", url, NULL, 0), 0);
        ck_assert_int_eq(esbulk_conf_set(conf, "routing.level", "off", NULL, 0), 0);
        ck_assert_int_eq(esbulk_conf_set(conf, "result.meta", cases[i].meta, NULL, 0), 0);
        ck_assert_int_eq(esbulk_conf_set(conf, "result.failures_only", cases[i].failures_only,
                                         NULL, 0), 0);
        eb = counted_handle(conf);
        ck_assert_int_eq(esbulk_add(eb, cases[i].op, "idx", "a", 1, NULL, 0, body,
                                    cases[i].op == ESBULK_OP_DELETE ? 0 : strlen(body), NULL,
                                    errstr, sizeof(errstr)), ESBULK_OK);
        ck_assert_int_eq(esbulk_flush(eb, 30000), ESBULK_OK);
        esbulk_destroy(eb);
        recorder_stop(&rec, th);
        ck_assert_int_eq(rec.requests, 1);
        ck_assert_msg(strstr(rec.path, "items.*.status") != NULL &&
                          strstr(rec.path, "items.*.error.type") != NULL,
                      "case %zu: %s", i, rec.path);
        ck_assert_msg((strstr(rec.path, "items.*._seq_no") != NULL) == cases[i].seq_no &&
                          (strstr(rec.path, "items.*._version") != NULL) == cases[i].seq_no &&
                          (strstr(rec.path, "items.*._primary_term") != NULL) == cases[i].seq_no,
                      "case %zu: %s", i, rec.path);
        ck_assert_msg((strstr(rec.path, "items.*.result") != NULL) == cases[i].result,
                      "case %zu: %s", i, rec.path);
        /* the server is asked to answer before request.timeout.ms (30 s):
         * within 5/6 of it */
        ck_assert_msg(strstr(rec.path, "&timeout=25000ms") != NULL, "case %zu: %s", i, rec.path);
        esbulk__buf_free(&rec.bodies);
    }
}
END_TEST

/* request.timeout.ms sets the bulk's timeout: the server answers (503 for
 * a primary that is not active) before the request is broken off. */
START_TEST(test_bulk_timeout_under_request_timeout)
{
    static const char *const set[] = {"6000", "3600000", "1"};
    static const char *const want[] = {"&timeout=5000ms", "&timeout=3000000ms", "&timeout=1ms"};
    size_t i;

    /* the path itself, for each */
    for (i = 0; i < 3; i++) {
        esbulk_conf_t *conf = esbulk_conf_new();
        char *path = NULL;

        ck_assert_int_eq(esbulk_conf_set(conf, "request.timeout.ms", set[i], NULL, 0), 0);
        ck_assert_int_eq(esbulk__io_bulk_path(conf, 0, 0, 0, &path), ESBULK_OK);
        ck_assert_msg(strstr(path, want[i]) != NULL, "request.timeout.ms %s: %s", set[i], path);
        free(path);
        esbulk_conf_destroy(conf);
    }
    /* and as sent; not with 1 ms, which may run out before the request is
     * written (it did under valgrind): the server would never see it */
    for (i = 0; i < 2; i++) {
        esbulk_conf_t *conf = esbulk_conf_new();
        recorder_t rec;
        pthread_t th;
        char url[64], errstr[256];
        esbulk_t *eb;

        recorder_start(&rec, &th, url, sizeof(url));
        ck_assert_int_eq(esbulk_conf_set(conf, "urls", url, NULL, 0), 0);
        ck_assert_int_eq(esbulk_conf_set(conf, "routing.level", "off", NULL, 0), 0);
        ck_assert_int_eq(esbulk_conf_set(conf, "request.timeout.ms", set[i], NULL, 0), 0);
        eb = counted_handle(conf);
        ck_assert_int_eq(esbulk_add(eb, ESBULK_OP_INDEX, "idx", "a", 1, NULL, 0, "{}", 2, NULL,
                                    errstr, sizeof(errstr)), ESBULK_OK);
        esbulk_flush(eb, 30000);
        esbulk_destroy(eb);
        recorder_stop(&rec, th);
        ck_assert_msg(strstr(rec.path, want[i]) != NULL, "request.timeout.ms %s: %s", set[i],
                      rec.path);
        esbulk__buf_free(&rec.bodies);
    }
}
END_TEST

/* malloc.tune: with glibc's malloc at its default thresholds a 3 MiB
 * allocation is mmapped (counted in mallinfo2's hblks); once esbulk_new
 * has raised them (to 4 and 8 MiB) it comes from the heap, and with
 * malloc.tune=false it is still mmapped. Other allocators (sanitizers,
 * valgrind, another libc) or thresholds set by the environment: said, not
 * checked. */
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
#include <malloc.h>
#define HAVE_MALLINFO2 1
#endif

static void malloc_tune_case(const char *tune, int want_mmapped)
{
#ifdef HAVE_MALLINFO2
    esbulk_conf_t *conf = esbulk_conf_new();
    char errstr[256];
    void *before, *after;
    size_t n0, n1, n2, n3;
    esbulk_t *eb;

    n0 = mallinfo2().hblks;
    before = malloc((size_t)3 << 20);
    n1 = mallinfo2().hblks;
    ck_assert_ptr_nonnull(before);
    if (n1 != n0 + 1) {
        printf("malloc.tune=%s: a 3 MiB block was not mmapped before esbulk_new (not glibc's "
               "malloc at its default thresholds): not checked\n", tune);
        free(before);
        esbulk_conf_destroy(conf);
        return;
    }
    ck_assert_int_eq(esbulk_conf_set(conf, "urls", "http://127.0.0.1:1", errstr, sizeof(errstr)), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "malloc.tune", tune, errstr, sizeof(errstr)), 0);
    eb = esbulk_new(conf, errstr, sizeof(errstr));
    ck_assert_msg(eb != NULL, "%s", errstr);
    esbulk_conf_destroy(conf);
    n2 = mallinfo2().hblks;
    after = malloc((size_t)3 << 20);
    n3 = mallinfo2().hblks;
    ck_assert_ptr_nonnull(after);
    ck_assert_msg((n3 == n2 + 1) == want_mmapped,
                  "malloc.tune=%s: a 3 MiB block after esbulk_new is %s (want %s)", tune,
                  n3 == n2 + 1 ? "mmapped" : "from the heap",
                  want_mmapped ? "mmapped" : "from the heap");
    free(before);
    free(after);
    esbulk_destroy(eb);
#else
    (void)want_mmapped;
    printf("malloc.tune=%s: not glibc >= 2.33 (no mallinfo2): not checked\n", tune);
#endif
}

START_TEST(test_malloc_tune_raises)
{
    malloc_tune_case("true", 0);
}
END_TEST

START_TEST(test_malloc_tune_off)
{
    malloc_tune_case("false", 1);
}
END_TEST

/* With result.failures_only the I/O thread serves the successes itself:
 * it gives their records back in one go, one lock per answer (one by one,
 * each took the records' lock against the adding thread's, and a document
 * cost twice the CPU), and counts them served, so a flush then finds
 * nothing left to wait for; a flush waiting meanwhile sees them served. */
START_TEST(test_failures_only_frees_in_one_go)
{
    recorder_t rec;
    pthread_t th;
    esbulk_conf_t *conf = recorder_conf(&rec, &th, "50");
    esbulk_t *eb;
    int64_t t0;
    int64_t indexed = 0;
    uint64_t locks;
    int i;

    ck_assert_int_eq(esbulk_conf_set(conf, "result.failures_only", "true", NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "max.inflight.per.node", "1", NULL, 0), 0);
    eb = counted_handle(conf);
    for (i = 0; i < 200; i++)
        ck_assert_int_eq(add_one(eb, i), ESBULK_OK);
    /* no flush waits: the four answers come back on their own */
    t0 = esbulk__now_ms();
    while (indexed < 200 && esbulk__now_ms() - t0 < 20000) {
        char *stats = esbulk_stats_json(eb);
        json_t *st = json_loads(stats, 0, NULL);

        indexed = json_integer_value(json_object_get(st, "indexed"));
        json_decref(st);
        esbulk_free(stats);
        if (indexed < 200)
            usleep(2000);
    }
    ck_assert_int_eq(indexed, 200);
    locks = esbulk__docmem_free_locks(eb->dm);
    ck_assert_msg(locks >= 1 && locks <= 4, "records given back under %llu locks for 4 answers",
                  (unsigned long long)locks);
    ck_assert_int_eq(esbulk_flush(eb, 0), ESBULK_OK);
    /* and with a flush waiting for them */
    for (i = 200; i < 300; i++)
        ck_assert_int_eq(add_one(eb, i), ESBULK_OK);
    ck_assert_int_eq(esbulk_flush(eb, 30000), ESBULK_OK);
    ck_assert_uint_le(esbulk__docmem_free_locks(eb->dm) - locks, 2);
    ck_assert_int_eq(results_seen, 0);
    esbulk_destroy(eb);
    recorder_stop(&rec, th);
    ck_assert_int_eq(rec.requests, 6);
    esbulk__buf_free(&rec.bodies);
}
END_TEST

/* Results served by esbulk_poll with no flush waiting (no mark counts
 * them) stop counting as unserved all the same: a flush afterwards waits only
 * for the documents added since, and close finds none left. */
START_TEST(test_polled_results_not_waited_for)
{
    recorder_t rec;
    pthread_t th;
    esbulk_t *eb = counted_handle(recorder_conf(&rec, &th, "25"));
    int64_t t0;
    int i;

    for (i = 0; i < 100; i++)
        ck_assert_int_eq(add_one(eb, i), ESBULK_OK);
    t0 = esbulk__now_ms();
    while (results_seen < 100 && esbulk__now_ms() - t0 < 20000)
        esbulk_poll(eb, 50);
    ck_assert_int_eq(results_seen, 100);
    pthread_mutex_lock(&eb->lock);
    ck_assert_uint_eq(eb->live, 0);
    pthread_mutex_unlock(&eb->lock);
    for (i = 100; i < 110; i++)
        ck_assert_int_eq(add_one(eb, i), ESBULK_OK);
    ck_assert_int_eq(esbulk_flush(eb, 20000), ESBULK_OK);
    ck_assert_int_eq(results_seen, 110);
    /* after a flush: its force mark goes once spent, and the results served
     * next are counted without a walk again */
    for (i = 110; i < 155; i++)
        ck_assert_int_eq(add_one(eb, i), ESBULK_OK);
    t0 = esbulk__now_ms();
    while (results_seen < 135 && esbulk__now_ms() - t0 < 20000)
        esbulk_poll(eb, 50);
    ck_assert_int_eq(results_seen, 135); /* 20 wait for flush.docs */
    pthread_mutex_lock(&eb->lock);
    ck_assert_ptr_null(eb->marks);
    ck_assert_uint_eq(eb->live, 20);
    pthread_mutex_unlock(&eb->lock);
    ck_assert_int_eq(esbulk_flush(eb, 20000), ESBULK_OK);
    ck_assert_int_eq(results_seen, 155);
    ck_assert_int_eq(esbulk_close(eb, 5000), ESBULK_OK);
    esbulk_destroy(eb);
    recorder_stop(&rec, th);
    esbulk__buf_free(&rec.bodies);
}
END_TEST

/* result.keep_body: a document not indexed keeps its body for the result
 * (a dead-letter output), one indexed does not; without it none does. */
static struct {
    int n;
    char id[8][16];
    int outcome[8];
    char body[8][32]; /* "" when esbulk_result_body() gave none */
} kept;

static void on_result_kept(esbulk_t *eb, const esbulk_result_t *r, void *opaque)
{
    size_t len = 0;
    const char *b = esbulk_result_body(r, &len);
    int k = kept.n++;

    (void)eb;
    (void)opaque;
    ck_assert_int_lt(k, 8);
    snprintf(kept.id[k], sizeof(kept.id[k]), "%s", esbulk_result_id(r));
    kept.outcome[k] = esbulk_result_outcome(r);
    snprintf(kept.body[k], sizeof(kept.body[k]), "%.*s", b != NULL ? (int)len : 0,
             b != NULL ? b : "");
}

static void keep_body_run(const char *keep)
{
    static const char *const ids[] = {"ok-1", "fail-1", "ok-2", "fail-2"};
    char errstr[256], body[32];
    recorder_t rec;
    pthread_t th;
    esbulk_conf_t *conf = recorder_conf(&rec, &th, "5000");
    esbulk_t *eb;
    int i;

    ck_assert_int_eq(esbulk_conf_set(conf, "result.keep_body", keep, NULL, 0), 0);
    esbulk_conf_set_result_cb(conf, on_result_kept);
    eb = esbulk_new(conf, errstr, sizeof(errstr));
    ck_assert_msg(eb != NULL, "%s", errstr);
    esbulk_conf_destroy(conf);
    memset(&kept, 0, sizeof(kept));
    for (i = 0; i < 4; i++) {
        snprintf(body, sizeof(body), "{\"n\":%d}", i);
        ck_assert_int_eq(esbulk_add(eb, ESBULK_OP_INDEX, "idx", ids[i], strlen(ids[i]), NULL, 0,
                                    body, strlen(body), NULL, errstr, sizeof(errstr)),
                         ESBULK_OK);
    }
    ck_assert_int_eq(esbulk_flush(eb, 20000), ESBULK_OK);
    ck_assert_int_eq(kept.n, 4);
    for (i = 0; i < 4; i++) {
        int k, fail = strncmp(ids[i], "fail", 4) == 0;

        for (k = 0; k < 4 && strcmp(kept.id[k], ids[i]) != 0; k++)
            ;
        ck_assert_int_lt(k, 4);
        ck_assert_int_eq(kept.outcome[k], fail ? ESBULK_OUTCOME_FAILED : ESBULK_OUTCOME_INDEXED);
        snprintf(body, sizeof(body), "{\"n\":%d}", i);
        if (fail && strcmp(keep, "true") == 0)
            ck_assert_str_eq(kept.body[k], body);
        else
            ck_assert_str_eq(kept.body[k], "");
    }
    esbulk_destroy(eb);
    recorder_stop(&rec, th);
    esbulk__buf_free(&rec.bodies);
}

START_TEST(test_keep_body)
{
    keep_body_run("true");
    keep_body_run("false");
}
END_TEST

/* An answer that frees a node's request slot fills it at once: the next
 * waiting batch goes out in the same round, not at the I/O thread's next
 * wake-up for something else (here none: no add, no flush, no interval,
 * and the I/O thread sleeps up to 1 s: about 100 ms a request, seen). One
 * document a request, one request at a time: 16 requests in turn, a few ms
 * in all (some 100 ms under valgrind). */
START_TEST(test_answer_refills_slot_at_once)
{
    esbulk_conf_t *conf = esbulk_conf_new();
    recorder_t rec;
    pthread_t th;
    char url[64];
    esbulk_t *eb;
    int64_t t0, took;
    int i, n = 0;

    recorder_start(&rec, &th, url, sizeof(url));
    ck_assert_int_eq(esbulk_conf_set(conf, "urls", url, NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "routing.level", "off", NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "flush.docs", "1", NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "flush.interval.ms", "600000", NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "max.inflight.per.node", "1", NULL, 0), 0);
    eb = counted_handle(conf);
    t0 = esbulk__now_ms();
    for (i = 0; i < 16; i++)
        ck_assert_int_eq(add_one(eb, i), ESBULK_OK);
    /* the recorder's count, not results: serving them could wake the I/O
     * thread too */
    for (;;) {
        pthread_mutex_lock(&rec.lock);
        n = rec.requests;
        pthread_mutex_unlock(&rec.lock);
        if (n == 16 || esbulk__now_ms() - t0 > 20000)
            break;
        usleep(2000);
    }
    took = esbulk__now_ms() - t0;
    ck_assert_int_eq(n, 16);
    ck_assert_int_eq(esbulk_flush(eb, 10000), ESBULK_OK);
    ck_assert_int_eq(results_seen, 16);
    ck_assert_int_eq(failed_seen + possibly_seen, 0);
    ck_assert_msg(took < 600, "16 one-document requests in turn took %lld ms", (long long)took);
    esbulk_destroy(eb);
    recorder_stop(&rec, th);
    ck_assert_int_eq(rec.requests, 16);
    esbulk__buf_free(&rec.bodies);
}
END_TEST

/* Documents that came in after the I/O thread took incoming, without a
 * wake-up (it was awake): it sleeps no longer than the oldest one's
 * interval, and not at all once enough have come. */
START_TEST(test_handoff_sleep)
{
    esbulk_t eb;
    esbulk__doc_t d1, d2;

    memset(&eb, 0, sizeof(eb));
    memset(&d1, 0, sizeof(d1));
    memset(&d2, 0, sizeof(d2));
    pthread_mutex_init(&eb.lock, NULL);
    eb.wake_docs = 2;
    eb.wake_bytes = 1000;
    eb.wake_interval_ms = 50;
    ck_assert_int_eq(esbulk__handoff_sleep(&eb, 1000, 2000), 2000); /* nothing came */
    ck_assert_int_eq(eb.io_sleep_until, 2000);
    d1.queued_ms = 990;
    d1.lines_len = 10;
    esbulk__queue_push(&eb.incoming, &d1);
    ck_assert_int_eq(esbulk__handoff_sleep(&eb, 1000, 2000), 1040); /* its interval */
    ck_assert_int_eq(eb.io_sleep_until, 1040);
    ck_assert_int_eq(esbulk__handoff_sleep(&eb, 1000, 1020), 1020); /* sooner anyway */
    d2.queued_ms = 995;
    d2.lines_len = 10;
    esbulk__queue_push(&eb.incoming, &d2);
    ck_assert_int_eq(esbulk__handoff_sleep(&eb, 1000, 2000), 1000); /* wake_docs came */
    ck_assert_int_eq(eb.io_sleep_until, 0); /* awake: adds do not wake it */
    pthread_mutex_destroy(&eb.lock);
}
END_TEST

/* What flush and close wait for: each mark counts the documents added
 * before it, and a serving lowers only the marks it was added before. */
START_TEST(test_flush_marks)
{
    esbulk_t eb;
    esbulk__doc_t d[4];
    esbulk__mark_t first, second;
    int i;

    memset(&eb, 0, sizeof(eb));
    memset(d, 0, sizeof(d));
    for (i = 0; i < 2; i++) { /* added: seq 0, 1 */
        d[i].seq = eb.next_seq++;
        eb.live++;
    }
    esbulk__mark_add(&eb, &first);
    ck_assert_uint_eq(first.left, 2);
    for (i = 2; i < 4; i++) { /* seq 2, 3: after the first flush */
        d[i].seq = eb.next_seq++;
        eb.live++;
    }
    esbulk__mark_add(&eb, &second);
    ck_assert_uint_eq(second.left, 4);
    esbulk__live_done(&eb, &d[3]); /* only the second waits for it */
    ck_assert_uint_eq(first.left, 2);
    ck_assert_uint_eq(second.left, 3);
    esbulk__live_done(&eb, &d[0]);
    esbulk__live_done(&eb, &d[1]);
    ck_assert_uint_eq(first.left, 0);
    ck_assert_uint_eq(second.left, 1);
    esbulk__live_done(&eb, &d[2]); /* the first mark's upto: not below it */
    ck_assert_uint_eq(first.left, 0);
    ck_assert_uint_eq(second.left, 0);
    ck_assert_uint_eq(eb.live, 0);
    esbulk__mark_remove(&eb, &first); /* that flush returned */
    ck_assert_ptr_eq(eb.marks, &second);
    ck_assert_ptr_null(second.next);
    esbulk__mark_remove(&eb, &second);
    esbulk__mark_remove(&eb, &second); /* not there: nothing */
    ck_assert_ptr_null(eb.marks);
}
END_TEST

/* An add wakes the I/O thread only when it would look too late by itself:
 * a document added while it sleeps with nothing due (up to a second) still
 * goes at flush.interval.ms, and so does one added while it waits for
 * another document's interval (no wake-up then: it looks before it sleeps). */
START_TEST(test_interval_wakes_sleeping_io)
{
    esbulk_conf_t *conf = esbulk_conf_new();
    char errstr[256];
    esbulk_t *eb;
    int64_t t0;
    int i, n = 0;

    ck_assert_int_eq(esbulk_conf_set(conf, "urls", "http://127.0.0.1:1", errstr, sizeof(errstr)), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "connect.timeout.ms", "200", NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "flush.interval.ms", "50", NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "flush.docs", "100000", NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "retry.max", "0", NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "topology.wait.ms", "0", NULL, 0), 0);
    eb = counted_handle(conf);
    for (i = 0; i < 3; i++) {
        /* the I/O thread has slept with nothing due for 200 ms: without a
         * wake-up it would look again only after its 1 s maximum */
        usleep(200 * 1000);
        t0 = esbulk__now_ms();
        ck_assert_int_eq(add_one(eb, 2 * i), ESBULK_OK);
        usleep(20 * 1000);
        ck_assert_int_eq(add_one(eb, 2 * i + 1), ESBULK_OK); /* while the first waits */
        while (n < 2 * (i + 1) && esbulk__now_ms() - t0 < 5000)
            n += esbulk_poll(eb, 10);
        ck_assert_int_eq(n, 2 * (i + 1));
        ck_assert_int_lt(esbulk__now_ms() - t0, 600);
    }
    ck_assert_int_eq(failed_seen, 6); /* refused by the dead port, retry.max 0 */
    esbulk_destroy(eb);
}
END_TEST

/* The batch call queues in chunks under one lock: it still stops at the
 * first document that fails, with *accepted counting what went in. */
/* The same when the documents first wait for their index's layout (the
 * server accepts connections and never answers, so the metadata read
 * hangs): once they stop waiting they go at once, since the buffer is still
 * full. */
START_TEST(test_full_buffer_sends_after_layout_wait)
{
    esbulk_conf_t *conf = esbulk_conf_new();
    char url[64], errstr[256];
    int fd = silent_listener(url, sizeof(url)), i, n = 0;
    esbulk_t *eb;
    int64_t t0;

    ck_assert_int_eq(esbulk_conf_set(conf, "urls", url, errstr, sizeof(errstr)), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "flush.interval.ms", "600000", NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "flush.docs", "100000", NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "buffer.max.docs", "10", NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "topology.wait.ms", "300", NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "request.timeout.ms", "5000", NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "retry.max", "0", NULL, 0), 0);
    eb = counted_handle(conf);
    for (i = 0; i < 10; i++)
        ck_assert_int_eq(add_one(eb, i), ESBULK_OK);
    ck_assert_int_eq(add_one(eb, 10), ESBULK_ERR_QUEUE_FULL); /* while they wait */
    /* sent after the 300 ms wait; the silent server times them out at 5 s */
    t0 = esbulk__now_ms();
    while (n < 10 && esbulk__now_ms() - t0 < 9000)
        n += esbulk_poll(eb, 100);
    ck_assert_int_eq(n, 10);
    ck_assert_int_lt(esbulk__now_ms() - t0, 8000);
    esbulk_destroy(eb);
    close(fd);
}
END_TEST

START_TEST(test_add_batch_stops_at_first_failure)
{
    enum { N = 150 };
    static const char *bodies[N], *indices[N];
    static size_t lens[N];
    static int32_t ops[N];
    static void *opq[N];
    esbulk_t *eb = dead_handle_b("100", "0", "100", "100000");
    char errstr[256];
    size_t accepted = 7, i;

    for (i = 0; i < N; i++) {
        ops[i] = ESBULK_OP_INDEX;
        indices[i] = "idx";
        bodies[i] = i == 70 ? "not json" : "{\"a\":1}";
        lens[i] = strlen(bodies[i]);
        opq[i] = (void *)(intptr_t)i;
    }
    /* a bad body at 70: 70 accepted, its error returned */
    ck_assert_int_eq(esbulk_add_batch(eb, N, ops, indices, NULL, NULL, NULL, NULL, bodies, lens,
                                      opq, &accepted, errstr, sizeof(errstr)),
                     ESBULK_ERR_INVALID_JSON);
    ck_assert_uint_eq(accepted, 70);
    ck_assert_int_eq(esbulk_pending(eb), 70);
    /* the buffer holds 100: 30 more fit, then queue full */
    ck_assert_int_eq(esbulk_add_batch(eb, 60, ops + 80, indices, NULL, NULL, NULL, NULL,
                                      bodies + 80, lens + 80, opq + 80, &accepted, errstr,
                                      sizeof(errstr)),
                     ESBULK_ERR_QUEUE_FULL);
    ck_assert_uint_eq(accepted, 30);
    ck_assert_int_eq(esbulk_pending(eb), 100);
    ck_assert_int_eq(esbulk_close(eb, 0), ESBULK_ERR_TIMED_OUT);
    ck_assert_int_eq(results_seen, 100); /* each accepted one got its result, no other */
    esbulk_destroy(eb);
}
END_TEST

START_TEST(test_queue_full_after_timeout)
{
    esbulk_t *eb = dead_handle("5", "300", "0");
    int64_t t0;
    int i;

    for (i = 0; i < 5; i++)
        ck_assert_int_eq(add_one(eb, i), ESBULK_OK);
    t0 = esbulk__now_ms();
    ck_assert_int_eq(add_one(eb, 5), ESBULK_ERR_QUEUE_FULL);
    ck_assert_int_ge(esbulk__now_ms() - t0, 250); /* it waited enqueue.timeout.ms */
    /* the buffer is known full now; an add that may wait still waits */
    t0 = esbulk__now_ms();
    ck_assert_int_eq(add_one(eb, 6), ESBULK_ERR_QUEUE_FULL);
    ck_assert_int_ge(esbulk__now_ms() - t0, 250);
    esbulk_destroy(eb);
    ck_assert_int_eq(results_seen, 5);
}
END_TEST

typedef struct {
    esbulk_t *eb;
    esbulk_err_t err;
    int64_t waited_ms;
} adder_t;

static void *blocked_adder(void *arg)
{
    adder_t *a = arg;
    int64_t t0 = esbulk__now_ms();

    a->err = add_one(a->eb, 99);
    a->waited_ms = esbulk__now_ms() - t0;
    return NULL;
}

/* A full buffer blocks an add until results free space. */
START_TEST(test_blocking_add_unblocks)
{
    esbulk_t *eb = dead_handle("3", "10000", "0");
    adder_t a = {eb, ESBULK_ERR_INVALID_ARG, 0};
    pthread_t t;
    int i;

    for (i = 0; i < 3; i++)
        ck_assert_int_eq(add_one(eb, i), ESBULK_OK);
    pthread_create(&t, NULL, blocked_adder, &a);
    usleep(300000);
    ck_assert_int_eq(esbulk_pending(eb), 3); /* the fourth is still waiting */
    /* flush: sending fails at once (nothing listens; retry.max 0), the
     * results are served here, and that frees space for the fourth */
    ck_assert_int_eq(esbulk_flush(eb, 10000), ESBULK_OK);
    pthread_join(t, NULL);
    ck_assert_int_eq(a.err, ESBULK_OK);
    ck_assert_int_ge(a.waited_ms, 250);
    ck_assert_int_eq(esbulk_flush(eb, 10000), ESBULK_OK);
    ck_assert_int_eq(results_seen, 4);
    ck_assert_int_eq(failed_seen, 4);
    ck_assert_int_eq(esbulk_pending(eb), 0);
    esbulk_destroy(eb);
}
END_TEST

/* A document that cannot be delivered is retried retry.max times, then
 * reported with the reason. */
START_TEST(test_retries_exhausted)
{
    esbulk_t *eb = dead_handle("100", "0", "2");
    char *stats;

    ck_assert_int_eq(add_one(eb, 0), ESBULK_OK);
    ck_assert_int_eq(esbulk_flush(eb, 20000), ESBULK_OK);
    ck_assert_int_eq(results_seen, 1);
    ck_assert_int_eq(failed_seen, 1);
    stats = esbulk_stats_json(eb);
    ck_assert_ptr_nonnull(strstr(stats, "\"retried\":2"));
    ck_assert_ptr_nonnull(strstr(stats, "\"failed\":1"));
    esbulk_free(stats);
    esbulk_destroy(eb);
}
END_TEST

static esbulk_err_t last_err;
static int32_t last_attempts;
static char last_reason[512];

static void on_result_keep(esbulk_t *eb, const esbulk_result_t *r, void *opaque)
{
    on_result(eb, r, opaque);
    last_err = esbulk_result_err(r);
    last_attempts = esbulk_result_attempts(r);
    snprintf(last_reason, sizeof(last_reason), "%s",
             esbulk_result_error_reason(r) ? esbulk_result_error_reason(r) : "");
}

START_TEST(test_result_fields_on_exhaustion)
{
    esbulk_conf_t *conf = esbulk_conf_new();
    char errstr[256];
    esbulk_t *eb;

    esbulk_conf_set(conf, "urls", "http://127.0.0.1:1", NULL, 0);
    esbulk_conf_set(conf, "retry.max", "1", NULL, 0);
    esbulk_conf_set(conf, "retry.backoff.ms", "5", NULL, 0);
    esbulk_conf_set_result_cb(conf, on_result_keep);
    eb = esbulk_new(conf, errstr, sizeof(errstr));
    esbulk_conf_destroy(conf);
    results_seen = 0;
    poll_thread = pthread_self();
    ck_assert_int_eq(add_one(eb, 0), ESBULK_OK);
    ck_assert_int_eq(esbulk_flush(eb, 20000), ESBULK_OK);
    ck_assert_int_eq(results_seen, 1);
    ck_assert_int_eq(last_err, ESBULK_ERR_RETRIES_EXHAUSTED);
    ck_assert_int_eq(last_attempts, 2);
    ck_assert_ptr_nonnull(strstr(last_reason, "127.0.0.1:1"));
    esbulk_destroy(eb);
}
END_TEST

/* The log queue of a handle without a log callback: the last
 * ESBULK__LOGQ_MAX lines in order, the count of the older ones dropped said
 * first, texts cut to the caller's sizes, facility optional. */
START_TEST(test_log_queue)
{
    esbulk__logq_t *q = esbulk__logq_new();
    char fac[16], msg[64], line[64];
    int32_t level = -1;
    int i;

    ck_assert_ptr_nonnull(q);
    ck_assert_int_eq(esbulk__logq_take(q, &level, fac, sizeof(fac), msg, sizeof(msg)), 0);
    for (i = 1; i <= ESBULK__LOGQ_MAX + 6; i++) {
        snprintf(line, sizeof(line), "line %d", i);
        esbulk__logq_push(i % 2 ? ESBULK_LOG_WARNING : ESBULK_LOG_INFO, "io", line, q);
    }
    ck_assert_int_eq(esbulk__logq_take(q, &level, fac, sizeof(fac), msg, sizeof(msg)), 1);
    ck_assert_int_eq(level, ESBULK_LOG_WARNING);
    ck_assert_str_eq(fac, "log");
    ck_assert_msg(strncmp(msg, "6 log lines dropped", 19) == 0, "%s", msg);
    for (i = 7; i <= ESBULK__LOGQ_MAX + 6; i++) {
        snprintf(line, sizeof(line), "line %d", i);
        ck_assert_int_eq(esbulk__logq_take(q, &level, fac, sizeof(fac), msg, sizeof(msg)), 1);
        ck_assert_str_eq(msg, line);
        ck_assert_str_eq(fac, "io");
        ck_assert_int_eq(level, i % 2 ? ESBULK_LOG_WARNING : ESBULK_LOG_INFO);
    }
    ck_assert_int_eq(esbulk__logq_take(q, &level, fac, sizeof(fac), msg, sizeof(msg)), 0);
    /* cut to the sizes; no facility asked for */
    esbulk__logq_push(ESBULK_LOG_ERR, "topology", "a long message", q);
    ck_assert_int_eq(esbulk__logq_take(q, &level, NULL, 0, msg, 7), 1);
    ck_assert_str_eq(msg, "a long");
    /* lines left are freed with the queue (valgrind, ASan) */
    esbulk__logq_push(ESBULK_LOG_ERR, "topology", "left", q);
    esbulk__logq_free(q);
}
END_TEST

static void count_log(int32_t level, const char *facility, const char *message, void *opaque)
{
    (void)level;
    (void)facility;
    (void)message;
    __atomic_add_fetch((int *)opaque, 1, __ATOMIC_SEQ_CST);
}

/* A handle without a log callback keeps its lines for esbulk_log_take: a
 * URL nothing listens on gives warnings that say so, from the I/O thread
 * and from the topology thread, as soon as the reads fail. With a callback, the callback has them and
 * esbulk_log_take always returns 0. */
START_TEST(test_log_take)
{
    esbulk_conf_t *conf = dead_conf("0", "0", "0", "100");
    char fac[32], msg[1024];
    int32_t level, r;
    int64_t until = esbulk__now_ms() + 10000;
    int found = 0, called = 0;
    esbulk_t *eb;

    ck_assert_int_eq(esbulk_log_take(NULL, &level, fac, sizeof(fac), msg, sizeof(msg)),
                     ESBULK_ERR_INVALID_ARG);
    eb = esbulk_new(conf, msg, sizeof(msg));
    ck_assert_ptr_nonnull(eb);
    ck_assert_int_eq(esbulk_log_take(eb, NULL, fac, sizeof(fac), msg, sizeof(msg)),
                     ESBULK_ERR_INVALID_ARG);
    ck_assert_int_eq(esbulk_log_take(eb, &level, fac, sizeof(fac), msg, 0),
                     ESBULK_ERR_INVALID_ARG);
    ck_assert_int_eq(esbulk_log_take(eb, &level, NULL, 5, msg, sizeof(msg)),
                     ESBULK_ERR_INVALID_ARG);
    ck_assert_int_eq(esbulk_add(eb, ESBULK_OP_INDEX, "logs", "1", 1, NULL, 0, "{}", 2, NULL,
                                NULL, 0), ESBULK_OK);
    esbulk_flush(eb, 0);
    /* from the I/O thread (the cluster view, the node down) and from the
     * topology thread (its read), which logs through the handle too */
    while (found != 3 && esbulk__now_ms() < until) {
        r = esbulk_log_take(eb, &level, fac, sizeof(fac), msg, sizeof(msg));
        ck_assert_int_ge(r, 0);
        if (r == 0)
            usleep(10000);
        else if (level <= ESBULK_LOG_WARNING && strstr(msg, "127.0.0.1:1") != NULL &&
                 strstr(msg, "onnect") != NULL)
            /* the topology's own read says "GET <url>: ..."; the core's
             * "index <name>: ..." */
            found |= strcmp(fac, "topology") == 0 && strncmp(msg, "GET ", 4) == 0 ? 2 : 1;
    }
    ck_assert_msg(found == 3, "warnings about http://127.0.0.1:1 taken in 10 s: from the I/O "
                  "thread %s, from the topology thread %s", found & 1 ? "yes" : "no",
                  found & 2 ? "yes" : "no");
    esbulk_destroy(eb);

    esbulk_conf_set_log_cb(conf, count_log);
    esbulk_conf_set_opaque(conf, &called);
    eb = esbulk_new(conf, msg, sizeof(msg));
    ck_assert_ptr_nonnull(eb);
    ck_assert_int_eq(esbulk_add(eb, ESBULK_OP_INDEX, "logs", "1", 1, NULL, 0, "{}", 2, NULL,
                                NULL, 0), ESBULK_OK);
    esbulk_flush(eb, 0);
    until = esbulk__now_ms() + 10000;
    while (__atomic_load_n(&called, __ATOMIC_SEQ_CST) == 0 && esbulk__now_ms() < until)
        usleep(10000);
    ck_assert_int_gt(__atomic_load_n(&called, __ATOMIC_SEQ_CST), 0);
    ck_assert_int_eq(esbulk_log_take(eb, &level, fac, sizeof(fac), msg, sizeof(msg)), 0);
    esbulk_destroy(eb);
    esbulk_conf_destroy(conf);
}
END_TEST

/* The topology's reads of a seed, counted by level. */
typedef struct {
    pthread_mutex_t lock;
    int warnings, debugs;
} seed_said_t;

static void count_seed_said(int32_t level, const char *facility, const char *message,
                            void *opaque)
{
    seed_said_t *s = opaque;

    if (strcmp(facility, "topology") != 0 || strncmp(message, "GET http://127.0.0.1:1/", 23) != 0)
        return;
    pthread_mutex_lock(&s->lock);
    if (level <= ESBULK_LOG_WARNING)
        s->warnings++;
    else if (level == ESBULK_LOG_DEBUG)
        s->debugs++;
    pthread_mutex_unlock(&s->lock);
}

/* A seed that does not answer is said once at warning level, however often
 * the topology asks it again (every half second while documents wait):
 * the rest at debug level. */
START_TEST(test_dead_seed_said_once)
{
    esbulk_conf_t *conf = dead_conf("0", "0", "100", "100000");
    seed_said_t said;
    char errstr[256];
    int64_t until;
    esbulk_t *eb;
    int debugs;

    memset(&said, 0, sizeof(said));
    pthread_mutex_init(&said.lock, NULL);
    ck_assert_int_eq(esbulk_conf_set(conf, "log.level", "7", NULL, 0), 0);
    esbulk_conf_set_log_cb(conf, count_seed_said);
    esbulk_conf_set_opaque(conf, &said);
    eb = esbulk_new(conf, errstr, sizeof(errstr));
    ck_assert_msg(eb != NULL, "%s", errstr);
    ck_assert_int_eq(esbulk_add(eb, ESBULK_OP_INDEX, "logs", "1", 1, NULL, 0, "{}", 2, NULL,
                                NULL, 0), ESBULK_OK);
    esbulk_flush(eb, 0);
    /* until the seed was asked at least three times */
    until = esbulk__now_ms() + 15000;
    do {
        usleep(20000);
        pthread_mutex_lock(&said.lock);
        debugs = said.debugs;
        pthread_mutex_unlock(&said.lock);
    } while (debugs < 2 && esbulk__now_ms() < until);
    esbulk_destroy(eb);
    ck_assert_msg(said.debugs >= 2, "the seed was asked again %d times in 15 s", said.debugs);
    ck_assert_int_eq(said.warnings, 1);
    pthread_mutex_destroy(&said.lock);
    esbulk_conf_destroy(conf);
}
END_TEST

/* Lines at WARNING or worse, kept for test_close_is_quiet. */
typedef struct {
    pthread_mutex_t lock;
    int n;
    char first[512];
} bad_lines_t;

static void keep_bad_lines(int32_t level, const char *facility, const char *message, void *opaque)
{
    bad_lines_t *b = opaque;

    if (level > ESBULK_LOG_WARNING)
        return;
    pthread_mutex_lock(&b->lock);
    if (b->n++ == 0)
        snprintf(b->first, sizeof(b->first), "%s: %s", facility, message);
    pthread_mutex_unlock(&b->lock);
}

/* Closing a handle whose topology reads are still waiting for the cluster
 * stops them, and says nothing about it: the user closed it. (It used to
 * warn "GET <url>/: stopped: the handle is closing", once for every seed.) */
START_TEST(test_close_is_quiet)
{
    esbulk_conf_t *conf = esbulk_conf_new();
    char url1[64], url2[64], urls[160], errstr[256];
    int fd1 = silent_listener(url1, sizeof(url1)), fd2 = silent_listener(url2, sizeof(url2));
    bad_lines_t bad;
    esbulk_t *eb;

    memset(&bad, 0, sizeof(bad));
    pthread_mutex_init(&bad.lock, NULL);
    snprintf(urls, sizeof(urls), "%s,%s", url1, url2);
    ck_assert_int_eq(esbulk_conf_set(conf, "urls", urls, NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "log.level", "7", NULL, 0), 0);
    esbulk_conf_set_log_cb(conf, keep_bad_lines);
    esbulk_conf_set_opaque(conf, &bad);
    eb = esbulk_new(conf, errstr, sizeof(errstr));
    ck_assert_msg(eb != NULL, "%s", errstr);
    usleep(300 * 1000); /* the first read is sent, and waits */
    ck_assert_int_eq(esbulk_close(eb, 0), ESBULK_OK);
    esbulk_destroy(eb);
    ck_assert_msg(bad.n == 0, "%d warning(s) at close, the first: %s", bad.n, bad.first);
    pthread_mutex_destroy(&bad.lock);
    esbulk_conf_destroy(conf);
    close(fd1);
    close(fd2);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("engine");
    TCase *pure = tcase_create("pure"), *handle = tcase_create("handle");
    SRunner *sr;
    int failed;

    tcase_add_test(pure, test_flush_thresholds);
    tcase_add_test(pure, test_backoff);
    tcase_add_test(pure, test_retry_decide);
    tcase_add_test(pure, test_action_line);
    tcase_add_test(pure, test_action_line_opts);
    tcase_add_test(pure, test_body_line);
    tcase_add_test(pure, test_ids);
    tcase_add_test(pure, test_handoff_sleep);
    tcase_add_test(pure, test_flush_marks);
    tcase_add_test(pure, test_json_string_every_position);
    tcase_add_test(pure, test_plain_ascii_every_byte);
    tcase_add_test(pure, test_action_line_plain_same_bytes);
    tcase_add_test(pure, test_log_queue);
    tcase_set_timeout(handle, 60);
    tcase_add_test(handle, test_add_errors);
    tcase_add_test(handle, test_close_is_quiet);
    tcase_add_test(handle, test_dead_seed_said_once);
    tcase_add_test(handle, test_queue_full_at_once);
    tcase_add_test(handle, test_queue_full_before_build);
    tcase_add_test(handle, test_buffer_sized_by_cluster);
    tcase_add_test(handle, test_queue_full_after_timeout);
    tcase_add_test(handle, test_full_buffer_sends_now);
    tcase_add_test(handle, test_interval_wakes_sleeping_io);
    tcase_add_test(handle, test_flush_timed_out_still_sends);
    tcase_add_test(handle, test_request_bodies_are_the_lines);
    tcase_add_test(handle, test_custom_headers_sent);
    tcase_add_test(handle, test_aws_signed);
    tcase_add_test(handle, test_auth_update_rotates);
    tcase_add_test(handle, test_auth_update_basic);
    tcase_add_test(handle, test_auth_update_concurrent);
    tcase_add_test(handle, test_request);
    tcase_add_test(handle, test_answer_refills_slot_at_once);
    tcase_add_test(handle, test_failures_only_frees_in_one_go);
    tcase_add_test(handle, test_polled_results_not_waited_for);
    tcase_add_test(handle, test_keep_body);
    tcase_add_test(handle, test_malloc_tune_raises);
    tcase_add_test(handle, test_malloc_tune_off);
    tcase_add_test(handle, test_answer_fields_asked);
    tcase_add_test(handle, test_bulk_timeout_under_request_timeout);
    tcase_add_test(handle, test_full_buffer_sends_after_layout_wait);
    tcase_add_test(handle, test_add_batch_stops_at_first_failure);
    tcase_add_test(handle, test_blocking_add_unblocks);
    tcase_add_test(handle, test_retries_exhausted);
    tcase_add_test(handle, test_result_fields_on_exhaustion);
    tcase_add_test(handle, test_log_take);
    suite_add_tcase(s, pure);
    suite_add_tcase(s, handle);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
