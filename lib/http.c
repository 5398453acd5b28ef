/* HTTP plumbing over libcurl (http.h): seed URLs, the options every request
 * shares (auth, TLS, timeouts, headers) applied to a curl handle, and the
 * blocking, cancellable requests of the topology reads. */
#include "http.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static pthread_once_t global_once = PTHREAD_ONCE_INIT;

static void global_init(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

void esbulk__urls_free(esbulk__url_t *urls, int n)
{
    int i;

    for (i = 0; i < n; i++)
        free(urls[i].base);
    free(urls);
}

/* Parses one URL with libcurl's parser into "scheme://host:port[/path]". */
static esbulk_err_t parse_one(const char *text, size_t len, esbulk__url_t *out, char **username,
                              char **password, char *errstr, size_t errstr_size)
{
    char *s = esbulk__strndup(text, len), *scheme = NULL, *host = NULL, *port = NULL;
    char *path = NULL, *user = NULL, *pass = NULL;
    esbulk_err_t err = ESBULK_ERR_NOMEM;
    esbulk__buf_t b;
    CURLU *u = NULL;
    size_t plen;
    int bare = 0;

    esbulk__buf_init(&b, 4096);
    if (s == NULL || (u = curl_url()) == NULL)
        goto out;
    /* "host:port" means http, not libcurl's default of https */
    if (strstr(s, "://") == NULL) {
        bare = 1;
        char *with = malloc(len + 8);
        if (with == NULL)
            goto out;
        snprintf(with, len + 8, "http://%s", s);
        esbulk__wipe_str(s); /* the text may hold user:password@ */
        free(s);
        s = with;
    }
    if (curl_url_set(u, CURLUPART_URL, s, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
        (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0)) {
        /* The text may hold credentials: do not echo it. */
        esbulk__errstr(errstr, errstr_size, "invalid URL in \"urls\" (expected http[s]://host[:port])");
        err = ESBULK_ERR_BAD_VALUE;
        goto out;
    }
    /* no port given: the scheme's (80, 443), as a URL means to every HTTP
     * client (go-elasticsearch, the Java clients, elasticsearch-py 8: a
     * hosted cluster at https://host is on 443); a bare host, the server's
     * 9200 */
    curl_url_get(u, CURLUPART_PORT, &port, 0);
    curl_url_get(u, CURLUPART_PATH, &path, 0);
    curl_url_get(u, CURLUPART_USER, &user, CURLU_URLDECODE);
    curl_url_get(u, CURLUPART_PASSWORD, &pass, CURLU_URLDECODE);
    if (esbulk__buf_adds(&b, scheme) || esbulk__buf_adds(&b, "://") ||
        esbulk__buf_adds(&b, host) || esbulk__buf_addc(&b, ':') ||
        esbulk__buf_adds(&b, port ? port : bare ? "9200" : strcmp(scheme, "https") == 0 ? "443" : "80"))
        goto out;
    if (path != NULL) {
        plen = strlen(path);
        while (plen > 0 && path[plen - 1] == '/')
            plen--;
        if (plen > 0 && esbulk__buf_add(&b, path, plen))
            goto out;
    }
    if (user != NULL && *username == NULL) {
        if ((*username = esbulk__strdup(user)) == NULL)
            goto out;
        if (pass != NULL && (*password = esbulk__strdup(pass)) == NULL)
            goto out;
    }
    out->base = b.data;
    b.data = NULL;
    err = ESBULK_OK;
out:
    esbulk__wipe_str(pass);
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(path);
    curl_free(user);
    curl_free(pass);
    if (u != NULL)
        curl_url_cleanup(u);
    esbulk__buf_free(&b);
    esbulk__wipe_str(s);
    free(s);
    if (err == ESBULK_ERR_NOMEM)
        esbulk__errstr(errstr, errstr_size, "out of memory");
    return err;
}

esbulk_err_t esbulk__urls_parse(const char *list, esbulk__url_t **urls, int *n, char **username,
                                char **password, char *errstr, size_t errstr_size)
{
    esbulk__url_t *arr = NULL;
    const char *p = list;
    int count = 0;
    esbulk_err_t err;

    pthread_once(&global_once, global_init);
    *urls = NULL;
    *n = 0;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *q = p;
        esbulk__url_t *grown;

        while (len > 0 && (*q == ' ' || *q == '\t')) {
            q++;
            len--;
        }
        while (len > 0 && (q[len - 1] == ' ' || q[len - 1] == '\t'))
            len--;
        if (len > 0) {
            grown = realloc(arr, sizeof(*arr) * (size_t)(count + 1));
            if (grown == NULL) {
                esbulk__urls_free(arr, count);
                esbulk__errstr(errstr, errstr_size, "out of memory");
                return ESBULK_ERR_NOMEM;
            }
            arr = grown;
            err = parse_one(q, len, &arr[count], username, password, errstr, errstr_size);
            if (err != ESBULK_OK) {
                esbulk__urls_free(arr, count);
                return err;
            }
            count++;
        }
        if (end == NULL)
            break;
        p = end + 1;
    }
    if (count == 0) {
        free(arr);
        esbulk__errstr(errstr, errstr_size, "\"urls\" is empty: give at least one http[s]:// URL");
        return ESBULK_ERR_BAD_VALUE;
    }
    *urls = arr;
    *n = count;
    return ESBULK_OK;
}

void esbulk__http_opts_free(esbulk__http_opts_t *opts)
{
    char **secrets[] = {&opts->password, &opts->api_key, &opts->bearer, &opts->key_password,
                        &opts->headers, &opts->aws.secret, &opts->aws.token};
    size_t i;

    for (i = 0; i < ESBULK__ARRAY_LEN(secrets); i++)
        esbulk__wipe_str(*secrets[i]);
    free(opts->username);
    free(opts->password);
    free(opts->api_key);
    free(opts->bearer);
    free(opts->ca_file);
    free(opts->ca_path);
    free(opts->cert_file);
    free(opts->key_file);
    free(opts->key_password);
    free(opts->headers);
    free(opts->aws.region);
    free(opts->aws.service);
    free(opts->aws.key_id);
    free(opts->aws.secret);
    free(opts->aws.token);
    if (opts->auth_lock_made)
        pthread_mutex_destroy(&opts->auth_lock);
    memset(opts, 0, sizeof(*opts));
}

esbulk_err_t esbulk__http_opts_init(esbulk__http_opts_t *opts, const esbulk_conf_t *conf,
                                    const char *url_user, const char *url_pass, char *errstr,
                                    size_t errstr_size)
{
    const char *user = esbulk__conf_str(conf, ESBULK__C_AUTH_USERNAME);
    const char *pass = esbulk__conf_str(conf, ESBULK__C_AUTH_PASSWORD);

    pthread_once(&global_once, global_init);
    memset(opts, 0, sizeof(*opts));
    if (*user == '\0' && url_user != NULL) {
        user = url_user;
        pass = url_pass ? url_pass : "";
    }
#define COPY(field, value)                                        \
    do {                                                          \
        const char *v_ = (value);                                 \
        if (v_ != NULL && *v_ != '\0' && !(opts->field = esbulk__strdup(v_))) \
            goto nomem;                                           \
    } while (0)
    COPY(username, user);
    if (opts->username != NULL && (opts->password = esbulk__strdup(pass ? pass : "")) == NULL)
        goto nomem;
    COPY(api_key, esbulk__conf_str(conf, ESBULK__C_AUTH_API_KEY));
    COPY(bearer, esbulk__conf_str(conf, ESBULK__C_AUTH_BEARER));
    COPY(ca_file, esbulk__conf_str(conf, ESBULK__C_TLS_CA_FILE));
    COPY(ca_path, esbulk__conf_str(conf, ESBULK__C_TLS_CA_PATH));
    COPY(cert_file, esbulk__conf_str(conf, ESBULK__C_TLS_CERT_FILE));
    COPY(key_file, esbulk__conf_str(conf, ESBULK__C_TLS_KEY_FILE));
    COPY(key_password, esbulk__conf_str(conf, ESBULK__C_TLS_KEY_PASSWORD));
    COPY(headers, esbulk__conf_str(conf, ESBULK__C_HTTP_HEADERS)); /* checked by conf_set */
    /* each checked by conf_set; together here */
    COPY(aws.region, esbulk__conf_str(conf, ESBULK__C_AUTH_AWS_REGION));
    COPY(aws.service, esbulk__conf_str(conf, ESBULK__C_AUTH_AWS_SERVICE));
    COPY(aws.key_id, esbulk__conf_str(conf, ESBULK__C_AUTH_AWS_ACCESS_KEY_ID));
    COPY(aws.secret, esbulk__conf_str(conf, ESBULK__C_AUTH_AWS_SECRET_ACCESS_KEY));
    COPY(aws.token, esbulk__conf_str(conf, ESBULK__C_AUTH_AWS_SESSION_TOKEN));
#undef COPY
    if ((opts->username != NULL) + (opts->api_key != NULL) + (opts->bearer != NULL) +
            (opts->aws.region != NULL) > 1) {
        esbulk__errstr(errstr, errstr_size, "set only one of auth.username (or credentials in "
                       "a URL), auth.api_key, auth.bearer and auth.aws.region");
        esbulk__http_opts_free(opts);
        return ESBULK_ERR_BAD_VALUE;
    }
    if (opts->aws.region == NULL &&
        (opts->aws.key_id != NULL || opts->aws.secret != NULL || opts->aws.token != NULL)) {
        esbulk__errstr(errstr, errstr_size, "auth.aws.* keys are set but auth.aws.region is "
                       "not: requests are signed for a region (\"eu-west-1\")");
        esbulk__http_opts_free(opts);
        return ESBULK_ERR_BAD_VALUE;
    }
    if (opts->aws.region != NULL && (opts->aws.key_id == NULL || opts->aws.secret == NULL)) {
        esbulk__errstr(errstr, errstr_size, "auth.aws.region needs auth.aws.access_key_id and "
                       "auth.aws.secret_access_key");
        esbulk__http_opts_free(opts);
        return ESBULK_ERR_BAD_VALUE;
    }
    if (pthread_mutex_init(&opts->auth_lock, NULL) != 0)
        goto nomem;
    opts->auth_lock_made = 1;
    opts->signs = opts->aws.region != NULL;
    opts->insecure = (int)esbulk__conf_int(conf, ESBULK__C_TLS_INSECURE);
    opts->connect_timeout_ms = (long)esbulk__conf_int(conf, ESBULK__C_CONNECT_TIMEOUT_MS);
    opts->request_timeout_ms = (long)esbulk__conf_int(conf, ESBULK__C_REQUEST_TIMEOUT_MS);
    opts->response_max_bytes = (size_t)esbulk__conf_int(conf, ESBULK__C_RESPONSE_MAX_BYTES);
    return ESBULK_OK;
nomem:
    esbulk__http_opts_free(opts);
    esbulk__errstr(errstr, errstr_size, "out of memory");
    return ESBULK_ERR_NOMEM;
}

const char *esbulk__http_auth_kind(const esbulk__http_opts_t *opts)
{
    return opts->signs               ? "auth.aws.*"
           : opts->username != NULL ? "auth.username"
           : opts->api_key != NULL  ? "auth.api_key"
           : opts->bearer != NULL   ? "auth.bearer"
                                    : "none";
}

void esbulk__http_auth_swap(esbulk__http_opts_t *opts, esbulk__http_opts_t *from)
{
#define SWAP(f)               \
    do {                      \
        char *t_ = opts->f;   \
        opts->f = from->f;    \
        from->f = t_;         \
    } while (0)
    pthread_mutex_lock(&opts->auth_lock);
    SWAP(username);
    SWAP(password);
    SWAP(api_key);
    SWAP(bearer);
    SWAP(aws.region);
    SWAP(aws.service);
    SWAP(aws.key_id);
    SWAP(aws.secret);
    SWAP(aws.token);
    pthread_mutex_unlock(&opts->auth_lock);
#undef SWAP
}

/* curl_slist_append() copies each line into the list, and CURLOPT_HTTPHEADER
 * does not copy the list: the lines that may carry credentials (an
 * Authorization line, any of http.headers) are ours to wipe before
 * curl_slist_free_all() frees them. A list is a few short lines: all are
 * wiped. */
void esbulk__http_headers_free(struct curl_slist *headers)
{
    struct curl_slist *l;

    for (l = headers; l != NULL; l = l->next)
        if (l->data != NULL)
            esbulk__wipe_str(l->data);
    curl_slist_free_all(headers);
}

/* Appends line (n bytes allocated) to *headers, then wipes and frees it
 * (the list has its own copy). */
static esbulk_err_t append_line(struct curl_slist **headers, char *line, size_t n)
{
    struct curl_slist *l = curl_slist_append(*headers, line);

    esbulk__wipe(line, n);
    free(line);
    if (l == NULL)
        return ESBULK_ERR_NOMEM;
    *headers = l;
    return ESBULK_OK;
}

static esbulk_err_t add_header(struct curl_slist **headers, const char *prefix, const char *value)
{
    size_t n = strlen(prefix) + strlen(value) + 1;
    char *line = malloc(n);

    if (line == NULL)
        return ESBULK_ERR_NOMEM;
    snprintf(line, n, "%s%s", prefix, value);
    return append_line(headers, line, n);
}

/* The lines of http.headers (checked when set): "Name: value", or "Name;"
 * for an empty value, which curl would take for "remove Name". */
static esbulk_err_t add_custom_headers(struct curl_slist **headers, const char *value)
{
    esbulk__header_t h;
    const char *p = value;

    while (esbulk__header_next(&p, &h, NULL, 0) > 0) {
        size_t n = h.name_len + 2 + h.value_len + 1;
        char *line = malloc(n);

        if (line == NULL)
            return ESBULK_ERR_NOMEM;
        memcpy(line, h.name, h.name_len);
        if (h.value_len > 0) {
            memcpy(line + h.name_len, ": ", 2);
            memcpy(line + h.name_len + 2, h.value, h.value_len);
            line[n - 1] = '\0';
        } else {
            memcpy(line + h.name_len, ";", 2);
        }
        if (append_line(headers, line, n) != ESBULK_OK)
            return ESBULK_ERR_NOMEM;
    }
    return ESBULK_OK;
}

esbulk_err_t esbulk__http_apply(CURL *easy, const esbulk__http_opts_t *opts,
                                struct curl_slist **headers)
{
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, opts->connect_timeout_ms);
    curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    /* curl copies the strings it is given, and the lines are copied into
     * the list: nothing read under the lock is kept past it */
    pthread_mutex_lock((pthread_mutex_t *)&opts->auth_lock);
    if (opts->username != NULL) {
        curl_easy_setopt(easy, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(easy, CURLOPT_USERNAME, opts->username);
        curl_easy_setopt(easy, CURLOPT_PASSWORD, opts->password);
    }
    if ((opts->api_key != NULL && add_header(headers, "Authorization: ApiKey ", opts->api_key)) ||
        (opts->bearer != NULL && add_header(headers, "Authorization: Bearer ", opts->bearer))) {
        pthread_mutex_unlock((pthread_mutex_t *)&opts->auth_lock);
        return ESBULK_ERR_NOMEM;
    }
    pthread_mutex_unlock((pthread_mutex_t *)&opts->auth_lock);
    if (opts->headers != NULL && add_custom_headers(headers, opts->headers))
        return ESBULK_ERR_NOMEM;
    if (opts->ca_file != NULL)
        curl_easy_setopt(easy, CURLOPT_CAINFO, opts->ca_file);
    if (opts->ca_path != NULL)
        curl_easy_setopt(easy, CURLOPT_CAPATH, opts->ca_path);
    if (opts->cert_file != NULL)
        curl_easy_setopt(easy, CURLOPT_SSLCERT, opts->cert_file);
    if (opts->key_file != NULL)
        curl_easy_setopt(easy, CURLOPT_SSLKEY, opts->key_file);
    if (opts->key_password != NULL)
        curl_easy_setopt(easy, CURLOPT_KEYPASSWD, opts->key_password);
    if (opts->insecure) {
        curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    return ESBULK_OK;
}

esbulk_err_t esbulk__http_sign(const esbulk__http_opts_t *opts, const char *method,
                               const char *url, const unsigned char payload[ESBULK__SHA256_LEN],
                               struct curl_slist **headers, char **wire_url)
{
    esbulk__sigv4_t sig;
    esbulk_err_t err;
    size_t i;

    *wire_url = NULL;
    if (!opts->signs)
        return ESBULK_OK;
    pthread_mutex_lock((pthread_mutex_t *)&opts->auth_lock);
    err = esbulk__sigv4_sign(&opts->aws, method, url, payload, time(NULL), &sig);
    pthread_mutex_unlock((pthread_mutex_t *)&opts->auth_lock);
    if (err != ESBULK_OK)
        return err == ESBULK_ERR_INVALID_ARG ? ESBULK_OK : err; /* not a URL: curl says so */
    for (i = 0; sig.lines[i] != NULL; i++) {
        struct curl_slist *l = curl_slist_append(*headers, sig.lines[i]);

        if (l == NULL) {
            esbulk__sigv4_free(&sig);
            return ESBULK_ERR_NOMEM;
        }
        *headers = l;
    }
    *wire_url = sig.url;
    sig.url = NULL;
    esbulk__sigv4_free(&sig);
    return ESBULK_OK;
}

/* Where a response's body goes, and why it could not (the transfer ends
 * with CURLE_WRITE_ERROR either way: past response.max.bytes, or out of
 * memory, which must not be reported as the other). */
typedef struct body_sink_s {
    esbulk__buf_t *buf;
    esbulk_err_t err;
} body_sink_t;

static size_t on_body(char *data, size_t size, size_t nmemb, void *userdata)
{
    body_sink_t *sink = userdata;
    esbulk_err_t err = esbulk__buf_add(sink->buf, data, size * nmemb);

    if (err != ESBULK_OK) {
        sink->err = err;
        return 0; /* aborts the transfer: CURLE_WRITE_ERROR */
    }
    return size * nmemb;
}

/* The calling thread's stop switch (esbulk__http_set_thread_cancel). */
static _Thread_local esbulk__http_cancel_t *thread_cancel;

esbulk_err_t esbulk__http_cancel_init(esbulk__http_cancel_t *c)
{
    pthread_once(&global_once, global_init);
    atomic_init(&c->stop, 0);
    c->multi = curl_multi_init();
    return c->multi != NULL ? ESBULK_OK : ESBULK_ERR_NOMEM;
}

void esbulk__http_cancel_free(esbulk__http_cancel_t *c)
{
    if (c->multi != NULL)
        curl_multi_cleanup(c->multi);
    c->multi = NULL;
}

void esbulk__http_cancel(esbulk__http_cancel_t *c)
{
    atomic_store(&c->stop, 1);
    if (c->multi != NULL)
        curl_multi_wakeup(c->multi);
}

void esbulk__http_set_thread_cancel(esbulk__http_cancel_t *c)
{
    thread_cancel = c;
}

/* Runs easy on c's multi handle (which keeps its connections for the next
 * request) until it ends or c is stopped: ESBULK_ERR_CLOSED then, at once. */
static esbulk_err_t perform_cancellable(esbulk__http_cancel_t *c, CURL *easy, CURLcode *rc)
{
    esbulk_err_t err = ESBULK_OK;
    int running = 1;
    CURLMsg *msg;
    int left;

    *rc = CURLE_OK;
    if (atomic_load(&c->stop))
        return ESBULK_ERR_CLOSED;
    if (curl_multi_add_handle(c->multi, easy) != CURLM_OK)
        return ESBULK_ERR_NOMEM;
    for (;;) {
        if (curl_multi_perform(c->multi, &running) != CURLM_OK) {
            err = ESBULK_ERR_NOMEM;
            break;
        }
        if (running == 0)
            break;
        if (atomic_load(&c->stop)) {
            err = ESBULK_ERR_CLOSED;
            break;
        }
        curl_multi_poll(c->multi, NULL, 0, 1000, NULL);
        if (atomic_load(&c->stop)) {
            err = ESBULK_ERR_CLOSED;
            break;
        }
    }
    while ((msg = curl_multi_info_read(c->multi, &left)) != NULL)
        if (msg->msg == CURLMSG_DONE && msg->easy_handle == easy)
            *rc = msg->data.result;
    curl_multi_remove_handle(c->multi, easy);
    return err;
}

esbulk_err_t esbulk__http_request(const esbulk__http_opts_t *opts, const char *method,
                                  const char *url, const char *content_type, const char *body,
                                  size_t body_len, long timeout_ms, long *status,
                                  esbulk__buf_t *response, char *errstr, size_t errstr_size)
{
    struct curl_slist *headers = NULL;
    char curl_err[CURL_ERROR_SIZE] = "", *wire_url = NULL;
    unsigned char payload[ESBULK__SHA256_LEN];
    esbulk_err_t err = ESBULK_OK;
    body_sink_t sink = {response, ESBULK_OK};
    CURLcode rc;
    CURL *easy;

    *status = 0;
    esbulk__buf_reset(response);
    response->max = opts->response_max_bytes;
    easy = curl_easy_init();
    if (easy == NULL) {
        esbulk__errstr(errstr, errstr_size, "out of memory (curl_easy_init)");
        return ESBULK_ERR_NOMEM;
    }
    if (opts->signs)
        esbulk__sha256(body, body != NULL ? body_len : 0, payload);
    if (esbulk__http_apply(easy, opts, &headers) != ESBULK_OK ||
        (content_type != NULL && add_header(&headers, "Content-Type: ", content_type)) ||
        esbulk__http_sign(opts, method, url, payload, &headers, &wire_url) != ESBULK_OK) {
        err = ESBULK_ERR_NOMEM;
        esbulk__errstr(errstr, errstr_size, "out of memory");
        goto out;
    }
    curl_easy_setopt(easy, CURLOPT_URL, wire_url != NULL ? wire_url : url);
    curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, method);
    if (body != NULL) {
        curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
    } else if (strcmp(method, "GET") == 0) {
        curl_easy_setopt(easy, CURLOPT_HTTPGET, 1L);
    } else if (strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(easy, CURLOPT_NOBODY, 1L); /* no body is coming: none is waited for */
    }
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, timeout_ms > 0 ? timeout_ms : opts->request_timeout_ms);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, &sink);
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, curl_err);
    curl_easy_setopt(easy, CURLOPT_ACCEPT_ENCODING, "");
    if (thread_cancel != NULL) {
        err = perform_cancellable(thread_cancel, easy, &rc);
        if (err != ESBULK_OK) {
            esbulk__errstr(errstr, errstr_size, "%s %s: %s", method, url,
                           err == ESBULK_ERR_CLOSED ? "stopped: the handle is closing"
                                                    : "out of memory");
            goto out;
        }
    } else {
        rc = curl_easy_perform(easy);
    }
    if (rc == CURLE_WRITE_ERROR && sink.err == ESBULK_ERR_NOMEM) {
        esbulk__errstr(errstr, errstr_size, "out of memory reading the response from %s", url);
        err = ESBULK_ERR_NOMEM;
    } else if (rc == CURLE_WRITE_ERROR) {
        esbulk__errstr(errstr, errstr_size, "response from %s larger than response.max.bytes (%zu)",
                       url, opts->response_max_bytes);
        err = ESBULK_ERR_TOO_LARGE;
    } else if (rc != CURLE_OK) {
        esbulk__errstr(errstr, errstr_size, "%s %s: %s", method, url,
                       curl_err[0] ? curl_err : curl_easy_strerror(rc));
        err = ESBULK_ERR_TRANSPORT;
    } else {
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, status);
    }
out:
    esbulk__http_headers_free(headers);
    curl_easy_cleanup(easy);
    free(wire_url);
    return err;
}

char *esbulk__url_escape(const char *s)
{
    char *e = curl_easy_escape(NULL, s, 0), *copy;

    if (e == NULL)
        return NULL;
    copy = esbulk__strdup(e);
    curl_free(e);
    return copy;
}
