/* The cluster's credentials from the environment, for the command-line
 * tools (esbulk load, esbulk-mysql): ESBULK_PASSWORD, ESBULK_API_KEY and
 * ESBULK_BEARER, where CI systems and container platforms put secrets,
 * instead of argv, which every user of the machine can read. Taken out of
 * the environment as soon as read, so that a process the tool starts (an
 * AWS credential process) does not inherit them.
 *
 * They fill in what the command line leaves out, never override it:
 * ESBULK_PASSWORD is the password of the user given (--user, --set
 * auth.username=...) when no password is; ESBULK_API_KEY or ESBULK_BEARER
 * is used when the command line gives no credentials at all. Each line of
 * what the tool says names the variable, never its value.
 *
 * Header-only, as firstline.h: static functions. Not thread-safe (the
 * environment): call from main before starting threads. */
#ifndef ESBULK_ENVCREDS_H
#define ESBULK_ENVCREDS_H

#include "firstline.h"

#include <esbulk.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *password, *api_key, *bearer; /* copies, NULL when unset or empty */
} envcreds_t;

/* Wipes and frees the copies. */
static inline void envcreds_free(envcreds_t *e)
{
    firstline_free(e->password);
    firstline_free(e->api_key);
    firstline_free(e->bearer);
    e->password = e->api_key = e->bearer = NULL;
}

/* Copies the variables into *e and removes them from the environment.
 * -1 when out of memory (then nothing is kept, and they are removed). */
static inline int envcreds_take(envcreds_t *e)
{
    static const char *const names[3] = {"ESBULK_PASSWORD", "ESBULK_API_KEY", "ESBULK_BEARER"};
    char **to[3];
    int i, rc = 0;

    to[0] = &e->password;
    to[1] = &e->api_key;
    to[2] = &e->bearer;
    for (i = 0; i < 3; i++) {
        const char *v = getenv(names[i]);

        *to[i] = NULL;
        if (v != NULL && v[0] != '\0' && rc == 0 && (*to[i] = strdup(v)) == NULL)
            rc = -1;
        unsetenv(names[i]);
    }
    if (rc != 0)
        envcreds_free(e);
    return rc;
}

/* Whether conf has key set (a non-empty value). */
static inline int envcreds_has(const esbulk_conf_t *conf, const char *key)
{
    size_t len = 0;

    esbulk_conf_get(conf, key, NULL, 0, &len);
    return len > 0;
}

/* Sets in conf what the variables give and the configuration (from the
 * command line) leaves out; user_option names how the tool takes the
 * cluster's user, for a message. -1 with why filled when they cannot be used:
 * ESBULK_PASSWORD without a user, ESBULK_API_KEY and ESBULK_BEARER both
 * (with no credentials on the command line), or a value the library
 * refuses (its reason, which never repeats the value). */
static inline int envcreds_conf(const envcreds_t *e, esbulk_conf_t *conf,
                                const char *user_option, char *why, size_t why_size)
{
    int user = envcreds_has(conf, "auth.username"), pass = envcreds_has(conf, "auth.password");
    int other = envcreds_has(conf, "auth.api_key") || envcreds_has(conf, "auth.bearer") ||
                envcreds_has(conf, "auth.aws.region");
    const char *name = NULL, *key = NULL, *value = NULL;
    char errstr[256]; /* the library's reasons are short; why has room for more */

    if (other || (pass && user))
        return 0; /* the command line's credentials, whole */
    if (user || pass) {
        if (!pass && e->password != NULL) {
            name = "ESBULK_PASSWORD";
            key = "auth.password";
            value = e->password;
        }
    } else if (e->api_key != NULL && e->bearer != NULL) {
        snprintf(why, why_size, "ESBULK_API_KEY and ESBULK_BEARER are both set: unset one");
        return -1;
    } else if (e->api_key != NULL) {
        name = "ESBULK_API_KEY";
        key = "auth.api_key";
        value = e->api_key;
    } else if (e->bearer != NULL) {
        name = "ESBULK_BEARER";
        key = "auth.bearer";
        value = e->bearer;
    } else if (e->password != NULL) {
        snprintf(why, why_size, "ESBULK_PASSWORD is set, but no user is given (%s)",
                 user_option);
        return -1;
    }
    if (key != NULL && esbulk_conf_set(conf, key, value, errstr, sizeof(errstr)) != ESBULK_OK) {
        snprintf(why, why_size, "%s: %s", name, errstr);
        return -1;
    }
    return 0;
}

#endif
