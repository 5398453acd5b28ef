/* JSON syntax check (json.h). One pass, no recursion: the open containers
 * are a bit stack, the keys of the open objects one array (a marker entry
 * where each object starts), checked for duplicates when the object closes. */
#include "json.h"
#include "text.h" /* esbulk__plain8, esbulk__utf8_seq */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A key of an open object: its text between the quotes. A marker (off ==
 * SIZE_MAX) starts each object and holds the previous object's base. */
typedef struct {
    size_t off;
    size_t len; /* the marker: the enclosing object's base */
    uint32_t hash;
    uint32_t escaped;
} jkey_t;

typedef struct {
    const char *s;
    size_t len;
    const char *what;
    size_t pos;
    jkey_t *keys;
    size_t nkeys, cap, base;
    jkey_t local[32];
} jcheck_t;

static int fail(jcheck_t *c, size_t pos, const char *what)
{
    c->what = what;
    c->pos = pos;
    return -1;
}

/* The same, for the functions that return an index (0: failed). */
static size_t fail0(jcheck_t *c, size_t pos, const char *what)
{
    fail(c, pos, what);
    return 0;
}

static int hexval(unsigned char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    ch |= 0x20;
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    return -1;
}

/* The four hex digits at s (all there: checked by the caller), or -1. */
static long hex4(const char *s)
{
    long v = 0;
    int i;

    for (i = 0; i < 4; i++) {
        int h = hexval((unsigned char)s[i]);

        if (h < 0)
            return -1;
        v = v << 4 | h;
    }
    return v;
}

/* The escape at s[i] ('\\'): its length, or 0 with c->what set. Writes the
 * code point to *cp. */
static size_t escape(jcheck_t *c, size_t i, uint32_t *cp)
{
    const char *s = c->s;
    long hi, lo;

    if (i + 1 >= c->len)
        return fail0(c, i, "unterminated string");
    switch (s[i + 1]) {
    case '"': *cp = '"'; return 2;
    case '\\': *cp = '\\'; return 2;
    case '/': *cp = '/'; return 2;
    case 'b': *cp = '\b'; return 2;
    case 'f': *cp = '\f'; return 2;
    case 'n': *cp = '\n'; return 2;
    case 'r': *cp = '\r'; return 2;
    case 't': *cp = '\t'; return 2;
    case 'u': break;
    default: return fail0(c, i, "invalid escape");
    }
    if (c->len - i < 6 || (hi = hex4(s + i + 2)) < 0)
        return fail0(c, i, "invalid \\u escape");
    if (hi >= 0xDC00 && hi <= 0xDFFF)
        return fail0(c, i, "lone low surrogate in \\u escape");
    if (hi < 0xD800 || hi > 0xDBFF) {
        *cp = (uint32_t)hi;
        return 6;
    }
    if (c->len - i < 12 || s[i + 6] != '\\' || s[i + 7] != 'u' || (lo = hex4(s + i + 8)) < 0 ||
        lo < 0xDC00 || lo > 0xDFFF)
        return fail0(c, i, "high surrogate in \\u escape without its low one");
    *cp = 0x10000 + (((uint32_t)hi - 0xD800) << 10) + ((uint32_t)lo - 0xDC00);
    return 12;
}

/* The string at s[i] ('"'): the index after its closing quote, or 0.
 * *escaped: it holds an escape. */
static size_t string(jcheck_t *c, size_t i, int *escaped)
{
    const unsigned char *s = (const unsigned char *)c->s;
    size_t n = c->len;

    *escaped = 0;
    for (i++;;) {
        uint64_t v;
        unsigned char ch;

        while (n - i >= 8) {
            memcpy(&v, s + i, 8);
            if (!esbulk__plain8(v))
                break;
            i += 8;
        }
        if (i >= n)
            return fail0(c, n, "unterminated string");
        ch = s[i];
        if (ch == '"')
            return i + 1;
        if (ch == '\\') {
            uint32_t cp;
            size_t k = escape(c, i, &cp);

            if (k == 0)
                return 0;
            *escaped = 1;
            i += k;
        } else if (ch < 0x20) {
            return fail0(c, i, "control character in string");
        } else if (ch < 0x80) {
            i++;
        } else {
            size_t k = esbulk__utf8_seq(s + i, n - i);

            if (k == 0)
                return fail0(c, i, "invalid UTF-8");
            i += k;
        }
    }
}

/* The bytes of a key's text after unescaping, one at a time. */
typedef struct {
    jcheck_t *c;
    size_t i, end;
    unsigned char pend[4];
    int npend, ipend;
} kiter_t;

static int kiter_next(kiter_t *k)
{
    uint32_t cp;
    size_t n;

    if (k->ipend < k->npend)
        return k->pend[k->ipend++];
    if (k->i >= k->end)
        return -1;
    if (k->c->s[k->i] != '\\')
        return (unsigned char)k->c->s[k->i++];
    n = escape(k->c, k->i, &cp); /* checked already: cannot fail */
    k->i += n;
    k->ipend = 1;
    if (cp < 0x80) {
        k->npend = 1;
        return (int)cp;
    }
    if (cp < 0x800) {
        k->pend[1] = (unsigned char)(0x80 | (cp & 0x3F));
        k->npend = 2;
        return 0xC0 | (int)(cp >> 6);
    }
    if (cp < 0x10000) {
        k->pend[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        k->pend[2] = (unsigned char)(0x80 | (cp & 0x3F));
        k->npend = 3;
        return 0xE0 | (int)(cp >> 12);
    }
    k->pend[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    k->pend[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    k->pend[3] = (unsigned char)(0x80 | (cp & 0x3F));
    k->npend = 4;
    return 0xF0 | (int)(cp >> 18);
}

static void kiter_init(kiter_t *k, jcheck_t *c, const jkey_t *key)
{
    k->c = c;
    k->i = key->off;
    k->end = key->off + key->len;
    k->npend = k->ipend = 0;
}

static uint32_t key_hash(jcheck_t *c, const jkey_t *key)
{
    uint32_t h = 2166136261u; /* FNV-1a over the unescaped bytes */
    kiter_t k;
    int b;

    if (!key->escaped) {
        const unsigned char *p = (const unsigned char *)c->s + key->off;
        size_t i;

        for (i = 0; i < key->len; i++)
            h = (h ^ p[i]) * 16777619u;
        return h;
    }
    kiter_init(&k, c, key);
    while ((b = kiter_next(&k)) >= 0)
        h = (h ^ (uint32_t)b) * 16777619u;
    return h;
}

static int key_eq(jcheck_t *c, const jkey_t *a, const jkey_t *b)
{
    kiter_t ka, kb;
    int x, y;

    if (a->hash != b->hash)
        return 0;
    if (!a->escaped && !b->escaped)
        return a->len == b->len && memcmp(c->s + a->off, c->s + b->off, a->len) == 0;
    kiter_init(&ka, c, a);
    kiter_init(&kb, c, b);
    do {
        x = kiter_next(&ka);
        y = kiter_next(&kb);
        if (x != y)
            return 0;
    } while (x >= 0);
    return 1;
}

static int cmp_hash(const void *pa, const void *pb)
{
    const jkey_t *a = pa, *b = pb;

    return a->hash < b->hash ? -1 : a->hash > b->hash;
}

/* No two of the keys [base, nkeys) equal; sorts them by hash (they are
 * dropped next). */
static int unique_keys(jcheck_t *c)
{
    jkey_t *k = c->keys + c->base;
    size_t n = c->nkeys - c->base, i, j;

    if (n <= 16) { /* pairwise: 120 hash compares at most, cheaper than a sort */
        for (i = 1; i < n; i++)
            for (j = 0; j < i; j++)
                if (key_eq(c, &k[i], &k[j]))
                    return fail(c, k[i].off - 1, "duplicate key in object");
        return 0;
    }
    qsort(k, n, sizeof(*k), cmp_hash);
    for (i = 0; i < n; i++)
        for (j = i + 1; j < n && k[j].hash == k[i].hash; j++)
            if (key_eq(c, &k[i], &k[j]))
                return fail(c, (k[i].off > k[j].off ? k[i].off : k[j].off) - 1,
                            "duplicate key in object");
    return 0;
}

static int push_key(jcheck_t *c, size_t off, size_t len, uint32_t escaped)
{
    jkey_t *k;

    if (c->nkeys == c->cap) {
        size_t cap = c->cap * 2;
        jkey_t *p;

        if (cap > SIZE_MAX / sizeof(*p))
            return -2;
        p = c->keys == c->local ? malloc(cap * sizeof(*p)) : realloc(c->keys, cap * sizeof(*p));
        if (p == NULL)
            return -2;
        if (c->keys == c->local)
            memcpy(p, c->local, sizeof(c->local));
        c->keys = p;
        c->cap = cap;
    }
    k = &c->keys[c->nkeys++];
    k->off = off;
    k->len = len;
    k->escaped = escaped;
    k->hash = 0;
    if (off != SIZE_MAX)
        k->hash = key_hash(c, k);
    return 0;
}

static size_t ws(const char *s, size_t i, size_t n)
{
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
        i++;
    return i;
}

static size_t digits(const char *s, size_t i, size_t n)
{
    while (i < n && s[i] >= '0' && s[i] <= '9')
        i++;
    return i;
}

/* The number at s[i]: the index after it, or 0. Only its grammar: no value
 * is computed, so no size is too large. */
static size_t number(jcheck_t *c, size_t i)
{
    const char *s = c->s;
    size_t n = c->len, start = i, d;

    if (s[i] == '-')
        i++;
    if (i >= n || s[i] < '0' || s[i] > '9')
        return fail0(c, start, "invalid number (no digit)");
    if (s[i] == '0') {
        i++;
        if (i < n && s[i] >= '0' && s[i] <= '9')
            return fail0(c, start, "invalid number (leading zero)");
    } else {
        i = digits(s, i, n);
    }
    if (i < n && s[i] == '.') {
        d = i + 1;
        if ((i = digits(s, d, n)) == d)
            return fail0(c, start, "invalid number (no digit after the point)");
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        d = i;
        if ((i = digits(s, d, n)) == d)
            return fail0(c, start, "invalid number (no digit in the exponent)");
    }
    return i;
}

/* The key string at s[i] and its ':': the index after the ':' and white
 * space, or 0 (-2 in *rc for want of memory). */
static size_t member_key(jcheck_t *c, size_t i, int *rc)
{
    int escaped;
    size_t end;

    if (i >= c->len || c->s[i] != '"')
        return fail0(c, i, "expected a string key");
    if ((end = string(c, i, &escaped)) == 0)
        return 0;
    if ((*rc = push_key(c, i + 1, end - i - 2, (uint32_t)escaped)) != 0)
        return 0;
    end = ws(c->s, end, c->len);
    if (end >= c->len || c->s[end] != ':')
        return fail0(c, end, "expected ':' after a key");
    return ws(c->s, end + 1, c->len);
}

/* The container open at level depth (from 1) is an object. */
#define IN_OBJ(depth) (obj[((depth) - 1) / 8] >> (((depth) - 1) % 8) & 1)

static int run(jcheck_t *c)
{
    const char *s = c->s;
    size_t n = c->len, i, depth = 0;
    unsigned char obj[ESBULK__JSON_MAX_DEPTH / 8] = {0}; /* bit d: level d + 1 is an object */
    int rc = 0, escaped;

    i = ws(s, 0, n);
    if (i >= n || s[i] != '{')
        return fail(c, i, "not an object");
    for (;;) {
        /* a value starts at s[i] */
        if (i >= n)
            return fail(c, i, "unexpected end");
        switch (s[i]) {
        case '{':
        case '[':
            if (depth == ESBULK__JSON_MAX_DEPTH)
                return fail(c, i, "nested too deep");
            if (s[i] == '{') {
                obj[depth / 8] |= (unsigned char)(1u << (depth % 8));
                if ((rc = push_key(c, SIZE_MAX, c->base, 0)) != 0)
                    return rc;
                c->base = c->nkeys;
            } else {
                obj[depth / 8] &= (unsigned char)~(1u << (depth % 8));
            }
            depth++;
            i = ws(s, i + 1, n);
            if (i < n && s[i] == (IN_OBJ(depth) ? '}' : ']'))
                break; /* empty: closed below, as after a value */
            if (IN_OBJ(depth) && (i = member_key(c, i, &rc)) == 0)
                return rc != 0 ? rc : -1;
            continue;
        case '"':
            if ((i = string(c, i, &escaped)) == 0)
                return -1;
            break;
        case 't':
            if (n - i < 4 || memcmp(s + i, "true", 4) != 0)
                return fail(c, i, "invalid literal");
            i += 4;
            break;
        case 'f':
            if (n - i < 5 || memcmp(s + i, "false", 5) != 0)
                return fail(c, i, "invalid literal");
            i += 5;
            break;
        case 'n':
            if (n - i < 4 || memcmp(s + i, "null", 4) != 0)
                return fail(c, i, "invalid literal");
            i += 4;
            break;
        default:
            if (s[i] != '-' && (s[i] < '0' || s[i] > '9'))
                return fail(c, i, "unexpected character");
            if ((i = number(c, i)) == 0)
                return -1;
        }
        /* after a value: ',' and the next, or the containers it closes */
        for (;;) {
            int in_obj;

            i = ws(s, i, n);
            if (depth == 0) {
                if (i != n)
                    return fail(c, i, "data after the object");
                return 0;
            }
            in_obj = IN_OBJ(depth);
            if (i >= n)
                return fail(c, i, "unexpected end");
            if (s[i] == ',') {
                i = ws(s, i + 1, n);
                if (in_obj && (i = member_key(c, i, &rc)) == 0)
                    return rc != 0 ? rc : -1;
                break;
            }
            if (s[i] != (in_obj ? '}' : ']'))
                return fail(c, i, in_obj ? "expected ',' or '}'" : "expected ',' or ']'");
            if (in_obj) {
                if (unique_keys(c) != 0)
                    return -1;
                c->nkeys = c->base - 1;
                c->base = c->keys[c->nkeys].len;
            }
            depth--;
            i++;
        }
    }
}

esbulk_err_t esbulk__json_check(const char *s, size_t len, const char **what, size_t *pos)
{
    jcheck_t c;
    int rc;

    c.s = s;
    c.len = len;
    c.what = NULL;
    c.pos = 0;
    c.keys = c.local;
    c.nkeys = c.base = 0;
    c.cap = sizeof(c.local) / sizeof(c.local[0]);
    rc = run(&c);
    if (c.keys != c.local)
        free(c.keys);
    if (rc == -2)
        return ESBULK_ERR_NOMEM;
    if (rc != 0) {
        if (what != NULL)
            *what = c.what;
        if (pos != NULL)
            *pos = c.pos;
        return ESBULK_ERR_INVALID_JSON;
    }
    return ESBULK_OK;
}
