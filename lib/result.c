/* The result of a document as its callback or a pull sees it: the
 * esbulk_result_* accessors and esbulk_results_read, which copies a batch's
 * fields out in one call (for the bindings). */
#include "doc.h"

#include <string.h>

void *esbulk_result_opaque(const esbulk_result_t *r) { return r ? r->opaque : NULL; }
esbulk_outcome_t esbulk_result_outcome(const esbulk_result_t *r) { return r ? r->outcome : ESBULK_OUTCOME_FAILED; }
esbulk_err_t esbulk_result_err(const esbulk_result_t *r) { return r ? r->err : ESBULK_ERR_INVALID_ARG; }
esbulk_op_t esbulk_result_op(const esbulk_result_t *r) { return r ? r->op : ESBULK_OP_INDEX; }
const char *esbulk_result_index(const esbulk_result_t *r) { return r ? (ESBULK__DOC_MORE(r, index) ? r->more->index : r->index) : NULL; }
const char *esbulk_result_id(const esbulk_result_t *r) { return r ? (r->id ? r->id : ESBULK__DOC_MORE(r, id)) : NULL; }
int32_t esbulk_result_status(const esbulk_result_t *r) { return r ? r->status : 0; }
const char *esbulk_result_error_type(const esbulk_result_t *r) { return r ? ESBULK__DOC_MORE(r, error_type) : NULL; }
const char *esbulk_result_error_reason(const esbulk_result_t *r) { return r ? ESBULK__DOC_MORE(r, error_reason) : NULL; }
const char *esbulk_result_error_cause_type(const esbulk_result_t *r) { return r ? ESBULK__DOC_MORE(r, cause_type) : NULL; }
const char *esbulk_result_error_cause_reason(const esbulk_result_t *r) { return r ? ESBULK__DOC_MORE(r, cause_reason) : NULL; }
const char *esbulk_result_result(const esbulk_result_t *r) { return r ? r->r_result : NULL; }
int64_t esbulk_result_seq_no(const esbulk_result_t *r) { return r ? r->seq_no : -1; }
int64_t esbulk_result_primary_term(const esbulk_result_t *r) { return r ? r->primary_term : -1; }
int64_t esbulk_result_version(const esbulk_result_t *r) { return r ? r->version : -1; }
int32_t esbulk_result_attempts(const esbulk_result_t *r) { return r ? r->attempts : 0; }

const char *esbulk_result_body(const esbulk_result_t *r, size_t *len)
{
    const char *nl;

    if (len != NULL)
        *len = 0;
    /* the lines are kept only for documents not indexed, with result.keep_body */
    if (r == NULL || r->lines == NULL || r->op == ESBULK_OP_DELETE ||
        (nl = memchr(r->lines, '\n', r->lines_len)) == NULL ||
        (size_t)(nl + 1 - r->lines) >= r->lines_len)
        return NULL;
    if (len != NULL)
        *len = r->lines_len - (size_t)(nl + 1 - r->lines) - 1; /* without its "\n" */
    return nl + 1;
}

/* One string into strs at *off with its NUL ("" for NULL); 0 if it does not fit. */
static int put_str(char *strs, size_t size, size_t *off, const char *s)
{
    size_t len = s != NULL ? strlen(s) : 0;

    if (size - *off < len + 1)
        return 0;
    if (len > 0)
        memcpy(strs + *off, s, len);
    strs[*off + len] = '\0';
    *off += len + 1;
    return 1;
}

int64_t esbulk_results_read(const esbulk_result_t *const *results, size_t count, void **opaques,
                            int32_t *ints, int64_t *longs, char *strs, size_t strs_size,
                            size_t *strs_len)
{
    size_t i, off = 0;

    if (strs_len != NULL)
        *strs_len = 0;
    if (count == 0)
        return 0;
    if (results == NULL || ints == NULL || longs == NULL || (strs == NULL && strs_size > 0))
        return ESBULK_ERR_INVALID_ARG;
    for (i = 0; i < count; i++)
        if (results[i] == NULL)
            return ESBULK_ERR_INVALID_ARG;
    for (i = 0; i < count; i++) {
        const esbulk_result_t *r = results[i];
        const char *index = esbulk_result_index(r), *id = esbulk_result_id(r);
        const char *result = esbulk_result_result(r);
        int32_t *in = ints + i * ESBULK_RESULT_INTS;
        int64_t *lo = longs + i * ESBULK_RESULT_LONGS;

        if (strs != NULL) {
            size_t save = off;

            if (!put_str(strs, strs_size, &off, index) || !put_str(strs, strs_size, &off, id) ||
                !put_str(strs, strs_size, &off, result)) {
                off = save;
                break;
            }
        }
        if (opaques != NULL)
            opaques[i] = r->opaque;
        in[0] = (int32_t)r->outcome;
        in[1] = (int32_t)r->err;
        in[2] = (int32_t)r->op;
        in[3] = r->status;
        in[4] = r->attempts;
        in[5] = (index == NULL ? ESBULK_RESULT_NO_INDEX : 0) | (id == NULL ? ESBULK_RESULT_NO_ID : 0) |
                (result == NULL ? ESBULK_RESULT_NO_RESULT : 0);
        lo[0] = r->seq_no;
        lo[1] = r->primary_term;
        lo[2] = r->version;
    }
    if (strs_len != NULL)
        *strs_len = off;
    return (int64_t)i;
}

/* ------------------------------------------------------------------------- */
