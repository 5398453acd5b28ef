/* Configuration properties: the esbulk_conf_* calls, each key's type,
 * default and checks, and its value as the library reads it. */
#include "conf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

/* A byte of an HTTP token (RFC 9110's tchar). */
static int tchar(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static int blank(char c)
{
    return c == ' ' || c == '\t';
}

int esbulk__header_next(const char **p, esbulk__header_t *h, char *errstr, size_t errstr_size)
{
    /* what the library sends itself, or curl does for it: one of these
     * twice, or changed, would break the request or its framing */
    static const struct {
        const char *name, *use;
    } owned[] = {
        {"authorization", "auth.username and auth.password, auth.api_key, auth.bearer or "
                          "auth.aws.*"},
        {"x-amz-date", "auth.aws.*"}, {"x-amz-content-sha256", "auth.aws.*"},
        {"x-amz-security-token", "auth.aws.session_token"},
        {"accept-encoding", "compression"},
        {"content-encoding", "compression"},
        {"content-type", NULL}, {"content-length", NULL}, {"transfer-encoding", NULL},
        {"host", NULL}, {"connection", NULL}, {"keep-alive", NULL}, {"expect", NULL},
        {"te", NULL}, {"trailer", NULL}, {"upgrade", NULL}, {"proxy-connection", NULL},
    };
    const char *line, *end, *q;
    size_t i;

    for (;;) {
        line = *p;
        if (*line == '\0')
            return 0;
        end = strchr(line, '\n');
        *p = end != NULL ? end + 1 : line + strlen(line);
        if (end == NULL)
            end = *p;
        if (end > line && end[-1] == '\r')
            end--;
        for (q = line; q < end && blank(*q); q++)
            ;
        if (q < end)
            break; /* not blank */
    }
    for (q = line; q < end && tchar((unsigned char)*q); q++)
        ;
    if (q == line || q == end || *q != ':') {
        esbulk__errstr(errstr, errstr_size,
                       "http.headers: a line is not \"Name: value\" (%s)",
                       memchr(line, ':', (size_t)(end - line)) == NULL ? "it has no ':'"
                       : q == line ? "it does not start with a name"
                                   : "the name holds a byte an HTTP name cannot");
        return ESBULK_ERR_BAD_VALUE;
    }
    h->name = line;
    h->name_len = (size_t)(q - line);
    for (i = 0; i < ESBULK__ARRAY_LEN(owned); i++) {
        if (strlen(owned[i].name) == h->name_len &&
            strncasecmp(owned[i].name, line, h->name_len) == 0) {
            esbulk__errstr(errstr, errstr_size, "http.headers: %.*s is the library's to set%s%s",
                           (int)h->name_len, line, owned[i].use ? ": use " : "",
                           owned[i].use ? owned[i].use : "");
            return ESBULK_ERR_BAD_VALUE;
        }
    }
    for (q++; q < end && blank(*q); q++)
        ;
    while (end > q && blank(end[-1]))
        end--;
    h->value = q;
    h->value_len = (size_t)(end - q);
    for (; q < end; q++) {
        if ((unsigned char)*q < 0x20 ? *q != '\t' : *q == 0x7f) {
            esbulk__errstr(errstr, errstr_size,
                           "http.headers: the value of %.*s holds a control byte (0x%02x)",
                           (int)h->name_len, h->name, (unsigned)(unsigned char)*q);
            return ESBULK_ERR_BAD_VALUE;
        }
    }
    return 1;
}

/* The auth.* keys, each alone (esbulk__http_opts_init() checks them
 * together). A secret's value is never in a message. */
static esbulk_err_t auth_value_check(esbulk__cid_t id, const char *key, const char *value,
                                     char *errstr, size_t errstr_size)
{
    const unsigned char *p;

    switch (id) {
    case ESBULK__C_AUTH_USERNAME:
    case ESBULK__C_AUTH_PASSWORD:
        /* curl encodes them (Basic), but RFC 7617 allows no control byte
         * in either, nor a ':' in the user-id: a line break read with a
         * password from a file would only get 401s, unexplained */
        for (p = (const unsigned char *)value; *p != '\0'; p++)
            if (*p < ' ' || *p == 0x7f || (*p == ':' && id == ESBULK__C_AUTH_USERNAME)) {
                esbulk__errstr(errstr, errstr_size, "%s holds a %s", key,
                               *p == ':' ? "':' (the separator of Basic credentials)"
                                         : "control byte (a line break read with it from a file?)");
                return ESBULK_ERR_BAD_VALUE;
            }
        return ESBULK_OK;
    case ESBULK__C_AUTH_AWS_REGION:
    case ESBULK__C_AUTH_AWS_SERVICE:
    case ESBULK__C_AUTH_AWS_ACCESS_KEY_ID:
        /* a region ("eu-west-1"), a service ("es", "aoss"), a key id
         * ("AKIA..."): they go into the signed scope and the Authorization
         * line as they are */
        if (id == ESBULK__C_AUTH_AWS_SERVICE && *value == '\0') {
            esbulk__errstr(errstr, errstr_size, "%s: empty (\"es\" for Amazon OpenSearch "
                           "Service, \"aoss\" for Serverless)", key);
            return ESBULK_ERR_BAD_VALUE;
        }
        for (p = (const unsigned char *)value; *p != '\0'; p++)
            if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                  (*p >= '0' && *p <= '9') || (id != ESBULK__C_AUTH_AWS_ACCESS_KEY_ID &&
                                               (*p == '-' || *p == '_' || *p == '.')))) {
                esbulk__errstr(errstr, errstr_size, "%s: \"%s\" is not %s", key, value,
                               id == ESBULK__C_AUTH_AWS_ACCESS_KEY_ID
                                   ? "an access key id (letters and digits)"
                                   : "a name of letters, digits, '-', '_' and '.'");
                return ESBULK_ERR_BAD_VALUE;
            }
        return ESBULK_OK;
    case ESBULK__C_AUTH_API_KEY:
    case ESBULK__C_AUTH_BEARER:
    case ESBULK__C_AUTH_AWS_SECRET_ACCESS_KEY:
    case ESBULK__C_AUTH_AWS_SESSION_TOKEN:
        /* an API key, a bearer token and a session token are sent in a
         * header line as they are (a line break would end it, and start a
         * header of the value's choosing); none of them, nor a secret key,
         * holds a blank or a control byte (a line break read from a file,
         * most likely) */
        for (p = (const unsigned char *)value; *p != '\0'; p++)
            if (*p <= ' ' || *p == 0x7f) {
                esbulk__errstr(errstr, errstr_size, "%s holds a %s (a line break read with "
                               "it from a file?)", key,
                               *p == ' ' ? "space" : "control byte");
                return ESBULK_ERR_BAD_VALUE;
            }
        return ESBULK_OK;
    default:
        return ESBULK_OK;
    }
}

static esbulk_err_t parse_value(const prop_t *prop, const char *value, int64_t *num,
                                char *errstr, size_t errstr_size)
{
    char *end;
    long long v;

    switch (prop->type) {
    case ESBULK__CT_STR:
        *num = 0;
        if (prop == &props[ESBULK__C_HTTP_HEADERS]) {
            esbulk__header_t h;
            const char *p = value;
            int rc;

            while ((rc = esbulk__header_next(&p, &h, errstr, errstr_size)) > 0)
                ;
            if (rc < 0)
                return (esbulk_err_t)rc;
        }
        return auth_value_check((esbulk__cid_t)(prop - props), prop->key, value, errstr,
                                errstr_size);
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

