/* A string escaped as a JSON string (text.h): a copy when nothing needs
 * escaping, the escapes spliced in otherwise. */
#include "text.h"

static const char hexdigits[] = "0123456789abcdef";

/* The first byte of s that JSON must escape, or len. */
static size_t plain_prefix(const char *s, size_t len)
{
    size_t i = 0;

    for (; i + 8 <= len; i += 8) {
        uint64_t v;

        memcpy(&v, s + i, 8);
        if (esbulk__needs_escape8(v))
            break;
    }
    for (; i < len; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c < 0x20 || c == '"' || c == '\\')
            break;
    }
    return i;
}

esbulk_err_t esbulk__json_string(esbulk__buf_t *buf, const char *s, size_t len)
{
    size_t i = plain_prefix(s, len), start = 0;
    esbulk_err_t err;

    if (i == len) {
        /* the usual case: nothing to escape, one copy */
        if ((err = esbulk__buf_reserve(buf, len + 2)) != ESBULK_OK)
            return err;
        buf->data[buf->len] = '"';
        if (len > 0)
            memcpy(buf->data + buf->len + 1, s, len);
        buf->data[buf->len + 1 + len] = '"';
        buf->len += len + 2;
        buf->data[buf->len] = '\0';
        return ESBULK_OK;
    }
    if ((err = esbulk__buf_addc(buf, '"')) != ESBULK_OK)
        return err;
    for (; i < len; i++) { /* from the first byte to escape: the prefix is plain */
        unsigned char c = (unsigned char)s[i];
        char esc[7];
        size_t n = 2;

        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        if (i > start && (err = esbulk__buf_add(buf, s + start, i - start)) != ESBULK_OK)
            return err;
        esc[0] = '\\';
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        default:
            esc[1] = 'u';
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = hexdigits[c >> 4];
            esc[5] = hexdigits[c & 15];
            n = 6;
        }
        if ((err = esbulk__buf_add(buf, esc, n)) != ESBULK_OK)
            return err;
        start = i + 1;
    }
    if (len > start && (err = esbulk__buf_add(buf, s + start, len - start)) != ESBULK_OK)
        return err;
    return esbulk__buf_addc(buf, '"');
}
