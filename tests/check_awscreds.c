/* The tools' AWS credentials (tools/common/awscreds.c): a credential process's
 * output read as AWS defines it, its expiry times, when fresh credentials
 * are asked for, the process run (its failures said without a secret), the
 * environment, and the refresh thread updating a live handle. The module is
 * compiled in here, so the sanitizer and valgrind runs take it as it is.
 * Also the tools' other credentials from the environment
 * (tools/common/envcreds.h: ESBULK_PASSWORD, ESBULK_API_KEY, ESBULK_BEARER). */
#include "tools/common/awscreds.c"
#include "tools/common/envcreds.h"

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <sys/socket.h>

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

static int64_t t_of(const char *s)
{
    int64_t t = -42;

    ck_assert_int_eq(awscreds_parse_time(s, &t), 0);
    return t;
}

START_TEST(test_time)
{
    int64_t t;

    ck_assert_int_eq(t_of("1970-01-01T00:00:00Z"), 0);
    ck_assert_int_eq(t_of("2026-12-07T04:00:00Z"), 1796616000);
    /* the AWS CLI's export-credentials writes an offset */
    ck_assert_int_eq(t_of("2026-12-07T04:00:00+00:00"), 1796616000);
    ck_assert_int_eq(t_of("2026-12-07T05:30:00+01:30"), 1796616000);
    ck_assert_int_eq(t_of("2026-12-07T02:00:00-02:00"), 1796616000);
    ck_assert_int_eq(t_of("2026-12-07T04:00:00.123456Z"), 1796616000);
    ck_assert_int_eq(t_of("2024-02-29T12:00:00Z"), 1709208000);
    ck_assert_int_eq(t_of("2000-03-01T00:00:00Z"), 951868800);
    ck_assert_int_eq(awscreds_parse_time("2026-12-07T04:00:00", &t), -1); /* no zone */
    ck_assert_int_eq(awscreds_parse_time("2026-12-07", &t), -1);
    ck_assert_int_eq(awscreds_parse_time("2026-13-07T04:00:00Z", &t), -1);
    ck_assert_int_eq(awscreds_parse_time("2026-02-30T04:00:00Z", &t), -1);
    ck_assert_int_eq(awscreds_parse_time("2026-12-07T24:00:00Z", &t), -1);
    ck_assert_int_eq(awscreds_parse_time("2026-12-07T04:00:00Zjunk", &t), -1);
    ck_assert_int_eq(awscreds_parse_time("2026-12-07T04:00:00.Z", &t), -1);
    ck_assert_int_eq(awscreds_parse_time("1796616000", &t), -1);
    ck_assert_int_eq(awscreds_parse_time("", &t), -1);
}
END_TEST

START_TEST(test_refresh_at)
{
    /* an hour's credentials: 15 minutes before they expire */
    ck_assert_int_eq(awscreds_refresh_at(1000, 1000 + 3600), 1000 + 3600 - 900);
    /* exactly 30 minutes: still 15 before */
    ck_assert_int_eq(awscreds_refresh_at(1000, 1000 + 1800), 1000 + 900);
    /* 15 minutes (STS's least): half-way */
    ck_assert_int_eq(awscreds_refresh_at(1000, 1000 + 900), 1000 + 450);
    ck_assert_int_eq(awscreds_refresh_at(1000, 1000 + 4), 1002);
    /* never sooner than a second on */
    ck_assert_int_eq(awscreds_refresh_at(1000, 1001), 1001);
    ck_assert_int_eq(awscreds_refresh_at(1000, 900), 1001);
}
END_TEST

#define P(s) awscreds_parse(s, strlen(s), &set, err, sizeof(err))

START_TEST(test_parse)
{
    awscreds_set_t set;
    char err[256];

    ck_assert_int_eq(P("{\"Version\": 1, \"AccessKeyId\": \"AKID\", \"SecretAccessKey\": "
                       "\"s3cr3t\", \"SessionToken\": \"tok\", \"Expiration\": "
                       "\"2026-12-07T04:00:00Z\"}"),
                     0);
    ck_assert_str_eq(set.access_key_id, "AKID");
    ck_assert_str_eq(set.secret_access_key, "s3cr3t");
    ck_assert_str_eq(set.session_token, "tok");
    ck_assert_int_eq(set.expires_s, 1796616000);
    awscreds_set_clear(&set);
    ck_assert_ptr_null(set.secret_access_key);
    /* long-term keys: no token, no expiry */
    ck_assert_int_eq(P("{\"Version\":1,\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"S\"}\n"), 0);
    ck_assert_ptr_null(set.session_token);
    ck_assert_int_eq(set.expires_s, 0);
    awscreds_set_clear(&set);
    ck_assert_int_eq(P("{\"Version\":1,\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"S\","
                       "\"SessionToken\":null,\"Expiration\":null}"),
                     0);
    ck_assert_ptr_null(set.session_token);
    awscreds_set_clear(&set);

    /* refusals, none of which repeats a secret */
    ck_assert_int_eq(P("{\"Version\":2,\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"S\"}"), -1);
    ck_assert_str_eq(err, "the credential process's output is not \"Version\": 1");
    ck_assert_int_eq(P("{\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"S\"}"), -1);
    ck_assert_int_eq(P("{\"Version\":1,\"SecretAccessKey\":\"S\"}"), -1);
    ck_assert_str_eq(err, "the credential process gave no \"AccessKeyId\"");
    ck_assert_int_eq(P("{\"Version\":1,\"AccessKeyId\":\"A\"}"), -1);
    ck_assert_str_eq(err, "the credential process gave no \"SecretAccessKey\"");
    ck_assert_int_eq(P("{\"Version\":1,\"AccessKeyId\":\"A\",\"SecretAccessKey\":7}"), -1);
    ck_assert_str_eq(err, "the credential process's \"SecretAccessKey\" is not a string");
    ck_assert_int_eq(P("{\"Version\":1,\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"\"}"), -1);
    ck_assert_int_eq(P("{\"Version\":1,\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"S\","
                       "\"Expiration\":\"tomorrow\"}"),
                     -1);
    ck_assert_str_eq(err, "the credential process's \"Expiration\" is not an ISO 8601 time: "
                          "tomorrow");
    ck_assert_ptr_null(set.access_key_id); /* nothing kept of a refused set */
    ck_assert_int_eq(P("{\"Version\":1,\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"s3cr3t\""),
                     -1);
    ck_assert_str_eq(err, "the credential process's output is not a JSON object");
    ck_assert_int_eq(P("[1]"), -1);
    ck_assert_int_eq(P(""), -1);
}
END_TEST

static char logged[1024];
static int nlogged;

static void on_log(const char *message, void *opaque)
{
    (void)opaque;
    snprintf(logged, sizeof(logged), "%s", message);
    __atomic_add_fetch(&nlogged, 1, __ATOMIC_SEQ_CST);
}

START_TEST(test_process)
{
    char err[512] = "";
    awscreds_t *ac;
    esbulk_conf_t *conf;

    ac = awscreds_new("eu-west-1", NULL, "printf '%s' '{\"Version\":1,\"AccessKeyId\":\"AP\","
                                         "\"SecretAccessKey\":\"SP\",\"SessionToken\":\"TP\"}'",
                      on_log, NULL, err, sizeof(err));
    ck_assert_msg(ac != NULL, "%s", err);
    ck_assert_str_eq(ac->cur.access_key_id, "AP");
    ck_assert_str_eq(ac->service, "es");
    conf = esbulk_conf_new();
    ck_assert_int_eq(awscreds_conf(ac, conf, err, sizeof(err)), 0);
    ck_assert_int_eq(esbulk_conf_get(conf, "auth.aws.region", err, sizeof(err), NULL), 0);
    ck_assert_str_eq(err, "eu-west-1");
    ck_assert_int_eq(esbulk_conf_get(conf, "auth.aws.access_key_id", err, sizeof(err), NULL), 0);
    ck_assert_str_eq(err, "AP");
    ck_assert_int_eq(esbulk_conf_get(conf, "auth.aws.session_token", err, sizeof(err), NULL), 0);
    ck_assert_str_eq(err, "[redacted]");
    esbulk_conf_destroy(conf);
    /* no expiry: no thread */
    ck_assert_int_eq(awscreds_start(ac, NULL, err, sizeof(err)), 0);
    ck_assert_int_eq(ac->running, 0);
    awscreds_destroy(ac);

    /* what a failed process gives: its status, never its output */
    ck_assert_ptr_null(awscreds_new("eu-west-1", "es", "echo SECRET; exit 3", NULL, NULL, err,
                                    sizeof(err)));
    ck_assert_str_eq(err, "the credential process exited with status 3");
    ck_assert_ptr_null(
        awscreds_new("eu-west-1", "es", "echo '{\"Version\":1,\"AccessKeyId\":\"A\","
                                        "\"SecretAccessKey\":\"SECRET\"'",
                     NULL, NULL, err, sizeof(err)));
    ck_assert_str_eq(err, "the credential process's output is not a JSON object");
    ck_assert_ptr_null(awscreds_new("eu-west-1", "es", "kill -9 $$", NULL, NULL, err,
                                    sizeof(err)));
    ck_assert_str_eq(err, "the credential process was killed by signal 9");
    ck_assert_ptr_null(awscreds_new("eu-west-1", "es", "head -c 70000 /dev/zero", NULL, NULL,
                                    err, sizeof(err)));
    ck_assert_str_eq(err, "the credential process printed more than 65536 bytes");
    /* expired already */
    ck_assert_ptr_null(
        awscreds_new("eu-west-1", "es", "echo '{\"Version\":1,\"AccessKeyId\":\"A\","
                                        "\"SecretAccessKey\":\"S\",\"SessionToken\":\"T\","
                                        "\"Expiration\":\"2020-01-01T00:00:00Z\"}'",
                     NULL, NULL, err, sizeof(err)));
    ck_assert_str_eq(err, "the credential process gave credentials that have expired (at "
                          "1577836800, Unix time)");
    /* no output */
    ck_assert_ptr_null(awscreds_new("eu-west-1", "es", "exit 0", NULL, NULL, err, sizeof(err)));
    ck_assert_str_eq(err, "the credential process's output is not a JSON object");
    /* the process does not read the tool's standard input (esbulk load's
     * documents may come from it): it reads nothing there */
    {
        int p[2], saved = dup(STDIN_FILENO);

        ck_assert_int_eq(pipe(p), 0);
        ck_assert_int_eq(write(p[1], "{\"index\":{}}\n", 13), 13);
        close(p[1]);
        ck_assert_int_ge(dup2(p[0], STDIN_FILENO), 0);
        close(p[0]);
        ac = awscreds_new("eu-west-1", "es",
                          "[ -z \"$(cat)\" ] && echo '{\"Version\":1,\"AccessKeyId\":\"AI\","
                          "\"SecretAccessKey\":\"SI\"}'",
                          NULL, NULL, err, sizeof(err));
        ck_assert_int_ge(dup2(saved, STDIN_FILENO), 0);
        close(saved);
        ck_assert_msg(ac != NULL, "%s", err);
        awscreds_destroy(ac);
    }
}
END_TEST

START_TEST(test_env)
{
    char err[512] = "";
    awscreds_t *ac;

    unsetenv("AWS_ACCESS_KEY_ID");
    setenv("AWS_SECRET_ACCESS_KEY", "SE", 1);
    ck_assert_ptr_null(awscreds_new("eu-west-1", "es", NULL, NULL, NULL, err, sizeof(err)));
    ck_assert_msg(strstr(err, "AWS_ACCESS_KEY_ID") != NULL, "%s", err);
    setenv("AWS_ACCESS_KEY_ID", "AE", 1);
    setenv("AWS_SESSION_TOKEN", "", 1); /* empty: none */
    ac = awscreds_new("eu-west-1", "aoss", NULL, NULL, NULL, err, sizeof(err));
    ck_assert_msg(ac != NULL, "%s", err);
    ck_assert_str_eq(ac->cur.access_key_id, "AE");
    ck_assert_str_eq(ac->cur.secret_access_key, "SE");
    ck_assert_ptr_null(ac->cur.session_token);
    ck_assert_int_eq(awscreds_start(ac, NULL, err, sizeof(err)), 0);
    ck_assert_int_eq(ac->running, 0);
    awscreds_destroy(ac);
}
END_TEST

/* Which credential key conf has set: "" for none, else the keys' first
 * letters in order u, p, k (api_key), b (bearer). */
static const char *env_kinds(const esbulk_conf_t *conf)
{
    static char out[8];
    char *o = out;

    if (envcreds_has(conf, "auth.username"))
        *o++ = 'u';
    if (envcreds_has(conf, "auth.password"))
        *o++ = 'p';
    if (envcreds_has(conf, "auth.api_key"))
        *o++ = 'k';
    if (envcreds_has(conf, "auth.bearer"))
        *o++ = 'b';
    *o = '\0';
    return out;
}

/* envcreds_conf over a conf with the command line's keys (NULL-ended
 * key, value pairs); its result in *rc, the kinds set after it returned. */
static const char *env_apply(const envcreds_t *e, int *rc, char *why, size_t why_size, ...)
{
    static char kinds[8];
    esbulk_conf_t *conf = esbulk_conf_new();
    char err[256];
    const char *k;
    va_list ap;

    ck_assert_ptr_nonnull(conf);
    va_start(ap, why_size);
    while ((k = va_arg(ap, const char *)) != NULL)
        ck_assert_int_eq(esbulk_conf_set(conf, k, va_arg(ap, const char *), err, sizeof(err)),
                         ESBULK_OK);
    va_end(ap);
    why[0] = '\0';
    *rc = envcreds_conf(e, conf, "--user", why, why_size);
    snprintf(kinds, sizeof(kinds), "%s", env_kinds(conf));
    esbulk_conf_destroy(conf);
    return kinds;
}

START_TEST(test_envcreds)
{
    envcreds_t e;
    char why[600];
    int rc;

    /* taken out of the environment, empty ones as unset */
    setenv("ESBULK_PASSWORD", "pw", 1);
    setenv("ESBULK_API_KEY", "", 1);
    setenv("ESBULK_BEARER", "tok", 1);
    ck_assert_int_eq(envcreds_take(&e), 0);
    ck_assert_str_eq(e.password, "pw");
    ck_assert_ptr_null(e.api_key);
    ck_assert_str_eq(e.bearer, "tok");
    ck_assert_ptr_null(getenv("ESBULK_PASSWORD"));
    ck_assert_ptr_null(getenv("ESBULK_API_KEY"));
    ck_assert_ptr_null(getenv("ESBULK_BEARER"));

    /* with --user, the password comes from ESBULK_PASSWORD; the bearer
     * token is another kind, not used */
    ck_assert_str_eq(env_apply(&e, &rc, why, sizeof(why), "auth.username", "u", NULL), "up");
    ck_assert_int_eq(rc, 0);
    /* the command line's password wins */
    ck_assert_str_eq(env_apply(&e, &rc, why, sizeof(why), "auth.username", "u",
                               "auth.password", "cli", NULL), "up");
    ck_assert_int_eq(rc, 0);
    /* any other kind on the command line: nothing from the environment */
    ck_assert_str_eq(env_apply(&e, &rc, why, sizeof(why), "auth.api_key", "k", NULL), "k");
    ck_assert_int_eq(rc, 0);
    ck_assert_str_eq(env_apply(&e, &rc, why, sizeof(why), "auth.aws.region", "eu-west-1",
                               "auth.aws.access_key_id", "A", "auth.aws.secret_access_key",
                               "S", NULL), "");
    ck_assert_int_eq(rc, 0);
    /* no credentials on the command line: the bearer token (ESBULK_PASSWORD
     * has no user, but a token is there) */
    ck_assert_str_eq(env_apply(&e, &rc, why, sizeof(why), NULL), "b");
    ck_assert_int_eq(rc, 0);
    envcreds_free(&e);
    ck_assert_ptr_null(e.password);

    /* an API key and a bearer token: which one is meant is not known */
    e.password = NULL;
    ck_assert_ptr_nonnull(e.api_key = strdup("key"));
    ck_assert_ptr_nonnull(e.bearer = strdup("tok"));
    env_apply(&e, &rc, why, sizeof(why), NULL);
    ck_assert_int_eq(rc, -1);
    ck_assert_msg(strstr(why, "ESBULK_API_KEY and ESBULK_BEARER are both set") != NULL, "%s", why);
    /* ... unless the command line gives credentials */
    ck_assert_str_eq(env_apply(&e, &rc, why, sizeof(why), "auth.username", "u",
                               "auth.password", "p", NULL), "up");
    ck_assert_int_eq(rc, 0);
    envcreds_free(&e);

    /* a password and no user: said, naming the tool's option */
    ck_assert_ptr_nonnull(e.password = strdup("pw"));
    env_apply(&e, &rc, why, sizeof(why), NULL);
    ck_assert_int_eq(rc, -1);
    ck_assert_str_eq(why, "ESBULK_PASSWORD is set, but no user is given (--user)");
    envcreds_free(&e);

    /* a value the library refuses: its reason, named, without the value */
    ck_assert_ptr_nonnull(e.api_key = strdup("k3y\r\nX-Evil: 1"));
    env_apply(&e, &rc, why, sizeof(why), NULL);
    ck_assert_int_eq(rc, -1);
    ck_assert_msg(strncmp(why, "ESBULK_API_KEY: ", 16) == 0 && strstr(why, "X-Evil") == NULL &&
                      strstr(why, "k3y") == NULL,
                  "%s", why);
    envcreds_free(&e);
}
END_TEST

/* A server on loopback that answers every request 200 "{}" and keeps the
 * Authorization line of the last request for /_probe: which credentials
 * the handle signed with. */
typedef struct {
    int fd;
    int stop;
    pthread_t thread;
    pthread_mutex_t lock;
    char auth[1024];
} probe_t;

static void *probe_serve(void *arg)
{
    probe_t *p = arg;

    for (;;) {
        char buf[8192];
        size_t len = 0;
        ssize_t n;
        int c = accept(p->fd, NULL, NULL);
        static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                 "Content-Length: 2\r\nConnection: close\r\n\r\n{}";

        if (c < 0 || __atomic_load_n(&p->stop, __ATOMIC_SEQ_CST)) {
            if (c >= 0)
                close(c);
            break;
        }
        while (len < sizeof(buf) - 1 && (n = read(c, buf + len, sizeof(buf) - 1 - len)) > 0) {
            len += (size_t)n;
            buf[len] = '\0';
            if (strstr(buf, "\r\n\r\n") != NULL)
                break;
        }
        buf[len] = '\0';
        if (strncmp(buf, "GET /_probe ", 12) == 0) {
            const char *a = strstr(buf, "\r\nAuthorization: ");

            pthread_mutex_lock(&p->lock);
            snprintf(p->auth, sizeof(p->auth), "%.*s", a ? (int)strcspn(a + 2, "\r") : 0,
                     a ? a + 2 : "");
            pthread_mutex_unlock(&p->lock);
        }
        if (write(c, ok, sizeof(ok) - 1) < 0)
            break;
        close(c);
    }
    return NULL;
}

static int probe_start(probe_t *p)
{
    struct sockaddr_in a;
    socklen_t alen = sizeof(a);

    memset(p, 0, sizeof(*p));
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_ge(p->fd = socket(AF_INET, SOCK_STREAM, 0), 0);
    ck_assert_int_eq(bind(p->fd, (struct sockaddr *)&a, sizeof(a)), 0);
    ck_assert_int_eq(listen(p->fd, 16), 0);
    ck_assert_int_eq(getsockname(p->fd, (struct sockaddr *)&a, &alen), 0);
    pthread_mutex_init(&p->lock, NULL);
    ck_assert_int_eq(pthread_create(&p->thread, NULL, probe_serve, p), 0);
    return ntohs(a.sin_port);
}

static void probe_stop(probe_t *p, int port)
{
    struct sockaddr_in a;
    int s = socket(AF_INET, SOCK_STREAM, 0);

    __atomic_store_n(&p->stop, 1, __ATOMIC_SEQ_CST);
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((uint16_t)port);
    (void)connect(s, (struct sockaddr *)&a, sizeof(a)); /* wakes the accept */
    close(s);
    pthread_join(p->thread, NULL);
    close(p->fd);
    pthread_mutex_destroy(&p->lock);
}

/* The key id the handle signs a request with now. */
static void signed_with(esbulk_t *eb, probe_t *p, char *out, size_t size)
{
    char err[256];
    int32_t status = 0;
    const char *cred;

    ck_assert_msg(esbulk_request(eb, "GET", "/_probe", NULL, 0, 5000, &status, NULL, NULL, err,
                                 sizeof(err)) == ESBULK_OK, "%s", err);
    ck_assert_int_eq(status, 200);
    pthread_mutex_lock(&p->lock);
    cred = strstr(p->auth, "Credential=");
    snprintf(out, size, "%.*s", cred ? (int)strcspn(cred + 11, "/") : 0, cred ? cred + 11 : "");
    pthread_mutex_unlock(&p->lock);
}

/* A credential process that counts its runs in dir/n and gives the key id
 * AK<run>, valid for 3 s; from the run in dir/fail on, it fails. */
static void counting_process(char *cmd, size_t size, const char *dir)
{
    snprintf(cmd, size,
             "n=$(cat %s/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > %s/n; "
             "[ -f %s/fail ] && [ $n -ge $(cat %s/fail) ] && exit 1; "
             "printf '{\"Version\":1,\"AccessKeyId\":\"AK%%d\",\"SecretAccessKey\":\"S\","
             "\"SessionToken\":\"T\",\"Expiration\":\"%%s\"}' $n "
             "$(date -u -d @$(( $(date +%%s) + 3 )) +%%Y-%%m-%%dT%%H:%%M:%%SZ)",
             dir, dir, dir, dir);
}

static int runs(const char *dir)
{
    char path[512];
    FILE *f;
    int n = 0;

    snprintf(path, sizeof(path), "%s/n", dir);
    if ((f = fopen(path, "r")) != NULL) {
        if (fscanf(f, "%d", &n) != 1)
            n = 0;
        fclose(f);
    }
    return n;
}

static esbulk_t *aws_handle(awscreds_t *ac, int port)
{
    char err[512], url[64];
    esbulk_conf_t *conf = esbulk_conf_new();
    esbulk_t *eb;

    snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
    ck_assert_int_eq(esbulk_conf_set(conf, "urls", url, err, sizeof(err)), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "topology.discovery", "false", err, sizeof(err)), 0);
    ck_assert_int_eq(awscreds_conf(ac, conf, err, sizeof(err)), 0);
    eb = esbulk_new(conf, err, sizeof(err));
    ck_assert_msg(eb != NULL, "%s", err);
    esbulk_conf_destroy(conf);
    return eb;
}

START_TEST(test_refresh)
{
    char dir[] = "/tmp/check_awscreds.XXXXXX", cmd[2048], err[512] = "", path[600], id[64];
    awscreds_t *ac;
    esbulk_t *eb;
    int i, port, last;
    FILE *f;
    probe_t probe;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    counting_process(cmd, sizeof(cmd), dir);
    ac = awscreds_new("eu-west-1", "es", cmd, on_log, NULL, err, sizeof(err));
    ck_assert_msg(ac != NULL, "%s", err);
    ck_assert_str_eq(ac->cur.access_key_id, "AK1");
    port = probe_start(&probe);
    eb = aws_handle(ac, port);
    signed_with(eb, &probe, id, sizeof(id));
    ck_assert_str_eq(id, "AK1");
    ck_assert_int_eq(awscreds_start(ac, eb, err, sizeof(err)), 0);
    ck_assert_int_eq(ac->running, 1);
    /* 3-second credentials are asked for again every ~1.5 s, and each set
     * taken by the handle (a refused update would keep the old one) */
    for (i = 0; i < 100 && runs(dir) < 3; i++)
        sleep_ms(100);
    ck_assert_int_ge(runs(dir), 3);
    sleep_ms(200);
    pthread_mutex_lock(&ac->lock);
    last = atoi(ac->cur.access_key_id + 2);
    pthread_mutex_unlock(&ac->lock);
    ck_assert_int_ge(last, 3);
    /* the handle signs with the last set read (or one read since) */
    signed_with(eb, &probe, id, sizeof(id));
    ck_assert_msg(atoi(id + 2) >= last, "signed with %s after AK%d was read", id, last);
    ck_assert_int_eq(nlogged, 0);

    /* a process that fails: said, and the credentials in use stay */
    snprintf(path, sizeof(path), "%s/fail", dir);
    ck_assert_ptr_nonnull(f = fopen(path, "w"));
    fprintf(f, "%d\n", runs(dir) + 1);
    fclose(f);
    for (i = 0; i < 100 && __atomic_load_n(&nlogged, __ATOMIC_SEQ_CST) == 0; i++)
        sleep_ms(100);
    ck_assert_int_eq(nlogged, 1);
    ck_assert_str_eq(logged, "AWS credentials not refreshed (the ones in use stay; again in "
                             "10 s): the credential process exited with status 1");
    pthread_mutex_lock(&ac->lock);
    last = atoi(ac->cur.access_key_id + 2);
    pthread_mutex_unlock(&ac->lock);
    ck_assert_int_eq(last, runs(dir) - 1);
    signed_with(eb, &probe, id, sizeof(id));
    ck_assert_int_eq(atoi(id + 2), last);
    /* the stop does not wait for the retry */
    awscreds_destroy(ac);
    esbulk_destroy(eb);
    probe_stop(&probe, port);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("awscreds");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_time);
    tcase_add_test(tc, test_refresh_at);
    tcase_add_test(tc, test_parse);
    tcase_add_test(tc, test_process);
    tcase_add_test(tc, test_env);
    tcase_add_test(tc, test_envcreds);
    tcase_add_test(tc, test_refresh);
    suite_add_tcase(s, tc);

    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
