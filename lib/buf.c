/* Growable buffer with a hard maximum. */
#include "buf.h"

#include <stdlib.h>
#include <string.h>

void esbulk__buf_free(esbulk__buf_t *buf)
{
    free(buf->data);
    buf->data = NULL;
    buf->len = buf->cap = 0;
}

void esbulk__buf_reset(esbulk__buf_t *buf)
{
    buf->len = 0;
    if (buf->data != NULL)
        buf->data[0] = '\0';
}

/* Grows the allocation to hold len more bytes and the NUL: to exactly that
 * when exact, else doubling from 256. */
static esbulk_err_t grow(esbulk__buf_t *buf, size_t len, int exact)
{
    size_t need, cap;
    char *p;

    if (len > buf->max || buf->len > buf->max - len)
        return ESBULK_ERR_TOO_LARGE;
    need = buf->len + len + 1;
    if (need <= buf->cap)
        return ESBULK_OK;
    if (exact) {
        cap = need;
    } else {
        cap = buf->cap ? buf->cap : 256;
        while (cap < need)
            cap *= 2;
    }
    p = realloc(buf->data, cap);
    if (p == NULL)
        return ESBULK_ERR_NOMEM;
    buf->data = p;
    buf->cap = cap;
    return ESBULK_OK;
}

esbulk_err_t esbulk__buf_reserve(esbulk__buf_t *buf, size_t n)
{
    esbulk_err_t err;

    if (buf->len + n + 1 <= buf->cap && n <= buf->max && buf->len <= buf->max - n)
        return ESBULK_OK;
    err = grow(buf, n, buf->cap == 0); /* exact for a first allocation */

    if (err == ESBULK_OK && buf->data != NULL)
        buf->data[buf->len] = '\0';
    return err;
}

esbulk_err_t esbulk__buf_add(esbulk__buf_t *buf, const void *data, size_t len)
{
    if (buf->len + len + 1 > buf->cap || len > buf->max || buf->len > buf->max - len) {
        esbulk_err_t err = grow(buf, len, 0);

        if (err != ESBULK_OK)
            return err;
    }
    if (len > 0)
        memcpy(buf->data + buf->len, data, len);
    buf->len += len;
    buf->data[buf->len] = '\0';
    return ESBULK_OK;
}

esbulk_err_t esbulk__buf_addc(esbulk__buf_t *buf, char c)
{
    return esbulk__buf_add(buf, &c, 1);
}

esbulk_err_t esbulk__buf_adds(esbulk__buf_t *buf, const char *s)
{
    return esbulk__buf_add(buf, s, strlen(s));
}
