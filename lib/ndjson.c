/* Bulk request lines. */
#include "ndjson.h"

#include "json.h"

#include <string.h>
#include <xxhash.h>

/* plain[c]: byte c is plain ASCII (esbulk__plain_ascii) */
static const unsigned char plain[256] = {
#define P8 1, 1, 1, 1, 1, 1, 1, 1
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 0, 1, 1, 1, 1, 1, P8,                     /* 0x22 '"' */
    P8, P8, P8, P8,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, /* 0x5c '\\' */
    P8, P8, P8, P8,
#undef P8
};

int esbulk__plain_ascii(const char *s, size_t len)
{
    size_t i;
    uint64_t v;

    if (len < 8) {
        for (i = 0; i < len; i++)
            if (!plain[(unsigned char)s[i]])
                return 0;
        return 1;
    }
    for (i = 0; i + 8 <= len; i += 8) {
        memcpy(&v, s + i, 8);
        if (!esbulk__plain8(v))
            return 0;
    }
    if (i == len)
        return 1;
    memcpy(&v, s + len - 8, 8); /* the tail, in the last eight bytes */
    return esbulk__plain8(v);
}

#define HEAD(op) {"{\"" op "\":{\"_index\":\"", sizeof("{\"" op "\":{\"_index\":\"") - 1}
static const struct {
    const char *s;
    size_t len;
} plain_heads[] = {HEAD("index"), HEAD("create"), HEAD("update"), HEAD("delete")};
#undef HEAD

size_t esbulk__action_line_plain_len(esbulk_op_t op, size_t index_len, size_t id_len,
                                     size_t routing_len)
{
    return plain_heads[op].len + index_len + 1 + (id_len > 0 ? 9 + id_len : 0) +
           (routing_len > 0 ? 13 + routing_len : 0) + 3;
}

size_t esbulk__action_line_plain(char *out, esbulk_op_t op, const char *index, size_t index_len,
                                 const char *id, size_t id_len, const char *routing,
                                 size_t routing_len)
{
    char *p = out;

    memcpy(p, plain_heads[op].s, plain_heads[op].len);
    p += plain_heads[op].len;
    memcpy(p, index, index_len);
    p += index_len;
    *p++ = '"';
    if (id_len > 0) {
        memcpy(p, ",\"_id\":\"", 8);
        memcpy(p + 8, id, id_len);
        p += 8 + id_len;
        *p++ = '"';
    }
    if (routing_len > 0) {
        memcpy(p, ",\"routing\":\"", 12);
        memcpy(p + 12, routing, routing_len);
        p += 12 + routing_len;
        *p++ = '"';
    }
    memcpy(p, "}}\n", 3);
    return (size_t)(p + 3 - out);
}

esbulk_err_t esbulk__docopts_check(const esbulk_docopts_t *o, esbulk_op_t op, int has_id,
                                   char *errstr, size_t errstr_size)
{
    static const char *const names[] = {"n index", " create", "n update", " delete"};
    const char *bad = NULL;

    if (o == NULL)
        return ESBULK_OK;
    if ((unsigned)op > ESBULK_OP_DELETE)
        return ESBULK_ERR_INVALID_ARG;
    if (o->has_version && o->has_seq_no)
        bad = "an external version and if_seq_no cannot be used together";
    else if (o->has_version && op != ESBULK_OP_INDEX && op != ESBULK_OP_DELETE)
        bad = "an external version applies to index and delete only";
    else if (o->has_seq_no && op == ESBULK_OP_CREATE)
        bad = "if_seq_no applies to index, update and delete only";
    else if (o->pipeline != NULL && op != ESBULK_OP_INDEX && op != ESBULK_OP_CREATE)
        bad = "a pipeline applies to index and create only";
    else if (o->require_alias && op == ESBULK_OP_DELETE)
        bad = "require_alias applies to index, create and update only";
    else if (o->retry_on_conflict >= 0 && op != ESBULK_OP_UPDATE)
        bad = "retry_on_conflict applies to update only";
    /* A condition is on a document the caller names: the server refuses a
     * version without an _id (the whole request, 400), and ignores
     * if_seq_no without one; a generated _id would make either hold
     * vacuously, every time. */
    else if (!has_id && o->has_version)
        bad = "an external version needs an _id";
    else if (!has_id && o->has_seq_no)
        bad = "if_seq_no needs an _id";
    if (bad == NULL)
        return ESBULK_OK;
    esbulk__errstr(errstr, errstr_size, "document options do not fit a%s: %s", names[op], bad);
    return ESBULK_ERR_INVALID_ARG;
}

int esbulk__docopts_empty(const esbulk_docopts_t *o)
{
    return o == NULL || (!o->has_version && !o->has_seq_no && o->pipeline == NULL &&
                         !o->require_alias && o->retry_on_conflict < 0);
}

int esbulk__docopts_conditional(const esbulk_docopts_t *o)
{
    return o != NULL && (o->has_version || o->has_seq_no);
}

/* ,"key":<number> */
static esbulk_err_t add_num(esbulk__buf_t *buf, const char *key, int64_t v)
{
    char tmp[64];
    int n = snprintf(tmp, sizeof(tmp), ",\"%s\":%lld", key, (long long)v);

    return esbulk__buf_add(buf, tmp, (size_t)n);
}

static esbulk_err_t add_opts(esbulk__buf_t *buf, const esbulk_docopts_t *o)
{
    esbulk_err_t err = ESBULK_OK;

    if (o->has_version &&
        ((err = add_num(buf, "version", o->version)) != ESBULK_OK ||
         (err = esbulk__buf_adds(buf, o->version_type == ESBULK_VERSION_EXTERNAL_GTE
                                          ? ",\"version_type\":\"external_gte\""
                                          : ",\"version_type\":\"external\"")) != ESBULK_OK))
        return err;
    if (o->has_seq_no && ((err = add_num(buf, "if_seq_no", o->if_seq_no)) != ESBULK_OK ||
                          (err = add_num(buf, "if_primary_term", o->if_primary_term)) != ESBULK_OK))
        return err;
    if (o->pipeline != NULL &&
        ((err = esbulk__buf_adds(buf, ",\"pipeline\":")) != ESBULK_OK ||
         (err = esbulk__json_string(buf, o->pipeline, strlen(o->pipeline))) != ESBULK_OK))
        return err;
    if (o->require_alias && (err = esbulk__buf_adds(buf, ",\"require_alias\":true")) != ESBULK_OK)
        return err;
    if (o->retry_on_conflict >= 0)
        err = add_num(buf, "retry_on_conflict", o->retry_on_conflict);
    return err;
}

esbulk_err_t esbulk__action_line(esbulk__buf_t *buf, esbulk_op_t op, const char *index,
                                 size_t index_len, const char *id, size_t id_len,
                                 const char *routing, size_t routing_len)
{
    return esbulk__action_line_opts(buf, op, index, index_len, id, id_len, routing, routing_len,
                                    NULL);
}

esbulk_err_t esbulk__action_line_opts(esbulk__buf_t *buf, esbulk_op_t op, const char *index,
                                      size_t index_len, const char *id, size_t id_len,
                                      const char *routing, size_t routing_len,
                                      const esbulk_docopts_t *opts)
{
    static const char *const heads[] = {"{\"index\":{\"_index\":", "{\"create\":{\"_index\":",
                                        "{\"update\":{\"_index\":", "{\"delete\":{\"_index\":"};
    size_t mark = buf->len;
    esbulk_err_t err;

    if ((unsigned)op > ESBULK_OP_DELETE)
        return ESBULK_ERR_INVALID_ARG;
    if ((err = esbulk__buf_adds(buf, heads[op])) != ESBULK_OK ||
        (err = esbulk__json_string(buf, index, index_len)) != ESBULK_OK)
        goto fail;
    if (id_len > 0 && ((err = esbulk__buf_adds(buf, ",\"_id\":")) != ESBULK_OK ||
                       (err = esbulk__json_string(buf, id, id_len)) != ESBULK_OK))
        goto fail;
    if (routing_len > 0 && ((err = esbulk__buf_adds(buf, ",\"routing\":")) != ESBULK_OK ||
                            (err = esbulk__json_string(buf, routing, routing_len)) != ESBULK_OK))
        goto fail;
    if (opts != NULL && (err = add_opts(buf, opts)) != ESBULK_OK)
        goto fail;
    if ((err = esbulk__buf_add(buf, "}}\n", 3)) != ESBULK_OK)
        goto fail;
    return ESBULK_OK;
fail:
    buf->len = mark;
    if (buf->data != NULL)
        buf->data[mark] = '\0';
    return err;
}

static int blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

esbulk_err_t esbulk__body_line(esbulk__buf_t *buf, const char *body, size_t len, int validate,
                               char *errstr, size_t errstr_size)
{
    size_t first = 0, last = len, mark = buf->len, i, start;
    esbulk_err_t err;

    while (first < len && blank(body[first]))
        first++;
    while (last > first && blank(body[last - 1]))
        last--;
    if (last - first < 2 || body[first] != '{' || body[last - 1] != '}') {
        esbulk__errstr(errstr, errstr_size, "body is not a JSON object (it must start with '{' "
                                            "and end with '}')");
        return ESBULK_ERR_INVALID_JSON;
    }
    if (validate) {
        /* a syntax check only: a number of any size is valid, and is sent
         * as its digits */
        const char *what = NULL;
        size_t pos = 0;

        err = esbulk__json_check(body + first, last - first, &what, &pos);
        if (err == ESBULK_ERR_INVALID_JSON) {
            unsigned char c = pos < last - first ? (unsigned char)body[first + pos] : 0;

            /* a byte that is not text is named (it does not print) */
            if (c >= 0x80 || (c < 0x20 && pos < last - first))
                esbulk__errstr(errstr, errstr_size, "body is not valid JSON: %s (0x%02x) at byte "
                               "%zu", what, c, first + pos);
            else
                esbulk__errstr(errstr, errstr_size, "body is not valid JSON: %s at byte %zu", what,
                               first + pos);
            return err;
        }
        if (err != ESBULK_OK) {
            esbulk__errstr(errstr, errstr_size, "%s", esbulk_err2str(err));
            return err;
        }
    }
    /* copy the runs between CR/LF bytes (memchr: most bodies have none) */
    start = first;
    {
        const char *lf = memchr(body + start, '\n', last - start);
        const char *cr = memchr(body + start, '\r', last - start);

        if (lf == NULL && cr == NULL) {
            /* most bodies: one copy and the newline, room checked once */
            size_t n = last - start;

            if ((err = esbulk__buf_reserve(buf, n + 1)) != ESBULK_OK)
                goto fail;
            memcpy(buf->data + buf->len, body + start, n);
            buf->len += n;
            buf->data[buf->len++] = '\n';
            buf->data[buf->len] = '\0';
            return ESBULK_OK;
        }
        while (start < last) {
            const char *stop;

            /* each memchr result is reused until passed: linear in len */
            if (lf != NULL && lf < body + start)
                lf = memchr(body + start, '\n', last - start);
            if (cr != NULL && cr < body + start)
                cr = memchr(body + start, '\r', last - start);
            stop = lf == NULL ? cr : (cr == NULL || lf < cr ? lf : cr);
            i = stop != NULL ? (size_t)(stop - body) : last;
            if (i > start && (err = esbulk__buf_add(buf, body + start, i - start)) != ESBULK_OK)
                goto fail;
            start = i + 1;
        }
    }
    if ((err = esbulk__buf_addc(buf, '\n')) != ESBULK_OK)
        goto fail;
    return ESBULK_OK;
fail:
    buf->len = mark;
    if (buf->data != NULL)
        buf->data[mark] = '\0';
    esbulk__errstr(errstr, errstr_size, "%s", esbulk_err2str(err));
    return err;
}

static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Unpadded base64url of n bytes (n a multiple of 3, or the tail handled). */
static size_t b64(char *out, const unsigned char *in, size_t n)
{
    size_t i, o = 0;

    for (i = 0; i + 2 < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = b64url[(v >> 18) & 63];
        out[o++] = b64url[(v >> 12) & 63];
        out[o++] = b64url[(v >> 6) & 63];
        out[o++] = b64url[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)in[i] << 16;
        out[o++] = b64url[(v >> 18) & 63];
        out[o++] = b64url[(v >> 12) & 63];
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
        out[o++] = b64url[(v >> 18) & 63];
        out[o++] = b64url[(v >> 12) & 63];
        out[o++] = b64url[(v >> 6) & 63];
    }
    out[o] = '\0';
    return o;
}

void esbulk__id_time(char out[21], int64_t epoch_ms, uint32_t seq, uint64_t node_tag)
{
    unsigned char b[15];
    int i;

    /* Big-endian time first: ids sort by time, and share prefixes (as the
     * server's own generator arranges for Lucene's terms dictionary). */
    for (i = 0; i < 6; i++)
        b[i] = (unsigned char)((uint64_t)epoch_ms >> (40 - 8 * i));
    b[6] = (unsigned char)(seq >> 16);
    b[7] = (unsigned char)(seq >> 8);
    b[8] = (unsigned char)seq;
    for (i = 0; i < 6; i++)
        b[9 + i] = (unsigned char)(node_tag >> (40 - 8 * i));
    b64(out, b, sizeof(b));
}

void esbulk__id_content(char out[23], const char *body, size_t len)
{
    XXH128_hash_t h = XXH3_128bits(body, len);
    unsigned char b[16];
    int i;

    for (i = 0; i < 8; i++) {
        b[i] = (unsigned char)(h.high64 >> (56 - 8 * i));
        b[8 + i] = (unsigned char)(h.low64 >> (56 - 8 * i));
    }
    b64(out, b, sizeof(b));
}
