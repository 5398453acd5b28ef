/* The topology thread: reads cluster and index metadata with blocking
 * requests on a thread of its own, so that the I/O thread never waits for
 * one. The I/O thread asks (esbulk__fetch_cluster, esbulk__fetch_index) and
 * takes the answers (esbulk__fetch_take); wake is called after each answer.
 * Every request can be stopped at once (esbulk__fetch_stop). */
#ifndef ESBULK_FETCH_H
#define ESBULK_FETCH_H

#include "topology.h"

typedef struct esbulk__fetch_s esbulk__fetch_t;

/* An answer: a cluster read (name NULL: cluster is a new reference, NULL
 * when it could not be read) or an index read (e a new reference, NULL on
 * error). */
typedef struct esbulk__fetched_s {
    char *name;
    esbulk__cluster_t *cluster;
    esbulk__index_t *e;
    esbulk_err_t err;
    char errstr[256];
    struct esbulk__fetched_s *next;
} esbulk__fetched_t;

/* Starts the thread; it reads the cluster at once. NULL if out of memory. */
esbulk__fetch_t *esbulk__fetch_start(esbulk_topology_t *topo, void (*wake)(void *), void *arg);
/* Stops the request in progress, joins the thread and frees everything,
 * answers not taken included. NULL is accepted. */
void esbulk__fetch_stop(esbulk__fetch_t *f);

/* Asks for the cluster view to be read again (once, however often asked
 * before it is read). ESBULK_ERR_NOMEM: not asked. */
esbulk_err_t esbulk__fetch_cluster(esbulk__fetch_t *f);
/* Asks for index name (copied). ESBULK_ERR_NOMEM: not asked. */
esbulk_err_t esbulk__fetch_index(esbulk__fetch_t *f, const char *name);
/* The answers so far, oldest first; free each with esbulk__fetched_free(). */
esbulk__fetched_t *esbulk__fetch_take(esbulk__fetch_t *f);
/* Frees one answer (and the references it holds). */
void esbulk__fetched_free(esbulk__fetched_t *a);

#endif
