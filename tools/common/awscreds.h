/* AWS credentials for the command-line tools (esbulk load, esbulk-mysql):
 * from the environment, as the AWS tools take them, or from a
 * credential_process (AWS's documented way to plug in any source: the AWS
 * CLI's "aws configure export-credentials --format process" prints them from
 * an instance, task or pod role, SSO or a profile). Temporary credentials
 * from a process are asked for again before they expire, and the handle
 * updated with esbulk_auth_update(), by a thread of this module's.
 *
 * The library itself reads no environment and runs no process: this is the
 * tools' policy, as the bindings have theirs. */
#ifndef ESBULK_AWSCREDS_H
#define ESBULK_AWSCREDS_H

#include <esbulk.h>
#include <stddef.h>
#include <stdint.h>

/* One set of credentials. */
typedef struct {
    char *access_key_id;
    char *secret_access_key;
    char *session_token; /* NULL: none (long-term keys) */
    int64_t expires_s;   /* Unix time they expire at; 0: they do not */
} awscreds_set_t;

/* Parses a credential process's output: a JSON object with "Version": 1,
 * "AccessKeyId", "SecretAccessKey", and optionally "SessionToken" and
 * "Expiration" (ISO 8601, as "2026-12-07T04:00:00Z"). 0, or -1 with the
 * reason in err (which never holds a secret). */
int awscreds_parse(const char *json, size_t len, awscreds_set_t *out, char *err,
                   size_t err_size);
/* An ISO 8601 UTC time (Z or a +HH:MM offset, fractions of a second
 * ignored) as Unix seconds: 0, or -1 if it is not one. */
int awscreds_parse_time(const char *s, int64_t *out);
/* When credentials that expire at expires_s, read at now_s, are asked for
 * again: 15 minutes before they expire, or half-way when they last less
 * than 30 minutes, and never sooner than a second after now_s. */
int64_t awscreds_refresh_at(int64_t now_s, int64_t expires_s);
/* Wipes and frees what s holds. */
void awscreds_set_clear(awscreds_set_t *s);

typedef struct awscreds_s awscreds_t;
typedef void(awscreds_log_fn)(const char *message, void *opaque);

/* Reads the credentials for signing in region for service (NULL: "es"):
 * from process (run by /bin/sh -c; NULL: from AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN). log (may be NULL) is told
 * of a refresh that failed, from the module's thread. NULL with the reason
 * in err when there are none. */
awscreds_t *awscreds_new(const char *region, const char *service, const char *process,
                         awscreds_log_fn *log, void *log_opaque, char *err, size_t err_size);
/* Sets conf's auth.aws.* keys to the credentials read. */
int awscreds_conf(awscreds_t *ac, esbulk_conf_t *conf, char *err, size_t err_size);
/* Keeps eb's credentials fresh (a thread of the module's; none when they
 * do not expire). eb outlives the next awscreds_destroy. */
int awscreds_start(awscreds_t *ac, esbulk_t *eb, char *err, size_t err_size);
/* Stops the refreshes (waiting for one under way), wipes the credentials. */
void awscreds_destroy(awscreds_t *ac);

#endif
