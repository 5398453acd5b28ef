/* The handle, shared by the public calls (esbulk.c: its life; add.c:
 * adding; serve.c: serving; caller.c: the serving calls' frames), handoff.c
 * (the queues between the callers' threads and the I/O thread) and io.c (the
 * I/O thread, a driver over the engine core of core*.c).
 *
 * Calls go one way: the public calls -> io.c -> the core, and the public
 * calls, io.c -> handoff.c; the core knows none of them. */
#ifndef ESBULK_ENGINE_H
#define ESBULK_ENGINE_H

#include "conf.h"
#include "core.h"
#include "doc.h"
#include "http.h"
#include "log.h"
#include "place.h"
#include "topology.h"

#include <pthread.h>
#include <stdatomic.h>

/* What a flush or close waits for: the documents added before it (seq
 * below upto), as a count of those not yet served, which each serving
 * lowers (esbulk__live_done). */
typedef struct esbulk__mark_s {
    uint64_t upto;
    size_t left;
    struct esbulk__mark_s *next;
} esbulk__mark_t;

/* The handle. */
struct esbulk_s {
    esbulk_conf_t *conf;
    esbulk__log_t log;
    esbulk__logq_t *logq;           /* the lines for esbulk_log_take(), when the
                                     * configuration has no log callback (else NULL);
                                     * thread-safe */
    esbulk_topology_t *topo;
    esbulk__http_opts_t http;
    esbulk__url_t *seeds;
    int nseeds;
    uint64_t node_tag;              /* for time ids */
    atomic_uint id_seq;
    struct esbulk__docmem_s *dm;    /* records and request lines (docmem.h); thread-safe */
    esbulk__place_t place;          /* in which docmem slot a document goes (place.h);
                                     * thread-safe, published by the I/O thread */

    pthread_mutex_t auth_update_lock; /* esbulk_auth_update() calls, one at a time */
    pthread_mutex_t lock;           /* guards everything below */
    pthread_cond_t cond_space;      /* buffer space freed */
    pthread_cond_t cond_results;    /* results queued, or flush progress */
    esbulk__queue_t incoming;       /* added, not yet routed by the I/O thread */
    esbulk__ahead_t incoming_ahead; /* its ahead links, for the I/O thread's walk */
    esbulk__queue_t results;        /* outcome known, not yet served */
    size_t live;                    /* documents added, not yet served */
    esbulk__mark_t *marks;          /* what flush and close calls wait for, and force_mark */
    uint64_t next_seq;
    size_t buffered_bytes;          /* body bytes of documents without outcome */
    size_t buffered_docs;           /* documents not yet served */
    size_t max_docs;                /* buffer.max.docs, or (max_docs_auto: it is 0) sized by
                                     * the cluster, which the I/O thread sets */
    int max_docs_auto;
    int flushers;                   /* esbulk_flush/close calls in progress */
    esbulk__mark_t force_mark;      /* documents added before the last esbulk_flush go at
                                     * once, even after that call timed out: until every
                                     * one of them is served (in marks once a flush came) */
    atomic_int buffer_full;         /* an add found no space, and none was freed since:
                                     * the I/O thread sends whatever it holds (written under
                                     * lock; an add reads it without, see full_now) */
    int closing;                    /* esbulk_close: stop accepting, drain */
    int abort_all;                  /* close timed out: fail whatever is left */
    int terminate;                  /* the I/O thread should exit */
    int64_t io_sleep_until;         /* 0 while the I/O thread runs (it looks at incoming
                                     * before it sleeps); else the monotonic ms it looks
                                     * again by itself: an add wakes it only when a
                                     * document needs it sooner, or enough have come */
    size_t wake_docs, wake_bytes;   /* incoming this large wakes the I/O thread */
    int64_t wake_interval_ms;       /* flush.interval.ms */
    int closed;
    char *node_stats;               /* per-node JSON snapshot from the I/O thread */
    int64_t next_stats_ms;          /* the statistics callback's next time (serving thread) */
    struct {
        uint64_t added, indexed, failed, possibly, retried, unrouted, requests, http_429,
            item_429, bytes_raw, bytes_sent, split_413, split_400, expired, closed, fetches,
            http_handles;
        uint64_t indices, destinations; /* held by the I/O thread now */
    } stats;

    pthread_t thread;
    int thread_started;
    void *io;                       /* io.c's state, owned by the I/O thread */

    /* contracts (caller.c) */
    struct esbulk__caller_s *callers; /* esbulk_poll/flush/close calls in progress, one
                                       * frame per thread; under lock */
    int destroy_deferred;           /* esbulk_destroy from a callback: the caller that ran
                                     * it closes and frees (under lock) */

    /* pull API (serve.c) */
    esbulk__queue_t pull_ready;     /* a handle without result callbacks: outcome known and
                                     * counted as served (a serving call moved them), not
                                     * pulled yet; under lock */
    esbulk__queue_t pull_held;      /* the batch esbulk_poll_results() handed out, until
                                     * esbulk_results_release(); still counted in
                                     * buffered_docs; under lock */
};

/* caller.c: a serving call (esbulk_poll, esbulk_flush, esbulk_close,
 * esbulk_destroy, esbulk_poll_results) in progress: on the call's stack, and
 * on eb->callers for the call's whole duration. Callbacks run only inside
 * such a call, on its thread, so "this thread has a frame on eb" means
 * "called from inside one of eb's callbacks" (or from the log callback on
 * that thread): the header forbids poll, flush and close there, and destroy
 * there is deferred to the frame. */
typedef struct esbulk__caller_s {
    struct esbulk__caller_s *next;
    pthread_t thread;
    int32_t served; /* results this call served */
    int destroy;    /* this call closes and frees the handle before it returns */
} esbulk__caller_t;

/* This thread's frame on eb, NULL if none. Caller holds eb->lock. */
esbulk__caller_t *esbulk__caller_self(esbulk_t *eb);
/* Registers c as this thread's frame. Caller holds eb->lock. */
void esbulk__caller_push(esbulk_t *eb, esbulk__caller_t *c);
/* Registers c as this thread's serving call; ESBULK_ERR_IN_CALLBACK when the
 * thread is inside one already (in a callback): nothing is registered. */
esbulk_err_t esbulk__caller_enter(esbulk_t *eb, esbulk__caller_t *c);
/* Ends the serving call c (and destroys the handle if c is to): 1 when eb
 * was freed. */
int esbulk__caller_leave(esbulk_t *eb, esbulk__caller_t *c);
/* A destroy was asked for (a serving call stops waiting). */
int esbulk__destroy_requested(esbulk_t *eb);

/* esbulk.c: esbulk_close inside a serving call; the handle's freeing. */
esbulk_err_t esbulk__close_call(esbulk_t *eb, int32_t timeout_ms);
void esbulk__handle_free(esbulk_t *eb);

/* serve.c: serves what is queued now (runs the callbacks); returns how
 * many. Caller does not hold eb->lock. */
int32_t esbulk__serve(esbulk_t *eb);
/* Serves results until every document m counts is served, or the deadline
 * passes (ESBULK_ERR_TIMED_OUT), or a destroy is requested
 * (ESBULK_ERR_CLOSED). */
esbulk_err_t esbulk__drain(esbulk_t *eb, const esbulk__mark_t *m, int32_t timeout_ms);

/* io.c: the I/O thread */
esbulk_err_t esbulk__io_start(esbulk_t *eb, char *errstr, size_t errstr_size);
void esbulk__io_wakeup(esbulk_t *eb);
void esbulk__io_join(esbulk_t *eb);
/* The path and query of a bulk request under conf (NUL-terminated, to
 * free): filter_path asks for _index, _id and result only when wanted,
 * then bulk.pipeline, bulk.refresh and the server's timeout (5/6 of
 * request.timeout.ms, at least 1 ms). */
esbulk_err_t esbulk__io_bulk_path(const esbulk_conf_t *conf, int want_index, int want_id,
                                  int want_result, char **out);

/* handoff.c: what the I/O thread takes from and gives to the callers'
 * threads, and what those give and take, each under one eb->lock. */
typedef struct {
    int force;     /* a flush or close is in progress */
    int abort_all; /* close timed out: fail whatever is left */
    int terminate; /* exit */
} esbulk__handoff_flags_t;

/* Under eb->lock. d was served (or made pullable): flush and close calls
 * wait for one document fewer. */
void esbulk__live_done(esbulk_t *eb, const esbulk__doc_t *d);
/* Under eb->lock. The n documents of the list from head were served: as
 * esbulk__live_done for each, without a walk when no flush or close waits
 * (the handle's force_mark leaves the marks once it counts none). */
void esbulk__live_done_list(esbulk_t *eb, const esbulk__doc_t *head, size_t n);
/* Under eb->lock. m counts the documents added so far, and is kept up to
 * date until removed. */
void esbulk__mark_add(esbulk_t *eb, esbulk__mark_t *m);
void esbulk__mark_remove(esbulk_t *eb, esbulk__mark_t *m);

/* Moves the documents added since the last call to *incoming (appended). */
void esbulk__handoff_take(esbulk_t *eb, esbulk__queue_t *incoming,
                          esbulk__handoff_flags_t *flags);
/* The I/O thread is about to sleep until due (monotonic ms): returns when
 * it should look again instead (sooner if documents came in since the take)
 * and publishes it, so that adds wake it only when needed. */
int64_t esbulk__handoff_sleep(esbulk_t *eb, int64_t now, int64_t due);
/* Hands documents with their outcome set to the result queue (or frees
 * successes under result.failures_only) and adds the engine's counts, the
 * bytes sent and the curl handles made since the last call. */
void esbulk__handoff_deliver(esbulk_t *eb, esbulk__queue_t *q, const esbulk__core_counts_t *n,
                             uint64_t bytes_sent, uint64_t handles_made);
/* Publishes the per-node statistics (JSON text, taken over) and the sizes
 * of the engine's state. */
void esbulk__handoff_publish(esbulk_t *eb, char *node_stats, size_t indices,
                             size_t destinations);
/* buffer.max.docs=0: the buffer's size in documents, from the I/O thread's
 * view of the cluster (esbulk__core_buffer_docs) and its destinations (as
 * many as it was sized for: the statistics show both from the same moment);
 * adds waiting for space look again when it grew. */
void esbulk__handoff_buffer_docs(esbulk_t *eb, size_t docs, size_t destinations);

/* The callers' side. ESBULK_ERR_QUEUE_FULL (said in errstr) before a
 * document is built, when the buffer is full by its count and the add would
 * not wait (enqueue.timeout.ms 0, or a callback); else ESBULK_OK. */
esbulk_err_t esbulk__handoff_full_now(esbulk_t *eb, char *errstr, size_t errstr_size);
/* Queues docs[0..n) in order under one lock, each waiting for space as
 * enqueue.timeout.ms allows. *done gets how many were queued (those are the
 * caller's no more); on an error docs[*done..n) are still the caller's. */
esbulk_err_t esbulk__handoff_add(esbulk_t *eb, esbulk__doc_t *const *docs, size_t n, size_t *done,
                                 char *errstr, size_t errstr_size);
/* Under eb->lock. Moves all of from to *q: those documents stop counting
 * against buffer.max.docs (an add waiting for room is woken). */
void esbulk__handoff_uncount(esbulk_t *eb, esbulk__queue_t *from, esbulk__queue_t *q);
/* Moves the results queued now to *q, as esbulk__handoff_uncount (a
 * callback can re-queue without waiting). */
void esbulk__handoff_results(esbulk_t *eb, esbulk__queue_t *q);
/* The n documents of the list from first were served by this thread's
 * serving call (counted in its frame). */
void esbulk__handoff_served(esbulk_t *eb, const esbulk__doc_t *first, size_t n);
/* A pull handle's serving: the results queued now become pullable and count
 * as served; they keep counting against buffer.max.docs until released. */
void esbulk__handoff_pull_absorb(esbulk_t *eb);
/* Waits until results are queued, a destroy is requested, or the deadline
 * (NULL: forever) passes. Returns 0 when no result is queued. */
int esbulk__handoff_wait(esbulk_t *eb, const struct timespec *until);
/* Results a pull handle holds ready to pull. */
size_t esbulk__handoff_pull_ready(esbulk_t *eb);

#endif
