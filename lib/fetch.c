/* The topology thread (fetch.h): the I/O thread's cluster and index reads
 * (topology_read.c) run here, on workers of their own, and their answers go
 * back to it. */
#include "fetch.h"
#include "http.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Reads of different indices run side by side: one slow index (or a slow
 * node answering for it) does not hold up the others. */
#define FETCH_THREADS 4

typedef struct {
    struct esbulk__fetch_s *f;
    esbulk__http_cancel_t cancel;
    pthread_t thread;
    int started;
} worker_t;

struct esbulk__fetch_s {
    esbulk_topology_t *topo;
    void (*wake)(void *);
    void *wake_arg;
    worker_t workers[FETCH_THREADS];
    pthread_mutex_t lock;       /* guards what follows */
    pthread_cond_t cond;
    int stop;
    esbulk__fetched_t *cluster_ask;      /* a cluster read asked for */
    esbulk__fetched_t *asks, *asks_tail; /* index reads asked for */
    esbulk__fetched_t *answers, *answers_tail;
};

void esbulk__fetched_free(esbulk__fetched_t *a)
{
    if (a == NULL)
        return;
    free(a->name);
    esbulk__cluster_release(a->cluster);
    esbulk__index_release(a->e);
    free(a);
}

static void post(esbulk__fetch_t *f, esbulk__fetched_t *a)
{
    pthread_mutex_lock(&f->lock);
    if (f->answers_tail)
        f->answers_tail->next = a;
    else
        f->answers = a;
    f->answers_tail = a;
    pthread_mutex_unlock(&f->lock);
    f->wake(f->wake_arg);
}

static void *fetch_main(void *arg)
{
    worker_t *w = arg;
    esbulk__fetch_t *f = w->f;

    esbulk__thread_name("esbulk-topo");
    esbulk__http_set_thread_cancel(&w->cancel);
    for (;;) {
        esbulk__fetched_t *a;

        pthread_mutex_lock(&f->lock);
        while (!f->stop && f->cluster_ask == NULL && f->asks == NULL)
            pthread_cond_wait(&f->cond, &f->lock);
        if (f->stop) {
            pthread_mutex_unlock(&f->lock);
            break;
        }
        /* the cluster view first: index reads depend on it */
        if ((a = f->cluster_ask) != NULL) {
            f->cluster_ask = NULL;
        } else {
            a = f->asks;
            f->asks = a->next;
            if (f->asks == NULL)
                f->asks_tail = NULL;
        }
        a->next = NULL;
        pthread_mutex_unlock(&f->lock);
        /* answers are allocated when asked for: an answer always comes */
        if (a->name == NULL)
            /* the core's asks (the first, a refresh, a node down) take a
             * read in flight: at the start, the first ask and the core's
             * were two reads */
            a->err = esbulk__topology_get_cluster(f->topo, ESBULK__CLUSTER_JOIN, &a->cluster,
                                                  a->errstr, sizeof(a->errstr));
        else
            a->err = esbulk__topology_fetch_index(f->topo, a->name, &a->e, a->errstr,
                                                  sizeof(a->errstr));
        post(f, a);
    }
    esbulk__http_set_thread_cancel(NULL);
    return NULL;
}

static void fetch_free(esbulk__fetch_t *f)
{
    esbulk__fetched_t *a;
    int i;

    esbulk__fetched_free(f->cluster_ask);
    while ((a = f->asks) != NULL) {
        f->asks = a->next;
        esbulk__fetched_free(a);
    }
    while ((a = f->answers) != NULL) {
        f->answers = a->next;
        esbulk__fetched_free(a);
    }
    for (i = 0; i < FETCH_THREADS; i++)
        esbulk__http_cancel_free(&f->workers[i].cancel);
    pthread_mutex_destroy(&f->lock);
    pthread_cond_destroy(&f->cond);
    free(f);
}

esbulk__fetch_t *esbulk__fetch_start(esbulk_topology_t *topo, void (*wake)(void *), void *arg)
{
    esbulk__fetch_t *f = calloc(1, sizeof(*f));
    int i;

    if (f == NULL)
        return NULL;
    f->topo = topo;
    f->wake = wake;
    f->wake_arg = arg;
    pthread_mutex_init(&f->lock, NULL);
    pthread_cond_init(&f->cond, NULL);
    if ((f->cluster_ask = calloc(1, sizeof(*f->cluster_ask))) == NULL)
        goto fail;
    for (i = 0; i < FETCH_THREADS; i++) {
        worker_t *w = &f->workers[i];

        w->f = f;
        if (esbulk__http_cancel_init(&w->cancel) != ESBULK_OK)
            goto fail;
    }
    for (i = 0; i < FETCH_THREADS; i++) {
        worker_t *w = &f->workers[i];

        if (pthread_create(&w->thread, NULL, fetch_main, w) != 0)
            goto fail;
        w->started = 1;
    }
    return f;
fail:
    esbulk__fetch_stop(f);
    return NULL;
}

void esbulk__fetch_stop(esbulk__fetch_t *f)
{
    int i;

    if (f == NULL)
        return;
    pthread_mutex_lock(&f->lock);
    f->stop = 1;
    pthread_cond_broadcast(&f->cond);
    pthread_mutex_unlock(&f->lock);
    for (i = 0; i < FETCH_THREADS; i++)
        esbulk__http_cancel(&f->workers[i].cancel);
    for (i = 0; i < FETCH_THREADS; i++)
        if (f->workers[i].started)
            pthread_join(f->workers[i].thread, NULL);
    fetch_free(f);
}

esbulk_err_t esbulk__fetch_cluster(esbulk__fetch_t *f)
{
    esbulk__fetched_t *a = calloc(1, sizeof(*a));

    if (a == NULL)
        return ESBULK_ERR_NOMEM;
    pthread_mutex_lock(&f->lock);
    if (f->cluster_ask == NULL) {
        f->cluster_ask = a;
        a = NULL;
    }
    pthread_cond_signal(&f->cond);
    pthread_mutex_unlock(&f->lock);
    free(a); /* one was asked for already */
    return ESBULK_OK;
}

esbulk_err_t esbulk__fetch_index(esbulk__fetch_t *f, const char *name)
{
    esbulk__fetched_t *a = calloc(1, sizeof(*a));

    if (a == NULL || (a->name = esbulk__strdup(name)) == NULL) {
        free(a);
        return ESBULK_ERR_NOMEM;
    }
    pthread_mutex_lock(&f->lock);
    if (f->asks_tail)
        f->asks_tail->next = a;
    else
        f->asks = a;
    f->asks_tail = a;
    pthread_cond_signal(&f->cond);
    pthread_mutex_unlock(&f->lock);
    return ESBULK_OK;
}

esbulk__fetched_t *esbulk__fetch_take(esbulk__fetch_t *f)
{
    esbulk__fetched_t *a;

    pthread_mutex_lock(&f->lock);
    a = f->answers;
    f->answers = f->answers_tail = NULL;
    pthread_mutex_unlock(&f->lock);
    return a;
}
