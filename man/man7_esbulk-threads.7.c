#include <esbulk.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sched.h>
static atomic_int stopping, done;
static void save_checkpoint(long o) { (void)o; }
static void *producer(void *arg)
{
    esbulk_t *eb = arg;
    char errstr[256];
    int i;

    for (i = 0; i < 1000; i++)
        while (esbulk_add(eb, ESBULK_OP_INDEX, "events", NULL, 0, NULL, 0,
                          "{}", 2, NULL, errstr, sizeof(errstr)) ==
               ESBULK_ERR_QUEUE_FULL)
            sched_yield();   /* the serving thread makes progress */
    return NULL;
}

static void *server(void *arg)
{
    esbulk_t *eb = arg;

    while (!atomic_load(&done))
        esbulk_poll(eb, 200);    /* callbacks run here */
    return NULL;
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
