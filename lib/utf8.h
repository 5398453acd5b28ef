/* Strict UTF-8 (RFC 3629: no overlongs, no surrogates, nothing above
 * U+10FFFF), the one decoder of the library: the hash of a routing value
 * (murmur3.c), the checks of what esbulk_add takes (utf8.c), and the text of
 * a server's answer (response_*.c) all read UTF-8 by it. */
#ifndef ESBULK_UTF8_H
#define ESBULK_UTF8_H

#include "common.h"

/* Decodes the code point at s[*i] (*i < len) and moves *i past it; -1 (and
 * *i unmoved) on invalid UTF-8: a continuation byte, an overlong form, a
 * surrogate, a value above U+10FFFF, or a sequence cut short by len. */
static inline int32_t esbulk__utf8_next(const unsigned char *s, size_t len, size_t *i)
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

/* The length of the valid UTF-8 sequence at s[0..len) (len > 0), 0 when it
 * is invalid or cut short. */
static inline size_t esbulk__utf8_seq(const unsigned char *s, size_t len)
{
    size_t i = 0;

    return esbulk__utf8_next(s, len, &i) < 0 ? 0 : i;
}

/* Checks that s[0..len) is strict UTF-8. */
int esbulk__utf8_valid(const char *s, size_t len);

#endif
