/* Index layout and the server's shard functions. */
#ifndef ESBULK_ROUTE_H
#define ESBULK_ROUTE_H

#include "common.h"

struct esbulk_layout_s {
    int32_t shards;          /* number_of_shards, >= 1 */
    int32_t routing_shards;  /* routing_num_shards; 0: the default rule */
    int32_t partition_size;  /* routing_partition_size, >= 1 */
    esbulk_route_fn_t fn;
};

void esbulk__layout_init(esbulk_layout_t *layout);

/* floorMod for int32 with a positive divisor. */
static inline int32_t esbulk__floor_mod(int32_t x, int32_t m)
{
    int32_t r = x % m;
    return r < 0 ? r + m : r;
}

/* The shard of a hash (the murmur3 of the routing or the id, partition
 * added), by the divisions of the server's function: what
 * esbulk_layout_shard() does once it has the hash. ESBULK_ERR_INVALID_ARG
 * for a routing_shards that is not a multiple of shards. */
esbulk_err_t esbulk__layout_shard_of_hash(const esbulk_layout_t *layout, int32_t hash,
                                          int32_t *shard);

/* The same, prepared once for a layout: the shard of a hash then takes
 * multiplications rather than integer divisions (two of them, 60-70 % of
 * esbulk_layout_shard()'s time without it; Lemire, Kaser and Kurz, "Faster
 * remainder by direct computation", 2019). For the placement hint computed
 * on every add (place.c). */
#if defined(__SIZEOF_INT128__)
#define ESBULK__FASTDIV 1
__extension__ typedef unsigned __int128 esbulk__u128;
#endif
typedef struct {
    int ok;          /* the layout is valid and routes by one hash
                        (routing_partition_size 1) */
    uint32_t mod;    /* routing_shards (legacy function) or shards (mod) */
    uint32_t bias;   /* 2^31 modulo mod */
    uint32_t factor; /* routing_shards / shards (legacy), 1 (mod) */
    uint64_t m_mod, m_factor; /* 2^64 / divisor, rounded up (ESBULK__FASTDIV) */
} esbulk__shard_div_t;

void esbulk__shard_div_init(esbulk__shard_div_t *s, const esbulk_layout_t *layout);

/* s->ok must be set. Equal to esbulk__layout_shard_of_hash(). */
static inline int32_t esbulk__shard_div(const esbulk__shard_div_t *s, int32_t hash)
{
    /* the hash plus 2^31, unsigned: floorMod(hash, mod) is its remainder
     * less 2^31's, brought back into [0, mod) */
    uint32_t a = (uint32_t)hash ^ 0x80000000u, r, q;

#ifdef ESBULK__FASTDIV
    r = (uint32_t)(((esbulk__u128)(s->m_mod * a) * s->mod) >> 64);
#else
    r = a % s->mod;
#endif
    r = r >= s->bias ? r - s->bias : r + s->mod - s->bias;
    if (s->factor == 1)
        return (int32_t)r;
#ifdef ESBULK__FASTDIV
    q = (uint32_t)(((esbulk__u128)s->m_factor * r) >> 64);
#else
    q = r / s->factor;
#endif
    return (int32_t)q;
}

#endif
