/* Murmur3 over UTF-16 code units: the server's published vectors, vectors
 * computed by the server's own class (tests/data/murmur3_vectors.tsv), and
 * strict UTF-8 decoding. */
#include "murmur3.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int32_t h(const char *s)
{
    int32_t v = 0;
    ck_assert_int_eq(esbulk_route_hash(s, strlen(s), &v), ESBULK_OK);
    return v;
}

/* Elasticsearch's Murmur3HashFunctionTests.testKnownValues. */
START_TEST(test_published_vectors)
{
    ck_assert_int_eq(h("hell"), esbulk__u32_to_i32(0x5a0cb7c3u));
    ck_assert_int_eq(h("hello"), esbulk__u32_to_i32(0xd7c31989u));
    ck_assert_int_eq(h("hello w"), esbulk__u32_to_i32(0x22ab2984u));
    ck_assert_int_eq(h("hello wo"), esbulk__u32_to_i32(0xdf0ca123u));
    ck_assert_int_eq(h("hello wor"), esbulk__u32_to_i32(0xe7744d61u));
    ck_assert_int_eq(h("The quick brown fox jumps over the lazy dog"),
                     esbulk__u32_to_i32(0xe07db09cu));
    ck_assert_int_eq(h("The quick brown fox jumps over the lazy cog"),
                     esbulk__u32_to_i32(0x4e63d2adu));
}
END_TEST

START_TEST(test_negative_hash_is_signed)
{
    /* 0xd7c31989 has the top bit set: the result is a negative int32. */
    ck_assert_int_lt(h("hello"), 0);
    ck_assert_int_eq(h("hello"), -675079799);
}
END_TEST

START_TEST(test_u32_to_i32)
{
    ck_assert_int_eq(esbulk__u32_to_i32(0), 0);
    ck_assert_int_eq(esbulk__u32_to_i32(0x7fffffffu), INT32_MAX);
    ck_assert_int_eq(esbulk__u32_to_i32(0x80000000u), INT32_MIN);
    ck_assert_int_eq(esbulk__u32_to_i32(0xffffffffu), -1);
}
END_TEST

/* Vectors computed by the server's own Murmur3HashFunction.hash(String):
 * tests/data/murmur3_vectors.tsv, "hash<TAB>hex of the UTF-8 string". */
START_TEST(test_server_vectors)
{
    char path[4096], line[8192];
    FILE *f;
    int n = 0;

    snprintf(path, sizeof(path), "%s/tests/data/murmur3_vectors.tsv",
             getenv("top_srcdir") ? getenv("top_srcdir") : ".");
    f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    while (fgets(line, sizeof(line), f)) {
        char *tab = strchr(line, '\t'), bytes[4096];
        size_t len = 0, i;
        long expect;
        int32_t got;

        if (line[0] == '#' || tab == NULL)
            continue;
        expect = strtol(line, NULL, 10);
        for (i = 1; tab[i] && tab[i] != '\n' && tab[i + 1]; i += 2) {
            unsigned v;
            ck_assert(sscanf(tab + i, "%2x", &v) == 1);
            bytes[len++] = (char)v;
        }
        ck_assert_int_eq(esbulk_route_hash(bytes, len, &got), ESBULK_OK);
        ck_assert_msg(got == expect, "vector %d (%s): got %d, want %ld", n, tab + 1, got, expect);
        n++;
    }
    fclose(f);
    ck_assert_int_ge(n, 50);
}
END_TEST

START_TEST(test_empty)
{
    int32_t v = 1;
    ck_assert_int_eq(esbulk_route_hash("", 0, &v), ESBULK_OK);
    ck_assert_int_eq(v, 0);
    ck_assert_int_eq(esbulk_route_hash(NULL, 0, &v), ESBULK_OK);
    ck_assert_int_eq(esbulk_route_hash(NULL, 3, &v), ESBULK_ERR_INVALID_ARG);
    ck_assert_int_eq(esbulk_route_hash("a", 1, NULL), ESBULK_ERR_INVALID_ARG);
}
END_TEST

START_TEST(test_invalid_utf8)
{
    static const char *bad[] = {
        "\x80",             /* lone continuation byte */
        "\xc0\xaf",         /* overlong '/' */
        "\xc1\xbf",         /* overlong */
        "\xe0\x80\xaf",     /* overlong 3-byte */
        "\xf0\x80\x80\xaf", /* overlong 4-byte */
        "\xed\xa0\x80",     /* encoded surrogate U+D800 */
        "\xed\xbf\xbf",     /* encoded surrogate U+DFFF */
        "\xf4\x90\x80\x80", /* U+110000 */
        "\xf5\x80\x80\x80", /* lead byte > F4 */
        "\xff",
        "abc\xe4\xb8",      /* truncated 3-byte at the end */
        "\xe4\xb8x",        /* bad continuation */
        "\xf0\x9f\x98",     /* truncated 4-byte */
    };
    size_t i;
    int32_t v;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_msg(esbulk_route_hash(bad[i], strlen(bad[i]), &v) == ESBULK_ERR_INVALID_UTF8,
                      "case %zu accepted", i);
        ck_assert(!esbulk__utf8_valid(bad[i], strlen(bad[i])));
    }
    /* Boundaries that are valid. */
    ck_assert(esbulk__utf8_valid("\xc2\x80", 2));
    ck_assert(esbulk__utf8_valid("\xed\x9f\xbf", 3));     /* U+D7FF */
    ck_assert(esbulk__utf8_valid("\xee\x80\x80", 3));     /* U+E000 */
    ck_assert(esbulk__utf8_valid("\xf4\x8f\xbf\xbf", 4)); /* U+10FFFF */
    ck_assert(esbulk__utf8_valid("a\0b", 3));             /* NUL is a character */
}
END_TEST

START_TEST(test_long_id)
{
    char id[513];
    int32_t a, b;

    memset(id, 'x', 512);
    id[512] = '\0';
    ck_assert_int_eq(esbulk_route_hash(id, 512, &a), ESBULK_OK);
    id[511] = 'y';
    ck_assert_int_eq(esbulk_route_hash(id, 512, &b), ESBULK_OK);
    ck_assert_int_ne(a, b);
}
END_TEST

/* The ASCII fast path (eight bytes at a time) against the bytewise rule:
 * a bad byte, a good multibyte sequence and a truncated one at every
 * position of a 24-byte string. */
START_TEST(test_utf8_valid_every_position)
{
    char buf[32];
    size_t p;

    for (p = 0; p < 24; p++) {
        memset(buf, 'a', 24);
        ck_assert(esbulk__utf8_valid(buf, 24));
        buf[p] = (char)0xff;
        ck_assert_msg(!esbulk__utf8_valid(buf, 24), "0xff at %zu accepted", p);
        buf[p] = (char)0x80; /* a lone continuation byte */
        ck_assert_msg(!esbulk__utf8_valid(buf, 24), "0x80 at %zu accepted", p);
        if (p + 1 < 24) {
            buf[p] = (char)0xc3; /* U+00E9 */
            buf[p + 1] = (char)0xa9;
            ck_assert_msg(esbulk__utf8_valid(buf, 24), "U+00E9 at %zu refused", p);
            ck_assert_msg(!esbulk__utf8_valid(buf, p + 1), "truncated at %zu accepted", p);
        }
    }
}
END_TEST

/* Murmur3 x86_32, seed 0, over bytes: the plain reference the library's
 * code-unit feeding (two ASCII bytes a block, then one unit at a time) must
 * agree with. */
static uint32_t ref_murmur3(const unsigned char *b, size_t n)
{
    uint32_t h1 = 0, k;
    size_t i, nblocks = n / 4;

    for (i = 0; i < nblocks; i++) {
        k = (uint32_t)b[4 * i] | (uint32_t)b[4 * i + 1] << 8 | (uint32_t)b[4 * i + 2] << 16 |
            (uint32_t)b[4 * i + 3] << 24;
        k *= 0xcc9e2d51u;
        k = (k << 15) | (k >> 17);
        k *= 0x1b873593u;
        h1 ^= k;
        h1 = (h1 << 13) | (h1 >> 19);
        h1 = h1 * 5 + 0xe6546b64u;
    }
    k = 0;
    switch (n & 3) {
    case 3: k ^= (uint32_t)b[4 * nblocks + 2] << 16; /* fall through */
    case 2: k ^= (uint32_t)b[4 * nblocks + 1] << 8;  /* fall through */
    case 1:
        k ^= b[4 * nblocks];
        k *= 0xcc9e2d51u;
        k = (k << 15) | (k >> 17);
        k *= 0x1b873593u;
        h1 ^= k;
    }
    h1 ^= (uint32_t)n;
    h1 ^= h1 >> 16;
    h1 *= 0x85ebca6bu;
    h1 ^= h1 >> 13;
    h1 *= 0xc2b2ae35u;
    h1 ^= h1 >> 16;
    return h1;
}

/* An ASCII run of every length 0..21, then a 2-byte, 3-byte or 4-byte
 * character (one unit, one unit, a surrogate pair), then 0..2 ASCII bytes:
 * the ASCII fast path hands over to the unit-at-a-time path at odd and even
 * positions, and both must give the bytewise hash of the UTF-16LE units. */
START_TEST(test_ascii_run_then_multibyte)
{
    static const struct {
        const char *utf8;
        uint16_t units[2];
        int nunits;
    } mb[] = {{"\xc3\xa9", {0x00e9, 0}, 1},
              {"\xe4\xb8\xad", {0x4e2d, 0}, 1},
              {"\xf0\x9f\x98\x80", {0xd83d, 0xde00}, 2}};
    size_t run, tail, m;

    for (m = 0; m < sizeof(mb) / sizeof(mb[0]); m++)
        for (run = 0; run <= 21; run++)
            for (tail = 0; tail <= 2; tail++) {
                char s[64];
                unsigned char le[128];
                size_t n = 0, nu = 0, k;
                int32_t got;

                for (k = 0; k < run; k++) {
                    s[n++] = (char)('a' + (k * 7 + run) % 26);
                    le[nu++] = (unsigned char)s[n - 1];
                    le[nu++] = 0;
                }
                memcpy(s + n, mb[m].utf8, strlen(mb[m].utf8));
                n += strlen(mb[m].utf8);
                for (k = 0; k < (size_t)mb[m].nunits; k++) {
                    le[nu++] = (unsigned char)(mb[m].units[k] & 0xff);
                    le[nu++] = (unsigned char)(mb[m].units[k] >> 8);
                }
                for (k = 0; k < tail; k++) {
                    s[n++] = (char)('0' + k);
                    le[nu++] = (unsigned char)s[n - 1];
                    le[nu++] = 0;
                }
                ck_assert_int_eq(esbulk_route_hash(s, n, &got), ESBULK_OK);
                ck_assert_msg(got == esbulk__u32_to_i32(ref_murmur3(le, nu)),
                              "run %zu, char %zu, tail %zu", run, m, tail);
                /* and the ASCII alone, every length */
                ck_assert_int_eq(esbulk_route_hash(s, run, &got), ESBULK_OK);
                ck_assert_msg(got == esbulk__u32_to_i32(ref_murmur3(le, 2 * run)),
                              "ASCII run %zu", run);
            }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("murmur3");
    TCase *tc = tcase_create("core");
    SRunner *sr;
    int failed;

    tcase_add_test(tc, test_published_vectors);
    tcase_add_test(tc, test_utf8_valid_every_position);
    tcase_add_test(tc, test_negative_hash_is_signed);
    tcase_add_test(tc, test_u32_to_i32);
    tcase_add_test(tc, test_server_vectors);
    tcase_add_test(tc, test_ascii_run_then_multibyte);
    tcase_add_test(tc, test_empty);
    tcase_add_test(tc, test_invalid_utf8);
    tcase_add_test(tc, test_long_id);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
