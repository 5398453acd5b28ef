#include <esbulk.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sched.h>
static atomic_int stopping, done;
static void save_checkpoint(long o) { (void)o; }
static void on_result(esbulk_t *eb, const esbulk_result_t *r, void *opaque)
{
    const char *id = esbulk_result_id(r);

    (void)eb;
    (void)opaque;
    switch (esbulk_result_outcome(r)) {
    case ESBULK_OUTCOME_INDEXED:
        break;
    case ESBULK_OUTCOME_FAILED:
        fprintf(stderr, "%s/%s: %s: %d %s: %s\n", esbulk_result_index(r),
                id ? id : "-", esbulk_err2str(esbulk_result_err(r)),
                (int)esbulk_result_status(r),
                esbulk_result_error_type(r) ? esbulk_result_error_type(r) : "-",
                esbulk_result_error_reason(r) ? esbulk_result_error_reason(r) : "-");
        break;
    case ESBULK_OUTCOME_POSSIBLY:
        fprintf(stderr, "%s/%s: unknown, check it (%d attempts)\n",
                esbulk_result_index(r), id ? id : "-",
                (int)esbulk_result_attempts(r));
        break;
    }
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
