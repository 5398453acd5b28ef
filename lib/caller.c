/* The serving calls' frames: which thread is inside one of a handle's
 * serving calls (and so in a callback, where poll, flush and close are
 * refused), and the destroy a callback asks for, deferred to its frame. */
#include "engine.h"

/* This thread's frame on eb, NULL if none. Caller holds eb->lock. */
esbulk__caller_t *esbulk__caller_self(esbulk_t *eb)
{
    pthread_t self = pthread_self();
    esbulk__caller_t *c;

    for (c = eb->callers; c != NULL; c = c->next)
        if (pthread_equal(c->thread, self))
            return c;
    return NULL;
}

/* Registers c as this thread's frame. Caller holds eb->lock. */
void esbulk__caller_push(esbulk_t *eb, esbulk__caller_t *c)
{
    c->thread = pthread_self();
    c->served = 0;
    c->destroy = 0;
    c->next = eb->callers;
    eb->callers = c;
}

/* Registers c as this thread's serving call; ESBULK_ERR_IN_CALLBACK when the
 * thread is inside one already (in a callback): nothing is registered. */
esbulk_err_t esbulk__caller_enter(esbulk_t *eb, esbulk__caller_t *c)
{
    esbulk_err_t err = ESBULK_ERR_IN_CALLBACK;

    pthread_mutex_lock(&eb->lock);
    if (esbulk__caller_self(eb) == NULL) {
        esbulk__caller_push(eb, c);
        err = ESBULK_OK;
    }
    pthread_mutex_unlock(&eb->lock);
    return err;
}

int esbulk__destroy_requested(esbulk_t *eb)
{
    int r;

    pthread_mutex_lock(&eb->lock);
    r = eb->destroy_deferred;
    pthread_mutex_unlock(&eb->lock);
    return r;
}

/* Ends the serving call c. If c is to destroy the handle, closes it first
 * with timeout 0 (the documents left get ESBULK_ERR_CLOSED results, served
 * through the callbacks while c is still registered, so that they cannot
 * re-enter), waits for other threads' serving calls to return (they stop
 * waiting once a destroy is requested), and frees it. Returns 1 when eb was
 * freed. */
int esbulk__caller_leave(esbulk_t *eb, esbulk__caller_t *c)
{
    esbulk__caller_t **pp;
    int destroy = c->destroy;

    if (destroy)
        esbulk__close_call(eb, 0);
    pthread_mutex_lock(&eb->lock);
    for (pp = &eb->callers; *pp != c; pp = &(*pp)->next)
        ;
    *pp = c->next;
    if (eb->destroy_deferred) {
        pthread_cond_broadcast(&eb->cond_results);
        while (destroy && eb->callers != NULL)
            pthread_cond_wait(&eb->cond_results, &eb->lock);
    }
    pthread_mutex_unlock(&eb->lock);
    if (destroy)
        esbulk__handle_free(eb);
    return destroy;
}
