/* The flush decision of a destination and the default size of the buffer
 * (core.h): plain arithmetic over the core's settings. */
#include "core.h"

int esbulk__should_flush(const esbulk__flush_policy_t *p, size_t count, size_t bytes,
                         int64_t oldest_ms, int64_t now_ms, int force)
{
    if (count == 0)
        return 0;
    return force || count >= p->flush_docs || bytes >= p->flush_bytes ||
           now_ms - oldest_ms >= p->flush_interval_ms;
}

int64_t esbulk__flush_due_ms(const esbulk__flush_policy_t *p, size_t count, int64_t oldest_ms)
{
    return count == 0 ? INT64_MAX : oldest_ms + p->flush_interval_ms;
}

size_t esbulk__buffer_docs_for(size_t nodes, size_t dests, int inflight, size_t flush_docs)
{
    /* in 64 bits and clamped at each step: nothing here can overflow */
    uint64_t n = nodes > 0 ? nodes : 1, q = dests > n ? dests : n, docs;
    uint64_t per = (uint64_t)(inflight > 0 ? inflight : 1);

    if (n > ESBULK__BUFFER_DOCS_MAX)
        n = ESBULK__BUFFER_DOCS_MAX;
    if (q > ESBULK__BUFFER_DOCS_MAX)
        q = ESBULK__BUFFER_DOCS_MAX;
    if (per > 64)
        per = 64;
    docs = 2 * (n * per + q);
    if (flush_docs > ESBULK__BUFFER_DOCS_MAX ||
        docs > ESBULK__BUFFER_DOCS_MAX / (flush_docs > 0 ? flush_docs : 1))
        return ESBULK__BUFFER_DOCS_MAX;
    docs *= flush_docs > 0 ? flush_docs : 1;
    if (docs < ESBULK__BUFFER_DOCS_MIN)
        docs = ESBULK__BUFFER_DOCS_MIN;
    return (size_t)docs;
}
