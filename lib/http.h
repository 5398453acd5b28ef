/* HTTP plumbing shared by the topology's blocking requests (topology_read.c,
 * run on the topology thread of fetch.c) and the I/O thread's bulk transfers
 * (io.c): parsing seed URLs, applying auth/TLS/timeouts to a curl handle,
 * freeing header lists with their credentials wiped, and cancellable
 * blocking requests. Only http.c and io.c call libcurl; the others that
 * include this header (through engine.h too) use its types alone. */
#ifndef ESBULK_HTTP_H
#define ESBULK_HTTP_H

#include "buf.h"
#include "conf.h"
#include "sigv4.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>

/* A seed or node address: "scheme://host:port" plus an optional path prefix,
 * without credentials. */
typedef struct {
    char *base; /* e.g. "http://127.0.0.1:9200" or "https://h:443/es" */
} esbulk__url_t;

/* Splits conf "urls" (comma-separated) into *urls (count in *n). Credentials
 * in a URL (user:pass@) are moved into *username / *password (malloc'ed, may
 * stay NULL) so that no URL kept or logged carries them. */
esbulk_err_t esbulk__urls_parse(const char *list, esbulk__url_t **urls, int *n, char **username,
                                char **password, char *errstr, size_t errstr_size);
void esbulk__urls_free(esbulk__url_t *urls, int n);

/* Credentials and TLS settings, owned copies. */
typedef struct {
    char *username, *password, *api_key, *bearer;
    char *ca_file, *ca_path, *cert_file, *key_file, *key_password;
    char *headers; /* http.headers, checked (NULL: none) */
    esbulk__aws_t aws; /* auth.aws.*: requests signed when aws.region is set */
    /* The credentials above (username, password, api_key, bearer, aws) may
     * be replaced on a live handle (esbulk_auth_update): they are read and
     * swapped under auth_lock. Their kind does not change. */
    int signs; /* aws.region is set (fixed: the kind does not change) */
    int auth_lock_made;
    pthread_mutex_t auth_lock;
    int insecure;
    long connect_timeout_ms, request_timeout_ms;
    size_t response_max_bytes;
} esbulk__http_opts_t;

/* Fills opts from conf; url_user/url_pass (from esbulk__urls_parse) are used
 * when auth.username is not set. ESBULK_ERR_BAD_VALUE, said in errstr, for
 * keys that do not go together (two ways to authenticate, auth.aws.*
 * without its region or its keys). */
esbulk_err_t esbulk__http_opts_init(esbulk__http_opts_t *opts, const esbulk_conf_t *conf,
                                    const char *url_user, const char *url_pass, char *errstr,
                                    size_t errstr_size);
void esbulk__http_opts_free(esbulk__http_opts_t *opts);
/* Which credentials opts holds: "none", or the key that names them
 * ("auth.username", "auth.api_key", "auth.bearer", "auth.aws.*"). */
const char *esbulk__http_auth_kind(const esbulk__http_opts_t *opts);
/* Swaps the credentials of opts (a live handle's) with those of from (made
 * by esbulk__http_opts_init, of the same kind), under opts' lock: from
 * then holds the old ones, for esbulk__http_opts_free(). */
void esbulk__http_auth_swap(esbulk__http_opts_t *opts, esbulk__http_opts_t *from);
/* A topology's HTTP options (topology.c; declared here, where the type is,
 * so that topology.h stays free of libcurl): esbulk_auth_update() swaps
 * their credentials too. */
esbulk__http_opts_t *esbulk__topology_http(esbulk_topology_t *topo);

/* Applies opts to easy; appends the auth headers and those of
 * http.headers to *headers, which must be freed with
 * esbulk__http_headers_free(). */
esbulk_err_t esbulk__http_apply(CURL *easy, const esbulk__http_opts_t *opts,
                                struct curl_slist **headers);
/* With auth.aws.* (opts->aws.region set): signs a request of method to
 * url whose body's SHA-256 is payload (esbulk__sha256() of the bytes as
 * sent, compressed if they are), at the current time. Appends the signing
 * lines to *headers and sets *wire_url to the URL to ask for (malloc'ed:
 * the query in the form signed). Without auth.aws.*, *wire_url is NULL and
 * nothing is done. ESBULK_ERR_NOMEM. */
esbulk_err_t esbulk__http_sign(const esbulk__http_opts_t *opts, const char *method,
                               const char *url, const unsigned char payload[ESBULK__SHA256_LEN],
                               struct curl_slist **headers, char **wire_url);
/* curl_slist_free_all() of a header list, after wiping its lines (an
 * Authorization line or one of http.headers may carry credentials). */
void esbulk__http_headers_free(struct curl_slist *headers);

/* A blocking request (method "GET", "PUT", "POST", "DELETE"; body may be
 * NULL). *status gets the HTTP status. Transport failures return
 * ESBULK_ERR_TRANSPORT with curl's message in errstr; an answer larger than
 * response_max_bytes returns ESBULK_ERR_TOO_LARGE. */
esbulk_err_t esbulk__http_request(const esbulk__http_opts_t *opts, const char *method,
                                  const char *url, const char *content_type, const char *body,
                                  size_t body_len, long timeout_ms, long *status,
                                  esbulk__buf_t *response, char *errstr, size_t errstr_size);

/* A stop switch for blocking requests: a thread that set it for itself
 * (esbulk__http_set_thread_cancel) runs its requests on c's multi handle,
 * which keeps connections alive between them, and any thread can stop them
 * at once with esbulk__http_cancel(): they then fail with ESBULK_ERR_CLOSED,
 * and so does every later one on that thread. */
typedef struct {
    CURLM *multi;
    atomic_int stop;
} esbulk__http_cancel_t;

esbulk_err_t esbulk__http_cancel_init(esbulk__http_cancel_t *c);
void esbulk__http_cancel_free(esbulk__http_cancel_t *c);
/* Thread-safe. */
void esbulk__http_cancel(esbulk__http_cancel_t *c);
/* c (NULL: none) for the calling thread's requests. */
void esbulk__http_set_thread_cancel(esbulk__http_cancel_t *c);

/* Percent-encodes s for a URL path segment into a malloc'ed string. */
char *esbulk__url_escape(const char *s);

#endif
