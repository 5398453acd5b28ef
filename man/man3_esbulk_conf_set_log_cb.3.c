#include <esbulk.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sched.h>
static atomic_int stopping, done;
static void save_checkpoint(long o) { (void)o; }
static void log_line(int32_t level, const char *facility,
                     const char *message, void *opaque)
{
    (void)opaque;
    /* stderr is locked per call by stdio: safe from any thread */
    fprintf(stderr, "esbulk <%d> %s: %s\n", (int)level, facility, message);
}


int harness(esbulk_t *eb, esbulk_conf_t *conf, esbulk_topology_t *topo, esbulk_conf_t *base, long offset, esbulk_layout_t *layout);
int harness(esbulk_t *eb, esbulk_conf_t *conf, esbulk_topology_t *topo, esbulk_conf_t *base, long offset, esbulk_layout_t *layout)
{
    char errstr[512];
    (void)eb; (void)conf; (void)topo; (void)base; (void)offset; (void)stopping; (void)done; (void)layout; (void)errstr;
    {

esbulk_conf_set_log_cb(conf, log_line);
esbulk_conf_set(conf, "log.level", "7", NULL, 0);   /* debug */

    }
    return 0;
}
