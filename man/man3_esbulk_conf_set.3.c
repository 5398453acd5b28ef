#include <esbulk.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sched.h>
static atomic_int stopping, done;
static void save_checkpoint(long o) { (void)o; }
static int configure(esbulk_conf_t *conf)
{
    static const char *const kv[][2] = {
        {"urls", "https://es1:9200,https://es2:9200"},
        {"auth.api_key", "bXlpZDpteWtleQ=="},
        {"flush.docs", "5000"},
        {"compression", "gzip"},
    };
    char errstr[256];
    size_t i;

    for (i = 0; i < sizeof(kv) / sizeof(kv[0]); i++) {
        if (esbulk_conf_set(conf, kv[i][0], kv[i][1], errstr,
                            sizeof(errstr)) != ESBULK_OK) {
            fprintf(stderr, "config: %s\n", errstr);
            return -1;
        }
    }
    return 0;
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
