#include <esbulk.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sched.h>
static atomic_int stopping, done;
static void save_checkpoint(long o) { (void)o; }
static void on_results(esbulk_t *eb, const esbulk_result_t *const *results,
                       size_t count, void *opaque)
{
    long *failed = opaque;
    size_t i;

    (void)eb;
    for (i = 0; i < count; i++)
        if (esbulk_result_outcome(results[i]) != ESBULK_OUTCOME_INDEXED)
            (*failed)++;
}

static void on_stats(esbulk_t *eb, const char *json, size_t json_len,
                     void *opaque)
{
    (void)eb;
    (void)opaque;
    fprintf(stderr, "stats: %.*s\n", (int)json_len, json);
}


int harness(esbulk_t *eb, esbulk_conf_t *conf, esbulk_topology_t *topo, esbulk_conf_t *base, long offset, esbulk_layout_t *layout);
int harness(esbulk_t *eb, esbulk_conf_t *conf, esbulk_topology_t *topo, esbulk_conf_t *base, long offset, esbulk_layout_t *layout)
{
    char errstr[512];
    (void)eb; (void)conf; (void)topo; (void)base; (void)offset; (void)stopping; (void)done; (void)layout; (void)errstr;
    {

static long failed;

esbulk_conf_set_opaque(conf, &failed);
esbulk_conf_set_results_cb(conf, on_results);
esbulk_conf_set_stats_cb(conf, on_stats);
esbulk_conf_set(conf, "stats.interval.ms", "10000", NULL, 0);

    }
    return 0;
}
