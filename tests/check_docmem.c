/* Document memory (lib/docmem.c): records from slabs, request lines in
 * shared blocks, blocks reused only once every document in them let go,
 * lines moved out for a retry, slots that keep destinations apart, and all
 * of it from several threads; and the placement hints that pick the slot
 * (lib/place.c). */
#include "docmem.h"
#include "place.h"

#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* A document with lines_max bytes of room, filled with a pattern of n bytes
 * that names it (the rest of the room given back). */
static esbulk__doc_t *take_filled_in(esbulk__docmem_t *dm, unsigned slot, size_t lines_max,
                                     size_t n, unsigned tag)
{
    esbulk__doc_t *d;
    char *p;
    size_t i;

    ck_assert_int_eq(esbulk__docmem_take(dm, slot, lines_max, &d, &p), ESBULK_OK);
    ck_assert_uint_eq(d->slot, slot % ESBULK__DOCMEM_SLOTS);
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_eq(d->lines, NULL); /* the caller sets it */
    for (i = 0; i < n; i++)
        p[i] = (char)('a' + (tag + i) % 26);
    p[n] = '\0';
    d->lines = p;
    d->lines_len = n;
    esbulk__docmem_trim(d, lines_max);
    d->opaque = (void *)(uintptr_t)tag;
    return d;
}

static esbulk__doc_t *take_filled(esbulk__docmem_t *dm, size_t lines_max, size_t n, unsigned tag)
{
    return take_filled_in(dm, 0, lines_max, n, tag);
}

static int intact(const esbulk__doc_t *d)
{
    unsigned tag = (unsigned)(uintptr_t)d->opaque;
    size_t i;

    for (i = 0; i < d->lines_len; i++)
        if (d->lines[i] != (char)('a' + (tag + i) % 26))
            return 0;
    return d->lines[d->lines_len] == '\0';
}

/* A record is 4 whole cache lines, and every record of a slab starts one:
 * the size is most of a document's cost past its bytes (doc.h). */
START_TEST(test_record_four_lines)
{
    esbulk__docmem_t *dm = esbulk__docmem_new();
    esbulk__doc_t *d[600];
    size_t i;

    ck_assert_uint_eq(sizeof(esbulk__doc_t), 4 * ESBULK__CACHE_LINE);
    ck_assert_ptr_nonnull(dm);
    for (i = 0; i < 600; i++) { /* more than two slabs */
        ck_assert_int_eq(esbulk__docmem_take(dm, (unsigned)i, 0, &d[i], NULL), ESBULK_OK);
        ck_assert_uint_eq((uintptr_t)d[i] % ESBULK__CACHE_LINE, 0);
    }
    for (i = 0; i < 600; i++)
        esbulk__doc_free(d[i]);
    esbulk__docmem_destroy(dm);
}
END_TEST

/* A record taken is zeroed, every byte but those the take sets (its
 * docmem and slot), whatever the document before it left there: doc_build
 * sets only what differs from zero. */
START_TEST(test_record_zeroed)
{
    esbulk__docmem_t *dm = esbulk__docmem_new();
    esbulk__doc_t *d, *again, copy;
    static const esbulk__doc_t zero;
    unsigned char slot;

    ck_assert_ptr_nonnull(dm);
    ck_assert_int_eq(esbulk__docmem_take(dm, 5, 0, &d, NULL), ESBULK_OK);
    slot = d->slot;
    /* every byte dirty but what the free reads */
    memset(d, 0xa5, sizeof(*d));
    d->dm = dm;
    d->slot = slot;
    d->block = NULL;
    d->lines = NULL;
    d->strs_own = NULL;
    d->more = NULL;
    esbulk__doc_free(d);
    ck_assert_int_eq(esbulk__docmem_take(dm, 5, 0, &again, NULL), ESBULK_OK);
    ck_assert_ptr_eq(again, d); /* the slot's free records are a stack */
    memcpy(&copy, again, sizeof(copy));
    ck_assert_ptr_eq(copy.dm, dm);
    ck_assert_uint_eq(copy.slot, slot);
    copy.dm = NULL;
    copy.slot = 0;
    ck_assert_msg(memcmp(&copy, &zero, sizeof(copy)) == 0, "a record taken is not all zero");
    esbulk__doc_free(again);
    esbulk__docmem_destroy(dm);
}
END_TEST

/* A new block's pages are in memory as soon as its first document is
 * taken, not faulted in one by one as adds write them (docmem.c prefault):
 * the first 64 pages after the first document, by mincore. */
START_TEST(test_block_prefaulted)
{
#if defined(MADV_POPULATE_WRITE)
    esbulk__docmem_t *dm = esbulk__docmem_new();
    esbulk__doc_t *d;
    char *p;
    long page = sysconf(_SC_PAGESIZE);
    unsigned char vec[64];
    uintptr_t start;
    size_t i, resident = 0;

    ck_assert_ptr_nonnull(dm);
    ck_assert_int_gt(page, 0);
    ck_assert_int_eq(esbulk__docmem_take(dm, 0, 100, &d, &p), ESBULK_OK);
    start = ((uintptr_t)p + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
    ck_assert_int_eq(mincore((void *)start, sizeof(vec) * (size_t)page, vec), 0);
    for (i = 0; i < sizeof(vec); i++)
        resident += vec[i] & 1;
    ck_assert_uint_eq(resident, sizeof(vec));
    d->lines = p;
    p[0] = '\0';
    esbulk__docmem_trim(d, 100);
    esbulk__doc_free(d);
    esbulk__docmem_destroy(dm);
#endif
}
END_TEST

#define N 20000

START_TEST(test_regions_apart_and_trimmed)
{
    esbulk__docmem_t *dm = esbulk__docmem_new();
    static esbulk__doc_t *docs[N];
    size_t i;

    ck_assert_ptr_nonnull(dm);
    for (i = 0; i < N; i++)
        docs[i] = take_filled(dm, 300, 100 + i % 150, (unsigned)i);
    for (i = 0; i < N; i++)
        ck_assert_msg(intact(docs[i]), "document %zu overwritten", i);
    /* trimmed: the next one starts right after the last one's lines */
    for (i = 1; i < N; i++)
        if (docs[i]->block == docs[i - 1]->block)
            ck_assert_uint_eq(docs[i]->lines_off,
                              docs[i - 1]->lines_off + docs[i - 1]->lines_len + 1);
    for (i = 0; i < N; i++)
        esbulk__doc_free(docs[i]);
    esbulk__docmem_destroy(dm);
}
END_TEST

START_TEST(test_blocks_reused_only_when_empty)
{
    esbulk__docmem_t *dm = esbulk__docmem_new();
    static esbulk__doc_t *docs[N];
    esbulk__doc_t *keep, *d;
    struct esbulk__block_s *first;
    size_t i;

    /* one document holds the first block: it is not handed out again */
    keep = take_filled(dm, 200, 200, 7);
    first = keep->block;
    for (i = 0; i < N; i++)
        docs[i] = take_filled(dm, 200, 200, (unsigned)i); /* ~4 MiB: several blocks */
    for (i = 0; i < N; i++)
        esbulk__doc_drop_lines(docs[i]);
    for (i = 0; i < N; i++) {
        d = take_filled(dm, 200, 200, (unsigned)i + 1);
        ck_assert_ptr_ne(d->block, first);
        esbulk__doc_free(d);
    }
    ck_assert(intact(keep));
    /* moved out for a retry: the lines stay, the block is free again */
    esbulk__doc_own_lines(keep);
    ck_assert_ptr_null(keep->block);
    ck_assert(intact(keep));
    for (i = 0; i < N; i++)
        esbulk__doc_free(docs[i]);
    /* records come back from the free list */
    d = take_filled(dm, 10, 10, 1);
    ck_assert(d->dm == dm);
    esbulk__doc_free(d);
    esbulk__doc_free(keep);
    esbulk__docmem_destroy(dm);
}
END_TEST

/* A current block that no document holds any more starts over at its
 * beginning: a steady trickle of documents keeps reusing the same pages
 * instead of walking through the whole block (RSS would grow by each
 * document's lines until the block is full). */
START_TEST(test_current_block_rewinds_when_empty)
{
    esbulk__docmem_t *dm = esbulk__docmem_new();
    esbulk__doc_t *d, *held;
    const char *first;
    int i;

    d = take_filled(dm, 100, 100, 1);
    first = d->lines;
    esbulk__doc_free(d);
    for (i = 0; i < 5000; i++) {
        d = take_filled(dm, 100, 100, (unsigned)i);
        ck_assert_ptr_eq(d->lines, first);
        esbulk__doc_free(d);
    }
    /* held: the next one goes after it, not over it */
    held = take_filled(dm, 100, 100, 7);
    d = take_filled(dm, 100, 100, 8);
    ck_assert_ptr_ne(d->lines, held->lines);
    ck_assert(intact(held));
    esbulk__doc_free(d);
    esbulk__doc_free(held);
    esbulk__docmem_destroy(dm);
}
END_TEST

/* The lines of a response's documents go back in one atomic operation per
 * run of documents in the same block (esbulk__doc_drop_lines_run): until
 * the run ends they still hold their block, which neither rewinds nor, once
 * retired, becomes a spare; after it, exactly the shares of the documents
 * dropped went back. The current block takes its documents' shares from a
 * reservation, handed back when it is retired. */
START_TEST(test_drops_run)
{
    esbulk__docmem_t *dm = esbulk__docmem_new();
    esbulk__drops_t run = {0};
    esbulk__doc_t *a, *b, *c, *big[5], *next, *own;
    const char *first;
    int i;

    a = take_filled(dm, 100, 100, 1);
    b = take_filled(dm, 100, 100, 2);
    first = a->lines;
    esbulk__doc_drop_lines_run(a, &run);
    esbulk__doc_drop_lines_run(b, &run);
    ck_assert_ptr_null(a->block);
    ck_assert_ptr_null(a->lines);
    ck_assert_uint_eq(run.n, 2);
    /* the run still holds the block: the next document goes after b's */
    c = take_filled(dm, 100, 100, 3);
    ck_assert_ptr_ne(c->lines, first);
    esbulk__drops_end(&run);
    ck_assert_ptr_null(run.block);
    ck_assert_uint_eq(run.n, 0);
    esbulk__doc_drop_lines(c);
    /* nothing holds it now: it starts over */
    esbulk__doc_free(c);
    c = take_filled(dm, 100, 100, 4);
    ck_assert_ptr_eq(c->lines, first);
    esbulk__doc_free(c);
    esbulk__doc_free(a);
    esbulk__doc_free(b);

    /* a block retired (full) whose documents a run drops: a spare only
     * when the run ends; a document with lines of its own is freed at
     * once, and a document of another block ends the run before it */
    ck_assert_uint_eq(esbulk__docmem_spares(dm), 0);
    for (i = 0; i < 5; i++)
        big[i] = take_filled_in(dm, 1, 200000, 200000, (unsigned)i);
    next = take_filled_in(dm, 1, 200000, 200000, 9); /* the block is full: a new one */
    ck_assert_ptr_ne(next->block, big[0]->block);
    own = take_filled_in(dm, 1, 300000, 300000, 8); /* more than a quarter block */
    ck_assert_ptr_null(own->block);
    for (i = 0; i < 5; i++) {
        esbulk__doc_drop_lines_run(big[i], &run);
        if (i == 2)
            esbulk__doc_drop_lines_run(own, &run);
    }
    ck_assert_ptr_null(own->lines);
    ck_assert_uint_eq(run.n, 5);
    ck_assert_uint_eq(esbulk__docmem_spares(dm), 0);
    esbulk__doc_drop_lines_run(next, &run); /* another block: the first run ends */
    ck_assert_uint_eq(esbulk__docmem_spares(dm), 1);
    ck_assert_uint_eq(run.n, 1);
    esbulk__drops_end(&run);
    ck_assert_uint_eq(esbulk__docmem_spares(dm), 1); /* next's block is still current */
    for (i = 0; i < 5; i++)
        esbulk__doc_free(big[i]);
    esbulk__doc_free(next);
    esbulk__doc_free(own);
    esbulk__docmem_destroy(dm);
}
END_TEST

/* Blocks that all their documents let go are kept for reuse, however many
 * (a new one would be faulted in and zeroed by the kernel again: a quarter
 * of the client's CPU once the buffer is full), and handed out again before
 * any new one; spares unused for a whole trim period are freed down to a
 * few, and only those. */
START_TEST(test_spares_kept_reused_trimmed)
{
    enum { DOCS = 12 * 4096 }; /* 12 MiB of 256-byte lines: ~12 blocks */
    esbulk__docmem_t *dm = esbulk__docmem_new();
    static esbulk__doc_t *docs[DOCS];
    size_t i, kept;

    ck_assert_ptr_nonnull(dm);
    for (i = 0; i < DOCS; i++)
        docs[i] = take_filled(dm, 255, 255, (unsigned)i);
    for (i = 0; i < DOCS; i++)
        esbulk__doc_free(docs[i]);
    kept = esbulk__docmem_spares(dm);
    ck_assert_uint_ge(kept, 10); /* every retired block, not only 4 */

    /* the same load again takes the spares, not new blocks */
    for (i = 0; i < DOCS; i++)
        docs[i] = take_filled(dm, 255, 255, (unsigned)i);
    ck_assert_uint_le(esbulk__docmem_spares(dm), 1);
    for (i = 0; i < DOCS; i++)
        ck_assert(intact(docs[i]));
    for (i = 0; i < DOCS; i++)
        esbulk__doc_free(docs[i]);
    ck_assert_uint_eq(esbulk__docmem_spares(dm), kept);

    /* the first trim starts the period; one before its end frees nothing */
    esbulk__docmem_spares_trim(dm, 1000);
    esbulk__docmem_spares_trim(dm, 5999);
    ck_assert_uint_eq(esbulk__docmem_spares(dm), kept);
    /* two of them used within the next period (the current block takes the
     * first 4096): those two stay beyond the 4 */
    docs[0] = take_filled(dm, 255, 255, 0);
    for (i = 1; i < 2 * 4096 + 1; i++)
        docs[i] = take_filled(dm, 255, 255, (unsigned)i);
    for (i = 0; i < 2 * 4096 + 1; i++)
        esbulk__doc_free(docs[i]);
    esbulk__docmem_spares_trim(dm, 6000);
    ck_assert_uint_eq(esbulk__docmem_spares(dm), 4 + 2);
    esbulk__docmem_spares_trim(dm, 11000);              /* a whole idle period */
    ck_assert_uint_eq(esbulk__docmem_spares(dm), 4);
    esbulk__docmem_destroy(dm);
}
END_TEST

START_TEST(test_large_and_empty)
{
    esbulk__docmem_t *dm = esbulk__docmem_new();
    esbulk__doc_t *big, *none;
    char *p;

    big = take_filled(dm, 600 * 1024, 600 * 1024, 3); /* more than a quarter block */
    ck_assert_ptr_null(big->block);
    ck_assert(intact(big));
    ck_assert_int_eq(esbulk__docmem_take(dm, 0, 0, &none, &p), ESBULK_OK);
    ck_assert_ptr_null(p);
    ck_assert_ptr_null(none->block);
    esbulk__doc_free(big);
    esbulk__doc_free(none);
    esbulk__docmem_destroy(dm);
}
END_TEST

/* Two adding threads and one that lets go of lines (as the I/O thread does)
 * and frees records (as the serving thread does). */
#define PER_THREAD 50000
#define RING 4096

typedef struct {
    esbulk__docmem_t *dm;
    pthread_mutex_t lock;
    esbulk__doc_t *ring[RING];
    size_t head, tail;
    int producers_done;
    size_t bad;
} shared_t;

static void *producer(void *arg)
{
    shared_t *sh = arg;
    size_t i;

    for (i = 0; i < PER_THREAD; i++) {
        esbulk__doc_t *d = take_filled_in(sh->dm, (unsigned)(i % 3), 260, 60 + i % 200, (unsigned)i);

        for (;;) {
            pthread_mutex_lock(&sh->lock);
            if (sh->head - sh->tail < RING) {
                sh->ring[sh->head++ % RING] = d;
                pthread_mutex_unlock(&sh->lock);
                break;
            }
            pthread_mutex_unlock(&sh->lock);
            sched_yield();
        }
    }
    return NULL;
}

static void *consumer(void *arg)
{
    shared_t *sh = arg;
    size_t seen = 0;

    while (seen < 2 * PER_THREAD) {
        esbulk__doc_t *d = NULL;

        pthread_mutex_lock(&sh->lock);
        if (sh->tail < sh->head)
            d = sh->ring[sh->tail++ % RING];
        pthread_mutex_unlock(&sh->lock);
        if (d == NULL) {
            sched_yield();
            continue;
        }
        if (!intact(d))
            sh->bad++;
        if (seen % 3 == 0)
            esbulk__doc_own_lines(d);
        esbulk__doc_free(d);
        seen++;
    }
    return NULL;
}

/* Documents taken for different slots, interleaved as adds for three
 * destinations come: each slot's records are neighbours in memory and its
 * lines follow one another in a block of its own, before and after the
 * records went back and were taken again. */
#define SLOT_DOCS 3000

static void check_slots_apart(esbulk__doc_t **docs)
{
    size_t i, pairs = 0, adjacent = 0;

    for (i = 0; i + 3 < SLOT_DOCS; i++) {
        const esbulk__doc_t *a = docs[i], *b = docs[i + 3];
        ptrdiff_t diff = (const char *)b - (const char *)a;

        ck_assert_msg(a->block != docs[i + 1]->block,
                      "documents %zu and %zu of other slots share a block", i, i + 1);
        if (a->block == b->block)
            ck_assert_uint_eq(b->lines_off, a->lines_off + a->lines_len + 1);
        pairs++;
        if (diff == (ptrdiff_t)sizeof(*a) || diff == -(ptrdiff_t)sizeof(*a))
            adjacent++;
    }
    /* all but where a slab ends */
    ck_assert_msg(adjacent * 100 >= pairs * 95, "%zu of %zu records beside the slot's previous",
                  adjacent, pairs);
}

START_TEST(test_slots_apart)
{
    esbulk__docmem_t *dm = esbulk__docmem_new();
    static esbulk__doc_t *docs[SLOT_DOCS];
    size_t i;
    int round;

    for (round = 0; round < 2; round++) {
        for (i = 0; i < SLOT_DOCS; i++)
            docs[i] = take_filled_in(dm, (unsigned)(i % 3), 300, 150 + i % 100, (unsigned)i);
        for (i = 0; i < SLOT_DOCS; i++)
            ck_assert_msg(intact(docs[i]), "document %zu overwritten", i);
        check_slots_apart(docs);
        /* back in a batch (as served results are), each to its slot */
        for (i = 0; i + 1 < SLOT_DOCS; i++)
            docs[i]->next = docs[i + 1];
        docs[SLOT_DOCS - 1]->next = NULL;
        esbulk__doc_free_list(docs[0]);
    }
    /* a slot beyond the last wraps around */
    docs[0] = take_filled_in(dm, ESBULK__DOCMEM_SLOTS + 1, 100, 50, 1);
    esbulk__doc_free(docs[0]);
    esbulk__docmem_destroy(dm);
}
END_TEST

/* Takes n documents for slot at once, then gives them all back. */
static void take_and_free(esbulk__docmem_t *dm, unsigned slot, size_t n)
{
    static esbulk__doc_t *docs[6000];
    size_t i;

    ck_assert_uint_le(n, sizeof(docs) / sizeof(docs[0]));
    for (i = 0; i < n; i++)
        docs[i] = take_filled_in(dm, slot, 100, 50, (unsigned)i);
    for (i = 0; i < n; i++)
        esbulk__doc_free(docs[i]);
}

/* A slot takes another slot's free records only when that one holds many
 * more than it uses (a destination that went away), so records stay
 * bounded: below that a slot makes slabs of its own. */
START_TEST(test_slots_take_from_idle)
{
    esbulk__docmem_t *dm = esbulk__docmem_new();
    size_t before;

    take_and_free(dm, 0, 1000);
    before = esbulk__docmem_records(dm);
    take_and_free(dm, 1, 500);
    ck_assert_uint_gt(esbulk__docmem_records(dm), before); /* slabs of its own */
    take_and_free(dm, 2, 6000);
    /* slot 2 now holds 6000 idle records: slot 3 takes from them */
    before = esbulk__docmem_records(dm);
    take_and_free(dm, 3, 1500);
    ck_assert_uint_eq(esbulk__docmem_records(dm), before);
    esbulk__docmem_destroy(dm);
}
END_TEST

/* The placement hint: the node of the shard the document routes to (or the
 * shard), from the published layouts; 0 when unknown. */
static esbulk__index_t *layout_new(const char *name, int32_t shards, const int32_t *primary,
                                   const char *alias_routing)
{
    esbulk__index_t *e = calloc(1, sizeof(*e));
    int32_t s;

    static uint64_t serials = 100;

    atomic_init(&e->refs, 1);
    e->serial = ++serials;
    e->name = strdup(name);
    e->write_index = strdup(name);
    e->state = ESBULK__IDX_OK;
    esbulk__layout_init(&e->layout);
    e->layout.shards = shards;
    e->primary = malloc(sizeof(*e->primary) * (size_t)shards);
    for (s = 0; s < shards; s++)
        e->primary[s] = primary[s];
    if (alias_routing != NULL)
        e->alias_routing = strdup(alias_routing);
    return e;
}

static int32_t shard_of(const esbulk__index_t *e, const char *id, const char *routing)
{
    int32_t shard = -1;

    ck_assert_int_eq(esbulk_layout_shard(&e->layout, id, strlen(id), routing,
                                         routing ? strlen(routing) : 0, &shard),
                     ESBULK_OK);
    return shard;
}

/* The hint that esbulk__place_slot gave last: the entry's serial (0: none)
 * and the shard. */
static uint64_t hint_serial;
static int32_t hint_shard;

static unsigned ps(esbulk__place_t *p, const char *index, const char *id, size_t id_len,
                   const char *routing, size_t routing_len)
{
    return esbulk__place_slot(p, index, strlen(index), id, id_len, routing, routing_len,
                              &hint_serial, &hint_shard);
}

/* The last hint names entry e and the shard the layout gives. */
static void hint_is(const esbulk__index_t *e, const char *id, const char *routing)
{
    ck_assert_uint_eq(hint_serial, e->serial);
    ck_assert_int_eq(hint_shard, shard_of(e, id, routing));
}

START_TEST(test_place_slots)
{
    const int32_t prim[6] = {2, 0, 1, 2, 0, 1}, unassigned[6] = {-1, -1, -1, -1, -1, -1};
    esbulk__index_t *logs = layout_new("logs", 6, prim, NULL);
    esbulk__index_t *al = layout_new("tenant", 6, prim, "user7");
    esbulk__index_t *un = layout_new("moving", 6, unassigned, NULL);
    esbulk__index_t *pub[3] = {logs, al, un};
    esbulk__place_t node, shard, off;
    char id[32];
    int i, seen[3] = {0, 0, 0};

    esbulk__place_init(&node, 0, 1);
    esbulk__place_init(&shard, 0, 0);
    esbulk__place_init(&off, 1, 0);
    ck_assert_uint_eq(ps(&node, "logs", "a", 1, NULL, 0), 0); /* nothing yet */
    for (i = 0; i < 3; i++)
        atomic_fetch_add(&pub[i]->refs, 3); /* one per place below */
    esbulk__place_publish(&node, pub, 3);
    esbulk__place_publish(&shard, pub, 3);
    esbulk__place_publish(&off, pub, 3);
    for (i = 0; i < 300; i++) {
        unsigned slot;

        snprintf(id, sizeof(id), "doc-%d", i);
        slot = ps(&node, "logs", id, strlen(id), NULL, 0);
        ck_assert_uint_eq(slot, (unsigned)prim[shard_of(logs, id, NULL)]);
        hint_is(logs, id, NULL);
        seen[slot]++;
        ck_assert_uint_eq(ps(&shard, "logs", id, strlen(id), NULL, 0),
                          (unsigned)shard_of(logs, id, NULL));
        hint_is(logs, id, NULL);
        ck_assert_uint_eq(ps(&off, "logs", id, strlen(id), NULL, 0), 0);
        ck_assert_uint_eq(hint_serial, 0); /* routing.level=off: no shard */
        /* an explicit routing decides */
        ck_assert_uint_eq(ps(&node, "logs", id, strlen(id), "r1", 2),
                          (unsigned)prim[shard_of(logs, id, "r1")]);
        hint_is(logs, id, "r1");
        /* the alias's routing, whatever the id */
        ck_assert_uint_eq(ps(&node, "tenant", id, strlen(id), NULL, 0),
                          (unsigned)prim[shard_of(al, id, "user7")]);
        hint_is(al, id, "user7");
        /* a primary not assigned: the shard */
        ck_assert_uint_eq(ps(&node, "moving", id, strlen(id), NULL, 0),
                          (unsigned)shard_of(un, id, NULL));
        hint_is(un, id, NULL);
    }
    ck_assert(seen[0] > 50 && seen[1] > 50 && seen[2] > 50);
    ck_assert_uint_eq(ps(&node, "other", "a", 1, NULL, 0), 0);
    ck_assert_uint_eq(hint_serial, 0);
    /* a name that only begins or ends like one known is not it */
    ck_assert_uint_eq(ps(&node, "log", "a", 1, NULL, 0), 0);
    ck_assert_uint_eq(hint_serial, 0);
    ck_assert_uint_eq(ps(&node, "logs2", "a", 1, NULL, 0), 0);
    ck_assert_uint_eq(hint_serial, 0);
    ck_assert_uint_eq(ps(&node, "logs", NULL, 0, NULL, 0), 0);
    ck_assert_uint_eq(hint_serial, 0);
    ck_assert_uint_eq(ps(&node, "tenant", "a", 1, "user8", 5), 0);
    ck_assert_uint_eq(hint_serial, 0); /* refused by the server: no shard */
    /* an index that does not route (unknown, unroutable): no shard */
    un->state = ESBULK__IDX_UNROUTABLE;
    ck_assert_uint_eq(ps(&node, "moving", "a", 1, NULL, 0), 0);
    ck_assert_uint_eq(hint_serial, 0);
    un->state = ESBULK__IDX_OK;
    /* publishing again releases the layouts held */
    esbulk__place_publish(&node, NULL, 0);
    ck_assert_uint_eq(ps(&node, "logs", "a", 1, NULL, 0), 0);
    ck_assert_int_eq(atomic_load(&logs->refs), 3);
    esbulk__place_destroy(&node);
    esbulk__place_destroy(&shard);
    esbulk__place_destroy(&off);
    for (i = 0; i < 3; i++)
        esbulk__index_release(pub[i]);
}
END_TEST

/* Records given back as a list join their slot's free records, those
 * already there kept: with one slab's records all taken back and given
 * back (some alone, the rest as a list), a slab's worth can be taken again
 * without a second slab. */
START_TEST(test_free_list_joins)
{
    esbulk__docmem_t *dm = esbulk__docmem_new();
    esbulk__doc_t *d[256], *head = NULL;
    size_t i;

    ck_assert_ptr_nonnull(dm);
    for (i = 0; i < 40; i++)
        ck_assert_int_eq(esbulk__docmem_take(dm, 3, 0, &d[i], NULL), ESBULK_OK);
    ck_assert_uint_eq(esbulk__docmem_records(dm), 256);
    for (i = 0; i < 10; i++)
        esbulk__doc_free(d[i]);
    for (i = 10; i < 40; i++) {
        d[i]->next = head;
        head = d[i];
    }
    esbulk__doc_free_list(head);
    for (i = 0; i < 256; i++)
        ck_assert_int_eq(esbulk__docmem_take(dm, 3, 0, &d[i], NULL), ESBULK_OK);
    ck_assert_uint_eq(esbulk__docmem_records(dm), 256);
    for (i = 0; i < 256; i++)
        esbulk__doc_free(d[i]);
    esbulk__docmem_destroy(dm);
}
END_TEST

/* Two threads filling the same slot with large documents, each new block
 * allocated out of the lock: when both allocate one at once, the second to
 * be ready becomes a spare, not the current block in place of the first
 * (which would then never be given back). With every document given back,
 * the blocks are the current ones and the spares. */
typedef struct {
    esbulk__docmem_t *dm;
    esbulk__doc_t *d[160];
} racer_t;

static void *block_racer(void *arg)
{
    racer_t *r = arg;
    size_t i;

    for (i = 0; i < sizeof(r->d) / sizeof(r->d[0]); i++) {
        char *p;

        if (esbulk__docmem_take(r->dm, 6, 200000, &r->d[i], &p) != ESBULK_OK)
            return arg; /* out of memory: the test fails */
        p[0] = 'x';
        p[1] = '\0';
        r->d[i]->lines = p;
        r->d[i]->lines_len = 1;
    }
    return NULL;
}

START_TEST(test_block_race)
{
    esbulk__docmem_t *dm = esbulk__docmem_new();
    static racer_t r[2];
    pthread_t t[2];
    void *ret[2];
    size_t i, k, current, blocks;

    ck_assert_ptr_nonnull(dm);
    for (k = 0; k < 2; k++) {
        r[k].dm = dm;
        ck_assert_int_eq(pthread_create(&t[k], NULL, block_racer, &r[k]), 0);
    }
    for (k = 0; k < 2; k++) {
        pthread_join(t[k], &ret[k]);
        ck_assert_ptr_null(ret[k]);
    }
    for (k = 0; k < 2; k++)
        for (i = 0; i < sizeof(r[k].d) / sizeof(r[k].d[0]); i++)
            esbulk__doc_free(r[k].d[i]);
    blocks = esbulk__docmem_blocks(dm, &current);
    ck_assert_uint_eq(current, 1);
    ck_assert_uint_ge(blocks, 320 / 5);
    ck_assert_uint_eq(blocks, current + esbulk__docmem_spares(dm));
    esbulk__docmem_destroy(dm);
}
END_TEST

/* The placement's spin lock (spin.h) excludes: threads that each add 1 to a
 * plain counter 200,000 times under it lose none of their additions (on 2
 * cores, without the lock, thousands go). One holder also sleeps in it now
 * and then, so that the others go through the yield. */
typedef struct {
    esbulk__spin_t lock;
    long count;
    int sleeper;
} spin_shared_t;

static void *spin_adder(void *arg)
{
    spin_shared_t *sh = arg;
    int i, sleeper;

    esbulk__spin_lock(&sh->lock);
    sleeper = sh->sleeper++ == 0;
    esbulk__spin_unlock(&sh->lock);
    for (i = 0; i < 200000; i++) {
        esbulk__spin_lock(&sh->lock);
        sh->count++;
        if (sleeper && i % 50000 == 0) {
            struct timespec ts = {0, 2000000};
            nanosleep(&ts, NULL);
        }
        esbulk__spin_unlock(&sh->lock);
    }
    return NULL;
}

START_TEST(test_spin_lock_excludes)
{
    static spin_shared_t sh;
    pthread_t t[4];
    size_t i;

    memset(&sh, 0, sizeof(sh));
    esbulk__spin_init(&sh.lock);
    for (i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, spin_adder, &sh), 0);
    for (i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    ck_assert_int_eq(sh.count, 4L * 200000);
    ck_assert_int_eq(atomic_load(&sh.lock.held), 0);
}
END_TEST

START_TEST(test_threads)
{
    static shared_t sh;
    pthread_t a, b, c;

    memset(&sh, 0, sizeof(sh));
    sh.dm = esbulk__docmem_new();
    pthread_mutex_init(&sh.lock, NULL);
    ck_assert_int_eq(pthread_create(&c, NULL, consumer, &sh), 0);
    ck_assert_int_eq(pthread_create(&a, NULL, producer, &sh), 0);
    ck_assert_int_eq(pthread_create(&b, NULL, producer, &sh), 0);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    pthread_join(c, NULL);
    ck_assert_uint_eq(sh.bad, 0);
    pthread_mutex_destroy(&sh.lock);
    esbulk__docmem_destroy(sh.dm);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("docmem");
    TCase *tc = tcase_create("docmem");
    SRunner *sr;
    int failed;

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_record_four_lines);
    tcase_add_test(tc, test_record_zeroed);
    tcase_add_test(tc, test_block_prefaulted);
    tcase_add_test(tc, test_regions_apart_and_trimmed);
    tcase_add_test(tc, test_blocks_reused_only_when_empty);
    tcase_add_test(tc, test_large_and_empty);
    tcase_add_test(tc, test_current_block_rewinds_when_empty);
    tcase_add_test(tc, test_drops_run);
    tcase_add_test(tc, test_spares_kept_reused_trimmed);
    tcase_add_test(tc, test_threads);
    tcase_add_test(tc, test_spin_lock_excludes);
    tcase_add_test(tc, test_free_list_joins);
    tcase_add_test(tc, test_block_race);
    tcase_add_test(tc, test_slots_apart);
    tcase_add_test(tc, test_slots_take_from_idle);
    tcase_add_test(tc, test_place_slots);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
