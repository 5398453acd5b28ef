/* A document, from esbulk_add() until its result has been served, and the
 * queues that hold documents. Plain data, no locks: shared by the public
 * calls (esbulk.c), the hand-off between threads (handoff.c) and the engine
 * core (core.c). */
#ifndef ESBULK_DOC_H
#define ESBULK_DOC_H

#include "common.h"

/* The public result handed to callbacks is this same object. */
typedef struct esbulk_result_s esbulk__doc_t;
/* index, id and routing of most documents fit in the record */
#define ESBULK__DOC_STRS 64
struct esbulk_result_s {
    esbulk__doc_t *next;            /* in whichever queue holds it */
    esbulk__doc_t *live_prev, *live_next; /* every unserved document, in add order */
    uint64_t seq;                   /* add order */
    esbulk_op_t op;
    uint32_t index_len;             /* strlen(index) */
    char *index;                    /* as added */
    char *id;                       /* as added or generated; NULL: server assigns */
    size_t id_len;
    char *routing;                  /* NULL: none */
    size_t routing_len;
    uint64_t hint_serial;           /* the adding thread computed hint_shard from the
                                       index entry of this serial (topology.h); 0: none */
    int32_t hint_shard;
    char *lines;                    /* action line + body line, ready to send */
    size_t lines_len;
    struct esbulk__block_s *block;  /* lines live in this shared block (docmem.c) at
                                       lines_off; NULL: in an allocation of their own */
    size_t lines_off;
    struct esbulk__docmem_s *dm;    /* the record came from dm's slabs (NULL: calloc) */
    unsigned char slot;             /* and goes back to this slot's free records */
    char *strs_own;                 /* index, id and routing when they do not fit in strs */
    char strs[ESBULK__DOC_STRS];
    size_t body_bytes;              /* counted in buffer.max.bytes until the outcome: the
                                       record, its strings and lines, as held */
    void *opaque;
    int32_t attempts;               /* requests that carried it */
    int ambiguous;                  /* a request with it broke after it was sent */
    int conditional;                /* an external version or if_seq_no (a 409 after a broken
                                       attempt means it was most likely applied) */
    int unrouted;
    int index_concrete;             /* routed by metadata that names this index as its own
                                       write index: the answer need not repeat _index */
    int64_t added_ms, deadline_ms, retry_at_ms, queued_ms;
    /* the result */
    esbulk_outcome_t outcome;
    esbulk_err_t err;
    int32_t status;
    char *r_index;                  /* NULL: the index as added */
    char *r_id, *r_error_type, *r_error_reason;
    const char *r_result;           /* a static string, or r_result_own */
    char *r_result_own;
    int64_t seq_no, primary_term, version;
};

typedef struct {
    esbulk__doc_t *head, *tail;
    size_t count;
    size_t bytes; /* lines_len summed */
} esbulk__queue_t;

void esbulk__queue_push(esbulk__queue_t *q, esbulk__doc_t *d);
void esbulk__queue_push_front(esbulk__queue_t *q, esbulk__doc_t *d);
esbulk__doc_t *esbulk__queue_pop(esbulk__queue_t *q);
/* Moves all of src to the front of dst, keeping src's order. */
void esbulk__queue_prepend(esbulk__queue_t *dst, esbulk__queue_t *src);
/* Moves all of src to the back of dst. */
void esbulk__queue_append(esbulk__queue_t *dst, esbulk__queue_t *src);

/* Sets the outcome fields of d (copies type and reason; an allocation that
 * fails leaves them NULL: the outcome and err remain). */
void esbulk__doc_set_outcome(esbulk__doc_t *d, esbulk_outcome_t outcome, esbulk_err_t err,
                             int32_t status, const char *error_type, const char *reason);
/* Frees d and all it holds (docmem.c: a record from a slab goes back). */
void esbulk__doc_free(esbulk__doc_t *d);
/* Frees every document of a list linked by next (one lock for the records). */
void esbulk__doc_free_list(esbulk__doc_t *head);

#endif
