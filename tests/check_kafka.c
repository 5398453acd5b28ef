/* esbulk-kafka's pure parts: the offset tracker (results out of order, dead
 * letters pending, a revoke, a lost partition), the index template, the
 * _id and routing derivation, the bulk format's action line, the dead
 * letter's headers, and the settings (file, --set, unknown keys). The
 * modules are compiled in here (they need no librdkafka), so the sanitizer
 * and valgrind runs take this test as they are. */
#include "kafka/config.c"
#include "kafka/message.c"
#include "kafka/tracker.c"

#include <check.h>
#include <fcntl.h>
#include <unistd.h>

/* ---- the tracker ---- */

START_TEST(test_track_in_order)
{
    ekf_track_t t;
    ekf_track_init(&t);
    ck_assert_int_eq(ekf_track_watermark(&t), -1); /* nothing read: nothing to commit */
    for (int64_t o = 10; o < 15; o++)
        ck_assert_int_eq(ekf_track_add(&t, o), 0);
    ck_assert_int_eq(ekf_track_watermark(&t), 10);
    ck_assert_uint_eq(ekf_track_inflight(&t), 5);
    for (int64_t o = 10; o < 15; o++) {
        ck_assert_int_eq(ekf_track_set(&t, o, EKF_DONE), 0);
        ck_assert_int_eq(ekf_track_watermark(&t), o + 1);
    }
    ck_assert_uint_eq(ekf_track_inflight(&t), 0);
    ck_assert_int_eq(ekf_track_set(&t, 12, EKF_DONE), -1); /* done twice */
    ck_assert_int_eq(ekf_track_add(&t, 14), -2);           /* not above the last */
    ekf_track_free(&t);
}
END_TEST

START_TEST(test_track_out_of_order)
{
    ekf_track_t t;
    ekf_track_init(&t);
    for (int64_t o = 0; o < 6; o++)
        ck_assert_int_eq(ekf_track_add(&t, o), 0);
    /* later results first: the watermark stays at the first without one */
    ck_assert_int_eq(ekf_track_set(&t, 3, EKF_DONE), 0);
    ck_assert_int_eq(ekf_track_set(&t, 5, EKF_DONE), 0);
    ck_assert_int_eq(ekf_track_set(&t, 1, EKF_DONE), 0);
    ck_assert_int_eq(ekf_track_watermark(&t), 0);
    ck_assert_uint_eq(ekf_track_inflight(&t), 3);
    ck_assert_int_eq(ekf_track_set(&t, 0, EKF_DONE), 0);
    ck_assert_int_eq(ekf_track_watermark(&t), 2); /* 0 and 1 done, 2 not */
    ck_assert_int_eq(ekf_track_set(&t, 2, EKF_DONE), 0);
    ck_assert_int_eq(ekf_track_watermark(&t), 4); /* over 3, stops at 4 */
    ck_assert_int_eq(ekf_track_set(&t, 4, EKF_DONE), 0);
    ck_assert_int_eq(ekf_track_watermark(&t), 6); /* all: the one after the last */
    ekf_track_free(&t);
}
END_TEST

START_TEST(test_track_gaps_and_growth)
{
    /* a compacted topic's offsets have gaps; thousands in flight grow the
     * buffer across its wrap-around */
    ekf_track_t t;
    ekf_track_init(&t);
    for (int64_t i = 0; i < 100; i++)
        ck_assert_int_eq(ekf_track_add(&t, i * 3), 0);
    for (int64_t i = 0; i < 50; i++)
        ck_assert_int_eq(ekf_track_set(&t, i * 3, EKF_DONE), 0);
    ck_assert_int_eq(ekf_track_watermark(&t), 150);
    ck_assert_int_eq(ekf_track_set(&t, 151, EKF_DONE), -1); /* a gap: never read */
    for (int64_t i = 100; i < 5000; i++)
        ck_assert_int_eq(ekf_track_add(&t, i * 3), 0);
    for (int64_t i = 4999; i >= 51; i--)
        ck_assert_int_eq(ekf_track_set(&t, i * 3, EKF_DONE), 0);
    ck_assert_int_eq(ekf_track_watermark(&t), 150);
    ck_assert_uint_eq(ekf_track_inflight(&t), 1);
    ck_assert_int_eq(ekf_track_set(&t, 150, EKF_DONE), 0);
    ck_assert_int_eq(ekf_track_watermark(&t), 4999 * 3 + 1);
    ekf_track_free(&t);
}
END_TEST

START_TEST(test_track_dead_letter_pending)
{
    /* a refused message holds the watermark until its dead letter is
     * acknowledged */
    ekf_track_t t;
    ekf_track_init(&t);
    for (int64_t o = 0; o < 3; o++)
        ekf_track_add(&t, o);
    ck_assert_int_eq(ekf_track_set(&t, 0, EKF_DONE), 0);
    ck_assert_int_eq(ekf_track_set(&t, 1, EKF_DEAD_PENDING), 0);
    ck_assert_int_eq(ekf_track_set(&t, 2, EKF_DONE), 0);
    ck_assert_int_eq(ekf_track_watermark(&t), 1);
    ck_assert_uint_eq(t.dead, 1);
    ck_assert_uint_eq(ekf_track_inflight(&t), 1);
    ck_assert_int_eq(ekf_track_set(&t, 1, EKF_DONE), 0); /* the delivery report */
    ck_assert_uint_eq(t.dead, 0);
    ck_assert_int_eq(ekf_track_watermark(&t), 3);
    ekf_track_free(&t);
}
END_TEST

START_TEST(test_track_failed)
{
    /* --on-error stop: the refused offset waits for nothing more, and
     * nothing from it on is ever committed */
    ekf_track_t t;
    ekf_track_init(&t);
    for (int64_t o = 0; o < 4; o++)
        ekf_track_add(&t, o);
    ck_assert_int_eq(ekf_track_set(&t, 1, EKF_FAILED), 0);
    ck_assert_uint_eq(ekf_track_inflight(&t), 3);
    ck_assert_int_eq(ekf_track_set(&t, 0, EKF_DONE), 0);
    ck_assert_int_eq(ekf_track_set(&t, 2, EKF_DONE), 0);
    ck_assert_int_eq(ekf_track_set(&t, 3, EKF_DONE), 0);
    ck_assert_uint_eq(ekf_track_inflight(&t), 0); /* the drain is over */
    ck_assert_int_eq(ekf_track_watermark(&t), 1);  /* and stops below it */
    ck_assert_int_eq(ekf_track_set(&t, 1, EKF_DONE), -1);
    ck_assert_int_eq(ekf_track_watermark(&t), 1);
    ekf_track_free(&t);
}
END_TEST

START_TEST(test_track_drop_at_revoke)
{
    /* a revoke drops the partition's documents that wait in the program's
     * queues (held while the buffer was full, or to be sent again): they
     * leave the tracker, so the revoke waits only for what was sent, and
     * the committed watermark stops at the first of them */
    ekf_track_t t;
    ekf_track_init(&t);
    for (int64_t o = 0; o < 10; o++)
        ck_assert_int_eq(ekf_track_add(&t, o), 0);
    for (int64_t o = 0; o < 3; o++) /* 0..2 indexed */
        ck_assert_int_eq(ekf_track_set(&t, o, EKF_DONE), 0);
    /* 3 possibly indexed (to send again), 4 sent and without a result,
     * 5..9 held */
    ck_assert_uint_eq(ekf_track_inflight(&t), 7);
    ck_assert_int_eq(ekf_track_drop(&t, 3), 0);
    for (int64_t o = 5; o < 10; o++)
        ck_assert_int_eq(ekf_track_drop(&t, o), 0);
    ck_assert_uint_eq(ekf_track_inflight(&t), 1); /* only the one sent */
    ck_assert_int_eq(ekf_track_set(&t, 4, EKF_DONE), 0);
    ck_assert_uint_eq(ekf_track_inflight(&t), 0); /* the revoke is over at once */
    ck_assert_int_eq(ekf_track_watermark(&t), 3); /* read again from 3 */
    ck_assert_int_eq(ekf_track_drop(&t, 3), -1);  /* dropped twice */
    ck_assert_int_eq(ekf_track_set(&t, 3, EKF_DONE), -1);
    ck_assert_int_eq(ekf_track_drop(&t, 42), -1); /* never read */
    ck_assert_int_eq(ekf_track_watermark(&t), 3);

    /* everything held: nothing at all waits */
    ekf_track_reset(&t);
    for (int64_t o = 100; o < 200; o++)
        ck_assert_int_eq(ekf_track_add(&t, o), 0);
    for (int64_t o = 100; o < 200; o++)
        ck_assert_int_eq(ekf_track_drop(&t, o), 0);
    ck_assert_uint_eq(ekf_track_inflight(&t), 0);
    ck_assert_int_eq(ekf_track_watermark(&t), 100);
    ekf_track_free(&t);
}
END_TEST

START_TEST(test_track_revoke_and_lost)
{
    /* a revoke (or a lost assignment) forgets every offset: late results
     * find nothing, and the next assignment starts anew */
    ekf_track_t t;
    ekf_track_init(&t);
    for (int64_t o = 100; o < 104; o++)
        ekf_track_add(&t, o);
    ekf_track_set(&t, 100, EKF_DONE);
    ck_assert_int_eq(ekf_track_watermark(&t), 101);
    ekf_track_reset(&t);
    ck_assert_int_eq(ekf_track_watermark(&t), -1); /* nothing to commit */
    ck_assert_uint_eq(ekf_track_inflight(&t), 0);
    ck_assert_int_eq(ekf_track_set(&t, 101, EKF_DONE), -1); /* a late result */
    /* assigned again from the committed 101: the same offsets come back */
    ck_assert_int_eq(ekf_track_add(&t, 101), 0);
    ck_assert_int_eq(ekf_track_watermark(&t), 101);
    ck_assert_int_eq(ekf_track_set(&t, 101, EKF_DONE), 0);
    ck_assert_int_eq(ekf_track_watermark(&t), 102);
    ekf_track_free(&t);
}
END_TEST

/* ---- the index template ---- */

static const char *expand(const char *tmpl, const char *topic, int32_t part, int64_t ts)
{
    static char out[300];
    if (ekf_template_expand(tmpl, topic, part, ts, out, sizeof(out)) != 0)
        return "ERR";
    return out;
}

START_TEST(test_template)
{
    char err[256];
    /* 2026-12-07T23:59:59.999Z */
    int64_t ts = 1796687999999LL;
    ck_assert_str_eq(expand("logs-{topic}-%Y.%m.%d", "Web", 3, ts), "logs-web-2026.12.07");
    ck_assert_str_eq(expand("{topic}-{partition}", "a.b_c", 12, ts), "a.b_c-12");
    ck_assert_str_eq(expand("x-%H%M%S-%j", "t", 0, ts), "x-235959-341");
    ck_assert_str_eq(expand("x-%Y", "t", 0, ts + 1), "x-2026"); /* 00:00:00.000 next day */
    ck_assert_str_eq(expand("x-%d", "t", 0, ts + 1), "x-08");
    ck_assert_str_eq(expand("pct%%", "t", 0, ts), "pct%");
    ck_assert_str_eq(expand("plain", "t", 0, -1), "plain");
    char longtopic[250];
    memset(longtopic, 'a', sizeof(longtopic) - 1);
    longtopic[sizeof(longtopic) - 1] = '\0';
    ck_assert_str_eq(expand("{topic}-{topic}", longtopic, 0, ts), "ERR"); /* > 255 bytes */

    ck_assert_int_eq(ekf_template_check("logs-{topic}-%Y.%m.%d", err, sizeof(err)), 0);
    ck_assert_int_eq(ekf_template_check("{topic}{partition}%%", err, sizeof(err)), 0);
    ck_assert_int_eq(ekf_template_check("Logs", err, sizeof(err)), -1);
    ck_assert_ptr_nonnull(strstr(err, "upper case"));
    ck_assert_int_eq(ekf_template_check("{topik}", err, sizeof(err)), -1);
    ck_assert_ptr_nonnull(strstr(err, "unknown field"));
    ck_assert_int_eq(ekf_template_check("a-%Q", err, sizeof(err)), -1);
    ck_assert_int_eq(ekf_template_check("a-%", err, sizeof(err)), -1);
    ck_assert_int_eq(ekf_template_check("a b", err, sizeof(err)), -1);
    ck_assert_int_eq(ekf_template_check("a,b", err, sizeof(err)), -1);
    ck_assert_int_eq(ekf_template_check("_x", err, sizeof(err)), -1);
    ck_assert_int_eq(ekf_template_check("", err, sizeof(err)), -1);
    ck_assert_int_eq(ekf_template_check("a}", err, sizeof(err)), -1);
}
END_TEST

/* ---- ids, routing, the bulk format ---- */

START_TEST(test_ids)
{
    char id[64];
    ck_assert_int_eq(ekf_offset_id("orders", 7, 123456789012LL, id, sizeof(id)), 21);
    ck_assert_str_eq(id, "orders-7-123456789012");

    json_t *obj = json_loads("{\"s\":\"abc\",\"n\":-42,\"f\":1.5,\"z\":null,\"e\":\"\","
                             "\"o\":{}}", 0, NULL);
    char *out, err[128];
    size_t len;
    ck_assert_int_eq(ekf_field_text(obj, "s", &out, &len, err, sizeof(err)), 0);
    ck_assert_str_eq(out, "abc");
    ck_assert_uint_eq(len, 3);
    free(out);
    ck_assert_int_eq(ekf_field_text(obj, "n", &out, &len, err, sizeof(err)), 0);
    ck_assert_str_eq(out, "-42");
    free(out);
    ck_assert_int_eq(ekf_field_text(obj, "f", &out, &len, err, sizeof(err)), -1);
    ck_assert_int_eq(ekf_field_text(obj, "z", &out, &len, err, sizeof(err)), -1);
    ck_assert_str_eq(err, "field \"z\" is null");
    ck_assert_int_eq(ekf_field_text(obj, "e", &out, &len, err, sizeof(err)), -1);
    ck_assert_int_eq(ekf_field_text(obj, "o", &out, &len, err, sizeof(err)), -1);
    ck_assert_int_eq(ekf_field_text(obj, "missing", &out, &len, err, sizeof(err)), -1);
    ck_assert_str_eq(err, "field \"missing\" is absent");
    ck_assert_ptr_null(out);
    json_decref(obj);
}
END_TEST

#define BULK(s, b, e) ekf_bulk_parse(s, sizeof(s) - 1, b, e, sizeof(e))

START_TEST(test_bulk)
{
    ekf_bulk_t b;
    char err[256];
    ck_assert_int_eq(BULK("{\"index\":{\"_index\":\"i\",\"_id\":\"7\",\"routing\":\"r\"}}\n"
                          "{\"a\":1}\n", &b, err), 0);
    ck_assert_int_eq(b.op, ESBULK_OP_INDEX);
    ck_assert_str_eq(b.index, "i");
    ck_assert_str_eq(b.id, "7");
    ck_assert_str_eq(b.routing, "r");
    ck_assert_uint_eq(b.source_len, 7); /* the trailing newline is not the source's */
    ck_assert_int_eq(memcmp(b.source, "{\"a\":1}", 7), 0);
    ekf_bulk_free(&b);
    ck_assert_int_eq(BULK("{\"delete\":{\"_id\":\"x\"}}", &b, err), 0);
    ck_assert_int_eq(b.op, ESBULK_OP_DELETE);
    ck_assert_ptr_null(b.source);
    ck_assert_ptr_null(b.index);
    ekf_bulk_free(&b);
    ck_assert_int_eq(BULK("{\"index\":{\"version\":5,\"version_type\":\"external\"}}\n{}", &b,
                          err), 0);
    ck_assert_int_eq(b.version, 5);
    ck_assert_int_eq(b.version_type, ESBULK_VERSION_EXTERNAL);
    ekf_bulk_free(&b);
    ck_assert_int_eq(BULK("{\"update\":{\"_id\":\"1\",\"retry_on_conflict\":3}}\n"
                          "{\"doc\":{\"a\":2}}", &b, err), 0);
    ck_assert_int_eq(b.op, ESBULK_OP_UPDATE);
    ck_assert_int_eq(b.retry_on_conflict, 3);
    ekf_bulk_free(&b);
    /* refused: each with its reason */
    ck_assert_int_eq(BULK("{\"index\":{}}", &b, err), -1); /* no source line */
    ck_assert_ptr_nonnull(strstr(err, "source line"));
    ck_assert_int_eq(BULK("{\"upsert\":{}}\n{}", &b, err), -1);
    ck_assert_int_eq(BULK("{\"index\":{\"_type\":\"doc\"}}\n{}", &b, err), -1);
    ck_assert_ptr_nonnull(strstr(err, "_type"));
    ck_assert_int_eq(BULK("{\"index\":{\"_id\":7}}\n{}", &b, err), -1);
    ck_assert_int_eq(BULK("{\"index\":{\"version\":5}}\n{}", &b, err), -1);
    ck_assert_int_eq(BULK("not json\n{}", &b, err), -1);
    ck_assert_int_eq(BULK("{\"index\":{},\"delete\":{}}\n{}", &b, err), -1);
}
END_TEST

START_TEST(test_dead_letter_headers)
{
    ekf_header_t h[EKF_DL_HEADERS];
    ekf_dl_nums_t nums;
    ekf_dl_headers(h, &nums, "failed to parse field [n]", 400, "mapper_parsing_exception",
                   "orders", 11, 9876543210LL);
    static const char *const want[EKF_DL_HEADERS][2] = {
        {"esbulk.reason", "failed to parse field [n]"},
        {"esbulk.status", "400"},
        {"esbulk.error_type", "mapper_parsing_exception"},
        {"esbulk.topic", "orders"},
        {"esbulk.partition", "11"},
        {"esbulk.offset", "9876543210"},
    };
    for (int i = 0; i < EKF_DL_HEADERS; i++) {
        ck_assert_str_eq(h[i].name, want[i][0]);
        ck_assert_str_eq(h[i].value, want[i][1]);
    }
    ekf_dl_headers(h, &nums, NULL, 0, NULL, "t", 0, 0);
    ck_assert_str_eq(h[0].value, "");
    ck_assert_str_eq(h[1].value, "0");
    ck_assert_str_eq(h[2].value, "");
}
END_TEST

/* ---- what a message becomes ---- */

/* Options from "key=value" settings (group and topic given), checked. */
static void opts_of(ekf_opts_t *o, const char *const *settings)
{
    char err[256];
    ck_assert_int_eq(ekf_opts_init(o), 0);
    ck_assert_int_eq(ekf_opts_set(o, "group", "g", 1, err, sizeof(err)), 0);
    ck_assert_int_eq(ekf_opts_set(o, "topic", "t", 1, err, sizeof(err)), 0);
    for (; settings != NULL && *settings != NULL; settings++) {
        char kv[128];
        snprintf(kv, sizeof(kv), "%s", *settings);
        char *eq = strchr(kv, '=');
        *eq = '\0';
        ck_assert_msg(ekf_opts_set(o, kv, eq + 1, 1, err, sizeof(err)) == 0, "%s", err);
    }
    ck_assert_int_eq(ekf_opts_check(o, err, sizeof(err)), 0);
}

static size_t len_of(const char *s)
{
    return s != NULL ? strlen(s) : 0;
}
#define PLAN(pl, o, off, key, value) \
    ck_assert_int_eq(ekf_plan(pl, o, "orders", 2, off, key, len_of(key), value, len_of(value)), 0)

START_TEST(test_plan_offset_and_key)
{
    ekf_opts_t o;
    ekf_plan_t pl;
    opts_of(&o, NULL); /* --id offset */
    PLAN(&pl, &o, 7, "k", "{\"a\":1}");
    ck_assert_int_eq(pl.kind, EKF_PLAN_ADD);
    ck_assert_int_eq(pl.op, ESBULK_OP_INDEX);
    ck_assert_str_eq(pl.id, "orders-2-7");
    ck_assert_uint_eq(pl.id_len, 10);
    ck_assert_uint_eq(pl.body_len, 7);
    ck_assert_int_eq(pl.has_opts, 0); /* no version: the _id is the message's own */
    ekf_plan_free(&pl);
    /* a tombstone names no document by its offset: skipped */
    PLAN(&pl, &o, 8, "k", NULL);
    ck_assert_int_eq(pl.kind, EKF_PLAN_SKIP);
    ekf_plan_free(&pl);
    ekf_opts_free(&o);

    static const char *const key[] = {"id=key", NULL};
    opts_of(&o, key);
    PLAN(&pl, &o, 41, "cust-9", "{\"a\":1}");
    ck_assert_int_eq(pl.kind, EKF_PLAN_ADD);
    ck_assert_int_eq(memcmp(pl.id, "cust-9", 6), 0);
    ck_assert_uint_eq(pl.id_len, 6);
    ck_assert_int_eq(pl.version, 41); /* the offset as external_gte version */
    ck_assert_int_eq(pl.version_type, ESBULK_VERSION_EXTERNAL_GTE);
    ck_assert_int_eq(pl.has_opts, 1);
    ekf_plan_free(&pl);
    PLAN(&pl, &o, 42, "cust-9", NULL); /* a tombstone deletes its key's document */
    ck_assert_int_eq(pl.kind, EKF_PLAN_ADD);
    ck_assert_int_eq(pl.op, ESBULK_OP_DELETE);
    ck_assert_ptr_null(pl.body);
    ck_assert_int_eq(pl.version, 42);
    ekf_plan_free(&pl);
    PLAN(&pl, &o, 43, NULL, NULL); /* a tombstone without a key: nothing */
    ck_assert_int_eq(pl.kind, EKF_PLAN_SKIP);
    ekf_plan_free(&pl);
    PLAN(&pl, &o, 44, NULL, "{}"); /* a value without a key: refused */
    ck_assert_int_eq(pl.kind, EKF_PLAN_REFUSE);
    ck_assert_str_eq(pl.error_type, "invalid_id");
    ekf_plan_free(&pl);
    ekf_opts_free(&o);

    static const char *const key_routed[] = {"id=key", "routing-field=shop", "versioning=none",
                                             NULL};
    opts_of(&o, key_routed);
    PLAN(&pl, &o, 5, "c1", "{\"shop\":12}");
    ck_assert_int_eq(pl.kind, EKF_PLAN_ADD);
    ck_assert_str_eq(pl.routing, "12");
    ck_assert_int_eq(pl.has_opts, 0);
    ekf_plan_free(&pl);
    PLAN(&pl, &o, 6, "c1", NULL); /* no value to route the delete by */
    ck_assert_int_eq(pl.kind, EKF_PLAN_REFUSE);
    ck_assert_str_eq(pl.error_type, "invalid_routing");
    ekf_plan_free(&pl);
    PLAN(&pl, &o, 7, "c1", "{\"other\":1}");
    ck_assert_int_eq(pl.kind, EKF_PLAN_REFUSE);
    ck_assert_str_eq(pl.error_type, "invalid_routing");
    ck_assert_str_eq(pl.reason, "field \"shop\" is absent");
    ekf_plan_free(&pl);
    ekf_opts_free(&o);
}
END_TEST

START_TEST(test_plan_field_and_bulk)
{
    ekf_opts_t o;
    ekf_plan_t pl;
    static const char *const field[] = {"id=field:uid", NULL};
    opts_of(&o, field);
    PLAN(&pl, &o, 1, NULL, "{\"uid\":\"u-1\",\"x\":2}");
    ck_assert_int_eq(pl.kind, EKF_PLAN_ADD);
    ck_assert_str_eq(pl.id, "u-1");
    ck_assert_int_eq(pl.has_opts, 0); /* --versioning none by default for a field */
    ekf_plan_free(&pl);
    PLAN(&pl, &o, 2, NULL, "{\"x\":2}");
    ck_assert_int_eq(pl.kind, EKF_PLAN_REFUSE);
    ck_assert_str_eq(pl.error_type, "invalid_id");
    ekf_plan_free(&pl);
    PLAN(&pl, &o, 3, NULL, "not json");
    ck_assert_int_eq(pl.kind, EKF_PLAN_REFUSE);
    ck_assert_str_eq(pl.error_type, "invalid_json");
    ekf_plan_free(&pl);
    PLAN(&pl, &o, 4, "k", NULL);
    ck_assert_int_eq(pl.kind, EKF_PLAN_SKIP);
    ekf_plan_free(&pl);
    ekf_opts_free(&o);

    static const char *const bulk[] = {"format=bulk", "versioning=offset", NULL};
    opts_of(&o, bulk);
    /* the action's _index, _id and routing win */
    PLAN(&pl, &o, 9, NULL, "{\"index\":{\"_index\":\"x\",\"_id\":\"7\",\"routing\":\"r\"}}\n{}");
    ck_assert_int_eq(pl.kind, EKF_PLAN_ADD);
    ck_assert_str_eq(pl.index, "x");
    ck_assert_str_eq(pl.id, "7");
    ck_assert_str_eq(pl.routing, "r");
    ck_assert_int_eq(pl.version, 9);
    ekf_plan_free(&pl);
    /* no _id: the offset's */
    PLAN(&pl, &o, 10, NULL, "{\"create\":{}}\n{\"a\":1}");
    ck_assert_int_eq(pl.op, ESBULK_OP_CREATE);
    ck_assert_str_eq(pl.id, "orders-2-10");
    ck_assert_ptr_null(pl.index);
    ck_assert_int_eq(pl.version, -1); /* a version is for index and delete */
    ekf_plan_free(&pl);
    /* the action's own version wins over the offset */
    PLAN(&pl, &o, 11, NULL, "{\"index\":{\"version\":3,\"version_type\":\"external\"}}\n{}");
    ck_assert_int_eq(pl.version, 3);
    ck_assert_int_eq(pl.version_type, ESBULK_VERSION_EXTERNAL);
    ekf_plan_free(&pl);
    PLAN(&pl, &o, 12, NULL, "{\"update\":{\"_id\":\"1\"}}\n{\"doc\":{}}");
    ck_assert_int_eq(pl.op, ESBULK_OP_UPDATE);
    ck_assert_int_eq(pl.has_opts, 0);
    ekf_plan_free(&pl);
    PLAN(&pl, &o, 13, NULL, "{\"index\":{}}");
    ck_assert_int_eq(pl.kind, EKF_PLAN_REFUSE);
    ck_assert_str_eq(pl.error_type, "invalid_action");
    ekf_plan_free(&pl);
    ekf_opts_free(&o);
}
END_TEST

/* ---- settings ---- */

START_TEST(test_config)
{
    ekf_opts_t o;
    char err[512], path[] = "/tmp/check_kafka_confXXXXXX";
    ck_assert_int_eq(ekf_opts_init(&o), 0);
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    const char *text = "# a comment\n"
                       "group = logs\n"
                       "topic=a\n"
                       "topic = b\n"
                       "index = logs-{topic}-%Y.%m\n"
                       "id = field:uid\n"
                       "exit-at-end = true\n"
                       "kafka.fetch.wait.max.ms = 50\n"
                       "flush.docs = 321\n"
                       "\n"
                       "revoke-timeout = 1500\n";
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    ck_assert_int_eq(ekf_opts_load(&o, path, err, sizeof(err)), 0);
    ck_assert_str_eq(o.group, "logs");
    ck_assert_int_eq(o.ntopics, 2);
    ck_assert_str_eq(o.index, "logs-{topic}-%Y.%m");
    ck_assert_int_eq(o.id_mode, EKF_ID_FIELD);
    ck_assert_str_eq(o.id_field, "uid");
    ck_assert_int_eq(o.exit_at_end, 1);
    ck_assert_int_eq(o.revoke_timeout_ms, 1500);
    ck_assert_int_eq(o.nkafka, 1);
    ck_assert_str_eq(o.kafka[0].key, "fetch.wait.max.ms");
    char v[32];
    ck_assert_int_eq(esbulk_conf_get(o.conf, "flush.docs", v, sizeof(v), NULL), ESBULK_OK);
    ck_assert_str_eq(v, "321");
    ck_assert_int_eq(esbulk_conf_get(o.conf, "enqueue.timeout.ms", v, sizeof(v), NULL),
                     ESBULK_OK);
    ck_assert_str_eq(v, "0"); /* the sink's default */
    /* the command line wins: a scalar replaced, a list replaced */
    ck_assert_int_eq(ekf_opts_set(&o, "group", "other", 1, err, sizeof(err)), 0);
    ck_assert_int_eq(ekf_opts_set(&o, "topic", "c", 1, err, sizeof(err)), 0);
    ck_assert_int_eq(ekf_opts_set(&o, "topic", "^d.*", 1, err, sizeof(err)), 0);
    ck_assert_str_eq(o.group, "other");
    ck_assert_int_eq(o.ntopics, 2);
    ck_assert_str_eq(o.topics[0], "c");
    ck_assert_str_eq(o.topics[1], "^d.*");
    ck_assert_int_eq(ekf_opts_set(&o, "brokers", "127.0.0.1:1", 1, err, sizeof(err)), 0);
    ck_assert_str_eq(o.kafka[1].key, "bootstrap.servers");
    ck_assert_int_eq(ekf_opts_set(&o, "url", "http://a:1", 1, err, sizeof(err)), 0);
    ck_assert_int_eq(ekf_opts_set(&o, "url", "http://b:2", 1, err, sizeof(err)), 0);
    ck_assert_str_eq(o.urls, "http://a:1,http://b:2");
    /* refused, with the reason */
    ck_assert_int_eq(ekf_opts_set(&o, "flush.dcos", "1", 1, err, sizeof(err)), -1);
    ck_assert_ptr_nonnull(strstr(err, "unknown key \"flush.dcos\""));
    ck_assert_int_eq(ekf_opts_set(&o, "flush.docs", "0", 1, err, sizeof(err)), -1);
    ck_assert_int_eq(ekf_opts_set(&o, "id", "uuid", 1, err, sizeof(err)), -1);
    ck_assert_int_eq(ekf_opts_set(&o, "index", "Bad", 1, err, sizeof(err)), -1);
    ck_assert_int_eq(ekf_opts_set(&o, "revoke-timeout", "soon", 1, err, sizeof(err)), -1);
    /* the sink's own: it stores only the watermarks */
    ck_assert_int_eq(ekf_opts_set(&o, "kafka.enable.auto.commit", "true", 1, err, sizeof(err)),
                     -1);
    ck_assert_int_eq(
        ekf_opts_set(&o, "kafka.enable.auto.offset.store", "true", 1, err, sizeof(err)), -1);
    ck_assert_int_eq(ekf_opts_set(&o, "kafka.auto.commit.interval.ms", "5", 1, err, sizeof(err)),
                     -1);
    ck_assert_int_eq(ekf_opts_set(&o, "kafka.group.id", "x", 1, err, sizeof(err)), -1);
    ck_assert_int_eq(ekf_opts_set(&o, "on-error", "skip", 1, err, sizeof(err)), -1);
    ck_assert_int_eq(ekf_opts_check(&o, err, sizeof(err)), 0);
    ck_assert_int_eq(o.on_error, EKF_ON_ERROR_STOP); /* no dead-letter topic */
    ck_assert_int_eq(o.versioning, EKF_VERSION_NONE);
    ekf_opts_free(&o);

    /* a wrong key in the file: its line */
    ck_assert_int_eq(ekf_opts_init(&o), 0);
    fd = open(path, O_WRONLY | O_TRUNC);
    text = "group=g\nbogus.key = 1\n";
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    ck_assert_int_eq(ekf_opts_load(&o, path, err, sizeof(err)), -1);
    ck_assert_ptr_nonnull(strstr(err, ":2: unknown key \"bogus.key\""));
    ekf_opts_free(&o);
    unlink(path);

    /* what must be there, and fit together */
    ck_assert_int_eq(ekf_opts_init(&o), 0);
    ck_assert_int_eq(ekf_opts_check(&o, err, sizeof(err)), -1);
    ck_assert_str_eq(err, "--group is required");
    ekf_opts_set(&o, "group", "g", 1, err, sizeof(err));
    ck_assert_int_eq(ekf_opts_check(&o, err, sizeof(err)), -1);
    ekf_opts_set(&o, "topic", "t", 1, err, sizeof(err));
    ekf_opts_set(&o, "on-error", "dead-letter", 1, err, sizeof(err));
    ck_assert_int_eq(ekf_opts_check(&o, err, sizeof(err)), -1);
    ekf_opts_set(&o, "dead-letter-topic", "t", 1, err, sizeof(err));
    ck_assert_int_eq(ekf_opts_check(&o, err, sizeof(err)), -1); /* consumed too */
    ekf_opts_set(&o, "dead-letter-topic", "t.dlq", 1, err, sizeof(err));
    ekf_opts_set(&o, "id", "key", 1, err, sizeof(err));
    ck_assert_int_eq(ekf_opts_check(&o, err, sizeof(err)), 0);
    ck_assert_int_eq(o.versioning, EKF_VERSION_OFFSET); /* --id key: the offset as version */
    ekf_opts_free(&o);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kafka");
    TCase *tc = tcase_create("kafka");
    tcase_add_test(tc, test_track_in_order);
    tcase_add_test(tc, test_track_out_of_order);
    tcase_add_test(tc, test_track_gaps_and_growth);
    tcase_add_test(tc, test_track_dead_letter_pending);
    tcase_add_test(tc, test_track_failed);
    tcase_add_test(tc, test_track_drop_at_revoke);
    tcase_add_test(tc, test_track_revoke_and_lost);
    tcase_add_test(tc, test_template);
    tcase_add_test(tc, test_ids);
    tcase_add_test(tc, test_bulk);
    tcase_add_test(tc, test_dead_letter_headers);
    tcase_add_test(tc, test_plan_offset_and_key);
    tcase_add_test(tc, test_plan_field_and_bulk);
    tcase_add_test(tc, test_config);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
