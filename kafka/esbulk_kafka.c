/*
 * esbulk-kafka - a Kafka-to-index sink: one member of a consumer group,
 * each message one document, through libesbulk. See esbulk-kafka(1).
 *
 * One thread: it polls the consumer (whose rebalance and commit callbacks
 * run inside rd_kafka_consumer_poll on it), adds documents, serves their
 * results (esbulk_poll runs the result callback on it) and the dead-letter
 * producer's delivery reports (rd_kafka_poll): the partitions' trackers
 * need no locking.
 *
 * Offsets: every message's offset enters its partition's tracker when read
 * and is done when its result is known (indexed, deleted, superseded,
 * skipped, or its dead letter acknowledged by the broker). Only the
 * tracker's watermark (the first offset without its result) is stored
 * (rd_kafka_offsets_store) for librdkafka's committer, which commits it
 * only while no rebalance is under way (group.c).
 * A document whose result cannot be known (possibly indexed) or whose
 * cluster was unavailable is sent again: its _id makes that safe.
 */
#define _GNU_SOURCE 1
#include "job.h"
#include "../tools/common/envcreds.h"
#include "../tools/common/logonce.h"
#include "esm.h" /* esm_result_class: what a result means (tools/mysql/rules.c) */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

volatile sig_atomic_t interrupted;

int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void say(const char *fmt, ...)
{
    va_list ap;

    flockfile(stderr);
    fputs("esbulk-kafka: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    funlockfile(stderr);
}

/* The library's warnings, each at most once a minute (logonce.h); called on
 * its threads: stderr's lock guards the line and lib_logs. */
static void on_lib_log(int32_t level, const char *facility, const char *message, void *opaque)
{
    job_t *job = opaque;

    (void)facility;
    if (level > ESBULK_LOG_WARNING)
        return;
    flockfile(stderr);
    if (logonce_new(&job->lib_logs, message, now_ns(), 60 * 1000000000LL))
        fprintf(stderr, "esbulk-kafka: %s: %s\n", level == ESBULK_LOG_WARNING ? "warning" : "error",
                message);
    funlockfile(stderr);
}

static void on_kafka_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    /* the consumer's properties given to the producer too (and back) are
     * said to be ignored: no news */
    if (level > 4 || strcmp(fac, "CONFWARN") == 0)
        return;
    say("kafka %s: %s: %s", rd_kafka_name(rk), fac, buf);
}

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* ------------------------------------------------------------------------
 * Statistics and the end.
 */
static void print_stats(job_t *job)
{
    int64_t now = now_ns();
    double secs = (double)(now - job->stats_last_ns) / 1e9;
    json_t *parts = json_array(), *root;

    for (part_t *p = job->parts; p != NULL; p = p->next) {
        int64_t lo = -1, hi = -1;
        if (!p->assigned)
            continue;
        rd_kafka_get_watermark_offsets(job->rk, p->topic, p->partition, &lo, &hi);
        int64_t lag = hi < 0 ? -1 : hi - (p->committed >= 0 ? p->committed : (lo > 0 ? lo : 0));
        json_array_append_new(parts, json_pack("{s:s,s:i,s:I,s:I,s:I}", "topic", p->topic,
                                               "partition", (int)p->partition, "committed",
                                               (json_int_t)p->committed, "end", (json_int_t)hi,
                                               "lag", (json_int_t)lag));
    }
    root = json_pack("{s:{s:I,s:f,s:I,s:I,s:I,s:o}}", "stats", "docs", (json_int_t)job->docs,
                     "docs_per_s",
                     secs > 0 ? (double)(int64_t)((double)(job->docs - job->docs_last) / secs * 10) / 10
                              : 0.0,
                     "dead_letters", (json_int_t)job->dead_letters, "skipped",
                     (json_int_t)job->skipped, "resent", (json_int_t)job->resent, "partitions",
                     parts);
    char *s = root ? json_dumps(root, JSON_COMPACT | JSON_REAL_PRECISION(10)) : NULL;
    if (s != NULL) {
        flockfile(stderr);
        fprintf(stderr, "%s\n", s);
        funlockfile(stderr);
    }
    free(s);
    json_decref(root);
    job->stats_last_ns = now;
    job->docs_last = job->docs;
}

/* --exit-at-end: every assigned partition read to its end and every result
 * in (the watermarks are then committed, synchronously, on the way out). */
static int at_end(job_t *job)
{
    int n = 0;

    if (job->held.head || job->resend.head)
        return 0;
    for (part_t *p = job->parts; p != NULL; p = p->next) {
        if (!p->assigned)
            continue;
        n++;
        if (!p->eof || ekf_track_inflight(&p->track) > 0)
            return 0;
    }
    return n > 0;
}

static const char *usage_text =
    "usage: esbulk-kafka -b BROKERS -g GROUP -t TOPIC [OPTIONS]\n"
    "Try 'esbulk-kafka --help' for more information.\n";

static const char *help_text =
    "usage: esbulk-kafka -b BROKERS -g GROUP -t TOPIC [OPTIONS]\n"
    "\n"
    "Indexes Kafka messages into Elasticsearch/OpenSearch as one member of a\n"
    "consumer group; commits only offsets whose messages all have their result.\n"
    "\n"
    "  -b, --brokers LIST        bootstrap servers (kafka.bootstrap.servers)\n"
    "  -g, --group ID            consumer group id (required)\n"
    "  -t, --topic NAME          a topic (repeatable); ^NAME is a regex\n"
    "  -u, --url URL             a cluster node URL (repeatable)\n"
    "  -i, --index TEMPLATE      {topic}, {partition}, strftime %-fields of the\n"
    "                            message time (UTC); default {topic}\n"
    "      --id offset|key|field:NAME  _id (default offset: topic-partition-offset)\n"
    "      --routing-field NAME  routing from a top-level field\n"
    "      --format json|bulk    one JSON object (default), or an action line and a\n"
    "                            source line\n"
    "      --versioning offset|none  the offset as external_gte version (default:\n"
    "                            offset with --id key, else none)\n"
    "      --dead-letter-topic T refused documents go there, with esbulk.* headers\n"
    "      --on-error dead-letter|stop  (default dead-letter with a topic, else stop)\n"
    "      --static-id ID        static membership (group.instance.id)\n"
    "      --revoke-timeout MS   wait for revoked partitions' results (30000)\n"
    "      --drain-timeout MS    at SIGTERM, wait for results (30000)\n"
    "      --broker-timeout MS   brokers unreachable that long: exit 1 (30000)\n"
    "      --commit-interval MS  commit watermarks that often (1000)\n"
    "      --stats-interval S    a statistics JSON line on stderr every S s (0 off)\n"
    "      --exit-at-end         exit once every partition is read and committed\n"
    "  -c, --config FILE         KEY=VALUE lines: options by long name, kafka.*\n"
    "                            (librdkafka) and libesbulk keys\n"
    "      --set KEY=VALUE       the same, on the command line (wins over the file)\n"
    "  -q, --quiet               no assignment lines nor summary\n"
    "\n"
    "Exit status: 0 drained, committed and left the group; 1 runtime failure;\n"
    "2 bad usage or configuration.\n";

static const struct option long_opts[] = {
    {"brokers", required_argument, NULL, 'b'},
    {"group", required_argument, NULL, 'g'},
    {"topic", required_argument, NULL, 't'},
    {"url", required_argument, NULL, 'u'},
    {"index", required_argument, NULL, 'i'},
    {"config", required_argument, NULL, 'c'},
    {"quiet", no_argument, NULL, 'q'},
    {"id", required_argument, NULL, 1},
    {"routing-field", required_argument, NULL, 1},
    {"format", required_argument, NULL, 1},
    {"dead-letter-topic", required_argument, NULL, 1},
    {"on-error", required_argument, NULL, 1},
    {"static-id", required_argument, NULL, 1},
    {"revoke-timeout", required_argument, NULL, 1},
    {"drain-timeout", required_argument, NULL, 1},
    {"broker-timeout", required_argument, NULL, 1},
    {"commit-interval", required_argument, NULL, 1},
    {"stats-interval", required_argument, NULL, 1},
    {"versioning", required_argument, NULL, 1},
    {"exit-at-end", no_argument, NULL, 1},
    {"set", required_argument, NULL, 2},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int usage_error(const char *msg)
{
    say("%s", msg);
    fputs(usage_text, stderr);
    return EXIT_USAGE;
}

/* The librdkafka configuration of the consumer (dl = 0) or of the
 * dead-letter producer: the sink's defaults, the kafka.* keys, then what
 * the sink needs. NULL with the reason in err. */
static rd_kafka_conf_t *kafka_conf(job_t *job, int dl, char *err, size_t err_size)
{
    rd_kafka_conf_t *kc = rd_kafka_conf_new();
    /* memory: librdkafka's pre-fetch is bounded by bytes and by a count of
     * messages per partition (100000 by default: with small messages that
     * count, each message with librdkafka's own record of it, and 1 MiB per
     * partition and fetch took a member to 150 MB); a join: heartbeats every
     * second (librdkafka's 3 s made each phase of a join wait seconds) */
    static const char *const consumer_defaults[][2] = {
        {"partition.assignment.strategy", "cooperative-sticky"},
        {"auto.offset.reset", "earliest"},
        {"queued.max.messages.kbytes", "8192"},
        {"queued.min.messages", "1000"},
        {"fetch.max.bytes", "8388608"}, /* room for 32 partitions' fetches: a
                                           smaller one starves the last ones */
        {"max.partition.fetch.bytes", "262144"},
        {"heartbeat.interval.ms", "1000"},
    };
    static const char *const producer_needs[][2] = {
        {"acks", "all"}, {"enable.idempotence", "true"}, {"linger.ms", "5"}};

    if (kc == NULL) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    if (!dl)
        for (size_t i = 0; i < sizeof(consumer_defaults) / sizeof(consumer_defaults[0]); i++)
            rd_kafka_conf_set(kc, consumer_defaults[i][0], consumer_defaults[i][1], err,
                              err_size);
    for (int i = 0; i < job->o.nkafka; i++) {
        char why[512];
        if (rd_kafka_conf_set(kc, job->o.kafka[i].key, job->o.kafka[i].value, why,
                              sizeof(why)) != RD_KAFKA_CONF_OK) {
            snprintf(err, err_size, "kafka.%s: %s", job->o.kafka[i].key, why);
            rd_kafka_conf_destroy(kc);
            return NULL;
        }
    }
    if (dl) {
        for (size_t i = 0; i < sizeof(producer_needs) / sizeof(producer_needs[0]); i++)
            rd_kafka_conf_set(kc, producer_needs[i][0], producer_needs[i][1], err, err_size);
        rd_kafka_conf_set_dr_msg_cb(kc, on_dl_report);
    } else {
        char interval[24];
        snprintf(interval, sizeof(interval), "%" PRId64, job->o.commit_interval_ms);
        if (rd_kafka_conf_set(kc, "group.id", job->o.group, err, err_size) ||
            (job->o.static_id != NULL &&
             rd_kafka_conf_set(kc, "group.instance.id", job->o.static_id, err, err_size)) ||
            rd_kafka_conf_set(kc, "enable.auto.commit", "true", err, err_size) ||
            rd_kafka_conf_set(kc, "auto.commit.interval.ms", interval, err, err_size) ||
            rd_kafka_conf_set(kc, "enable.auto.offset.store", "false", err, err_size) ||
            rd_kafka_conf_set(kc, "enable.partition.eof", "true", err, err_size)) {
            rd_kafka_conf_destroy(kc);
            return NULL;
        }
        rd_kafka_conf_set_rebalance_cb(kc, on_rebalance);
        rd_kafka_conf_set_offset_commit_cb(kc, on_commit);
    }
    rd_kafka_conf_set_log_cb(kc, on_kafka_log);
    rd_kafka_conf_set_error_cb(kc, on_kafka_error);
    rd_kafka_conf_set_opaque(kc, job);
    return kc;
}

/* Whether the brokers answer, and the topics exist. 0; 1 unreachable
 * (runtime), 2 an unknown topic (usage), with a message said. */
static int check_topics(job_t *job)
{
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t e =
        rd_kafka_metadata(job->rk, 1, NULL, &md, (int)job->o.broker_timeout_ms);

    if (e) {
        say("cannot read the cluster's metadata from the brokers within %" PRId64 " ms: %s",
            job->o.broker_timeout_ms, rd_kafka_err2str(e));
        return EXIT_RUNTIME;
    }
    int rc = 0;
    for (int i = 0; i <= job->o.ntopics && rc == 0; i++) {
        const char *name = i < job->o.ntopics ? job->o.topics[i] : job->o.dead_letter_topic;
        int found = 0;
        if (name == NULL || name[0] == '^')
            continue;
        for (int t = 0; t < md->topic_cnt; t++)
            if (strcmp(md->topics[t].topic, name) == 0 && md->topics[t].err == 0)
                found = 1;
        if (!found) {
            say("%s %s does not exist (the brokers do not know it)",
                i < job->o.ntopics ? "topic" : "dead-letter topic", name);
            rc = EXIT_USAGE;
        }
    }
    rd_kafka_metadata_destroy(md);
    return rc;
}

int main(int argc, char **argv)
{
    job_t job_s, *job = &job_s;
    char err[1024];
    const char *config = NULL;
    envcreds_t env = {NULL, NULL, NULL};
    struct {
        const char *key;
        char *value;
    } cli[256];
    int ncli = 0, c, li, rc = EXIT_RUNTIME;
    sigset_t stops, old;

    memset(job, 0, sizeof(*job));
    if (ekf_opts_init(&job->o)) {
        say("out of memory");
        return EXIT_RUNTIME;
    }
    while ((li = -1, c = getopt_long(argc, argv, "b:g:t:u:i:c:qh", long_opts, &li)) != -1) {
        const char *key = NULL;
        switch (c) {
        case 'b': key = "brokers"; break;
        case 'g': key = "group"; break;
        case 't': key = "topic"; break;
        case 'u': key = "url"; break;
        case 'i': key = "index"; break;
        case 'q': key = "quiet"; break;
        case 'c': config = optarg; continue;
        case 'h': fputs(help_text, stdout); ekf_opts_free(&job->o); return 0;
        case 1: key = long_opts[li].name; break;
        case 2: {
            char *eq = strchr(optarg, '=');
            if (eq == NULL || eq == optarg) {
                ekf_opts_free(&job->o);
                return usage_error("--set KEY=VALUE");
            }
            *eq = '\0';
            key = optarg;
            optarg = eq + 1;
            break;
        }
        default: ekf_opts_free(&job->o); fputs(usage_text, stderr); return EXIT_USAGE;
        }
        if (ncli == (int)(sizeof(cli) / sizeof(cli[0]))) {
            ekf_opts_free(&job->o);
            return usage_error("too many options");
        }
        cli[ncli].key = key;
        cli[ncli++].value = optarg ? optarg : (char *)"true";
    }
    if (optind < argc) {
        ekf_opts_free(&job->o);
        return usage_error("unexpected argument (topics are given with --topic)");
    }
    /* the file first, then the command line, which wins */
    if (config != NULL) {
        int e = ekf_opts_load(&job->o, config, err, sizeof(err));
        if (e) {
            ekf_opts_free(&job->o);
            return e == -2 ? (say("out of memory"), EXIT_RUNTIME) : usage_error(err);
        }
    }
    for (int i = 0; i < ncli; i++) {
        char why[800];
        int e = ekf_opts_set(&job->o, cli[i].key, cli[i].value, 1, why, sizeof(why));
        if (e) {
            ekf_opts_free(&job->o);
            if (e == -2) {
                say("out of memory");
                return EXIT_RUNTIME;
            }
            snprintf(err, sizeof(err), "%s", why);
            return usage_error(err);
        }
    }
    if (ekf_opts_check(&job->o, err, sizeof(err))) {
        ekf_opts_free(&job->o);
        return usage_error(err);
    }
    int have_brokers = 0;
    for (int i = 0; i < job->o.nkafka; i++)
        have_brokers |= !strcmp(job->o.kafka[i].key, "bootstrap.servers") ||
                        !strcmp(job->o.kafka[i].key, "metadata.broker.list");
    if (!have_brokers) {
        ekf_opts_free(&job->o);
        return usage_error("--brokers is required");
    }
    if (envcreds_take(&env) != 0 ||
        envcreds_conf(&env, job->o.conf, "--set auth.username=U", err, sizeof(err)) != 0) {
        envcreds_free(&env);
        ekf_opts_free(&job->o);
        return usage_error(err);
    }
    envcreds_free(&env);

    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* the libraries' threads never take the signals: this one does */
    sigemptyset(&stops);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGTERM);

    rd_kafka_conf_t *kc = kafka_conf(job, 0, err, sizeof(err));
    if (kc == NULL) {
        ekf_opts_free(&job->o);
        return usage_error(err);
    }
    rd_kafka_conf_t *pc = NULL;
    if (job->o.dead_letter_topic && (pc = kafka_conf(job, 1, err, sizeof(err))) == NULL) {
        rd_kafka_conf_destroy(kc);
        ekf_opts_free(&job->o);
        return usage_error(err);
    }
    pthread_sigmask(SIG_BLOCK, &stops, &old);
    job->rk = rd_kafka_new(RD_KAFKA_CONSUMER, kc, err, sizeof(err));
    if (job->rk == NULL) {
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        rd_kafka_conf_destroy(kc);
        if (pc)
            rd_kafka_conf_destroy(pc);
        ekf_opts_free(&job->o);
        return usage_error(err);
    }
    if (pc != NULL && (job->dl = rd_kafka_new(RD_KAFKA_PRODUCER, pc, err, sizeof(err))) == NULL) {
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        rd_kafka_conf_destroy(pc);
        rc = usage_error(err);
        goto out;
    }
    esbulk_conf_set_result_cb(job->o.conf, on_result);
    esbulk_conf_set_log_cb(job->o.conf, on_lib_log);
    esbulk_conf_set_opaque(job->o.conf, job);
    job->eb = esbulk_new(job->o.conf, err, sizeof(err));
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (job->eb == NULL) {
        rc = usage_error(err);
        goto out;
    }
    if ((job->docopts = esbulk_docopts_new()) == NULL) {
        say("out of memory");
        goto out;
    }
    if ((rc = check_topics(job)) != 0)
        goto out;
    rc = EXIT_RUNTIME;
    rd_kafka_poll_set_consumer(job->rk);
    {
        rd_kafka_topic_partition_list_t *sub =
            rd_kafka_topic_partition_list_new(job->o.ntopics);
        for (int i = 0; i < job->o.ntopics; i++)
            rd_kafka_topic_partition_list_add(sub, job->o.topics[i], RD_KAFKA_PARTITION_UA);
        rd_kafka_resp_err_t e = rd_kafka_subscribe(job->rk, sub);
        rd_kafka_topic_partition_list_destroy(sub);
        if (e) {
            say("subscribe: %s", rd_kafka_err2str(e));
            goto out;
        }
    }
    job->t0_ns = job->stats_last_ns = job->commit_last_ns = now_ns();

    while (!interrupted && !job->fatal) {
        rd_kafka_message_t *m;
        int64_t now;

        esbulk_poll(job->eb, 0);
        if (job->dl)
            rd_kafka_poll(job->dl, 0);
        int waiting = pump(job);
        if (job->fatal)
            break;
        now = now_ns();
        if (now - job->commit_last_ns >= 100000000LL) { /* librdkafka commits them */
            store(job, NULL);
            job->commit_last_ns = now;
        }
        if (job->o.stats_interval_s > 0 &&
            now - job->stats_last_ns >= job->o.stats_interval_s * 1000000000LL)
            print_stats(job);
        if (job->o.exit_at_end && at_end(job))
            break;
        if (job->brokers_down_ns != 0 &&
            now - job->brokers_down_ns >= job->o.broker_timeout_ms * 1000000LL) {
            const struct rd_kafka_metadata *md = NULL;
            if (rd_kafka_metadata(job->rk, 0, NULL, &md, 2000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
                rd_kafka_metadata_destroy(md);
                job->brokers_down_ns = 0;
            } else {
                say("the brokers have been unreachable for %" PRId64 " ms: stopping",
                    job->o.broker_timeout_ms);
                job->fatal = 1;
                break;
            }
        }
        if (waiting) {
            /* the buffer is full: results free it; paused, the consumer is
             * polled for its events (rebalances) */
            esbulk_poll(job->eb, job->held.head ? 10 : 5);
            if (!job->paused)
                continue;
            m = rd_kafka_consumer_poll(job->rk, 0);
        } else {
            m = rd_kafka_consumer_poll(job->rk, esbulk_pending(job->eb) > 0 ? 5 : 100);
        }
        if (m == NULL)
            continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            part_t *p = find_part(job, rd_kafka_topic_name(m->rkt), m->partition, 0);
            if (p != NULL && p->assigned)
                p->eof = 1;
        } else if (m->err) {
            if (m->err == RD_KAFKA_RESP_ERR__FATAL || rd_kafka_fatal_error(job->rk, NULL, 0)) {
                say("kafka: fatal: %s", rd_kafka_message_errstr(m));
                job->fatal = 1;
            } else {
                char line[600];
                snprintf(line, sizeof(line), "kafka: %s%s%s", m->rkt ? rd_kafka_topic_name(m->rkt) : "",
                         m->rkt ? ": " : "", rd_kafka_message_errstr(m));
                flockfile(stderr);
                if (logonce_new(&job->lib_logs, line, now_ns(), 60 * 1000000000LL))
                    fprintf(stderr, "esbulk-kafka: %s\n", line);
                funlockfile(stderr);
            }
        } else {
            job->brokers_down_ns = 0;
            handle_message(job, m);
        }
        rd_kafka_message_destroy(m);
    }

    /* the end: every result (bounded), the watermarks committed, the group
     * left (the revoke callback runs inside the close) */
    {
        int64_t t0 = now_ns();
        size_t left = await_results(job, NULL, job->o.drain_timeout_ms);
        int commit_failed = commit_sync(job, NULL) != 0;
        if (left > 0)
            say("%zu document%s without a result after %.1f s: not committed (read "
                "again at the next start)", left, left == 1 ? "" : "s",
                (double)(now_ns() - t0) / 1e9);
        if (job->o.stats_interval_s > 0)
            print_stats(job);
        job->leaving = 1;
        rd_kafka_resp_err_t e = rd_kafka_consumer_close(job->rk);
        if (e)
            say("leaving the group: %s", rd_kafka_err2str(e));
        if (job->dl)
            rd_kafka_flush(job->dl, 10000);
        rc = job->fatal || left > 0 || e || commit_failed ? EXIT_RUNTIME : 0;
        if (!job->o.quiet || rc)
            say("%s: %" PRIu64 " documents indexed, %" PRIu64 " dead letters, %" PRIu64
                " tombstones skipped, %" PRIu64 " sent again, in %.1f s",
                job->fatal ? "stopped at a failure" : interrupted ? "stopped by a signal"
                                                                   : "at the end",
                job->docs, job->dead_letters, job->skipped, job->resent,
                (double)(now_ns() - job->t0_ns) / 1e9);
    }
out:
    job->closing = 1;
    if (job->eb)
        esbulk_destroy(job->eb);
    esbulk_docopts_destroy(job->docopts);
    if (job->dl)
        rd_kafka_destroy(job->dl);
    if (job->rk)
        rd_kafka_destroy(job->rk);
    q_free(&job->held);
    q_free(&job->resend);
    while (job->parts) {
        part_t *p = job->parts;
        job->parts = p->next;
        ekf_track_free(&p->track);
        free(p->topic);
        free(p);
    }
    ekf_opts_free(&job->o);
    return rc;
}
