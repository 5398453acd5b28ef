/* Placement hints (place.h): on the adding thread, the docmem slot of a
 * document, from the index layouts the I/O thread publishes. */
#include "place.h"
#include "murmur3.h"

#include <string.h>

void esbulk__place_init(esbulk__place_t *p, int off, int by_node)
{
    memset(p, 0, sizeof(*p));
    esbulk__spin_init(&p->lock);
    p->off = off;
    p->by_node = by_node;
}

void esbulk__place_destroy(esbulk__place_t *p)
{
    int i;

    for (i = 0; i < p->n; i++)
        esbulk__index_release(p->e[i]);
    p->n = 0;
}

void esbulk__place_publish(esbulk__place_t *p, esbulk__index_t *const *e, int n)
{
    esbulk__index_t *old[ESBULK__PLACE_MAX];
    int i, nold;

    if (n > ESBULK__PLACE_MAX) {
        for (i = ESBULK__PLACE_MAX; i < n; i++)
            esbulk__index_release(e[i]);
        n = ESBULK__PLACE_MAX;
    }
    esbulk__spin_lock(&p->lock);
    nold = p->n;
    memcpy(old, p->e, sizeof(*old) * (size_t)nold);
    for (i = 0; i < n; i++) {
        p->e[i] = e[i];
        p->name_len[i] = strlen(e[i]->name);
        /* an alias's routing goes by esbulk__index_shard() */
        if (e[i]->alias_routing == NULL)
            esbulk__shard_div_init(&p->div[i], &e[i]->layout);
        else
            memset(&p->div[i], 0, sizeof(p->div[i]));
    }
    p->n = n;
    p->last = 0;
    esbulk__spin_unlock(&p->lock);
    /* outside the lock: a release may free a whole layout */
    for (i = 0; i < nold; i++)
        esbulk__index_release(old[i]);
}

unsigned esbulk__place_slot(esbulk__place_t *p, const char *index, size_t index_len,
                            const char *id, size_t id_len,
                            const char *routing, size_t routing_len, uint64_t *serial,
                            int32_t *shard_out)
{
    unsigned slot = 0;
    int i, k, hashed;
    int32_t hash = 0;

    *serial = 0;
    *shard_out = -1;
    if (p->off || (id_len == 0 && routing_len == 0))
        return 0;
    /* out of the lock: a routing may be long (for an index the placement
     * does not hold, or one routed by esbulk__index_shard, it goes unused) */
    hashed = esbulk__murmur3_utf16(routing_len > 0 ? routing : id,
                                   routing_len > 0 ? routing_len : id_len, &hash) == ESBULK_OK;
    esbulk__spin_lock(&p->lock);
    for (k = 0, i = p->last; k < p->n; k++, i = i + 1 < p->n ? i + 1 : 0) {
        const esbulk__index_t *e;
        int32_t shard;

        /* from the entry found last, round (no division: this is per add) */
        e = p->e[i];
        if (p->name_len[i] != index_len || memcmp(e->name, index, index_len) != 0)
            continue;
        p->last = i;
        if (e->state != ESBULK__IDX_OK)
            break; /* the core does not route it either */
        if (p->div[i].ok) {
            /* as esbulk_layout_shard(), without its divisions */
            if (!hashed)
                break;
            shard = esbulk__shard_div(&p->div[i], hash);
        } else if (esbulk__index_shard(e, id, id_len, routing, routing_len, &shard) != ESBULK_OK) {
            break; /* no key, or a routing the server refuses anyway */
        }
        slot = (unsigned)shard;
        *serial = e->serial;
        *shard_out = shard;
        if (p->by_node && e->primary != NULL && e->primary[shard] >= 0)
            slot = (unsigned)e->primary[shard];
        break;
    }
    esbulk__spin_unlock(&p->lock);
    return slot;
}
