/* Per-document action options (esbulk_docopts_t): plain setters. */
#include "ndjson.h"
#include "utf8.h"

#include <stdlib.h>
#include <string.h>

esbulk_docopts_t *esbulk_docopts_new(void)
{
    esbulk_docopts_t *o = calloc(1, sizeof(*o));

    if (o != NULL)
        o->retry_on_conflict = -1;
    return o;
}

void esbulk_docopts_clear(esbulk_docopts_t *o)
{
    if (o == NULL)
        return;
    free(o->pipeline);
    memset(o, 0, sizeof(*o));
    o->retry_on_conflict = -1;
}

void esbulk_docopts_destroy(esbulk_docopts_t *o)
{
    if (o == NULL)
        return;
    free(o->pipeline);
    free(o);
}

esbulk_err_t esbulk_docopts_set_version(esbulk_docopts_t *o, int64_t version,
                                        esbulk_version_type_t type)
{
    if (o == NULL || version < 0 ||
        (type != ESBULK_VERSION_EXTERNAL && type != ESBULK_VERSION_EXTERNAL_GTE))
        return ESBULK_ERR_INVALID_ARG;
    o->has_version = 1;
    o->version = version;
    o->version_type = type;
    return ESBULK_OK;
}

esbulk_err_t esbulk_docopts_set_if_seq_no(esbulk_docopts_t *o, int64_t seq_no,
                                          int64_t primary_term)
{
    if (o == NULL || seq_no < 0 || primary_term < 1)
        return ESBULK_ERR_INVALID_ARG;
    o->has_seq_no = 1;
    o->if_seq_no = seq_no;
    o->if_primary_term = primary_term;
    return ESBULK_OK;
}

esbulk_err_t esbulk_docopts_set_pipeline(esbulk_docopts_t *o, const char *pipeline)
{
    char *copy = NULL;

    if (o == NULL)
        return ESBULK_ERR_INVALID_ARG;
    if (pipeline != NULL && *pipeline != '\0') {
        if (!esbulk__utf8_valid(pipeline, strlen(pipeline)))
            return ESBULK_ERR_INVALID_UTF8;
        if ((copy = esbulk__strdup(pipeline)) == NULL)
            return ESBULK_ERR_NOMEM;
    }
    free(o->pipeline);
    o->pipeline = copy;
    return ESBULK_OK;
}

esbulk_err_t esbulk_docopts_set_require_alias(esbulk_docopts_t *o, int32_t require_alias)
{
    if (o == NULL)
        return ESBULK_ERR_INVALID_ARG;
    o->require_alias = require_alias != 0;
    return ESBULK_OK;
}

esbulk_err_t esbulk_docopts_set_retry_on_conflict(esbulk_docopts_t *o, int32_t retries)
{
    if (o == NULL || retries < -1 || retries > 1000000)
        return ESBULK_ERR_INVALID_ARG;
    o->retry_on_conflict = retries;
    return ESBULK_OK;
}
