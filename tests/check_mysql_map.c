/* esbulk-mysql's type mapping (tools/mysql/rowjson.c), pure code: each kind of
 * column value as the text protocol gives it, to its JSON; zero dates,
 * SET, BIT, base64, JSON strings with escapes, and invalid UTF-8 reported
 * as a reason. And its rules (tools/mysql/rules.c): what a result means for a
 * row, and which binlog statements change a followed table's rows without
 * row events. The modules are compiled in here (they have no dependency),
 * so the sanitizer and valgrind runs take this test as they are. */
#include "tools/mysql/rowjson.c"
#include "tools/mysql/rules.c"

#include <check.h>

static esm_map_opts_t opts = {0, "+00:00"};

/* The JSON of one value, or "ERR:<why>". Static buffer. */
static const char *map(esm_kind_t kind, const char *v, size_t len)
{
    static char out[512];
    esm_buf_t b = {0};
    char why[128] = "";
    int rc = esm_value_json(&b, kind, v, len, &opts, why, sizeof(why));
    if (rc)
        snprintf(out, sizeof(out), "ERR:%s", why);
    else
        snprintf(out, sizeof(out), "%s", b.data ? b.data : "");
    esm_buf_free(&b);
    return out;
}
#define MAP(kind, s) map(kind, s, sizeof(s) - 1)

START_TEST(test_scalars)
{
    ck_assert_str_eq(map(ESM_K_INT, NULL, 0), "null");
    ck_assert_str_eq(MAP(ESM_K_INT, "-42"), "-42");
    ck_assert_str_eq(MAP(ESM_K_BOOL, "0"), "false");
    ck_assert_str_eq(MAP(ESM_K_BOOL, "1"), "true");
    ck_assert_str_eq(MAP(ESM_K_BOOL, "7"), "true");
    ck_assert_str_eq(MAP(ESM_K_FLOAT, "1.5e-7"), "1.5e-7");
    ck_assert_str_eq(MAP(ESM_K_FLOAT, "inf"), "ERR:value \"inf\" does not map to JSON");
    ck_assert_str_eq(MAP(ESM_K_DECIMAL, "-0.50"), "\"-0.50\"");
    opts.decimal_number = 1;
    ck_assert_str_eq(MAP(ESM_K_DECIMAL, "-0.50"), "-0.50");
    opts.decimal_number = 0;
    ck_assert_str_eq(MAP(ESM_K_YEAR, "0000"), "null");
    ck_assert_str_eq(MAP(ESM_K_YEAR, "2024"), "2024");
    ck_assert_str_eq(MAP(ESM_K_ENUM, "paid"), "\"paid\"");
}
END_TEST

/* Big values are their digits: BIGINT UNSIGNED's 2^64 - 1, DECIMAL(65,30)
 * with --decimal number, JSON holding numbers past int64 and a double. */
START_TEST(test_big_numbers)
{
    ck_assert_str_eq(MAP(ESM_K_INT, "18446744073709551615"), "18446744073709551615");
    ck_assert_str_eq(MAP(ESM_K_INT, "9223372036854775808"), "9223372036854775808");
    ck_assert_str_eq(MAP(ESM_K_INT, "-9223372036854775808"), "-9223372036854775808");
    opts.decimal_number = 1;
    ck_assert_str_eq(MAP(ESM_K_DECIMAL, "99999999999999999999999999999999999.999999999999999999999999999999"),
                     "99999999999999999999999999999999999.999999999999999999999999999999");
    opts.decimal_number = 0;
    ck_assert_str_eq(MAP(ESM_K_JSON, "{\"u\": 18446744073709551616, \"e\": -1e400}"),
                     "{\"u\": 18446744073709551616, \"e\": -1e400}");
}
END_TEST

/* A dead-letter line: every key of esbulk-mysql(1) there, in its order;
 * the document itself (its digits as built) when it is valid JSON, its text
 * as a string when it is not, null when there is none; bad UTF-8 replaced. */
static const char *dead_line(const char *table, const char *index, const char *id, int32_t status,
                             const char *type, const char *body)
{
    static char out[1024];
    esm_buf_t b = {0};

    ck_assert_int_eq(esm_dead_letter_line(&b, "binlog", table, index, id, "why", status, type,
                                          body, body ? strlen(body) : 0), 0);
    ck_assert_uint_lt(b.len, sizeof(out));
    memcpy(out, b.data, b.len + 1);
    esm_buf_free(&b);
    return out;
}

START_TEST(test_dead_letter_line)
{
    ck_assert_str_eq(dead_line("db.t", "i", "7", 400, "mapper_parsing_exception",
                               "{\"u\":18446744073709551615,\r\n\"x\":1e400}"),
                     "{\"phase\":\"binlog\",\"table\":\"db.t\",\"index\":\"i\",\"id\":\"7\","
                     "\"reason\":\"why\",\"status\":400,\"error_type\":\"mapper_parsing_exception\","
                     "\"doc\":{\"u\":18446744073709551615,  \"x\":1e400}}\n");
    /* refused before sending: no status; the invalid document as text */
    ck_assert_str_eq(dead_line("db.t", "i", "8", 0, "invalid_json", "{\"a\":1,\"a\":2}"),
                     "{\"phase\":\"binlog\",\"table\":\"db.t\",\"index\":\"i\",\"id\":\"8\","
                     "\"reason\":\"why\",\"status\":null,\"error_type\":\"invalid_json\","
                     "\"doc\":\"{\\\"a\\\":1,\\\"a\\\":2}\"}\n");
    ck_assert_str_eq(dead_line(NULL, NULL, NULL, 0, NULL, NULL),
                     "{\"phase\":\"binlog\",\"table\":null,\"index\":null,\"id\":null,"
                     "\"reason\":\"why\",\"status\":null,\"error_type\":null,\"doc\":null}\n");
    ck_assert_str_eq(dead_line("db.t", "i", "a\xff", 0, "unmappable_row", "{\"a\":\"\xc3\"}"),
                     "{\"phase\":\"binlog\",\"table\":\"db.t\",\"index\":\"i\",\"id\":\"a\xef\xbf\xbd\","
                     "\"reason\":\"why\",\"status\":null,\"error_type\":\"unmappable_row\","
                     "\"doc\":\"{\\\"a\\\":\\\"\xef\xbf\xbd\\\"}\"}\n");
}
END_TEST

START_TEST(test_dates)
{
    ck_assert_str_eq(MAP(ESM_K_DATE, "2024-02-29"), "\"2024-02-29\"");
    ck_assert_str_eq(MAP(ESM_K_DATE, "0000-00-00"), "null");
    ck_assert_str_eq(MAP(ESM_K_DATE, "2024-00-10"), "null");
    ck_assert_str_eq(MAP(ESM_K_DATE, "2024-03-00"), "null");
    ck_assert_str_eq(MAP(ESM_K_DATETIME, "2024-02-29 23:59:58"), "\"2024-02-29T23:59:58+00:00\"");
    ck_assert_str_eq(MAP(ESM_K_DATETIME, "2024-02-29 23:59:58.123456"),
                     "\"2024-02-29T23:59:58.123456+00:00\"");
    ck_assert_str_eq(MAP(ESM_K_DATETIME, "0000-00-00 00:00:00"), "null");
    snprintf(opts.tz, sizeof(opts.tz), "-05:30");
    ck_assert_str_eq(MAP(ESM_K_DATETIME, "2024-01-01 00:00:00"), "\"2024-01-01T00:00:00-05:30\"");
    snprintf(opts.tz, sizeof(opts.tz), "+00:00");
    ck_assert_str_eq(MAP(ESM_K_TIME, "-838:59:59"), "\"-838:59:59\"");
}
END_TEST

START_TEST(test_bit_set_binary_json)
{
    ck_assert_str_eq(map(ESM_K_BIT, "\x01\x02", 2), "258");
    ck_assert_str_eq(map(ESM_K_BIT, "\xff\xff\xff\xff\xff\xff\xff\xff", 8), "18446744073709551615");
    ck_assert_str_eq(MAP(ESM_K_SET, ""), "[]");
    ck_assert_str_eq(MAP(ESM_K_SET, "a"), "[\"a\"]");
    ck_assert_str_eq(MAP(ESM_K_SET, "a,b,c"), "[\"a\",\"b\",\"c\"]");
    ck_assert_str_eq(map(ESM_K_BINARY, "", 0), "\"\"");
    ck_assert_str_eq(map(ESM_K_BINARY, "\0", 1), "\"AA==\"");
    ck_assert_str_eq(map(ESM_K_BINARY, "ab", 2), "\"YWI=\"");
    ck_assert_str_eq(map(ESM_K_BINARY, "abc", 3), "\"YWJj\"");
    ck_assert_str_eq(map(ESM_K_BINARY, "\xff\xfe\xfd\xfc", 4), "\"//79/A==\"");
    ck_assert_str_eq(MAP(ESM_K_JSON, "{\"a\": [1, null]}"), "{\"a\": [1, null]}");
    ck_assert_str_eq(MAP(ESM_K_JSON, ""), "null");
}
END_TEST

/* --poll-column's versions: microseconds since 1970, ordered as the values */
START_TEST(test_poll_version)
{
#define PV(s) esm_poll_version(s, sizeof(s) - 1)
    ck_assert_int_eq(PV("1970-01-01 00:00:00"), 0);
    ck_assert_int_eq(PV("1970-01-02 00:00:01"), 86401000000LL);
    ck_assert_int_eq(PV("2000-03-01 00:00:00"), 951868800000000LL); /* after a leap day */
    ck_assert_int_eq(PV("2024-01-01 00:00:00"), 1704067200000000LL);
    ck_assert_int_eq(PV("2024-01-01 00:00:00.5"), 1704067200500000LL);
    ck_assert_int_eq(PV("2024-01-01 00:00:00.000123"), 1704067200000123LL);
    ck_assert_int_eq(PV("2024-02-29 23:59:59.999999"), 1709251199999999LL);
    ck_assert_int_lt(PV("2026-12-03 17:39:43"), PV("2026-12-03 17:39:43.000001"));
    ck_assert_int_lt(PV("2026-12-31 23:59:59.999999"), PV("2027-01-01 00:00:00"));
    ck_assert_int_eq(PV("0000-00-00 00:00:00"), 0);
    ck_assert_int_eq(PV("1969-12-31 23:59:59"), 0);
    ck_assert_int_eq(esm_poll_version(NULL, 0), 0);
    ck_assert_int_eq(PV("garbage"), 0);
#undef PV
}
END_TEST

START_TEST(test_text_and_utf8)
{
    ck_assert_str_eq(MAP(ESM_K_TEXT, "a\"b\\c\n\t\x01"), "\"a\\\"b\\\\c\\n\\t\\u0001\"");
    ck_assert_str_eq(MAP(ESM_K_TEXT, "Gr\xc3\xbc\xc3\x9f" "e \xf0\x9f\x98\x80"),
                     "\"Gr\xc3\xbc\xc3\x9f" "e \xf0\x9f\x98\x80\"");
    ck_assert_str_eq(MAP(ESM_K_TEXT, "A\xff" "B"), "ERR:invalid UTF-8");
    ck_assert_str_eq(MAP(ESM_K_TEXT, "\xc0\xaf"), "ERR:invalid UTF-8");         /* overlong */
    ck_assert_str_eq(MAP(ESM_K_TEXT, "\xed\xa0\x80"), "ERR:invalid UTF-8");     /* surrogate */
    ck_assert_str_eq(MAP(ESM_K_TEXT, "\xe2\x82"), "ERR:invalid UTF-8");         /* truncated */
    ck_assert_str_eq(MAP(ESM_K_SET, "a,\xff"), "ERR:invalid UTF-8");
    ck_assert_str_eq(MAP(ESM_K_JSON, "\"\xff\""), "ERR:invalid UTF-8");
    ck_assert_int_eq(esbulk__utf8_valid("\xf4\x8f\xbf\xbf", 4), 1);
    ck_assert_int_eq(esbulk__utf8_valid("\xf4\x90\x80\x80", 4), 0); /* above U+10FFFF */
}
END_TEST

START_TEST(test_result_class)
{
    /* indexed, and a delete of what is not there (indexed by the library) */
    ck_assert_int_eq(esm_result_class(ESBULK_OUTCOME_INDEXED, ESBULK_OK, 404, NULL),
                     ESM_RESULT_DONE);
    /* a replay: the index has a newer version */
    ck_assert_int_eq(esm_result_class(ESBULK_OUTCOME_FAILED, ESBULK_ERR_ITEM, 409,
                                      "version_conflict_engine_exception"),
                     ESM_RESULT_SUPERSEDED);
    /* no such index (auto-creation off): not a replay, not the row's fault */
    ck_assert_int_eq(esm_result_class(ESBULK_OUTCOME_FAILED, ESBULK_ERR_ITEM, 404,
                                      "index_not_found_exception"),
                     ESM_RESULT_UNAVAILABLE);
    ck_assert_int_eq(esm_result_class(ESBULK_OUTCOME_FAILED, ESBULK_ERR_ITEM, 400,
                                      "index_closed_exception"),
                     ESM_RESULT_UNAVAILABLE);
    ck_assert_int_eq(esm_result_class(ESBULK_OUTCOME_FAILED, ESBULK_ERR_ITEM, 403,
                                      "cluster_block_exception"),
                     ESM_RESULT_UNAVAILABLE);
    /* the document itself */
    ck_assert_int_eq(esm_result_class(ESBULK_OUTCOME_FAILED, ESBULK_ERR_ITEM, 400,
                                      "mapper_parsing_exception"),
                     ESM_RESULT_REFUSED);
    ck_assert_int_eq(esm_result_class(ESBULK_OUTCOME_FAILED, ESBULK_ERR_DOC_TOO_LARGE, 0, NULL),
                     ESM_RESULT_REFUSED);
    /* alone, larger than the server's http.max_content_length */
    ck_assert_int_eq(esm_result_class(ESBULK_OUTCOME_FAILED, ESBULK_ERR_HTTP, 413, NULL),
                     ESM_RESULT_REFUSED);
    /* a whole request refused: maybe the request's fault, so no row is blamed */
    ck_assert_int_eq(esm_result_class(ESBULK_OUTCOME_FAILED, ESBULK_ERR_HTTP, 400,
                                      "illegal_argument_exception"),
                     ESM_RESULT_UNAVAILABLE);
    ck_assert_int_eq(esm_result_class(ESBULK_OUTCOME_FAILED, ESBULK_ERR_AUTH, 403,
                                      "security_exception"),
                     ESM_RESULT_UNAVAILABLE);
    /* one item not allowed (per-index rights): the credentials, not the row */
    ck_assert_int_eq(esm_result_class(ESBULK_OUTCOME_FAILED, ESBULK_ERR_ITEM, 403,
                                      "security_exception"),
                     ESM_RESULT_UNAVAILABLE);
    /* the cluster's load or reach */
    ck_assert_int_eq(esm_result_class(ESBULK_OUTCOME_FAILED, ESBULK_ERR_ITEM, 429,
                                      "es_rejected_execution_exception"),
                     ESM_RESULT_UNAVAILABLE);
    ck_assert_int_eq(esm_result_class(ESBULK_OUTCOME_FAILED, ESBULK_ERR_ITEM, 503, NULL),
                     ESM_RESULT_UNAVAILABLE);
    ck_assert_int_eq(esm_result_class(ESBULK_OUTCOME_FAILED, ESBULK_ERR_TRANSPORT, 0, NULL),
                     ESM_RESULT_UNAVAILABLE);
    ck_assert_int_eq(esm_result_class(ESBULK_OUTCOME_POSSIBLY, ESBULK_ERR_ITEM, 409, NULL),
                     ESM_RESULT_UNAVAILABLE);
}
END_TEST

#define DML(s) esm_stmt_is_dml(s, sizeof(s) - 1)
#define NAMES(s, evdb) esm_stmt_names(s, sizeof(s) - 1, evdb, strlen(evdb), "shop", "orders")

START_TEST(test_statement_dml)
{
    ck_assert_int_eq(DML("UPDATE orders SET v=2 WHERE id=1"), 1);
    ck_assert_int_eq(DML("  /* app */ insert into orders values (1)"), 1);
    ck_assert_int_eq(DML("# c\nDELETE FROM orders"), 1);
    ck_assert_int_eq(DML("REPLACE INTO orders VALUES (1)"), 1);
    ck_assert_int_eq(DML("LOAD DATA INFILE 'x' INTO TABLE orders"), 1);
    ck_assert_int_eq(DML("BEGIN"), 0);
    ck_assert_int_eq(DML("COMMIT"), 0);
    ck_assert_int_eq(DML("ALTER TABLE orders ADD c INT"), 0);
    ck_assert_int_eq(DML("TRUNCATE orders"), 0);
    ck_assert_int_eq(DML("UPDATEX orders"), 0);
    ck_assert_int_eq(DML(""), 0);

    /* the default database's table, bare or qualified, in any case */
    ck_assert_int_eq(NAMES("UPDATE orders SET v=2", "shop"), 1);
    ck_assert_int_eq(NAMES("UPDATE `Orders` SET v=2", "shop"), 1);
    ck_assert_int_eq(NAMES("DELETE FROM shop.orders WHERE id=1", "other"), 1);
    ck_assert_int_eq(NAMES("DELETE FROM `shop` . `orders` WHERE id=1", "other"), 1);
    ck_assert_int_eq(NAMES("INSERT INTO log SELECT * FROM orders", "shop"), 1);
    ck_assert_int_eq(NAMES("UPDATE a JOIN orders o ON a.id=o.id SET o.v=1", "shop"), 1);
    /* another database's table of that name */
    ck_assert_int_eq(NAMES("UPDATE orders SET v=2", "other"), 0);
    ck_assert_int_eq(NAMES("UPDATE other.orders SET v=2", "shop"), 0);
    /* other tables; the name in a string, a comment, or as a column of another table */
    ck_assert_int_eq(NAMES("UPDATE orders2 SET v=2", "shop"), 0);
    ck_assert_int_eq(NAMES("UPDATE t SET v='orders'", "shop"), 0);
    ck_assert_int_eq(NAMES("UPDATE t SET v=\"it's orders\"", "shop"), 0);
    ck_assert_int_eq(NAMES("UPDATE t SET v='a\\'orders'", "shop"), 0);
    ck_assert_int_eq(NAMES("UPDATE t /* orders */ SET v=1 -- orders\n", "shop"), 0);
    ck_assert_int_eq(NAMES("UPDATE t SET t.orders=1", "shop"), 0);
    ck_assert_int_eq(NAMES("UPDATE `a``orders` SET v=1", "shop"), 0);
    /* a string that never ends, an unclosed comment: no crash, no name */
    ck_assert_int_eq(NAMES("UPDATE t SET v='orders", "shop"), 0);
    ck_assert_int_eq(NAMES("UPDATE t /* orders", "shop"), 0);
}
END_TEST

#define REMOVES(s, evdb) \
    esm_stmt_removes_rows(s, sizeof(s) - 1, evdb, strlen(evdb), "shop", "orders")

START_TEST(test_statement_removes_rows)
{
    ck_assert_int_eq(REMOVES("DROP TABLE `orders` /* generated by server */", "shop"), 1);
    ck_assert_int_eq(REMOVES("/* c */ TRUNCATE TABLE orders", "shop"), 1);
    ck_assert_int_eq(REMOVES("truncate `shop`.`orders`", "x"), 1);
    ck_assert_int_eq(REMOVES("TRUNCATE TABLE orders", "other"), 0);
    ck_assert_int_eq(REMOVES("TRUNCATE TABLE orders2", "shop"), 0);
    ck_assert_int_eq(REMOVES("DROP TABLE IF EXISTS a, shop.orders", "x"), 1);
    ck_assert_int_eq(REMOVES("drop database `shop`", "x"), 1);
    ck_assert_int_eq(REMOVES("DROP DATABASE IF EXISTS shop", "x"), 1);
    ck_assert_int_eq(REMOVES("DROP SCHEMA Shop", "x"), 1);
    ck_assert_int_eq(REMOVES("RENAME TABLE orders TO orders_old, orders_new TO orders", "shop"), 1);
    ck_assert_int_eq(REMOVES("CREATE OR REPLACE TABLE orders (id INT PRIMARY KEY)", "shop"), 1);
    ck_assert_int_eq(REMOVES("ALTER TABLE orders DROP PARTITION p2023", "shop"), 1);
    ck_assert_int_eq(REMOVES("ALTER TABLE shop.orders TRUNCATE PARTITION p1, p2", "x"), 1);
    ck_assert_int_eq(REMOVES("ALTER TABLE orders EXCHANGE PARTITION p0 WITH TABLE t2", "shop"), 1);
    ck_assert_int_eq(REMOVES("ALTER TABLE t2 EXCHANGE PARTITION p0 WITH TABLE orders", "shop"), 1);
    /* rows kept, or another table or database */
    ck_assert_int_eq(REMOVES("ALTER TABLE orders ADD COLUMN c INT", "shop"), 0);
    ck_assert_int_eq(REMOVES("ALTER TABLE orders ADD PARTITION (PARTITION p9 VALUES LESS THAN (9))", "shop"), 0);
    ck_assert_int_eq(REMOVES("ALTER TABLE orders REORGANIZE PARTITION p1 INTO (PARTITION p2)", "shop"), 0);
    ck_assert_int_eq(REMOVES("ALTER TABLE t DROP PARTITION p1", "shop"), 0);
    ck_assert_int_eq(REMOVES("DROP TABLE orders", "other"), 0);
    ck_assert_int_eq(REMOVES("DROP TEMPORARY TABLE orders", "shop"), 0);
    ck_assert_int_eq(REMOVES("DROP DATABASE shop2", "x"), 0);
    ck_assert_int_eq(REMOVES("DROP INDEX i ON orders", "shop"), 0);
    ck_assert_int_eq(REMOVES("CREATE TABLE orders2 LIKE orders", "shop"), 0);
    ck_assert_int_eq(REMOVES("RENAME TABLE a TO b", "shop"), 0);
    ck_assert_int_eq(REMOVES("", "shop"), 0);
    ck_assert_int_eq(REMOVES("DROP", "shop"), 0);
    ck_assert_int_eq(REMOVES("ALTER TABLE orders DROP", "shop"), 0);
}
END_TEST

START_TEST(test_enum_index)
{
    ck_assert_int_eq(esm_enum_index("enum('z','a')", "z"), 1);
    ck_assert_int_eq(esm_enum_index("enum('z','a')", "a"), 2);
    ck_assert_int_eq(esm_enum_index("enum('z','a')", "b"), 0);
    ck_assert_int_eq(esm_enum_index("enum('z','a')", ""), 0);
    ck_assert_int_eq(esm_enum_index("enum('','x')", ""), 1);
    ck_assert_int_eq(esm_enum_index("enum('it''s','a,b','c')", "it's"), 1);
    ck_assert_int_eq(esm_enum_index("enum('it''s','a,b','c')", "a,b"), 2);
    ck_assert_int_eq(esm_enum_index("enum('it''s','a,b','c')", "c"), 3);
    ck_assert_int_eq(esm_enum_index("enum('ab','a')", "a"), 2);
    ck_assert_int_eq(esm_enum_index("enum('a','ab')", "ab"), 2);
    ck_assert_int_eq(esm_enum_index("ENUM('x')", "x"), 1);
    ck_assert_int_eq(esm_enum_index("set('x')", "x"), 0);
    ck_assert_int_eq(esm_enum_index("enum('x", "x"), 0); /* cut short */
    ck_assert_int_eq(esm_enum_index("", "x"), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("mysql_map");
    TCase *tc = tcase_create("map");
    tcase_add_test(tc, test_scalars);
    tcase_add_test(tc, test_dates);
    tcase_add_test(tc, test_big_numbers);
    tcase_add_test(tc, test_dead_letter_line);
    tcase_add_test(tc, test_bit_set_binary_json);
    tcase_add_test(tc, test_text_and_utf8);
    tcase_add_test(tc, test_poll_version);
    tcase_add_test(tc, test_result_class);
    tcase_add_test(tc, test_statement_dml);
    tcase_add_test(tc, test_statement_removes_rows);
    tcase_add_test(tc, test_enum_index);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
