/* AWS credentials for the command-line tools (awscreds.h). */
#define _XOPEN_SOURCE 700
#include "awscreds.h"
#include "firstline.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* a process that prints more is not a credential process */
#define OUTPUT_MAX ((size_t)64 * 1024)
/* the AWS CLI may take seconds (an SSO or STS round trip); one that hangs
 * is killed */
#define PROCESS_TIMEOUT_MS 60000
/* after a refresh that failed, the next try (the credentials in use stay) */
#define RETRY_S 10
/* as AWS's SDKs: fresh credentials are asked for this long before expiry */
#define REFRESH_LEAD_S (15 * 60)

struct awscreds_s {
    char *region, *service, *process;
    awscreds_log_fn *log;
    void *log_opaque;
    awscreds_set_t cur;
    esbulk_t *eb;
    pthread_t thread;
    int running;
    int stop; /* under lock */
    pthread_mutex_t lock;
    pthread_cond_t cond;
};

void awscreds_set_clear(awscreds_set_t *s)
{
    firstline_free(s->access_key_id);
    firstline_free(s->secret_access_key);
    firstline_free(s->session_token);
    memset(s, 0, sizeof(*s));
}

/* Days from 1970-01-01 to y-m-d of the proleptic Gregorian calendar. */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
    int64_t era, yoe, doy, doe;

    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = y - era * 400;
    doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* n digits at *p as a number (-1 if they are not digits), *p moved on. */
static int digits(const char **p, int n)
{
    int v = 0;

    while (n-- > 0) {
        if (**p < '0' || **p > '9')
            return -1;
        v = v * 10 + (*(*p)++ - '0');
    }
    return v;
}

int awscreds_parse_time(const char *s, int64_t *out)
{
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const char *p = s;
    int y, mo, d, h, mi, se, off = 0;

    if ((y = digits(&p, 4)) < 0 || *p++ != '-' || (mo = digits(&p, 2)) < 1 || mo > 12 ||
        *p++ != '-' || (d = digits(&p, 2)) < 1 || d > mdays[mo - 1] ||
        (*p != 'T' && *p != 't' && *p != ' '))
        return -1;
    p++;
    if ((h = digits(&p, 2)) < 0 || h > 23 || *p++ != ':' || (mi = digits(&p, 2)) < 0 || mi > 59 ||
        *p++ != ':' || (se = digits(&p, 2)) < 0 || se > 60)
        return -1;
    if (*p == '.') {
        /* fractions of a second: the credentials are not that precise */
        p++;
        if (*p < '0' || *p > '9')
            return -1;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p++ == '-' ? -1 : 1, oh, om;

        if ((oh = digits(&p, 2)) < 0 || oh > 23 || *p++ != ':' || (om = digits(&p, 2)) < 0 ||
            om > 59)
            return -1;
        off = sign * (oh * 3600 + om * 60);
    } else {
        return -1; /* a time without its zone is not UTC */
    }
    if (*p != '\0')
        return -1;
    *out = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - off;
    return 0;
}

int64_t awscreds_refresh_at(int64_t now_s, int64_t expires_s)
{
    int64_t left = expires_s - now_s, lead = REFRESH_LEAD_S, at;

    if (left < 2 * lead)
        lead = left / 2;
    at = expires_s - lead;
    return at > now_s + 1 ? at : now_s + 1;
}

static void errf(char *err, size_t size, const char *fmt, const char *arg)
{
    if (size > 0)
        snprintf(err, size, fmt, arg);
}

/* A string member of o, copied (NULL if it is not there or empty). */
static int str_member(json_t *o, const char *key, int required, char **out, char *err,
                      size_t err_size)
{
    json_t *v = json_object_get(o, key);

    *out = NULL;
    if (v == NULL || json_is_null(v)) {
        if (required)
            errf(err, err_size, "the credential process gave no \"%s\"", key);
        return required ? -1 : 0;
    }
    if (!json_is_string(v) || json_string_length(v) == 0) {
        errf(err, err_size, "the credential process's \"%s\" is not a string", key);
        return -1;
    }
    if ((*out = strdup(json_string_value(v))) == NULL) {
        errf(err, err_size, "%s", "out of memory");
        return -1;
    }
    return 0;
}

int awscreds_parse(const char *json, size_t len, awscreds_set_t *out, char *err,
                   size_t err_size)
{
    json_error_t jerr;
    json_t *o, *v;
    char *exp = NULL;
    int rc = -1, i;

    memset(out, 0, sizeof(*out));
    /* jansson's error text quotes the input: it may hold a secret */
    if ((o = json_loadb(json, len, 0, &jerr)) == NULL || !json_is_object(o)) {
        errf(err, err_size, "%s", "the credential process's output is not a JSON object");
        json_decref(o);
        return -1;
    }
    v = json_object_get(o, "Version");
    if (!json_is_integer(v) || json_integer_value(v) != 1) {
        errf(err, err_size, "%s", "the credential process's output is not \"Version\": 1");
        goto out;
    }
    if (str_member(o, "AccessKeyId", 1, &out->access_key_id, err, err_size) != 0 ||
        str_member(o, "SecretAccessKey", 1, &out->secret_access_key, err, err_size) != 0 ||
        str_member(o, "SessionToken", 0, &out->session_token, err, err_size) != 0 ||
        str_member(o, "Expiration", 0, &exp, err, err_size) != 0)
        goto out;
    if (exp != NULL && (awscreds_parse_time(exp, &out->expires_s) != 0 || out->expires_s <= 0)) {
        errf(err, err_size, "the credential process's \"Expiration\" is not an ISO 8601 time: %s",
             exp);
        goto out;
    }
    rc = 0;
out:
    free(exp);
    /* jansson's own copies of the secrets, before it frees them */
    for (i = 0; i < 2; i++) {
        v = json_object_get(o, i == 0 ? "SecretAccessKey" : "SessionToken");
        if (json_is_string(v))
            firstline_wipe((char *)(uintptr_t)json_string_value(v), json_string_length(v));
    }
    json_decref(o);
    if (rc != 0)
        awscreds_set_clear(out);
    return rc;
}

/* Runs ac->process and reads its output into *out. */
static int run_process(const char *process, awscreds_set_t *out, char *err, size_t err_size)
{
    char *buf = NULL;
    size_t len = 0;
    int fds[2], status = 0, rc = -1, timed_out = 0, e;
    pid_t pid;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t none, defaults;
    char *argv[] = {"sh", "-c", (char *)process, NULL};
    struct timespec t0, t;

    if ((buf = malloc(OUTPUT_MAX + 1)) == NULL) {
        errf(err, err_size, "%s", "out of memory");
        return -1;
    }
    if (pipe(fds) != 0) {
        errf(err, err_size, "cannot run the credential process: %s", strerror(errno));
        free(buf);
        return -1;
    }
    /* neither end goes to a process the library or the tool starts later */
    (void)fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    (void)fcntl(fds[1], F_SETFD, FD_CLOEXEC);
    posix_spawn_file_actions_init(&fa);
    /* not the tool's standard input: esbulk load may be reading documents
     * from it */
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
    posix_spawnattr_init(&at);
    /* the tool's thread blocks its stop signals and ignores SIGPIPE: the
     * process gets neither */
    sigemptyset(&none);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &defaults);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    e = posix_spawn(&pid, "/bin/sh", &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(fds[1]);
    if (e != 0) {
        errf(err, err_size, "cannot run the credential process: %s", strerror(e));
        close(fds[0]);
        free(buf);
        return -1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        struct pollfd pfd = {fds[0], POLLIN, 0};
        ssize_t n;
        int64_t waited;

        clock_gettime(CLOCK_MONOTONIC, &t);
        waited = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
        if (waited >= PROCESS_TIMEOUT_MS) {
            timed_out = 1;
            break;
        }
        if (poll(&pfd, 1, (int)(PROCESS_TIMEOUT_MS - waited)) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (len == OUTPUT_MAX)
            break;
        n = read(fds[0], buf + len, OUTPUT_MAX - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fds[0]);
    if (timed_out)
        kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (timed_out) {
        errf(err, err_size, "the credential process did not end within %s seconds", "60");
    } else if (len == OUTPUT_MAX) {
        errf(err, err_size, "the credential process printed more than %s bytes", "65536");
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char why[64];

        if (WIFEXITED(status))
            snprintf(why, sizeof(why), "exited with status %d", WEXITSTATUS(status));
        else
            snprintf(why, sizeof(why), "was killed by signal %d",
                     WIFSIGNALED(status) ? WTERMSIG(status) : 0);
        errf(err, err_size, "the credential process %s", why);
    } else {
        rc = awscreds_parse(buf, len, out, err, err_size);
    }
    firstline_wipe(buf, len);
    free(buf);
    return rc;
}

/* The credentials from the environment, as the AWS tools read them. */
static int from_env(awscreds_set_t *out, char *err, size_t err_size)
{
    const char *id = getenv("AWS_ACCESS_KEY_ID"), *secret = getenv("AWS_SECRET_ACCESS_KEY");
    const char *token = getenv("AWS_SESSION_TOKEN");

    memset(out, 0, sizeof(*out));
    if (id == NULL || *id == '\0' || secret == NULL || *secret == '\0') {
        errf(err, err_size, "%s",
             "no AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set "
             "(nor a credential process given)");
        return -1;
    }
    if ((out->access_key_id = strdup(id)) == NULL ||
        (out->secret_access_key = strdup(secret)) == NULL ||
        (token != NULL && *token != '\0' && (out->session_token = strdup(token)) == NULL)) {
        awscreds_set_clear(out);
        errf(err, err_size, "%s", "out of memory");
        return -1;
    }
    return 0;
}

/* Reads a set, refused when it has already expired. */
static int read_set(const awscreds_t *ac, awscreds_set_t *out, char *err, size_t err_size)
{
    int rc;

    memset(out, 0, sizeof(*out)); /* a failure leaves nothing to clear */
    rc = ac->process != NULL ? run_process(ac->process, out, err, err_size)
                             : from_env(out, err, err_size);

    if (rc == 0 && out->expires_s != 0 && out->expires_s <= (int64_t)time(NULL)) {
        char when[32];

        snprintf(when, sizeof(when), "%lld", (long long)out->expires_s);
        errf(err, err_size,
             "the credential process gave credentials that have expired (at %s, Unix time)",
             when);
        awscreds_set_clear(out);
        rc = -1;
    }
    return rc;
}

/* One of conf's auth.aws.* keys: a refusal names where the value came
 * from (the library's message never repeats it). */
static int put(const awscreds_t *ac, esbulk_conf_t *conf, const char *key, const char *value,
               const char *env, const char *member, char *err, size_t err_size)
{
    char why[400];

    if (value == NULL || esbulk_conf_set(conf, key, value, why, sizeof(why)) == ESBULK_OK)
        return 0;
    if (err_size > 0) {
        if (env == NULL)
            snprintf(err, err_size, "%s", why);
        else if (ac->process == NULL)
            snprintf(err, err_size, "%s: %s", env, why);
        else
            snprintf(err, err_size, "the credential process's %s: %s", member, why);
    }
    return -1;
}

/* conf's auth.aws.* keys from set. */
static int set_conf(const awscreds_t *ac, const awscreds_set_t *set, esbulk_conf_t *conf,
                    char *err, size_t err_size)
{
    if (put(ac, conf, "auth.aws.region", ac->region, NULL, NULL, err, err_size) != 0 ||
        put(ac, conf, "auth.aws.service", ac->service, NULL, NULL, err, err_size) != 0 ||
        put(ac, conf, "auth.aws.access_key_id", set->access_key_id, "AWS_ACCESS_KEY_ID",
            "AccessKeyId", err, err_size) != 0 ||
        put(ac, conf, "auth.aws.secret_access_key", set->secret_access_key,
            "AWS_SECRET_ACCESS_KEY", "SecretAccessKey", err, err_size) != 0 ||
        put(ac, conf, "auth.aws.session_token", set->session_token, "AWS_SESSION_TOKEN",
            "SessionToken", err, err_size) != 0)
        return -1;
    return 0;
}

awscreds_t *awscreds_new(const char *region, const char *service, const char *process,
                         awscreds_log_fn *log, void *log_opaque, char *err, size_t err_size)
{
    awscreds_t *ac = calloc(1, sizeof(*ac));

    if (ac == NULL || (ac->region = strdup(region)) == NULL ||
        (ac->service = strdup(service != NULL ? service : "es")) == NULL ||
        (process != NULL && (ac->process = strdup(process)) == NULL)) {
        errf(err, err_size, "%s", "out of memory");
        goto fail;
    }
    ac->log = log;
    ac->log_opaque = log_opaque;
    pthread_mutex_init(&ac->lock, NULL);
    pthread_cond_init(&ac->cond, NULL);
    if (read_set(ac, &ac->cur, err, err_size) != 0) {
        awscreds_destroy(ac);
        return NULL;
    }
    return ac;
fail:
    if (ac != NULL) {
        free(ac->region);
        free(ac->service);
        free(ac->process);
        free(ac);
    }
    return NULL;
}

int awscreds_conf(awscreds_t *ac, esbulk_conf_t *conf, char *err, size_t err_size)
{
    return set_conf(ac, &ac->cur, conf, err, err_size);
}

static void say(awscreds_t *ac, const char *fmt, const char *arg)
{
    char msg[600];

    if (ac->log == NULL)
        return;
    snprintf(msg, sizeof(msg), fmt, arg);
    ac->log(msg, ac->log_opaque);
}

/* Reads fresh credentials when due, and updates the handle with them. */
static void *refresher(void *arg)
{
    awscreds_t *ac = arg;
    int64_t due = awscreds_refresh_at((int64_t)time(NULL), ac->cur.expires_s);
    sigset_t stops;

    /* the tool's main thread takes its stop signals */
    sigemptyset(&stops);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stops, NULL);
    pthread_mutex_lock(&ac->lock);
    for (;;) {
        struct timespec until = {(time_t)due, 0};
        awscreds_set_t fresh;
        esbulk_conf_t *conf;
        char err[512];
        int ok;

        while (!ac->stop && (int64_t)time(NULL) < due)
            pthread_cond_timedwait(&ac->cond, &ac->lock, &until);
        if (ac->stop)
            break;
        pthread_mutex_unlock(&ac->lock);
        err[0] = '\0';
        ok = read_set(ac, &fresh, err, sizeof(err)) == 0;
        if (ok) {
            if ((conf = esbulk_conf_new()) == NULL) {
                snprintf(err, sizeof(err), "out of memory");
                ok = 0;
            } else {
                ok = set_conf(ac, &fresh, conf, err, sizeof(err)) == 0 &&
                     esbulk_auth_update(ac->eb, conf, err, sizeof(err)) == ESBULK_OK;
                esbulk_conf_destroy(conf);
            }
        }
        pthread_mutex_lock(&ac->lock);
        if (ok) {
            awscreds_set_clear(&ac->cur);
            ac->cur = fresh;
            if (fresh.expires_s == 0)
                due = INT64_MAX; /* long-term keys now: nothing more to refresh */
            else
                due = awscreds_refresh_at((int64_t)time(NULL), fresh.expires_s);
        } else {
            awscreds_set_clear(&fresh);
            say(ac, "AWS credentials not refreshed (the ones in use stay; again in 10 s): %s",
                err);
            due = (int64_t)time(NULL) + RETRY_S;
        }
        if (due == INT64_MAX) {
            while (!ac->stop)
                pthread_cond_wait(&ac->cond, &ac->lock);
            break;
        }
    }
    pthread_mutex_unlock(&ac->lock);
    return NULL;
}

int awscreds_start(awscreds_t *ac, esbulk_t *eb, char *err, size_t err_size)
{
    int e;

    if (ac->cur.expires_s == 0 || ac->process == NULL)
        return 0; /* nothing will give fresher ones */
    ac->eb = eb;
    if ((e = pthread_create(&ac->thread, NULL, refresher, ac)) != 0) {
        errf(err, err_size, "cannot start the credentials' refresh: %s", strerror(e));
        return -1;
    }
    ac->running = 1;
    return 0;
}

void awscreds_destroy(awscreds_t *ac)
{
    if (ac == NULL)
        return;
    if (ac->running) {
        pthread_mutex_lock(&ac->lock);
        ac->stop = 1;
        pthread_cond_broadcast(&ac->cond);
        pthread_mutex_unlock(&ac->lock);
        pthread_join(ac->thread, NULL);
    }
    awscreds_set_clear(&ac->cur);
    pthread_mutex_destroy(&ac->lock);
    pthread_cond_destroy(&ac->cond);
    free(ac->region);
    free(ac->service);
    free(ac->process);
    free(ac);
}
