/* The bulk engine's internal types, shared by esbulk.c (public calls, result
 * delivery), io.c (the I/O thread) and batch.c / retry.c (pure decisions). */
#ifndef ESBULK_ENGINE_H
#define ESBULK_ENGINE_H

#include "conf.h"
#include "log.h"
#include "topology.h"

#include <pthread.h>
#include <stdatomic.h>

/* A document, from esbulk_add() until its result has been served. The
 * public result handed to callbacks is this same object. */
typedef struct esbulk_result_s esbulk__doc_t;
struct esbulk_result_s {
    esbulk__doc_t *next;            /* in whichever queue holds it */
    esbulk__doc_t *live_prev, *live_next; /* every unserved document, in add order */
    uint64_t seq;                   /* add order */
    esbulk_op_t op;
    char *index;                    /* as added */
    char *id;                       /* as added or generated; NULL: server assigns */
    size_t id_len;
    char *routing;                  /* NULL: none */
    size_t routing_len;
    char *lines;                    /* action line + body line, ready to send */
    size_t lines_len;
    size_t body_bytes;              /* counted in buffer.max.bytes until the outcome */
    void *opaque;
    int32_t attempts;               /* requests that carried it */
    int ambiguous;                  /* a request with it broke after it was sent */
    int unrouted;
    int64_t added_ms, deadline_ms, retry_at_ms, queued_ms;
    /* the result */
    esbulk_outcome_t outcome;
    esbulk_err_t err;
    int32_t status;
    char *r_index;                  /* NULL: the index as added */
    char *r_id, *r_error_type, *r_error_reason;
    const char *r_result;           /* a static string, or r_result_own */
    char *r_result_own;
    int64_t seq_no, primary_term, version;
};

typedef struct {
    esbulk__doc_t *head, *tail;
    size_t count;
    size_t bytes; /* lines_len summed */
} esbulk__queue_t;

void esbulk__queue_push(esbulk__queue_t *q, esbulk__doc_t *d);
void esbulk__queue_push_front(esbulk__queue_t *q, esbulk__doc_t *d);
esbulk__doc_t *esbulk__queue_pop(esbulk__queue_t *q);
/* Moves all of src to the front of dst, keeping src's order. */
void esbulk__queue_prepend(esbulk__queue_t *dst, esbulk__queue_t *src);

/* Flush decision for one destination (batch.c). */
typedef struct {
    size_t flush_bytes, flush_docs;
    int64_t flush_interval_ms;
} esbulk__flush_policy_t;

/* True when a destination holding count documents of bytes bytes, the
 * oldest queued at oldest_ms, should send now. force: a flush or close is
 * in progress. */
int esbulk__should_flush(const esbulk__flush_policy_t *p, size_t count, size_t bytes,
                         int64_t oldest_ms, int64_t now_ms, int force);
/* When the destination will be due by the interval (INT64_MAX if empty). */
int64_t esbulk__flush_due_ms(const esbulk__flush_policy_t *p, size_t count, int64_t oldest_ms);

/* Retry policy (retry.c): exponential backoff with full jitter and a cap.
 * rnd is a uniform random 32-bit value (injected for tests). */
int64_t esbulk__backoff_ms(int32_t attempt, int64_t base_ms, int64_t max_ms, uint32_t rnd);

/* What to do with a document after a failed attempt. */
typedef enum {
    ESBULK__RETRY_NOW = 0,     /* schedule at retry_at */
    ESBULK__RETRY_GIVE_UP_MAX, /* retry.max used up */
    ESBULK__RETRY_GIVE_UP_DEADLINE /* retry_at would pass delivery.timeout.ms */
} esbulk__retry_decision_t;

esbulk__retry_decision_t esbulk__retry_decide(int32_t attempts, int32_t retry_max,
                                              int64_t now_ms, int64_t deadline_ms,
                                              int64_t base_ms, int64_t max_ms, uint32_t rnd,
                                              int64_t *retry_at_ms);

/* The handle. */
struct esbulk_s {
    esbulk_conf_t *conf;
    esbulk__log_t log;
    esbulk_topology_t *topo;
    esbulk__http_opts_t http;
    esbulk__url_t *seeds;
    int nseeds;
    uint64_t node_tag;              /* for time ids */
    atomic_uint id_seq;

    pthread_mutex_t lock;           /* guards everything below */
    pthread_cond_t cond_space;      /* buffer space freed */
    pthread_cond_t cond_results;    /* results queued, or flush progress */
    esbulk__queue_t incoming;       /* added, not yet routed by the I/O thread */
    esbulk__queue_t results;        /* outcome known, not yet served */
    esbulk__doc_t *live_head, *live_tail; /* unserved documents in add order */
    uint64_t next_seq;
    size_t buffered_bytes;          /* body bytes of documents without outcome */
    size_t buffered_docs;           /* documents not yet served */
    int flushers;                   /* esbulk_flush/close calls in progress */
    int closing;                    /* esbulk_close: stop accepting, drain */
    int abort_all;                  /* close timed out: fail whatever is left */
    int terminate;                  /* the I/O thread should exit */
    int closed;
    int serving;                    /* serving_thread is running callbacks */
    pthread_t serving_thread;
    char *node_stats;               /* per-node JSON snapshot from the I/O thread */
    int64_t next_stats_ms;          /* the statistics callback's next time (serving thread) */
    struct {
        uint64_t added, indexed, failed, possibly, retried, unrouted, requests, http_429,
            item_429, bytes_raw, bytes_sent, split_413, expired, closed;
    } stats;

    pthread_t thread;
    int thread_started;
    void *io;                       /* io.c's state, owned by the I/O thread */

    /* contracts (esbulk.c) */
    struct esbulk__caller_s *callers; /* esbulk_poll/flush/close calls in progress, one
                                       * frame per thread; under lock */
    int destroy_deferred;           /* esbulk_destroy from a callback: the caller that ran
                                     * it closes and frees (under lock) */
};

/* io.c */
esbulk_err_t esbulk__io_start(esbulk_t *eb, char *errstr, size_t errstr_size);
void esbulk__io_wakeup(esbulk_t *eb);
void esbulk__io_join(esbulk_t *eb);

/* esbulk.c: hands documents with their outcome set to the result queue (or
 * drops successes when result.failures_only), and adds the I/O thread's
 * counts {retried, item_429, unrouted, expired}; one eb->lock for all. */
void esbulk__deliver_queue(esbulk_t *eb, esbulk__queue_t *q, const uint64_t counts[4]);
/* Sets the outcome fields of d (copies reason). */
void esbulk__doc_set_outcome(esbulk__doc_t *d, esbulk_outcome_t outcome, esbulk_err_t err,
                             int32_t status, const char *error_type, const char *reason);
void esbulk__doc_free(esbulk__doc_t *d);

#endif
