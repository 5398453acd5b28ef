/* What the library asks of the system besides I/O: the monotonic clock and
 * the names of its threads. Kept apart so that the pure code (core.c and
 * the other files tests/core_pure.test checks) cannot reach a clock. */
#include "common.h"

#include <time.h>

int64_t esbulk__now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t esbulk__now_ms_coarse(void)
{
#ifdef CLOCK_MONOTONIC_COARSE
    struct timespec ts;

    if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) == 0)
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
#endif
    return esbulk__now_ms();
}

void esbulk__thread_name(const char *name)
{
#ifdef HAVE_PTHREAD_SETNAME_NP
    (void)pthread_setname_np(pthread_self(), name);
#else
    (void)name;
#endif
}

void esbulk__deadline_from_now(struct timespec *ts, int64_t ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (ms % 1000) * 1000000;
    if (ts->tv_nsec >= 1000000000) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000;
    }
}
