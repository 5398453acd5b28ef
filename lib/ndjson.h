/* Building bulk request lines: the action line (written by hand, with JSON
 * escaping), body checks and compaction, and client-side ids. Pure code. */
#ifndef ESBULK_NDJSON_H
#define ESBULK_NDJSON_H

#include "buf.h"
#include "text.h" /* esbulk__json_string */

/* Per-document action options (esbulk_docopts_t). */
struct esbulk_docopts_s {
    int has_version;
    int64_t version;
    esbulk_version_type_t version_type;
    int has_seq_no;
    int64_t if_seq_no, if_primary_term;
    char *pipeline;          /* NULL: none (the bulk.pipeline of the request applies) */
    int require_alias;
    int32_t retry_on_conflict; /* -1: none */
};

/* Checks that opts (may be NULL) fit op on a document with an _id of its
 * caller's (has_id) or none: ESBULK_ERR_INVALID_ARG with a message
 * otherwise. */
esbulk_err_t esbulk__docopts_check(const esbulk_docopts_t *opts, esbulk_op_t op, int has_id,
                                   char *errstr, size_t errstr_size);
/* True when opts make op conditional (an external version, if_seq_no): a
 * 409 on a retry after a broken attempt most likely means that attempt was
 * applied. */
int esbulk__docopts_conditional(const esbulk_docopts_t *opts);

/* 1 when opts sets nothing (NULL included): the action line has no option. */
int esbulk__docopts_empty(const esbulk_docopts_t *opts);

/* 1 when s[0..len) is ASCII that JSON writes as it is: no byte below 0x20,
 * none from 0x80, no '"' or '\\'. Such a string is also valid UTF-8 and holds
 * no NUL, so one pass answers all three checks of the add path. */
int esbulk__plain_ascii(const char *s, size_t len);
/* The action line of a document with no option whose index, id and routing
 * are plain ASCII (esbulk__plain_ascii), written to out without a buffer:
 * exactly esbulk__action_line_plain_len() bytes, no NUL, the same bytes as
 * esbulk__action_line. op must be valid. Returns the length written. */
size_t esbulk__action_line_plain_len(esbulk_op_t op, size_t index_len, size_t id_len,
                                     size_t routing_len);
size_t esbulk__action_line_plain(char *out, esbulk_op_t op, const char *index, size_t index_len,
                                 const char *id, size_t id_len, const char *routing,
                                 size_t routing_len);

/* Appends {"<op>":{"_index":..,"_id":..,"routing":..}}\n to buf; id and
 * routing are omitted when their length is 0. */
esbulk_err_t esbulk__action_line(esbulk__buf_t *buf, esbulk_op_t op, const char *index,
                                 size_t index_len, const char *id, size_t id_len,
                                 const char *routing, size_t routing_len);
/* The same with opts (may be NULL; checked by esbulk__docopts_check). */
esbulk_err_t esbulk__action_line_opts(esbulk__buf_t *buf, esbulk_op_t op, const char *index,
                                      size_t index_len, const char *id, size_t id_len,
                                      const char *routing, size_t routing_len,
                                      const esbulk_docopts_t *opts);

/* Appends body to buf without raw CR and LF bytes (in valid JSON they can
 * only be whitespace), then "\n". Checks that what remains is one object:
 * first and last non-blank bytes '{' and '}' (with validate, the syntax check of
 * json.h: any number is valid).
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
