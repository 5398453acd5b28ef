/* Logging through the log callback: a line is formatted and handed to it
 * only when its level is logged. Where the callback puts it is its own
 * business (logq.c keeps lines for esbulk_log_take()). */
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void esbulk__log(const esbulk__log_t *log, int32_t level, const char *facility,
                 const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    if (log == NULL || log->cb == NULL || level > log->level)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    log->cb(level, facility, msg, log->opaque);
}
