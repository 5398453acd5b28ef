#include <esbulk.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sched.h>
static atomic_int stopping, done;
static void save_checkpoint(long o) { (void)o; }
struct app { long failed; };

static void on_result(esbulk_t *eb, const esbulk_result_t *result, void *opaque)
{
    struct app *app = opaque;

    (void)eb;
    if (esbulk_result_outcome(result) != ESBULK_OUTCOME_INDEXED)
        app->failed++;
}


int harness(esbulk_t *eb, esbulk_conf_t *conf, esbulk_topology_t *topo, esbulk_conf_t *base, long offset, esbulk_layout_t *layout);
int harness(esbulk_t *eb, esbulk_conf_t *conf, esbulk_topology_t *topo, esbulk_conf_t *base, long offset, esbulk_layout_t *layout)
{
    char errstr[512];
    (void)eb; (void)conf; (void)topo; (void)base; (void)offset; (void)stopping; (void)done; (void)layout; (void)errstr;
    {

static struct app app;

esbulk_conf_set_opaque(conf, &app);
esbulk_conf_set_result_cb(conf, on_result);

    }
    return 0;
}
