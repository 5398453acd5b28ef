/* libFuzzer harness: the configuration parser (lib/conf.c) and the "urls"
 * parser (lib/http.c). Input: lines "key=value". Checks: a set that
 * succeeds reads back as given (secrets as "[redacted]") and, for an integer
 * key, holds the decimal value strtoll reads (sets are accepted exactly when
 * the value fits the property's type and range, and for http.headers the
 * rules of an HTTP header line); a refused set leaves the old
 * value; a copy equals the original; every parsed seed URL is
 * http[s]://host:port[/path] with no credentials left in it. */
#include "conf.h"
#include "http.h"

#include <esbulk.h>
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

/* The property table, from the same X-macro as lib/conf.c. */
#define ROW(ID, key, type, def, min, max, enums, secret) \
    {ESBULK__CT_##type, (int64_t)(min), (int64_t)(max), enums, secret},
static const struct {
    esbulk__ctype_t type;
    int64_t min, max;
    const char *enums;
    int secret;
} props[] = {ESBULK__CONF_PROPS(ROW)};
#undef ROW

/* Whether one line of http.headers (the harness's lines hold no LF) is
 * taken, from RFC 9110: blank (after a CR at its end is dropped), or a
 * token, ':', and a value without control bytes but tab; and the name not
 * one the library sets. */
static int header_line_ok(const char *v)
{
    static const char *const owned[] = {
        "authorization", "accept-encoding", "content-encoding", "content-type",
        "content-length", "transfer-encoding", "host", "connection", "keep-alive",
        "expect", "te", "trailer", "upgrade", "proxy-connection",
        "x-amz-date", "x-amz-content-sha256", "x-amz-security-token"};
    size_t n = strlen(v), i, name;

    if (n > 0 && v[n - 1] == '\r')
        n--;
    if (strspn(v, " \t") >= n)
        return 1;
    name = strspn(v, "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz"
                     "ABCDEFGHIJKLMNOPQRSTUVWXYZ");
    if (name == 0 || name >= n || v[name] != ':')
        return 0;
    for (i = 0; i < sizeof(owned) / sizeof(owned[0]); i++)
        if (strlen(owned[i]) == name && strncasecmp(owned[i], v, name) == 0)
            return 0;
    for (i = name + 1; i < n; i++)
        if (((unsigned char)v[i] < 0x20 && v[i] != '\t') || v[i] == 0x7f)
            return 0;
    return 1;
}

/* Whether a value of an auth.* key is taken: a username or a password
 * anything without a control byte (a username without ':' either, as Basic
 * credentials are); a region or a service letters, digits, '-', '_' and
 * '.' (a service not empty), an access key id letters and digits; an API
 * key, a bearer token, a secret or a session token anything without a
 * blank or a control byte (each is sent in a header line as it is). */
static int auth_value_ok(int id, const char *v)
{
    size_t i, n = strlen(v);

    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];
        int alnum = isalnum(c) && c < 0x80;

        if (id == ESBULK__C_AUTH_USERNAME || id == ESBULK__C_AUTH_PASSWORD) {
            if (c < 0x20 || c == 0x7f || (c == ':' && id == ESBULK__C_AUTH_USERNAME))
                return 0;
        } else if (id == ESBULK__C_AUTH_API_KEY || id == ESBULK__C_AUTH_BEARER ||
                   id == ESBULK__C_AUTH_AWS_SECRET_ACCESS_KEY ||
                   id == ESBULK__C_AUTH_AWS_SESSION_TOKEN) {
            if (c <= 0x20 || c == 0x7f)
                return 0;
        } else if (id == ESBULK__C_AUTH_AWS_ACCESS_KEY_ID) {
            if (!alnum)
                return 0;
        } else if (!alnum && c != '-' && c != '_' && c != '.') {
            return 0;
        }
    }
    return id != ESBULK__C_AUTH_AWS_SERVICE || n > 0;
}

/* What a set of value must do, by the property's type, from first
 * principles: an INT is a whole decimal strtoll reads, within [min, max];
 * a BOOL one of true/false/1/0/yes/no; an ENUM one of its names; a STR
 * anything. */
static void expect_value(const char *key, int id, const char *value, esbulk_err_t err,
                         const esbulk_conf_t *conf)
{
    int ok = 1;
    int64_t num = 0;

    switch (props[id].type) {
    case ESBULK__CT_STR:
        if (id == ESBULK__C_HTTP_HEADERS)
            ok = header_line_ok(value);
        else if (id >= ESBULK__C_AUTH_USERNAME && id <= ESBULK__C_AUTH_AWS_SESSION_TOKEN)
            ok = auth_value_ok(id, value);
        break;
    case ESBULK__CT_BOOL:
        ok = !strcmp(value, "true") || !strcmp(value, "1") || !strcmp(value, "yes") ||
             !strcmp(value, "false") || !strcmp(value, "0") || !strcmp(value, "no");
        num = !strcmp(value, "true") || !strcmp(value, "1") || !strcmp(value, "yes");
        break;
    case ESBULK__CT_ENUM: {
        const char *p = props[id].enums;
        size_t n = strlen(value);
        int i = 0;

        ok = 0;
        while (p != NULL && !ok) {
            const char *bar = strchr(p, '|');
            size_t len = bar ? (size_t)(bar - p) : strlen(p);

            if (len == n && memcmp(p, value, n) == 0) {
                ok = 1;
                num = i;
            }
            p = bar ? bar + 1 : NULL;
            i++;
        }
        break;
    }
    case ESBULK__CT_INT: {
        char *end;
        long long v;

        errno = 0;
        v = strtoll(value, &end, 10);
        ok = errno == 0 && end != value && *end == '\0' && v >= props[id].min &&
             v <= props[id].max;
        num = v;
        break;
    }
    }
    if (ok != (err == ESBULK_OK))
        FAIL("%s=\"%s\": set returned %d, expected %s", key, value, err,
             ok ? "success" : "a refusal");
    if (ok && props[id].type != ESBULK__CT_STR && esbulk__conf_int(conf, (esbulk__cid_t)id) != num)
        FAIL("%s=\"%s\" holds %lld, expected %lld", key, value,
             (long long)esbulk__conf_int(conf, (esbulk__cid_t)id), (long long)num);
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
        if (esbulk__http_opts_init(&opts, conf, user, pass, errstr, sizeof(errstr)) == ESBULK_OK)
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
    static char before[1 << 17], after[1 << 17]; /* any value a 64 KiB input holds */
    esbulk_conf_t *conf = esbulk_conf_new(), *dup;
    char *text = malloc(size + 1), *line, *save = NULL, errstr[256];
    int i;

    if (conf == NULL || text == NULL)
        abort();
    memcpy(text, data, size);
    text[size] = '\0';
    for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        char *eq = strchr(line, '=');
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
        } else if (strcmp(after, props[id].secret && *value ? "[redacted]" : value) != 0) {
            FAIL("%s reads back as \"%s\", set to \"%s\"", line, after, value);
        }
        expect_value(line, id, value, err, conf);
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
