/* Slabs of document records and shared blocks of request lines (docmem.h). */
#include "docmem.h"
#include "spin.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Records per slab, bytes per block. A document's lines larger than a
 * quarter of a block get an allocation of their own.
 *
 * A block whose documents all let go is kept as a spare, whatever their
 * number: a new block would have the kernel fault in and zero its 256 pages
 * again, and that was a quarter of the client's CPU once the buffer was full
 * (blocks retired and taken at the rate of the cluster's answers). Spares
 * and blocks in use together never exceed the most that were ever in use at
 * once, which the buffer's limits bound. Spares that stay unused for a whole
 * SPARE_TRIM_MS are freed by esbulk__docmem_spares_trim, down to
 * SPARE_BLOCKS. */
#define SLAB_DOCS 256
#define STEAL_MIN (16 * SLAB_DOCS)
#define BLOCK_BYTES ((size_t)1 << 20)
#define SPARE_BLOCKS 4
#define SPARE_TRIM_MS 5000

/* The current block holds RESERVE references for the documents it will
 * take, so that an add takes one without an atomic operation (a locked
 * instruction, on the line that the I/O thread's drops write too): it only
 * counts them in taken. The rest go back when it stops being current. A
 * document takes at least 2 bytes, so a block never takes more. */
#define RESERVE BLOCK_BYTES

typedef struct esbulk__block_s {
    atomic_size_t refs;     /* documents with lines here, + 1 + RESERVE - taken while it is
                               the current block */
    atomic_size_t used;     /* bytes handed out */
    size_t taken;           /* documents taken while current (under dm->lock) */
    esbulk__docmem_t *dm;
    struct esbulk__block_s *next; /* among the spares */
    char data[];
} block_t;

/* Records start on a cache line: each touches exactly its own 4 lines. */
#define SLAB_ALIGN ESBULK__CACHE_LINE
typedef struct slab_s {
    struct slab_s *next;
    void *raw;              /* what malloc gave (the slab is aligned within it) */
    _Alignas(SLAB_ALIGN) esbulk__doc_t docs[SLAB_DOCS];
} slab_t;

struct esbulk__docmem_s {
    esbulk__spin_t lock;    /* guards all below; held for a few list operations only:
                               allocations and their page faults happen out of it */
    esbulk__doc_t *free_docs[ESBULK__DOCMEM_SLOTS]; /* linked by next, per slot */
    size_t nfree[ESBULK__DOCMEM_SLOTS];
    slab_t *slabs;
    block_t *cur[ESBULK__DOCMEM_SLOTS]; /* each slot's lines go here */
    block_t *spare;
    size_t nspare;
    size_t nblocks;         /* blocks allocated and not freed: current, spare or held */
    size_t spare_low;       /* the fewest spares since the last trim */
    uint64_t free_locks;    /* records given back under the lock (esbulk__docmem_free_locks) */
    int64_t next_trim_ms;   /* 0: not yet started */
    uintptr_t page;         /* the page size, a power of 2; 0: unknown (no prefault) */
};

esbulk__docmem_t *esbulk__docmem_new(void)
{
    esbulk__docmem_t *dm = calloc(1, sizeof(*dm));
    long page;

    if (dm == NULL)
        return NULL;
    esbulk__spin_init(&dm->lock);
    page = sysconf(_SC_PAGESIZE);
    if (page > 0 && ((unsigned long)page & ((unsigned long)page - 1)) == 0)
        dm->page = (uintptr_t)page;
    return dm;
}

static void block_unref_n(block_t *b, size_t n)
{
    esbulk__docmem_t *dm = b->dm;

    if (atomic_fetch_sub(&b->refs, n) != n)
        return;
    /* kept: its pages stay mapped, a new block would fault them in */
    esbulk__spin_lock(&dm->lock);
    b->next = dm->spare;
    dm->spare = b;
    dm->nspare++;
    esbulk__spin_unlock(&dm->lock);
}

static void block_unref(block_t *b)
{
    block_unref_n(b, 1);
}

/* b stops being the current block: its own reference and what is left of
 * its reservation. */
static void block_retire(block_t *b)
{
    block_unref_n(b, 1 + RESERVE - b->taken);
}

void esbulk__docmem_spares_trim(esbulk__docmem_t *dm, int64_t now_ms)
{
    block_t *drop = NULL, *b;
    size_t n;

    esbulk__spin_lock(&dm->lock);
    if (dm->next_trim_ms != 0 && now_ms < dm->next_trim_ms) {
        esbulk__spin_unlock(&dm->lock);
        return;
    }
    /* the first call only starts the period */
    n = dm->next_trim_ms == 0 || dm->spare_low <= SPARE_BLOCKS ? 0 : dm->spare_low - SPARE_BLOCKS;
    while (n-- > 0 && (b = dm->spare) != NULL) {
        dm->spare = b->next;
        dm->nspare--;
        dm->nblocks--;
        b->next = drop;
        drop = b;
    }
    dm->spare_low = dm->nspare;
    dm->next_trim_ms = now_ms + SPARE_TRIM_MS;
    esbulk__spin_unlock(&dm->lock);
    while ((b = drop) != NULL) {
        drop = b->next;
        free(b);
    }
}

size_t esbulk__docmem_spares(esbulk__docmem_t *dm)
{
    size_t n;

    esbulk__spin_lock(&dm->lock);
    n = dm->nspare;
    esbulk__spin_unlock(&dm->lock);
    return n;
}

uint64_t esbulk__docmem_free_locks(esbulk__docmem_t *dm)
{
    uint64_t n;

    esbulk__spin_lock(&dm->lock);
    n = dm->free_locks;
    esbulk__spin_unlock(&dm->lock);
    return n;
}

size_t esbulk__docmem_blocks(esbulk__docmem_t *dm, size_t *current)
{
    size_t n;
    int i;

    esbulk__spin_lock(&dm->lock);
    n = dm->nblocks;
    *current = 0;
    for (i = 0; i < ESBULK__DOCMEM_SLOTS; i++)
        *current += dm->cur[i] != NULL;
    esbulk__spin_unlock(&dm->lock);
    return n;
}

size_t esbulk__docmem_records(esbulk__docmem_t *dm)
{
    size_t n = 0;
    slab_t *s;

    esbulk__spin_lock(&dm->lock);
    for (s = dm->slabs; s != NULL; s = s->next)
        n += SLAB_DOCS;
    esbulk__spin_unlock(&dm->lock);
    return n;
}

void esbulk__docmem_destroy(esbulk__docmem_t *dm)
{
    block_t *b;
    slab_t *s;
    int i;

    if (dm == NULL)
        return;
    for (i = 0; i < ESBULK__DOCMEM_SLOTS; i++)
        if (dm->cur[i] != NULL)
            block_retire(dm->cur[i]); /* frees it, or keeps it as a spare */
    while ((b = dm->spare) != NULL) {
        dm->spare = b->next;
        free(b);
    }
    while ((s = dm->slabs) != NULL) {
        dm->slabs = s->next;
        free(s->raw);
    }
    free(dm);
}

/* Has the kernel fault in the whole pages of [p, p + len) at once, for
 * writing, rather than one by one as they are first written: one call in
 * place of a trap per page, 1.5 against 2.1 us a page measured on this
 * project's virtual machines, where a new handle's first fill of its buffer
 * (records and lines: 12.5k pages for 100,000 documents) was 30 ns of a
 * document's CPU. Where the kernel or the headers lack it, or it fails
 * (memory short), nothing is done: the pages fault in as they are written,
 * as before. */
static void prefault(const esbulk__docmem_t *dm, void *p, size_t len)
{
#if defined(MADV_POPULATE_WRITE)
    uintptr_t a = (uintptr_t)p, start, end, page = dm->page;

    if (page == 0)
        return;
    start = (a + page - 1) & ~(page - 1);
    end = (a + len) & ~(page - 1);
    if (end > start)
        (void)madvise((void *)start, end - start, MADV_POPULATE_WRITE);
#else
    (void)dm;
    (void)p;
    (void)len;
#endif
}

/* Makes b an empty current block. */
static void block_start(esbulk__docmem_t *dm, block_t *b)
{
    atomic_init(&b->refs, 1 + RESERVE);
    atomic_init(&b->used, 0);
    b->taken = 0;
    b->dm = dm;
    b->next = NULL;
}

/* Under dm->lock: a spare block, or NULL. */
static block_t *spare_take(esbulk__docmem_t *dm)
{
    block_t *b = dm->spare;

    if (b != NULL) {
        dm->spare = b->next;
        if (--dm->nspare < dm->spare_low)
            dm->spare_low = dm->nspare;
    }
    return b;
}

/* Out of dm->lock: a new block, its pages faulted in; NULL if out of
 * memory. */
static block_t *block_alloc(esbulk__docmem_t *dm)
{
    block_t *b = malloc(sizeof(*b) + BLOCK_BYTES);

    if (b != NULL)
        prefault(dm, b->data, BLOCK_BYTES);
    return b;
}

/* Out of dm->lock: a new slab, its pages faulted in and its records linked
 * in order from *first to *last; NULL if out of memory. */
static slab_t *slab_alloc(esbulk__docmem_t *dm, esbulk__doc_t **first, esbulk__doc_t **last)
{
    void *raw = malloc(sizeof(slab_t) + SLAB_ALIGN - 1);
    slab_t *s;
    int i;

    if (raw == NULL)
        return NULL;
    prefault(dm, raw, sizeof(slab_t) + SLAB_ALIGN - 1);
    s = (slab_t *)(((uintptr_t)raw + SLAB_ALIGN - 1) & ~(uintptr_t)(SLAB_ALIGN - 1));
    s->raw = raw;
    for (i = 0; i < SLAB_DOCS - 1; i++)
        s->docs[i].next = &s->docs[i + 1];
    s->docs[SLAB_DOCS - 1].next = NULL;
    *first = &s->docs[0];
    *last = &s->docs[SLAB_DOCS - 1];
    return s;
}

/* Under dm->lock: a free record for slot, from its own list, else from a
 * slot that holds many more free records than it needs (a destination that
 * went away); NULL when there is none (the caller adds a slab). A slot takes
 * from another only past STEAL_MIN: records taken one by one from another
 * slot would lie among that slot's, which is what slots are for. So the
 * records are bounded by the most each slot held at once, plus STEAL_MIN
 * per slot. */
static esbulk__doc_t *record_take(esbulk__docmem_t *dm, unsigned slot)
{
    unsigned k, from = slot;
    esbulk__doc_t **list, *d;

    for (k = 1; dm->nfree[from] == 0 && k < ESBULK__DOCMEM_SLOTS; k++)
        if (dm->nfree[(slot + k) % ESBULK__DOCMEM_SLOTS] > STEAL_MIN)
            from = (slot + k) % ESBULK__DOCMEM_SLOTS;
    list = &dm->free_docs[from];
    if ((d = *list) == NULL)
        return NULL;
    *list = d->next;
    dm->nfree[from]--;
    /* the slot's next record: its add comes soon, and writes all of it */
    if (*list != NULL)
        ESBULK__PREFETCH_W(*list);
    return d;
}

/* Zeroes a record. gcc (12, x86-64) expands a memset of its 256 bytes as
 * `rep stosq`, whose start-up cost is most of the time it takes: 18 ns
 * against 5.5 for sixteen 16-byte stores, on a record in cache (clang
 * emits those stores for the memset itself). On every add. */
static void record_zero(esbulk__doc_t *d)
{
#if defined(__GNUC__) || defined(__clang__)
    typedef long long v16 __attribute__((vector_size(16), may_alias, aligned(1)));
    v16 *v = (v16 *)(void *)d;
    const v16 z = {0, 0};

    _Static_assert(sizeof(*d) == 16 * sizeof(v16), "a record is sixteen 16-byte words");
    /* spelled out: gcc turns a loop of them back into the memset */
    v[0] = z, v[1] = z, v[2] = z, v[3] = z, v[4] = z, v[5] = z, v[6] = z, v[7] = z;
    v[8] = z, v[9] = z, v[10] = z, v[11] = z, v[12] = z, v[13] = z, v[14] = z, v[15] = z;
#else
    memset(d, 0, sizeof(*d));
#endif
}

esbulk_err_t esbulk__docmem_take(esbulk__docmem_t *dm, unsigned slot, size_t lines_max,
                                 esbulk__doc_t **out, char **lines)
{
    esbulk__doc_t *d;
    block_t *b = NULL, *retired = NULL;
    char *own = NULL;
    size_t need = lines_max + 1, off = 0;

    *out = NULL;
    if (lines != NULL)
        *lines = NULL;
    if (lines_max > 0 && need > BLOCK_BYTES / 4 && (own = malloc(need)) == NULL)
        return ESBULK_ERR_NOMEM;
    slot %= ESBULK__DOCMEM_SLOTS;
    for (;;) {
        esbulk__doc_t *first, *last;
        block_t *nb;
        slab_t *ns;

        esbulk__spin_lock(&dm->lock);
        b = NULL;
        if (lines_max > 0 && own == NULL) {
            b = dm->cur[slot];
            if (b != NULL) {
                /* no document holds it (only adds take a share, under this
                 * lock): start over at its beginning, on pages already
                 * resident and in cache, rather than touch new ones */
                if (atomic_load_explicit(&b->refs, memory_order_acquire) ==
                    1 + RESERVE - b->taken) {
                    atomic_store_explicit(&b->used, 0, memory_order_relaxed);
                    atomic_store_explicit(&b->refs, 1 + RESERVE, memory_order_relaxed);
                    b->taken = 0;
                }
                off = atomic_load_explicit(&b->used, memory_order_relaxed);
                if (off + need > BLOCK_BYTES) {
                    /* the documents in it keep it until their answers; the
                     * slot has no current block until one is put there */
                    retired = b;
                    dm->cur[slot] = b = NULL;
                }
            }
            if (b == NULL && (b = spare_take(dm)) != NULL) {
                block_start(dm, b);
                dm->cur[slot] = b;
                off = 0;
            }
        }
        if ((b != NULL || lines_max == 0 || own != NULL) &&
            (d = record_take(dm, slot)) != NULL)
            break;
        /* a block or a slab to allocate: out of the lock, then again (an
         * add on another thread may have put a block there meanwhile: this
         * one is then a spare) */
        esbulk__spin_unlock(&dm->lock);
        if (retired != NULL) {
            block_retire(retired);
            retired = NULL;
        }
        if (lines_max > 0 && own == NULL && b == NULL) {
            if ((nb = block_alloc(dm)) == NULL)
                goto nomem;
            block_start(dm, nb);
            esbulk__spin_lock(&dm->lock);
            dm->nblocks++;
            if (dm->cur[slot] == NULL) {
                dm->cur[slot] = nb;
            } else {
                nb->next = dm->spare;
                dm->spare = nb;
                dm->nspare++;
            }
        } else {
            if ((ns = slab_alloc(dm, &first, &last)) == NULL)
                goto nomem;
            esbulk__spin_lock(&dm->lock);
            ns->next = dm->slabs;
            dm->slabs = ns;
            last->next = dm->free_docs[slot];
            dm->free_docs[slot] = first;
            dm->nfree[slot] += SLAB_DOCS;
        }
        esbulk__spin_unlock(&dm->lock);
    }
    if (b != NULL) {
        /* under the lock, which orders the takes: plain atomicity is enough
         * (a seq_cst store is a full fence on x86, on every add); the
         * document's reference is one of the reservation's */
        atomic_store_explicit(&b->used, off + need, memory_order_relaxed);
        b->taken++;
    }
    esbulk__spin_unlock(&dm->lock);
    if (retired != NULL)
        block_retire(retired);
    record_zero(d);
    d->dm = dm;
    d->slot = (unsigned char)slot;
    if (b != NULL) {
        d->block = b;
        d->lines_off = (uint32_t)off;
        *lines = b->data + off;
    } else if (own != NULL) {
        *lines = own;
    }
    *out = d;
    return ESBULK_OK;
nomem:
    free(own);
    return ESBULK_ERR_NOMEM;
}

void esbulk__docmem_trim(esbulk__doc_t *d, size_t lines_max)
{
    block_t *b = d->block;
    size_t end;

    if (b == NULL || d->lines_len >= lines_max)
        return;
    /* only the last room handed out can shrink; a take under the lock that
     * read the old end just leaves the difference unused */
    end = d->lines_off + lines_max + 1;
    atomic_compare_exchange_strong(&b->used, &end, d->lines_off + d->lines_len + 1);
}

void esbulk__doc_drop_lines(esbulk__doc_t *d)
{
    esbulk__drops_t run = {0};

    esbulk__doc_drop_lines_run(d, &run);
    esbulk__drops_end(&run);
}

void esbulk__doc_drop_lines_run(esbulk__doc_t *d, esbulk__drops_t *run)
{
    if (d->block == NULL) {
        free(d->lines); /* an allocation of its own */
    } else {
        if (run->block != d->block) {
            esbulk__drops_end(run);
            run->block = d->block;
        }
        run->n++;
    }
    d->block = NULL;
    d->lines = NULL;
}

void esbulk__drops_end(esbulk__drops_t *run)
{
    if (run->block != NULL)
        block_unref_n(run->block, run->n);
    run->block = NULL;
    run->n = 0;
}

void esbulk__doc_own_lines(esbulk__doc_t *d)
{
    char *p;

    if (d->block == NULL || d->lines == NULL || (p = malloc(d->lines_len + 1)) == NULL)
        return;
    memcpy(p, d->lines, d->lines_len);
    p[d->lines_len] = '\0';
    block_unref(d->block);
    d->block = NULL;
    d->lines = p;
}

/* What d holds besides its record. */
static void doc_clear(esbulk__doc_t *d)
{
    /* most records come here with their lines given back and their strings
     * inline: no call for them (free(NULL) is one, on every document) */
    if (d->lines != NULL || d->block != NULL)
        esbulk__doc_drop_lines(d);
    if (d->strs_own != NULL)
        free(d->strs_own);
    if (d->more != NULL) {
        free(d->more->index);
        free(d->more->id);
        free(d->more->result_own);
        free(d->more->error_type);
        free(d->more->error_reason);
        free(d->more->cause_type);
        free(d->more->cause_reason);
        free(d->more);
        d->more = NULL;
    }
}

/* Records from a slab go back to its free list; others were allocated alone
 * (the engine core's unit tests make them with calloc). */
void esbulk__doc_free(esbulk__doc_t *d)
{
    esbulk__docmem_t *dm;

    if (d == NULL)
        return;
    doc_clear(d);
    if ((dm = d->dm) == NULL) {
        free(d);
        return;
    }
    esbulk__spin_lock(&dm->lock);
    dm->free_locks++;
    d->next = dm->free_docs[d->slot];
    dm->free_docs[d->slot] = d;
    dm->nfree[d->slot]++;
    esbulk__spin_unlock(&dm->lock);
}

void esbulk__doc_free_list(esbulk__doc_t *head)
{
    esbulk__doc_t *d, *next, *top[ESBULK__DOCMEM_SLOTS] = {NULL}, *bottom[ESBULK__DOCMEM_SLOTS];
    size_t n[ESBULK__DOCMEM_SLOTS] = {0};
    esbulk__docmem_t *dm = NULL;
    unsigned k;

    /* each slot's records stacked here as its free list would stack them
     * (the next adds take them back in reverse, one memory stream per
     * slot), so that the lock is held for one splice a slot */
    for (d = head; d != NULL; d = next) {
        next = d->next;
        if (d->dm == NULL || (dm != NULL && d->dm != dm)) {
            esbulk__doc_free(d);
            continue;
        }
        doc_clear(d);
        dm = d->dm;
        k = d->slot;
        if (top[k] == NULL)
            bottom[k] = d;
        d->next = top[k];
        top[k] = d;
        n[k]++;
    }
    if (dm == NULL)
        return;
    esbulk__spin_lock(&dm->lock);
    dm->free_locks++;
    for (k = 0; k < ESBULK__DOCMEM_SLOTS; k++) {
        if (top[k] == NULL)
            continue;
        bottom[k]->next = dm->free_docs[k];
        dm->free_docs[k] = top[k];
        dm->nfree[k] += n[k];
    }
    esbulk__spin_unlock(&dm->lock);
}
