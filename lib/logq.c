/* The log lines a handle without a log callback keeps for esbulk_log_take()
 * (log.h): a bounded queue under a mutex of its own, fed as the handle's log
 * callback from any thread. */
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

esbulk__logq_t *esbulk__logq_new(void)
{
    esbulk__logq_t *q = calloc(1, sizeof(*q));

    if (q != NULL && pthread_mutex_init(&q->lock, NULL) != 0) {
        free(q);
        q = NULL;
    }
    return q;
}

void esbulk__logq_free(esbulk__logq_t *q)
{
    size_t i;

    if (q == NULL)
        return;
    for (i = 0; i < q->count; i++)
        free(q->lines[(q->head + i) % ESBULK__LOGQ_MAX].facility);
    pthread_mutex_destroy(&q->lock);
    free(q);
}

void esbulk__logq_push(int32_t level, const char *facility, const char *message, void *opaque)
{
    esbulk__logq_t *q = opaque;
    size_t flen = strlen(facility), mlen = strlen(message);
    char *p = malloc(flen + 1 + mlen + 1);
    esbulk__logline_t *l;

    pthread_mutex_lock(&q->lock);
    if (p == NULL) {
        q->dropped++;
        pthread_mutex_unlock(&q->lock);
        return;
    }
    if (q->count == ESBULK__LOGQ_MAX) {
        /* the oldest makes room */
        free(q->lines[q->head].facility);
        q->head = (q->head + 1) % ESBULK__LOGQ_MAX;
        q->count--;
        q->dropped++;
    }
    l = &q->lines[(q->head + q->count) % ESBULK__LOGQ_MAX];
    q->count++;
    l->level = level;
    l->facility = memcpy(p, facility, flen + 1);
    l->message = memcpy(p + flen + 1, message, mlen + 1);
    pthread_mutex_unlock(&q->lock);
}

static void copy_out(char *dst, size_t size, const char *src)
{
    size_t n;

    if (dst == NULL || size == 0)
        return;
    n = strlen(src);
    if (n >= size)
        n = size - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

int esbulk__logq_take(esbulk__logq_t *q, int32_t *level, char *facility, size_t facility_size,
                      char *message, size_t message_size)
{
    esbulk__logline_t l;
    uint64_t dropped;

    pthread_mutex_lock(&q->lock);
    dropped = q->dropped;
    q->dropped = 0;
    if (dropped == 0 && q->count == 0) {
        pthread_mutex_unlock(&q->lock);
        return 0;
    }
    if (dropped == 0) {
        l = q->lines[q->head];
        q->head = (q->head + 1) % ESBULK__LOGQ_MAX;
        q->count--;
    }
    pthread_mutex_unlock(&q->lock);
    if (dropped > 0) {
        /* before the lines kept: the dropped ones were older */
        char why[128];

        snprintf(why, sizeof(why), "%llu log lines dropped: the handle keeps the last %d "
                 "until they are taken", (unsigned long long)dropped, ESBULK__LOGQ_MAX);
        *level = ESBULK_LOG_WARNING;
        copy_out(facility, facility_size, "log");
        copy_out(message, message_size, why);
        return 1;
    }
    *level = l.level;
    copy_out(facility, facility_size, l.facility);
    copy_out(message, message_size, l.message);
    free(l.facility);
    return 1;
}
