/* libFuzzer harness: `esbulk load`'s input reader (tools/esbulk/load_input.c):
 * the NDJSON and _bulk-file line reader, the action-line parser and the
 * top-level field scanner of --id-field / --routing-field. The reader's
 * source, with the report and progress code it calls, is included here with esbulk_add/esbulk_add_opts/esbulk_poll replaced by
 * a checker and esbulk_new by a token, so no engine runs.
 *
 * Input: byte 0 picks the options (format auto/ndjson/bulk, the op, whether
 * --index, --id-field "id", --routing-field "r" and --failed are given); the
 * rest is the input file. Checks, besides sanitizers:
 * - every document read is either added or reported failed, once;
 * - what is added is well formed: an index, a body exactly for non-deletes,
 *   readable id/routing/body bytes;
 * - for an NDJSON line that jansson reads as an object without duplicate
 *   keys, the _id and routing taken by the field scanner are the values
 *   jansson finds for "id" and "r" (strings), or none when absent. */
#include <esbulk.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static esbulk_err_t fuzz_add(esbulk_t *eb, esbulk_op_t op, const char *index, const char *id,
                             size_t id_len, const char *routing, size_t routing_len,
                             const char *body, size_t body_len, void *doc_opaque, char *errstr,
                             size_t errstr_size);
static esbulk_err_t fuzz_add_opts(esbulk_t *eb, esbulk_op_t op, const char *index,
                                  const char *id, size_t id_len, const char *routing,
                                  size_t routing_len, const char *body, size_t body_len,
                                  const esbulk_docopts_t *opts, void *doc_opaque, char *errstr,
                                  size_t errstr_size);
static int fuzz_poll(esbulk_t *eb, int timeout_ms);
static esbulk_t *fuzz_new(const esbulk_conf_t *conf, char *errstr, size_t errstr_size);
#define esbulk_add fuzz_add
#define esbulk_add_opts fuzz_add_opts
#define esbulk_poll fuzz_poll
#define esbulk_new fuzz_new
#include "../../tools/esbulk/load_input.c"
#include "../../tools/esbulk/load_report.c"
#include "../../tools/esbulk/load_progress.c"
#include "../../tools/common/awscreds.c"
#undef esbulk_add
#undef esbulk_add_opts
#undef esbulk_poll
#undef esbulk_new

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FAIL(...) (fprintf(stderr, "fuzz_load: " __VA_ARGS__), fputc('\n', stderr), abort())

static load_t *cur;
static uint64_t adds, sink;

/* the value of key in object body per jansson: 1 string (in *v), 0 absent, -1 other/unknown */
static int ref_field(json_t *o, const char *key, const char **v, size_t *n)
{
    json_t *f = json_object_get(o, key);

    if (f == NULL || json_is_null(f))
        return 0;
    if (!json_is_string(f))
        return -1;
    *v = json_string_value(f);
    *n = json_string_length(f);
    return 1;
}

static void check_field(const char *what, json_t *o, const char *key, const char *got,
                        size_t got_len)
{
    const char *v = NULL;
    size_t n = 0;
    int r = ref_field(o, key, &v, &n);

    if (r == 0 && got_len != 0)
        FAIL("%s: the scanner found a value where jansson finds none", what);
    if (r == 1 && n > 0 && (got_len != n || memcmp(got, v, n) != 0))
        FAIL("%s: scanner \"%.*s\" vs jansson \"%.*s\"", what, (int)got_len, got ? got : "",
             (int)n, v);
}

static esbulk_err_t fuzz_add(esbulk_t *eb, esbulk_op_t op, const char *index, const char *id,
                             size_t id_len, const char *routing, size_t routing_len,
                             const char *body, size_t body_len, void *doc_opaque, char *errstr,
                             size_t errstr_size)
{
    size_t i;

    (void)eb; (void)errstr; (void)errstr_size;
    /* a full queue now and then: the reader must offer the same document again */
    if ((++adds % 7) == 3)
        return ESBULK_ERR_QUEUE_FULL;
    if (index == NULL || index[0] == '\0')
        FAIL("added without an index");
    if ((unsigned)op > ESBULK_OP_DELETE || (op == ESBULK_OP_DELETE) != (body == NULL))
        FAIL("op %d with body %p", (int)op, (const void *)body);
    if ((id == NULL && id_len) || (routing == NULL && routing_len) || doc_opaque == NULL)
        FAIL("NULL pointer with a length");
    /* touch every byte: an overread shows under ASan */
    for (i = 0; i < id_len; i++) sink += (unsigned char)id[i];
    for (i = 0; i < routing_len; i++) sink += (unsigned char)routing[i];
    for (i = 0; i < body_len; i++) sink += (unsigned char)body[i];
    for (i = 0; index[i]; i++) sink += (unsigned char)index[i];
    /* NDJSON given (with auto, a file may turn out to be _bulk: ids from its action lines) */
    if (cur->format == FMT_NDJSON && (op == ESBULK_OP_INDEX || op == ESBULK_OP_CREATE) &&
        (cur->id_field || cur->routing_field)) {
        json_t *o = json_loadb(body, body_len, JSON_REJECT_DUPLICATES, NULL);

        if (json_is_object(o)) {
            if (cur->id_field)
                check_field("--id-field", o, "id", id, id_len);
            if (cur->routing_field)
                check_field("--routing-field", o, "r", routing, routing_len);
        }
        json_decref(o);
    }
    /* as if its result were served: the record is freed by the callback */
    free(doc_opaque);
    cur->indexed++;
    return ESBULK_OK;
}

/* the handle load makes at its first document: a token the replaced calls
 * ignore (no engine runs) */
static esbulk_t *fuzz_new(const esbulk_conf_t *conf, char *errstr, size_t errstr_size)
{
    static char token;

    (void)conf; (void)errstr; (void)errstr_size;
    return (esbulk_t *)(void *)&token;
}

/* A document with options (an action line's version, pipeline, ...): the
 * same checks; the options themselves are esbulk_add_opts's to check. */
static esbulk_err_t fuzz_add_opts(esbulk_t *eb, esbulk_op_t op, const char *index,
                                  const char *id, size_t id_len, const char *routing,
                                  size_t routing_len, const char *body, size_t body_len,
                                  const esbulk_docopts_t *opts, void *doc_opaque, char *errstr,
                                  size_t errstr_size)
{
    if (opts == NULL)
        FAIL("esbulk_add_opts without options (esbulk_add is for those)");
    return fuzz_add(eb, op, index, id, id_len, routing, routing_len, body, body_len, doc_opaque,
                    errstr, errstr_size);
}

static int fuzz_poll(esbulk_t *eb, int timeout_ms)
{
    (void)eb; (void)timeout_ms;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const esbulk_op_t ops[] = {ESBULK_OP_INDEX, ESBULK_OP_CREATE, ESBULK_OP_UPDATE,
                                      ESBULK_OP_DELETE};
    static char name[] = "fuzz-input", *names[] = {name, NULL};
    load_t L;
    FILE *fp, *null;
    int rc;

    if (size < 1)
        return 0;
    memset(&L, 0, sizeof(L));
    L.format = (format_t)(data[0] % 3);
    L.op = ops[(data[0] >> 2) & 3];
    L.index = (data[0] & 16) ? "idx" : NULL;
    L.id_field = (data[0] & 32) ? "id" : NULL;
    L.routing_field = (data[0] & 64) ? "r" : NULL;
    if (L.format == FMT_BULK) { /* as the option checks of esbulk load demand */
        L.id_field = L.routing_field = NULL;
        L.op = ESBULK_OP_INDEX;
    }
    if ((L.op == ESBULK_OP_DELETE || L.op == ESBULK_OP_UPDATE) && L.id_field == NULL)
        L.op = ESBULK_OP_INDEX;
    L.quiet = 1;
    L.failures_shown = SHOWN_FAILURES; /* nothing printed on stderr */
    L.warned_id_type = L.warned_routing_type = L.warned_ignored_key = 1;
    L.inputs = names;
    L.ninputs = 1;
    null = fopen("/dev/null", "w");
    L.reasons_fp = null;
    L.failed_fp = (data[0] & 128) ? null : NULL;
    cur = &L;
    fp = fmemopen((void *)(data + 1), size - 1 ? size - 1 : 1, "r");
    if (fp == NULL || null == NULL)
        abort();
    if (size == 1)
        fgetc(fp); /* fmemopen needs a size: an empty input */
    rc = load_input(&L, 0, fp);
    fclose(fp);
    fclose(null);
    if (rc != 0 && rc != EXIT_USAGE)
        FAIL("load_input returned %d on a memory input", rc);
    if (L.read_docs != L.added + L.failed || L.added != L.indexed)
        FAIL("%llu documents read, %llu added, %llu failed, %llu results",
             (unsigned long long)L.read_docs, (unsigned long long)L.added,
             (unsigned long long)L.failed, (unsigned long long)L.indexed);
    free(L.scratch);
    esbulk_docopts_destroy(L.docopts);
    return 0;
}
