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
#define ESBULK_VERSION 0x00010000
#define ESBULK_VERSION_STR "0.1.0"

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
    ESBULK_ERR_TOO_LARGE = -13        /* a response or value exceeds a limit */
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
 * ESBULK_ERR_TOO_LARGE when dest is too small (then *value_len tells the
 * size needed), ESBULK_ERR_UNKNOWN_KEY for an unknown key. */
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

#ifdef __cplusplus
}
#endif
#endif /* ESBULK_H */
