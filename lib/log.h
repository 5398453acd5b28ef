/* Logging through the caller's callback; silent without one. */
#ifndef ESBULK_LOG_H
#define ESBULK_LOG_H

#include "common.h"

typedef struct {
    esbulk_log_cb_t *cb;
    void *opaque;
    int32_t level; /* lines above this level are dropped */
} esbulk__log_t;

void esbulk__log(const esbulk__log_t *log, int32_t level, const char *facility,
                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
