/* SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104) for AWS SigV4 signing:
 * portable C (byte-wise big-endian loads and stores, no unaligned access),
 * and the CPU's SHA-256 instructions where it has them (x86 SHA-NI, the
 * ARMv8 cryptographic extension); no allocation. */
#include "sha256.h"

#include <stdatomic.h>
#include <string.h>

static const uint32_t K[64] = {
    0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u, 0x923f82a4u,
    0xab1c5ed5u, 0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u, 0x72be5d74u, 0x80deb1feu,
    0x9bdc06a7u, 0xc19bf174u, 0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu,
    0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau, 0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u,
    0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u, 0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu,
    0x53380d13u, 0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u, 0xa2bfe8a1u, 0xa81a664bu,
    0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u, 0x19a4c116u,
    0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u,
    0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u, 0x90befffau, 0xa4506cebu, 0xbef9a3f7u,
    0xc67178f2u,
};

static inline uint32_t rotr32(uint32_t x, int r)
{
    return (x >> r) | (x << (32 - r));
}

static inline uint32_t load_be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static inline void store_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

#define CH(x, y, z) (((x) & (y)) ^ (~(x) & (z)))
#define MAJ(x, y, z) (((x) & (y)) ^ ((x) & (z)) ^ ((y) & (z)))
#define BSIG0(x) (rotr32(x, 2) ^ rotr32(x, 13) ^ rotr32(x, 22))
#define BSIG1(x) (rotr32(x, 6) ^ rotr32(x, 11) ^ rotr32(x, 25))
#define SSIG0(x) (rotr32(x, 7) ^ rotr32(x, 18) ^ ((x) >> 3))
#define SSIG1(x) (rotr32(x, 17) ^ rotr32(x, 19) ^ ((x) >> 10))

/* One round with the working variables named in rotated order, so eight
 * consecutive rounds need no register shuffling. */
#define ROUND(a, b, c, d, e, f, g, h, i)                                   \
    do {                                                                   \
        uint32_t t1_ = (h) + BSIG1(e) + CH(e, f, g) + K[i] + w[i];         \
        uint32_t t2_ = BSIG0(a) + MAJ(a, b, c);                            \
        (d) += t1_;                                                        \
        (h) = t1_ + t2_;                                                   \
    } while (0)

/* Hashes the 64-byte blocks at p[0..64*nblocks) into st, in portable C. */
static void compress_c(uint32_t st[8], const unsigned char *p, size_t nblocks)
{
    uint32_t w[64];

    while (nblocks--) {
        uint32_t a = st[0], b = st[1], c = st[2], d = st[3];
        uint32_t e = st[4], f = st[5], g = st[6], h = st[7];
        int i;

        for (i = 0; i < 16; i++)
            w[i] = load_be32(p + 4 * i);
        for (i = 16; i < 64; i++)
            w[i] = SSIG1(w[i - 2]) + w[i - 7] + SSIG0(w[i - 15]) + w[i - 16];
        for (i = 0; i < 64; i += 8) {
            ROUND(a, b, c, d, e, f, g, h, i);
            ROUND(h, a, b, c, d, e, f, g, i + 1);
            ROUND(g, h, a, b, c, d, e, f, i + 2);
            ROUND(f, g, h, a, b, c, d, e, i + 3);
            ROUND(e, f, g, h, a, b, c, d, i + 4);
            ROUND(d, e, f, g, h, a, b, c, i + 5);
            ROUND(c, d, e, f, g, h, a, b, i + 6);
            ROUND(b, c, d, e, f, g, h, a, i + 7);
        }
        st[0] += a;
        st[1] += b;
        st[2] += c;
        st[3] += d;
        st[4] += e;
        st[5] += f;
        st[6] += g;
        st[7] += h;
        p += 64;
    }
    /* the schedule holds message (possibly key-derived) words */
    esbulk__wipe(w, sizeof(w));
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>

#define ESBULK__SHA_HW "SHA-NI"
#define SHA_HW_TARGET __attribute__((target("sha,sse4.1,ssse3")))

/* The same with the x86 SHA extensions (SHA-NI: Intel since Goldmont and
 * Ice Lake, AMD since Zen), some five times faster: the state as two
 * registers, ABEF and CDGH (A in the highest lane), four message words a
 * register, two rounds an instruction. */
static SHA_HW_TARGET void compress_hw(uint32_t st[8], const unsigned char *p, size_t nblocks)
{
    const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
    __m128i abef, cdgh, t;

    /* a b c d | e f g h -> f e b a | h g d c (lane 0 first) */
    t = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)(const void *)&st[0]), 0xB1);
    cdgh = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)(const void *)&st[4]), 0x1B);
    abef = _mm_alignr_epi8(t, cdgh, 8);
    cdgh = _mm_blend_epi16(cdgh, t, 0xF0);
    while (nblocks--) {
        __m128i w[4], abef0 = abef, cdgh0 = cdgh, m;
        int g;

        for (g = 0; g < 16; g++) {
            if (g < 4) {
                w[g] = _mm_shuffle_epi8(
                    _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * g)), bswap);
            } else {
                /* w[t..t+3] from w[t-16..t-1]: msg1 adds sigma0 of the
                 * words 15 back, the add those 7 back, msg2 sigma1 of
                 * those 2 back */
                __m128i x = _mm_sha256msg1_epu32(w[g & 3], w[(g + 1) & 3]);

                x = _mm_add_epi32(x, _mm_alignr_epi8(w[(g + 3) & 3], w[(g + 2) & 3], 4));
                w[g & 3] = _mm_sha256msg2_epu32(x, w[(g + 3) & 3]);
            }
            m = _mm_add_epi32(w[g & 3],
                              _mm_loadu_si128((const __m128i *)(const void *)&K[4 * g]));
            cdgh = _mm_sha256rnds2_epu32(cdgh, abef, m);
            abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(m, 0x0E));
        }
        abef = _mm_add_epi32(abef, abef0);
        cdgh = _mm_add_epi32(cdgh, cdgh0);
        p += 64;
    }
    /* back: a b c d | e f g h */
    t = _mm_shuffle_epi32(abef, 0x1B);
    cdgh = _mm_shuffle_epi32(cdgh, 0xB1);
    _mm_storeu_si128((__m128i *)(void *)&st[0], _mm_blend_epi16(t, cdgh, 0xF0));
    _mm_storeu_si128((__m128i *)(void *)&st[4], _mm_alignr_epi8(cdgh, t, 8));
}

/* Whether this CPU has SHA-NI (and the SSSE3 and SSE4.1 it is used with). */
static int cpu_has_sha_hw(void)
{
    unsigned a, b, c, d;

    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSSE3) || !(c & bit_SSE4_1))
        return 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return 0;
    return (b & (1u << 29)) != 0;
}

#elif defined(__aarch64__) && defined(__linux__) &&                                     \
    ((defined(__GNUC__) && !defined(__clang__)) || defined(__ARM_FEATURE_SHA2))
/* gcc declares the intrinsics for functions of the +crypto target; clang
 * (14 at least) only when the whole build targets SHA-2 (-march=...+sha2 or
 * +crypto): without it, clang builds get portable C. */
#include <arm_neon.h>
#include <sys/auxv.h>

#ifndef HWCAP_SHA2
#define HWCAP_SHA2 (1UL << 6)
#endif
#define ESBULK__SHA_HW "ARMv8 SHA-2"
#ifdef __ARM_FEATURE_SHA2
#define SHA_HW_TARGET
#else
#define SHA_HW_TARGET __attribute__((target("+crypto")))
#endif

/* The same with the ARMv8 cryptographic extension (Neoverse, Graviton,
 * Apple silicon; optional on Cortex-A53 and A72, which the Raspberry Pi's
 * lack): the state as two registers, ABCD and EFGH (A in lane 0), four
 * message words a register, four rounds a pair of instructions. */
static SHA_HW_TARGET void compress_hw(uint32_t st[8], const unsigned char *p, size_t nblocks)
{
    uint32x4_t abcd = vld1q_u32(&st[0]), efgh = vld1q_u32(&st[4]);

    while (nblocks--) {
        uint32x4_t w[4], abcd0 = abcd, efgh0 = efgh, m, prev;
        int g;

        for (g = 0; g < 16; g++) {
            if (g < 4) {
                w[g] = vreinterpretq_u32_u8(vrev32q_u8(vld1q_u8(p + 16 * g)));
            } else {
                /* w[t..t+3] from w[t-16..t-1]: su0 adds sigma0 of the words
                 * 15 back, su1 those 7 back and sigma1 of those 2 back */
                w[g & 3] = vsha256su1q_u32(vsha256su0q_u32(w[g & 3], w[(g + 1) & 3]),
                                           w[(g + 2) & 3], w[(g + 3) & 3]);
            }
            m = vaddq_u32(w[g & 3], vld1q_u32(&K[4 * g]));
            prev = abcd;
            abcd = vsha256hq_u32(abcd, efgh, m);
            efgh = vsha256h2q_u32(efgh, prev, m);
        }
        abcd = vaddq_u32(abcd, abcd0);
        efgh = vaddq_u32(efgh, efgh0);
        p += 64;
    }
    vst1q_u32(&st[0], abcd);
    vst1q_u32(&st[4], efgh);
}

/* Whether this CPU has the SHA-256 instructions, as the kernel says. */
static int cpu_has_sha_hw(void)
{
    return (getauxval(AT_HWCAP) & HWCAP_SHA2) != 0;
}
#endif

/* 0: portable C, 1: the CPU's instructions; -1: not looked at yet (a benign race: every
 * thread finds the same) */
static _Atomic int impl = -1;

int esbulk__sha256_accelerated(int use)
{
#ifdef ESBULK__SHA_HW
    int have = cpu_has_sha_hw();

    atomic_store(&impl, use && have);
    return atomic_load(&impl);
#else
    (void)use;
    atomic_store(&impl, 0);
    return 0;
#endif
}

const char *esbulk__sha256_hw_name(void)
{
#ifdef ESBULK__SHA_HW
    return ESBULK__SHA_HW;
#else
    return NULL;
#endif
}

static void compress(uint32_t st[8], const unsigned char *p, size_t nblocks)
{
    int i = atomic_load_explicit(&impl, memory_order_relaxed);

    if (i < 0)
        i = esbulk__sha256_accelerated(1);
#ifdef ESBULK__SHA_HW
    if (i == 1) {
        compress_hw(st, p, nblocks);
        return;
    }
#endif
    compress_c(st, p, nblocks);
}

void esbulk__sha256_init(esbulk__sha256_t *c)
{
    static const uint32_t iv[8] = {0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au,
                                   0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u};

    memcpy(c->h, iv, sizeof(iv));
    c->bytes = 0;
    memset(c->block, 0, sizeof(c->block));
    c->fill = 0;
}

void esbulk__sha256_update(esbulk__sha256_t *c, const void *p, size_t n)
{
    const unsigned char *in = p;

    if (n == 0)
        return;
    c->bytes += (uint64_t)n;
    if (c->fill > 0) {
        size_t take = sizeof(c->block) - c->fill;

        if (take > n)
            take = n;
        memcpy(c->block + c->fill, in, take);
        c->fill += take;
        in += take;
        n -= take;
        if (c->fill < sizeof(c->block))
            return;
        compress(c->h, c->block, 1);
        c->fill = 0;
    }
    if (n >= 64) {
        compress(c->h, in, n / 64);
        in += n & ~(size_t)63;
        n &= 63;
    }
    if (n > 0) {
        memcpy(c->block, in, n);
        c->fill = n;
    }
}

void esbulk__sha256_final(esbulk__sha256_t *c, unsigned char out[ESBULK__SHA256_LEN])
{
    uint64_t bits = c->bytes * 8;
    int i;

    /* 0x80, zeros to 56 mod 64, then the length in bits, big-endian */
    c->block[c->fill++] = 0x80;
    if (c->fill > 56) {
        memset(c->block + c->fill, 0, sizeof(c->block) - c->fill);
        compress(c->h, c->block, 1);
        c->fill = 0;
    }
    memset(c->block + c->fill, 0, 56 - c->fill);
    for (i = 0; i < 8; i++)
        c->block[56 + i] = (unsigned char)(bits >> (56 - 8 * i));
    compress(c->h, c->block, 1);
    for (i = 0; i < 8; i++)
        store_be32(out + 4 * i, c->h[i]);
    esbulk__wipe(c, sizeof(*c));
}

void esbulk__sha256(const void *p, size_t n, unsigned char out[ESBULK__SHA256_LEN])
{
    esbulk__sha256_t c;

    esbulk__sha256_init(&c);
    esbulk__sha256_update(&c, p, n);
    esbulk__sha256_final(&c, out);
}

void esbulk__hmac_sha256(const void *key, size_t key_len, const void *msg, size_t msg_len,
                         unsigned char out[ESBULK__SHA256_LEN])
{
    unsigned char k[64], pad[64], inner[ESBULK__SHA256_LEN];
    esbulk__sha256_t c;
    size_t i;

    memset(k, 0, sizeof(k));
    if (key_len > sizeof(k))
        esbulk__sha256(key, key_len, k);
    else if (key_len > 0)
        memcpy(k, key, key_len);

    for (i = 0; i < sizeof(pad); i++)
        pad[i] = (unsigned char)(k[i] ^ 0x36);
    esbulk__sha256_init(&c);
    esbulk__sha256_update(&c, pad, sizeof(pad));
    esbulk__sha256_update(&c, msg, msg_len);
    esbulk__sha256_final(&c, inner);

    for (i = 0; i < sizeof(pad); i++)
        pad[i] = (unsigned char)(k[i] ^ 0x5c);
    esbulk__sha256_init(&c);
    esbulk__sha256_update(&c, pad, sizeof(pad));
    esbulk__sha256_update(&c, inner, sizeof(inner));
    esbulk__sha256_final(&c, out);

    esbulk__wipe(k, sizeof(k));
    esbulk__wipe(pad, sizeof(pad));
    esbulk__wipe(inner, sizeof(inner));
}

void esbulk__hex(const unsigned char *p, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    size_t i;

    for (i = 0; i < n; i++) {
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 0x0f];
    }
    out[2 * n] = '\0';
}
