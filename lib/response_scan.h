/* The JSON scanner of the _bulk response parser's fast path: spans, strings,
 * numbers, members and skipped values over a byte range, without a tree.
 * Its functions are static, inlined where response_fast.c (its one user)
 * calls them: the answer of every request goes through them. */
#ifndef ESBULK_RESPONSE_SCAN_H
#define ESBULK_RESPONSE_SCAN_H

#include "response_int.h"
#include "utf8.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------
 * The fast path for a 2xx answer: one pass over the bytes, no tree. It
 * takes only what it understands completely: a body that jansson (flags 0)
 * accepts, shaped {"items":[{"<op>":{...}}, ...]} with expected_items
 * items, each with an integer status in 100..599, no duplicate or escaped
 * keys where keys are looked up, nesting below FAST_DEPTH_MAX, no reals with
 * an exponent. Anything else (a malformed, truncated or odd answer, even an
 * allocation failure) it leaves, with nothing kept, to parse_items, which
 * classifies and explains it. What it takes, it takes with the result
 * parse_items would give. */

#define FAST_DEPTH_MAX 64

/* the scanners of every string and key: inlined where they are used */
#define ALWAYS_INLINE inline __attribute__((always_inline))

typedef struct {
    const unsigned char *p, *end;
} scan_t;

/* A string value or key: the bytes between its quotes, still escaped when
 * esc. p is NULL for a member that is absent or not a string. */
typedef struct {
    const unsigned char *p;
    size_t n;
    int esc;
} span_t;

/* The fields of one item as read, before anything is copied. */
typedef struct {
    span_t index, id, result;
    int64_t status, seq_no, primary_term, version;
    int has_status;
    int error;                 /* ERR_NONE, ERR_STRING (reason in ereason), ERR_OBJECT, ERR_OTHER */
    span_t etype, ereason, cbtype, cbreason;
} fast_item_t;

enum { ERR_NONE = 0, ERR_STRING, ERR_OBJECT, ERR_OTHER };

static inline const unsigned char *skip_ws(const unsigned char *p, const unsigned char *end)
{
    while (p < end && *p <= ' ' && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    return p;
}

static inline void ws(scan_t *s)
{
    s->p = skip_ws(s->p, s->end);
}

/* The next byte, -1 at the end. */
static inline int peek(const scan_t *s)
{
    return s->p < s->end ? *s->p : -1;
}

static int hex4(const unsigned char *p, uint32_t *u)
{
    int i;

    *u = 0;
    for (i = 0; i < 4; i++) {
        unsigned c = p[i];

        if (c >= '0' && c <= '9')
            c -= '0';
        else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
            c = (c | 0x20) - 'a' + 10;
        else
            return -1;
        *u = (*u << 4) | c;
    }
    return 0;
}

/* 1 for the bytes that end a run of plain string bytes: control
 * characters, '"', '\\', and those of multibyte UTF-8 characters. */
static const unsigned char str_special[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x00 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x10 */
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x20: '"' */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x30 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x40 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, /* 0x50: '\\' */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x60 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x70 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x80 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x90 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0xa0 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0xb0 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0xc0 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0xd0 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0xe0 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0xf0 */
};

/* str_scan past its first run of plain bytes, at p: escapes, multibyte
 * characters, and what is not allowed. */
static const unsigned char *str_scan_rest(const unsigned char *start, const unsigned char *p,
                                          const unsigned char *end, span_t *out)
{
    int esc = 0;

    for (;;) {
        unsigned c;

        while (p < end && !str_special[*p])
            p++;
        if (p >= end)
            return NULL;
        c = *p;
        if (c == '"')
            break;
        if (c == '\\') {
            esc = 1;
            if (end - p < 2)
                return NULL;
            c = p[1];
            if (c == 'u') {
                uint32_t u, lo;

                if (end - p < 6 || hex4(p + 2, &u) != 0)
                    return NULL;
                p += 6;
                if (u == 0 || (u >= 0xdc00 && u <= 0xdfff))
                    return NULL;
                if (u >= 0xd800 && u <= 0xdbff) {
                    if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || hex4(p + 2, &lo) != 0 ||
                        lo < 0xdc00 || lo > 0xdfff)
                        return NULL;
                    p += 6;
                }
            } else if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' ||
                       c == 'r' || c == 't') {
                p += 2;
            } else {
                return NULL;
            }
        } else if (c < 0x20) {
            return NULL;
        } else { /* >= 0x80 */
            size_t k = esbulk__utf8_seq(p, (size_t)(end - p));

            if (k == 0)
                return NULL;
            p += k;
        }
    }
    out->p = start;
    out->n = (size_t)(p - start);
    out->esc = esc;
    return p + 1;
}

/* The string at q (its opening quote, q < end), checked as jansson checks
 * one: no control characters, valid UTF-8, known escapes, \u escapes that
 * are not \u0000 nor a lone or unpaired surrogate. Returns the position
 * past its closing quote, or NULL. */
static ALWAYS_INLINE const unsigned char *str_scan(const unsigned char *q,
                                                  const unsigned char *end, span_t *out)
{
    const unsigned char *start = q + 1, *p = q + 1;

#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* eight bytes at a time: the first byte that is '"', '\\', below 0x20
     * or above 0x7f sets the lowest flagged bit (flags above it may be
     * false: borrows) */
    while (end - p >= 8) {
        const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
        uint64_t w, quote, bslash, m;

        memcpy(&w, p, 8);
        quote = w ^ (ones * '"');
        bslash = w ^ (ones * '\\');
        m = (((quote - ones) & ~quote) | ((bslash - ones) & ~bslash) | (w - ones * 0x20) | w) &
            highs;
        if (m != 0) {
            p += __builtin_ctzll(m) / 8;
            goto found;
        }
        p += 8;
    }
#endif
    while (p < end && !str_special[*p])
        p++;
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
found:
#endif
    if (p < end && *p == '"') {
        out->p = start;
        out->n = (size_t)(p - start);
        out->esc = 0;
        return p + 1;
    }
    return str_scan_rest(start, p, end, out);
}

/* str_scan at s->p: 0 with s->p past the string, or -1. */
static inline int scan_string(scan_t *s, span_t *out)
{
    const unsigned char *p = str_scan(s->p, s->end, out);

    if (p == NULL)
        return -1;
    s->p = p;
    return 0;
}

/* Decodes the checked string sp into dst (room for sp->n + 1 bytes: no
 * escape decodes to more bytes than it takes), NUL-terminated; returns its
 * length. */
static size_t unescape(const span_t *sp, char *dst)
{
    const unsigned char *r = sp->p;
    size_t i = 0, o = 0, n = sp->n;

    if (!sp->esc) {
        memcpy(dst, r, n);
        dst[n] = '\0';
        return n;
    }
    while (i < n) {
        unsigned char c = r[i];
        uint32_t u, lo;

        if (c != '\\') {
            dst[o++] = (char)c;
            i++;
            continue;
        }
        c = r[i + 1];
        i += 2;
        switch (c) {
        case 'b': dst[o++] = '\b'; break;
        case 'f': dst[o++] = '\f'; break;
        case 'n': dst[o++] = '\n'; break;
        case 'r': dst[o++] = '\r'; break;
        case 't': dst[o++] = '\t'; break;
        case 'u':
            hex4(r + i, &u);
            i += 4;
            if (u >= 0xd800 && u <= 0xdbff) {
                hex4(r + i + 2, &lo);
                i += 6;
                u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
            }
            if (u < 0x80) {
                dst[o++] = (char)u;
            } else if (u < 0x800) {
                dst[o++] = (char)(0xc0 | (u >> 6));
                dst[o++] = (char)(0x80 | (u & 0x3f));
            } else if (u < 0x10000) {
                dst[o++] = (char)(0xe0 | (u >> 12));
                dst[o++] = (char)(0x80 | ((u >> 6) & 0x3f));
                dst[o++] = (char)(0x80 | (u & 0x3f));
            } else {
                dst[o++] = (char)(0xf0 | (u >> 18));
                dst[o++] = (char)(0x80 | ((u >> 12) & 0x3f));
                dst[o++] = (char)(0x80 | ((u >> 6) & 0x3f));
                dst[o++] = (char)(0x80 | (u & 0x3f));
            }
            break;
        default: dst[o++] = (char)c; /* " \ / */
        }
    }
    dst[o] = '\0';
    return o;
}

/* A malloc'ed, decoded copy of sp; NULL when out of memory. */
static char *span_dup(const span_t *sp)
{
    char *p = malloc(sp->n + 1);

    if (p != NULL)
        unescape(sp, p);
    return p;
}

/* A decoded copy of sp in the response's arena (sized for the whole body:
 * a decoded string is never longer than its escaped form). */
static char *span_arena(esbulk__resp_t *out, const span_t *sp)
{
    char *p;

    if (out->arena == NULL && (out->arena = malloc(out->arena_cap)) == NULL)
        return NULL;
    if (out->arena_cap - out->arena_len < sp->n + 1)
        return NULL;
    p = out->arena + out->arena_len;
    out->arena_len += unescape(sp, p) + 1;
    return p;
}

/* As span_dup, capped as dup_capped caps. */
static char *span_dup_capped(const span_t *sp)
{
    char *p = malloc(sp->n + 1), *capped;
    size_t n;

    if (p == NULL)
        return NULL;
    n = unescape(sp, p);
    if (n <= ESBULK__RESP_REASON_MAX)
        return p;
    capped = esbulk__resp_dup_capped(p, n);
    free(p);
    return capped;
}

/* The number at s->p. *is_int: it is an integer (no fraction, no exponent),
 * then *v is its value. -1 for a malformed number, an integer outside
 * int64_t (jansson: "too big integer") and, not to reproduce strtod's
 * overflow, a real with an exponent or of more than 300 bytes. */
static int scan_number(scan_t *s, int *is_int, int64_t *v)
{
    const unsigned char *p = s->p, *end = s->end, *digits;
    uint64_t m = 0;
    int neg = p < end && *p == '-';

    p += neg;
    digits = p;
    if (p < end && *p == '0')
        p++;
    else
        while (p < end && (unsigned)(*p - '0') < 10)
            m = m * 10 + (uint64_t)(*p++ - '0'); /* 19 digits fit, more are refused below */
    if (p == digits || p - digits > 19)
        return -1;
    if (p < end && (*p == '.' || *p == 'e' || *p == 'E')) {
        if (*p != '.')
            return -1;
        p++;
        if (p >= end || (unsigned)(*p - '0') >= 10)
            return -1;
        while (p < end && (unsigned)(*p - '0') < 10)
            p++;
        if ((p < end && (*p == 'e' || *p == 'E')) || p - s->p > 300)
            return -1;
        *is_int = 0;
        *v = 0;
        s->p = p;
        return 0;
    }
    if (m > (uint64_t)INT64_MAX + (uint64_t)neg)
        return -1;
    *is_int = 1;
    *v = !neg ? (int64_t)m : m == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)m;
    s->p = p;
    return 0;
}

static int scan_literal(scan_t *s, const char *lit, size_t n)
{
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, lit, n) != 0)
        return -1;
    s->p += n;
    return 0;
}

/* The next member of the object being read: call with *first set just past
 * its '{'. 1: a member, *key its name (unescaped keys only when !any_key),
 * s->p at its value; 0: the object ended, s->p past its '}'; -1. */
static ALWAYS_INLINE int member(scan_t *s, int *first, span_t *key, int any_key)
{
    const unsigned char *p = skip_ws(s->p, s->end), *end = s->end;

    if (p >= end)
        return -1;
    if (*p == '}') {
        s->p = p + 1;
        return 0;
    }
    if (!*first) {
        if (*p != ',')
            return -1;
        p = skip_ws(p + 1, end);
        if (p >= end)
            return -1;
    }
    *first = 0;
    if (*p != '"' || (p = str_scan(p, end, key)) == NULL || (key->esc && !any_key))
        return -1;
    p = skip_ws(p, end);
    if (p >= end || *p != ':')
        return -1;
    s->p = skip_ws(p + 1, end);
    return 1;
}

/* After an array element: 1 for another one (s->p at it), 0 at the end
 * (s->p past ']'), -1. */
static int next_element(scan_t *s)
{
    ws(s);
    if (peek(s) == ']') {
        s->p++;
        return 0;
    }
    if (peek(s) != ',')
        return -1;
    s->p++;
    ws(s);
    return 1;
}

/* Skips the value at s->p, nested in depth containers. */
static int skip_value(scan_t *s, int depth)
{
    span_t sp;
    int64_t v;
    int r, first = 1, is_int;

    switch (peek(s)) {
    case '"':
        return scan_string(s, &sp);
    case '{':
        if (++depth > FAST_DEPTH_MAX)
            return -1;
        s->p++;
        while ((r = member(s, &first, &sp, 1)) == 1)
            if (skip_value(s, depth) != 0)
                return -1;
        return r;
    case '[':
        if (++depth > FAST_DEPTH_MAX)
            return -1;
        s->p++;
        ws(s);
        if (peek(s) == ']') {
            s->p++;
            return 0;
        }
        do {
            if (skip_value(s, depth) != 0)
                return -1;
        } while ((r = next_element(s)) == 1);
        return r;
    case 't':
        return scan_literal(s, "true", 4);
    case 'f':
        return scan_literal(s, "false", 5);
    case 'n':
        return scan_literal(s, "null", 4);
    default:
        return scan_number(s, &is_int, &v);
    }
}

static inline uint64_t load8(const void *p)
{
    uint64_t v;

    memcpy(&v, p, 8);
    return v;
}

static inline uint32_t load4(const void *p)
{
    uint32_t v;

    memcpy(&v, p, 4);
    return v;
}

static inline uint16_t load2(const void *p)
{
    uint16_t v;

    memcpy(&v, p, 2);
    return v;
}

/* p[0..n) is lit[0..n) (n a constant, p[0..n) readable): two overlapping
 * loads each side, which compilers fold to constants (memcmp they do not
 * always inline). */
static ALWAYS_INLINE int bytes_are(const unsigned char *p, const char *lit, size_t n)
{
    if (n > 24)
        return memcmp(p, lit, n) == 0;
    if (n > 16)
        return load8(p) == load8(lit) && load8(p + 8) == load8(lit + 8) &&
               load8(p + n - 8) == load8(lit + n - 8);
    if (n >= 8)
        return load8(p) == load8(lit) && load8(p + n - 8) == load8(lit + n - 8);
    if (n >= 4)
        return load4(p) == load4(lit) && load4(p + n - 4) == load4(lit + n - 4);
    if (n >= 2)
        return load2(p) == load2(lit) && load2(p + n - 2) == load2(lit + n - 2);
    return n == 0 || p[0] == (unsigned char)lit[0];
}

/* a[0..n) == b[0..n), n not a constant: short strings (names and ids)
 * without a call */
static ALWAYS_INLINE int mem_eq(const void *a, const void *b, size_t n)
{
    const unsigned char *x = a, *y = b;
    size_t i;

    if (n > 16) {
        for (i = 0; i + 8 < n; i += 8)
            if (load8(x + i) != load8(y + i))
                return 0;
        return load8(x + n - 8) == load8(y + n - 8);
    }
    if (n >= 8)
        return load8(x) == load8(y) && load8(x + n - 8) == load8(y + n - 8);
    if (n >= 4)
        return load4(x) == load4(y) && load4(x + n - 4) == load4(y + n - 4);
    if (n >= 2)
        return load2(x) == load2(y) && load2(x + n - 2) == load2(y + n - 2);
    return n == 0 || x[0] == y[0];
}

/* k is the unescaped key lit[0..n). */
static inline int key_is(const span_t *k, const char *lit, size_t n)
{
    return k->n == n && bytes_are(k->p, lit, n);
}

#define KEY_IS(k, lit) key_is(&(k), lit, sizeof(lit) - 1)

#endif
