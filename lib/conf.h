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
    X(LOG_LEVEL, "log.level", INT, "6", 0, 7, NULL, 0)

#define ESBULK__CONF_ENUM_ID(ID, key, type, def, min, max, enums, secret) ESBULK__C_##ID,
typedef enum { ESBULK__CONF_PROPS(ESBULK__CONF_ENUM_ID) ESBULK__C__COUNT } esbulk__cid_t;
#undef ESBULK__CONF_ENUM_ID

struct esbulk_conf_s {
    char *str[ESBULK__C__COUNT];   /* the value as set (or the default) */
    int64_t num[ESBULK__C__COUNT]; /* parsed INT, BOOL (0/1) or ENUM index */
    esbulk_log_cb_t *log_cb;
    void *opaque;
};

const char *esbulk__conf_str(const esbulk_conf_t *conf, esbulk__cid_t id);
int64_t esbulk__conf_int(const esbulk_conf_t *conf, esbulk__cid_t id);

/* The key name of property i (for docs tests), NULL past the end. */
const char *esbulk__conf_key_at(int i);

#endif
