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
int32_t shard;

if (layout == NULL)
    return 1;
esbulk_layout_set_shards(layout, 5);        /* routing_num_shards 640 */
if (esbulk_layout_shard(layout, "doc-1", 5, NULL, 0, &shard) == ESBULK_OK)
    printf("doc-1 is on shard %d\n", (int)shard);
esbulk_layout_destroy(layout);

    }
    return 0;
}
