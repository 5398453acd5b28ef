/*
 * pull: the results pulled in batches instead of served to a callback.
 *
 *   pull URL INDEX COUNT
 *
 * A binding that must not be called back from C (Go without //export, a
 * language whose callbacks swallow exceptions) sets no result callback and
 * pulls: esbulk_poll_results() hands out up to a batch of results, which
 * stay valid until esbulk_results_release(); esbulk_results_read() copies
 * a whole batch's outcomes in one call. Adds COUNT documents with ids
 * "pull-0", "pull-1", ... and exits 0 when every one was pulled as indexed.
 */
#include <esbulk.h>

#include <stdio.h>
#include <stdlib.h>

#define BATCH 256

int main(int argc, char **argv)
{
    char errstr[512] = "out of memory";
    const esbulk_result_t *batch[BATCH];
    esbulk_conf_t *conf;
    esbulk_t *eb = NULL;
    long count, added = 0, pulled = 0, indexed = 0;
    int32_t got;

    if (argc != 4 || (count = strtol(argv[3], NULL, 10)) <= 0) {
        fprintf(stderr, "usage: %s URL INDEX COUNT\n", argv[0]);
        return 2;
    }
    conf = esbulk_conf_new();
    if (conf != NULL && esbulk_conf_set(conf, "urls", argv[1], errstr, sizeof(errstr)) == ESBULK_OK)
        eb = esbulk_new(conf, errstr, sizeof(errstr)); /* no callback: results are pulled */
    esbulk_conf_destroy(conf);
    if (eb == NULL) {
        fprintf(stderr, "pull: %s\n", errstr);
        return 1;
    }

    while (pulled < added || added < count) {
        for (; added < count; added++) {
            char id[32], body[64];
            int idlen = snprintf(id, sizeof(id), "pull-%ld", added);
            int blen = snprintf(body, sizeof(body), "{\"n\":%ld}", added);
            esbulk_err_t err = esbulk_add(eb, ESBULK_OP_INDEX, argv[2], id, (size_t)idlen, NULL, 0,
                                          body, (size_t)blen, NULL, errstr, sizeof(errstr));
            if (err == ESBULK_ERR_QUEUE_FULL)
                break; /* pull first: pulled and released results make room */
            if (err != ESBULK_OK) {
                fprintf(stderr, "pull: add %s: %s\n", id, errstr);
                esbulk_destroy(eb);
                return 1;
            }
        }
        got = esbulk_poll_results(eb, batch, BATCH, 1000);
        if (got < 0) {
            fprintf(stderr, "pull: %s\n", esbulk_err2str((esbulk_err_t)got));
            break;
        }
        for (int32_t i = 0; i < got; i++) {
            if (esbulk_result_outcome(batch[i]) == ESBULK_OUTCOME_INDEXED)
                indexed++;
            else
                fprintf(stderr, "%s: %s\n", esbulk_result_id(batch[i]),
                        esbulk_err2str(esbulk_result_err(batch[i])));
        }
        pulled += got;
        esbulk_results_release(eb); /* the batch's results are gone after this */
    }
    esbulk_destroy(eb);
    printf("%ld added, %ld pulled, %ld indexed\n", added, pulled, indexed);
    return indexed == count ? 0 : 1;
}
