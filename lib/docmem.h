/* Memory for documents, without a malloc per document in the steady state
 * (docmem.c): records come from slabs and go back to a free list; each
 * document's request lines are written once, when it is added, into a large
 * block shared with the documents added around it, and curl reads them from
 * there. A block is reused once every document in it has its answer; a
 * document that waits for a retry moves its lines out first, so that a few
 * slow documents do not hold many blocks.
 *
 * Thread-safe: records and blocks are taken on the callers' threads and
 * given back on the I/O thread or the serving thread (one spin lock for the
 * free lists, held for list operations only, and an atomic count per
 * block). */
#ifndef ESBULK_DOCMEM_H
#define ESBULK_DOCMEM_H

#include "doc.h"

typedef struct esbulk__docmem_s esbulk__docmem_t;

/* NULL if out of memory. */
esbulk__docmem_t *esbulk__docmem_new(void);
/* Frees the slabs and blocks: every record must have been given back. */
void esbulk__docmem_destroy(esbulk__docmem_t *dm);

/* Frees the spare blocks (those no document holds) that stayed unused since
 * the previous call, if that was SPARE_TRIM_MS (5 s) or more before now_ms,
 * keeping a few; the first call starts the period. Called by the I/O
 * thread now and then, so that memory a burst needed goes back once the
 * burst is over. */
void esbulk__docmem_spares_trim(esbulk__docmem_t *dm, int64_t now_ms);
/* How many spare blocks are kept, and how many records the slabs hold (for
 * the tests). */
size_t esbulk__docmem_spares(esbulk__docmem_t *dm);
size_t esbulk__docmem_records(esbulk__docmem_t *dm);
/* How many blocks are allocated (current, spare or holding documents'
 * lines), and in *current how many slots have a current block (for the
 * tests: with every document given back, the blocks are those two). */
size_t esbulk__docmem_blocks(esbulk__docmem_t *dm, size_t *current);

/* Slots keep apart in memory the documents of different destinations: each
 * slot has its own block of lines and its own free records, so that the
 * documents one request carries lie one after another (walking them reads
 * memory in order, which the processor fetches ahead) rather than among
 * every other destination's. Any slot may be used for any document: it only
 * decides where it is placed. */
#define ESBULK__DOCMEM_SLOTS 8

/* A zeroed record (d->dm and d->slot set) for slot (taken modulo
 * ESBULK__DOCMEM_SLOTS) and, when lines_max > 0, room for up to
 * lines_max bytes of request lines plus a NUL at *lines (in a block, or an
 * allocation of its own for a large document); d->lines is left NULL for
 * the caller to set. ESBULK_ERR_NOMEM. */
esbulk_err_t esbulk__docmem_take(esbulk__docmem_t *dm, unsigned slot, size_t lines_max,
                                 esbulk__doc_t **out, char **lines);
/* The lines written at d->lines turned out lines_len bytes, fewer than the
 * lines_max asked for: the rest goes back when nobody took room after it. */
void esbulk__docmem_trim(esbulk__doc_t *d, size_t lines_max);

/* Gives back d's lines (the block's share, or its own allocation). */
void esbulk__doc_drop_lines(esbulk__doc_t *d);
/* Drops of many documents' lines, one atomic operation per run of
 * documents in the same block (a response's documents lie together): start
 * it zeroed, end it with esbulk__drops_end before the block could be
 * needed (a block is reused only when its last document's drop is done). */
typedef struct {
    struct esbulk__block_s *block;
    size_t n;
} esbulk__drops_t;
/* As esbulk__doc_drop_lines, the block's share counted in run. */
void esbulk__doc_drop_lines_run(esbulk__doc_t *d, esbulk__drops_t *run);
/* Gives back the shares counted in run. */
void esbulk__drops_end(esbulk__drops_t *run);
/* Moves d's lines out of their block into an allocation of their own (a
 * retry waits: the block can be reused meanwhile). Out of memory: they stay
 * where they are. */
void esbulk__doc_own_lines(esbulk__doc_t *d);

/* How many times records were given back under the lock so far (for the
 * tests: a list given back takes it once). */
uint64_t esbulk__docmem_free_locks(esbulk__docmem_t *dm);

/* Frees d and all it holds (a record from a slab goes back to it). */
void esbulk__doc_free(esbulk__doc_t *d);
/* Frees every document of a list linked by next (one lock for the records). */
void esbulk__doc_free_list(esbulk__doc_t *head);

#endif
