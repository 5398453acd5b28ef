#include <esbulk.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sched.h>
static atomic_int stopping, done;
static void save_checkpoint(long o) { (void)o; }
/* Adds one document; on a full buffer serves results and tries again. */
static int add_user(esbulk_t *eb, const char *id, const char *json)
{
    char errstr[256];
    esbulk_err_t err;

    for (;;) {
        err = esbulk_add(eb, ESBULK_OP_INDEX, "users", id, strlen(id),
                         NULL, 0, json, strlen(json), NULL,
                         errstr, sizeof(errstr));
        if (err != ESBULK_ERR_QUEUE_FULL)
            break;
        esbulk_poll(eb, 100);
    }
    if (err != ESBULK_OK) {
        fprintf(stderr, "users/%s: %s\n", id, errstr);
        return -1;   /* no result will come for this document */
    }
    return 0;         /* exactly one result will come */
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
