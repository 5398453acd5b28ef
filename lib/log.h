/* Logging through the caller's callback; silent without one. */
#ifndef ESBULK_LOG_H
#define ESBULK_LOG_H

#include "common.h"

#include <pthread.h>

typedef struct {
    esbulk_log_cb_t *cb;
    void *opaque;
    int32_t level; /* lines above this level are dropped */
} esbulk__log_t;

void esbulk__log(const esbulk__log_t *log, int32_t level, const char *facility,
                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* The log lines a handle made without a log callback keeps for
 * esbulk_log_take(): the last ESBULK__LOGQ_MAX, and a count of the older
 * ones dropped to make room (or that memory could not be had for), said by
 * the next take. Thread-safe: a mutex of its own, held for a list operation
 * (the lines are logged on any thread, some holding the handle's lock). */
#define ESBULK__LOGQ_MAX 64

typedef struct {
    int32_t level;
    char *facility;     /* one allocation: facility, NUL, message, NUL */
    char *message;
} esbulk__logline_t;

typedef struct {
    pthread_mutex_t lock;
    esbulk__logline_t lines[ESBULK__LOGQ_MAX];
    size_t head, count;
    uint64_t dropped;
} esbulk__logq_t;

/* NULL if out of memory. */
esbulk__logq_t *esbulk__logq_new(void);
void esbulk__logq_free(esbulk__logq_t *q);
/* An esbulk_log_cb_t; opaque is the queue. */
void esbulk__logq_push(int32_t level, const char *facility, const char *message, void *opaque);
/* The oldest line into *level, facility and message (each truncated to its
 * size with a NUL; facility may be NULL with size 0), or first, when lines
 * were dropped, a warning that says how many: 1; 0 when there is none. */
int esbulk__logq_take(esbulk__logq_t *q, int32_t *level, char *facility, size_t facility_size,
                      char *message, size_t message_size);

#endif
