/* Error codes and their text, the version, and the small string helpers
 * every file uses. */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *esbulk_err2str(esbulk_err_t err)
{
    switch (err) {
    case ESBULK_OK: return "success";
    case ESBULK_ERR_INVALID_ARG: return "invalid argument";
    case ESBULK_ERR_NOMEM: return "out of memory";
    case ESBULK_ERR_INVALID_UTF8: return "invalid UTF-8";
    case ESBULK_ERR_UNKNOWN_KEY: return "unknown configuration key";
    case ESBULK_ERR_BAD_VALUE: return "invalid configuration value";
    case ESBULK_ERR_TRANSPORT: return "transport error (connect, timeout, broken connection)";
    case ESBULK_ERR_HTTP: return "unexpected HTTP status";
    case ESBULK_ERR_AUTH: return "authentication or authorization failed";
    case ESBULK_ERR_BAD_RESPONSE: return "malformed or incomplete server response";
    case ESBULK_ERR_UNKNOWN_INDEX: return "unknown index, alias or data stream";
    case ESBULK_ERR_NOT_ROUTABLE: return "index does not route by _id or routing";
    case ESBULK_ERR_ROUTING_CONFLICT: return "routing conflicts with the alias's routing";
    case ESBULK_ERR_TOO_LARGE: return "value exceeds a limit";
    case ESBULK_ERR_QUEUE_FULL: return "queue full (buffer.max.bytes or buffer.max.docs)";
    case ESBULK_ERR_TIMED_OUT: return "timed out";
    case ESBULK_ERR_CLOSED: return "not delivered: handle closed";
    case ESBULK_ERR_DOC_TOO_LARGE: return "document larger than max.doc.bytes";
    case ESBULK_ERR_INVALID_JSON: return "body is not one JSON object";
    case ESBULK_ERR_ITEM: return "the server refused the document";
    case ESBULK_ERR_RETRIES_EXHAUSTED: return "retries exhausted (retry.max)";
    case ESBULK_ERR_DELIVERY_TIMEOUT: return "delivery timed out (delivery.timeout.ms)";
    case ESBULK_ERR_IN_CALLBACK: return "called from inside a result or statistics callback";
    case ESBULK_ERR_RESULTS_HELD: return "results of an earlier esbulk_poll_results() are not released";
    }
    return "unknown error code";
}

uint32_t esbulk_version(void)
{
    return ESBULK_VERSION;
}

const char *esbulk_version_str(void)
{
    return ESBULK_VERSION_STR;
}

void esbulk_free(void *ptr)
{
    free(ptr);
}

void esbulk__errstr(char *errstr, size_t errstr_size, const char *fmt, ...)
{
    va_list ap;

    if (errstr == NULL || errstr_size == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(errstr, errstr_size, fmt, ap);
    va_end(ap);
}

char *esbulk__strndup(const char *s, size_t len)
{
    char *p = malloc(len + 1);

    if (p == NULL)
        return NULL;
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

char *esbulk__strdup(const char *s)
{
    return esbulk__strndup(s, strlen(s));
}
