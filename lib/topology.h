/* The live cluster view. Immutable snapshots (cluster, index entries) are
 * swapped under the topology's lock, so that a reader holds a consistent
 * view without holding the lock. */
#ifndef ESBULK_TOPOLOGY_H
#define ESBULK_TOPOLOGY_H

#include "common.h"
#include "log.h"
#include "route.h"

#include <jansson.h>
#include <stdatomic.h>

typedef struct {
    char *id;
    char *name;
    char *http;    /* base URL built from publish_address, NULL without HTTP */
    int reachable; /* answered GET / at the last refresh */
} esbulk__node_t;

typedef struct {
    _Atomic int refs;
    char *distribution; /* "opensearch" or "elasticsearch" */
    char *version;      /* "2.19.6" */
    int is_elasticsearch;
    esbulk__node_t *nodes;
    int nnodes;
    int seeds_only;     /* send to seeds only: discovery off or nodes unreachable */
} esbulk__cluster_t;

typedef enum {
    ESBULK__IDX_OK = 0,
    ESBULK__IDX_UNKNOWN,    /* does not exist (yet) */
    ESBULK__IDX_UNROUTABLE, /* routes on source fields, closed, no write index */
    ESBULK__IDX_ERROR       /* the last fetch failed (error, reason): asked again soon */
} esbulk__idx_state_t;

typedef struct {
    _Atomic int refs;
    uint64_t serial;     /* unique to this entry in the process (never 0 when
                            read from a cluster): a placement hint computed
                            from it names it (doc.h hint_serial) */
    char *name;          /* as asked: index, alias or data stream */
    char *write_index;   /* the concrete index written to */
    char *alias_routing; /* the alias's index_routing, or NULL */
    esbulk__idx_state_t state;
    char *reason;        /* why unknown or unroutable */
    esbulk_layout_t layout;
    int64_t version_created;
    int32_t *primary;    /* node index in cluster->nodes per shard, -1 unassigned */
    esbulk__cluster_t *cluster; /* the node table primary[] refers to */
    int from_fallback;   /* built from _settings + _search_shards */
    esbulk_err_t error;  /* ESBULK__IDX_ERROR: why */
    int64_t fetched_ms;
} esbulk__index_t;

/* Parsers, exposed for the unit tests (data-file driven). Each takes the
 * decoded JSON body of one server answer. */
esbulk_err_t esbulk__topology_parse_root(json_t *root, char **distribution, char **version,
                                         char *errstr, size_t errstr_size);
esbulk_err_t esbulk__topology_parse_state(json_t *root, const char *index, int is_es,
                                          esbulk__index_t *e, char ***node_ids,
                                          char *errstr, size_t errstr_size);
/* "host/1.2.3.4:9200" -> "host:9200"; "1.2.3.4:9200" and "[::1]:9200" as they are. */
char *esbulk__publish_address_to_hostport(const char *publish_address);

/* A reference to the index entry for name, fetched if missing or stale. */
esbulk_err_t esbulk__topology_get_index(esbulk_topology_t *topo, const char *name,
                                        esbulk__index_t **entry, char *errstr,
                                        size_t errstr_size);
void esbulk__index_release(esbulk__index_t *e);

/* The shard of a document with this id and routing under entry e (state
 * OK): the alias's index_routing stands for the routing, and a routing that
 * contradicts it is refused (the server would refuse the document), as is
 * a document with neither id nor routing. The one rule for both the adding
 * thread's hint (place.c) and the core's routing (core.c): a hint is taken
 * as the core's shard only because both compute it here. */
esbulk_err_t esbulk__index_shard(const esbulk__index_t *e, const char *id, size_t id_len,
                                 const char *routing, size_t routing_len, int32_t *shard);

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
void esbulk__cluster_release(esbulk__cluster_t *c);

#endif
