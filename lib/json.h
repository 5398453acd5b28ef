/* A syntax check of JSON documents (RFC 8259), with no value decoded: a
 * number of any size or precision is only its digits, as the server reads
 * them. Pure code over plain data, with no dependency but libc (the sync job
 * compiles it in). */
#ifndef ESBULK_JSON_H
#define ESBULK_JSON_H

#include <stddef.h>

#include "esbulk.h"

/* Deeper nesting is refused (jansson's limit, which body.validate had). */
#define ESBULK__JSON_MAX_DEPTH 2048

/* Checks that s[0..len) is one JSON object, white space around it allowed:
 * RFC 8259's grammar, strings of valid UTF-8 (no control byte, escapes
 * well formed, \u surrogates in pairs), at most ESBULK__JSON_MAX_DEPTH
 * levels, and no key twice in one object (compared after unescaping: the
 * server refuses a duplicate field). Returns ESBULK_OK,
 * ESBULK_ERR_INVALID_JSON with *what (a static message) and *pos (the byte
 * offset where it went wrong), or ESBULK_ERR_NOMEM. what and pos may be
 * NULL. */
esbulk_err_t esbulk__json_check(const char *s, size_t len, const char **what, size_t *pos);

#endif
