/* Retry policy: exponential backoff with full jitter and a cap. */
#include "core.h"

int64_t esbulk__backoff_ms(int32_t attempt, int64_t base_ms, int64_t max_ms, uint32_t rnd)
{
    int64_t ceiling = base_ms;
    int32_t i;

    for (i = 1; i < attempt && ceiling < max_ms; i++)
        ceiling *= 2;
    if (ceiling > max_ms)
        ceiling = max_ms;
    /* full jitter: uniform in [0, ceiling] */
    return (int64_t)(((uint64_t)rnd * (uint64_t)(ceiling + 1)) >> 32);
}

esbulk__retry_decision_t esbulk__retry_decide(int32_t attempts, int32_t retry_max,
                                              int64_t now_ms, int64_t deadline_ms,
                                              int64_t base_ms, int64_t max_ms, uint32_t rnd,
                                              int64_t *retry_at_ms)
{
    /* attempts counts the requests made so far: retry.max more are allowed */
    if (attempts > retry_max)
        return ESBULK__RETRY_GIVE_UP_MAX;
    *retry_at_ms = now_ms + esbulk__backoff_ms(attempts, base_ms, max_ms, rnd);
    if (deadline_ms > 0 && *retry_at_ms >= deadline_ms)
        return ESBULK__RETRY_GIVE_UP_DEADLINE;
    return ESBULK__RETRY_NOW;
}
