/*
 * esbulk-kafka's settings (see ekf.h): one table of long options, used by
 * the command line (getopt), the configuration file and --set alike, then
 * kafka.* keys for librdkafka and every other key for libesbulk.
 */
#define _GNU_SOURCE 1
#include "ekf.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The libesbulk defaults of the sink (--set and the file override them):
 * adds never wait inside the library (the main loop pauses the partitions
 * and serves results instead), JSON is checked at add time (a bad message is
 * refused with its offset, not as a server "failed to parse"), and the
 * buffer is kept small enough for a member to stay within 100 MB. */
static const char *const sink_defaults[][2] = {
    {"enqueue.timeout.ms", "0"},
    {"body.validate", "true"},
    {"buffer.max.bytes", "8388608"},
};

int ekf_opts_init(ekf_opts_t *o)
{
    char err[256];

    memset(o, 0, sizeof(*o));
    o->revoke_timeout_ms = 30000;
    o->broker_timeout_ms = 30000;
    o->commit_interval_ms = 1000;
    o->drain_timeout_ms = 30000;
    if ((o->index = strdup("{topic}")) == NULL || (o->conf = esbulk_conf_new()) == NULL) {
        ekf_opts_free(o);
        return -1;
    }
    for (size_t i = 0; i < sizeof(sink_defaults) / sizeof(sink_defaults[0]); i++)
        if (esbulk_conf_set(o->conf, sink_defaults[i][0], sink_defaults[i][1], err,
                            sizeof(err)) != ESBULK_OK) {
            ekf_opts_free(o);
            return -1;
        }
    return 0;
}

void ekf_opts_free(ekf_opts_t *o)
{
    free(o->group);
    for (int i = 0; i < o->ntopics; i++)
        free(o->topics[i]);
    free(o->topics);
    free(o->urls);
    free(o->index);
    free(o->id_field);
    free(o->routing_field);
    free(o->dead_letter_topic);
    free(o->static_id);
    for (int i = 0; i < o->nkafka; i++) {
        free(o->kafka[i].key);
        free(o->kafka[i].value);
    }
    free(o->kafka);
    esbulk_conf_destroy(o->conf);
    memset(o, 0, sizeof(*o));
}

static int set_str(char **dst, const char *value)
{
    char *s = strdup(value);

    if (s == NULL)
        return -2;
    free(*dst);
    *dst = s;
    return 0;
}

static int parse_bool(const char *v, int *out)
{
    if (!strcmp(v, "true") || !strcmp(v, "1") || !strcmp(v, "yes") || !*v)
        *out = 1;
    else if (!strcmp(v, "false") || !strcmp(v, "0") || !strcmp(v, "no"))
        *out = 0;
    else
        return -1;
    return 0;
}

static int parse_int(const char *v, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    long long n;

    errno = 0;
    n = strtoll(v, &end, 10);
    if (errno || end == v || *end || n < lo || n > hi)
        return -1;
    *out = n;
    return 0;
}

/* Appends to a list; a command-line value first drops the file's list. */
static int list_add(char ***list, int *n, int *from_cli_seen, int from_cli, const char *value)
{
    if (from_cli && !*from_cli_seen) {
        for (int i = 0; i < *n; i++)
            free((*list)[i]);
        *n = 0;
        *from_cli_seen = 1;
    }
    char **grown = realloc(*list, sizeof(char *) * (size_t)(*n + 1));
    if (grown == NULL)
        return -2;
    *list = grown;
    if ((grown[*n] = strdup(value)) == NULL)
        return -2;
    (*n)++;
    return 0;
}

static int add_url(ekf_opts_t *o, const char *value, int from_cli)
{
    if (from_cli && !o->urls_from_cli) {
        free(o->urls);
        o->urls = NULL;
        o->urls_from_cli = 1;
    }
    size_t have = o->urls ? strlen(o->urls) : 0;
    char *s = realloc(o->urls, have + strlen(value) + 2);
    if (s == NULL)
        return -2;
    if (have)
        s[have++] = ',';
    strcpy(s + have, value);
    o->urls = s;
    return 0;
}

static int add_kafka(ekf_opts_t *o, const char *key, const char *value)
{
    for (int i = 0; i < o->nkafka; i++)
        if (strcmp(o->kafka[i].key, key) == 0)
            return set_str(&o->kafka[i].value, value);
    ekf_kv_t *grown = realloc(o->kafka, sizeof(*grown) * (size_t)(o->nkafka + 1));
    if (grown == NULL)
        return -2;
    o->kafka = grown;
    grown[o->nkafka].key = strdup(key);
    grown[o->nkafka].value = strdup(value);
    if (grown[o->nkafka].key == NULL || grown[o->nkafka].value == NULL) {
        free(grown[o->nkafka].key);
        free(grown[o->nkafka].value);
        return -2;
    }
    o->nkafka++;
    return 0;
}

int ekf_opts_set(ekf_opts_t *o, const char *key, const char *value, int from_cli, char *err,
                 size_t err_size)
{
    int64_t n;
    int b;

#define BAD(...) do { snprintf(err, err_size, __VA_ARGS__); return -1; } while (0)
    if (!strcmp(key, "brokers"))
        return add_kafka(o, "bootstrap.servers", value);
    if (!strcmp(key, "group")) {
        if (!*value)
            BAD("group: an empty group id");
        return set_str(&o->group, value);
    }
    if (!strcmp(key, "topic")) {
        if (!*value)
            BAD("topic: an empty name");
        return list_add(&o->topics, &o->ntopics, &o->topics_from_cli, from_cli, value);
    }
    if (!strcmp(key, "url")) {
        if (!*value)
            BAD("url: an empty URL");
        return add_url(o, value, from_cli);
    }
    if (!strcmp(key, "index")) {
        if (ekf_template_check(value, err, err_size))
            return -1;
        return set_str(&o->index, value);
    }
    if (!strcmp(key, "id")) {
        if (!strcmp(value, "offset")) {
            o->id_mode = EKF_ID_OFFSET;
        } else if (!strcmp(value, "key")) {
            o->id_mode = EKF_ID_KEY;
        } else if (!strncmp(value, "field:", 6) && value[6]) {
            o->id_mode = EKF_ID_FIELD;
            return set_str(&o->id_field, value + 6);
        } else {
            BAD("id: offset, key or field:NAME, not \"%s\"", value);
        }
        return 0;
    }
    if (!strcmp(key, "routing-field")) {
        if (!*value)
            BAD("routing-field: an empty name");
        return set_str(&o->routing_field, value);
    }
    if (!strcmp(key, "format")) {
        if (!strcmp(value, "json"))
            o->format = EKF_FMT_JSON;
        else if (!strcmp(value, "bulk"))
            o->format = EKF_FMT_BULK;
        else
            BAD("format: json or bulk, not \"%s\"", value);
        return 0;
    }
    if (!strcmp(key, "dead-letter-topic")) {
        if (!*value)
            BAD("dead-letter-topic: an empty name");
        return set_str(&o->dead_letter_topic, value);
    }
    if (!strcmp(key, "on-error")) {
        if (!strcmp(value, "dead-letter"))
            o->on_error = EKF_ON_ERROR_DEAD;
        else if (!strcmp(value, "stop"))
            o->on_error = EKF_ON_ERROR_STOP;
        else
            BAD("on-error: dead-letter or stop, not \"%s\"", value);
        return 0;
    }
    if (!strcmp(key, "versioning")) {
        if (!strcmp(value, "none"))
            o->versioning = EKF_VERSION_NONE;
        else if (!strcmp(value, "offset"))
            o->versioning = EKF_VERSION_OFFSET;
        else
            BAD("versioning: offset or none, not \"%s\"", value);
        return 0;
    }
    if (!strcmp(key, "static-id")) {
        if (!*value)
            BAD("static-id: an empty id");
        return set_str(&o->static_id, value);
    }
    struct {
        const char *name;
        int64_t lo, hi, *dst;
    } ints[] = {
        {"revoke-timeout", 0, 3600000, &o->revoke_timeout_ms},
        {"stats-interval", 0, 86400, &o->stats_interval_s},
        {"broker-timeout", 100, 3600000, &o->broker_timeout_ms},
        {"commit-interval", 10, 3600000, &o->commit_interval_ms},
        {"drain-timeout", 0, 3600000, &o->drain_timeout_ms},
    };
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
        if (!strcmp(key, ints[i].name)) {
            if (parse_int(value, ints[i].lo, ints[i].hi, &n))
                BAD("%s: an integer from %lld to %lld, not \"%s\"", key, (long long)ints[i].lo,
                    (long long)ints[i].hi, value);
            *ints[i].dst = n;
            return 0;
        }
    if (!strcmp(key, "exit-at-end") || !strcmp(key, "quiet")) {
        if (parse_bool(value, &b))
            BAD("%s: true or false, not \"%s\"", key, value);
        if (key[0] == 'e')
            o->exit_at_end = b;
        else
            o->quiet = b;
        return 0;
    }
    if (!strcmp(key, "config") || !strcmp(key, "set") || !strcmp(key, "help"))
        BAD("%s: a command-line option only", key);
    if (!strncmp(key, "kafka.", 6)) {
        const char *k = key + 6;
        if (!*k)
            BAD("kafka.: a librdkafka property name is missing");
        /* the sink stores the offsets it commits: what librdkafka would
         * store on its own is not known to be indexed */
        if (!strcmp(k, "enable.auto.commit") || !strcmp(k, "enable.auto.offset.store"))
            BAD("%s: set by the sink, which commits only what is indexed", key);
        if (!strcmp(k, "auto.commit.interval.ms"))
            BAD("%s: give --commit-interval", key);
        if (!strcmp(k, "group.id") || !strcmp(k, "group.instance.id"))
            BAD("%s: give --group / --static-id", key);
        return add_kafka(o, k, value);
    }
    esbulk_err_t e = esbulk_conf_set(o->conf, key, value, err, err_size);
    if (e == ESBULK_ERR_NOMEM)
        return -2;
    if (e == ESBULK_ERR_UNKNOWN_KEY) {
        snprintf(err, err_size, "unknown key \"%s\" (an option by its long name, a kafka.* "
                 "key for librdkafka, or a libesbulk key: esbulk-config(7))", key);
        return -1;
    }
    return e == ESBULK_OK ? 0 : -1;
#undef BAD
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

int ekf_opts_load(ekf_opts_t *o, const char *path, char *err, size_t err_size)
{
    FILE *fp = fopen(path, "r");
    char *line = NULL, why[400];
    size_t cap = 0;
    int lineno = 0, rc = 0;

    if (fp == NULL) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        return -1;
    }
    while (rc == 0 && getline(&line, &cap, fp) >= 0) {
        lineno++;
        char *s = trim(line), *eq;
        if (!*s || *s == '#')
            continue;
        if ((eq = strchr(s, '=')) == NULL) {
            snprintf(err, err_size, "%s:%d: expected KEY=VALUE", path, lineno);
            rc = -1;
            break;
        }
        *eq = '\0';
        rc = ekf_opts_set(o, trim(s), trim(eq + 1), 0, why, sizeof(why));
        if (rc == -1)
            snprintf(err, err_size, "%s:%d: %s", path, lineno, why);
        else if (rc == -2)
            snprintf(err, err_size, "out of memory");
    }
    free(line);
    fclose(fp);
    return rc;
}

int ekf_opts_check(ekf_opts_t *o, char *err, size_t err_size)
{
    if (o->group == NULL) {
        snprintf(err, err_size, "--group is required");
        return -1;
    }
    if (o->ntopics == 0) {
        snprintf(err, err_size, "--topic is required (a name, or a ^regex)");
        return -1;
    }
    if (o->on_error == EKF_ON_ERROR_DEAD && o->dead_letter_topic == NULL) {
        snprintf(err, err_size, "--on-error dead-letter needs --dead-letter-topic");
        return -1;
    }
    if (o->on_error == EKF_ON_ERROR_DEFAULT)
        o->on_error = o->dead_letter_topic ? EKF_ON_ERROR_DEAD : EKF_ON_ERROR_STOP;
    if (o->dead_letter_topic != NULL)
        for (int i = 0; i < o->ntopics; i++)
            if (!strcmp(o->topics[i], o->dead_letter_topic)) {
                snprintf(err, err_size, "--dead-letter-topic %s is also consumed",
                         o->dead_letter_topic);
                return -1;
            }
    if (o->versioning == EKF_VERSION_DEFAULT)
        o->versioning = o->id_mode == EKF_ID_KEY ? EKF_VERSION_OFFSET : EKF_VERSION_NONE;
    if (o->urls != NULL) {
        char e2[400];
        if (esbulk_conf_set(o->conf, "urls", o->urls, e2, sizeof(e2)) != ESBULK_OK) {
            snprintf(err, err_size, "--url: %s", e2);
            return -1;
        }
    }
    return 0;
}
