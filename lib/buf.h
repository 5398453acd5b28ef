/* A growable byte buffer with a hard maximum (after libcurl's dynbuf). */
#ifndef ESBULK_BUF_H
#define ESBULK_BUF_H

#include "common.h"

typedef struct {
    char *data;   /* always NUL-terminated when non-NULL */
    size_t len;
    size_t cap;
    size_t max;   /* esbulk__buf_add fails past this many bytes */
} esbulk__buf_t;

/* Empty, no allocation (inline: every add sets up two). */
static inline void esbulk__buf_init(esbulk__buf_t *buf, size_t max)
{
    buf->data = NULL;
    buf->len = 0;
    buf->cap = 0;
    buf->max = max;
}
void esbulk__buf_free(esbulk__buf_t *buf);
void esbulk__buf_reset(esbulk__buf_t *buf);
/* ESBULK_ERR_NOMEM or ESBULK_ERR_TOO_LARGE on failure; buf unchanged. */
esbulk_err_t esbulk__buf_add(esbulk__buf_t *buf, const void *data, size_t len);
esbulk_err_t esbulk__buf_addc(esbulk__buf_t *buf, char c);
esbulk_err_t esbulk__buf_adds(esbulk__buf_t *buf, const char *s);
/* Makes room for n more bytes (and the NUL) in one allocation, so that the
 * adds that follow do not grow the buffer step by step. */
esbulk_err_t esbulk__buf_reserve(esbulk__buf_t *buf, size_t n);

#endif
