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
char errstr[256];
esbulk_conf_t *conf = esbulk_conf_new();

if (conf == NULL)
    return 1;
if (esbulk_conf_set(conf, "urls", "http://127.0.0.1:9200", errstr,
                    sizeof(errstr)) != ESBULK_OK) {
    fprintf(stderr, "%s\n", errstr);
    esbulk_conf_destroy(conf);
    return 1;
}
/* ... esbulk_topology_new(conf, ...) or esbulk_new(conf, ...) ... */
esbulk_conf_destroy(conf);

    }
    return 0;
}
