/* The _bulk response parser's fast path (response_int.h): a 2xx answer's
 * items read in one pass over the bytes, no tree (the rules it keeps are
 * response_scan.h's first comment), with the result the tree path would
 * give; what it does not understand completely it leaves to that path. */
#include "response_scan.h"

/* A member value that counts only as a string (else absent). */
static int read_string(scan_t *s, span_t *out, int depth)
{
    if (peek(s) == '"')
        return scan_string(s, out);
    out->p = NULL;
    return skip_value(s, depth);
}

/* A member value that counts only as a non-negative integer (else -1). */
static int read_count(scan_t *s, int64_t *out, int depth)
{
    int c = peek(s), is_int;

    if (c == '-' || (c >= '0' && c <= '9')) {
        if (scan_number(s, &is_int, out) != 0)
            return -1;
        if (!is_int || *out < 0)
            *out = -1;
        return 0;
    }
    *out = -1;
    return skip_value(s, depth);
}

/* An error object at s->p: its type and reason into *type and *reason; for
 * the item's error (cb != NULL) also its caused_by, read the same way into
 * cb's fields. A key seen twice is left to the slow path. */
static int read_error_obj(scan_t *s, span_t *type, span_t *reason, fast_item_t *cb, int depth)
{
    span_t key;
    int r, first = 1, seen = 0;

    s->p++;
    while ((r = member(s, &first, &key, 0)) == 1) {
        if (KEY_IS(key, "type")) {
            if (seen & 1)
                return -1;
            seen |= 1;
            r = read_string(s, type, depth);
        } else if (KEY_IS(key, "reason")) {
            if (seen & 2)
                return -1;
            seen |= 2;
            r = read_string(s, reason, depth);
        } else if (cb != NULL && KEY_IS(key, "caused_by")) {
            if (seen & 4)
                return -1;
            seen |= 4;
            r = peek(s) == '{' ? read_error_obj(s, &cb->cbtype, &cb->cbreason, NULL, depth + 1)
                               : skip_value(s, depth);
        } else {
            r = skip_value(s, depth);
        }
        if (r != 0)
            return -1;
    }
    return r;
}

enum {
    F_INDEX = 1 << 0,
    F_ID = 1 << 1,
    F_RESULT = 1 << 2,
    F_STATUS = 1 << 3,
    F_SEQ_NO = 1 << 4,
    F_PRIMARY_TERM = 1 << 5,
    F_VERSION = 1 << 6,
    F_ERROR = 1 << 7
};

/* The operation object of an item, at s->p. */
static int read_op(scan_t *s, fast_item_t *f)
{
    const int depth = 3; /* root, items, the item: the op's members are in 4 */
    span_t key;
    int r, first = 1, seen = 0, bit, c, is_int;

    s->p++;
    while ((r = member(s, &first, &key, 0)) == 1) {
        bit = 0;
        switch (key.n) {
        case 3:
            if (KEY_IS(key, "_id"))
                bit = F_ID;
            break;
        case 5:
            if (KEY_IS(key, "error"))
                bit = F_ERROR;
            break;
        case 6:
            if (KEY_IS(key, "_index"))
                bit = F_INDEX;
            else if (KEY_IS(key, "status"))
                bit = F_STATUS;
            else if (KEY_IS(key, "result"))
                bit = F_RESULT;
            break;
        case 7:
            if (KEY_IS(key, "_seq_no"))
                bit = F_SEQ_NO;
            break;
        case 8:
            if (KEY_IS(key, "_version"))
                bit = F_VERSION;
            break;
        case 13:
            if (KEY_IS(key, "_primary_term"))
                bit = F_PRIMARY_TERM;
            break;
        default:
            break;
        }
        if (seen & bit)
            return -1; /* a duplicate: jansson keeps the last one */
        seen |= bit;
        switch (bit) {
        case F_INDEX: r = read_string(s, &f->index, depth + 1); break;
        case F_ID: r = read_string(s, &f->id, depth + 1); break;
        case F_RESULT: r = read_string(s, &f->result, depth + 1); break;
        case F_SEQ_NO: r = read_count(s, &f->seq_no, depth + 1); break;
        case F_PRIMARY_TERM: r = read_count(s, &f->primary_term, depth + 1); break;
        case F_VERSION: r = read_count(s, &f->version, depth + 1); break;
        case F_STATUS:
            c = peek(s);
            if (c != '-' && (c < '0' || c > '9'))
                return -1; /* not an integer: "has no status" */
            r = scan_number(s, &is_int, &f->status);
            if (r == 0 && (!is_int || f->status < 100 || f->status > 599))
                return -1;
            f->has_status = 1;
            break;
        case F_ERROR:
            c = peek(s);
            if (c == '"') {
                f->error = ERR_STRING;
                r = scan_string(s, &f->ereason);
            } else if (c == '{') {
                f->error = ERR_OBJECT;
                r = read_error_obj(s, &f->etype, &f->ereason, f, depth + 2);
            } else if (c == 'n') {
                f->error = ERR_NONE;
                r = scan_literal(s, "null", 4);
            } else {
                f->error = ERR_OTHER;
                r = skip_value(s, depth + 1);
            }
            break;
        default:
            r = skip_value(s, depth + 1);
        }
        if (r != 0)
            return -1;
    }
    return r < 0 || !f->has_status ? -1 : 0;
}

/* sp as a string of the item: the caller's own pointer w when it is the
 * same string (w[0..wn)), else a copy in the arena. NULL when out of
 * memory. */
static ALWAYS_INLINE char *span_take(esbulk__resp_t *out, const span_t *sp, const char *w, size_t wn)
{
    if (w != NULL && !sp->esc && sp->n == wn && mem_eq(sp->p, w, wn))
        return (char *)w; /* borrowed (items_free does not free it) */
    return span_arena(out, sp);
}

/* The usual results, handed out as they are (item->result_static). */
static const char created[] = "created", updated[] = "updated", deleted[] = "deleted",
                  noop[] = "noop", not_found[] = "not_found";

/* An item's result: one of the usual ones as a static string, else a copy
 * in the arena. */
static ALWAYS_INLINE char *result_take(esbulk__resp_t *out, const span_t *sp, esbulk__item_t *item)
{
    const char *r = NULL;

    if (!sp->esc) {
        if (sp->n == 7) {
            r = bytes_are(sp->p, created, 7)   ? created
                : bytes_are(sp->p, updated, 7) ? updated
                : bytes_are(sp->p, deleted, 7) ? deleted
                                               : NULL;
        } else if (sp->n == 4 && bytes_are(sp->p, noop, 4)) {
            r = noop;
        } else if (sp->n == 9 && bytes_are(sp->p, not_found, 9)) {
            r = not_found;
        }
    }
    if (r != NULL) {
        item->result_static = 1;
        return (char *)r; /* static (items_free does not free it) */
    }
    return span_arena(out, sp);
}

/* The item at s->p into item (zeroed); on -1 item may hold strings for the
 * caller to free. */
static int read_item(scan_t *s, int retry_cluster_block, const esbulk__resp_want_t *want,
                     esbulk__resp_t *out, esbulk__item_t *item)
{
    fast_item_t f;
    span_t key, op = {NULL, 0, 0}, others[4];
    size_t nothers = 0, k;
    int r, first = 1, has_error;
    char *cbtype = NULL, *cbreason = NULL;

    if (peek(s) != '{')
        return -1;
    memset(&f, 0, sizeof(f));
    f.seq_no = f.primary_term = f.version = -1;
    s->p++;
    while ((r = member(s, &first, &key, 0)) == 1) {
        if (peek(s) == '{') {
            if (op.p != NULL)
                return -1; /* more than one operation */
            op = key;
            r = read_op(s, &f);
        } else {
            if (nothers == ESBULK__ARRAY_LEN(others))
                return -1;
            others[nothers++] = key;
            r = skip_value(s, 3);
        }
        if (r != 0)
            return -1;
    }
    if (r < 0 || op.p == NULL)
        return -1;
    for (k = 0; k < nothers; k++)
        if (others[k].n == op.n && memcmp(others[k].p, op.p, op.n) == 0)
            return -1; /* the operation's name twice: jansson keeps the last one */

    item->status = (int32_t)f.status;
    item->seq_no = f.seq_no;
    item->primary_term = f.primary_term;
    item->version = f.version;
    if ((f.index.p != NULL &&
         (item->index = span_take(out, &f.index, want ? want->index : NULL,
                                  want ? want->index_len : 0)) == NULL) ||
        (f.id.p != NULL &&
         (item->id = span_take(out, &f.id, want ? want->id : NULL, want ? want->id_len : 0)) ==
             NULL) ||
        (f.result.p != NULL && (item->result = result_take(out, &f.result, item)) == NULL))
        return -1;
    has_error = f.error != ERR_NONE;
    if (f.error == ERR_STRING || f.error == ERR_OBJECT) {
        if ((f.etype.p != NULL && (item->error_type = span_dup_capped(&f.etype)) == NULL) ||
            (f.ereason.p != NULL && (item->error_reason = span_dup_capped(&f.ereason)) == NULL))
            return -1;
        if (f.cbreason.p != NULL) {
            r = -1;
            if ((f.cbtype.p == NULL || (cbtype = span_dup(&f.cbtype)) != NULL) &&
                (cbreason = span_dup(&f.cbreason)) != NULL &&
                esbulk__resp_add_caused_by(&item->error_reason, &item->cause_type,
                                           &item->cause_reason, cbtype, cbreason) == ESBULK_OK)
                r = 0;
            free(cbtype);
            free(cbreason);
            if (r != 0)
                return -1;
        }
    }
    item->klass = esbulk__resp_item_class(item, has_error, KEY_IS(op, "delete"),
                                          retry_cluster_block);
    return 0;
}

/* A plain non-negative integer of at most 18 digits at p (so that it fits
 * int64_t), not followed by a digit: what servers write for counts and
 * statuses. The position past it, or NULL (anything else: -1, 1.0, 1e3,
 * 01, a 19-digit number, is left to read_item). */
static ALWAYS_INLINE const unsigned char *quick_count(const unsigned char *p,
                                                     const unsigned char *end, int64_t *v)
{
    const unsigned char *lim;
    uint64_t m;
    unsigned c;

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (end - p >= 8) {
        /* up to 7 digits at once: the bytes below '0' or above '9' flag
         * their high bit (borrows and carries only go up, so the lowest
         * flag is right); the digits are then summed in three
         * multiplications, the first one in the lowest byte */
        uint64_t w = load8(p), x = w - 0x3030303030303030u,
                 nd = (x | (w + 0x4646464646464646u)) & 0x8080808080808080u;
        unsigned n;

        if (nd != 0) {
            n = (unsigned)__builtin_ctzll(nd) / 8;
            if (n == 1) {
                *v = (int64_t)(x & 0xff);
                return p + 1;
            }
            if (n == 0 || *p == '0')
                return NULL;
            x <<= 64 - 8 * n; /* the digits high, zeros (leading zeros) low */
            x = ((x & 0x0f0f0f0f0f0f0f0fu) * 2561) >> 8;
            x = ((x & 0x00ff00ff00ff00ffu) * 6553601) >> 16;
            x = ((x & 0x0000ffff0000ffffu) * UINT64_C(42949672960001)) >> 32;
            *v = (int64_t)x;
            return p + n;
        }
    }
#endif
    if (p >= end || (m = (unsigned)(*p - '0')) >= 10)
        return NULL;
    lim = end - p > 18 ? p + 18 : end;
    p++;
    if (m == 0) {
        if (p < end && (unsigned)(*p - '0') < 10)
            return NULL; /* 01: not JSON */
    } else {
        while (p < lim && (c = (unsigned)(*p - '0')) < 10) {
            m = m * 10 + c;
            p++;
        }
        if (p < end && (unsigned)(*p - '0') < 10)
            return NULL; /* 19 digits or more */
    }
    *v = (int64_t)m;
    return p;
}

/* What quick_item remembers from one item to the next. */
typedef struct {
    const unsigned char *plain; /* an _index value of this body, str_scan checked and not
                                   escaped */
    size_t plain_n;             /* its length; SIZE_MAX: none yet */
} quick_t;

/* The common item exactly as OpenSearch and Elasticsearch write it
 * filtered: {"<index|create|update|delete>":{...}} without whitespace, the
 * members among _index, _id, _version, result, _seq_no, _primary_term,
 * status (in that order, the servers' order; any may be absent but status),
 * strings as str_scan checks them, counts as quick_count reads them, and
 * nothing else (no error). Keys are compared in place as words; the order
 * also rules out duplicates. Returns 0 with the item read (s->p past it), 1
 * when it is not that shape (s untouched: read_item reads it), -1 when out
 * of memory. item is written only on 0. */
/* The fields quick_rest reads. */
typedef struct {
    span_t id, result;
    const char *r_result; /* result as a static string (result.p is then NULL) */
    int64_t status, seq_no, primary_term, version;
} quick_fields_t;

#define QAT(lit) ((size_t)(end - p) >= sizeof(lit) - 1 && bytes_are(p, lit, sizeof(lit) - 1))

/* A string value at p, as quick_count reads a count: the position past it,
 * or NULL when p is not at a valid string ("_id":, or "_id":1 is not the
 * common shape, not a member to skip). */
static ALWAYS_INLINE const unsigned char *quick_string(const unsigned char *p,
                                                      const unsigned char *end, span_t *out)
{
    return p < end && *p == '"' ? str_scan(p, end, out) : NULL;
}

/* The members of the operation after _index, p at the first (first: there
 * was no _index, so no ',' before it), to the end of the item: the
 * position past it, or NULL when it is not the common shape. Inlined twice,
 * with first a constant: the common copy compares each key with its ','
 * in one go. */
static ALWAYS_INLINE const unsigned char *quick_rest(const unsigned char *p,
                                                    const unsigned char *end, const int first_in,
                                                    quick_fields_t *f)
{
    int first = first_in;

    /* the member key "k": (the ',' before it, but for the first member) and
     * the ':' after it, compared as words */
#define QKEY(k) (first ? QAT(k ":") : QAT("," k ":"))
#define QSKIP(k) (p += sizeof(k ":") - (size_t)first, first = 0)
    /* once a key is read, its value must follow, of its type */
    if (QKEY("\"_id\"") && (QSKIP("\"_id\""), 1) && (p = quick_string(p, end, &f->id)) == NULL)
        return NULL;
    if (QKEY("\"_version\"") && (QSKIP("\"_version\""), 1) &&
        (p = quick_count(p, end, &f->version)) == NULL)
        return NULL;
    if (QKEY("\"result\"")) {
        QSKIP("\"result\"");
        /* the usual ones as words, the others through quick_string */
        if (end - p >= 9 && *p == '"' && load8(p + 1) == load8("created\"")) {
            f->r_result = created;
            p += 9;
        } else if (end - p >= 9 && *p == '"' && load8(p + 1) == load8("updated\"")) {
            f->r_result = updated;
            p += 9;
        } else if ((p = quick_string(p, end, &f->result)) == NULL) {
            return NULL;
        }
    }
    if (QKEY("\"_seq_no\"") && (QSKIP("\"_seq_no\""), 1) &&
        (p = quick_count(p, end, &f->seq_no)) == NULL)
        return NULL;
    if (QKEY("\"_primary_term\"") && (QSKIP("\"_primary_term\""), 1) &&
        (p = quick_count(p, end, &f->primary_term)) == NULL)
        return NULL;
    /* status last, then the end of the operation and of the item: anything
     * else (no status, another member, one out of this order, a string
     * where a number was, an error after the status) is left to read_item */
    if (!first && QAT(",\"status\":201}}")) { /* the usual ones as two words */
        f->status = 201;
        return p + 15;
    }
    if (!first && QAT(",\"status\":200}}")) {
        f->status = 200;
        return p + 15;
    }
    if (!QKEY("\"status\""))
        return NULL;
    QSKIP("\"status\"");
    if ((p = quick_count(p, end, &f->status)) == NULL || f->status < 100 || f->status > 599 ||
        end - p < 2 || p[0] != '}' || p[1] != '}')
        return NULL;
    return p + 2;
#undef QSKIP
#undef QKEY
}

static int quick_item(scan_t *s, int retry_cluster_block, const esbulk__resp_want_t *want,
                      quick_t *q, esbulk__resp_t *out, esbulk__item_t *item)
{
    const unsigned char *p = s->p, *end = s->end;
    quick_fields_t f;
    span_t index;
    int is_delete = 0, same_index = 0;
    char *r_index = NULL, *r_id = NULL, *r_result;

    index.p = f.id.p = f.result.p = NULL;
    f.r_result = NULL;
    f.seq_no = f.primary_term = f.version = -1;
    if (QAT("{\"index\":{"))
        p += 10;
    else if (QAT("{\"create\":{") || QAT("{\"update\":{"))
        p += 11;
    else if (QAT("{\"delete\":{"))
        p += 11, is_delete = 1;
    else
        return 1;
    if (QAT("\"_index\":\"")) {
        /* no plain_n is SIZE_MAX - 1 (a body is smaller) */
        size_t wn = want != NULL && want->index != NULL ? want->index_len : SIZE_MAX - 1;

        p += 10;
        /* the bytes of the last index read (checked then), and the
         * document's: the same string, taken without a second check */
        if (wn == q->plain_n && (size_t)(end - p) > wn && p[wn] == '"' &&
            mem_eq(p, q->plain, wn) && mem_eq(p, want->index, wn)) {
            same_index = 1;
            p += wn + 1;
        } else {
            if ((p = str_scan(p - 1, end, &index)) == NULL)
                return 1;
            if (!index.esc) {
                q->plain = index.p;
                q->plain_n = index.n;
            }
        }
        p = quick_rest(p, end, 0, &f);
    } else {
        p = quick_rest(p, end, 1, &f);
    }
    if (p == NULL)
        return 1;

    r_result = (char *)f.r_result; /* static (items_free does not free it) */
    item->result_static = r_result != NULL;
    if (same_index)
        r_index = (char *)want->index;
    if ((index.p != NULL &&
         (r_index = span_take(out, &index, want ? want->index : NULL,
                              want ? want->index_len : 0)) == NULL) ||
        (f.id.p != NULL &&
         (r_id = span_take(out, &f.id, want ? want->id : NULL, want ? want->id_len : 0)) ==
             NULL) ||
        (f.result.p != NULL && (r_result = result_take(out, &f.result, item)) == NULL))
        return -1;
    item->index = r_index;
    item->id = r_id;
    item->result = r_result;
    item->status = (int32_t)f.status;
    item->seq_no = f.seq_no;
    item->primary_term = f.primary_term;
    item->version = f.version;
    item->error_type = item->error_reason = item->cause_type = item->cause_reason = NULL;
    item->klass = f.status >= 200 && f.status <= 299
                      ? ESBULK__ITEM_OK
                      : esbulk__resp_item_class(item, 0, is_delete, retry_cluster_block);
    s->p = p;
    return 0;
}
#undef QAT

/* The item most answers are made of when only the status is asked for (the
 * default filter_path for documents added with their _id to a concrete
 * index): {"index":{"status":201}} or {"create":{"status":201}}, compared
 * as whole words. 1 with item written as quick_item would write it and s
 * past it; 0 (s and item untouched) for anything else, which quick_item
 * reads. */
static ALWAYS_INLINE int status_only_item(scan_t *s, esbulk__item_t *item)
{
    static const char ix[] = "{\"index\":{\"status\":201}}";
    static const char cr[] = "{\"create\":{\"status\":201}}";
    const unsigned char *p = s->p;
    size_t left = (size_t)(s->end - p);

    if (left >= sizeof(ix) - 1 && load8(p) == load8(ix) && load8(p + 8) == load8(ix + 8) &&
        load8(p + 16) == load8(ix + 16)) {
        s->p = p + sizeof(ix) - 1;
    } else if (left >= sizeof(cr) - 1 && load8(p) == load8(cr) &&
               load8(p + 8) == load8(cr + 8) && load8(p + 16) == load8(cr + 16) && p[24] == '}') {
        s->p = p + sizeof(cr) - 1;
    } else {
        return 0;
    }
    item->index = item->id = item->result = NULL;
    item->result_static = 0;
    item->status = 201;
    item->seq_no = item->primary_term = item->version = -1;
    item->error_type = item->error_reason = item->cause_type = item->cause_reason = NULL;
    item->klass = ESBULK__ITEM_OK;
    return 1;
}

/* The whole 2xx answer: 0 with out classified OK and its items set, or -1
 * with out as it was (nothing kept). */
int esbulk__resp_fast_items(const char *body, size_t body_len, size_t expected_items,
                            int retry_cluster_block, const esbulk__resp_want_t *want,
                            int quick_only, esbulk__resp_scratch_t *scratch, esbulk__resp_t *out)
{
    scan_t s;
    span_t key;
    quick_t q = {NULL, SIZE_MAX};
    size_t n = 0;
    int r, first = 1, seen_items = 0;

    s.p = (const unsigned char *)body;
    s.end = s.p + body_len;
    ws(&s);
    if (peek(&s) != '{')
        return -1;
    s.p++;
    while ((r = member(&s, &first, &key, 0)) == 1) {
        if (!KEY_IS(key, "items")) {
            if (skip_value(&s, 1) != 0)
                goto bail;
            continue;
        }
        if (seen_items || peek(&s) != '[')
            goto bail;
        seen_items = 1;
        s.p++;
        /* allocated before the items are counted: not for more than the
         * body can hold ({"":{"status":100}} is 19 bytes) */
        if (expected_items > body_len / 16)
            goto bail;
        if (expected_items > 0) {
            /* not zeroed: out->nitems counts those written */
            if (scratch == NULL) {
                out->items = malloc(expected_items * sizeof(*out->items));
            } else {
                if (scratch->cap < expected_items) {
                    esbulk__item_t *p = malloc(expected_items * sizeof(*p));

                    if (p == NULL)
                        goto bail;
                    free(scratch->items);
                    scratch->items = p;
                    scratch->cap = expected_items;
                }
                out->items = scratch->items;
                out->items_scratch = 1;
            }
            if (out->items == NULL)
                goto bail;
            out->borrowed = 1;
            /* the strings kept: at most the body's bytes, and a NUL each
             * (allocated when the first is copied: span_arena) */
            out->arena_cap = body_len + 3 * expected_items;
        }
        ws(&s);
        if (peek(&s) == ']') {
            s.p++;
            continue;
        }
        do {
            if (n == expected_items)
                goto bail; /* too many */
            if (status_only_item(&s, &out->items[n])) {
                r = 0;
            } else {
                r = quick_item(&s, retry_cluster_block, want ? &want[n] : NULL, &q, out,
                               &out->items[n]);
            }
            if (r > 0 && !quick_only) {
                memset(&out->items[n], 0, sizeof(out->items[n]));
                out->nitems = n + 1; /* it may hold error strings to free */
                out->item_errors = 1;
                r = read_item(&s, retry_cluster_block, want ? &want[n] : NULL, out,
                              &out->items[n]);
            }
            if (r != 0)
                goto bail;
            out->nitems = ++n;
            /* the servers' ",{" between items, else the general way */
            if (s.end - s.p >= 2 && s.p[0] == ',' && s.p[1] == '{') {
                s.p++;
                r = 1;
            } else {
                r = next_element(&s);
            }
        } while (r == 1);
        if (r < 0)
            goto bail;
    }
    if (r < 0 || !seen_items || n != expected_items)
        goto bail;
    ws(&s);
    if (s.p != s.end)
        goto bail;
    out->klass = ESBULK__RESP_OK;
    out->err = ESBULK_OK;
    return 0;
bail:
    esbulk__resp_items_free(out);
    return -1;
}
