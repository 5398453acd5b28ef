/* The live cluster view. Immutable snapshots (cluster, index entries) are
 * swapped under the topology's lock, so that a reader holds a consistent
 * view without holding the lock. */
#ifndef ESBULK_TOPOLOGY_H
#define ESBULK_TOPOLOGY_H

#include "cluster.h"
#include "log.h"

/* A reference to the index entry for name, fetched if missing or stale. */
esbulk_err_t esbulk__topology_get_index(esbulk_topology_t *topo, const char *name,
                                        esbulk__index_t **entry, char *errstr,
                                        size_t errstr_size);
/* Reads index name now (blocking), without keeping it in the topology's
 * own table: a new reference in *entry (state UNKNOWN for an index that
 * does not exist), or an error. The engine keeps its entries itself. */
esbulk_err_t esbulk__topology_fetch_index(esbulk_topology_t *topo, const char *name,
                                          esbulk__index_t **entry, char *errstr,
                                          size_t errstr_size);

/* The handle's log (its callback, or its queue for esbulk_log_take()) in
 * place of the configuration's, before any request is made. */
void esbulk__topology_set_log(esbulk_topology_t *topo, const esbulk__log_t *log);

/* How fresh a cluster snapshot esbulk__topology_get_cluster gives. */
typedef enum {
    ESBULK__CLUSTER_CACHED = 0, /* the last one read, unless missing or stale */
    ESBULK__CLUSTER_JOIN,       /* a read in flight, else a new one */
    ESBULK__CLUSTER_AFTER       /* a read begun after the call */
} esbulk__cluster_fresh_t;

/* A reference to a cluster snapshot at least as fresh as asked; release
 * with esbulk__cluster_release(). One read at a time: a caller that finds
 * a read in flight waits for it. */
esbulk_err_t esbulk__topology_get_cluster(esbulk_topology_t *topo, esbulk__cluster_fresh_t fresh,
                                          esbulk__cluster_t **out, char *errstr,
                                          size_t errstr_size);

#endif
