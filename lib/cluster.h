/* The cluster model: immutable, refcounted snapshots of the cluster (nodes)
 * and of an index's layout and primaries, the parsers that build them from
 * the servers' answers, and the shard rule. Plain data: no I/O (the reads
 * are topology.h's). */
#ifndef ESBULK_CLUSTER_H
#define ESBULK_CLUSTER_H

#include "common.h"
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

void esbulk__index_release(esbulk__index_t *e);

/* The shard of a document with this id and routing under entry e (state
 * OK): the alias's index_routing stands for the routing, and a routing that
 * contradicts it is refused (the server would refuse the document), as is
 * a document with neither id nor routing. The one rule for both the adding
 * thread's hint (place.c) and the core's routing (core_dest.c): a hint is taken
 * as the core's shard only because both compute it here. */
esbulk_err_t esbulk__index_shard(const esbulk__index_t *e, const char *id, size_t id_len,
                                 const char *routing, size_t routing_len, int32_t *shard);

/* A new reference to c (NULL stays NULL). */
esbulk__cluster_t *esbulk__cluster_ref(esbulk__cluster_t *c);
void esbulk__cluster_release(esbulk__cluster_t *c);
/* The index of the node with this id in c->nodes, -1 if none (or c NULL). */
int esbulk__cluster_node_index(const esbulk__cluster_t *c, const char *id);

/* A new entry for name (one reference, state UNKNOWN, a serial of its own),
 * NULL if out of memory. */
esbulk__index_t *esbulk__index_new(const char *name);

/* Pieces of the parsers the fallback read (_settings + _search_shards) uses
 * too. An integer from a JSON integer or a decimal string (-1 and *ok 0 when
 * absent or bad). */
int64_t esbulk__json_int(json_t *v, int *ok);
/* Fills the layout and routability of e from the index's settings object.
 * routing_num_shards: the metadata value when > 0. */
esbulk_err_t esbulk__index_parse_layout(json_t *settings, int64_t routing_num_shards, int is_es,
                                        esbulk__index_t *e, char *errstr, size_t errstr_size);
/* Parses a shard's copies (array of {primary, node, state}) into ids[shard]. */
esbulk_err_t esbulk__index_take_primary(json_t *copies, int32_t shard, char **ids);
/* Frees the n node ids of ids and ids. */
void esbulk__node_ids_free(char **ids, int32_t n);
/* True when a _cluster/state answer names index in its metadata. */
int esbulk__state_has_index(json_t *root, const char *index);

/* esbulk_topology_describe's pieces: new JSON objects, NULL if out of memory. */
json_t *esbulk__cluster_json(const esbulk__cluster_t *c);
json_t *esbulk__index_json(const esbulk__index_t *e);

#endif
