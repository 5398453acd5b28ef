/* libFuzzer harness: UTF-8 -> UTF-16 hashing and the shard function
 * (lib/murmur3.c, lib/route.c) against slow, obviously-correct references
 * written here from the definitions: decode UTF-8 one code point at a time
 * by the table of RFC 3629, split into UTF-16 code units, hash their
 * little-endian bytes with a byte-at-a-time Murmur3 x86_32 (seed 0), and
 * route with Java int arithmetic done in 64 bits and wrapped explicitly.
 *
 * Input: bytes 0..5 the layout (shards, routing-shards factor, partition
 * size, function); then id and routing separated by a NUL byte. */
#include "murmur3.h"
#include "route.h"

#include <esbulk.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FAIL(...) (fprintf(stderr, "fuzz_route: " __VA_ARGS__), fputc('\n', stderr), abort())

/* UTF-16 code units of strict UTF-8 s, or -1 (invalid). u needs len entries. */
static long ref_utf16(const uint8_t *s, size_t len, uint16_t *u)
{
    size_t i = 0;
    long n = 0;

    while (i < len) {
        uint32_t cp, min;
        size_t k, extra;

        if (s[i] < 0x80) { cp = s[i]; extra = 0; min = 0; }
        else if (s[i] >= 0xC2 && s[i] <= 0xDF) { cp = s[i] & 0x1F; extra = 1; min = 0x80; }
        else if (s[i] >= 0xE0 && s[i] <= 0xEF) { cp = s[i] & 0x0F; extra = 2; min = 0x800; }
        else if (s[i] >= 0xF0 && s[i] <= 0xF4) { cp = s[i] & 0x07; extra = 3; min = 0x10000; }
        else return -1;
        if (len - i <= extra) /* not enough bytes left */
            return -1;
        for (k = 1; k <= extra; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return -1;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return -1;
        if (cp >= 0x10000) {
            u[n++] = (uint16_t)(0xD800 + ((cp - 0x10000) >> 10));
            u[n++] = (uint16_t)(0xDC00 + ((cp - 0x10000) & 0x3FF));
        } else {
            u[n++] = (uint16_t)cp;
        }
        i += extra + 1;
    }
    return n;
}

static uint32_t rotl(uint32_t x, int r) { return x << r | x >> (32 - r); }

/* Murmur3 x86_32, seed 0, fed one byte at a time from the bytes of the code units */
static int32_t ref_hash(const uint16_t *u, long n)
{
    uint32_t h = 0, k = 0, c1 = 0xcc9e2d51u, c2 = 0x1b873593u;
    size_t nbytes = (size_t)n * 2, i;

    for (i = 0; i < nbytes; i++) {
        uint32_t b = (i & 1) ? (uint32_t)(u[i / 2] >> 8) : (uint32_t)(u[i / 2] & 0xFF);

        k |= b << (8 * (i % 4));
        if (i % 4 == 3) {
            h ^= rotl(k * c1, 15) * c2;
            h = rotl(h, 13) * 5 + 0xe6546b64u;
            k = 0;
        }
    }
    if (nbytes % 4)
        h ^= rotl(k * c1, 15) * c2;
    h ^= (uint32_t)nbytes;
    h ^= h >> 16; h *= 0x85ebca6bu; h ^= h >> 13; h *= 0xc2b2ae35u; h ^= h >> 16;
    return (int32_t)(int64_t)(h >= 0x80000000u ? (int64_t)h - 4294967296LL : (int64_t)h);
}

/* Java int: wrap a 64-bit value to 32 bits, two's complement */
static int64_t java_int(int64_t v)
{
    int64_t m = ((v % 4294967296LL) + 4294967296LL) % 4294967296LL;
    return m >= 2147483648LL ? m - 4294967296LL : m;
}

static int64_t floor_mod(int64_t x, int64_t m) { return ((x % m) + m) % m; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *id, *routing, *z;
    size_t id_len, routing_len;
    uint16_t *u;
    long nid, nr;
    int32_t shards, factor, psize, got, h;
    esbulk_layout_t *layout;
    esbulk_err_t err;
    int mod;

    if (size < 6)
        return 0;
    shards = 1 + (data[0] | (data[1] & 3) << 8);        /* 1..1024 */
    factor = 1 + (data[2] & 31);                         /* routing shards = shards * factor */
    psize = 1 + (data[3] | (data[4] & 1) << 8);          /* 1..512 */
    if (psize > shards)
        psize = 1 + psize % shards;
    mod = data[5] & 1;
    id = data + 6;
    z = memchr(id, 0, size - 6);
    id_len = z ? (size_t)(z - id) : size - 6;
    routing = z ? z + 1 : data + size;
    routing_len = (size_t)(data + size - routing);

    u = malloc((size > 0 ? size : 1) * sizeof(*u));
    nid = ref_utf16(id, id_len, u);
    if ((nid >= 0) != (esbulk__utf8_valid((const char *)id, id_len) != 0))
        FAIL("UTF-8 validity: reference %ld, library %d", nid,
             esbulk__utf8_valid((const char *)id, id_len));
    err = esbulk__murmur3_utf16((const char *)id, id_len, &h);
    if (nid < 0 ? err != ESBULK_ERR_INVALID_UTF8 : (err != ESBULK_OK || h != ref_hash(u, nid)))
        FAIL("hash of %zu bytes: err %d, %d vs reference %d", id_len, err, h,
             nid >= 0 ? ref_hash(u, nid) : 0);
    {
        int64_t hid = nid >= 0 ? ref_hash(u, nid) : 0, hash, rs = (int64_t)shards * factor;
        int expect_ok = nid >= 0 && id_len > 0; /* routed by the id */

        nr = ref_utf16(routing, routing_len, u);
        if (routing_len > 0) {
            /* routed by the routing; partitioned: the id picks the partition */
            expect_ok = nr >= 0 && (psize == 1 || (nid >= 0 && id_len > 0));
            hash = nr >= 0 ? ref_hash(u, nr) : 0;
            if (psize > 1)
                hash = java_int(hash + floor_mod(hid, psize));
        } else {
            hash = hid;
        }
        layout = esbulk_layout_new();
        if (layout == NULL)
            abort();
        esbulk_layout_set_shards(layout, shards);
        esbulk_layout_set_routing_shards(layout, (int32_t)rs);
        esbulk_layout_set_partition_size(layout, psize);
        esbulk_layout_set_function(layout, mod ? ESBULK_ROUTE_MOD : ESBULK_ROUTE_LEGACY);
        got = -1;
        err = esbulk_layout_shard(layout, (const char *)id, id_len, (const char *)routing,
                                  routing_len, &got);
        if ((err == ESBULK_OK) != expect_ok)
            FAIL("shard: err %d, expected %s", err, expect_ok ? "success" : "a refusal");
        if (err == ESBULK_OK) {
            int64_t want = mod ? floor_mod(hash, shards) : floor_mod(hash, rs) / factor;

            if (got != want)
                FAIL("shard %d, reference %lld (%d shards, %lld routing shards, partition %d, "
                     "%s)", got, (long long)want, shards, (long long)rs, psize,
                     mod ? "mod" : "legacy");
        }
        esbulk_layout_destroy(layout);
    }
    free(u);
    return 0;
}
