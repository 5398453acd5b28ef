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
char errstr[512];
esbulk_conf_t *conf = esbulk_conf_new();
esbulk_topology_t *topo;

if (conf == NULL ||
    esbulk_conf_set(conf, "urls", "https://elastic:secret@es1:9200,"
                    "https://es2:9200", errstr, sizeof(errstr)) != ESBULK_OK ||
    esbulk_conf_set(conf, "tls.ca.file", "/etc/es/ca.pem", errstr,
                    sizeof(errstr)) != ESBULK_OK) {
    esbulk_conf_destroy(conf);
    return 1;
}
topo = esbulk_topology_new(conf, errstr, sizeof(errstr));
esbulk_conf_destroy(conf);
if (topo == NULL) {
    fprintf(stderr, "esbulk: %s\n", errstr);
    return 1;
}
/* ... esbulk_topology_route(topo, ...) ... */
esbulk_topology_destroy(topo);

    }
    return 0;
}
