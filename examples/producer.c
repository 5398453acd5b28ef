#define _POSIX_C_SOURCE 200809L /* getline */
/*
 * producer: index the JSON documents of standard input, one per line.
 *
 *   producer URL INDEX < docs.ndjson
 *
 * The shape of every libesbulk program: a configuration, a handle, adds,
 * results served by esbulk_poll() on this thread, a flush and a destroy.
 * A full buffer (ESBULK_ERR_QUEUE_FULL) is met by serving results until
 * there is room, as librdkafka's producer example meets a full queue.
 * Exits 0 when every line was indexed.
 */
#include <esbulk.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct counts {
    long indexed, failed;
};

/* Runs inside esbulk_poll(), esbulk_flush() and esbulk_destroy(). */
static void on_result(esbulk_t *eb, const esbulk_result_t *r, void *opaque)
{
    struct counts *n = opaque;
    const char *why = esbulk_result_error_reason(r);

    (void)eb;
    if (esbulk_result_outcome(r) == ESBULK_OUTCOME_INDEXED) {
        n->indexed++;
        return;
    }
    n->failed++;
    fprintf(stderr, "line %ld: %d %s\n", (long)(intptr_t)esbulk_result_opaque(r),
            (int)esbulk_result_status(r), why != NULL ? why : esbulk_err2str(esbulk_result_err(r)));
}

int main(int argc, char **argv)
{
    char errstr[512] = "out of memory";
    struct counts n = {0, 0};
    esbulk_conf_t *conf;
    esbulk_t *eb = NULL;
    char *line = NULL;
    size_t cap = 0;
    long lineno = 0, refused = 0;
    ssize_t len;

    if (argc != 3) {
        fprintf(stderr, "usage: %s URL INDEX < docs.ndjson\n", argv[0]);
        return 2;
    }
    conf = esbulk_conf_new();
    if (conf != NULL && esbulk_conf_set(conf, "urls", argv[1], errstr, sizeof(errstr)) == ESBULK_OK &&
        esbulk_conf_set(conf, "flush.interval.ms", "200", errstr, sizeof(errstr)) == ESBULK_OK) {
        esbulk_conf_set_result_cb(conf, on_result);
        esbulk_conf_set_opaque(conf, &n);
        eb = esbulk_new(conf, errstr, sizeof(errstr));
    }
    esbulk_conf_destroy(conf);
    if (eb == NULL) {
        fprintf(stderr, "producer: %s\n", errstr);
        return 1;
    }

    while ((len = getline(&line, &cap, stdin)) > 0) {
        esbulk_err_t err;

        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (len == 0)
            continue;
        /* no id: the library makes one (id.generate), so the document can
         * still be routed to its shard */
        while ((err = esbulk_add(eb, ESBULK_OP_INDEX, argv[2], NULL, 0, NULL, 0, line, (size_t)len,
                                 (void *)(intptr_t)lineno, errstr, sizeof(errstr))) ==
               ESBULK_ERR_QUEUE_FULL)
            esbulk_poll(eb, 100); /* serve results: their documents make room */
        if (err != ESBULK_OK) {   /* refused at add: it gets no result */
            fprintf(stderr, "line %ld: %s\n", lineno, errstr);
            refused++;
        }
        esbulk_poll(eb, 0);
    }
    free(line);

    if (esbulk_flush(eb, 60000) != ESBULK_OK)
        fprintf(stderr, "producer: not every document had its result in 60 s\n");
    esbulk_destroy(eb); /* gives the rest their results, then frees */
    printf("%ld indexed, %ld failed, %ld refused\n", n.indexed, n.failed, refused);
    return n.failed == 0 && refused == 0 ? 0 : 1;
}
