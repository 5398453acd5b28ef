/* SHA-256 through the CPU's instructions, checked without Check, so that it
 * can be built for another architecture and run there under an emulator
 * (tests/sha256_arm64.test: the ARMv8 path under qemu-aarch64). Natively it
 * checks whatever path the CPU has.
 *
 *   sha256_hw [--require]
 *
 * --require: fail when the library does not use the CPU's instructions
 * (the emulated CPU has them: a run in portable C would prove nothing).
 * Checks the FIPS 180-2 examples, an RFC 4231 HMAC, and that the CPU's path
 * and portable C agree on every length from 0 to 1100 bytes, one-shot and
 * in pieces, at every alignment. Prints what it checked; exits 1 on a
 * failure. */
#include "sha256.h"

#include <stdio.h>
#include <string.h>

static int failed;

static void check_hex(const unsigned char *got, const char *want, const char *what, int hw)
{
    char hex[2 * ESBULK__SHA256_LEN + 1];

    esbulk__hex(got, ESBULK__SHA256_LEN, hex);
    if (strcmp(hex, want) != 0) {
        printf("FAIL: %s (%s): got %s, want %s\n", what, hw ? "CPU" : "portable C", hex, want);
        failed++;
    }
}

/* The FIPS examples and the HMAC, through the path selected now. */
static void vectors(int hw)
{
    static const struct {
        const char *msg, *want;
    } v[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmno"
         "pqrlmnopqrsmnopqrstnopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
    };
    static unsigned char million[1000000];
    unsigned char out[ESBULK__SHA256_LEN];
    size_t i;

    for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        esbulk__sha256(v[i].msg, strlen(v[i].msg), out);
        check_hex(out, v[i].want, v[i].msg[0] ? v[i].msg : "(empty)", hw);
    }
    memset(million, 'a', sizeof(million));
    esbulk__sha256(million, sizeof(million), out);
    check_hex(out, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0",
              "a million a", hw);
    esbulk__hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, out);
    check_hex(out, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
              "HMAC, RFC 4231 case 2", hw);
}

int main(int argc, char **argv)
{
    static unsigned char data[1100 + 16];
    unsigned char a[ESBULK__SHA256_LEN], b[ESBULK__SHA256_LEN];
    int require = argc > 1 && strcmp(argv[1], "--require") == 0;
    uint32_t x = 2463534242u;
    size_t i, n, off, compared = 0, differ = 0;

    if (argc > 2 || (argc == 2 && !require)) {
        fprintf(stderr, "usage: %s [--require]\n", argv[0]);
        return 2;
    }
    esbulk__sha256_accelerated(0);
    vectors(0);
    if (!esbulk__sha256_accelerated(1)) {
        printf("%s: the library does not use this CPU's SHA-256 instructions (%s)\n",
               require ? "FAIL" : "note",
               esbulk__sha256_hw_name() ? "the CPU has none" : "no path for them is built");
        return require || failed ? 1 : 0;
    }
    vectors(1);
    for (i = 0; i < sizeof(data); i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        data[i] = (unsigned char)x;
    }
    /* every length, at every alignment modulo 16 (the loads are of 16
     * bytes): portable C one-shot against the CPU in two pieces */
    for (off = 0; off < 16; off++) {
        for (n = 0; n <= 1100; n++) {
            esbulk__sha256_t c;

            esbulk__sha256_accelerated(0);
            esbulk__sha256(data + off, n, a);
            esbulk__sha256_accelerated(1);
            esbulk__sha256_init(&c);
            esbulk__sha256_update(&c, data + off, n / 3);
            esbulk__sha256_update(&c, data + off + n / 3, n - n / 3);
            esbulk__sha256_final(&c, b);
            compared++;
            if (memcmp(a, b, sizeof(a)) != 0) {
                if (differ++ < 10)
                    printf("FAIL: %zu bytes at offset %zu: the CPU's path and portable C "
                           "differ\n", n, off);
                failed++;
            }
        }
    }
    printf("%s: %s: FIPS 180-2 and RFC 4231 through it and portable C; %zu messages agree\n",
           failed ? "FAIL" : "ok", esbulk__sha256_hw_name(), compared - differ);
    return failed ? 1 : 0;
}
