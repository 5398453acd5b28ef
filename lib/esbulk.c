/* The handle's life: esbulk_new, flush, close and destroy, and the calls
 * beside the documents' (log lines, credentials, a request of the program's
 * own, statistics). Adding is add.c's, serving serve.c's, the I/O thread
 * io.c's. */
#include "docmem.h"
#include "engine.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

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
/* Flush, close, destroy */

esbulk_err_t esbulk_flush(esbulk_t *eb, int32_t timeout_ms)
{
    esbulk__caller_t self;
    esbulk_err_t err;
    esbulk__mark_t mark;

    if (eb == NULL)
        return ESBULK_ERR_INVALID_ARG;
    if (esbulk__caller_enter(eb, &self) != ESBULK_OK)
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
    err = esbulk__drain(eb, &mark, timeout_ms);
    pthread_mutex_lock(&eb->lock);
    esbulk__mark_remove(eb, &mark);
    eb->flushers--;
    pthread_mutex_unlock(&eb->lock);
    if (esbulk__caller_leave(eb, &self))
        err = ESBULK_ERR_CLOSED; /* a callback destroyed the handle */
    return err;
}

/* esbulk_close inside a serving call. */
esbulk_err_t esbulk__close_call(esbulk_t *eb, int32_t timeout_ms)
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
    err = esbulk__drain(eb, &mark, timeout_ms);
    /* Whatever is left gets "not delivered: closed" from the I/O thread,
     * which then exits. */
    pthread_mutex_lock(&eb->lock);
    eb->abort_all = 1;
    eb->terminate = 1;
    pthread_mutex_unlock(&eb->lock);
    esbulk__io_wakeup(eb);
    esbulk__io_join(eb);
    /* the I/O thread gave every document it held a result before exiting */
    esbulk__serve(eb);
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
    esbulk__caller_t self;
    esbulk_err_t err;

    if (eb == NULL)
        return ESBULK_ERR_INVALID_ARG;
    if (esbulk__caller_enter(eb, &self) != ESBULK_OK)
        return ESBULK_ERR_IN_CALLBACK;
    err = esbulk__close_call(eb, timeout_ms);
    if (esbulk__caller_leave(eb, &self))
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
    esbulk__caller_t self, *c;

    if (eb == NULL)
        return;
    pthread_mutex_lock(&eb->lock);
    c = esbulk__caller_self(eb);
    if (c == NULL) {
        c = &self;
        esbulk__caller_push(eb, c);
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
        esbulk__caller_leave(eb, &self);
}

void esbulk__handle_free(esbulk_t *eb)
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
/* Credentials, requests of the program's own, statistics */

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
