/* Shared by the integration tests (see it_common.h). */
#define _GNU_SOURCE 1
#include "it_common.h"

#include <curl/curl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

const char *base_url;
int passed, failed;




void check(int ok, const char *fmt, ...)
{
    va_list ap;

    printf("%s: ", ok ? "PASS" : "FAIL");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    if (ok)
        passed++;
    else
        failed++;
}

void die(const char *fmt, ...)
{
    va_list ap;

    printf("FAIL: ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n%d passed, %d failed\n", passed, failed + 1);
    exit(1);
}

/* ------------------------------------------------------------------------- */
/* A small admin client (the test's own, independent of the library). */

typedef struct {
    char *data;
    size_t len;
} body_t;

static size_t on_data(char *p, size_t s, size_t n, void *ud)
{
    body_t *b = ud;
    char *grown = realloc(b->data, b->len + s * n + 1);

    if (grown == NULL)
        return 0;
    b->data = grown;
    memcpy(b->data + b->len, p, s * n);
    b->len += s * n;
    b->data[b->len] = '\0';
    return s * n;
}

/* Sends a request; returns the decoded JSON answer (NULL if not JSON). */
json_t *req(const char *method, const char *path, const char *body, long *status)
{
    CURL *c = curl_easy_init();
    struct curl_slist *h = NULL;
    body_t b = {NULL, 0};
    char url[4096];
    json_t *j = NULL;
    CURLcode rc;

    snprintf(url, sizeof(url), "%s%s", base_url, path);
    h = curl_slist_append(h, strstr(path, "_bulk") ? "Content-Type: application/x-ndjson"
                                                   : "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
    if (body != NULL)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    rc = curl_easy_perform(c);
    if (rc != CURLE_OK)
        die("%s %s: %s", method, path, curl_easy_strerror(rc));
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    if (b.data != NULL)
        j = json_loads(b.data, JSON_DECODE_ANY, NULL);
    if (*status >= 400 && getenv("IT_VERBOSE"))
        fprintf(stderr, "%s %s -> %ld %s\n", method, path, *status, b.data ? b.data : "");
    free(b.data);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return j;
}

/* A request that must succeed (2xx). */
json_t *must(const char *method, const char *path, const char *body)
{
    long status = 0;
    json_t *j = req(method, path, body, &status);

    if (status < 200 || status > 299) {
        char *dump = j ? json_dumps(j, JSON_COMPACT) : NULL;
        die("%s %s: HTTP %ld %s", method, path, status, dump ? dump : "");
    }
    return j;
}

void must_ok(const char *method, const char *path, const char *body)
{
    json_decref(must(method, path, body));
}

void wait_green(void)
{
    must_ok("GET", "/_cluster/health?wait_for_status=green&wait_for_no_relocating_shards=true"
                   "&wait_for_no_initializing_shards=true&timeout=120s", NULL);
}

int finish(void)
{
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

seen_t *seen;
size_t nseen;

void seen_reset(size_t n)
{
    free(seen);
    seen = calloc(n, sizeof(*seen));
    if (seen == NULL)
        die("out of memory");
    nseen = n;
}

void seen_record(const esbulk_result_t *r)
{
    size_t i = (size_t)(uintptr_t)esbulk_result_opaque(r);
    seen_t *s;

    if (i >= nseen) {
        check(0, "a result carries opaque %zu, outside the test's %zu documents", i, nseen);
        return;
    }
    s = &seen[i];
    s->results++;
    s->outcome = esbulk_result_outcome(r);
    s->err = esbulk_result_err(r);
    s->status = esbulk_result_status(r);
    s->attempts = esbulk_result_attempts(r);
    s->seq_no = esbulk_result_seq_no(r);
    s->version = esbulk_result_version(r);
    snprintf(s->error_type, sizeof(s->error_type), "%s",
             esbulk_result_error_type(r) ? esbulk_result_error_type(r) : "");
    snprintf(s->reason, sizeof(s->reason), "%s",
             esbulk_result_error_reason(r) ? esbulk_result_error_reason(r) : "");
    snprintf(s->id, sizeof(s->id), "%s", esbulk_result_id(r) ? esbulk_result_id(r) : "");
    snprintf(s->result, sizeof(s->result), "%s",
             esbulk_result_result(r) ? esbulk_result_result(r) : "");
}

tally_t seen_tally(size_t from, size_t to)
{
    tally_t t = {0, 0, 0, 0, 0, 0};
    size_t i;

    for (i = from; i < to && i < nseen; i++) {
        if (seen[i].results != 1) {
            t.not_once++;
            continue;
        }
        if (seen[i].outcome == ESBULK_OUTCOME_INDEXED)
            t.indexed++;
        else if (seen[i].outcome == ESBULK_OUTCOME_FAILED)
            t.failed++;
        else
            t.possibly++;
        t.closed += seen[i].err == ESBULK_ERR_CLOSED;
        t.retried += seen[i].attempts > 1;
    }
    return t;
}
