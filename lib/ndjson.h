/* Building bulk request lines: the action line (written by hand, with JSON
 * escaping), body checks and compaction, and client-side ids. Pure code. */
#ifndef ESBULK_NDJSON_H
#define ESBULK_NDJSON_H

#include "buf.h"

/* Appends s[0..len) as a JSON string (with quotes) to buf. s must be valid
 * UTF-8 (checked by the caller). */
esbulk_err_t esbulk__json_string(esbulk__buf_t *buf, const char *s, size_t len);

/* Appends {"<op>":{"_index":..,"_id":..,"routing":..}}\n to buf; id and
 * routing are omitted when their length is 0. */
esbulk_err_t esbulk__action_line(esbulk__buf_t *buf, esbulk_op_t op, const char *index,
                                 size_t index_len, const char *id, size_t id_len,
                                 const char *routing, size_t routing_len);

/* Appends body to buf without raw CR and LF bytes (in valid JSON they can
 * only be whitespace), then "\n". Checks that what remains is one object:
 * first and last non-blank bytes '{' and '}' (full parse when validate).
 * ESBULK_ERR_INVALID_JSON with a message on failure; buf is unchanged. */
esbulk_err_t esbulk__body_line(esbulk__buf_t *buf, const char *body, size_t len, int validate,
                               char *errstr, size_t errstr_size);

/* Time-ordered id: 15 bytes (48-bit ms time, 24-bit sequence, 48-bit node
 * tag) as 20 characters of unpadded base64url, NUL-terminated (21 bytes). */
void esbulk__id_time(char out[21], int64_t epoch_ms, uint32_t seq, uint64_t node_tag);

/* Content id: the 128-bit xxHash (XXH3) of the body as 22 characters of
 * unpadded base64url, NUL-terminated (23 bytes). */
void esbulk__id_content(char out[23], const char *body, size_t len);

#endif
