/* AWS Signature Version 4, for Amazon OpenSearch Service and Amazon
 * OpenSearch Serverless (auth.aws.*): the lines that sign one request. Pure
 * (no I/O, no clock): http.c hands in the time and the payload's hash. */
#ifndef ESBULK_SIGV4_H
#define ESBULK_SIGV4_H

#include "common.h"
#include "sha256.h"

#include <time.h>

/* Credentials and scope, owned copies (http.c's options). region NULL:
 * requests are not signed. */
typedef struct {
    char *region, *service;
    char *key_id, *secret, *token; /* token NULL: none (long-term keys) */
} esbulk__aws_t;

/* A signed request: what to send. */
typedef struct {
    char *url;       /* the URL to ask for: its query in canonical form (names
                        and values strictly percent-encoded, sorted), which
                        is the form the signature covers */
    char *lines[6];  /* the header lines to send, NULL after the last: Host,
                        X-Amz-Date, X-Amz-Content-Sha256, X-Amz-Security-Token
                        (with a session token), Authorization */
    char *canonical; /* the canonical request that was signed (for tests):
                        it holds the session token, if any */
} esbulk__sigv4_t;

/* Signs method + url (scheme://host[:port]/path[?query], no user:pass@)
 * with a payload whose SHA-256 is payload, at time now (UTC). Fills *out
 * (free with esbulk__sigv4_free()). ESBULK_ERR_NOMEM, or
 * ESBULK_ERR_INVALID_ARG for a URL without "scheme://host". */
esbulk_err_t esbulk__sigv4_sign(const esbulk__aws_t *aws, const char *method, const char *url,
                                const unsigned char payload[ESBULK__SHA256_LEN], time_t now,
                                esbulk__sigv4_t *out);
/* Frees what esbulk__sigv4_sign() filled, the lines wiped (the
 * Authorization line is a credential for a few minutes, the token longer). */
void esbulk__sigv4_free(esbulk__sigv4_t *s);

#endif
