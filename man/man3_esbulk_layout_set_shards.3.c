#include <esbulk.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sched.h>
static atomic_int stopping, done;
static void save_checkpoint(long o) { (void)o; }

int harness(esbulk_t *eb, esbulk_conf_t *conf, esbulk_topology_t *topo, esbulk_conf_t *base, long offset, esbulk_layout_t *layout);
int harness(esbulk_t *eb, esbulk_conf_t *conf, esbulk_topology_t *topo, esbulk_conf_t *base, long offset, esbulk_layout_t *layout)
{
    char errstr[512];
    (void)eb; (void)conf; (void)topo; (void)base; (void)offset; (void)stopping; (void)done; (void)layout; (void)errstr;
    {
esbulk_layout_t *layout = esbulk_layout_new();

if (layout == NULL ||
    esbulk_layout_set_shards(layout, 4) != ESBULK_OK ||
    esbulk_layout_set_routing_shards(layout, 8) != ESBULK_OK ||
    esbulk_layout_set_partition_size(layout, 3) != ESBULK_OK ||
    esbulk_layout_set_function(layout, ESBULK_ROUTE_LEGACY) != ESBULK_OK) {
    esbulk_layout_destroy(layout);
    return 1;
}

    }
    return 0;
}
