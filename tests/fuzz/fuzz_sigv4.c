/* libFuzzer harness: AWS SigV4 signing (lib/sigv4.c) of any URL. Checked
 * against properties stated here, not against the signer's own code:
 *  - no header line holds a CR, LF or NUL, and Host is the URL's authority
 *    in lower case, without the scheme's default port (":443" for https,
 *    ":80" for http, however many leading zeros);
 *  - the URL sent keeps the scheme, authority and path as they were, and
 *    its query holds only unreserved bytes, '=', '&' and %XX (upper-case
 *    hex), one '=' a pair;
 *  - the query's pairs, percent-decoded (by a decoder written here, that
 *    reads a query as the server does: pairs split at '&' and ';', '+' a
 *    space), are the input's, in some order;
 *  - the canonical URI is '/'-led, unreserved bytes, '/' and %XX only,
 *    without empty, "." or ".." segments;
 *  - signing the URL sent again gives the same URL, canonical request and
 *    signature (the signed form is a fixed point).
 *
 * Input: byte 0 the method (of five) and whether a session token is set;
 * the rest the URL. */
#include "sigv4.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FAIL(...) (fprintf(stderr, "fuzz_sigv4: " __VA_ARGS__), fputc('\n', stderr), abort())

static int unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '_' || c == '.' || c == '~';
}

static int hexdig(int c)
{
    return (c >= '0' && c <= '9') ? c - '0'
         : (c >= 'a' && c <= 'f') ? c - 'a' + 10
         : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
}

/* s[0..n) with its valid %XX escapes decoded and '+' a space, as a
 * length-prefixed string into out (returns its length). */
static size_t decode(const char *s, size_t n, char *out)
{
    size_t i, k = 0;

    for (i = 0; i < n; i++) {
        if (s[i] == '%' && i + 2 < n && hexdig(s[i + 1]) >= 0 && hexdig(s[i + 2]) >= 0) {
            out[k++] = (char)(hexdig(s[i + 1]) * 16 + hexdig(s[i + 2]));
            i += 2;
        } else {
            out[k++] = s[i] == '+' ? ' ' : s[i];
        }
    }
    return k;
}

/* The decoded pairs of query q[0..n) (empty pairs skipped; a name without
 * '=' has an empty value), each "name\0value" with its length, sorted: the
 * caller compares two such lists. Returns the count; *buf is malloc'ed. */
typedef struct {
    char *p;
    size_t len;
} item_t;

static int item_cmp(const void *a, const void *b)
{
    const item_t *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->p, y->p, n);

    return c != 0 ? c : (x->len > y->len) - (x->len < y->len);
}

static size_t pairs(const char *q, size_t n, item_t **items, char **buf)
{
    size_t count = 0, used = 0, i = 0;

    *items = calloc(n + 1, sizeof(**items));
    *buf = malloc(2 * n + 2);
    if (*items == NULL || *buf == NULL)
        abort();
    while (i < n) {
        size_t e = i, eq;

        while (e < n && q[e] != '&' && q[e] != ';')
            e++;
        if (e > i) {
            for (eq = i; eq < e && q[eq] != '='; eq++)
                ;
            (*items)[count].p = *buf + used;
            used += decode(q + i, eq - i, *buf + used);
            (*buf)[used++] = '\0';
            if (eq < e)
                used += decode(q + eq + 1, e - eq - 1, *buf + used);
            (*items)[count].len = (size_t)(*buf + used - (*items)[count].p);
            count++;
        }
        i = e + 1;
    }
    qsort(*items, count, sizeof(**items), item_cmp);
    return count;
}

static const char *authz(const esbulk__sigv4_t *s)
{
    size_t i;

    for (i = 0; s->lines[i] != NULL; i++)
        if (strncmp(s->lines[i], "Authorization: ", 15) == 0)
            return s->lines[i];
    FAIL("no Authorization line");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const methods[] = {"GET", "HEAD", "PUT", "POST", "DELETE"};
    esbulk__aws_t aws = {"eu-west-1", "es", "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG", NULL};
    unsigned char payload[ESBULK__SHA256_LEN] = {1, 2, 3};
    esbulk__sigv4_t s, again;
    const char *method, *auth, *auth_end, *path_end, *wq, *cu, *p;
    char *url, *ibuf, *wbuf;
    item_t *iitems, *witems;
    size_t ni, nw, i, hostlen;
    esbulk_err_t err;

    if (size < 1)
        return 0;
    method = methods[data[0] % 5];
    if (data[0] & 0x80)
        aws.token = "FQoGZXIvYXdzE//tok+en=";
    url = malloc(size);
    if (url == NULL)
        abort();
    memcpy(url, data + 1, size - 1);
    url[size - 1] = '\0';
    err = esbulk__sigv4_sign(&aws, method, url, payload, (time_t)1440938160, &s);
    if (err == ESBULK_ERR_INVALID_ARG) {
        free(url);
        return 0;
    }
    if (err != ESBULK_OK)
        FAIL("sign: %d", (int)err);

    /* the header lines: no line break or NUL; Host the authority */
    for (i = 0; s.lines[i] != NULL; i++)
        if (strpbrk(s.lines[i], "\r\n") != NULL)
            FAIL("a line break in header line %zu", i);
    auth = strstr(url, "://") + 3;
    auth_end = auth + strcspn(auth, "/?#");
    p = memchr(auth, '@', (size_t)(auth_end - auth));
    if (p != NULL)
        auth = p + 1;
    hostlen = (size_t)(auth_end - auth);
    {
        /* the default port off: ":" then digits whose value is 443 (https)
         * or 80 (http), something before them */
        const char *d = auth_end;
        unsigned long port = 0;
        int https = strncasecmp(url, "https://", 8) == 0, http = strncasecmp(url, "http://", 7) == 0;

        while (d > auth && d[-1] >= '0' && d[-1] <= '9')
            d--;
        if (d < auth_end && d - 1 > auth && d[-1] == ':') {
            const char *q;

            for (q = d; q < auth_end && port < 100000; q++)
                port = port * 10 + (unsigned long)(*q - '0');
            if ((https && port == 443) || (http && port == 80))
                hostlen = (size_t)(d - 1 - auth);
        }
    }
    if (strncmp(s.lines[0], "Host: ", 6) != 0 || strlen(s.lines[0]) != 6 + hostlen ||
        strncasecmp(s.lines[0] + 6, auth, hostlen) != 0)
        FAIL("Host line \"%s\"", s.lines[0]);
    for (i = 6; s.lines[0][i] != '\0'; i++)
        if (s.lines[0][i] >= 'A' && s.lines[0][i] <= 'Z')
            FAIL("an upper-case letter in the Host line \"%s\"", s.lines[0]);

    /* the URL sent: the same up to the path's end, then a strict query */
    path_end = auth_end + strcspn(auth_end, "?#");
    if (strncmp(s.url, url, (size_t)(path_end - url)) != 0)
        FAIL("the URL's scheme, authority or path changed");
    wq = s.url + (path_end - url);
    if (*wq != '\0' && *wq++ != '?')
        FAIL("after the path: \"%s\"", wq);
    for (p = wq; *p != '\0'; p++) {
        if (*p == '%') {
            if (!((p[1] >= '0' && p[1] <= '9') || (p[1] >= 'A' && p[1] <= 'F')) ||
                !((p[2] >= '0' && p[2] <= '9') || (p[2] >= 'A' && p[2] <= 'F')))
                FAIL("a bad escape in the query sent: \"%s\"", wq);
            p += 2;
        } else if (!unreserved((unsigned char)*p) && *p != '=' && *p != '&') {
            FAIL("a byte 0x%02x left in the query sent", (unsigned char)*p);
        }
    }
    for (p = wq; *p != '\0';) {
        size_t len = strcspn(p, "&"), eqs = 0, k;

        for (k = 0; k < len; k++)
            eqs += p[k] == '=';
        if (eqs != 1)
            FAIL("a pair with %zu '=' in the query sent", eqs);
        p += len + (p[len] == '&');
    }
    /* the same pairs, decoded */
    {
        const char *iq = *path_end == '?' ? path_end + 1 : path_end;

        ni = pairs(iq, strcspn(iq, "#"), &iitems, &ibuf);
        nw = pairs(wq, strlen(wq), &witems, &wbuf);
        if (ni != nw)
            FAIL("%zu pairs in, %zu sent", ni, nw);
        for (i = 0; i < ni; i++)
            if (item_cmp(&iitems[i], &witems[i]) != 0)
                FAIL("pair %zu differs once decoded", i);
        free(iitems);
        free(ibuf);
        free(witems);
        free(wbuf);
    }

    /* the canonical URI: the second line */
    cu = strchr(s.canonical, '\n') + 1;
    if (*cu != '/')
        FAIL("canonical URI not '/'-led");
    for (p = cu; *p != '\n'; p++) {
        if (*p == '%') {
            if (hexdig(p[1]) < 0 || hexdig(p[2]) < 0 || (p[1] >= 'a' && p[1] <= 'f') ||
                (p[2] >= 'a' && p[2] <= 'f'))
                FAIL("a bad escape in the canonical URI");
            p += 2;
        } else if (!unreserved((unsigned char)*p) && *p != '/') {
            FAIL("a byte 0x%02x in the canonical URI", (unsigned char)*p);
        }
        if (*p == '/' && p[1] == '/')
            FAIL("an empty segment in the canonical URI");
        if (*p == '/' && p[1] == '.' && (p[2] == '/' || p[2] == '\n' ||
                                         (p[2] == '.' && (p[3] == '/' || p[3] == '\n'))))
            FAIL("a dot segment in the canonical URI");
    }

    /* a fixed point */
    if (esbulk__sigv4_sign(&aws, method, s.url, payload, (time_t)1440938160, &again) != ESBULK_OK)
        FAIL("the URL sent cannot be signed again");
    if (strcmp(again.url, s.url) != 0 || strcmp(again.canonical, s.canonical) != 0 ||
        strcmp(authz(&again), authz(&s)) != 0)
        FAIL("signing the URL sent again differs");
    esbulk__sigv4_free(&again);
    esbulk__sigv4_free(&s);
    free(url);
    return 0;
}
