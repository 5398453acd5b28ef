/*
 * versions: a change stream applied with external versions, so that a
 * replayed (older) change never overwrites a newer one.
 *
 *   versions URL INDEX
 *
 * A sync job gives each change the version of its position in the source
 * (a binlog offset, a Kafka offset, an update time): the server indexes a
 * document only when its version is above the stored one and answers 409
 * otherwise. Here the document "row-1" gets version 5, then a replay of
 * version 3 (refused with 409: the newer one stays), then a delete at
 * version 6. esbulk_docopts_t carries the per-document options into
 * esbulk_add_opts(); esbulk_request() reads the document back. Exits 0
 * when every outcome is the expected one.
 */
#include <esbulk.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int outcomes[3], statuses[3];

static void on_result(esbulk_t *eb, const esbulk_result_t *r, void *opaque)
{
    int step = (int)(intptr_t)esbulk_result_opaque(r);

    (void)eb;
    (void)opaque;
    outcomes[step] = (int)esbulk_result_outcome(r);
    statuses[step] = (int)esbulk_result_status(r);
    printf("change %d: %s, status %d%s%s\n", step, esbulk_result_op(r) == ESBULK_OP_DELETE ? "delete" : "index",
           statuses[step], esbulk_result_error_type(r) ? ": " : "",
           esbulk_result_error_type(r) ? esbulk_result_error_type(r) : "");
}

/* One change, version v, and wait for its result: the changes of one row
 * go in order (ordering=per_id would keep them so without the wait). */
static int change(esbulk_t *eb, esbulk_docopts_t *opts, int step, esbulk_op_t op,
                  const char *index, const char *body, int64_t v)
{
    char errstr[256];

    if (esbulk_docopts_set_version(opts, v, ESBULK_VERSION_EXTERNAL) != ESBULK_OK ||
        esbulk_add_opts(eb, op, index, "row-1", 5, NULL, 0, body, body ? strlen(body) : 0, opts,
                        (void *)(intptr_t)step, errstr, sizeof(errstr)) != ESBULK_OK) {
        fprintf(stderr, "versions: change %d refused: %s\n", step, errstr);
        return -1;
    }
    return esbulk_flush(eb, 30000) == ESBULK_OK ? 0 : -1;
}

int main(int argc, char **argv)
{
    char errstr[512] = "out of memory", path[256];
    esbulk_conf_t *conf;
    esbulk_docopts_t *opts;
    esbulk_t *eb = NULL;
    char *answer = NULL;
    int32_t status = 0;
    int ok;

    if (argc != 3) {
        fprintf(stderr, "usage: %s URL INDEX\n", argv[0]);
        return 2;
    }
    conf = esbulk_conf_new();
    if (conf != NULL && esbulk_conf_set(conf, "urls", argv[1], errstr, sizeof(errstr)) == ESBULK_OK) {
        esbulk_conf_set_result_cb(conf, on_result);
        eb = esbulk_new(conf, errstr, sizeof(errstr));
    }
    esbulk_conf_destroy(conf);
    if (eb == NULL || (opts = esbulk_docopts_new()) == NULL) {
        fprintf(stderr, "versions: %s\n", errstr);
        esbulk_destroy(eb);
        return 1;
    }

    ok = change(eb, opts, 0, ESBULK_OP_INDEX, argv[2], "{\"state\":\"new\"}", 5) == 0 &&
         change(eb, opts, 1, ESBULK_OP_INDEX, argv[2], "{\"state\":\"replayed\"}", 3) == 0;
    snprintf(path, sizeof(path), "/%s/_doc/row-1", argv[2]);
    if (ok && esbulk_request(eb, "GET", path, NULL, 0, 0, &status, &answer, NULL, errstr,
                             sizeof(errstr)) == ESBULK_OK)
        printf("after the replay: %s\n", answer);
    ok = ok && status == 200 && answer != NULL && strstr(answer, "\"new\"") != NULL;
    esbulk_free(answer);
    ok = ok && change(eb, opts, 2, ESBULK_OP_DELETE, argv[2], NULL, 6) == 0;

    esbulk_docopts_destroy(opts);
    esbulk_destroy(eb);
    return ok && outcomes[0] == ESBULK_OUTCOME_INDEXED && outcomes[1] == ESBULK_OUTCOME_FAILED &&
                   statuses[1] == 409 && outcomes[2] == ESBULK_OUTCOME_INDEXED
               ? 0
               : 1;
}
