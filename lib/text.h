/* The text toolkit: what the library and the tools (esbulk-mysql,
 * esbulk-kafka) share for building JSON text. Pure code, built once as
 * lib/libesbulk_text.la and linked into both, since libesbulk hides its
 * esbulk__* functions from the programs that link it:
 *   buf.h   a growable buffer with a hard maximum (buf.c)
 *   utf8.h  strict UTF-8: the decoder and the check (utf8.c)
 *   text.c  a string escaped as a JSON string (below) */
#ifndef ESBULK_TEXT_H
#define ESBULK_TEXT_H

#include "buf.h"
#include "utf8.h"

#include <string.h>

#define ESBULK__ONES8 0x0101010101010101ULL
#define ESBULK__HIGHS8 0x8080808080808080ULL

/* 1 when a byte of v is below 0x20, '"' or '\\': one JSON must escape
 * (eight at a time: a byte b is zero exactly when (b - 1) & ~b has its high
 * bit; no false negatives, and a bytewise loop finds which). */
static inline int esbulk__needs_escape8(uint64_t v)
{
    uint64_t q = v ^ (ESBULK__ONES8 * '"'), b = v ^ (ESBULK__ONES8 * '\\');

    return (((v - ESBULK__ONES8 * 0x20) & ~v) | ((q - ESBULK__ONES8) & ~q) |
            ((b - ESBULK__ONES8) & ~b)) & ESBULK__HIGHS8
               ? 1
               : 0;
}

/* 1 when the eight bytes of v need no look in a JSON string: ASCII, none
 * below 0x20, no '"' or '\\'. */
static inline int esbulk__plain8(uint64_t v)
{
    return !(v & ESBULK__HIGHS8) && !esbulk__needs_escape8(v);
}

/* Appends s[0..len) as a JSON string, quotes included: '"', '\\' and the
 * control characters escaped, every other byte as it is (UTF-8 is not
 * checked: esbulk__utf8_valid first where it must be). ESBULK_ERR_NOMEM or
 * ESBULK_ERR_TOO_LARGE (buf's maximum). */
esbulk_err_t esbulk__json_string(esbulk__buf_t *buf, const char *s, size_t len);

#endif
