/* SHA-256 and HMAC-SHA256 (lib/sha256.c, for AWS SigV4 signing): the FIPS
 * 180-2 examples, the RFC 4231 HMAC cases, incremental updates split at
 * every point, and the padding boundaries. */
#include "sha256.h"

#include <check.h>
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parses 64 hex digits into 32 bytes (the test's own parser, so that the
 * expectations do not go through esbulk__hex). */
static void unhex(const char *hex, unsigned char *out, size_t n)
{
    size_t i;

    ck_assert_uint_eq(strlen(hex), 2 * n);
    for (i = 0; i < n; i++) {
        unsigned v;
        ck_assert_int_eq(sscanf(hex + 2 * i, "%2x", &v), 1);
        out[i] = (unsigned char)v;
    }
}

/* Asserts that got[0..n) is the digest spelled by hex. */
#define ASSERT_DIGEST(got, hex, n, what)                                             \
    do {                                                                             \
        unsigned char want_[ESBULK__SHA256_LEN];                                     \
        char got_hex_[2 * ESBULK__SHA256_LEN + 1];                                   \
        unhex((hex), want_, (n));                                                    \
        esbulk__hex((got), (n), got_hex_);                                           \
        ck_assert_msg(memcmp((got), want_, (n)) == 0, "%s: got %s, want %s", (what), \
                      got_hex_, (hex));                                              \
    } while (0)

static void sha_str(const char *s, unsigned char out[ESBULK__SHA256_LEN])
{
    esbulk__sha256(s, strlen(s), out);
}

/* A deterministic message: byte i is (i * 31 + 7) mod 256. */
static void pattern(unsigned char *p, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 31 + 7);
}

/* FIPS 180-2, Appendix B, and the NIST SHA-256 examples. */
START_TEST(test_fips_vectors)
{
    unsigned char d[ESBULK__SHA256_LEN];

    sha_str("", d);
    ASSERT_DIGEST(d, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", 32,
                  "empty");
    esbulk__sha256(NULL, 0, d);
    ASSERT_DIGEST(d, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", 32,
                  "NULL, 0");
    sha_str("abc", d);
    ASSERT_DIGEST(d, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", 32,
                  "abc");
    sha_str("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", d);
    ASSERT_DIGEST(d, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1", 32,
                  "448-bit");
    sha_str("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopq"
            "klmnopqrlmnopqrsmnopqrstnopqrstu",
            d);
    ASSERT_DIGEST(d, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1", 32,
                  "896-bit");
}
END_TEST

START_TEST(test_million_a)
{
    static const char *want = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
    unsigned char d[ESBULK__SHA256_LEN], chunk[1000];
    unsigned char *big = malloc(1000000);
    esbulk__sha256_t c;
    int i;

    ck_assert_ptr_nonnull(big);
    memset(big, 'a', 1000000);
    esbulk__sha256(big, 1000000, d);
    ASSERT_DIGEST(d, want, 32, "one-shot");
    free(big);

    memset(chunk, 'a', sizeof(chunk));
    esbulk__sha256_init(&c);
    for (i = 0; i < 1000; i++)
        esbulk__sha256_update(&c, chunk, sizeof(chunk));
    esbulk__sha256_final(&c, d);
    ASSERT_DIGEST(d, want, 32, "1000 x 1000");
}
END_TEST

/* A ~200-byte message split in two at every point (and with an empty update
 * on either side) gives the one-shot digest. */
START_TEST(test_every_split_point)
{
    unsigned char msg[200], one[ESBULK__SHA256_LEN], got[ESBULK__SHA256_LEN];
    size_t cut;

    pattern(msg, sizeof(msg));
    esbulk__sha256(msg, sizeof(msg), one);
    for (cut = 0; cut <= sizeof(msg); cut++) {
        esbulk__sha256_t c;

        esbulk__sha256_init(&c);
        esbulk__sha256_update(&c, NULL, 0);
        esbulk__sha256_update(&c, msg, cut);
        esbulk__sha256_update(&c, NULL, 0);
        esbulk__sha256_update(&c, msg + cut, sizeof(msg) - cut);
        esbulk__sha256_final(&c, got);
        ck_assert_msg(memcmp(one, got, sizeof(one)) == 0, "split at %zu", cut);
    }
}
END_TEST

/* A 1000-byte message fed in chunks of 1, 3, 63, 64 and 65 bytes. */
START_TEST(test_chunk_sizes)
{
    static const size_t sizes[] = {1, 3, 63, 64, 65};
    unsigned char msg[1000], one[ESBULK__SHA256_LEN], got[ESBULK__SHA256_LEN];
    size_t s;

    pattern(msg, sizeof(msg));
    esbulk__sha256(msg, sizeof(msg), one);
    for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        esbulk__sha256_t c;
        size_t off;

        esbulk__sha256_init(&c);
        for (off = 0; off < sizeof(msg); off += sizes[s]) {
            size_t n = sizeof(msg) - off < sizes[s] ? sizeof(msg) - off : sizes[s];
            esbulk__sha256_update(&c, msg + off, n);
        }
        esbulk__sha256_final(&c, got);
        ck_assert_msg(memcmp(one, got, sizeof(one)) == 0, "chunks of %zu", sizes[s]);
    }
}
END_TEST

/* Lengths around the padding boundaries (55: the length fits in the last
 * block; 56..63: it needs one more), one-shot against byte by byte, and
 * against digests from an independent implementation (Python's hashlib,
 * over the same pattern). */
START_TEST(test_padding_boundaries)
{
    static const struct {
        size_t len;
        const char *hex;
    } v[] = {
        {55, "8aa994584139d128848eeebc4e815639ba5ab6e6e39574195a63ac4f14f7c43b"},
        {56, "ad574708f75c044c9b85de64cb568ee7711ff4f36448c6242f053ba8f6cc2b63"},
        {63, "280ed3e8ff1df845b2e7dfe6ac6cee817bef20e783cc65abc41b818b4d2fe076"},
        {64, "c6ab9724ade5b6a7a1edfffb12f3aa9181351355af8fd08c919952ad211339dd"},
        {119, "3d610547d68216dedf7435a4fb6260353911f6b3fd3f18805ddb8be285d726fe"},
        {120, "1f80156a804cb7862ad113e8200e9d74499723e7c7854d5f48776d3148e09656"},
    };
    unsigned char msg[128], one[ESBULK__SHA256_LEN], got[ESBULK__SHA256_LEN];
    size_t k, i;

    pattern(msg, sizeof(msg));
    for (k = 0; k < sizeof(v) / sizeof(v[0]); k++) {
        esbulk__sha256_t c;
        char what[32];

        esbulk__sha256(msg, v[k].len, one);
        esbulk__sha256_init(&c);
        for (i = 0; i < v[k].len; i++)
            esbulk__sha256_update(&c, msg + i, 1);
        esbulk__sha256_final(&c, got);
        ck_assert_msg(memcmp(one, got, sizeof(one)) == 0, "length %zu byte by byte", v[k].len);
        snprintf(what, sizeof(what), "length %zu", v[k].len);
        ASSERT_DIGEST(one, v[k].hex, 32, what);
    }
}
END_TEST

START_TEST(test_final_wipes_context)
{
    static const unsigned char zero[sizeof(esbulk__sha256_t)];
    unsigned char d[ESBULK__SHA256_LEN];
    esbulk__sha256_t c;

    esbulk__sha256_init(&c);
    esbulk__sha256_update(&c, "secret", 6);
    esbulk__sha256_final(&c, d);
    ck_assert(memcmp(&c, zero, sizeof(c)) == 0);
}
END_TEST

/* RFC 4231, test cases 1-7 (case 5's output is truncated to 128 bits). */
START_TEST(test_hmac_rfc4231)
{
    unsigned char key[131], data[50], d[ESBULK__SHA256_LEN];
    size_t i;

    memset(key, 0x0b, 20);
    esbulk__hmac_sha256(key, 20, "Hi There", 8, d);
    ASSERT_DIGEST(d, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7", 32,
                  "case 1");

    esbulk__hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, d);
    ASSERT_DIGEST(d, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843", 32,
                  "case 2");

    memset(key, 0xaa, 20);
    memset(data, 0xdd, 50);
    esbulk__hmac_sha256(key, 20, data, 50, d);
    ASSERT_DIGEST(d, "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe", 32,
                  "case 3");

    for (i = 0; i < 25; i++)
        key[i] = (unsigned char)(i + 1);
    memset(data, 0xcd, 50);
    esbulk__hmac_sha256(key, 25, data, 50, d);
    ASSERT_DIGEST(d, "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b", 32,
                  "case 4");

    memset(key, 0x0c, 20);
    esbulk__hmac_sha256(key, 20, "Test With Truncation", 20, d);
    ASSERT_DIGEST(d, "a3b6167473100ee06e0c796c2955552b", 16, "case 5 (first 128 bits)");

    memset(key, 0xaa, 131);
    esbulk__hmac_sha256(key, 131, "Test Using Larger Than Block-Size Key - Hash Key First", 54, d);
    ASSERT_DIGEST(d, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54", 32,
                  "case 6");

    {
        static const char *msg = "This is a test using a larger than block-size key and a larger "
                                 "than block-size data. The key needs to be hashed before being "
                                 "used by the HMAC algorithm.";
        esbulk__hmac_sha256(key, 131, msg, strlen(msg), d);
        ASSERT_DIGEST(d, "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2", 32,
                      "case 7");
    }
}
END_TEST

/* An empty key and message (both NULL), and keys of exactly one block and
 * one byte more (hashed first), against Python's hmac. */
START_TEST(test_hmac_edges)
{
    unsigned char key[65], d[ESBULK__SHA256_LEN];

    esbulk__hmac_sha256(NULL, 0, NULL, 0, d);
    ASSERT_DIGEST(d, "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad", 32,
                  "empty key and message");
    pattern(key, sizeof(key));
    esbulk__hmac_sha256(key, 64, "msg", 3, d);
    ASSERT_DIGEST(d, "d1207cbd2b7d760a3f3bac9524d92df5009bb4b0189403ccfac7b42b1b7b02d4", 32,
                  "64-byte key");
    esbulk__hmac_sha256(key, 65, "msg", 3, d);
    ASSERT_DIGEST(d, "b10b6435b74d94576a11d2edaf337df238c78447921416110664e9fef8e7e955", 32,
                  "65-byte key");
}
END_TEST

START_TEST(test_hex)
{
    static const unsigned char b[] = {0x00, 0x0f, 0xf0, 0xff, 0x5a};
    unsigned char d[ESBULK__SHA256_LEN];
    char out[2 * ESBULK__SHA256_LEN + 1];

    sha_str("abc", d);
    memset(out, 'X', sizeof(out));
    esbulk__hex(d, sizeof(d), out);
    ck_assert_str_eq(out, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");

    esbulk__hex(b, sizeof(b), out);
    ck_assert_str_eq(out, "000ff0ff5a");
    out[0] = 'X';
    esbulk__hex(b, 0, out);
    ck_assert_str_eq(out, "");
}
END_TEST

/* The two implementations agree on every length from 0 to 1100 bytes
 * (every padding case, several blocks) of pseudo-random data, one-shot and
 * in pieces. */
START_TEST(test_implementations_agree)
{
    static unsigned char data[1100];
    unsigned char a[ESBULK__SHA256_LEN], b[ESBULK__SHA256_LEN];
    uint32_t x = 2463534242u;
    size_t i, n;

    if (!esbulk__sha256_accelerated(1)) {
        esbulk__sha256_accelerated(0);
        return; /* nothing to compare with: the suite ran in C alone (said by main) */
    }
    for (i = 0; i < sizeof(data); i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        data[i] = (unsigned char)x;
    }
    for (n = 0; n <= sizeof(data); n++) {
        esbulk__sha256_t c;

        esbulk__sha256_accelerated(0);
        esbulk__sha256(data, n, a);
        esbulk__sha256_accelerated(1);
        esbulk__sha256_init(&c);
        esbulk__sha256_update(&c, data, n / 3);
        esbulk__sha256_update(&c, data + n / 3, n - n / 3);
        esbulk__sha256_final(&c, b);
        ck_assert_msg(memcmp(a, b, sizeof(a)) == 0, "%zu bytes: the two differ", n);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("sha256");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_fips_vectors);
    tcase_add_test(tc, test_million_a);
    tcase_add_test(tc, test_every_split_point);
    tcase_add_test(tc, test_chunk_sizes);
    tcase_add_test(tc, test_padding_boundaries);
    tcase_add_test(tc, test_final_wipes_context);
    tcase_add_test(tc, test_hmac_rfc4231);
    tcase_add_test(tc, test_hmac_edges);
    tcase_add_test(tc, test_hex);
    tcase_add_test(tc, test_implementations_agree); /* last: it switches between the two */
    suite_add_tcase(s, tc);
    return s;
}

/* Whether the CPU has the SHA-256 instructions, asked here and not of the
 * library (x86: CPUID leaf 7, EBX bit 29, valgrind's CPU has none; ARMv8:
 * the kernel's HWCAP_SHA2, bit 6). */
static int cpu_has_sha(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    unsigned a, b, c, d;

    return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 29)) != 0;
#elif defined(__aarch64__) && defined(__linux__)
    return (getauxval(AT_HWCAP) & (1UL << 6)) != 0;
#else
    return 0;
#endif
}

int main(void)
{
    SRunner *sr;
    int failed = 0, pass;

    /* the library uses them where the CPU has them: signing is five
     * times slower without (unless this build has no path for them) */
    if (esbulk__sha256_hw_name() == NULL) {
        if (esbulk__sha256_accelerated(1) != 0) {
            printf("check_sha256: no CPU path is built, yet the library says it uses one\n");
            return 1;
        }
        printf("check_sha256: this build has no path for the CPU's SHA-256 instructions\n");
    } else if (esbulk__sha256_accelerated(1) != cpu_has_sha()) {
        printf("check_sha256: the CPU %s the SHA instructions, the library %s them\n",
               cpu_has_sha() ? "has" : "has not", cpu_has_sha() ? "does not use" : "uses");
        return 1;
    }

    /* every vector through portable C, then through the CPU's SHA
     * instructions (where it has them: said, so that a run without them
     * is seen) */
    for (pass = 0; pass < 2; pass++) {
        if (esbulk__sha256_accelerated(pass) != pass) {
            printf("check_sha256: this CPU has no SHA instructions: portable C only\n");
            break;
        }
        printf("check_sha256: %s\n", pass ? esbulk__sha256_hw_name() : "portable C");
        sr = srunner_create(suite());
        srunner_run_all(sr, CK_NORMAL);
        failed += srunner_ntests_failed(sr);
        srunner_free(sr);
    }
    return failed ? 1 : 0;
}
