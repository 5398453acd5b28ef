/*
 * --import-mode: before the snapshot, each index's refresh_interval,
 * number_of_replicas and translog durability are saved in the state file
 * and set to -1, 0 and async; after the snapshot (also after SIGINT/SIGTERM,
 * and at the next start after a run that died) the saved values are put
 * back. A setting that was not set on the index is saved as null, which
 * resets it to the default. These requests go through esbulk_request(3),
 * outside the engine's bulk requests but with the handle's credentials,
 * TLS settings and headers.
 */
#include "job.h"

#include <stdlib.h>
#include <string.h>

static const char *keys[3] = {"refresh_interval", "number_of_replicas", "translog.durability"};

/* One request through the job's libesbulk handle (esbulk_request(3)): its
 * URLs, credentials (signed with auth.aws.*), TLS settings and headers, as
 * the documents go. *status gets the HTTP status; the body in out. */
static int http_t(esm_job_t *job, const char *method, const char *path, const char *body,
                  long *status, esm_buf_t *out, long timeout_s)
{
    char errstr[512], *answer = NULL;
    size_t len = 0;
    int32_t st = 0;

    out->len = 0;
    if (out->data)
        out->data[0] = '\0';
    esbulk_err_t err = esbulk_request(job->eb, method, path, body, body ? strlen(body) : 0,
                                      (int32_t)(timeout_s * 1000), &st, &answer, &len, errstr,
                                      sizeof(errstr));
    *status = st;
    if (err != ESBULK_OK) {
        esm_log("%s %s: %s", method, path, errstr);
        return -1;
    }
    int rc = len > 0 && esm_buf_add(out, answer, len) ? -1 : 0;
    esbulk_free(answer);
    return rc;
}

static int http(esm_job_t *job, const char *method, const char *path, const char *body,
                long *status, esm_buf_t *out)
{
    return http_t(job, method, path, body, status, out, 60L);
}

static int put_settings(esm_job_t *job, const char *index, json_t *values)
{
    json_t *o = json_object();
    json_object_set(o, "index", values);
    char *body = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    char path[1024];
    snprintf(path, sizeof(path), "/%s/_settings", index);
    esm_buf_t out = {0};
    long status = 0;
    int rc = http(job, "PUT", path, body, &status, &out);
    if (rc == 0 && status != 200) {
        esm_log("PUT %s: HTTP %ld: %.300s", path, status, out.data ? out.data : "");
        rc = -1;
    }
    free(body);
    esm_buf_free(&out);
    return rc;
}

int esm_import_restore(esm_job_t *job)
{
    json_t *imp = json_object_get(job->state, "import");
    if (!imp)
        return 0;
    const char *index;
    json_t *saved;
    int rc = 0;
    json_object_foreach(imp, index, saved) {
        if (put_settings(job, index, saved))
            rc = -1;
        else if (!job->quiet)
            esm_log("%s: settings restored", index);
    }
    if (rc == 0) {
        json_object_del(job->state, "import");
        job->state_dirty = 1;
    }
    return rc;
}

int esm_import_begin(esm_job_t *job)
{
    json_t *imp = json_object_get(job->state, "import");
    if (!imp) {
        imp = json_object();
        json_object_set_new(job->state, "import", imp);
    }
    for (int i = 0; i < job->ntables; i++) {
        const char *index = job->tables[i].index;
        if (json_object_get(imp, index))
            continue; /* saved by an earlier run that died: keep its values */
        char path[1024];
        snprintf(path, sizeof(path), "/%s/_settings?flat_settings=true", index);
        esm_buf_t out = {0};
        long status = 0;
        if (http(job, "GET", path, NULL, &status, &out)) {
            esm_buf_free(&out);
            return -1;
        }
        if (status == 404) {
            /* created now, so that its settings can be set */
            long st2 = 0;
            char p2[1024];
            snprintf(p2, sizeof(p2), "/%s", index);
            if (http(job, "PUT", p2, "{}", &st2, &out) || st2 != 200) {
                esm_log("cannot create index %s: HTTP %ld", index, st2);
                esm_buf_free(&out);
                return -1;
            }
            if (http(job, "GET", path, NULL, &status, &out)) {
                esm_buf_free(&out);
                return -1;
            }
        }
        json_t *r = status == 200 ? json_loadb(out.data, out.len, 0, NULL) : NULL;
        esm_buf_free(&out);
        if (!r) {
            esm_log("GET %s: HTTP %ld", path, status);
            return -1;
        }
        /* the answer is keyed by the concrete index (an alias resolves) */
        const char *concrete;
        json_t *v, *settings = NULL;
        json_object_foreach(r, concrete, v) {
            settings = json_object_get(v, "settings");
            break;
        }
        json_t *saved = json_object();
        for (int k = 0; k < 3; k++) {
            char flat[64];
            snprintf(flat, sizeof(flat), "index.%s", keys[k]);
            json_t *val = json_object_get(settings, flat);
            json_object_set(saved, keys[k], val ? val : json_null());
        }
        json_decref(r);
        json_object_set_new(imp, index, saved);
        job->state_dirty = 1;
    }
    /* saved before anything is changed */
    esm_serve(job, 0, 1);
    if (job->fatal)
        return -1;
    json_t *fast = json_object();
    json_object_set_new(fast, "refresh_interval", json_string("-1"));
    json_object_set_new(fast, "number_of_replicas", json_integer(0));
    json_object_set_new(fast, "translog.durability", json_string("async"));
    int rc = 0;
    for (int i = 0; i < job->ntables && rc == 0; i++)
        rc = put_settings(job, job->tables[i].index, fast);
    json_decref(fast);
    if (rc == 0 && !job->quiet)
        esm_log("import mode: refresh_interval -1, number_of_replicas 0, translog async");
    return rc;
}

/* ------------------------------------------------------------------------
 * --create-index and --forcemerge.
 */
json_t *esm_field_mapping(const esm_job_t *job, const esm_col_t *c)
{
    const char *st = c->sqltype ? c->sqltype : "";
    int is_unsigned = strstr(st, "unsigned") != NULL;
    const char *type = "keyword";
    json_t *m = json_object();
    switch (c->kind) {
    case ESM_K_INT:
        if (!strncmp(st, "bigint", 6))
            type = is_unsigned ? "unsigned_long" : "long";
        else if (!strncmp(st, "int", 3))
            type = is_unsigned ? "long" : "integer";
        else
            type = "integer"; /* tinyint, smallint, mediumint: signed or not */
        break;
    case ESM_K_BOOL: type = "boolean"; break;
    case ESM_K_FLOAT: type = !strncmp(st, "float", 5) ? "float" : "double"; break;
    case ESM_K_DECIMAL: {
        if (!job->map.decimal_number) {
            type = "keyword"; /* the exact digits, as sent */
            break;
        }
        int p = 10, sc = 0;
        const char *paren = strchr(st, '(');
        if (paren)
            sscanf(paren, "(%d,%d)", &p, &sc);
        if (p <= 18 && sc <= 18) {
            /* exact at the column's scale: value * 10^scale in a long */
            double f = 1;
            for (int i = 0; i < sc; i++)
                f *= 10;
            if (sc == 0) {
                type = "long";
            } else {
                type = "scaled_float";
                json_object_set_new(m, "scaling_factor", json_real(f));
            }
        } else {
            type = "double";
        }
        break;
    }
    case ESM_K_DATE: case ESM_K_DATETIME: type = "date"; break;
    case ESM_K_TIME: type = "keyword"; break;
    case ESM_K_YEAR: type = "short"; break;
    case ESM_K_BIT: type = "unsigned_long"; break;
    case ESM_K_ENUM: case ESM_K_SET: type = "keyword"; break;
    case ESM_K_JSON: type = "object"; break;
    case ESM_K_BINARY: type = "binary"; break;
    case ESM_K_TEXT: {
        type = "text";
        json_t *kw = json_object();
        json_object_set_new(kw, "type", json_string("keyword"));
        json_object_set_new(kw, "ignore_above", json_integer(256));
        json_t *fields = json_object();
        json_object_set_new(fields, "keyword", kw);
        json_object_set_new(m, "fields", fields);
        break;
    }
    }
    json_object_set_new(m, "type", json_string(type));
    return m;
}

int esm_create_indices(esm_job_t *job)
{
    for (int i = 0; i < job->ntables; i++) {
        esm_table_t *t = &job->tables[i];
        char path[1024];
        snprintf(path, sizeof(path), "/%s", t->index);
        esm_buf_t out = {0};
        long status = 0;
        if (http(job, "HEAD", path, NULL, &status, &out)) {
            esm_buf_free(&out);
            return -1;
        }
        if (status == 200) { /* there already (an index, alias or data stream) */
            esm_buf_free(&out);
            continue;
        }
        json_t *props = json_object();
        for (int j = 0; j < t->ncols; j++)
            json_object_set_new(props, t->cols[j].field, esm_field_mapping(job, &t->cols[j]));
        json_t *body = json_object();
        json_t *mappings = json_object();
        json_object_set_new(mappings, "properties", props);
        json_object_set_new(body, "mappings", mappings);
        if (job->shards) {
            json_t *idx = json_object();
            json_object_set_new(idx, "number_of_shards", json_integer(job->shards));
            json_t *settings = json_object();
            json_object_set_new(settings, "index", idx);
            json_object_set_new(body, "settings", settings);
        }
        char *text = json_dumps(body, JSON_COMPACT);
        json_decref(body);
        int rc = http(job, "PUT", path, text, &status, &out);
        free(text);
        if (rc == 0 && status != 200 &&
            !(status == 400 && out.data && strstr(out.data, "resource_already_exists_exception"))) {
            esm_log("cannot create index %s: HTTP %ld: %.300s", t->index, status,
                    out.data ? out.data : "");
            rc = -1;
        } else if (rc == 0 && status == 200 && !job->quiet) {
            esm_log("%s: created (%d fields mapped from %s)", t->index, t->ncols, t->fullname);
        }
        esm_buf_free(&out);
        if (rc)
            return -1;
    }
    return 0;
}

int esm_forcemerge(esm_job_t *job)
{
    for (int i = 0; i < job->ntables; i++) {
        const char *index = job->tables[i].index;
        int seen = 0;
        for (int j = 0; j < i; j++)
            seen |= !strcmp(job->tables[j].index, index);
        if (seen)
            continue;
        char path[1024];
        snprintf(path, sizeof(path), "/%s/_forcemerge?max_num_segments=%d", index,
                 job->forcemerge);
        esm_buf_t out = {0};
        long status = 0;
        int64_t t0 = esm_now_ns();
        /* a task, waited for a second at a time: a signal is seen within
         * one, and no request waits for the whole merge */
        char task_path[1100];
        snprintf(task_path, sizeof(task_path), "%s&wait_for_completion=false", path);
        int rc = http(job, "POST", task_path, NULL, &status, &out);
        json_t *task = rc == 0 && status == 200 ? json_loadb(out.data, out.len, 0, NULL) : NULL;
        const char *id = json_string_value(json_object_get(task, "task"));
        if (id) {
            char tp[512];
            snprintf(tp, sizeof(tp), "/_tasks/%s?wait_for_completion=true&timeout=1s", id);
            for (;;) {
                if (esm_interrupted) {
                    json_decref(task);
                    esm_buf_free(&out);
                    esm_log("%s: forcemerge left to the cluster (stopped by a signal)", index);
                    return 0;
                }
                /* while it runs, the wait's timeout: 500 timeout_exception;
                 * 200 when done */
                if ((rc = http(job, "GET", tp, NULL, &status, &out)) != 0 || status != 500 ||
                    !out.data || !strstr(out.data, "timeout_exception"))
                    break;
            }
            json_t *t = rc == 0 && status == 200 ? json_loadb(out.data, out.len, 0, NULL) : NULL;
            json_t *e = json_object_get(t, "error");
            if (t && !json_is_true(json_object_get(t, "completed")))
                status = 500;
            else if (e)
                status = 500, esm_log("%s: forcemerge: %.300s", index, out.data);
            json_decref(t);
        }
        json_decref(task);
        if (rc == 0 && status != 200) {
            esm_log("POST %s: HTTP %ld: %.300s", path, status, out.data ? out.data : "");
            rc = -1;
        } else if (rc == 0 && !job->quiet) {
            esm_log("%s: merged down to %d segment%s per shard in %.1f s", index, job->forcemerge,
                    job->forcemerge == 1 ? "" : "s", (double)(esm_now_ns() - t0) / 1e9);
        }
        esm_buf_free(&out);
        if (rc)
            return -1;
    }
    return 0;
}
