/* Murmur3 x86_32 (seed 0) over UTF-16LE code units, fed from UTF-8. */
#include "murmur3.h"

#include <string.h>

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

/* Decodes one code point at s[*i]; returns -1 on invalid UTF-8. */
static inline int32_t utf8_next(const unsigned char *s, size_t len, size_t *i)
{
    uint32_t c = s[*i], cp;
    size_t need, k;

    if (c < 0x80) {
        (*i)++;
        return (int32_t)c;
    }
    if (c >= 0xc2 && c <= 0xdf) {
        need = 1;
        cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        need = 2;
        cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        need = 3;
        cp = c & 0x07;
    } else {
        return -1; /* continuation byte, overlong lead 0xc0/0xc1, or > 0xf4 */
    }
    if (len - *i <= need)
        return -1; /* truncated */
    for (k = 1; k <= need; k++) {
        uint32_t b = s[*i + k];
        if ((b & 0xc0) != 0x80)
            return -1;
        cp = (cp << 6) | (b & 0x3f);
    }
    if ((need == 2 && cp < 0x800) || (need == 3 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return -1; /* overlong, out of range, or an encoded surrogate */
    *i += need + 1;
    return (int32_t)cp;
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
        cp = utf8_next(u, len, &i);
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

int esbulk__utf8_valid(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;

    while (i < len) {
        uint64_t v;

        /* ASCII eight bytes at a time */
        if (i + 8 <= len && (memcpy(&v, u + i, 8), (v & 0x8080808080808080ULL) == 0)) {
            i += 8;
            continue;
        }
        if (u[i] < 0x80) {
            i++;
            continue;
        }
        if (utf8_next(u, len, &i) < 0)
            return 0;
    }
    return 1;
}

esbulk_err_t esbulk_route_hash(const char *s, size_t len, int32_t *hash)
{
    if ((s == NULL && len > 0) || hash == NULL)
        return ESBULK_ERR_INVALID_ARG;
    return esbulk__murmur3_utf16(s, len, hash);
}
