/* libFuzzer harness: the request writer (lib/ndjson.c). The action line
 * written for any valid-UTF-8 index, id and routing (and any options that
 * esbulk__docopts_check accepts) must be one line of JSON that parses back
 * to exactly what it was given; a body line accepted by esbulk__body_line
 * must be one line that parses to the same JSON value as the body.
 *
 * Input: byte 0 the op and option flags, bytes 1..8 option values; then
 * index, id, routing and pipeline separated by NUL bytes (empty id/routing
 * mean none); the rest is the body. */
#include "murmur3.h"
#include "ndjson.h"

#include <esbulk.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FAIL(...) (fprintf(stderr, "fuzz_writer: " __VA_ARGS__), fputc('\n', stderr), abort())

static const char *field(const uint8_t **p, const uint8_t *end, size_t *n)
{
    const uint8_t *start = *p, *z = memchr(start, 0, (size_t)(end - start));

    if (z == NULL)
        z = end;
    *n = (size_t)(z - start);
    *p = z < end ? z + 1 : end;
    return (const char *)start;
}

static void same_string(const char *what, json_t *v, const char *s, size_t n)
{
    if (!json_is_string(v) || json_string_length(v) != n || memcmp(json_string_value(v), s, n))
        FAIL("%s does not read back as written (%zu bytes)", what, n);
}

/* one line: ends in "\n", no other CR or LF */
static void one_line(const char *what, const char *s, size_t n)
{
    if (n == 0 || s[n - 1] != '\n' || memchr(s, '\n', n - 1) || memchr(s, '\r', n))
        FAIL("%s is not one line", what);
}

static void check_action(const uint8_t *data, const char *index, size_t index_len,
                         const char *id, size_t id_len, const char *routing, size_t routing_len,
                         const char *pipeline, size_t pipeline_len)
{
    static const char *const names[] = {"index", "create", "update", "delete"};
    esbulk_op_t op = (esbulk_op_t)(data[0] & 3);
    esbulk_docopts_t *opts = esbulk_docopts_new();
    esbulk__buf_t buf;
    json_t *root, *meta, *v;
    json_error_t jerr;
    char pl[256], errstr[256];
    int64_t num = (int64_t)((uint64_t)data[1] << 56 | (uint64_t)data[2] << 40 |
                            (uint64_t)data[3] << 24 | data[4]);
    size_t expect_keys = 1;

    if (opts == NULL)
        abort();
    if (data[0] & 4)
        esbulk_docopts_set_version(opts, num, (data[0] & 8) ? ESBULK_VERSION_EXTERNAL_GTE
                                                            : ESBULK_VERSION_EXTERNAL);
    if (data[0] & 16)
        esbulk_docopts_set_if_seq_no(opts, num, (int64_t)data[5] - 2);
    if ((data[0] & 32) && pipeline_len < sizeof(pl) && !memchr(pipeline, 0, pipeline_len)) {
        memcpy(pl, pipeline, pipeline_len);
        pl[pipeline_len] = '\0';
        esbulk_docopts_set_pipeline(opts, pl);
    }
    if (data[0] & 64)
        esbulk_docopts_set_require_alias(opts, 1);
    if (data[0] & 128)
        esbulk_docopts_set_retry_on_conflict(opts, (int32_t)(data[6] << 16 | data[7]) - 2);
    if (esbulk__docopts_check(opts, op, id_len > 0, errstr, sizeof(errstr)) != ESBULK_OK) {
        esbulk_docopts_destroy(opts);
        return;
    }
    esbulk__buf_init(&buf, SIZE_MAX);
    if (esbulk__action_line_opts(&buf, op, index, index_len, id, id_len, routing, routing_len,
                                 opts) != ESBULK_OK)
        FAIL("action line refused");
    one_line("the action line", buf.data, buf.len);
    root = json_loadb(buf.data, buf.len, JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(root) || json_object_size(root) != 1)
        FAIL("action line is not one JSON object: %s: %.200s", jerr.text, buf.data);
    meta = json_object_get(root, names[op]);
    if (!json_is_object(meta))
        FAIL("no \"%s\" object", names[op]);
    same_string("_index", json_object_get(meta, "_index"), index, index_len);
    if (id_len) {
        same_string("_id", json_object_get(meta, "_id"), id, id_len);
        expect_keys++;
    }
    if (routing_len) {
        same_string("routing", json_object_get(meta, "routing"), routing, routing_len);
        expect_keys++;
    }
    if (opts->has_version) {
        v = json_object_get(meta, "version");
        if (!json_is_integer(v) || json_integer_value(v) != opts->version ||
            !json_is_string(json_object_get(meta, "version_type")))
            FAIL("version does not read back");
        expect_keys += 2;
    }
    if (opts->has_seq_no) {
        if (json_integer_value(json_object_get(meta, "if_seq_no")) != opts->if_seq_no ||
            json_integer_value(json_object_get(meta, "if_primary_term")) != opts->if_primary_term)
            FAIL("if_seq_no does not read back");
        expect_keys += 2;
    }
    if (opts->pipeline != NULL) {
        same_string("pipeline", json_object_get(meta, "pipeline"), opts->pipeline,
                    strlen(opts->pipeline));
        expect_keys++;
    }
    if (opts->require_alias) {
        if (!json_is_true(json_object_get(meta, "require_alias")))
            FAIL("require_alias does not read back");
        expect_keys++;
    }
    if (opts->retry_on_conflict >= 0) {
        if (json_integer_value(json_object_get(meta, "retry_on_conflict")) !=
            opts->retry_on_conflict)
            FAIL("retry_on_conflict does not read back");
        expect_keys++;
    }
    if (json_object_size(meta) != expect_keys)
        FAIL("%zu keys for %zu expected", json_object_size(meta), expect_keys);
    json_decref(root);
    esbulk__buf_free(&buf);
    esbulk_docopts_destroy(opts);
}

static void check_body(const char *body, size_t len, int validate)
{
    esbulk__buf_t buf;
    char errstr[256];
    json_error_t jerr;
    /* body.validate's rules in jansson's terms; jansson also refuses a
     * number past int64 or a double, which is valid JSON (and valid for
     * body.validate, which sends its digits) */
    json_t *in = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr), *out;
    int overflow = in == NULL && json_error_code(&jerr) == json_error_numeric_overflow;
    esbulk_err_t err;

    esbulk__buf_init(&buf, SIZE_MAX);
    if (esbulk__buf_adds(&buf, "x") != ESBULK_OK)
        abort();
    err = esbulk__body_line(&buf, body, len, validate, errstr, sizeof(errstr));
    if (err != ESBULK_OK) {
        if (buf.len != 1)
            FAIL("a refused body changed the buffer");
        /* jansson takes a raw NUL byte between tokens, which JSON does not
         * allow (nor does the server) */
        if (validate && json_is_object(in) && memchr(body, '\0', len) == NULL)
            FAIL("a JSON object was refused: %s", errstr);
    } else {
        one_line("the body line", buf.data + 1, buf.len - 1);
        out = json_loadb(buf.data + 1, buf.len - 1, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL,
                         NULL);
        if (validate && !json_is_object(in) && !overflow)
            FAIL("validation took a body jansson refuses: %s", jerr.text);
        /* removing raw CR/LF changes nothing that jansson reads */
        if (in != NULL && !json_equal(in, out))
            FAIL("the body line is not the same JSON as the body");
        json_decref(out);
    }
    json_decref(in);
    esbulk__buf_free(&buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p, *end = data + size;
    const char *index, *id, *routing, *pipeline;
    size_t index_len, id_len, routing_len, pipeline_len;

    if (size < 9)
        return 0;
    p = data + 9;
    index = field(&p, end, &index_len);
    id = field(&p, end, &id_len);
    routing = field(&p, end, &routing_len);
    pipeline = field(&p, end, &pipeline_len);
    /* the callers check UTF-8 first (esbulk_add refuses the rest) */
    if (esbulk__utf8_valid(index, index_len) && esbulk__utf8_valid(id, id_len) &&
        esbulk__utf8_valid(routing, routing_len) && esbulk__utf8_valid(pipeline, pipeline_len))
        check_action(data, index, index_len, id, id_len, routing, routing_len, pipeline,
                     pipeline_len);
    check_body((const char *)p, (size_t)(end - p), data[8] & 1);
    return 0;
}
