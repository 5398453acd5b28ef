/* The topology object's inside, shared by topology.c (the object) and
 * topology_read.c (its reads) and no other file: its fields, and the reads
 * the object makes. Apart from topology.h, which stays free of libcurl. */
#ifndef ESBULK_TOPOLOGY_INT_H
#define ESBULK_TOPOLOGY_INT_H

#include "http.h"
#include "topology.h"

#include <pthread.h>

/* An index not found is looked for again after this long, so that documents
 * for an index created meanwhile become routed soon. */
#define ESBULK__UNKNOWN_RECHECK_MS 1000
/* The longest a topology request may take. */
#define ESBULK__TOPOLOGY_TIMEOUT_MS 10000

struct esbulk_topology_s {
    pthread_mutex_t lock;
    esbulk__http_opts_t http;
    esbulk__url_t *seeds;
    int nseeds;
    atomic_int good_seed;   /* the seed that answered last */
    atomic_int *seed_down;  /* per seed: its failure was logged, and it has not answered
                               since (the next failures go at debug level) */
    int discovery;
    int64_t refresh_ms;
    esbulk__log_t log;
    esbulk__cluster_t *cluster; /* NULL until first fetched */
    int64_t cluster_fetched_ms;
    esbulk__index_t **indices;
    int nindices;
    atomic_int logged_state_forbidden, logged_seeds_only, logged_nodes_forbidden; /* log once */
    /* the last failed cluster fetch: not tried again for ESBULK__CLUSTER_RETRY_MS */
    int64_t cluster_fail_ms;
    esbulk_err_t cluster_fail_err;
    char cluster_fail_msg[256];
    /* One cluster read at a time (esbulk__topology_get_cluster): the others
     * asking meanwhile wait for it (cluster_cond) and take its outcome. */
    pthread_cond_t cluster_cond;
    int cluster_reading;     /* a read is in flight */
    uint64_t cluster_reads;  /* reads begun, numbered from 1 */
    uint64_t cluster_done;   /* the number of the last read that ended */
    int cluster_done_ok;     /* and whether it read the cluster */
};
/* A failed cluster read is not tried again for this long. */
#define ESBULK__CLUSTER_RETRY_MS 500

/* The reads (topology_read.c): blocking, each under ESBULK__TOPOLOGY_TIMEOUT_MS.
 * A new cluster snapshot in *out: the distribution and version from GET /,
 * the nodes with discovery on (seeds only when they cannot be read). */
esbulk_err_t esbulk__topology_read_cluster(esbulk_topology_t *topo, esbulk__cluster_t **out,
                                           char *errstr, size_t errstr_size);
/* A new entry for index name in *out, its primaries numbered by c's nodes;
 * *missing_node: a primary is on a node c does not know (c is stale). */
esbulk_err_t esbulk__topology_read_index(esbulk_topology_t *topo, esbulk__cluster_t *c,
                                         const char *name, esbulk__index_t **out,
                                         int *missing_node, char *errstr, size_t errstr_size);

#endif
