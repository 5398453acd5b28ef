/* libFuzzer harness: the configuration parser (lib/conf.c) and the "urls"
 * parser (lib/http.c). Input: lines "key=value". Checks: a set that
 * succeeds reads back as given (secrets as "[redacted]") and, for an integer
 * key, holds the decimal value strtoll reads; a refused set leaves the old
 * value; a copy equals the original; every parsed seed URL is
 * http[s]://host:port[/path] with no credentials left in it. */
#include "conf.h"
#include "http.h"

#include <esbulk.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FAIL(...) (fprintf(stderr, "fuzz_conf: " __VA_ARGS__), fputc('\n', stderr), abort())

static int key_id(const char *key)
{
    int i;

    for (i = 0; esbulk__conf_key_at(i) != NULL; i++)
        if (strcmp(esbulk__conf_key_at(i), key) == 0)
            return i;
    return -1;
}

static int is_secret(const char *key)
{
    return strstr(key, "password") || strstr(key, "api_key") || strstr(key, "bearer");
}

static void check_urls(const esbulk_conf_t *conf)
{
    esbulk__url_t *urls = NULL;
    char *user = NULL, *pass = NULL, errstr[256];
    esbulk__http_opts_t opts;
    int n = 0, i;

    if (esbulk__urls_parse(esbulk__conf_str(conf, ESBULK__C_URLS), &urls, &n, &user, &pass,
                           errstr, sizeof(errstr)) == ESBULK_OK) {
        if (n < 1)
            FAIL("no URL from a successful parse");
        for (i = 0; i < n; i++) {
            const char *b = urls[i].base, *auth;
            size_t alen;

            if (strncmp(b, "http://", 7) != 0 && strncmp(b, "https://", 8) != 0)
                FAIL("seed \"%s\" is not http[s]://", b);
            auth = strstr(b, "://") + 3;
            alen = strcspn(auth, "/");
            if (memchr(auth, '@', alen) != NULL || memchr(auth, ':', alen) == NULL)
                FAIL("seed \"%s\": credentials left, or no port", b);
        }
        if (pass != NULL && user == NULL)
            FAIL("a password without a user");
        if (esbulk__http_opts_init(&opts, conf, user, pass) == ESBULK_OK)
            esbulk__http_opts_free(&opts);
        esbulk__urls_free(urls, n);
    } else if (urls != NULL || n != 0) {
        FAIL("a failed parse kept URLs");
    }
    free(user);
    free(pass);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    esbulk_conf_t *conf = esbulk_conf_new(), *dup;
    char *text = malloc(size + 1), *line, *save = NULL, before[4096], after[4096], errstr[256];
    int i;

    if (conf == NULL || text == NULL)
        abort();
    memcpy(text, data, size);
    text[size] = '\0';
    for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        char *eq = strchr(line, '='), *end;
        const char *value;
        esbulk_err_t err;
        size_t len;
        int id;

        if (eq == NULL)
            continue;
        *eq = '\0';
        value = eq + 1;
        id = key_id(line);
        if (id >= 0 && esbulk_conf_get(conf, line, before, sizeof(before), NULL) != ESBULK_OK)
            FAIL("get %s", line);
        err = esbulk_conf_set(conf, line, value, errstr, sizeof(errstr));
        if ((id < 0) != (err == ESBULK_ERR_UNKNOWN_KEY))
            FAIL("key \"%s\": set returned %d", line, err);
        if (id < 0)
            continue;
        if (esbulk_conf_get(conf, line, after, sizeof(after), &len) == ESBULK_ERR_TOO_LARGE &&
            len < sizeof(after))
            FAIL("get %s: too large for %zu bytes", line, len);
        if (len >= sizeof(after))
            continue;
        if (err != ESBULK_OK) {
            if (strcmp(before, after) != 0)
                FAIL("a refused set of %s changed it", line);
            continue;
        }
        if (strcmp(after, is_secret(line) && *value ? "[redacted]" : value) != 0)
            FAIL("%s reads back as \"%s\", set to \"%s\"", line, after, value);
        if (esbulk__conf_enum_name((esbulk__cid_t)id, 0) == NULL &&
            strcmp(value, "true") && strcmp(value, "false") && strcmp(value, "yes") &&
            strcmp(value, "no") && esbulk__conf_str(conf, (esbulk__cid_t)id) != NULL) {
            long long v;

            errno = 0;
            v = strtoll(value, &end, 10);
            if (errno == 0 && end != value && *end == '\0' &&
                esbulk__conf_int(conf, (esbulk__cid_t)id) != v &&
                esbulk__conf_int(conf, (esbulk__cid_t)id) != 0)
                FAIL("%s=%s holds %lld", line, value,
                     (long long)esbulk__conf_int(conf, (esbulk__cid_t)id));
        }
    }
    dup = esbulk_conf_dup(conf);
    if (dup == NULL)
        abort();
    for (i = 0; esbulk__conf_key_at(i) != NULL; i++)
        if (strcmp(esbulk__conf_str(conf, (esbulk__cid_t)i), esbulk__conf_str(dup, (esbulk__cid_t)i)) ||
            esbulk__conf_int(conf, (esbulk__cid_t)i) != esbulk__conf_int(dup, (esbulk__cid_t)i))
            FAIL("the copy differs in %s", esbulk__conf_key_at(i));
    check_urls(conf);
    esbulk_conf_destroy(dup);
    esbulk_conf_destroy(conf);
    free(text);
    return 0;
}
