/* The engine core: every decision of the bulk engine, as plain code over
 * plain data. No curl, no threads, no clock and no random source of its own:
 * time (monotonic milliseconds) and a random seed are passed in, so that a
 * unit test can feed it documents, topology and canned answers and check
 * every outcome in milliseconds.
 *
 *   documents in        esbulk__core_add_list(), esbulk__core_add()
 *   topology in         esbulk__core_set_cluster(), esbulk__core_index_fetched()
 *   topology wanted     esbulk__core_next_fetch(), esbulk__core_refresh_wanted()
 *   requests out        esbulk__core_next_send()  ("send this batch to that URL")
 *   answers in          esbulk__core_answer()     (status + body, or a transport class)
 *   outcomes out        esbulk__core_take_done()
 *   time                esbulk__core_tick(), esbulk__core_next_deadline()
 *
 * The driver (io.c) owns the core on one thread: nothing here locks. */
#ifndef ESBULK_CORE_H
#define ESBULK_CORE_H

#include "conf.h"
#include "doc.h"
#include "log.h"
#include "response.h"
#include "cluster.h"

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

/* buffer.max.docs=0 (the default): the documents a handle may hold, sized
 * by what keeps the cluster busy (batch.c). Every node's inflight requests
 * of flush_docs, plus a full request queued on each destination (at least
 * one a node), twice over: results not served yet and documents added
 * since count too. Never below ESBULK__BUFFER_DOCS_MIN (a small flush.docs
 * must not make a program that polls now and then meet QUEUE_FULL at a
 * few hundred documents), never above ESBULK__BUFFER_DOCS_MAX. A larger
 * buffer adds no speed, only memory that goes cold before it is sent. */
#define ESBULK__BUFFER_DOCS_MIN 10000
#define ESBULK__BUFFER_DOCS_MAX 100000000
size_t esbulk__buffer_docs_for(size_t nodes, size_t dests, int inflight, size_t flush_docs);

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

/* The core's settings (from the configuration, read once). */
typedef struct {
    esbulk__flush_policy_t flush;
    esbulk__routing_level_t level;
    int per_id;                 /* ordering=per_id */
    int max_inflight;           /* max.inflight.per.node */
    int32_t retry_max;
    int64_t backoff_ms, backoff_max_ms;
    int64_t recheck_ms;         /* node.recheck.ms: a node marked down is tried again after */
    int64_t request_timeout_ms; /* request.timeout.ms (said when a request times out) */
    int retry_cluster_block;
    int64_t refresh_ms;         /* topology.refresh.interval.ms: an index is re-read after (0: never) */
    int64_t unknown_recheck_ms; /* an index that does not exist (or failed) is asked again after */
    int64_t refresh_gap_ms;     /* cluster refreshes asked for at most this often */
    int64_t idle_ms;            /* topology.idle.ms: unused destinations and indices are freed */
    int64_t wait_ms;            /* topology.wait.ms: a document of an index not read yet waits
                                   this long for the layout, then goes unrouted (0: at once;
                                   ordering=per_id waits for the read, however long) */
    int failures_only;          /* result.failures_only: successes keep no server strings */
    int keep_body;              /* result.keep_body: a document not indexed keeps its lines
                                   until served (the others give them back as delivered) */
    size_t spare_send_bytes;    /* the most bytes of arrays answered requests keep for the
                                   next ones (0: 16 MB; the tests set less) */
} esbulk__core_conf_t;

typedef struct esbulk__core_s esbulk__core_t;

/* A document's request lines, as a request sends them. */
typedef struct {
    const char *p;
    size_t len;
} esbulk__send_lines_t;

/* A request the core wants sent: the documents' lines, concatenated in this
 * order, POSTed to url + the bulk path. Owned by the core; valid until
 * esbulk__core_answer() or esbulk__core_unsend(). */
typedef struct esbulk__send_s {
    esbulk__doc_t **docs;
    size_t ndocs;
    /* per document, in compact arrays written while the records are at hand
     * (read again later, each record would be a cache miss): its lines, for
     * the driver, and its index and id, which the answer's items name */
    esbulk__send_lines_t *lines;
    esbulk__resp_want_t *want;
    size_t bytes;               /* lines_len summed */
    const char *url;            /* the target's base URL */
    int want_index;             /* the answer must name each item's _index: some document
                                   went to an alias, a data stream or an index whose
                                   metadata was not read (else it is the name as added) */
    int want_id;                /* the answer must name each item's _id: some document has
                                   none (the server assigns it) */
    int want_result;            /* the answer must give each item's result: some document is
                                   an update ("noop" and "updated" share status 200; for
                                   the other operations the status says it) */
    void *driver;               /* the driver's own, untouched by the core */
    /* the core's */
    struct core_target_s *target;
    struct core_dest_s *dest;
    int64_t start_ms;
    size_t cap;                 /* documents the arrays hold */
    struct esbulk__send_s *prev, *next;
} esbulk__send_t;

/* How a request ended. */
typedef enum {
    ESBULK__ANS_HTTP = 0,   /* an HTTP answer: status and body */
    ESBULK__ANS_NOT_SENT,   /* nothing was sent (refused, connect failed or timed out):
                               not applied, retried; the node is marked down */
    ESBULK__ANS_BROKEN,     /* sent, then the connection failed without an answer: maybe
                               applied; the node is marked down */
    ESBULK__ANS_TIMEOUT,    /* sent, no answer within request.timeout.ms: maybe applied */
    ESBULK__ANS_TLS_VERIFY, /* the certificate does not verify: not retried */
    ESBULK__ANS_TOO_LARGE,  /* the answer exceeded response.max.bytes: maybe applied */
    ESBULK__ANS_NOMEM       /* the driver ran out of memory reading it: maybe applied */
} esbulk__ans_kind_t;

typedef struct {
    esbulk__ans_kind_t kind;
    long status;            /* ESBULK__ANS_HTTP */
    const char *body;       /* ESBULK__ANS_HTTP, not NUL-terminated; may be NULL if 0 */
    size_t body_len;
    const char *message;    /* the others: what happened, for the reasons (may be NULL) */
} esbulk__answer_t;

/* Counts of events the results do not show, since the last take. */
typedef struct {
    uint64_t retried, item_429, unrouted, expired, http_429, split_413, split_400, requests,
        bytes_raw;
    uint64_t fetches;       /* index metadata fetches asked for */
    /* the outcomes delivered, counted as they were (the hand-off then needs
     * no walk over them): by outcome, those closed, and what they held of
     * buffer.max.bytes (their body_bytes) */
    uint64_t indexed, failed, possibly, closed, held_bytes;
} esbulk__core_counts_t;

/* A core, or NULL if out of memory. log may be NULL. seed: the random
 * source's start (backoff jitter, the pick among nodes). */
esbulk__core_t *esbulk__core_new(const esbulk__core_conf_t *conf, const esbulk__log_t *log,
                                 uint64_t seed);
/* Frees the core. Documents it still holds are freed without a result:
 * call esbulk__core_abort() and esbulk__core_take_done() first. */
void esbulk__core_free(esbulk__core_t *core);

/* The seed URLs (base URLs, copied). ESBULK_ERR_NOMEM. */
esbulk_err_t esbulk__core_set_seeds(esbulk__core_t *core, const char *const *urls, int n);

/* A cluster view (a new reference, taken over; NULL: the cluster cannot be
 * read now: send to the seeds). The node targets follow it; every known
 * index is read again when the node set changed. */
void esbulk__core_set_cluster(esbulk__core_t *core, esbulk__cluster_t *cluster, int64_t now);

/* The cluster read that was asked for could not be made (out of memory):
 * the view stays as it is and is asked for again later. */
void esbulk__core_cluster_failed(esbulk__core_t *core);

/* The next index whose metadata the core wants fetched, NULL if none: at
 * most one fetch per index is outstanding; the name stays valid until
 * esbulk__core_index_fetched() for it. */
const char *esbulk__core_next_fetch(esbulk__core_t *core, int64_t now);
/* The fetch of name finished: e is a new reference (taken over), or NULL
 * when the fetch failed (err, errstr say why; asked again after
 * unknown_recheck_ms). */
void esbulk__core_index_fetched(esbulk__core_t *core, const char *name, esbulk__index_t *e,
                                esbulk_err_t err, const char *errstr, int64_t now);
/* True (once) when a node failed and the cluster view should be read again. */
int esbulk__core_refresh_wanted(esbulk__core_t *core, int64_t now);

/* The index layouts in use, for the adding threads' placement hints
 * (place.h): when they changed since the last call, up to max new
 * references to the entries of the indices used most lately (routable ones
 * only) in out, and their number; -1 when nothing changed. */
int esbulk__core_layouts(esbulk__core_t *core, esbulk__index_t **out, int max);

/* Takes d over: routes it and queues it for sending. added_ms: when it was
 * added (esbulk_add), from which flush.interval.ms and topology.wait.ms
 * count; the I/O thread may take it up to flush.interval.ms later (it is
 * woken only when it would look too late by itself). A time after now
 * counts as now. */
void esbulk__core_add(esbulk__core_t *core, esbulk__doc_t *d, int64_t added_ms, int64_t now);
/* esbulk__core_add for each document of in, in order (added_ms: each one's
 * queued_ms); in is left empty. A document with the index entry and shard
 * of one before it in the list takes that one's destination without a
 * look-up. */
void esbulk__core_add_list(esbulk__core_t *core, esbulk__queue_t *in, int64_t now);

/* The next request to send, NULL when none is due (or no node has a free
 * request slot). force: a flush or close wants everything sent now. The
 * documents' attempts are counted here. */
esbulk__send_t *esbulk__core_next_send(esbulk__core_t *core, int force, int64_t now);
/* The driver could not start s (out of memory): its documents go back,
 * first in line, and the attempt is not counted. s is freed. */
void esbulk__core_unsend(esbulk__core_t *core, esbulk__send_t *s, int64_t now);
/* s ended as a says: outcomes, retries, splits. s is freed. */
void esbulk__core_answer(esbulk__core_t *core, esbulk__send_t *s, const esbulk__answer_t *a,
                         int64_t now);

/* Time passes: retries that are due go back in line, documents past
 * delivery.timeout.ms fail, idle destinations and indices are freed. */
void esbulk__core_tick(esbulk__core_t *core, int64_t now);
/* The next time something is due (INT64_MAX: nothing): a retry, a flush by
 * interval, an expiry scan, a fetch. */
int64_t esbulk__core_next_deadline(esbulk__core_t *core, int64_t now);

/* Close: every document still held gets its result: POSSIBLY for those in
 * flight (their sends are freed: the driver must drop its transfers
 * first), FAILED (ESBULK_ERR_CLOSED) for the rest. */
void esbulk__core_abort(esbulk__core_t *core);

/* Moves the documents whose outcome is known to out (in no order) and
 * adds the counts since the last take to *counts. */
void esbulk__core_take_done(esbulk__core_t *core, esbulk__queue_t *out,
                            esbulk__core_counts_t *counts);

/* Requests in flight; documents held (queued, waiting, in flight). */
size_t esbulk__core_inflight(const esbulk__core_t *core);
size_t esbulk__core_held(const esbulk__core_t *core);
/* Waiting retries the retry and expiry scans visited so far (for the
 * tests: a scan walks only the documents it moves or may expire). */
uint64_t esbulk__core_retry_walked(const esbulk__core_t *core);
/* Requests' arrays allocated so far (for the tests: answered requests keep
 * theirs for the next ones, up to ESBULK__CORE_SPARE_SENDS of them). */
uint64_t esbulk__core_sends_made(const esbulk__core_t *core);
#define ESBULK__CORE_SPARE_SENDS 8
/* Index entries and destinations held (bounded by topology.idle.ms). */
size_t esbulk__core_nindices(const esbulk__core_t *core);
size_t esbulk__core_ndests(const esbulk__core_t *core);
/* esbulk__buffer_docs_for() over the nodes the core sends to (the cluster's
 * nodes with an HTTP address it can reach, or the seeds while it has no
 * such view) and its destinations. */
size_t esbulk__core_buffer_docs(const esbulk__core_t *core);

/* Per-node statistics as a JSON array (a new reference, NULL if out of
 * memory): url, name, node_id, seed, queued_docs, inflight, requests,
 * errors, down, latency_ms {p50, p95, p99}. */
json_t *esbulk__core_node_stats(const esbulk__core_t *core, int64_t now);

#endif
