/* Internal definitions shared by every module. Not installed. */
#ifndef ESBULK_COMMON_H
#define ESBULK_COMMON_H

#include "config.h"

#define ESBULK_BUILDING 1
#include "esbulk.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>

#define ESBULK__ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Writes a formatted message into errstr (may be NULL or size 0). */
void esbulk__errstr(char *errstr, size_t errstr_size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* strdup/strndup that return NULL on allocation failure (no abort). */
char *esbulk__strdup(const char *s);
char *esbulk__strndup(const char *s, size_t len);

/* Zeroes n bytes at p (p may be NULL) in a way the compiler cannot drop as
 * a dead store: for secrets about to be freed (lib/wipe.c). */
void esbulk__wipe(void *p, size_t n);
/* esbulk__wipe() of the string s up to its NUL (s may be NULL). */
void esbulk__wipe_str(char *s);

/* The processor's cache line (x86-64, arm64): record layout and prefetches. */
#define ESBULK__CACHE_LINE 64

/* Asks for the cache line at p ahead of a walk that will read it (a hint:
 * nothing where the compiler has no such builtin). */
#if defined(__GNUC__) || defined(__clang__)
#define ESBULK__PREFETCH(p) __builtin_prefetch(p)
#define ESBULK__PREFETCH_W(p) __builtin_prefetch(p, 1)
#else
#define ESBULK__PREFETCH(p) ((void)(p))
#define ESBULK__PREFETCH_W(p) ((void)(p))
#endif

/* Monotonic clock in milliseconds. */
int64_t esbulk__now_ms(void);
/* The same clock, read at the last tick (Linux: up to 4 ms behind, about a
 * quarter of the cost): for stamps where being a few ms early is harmless
 * (a document's add time, its delivery deadline). */
int64_t esbulk__now_ms_coarse(void);
/* *ts = ms from now on CLOCK_MONOTONIC (the handle's condition variables
 * wait on that clock). */
void esbulk__deadline_from_now(struct timespec *ts, int64_t ms);

/* Names the calling thread (as ps, top and perf show it; at most 15
 * bytes) where the system can: the library's own threads are "esbulk-io"
 * and "esbulk-topo". */
void esbulk__thread_name(const char *name);

#endif
