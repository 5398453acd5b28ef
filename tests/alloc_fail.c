/* Allocation failures: fails the Nth allocation, for N = 1, 2, ... up to the
 * count a clean run makes, and checks each run ends in an error code or in
 * success: no crash, no leak, no lost or doubled result.
 *
 * The allocations failed are the library's own (linked with
 * -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,--wrap=free
 * over the lib/ objects, so lib/ has no test hook) and libcurl's
 * (curl_global_init_mem); jansson's (json_set_alloc_funcs) are tracked for
 * leaks, and failed too with --fail-jansson (see json_malloc_cb). Leaks are found
 * by a table of the live blocks handed out: after a run, every block it
 * allocated must have been freed (the process-wide curl/TLS state is set up
 * by a first, clean run, before counting).
 *
 * Scenarios:
 *   parsers - esbulk__response_parse over the response data files (2xx and
 *             error statuses), the topology parsers over theirs;
 *   engine  - esbulk_new -> 12 esbulk_add -> esbulk_flush -> esbulk_close ->
 *             esbulk_destroy against a canned local server (this file: GET /,
 *             _nodes/http, _alias, _data_stream, _cluster/state, _bulk with
 *             one item 400 and the rest 201). Every document added gets
 *             exactly one result; a refused add gets none.
 * The I/O and topology threads allocate concurrently, so in the engine
 * scenario "the Nth" is the Nth in time, not a fixed call site.
 *
 *   tests/alloc_fail [--full] [--fail-jansson] [--stride K] [parsers|engine]...
 * Without --full, the engine sweep covers N = 1..200 and every 10th N
 * beyond (for make check); --full covers every N. */
#define _GNU_SOURCE 1
#include "response.h"
#include "topology.h"

#include <esbulk.h>

#include <arpa/inet.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
void __wrap_free(void *p);

/* ------------------------------------------------------------------------- */
/* The counting allocator and its table of live blocks */

static atomic_long counter, fail_at; /* fail_at 0: never */
static atomic_int failed_one;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
#define TABLE_SIZE (1u << 20)
static void *table[TABLE_SIZE]; /* open addressing; (void *)1 marks a deleted slot */
static long live;

static size_t slot_of(const void *p)
{
    return (size_t)(((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull >> 44) & (TABLE_SIZE - 1);
}

static void track(void *p)
{
    size_t i;

    pthread_mutex_lock(&table_lock);
    for (i = slot_of(p); table[i] != NULL && table[i] != (void *)1; i = (i + 1) & (TABLE_SIZE - 1))
        ;
    table[i] = p;
    live++;
    pthread_mutex_unlock(&table_lock);
}

static void untrack(void *p)
{
    size_t i;

    pthread_mutex_lock(&table_lock);
    for (i = slot_of(p); table[i] != NULL; i = (i + 1) & (TABLE_SIZE - 1))
        if (table[i] == p) {
            table[i] = (void *)1;
            live--;
            break;
        }
    pthread_mutex_unlock(&table_lock);
}

static int fail_now(void)
{
    long n = atomic_fetch_add(&counter, 1) + 1, at = atomic_load(&fail_at);

    if (at > 0 && n == at) {
        atomic_store(&failed_one, 1);
        errno = ENOMEM;
        return 1;
    }
    return 0;
}

void *__wrap_malloc(size_t n)
{
    void *p = fail_now() ? NULL : __real_malloc(n);
    if (p != NULL)
        track(p);
    return p;
}

void *__wrap_calloc(size_t n, size_t m)
{
    void *p = fail_now() ? NULL : __real_calloc(n, m);
    if (p != NULL)
        track(p);
    return p;
}

void *__wrap_realloc(void *p, size_t n)
{
    void *q;

    if (fail_now())
        return NULL;
    q = __real_realloc(p, n);
    if (q != NULL || n == 0) {
        if (p != NULL)
            untrack(p);
        if (q != NULL)
            track(q);
    }
    return q;
}

char *__wrap_strdup(const char *s)
{
    char *p = fail_now() ? NULL : __real_strdup(s);
    if (p != NULL)
        track(p);
    return p;
}

void __wrap_free(void *p)
{
    if (p != NULL)
        untrack(p);
    __real_free(p);
}

static char *curl_strdup_cb(const char *s) { return __wrap_strdup(s); }
static void *curl_malloc_cb(size_t n) { return __wrap_malloc(n); }
static void *curl_calloc_cb(size_t n, size_t m) { return __wrap_calloc(n, m); }
static void *curl_realloc_cb(void *p, size_t n) { return __wrap_realloc(p, n); }
static void curl_free_cb(void *p) { __wrap_free(p); }

/* jansson's blocks are tracked (leaks) but never failed, unless
 * --fail-jansson: jansson 2.14's lexer ignores a failed allocation in
 * lex_save() and then overruns its buffer (akheron/jansson#362, fixed by
 * the pull requests #735/#747), a crash inside jansson that no caller can
 * prevent. */
static int fail_jansson;
static void *json_malloc_cb(size_t n)
{
    void *p = __real_malloc(n);
    if (p != NULL)
        track(p);
    return p;
}

/* ------------------------------------------------------------------------- */
/* The canned server: one thread per connection, no allocation counted */

static int server_port;
static atomic_int bulk_requests;

static void reply(int fd, int status, const char *body)
{
    char head[256];
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %zu"
                     "\r\n\r\n", status, strlen(body));

    if (write(fd, head, (size_t)n) < 0 || write(fd, body, strlen(body)) < 0)
        return;
}

static void *serve_conn(void *arg)
{
    int fd = (int)(intptr_t)arg;
    static _Thread_local char buf[1 << 20], out[1 << 18];
    size_t have = 0;

    for (;;) {
        char *end, *cl;
        size_t head_len, body_len = 0;
        ssize_t got;

        while ((end = memmem(buf, have, "\r\n\r\n", 4)) == NULL) {
            if (have == sizeof(buf) || (got = read(fd, buf + have, sizeof(buf) - have)) <= 0)
                goto done;
            have += (size_t)got;
        }
        head_len = (size_t)(end - buf) + 4;
        *end = '\0';
        if ((cl = strcasestr(buf, "\r\ncontent-length:")) != NULL)
            body_len = strtoul(cl + 17, NULL, 10);
        if (strcasestr(buf, "\r\nexpect: 100-continue") != NULL &&
            write(fd, "HTTP/1.1 100 Continue\r\n\r\n", 25) < 0)
            goto done;
        if (head_len + body_len > sizeof(buf))
            goto done;
        while (have < head_len + body_len) {
            if ((got = read(fd, buf + have, head_len + body_len - have)) <= 0)
                goto done;
            have += (size_t)got;
        }
        if (strncmp(buf, "POST ", 5) == 0 && strstr(buf, "_bulk") != NULL) {
            const char *p = buf + head_len, *stop = p + body_len;
            size_t o, n = 0;

            atomic_fetch_add(&bulk_requests, 1);
            o = (size_t)snprintf(out, sizeof(out), "{\"took\":1,\"errors\":true,\"items\":[");
            while (p < stop) {
                const char *nl = memchr(p, '\n', (size_t)(stop - p));
                size_t len = nl ? (size_t)(nl - p) : (size_t)(stop - p);

                if (len > 10 && strncmp(p, "{\"index\":{", 10) == 0 && o + 300 < sizeof(out)) {
                    /* the 4th document of every request fails: a 400 item */
                    o += (size_t)snprintf(out + o, sizeof(out) - o, "%s%s", n ? "," : "",
                                          n == 3 ? "{\"index\":{\"_index\":\"idx\",\"status\":400,"
                                                   "\"error\":{\"type\":\"mapper_parsing_exception\","
                                                   "\"reason\":\"bad\"}}}"
                                                 : "{\"index\":{\"_index\":\"idx\",\"_id\":\"x\","
                                                   "\"status\":201,\"result\":\"created\","
                                                   "\"_seq_no\":1,\"_primary_term\":1,"
                                                   "\"_version\":1}}");
                    n++;
                }
                p += len + 1;
            }
            snprintf(out + o, sizeof(out) - o, "]}");
            reply(fd, 200, out);
        } else if (strncmp(buf, "GET / ", 6) == 0) {
            reply(fd, 200, "{\"name\":\"n1\",\"version\":{\"distribution\":\"opensearch\","
                           "\"number\":\"2.19.6\"}}");
        } else if (strncmp(buf, "GET /_nodes/http", 16) == 0) {
            snprintf(out, sizeof(out), "{\"nodes\":{\"n1\":{\"name\":\"n1\",\"http\":"
                     "{\"publish_address\":\"127.0.0.1:%d\"}}}}", server_port);
            reply(fd, 200, out);
        } else if (strncmp(buf, "GET /_cluster/state", 19) == 0) {
            reply(fd, 200, "{\"metadata\":{\"indices\":{\"idx\":{\"state\":\"open\","
                           "\"routing_num_shards\":1024,\"settings\":{\"index\":"
                           "{\"number_of_shards\":\"2\",\"version\":{\"created\":\"136407827\"}}}}}},"
                           "\"routing_table\":{\"indices\":{\"idx\":{\"shards\":{"
                           "\"0\":[{\"primary\":true,\"node\":\"n1\"}],"
                           "\"1\":[{\"primary\":true,\"node\":\"n1\"}]}}}}}");
        } else {
            reply(fd, 404, "{\"error\":{\"type\":\"not_found\"},\"status\":404}");
        }
        memmove(buf, buf + head_len + body_len, have - head_len - body_len);
        have -= head_len + body_len;
    }
done:
    close(fd);
    return NULL;
}

static void *serve(void *arg)
{
    int lfd = (int)(intptr_t)arg;

    for (;;) {
        int fd = accept(lfd, NULL, NULL);
        pthread_t t;
        pthread_attr_t attr;

        if (fd < 0)
            continue;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &attr, serve_conn, (void *)(intptr_t)fd) != 0)
            close(fd);
        pthread_attr_destroy(&attr);
    }
    return NULL;
}

static void start_server(void)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    int lfd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    pthread_t t;

    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(lfd, 64) != 0 ||
        getsockname(lfd, (struct sockaddr *)&sa, &len) != 0) {
        perror("alloc_fail: server");
        exit(99);
    }
    server_port = ntohs(sa.sin_port);
    if (pthread_create(&t, NULL, serve, (void *)(intptr_t)lfd) != 0)
        exit(99);
    pthread_detach(t);
}

/* ------------------------------------------------------------------------- */
/* Scenarios: each returns 0 when the run ended well, else prints and 1 */

static const char *srcdir(void)
{
    return getenv("top_srcdir") ? getenv("top_srcdir") : ".";
}

typedef struct {
    char *data;
    size_t len;
    char name[300];
} file_t;

static file_t files[64];
static int nfiles, ntopo_first;

static void load_dir(const char *sub)
{
    char path[4096];
    struct dirent *de;
    DIR *d;

    snprintf(path, sizeof(path), "%s/tests/data/%s", srcdir(), sub);
    if ((d = opendir(path)) == NULL) {
        perror(path);
        exit(99);
    }
    while ((de = readdir(d)) != NULL && nfiles < 64) {
        FILE *fp;
        long n;

        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/tests/data/%s/%s", srcdir(), sub, de->d_name);
        if ((fp = fopen(path, "rb")) == NULL || fseek(fp, 0, SEEK_END) != 0 ||
            (n = ftell(fp)) < 0 || n > 8192) {
            if (fp)
                fclose(fp);
            continue;
        }
        rewind(fp);
        files[nfiles].data = __real_malloc((size_t)n + 1);
        files[nfiles].len = fread(files[nfiles].data, 1, (size_t)n, fp);
        snprintf(files[nfiles].name, sizeof(files[nfiles].name), "%s", de->d_name);
        nfiles++;
        fclose(fp);
    }
    closedir(d);
}

static int run_parsers(void)
{
    static const long statuses[] = {200, 429, 400, 500};
    int f, k;

    for (f = 0; f < ntopo_first; f++)
        for (k = 0; k < 4; k++) {
            esbulk__resp_t r;
            esbulk_err_t err = esbulk__response_parse(statuses[k], files[f].data, files[f].len,
                                                      3, 0, &r);

            if (err == ESBULK_OK) {
                if (r.klass != ESBULK__RESP_OK && r.error_reason == NULL) {
                    fprintf(stderr, "%s: class %d without a reason\n", files[f].name, r.klass);
                    return 1;
                }
                esbulk__response_free(&r);
            } else if (err != ESBULK_ERR_NOMEM) {
                fprintf(stderr, "%s: response parse returned %d\n", files[f].name, err);
                return 1;
            }
        }
    for (f = ntopo_first; f < nfiles; f++) {
        json_t *root = json_loadb(files[f].data, files[f].len, 0, NULL);
        char **ids = NULL, *dist = NULL, *ver = NULL;
        esbulk__index_t e;
        esbulk_err_t err;
        int32_t s;

        if (root == NULL)
            continue; /* a failed allocation in jansson, or not JSON */
        if (strncmp(files[f].name, "root_", 5) == 0) {
            err = esbulk__topology_parse_root(root, &dist, &ver, NULL, 0);
            free(dist);
            free(ver);
        } else {
            memset(&e, 0, sizeof(e));
            esbulk_layout_t *l = &e.layout;
            l->shards = 1;
            l->partition_size = 1;
            e.write_index = "idx";
            err = esbulk__topology_parse_state(root, "idx", 0, &e, &ids, NULL, 0);
            for (s = 0; ids != NULL && s < e.layout.shards; s++)
                free(ids[s]);
            free(ids);
            free(e.reason);
        }
        json_decref(root);
        if (err != ESBULK_OK && err != ESBULK_ERR_NOMEM && err != ESBULK_ERR_BAD_RESPONSE) {
            fprintf(stderr, "%s: topology parse returned %d\n", files[f].name, err);
            return 1;
        }
    }
    return 0;
}

#define NDOCS 12
static atomic_int results[NDOCS], indexed;

static void on_result(esbulk_t *eb, const esbulk_result_t *result, void *opaque)
{
    intptr_t i = (intptr_t)esbulk_result_opaque(result);

    (void)eb; (void)opaque;
    if (esbulk_result_outcome(result) == ESBULK_OUTCOME_INDEXED)
        atomic_fetch_add(&indexed, 1);
    if (i >= 1 && i <= NDOCS)
        atomic_fetch_add(&results[i - 1], 1);
    else
        atomic_store(&results[0], 1000); /* an opaque that is not ours */
}

static int run_engine(void)
{
    esbulk_conf_t *conf = esbulk_conf_new();
    char url[64], errstr[512];
    int added[NDOCS], i, bad = 0;
    esbulk_t *eb;

    memset(added, 0, sizeof(added));
    for (i = 0; i < NDOCS; i++)
        atomic_store(&results[i], 0);
    if (conf == NULL)
        return 0;
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", server_port);
    if (esbulk_conf_set(conf, "urls", url, NULL, 0) != ESBULK_OK ||
        esbulk_conf_set(conf, "flush.docs", "5", NULL, 0) != ESBULK_OK ||
        esbulk_conf_set(conf, "retry.backoff.ms", "1", NULL, 0) != ESBULK_OK ||
        esbulk_conf_set(conf, "retry.max", "3", NULL, 0) != ESBULK_OK ||
        esbulk_conf_set(conf, "delivery.timeout.ms", "3000", NULL, 0) != ESBULK_OK ||
        esbulk_conf_set(conf, "flush.interval.ms", "5", NULL, 0) != ESBULK_OK ||
        /* two more allocations for each request's header list */
        esbulk_conf_set(conf, "http.headers", "X-Opaque-Id: alloc-fail\nX-Empty:", NULL, 0) !=
            ESBULK_OK ||
        /* each request signed (auth.aws.*): the signer's allocations */
        esbulk_conf_set(conf, "auth.aws.region", "eu-west-1", NULL, 0) != ESBULK_OK ||
        esbulk_conf_set(conf, "auth.aws.access_key_id", "AKIDEXAMPLE", NULL, 0) != ESBULK_OK ||
        esbulk_conf_set(conf, "auth.aws.secret_access_key", "s3cr3t", NULL, 0) != ESBULK_OK ||
        esbulk_conf_set(conf, "auth.aws.session_token", "t0k3n", NULL, 0) != ESBULK_OK) {
        esbulk_conf_destroy(conf);
        return 0;
    }
    esbulk_conf_set_result_cb(conf, on_result);
    eb = esbulk_new(conf, errstr, sizeof(errstr));
    esbulk_conf_destroy(conf);
    if (eb == NULL)
        return 0;
    for (i = 0; i < NDOCS; i++) {
        char id[16], body[64];

        snprintf(id, sizeof(id), "d%d", i);
        snprintf(body, sizeof(body), "{\"n\":%d,\"s\":\"\\u00e9\"}", i);
        added[i] = esbulk_add(eb, ESBULK_OP_INDEX, "idx", id, strlen(id), NULL, 0, body,
                              strlen(body), (void *)(intptr_t)(i + 1), errstr,
                              sizeof(errstr)) == ESBULK_OK;
    }
    {
        /* fresh credentials on the live handle: NOMEM or done, never half */
        esbulk_conf_t *upd = esbulk_conf_new();

        if (upd != NULL &&
            esbulk_conf_set(upd, "auth.aws.region", "eu-west-1", NULL, 0) == ESBULK_OK &&
            esbulk_conf_set(upd, "auth.aws.access_key_id", "AKIDEXAMPLE", NULL, 0) == ESBULK_OK &&
            esbulk_conf_set(upd, "auth.aws.secret_access_key", "s3cr3t2", NULL, 0) == ESBULK_OK &&
            esbulk_conf_set(upd, "auth.aws.session_token", "t0k3n2", NULL, 0) == ESBULK_OK) {
            esbulk_err_t err = esbulk_auth_update(eb, upd, errstr, sizeof(errstr));

            if (err != ESBULK_OK && err != ESBULK_ERR_NOMEM) {
                fprintf(stderr, "esbulk_auth_update: %s: %s\n", esbulk_err2str(err), errstr);
                bad = 1;
            }
        }
        esbulk_conf_destroy(upd);
    }
    {
        /* an administrative request: an answer, NOMEM or the transport's error */
        char *resp = NULL;
        int32_t st;
        esbulk_err_t err = esbulk_request(eb, "PUT", "/idx/_settings", "{}", 2, 2000, &st,
                                          &resp, NULL, errstr, sizeof(errstr));

        if (err != ESBULK_OK && err != ESBULK_ERR_NOMEM && err != ESBULK_ERR_TRANSPORT) {
            fprintf(stderr, "esbulk_request: %s: %s\n", esbulk_err2str(err), errstr);
            bad = 1;
        }
        if (err != ESBULK_OK && resp != NULL) {
            fprintf(stderr, "esbulk_request: a response with an error\n");
            bad = 1;
        }
        esbulk_free(resp);
    }
    esbulk_flush(eb, 5000);
    esbulk_close(eb, 5000);
    esbulk_destroy(eb);
    for (i = 0; i < NDOCS; i++) {
        int r = atomic_load(&results[i]);

        if (r != (added[i] ? 1 : 0)) {
            fprintf(stderr, "document %d: added %d, %d results\n", i, added[i], r);
            bad = 1;
        }
    }
    return bad;
}

/* ------------------------------------------------------------------------- */

typedef struct {
    const char *name;
    int (*run)(void);
} scenario_t;

/* One run with the Nth allocation failing (0: none). 0 when it ended well. */
static int one(const scenario_t *sc, long n, long *allocs)
{
    long before;
    int r;

    pthread_mutex_lock(&table_lock);
    before = live;
    pthread_mutex_unlock(&table_lock);
    atomic_store(&counter, 0);
    atomic_store(&failed_one, 0);
    atomic_store(&fail_at, n);
    r = sc->run();
    atomic_store(&fail_at, 0);
    if (allocs)
        *allocs = atomic_load(&counter);
    pthread_mutex_lock(&table_lock);
    if (live != before) {
        fprintf(stderr, "%s, allocation %ld failing: %ld blocks leaked\n", sc->name, n,
                live - before);
        r = 1;
    }
    pthread_mutex_unlock(&table_lock);
    if (r)
        fprintf(stderr, "FAIL: %s with allocation %ld failing\n", sc->name, n);
    return r;
}

int main(int argc, char **argv)
{
    static const scenario_t scenarios[] = {{"parsers", run_parsers}, {"engine", run_engine}};
    long quick_max = 200, stride = 10;
    int full = 0, i, a, fails = 0, want[2] = {0, 0}, any = 0;

    for (a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--full") == 0)
            full = 1;
        else if (strcmp(argv[a], "--fail-jansson") == 0)
            fail_jansson = 1;
        else if (strcmp(argv[a], "--stride") == 0 && a + 1 < argc)
            stride = atol(argv[++a]);
        else if (strcmp(argv[a], "parsers") == 0)
            want[0] = any = 1;
        else if (strcmp(argv[a], "engine") == 0)
            want[1] = any = 1;
        else {
            fprintf(stderr, "usage: alloc_fail [--full] [--fail-jansson] [--stride K] [parsers|engine]...\n");
            return 2;
        }
    }
    if (!any)
        want[0] = want[1] = 1;
    json_set_alloc_funcs(fail_jansson ? __wrap_malloc : json_malloc_cb, __wrap_free);
    if (curl_global_init_mem(CURL_GLOBAL_DEFAULT, curl_malloc_cb, curl_free_cb, curl_realloc_cb,
                             curl_strdup_cb, curl_calloc_cb) != CURLE_OK)
        return 99;
    signal(SIGPIPE, SIG_IGN); /* the canned server writes to sockets the client closed */
    load_dir("response");
    ntopo_first = nfiles;
    load_dir("topology");
    start_server();
    for (i = 0; i < 2; i++) {
        long total, n, runs = 0, failed_allocs = 0;

        if (!want[i])
            continue;
        /* two clean runs: the first sets up what lives for the process */
        scenarios[i].run();
        atomic_store(&indexed, 0);
        if (one(&scenarios[i], 0, &total) != 0) {
            fails++;
            continue;
        }
        /* the clean run really went through the server: every document but
         * the 4th of each request indexed */
        if (i == 1 && (atomic_load(&indexed) < NDOCS - 4 || atomic_load(&indexed) == NDOCS ||
                       atomic_load(&bulk_requests) == 0)) {
            fprintf(stderr, "FAIL: the clean engine run indexed %d of %d documents\n",
                    atomic_load(&indexed), NDOCS);
            fails++;
            continue;
        }
        for (n = 1; n <= total + 2; n++) {
            if (!full && i == 1 && n > quick_max && n % stride != 0)
                continue;
            runs++;
            if (one(&scenarios[i], n, NULL) != 0)
                fails++;
            failed_allocs += atomic_load(&failed_one);
        }
        printf("%s: a clean run makes %ld allocations; %ld runs over N = 1..%ld (", scenarios[i].name,
               total, runs, total + 2);
        if (full || i == 0)
            printf("every N");
        else
            printf("every N to %ld, then every %ldth", quick_max, stride);
        printf("), %ld of them hit their failing allocation\n", failed_allocs);
    }
    printf("%d failed runs\n", fails);
    return fails ? 1 : 0;
}
