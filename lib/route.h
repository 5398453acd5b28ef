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

#endif
