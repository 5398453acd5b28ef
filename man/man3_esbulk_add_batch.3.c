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
static const char *const bodies[] = {"{\"n\":1}", "{\"n\":2}", "{\"n\":3}"};
const char *indices[3] = {"numbers", "numbers", "numbers"};
int32_t ops[3] = {ESBULK_OP_INDEX, ESBULK_OP_INDEX, ESBULK_OP_INDEX};
size_t body_lens[3], done = 0, accepted, i;
char errstr[256];
esbulk_err_t err;

for (i = 0; i < 3; i++)
    body_lens[i] = strlen(bodies[i]);
do {
    err = esbulk_add_batch(eb, 3 - done, ops + done, indices + done,
                           NULL, NULL, NULL, NULL, bodies + done,
                           body_lens + done, NULL, &accepted,
                           errstr, sizeof(errstr));
    done += accepted;
    if (err == ESBULK_ERR_QUEUE_FULL)
        esbulk_poll(eb, 100);
} while (err == ESBULK_ERR_QUEUE_FULL);
if (err != ESBULK_OK)
    fprintf(stderr, "document %zu: %s\n", done, errstr);

    }
    return 0;
}
