/*
 * A Kafka message to a document, without I/O (see ekf.h): the index
 * template, the _id, a field's text, the bulk format's action line, and the
 * dead letter's headers.
 */
#define _GNU_SOURCE 1
#include "ekf.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* What an index name may not hold (the server's rule), the template's own
 * characters aside. */
static int bad_index_char(unsigned char c)
{
    return c <= ' ' || strchr("\\/*?\"<>|,#:", c) != NULL || (c >= 'A' && c <= 'Z');
}

/* The length of a strftime conversion at s ("%Y", "%-d", "%Ey"...): 0 when
 * it is not one. */
static size_t conversion_len(const char *s)
{
    size_t n = 1;

    if (s[n] == '-' || s[n] == '_' || s[n] == '0' || s[n] == '^' || s[n] == '#')
        n++;
    if (s[n] == 'E' || s[n] == 'O')
        n++;
    if (s[n] != '\0' && strchr("aAbBcCdDeFgGhHIjmMnprRStTuUVwWxXyYzZ%", s[n]) != NULL)
        return n + 1;
    return 0;
}

int ekf_template_check(const char *tmpl, char *err, size_t err_size)
{
    if (tmpl == NULL || *tmpl == '\0') {
        snprintf(err, err_size, "the index template is empty");
        return -1;
    }
    if (*tmpl == '-' || *tmpl == '_' || *tmpl == '+') {
        snprintf(err, err_size, "index template \"%s\": an index name cannot start with %c",
                 tmpl, *tmpl);
        return -1;
    }
    for (const char *s = tmpl; *s;) {
        if (*s == '{') {
            if (strncmp(s, "{topic}", 7) == 0) {
                s += 7;
            } else if (strncmp(s, "{partition}", 11) == 0) {
                s += 11;
            } else {
                snprintf(err, err_size,
                         "index template \"%s\": unknown field at \"%.20s\" ({topic}, "
                         "{partition} and strftime's %%-conversions)", tmpl, s);
                return -1;
            }
        } else if (*s == '%') {
            size_t n = conversion_len(s);
            if (n == 0 || s[n - 1] == 'n' || s[n - 1] == 't') {
                snprintf(err, err_size, "index template \"%s\": bad conversion at \"%.6s\"",
                         tmpl, s);
                return -1;
            }
            s += n;
        } else if (*s == '}' || bad_index_char((unsigned char)*s)) {
            snprintf(err, err_size,
                     "index template \"%s\": an index name cannot hold '%c' (nor upper case, "
                     "spaces or any of \\/*?\"<>|,#:)", tmpl, *s);
            return -1;
        } else {
            s++;
        }
    }
    return 0;
}

int ekf_template_expand(const char *tmpl, const char *topic, int32_t partition, int64_t ts_ms,
                        char *out, size_t out_size)
{
    size_t o = 0;
    time_t secs = (time_t)(ts_ms >= 0 ? ts_ms / 1000 : 0);
    struct tm tm;
    int have_tm = 0;

    if (out_size == 0)
        return -1;
    for (const char *s = tmpl; *s;) {
        char piece[64];
        const char *add = piece;
        size_t add_len;

        if (strncmp(s, "{topic}", 7) == 0) {
            add = topic;
            add_len = strlen(topic);
            s += 7;
        } else if (strncmp(s, "{partition}", 11) == 0) {
            add_len = (size_t)snprintf(piece, sizeof(piece), "%" PRId32, partition);
            s += 11;
        } else if (*s == '%' && conversion_len(s) > 0) {
            char fmt[8];
            size_t n = conversion_len(s);

            if (!have_tm) {
                gmtime_r(&secs, &tm);
                have_tm = 1;
            }
            memcpy(fmt, s, n);
            fmt[n] = '\0';
            add_len = strftime(piece, sizeof(piece), fmt, &tm);
            s += n;
        } else {
            add = s;
            add_len = 1;
            s++;
        }
        if (o + add_len >= out_size)
            return -1;
        for (size_t i = 0; i < add_len; i++)
            out[o++] = (char)tolower((unsigned char)add[i]);
    }
    out[o] = '\0';
    return o > 255 ? -1 : 0;
}

int ekf_offset_id(const char *topic, int32_t partition, int64_t offset, char *out,
                  size_t out_size)
{
    return snprintf(out, out_size, "%s-%" PRId32 "-%" PRId64, topic, partition, offset);
}

int ekf_field_text(const json_t *obj, const char *field, char **out, size_t *out_len, char *err,
                   size_t err_size)
{
    const json_t *v = json_is_object(obj) ? json_object_get(obj, field) : NULL;
    char num[32];
    const char *s;
    size_t n;

    *out = NULL;
    if (json_is_string(v)) {
        s = json_string_value(v);
        n = json_string_length(v);
    } else if (json_is_integer(v)) {
        n = (size_t)snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        s = num;
    } else {
        snprintf(err, err_size, "field \"%s\" is %s", field,
                 v == NULL              ? "absent"
                 : json_is_null(v)      ? "null"
                                        : "neither a string nor an integer");
        return -1;
    }
    if (n == 0) {
        snprintf(err, err_size, "field \"%s\" is the empty string", field);
        return -1;
    }
    if ((*out = malloc(n + 1)) == NULL)
        return -2;
    memcpy(*out, s, n);
    (*out)[n] = '\0';
    *out_len = n;
    return 0;
}

void ekf_bulk_free(ekf_bulk_t *b)
{
    free(b->index);
    free(b->id);
    free(b->routing);
    free(b->pipeline);
    memset(b, 0, sizeof(*b));
}

/* A meta string of the action (NULL when absent). 0, -1 not a string, -2
 * out of memory. */
static int meta_string(const json_t *meta, const char *name, char **out)
{
    const json_t *v = json_object_get(meta, name);

    *out = NULL;
    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return -1;
    if ((*out = strndup(json_string_value(v), json_string_length(v))) == NULL)
        return -2;
    return 0;
}

static int64_t meta_int(const json_t *meta, const char *name, int *bad)
{
    const json_t *v = json_object_get(meta, name);

    if (v == NULL)
        return -1;
    if (!json_is_integer(v) || json_integer_value(v) < 0) {
        *bad = 1;
        return -1;
    }
    return (int64_t)json_integer_value(v);
}

int ekf_bulk_parse(const char *value, size_t len, ekf_bulk_t *out, char *err, size_t err_size)
{
    static const char *const ops[] = {"index", "create", "update", "delete"};
    const char *nl = memchr(value, '\n', len);
    size_t alen = nl ? (size_t)(nl - value) : len;
    json_error_t jerr;
    json_t *action = json_loadb(value, alen, 0, &jerr);
    const char *opname = NULL, *key;
    json_t *meta = NULL, *v;
    int rc = -1, bad = 0;

    memset(out, 0, sizeof(*out));
    out->version = out->if_seq_no = out->if_primary_term = -1;
    out->retry_on_conflict = -1;
    if (action == NULL) {
        snprintf(err, err_size, "the action line is not JSON: %s", jerr.text);
        return -1;
    }
    if (!json_is_object(action) || json_object_size(action) != 1) {
        snprintf(err, err_size, "the action line is not one {\"OP\":{...}} object");
        goto out;
    }
    json_object_foreach(action, key, v) {
        opname = key;
        meta = v;
    }
    out->op = ESBULK_OP_INDEX;
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        if (strcmp(opname, ops[i]) == 0) {
            out->op = (esbulk_op_t)i;
            opname = NULL;
            break;
        }
    if (opname != NULL || !json_is_object(meta)) {
        snprintf(err, err_size, "the action line's operation is not index, create, update or "
                                "delete with an object");
        goto out;
    }
    json_object_foreach(meta, key, v) {
        if (strcmp(key, "_index") && strcmp(key, "_id") && strcmp(key, "routing") &&
            strcmp(key, "_routing") && strcmp(key, "pipeline") && strcmp(key, "version") &&
            strcmp(key, "version_type") && strcmp(key, "if_seq_no") &&
            strcmp(key, "if_primary_term") && strcmp(key, "require_alias") &&
            strcmp(key, "retry_on_conflict")) {
            snprintf(err, err_size, "the action line's key \"%s\" is not supported", key);
            goto out;
        }
    }
    int e = meta_string(meta, "_index", &out->index);
    if (e == 0)
        e = meta_string(meta, "_id", &out->id);
    if (e == 0)
        e = meta_string(meta, json_object_get(meta, "routing") ? "routing" : "_routing",
                        &out->routing);
    if (e == 0)
        e = meta_string(meta, "pipeline", &out->pipeline);
    if (e == -2) {
        rc = -2;
        goto out;
    }
    out->version = meta_int(meta, "version", &bad);
    out->if_seq_no = meta_int(meta, "if_seq_no", &bad);
    out->if_primary_term = meta_int(meta, "if_primary_term", &bad);
    int64_t roc = meta_int(meta, "retry_on_conflict", &bad);
    out->retry_on_conflict = roc > 1000000 ? (bad = 1, -1) : (int32_t)roc;
    v = json_object_get(meta, "version_type");
    if (v != NULL) {
        const char *vt = json_string_value(v);
        if (vt != NULL && strcmp(vt, "external") == 0)
            out->version_type = ESBULK_VERSION_EXTERNAL;
        else if (vt != NULL && strcmp(vt, "external_gte") == 0)
            out->version_type = ESBULK_VERSION_EXTERNAL_GTE;
        else
            bad = 1;
    }
    v = json_object_get(meta, "require_alias");
    if (v != NULL) {
        if (!json_is_boolean(v))
            bad = 1;
        out->require_alias = json_is_true(v);
    }
    if (e != 0 || bad || (out->version >= 0) != (out->version_type != 0) ||
        (out->if_seq_no >= 0) != (out->if_primary_term >= 0)) {
        snprintf(err, err_size, "the action line has a bad value (a meta string that is not "
                                "a string, a version without its version_type...)");
        goto out;
    }
    if (out->op == ESBULK_OP_DELETE) {
        out->source = NULL;
    } else {
        if (nl == NULL || nl + 1 == value + len) {
            snprintf(err, err_size, "the source line is missing after the action line");
            goto out;
        }
        out->source = nl + 1;
        out->source_len = len - alen - 1;
        /* one line: a trailing newline is not part of it */
        while (out->source_len > 0 && (out->source[out->source_len - 1] == '\n' ||
                                       out->source[out->source_len - 1] == '\r'))
            out->source_len--;
    }
    rc = 0;
out:
    json_decref(action);
    if (rc != 0)
        ekf_bulk_free(out);
    return rc;
}

void ekf_dl_headers(ekf_header_t out[EKF_DL_HEADERS], ekf_dl_nums_t *nums, const char *reason,
                    int32_t status, const char *error_type, const char *topic,
                    int32_t partition, int64_t offset)
{
    snprintf(nums->status, sizeof(nums->status), "%" PRId32, status);
    snprintf(nums->partition, sizeof(nums->partition), "%" PRId32, partition);
    snprintf(nums->offset, sizeof(nums->offset), "%" PRId64, offset);
    out[0].name = "esbulk.reason";
    out[0].value = reason != NULL ? reason : "";
    out[1].name = "esbulk.status";
    out[1].value = nums->status;
    out[2].name = "esbulk.error_type";
    out[2].value = error_type != NULL ? error_type : "";
    out[3].name = "esbulk.topic";
    out[3].value = topic;
    out[4].name = "esbulk.partition";
    out[4].value = nums->partition;
    out[5].name = "esbulk.offset";
    out[5].value = nums->offset;
}

static void plan_refuse(ekf_plan_t *pl, const char *reason, const char *type)
{
    pl->kind = EKF_PLAN_REFUSE;
    pl->reason = reason;
    pl->error_type = type;
}

void ekf_plan_refuse_index(ekf_plan_t *pl)
{
    plan_refuse(pl, "the index name is longer than 255 bytes", "invalid_index_name");
}

void ekf_plan_free(ekf_plan_t *pl)
{
    free(pl->field_id);
    free(pl->field_routing);
    ekf_bulk_free(&pl->bulk);
    pl->field_id = pl->field_routing = NULL;
}

int ekf_plan(ekf_plan_t *pl, const ekf_opts_t *o, const char *topic, int32_t partition,
             int64_t offset, const char *key, size_t key_len, const char *value,
             size_t value_len)
{
    json_t *obj = NULL;
    int rc = 0, e;

    memset(pl, 0, sizeof(*pl));
    pl->kind = EKF_PLAN_ADD;
    pl->op = ESBULK_OP_INDEX;
    pl->version = pl->if_seq_no = pl->if_primary_term = -1;
    pl->retry_on_conflict = -1;
    if (value == NULL) {
        /* a tombstone: deletes the document of its key with --id key;
         * under the other modes it names no document, and is skipped */
        if (o->id_mode != EKF_ID_KEY || key == NULL || key_len == 0) {
            pl->kind = EKF_PLAN_SKIP;
            return 0;
        }
        pl->op = ESBULK_OP_DELETE;
        pl->id = key;
        pl->id_len = key_len;
        /* its document was routed by a field of a value it does not have:
         * a delete by _id alone would look in the wrong shard */
        if (o->routing_field != NULL) {
            plan_refuse(pl, "a tombstone has no value to take the routing field from",
                        "invalid_routing");
            return 0;
        }
    } else if (o->format == EKF_FMT_BULK) {
        ekf_bulk_t *b = &pl->bulk;
        e = ekf_bulk_parse(value, value_len, b, pl->why, sizeof(pl->why));
        if (e == -2)
            return -2;
        if (e == -1) {
            plan_refuse(pl, pl->why, "invalid_action");
            return 0;
        }
        pl->op = b->op;
        pl->body = b->source;
        pl->body_len = b->source_len;
        pl->index = b->index;
        pl->pipeline = b->pipeline;
        if (b->id != NULL) {
            pl->id = b->id;
            pl->id_len = strlen(b->id);
        }
        if (b->routing != NULL) {
            pl->routing = b->routing;
            pl->routing_len = strlen(b->routing);
        }
        pl->version = b->version;
        pl->version_type = b->version_type;
        pl->if_seq_no = b->if_seq_no;
        pl->if_primary_term = b->if_primary_term;
        pl->require_alias = b->require_alias;
        pl->retry_on_conflict = b->retry_on_conflict;
    } else {
        pl->body = value;
        pl->body_len = value_len;
    }
    /* the source's fields, for --id field: and --routing-field */
    if (pl->body != NULL && ((o->id_mode == EKF_ID_FIELD && pl->id == NULL) ||
                             (o->routing_field != NULL && pl->routing == NULL))) {
        json_error_t jerr;
        obj = json_loadb(pl->body, pl->body_len, 0, &jerr);
        if (!json_is_object(obj)) {
            snprintf(pl->why, sizeof(pl->why), "not one JSON object%s%s", obj ? "" : ": ",
                     obj ? "" : jerr.text);
            plan_refuse(pl, pl->why, "invalid_json");
            goto out;
        }
    }
    if (pl->id == NULL) {
        if (o->id_mode == EKF_ID_OFFSET) {
            int n = ekf_offset_id(topic, partition, offset, pl->idbuf, sizeof(pl->idbuf));
            if (n < 0 || n >= (int)sizeof(pl->idbuf)) {
                plan_refuse(pl, "the topic's name makes an _id too long", "invalid_id");
                goto out;
            }
            pl->id = pl->idbuf;
            pl->id_len = (size_t)n;
        } else if (o->id_mode == EKF_ID_KEY) {
            if (key == NULL || key_len == 0) {
                plan_refuse(pl, "the message has no key (--id key)", "invalid_id");
                goto out;
            }
            pl->id = key;
            pl->id_len = key_len;
        } else if (pl->body == NULL) {
            plan_refuse(pl, "a delete without _id in its action line (--id field)",
                        "invalid_id");
            goto out;
        } else {
            e = ekf_field_text(obj, o->id_field, &pl->field_id, &pl->id_len, pl->why,
                               sizeof(pl->why));
            if (e == -2) {
                rc = -2;
                goto out;
            }
            if (e == -1) {
                plan_refuse(pl, pl->why, "invalid_id");
                goto out;
            }
            pl->id = pl->field_id;
        }
    }
    if (pl->routing == NULL && o->routing_field != NULL && pl->body != NULL) {
        e = ekf_field_text(obj, o->routing_field, &pl->field_routing, &pl->routing_len,
                           pl->why, sizeof(pl->why));
        if (e == -2) {
            rc = -2;
            goto out;
        }
        if (e == -1) {
            plan_refuse(pl, pl->why, "invalid_routing");
            goto out;
        }
        pl->routing = pl->field_routing;
    }
    /* the offset as an external version: a message sent again after a
     * newer one of its key was indexed cannot undo it */
    if (o->versioning == EKF_VERSION_OFFSET && pl->version < 0 && pl->if_seq_no < 0 &&
        (pl->op == ESBULK_OP_INDEX || pl->op == ESBULK_OP_DELETE)) {
        pl->version = offset;
        pl->version_type = ESBULK_VERSION_EXTERNAL_GTE;
    }
    pl->has_opts = pl->version >= 0 || pl->if_seq_no >= 0 || pl->pipeline != NULL ||
                   pl->require_alias || pl->retry_on_conflict >= 0;
out:
    json_decref(obj);
    return rc;
}
