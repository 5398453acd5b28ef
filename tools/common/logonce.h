/* The library's log lines in a command-line tool (esbulk load,
 * esbulk-mysql): the library repeats a warning at every retry (a node down,
 * the cluster not readable), so a tool says each one once a while. Header
 * only: each tool keeps its own state. */
#ifndef ESBULK_LOGONCE_H
#define ESBULK_LOGONCE_H

#include <stdint.h>

#define LOGONCE_RECENT 8 /* messages remembered */

typedef struct {
    uint64_t hash[LOGONCE_RECENT];
    int64_t ns[LOGONCE_RECENT];
} logonce_t;

/* 1 when message was not said in the window_ns before now_ns (it is then
 * remembered as said now, in place of the one said longest ago); 0 when it
 * was. Digits are left out of the comparison: a connect time or a count does
 * not make a message new. Not thread-safe: the caller holds a lock (the
 * tools hold stderr's, which also keeps the line whole). */
static inline int logonce_new(logonce_t *lo, const char *message, int64_t now_ns,
                              int64_t window_ns)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    const char *p;
    int i, oldest = 0;

    for (p = message; *p != '\0'; p++)
        if (*p < '0' || *p > '9')
            h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    for (i = 0; i < LOGONCE_RECENT; i++) {
        if (lo->hash[i] == h && lo->ns[i] != 0 && now_ns - lo->ns[i] < window_ns)
            return 0;
        if (lo->ns[i] < lo->ns[oldest])
            oldest = i;
    }
    lo->hash[oldest] = h;
    lo->ns[oldest] = now_ns;
    return 1;
}

#endif
