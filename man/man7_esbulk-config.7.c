#include <esbulk.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sched.h>
static atomic_int stopping, done;
static void save_checkpoint(long o) { (void)o; }
static const char *const settings[][2] = {
    {"urls", "https://es1.example:9200,https://es2.example:9200"},
    {"auth.api_key", "bXlpZDpteWtleQ=="},
    {"tls.ca.file", "/etc/elasticsearch/ca.pem"},
    {"flush.bytes", "10485760"},
    {"compression", "gzip"},
    {"ordering", "per_id"},
};

int harness(esbulk_t *eb, esbulk_conf_t *conf, esbulk_topology_t *topo, esbulk_conf_t *base, long offset);
int harness(esbulk_t *eb, esbulk_conf_t *conf, esbulk_topology_t *topo, esbulk_conf_t *base, long offset)
{
    (void)eb; (void)conf; (void)topo; (void)base; (void)offset; (void)stopping; (void)done;
    {

    }
    return 0;
}
