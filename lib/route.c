/* The server's shard function (OperationRouting / IndexRouting). */
#include "route.h"
#include "murmur3.h"

#include <stdlib.h>
#include <string.h>

void esbulk__layout_init(esbulk_layout_t *layout)
{
    layout->shards = 1;
    layout->routing_shards = 0;
    layout->partition_size = 1;
    layout->fn = ESBULK_ROUTE_LEGACY;
}

esbulk_layout_t *esbulk_layout_new(void)
{
    esbulk_layout_t *layout = malloc(sizeof(*layout));

    if (layout != NULL)
        esbulk__layout_init(layout);
    return layout;
}

void esbulk_layout_destroy(esbulk_layout_t *layout)
{
    free(layout);
}

esbulk_err_t esbulk_layout_set_shards(esbulk_layout_t *layout, int32_t shards)
{
    if (layout == NULL || shards < 1)
        return ESBULK_ERR_INVALID_ARG;
    layout->shards = shards;
    return ESBULK_OK;
}

esbulk_err_t esbulk_layout_set_routing_shards(esbulk_layout_t *layout, int32_t routing_shards)
{
    if (layout == NULL || routing_shards < 0)
        return ESBULK_ERR_INVALID_ARG;
    layout->routing_shards = routing_shards;
    return ESBULK_OK;
}

esbulk_err_t esbulk_layout_set_partition_size(esbulk_layout_t *layout, int32_t partition_size)
{
    if (layout == NULL || partition_size < 1)
        return ESBULK_ERR_INVALID_ARG;
    layout->partition_size = partition_size;
    return ESBULK_OK;
}

esbulk_err_t esbulk_layout_set_function(esbulk_layout_t *layout, esbulk_route_fn_t fn)
{
    if (layout == NULL || (fn != ESBULK_ROUTE_LEGACY && fn != ESBULK_ROUTE_MOD))
        return ESBULK_ERR_INVALID_ARG;
    layout->fn = fn;
    return ESBULK_OK;
}

int32_t esbulk_default_routing_shards(int32_t shards)
{
    int32_t log2_ceil = 0, shift;

    if (shards < 1)
        return 0;
    while (log2_ceil < 31 && ((int64_t)1 << log2_ceil) < shards)
        log2_ceil++;
    shift = 10 - log2_ceil;
    if (shift < 1)
        shift = 1;
    if ((int64_t)shards << shift > INT32_MAX)
        return shards; /* the server caps at 1024 shards per index anyway */
    return shards << shift;
}

int32_t esbulk_layout_routing_shards(const esbulk_layout_t *layout)
{
    if (layout == NULL)
        return 0;
    return layout->routing_shards > 0 ? layout->routing_shards
                                      : esbulk_default_routing_shards(layout->shards);
}

/* What esbulk_layout_shard() does once it has the hash: inlined there and
 * in esbulk__layout_shard_of_hash(), so that the public function keeps no
 * extra call. */
static inline esbulk_err_t shard_of_hash(const esbulk_layout_t *layout, int32_t hash,
                                         int32_t *shard)
{
    int32_t routing_shards;

    if (layout->fn == ESBULK_ROUTE_MOD) {
        *shard = esbulk__floor_mod(hash, layout->shards);
        return ESBULK_OK;
    }
    routing_shards = esbulk_layout_routing_shards(layout);
    if (routing_shards < layout->shards || routing_shards % layout->shards != 0)
        return ESBULK_ERR_INVALID_ARG;
    *shard = esbulk__floor_mod(hash, routing_shards) / (routing_shards / layout->shards);
    return ESBULK_OK;
}

esbulk_err_t esbulk_layout_shard(const esbulk_layout_t *layout, const char *id, size_t id_len,
                                 const char *routing, size_t routing_len, int32_t *shard)
{
    int32_t hash;
    esbulk_err_t err;

    if (layout == NULL || shard == NULL || (id == NULL && id_len > 0) ||
        (routing == NULL && routing_len > 0))
        return ESBULK_ERR_INVALID_ARG;
    if (routing_len == 0 && id_len == 0)
        return ESBULK_ERR_INVALID_ARG; /* the server needs one of them */

    if (routing_len > 0) {
        err = esbulk__murmur3_utf16(routing, routing_len, &hash);
        if (err != ESBULK_OK)
            return err;
        if (layout->partition_size > 1) {
            int32_t id_hash;
            uint32_t sum;

            if (id_len == 0)
                return ESBULK_ERR_INVALID_ARG; /* partitioned: the id picks the partition */
            err = esbulk__murmur3_utf16(id, id_len, &id_hash);
            if (err != ESBULK_OK)
                return err;
            /* Java int addition: wraps around. */
            sum = (uint32_t)hash + (uint32_t)esbulk__floor_mod(id_hash, layout->partition_size);
            hash = esbulk__u32_to_i32(sum);
        }
    } else {
        err = esbulk__murmur3_utf16(id, id_len, &hash);
        if (err != ESBULK_OK)
            return err;
    }

    return shard_of_hash(layout, hash, shard);
}

esbulk_err_t esbulk__layout_shard_of_hash(const esbulk_layout_t *layout, int32_t hash,
                                          int32_t *shard)
{
    return shard_of_hash(layout, hash, shard);
}

void esbulk__shard_div_init(esbulk__shard_div_t *s, const esbulk_layout_t *layout)
{
    int32_t rs = esbulk_layout_routing_shards(layout);

    memset(s, 0, sizeof(*s));
    if (layout->shards < 1 || layout->partition_size != 1)
        return;
    if (layout->fn == ESBULK_ROUTE_MOD) {
        s->mod = (uint32_t)layout->shards;
        s->factor = 1;
    } else {
        if (rs < layout->shards || rs % layout->shards != 0)
            return;
        s->mod = (uint32_t)rs;
        s->factor = (uint32_t)(rs / layout->shards);
    }
    s->bias = (uint32_t)(((uint64_t)1 << 31) % s->mod);
    /* 2^64 / d rounded up is UINT64_MAX / d + 1 for any d > 1; for d = 1 it
     * wraps to 0, which is right for the remainder (always 0), and the
     * quotient by 1 is not computed */
    s->m_mod = UINT64_MAX / s->mod + 1;
    s->m_factor = UINT64_MAX / s->factor + 1;
    s->ok = 1;
}
