/* Adding documents: esbulk_add and its batch and options forms. A document
 * is checked and built (its record and request lines) without the handle's
 * lock, then handed to the I/O thread's incoming queue (handoff.c). */
#include "docmem.h"
#include "engine.h"
#include "utf8.h"
#include "ndjson.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Documents a batch call builds before it queues them under one lock. */
#define ADD_CHUNK 64

static int64_t epoch_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Builds the document without the handle's lock: its record, and its
 * request lines written once, where curl will read them (docmem.h). */
static esbulk_err_t doc_build(esbulk_t *eb, esbulk_op_t op, const char *index, const char *id,
                              size_t id_len, const char *routing, size_t routing_len,
                              const char *body, size_t body_len, const esbulk_docopts_t *opts,
                              void *opaque, esbulk__doc_t **out, char *errstr,
                              size_t errstr_size)
{
    size_t index_len, max_doc = (size_t)esbulk__conf_int(eb->conf, ESBULK__C_MAX_DOC_BYTES);
    int64_t gen = esbulk__conf_int(eb->conf, ESBULK__C_ID_GENERATE);
    char idbuf[32], action_stack[512], *p;
    esbulk__buf_t action, bline;
    size_t lines_max, strs, action_len;
    int content_id, plain, fast;
    unsigned slot;
    uint64_t hint_serial;
    int32_t hint_shard;
    esbulk__doc_t *d = NULL;
    esbulk_err_t err;

    *out = NULL;
    if (index == NULL || (unsigned)op > ESBULK_OP_DELETE || (id == NULL && id_len > 0) ||
        (routing == NULL && routing_len > 0) || (body == NULL && body_len > 0)) {
        esbulk__errstr(errstr, errstr_size, "invalid argument (NULL pointer with a length, "
                                            "no index, or unknown op)");
        return ESBULK_ERR_INVALID_ARG;
    }
    index_len = strlen(index);
    /* the usual strings are plain ASCII: valid UTF-8, no NUL, nothing to
     * escape, in one pass each */
    plain = esbulk__plain_ascii(index, index_len) && esbulk__plain_ascii(id, id_len) &&
            esbulk__plain_ascii(routing, routing_len);
    if (index_len == 0 || index_len > ESBULK__KEY_MAX) {
        esbulk__errstr(errstr, errstr_size, "index name is empty or too long");
        return ESBULK_ERR_INVALID_ARG;
    }
    if (id_len > ESBULK__ID_MAX) {
        /* the server would refuse the whole request it is in */
        esbulk__errstr(errstr, errstr_size, "_id longer than %u bytes (the server's limit)",
                       (unsigned)ESBULK__ID_MAX);
        return ESBULK_ERR_INVALID_ARG;
    }
    if (routing_len > ESBULK__KEY_MAX) {
        esbulk__errstr(errstr, errstr_size, "routing longer than %u bytes",
                       (unsigned)ESBULK__KEY_MAX);
        return ESBULK_ERR_INVALID_ARG;
    }
    if (!plain && !esbulk__utf8_valid(index, index_len)) {
        esbulk__errstr(errstr, errstr_size, "index name is not valid UTF-8");
        return ESBULK_ERR_INVALID_UTF8;
    }
    if (!plain && (!esbulk__utf8_valid(id, id_len) || memchr(id ? id : "", 0, id_len) != NULL)) {
        esbulk__errstr(errstr, errstr_size, "_id is not valid UTF-8 (or holds a NUL byte)");
        return ESBULK_ERR_INVALID_UTF8;
    }
    if (!plain && (!esbulk__utf8_valid(routing, routing_len) ||
                   memchr(routing ? routing : "", 0, routing_len))) {
        esbulk__errstr(errstr, errstr_size, "routing is not valid UTF-8 (or holds a NUL byte)");
        return ESBULK_ERR_INVALID_UTF8;
    }
    if (op == ESBULK_OP_DELETE) {
        if (body_len > 0) {
            esbulk__errstr(errstr, errstr_size, "delete takes no body");
            return ESBULK_ERR_INVALID_ARG;
        }
        if (id_len == 0) {
            esbulk__errstr(errstr, errstr_size, "delete needs an _id");
            return ESBULK_ERR_INVALID_ARG;
        }
    } else if (body_len == 0) {
        esbulk__errstr(errstr, errstr_size, "a body is required (one JSON object)");
        return ESBULK_ERR_INVALID_JSON;
    }
    if (op == ESBULK_OP_UPDATE && id_len == 0) {
        esbulk__errstr(errstr, errstr_size, "update needs an _id");
        return ESBULK_ERR_INVALID_ARG;
    }
    if ((err = esbulk__docopts_check(opts, op, id_len > 0, errstr, errstr_size)) != ESBULK_OK)
        return err;
    if (body_len > max_doc) {
        esbulk__errstr(errstr, errstr_size, "document of %zu bytes is larger than max.doc.bytes "
                       "(%zu)", body_len, max_doc);
        return ESBULK_ERR_DOC_TOO_LARGE;
    }
    /* A content id hashes the body as it is sent, so that body line is built
     * first; otherwise the body goes straight after the action line. */
    content_id = id_len == 0 && gen == ESBULK__IDGEN_CONTENT && (op == ESBULK_OP_INDEX || op == ESBULK_OP_CREATE);
    esbulk__buf_init(&bline, (size_t)-1);
    if (content_id) {
        err = esbulk__body_line(&bline, body, body_len,
                                (int)esbulk__conf_int(eb->conf, ESBULK__C_BODY_VALIDATE), errstr,
                                errstr_size);
        if (err != ESBULK_OK) {
            esbulk__buf_free(&bline);
            return err;
        }
    }
    if (id_len == 0 && gen != ESBULK__IDGEN_NONE && (op == ESBULK_OP_INDEX || op == ESBULK_OP_CREATE)) {
        if (gen == ESBULK__IDGEN_TIME)
            esbulk__id_time(idbuf, epoch_ms(), atomic_fetch_add(&eb->id_seq, 1), eb->node_tag);
        else
            esbulk__id_content(idbuf, bline.data, bline.len - 1);
        id = idbuf;
        id_len = strlen(idbuf);
    }

    /* The action line: plain strings and no option, its length is known and
     * it is written straight into the document's room; otherwise first on
     * the stack (most are short), so that the document asks for exactly the
     * room its lines need. (Generated ids are plain.) */
    esbulk__buf_init(&action, sizeof(action_stack) - 1);
    action.data = action_stack;
    action.cap = sizeof(action_stack);
    fast = plain && esbulk__docopts_empty(opts);
    if (fast) {
        action_len = esbulk__action_line_plain_len(op, index_len, id_len, routing_len);
    } else {
        err = esbulk__action_line_opts(&action, op, index, index_len, id, id_len, routing,
                                       routing_len, opts);
        if (err == ESBULK_ERR_TOO_LARGE) {
            esbulk__buf_init(&action, (size_t)-1);
            err = esbulk__action_line_opts(&action, op, index, index_len, id, id_len, routing,
                                           routing_len, opts);
        }
        if (err != ESBULK_OK)
            goto fail;
        action_len = action.len;
    }
    /* a body line is at most the body and its "\n" */
    lines_max = action_len + (bline.len > 0 ? bline.len : op == ESBULK_OP_DELETE ? 0 : body_len + 1);
    /* the record holds its lengths in 32 bits (doc.h): with max.doc.bytes
     * at most 1 GiB and keys at most ESBULK__KEY_MAX, only long options
     * could pass them */
    strs = index_len + 1 + id_len + 1 + routing_len + 1;
    if (lines_max > UINT32_MAX - 1 - sizeof(*d) - strs) {
        esbulk__errstr(errstr, errstr_size, "document's request lines (%zu bytes) too large",
                       lines_max);
        err = ESBULK_ERR_DOC_TOO_LARGE;
        goto fail;
    }
    /* beside the documents going where this one most likely goes */
    slot = esbulk__place_slot(&eb->place, index, index_len, id, id_len, routing, routing_len,
                              &hint_serial, &hint_shard);
    if ((err = esbulk__docmem_take(eb->dm, slot, lines_max, &d, &p)) != ESBULK_OK)
        goto fail;
    d->hint_serial = hint_serial;
    d->hint_shard = hint_shard;
    if (fast)
        esbulk__action_line_plain(p, op, index, index_len, id, id_len, routing, routing_len);
    else
        memcpy(p, action.data, action_len);
    d->lines = p;
    d->lines_len = (uint32_t)action_len;
    if (bline.len > 0) {
        memcpy(p + action_len, bline.data, bline.len);
        d->lines_len += (uint32_t)bline.len;
    } else if (op != ESBULK_OP_DELETE) {
        /* the body is copied once, into the room of its request lines */
        esbulk__buf_t view;

        view.data = p;
        view.len = action_len;
        view.cap = lines_max + 1;
        view.max = lines_max;
        err = esbulk__body_line(&view, body, body_len,
                                (int)esbulk__conf_int(eb->conf, ESBULK__C_BODY_VALIDATE), errstr,
                                errstr_size);
        if (err != ESBULK_OK)
            goto fail;
        d->lines_len = (uint32_t)view.len;
    }
    p[d->lines_len] = '\0';
    esbulk__docmem_trim(d, lines_max);
    d->op = (unsigned char)op;
    d->conditional = esbulk__docopts_conditional(opts) != 0;
    d->opaque = opaque;
    d->seq_no = d->primary_term = d->version = -1;
    d->index_len = (uint32_t)index_len;
    d->id_len = (uint32_t)id_len;
    d->routing_len = (uint32_t)routing_len;
    /* index, id and routing in the record when they fit */
    if (strs <= sizeof(d->strs))
        p = d->strs;
    else if ((p = d->strs_own = malloc(strs)) == NULL)
        goto nomem;
    d->index = memcpy(p, index, index_len);
    p[index_len] = '\0';
    p += index_len + 1;
    if (id_len > 0) {
        d->id = memcpy(p, id, id_len);
        p[id_len] = '\0';
    }
    p += id_len + 1;
    if (routing_len > 0) {
        d->routing = memcpy(p, routing, routing_len);
        p[routing_len] = '\0';
    }
    if (action.data != action_stack)
        esbulk__buf_free(&action);
    if (bline.data != NULL)
        esbulk__buf_free(&bline);
    /* what the document holds, counted in buffer.max.bytes: its record, its
     * strings when they do not fit in it, and its lines (counting only the
     * lines let small documents take about 2.8 times buffer.max.bytes) */
    d->body_bytes = (uint32_t)(sizeof(*d) + (d->strs_own != NULL ? strs : 0) + d->lines_len + 1);
    *out = d;
    return ESBULK_OK;
nomem:
    err = ESBULK_ERR_NOMEM;
fail:
    if (action.data != action_stack)
        esbulk__buf_free(&action);
    esbulk__buf_free(&bline);
    esbulk__doc_free(d);
    if (err == ESBULK_ERR_NOMEM)
        esbulk__errstr(errstr, errstr_size, "out of memory");
    return err;
}

static esbulk_err_t doc_enqueue(esbulk_t *eb, esbulk__doc_t *d, char *errstr, size_t errstr_size)
{
    size_t done;

    return esbulk__handoff_add(eb, &d, 1, &done, errstr, errstr_size);
}

esbulk_err_t esbulk_add_opts(esbulk_t *eb, esbulk_op_t op, const char *index, const char *id,
                             size_t id_len, const char *routing, size_t routing_len,
                             const char *body, size_t body_len, const esbulk_docopts_t *opts,
                             void *doc_opaque, char *errstr, size_t errstr_size)
{
    esbulk__doc_t *d;
    esbulk_err_t err;

    if (eb == NULL) {
        esbulk__errstr(errstr, errstr_size, "handle is NULL");
        return ESBULK_ERR_INVALID_ARG;
    }
    if ((err = esbulk__handoff_full_now(eb, errstr, errstr_size)) != ESBULK_OK)
        return err;
    err = doc_build(eb, op, index, id, id_len, routing, routing_len, body, body_len, opts,
                    doc_opaque, &d, errstr, errstr_size);
    if (err != ESBULK_OK)
        return err;
    err = doc_enqueue(eb, d, errstr, errstr_size);
    if (err != ESBULK_OK)
        esbulk__doc_free(d);
    return err;
}

esbulk_err_t esbulk_add(esbulk_t *eb, esbulk_op_t op, const char *index, const char *id,
                        size_t id_len, const char *routing, size_t routing_len, const char *body,
                        size_t body_len, void *doc_opaque, char *errstr, size_t errstr_size)
{
    return esbulk_add_opts(eb, op, index, id, id_len, routing, routing_len, body, body_len, NULL,
                           doc_opaque, errstr, errstr_size);
}

esbulk_err_t esbulk_add_batch_opts(esbulk_t *eb, size_t count, const int32_t *ops,
                                   const char *const *indices, const char *const *ids,
                                   const size_t *id_lens, const char *const *routings,
                                   const size_t *routing_lens, const char *const *bodies,
                                   const size_t *body_lens, const esbulk_docopts_t *const *opts,
                                   void *const *opaques, size_t *accepted, char *errstr,
                                   size_t errstr_size)
{
    esbulk__doc_t *chunk[ADD_CHUNK];
    size_t i = 0, n, k, done, total = 0;
    esbulk_err_t err = ESBULK_OK, build_err;

    if (accepted != NULL)
        *accepted = 0;
    if (eb == NULL || (count > 0 && (indices == NULL || ops == NULL)) ||
        (ids != NULL && id_lens == NULL) || (routings != NULL && routing_lens == NULL) ||
        (bodies != NULL && body_lens == NULL)) {
        esbulk__errstr(errstr, errstr_size, "invalid argument (missing array)");
        return ESBULK_ERR_INVALID_ARG;
    }
    while (i < count && err == ESBULK_OK) {
        /* build up to ADD_CHUNK documents without the lock, then queue them
         * at once: one lock and one wake-up per chunk, not per document */
        if ((err = esbulk__handoff_full_now(eb, errstr, errstr_size)) != ESBULK_OK)
            break;
        build_err = ESBULK_OK;
        for (n = 0; n < ADD_CHUNK && i + n < count; n++) {
            size_t j = i + n;

            build_err = doc_build(eb, (esbulk_op_t)ops[j], indices[j], ids ? ids[j] : NULL,
                                  ids && ids[j] ? id_lens[j] : 0, routings ? routings[j] : NULL,
                                  routings && routings[j] ? routing_lens[j] : 0,
                                  bodies ? bodies[j] : NULL, bodies && bodies[j] ? body_lens[j] : 0,
                                  opts ? opts[j] : NULL, opaques ? opaques[j] : NULL, &chunk[n],
                                  errstr, errstr_size);
            if (build_err != ESBULK_OK)
                break;
        }
        err = n > 0 ? esbulk__handoff_add(eb, chunk, n, &done, errstr, errstr_size) : ESBULK_OK;
        if (n == 0)
            done = 0;
        for (k = done; k < n; k++)
            esbulk__doc_free(chunk[k]);
        total += done;
        i += n;
        if (err == ESBULK_OK)
            err = build_err;
    }
    if (accepted != NULL)
        *accepted = total;
    return err;
}

esbulk_err_t esbulk_add_batch(esbulk_t *eb, size_t count, const int32_t *ops,
                              const char *const *indices, const char *const *ids,
                              const size_t *id_lens, const char *const *routings,
                              const size_t *routing_lens, const char *const *bodies,
                              const size_t *body_lens, void *const *opaques, size_t *accepted,
                              char *errstr, size_t errstr_size)
{
    return esbulk_add_batch_opts(eb, count, ops, indices, ids, id_lens, routings, routing_lens,
                                 bodies, body_lens, NULL, opaques, accepted, errstr, errstr_size);
}
