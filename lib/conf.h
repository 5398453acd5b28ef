/* Configuration: a table of typed properties, each set from a string. */
#ifndef ESBULK_CONF_H
#define ESBULK_CONF_H

#include "common.h"

typedef enum { ESBULK__CT_STR, ESBULK__CT_INT, ESBULK__CT_BOOL, ESBULK__CT_ENUM } esbulk__ctype_t;

/* X(ID, key, type, default, min, max, enum values "a|b", secret)
 * Every key is documented in man/man7/esbulk-config.7; a test checks both
 * lists agree. */
#define ESBULK__CONF_PROPS(X)                                                            \
    X(URLS, "urls", STR, "http://127.0.0.1:9200", 0, 0, NULL, 0)                         \
    X(AUTH_USERNAME, "auth.username", STR, "", 0, 0, NULL, 0)                            \
    X(AUTH_PASSWORD, "auth.password", STR, "", 0, 0, NULL, 1)                            \
    X(AUTH_API_KEY, "auth.api_key", STR, "", 0, 0, NULL, 1)                              \
    X(AUTH_BEARER, "auth.bearer", STR, "", 0, 0, NULL, 1)                                \
    X(AUTH_AWS_REGION, "auth.aws.region", STR, "", 0, 0, NULL, 0)                        \
    X(AUTH_AWS_SERVICE, "auth.aws.service", STR, "es", 0, 0, NULL, 0)                    \
    X(AUTH_AWS_ACCESS_KEY_ID, "auth.aws.access_key_id", STR, "", 0, 0, NULL, 0)          \
    X(AUTH_AWS_SECRET_ACCESS_KEY, "auth.aws.secret_access_key", STR, "", 0, 0, NULL, 1)  \
    X(AUTH_AWS_SESSION_TOKEN, "auth.aws.session_token", STR, "", 0, 0, NULL, 1)          \
    X(HTTP_HEADERS, "http.headers", STR, "", 0, 0, NULL, 1)                              \
    X(TLS_CA_FILE, "tls.ca.file", STR, "", 0, 0, NULL, 0)                                \
    X(TLS_CA_PATH, "tls.ca.path", STR, "", 0, 0, NULL, 0)                                \
    X(TLS_CERT_FILE, "tls.cert.file", STR, "", 0, 0, NULL, 0)                            \
    X(TLS_KEY_FILE, "tls.key.file", STR, "", 0, 0, NULL, 0)                              \
    X(TLS_KEY_PASSWORD, "tls.key.password", STR, "", 0, 0, NULL, 1)                      \
    X(TLS_INSECURE, "tls.insecure", BOOL, "false", 0, 1, NULL, 0)                        \
    X(CONNECT_TIMEOUT_MS, "connect.timeout.ms", INT, "5000", 1, 600000, NULL, 0)         \
    X(REQUEST_TIMEOUT_MS, "request.timeout.ms", INT, "30000", 1, 3600000, NULL, 0)       \
    X(RESPONSE_MAX_BYTES, "response.max.bytes", INT, "67108864", 1024, 2147483647, NULL, 0) \
    X(TOPOLOGY_DISCOVERY, "topology.discovery", BOOL, "true", 0, 1, NULL, 0)             \
    X(TOPOLOGY_REFRESH_MS, "topology.refresh.interval.ms", INT, "60000", 0, 86400000, NULL, 0) \
    X(LOG_LEVEL, "log.level", INT, "6", 0, 7, NULL, 0)                                   \
    X(ROUTING_LEVEL, "routing.level", ENUM, "node", 0, 0, "node|shard|off", 0)           \
    X(FLUSH_BYTES, "flush.bytes", INT, "5242880", 1024, 1073741824, NULL, 0)             \
    X(FLUSH_DOCS, "flush.docs", INT, "5000", 1, 1000000, NULL, 0)                        \
    X(FLUSH_INTERVAL_MS, "flush.interval.ms", INT, "1000", 1, 3600000, NULL, 0)          \
    X(MAX_INFLIGHT_PER_NODE, "max.inflight.per.node", INT, "2", 1, 64, NULL, 0)          \
    X(BUFFER_MAX_BYTES, "buffer.max.bytes", INT, "268435456", 65536, 1099511627776, NULL, 0) \
    X(BUFFER_MAX_DOCS, "buffer.max.docs", INT, "0", 0, 1000000000, NULL, 0)              \
    X(ENQUEUE_TIMEOUT_MS, "enqueue.timeout.ms", INT, "0", -1, 86400000, NULL, 0)         \
    X(MAX_DOC_BYTES, "max.doc.bytes", INT, "10485760", 16, 1073741824, NULL, 0)          \
    X(ID_GENERATE, "id.generate", ENUM, "time", 0, 0, "none|time|content", 0)            \
    X(BODY_VALIDATE, "body.validate", BOOL, "false", 0, 1, NULL, 0)                      \
    X(COMPRESSION, "compression", ENUM, "none", 0, 0, "none|gzip", 0)                    \
    X(COMPRESSION_LEVEL, "compression.level", INT, "1", 1, 9, NULL, 0)                   \
    X(RETRY_MAX, "retry.max", INT, "10", 0, 1000, NULL, 0)                               \
    X(RETRY_BACKOFF_MS, "retry.backoff.ms", INT, "100", 1, 600000, NULL, 0)              \
    X(RETRY_BACKOFF_MAX_MS, "retry.backoff.max.ms", INT, "10000", 1, 3600000, NULL, 0)   \
    X(RETRY_ON_CLUSTER_BLOCK, "retry.on.cluster_block", BOOL, "false", 0, 1, NULL, 0)    \
    X(DELIVERY_TIMEOUT_MS, "delivery.timeout.ms", INT, "300000", 0, 86400000, NULL, 0)   \
    X(ORDERING, "ordering", ENUM, "none", 0, 0, "none|per_id", 0)                        \
    X(RESULT_FAILURES_ONLY, "result.failures_only", BOOL, "false", 0, 1, NULL, 0)        \
    X(RESULT_KEEP_BODY, "result.keep_body", BOOL, "false", 0, 1, NULL, 0)                \
    X(RESULT_META, "result.meta", BOOL, "false", 0, 1, NULL, 0)                          \
    X(STATS_INTERVAL_MS, "stats.interval.ms", INT, "0", 0, 86400000, NULL, 0)            \
    X(NODE_RECHECK_MS, "node.recheck.ms", INT, "2000", 100, 3600000, NULL, 0)            \
    X(BULK_PIPELINE, "bulk.pipeline", STR, "", 0, 0, NULL, 0)                            \
    X(BULK_REFRESH, "bulk.refresh", ENUM, "false", 0, 0, "false|true|wait_for", 0)    \
    X(TOPOLOGY_IDLE_MS, "topology.idle.ms", INT, "300000", 100, 86400000, NULL, 0)     \
    X(TOPOLOGY_WAIT_MS, "topology.wait.ms", INT, "2000", 0, 3600000, NULL, 0)           \
    X(MALLOC_TUNE, "malloc.tune", BOOL, "true", 0, 1, NULL, 0)

#define ESBULK__CONF_ENUM_ID(ID, key, type, def, min, max, enums, secret) ESBULK__C_##ID,
typedef enum { ESBULK__CONF_PROPS(ESBULK__CONF_ENUM_ID) ESBULK__C__COUNT } esbulk__cid_t;
#undef ESBULK__CONF_ENUM_ID

/* The values of the ENUM keys, in the order of their "a|b|c" lists above
 * (check_conf checks that every name sits at its constant's position). */
typedef enum { ESBULK__ROUTING_NODE = 0, ESBULK__ROUTING_SHARD, ESBULK__ROUTING_OFF } esbulk__routing_level_t;
typedef enum { ESBULK__IDGEN_NONE = 0, ESBULK__IDGEN_TIME, ESBULK__IDGEN_CONTENT } esbulk__idgen_t;
typedef enum { ESBULK__COMPRESS_NONE = 0, ESBULK__COMPRESS_GZIP } esbulk__compression_t;
typedef enum { ESBULK__ORDER_NONE = 0, ESBULK__ORDER_PER_ID } esbulk__ordering_t;
typedef enum {
    ESBULK__REFRESH_FALSE = 0,
    ESBULK__REFRESH_TRUE,
    ESBULK__REFRESH_WAIT_FOR
} esbulk__bulk_refresh_t;

struct esbulk_conf_s {
    char *str[ESBULK__C__COUNT];   /* the value as set (or the default) */
    int64_t num[ESBULK__C__COUNT]; /* parsed INT, BOOL (0/1) or ENUM index */
    esbulk_log_cb_t *log_cb;
    esbulk_result_cb_t *result_cb;
    esbulk_results_cb_t *results_cb;
    esbulk_stats_cb_t *stats_cb;
    void *opaque;
};

/* A property's value: inline, as esbulk_add reads several for each
 * document. */
static inline const char *esbulk__conf_str(const esbulk_conf_t *conf, esbulk__cid_t id)
{
    return conf->str[id];
}

static inline int64_t esbulk__conf_int(const esbulk_conf_t *conf, esbulk__cid_t id)
{
    return conf->num[id];
}

/* One line of an http.headers value: its name and its value, without the
 * blanks around the value (either may be empty: an empty value is sent). */
typedef struct {
    const char *name, *value;
    size_t name_len, value_len;
} esbulk__header_t;

/* The next header of the http.headers value at *p, which it moves past it:
 * 1 with *h set, 0 at the end, or ESBULK_ERR_BAD_VALUE (negative) with
 * errstr naming the line's fault and, once it is known, the header's name
 * (never its value: the key is secret). Lines are separated by LF (a CR
 * before it is dropped), blank ones skipped; a line is "Name: value", the
 * name an HTTP token, the value without control bytes but tab. The headers
 * the library sets itself (Authorization, Content-Type, Host, ...) are
 * refused. */
int esbulk__header_next(const char **p, esbulk__header_t *h, char *errstr, size_t errstr_size);

/* The name of value v of ENUM property id ("off" for ROUTING_LEVEL, 2);
 * NULL when id is not an ENUM or v is out of range. */
const char *esbulk__conf_enum_name(esbulk__cid_t id, int v);

/* The key name of property i (for docs tests), NULL past the end. */
const char *esbulk__conf_key_at(int i);

#endif
