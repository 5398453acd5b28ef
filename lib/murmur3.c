/* Murmur3 x86_32 (seed 0) over UTF-16LE code units, fed from UTF-8. */
#include "murmur3.h"
#include "utf8.h"

#define C1 0xcc9e2d51u
#define C2 0x1b873593u

static inline uint32_t rotl32(uint32_t x, int r)
{
    return (x << r) | (x >> (32 - r));
}

static inline uint32_t mix_k(uint32_t k)
{
    k *= C1;
    k = rotl32(k, 15);
    k *= C2;
    return k;
}

/* Hash state fed one UTF-16 code unit at a time; two units form a block. */
typedef struct {
    uint32_t h;
    uint32_t pending;   /* the first unit of an unfinished block */
    int have_pending;
    uint32_t nbytes;    /* bytes hashed: 2 per code unit */
} m3_state_t;

static inline void m3_unit(m3_state_t *st, uint32_t unit)
{
    st->nbytes += 2;
    if (!st->have_pending) {
        st->pending = unit;
        st->have_pending = 1;
        return;
    }
    st->h ^= mix_k(st->pending | (unit << 16));
    st->h = rotl32(st->h, 13);
    st->h = st->h * 5 + 0xe6546b64u;
    st->have_pending = 0;
}

static inline uint32_t m3_final(m3_state_t *st)
{
    uint32_t h = st->h;

    if (st->have_pending)
        h ^= mix_k(st->pending);
    h ^= st->nbytes;
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

esbulk_err_t esbulk__murmur3_utf16(const char *s, size_t len, int32_t *hash)
{
    const unsigned char *u = (const unsigned char *)s;
    m3_state_t st = {0, 0, 0, 0};
    size_t i = 0;

    /* ASCII two bytes at a time: each byte is a whole code unit, and two
     * units make a block (most ids are short ASCII strings) */
    while (i + 2 <= len && (u[i] | u[i + 1]) < 0x80) {
        st.h ^= mix_k((uint32_t)u[i] | ((uint32_t)u[i + 1] << 16));
        st.h = rotl32(st.h, 13);
        st.h = st.h * 5 + 0xe6546b64u;
        i += 2;
    }
    st.nbytes = (uint32_t)(i * 2);
    while (i < len) {
        int32_t cp;

        if (u[i] < 0x80) { /* ASCII fast path */
            m3_unit(&st, u[i++]);
            continue;
        }
        cp = esbulk__utf8_next(u, len, &i);
        if (cp < 0)
            return ESBULK_ERR_INVALID_UTF8;
        if (cp < 0x10000) {
            m3_unit(&st, (uint32_t)cp);
        } else {
            uint32_t v = (uint32_t)cp - 0x10000;
            m3_unit(&st, 0xd800 + (v >> 10));
            m3_unit(&st, 0xdc00 + (v & 0x3ff));
        }
    }
    *hash = esbulk__u32_to_i32(m3_final(&st));
    return ESBULK_OK;
}

esbulk_err_t esbulk_route_hash(const char *s, size_t len, int32_t *hash)
{
    if ((s == NULL && len > 0) || hash == NULL)
        return ESBULK_ERR_INVALID_ARG;
    return esbulk__murmur3_utf16(s, len, hash);
}
