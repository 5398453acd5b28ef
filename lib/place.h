/* Placement hints: in which docmem slot (docmem.h) a document's record and
 * lines are put, decided on the adding thread from the index layouts that
 * the I/O thread published last: the slot of the node (or shard) the
 * document will most likely be sent to, so that each request's documents
 * lie together in memory. The shard computed for it goes with the document,
 * named by the serial of the index entry it was computed from: the engine
 * core takes it only when it routes by that same entry (entries are
 * immutable), and computes the shard itself otherwise, so a missing or stale
 * hint costs only locality and a hash.
 *
 * Thread-safe: one spin lock (spin.h), held for a lookup and one shard
 * computation, or for a publish's copy of the layouts. */
#ifndef ESBULK_PLACE_H
#define ESBULK_PLACE_H

#include "spin.h"
#include "topology.h"

/* Layouts kept: the indices used most lately. */
#define ESBULK__PLACE_MAX 8

typedef struct {
    esbulk__spin_t lock;
    esbulk__index_t *e[ESBULK__PLACE_MAX]; /* references, under lock */
    size_t name_len[ESBULK__PLACE_MAX];    /* strlen(e[i]->name) */
    esbulk__shard_div_t div[ESBULK__PLACE_MAX]; /* e[i]'s layout; not ok: computed by
                                              esbulk__index_shard() */
    int n;
    int last;    /* the entry found last (documents come in runs) */
    int by_node; /* the slot follows the primary's node (routing.level=node),
                    else the shard */
    int off;     /* routing.level=off: one destination, every slot 0 */
} esbulk__place_t;

void esbulk__place_init(esbulk__place_t *p, int off, int by_node);
/* Releases the layouts. */
void esbulk__place_destroy(esbulk__place_t *p);
/* The layouts are now e[0..n) (references taken over; at most
 * ESBULK__PLACE_MAX). */
void esbulk__place_publish(esbulk__place_t *p, esbulk__index_t *const *e, int n);
/* The slot for a document of index (NUL-terminated, index_len bytes) with this id and
 * routing: the primary's node number (or the shard) when the index's layout
 * is known and the document has a key to route on, else 0. When a shard was
 * computed (the entry readable, its routing accepted), *serial is the
 * entry's serial and *shard the shard; else *serial is 0. */
unsigned esbulk__place_slot(esbulk__place_t *p, const char *index, size_t index_len,
                            const char *id, size_t id_len,
                            const char *routing, size_t routing_len, uint64_t *serial,
                            int32_t *shard);

#endif
