#include <esbulk.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sched.h>
static atomic_int stopping, done;
static void save_checkpoint(long o) { (void)o; }
static void where(esbulk_topology_t *topo, const char *index, const char *id)
{
    char node[256], errstr[512];
    int32_t shard;
    esbulk_err_t err;

    err = esbulk_topology_route(topo, index, id, strlen(id), NULL, 0, &shard,
                                node, sizeof(node), errstr, sizeof(errstr));
    if (err != ESBULK_OK)
        fprintf(stderr, "%s/%s: %s (%s)\n", index, id, errstr,
                esbulk_err2str(err));
    else
        printf("%s/%s: shard %d on %s\n", index, id, (int)shard,
               node[0] ? node : "(unassigned)");
}

int harness(esbulk_t *eb, esbulk_conf_t *conf, esbulk_topology_t *topo, esbulk_conf_t *base, long offset, esbulk_layout_t *layout);
int harness(esbulk_t *eb, esbulk_conf_t *conf, esbulk_topology_t *topo, esbulk_conf_t *base, long offset, esbulk_layout_t *layout)
{
    char errstr[512];
    (void)eb; (void)conf; (void)topo; (void)base; (void)offset; (void)stopping; (void)done; (void)layout; (void)errstr;
    {

    }
    return 0;
}
