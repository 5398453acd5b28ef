/* The public engine calls: new, add, poll, flush, close, destroy, results
 * and statistics. The I/O thread lives in io.c. */
#include "docmem.h"
#include "engine.h"
#include "murmur3.h"
#include "ndjson.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

/* Results handed to a batch callback at once. */
#define RESULTS_BATCH 256

/* ------------------------------------------------------------------------- */
/* Result accessors */

void *esbulk_result_opaque(const esbulk_result_t *r) { return r ? r->opaque : NULL; }
esbulk_outcome_t esbulk_result_outcome(const esbulk_result_t *r) { return r ? r->outcome : ESBULK_OUTCOME_FAILED; }
esbulk_err_t esbulk_result_err(const esbulk_result_t *r) { return r ? r->err : ESBULK_ERR_INVALID_ARG; }
esbulk_op_t esbulk_result_op(const esbulk_result_t *r) { return r ? r->op : ESBULK_OP_INDEX; }
const char *esbulk_result_index(const esbulk_result_t *r) { return r ? (ESBULK__DOC_MORE(r, index) ? r->more->index : r->index) : NULL; }
const char *esbulk_result_id(const esbulk_result_t *r) { return r ? (r->id ? r->id : ESBULK__DOC_MORE(r, id)) : NULL; }
int32_t esbulk_result_status(const esbulk_result_t *r) { return r ? r->status : 0; }
const char *esbulk_result_error_type(const esbulk_result_t *r) { return r ? ESBULK__DOC_MORE(r, error_type) : NULL; }
const char *esbulk_result_error_reason(const esbulk_result_t *r) { return r ? ESBULK__DOC_MORE(r, error_reason) : NULL; }
const char *esbulk_result_error_cause_type(const esbulk_result_t *r) { return r ? ESBULK__DOC_MORE(r, cause_type) : NULL; }
const char *esbulk_result_error_cause_reason(const esbulk_result_t *r) { return r ? ESBULK__DOC_MORE(r, cause_reason) : NULL; }
const char *esbulk_result_result(const esbulk_result_t *r) { return r ? r->r_result : NULL; }
int64_t esbulk_result_seq_no(const esbulk_result_t *r) { return r ? r->seq_no : -1; }
int64_t esbulk_result_primary_term(const esbulk_result_t *r) { return r ? r->primary_term : -1; }
int64_t esbulk_result_version(const esbulk_result_t *r) { return r ? r->version : -1; }
int32_t esbulk_result_attempts(const esbulk_result_t *r) { return r ? r->attempts : 0; }

const char *esbulk_result_body(const esbulk_result_t *r, size_t *len)
{
    const char *nl;

    if (len != NULL)
        *len = 0;
    /* the lines are kept only for documents not indexed, with result.keep_body */
    if (r == NULL || r->lines == NULL || r->op == ESBULK_OP_DELETE ||
        (nl = memchr(r->lines, '\n', r->lines_len)) == NULL ||
        (size_t)(nl + 1 - r->lines) >= r->lines_len)
        return NULL;
    if (len != NULL)
        *len = r->lines_len - (size_t)(nl + 1 - r->lines) - 1; /* without its "\n" */
    return nl + 1;
}

/* One string into strs at *off with its NUL ("" for NULL); 0 if it does not fit. */
static int put_str(char *strs, size_t size, size_t *off, const char *s)
{
    size_t len = s != NULL ? strlen(s) : 0;

    if (size - *off < len + 1)
        return 0;
    if (len > 0)
        memcpy(strs + *off, s, len);
    strs[*off + len] = '\0';
    *off += len + 1;
    return 1;
}

int64_t esbulk_results_read(const esbulk_result_t *const *results, size_t count, void **opaques,
                            int32_t *ints, int64_t *longs, char *strs, size_t strs_size,
                            size_t *strs_len)
{
    size_t i, off = 0;

    if (strs_len != NULL)
        *strs_len = 0;
    if (count == 0)
        return 0;
    if (results == NULL || ints == NULL || longs == NULL || (strs == NULL && strs_size > 0))
        return ESBULK_ERR_INVALID_ARG;
    for (i = 0; i < count; i++)
        if (results[i] == NULL)
            return ESBULK_ERR_INVALID_ARG;
    for (i = 0; i < count; i++) {
        const esbulk_result_t *r = results[i];
        const char *index = esbulk_result_index(r), *id = esbulk_result_id(r);
        const char *result = esbulk_result_result(r);
        int32_t *in = ints + i * ESBULK_RESULT_INTS;
        int64_t *lo = longs + i * ESBULK_RESULT_LONGS;

        if (strs != NULL) {
            size_t save = off;

            if (!put_str(strs, strs_size, &off, index) || !put_str(strs, strs_size, &off, id) ||
                !put_str(strs, strs_size, &off, result)) {
                off = save;
                break;
            }
        }
        if (opaques != NULL)
            opaques[i] = r->opaque;
        in[0] = (int32_t)r->outcome;
        in[1] = (int32_t)r->err;
        in[2] = (int32_t)r->op;
        in[3] = r->status;
        in[4] = r->attempts;
        in[5] = (index == NULL ? ESBULK_RESULT_NO_INDEX : 0) | (id == NULL ? ESBULK_RESULT_NO_ID : 0) |
                (result == NULL ? ESBULK_RESULT_NO_RESULT : 0);
        lo[0] = r->seq_no;
        lo[1] = r->primary_term;
        lo[2] = r->version;
    }
    if (strs_len != NULL)
        *strs_len = off;
    return (int64_t)i;
}

/* ------------------------------------------------------------------------- */
/* Lifecycle */

/* Incoming documents that wake the I/O thread (flush.docs or flush.bytes
 * if less): it routes them and checks the destinations' sizes. */
#define WAKE_DOCS 256
#define WAKE_BYTES (256 * 1024)

/* malloc.tune. glibc's malloc gives the top of a heap back to the kernel
 * (madvise) once it exceeds the trim threshold: twice the mmap threshold,
 * which the first free of a large mmapped block raises to that block's
 * size. curl (7.88) allocates a 512 KiB upload and a 256 KiB download
 * buffer for every transfer and frees both when it ends (io.c sizes them),
 * so the thresholds end near 512 KiB and 1 MiB; two or more such buffers
 * freed at the top of the I/O thread's heap pass 1 MiB, glibc trims them,
 * and the next transfers fault every page in again. Whether they lie at
 * the top depends on the heap's layout: in 12 of 27 processes the I/O
 * thread faulted about 50,000 times a round and spent 30-60 ns more a
 * document (bench/longrun against the null sink, 1M documents a round).
 * Freeing one 4 MiB block raises the thresholds to 4 and 8 MiB, as glibc
 * does itself when a program frees a block that large: ten transfers'
 * buffers then stay. Thresholds a program set (mallopt, MALLOC_*_ or
 * glibc.malloc tunables) are left as they are: glibc no longer adjusts
 * them. Once a process. */
#define MALLOC_RAISE_BYTES ((size_t)4 << 20)
static pthread_once_t malloc_raise_once = PTHREAD_ONCE_INIT;
static void *volatile malloc_raise_block; /* volatile: the pair is not optimised away */

static void malloc_raise(void)
{
#ifdef __GLIBC__
    malloc_raise_block = malloc(MALLOC_RAISE_BYTES);
    free(malloc_raise_block);
    malloc_raise_block = NULL;
#endif
}

static uint64_t random_tag(void)
{
    struct timespec ts;
    uint64_t x;

    clock_gettime(CLOCK_REALTIME, &ts);
    x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ ((uint64_t)(uintptr_t)&ts << 7);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x & 0xffffffffffffull;
}

esbulk_t *esbulk_new(const esbulk_conf_t *conf, char *errstr, size_t errstr_size)
{
    esbulk_t *eb;
    char *user = NULL, *pass = NULL;
    pthread_condattr_t ca;

    if (conf == NULL) {
        esbulk__errstr(errstr, errstr_size, "conf must not be NULL");
        return NULL;
    }
    eb = calloc(1, sizeof(*eb));
    if (eb == NULL || (eb->conf = esbulk_conf_dup(conf)) == NULL) {
        free(eb);
        esbulk__errstr(errstr, errstr_size, "out of memory");
        return NULL;
    }
    eb->log.cb = conf->log_cb;
    eb->log.opaque = conf->opaque;
    eb->log.level = (int32_t)esbulk__conf_int(conf, ESBULK__C_LOG_LEVEL);
    if (eb->log.cb == NULL) {
        /* no callback: the lines wait for esbulk_log_take() */
        if ((eb->logq = esbulk__logq_new()) == NULL) {
            esbulk__errstr(errstr, errstr_size, "out of memory");
            goto fail;
        }
        eb->log.cb = esbulk__logq_push;
        eb->log.opaque = eb->logq;
    }
    eb->node_tag = random_tag();
    if (esbulk__conf_int(conf, ESBULK__C_MALLOC_TUNE))
        (void)pthread_once(&malloc_raise_once, malloc_raise);
    if (esbulk__urls_parse(esbulk__conf_str(conf, ESBULK__C_URLS), &eb->seeds, &eb->nseeds, &user,
                           &pass, errstr, errstr_size) != ESBULK_OK)
        goto fail;
    if (esbulk__http_opts_init(&eb->http, conf, user, pass, errstr, errstr_size) != ESBULK_OK)
        goto fail;
    if ((eb->topo = esbulk_topology_new(conf, errstr, errstr_size)) == NULL)
        goto fail;
    esbulk__topology_set_log(eb->topo, &eb->log);
    if ((eb->dm = esbulk__docmem_new()) == NULL) {
        esbulk__errstr(errstr, errstr_size, "out of memory");
        goto fail;
    }
    {
        size_t fd = (size_t)esbulk__conf_int(eb->conf, ESBULK__C_FLUSH_DOCS);
        size_t fb = (size_t)esbulk__conf_int(eb->conf, ESBULK__C_FLUSH_BYTES);

        /* the I/O thread is woken once per this many documents or bytes
         * (fewer wake-ups than adds: each is a system call) */
        eb->wake_docs = fd < WAKE_DOCS ? fd : WAKE_DOCS;
        eb->wake_bytes = fb < WAKE_BYTES ? fb : WAKE_BYTES;
        eb->wake_interval_ms = esbulk__conf_int(eb->conf, ESBULK__C_FLUSH_INTERVAL_MS);
        /* buffer.max.docs=0: sized by the seeds until the I/O thread knows
         * the cluster (esbulk__handoff_buffer_docs) */
        eb->max_docs = (size_t)esbulk__conf_int(eb->conf, ESBULK__C_BUFFER_MAX_DOCS);
        eb->max_docs_auto = eb->max_docs == 0;
        if (eb->max_docs_auto)
            eb->max_docs = esbulk__buffer_docs_for(
                (size_t)eb->nseeds, 0,
                (int)esbulk__conf_int(eb->conf, ESBULK__C_MAX_INFLIGHT_PER_NODE), fd);
    }
    pthread_mutex_init(&eb->lock, NULL);
    pthread_mutex_init(&eb->auth_update_lock, NULL);
    esbulk__place_init(&eb->place,
                       esbulk__conf_int(conf, ESBULK__C_ROUTING_LEVEL) == ESBULK__ROUTING_OFF &&
                           esbulk__conf_int(conf, ESBULK__C_ORDERING) != ESBULK__ORDER_PER_ID,
                       esbulk__conf_int(conf, ESBULK__C_ROUTING_LEVEL) == ESBULK__ROUTING_NODE &&
                           esbulk__conf_int(conf, ESBULK__C_ORDERING) != ESBULK__ORDER_PER_ID);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&eb->cond_space, &ca);
    pthread_cond_init(&eb->cond_results, &ca);
    pthread_condattr_destroy(&ca);
    if (esbulk__io_start(eb, errstr, errstr_size) != ESBULK_OK) {
        esbulk__place_destroy(&eb->place);
        pthread_mutex_destroy(&eb->lock);
        pthread_mutex_destroy(&eb->auth_update_lock);
        pthread_cond_destroy(&eb->cond_space);
        pthread_cond_destroy(&eb->cond_results);
        goto fail;
    }
    free(user);
    esbulk__wipe_str(pass);
    free(pass);
    return eb;
fail:
    free(user);
    esbulk__wipe_str(pass);
    free(pass);
    esbulk_topology_destroy(eb->topo);
    esbulk__docmem_destroy(eb->dm);
    esbulk__http_opts_free(&eb->http);
    esbulk__urls_free(eb->seeds, eb->nseeds);
    esbulk_conf_destroy(eb->conf);
    esbulk__logq_free(eb->logq);
    free(eb);
    return NULL;
}

/* ------------------------------------------------------------------------- */
/* Serving calls, and what a callback may not do */

/* A serving call (esbulk_poll, esbulk_flush, esbulk_close, esbulk_destroy)
 * in progress: on the call's stack, and on eb->callers for the call's whole
 * duration. Callbacks run only inside such a call, on its thread, so "this
 * thread has a frame on eb" means "called from inside one of eb's
 * callbacks" (or from the log callback on that thread): the header forbids
 * poll, flush and close there, and destroy there is deferred to the frame. */
struct esbulk__caller_s {
    struct esbulk__caller_s *next;
    pthread_t thread;
    int32_t served; /* results this call served */
    int destroy;    /* this call closes and frees the handle before it returns */
};
typedef struct esbulk__caller_s caller_t;

/* This thread's frame on eb, NULL if none. Caller holds eb->lock. */
static caller_t *caller_self(esbulk_t *eb)
{
    pthread_t self = pthread_self();
    caller_t *c;

    for (c = eb->callers; c != NULL; c = c->next)
        if (pthread_equal(c->thread, self))
            return c;
    return NULL;
}

/* Registers c as this thread's frame. Caller holds eb->lock. */
static void caller_push(esbulk_t *eb, caller_t *c)
{
    c->thread = pthread_self();
    c->served = 0;
    c->destroy = 0;
    c->next = eb->callers;
    eb->callers = c;
}

/* Registers c as this thread's serving call; ESBULK_ERR_IN_CALLBACK when the
 * thread is inside one already (in a callback): nothing is registered. */
static esbulk_err_t caller_enter(esbulk_t *eb, caller_t *c)
{
    esbulk_err_t err = ESBULK_ERR_IN_CALLBACK;

    pthread_mutex_lock(&eb->lock);
    if (caller_self(eb) == NULL) {
        caller_push(eb, c);
        err = ESBULK_OK;
    }
    pthread_mutex_unlock(&eb->lock);
    return err;
}

static int destroy_requested(esbulk_t *eb)
{
    int r;

    pthread_mutex_lock(&eb->lock);
    r = eb->destroy_deferred;
    pthread_mutex_unlock(&eb->lock);
    return r;
}

static esbulk_err_t close_call(esbulk_t *eb, int32_t timeout_ms);
static void handle_free(esbulk_t *eb);

/* Ends the serving call c. If c is to destroy the handle, closes it first
 * with timeout 0 (the documents left get ESBULK_ERR_CLOSED results, served
 * through the callbacks while c is still registered, so that they cannot
 * re-enter), waits for other threads' serving calls to return (they stop
 * waiting once a destroy is requested), and frees it. Returns 1 when eb was
 * freed. */
static int caller_leave(esbulk_t *eb, caller_t *c)
{
    caller_t **pp;
    int destroy = c->destroy;

    if (destroy)
        close_call(eb, 0);
    pthread_mutex_lock(&eb->lock);
    for (pp = &eb->callers; *pp != c; pp = &(*pp)->next)
        ;
    *pp = c->next;
    if (eb->destroy_deferred) {
        pthread_cond_broadcast(&eb->cond_results);
        while (destroy && eb->callers != NULL)
            pthread_cond_wait(&eb->cond_results, &eb->lock);
    }
    pthread_mutex_unlock(&eb->lock);
    if (destroy)
        handle_free(eb);
    return destroy;
}

/* ------------------------------------------------------------------------- */
/* Adding */

static void deadline_from_now(struct timespec *ts, int64_t ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (ms % 1000) * 1000000;
    if (ts->tv_nsec >= 1000000000) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000;
    }
}

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

/* ESBULK_ERR_QUEUE_FULL, said. Caller holds eb->lock. */
static esbulk_err_t queue_full(esbulk_t *eb, size_t max_bytes, char *errstr, size_t errstr_size)
{
    esbulk__errstr(errstr, errstr_size, "queue full: %zu document%s, %zu bytes buffered "
                   "(buffer.max.docs %zu, buffer.max.bytes %zu)", eb->buffered_docs,
                   eb->buffered_docs == 1 ? "" : "s", eb->buffered_bytes, eb->max_docs,
                   max_bytes);
    return ESBULK_ERR_QUEUE_FULL;
}

/* ESBULK_ERR_QUEUE_FULL before a document is built, when the buffer is
 * full by its count and the add would not wait (enqueue.timeout.ms 0, or a
 * callback): building it (its body checked and copied) cost every retry of
 * a caller waiting for room as much as an add, 46 us for 1 MiB. Looked at
 * only while an add found the buffer full and nothing was freed since. */
static esbulk_err_t full_now(esbulk_t *eb, char *errstr, size_t errstr_size)
{
    esbulk_err_t err = ESBULK_OK;

    if (!atomic_load_explicit(&eb->buffer_full, memory_order_relaxed))
        return ESBULK_OK;
    pthread_mutex_lock(&eb->lock);
    if (!eb->closing && !eb->closed && eb->buffered_docs > 0 &&
        eb->buffered_docs + 1 > eb->max_docs &&
        (esbulk__conf_int(eb->conf, ESBULK__C_ENQUEUE_TIMEOUT_MS) == 0 || caller_self(eb) != NULL))
        err = queue_full(eb, (size_t)esbulk__conf_int(eb->conf, ESBULK__C_BUFFER_MAX_BYTES),
                         errstr, errstr_size);
    pthread_mutex_unlock(&eb->lock);
    return err;
}

/* Queues docs[0..n) in order under one lock, each waiting for space as
 * enqueue.timeout.ms allows. *done gets how many were queued (those are
 * the caller's no more); on an error docs[*done..n) are still the
 * caller's. */
static esbulk_err_t doc_enqueue_n(esbulk_t *eb, esbulk__doc_t *const *docs, size_t n,
                                  size_t *done, char *errstr, size_t errstr_size)
{
    size_t max_bytes = (size_t)esbulk__conf_int(eb->conf, ESBULK__C_BUFFER_MAX_BYTES);
    int64_t wait_ms = esbulk__conf_int(eb->conf, ESBULK__C_ENQUEUE_TIMEOUT_MS);
    int64_t dt = esbulk__conf_int(eb->conf, ESBULK__C_DELIVERY_TIMEOUT_MS);
    esbulk_err_t err = ESBULK_OK;
    struct timespec until;
    int wake;
    size_t i;
    int64_t now_ms = esbulk__now_ms_coarse();

    *done = 0;
    pthread_mutex_lock(&eb->lock);
    /* inside a callback only this thread could free space: never wait */
    if (caller_self(eb) != NULL)
        wait_ms = 0;
    for (i = 0; i < n && err == ESBULK_OK; i++) {
        esbulk__doc_t *d = docs[i];
        int waiting = 0;

        for (;;) {
            if (eb->closing || eb->closed) {
                esbulk__errstr(errstr, errstr_size, "the handle is closing");
                err = ESBULK_ERR_CLOSED;
                break;
            }
            /* one document always fits in an empty buffer */
            if ((eb->buffered_docs == 0 || eb->buffered_bytes + d->body_bytes <= max_bytes) &&
                eb->buffered_docs + 1 <= eb->max_docs)
                break;
            /* full: what is buffered goes now rather than at flush.docs or
             * flush.interval.ms (the I/O thread sees the buffer full), this
             * call's documents so far included */
            if (!eb->buffer_full || i > 0) {
                eb->buffer_full = 1;
                esbulk__io_wakeup(eb);
            }
            if (wait_ms > 0 && !waiting)
                deadline_from_now(&until, wait_ms);
            waiting = 1;
            if (wait_ms == 0 || (wait_ms > 0 && pthread_cond_timedwait(&eb->cond_space, &eb->lock,
                                                                      &until) == ETIMEDOUT)) {
                err = queue_full(eb, max_bytes, errstr, errstr_size);
                break;
            }
            if (wait_ms < 0)
                pthread_cond_wait(&eb->cond_space, &eb->lock);
        }
        if (err != ESBULK_OK)
            break;
        d->seq = eb->next_seq++;
        d->queued_ms = waiting ? esbulk__now_ms() : now_ms;
        d->deadline_ms = dt > 0 ? d->queued_ms + dt : 0;
        eb->live++;
        eb->buffered_bytes += d->body_bytes;
        eb->buffered_docs++;
        eb->stats.added++;
        esbulk__queue_push_ahead(&eb->incoming, &eb->incoming_ahead, d);
        (*done)++;
    }
    /* wake the I/O thread only when it would look too late by itself: it
     * looks at incoming before it sleeps, and publishes when it wakes */
    wake = *done > 0 && eb->io_sleep_until != 0 &&
           (eb->io_sleep_until > docs[0]->queued_ms + eb->wake_interval_ms ||
            eb->incoming.count >= eb->wake_docs || eb->incoming.bytes >= eb->wake_bytes);
    if (wake)
        eb->io_sleep_until = 0;
    pthread_mutex_unlock(&eb->lock);
    if (wake)
        esbulk__io_wakeup(eb);
    return err;
}

static esbulk_err_t doc_enqueue(esbulk_t *eb, esbulk__doc_t *d, char *errstr, size_t errstr_size)
{
    size_t done;

    return doc_enqueue_n(eb, &d, 1, &done, errstr, errstr_size);
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
    if ((err = full_now(eb, errstr, errstr_size)) != ESBULK_OK)
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

/* Documents a batch call builds before it queues them under one lock. */
#define ADD_CHUNK 64

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
        if ((err = full_now(eb, errstr, errstr_size)) != ESBULK_OK)
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
        err = n > 0 ? doc_enqueue_n(eb, chunk, n, &done, errstr, errstr_size) : ESBULK_OK;
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

/* ------------------------------------------------------------------------- */
/* Serving results */

/* Calls the statistics callback when stats.interval.ms has passed. Runs on
 * the serving thread like the other callbacks. */
static void maybe_stats(esbulk_t *eb)
{
    int64_t iv = esbulk__conf_int(eb->conf, ESBULK__C_STATS_INTERVAL_MS), now;
    char *json;

    if (eb->conf->stats_cb == NULL || iv <= 0 || destroy_requested(eb))
        return; /* no statistics for a handle the program has destroyed */
    now = esbulk__now_ms();
    if (eb->next_stats_ms == 0)
        eb->next_stats_ms = now + iv;
    if (now < eb->next_stats_ms)
        return;
    eb->next_stats_ms = now + iv;
    json = esbulk_stats_json(eb);
    if (json != NULL)
        eb->conf->stats_cb(eb, json, strlen(json), eb->conf->opaque);
    esbulk_free(json);
}

/* Milliseconds until the statistics callback is due (INT32_MAX: never). */
static int64_t stats_due_in(esbulk_t *eb)
{
    int64_t iv = esbulk__conf_int(eb->conf, ESBULK__C_STATS_INTERVAL_MS), now;

    if (eb->conf->stats_cb == NULL || iv <= 0)
        return INT32_MAX;
    now = esbulk__now_ms();
    return eb->next_stats_ms == 0 ? iv : (eb->next_stats_ms > now ? eb->next_stats_ms - now : 0);
}

/* A handle with neither a result nor a results callback keeps its results
 * for esbulk_poll_results(): serving calls only note that their outcome is
 * known (the conf is the handle's own copy: this never changes). */
static int pull_mode(const esbulk_t *eb)
{
    return eb->conf->result_cb == NULL && eb->conf->results_cb == NULL;
}

/* A pull handle's serving: the results queued now become pullable and count
 * as served (their outcome is known: a flush or close need not wait for
 * them); they keep counting against buffer.max.docs until released. */
static void pull_absorb(esbulk_t *eb)
{
    pthread_mutex_lock(&eb->lock);
    esbulk__live_done_list(eb, eb->results.head, eb->results.count);
    esbulk__queue_append(&eb->pull_ready, &eb->results);
    pthread_mutex_unlock(&eb->lock);
}

/* Serves what is queued now; returns how many. Caller does not hold lock. */
static int32_t serve(esbulk_t *eb)
{
    esbulk__queue_t q;
    esbulk__doc_t *d;
    const esbulk_result_t *batch[RESULTS_BATCH];
    size_t n = 0;
    int32_t served = 0;

    maybe_stats(eb);
    if (pull_mode(eb)) {
        pull_absorb(eb);
        return 0;
    }
    pthread_mutex_lock(&eb->lock);
    q = eb->results;
    memset(&eb->results, 0, sizeof(eb->results));
    /* served documents stop counting against buffer.max.docs before their
     * callbacks run, so that a callback can re-queue without waiting */
    eb->buffered_docs -= q.count;
    if (q.count > 0)
        eb->buffer_full = 0; /* room again: an add that still finds none says so */
    if (q.count > 0)
        pthread_cond_broadcast(&eb->cond_space);
    pthread_mutex_unlock(&eb->lock);
    if (q.head == NULL)
        return 0;

    /* RESULTS_BATCH at a time: their callbacks, then their records given
     * back while still in cache (an answer's thousands of records were
     * walked twice, and the second walk missed the cache at each) */
    d = q.head;
    while (d != NULL) {
        esbulk__doc_t *first = d, *last = d;
        caller_t *c;
        size_t i;

        for (n = 0; d != NULL && n < RESULTS_BATCH; d = d->next) {
            /* the lines the callbacks, the marks and the free read, written
             * on the I/O thread */
            esbulk__doc_prefetch_ahead(d, 3, 0);
            batch[n++] = d;
            last = d;
        }
        last->next = NULL;
        if (eb->conf->results_cb != NULL)
            eb->conf->results_cb(eb, batch, n, eb->conf->opaque);
        else if (eb->conf->result_cb != NULL)
            for (i = 0; i < n; i++)
                eb->conf->result_cb(eb, batch[i], eb->conf->opaque);
        pthread_mutex_lock(&eb->lock);
        esbulk__live_done_list(eb, first, n);
        if ((c = caller_self(eb)) != NULL)
            c->served += (int32_t)n;
        pthread_mutex_unlock(&eb->lock);
        esbulk__doc_free_list(first);
        served += (int32_t)n;
    }
    return served;
}

/* Waits until results are queued, a destroy is requested, or the deadline
 * (NULL: forever) passes. Returns 0 when no result is queued. */
static int wait_results(esbulk_t *eb, const struct timespec *until)
{
    int rc = 0;

    pthread_mutex_lock(&eb->lock);
    while (eb->results.head == NULL && !eb->destroy_deferred && rc != ETIMEDOUT) {
        if (until == NULL)
            pthread_cond_wait(&eb->cond_results, &eb->lock);
        else
            rc = pthread_cond_timedwait(&eb->cond_results, &eb->lock, until);
    }
    rc = eb->results.head != NULL;
    pthread_mutex_unlock(&eb->lock);
    return rc;
}

/* Results a pull handle holds ready to pull. */
static size_t pull_ready_count(esbulk_t *eb)
{
    size_t n;

    pthread_mutex_lock(&eb->lock);
    n = eb->pull_ready.count;
    pthread_mutex_unlock(&eb->lock);
    return n;
}

/* esbulk_poll's serving; stops waiting once a destroy is requested. A pull
 * handle's poll serves nothing: it returns once results are ready to pull. */
static void poll_serve(esbulk_t *eb, int32_t timeout_ms)
{
    struct timespec until;

    if (serve(eb) > 0 || timeout_ms == 0 || pull_ready_count(eb) > 0)
        return;
    while (!destroy_requested(eb)) {
        /* wake for the statistics callback too, if it falls due first */
        int64_t due = stats_due_in(eb), wait = timeout_ms < 0 ? due : (due < timeout_ms ? due : timeout_ms);
        int stats_first = wait == due && wait != INT32_MAX;

        if (wait == INT32_MAX) {
            wait_results(eb, NULL);
        } else {
            deadline_from_now(&until, wait);
            wait_results(eb, &until);
        }
        if (serve(eb) > 0 || !stats_first || pull_ready_count(eb) > 0)
            return;
        if (timeout_ms > 0 && (timeout_ms -= (int32_t)wait) <= 0)
            return;
    }
}

int32_t esbulk_poll(esbulk_t *eb, int32_t timeout_ms)
{
    caller_t self;

    if (eb == NULL)
        return ESBULK_ERR_INVALID_ARG;
    if (caller_enter(eb, &self) != ESBULK_OK)
        return ESBULK_ERR_IN_CALLBACK;
    poll_serve(eb, timeout_ms);
    caller_leave(eb, &self); /* may free eb (a callback destroyed it) */
    return self.served;
}

/* Serves results until every document m counts is served, or the deadline
 * passes (ESBULK_ERR_TIMED_OUT), or a destroy is requested
 * (ESBULK_ERR_CLOSED). */
static esbulk_err_t drain(esbulk_t *eb, const esbulk__mark_t *m, int32_t timeout_ms)
{
    int64_t end = timeout_ms >= 0 ? esbulk__now_ms() + timeout_ms : INT64_MAX;

    for (;;) {
        int done, stop;
        int64_t now, left;
        struct timespec until;

        serve(eb);
        pthread_mutex_lock(&eb->lock);
        done = m->left == 0;
        stop = eb->destroy_deferred;
        pthread_mutex_unlock(&eb->lock);
        if (done)
            return ESBULK_OK;
        if (stop)
            return ESBULK_ERR_CLOSED;
        now = esbulk__now_ms();
        if (now >= end)
            return ESBULK_ERR_TIMED_OUT;
        left = end - now < 100 ? end - now : 100;
        deadline_from_now(&until, left);
        wait_results(eb, &until);
    }
}

esbulk_err_t esbulk_flush(esbulk_t *eb, int32_t timeout_ms)
{
    caller_t self;
    esbulk_err_t err;
    esbulk__mark_t mark;

    if (eb == NULL)
        return ESBULK_ERR_INVALID_ARG;
    if (caller_enter(eb, &self) != ESBULK_OK)
        return ESBULK_ERR_IN_CALLBACK;
    pthread_mutex_lock(&eb->lock);
    eb->flushers++;
    esbulk__mark_add(eb, &mark);
    /* and the handle's own: these go at once until served, even if this
     * call times out */
    esbulk__mark_remove(eb, &eb->force_mark);
    esbulk__mark_add(eb, &eb->force_mark);
    pthread_mutex_unlock(&eb->lock);
    esbulk__io_wakeup(eb);
    err = drain(eb, &mark, timeout_ms);
    pthread_mutex_lock(&eb->lock);
    esbulk__mark_remove(eb, &mark);
    eb->flushers--;
    pthread_mutex_unlock(&eb->lock);
    if (caller_leave(eb, &self))
        err = ESBULK_ERR_CLOSED; /* a callback destroyed the handle */
    return err;
}

/* esbulk_close inside a serving call. */
static esbulk_err_t close_call(esbulk_t *eb, int32_t timeout_ms)
{
    esbulk_err_t err;
    esbulk__mark_t mark;

    pthread_mutex_lock(&eb->lock);
    if (eb->closed) {
        pthread_mutex_unlock(&eb->lock);
        return ESBULK_OK;
    }
    eb->closing = 1;
    eb->flushers++;
    esbulk__mark_add(eb, &mark);
    pthread_mutex_unlock(&eb->lock);
    esbulk__io_wakeup(eb);
    err = drain(eb, &mark, timeout_ms);
    /* Whatever is left gets "not delivered: closed" from the I/O thread,
     * which then exits. */
    pthread_mutex_lock(&eb->lock);
    eb->abort_all = 1;
    eb->terminate = 1;
    pthread_mutex_unlock(&eb->lock);
    esbulk__io_wakeup(eb);
    esbulk__io_join(eb);
    /* the I/O thread gave every document it held a result before exiting */
    serve(eb);
    pthread_mutex_lock(&eb->lock);
    esbulk__mark_remove(eb, &mark);
    if (eb->live != 0)
        esbulk__log(&eb->log, ESBULK_LOG_ERR, "close",
                    "internal error: documents without a result after close");
    eb->flushers--;
    eb->closed = 1;
    pthread_cond_broadcast(&eb->cond_results); /* a puller stops waiting: nothing comes */
    pthread_mutex_unlock(&eb->lock);
    return err;
}

esbulk_err_t esbulk_close(esbulk_t *eb, int32_t timeout_ms)
{
    caller_t self;
    esbulk_err_t err;

    if (eb == NULL)
        return ESBULK_ERR_INVALID_ARG;
    if (caller_enter(eb, &self) != ESBULK_OK)
        return ESBULK_ERR_IN_CALLBACK;
    err = close_call(eb, timeout_ms);
    if (caller_leave(eb, &self))
        err = ESBULK_ERR_CLOSED; /* a callback destroyed the handle */
    return err;
}

/* From a callback, the destroy is deferred: the handle is marked closing
 * (adds fail with ESBULK_ERR_CLOSED), the serving call that ran the callback
 * stops waiting, finishes delivering what it took, and closes (timeout 0)
 * and frees the handle before it returns. Otherwise it is that same close
 * and free, at once, in a serving call of its own. */
void esbulk_destroy(esbulk_t *eb)
{
    caller_t self, *c;

    if (eb == NULL)
        return;
    pthread_mutex_lock(&eb->lock);
    c = caller_self(eb);
    if (c == NULL) {
        c = &self;
        caller_push(eb, c);
    }
    if (!eb->destroy_deferred) { /* a second destroy adds nothing */
        eb->destroy_deferred = 1;
        c->destroy = 1;
    }
    eb->closing = 1;
    pthread_cond_broadcast(&eb->cond_space);
    pthread_cond_broadcast(&eb->cond_results);
    pthread_mutex_unlock(&eb->lock);
    if (c == &self)
        caller_leave(eb, &self);
}

static void handle_free(esbulk_t *eb)
{
    esbulk__doc_t *d;
    size_t unpulled = eb->pull_ready.count + eb->results.count;

    /* a pull handle's results never pulled, and the batch not released */
    if (unpulled > 0)
        esbulk__log(&eb->log, ESBULK_LOG_NOTICE, "destroy",
                    "%zu results were never pulled (esbulk_poll_results)", unpulled);
    esbulk__queue_append(&eb->pull_ready, &eb->results);
    esbulk__queue_append(&eb->pull_ready, &eb->pull_held);
    while ((d = esbulk__queue_pop(&eb->pull_ready)) != NULL)
        esbulk__doc_free(d);
    esbulk__docmem_destroy(eb->dm); /* every document is freed */
    esbulk_topology_destroy(eb->topo);
    esbulk__http_opts_free(&eb->http);
    esbulk__urls_free(eb->seeds, eb->nseeds);
    free(eb->node_stats);
    esbulk__place_destroy(&eb->place);
    pthread_mutex_destroy(&eb->lock);
    pthread_mutex_destroy(&eb->auth_update_lock);
    pthread_cond_destroy(&eb->cond_space);
    pthread_cond_destroy(&eb->cond_results);
    esbulk_conf_destroy(eb->conf);
    esbulk__logq_free(eb->logq);
    free(eb);
}

/* ------------------------------------------------------------------------- */
/* Log lines */

int32_t esbulk_log_take(esbulk_t *eb, int32_t *level, char *facility, size_t facility_size,
                        char *message, size_t message_size)
{
    if (eb == NULL || level == NULL || message == NULL || message_size == 0 ||
        (facility == NULL && facility_size > 0))
        return ESBULK_ERR_INVALID_ARG;
    if (eb->logq == NULL)
        return 0; /* a log callback takes every line */
    return esbulk__logq_take(eb->logq, level, facility, facility_size, message, message_size);
}

/* ------------------------------------------------------------------------- */
/* Pulling results */

/* Moves up to max results into the held batch and out[]: those a serving
 * call made pullable first (they are older), then the queue. Caller holds
 * eb->lock. */
static int32_t pull_take(esbulk_t *eb, const esbulk_result_t **out, size_t max)
{
    esbulk__doc_t *d;
    size_t n = 0;

    while (n < max && (d = esbulk__queue_pop(&eb->pull_ready)) != NULL) {
        esbulk__queue_push(&eb->pull_held, d);
        out[n++] = d;
    }
    while (n < max && (d = esbulk__queue_pop(&eb->results)) != NULL) {
        esbulk__live_done(eb, d); /* delivered: a flush on another thread need not wait */
        esbulk__queue_push(&eb->pull_held, d);
        out[n++] = d;
    }
    return (int32_t)n;
}

/* Registers a frame like the serving calls (so that a callback's call is
 * refused, and a deferred destroy waits for this call to return), but runs
 * no callback and serves nothing: it only takes. */
int32_t esbulk_poll_results(esbulk_t *eb, const esbulk_result_t **out, size_t max,
                            int32_t timeout_ms)
{
    caller_t self;
    struct timespec until;
    int32_t n = 0;
    int rc = 0;

    if (eb == NULL || out == NULL || max == 0)
        return ESBULK_ERR_INVALID_ARG;
    if (max > INT32_MAX)
        max = INT32_MAX;
    if (caller_enter(eb, &self) != ESBULK_OK)
        return ESBULK_ERR_IN_CALLBACK;
    if (timeout_ms > 0)
        deadline_from_now(&until, timeout_ms);
    pthread_mutex_lock(&eb->lock);
    if (eb->pull_held.count > 0) {
        n = ESBULK_ERR_RESULTS_HELD;
    } else {
        for (;;) {
            if (eb->destroy_deferred) {
                n = ESBULK_ERR_CLOSED;
                break;
            }
            n = pull_take(eb, out, max);
            /* a closed handle's I/O thread is gone: nothing more can come */
            if (n > 0 || timeout_ms == 0 || eb->closed || rc == ETIMEDOUT)
                break;
            if (timeout_ms < 0)
                pthread_cond_wait(&eb->cond_results, &eb->lock);
            else
                rc = pthread_cond_timedwait(&eb->cond_results, &eb->lock, &until);
        }
    }
    pthread_mutex_unlock(&eb->lock);
    caller_leave(eb, &self);
    return n;
}

/* Refused from a callback: the batch belongs to the program's poller, which
 * may be reading it around the serving call that runs the callback. */
esbulk_err_t esbulk_results_release(esbulk_t *eb)
{
    esbulk__queue_t q;
    esbulk__doc_t *d;

    if (eb == NULL)
        return ESBULK_ERR_INVALID_ARG;
    pthread_mutex_lock(&eb->lock);
    if (caller_self(eb) != NULL) {
        pthread_mutex_unlock(&eb->lock);
        return ESBULK_ERR_IN_CALLBACK;
    }
    q = eb->pull_held;
    memset(&eb->pull_held, 0, sizeof(eb->pull_held));
    /* released documents stop counting against buffer.max.docs */
    eb->buffered_docs -= q.count;
    if (q.count > 0)
        eb->buffer_full = 0; /* room again: an add that still finds none says so */
    if (q.count > 0)
        pthread_cond_broadcast(&eb->cond_space);
    pthread_mutex_unlock(&eb->lock);
    while ((d = esbulk__queue_pop(&q)) != NULL)
        esbulk__doc_free(d);
    return ESBULK_OK;
}

esbulk_err_t esbulk_auth_update(esbulk_t *eb, const esbulk_conf_t *conf, char *errstr,
                               size_t errstr_size)
{
    esbulk__http_opts_t fresh[2];
    const char *kind;
    int i;

    if (eb == NULL || conf == NULL) {
        esbulk__errstr(errstr, errstr_size, "%s is NULL", eb == NULL ? "handle" : "conf");
        return ESBULK_ERR_INVALID_ARG;
    }
    /* one copy for the I/O thread's requests, one for the topology's */
    for (i = 0; i < 2; i++) {
        esbulk_err_t err = esbulk__http_opts_init(&fresh[i], conf, NULL, NULL, errstr,
                                                  errstr_size);
        if (err != ESBULK_OK) {
            if (i > 0)
                esbulk__http_opts_free(&fresh[0]);
            return err;
        }
    }
    /* updates one at a time: the kind is read, then the credentials swapped */
    pthread_mutex_lock(&eb->auth_update_lock);
    kind = esbulk__http_auth_kind(&eb->http);
    if (strcmp(kind, esbulk__http_auth_kind(&fresh[0])) != 0) {
        esbulk__errstr(errstr, errstr_size, "the handle authenticates with %s; the update "
                       "gives %s: the kind of credentials cannot change on a live handle", kind,
                       esbulk__http_auth_kind(&fresh[0]));
        pthread_mutex_unlock(&eb->auth_update_lock);
        esbulk__http_opts_free(&fresh[0]);
        esbulk__http_opts_free(&fresh[1]);
        return ESBULK_ERR_INVALID_ARG;
    }
    esbulk__http_auth_swap(&eb->http, &fresh[0]);
    esbulk__http_auth_swap(esbulk__topology_http(eb->topo), &fresh[1]);
    pthread_mutex_unlock(&eb->auth_update_lock);
    /* the old ones, wiped */
    esbulk__http_opts_free(&fresh[0]);
    esbulk__http_opts_free(&fresh[1]);
    return ESBULK_OK;
}

esbulk_err_t esbulk_request(esbulk_t *eb, const char *method, const char *path,
                           const char *body, size_t body_len, int32_t timeout_ms, int32_t *status,
                           char **response, size_t *response_len, char *errstr,
                           size_t errstr_size)
{
    static const char *const methods[] = {"GET", "HEAD", "PUT", "POST", "DELETE"};
    esbulk_err_t err = ESBULK_ERR_TRANSPORT;
    const char *why;
    esbulk__buf_t answer;
    size_t i, known = 0;
    int s;

    if (response != NULL)
        *response = NULL;
    if (response_len != NULL)
        *response_len = 0;
    if (status != NULL)
        *status = 0;
    if (eb == NULL || method == NULL || path == NULL || status == NULL) {
        esbulk__errstr(errstr, errstr_size, "%s is NULL", eb == NULL ? "handle"
                       : method == NULL ? "method" : path == NULL ? "path" : "status");
        return ESBULK_ERR_INVALID_ARG;
    }
    for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
        known |= strcmp(method, methods[i]) == 0;
    why = !known                              ? "method: GET, HEAD, PUT, POST or DELETE"
          : path[0] != '/'                    ? "path: it starts with '/'"
          : strpbrk(path, " \r\n") != NULL    ? "path: no blank or line break (percent-encode them)"
          : timeout_ms < 0                    ? "timeout_ms is negative"
          : body != NULL && !strcmp(method, "HEAD") ? "a HEAD request has no body"
                                              : NULL;
    if (why != NULL) {
        esbulk__errstr(errstr, errstr_size, "%s", why);
        return ESBULK_ERR_INVALID_ARG;
    }
    esbulk__buf_init(&answer, eb->http.response_max_bytes);
    for (s = 0; s < eb->nseeds && err == ESBULK_ERR_TRANSPORT; s++) {
        size_t n = strlen(eb->seeds[s].base) + strlen(path) + 1;
        char *url = malloc(n);
        long st = 0;

        if (url == NULL) {
            err = ESBULK_ERR_NOMEM;
            esbulk__errstr(errstr, errstr_size, "out of memory");
            break;
        }
        snprintf(url, n, "%s%s", eb->seeds[s].base, path);
        err = esbulk__http_request(&eb->http, method, url, body ? "application/json" : NULL,
                                   body, body_len, timeout_ms, &st, &answer, errstr, errstr_size);
        free(url);
        *status = (int32_t)st;
    }
    if (err == ESBULK_OK && response != NULL) {
        *response = malloc(answer.len + 1);
        if (*response == NULL) {
            err = ESBULK_ERR_NOMEM;
            esbulk__errstr(errstr, errstr_size, "out of memory");
        } else {
            if (answer.len > 0)
                memcpy(*response, answer.data, answer.len);
            (*response)[answer.len] = '\0';
            if (response_len != NULL)
                *response_len = answer.len;
        }
    }
    esbulk__buf_free(&answer);
    return err;
}

int64_t esbulk_pending(esbulk_t *eb)
{
    int64_t n;

    if (eb == NULL)
        return 0;
    pthread_mutex_lock(&eb->lock);
    n = (int64_t)eb->buffered_docs;
    pthread_mutex_unlock(&eb->lock);
    return n;
}

char *esbulk_stats_json(esbulk_t *eb)
{
    json_t *root, *nodes = NULL;
    char *out;

    if (eb == NULL)
        return NULL;
    root = json_object();
    if (root == NULL)
        return NULL;
    pthread_mutex_lock(&eb->lock);
#define STAT(name) json_object_set_new(root, #name, json_integer((json_int_t)eb->stats.name))
    STAT(added);
    STAT(indexed);
    STAT(failed);
    STAT(possibly);
    STAT(retried);
    STAT(unrouted);
    STAT(requests);
    STAT(http_429);
    STAT(item_429);
    STAT(split_413);
    STAT(split_400);
    STAT(expired);
    STAT(closed);
    STAT(fetches);
    STAT(http_handles);
    STAT(indices);
    STAT(destinations);
#undef STAT
    json_object_set_new(root, "bytes_uncompressed", json_integer((json_int_t)eb->stats.bytes_raw));
    json_object_set_new(root, "bytes_sent", json_integer((json_int_t)eb->stats.bytes_sent));
    json_object_set_new(root, "pending", json_integer((json_int_t)eb->buffered_docs));
    json_object_set_new(root, "buffered_bytes", json_integer((json_int_t)eb->buffered_bytes));
    json_object_set_new(root, "buffer_max_docs", json_integer((json_int_t)eb->max_docs));
    if (eb->node_stats != NULL)
        nodes = json_loads(eb->node_stats, 0, NULL);
    pthread_mutex_unlock(&eb->lock);
    json_object_set_new(root, "nodes", nodes ? nodes : json_array());
    out = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    return out;
}
