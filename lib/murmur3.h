/* Murmur3 x86_32 over the UTF-16LE code units of a UTF-8 string, as the
 * server's Murmur3HashFunction hashes a Java String. */
#ifndef ESBULK_MURMUR3_H
#define ESBULK_MURMUR3_H

#include "common.h"
#include "utf8.h" /* esbulk__utf8_valid, which the shard's input must pass */

/* Decodes s[0..len) as strict UTF-8 (no overlongs, no surrogates, nothing
 * above U+10FFFF) and hashes its UTF-16 code units. ESBULK_ERR_INVALID_UTF8
 * on bad input. */
esbulk_err_t esbulk__murmur3_utf16(const char *s, size_t len, int32_t *hash);

/* Converts an unsigned 32-bit value to the int32 with the same bits, without
 * implementation-defined conversion. */
static inline int32_t esbulk__u32_to_i32(uint32_t u)
{
    return u <= INT32_MAX ? (int32_t)u : (int32_t)(u - 2147483648u) - INT32_MAX - 1;
}

#endif
