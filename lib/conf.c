/* Configuration properties. */
#include "conf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *key;
    esbulk__ctype_t type;
    const char *def;
    int64_t min, max;
    const char *enums; /* "a|b|c" for ENUM */
    int secret;
} prop_t;

#define ESBULK__CONF_ROW(ID, key, type, def, min, max, enums, secret) \
    {key, ESBULK__CT_##type, def, min, max, enums, secret},
static const prop_t props[ESBULK__C__COUNT] = {ESBULK__CONF_PROPS(ESBULK__CONF_ROW)};
#undef ESBULK__CONF_ROW

static int find_key(const char *key)
{
    int i;

    for (i = 0; i < ESBULK__C__COUNT; i++)
        if (strcmp(props[i].key, key) == 0)
            return i;
    return -1;
}

const char *esbulk__conf_key_at(int i)
{
    return i >= 0 && i < ESBULK__C__COUNT ? props[i].key : NULL;
}

/* The index of value among "a|b|c", or -1. */
static int enum_index(const char *enums, const char *value)
{
    size_t vlen = strlen(value);
    const char *p = enums;
    int i = 0;

    while (*p) {
        const char *end = strchr(p, '|');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == vlen && strncmp(p, value, n) == 0)
            return i;
        if (end == NULL)
            break;
        p = end + 1;
        i++;
    }
    return -1;
}

const char *esbulk__conf_enum_name(esbulk__cid_t id, int v)
{
    static _Thread_local char name[64];
    const char *p;
    int i = 0;

    if ((int)id < 0 || id >= ESBULK__C__COUNT || props[id].type != ESBULK__CT_ENUM || v < 0)
        return NULL;
    for (p = props[id].enums; p != NULL; p = strchr(p, '|') ? strchr(p, '|') + 1 : NULL, i++) {
        if (i == v) {
            size_t n = strchr(p, '|') ? (size_t)(strchr(p, '|') - p) : strlen(p);
            if (n >= sizeof(name))
                return NULL;
            memcpy(name, p, n);
            name[n] = '\0';
            return name;
        }
    }
    return NULL;
}

static esbulk_err_t parse_value(const prop_t *prop, const char *value, int64_t *num,
                                char *errstr, size_t errstr_size)
{
    char *end;
    long long v;

    switch (prop->type) {
    case ESBULK__CT_STR:
        *num = 0;
        return ESBULK_OK;
    case ESBULK__CT_BOOL:
        if (!strcmp(value, "true") || !strcmp(value, "1") || !strcmp(value, "yes")) {
            *num = 1;
            return ESBULK_OK;
        }
        if (!strcmp(value, "false") || !strcmp(value, "0") || !strcmp(value, "no")) {
            *num = 0;
            return ESBULK_OK;
        }
        esbulk__errstr(errstr, errstr_size, "%s: expected true or false, got \"%s\"",
                       prop->key, value);
        return ESBULK_ERR_BAD_VALUE;
    case ESBULK__CT_ENUM: {
        int i = enum_index(prop->enums, value);
        if (i < 0) {
            esbulk__errstr(errstr, errstr_size, "%s: expected one of %s, got \"%s\"", prop->key,
                           prop->enums, value);
            return ESBULK_ERR_BAD_VALUE;
        }
        *num = i;
        return ESBULK_OK;
    }
    case ESBULK__CT_INT:
        errno = 0;
        v = strtoll(value, &end, 10);
        if (errno != 0 || end == value || *end != '\0') {
            esbulk__errstr(errstr, errstr_size, "%s: expected an integer, got \"%s\"", prop->key,
                           value);
            return ESBULK_ERR_BAD_VALUE;
        }
        if (v < prop->min || v > prop->max) {
            esbulk__errstr(errstr, errstr_size, "%s: %lld is out of range [%lld, %lld]",
                           prop->key, v, (long long)prop->min, (long long)prop->max);
            return ESBULK_ERR_BAD_VALUE;
        }
        *num = v;
        return ESBULK_OK;
    }
    return ESBULK_ERR_BAD_VALUE;
}

esbulk_conf_t *esbulk_conf_new(void)
{
    esbulk_conf_t *conf = calloc(1, sizeof(*conf));
    int i;

    if (conf == NULL)
        return NULL;
    for (i = 0; i < ESBULK__C__COUNT; i++) {
        conf->str[i] = esbulk__strdup(props[i].def);
        if (conf->str[i] == NULL || parse_value(&props[i], props[i].def, &conf->num[i], NULL, 0)) {
            esbulk_conf_destroy(conf);
            return NULL;
        }
    }
    return conf;
}

void esbulk_conf_destroy(esbulk_conf_t *conf)
{
    int i;

    if (conf == NULL)
        return;
    for (i = 0; i < ESBULK__C__COUNT; i++) {
        if (conf->str[i] != NULL && props[i].secret)
            esbulk__wipe_str(conf->str[i]);
        free(conf->str[i]);
    }
    free(conf);
}

esbulk_err_t esbulk_conf_set(esbulk_conf_t *conf, const char *key, const char *value,
                             char *errstr, size_t errstr_size)
{
    int64_t num;
    esbulk_err_t err;
    char *copy;
    int i;

    if (conf == NULL || key == NULL || value == NULL) {
        esbulk__errstr(errstr, errstr_size, "conf, key and value must not be NULL");
        return ESBULK_ERR_INVALID_ARG;
    }
    i = find_key(key);
    if (i < 0) {
        esbulk__errstr(errstr, errstr_size, "unknown configuration key \"%s\"", key);
        return ESBULK_ERR_UNKNOWN_KEY;
    }
    err = parse_value(&props[i], value, &num, errstr, errstr_size);
    if (err != ESBULK_OK)
        return err;
    copy = esbulk__strdup(value);
    if (copy == NULL) {
        esbulk__errstr(errstr, errstr_size, "out of memory");
        return ESBULK_ERR_NOMEM;
    }
    if (props[i].secret)
        esbulk__wipe_str(conf->str[i]);
    free(conf->str[i]);
    conf->str[i] = copy;
    conf->num[i] = num;
    return ESBULK_OK;
}

esbulk_err_t esbulk_conf_get(const esbulk_conf_t *conf, const char *key, char *dest,
                             size_t dest_size, size_t *value_len)
{
    const char *v;
    size_t len;
    int i;

    if (conf == NULL || key == NULL)
        return ESBULK_ERR_INVALID_ARG;
    i = find_key(key);
    if (i < 0)
        return ESBULK_ERR_UNKNOWN_KEY;
    v = conf->str[i];
    if (props[i].secret && v[0] != '\0')
        v = "[redacted]";
    len = strlen(v);
    if (value_len != NULL)
        *value_len = len;
    if (dest == NULL || dest_size <= len)
        return ESBULK_ERR_TOO_LARGE;
    memcpy(dest, v, len + 1);
    return ESBULK_OK;
}

esbulk_conf_t *esbulk_conf_dup(const esbulk_conf_t *conf)
{
    esbulk_conf_t *dup;
    int i;

    if (conf == NULL)
        return NULL;
    dup = calloc(1, sizeof(*dup));
    if (dup == NULL)
        return NULL;
    for (i = 0; i < ESBULK__C__COUNT; i++) {
        dup->str[i] = esbulk__strdup(conf->str[i]);
        if (dup->str[i] == NULL) {
            esbulk_conf_destroy(dup);
            return NULL;
        }
        dup->num[i] = conf->num[i];
    }
    dup->log_cb = conf->log_cb;
    dup->result_cb = conf->result_cb;
    dup->results_cb = conf->results_cb;
    dup->stats_cb = conf->stats_cb;
    dup->opaque = conf->opaque;
    return dup;
}

void esbulk_conf_set_log_cb(esbulk_conf_t *conf, esbulk_log_cb_t *cb)
{
    if (conf != NULL)
        conf->log_cb = cb;
}

void esbulk_conf_set_result_cb(esbulk_conf_t *conf, esbulk_result_cb_t *cb)
{
    if (conf != NULL)
        conf->result_cb = cb;
}

void esbulk_conf_set_results_cb(esbulk_conf_t *conf, esbulk_results_cb_t *cb)
{
    if (conf != NULL)
        conf->results_cb = cb;
}

void esbulk_conf_set_stats_cb(esbulk_conf_t *conf, esbulk_stats_cb_t *cb)
{
    if (conf != NULL)
        conf->stats_cb = cb;
}

void esbulk_conf_set_opaque(esbulk_conf_t *conf, void *opaque)
{
    if (conf != NULL)
        conf->opaque = opaque;
}

