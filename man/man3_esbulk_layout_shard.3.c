#include <esbulk.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sched.h>
static atomic_int stopping, done;
static void save_checkpoint(long o) { (void)o; }
/* The shard of id (and routing, may be NULL), or -1. */
static int shard_of(const esbulk_layout_t *layout, const char *id,
                    const char *routing)
{
    int32_t shard;

    if (esbulk_layout_shard(layout, id, strlen(id), routing,
                            routing ? strlen(routing) : 0, &shard) != ESBULK_OK)
        return -1;
    return shard;
}


int harness(esbulk_t *eb, esbulk_conf_t *conf, esbulk_topology_t *topo, esbulk_conf_t *base, long offset, esbulk_layout_t *layout);
int harness(esbulk_t *eb, esbulk_conf_t *conf, esbulk_topology_t *topo, esbulk_conf_t *base, long offset, esbulk_layout_t *layout)
{
    char errstr[512];
    (void)eb; (void)conf; (void)topo; (void)base; (void)offset; (void)stopping; (void)done; (void)layout; (void)errstr;
    {

esbulk_layout_t *layout = esbulk_layout_new();   /* check for NULL */

esbulk_layout_set_shards(layout, 3);   /* routing_num_shards 768 */
printf("%d %d\n", shard_of(layout, "doc-1", NULL),
       shard_of(layout, "doc-1", "user-42"));
esbulk_layout_destroy(layout);

    }
    return 0;
}
