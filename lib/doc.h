/* A document, from esbulk_add() until its result has been served, and the
 * queues that hold documents (doc.c). Plain data, no locks: shared by the
 * public calls, the hand-off between threads (handoff.c) and the engine
 * core. Its memory (records, lines, and their freeing) is docmem.h's. */
#ifndef ESBULK_DOC_H
#define ESBULK_DOC_H

#include "common.h"

/* The public result handed to callbacks is this same object. */
typedef struct esbulk_result_s esbulk__doc_t;
/* index, id and routing of most documents fit in the record (a 26-byte
 * index and a 20-byte id) */
#define ESBULK__DOC_STRS 48
/* the longest index name, _id or routing taken (the server takes 255, 512
 * and any: this only keeps the record's 32-bit lengths safe) */
#define ESBULK__KEY_MAX ((size_t)1 << 20)
/* the longest _id the server takes, in bytes (Elasticsearch and OpenSearch:
 * a longer one fails the whole bulk request) */
#define ESBULK__ID_MAX ((size_t)512)

/* What few results say, out of the record: an index other than the one
 * added, an id the server chose, an error, an unusual result. */
typedef struct {
    char *index;                    /* NULL: the index as added */
    char *id;                       /* the server's, when the document had none */
    char *error_type, *error_reason;
    char *cause_type, *cause_reason; /* the server's caused_by of that error */
    char *result_own;               /* r_result when not a static string */
} esbulk__doc_more_t;

/* A record is 4 cache lines (checked by check_docmem), laid out by who
 * touches what: three threads walk it (adding, I/O, serving), and its size
 * is most of what a document costs beyond its bytes. Lengths are 32-bit:
 * doc_build refuses a document whose record and lines would not fit. */
struct esbulk_result_s {
    /* queues, keys: written by the add, read by every thread */
    esbulk__doc_t *next;            /* in whichever queue holds it */
    esbulk__doc_t *ahead;           /* in the incoming queue, a destination's, the results:
                                       the document queued ESBULK__AHEAD after it, or NULL;
                                       only ever prefetched (stale once it left the queue) */
    char *index;                    /* as added */
    char *id;                       /* as added or generated; NULL: server assigns */
    char *routing;                  /* NULL: none */
    char *lines;                    /* action line + body line, ready to send */
    uint64_t hint_serial;           /* the adding thread computed hint_shard from the
                                       index entry of this serial (topology.h); 0: none */
    int32_t hint_shard;
    uint32_t index_len;             /* strlen(index) */
    /* routing, sending, the outcome: the I/O thread's */
    uint32_t id_len, routing_len;
    uint32_t lines_len;
    int32_t attempts;               /* requests that carried it */
    int64_t queued_ms;              /* when it was added, then when the core queued it */
    int64_t deadline_ms, retry_at_ms;
    unsigned char op;               /* esbulk_op_t */
    unsigned char slot;             /* the record goes back to this slot's free records */
    unsigned char ambiguous;        /* a request with it broke after it was sent */
    unsigned char conditional;      /* an external version or if_seq_no (a 409 after a broken
                                       attempt means it was most likely applied) */
    unsigned char unrouted;
    unsigned char index_concrete;   /* routed by metadata that names this index as its own
                                       write index: the answer need not repeat _index */
    unsigned char outcome;          /* esbulk_outcome_t */
    signed char err;                /* esbulk_err_t */
    int32_t status;
    uint32_t lines_off;
    uint32_t body_bytes;            /* counted in buffer.max.bytes until the outcome: the
                                       record, its strings and lines, as held */
    uint32_t split;                 /* at most this many documents in a request with it,
                                       while a request the server refused whole (400) is
                                       halved to find the document it refused; 0: any */
    /* memory, the caller's, the result */
    struct esbulk__block_s *block;  /* lines live in this shared block (docmem.c) at
                                       lines_off; NULL: in an allocation of their own */
    struct esbulk__docmem_s *dm;    /* the record came from dm's slabs (NULL: calloc) */
    char *strs_own;                 /* index, id and routing when they do not fit in strs */
    void *opaque;
    esbulk__doc_more_t *more;       /* NULL: nothing more to say */
    const char *r_result;           /* a static string, or more->result_own */
    int64_t seq_no;
    uint64_t seq;                   /* add order (the adding and serving threads') */
    int64_t primary_term, version;
    char strs[ESBULK__DOC_STRS];
};

/* d's more, made if it has none (NULL if out of memory). */
esbulk__doc_more_t *esbulk__doc_more(esbulk__doc_t *d);
/* A field of d's more, NULL if it has none. */
#define ESBULK__DOC_MORE(d, field) ((d)->more != NULL ? (d)->more->field : NULL)

/* How far down a queue its walker prefetches records, by the ahead links:
 * a deep queue's records are out of every cache, and a walk that waits on
 * each record's miss in turn is latency bound. */
#define ESBULK__AHEAD 8

/* The last ESBULK__AHEAD documents pushed at a queue's tail, each still in
 * it: a push links the one ESBULK__AHEAD back to the new one. */
typedef struct {
    esbulk__doc_t *doc[ESBULK__AHEAD];
    unsigned pushes;
} esbulk__ahead_t;

/* Prefetches the first `lines` cache lines of the record d's ahead link
 * names, if any, for reading or (for_write) writing: a walker calls it for
 * each record it takes. The arguments are constants where it is called, so
 * the loop and the test fold away. */
static inline void esbulk__doc_prefetch_ahead(const esbulk__doc_t *d, unsigned lines, int for_write)
{
    const char *a = (const char *)d->ahead;
    unsigned i;

    if (a == NULL)
        return;
    for (i = 0; i < lines; i++) {
        if (for_write)
            ESBULK__PREFETCH_W(a + i * ESBULK__CACHE_LINE);
        else
            ESBULK__PREFETCH(a + i * ESBULK__CACHE_LINE);
    }
}

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
/* Pushes d at q's tail and links it into ahead. */
void esbulk__queue_push_ahead(esbulk__queue_t *q, esbulk__ahead_t *ahead, esbulk__doc_t *d);
/* Pops q's head, which ahead forgets (NULL: q has no links). A document in
 * ahead has fewer than ESBULK__AHEAD behind it, so only a short queue can
 * give one up. */
esbulk__doc_t *esbulk__queue_pop_ahead(esbulk__queue_t *q, esbulk__ahead_t *ahead);
/* Moves all of src, linked by ahead, to the back of dst: ahead forgets them. */
void esbulk__queue_take_ahead(esbulk__queue_t *dst, esbulk__queue_t *src, esbulk__ahead_t *ahead);

/* Sets the outcome fields of d (copies type and reason into d->more; an
 * allocation that fails leaves them NULL: the outcome and err remain), and
 * the cause (caused_by) of that error, kept only with a reason. With
 * neither, and no d->more, it only sets the three fields. */
void esbulk__doc_set_outcome(esbulk__doc_t *d, esbulk_outcome_t outcome, esbulk_err_t err,
                             int32_t status, const char *error_type, const char *reason,
                             const char *cause_type, const char *cause_reason);
#endif
