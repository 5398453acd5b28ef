/*
 * esbulk-mysql - keeps Elasticsearch/OpenSearch indices equal to MySQL or
 * MariaDB tables: a consistent snapshot read with keyset pagination, then
 * the binary log, through libesbulk. See esbulk-mysql(1).
 *
 * This file: the options, the start (connections, tables, checks, engine)
 * and the exit (statistics, status). The job's services are in job.c, the
 * tables' schema in schema.c, the snapshot in snapshot.c, the followers in
 * binlog.c, poll.c and import.c.
 */
#define _GNU_SOURCE 1
#include "job.h"
#include "../common/awscreds.h"
#include "../common/envcreds.h"
#include "../common/firstline.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *usage_text =
    "usage: esbulk-mysql --config FILE --state FILE [OPTIONS]\n"
    "Try 'esbulk-mysql --help' for more information.\n";

static const char *help_text =
    "usage: esbulk-mysql --config FILE --state FILE [OPTIONS]\n"
    "\n"
    "Keeps indices equal to MySQL/MariaDB tables: a consistent snapshot, then the\n"
    "binary log (ROW format). Resumes from the state file after any stop.\n"
    "\n"
    "Source:\n"
    "  --host H (127.0.0.1)  --port N (3306)  --user U (root)  --password P\n"
    "  --socket PATH         --database DB (default database of [table] sections)\n"
    "  --ssl                 TLS to the server, its certificate verified (the\n"
    "                        system's authorities); implied by each of:\n"
    "  --ssl-ca FILE         the authorities (PEM) to verify the server with\n"
    "  --ssl-cert FILE --ssl-key FILE  a client certificate and its key\n"
    "  --ssl-insecure        TLS without verifying the server's certificate\n"
    "  --password-file F     the password from the file's first line (--password\n"
    "                        is in argv, which every user of the machine can read;\n"
    "                        MYSQL_PWD in the environment is read too)\n"
    "Target:\n"
    "  --url URL             a node URL (repeatable; default http://127.0.0.1:9200)\n"
    "  --set KEY=VALUE       a libesbulk configuration key (repeatable)\n"
    "  --set-file KEY=FILE   the same, the value the file's first line: for secrets\n"
    "                        (auth.password, auth.api_key, ...), out of argv; or\n"
    "                        ESBULK_PASSWORD (with --set auth.username=U),\n"
    "                        ESBULK_API_KEY or ESBULK_BEARER in the environment\n"
    "  --aws-region R        sign for Amazon OpenSearch Service (--aws-service es,\n"
    "                        or aoss for Serverless), with the credentials of the\n"
    "                        environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,\n"
    "                        AWS_SESSION_TOKEN) or of --aws-credential-process\n"
    "  --aws-credential-process CMD  credentials printed by CMD (AWS's\n"
    "                        credential_process format), asked for again before\n"
    "                        they expire, e.g. 'aws configure export-credentials\n"
    "                        --format process'\n"
    "Job:\n"
    "  --config FILE         tables and indices (see esbulk-mysql(1))\n"
    "  --state FILE          checkpoints and binlog position (created if missing)\n"
    "  --page-rows N         rows per keyset page (default 2000)\n"
    "  --decimal string|number  DECIMAL as a JSON string (default) or number\n"
    "  --time-zone +HH:MM    the session time zone, stated in DATETIME/TIMESTAMP\n"
    "                        values (default +00:00)\n"
    "  --snapshot-only       stop after the snapshot\n"
    "  --catch-up            follow the binlog up to the position the server had\n"
    "                        when following started, then stop\n"
    "  --resnapshot          forget the state's checkpoints and position: snapshot anew\n"
    "  --server-id N         the replica id used to read the binlog (default 4242)\n"
    "  --binlog-batch-ms N   binlog changes are gathered at most N ms, then re-read\n"
    "                        and sent at once (default 100)\n"
    "  --poll-column COL     no binlog: after the snapshot, poll each table for rows\n"
    "                        with (COL, key) after the last seen, COL a DATETIME,\n"
    "                        TIMESTAMP or DATE set on every write (deletes are not\n"
    "                        seen)\n"
    "  --poll-lag SECONDS    only rows with COL <= NOW() - SECONDS (default 5)\n"
    "  --poll-interval SECONDS  between polls that found nothing more (default 1)\n"
    "  --import-mode         during the snapshot: refresh_interval -1, replicas 0,\n"
    "                        async translog; the index's own values are saved in the\n"
    "                        state file and restored after it (also after a signal,\n"
    "                        and at the next start after a crash)\n"
    "  --create-index        create each index that does not exist, with a mapping\n"
    "                        from the column types (see esbulk-mysql(1))\n"
    "  --shards N            number_of_shards of the indices created\n"
    "  --forcemerge[=N]      after a snapshot completed in this run, merge each\n"
    "                        index down to N segments (default 1), before the\n"
    "                        import-mode settings are restored\n"
    "  --on-error skip|stop  a row that fails: to the dead-letter file and go on\n"
    "                        (default), or stop (the checkpoint stays before it)\n"
    "  --dead-letter FILE    NDJSON of rows that failed, with the reason\n"
    "  --stats FILE          a statistics JSON written at the end\n"
    "  --quiet               no progress line\n"
    "  --help\n"
    "\n"
    "Exit status: 0 every row synced; 1 some rows failed, or a runtime error;\n"
    "2 bad usage; 3 the binlog position is gone from the server (purged): run\n"
    "with --resnapshot; 4 stopped by SIGINT/SIGTERM before the snapshot (or\n"
    "--catch-up) was complete: the next start resumes.\n";

/* ------------------------------------------------------------------------
 * Options and main.
 */
enum {
    O_HOST = 256, O_PORT, O_USER, O_PASSWORD, O_SOCKET, O_DATABASE, O_URL, O_SET, O_CONFIG,
    O_STATE, O_PAGE_ROWS, O_DECIMAL, O_TZ, O_SNAPSHOT_ONLY, O_CATCH_UP, O_RESNAPSHOT,
    O_SERVER_ID, O_ON_ERROR, O_DEAD, O_STATS, O_QUIET, O_HELP, O_IMPORT, O_POLL_COLUMN,
    O_POLL_LAG, O_POLL_INTERVAL, O_CREATE_INDEX, O_SHARDS, O_FORCEMERGE, O_BINLOG_BATCH_MS,
    O_AWS_REGION, O_AWS_SERVICE, O_AWS_PROCESS, O_PASSWORD_FILE, O_SET_FILE, O_SSL, O_SSL_CA,
    O_SSL_CERT, O_SSL_KEY, O_SSL_INSECURE
};

static const struct option long_opts[] = {
    {"host", required_argument, NULL, O_HOST},
    {"port", required_argument, NULL, O_PORT},
    {"user", required_argument, NULL, O_USER},
    {"password", required_argument, NULL, O_PASSWORD},
    {"password-file", required_argument, NULL, O_PASSWORD_FILE},
    {"ssl", no_argument, NULL, O_SSL},
    {"ssl-ca", required_argument, NULL, O_SSL_CA},
    {"ssl-cert", required_argument, NULL, O_SSL_CERT},
    {"ssl-key", required_argument, NULL, O_SSL_KEY},
    {"ssl-insecure", no_argument, NULL, O_SSL_INSECURE},
    {"socket", required_argument, NULL, O_SOCKET},
    {"database", required_argument, NULL, O_DATABASE},
    {"url", required_argument, NULL, O_URL},
    {"set", required_argument, NULL, O_SET},
    {"set-file", required_argument, NULL, O_SET_FILE},
    {"aws-region", required_argument, NULL, O_AWS_REGION},
    {"aws-service", required_argument, NULL, O_AWS_SERVICE},
    {"aws-credential-process", required_argument, NULL, O_AWS_PROCESS},
    {"config", required_argument, NULL, O_CONFIG},
    {"state", required_argument, NULL, O_STATE},
    {"page-rows", required_argument, NULL, O_PAGE_ROWS},
    {"binlog-batch-ms", required_argument, NULL, O_BINLOG_BATCH_MS},
    {"decimal", required_argument, NULL, O_DECIMAL},
    {"time-zone", required_argument, NULL, O_TZ},
    {"snapshot-only", no_argument, NULL, O_SNAPSHOT_ONLY},
    {"catch-up", no_argument, NULL, O_CATCH_UP},
    {"resnapshot", no_argument, NULL, O_RESNAPSHOT},
    {"server-id", required_argument, NULL, O_SERVER_ID},
    {"on-error", required_argument, NULL, O_ON_ERROR},
    {"dead-letter", required_argument, NULL, O_DEAD},
    {"stats", required_argument, NULL, O_STATS},
    {"quiet", no_argument, NULL, O_QUIET},
    {"import-mode", no_argument, NULL, O_IMPORT},
    {"poll-column", required_argument, NULL, O_POLL_COLUMN},
    {"poll-lag", required_argument, NULL, O_POLL_LAG},
    {"poll-interval", required_argument, NULL, O_POLL_INTERVAL},
    {"create-index", no_argument, NULL, O_CREATE_INDEX},
    {"shards", required_argument, NULL, O_SHARDS},
    {"forcemerge", optional_argument, NULL, O_FORCEMERGE},
    {"help", no_argument, NULL, O_HELP},
    {NULL, 0, NULL, 0}};

/* A credentials' refresh that failed (awscreds.c's thread). */
static void on_aws_log(const char *message, void *opaque)
{
    (void)opaque;
    esm_log("warning: %s", message);
}

static int usage_error(const char *msg)
{
    fprintf(stderr, "esbulk-mysql: %s\n%s", msg, usage_text);
    return ESM_EXIT_USAGE;
}

static void on_signal(int sig)
{
    (void)sig;
    esm_interrupted = 1;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void write_stats(esm_job_t *job)
{
    if (!job->stats_path)
        return;
    json_t *o = json_object();
    double secs = (double)(esm_now_ns() - job->t0_ns) / 1e9;
    uint64_t rows = 0;
    json_t *tables = json_object();
    for (int i = 0; i < job->ntables; i++) {
        esm_table_t *t = &job->tables[i];
        rows += t->rows_read;
        json_t *to = json_object();
        json_object_set_new(to, "rows_read", json_integer((json_int_t)t->rows_read));
        json_object_set_new(to, "rows_failed", json_integer((json_int_t)t->rows_failed));
        json_object_set_new(to, "snapshot_done", json_boolean(t->done));
        json_object_set_new(to, "index", json_string(t->index));
        json_object_set_new(tables, t->fullname, to);
    }
    json_object_set_new(o, "tables", tables);
    json_object_set_new(o, "seconds", json_real(secs));
    json_object_set_new(o, "snapshot_rows", json_integer((json_int_t)rows));
    json_object_set_new(o, "snapshot_rows_per_s", json_real(secs > 0 ? (double)rows / secs : 0));
    json_object_set_new(o, "docs_added", json_integer((json_int_t)job->docs_added));
    json_object_set_new(o, "docs_indexed", json_integer((json_int_t)job->docs_indexed));
    json_object_set_new(o, "docs_superseded", json_integer((json_int_t)job->docs_conflict));
    json_object_set_new(o, "docs_failed", json_integer((json_int_t)job->docs_failed));
    json_object_set_new(o, "rows_unmappable", json_integer((json_int_t)job->rows_unmappable));
    json_object_set_new(o, "docs_dropped", json_integer((json_int_t)job->docs_dropped));
    json_object_set_new(o, "interrupted", json_boolean(esm_interrupted));
    json_object_set_new(o, "deletes", json_integer((json_int_t)job->deletes));
    json_object_set_new(o, "binlog_events", json_integer((json_int_t)job->binlog_events));
    json_object_set_new(o, "binlog_rows", json_integer((json_int_t)job->binlog_rows));
    if (job->poll_column) {
        json_object_set_new(o, "polls", json_integer((json_int_t)job->polls));
        json_object_set_new(o, "poll_rows", json_integer((json_int_t)job->poll_rows));
    }
    json_t *b = json_object_get(job->state, "binlog");
    json_object_set(o, "binlog_position", b ? b : json_null());
    if (job->nlags) {
        int64_t *sorted = malloc(job->nlags * sizeof(int64_t));
        memcpy(sorted, job->lags, job->nlags * sizeof(int64_t));
        qsort(sorted, job->nlags, sizeof(int64_t), cmp_i64);
        json_t *lag = json_object();
        json_object_set_new(lag, "samples", json_integer((json_int_t)job->lag_samples));
        json_object_set_new(lag, "p50_ms", json_integer(sorted[job->nlags / 2]));
        json_object_set_new(lag, "p99_ms", json_integer(sorted[job->nlags * 99 / 100]));
        json_object_set_new(lag, "max_ms", json_integer(sorted[job->nlags - 1]));
        json_object_set_new(o, "binlog_lag", lag);
        free(sorted);
    }
    if (job->napplies) {
        int64_t *sorted = malloc(job->napplies * sizeof(int64_t));
        memcpy(sorted, job->applies, job->napplies * sizeof(int64_t));
        qsort(sorted, job->napplies, sizeof(int64_t), cmp_i64);
        json_t *ap = json_object();
        json_object_set_new(ap, "batches", json_integer((json_int_t)job->napplies));
        json_object_set_new(ap, "p50_ms", json_integer(sorted[job->napplies / 2]));
        json_object_set_new(ap, "p99_ms", json_integer(sorted[job->napplies * 99 / 100]));
        json_object_set_new(ap, "max_ms", json_integer(sorted[job->napplies - 1]));
        json_object_set_new(o, "binlog_apply", ap);
        free(sorted);
    }
    char *es = esbulk_stats_json(job->eb);
    json_t *ej = es ? json_loads(es, 0, NULL) : NULL;
    esbulk_free(es);
    json_object_set_new(o, "esbulk", ej ? ej : json_null());
    if (json_dump_file(o, job->stats_path, JSON_INDENT(1)))
        esm_log("%s: cannot write the statistics", job->stats_path);
    json_decref(o);
}

int main(int argc, char **argv)
{
    esm_job_t job_s, *job = &job_s;
    memset(job, 0, sizeof(*job));
    job->host = "127.0.0.1";
    job->port = 3306;
    job->user = "root";
    job->page_rows = 2000;
    job->binlog_batch_ms = 100;
    job->server_id = 4242;
    job->poll_lag = 5;
    job->poll_interval = 1;
    snprintf(job->map.tz, sizeof(job->map.tz), "+00:00");
    char urls[4096] = "";
    char *sets[128];
    int nsets = 0;
    int set_file[128]; /* sets[i] is a --set-file's KEY=FILE */
    const char *aws_region = NULL, *aws_service = NULL, *aws_process = NULL;
    const char *password_file = NULL;
    char *password_read = NULL; /* from --password-file or MYSQL_PWD, wiped at the end */
    envcreds_t env = {NULL, NULL, NULL}; /* the cluster's, ESBULK_PASSWORD..., wiped too */
    awscreds_t *aws = NULL;
    char errstr[512];
    int rc = ESM_EXIT_FAILED;

    int c;
    while ((c = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
        switch (c) {
        case O_HOST: job->host = optarg; break;
        case O_PORT: job->port = (unsigned)atoi(optarg); break;
        case O_USER: job->user = optarg; break;
        case O_PASSWORD: job->password = optarg; break;
        case O_PASSWORD_FILE: password_file = optarg; break;
        case O_SSL: job->ssl = 1; break;
        case O_SSL_CA: job->ssl = 1, job->ssl_ca = optarg; break;
        case O_SSL_CERT: job->ssl = 1, job->ssl_cert = optarg; break;
        case O_SSL_KEY: job->ssl = 1, job->ssl_key = optarg; break;
        case O_SSL_INSECURE: job->ssl = 1, job->ssl_insecure = 1; break;
        case O_SOCKET: job->socket = optarg; break;
        case O_DATABASE: job->database = optarg; break;
        case O_URL:
            if (strlen(urls) + strlen(optarg) + 2 > sizeof(urls))
                return usage_error("too many --url");
            if (*urls)
                strcat(urls, ",");
            strcat(urls, optarg);
            break;
        case O_SET:
        case O_SET_FILE:
            if (nsets == 128 || !strchr(optarg, '='))
                return usage_error(c == O_SET ? "--set KEY=VALUE" : "--set-file KEY=FILE");
            set_file[nsets] = c == O_SET_FILE;
            sets[nsets++] = optarg;
            break;
        case O_CONFIG: job->config_path = optarg; break;
        case O_AWS_REGION: aws_region = optarg; break;
        case O_AWS_SERVICE: aws_service = optarg; break;
        case O_AWS_PROCESS: aws_process = optarg; break;
        case O_STATE: job->state_path = optarg; break;
        case O_PAGE_ROWS:
            job->page_rows = atoi(optarg);
            if (job->page_rows < 1 || job->page_rows > 1000000)
                return usage_error("--page-rows: 1 to 1000000");
            break;
        case O_BINLOG_BATCH_MS: {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (*end || end == optarg || v < 1 || v > 60000)
                return usage_error("--binlog-batch-ms: 1 to 60000");
            job->binlog_batch_ms = (int)v;
            break;
        }
        case O_DECIMAL:
            if (!strcmp(optarg, "number"))
                job->map.decimal_number = 1;
            else if (strcmp(optarg, "string"))
                return usage_error("--decimal string|number");
            break;
        case O_TZ:
            if (strlen(optarg) != 6 || (optarg[0] != '+' && optarg[0] != '-') ||
                !isdigit((unsigned char)optarg[1]) || !isdigit((unsigned char)optarg[2]) ||
                optarg[3] != ':' || !isdigit((unsigned char)optarg[4]) ||
                !isdigit((unsigned char)optarg[5]))
                return usage_error("--time-zone +HH:MM");
            snprintf(job->map.tz, sizeof(job->map.tz), "%s", optarg);
            break;
        case O_SNAPSHOT_ONLY: job->snapshot_only = 1; break;
        case O_CATCH_UP: job->catch_up = 1; break;
        case O_RESNAPSHOT: job->resnapshot = 1; break;
        case O_SERVER_ID: job->server_id = (unsigned)strtoul(optarg, NULL, 10); break;
        case O_ON_ERROR:
            if (!strcmp(optarg, "stop"))
                job->on_error_stop = 1;
            else if (strcmp(optarg, "skip"))
                return usage_error("--on-error skip|stop");
            break;
        case O_DEAD: job->dead_letter_path = optarg; break;
        case O_STATS: job->stats_path = optarg; break;
        case O_QUIET: job->quiet = 1; break;
        case O_IMPORT: job->import_mode = 1; break;
        case O_POLL_COLUMN: job->poll_column = optarg; break;
        case O_CREATE_INDEX: job->create_index = 1; break;
        case O_SHARDS:
            job->shards = atoi(optarg);
            if (job->shards < 1 || job->shards > 1024)
                return usage_error("--shards: 1 to 1024");
            break;
        case O_FORCEMERGE:
            job->forcemerge = optarg ? atoi(optarg) : 1;
            if (job->forcemerge < 1 || job->forcemerge > 1000)
                return usage_error("--forcemerge[=N]: N segments, 1 to 1000");
            break;
        case O_POLL_LAG:
        case O_POLL_INTERVAL: {
            char *end;
            double v = strtod(optarg, &end);
            if (*end || !(v >= 0 && v <= 86400) || (c == O_POLL_INTERVAL && v < 0.01))
                return usage_error(c == O_POLL_LAG ? "--poll-lag: 0 to 86400 seconds"
                                                   : "--poll-interval: 0.01 to 86400 seconds");
            if (c == O_POLL_LAG)
                job->poll_lag = v;
            else
                job->poll_interval = v;
            break;
        }
        case O_HELP: fputs(help_text, stdout); return 0;
        default: fputs(usage_text, stderr); return ESM_EXIT_USAGE;
        }
    }
    if (optind < argc)
        return usage_error("unexpected argument");
    if (!job->config_path || !job->state_path)
        return usage_error("--config and --state are required");
    if (esm_config_load(&job->cfg, job->config_path, job->database, errstr, sizeof(errstr)))
        return usage_error(errstr);
    if (password_file != NULL && job->password != NULL)
        return usage_error("--password and --password-file: give one");
    if (password_file != NULL) {
        if (firstline_read("--password-file", password_file, &password_read, errstr,
                           sizeof(errstr)))
            return usage_error(errstr);
        job->password = password_read;
    } else if (job->password == NULL && getenv("MYSQL_PWD") != NULL) {
        /* as the MySQL tools read it; taken out of the environment, which
         * a credential process would otherwise inherit */
        if ((password_read = strdup(getenv("MYSQL_PWD"))) == NULL)
            return usage_error("out of memory");
        job->password = password_read;
    }
    unsetenv("MYSQL_PWD");
    if (aws_region == NULL && (aws_service != NULL || aws_process != NULL)) {
        firstline_free(password_read);
        return usage_error("--aws-service and --aws-credential-process need --aws-region");
    }
    /* the cluster's credentials, out of the environment too (before a
     * credential process could inherit them) */
    if (envcreds_take(&env) != 0) {
        firstline_free(password_read);
        return usage_error("out of memory");
    }
    if (aws_region != NULL) {
        /* from where the AWS tools take them, never argv (which any user
         * on the machine can read) */
        char why[400];

        if ((aws = awscreds_new(aws_region, aws_service, aws_process, on_aws_log, NULL, why,
                                sizeof(why))) == NULL) {
            snprintf(errstr, sizeof(errstr), "--aws-region: %s", why);
            envcreds_free(&env);
            firstline_free(password_read);
            return usage_error(errstr);
        }
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    job->t0_ns = esm_now_ns();
    job->progress = !job->quiet && isatty(STDERR_FILENO);

    /* the state file */
    json_error_t jerr;
    if (access(job->state_path, F_OK) == 0) {
        job->state = json_load_file(job->state_path, 0, &jerr);
        if (!job->state || !json_is_object(job->state)) {
            esm_log("%s: not a state file: %s", job->state_path, jerr.text);
            rc = ESM_EXIT_USAGE;
            goto out;
        }
    } else {
        job->state = json_object();
        json_object_set_new(job->state, "format", json_integer(1));
    }
    if (job->resnapshot) {
        /* the documents in the index carry versions up to the state's
         * positions: a new snapshot below them would be refused as older */
        static const char *const kept[] = {"start", "binlog"};
        for (size_t k = 0; k < sizeof(kept) / sizeof(kept[0]); k++) {
            json_t *b = json_object_get(job->state, kept[k]);
            const char *f = json_string_value(json_object_get(b, "file"));
            int64_t v = f ? esm_version_of(f, (uint64_t)json_integer_value(
                                                  json_object_get(b, "pos")))
                          : 0;
            if (v > job->version_floor)
                job->version_floor = v;
        }
        json_object_del(job->state, "start");
        json_object_del(job->state, "binlog");
        json_object_del(job->state, "tables");
    }
    {
        /* a state file belongs to one way of following: the documents'
         * versions differ (binlog positions, or --poll-column times) */
        json_t *start = json_object_get(job->state, "start");
        int polled = json_object_get(start, "poll_from") != NULL;
        int binlogged = json_object_get(job->state, "binlog") != NULL ||
                        json_object_get(start, "file") != NULL;
        if (job->poll_column ? binlogged : polled) {
            rc = usage_error(job->poll_column
                                 ? "the state file follows the binlog: --poll-column needs a "
                                   "new state file (or --resnapshot into a new index)"
                                 : "the state file was made with --poll-column: give it again "
                                   "(or --resnapshot into a new index)");
            goto out;
        }
    }

    /* MySQL */
    if ((job->db = esm_mysql_new(job)) == NULL) {
        esm_log("out of memory");
        goto out;
    }
    mysql_options(job->db, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    if (!mysql_real_connect(job->db, job->socket ? NULL : job->host, job->user, job->password,
                            NULL, job->port, job->socket, 0)) {
        esm_log("cannot connect to MySQL at %s:%u: %s", job->host, job->port,
                mysql_error(job->db));
        goto out;
    }
    {
        char tzq[512];
        snprintf(tzq, sizeof(tzq), "SET time_zone='%s'", job->map.tz);
        if (esm_query(job, job->db, tzq))
            goto out;
    }

    job->tables = calloc((size_t)job->cfg.ntables, sizeof(esm_table_t));
    job->ntables = job->cfg.ntables;
    json_t *st_tables = json_object_get(job->state, "tables");
    for (int i = 0; i < job->ntables; i++) {
        esm_table_t *t = &job->tables[i];
        int e = esm_table_describe(job, &job->cfg.tables[i], t);
        if (e) {
            rc = e; /* a table, column or key that does not fit: exit 2 */
            goto out;
        }
        json_t *ts = json_object_get(st_tables, t->fullname);
        if (ts) {
            json_t *k = json_object_get(ts, "key");
            if (json_is_array(k) && json_array_size(k) == (size_t)t->nkeys)
                t->ack_key = json_incref(k);
            json_t *pk = json_object_get(ts, "poll");
            if (job->poll_column && json_is_array(pk) &&
                json_array_size(pk) == (size_t)t->nkeys + 1)
                t->poll_key = json_incref(pk);
            t->done = json_is_true(json_object_get(ts, "done"));
        }
    }
    if (job->dead_letter_path) {
        job->dead = fopen(job->dead_letter_path, "a");
        if (!job->dead) {
            esm_log("%s: %s", job->dead_letter_path, strerror(errno));
            rc = ESM_EXIT_USAGE;
            goto out;
        }
    }

    /* libesbulk */
    {
        esbulk_conf_t *conf = esbulk_conf_new();
        if (*urls && esbulk_conf_set(conf, "urls", urls, errstr, sizeof(errstr))) {
            esbulk_conf_destroy(conf);
            rc = usage_error(errstr);
            goto out;
        }
        esbulk_conf_set(conf, "result.keep_body", "true", errstr, sizeof(errstr));
        esbulk_conf_set(conf, "body.validate", "true", errstr, sizeof(errstr));
        esbulk_conf_set(conf, "flush.docs", "1000", errstr, sizeof(errstr));
        if (aws != NULL) {
            /* a managed domain answers at one endpoint; its nodes'
             * addresses are private (--set still wins) */
            esbulk_conf_set(conf, "topology.discovery", "false", errstr, sizeof(errstr));
            if (awscreds_conf(aws, conf, errstr, sizeof(errstr))) {
                esbulk_conf_destroy(conf);
                rc = usage_error(errstr);
                goto out;
            }
        }
        for (int i = 0; i < nsets; i++) {
            /* KEY=VALUE split in place (a value may be long: a bearer
             * token, http.headers) */
            char *value = NULL, *eq = strchr(sets[i], '=');
            *eq = '\0';
            /* --set-file: the value is the file's first line (a secret kept
             * out of argv) */
            if (set_file[i] &&
                firstline_read("--set-file", eq + 1, &value, errstr, sizeof(errstr))) {
                esbulk_conf_destroy(conf);
                rc = usage_error(errstr);
                goto out;
            }
            esbulk_err_t e = esbulk_conf_set(conf, sets[i], value != NULL ? value : eq + 1,
                                             errstr, sizeof(errstr));
            firstline_free(value);
            if (e) {
                esbulk_conf_destroy(conf);
                rc = usage_error(errstr);
                goto out;
            }
        }
        /* what --set leaves out, from the environment */
        if (envcreds_conf(&env, conf, "--set auth.username=U", errstr, sizeof(errstr))) {
            esbulk_conf_destroy(conf);
            rc = usage_error(errstr);
            goto out;
        }
        esbulk_conf_set_result_cb(conf, esm_on_result);
        esbulk_conf_set_log_cb(conf, esm_on_lib_log);
        esbulk_conf_set_opaque(conf, job);
        /* the engine's threads never take SIGINT/SIGTERM: this thread does,
         * so that a blocking MySQL read returns (EINTR) and the flag is seen */
        sigset_t stops, old;
        sigemptyset(&stops);
        sigaddset(&stops, SIGINT);
        sigaddset(&stops, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &stops, &old);
        job->eb = esbulk_new(conf, errstr, sizeof(errstr));
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        esbulk_conf_destroy(conf);
        if (!job->eb) {
            /* the configuration refused as a whole (two kinds of
             * credentials, ...): bad usage, as a refused --set is */
            rc = usage_error(errstr);
            goto out;
        }
        if (aws != NULL && awscreds_start(aws, job->eb, errstr, sizeof(errstr))) {
            esm_log("%s", errstr);
            goto out;
        }
        job->opts = esbulk_docopts_new();
    }

    /* a key the binlog cannot be followed on, or a server that logs
     * changes as statements: said before the snapshot, not after it */
    if (!job->snapshot_only && !job->poll_column) {
        int e = esm_binlog_keys_supported(job) ? -2 : esm_binlog_format_row(job);
        if (e) {
            /* refused at start, nothing read or sent: the configuration (or
             * the server's) must change, a restart cannot help */
            if (e == -2)
                rc = ESM_EXIT_USAGE;
            goto out;
        }
    }
    /* a position to follow from must still be on the server */
    if (!job->snapshot_only && !job->poll_column) {
        json_t *b = json_object_get(job->state, "binlog");
        if (!b)
            b = json_object_get(job->state, "start");
        const char *f = json_string_value(json_object_get(b, "file"));
        if (f) {
            int e = esm_binlog_exists(job, f);
            if (e < 0)
                goto out;
            if (e == 0) {
                esm_log("the binary log %s (position %" JSON_INTEGER_FORMAT
                        ") is no longer on the server (purged): the index cannot be brought "
                        "up to date from it; run again with --resnapshot to read the tables "
                        "anew", f, json_integer_value(json_object_get(b, "pos")));
                rc = ESM_EXIT_PURGED;
                goto out;
            }
        }
    }

    if (job->create_index && esm_create_indices(job))
        job->fatal = 1;
    int pending = 0;
    for (int i = 0; i < job->ntables; i++)
        pending += !job->tables[i].done;
    if (!job->fatal) {
        /* a run that died in import mode left the saved values: with
         * --import-mode they are kept (the snapshot goes on), else restored */
        if (pending && job->import_mode) {
            if (esm_import_begin(job))
                job->fatal = 1;
        } else if (esm_import_restore(job)) {
            job->fatal = 1;
        }
    }
    if (!job->fatal && esm_snapshot_run(job) && !esm_interrupted)
        job->fatal = 1;
    /* every snapshot document acknowledged before the binlog phase (after a
     * signal: what is acknowledged within the grace, the rest dropped) */
    esm_drain(job);
    int snapshot_done = 1;
    for (int i = 0; i < job->ntables; i++)
        snapshot_done &= job->tables[i].done;
    /* --forcemerge after a snapshot completed in this run, before the
     * replicas come back (they then copy the merged segments) */
    if (job->forcemerge && pending && snapshot_done && !esm_interrupted && !job->fatal &&
        !job->stop) {
        esm_drain(job);
        if (esm_forcemerge(job))
            job->fatal = 1;
    }
    /* the index's own settings back, before following the binlog (also
     * after a signal or a failure) */
    if (json_object_get(job->state, "import")) {
        esm_drain(job);
        if (esm_import_restore(job))
            job->fatal = 1;
        esm_serve(job, 0, 1);
    }
    if (snapshot_done && !job->quiet) {
        uint64_t rows = 0;
        for (int i = 0; i < job->ntables; i++)
            rows += job->tables[i].rows_read;
        double secs = (double)(esm_now_ns() - job->t0_ns) / 1e9;
        esm_show_progress(job, 1);
        esm_log("snapshot complete: %" PRIu64 " rows read this run in %.1f s (%.0f rows/s)", rows,
                secs, secs > 0 ? (double)rows / secs : 0.0);
    }
    if (snapshot_done && !job->snapshot_only && !job->stop && !job->fatal && !esm_interrupted) {
        if (!job->poll_column && !json_object_get(job->state, "binlog")) {
            json_object_set(job->state, "binlog", json_object_get(job->state, "start"));
            job->state_dirty = 1;
            esm_serve(job, 0, 1);
        }
        int brc = job->poll_column ? esm_poll_follow(job) : esm_binlog_follow(job);
        if (brc == ESM_EXIT_PURGED)
            rc = brc;
        else if (brc)
            job->fatal = 1;
    }
    esm_drain(job);
    if (!job->closed) { /* after a runtime error: what is buffered still */
        esbulk_flush(job->eb, 30000);
        esm_serve(job, 0, 1);
    }
    snapshot_done = 1;
    for (int i = 0; i < job->ntables; i++)
        snapshot_done &= job->tables[i].done;
    /* cut short by a signal: the snapshot, or --catch-up, is not complete */
    int incomplete = !snapshot_done || (job->catch_up && !job->snapshot_only && !job->caught_up);
    if (rc != ESM_EXIT_PURGED && rc != ESM_EXIT_USAGE)
        rc = (job->fatal || job->docs_failed || job->rows_unmappable || job->stop)
                 ? ESM_EXIT_FAILED
             : esm_interrupted && incomplete ? ESM_EXIT_INTERRUPTED
                                             : 0;
    esm_show_progress(job, 1);
    if (!job->quiet || rc)
        esm_log("%s: %" PRIu64 " documents sent, %" PRIu64 " indexed, %" PRIu64
                " superseded, %" PRIu64 " failed, %" PRIu64 " dropped at the stop, %" PRIu64
                " rows unmappable, %" PRIu64 " binlog rows",
                esm_interrupted ? "stopped by a signal" : job->stop ? "stopped at a failure"
                                                                    : "done",
                job->docs_added, job->docs_indexed, job->docs_conflict, job->docs_failed,
                job->docs_dropped, job->rows_unmappable, job->binlog_rows);
    write_stats(job);
out:
    awscreds_destroy(aws); /* its thread updates the handle */
    if (job->eb)
        esbulk_destroy(job->eb);
    esbulk_docopts_destroy(job->opts);
    if (job->dead)
        fclose(job->dead);
    if (job->db)
        mysql_close(job->db);
    for (int i = 0; i < job->ntables; i++) {
        esm_table_t *t = &job->tables[i];
        esm_table_free_described(t);
        free(t->layout_ok);
        json_decref(t->ack_key);
        json_decref(t->poll_key);
        json_decref(t->poll_read);
        while (t->head) {
            esm_unit_t *u = t->head;
            t->head = u->next;
            json_decref(u->key);
            free(u);
        }
        for (size_t j = 0; j < t->npend; j++)
            json_decref(t->pend[j].key);
        free(t->pend);
    }
    while (job->bhead) {
        esm_unit_t *u = job->bhead;
        job->bhead = u->next;
        free(u->file);
        free(u);
    }
    free(job->tables);
    free(job->lags);
    free(job->applies);
    json_decref(job->state);
    esm_config_free(&job->cfg);
    mysql_library_end();
    firstline_free(password_read);
    envcreds_free(&env);
    return rc;
}
