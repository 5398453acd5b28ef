/*
 * libesbulk - shard-aware bulk indexing client for Elasticsearch and OpenSearch.
 *
 * This is the only public header. All types are opaque; every function takes
 * and returns fixed-width integers, pointers and (pointer, length) pairs so
 * that the API can be used from Python (ctypes/cffi) and Go (cgo) directly.
 *
 * Thread safety is stated per function. In short:
 *   - esbulk_conf_t is not thread-safe: configure it on one thread.
 *   - esbulk_layout_t is immutable once configured: any number of threads may
 *     call esbulk_layout_shard() on it at once, but not while it is being set.
 *   - esbulk_topology_t is thread-safe: all its functions may be called from
 *     any number of threads at once.
 *   - Pure functions (esbulk_route_hash, esbulk_err2str, esbulk_version*) are
 *     thread-safe.
 *   - esbulk_t: see "The bulk engine" below.
 */
#ifndef ESBULK_H
#define ESBULK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(ESBULK_BUILDING) && defined(__GNUC__)
#define ESBULK_EXTERN __attribute__((visibility("default")))
#else
#define ESBULK_EXTERN
#endif

/* Package version: 0xMMmmpp00 (major, minor, patch). */
#define ESBULK_VERSION 0x01000000
#define ESBULK_VERSION_STR "1.0.0"

/* ---------------------------------------------------------------------------
 * Errors. Values are stable and only ever appended to.
 */
typedef enum esbulk_err_e {
    ESBULK_OK = 0,
    ESBULK_ERR_INVALID_ARG = -1,      /* a bad argument (NULL, out of range) */
    ESBULK_ERR_NOMEM = -2,            /* an allocation failed */
    ESBULK_ERR_INVALID_UTF8 = -3,     /* a string is not valid UTF-8 */
    ESBULK_ERR_UNKNOWN_KEY = -4,      /* configuration key not known */
    ESBULK_ERR_BAD_VALUE = -5,        /* configuration value out of range */
    ESBULK_ERR_TRANSPORT = -6,        /* connection failed, timed out, broke */
    ESBULK_ERR_HTTP = -7,             /* unexpected HTTP status from server */
    ESBULK_ERR_AUTH = -8,             /* 401 or 403 from the server */
    ESBULK_ERR_BAD_RESPONSE = -9,     /* server answer not parseable or incomplete */
    ESBULK_ERR_UNKNOWN_INDEX = -10,   /* index, alias or data stream does not exist */
    ESBULK_ERR_NOT_ROUTABLE = -11,    /* index routes on source fields, not _id */
    ESBULK_ERR_ROUTING_CONFLICT = -12,/* routing given that an alias forbids */
    ESBULK_ERR_TOO_LARGE = -13,       /* a response or value exceeds a limit */
    ESBULK_ERR_QUEUE_FULL = -14,      /* buffer.max.bytes or buffer.max.docs reached */
    ESBULK_ERR_TIMED_OUT = -15,       /* the call's timeout passed first */
    ESBULK_ERR_CLOSED = -16,          /* handle closed; or: not delivered, closed */
    ESBULK_ERR_DOC_TOO_LARGE = -17,   /* document larger than max.doc.bytes */
    ESBULK_ERR_INVALID_JSON = -18,    /* body is not one JSON object */
    ESBULK_ERR_ITEM = -19,            /* the server refused the document (see status) */
    ESBULK_ERR_RETRIES_EXHAUSTED = -20, /* retry.max attempts used up */
    ESBULK_ERR_DELIVERY_TIMEOUT = -21, /* delivery.timeout.ms passed */
    ESBULK_ERR_IN_CALLBACK = -22,     /* called from inside a result or statistics callback */
    ESBULK_ERR_RESULTS_HELD = -23     /* esbulk_poll_results: the last batch is not released */
} esbulk_err_t;

/* A static English description of err. Never NULL. Thread-safe. */
ESBULK_EXTERN const char *esbulk_err2str(esbulk_err_t err);

/* The library's version at run time, as ESBULK_VERSION / ESBULK_VERSION_STR.
 * Thread-safe. */
ESBULK_EXTERN uint32_t esbulk_version(void);
ESBULK_EXTERN const char *esbulk_version_str(void);

/* Frees memory the library allocated for the caller (esbulk_topology_describe).
 * NULL is accepted. Thread-safe. */
ESBULK_EXTERN void esbulk_free(void *ptr);

/* ---------------------------------------------------------------------------
 * Configuration: string keys and values, documented in esbulk-config(7).
 */
typedef struct esbulk_conf_s esbulk_conf_t;

/* Log levels, syslog numbering. */
#define ESBULK_LOG_ERR 3
#define ESBULK_LOG_WARNING 4
#define ESBULK_LOG_NOTICE 5
#define ESBULK_LOG_INFO 6
#define ESBULK_LOG_DEBUG 7

/* A log line. Called on the thread that logged. Must not call back into the
 * object that logged. facility is a short word such as "topology". */
typedef void (esbulk_log_cb_t)(int32_t level, const char *facility,
                               const char *message, void *opaque);

/* A new configuration with every key at its default. NULL if out of memory.
 * Not thread-safe with other calls on the same conf. */
ESBULK_EXTERN esbulk_conf_t *esbulk_conf_new(void);

/* Sets key to value (both NUL-terminated strings). On error returns
 * ESBULK_ERR_UNKNOWN_KEY, ESBULK_ERR_BAD_VALUE or ESBULK_ERR_NOMEM and writes
 * a message into errstr (errstr_size bytes, may be 0). The conf is unchanged
 * on error. */
ESBULK_EXTERN esbulk_err_t esbulk_conf_set(esbulk_conf_t *conf, const char *key,
                                           const char *value, char *errstr,
                                           size_t errstr_size);

/* Copies the value of key, NUL-terminated, into dest (dest_size bytes).
 * *value_len receives the length without the NUL (may be NULL). Secrets
 * (passwords, keys, tokens) read back as "[redacted]" when set.
 * ESBULK_ERR_TOO_LARGE when dest is NULL or too small (then *value_len + 1
 * is the size needed), ESBULK_ERR_UNKNOWN_KEY for an unknown key. */
ESBULK_EXTERN esbulk_err_t esbulk_conf_get(const esbulk_conf_t *conf, const char *key,
                                           char *dest, size_t dest_size,
                                           size_t *value_len);

/* A deep copy of conf, NULL if out of memory. */
ESBULK_EXTERN esbulk_conf_t *esbulk_conf_dup(const esbulk_conf_t *conf);

/* Frees conf. NULL is accepted. */
ESBULK_EXTERN void esbulk_conf_destroy(esbulk_conf_t *conf);

/* Sets the log callback (NULL: silent, the default) and the opaque pointer
 * passed to every callback of objects made from this conf. */
ESBULK_EXTERN void esbulk_conf_set_log_cb(esbulk_conf_t *conf, esbulk_log_cb_t *cb);
ESBULK_EXTERN void esbulk_conf_set_opaque(esbulk_conf_t *conf, void *opaque);

/* ---------------------------------------------------------------------------
 * Routing: the server's own shard function, for a given index layout.
 */

/* Which shard function an index uses. */
typedef enum esbulk_route_fn_e {
    /* OpenSearch 1.x-3.x, Elasticsearch 7.x up to indices created by 9.3:
     * floorMod(hash, routing_num_shards) / (routing_num_shards / shards) */
    ESBULK_ROUTE_LEGACY = 0,
    /* Elasticsearch indices created by 9.4 or later: floorMod(hash, shards) */
    ESBULK_ROUTE_MOD = 1
} esbulk_route_fn_t;

typedef struct esbulk_layout_s esbulk_layout_t;

/* A layout of one shard, routing_num_shards by the default rule, partition
 * size 1, the legacy function. NULL if out of memory. */
ESBULK_EXTERN esbulk_layout_t *esbulk_layout_new(void);
ESBULK_EXTERN void esbulk_layout_destroy(esbulk_layout_t *layout);

/* Setters; ESBULK_ERR_INVALID_ARG for values below 1 (routing_shards: below
 * 0, where 0 means "the Elasticsearch 7+ default for this shard count"). A
 * layout is configured on one thread, then shared read-only. */
ESBULK_EXTERN esbulk_err_t esbulk_layout_set_shards(esbulk_layout_t *layout, int32_t shards);
ESBULK_EXTERN esbulk_err_t esbulk_layout_set_routing_shards(esbulk_layout_t *layout,
                                                            int32_t routing_shards);
ESBULK_EXTERN esbulk_err_t esbulk_layout_set_partition_size(esbulk_layout_t *layout,
                                                            int32_t partition_size);
ESBULK_EXTERN esbulk_err_t esbulk_layout_set_function(esbulk_layout_t *layout,
                                                      esbulk_route_fn_t fn);

/* The routing_num_shards the layout uses (the default rule applied when 0
 * was set). */
ESBULK_EXTERN int32_t esbulk_layout_routing_shards(const esbulk_layout_t *layout);

/* Elasticsearch 7+'s default routing_num_shards for a new index of `shards`
 * shards: shards << max(1, 10 - ceil(log2(shards))); 0 for shards < 1. */
ESBULK_EXTERN int32_t esbulk_default_routing_shards(int32_t shards);

/* The server's Murmur3 hash of a routing value: Murmur3 x86_32, seed 0, over
 * the UTF-16LE code units of the UTF-8 string s[0..len). *hash receives the
 * signed result. ESBULK_ERR_INVALID_UTF8 for invalid UTF-8. Thread-safe. */
ESBULK_EXTERN esbulk_err_t esbulk_route_hash(const char *s, size_t len, int32_t *hash);

/* The shard of a document: routing when routing_len > 0, else id. With a
 * partition size > 1 and a routing, the id's hash picks the partition.
 * ESBULK_ERR_INVALID_ARG when there is neither id nor routing or when the
 * layout is inconsistent (routing_num_shards not a multiple of shards);
 * ESBULK_ERR_INVALID_UTF8 for invalid UTF-8. Thread-safe on a layout that
 * is not being set. */
ESBULK_EXTERN esbulk_err_t esbulk_layout_shard(const esbulk_layout_t *layout,
                                               const char *id, size_t id_len,
                                               const char *routing, size_t routing_len,
                                               int32_t *shard);

/* ---------------------------------------------------------------------------
 * Topology: the live cluster view (nodes, index layouts, primaries).
 */
typedef struct esbulk_topology_s esbulk_topology_t;

/* A topology for the cluster at the conf's "urls". Copies what it needs from
 * conf. Does no I/O: the first call that needs the cluster fetches it. NULL
 * on error, with a message in errstr. */
ESBULK_EXTERN esbulk_topology_t *esbulk_topology_new(const esbulk_conf_t *conf, char *errstr,
                                                     size_t errstr_size);
ESBULK_EXTERN void esbulk_topology_destroy(esbulk_topology_t *topo);

/* Re-reads the cluster (distribution, version, nodes) and every index looked
 * up so far, now. Blocks for the HTTP requests. Thread-safe. */
ESBULK_EXTERN esbulk_err_t esbulk_topology_refresh(esbulk_topology_t *topo, char *errstr,
                                                   size_t errstr_size);

/* The shard and primary node of a document in index (a concrete index, an
 * alias or a data stream; aliases and data streams resolve to their write
 * index, and an alias's index_routing applies). The index is fetched on
 * first use and kept current by topology.refresh.interval.ms. *shard gets
 * the shard; node (node_size bytes, may be NULL/0) gets the primary's node
 * name, "" when unassigned. Errors: ESBULK_ERR_UNKNOWN_INDEX,
 * ESBULK_ERR_NOT_ROUTABLE, ESBULK_ERR_ROUTING_CONFLICT, transport and
 * response errors, with a message in errstr. Thread-safe. */
ESBULK_EXTERN esbulk_err_t esbulk_topology_route(esbulk_topology_t *topo, const char *index,
                                                 const char *id, size_t id_len,
                                                 const char *routing, size_t routing_len,
                                                 int32_t *shard, char *node, size_t node_size,
                                                 char *errstr, size_t errstr_size);

/* A JSON description of the cluster and of index (NULL: the cluster only):
 * {"distribution","version","mode":"nodes"|"seeds","nodes":[{"id","name",
 * "http"}],"index":{"name","write_index","shards","routing_shards",
 * "partition_size","function","version_created","routable","reason",
 * "alias_routing","primaries":[{"shard","node","http"}]}}. Free with
 * esbulk_free(). NULL on error with a message in errstr. Thread-safe. */
ESBULK_EXTERN char *esbulk_topology_describe(esbulk_topology_t *topo, const char *index,
                                             char *errstr, size_t errstr_size);


/* ---------------------------------------------------------------------------
 * The bulk engine.
 *
 * Threads: esbulk_new() starts two library-owned threads: the I/O thread,
 * which routes, batches and sends over one curl multi handle, and the
 * topology thread, which reads cluster and index metadata (no metadata
 * request ever holds up sending or results). esbulk_add() and
 * esbulk_add_batch() may be called from any number of threads at once.
 * Callbacks (result, results, stats, log excepted) run only inside
 * esbulk_poll(), esbulk_flush() and esbulk_close() (and esbulk_destroy()
 * when it closes), on the thread that called them. They may call
 * esbulk_add() (to re-queue; there it never waits). From inside them,
 * esbulk_poll(), esbulk_flush() and esbulk_close() on the same handle return
 * ESBULK_ERR_IN_CALLBACK at once, and esbulk_destroy() is deferred until the
 * call that ran the callback returns: the handle must not be used after that
 * call returns. The log callback runs on whichever thread logs, the I/O
 * thread included: it must be thread-safe and must not call into the
 * library.
 *
 * Every document that esbulk_add() accepted (returned ESBULK_OK) gets exactly
 * one result; a call that fails delivers no result for that document. With
 * result.failures_only=true, indexed documents are counted as served without
 * a callback: only the others are reported.
 *
 * Results can instead be pulled (for bindings that must not be called back:
 * Go without //export, Python without ctypes callbacks): see
 * esbulk_poll_results(). A handle with neither a result nor a results
 * callback keeps every result until it is pulled.
 */
typedef struct esbulk_s esbulk_t;

typedef enum esbulk_op_e {
    ESBULK_OP_INDEX = 0,  /* create or replace */
    ESBULK_OP_CREATE = 1, /* fail if the _id exists */
    ESBULK_OP_UPDATE = 2, /* body is the update request: {"doc":{...}} etc. */
    ESBULK_OP_DELETE = 3  /* no body */
} esbulk_op_t;

typedef enum esbulk_outcome_e {
    ESBULK_OUTCOME_INDEXED = 0,  /* the server applied the operation */
    ESBULK_OUTCOME_FAILED = 1,   /* it did not (see err, status, error type/reason) */
    ESBULK_OUTCOME_POSSIBLY = 2  /* unknown: the request broke or timed out after it
                                    was sent and it could not be safely retried */
} esbulk_outcome_t;

/* One document's result, borrowed: valid only during the callback, or, when
 * pulled, until esbulk_results_release() or esbulk_destroy(). */
typedef struct esbulk_result_s esbulk_result_t;

/* Result accessors. Strings are NUL-terminated UTF-8, NULL when absent;
 * _seq_no, _primary_term and _version -1 when absent (the server is asked
 * for them only with result.meta=true, esbulk-config(7)), the status 0.
 * Thread-safe on the result while it is valid (during its callback, or
 * pulled and not yet released). */
ESBULK_EXTERN void *esbulk_result_opaque(const esbulk_result_t *result);
ESBULK_EXTERN esbulk_outcome_t esbulk_result_outcome(const esbulk_result_t *result);
/* ESBULK_OK when indexed; else why: ESBULK_ERR_ITEM (the server refused the
 * document), _HTTP, _AUTH, _TRANSPORT, _BAD_RESPONSE, _RETRIES_EXHAUSTED,
 * _DELIVERY_TIMEOUT, _CLOSED. */
ESBULK_EXTERN esbulk_err_t esbulk_result_err(const esbulk_result_t *result);
ESBULK_EXTERN esbulk_op_t esbulk_result_op(const esbulk_result_t *result);
/* The concrete index the server wrote to, else the index as added. */
ESBULK_EXTERN const char *esbulk_result_index(const esbulk_result_t *result);
/* The _id: as added, generated by the library (id.generate), or assigned by
 * the server. */
ESBULK_EXTERN const char *esbulk_result_id(const esbulk_result_t *result);
ESBULK_EXTERN int32_t esbulk_result_status(const esbulk_result_t *result); /* item HTTP status, 0 if none */
ESBULK_EXTERN const char *esbulk_result_error_type(const esbulk_result_t *result);
/* The server's reason, or the library's own explanation. When the server's
 * error has a caused_by, the reason ends with " (caused by <type>: <reason>)"
 * of it (<type> "error" when it has none), and the two accessors below give
 * that type and reason apart (NULL when there is no cause; the type also
 * when the cause has none). */
ESBULK_EXTERN const char *esbulk_result_error_reason(const esbulk_result_t *result);
ESBULK_EXTERN const char *esbulk_result_error_cause_type(const esbulk_result_t *result);
ESBULK_EXTERN const char *esbulk_result_error_cause_reason(const esbulk_result_t *result);
/* "created", "updated", "deleted", "noop", "not_found" */
ESBULK_EXTERN const char *esbulk_result_result(const esbulk_result_t *result);
ESBULK_EXTERN int64_t esbulk_result_seq_no(const esbulk_result_t *result);
ESBULK_EXTERN int64_t esbulk_result_primary_term(const esbulk_result_t *result);
ESBULK_EXTERN int64_t esbulk_result_version(const esbulk_result_t *result);
ESBULK_EXTERN int32_t esbulk_result_attempts(const esbulk_result_t *result);
/* The document's body as it was sent (raw CR/LF removed), *len its length
 * (len may be NULL); not NUL-terminated. Only with result.keep_body=true and
 * only for documents that were not indexed (FAILED or POSSIBLY), for
 * dead-letter output; NULL otherwise (and for a delete). */
ESBULK_EXTERN const char *esbulk_result_body(const esbulk_result_t *result, size_t *len);

/* Many results' fields in one call (for bindings: one crossing per batch of
 * results instead of one per field and result). For results[i], i in
 * [0, count):
 *   opaques[i] = its opaque (opaques may be NULL: not read);
 *   ints[i * ESBULK_RESULT_INTS + k]: k = 0 outcome, 1 err, 2 op, 3 status,
 *     4 attempts, 5 flags (ESBULK_RESULT_NO_*: which strings are NULL);
 *   longs[i * ESBULK_RESULT_LONGS + k]: k = 0 _seq_no, 1 _primary_term,
 *     2 _version;
 *   strs: its index, _id and result ("created", ...), each NUL-terminated
 *     ("" when NULL, see flags), appended from strs[0] on; *strs_len (may be
 *     NULL) the bytes used. strs may be NULL with strs_size 0: no strings.
 * The values are those of the single accessors above; the error type and
 * reason and the body are not included (read them with those accessors).
 * Returns how many results were read: count, or fewer when the next one's
 * strings do not fit in strs_size (0 if even the first's do not: a bigger
 * strs is needed); read the rest by calling again from results + that
 * number. ESBULK_ERR_INVALID_ARG when results, ints or longs is NULL (with
 * count > 0) or an element of results is NULL. Thread-safe on the results
 * while they are valid, as the single accessors are; it writes only the
 * caller's arrays. */
#define ESBULK_RESULT_INTS 6
#define ESBULK_RESULT_LONGS 3
#define ESBULK_RESULT_NO_INDEX 1
#define ESBULK_RESULT_NO_ID 2
#define ESBULK_RESULT_NO_RESULT 4
ESBULK_EXTERN int64_t esbulk_results_read(const esbulk_result_t *const *results, size_t count,
                                          void **opaques, int32_t *ints, int64_t *longs,
                                          char *strs, size_t strs_size, size_t *strs_len);

/* One result at a time. */
typedef void (esbulk_result_cb_t)(esbulk_t *eb, const esbulk_result_t *result, void *opaque);
/* A batch of results (for bindings: one crossing per batch). When set, it is
 * used instead of the single-result callback. */
typedef void (esbulk_results_cb_t)(esbulk_t *eb, const esbulk_result_t *const *results,
                                   size_t count, void *opaque);
/* Periodic statistics (stats.interval.ms): the JSON of esbulk_stats_json(). */
typedef void (esbulk_stats_cb_t)(esbulk_t *eb, const char *json, size_t json_len,
                                 void *opaque);

ESBULK_EXTERN void esbulk_conf_set_result_cb(esbulk_conf_t *conf, esbulk_result_cb_t *cb);
ESBULK_EXTERN void esbulk_conf_set_results_cb(esbulk_conf_t *conf, esbulk_results_cb_t *cb);
ESBULK_EXTERN void esbulk_conf_set_stats_cb(esbulk_conf_t *conf, esbulk_stats_cb_t *cb);

/* A new handle configured by conf (copied: the caller keeps and destroys
 * conf). Starts the I/O and topology threads; the topology thread reads the
 * cluster (GET /, _nodes/http) at once. NULL on error with a message in errstr. */
ESBULK_EXTERN esbulk_t *esbulk_new(const esbulk_conf_t *conf, char *errstr, size_t errstr_size);

/* Adds one document. index: NUL-terminated index, alias or data stream name.
 * id/routing: optional (NULL, 0). body: one JSON object (raw CR/LF bytes are
 * removed: in valid JSON they can only be whitespace); NULL for delete.
 * doc_opaque comes back in the result. All inputs are copied before the call
 * returns. Errors (no result is delivered): ESBULK_ERR_INVALID_ARG,
 * ESBULK_ERR_INVALID_UTF8 (index, id, routing), ESBULK_ERR_INVALID_JSON,
 * ESBULK_ERR_DOC_TOO_LARGE, ESBULK_ERR_QUEUE_FULL (after waiting up to
 * enqueue.timeout.ms), ESBULK_ERR_CLOSED, ESBULK_ERR_NOMEM; errstr says why.
 * Thread-safe; may be called from a result callback. */
ESBULK_EXTERN esbulk_err_t esbulk_add(esbulk_t *eb, esbulk_op_t op, const char *index,
                                      const char *id, size_t id_len, const char *routing,
                                      size_t routing_len, const char *body, size_t body_len,
                                      void *doc_opaque, char *errstr, size_t errstr_size);

/* Adds count documents in order; stops at the first that fails. Arrays of
 * count elements; ids, id_lens, routings, routing_lens, opaques may be NULL
 * (none). *accepted gets how many were added (their results will come); the
 * return value is ESBULK_OK or the error of document *accepted. */
ESBULK_EXTERN esbulk_err_t esbulk_add_batch(esbulk_t *eb, size_t count, const int32_t *ops,
                                            const char *const *indices,
                                            const char *const *ids, const size_t *id_lens,
                                            const char *const *routings,
                                            const size_t *routing_lens,
                                            const char *const *bodies, const size_t *body_lens,
                                            void *const *opaques, size_t *accepted,
                                            char *errstr, size_t errstr_size);

/* Per-document action options: an opaque object, set on one thread and
 * read (copied into the request) by esbulk_add_opts(); one object may be
 * reused for every document. Each setter returns ESBULK_ERR_INVALID_ARG for
 * a NULL object or a value out of range. Whether the options fit the
 * operation is checked when the document is added. */
typedef struct esbulk_docopts_s esbulk_docopts_t;
typedef enum esbulk_version_type_e {
    ESBULK_VERSION_EXTERNAL = 1,     /* indexed only when version > the stored one */
    ESBULK_VERSION_EXTERNAL_GTE = 2  /* indexed when version >= the stored one */
} esbulk_version_type_t;
/* A new object with no option set; NULL if out of memory. */
ESBULK_EXTERN esbulk_docopts_t *esbulk_docopts_new(void);
ESBULK_EXTERN void esbulk_docopts_destroy(esbulk_docopts_t *opts);
/* Unsets every option. */
ESBULK_EXTERN void esbulk_docopts_clear(esbulk_docopts_t *opts);
/* An external version (index, delete): version >= 0. The server refuses an
 * older one with status 409 (version_conflict_engine_exception). */
ESBULK_EXTERN esbulk_err_t esbulk_docopts_set_version(esbulk_docopts_t *opts, int64_t version,
                                                      esbulk_version_type_t type);
/* Optimistic concurrency control (index, update, delete): applied only if
 * the document's _seq_no and _primary_term are these (seq_no >= 0,
 * primary_term >= 1); else status 409. */
ESBULK_EXTERN esbulk_err_t esbulk_docopts_set_if_seq_no(esbulk_docopts_t *opts, int64_t seq_no,
                                                        int64_t primary_term);
/* An ingest pipeline for this document (index, create), instead of
 * bulk.pipeline; NULL or "" unsets it. ESBULK_ERR_INVALID_UTF8. */
ESBULK_EXTERN esbulk_err_t esbulk_docopts_set_pipeline(esbulk_docopts_t *opts,
                                                       const char *pipeline);
/* require_alias (index, create, update): the name must be an alias. */
ESBULK_EXTERN esbulk_err_t esbulk_docopts_set_require_alias(esbulk_docopts_t *opts,
                                                            int32_t require_alias);
/* retry_on_conflict (update): how often the server retries the update on a
 * version conflict, 0 to 1000000; -1 unsets it. */
ESBULK_EXTERN esbulk_err_t esbulk_docopts_set_retry_on_conflict(esbulk_docopts_t *opts,
                                                                int32_t retries);
/* esbulk_add() with options (NULL: none). ESBULK_ERR_INVALID_ARG (with a
 * message) when they do not fit op. Thread-safe, as esbulk_add(). */
ESBULK_EXTERN esbulk_err_t esbulk_add_opts(esbulk_t *eb, esbulk_op_t op, const char *index,
                                           const char *id, size_t id_len, const char *routing,
                                           size_t routing_len, const char *body,
                                           size_t body_len, const esbulk_docopts_t *opts,
                                           void *doc_opaque, char *errstr, size_t errstr_size);
/* esbulk_add_batch() with options: opts is NULL (none) or count pointers,
 * each NULL (none) or an object. */
ESBULK_EXTERN esbulk_err_t esbulk_add_batch_opts(esbulk_t *eb, size_t count, const int32_t *ops,
                                                 const char *const *indices,
                                                 const char *const *ids, const size_t *id_lens,
                                                 const char *const *routings,
                                                 const size_t *routing_lens,
                                                 const char *const *bodies,
                                                 const size_t *body_lens,
                                                 const esbulk_docopts_t *const *opts,
                                                 void *const *opaques, size_t *accepted,
                                                 char *errstr, size_t errstr_size);
/* Serves results that are ready through the callbacks, waiting up to
 * timeout_ms (0: do not wait, -1: wait until at least one) for the first.
 * Returns the number of results served (with a deferred esbulk_destroy, the
 * close's included), or a negative esbulk_err_t on misuse:
 * ESBULK_ERR_IN_CALLBACK (called from a callback; nothing is served);
 * ESBULK_ERR_INVALID_ARG for a NULL handle. Call from one thread at a time.
 * With neither a result nor a results callback, results are kept for
 * esbulk_poll_results(): this returns 0 (at once when some are ready to
 * pull) and runs only the stats callback. */
ESBULK_EXTERN int32_t esbulk_poll(esbulk_t *eb, int32_t timeout_ms);

/* Sends everything buffered now and serves results until every document
 * added before the call has its result. ESBULK_OK, or ESBULK_ERR_TIMED_OUT
 * when timeout_ms (-1: no limit) passed first. ESBULK_ERR_IN_CALLBACK at
 * once from a callback; ESBULK_ERR_CLOSED when a callback destroyed the
 * handle (it is freed when the call returns). Results taken by
 * esbulk_poll_results() count as delivered. With neither a result nor a
 * results callback it serves nothing: it waits until every document added
 * before the call has its outcome known, i.e. its result ready to pull. */
ESBULK_EXTERN esbulk_err_t esbulk_flush(esbulk_t *eb, int32_t timeout_ms);

/* Flushes for up to timeout_ms, then gives every document still without a
 * result one with ESBULK_ERR_CLOSED: FAILED ("not delivered: closed") for
 * those not sent, POSSIBLY for those whose request was in flight; serves all
 * results, and stops the I/O thread. Later adds fail with
 * ESBULK_ERR_CLOSED. ESBULK_OK when everything was delivered, else
 * ESBULK_ERR_TIMED_OUT. ESBULK_ERR_IN_CALLBACK at once from a callback (the
 * handle stays open); ESBULK_ERR_CLOSED when a callback destroyed the handle
 * (it is freed when the call returns). With neither a result nor a results
 * callback nothing is served: every result, ESBULK_ERR_CLOSED ones
 * included, stays pullable with esbulk_poll_results() until
 * esbulk_destroy(); ESBULK_OK then means every document had its outcome
 * within timeout_ms. */
ESBULK_EXTERN esbulk_err_t esbulk_close(esbulk_t *eb, int32_t timeout_ms);

/* Closes (timeout 0) if not closed, then frees the handle. From a callback,
 * destroy is deferred until the call that ran the callback returns; the
 * handle must not be used after that call returns: it is marked closing
 * (adds fail with ESBULK_ERR_CLOSED), the call stops waiting, delivers what
 * it has, closes (every document still gets its one result, through the
 * callbacks) and frees the handle. It frees results that were never pulled
 * and the batch esbulk_poll_results() handed out (not released yet): none
 * may be used after it. */
ESBULK_EXTERN void esbulk_destroy(esbulk_t *eb);

/* Pulls up to max results into out[0..max) (an array the caller owns),
 * waiting up to timeout_ms (0: do not wait, -1: until at least one) for the
 * first; never calls a callback (the stats callback included). The results
 * (library memory) stay valid, and their documents count against
 * buffer.max.docs, until esbulk_results_release() (or esbulk_destroy()).
 * One batch at a time: the results returned must be released before the
 * next call (a call that returned 0 or an error holds nothing). Works with
 * callbacks set too: each result goes to whichever takes it first, this
 * call or a serving one (esbulk_poll, flush, close). After esbulk_close()
 * it returns what is left, then 0, without waiting. With
 * result.failures_only=true only the non-indexed results come.
 * Returns the number of results (0: none in time), or a negative
 * esbulk_err_t: ESBULK_ERR_INVALID_ARG (eb or out NULL, max 0),
 * ESBULK_ERR_IN_CALLBACK (from a callback of eb), ESBULK_ERR_RESULTS_HELD
 * (the last batch is not released; nothing is taken), ESBULK_ERR_CLOSED (a
 * callback on another thread destroyed the handle). Call from one thread at
 * a time, like esbulk_poll(). */
ESBULK_EXTERN int32_t esbulk_poll_results(esbulk_t *eb, const esbulk_result_t **out,
                                          size_t max, int32_t timeout_ms);

/* Releases the batch the last esbulk_poll_results() returned: its results
 * and their strings are freed, and its documents stop counting against
 * buffer.max.docs. ESBULK_OK, also when nothing is held;
 * ESBULK_ERR_INVALID_ARG for a NULL eb; ESBULK_ERR_IN_CALLBACK from a
 * callback of eb (nothing is released: the batch is the poller's). Call it
 * from the thread that pulls (or strictly after it, as one goroutine's
 * calls are), never while another thread reads the batch. */
ESBULK_EXTERN esbulk_err_t esbulk_results_release(esbulk_t *eb);

/* Takes the oldest log line a handle made without a log callback kept (the
 * default: such a handle keeps its last 64 lines, so that a binding that
 * must not be called back from the library's threads can pull them as it
 * pulls results). *level gets its level (ESBULK_LOG_*), facility (may be
 * NULL with facility_size 0) and message the NUL-terminated texts, each cut
 * to its size. When older lines were dropped to make room, the first take
 * says how many (a warning, facility "log"). Only lines at or below the
 * log.level key are kept. Returns 1 when a line was taken, 0 when there is
 * none (always, for a handle with a log callback: the callback gets every
 * line), ESBULK_ERR_INVALID_ARG for a NULL eb, level or message, or a
 * message_size of 0. Never blocks. Thread-safe. */
ESBULK_EXTERN int32_t esbulk_log_take(esbulk_t *eb, int32_t *level, char *facility,
                                      size_t facility_size, char *message,
                                      size_t message_size);

/* Replaces the handle's credentials with those of conf (its auth.* keys,
 * checked as esbulk_new() checks them; nothing else of conf is read) for
 * every request that starts after the call: a rotated password, API key or
 * token, AWS temporary credentials before they expire. The kind of
 * credentials stays the handle's (ESBULK_ERR_INVALID_ARG otherwise).
 * Thread-safe: any thread, a callback's included, until esbulk_destroy(). */
ESBULK_EXTERN esbulk_err_t esbulk_auth_update(esbulk_t *eb, const esbulk_conf_t *conf,
                                              char *errstr, size_t errstr_size);

/* One request to the cluster with the handle's credentials (signed with
 * auth.aws.*), TLS settings and http.headers: method "GET", "HEAD", "PUT",
 * "POST" or "DELETE", path from "/" with its query, against the handle's
 * seed URLs in order until one answers; body (JSON) may be NULL. For the
 * few administrative requests a job makes around its load (index settings,
 * creation, a refresh, a task's state); documents go through esbulk_add().
 * Waits up to timeout_ms (0: request.timeout.ms). *status gets the HTTP
 * status; *response (when response is not NULL) the answer's body,
 * NUL-terminated, to free with esbulk_free(), its length in *response_len
 * (may be NULL). ESBULK_OK when an answer came, whatever its status.
 * Thread-safe; blocks the calling thread. */
ESBULK_EXTERN esbulk_err_t esbulk_request(esbulk_t *eb, const char *method, const char *path,
                                          const char *body, size_t body_len, int32_t timeout_ms,
                                          int32_t *status, char **response, size_t *response_len,
                                          char *errstr, size_t errstr_size);

/* Documents added whose result has not been served (through a callback) or
 * released (pulled) yet. Thread-safe. */
ESBULK_EXTERN int64_t esbulk_pending(esbulk_t *eb);

/* Statistics as JSON (see esbulk_stats_json(3)); free with esbulk_free().
 * NULL if out of memory. Thread-safe. */
ESBULK_EXTERN char *esbulk_stats_json(esbulk_t *eb);

#ifdef __cplusplus
}
#endif
#endif /* ESBULK_H */
