/* AWS Signature Version 4 (the "AWS4-HMAC-SHA256" scheme), as AWS documents
 * it for services other than S3: the canonical request, the string to sign,
 * the signing key derived from the secret by date, region and service, the
 * Authorization line. The canonical forms follow what AWS's own SDK
 * (botocore, which opensearch-py signs with) does with a URL: the host in
 * lower case, without the scheme's default port; the path's bytes
 * percent-encoded once more (so "%" becomes "%25"), empty and "." segments
 * dropped, ".." resolved; the query's names and values decoded (a '+' as a
 * space, and pairs split at ';' as at '&', as the server reads a query) and
 * strictly encoded again, sorted. The query is sent in that same form, so
 * that every reading of it (the SDK's, the service's) is the one signed. */
#include "sigv4.h"

#include "buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '_' || c == '.' || c == '~';
}

/* Appends s[0..n) with every byte but the unreserved ones (and '/' when
 * slash) as %XX, upper-case hex. */
static esbulk_err_t add_encoded(esbulk__buf_t *b, const char *s, size_t n, int slash)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t i;

    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char e[3];

        if (unreserved(c) || (slash && c == '/')) {
            if (esbulk__buf_addc(b, (char)c) != ESBULK_OK)
                return ESBULK_ERR_NOMEM;
            continue;
        }
        e[0] = '%';
        e[1] = hex[c >> 4];
        e[2] = hex[c & 15];
        if (esbulk__buf_add(b, e, 3) != ESBULK_OK)
            return ESBULK_ERR_NOMEM;
    }
    return ESBULK_OK;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* s[0..n) percent-decoded (a '%' not followed by two hex digits stays as
 * it is; a '+' is a space), then strictly encoded: a new string, NULL when
 * out of memory. */
static char *reencode(const char *s, size_t n)
{
    esbulk__buf_t raw, out;
    size_t i;

    esbulk__buf_init(&raw, (size_t)-1);
    esbulk__buf_init(&out, (size_t)-1);
    if (esbulk__buf_reserve(&raw, n) != ESBULK_OK)
        return NULL;
    for (i = 0; i < n; i++) {
        char c = s[i];

        if (c == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
            c = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
            i += 2;
        } else if (c == '+') {
            c = ' '; /* as the server reads a query: sent as %20, not as a '+' */
        }
        (void)esbulk__buf_addc(&raw, c); /* reserved above */
    }
    if (esbulk__buf_reserve(&out, 0) != ESBULK_OK ||
        add_encoded(&out, raw.data, raw.len, 0) != ESBULK_OK) {
        esbulk__buf_free(&raw);
        esbulk__buf_free(&out);
        return NULL;
    }
    esbulk__buf_free(&raw);
    return out.data;
}

typedef struct {
    char *name, *value;
} pair_t;

static int pair_cmp(const void *a, const void *b)
{
    const pair_t *x = a, *y = b;
    int c = strcmp(x->name, y->name);

    return c != 0 ? c : strcmp(x->value, y->value);
}

/* The canonical query of q[0..n) into *b. */
static esbulk_err_t canonical_query(esbulk__buf_t *b, const char *q, size_t n)
{
    pair_t *pairs = NULL;
    size_t npairs = 0, i, k;
    const char *p = q, *end = q + n;
    esbulk_err_t err = ESBULK_ERR_NOMEM;

    for (i = 0; i < n; i++)
        if (q[i] == '&' || q[i] == ';')
            npairs++;
    pairs = calloc(npairs + 1, sizeof(*pairs));
    if (pairs == NULL)
        return ESBULK_ERR_NOMEM;
    npairs = 0;
    while (p < end) {
        const char *pe = p, *eq;

        /* the server splits the pairs at ';' too */
        while (pe < end && *pe != '&' && *pe != ';')
            pe++;
        if (pe > p) {
            eq = memchr(p, '=', (size_t)(pe - p));
            pairs[npairs].name = reencode(p, (size_t)((eq != NULL ? eq : pe) - p));
            pairs[npairs].value = eq != NULL ? reencode(eq + 1, (size_t)(pe - eq - 1))
                                             : reencode("", 0);
            npairs++;
            if (pairs[npairs - 1].name == NULL || pairs[npairs - 1].value == NULL)
                goto out;
        }
        p = pe + (pe < end);
    }
    qsort(pairs, npairs, sizeof(*pairs), pair_cmp);
    for (k = 0; k < npairs; k++)
        if ((k > 0 && esbulk__buf_addc(b, '&') != ESBULK_OK) ||
            esbulk__buf_adds(b, pairs[k].name) != ESBULK_OK ||
            esbulk__buf_addc(b, '=') != ESBULK_OK ||
            esbulk__buf_adds(b, pairs[k].value) != ESBULK_OK)
            goto out;
    err = ESBULK_OK;
out:
    for (k = 0; k < npairs; k++) {
        free(pairs[k].name);
        free(pairs[k].value);
    }
    free(pairs);
    return err;
}

/* The canonical URI of path[0..n): empty and "." segments dropped, ".."
 * taking the one before it away, then every byte encoded but '/'. It ends
 * with '/' when the path does, or ends with a "." or ".." segment: curl
 * sends "/a/b/.." as "/a/" (RFC 3986's removal of dot segments). */
static esbulk_err_t canonical_path(esbulk__buf_t *b, const char *path, size_t n)
{
    const char **seg;
    size_t *len, nseg = 0, i, cap = 1;
    const char *p = path, *end = path + n;
    int dir = n > 0 && path[n - 1] == '/';
    esbulk_err_t err = ESBULK_ERR_NOMEM;

    for (i = 0; i < n; i++)
        if (path[i] == '/')
            cap++;
    seg = malloc(cap * sizeof(*seg));
    len = malloc(cap * sizeof(*len));
    if (seg == NULL || len == NULL)
        goto out;
    while (p <= end) {
        const char *slash = memchr(p, '/', (size_t)(end - p));
        const char *se = slash != NULL ? slash : end;
        size_t l = (size_t)(se - p);

        if (slash == NULL && (l == 1 || l == 2) && p[0] == '.' && p[l - 1] == '.')
            dir = 1; /* the last segment is "." or ".." */
        if (l == 2 && p[0] == '.' && p[1] == '.') {
            if (nseg > 0)
                nseg--;
        } else if (l > 0 && !(l == 1 && p[0] == '.')) {
            seg[nseg] = p;
            len[nseg++] = l;
        }
        if (slash == NULL)
            break;
        p = slash + 1;
    }
    if (esbulk__buf_addc(b, '/') != ESBULK_OK)
        goto out;
    for (i = 0; i < nseg; i++)
        if ((i > 0 && esbulk__buf_addc(b, '/') != ESBULK_OK) ||
            add_encoded(b, seg[i], len[i], 0) != ESBULK_OK)
            goto out;
    if (nseg > 0 && dir && esbulk__buf_addc(b, '/') != ESBULK_OK)
        goto out;
    err = ESBULK_OK;
out:
    free(seg);
    free(len);
    return err;
}

static void hmac_str(const unsigned char *key, size_t key_len, const char *msg,
                     unsigned char out[ESBULK__SHA256_LEN])
{
    esbulk__hmac_sha256(key, key_len, msg, strlen(msg), out);
}

/* A new "Name: value" line, or NULL. */
static char *line_of(const char *name, const char *value)
{
    size_t n = strlen(name) + 2 + strlen(value) + 1;
    char *l = malloc(n);

    if (l != NULL)
        snprintf(l, n, "%s: %s", name, value);
    return l;
}

/* How much of the authority h..end the Host line holds: all of it but the
 * scheme's default port (":443" for https, ":80" for http), as botocore
 * signs and curl sends a URL's host; the base URLs always name the port. */
static size_t host_len(const char *url, const char *h, const char *end)
{
    const char *colon = end, *d;
    unsigned long port = 0, dflt;

    while (colon > h && colon[-1] >= '0' && colon[-1] <= '9')
        colon--;
    if (colon == end || colon == h || colon[-1] != ':')
        return (size_t)(end - h);
    colon--;
    for (d = colon + 1; d < end && port < 65536; d++)
        port = port * 10 + (unsigned long)(*d - '0');
    dflt = strncasecmp(url, "https://", 8) == 0 ? 443 : strncasecmp(url, "http://", 7) == 0 ? 80 : 0;
    return dflt != 0 && port == dflt && colon > h ? (size_t)(colon - h) : (size_t)(end - h);
}

esbulk_err_t esbulk__sigv4_sign(const esbulk__aws_t *aws, const char *method, const char *url,
                                const unsigned char payload[ESBULK__SHA256_LEN], time_t now,
                                esbulk__sigv4_t *out)
{
    const char *scheme_end, *auth, *auth_end, *path, *path_end, *query;
    char amz_date[17], day[9], payload_hex[2 * ESBULK__SHA256_LEN + 1];
    char digest_hex[2 * ESBULK__SHA256_LEN + 1], sig_hex[2 * ESBULK__SHA256_LEN + 1];
    unsigned char k[ESBULK__SHA256_LEN], k2[ESBULK__SHA256_LEN], digest[ESBULK__SHA256_LEN];
    esbulk__buf_t host, cq, creq, sts, authz, wire;
    size_t secret_len = 0, nl = 0;
    char *seed = NULL;
    struct tm tm;
    esbulk_err_t err = ESBULK_ERR_NOMEM;

    memset(out, 0, sizeof(*out));
    scheme_end = strstr(url, "://");
    if (scheme_end == NULL || scheme_end == url)
        return ESBULK_ERR_INVALID_ARG;
    auth = scheme_end + 3;
    auth_end = auth + strcspn(auth, "/?#");
    if (auth_end == auth)
        return ESBULK_ERR_INVALID_ARG;
    {
        /* the Host line is the authority as it is: no blank or control
         * byte may end up in a header */
        const char *q;

        for (q = auth; q < auth_end; q++)
            if ((unsigned char)*q <= ' ' || *q == 0x7f)
                return ESBULK_ERR_INVALID_ARG;
    }
    path = auth_end;
    path_end = path + strcspn(path, "?#");
    query = *path_end == '?' ? path_end + 1 : path_end;

    if (gmtime_r(&now, &tm) == NULL)
        return ESBULK_ERR_INVALID_ARG;
    strftime(amz_date, sizeof(amz_date), "%Y%m%dT%H%M%SZ", &tm);
    memcpy(day, amz_date, 8);
    day[8] = '\0';
    esbulk__hex(payload, ESBULK__SHA256_LEN, payload_hex);

    esbulk__buf_init(&host, (size_t)-1);
    esbulk__buf_init(&cq, (size_t)-1);
    esbulk__buf_init(&creq, (size_t)-1);
    esbulk__buf_init(&sts, (size_t)-1);
    esbulk__buf_init(&authz, (size_t)-1);
    esbulk__buf_init(&wire, (size_t)-1);
    {
        /* credentials in the URL never reach here; a stray '@' would */
        const char *at = memchr(auth, '@', (size_t)(auth_end - auth));
        const char *h = at != NULL ? at + 1 : auth;
        size_t i;

        if (esbulk__buf_add(&host, h, host_len(url, h, auth_end)) != ESBULK_OK)
            goto out;
        for (i = 0; i < host.len; i++) /* as botocore signs it */
            if (host.data[i] >= 'A' && host.data[i] <= 'Z')
                host.data[i] = (char)(host.data[i] - 'A' + 'a');
    }
    if (esbulk__buf_reserve(&cq, 0) != ESBULK_OK ||
        canonical_query(&cq, query, strcspn(query, "#")) != ESBULK_OK)
        goto out;

    /* the canonical request */
    if (esbulk__buf_adds(&creq, method) != ESBULK_OK || esbulk__buf_addc(&creq, '\n') ||
        canonical_path(&creq, path, (size_t)(path_end - path)) != ESBULK_OK ||
        esbulk__buf_addc(&creq, '\n') || esbulk__buf_add(&creq, cq.data, cq.len) ||
        esbulk__buf_adds(&creq, "\nhost:") || esbulk__buf_add(&creq, host.data, host.len) ||
        esbulk__buf_adds(&creq, "\nx-amz-content-sha256:") ||
        esbulk__buf_adds(&creq, payload_hex) || esbulk__buf_adds(&creq, "\nx-amz-date:") ||
        esbulk__buf_adds(&creq, amz_date) ||
        (aws->token != NULL && (esbulk__buf_adds(&creq, "\nx-amz-security-token:") ||
                                esbulk__buf_adds(&creq, aws->token))) ||
        esbulk__buf_adds(&creq, aws->token != NULL
                                    ? "\n\nhost;x-amz-content-sha256;x-amz-date;"
                                      "x-amz-security-token\n"
                                    : "\n\nhost;x-amz-content-sha256;x-amz-date\n") ||
        esbulk__buf_adds(&creq, payload_hex))
        goto out;

    /* the string to sign */
    esbulk__sha256(creq.data, creq.len, digest);
    esbulk__hex(digest, sizeof(digest), digest_hex);
    if (esbulk__buf_adds(&sts, "AWS4-HMAC-SHA256\n") || esbulk__buf_adds(&sts, amz_date) ||
        esbulk__buf_addc(&sts, '\n') || esbulk__buf_adds(&sts, day) ||
        esbulk__buf_addc(&sts, '/') || esbulk__buf_adds(&sts, aws->region) ||
        esbulk__buf_addc(&sts, '/') || esbulk__buf_adds(&sts, aws->service) ||
        esbulk__buf_adds(&sts, "/aws4_request\n") || esbulk__buf_adds(&sts, digest_hex))
        goto out;

    /* the signing key: HMACs of the date, region, service and
     * "aws4_request", the first keyed with "AWS4" + the secret */
    secret_len = strlen(aws->secret);
    if ((seed = malloc(4 + secret_len + 1)) == NULL)
        goto out;
    memcpy(seed, "AWS4", 4);
    memcpy(seed + 4, aws->secret, secret_len + 1);
    hmac_str((const unsigned char *)seed, 4 + secret_len, day, k);
    hmac_str(k, sizeof(k), aws->region, k2);
    hmac_str(k2, sizeof(k2), aws->service, k);
    hmac_str(k, sizeof(k), "aws4_request", k2);
    esbulk__hmac_sha256(k2, sizeof(k2), sts.data, sts.len, digest);
    esbulk__hex(digest, sizeof(digest), sig_hex);

    if (esbulk__buf_adds(&authz, "AWS4-HMAC-SHA256 Credential=") ||
        esbulk__buf_adds(&authz, aws->key_id) || esbulk__buf_addc(&authz, '/') ||
        esbulk__buf_adds(&authz, day) || esbulk__buf_addc(&authz, '/') ||
        esbulk__buf_adds(&authz, aws->region) || esbulk__buf_addc(&authz, '/') ||
        esbulk__buf_adds(&authz, aws->service) ||
        esbulk__buf_adds(&authz, aws->token != NULL
                                     ? "/aws4_request, SignedHeaders=host;x-amz-content-sha256;"
                                       "x-amz-date;x-amz-security-token, Signature="
                                     : "/aws4_request, SignedHeaders=host;x-amz-content-sha256;"
                                       "x-amz-date, Signature=") ||
        esbulk__buf_adds(&authz, sig_hex))
        goto out;

    /* the URL to send: the query as signed */
    if (esbulk__buf_add(&wire, url, (size_t)(path_end - url)) ||
        (cq.len > 0 && (esbulk__buf_addc(&wire, '?') || esbulk__buf_add(&wire, cq.data, cq.len))))
        goto out;

    if ((out->lines[nl++] = line_of("Host", host.data)) == NULL ||
        (out->lines[nl++] = line_of("X-Amz-Date", amz_date)) == NULL ||
        (out->lines[nl++] = line_of("X-Amz-Content-Sha256", payload_hex)) == NULL ||
        (aws->token != NULL &&
         (out->lines[nl++] = line_of("X-Amz-Security-Token", aws->token)) == NULL) ||
        (out->lines[nl++] = line_of("Authorization", authz.data)) == NULL)
        goto out;
    out->url = wire.data;
    out->canonical = creq.data;
    wire.data = NULL;
    creq.data = NULL;
    err = ESBULK_OK;
out:
    esbulk__wipe(k, sizeof(k));
    esbulk__wipe(k2, sizeof(k2));
    esbulk__wipe(digest, sizeof(digest));
    esbulk__wipe(sig_hex, sizeof(sig_hex));
    if (seed != NULL) {
        esbulk__wipe(seed, 4 + secret_len);
        free(seed);
    }
    if (authz.data != NULL)
        esbulk__wipe(authz.data, authz.len);
    esbulk__buf_free(&authz);
    if (creq.data != NULL) /* holds the token */
        esbulk__wipe(creq.data, creq.len);
    esbulk__buf_free(&host);
    esbulk__buf_free(&cq);
    esbulk__buf_free(&creq);
    esbulk__buf_free(&sts);
    esbulk__buf_free(&wire);
    if (err != ESBULK_OK)
        esbulk__sigv4_free(out);
    return err;
}

void esbulk__sigv4_free(esbulk__sigv4_t *s)
{
    size_t i;

    for (i = 0; i < sizeof(s->lines) / sizeof(s->lines[0]); i++) {
        esbulk__wipe_str(s->lines[i]);
        free(s->lines[i]);
        s->lines[i] = NULL;
    }
    free(s->url);
    if (s->canonical != NULL) {
        esbulk__wipe_str(s->canonical); /* holds the session token */
        free(s->canonical);
    }
    s->url = s->canonical = NULL;
}
