/*
 * esbulk load's command line: the options and --set made into the handle's
 * configuration, and the run over the inputs with its exit status. The
 * work is in load_input.c (reading, adding), load_report.c (results,
 * failures, the summary) and load_progress.c (the progress line, --stats).
 *
 * One thread reads the input line by line and calls esbulk_add(); results
 * come back through the result callback, which libesbulk runs only inside
 * esbulk_poll()/esbulk_flush()/esbulk_close() on this same thread, so the
 * counters and the failure files need no locking. Only the log callback
 * runs on the library's threads: it writes under stderr's lock (on_log).
 * The handle is made at the first document (start_engine).
 *
 * Each accepted document carries a small malloc'ed record (line number,
 * action fields and, with --failed, a copy of its source line) as its
 * doc_opaque; the callback writes failures from it and frees it.
 */
#define _XOPEN_SOURCE 700
#include "esbulk_load.h"
#include "load.h"
#include "../common/awscreds.h"
#include "../common/envcreds.h"
#include "../common/firstline.h"
#include "../common/logonce.h"

#include <esbulk.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *load_usage = LOAD_USAGE;

static const char *load_help =
    "usage: esbulk load [OPTIONS] [FILE ...]\n"
    "\n"
    "Loads documents into Elasticsearch/OpenSearch through libesbulk. FILE \"-\" or\n"
    "no FILE reads standard input. Blank lines are skipped, and so is a UTF-8 byte\n"
    "order mark at the start of an input.\n"
    "\n"
    "Input:\n"
    "  --format auto|ndjson|bulk  ndjson: one document per line; bulk: action and\n"
    "                        source line pairs as the _bulk API takes them (delete has\n"
    "                        no source line; one missing is detected when the line\n"
    "                        in its place is an action line of metadata keys only:\n"
    "                        see esbulk(1)). auto (default): bulk when the first\n"
    "                        non-blank line of a file is an object whose only key is\n"
    "                        index/create/update/delete holding an object, else ndjson.\n"
    "                        Action keys: _index, _id, routing, version with\n"
    "                        version_type external|external_gte, if_seq_no with\n"
    "                        if_primary_term, pipeline, require_alias,\n"
    "                        retry_on_conflict; _type is ignored; another key, a bad\n"
    "                        value or an option that does not fit the action fails\n"
    "                        the document\n"
    "  --index NAME          target index, alias or data stream (required for ndjson;\n"
    "                        for bulk, the default of actions without _index)\n"
    "  --op OP               ndjson: index (default), create, update (each line is sent\n"
    "                        as {\"doc\": LINE}) or delete (the line only supplies the id)\n"
    "  --id-field F          ndjson: take _id from the top-level field F (a string, or\n"
    "                        a number as its text; missing or null: no _id; the\n"
    "                        empty string fails the document)\n"
    "  --routing-field F     ndjson: take routing from the top-level field F\n"
    "\n"
    "Connection:\n"
    "  --url URL             a node URL (repeatable); default http://127.0.0.1:9200\n"
    "  --user U --password P | --api-key K | --bearer T\n"
    "                        (or from the environment, out of argv: ESBULK_PASSWORD\n"
    "                        with --user, ESBULK_API_KEY, ESBULK_BEARER)\n"
    "  --aws-region R [--aws-service es|aoss]  sign for Amazon OpenSearch Service\n"
    "                        (Serverless: aoss) with the credentials of the\n"
    "                        environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,\n"
    "                        AWS_SESSION_TOKEN (auth.aws.*)\n"
    "  --aws-credential-process CMD  or those CMD prints (AWS's credential_process\n"
    "                        format), asked for again before they expire; e.g.\n"
    "                        'aws configure export-credentials --format process'\n"
    "  -H, --header 'NAME: VALUE'  an HTTP header for every request, such as\n"
    "                        'X-Opaque-Id: nightly' (repeatable; http.headers)\n"
    "  --insecure            do not verify TLS certificates\n"
    "  --ca-file F           CA certificates to verify the server with\n"
    "\n"
    "Tuning (each maps onto a configuration key, see esbulk-config(7)):\n"
    "  --id-generate none|time|content  ids for documents without one (id.generate)\n"
    "  --flush-docs N  --flush-bytes N  --flush-interval-ms N\n"
    "  --inflight N          requests in flight per node (max.inflight.per.node)\n"
    "  --routing-level node|shard|off\n"
    "  --compression none|gzip\n"
    "  --set KEY=VALUE       any configuration key (repeatable; applied last, so it\n"
    "                        overrides the options above and load's own defaults:\n"
    "                        body.validate=true (false saves CPU; the server then\n"
    "                        reports bad JSON as \"failed to parse\"), and\n"
    "                        enqueue.timeout.ms=0 (a full buffer is waited for in\n"
    "                        esbulk_poll, which frees it; -1 can hang)\n"
    "  --set-file KEY=FILE   the same, the value the first line of FILE: a secret\n"
    "                        (auth.password, auth.api_key, auth.bearer) out of the\n"
    "                        command line, which every user of the machine can read\n"
    "\n";

/* (two strings: ISO C promises literals of 4095 characters only) */
static const char *load_help_output =
    "Output:\n"
    "  --failed FILE         write every document that was not indexed to FILE as\n"
    "                        _bulk pairs (action line with _index, _id, routing and\n"
    "                        the action keys above, then the original source line),\n"
    "                        ready to re-run with 'esbulk load --format bulk FILE'\n"
    "                        (a document whose action line load refused is written\n"
    "                        with that line as read, _index added); and one JSON\n"
    "                        line per failure to FILE.reasons: {\"file\",\"line\",\n"
    "                        \"index\",\"id\",\"status\",\"error_type\",\"reason\",\"err\",\n"
    "                        \"outcome\"}\n"
    "                        (outcome \"failed\" or \"possibly_indexed\"; line is where the\n"
    "                        document starts: its action line in bulk input). A bulk\n"
    "                        line that is no document to re-run (not an action line,\n"
    "                        an action line whose source line is missing) is only in\n"
    "                        .reasons\n"
    "  --stats               after the summary, a table of per-node requests, errors\n"
    "                        and latency percentiles\n"
    "  --quiet               no progress line\n"
    "  --help                this text\n"
    "\n"
    "A progress line (lines read, results, rate, failures, percent done and ETA)\n"
    "is shown on standard error when it is a terminal. The first 20 failures are\n"
    "printed there with their reason, then a count; a summary is always printed\n"
    "there at the end (not after a usage error). Standard output is not used.\n"
    "\n"
    "Documents that libesbulk refuses before sending (not a JSON object, invalid\n"
    "JSON or UTF-8, larger than max.doc.bytes) count as failed as well. A first\n"
    "SIGINT/SIGTERM stops reading and gives the documents in flight 5 seconds;\n"
    "what is left is reported as failed (\"not delivered: closed\").\n"
    "\n"
    "Exit status: 0 every document was indexed; 1 some failed or are possibly\n"
    "indexed (\"N documents failed\"), or a runtime error; 2 bad usage (also: an\n"
    "input file that cannot be opened, or a directory).\n";

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

static int usage_error(const char *msg, const char *arg)
{
    fprintf(stderr, "esbulk load: ");
    fprintf(stderr, msg, arg);
    fprintf(stderr, "\n%s", load_usage);
    return EXIT_USAGE;
}

/* The library's warnings and errors (a node down, the cluster not readable),
 * on stderr as they happen: without them a load against a wrong URL or a
 * dead cluster said nothing until its documents ran out of retries. Each
 * at most once a minute (logonce.h). Called on the library's threads:
 * stderr's lock, which show_progress() holds too, guards the line and the
 * messages said; the progress line is cleared first (the next one redraws
 * it). */
static void on_log(int32_t level, const char *facility, const char *message, void *opaque)
{
    load_t *L = opaque;

    (void)facility;
    if (level > ESBULK_LOG_WARNING)
        return;
    flockfile(stderr);
    if (logonce_new(&L->logs, message, now_ns(), LOG_REPEAT_NS))
        fprintf(stderr, "%sesbulk load: %s: %s\n", L->progress ? "\r\033[K" : "",
                level == ESBULK_LOG_WARNING ? "warning" : "error", message);
    funlockfile(stderr);
}

/* A credentials' refresh that failed (awscreds.c's thread). */
static void on_aws_log(const char *message, void *opaque)
{
    load_t *L = opaque;

    flockfile(stderr);
    fprintf(stderr, "%sesbulk load: warning: %s\n", L->progress ? "\r\033[K" : "", message);
    funlockfile(stderr);
}

/* ------------------------------------------------------------------------- */
/* Options */

enum {
    O_FORMAT = 256, O_URL, O_INDEX, O_OP, O_ID_FIELD, O_ROUTING_FIELD, O_ID_GENERATE,
    O_FLUSH_DOCS, O_FLUSH_BYTES, O_FLUSH_INTERVAL, O_INFLIGHT, O_ROUTING_LEVEL, O_COMPRESSION,
    O_USER, O_PASSWORD, O_API_KEY, O_BEARER, O_INSECURE, O_CA_FILE, O_SET, O_FAILED, O_QUIET,
    O_STATS, O_HELP, O_AWS_REGION, O_AWS_SERVICE, O_AWS_PROCESS, O_SET_FILE, O_HEADER = 'H'
};

static const struct option load_opts[] = {
    {"format", required_argument, NULL, O_FORMAT},
    {"url", required_argument, NULL, O_URL},
    {"index", required_argument, NULL, O_INDEX},
    {"op", required_argument, NULL, O_OP},
    {"id-field", required_argument, NULL, O_ID_FIELD},
    {"routing-field", required_argument, NULL, O_ROUTING_FIELD},
    {"id-generate", required_argument, NULL, O_ID_GENERATE},
    {"flush-docs", required_argument, NULL, O_FLUSH_DOCS},
    {"flush-bytes", required_argument, NULL, O_FLUSH_BYTES},
    {"flush-interval-ms", required_argument, NULL, O_FLUSH_INTERVAL},
    {"inflight", required_argument, NULL, O_INFLIGHT},
    {"routing-level", required_argument, NULL, O_ROUTING_LEVEL},
    {"compression", required_argument, NULL, O_COMPRESSION},
    {"user", required_argument, NULL, O_USER},
    {"password", required_argument, NULL, O_PASSWORD},
    {"api-key", required_argument, NULL, O_API_KEY},
    {"bearer", required_argument, NULL, O_BEARER},
    {"aws-region", required_argument, NULL, O_AWS_REGION},
    {"aws-service", required_argument, NULL, O_AWS_SERVICE},
    {"aws-credential-process", required_argument, NULL, O_AWS_PROCESS},
    {"set-file", required_argument, NULL, O_SET_FILE},
    {"header", required_argument, NULL, O_HEADER},
    {"insecure", no_argument, NULL, O_INSECURE},
    {"ca-file", required_argument, NULL, O_CA_FILE},
    {"set", required_argument, NULL, O_SET},
    {"failed", required_argument, NULL, O_FAILED},
    {"quiet", no_argument, NULL, O_QUIET},
    {"stats", no_argument, NULL, O_STATS},
    {"help", no_argument, NULL, O_HELP},
    {NULL, 0, NULL, 0}};

typedef struct {
    const char *key, *value, *option;
} kv_t;

static int conf_put(esbulk_conf_t *conf, const kv_t *kv)
{
    char errstr[512];

    if (esbulk_conf_set(conf, kv->key, kv->value, errstr, sizeof(errstr)) != ESBULK_OK) {
        fprintf(stderr, "esbulk load: %s: %s\n%s", kv->option, errstr, load_usage);
        return EXIT_USAGE;
    }
    return 0;
}

/* Sets key to the n items joined by sep (in *joined, the caller's to free),
 * as option said them. */
static int conf_put_list(esbulk_conf_t *conf, const char *key, const char *option,
                         const char *const *items, int n, char sep, char **joined)
{
    size_t len = 1, off = 0, k;
    kv_t kv;
    int i;

    for (i = 0; i < n; i++)
        len += strlen(items[i]) + 1;
    if ((*joined = malloc(len)) == NULL) {
        fprintf(stderr, "esbulk load: out of memory\n");
        return 1;
    }
    for (i = 0; i < n; i++) {
        if (i > 0)
            (*joined)[off++] = sep;
        k = strlen(items[i]);
        memcpy(*joined + off, items[i], k);
        off += k;
    }
    (*joined)[off] = '\0';
    kv.key = key;
    kv.value = *joined;
    kv.option = option;
    return conf_put(conf, &kv);
}

static int conf_is(const esbulk_conf_t *conf, const char *key, const char *value)
{
    char buf[64];

    return esbulk_conf_get(conf, key, buf, sizeof(buf), NULL) == ESBULK_OK &&
           strcmp(buf, value) == 0;
}

/* Opens input i ("-": standard input). */
static FILE *open_input(load_t *L, int i)
{
    if (L->ninputs == 0 || strcmp(L->inputs[i], "-") == 0)
        return stdin;
    return fopen(L->inputs[i], "r");
}

int esbulk_cmd_load(int argc, char **argv)
{
    static const kv_t load_defaults[] = {
        /* Add does not wait inside the library: buffer.max.docs counts results
         * not yet served, and only esbulk_poll (this thread) serves them, so a
         * blocking add could wait forever. The add loop polls instead. */
        {"enqueue.timeout.ms", "0", "default"},
        /* report invalid JSON/UTF-8 at add time with the line, not as a
         * server "failed to parse" */
        {"body.validate", "true", "default"},
    };
    kv_t opts[64], sets[MAX_SETS];
    const char *urls[MAX_URLS], *headers[MAX_HEADERS];
    int nopts = 0, nsets = 0, nurls = 0, nheaders = 0, c, i, li, rc = 0, fatal = 0, aws = 0;
    const char *aws_region = NULL, *aws_service = NULL, *aws_process = NULL;
    char *set_values[MAX_SETS] = {NULL}; /* --set-file's values, wiped at the end */
    envcreds_t env = {NULL, NULL, NULL}; /* ESBULK_PASSWORD, ..., wiped at the end */
    char optnames[64][32];
    char *urlbuf = NULL, *headerbuf = NULL, errstr[512], *stats_text;
    esbulk_conf_t *conf = NULL;
    json_t *stats = NULL;
    esbulk_topology_t *topo;
    struct sigaction sa, old_int, old_term;
    int handlers = 0;
    load_t L;
    double el;

    memset(&L, 0, sizeof(L));
    L.format = FMT_AUTO;
    L.op = ESBULK_OP_INDEX;
    interrupted = 0;
    optind = 1;
    opterr = 0; /* the message is load's own, said once (":": a missing argument) */
    while ((li = -1, c = getopt_long(argc, argv, ":H:", load_opts, &li)) != -1) {
        const char *key = NULL;

        if (nopts == (int)(sizeof(opts) / sizeof(opts[0])))
            return usage_error("too many options%s", "");

        switch (c) {
        case O_FORMAT:
            if (strcmp(optarg, "auto") == 0) L.format = FMT_AUTO;
            else if (strcmp(optarg, "ndjson") == 0) L.format = FMT_NDJSON;
            else if (strcmp(optarg, "bulk") == 0) L.format = FMT_BULK;
            else return usage_error("--format wants auto, ndjson or bulk, got \"%s\"", optarg);
            break;
        case O_URL:
            if (nurls == MAX_URLS)
                return usage_error("too many --url options%s", "");
            urls[nurls++] = optarg;
            break;
        case O_HEADER:
            if (nheaders == MAX_HEADERS)
                return usage_error("too many --header options%s", "");
            headers[nheaders++] = optarg;
            break;
        case O_INDEX:
            if (*optarg == '\0')
                return usage_error("--index wants a name%s", "");
            L.index = optarg;
            break;
        case O_OP:
            if (op_from_name(optarg, &L.op) != 0)
                return usage_error("--op wants index, create, update or delete, got \"%s\"",
                                   optarg);
            break;
        case O_ID_FIELD: L.id_field = optarg; break;
        case O_ROUTING_FIELD: L.routing_field = optarg; break;
        case O_ID_GENERATE: key = "id.generate"; break;
        case O_FLUSH_DOCS: key = "flush.docs"; break;
        case O_FLUSH_BYTES: key = "flush.bytes"; break;
        case O_FLUSH_INTERVAL: key = "flush.interval.ms"; break;
        case O_INFLIGHT: key = "max.inflight.per.node"; break;
        case O_ROUTING_LEVEL: key = "routing.level"; break;
        case O_COMPRESSION: key = "compression"; break;
        case O_USER: key = "auth.username"; break;
        case O_PASSWORD: key = "auth.password"; break;
        case O_API_KEY: key = "auth.api_key"; break;
        case O_BEARER: key = "auth.bearer"; break;
        case O_AWS_REGION:
            key = "auth.aws.region";
            if (!aws && nopts < (int)(sizeof(opts) / sizeof(opts[0])) - 1) {
                /* a managed domain answers at one endpoint; its nodes'
                 * addresses are private (--set still wins) */
                opts[nopts].key = "topology.discovery";
                opts[nopts].value = "false";
                opts[nopts++].option = "--aws-region";
            }
            aws = 1;
            aws_region = optarg;
            break;
        case O_AWS_SERVICE:
            key = "auth.aws.service";
            aws_service = optarg;
            break;
        case O_AWS_PROCESS: aws_process = optarg; break;
        case O_CA_FILE: key = "tls.ca.file"; break;
        case O_INSECURE:
            opts[nopts].key = "tls.insecure";
            opts[nopts].value = "true";
            opts[nopts++].option = "--insecure";
            break;
        case O_SET: {
            char *eq = strchr(optarg, '=');

            if (eq == NULL || eq == optarg)
                return usage_error("--set wants KEY=VALUE, got \"%s\"", optarg);
            if (nsets == MAX_SETS)
                return usage_error("too many --set options%s", "");
            *eq = '\0';
            sets[nsets].key = optarg;
            sets[nsets].value = eq + 1;
            sets[nsets++].option = "--set";
            break;
        }
        case O_SET_FILE: {
            /* the value from a file: a secret kept out of argv */
            char *eq = strchr(optarg, '='), why[600];

            if (eq == NULL || eq == optarg)
                return usage_error("--set-file wants KEY=FILE, got \"%s\"", optarg);
            if (nsets == MAX_SETS)
                return usage_error("too many --set options%s", "");
            *eq = '\0';
            if (firstline_read("--set-file", eq + 1, &set_values[nsets], why, sizeof(why)))
                return usage_error("%s", why);
            sets[nsets].key = optarg;
            sets[nsets].value = set_values[nsets];
            sets[nsets++].option = "--set-file";
            break;
        }
        case O_FAILED: L.failed_path = optarg; break;
        case O_QUIET: L.quiet = 1; break;
        case O_STATS: L.show_stats = 1; break;
        case O_HELP:
            fputs(load_help, stdout);
            fputs(load_help_output, stdout);
            return 0;
        case ':': return usage_error("option %s needs an argument", argv[optind - 1]);
        default:
            if (optopt > 0 && optopt < 128) { /* an unknown short option */
                char opt[3] = {'-', (char)optopt, '\0'};

                return usage_error("unknown option %s", opt);
            }
            return usage_error("unknown option %s", argv[optind - 1]);
        }
        if (key != NULL) {
            snprintf(optnames[nopts], sizeof(optnames[nopts]), "--%s",
                     li >= 0 ? load_opts[li].name : key);
            opts[nopts].key = key;
            opts[nopts].value = optarg;
            opts[nopts].option = optnames[nopts];
            nopts++;
        }
    }
    L.inputs = argv + optind;
    L.ninputs = argc - optind;
    if (L.format == FMT_NDJSON && L.index == NULL)
        return usage_error("--index is required for --format ndjson%s", "");
    if ((L.op == ESBULK_OP_DELETE || L.op == ESBULK_OP_UPDATE) && L.id_field == NULL)
        return usage_error("--op %s needs --id-field", op_name((int)L.op));
    if (L.format == FMT_BULK && (L.id_field || L.routing_field || L.op != ESBULK_OP_INDEX))
        return usage_error("--op, --id-field and --routing-field are for ndjson input, "
                           "not --format bulk%s", "");

    /* Inputs: all must open; the total size is known when all are files. */
    {
        int known = 1;

        for (i = 0; i < (L.ninputs ? L.ninputs : 1); i++) {
            struct stat st;
            FILE *fp = open_input(&L, i);

            if (fp == NULL) {
                fprintf(stderr, "esbulk load: cannot open %s: %s\n", L.inputs[i],
                        strerror(errno));
                return EXIT_USAGE;
            }
            if (fstat(fileno(fp), &st) == 0 && S_ISDIR(st.st_mode)) {
                /* opens, then fails at the first read: as a file that cannot be
                 * opened, bad usage */
                fprintf(stderr, "esbulk load: cannot read %s: %s\n", L.inputs[i],
                        strerror(EISDIR));
                fclose(fp);
                return EXIT_USAGE;
            }
            if (fstat(fileno(fp), &st) == 0 && S_ISREG(st.st_mode))
                L.total_bytes += (uint64_t)st.st_size;
            else
                known = 0;
            if (fp != stdin)
                fclose(fp);
        }
        if (!known)
            L.total_bytes = 0;
    }

    /* out of the environment before a credential process could inherit
     * them */
    if (envcreds_take(&env) != 0) {
        fprintf(stderr, "esbulk load: out of memory\n");
        return 1;
    }
    if (aws) {
        /* the credentials from where the AWS tools take them, never argv
         * (which any user on the machine can read) */
        char why[512];

        if ((L.aws = awscreds_new(aws_region, aws_service, aws_process, on_aws_log, &L, why,
                                  sizeof(why))) == NULL) {
            rc = usage_error("--aws-region: %s", why);
            goto out;
        }
    } else if (aws_process != NULL) {
        rc = usage_error("--aws-credential-process needs --aws-region%s", "");
        goto out;
    }

    /* Configuration: load's defaults, the options, the AWS credentials,
     * then --set. */
    if ((conf = esbulk_conf_new()) == NULL) {
        fprintf(stderr, "esbulk load: out of memory\n");
        return 1;
    }
    for (i = 0; i < (int)(sizeof(load_defaults) / sizeof(load_defaults[0])); i++)
        if ((rc = conf_put(conf, &load_defaults[i])) != 0)
            goto out;
    if (nurls > 0 && (rc = conf_put_list(conf, "urls", "--url", urls, nurls, ',', &urlbuf)))
        goto out;
    if (nheaders > 0 &&
        (rc = conf_put_list(conf, "http.headers", "--header", headers, nheaders, '\n', &headerbuf)))
        goto out;
    for (i = 0; i < nopts; i++)
        if ((rc = conf_put(conf, &opts[i])) != 0)
            goto out;
    if (L.aws != NULL) {
        char why[512];

        if (awscreds_conf(L.aws, conf, why, sizeof(why)) != 0) {
            rc = usage_error("%s", why);
            goto out;
        }
    }
    for (i = 0; i < nsets; i++)
        if ((rc = conf_put(conf, &sets[i])) != 0)
            goto out;
    {
        char why[600];

        /* what the command line leaves out, from the environment */
        if (envcreds_conf(&env, conf, "--user", why, sizeof(why)) != 0) {
            rc = usage_error("%s", why);
            goto out;
        }
    }
    if (conf_is(conf, "result.failures_only", "true")) {
        /* successes would then have no result, and their records no owner */
        rc = usage_error("result.failures_only=true is not supported by load%s", "");
        goto out;
    }
    L.gen_ids = !conf_is(conf, "id.generate", "none");
    esbulk_conf_set_result_cb(conf, on_result);
    esbulk_conf_set_log_cb(conf, on_log);
    esbulk_conf_set_opaque(conf, &L);
    /* before the library's threads start: on_log reads it */
    L.progress = !L.quiet && isatty(2);

    if (L.failed_path != NULL) {
        size_t len = strlen(L.failed_path);

        if ((L.reasons_path = malloc(len + 9)) == NULL) {
            rc = 1;
            goto out;
        }
        memcpy(L.reasons_path, L.failed_path, len);
        memcpy(L.reasons_path + len, ".reasons", 9);
        if ((L.failed_fp = fopen(L.failed_path, "w")) == NULL ||
            (L.reasons_fp = fopen(L.reasons_path, "w")) == NULL) {
            fprintf(stderr, "esbulk load: cannot write %s: %s\n",
                    L.failed_fp ? L.reasons_path : L.failed_path, strerror(errno));
            rc = EXIT_USAGE;
            goto out;
        }
    }

    /* The URLs and settings are checked now (a topology does no I/O until
     * asked); the handle is made at the first document (start_engine). */
    if ((topo = esbulk_topology_new(conf, errstr, sizeof(errstr))) == NULL) {
        fprintf(stderr, "esbulk load: %s\n", errstr);
        rc = EXIT_USAGE;
        goto out;
    }
    esbulk_topology_destroy(topo);
    L.conf = conf;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sa.sa_flags = (int)SA_RESETHAND; /* a second signal ends the process */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    handlers = 1;

    clock_gettime(CLOCK_MONOTONIC, &L.t0);
    L.last_progress_ns = now_ns();

    for (i = 0; i < (L.ninputs ? L.ninputs : 1) && !interrupted; i++) {
        FILE *fp = open_input(&L, i);
        int r;

        if (fp == NULL) {
            clear_progress(&L);
            fprintf(stderr, "esbulk load: cannot open %s: %s\n", L.inputs[i], strerror(errno));
            fatal = 1;
            break;
        }
        r = load_input(&L, (uint32_t)i, fp);
        if (fp != stdin)
            fclose(fp);
        if (r == EXIT_USAGE) {
            fatal = EXIT_USAGE;
            break;
        }
        if (r != 0) {
            fatal = 1;
            break;
        }
    }
    if (L.engine_failed) {
        /* esbulk_new refused the configuration (said): as bad usage */
        rc = EXIT_USAGE;
        goto out;
    }
    if (fatal == EXIT_USAGE && L.read_docs == 0) {
        /* nothing was read (--index missing): the message and the usage are
         * all there is to say, no "0 documents read" summary */
        rc = EXIT_USAGE;
        goto out;
    }
    if (interrupted) {
        clear_progress(&L);
        fprintf(stderr, "esbulk load: interrupted after line %" PRIu64 " of %s (the rest of "
                "the input is not read)%s\n", L.at_line, input_name(&L, L.at_input),
                L.eb != NULL ? "; waiting up to 5 s for the documents in flight" : "");
        if (L.eb != NULL)
            esbulk_close(L.eb, 5000);
    } else if (L.eb != NULL) {
        /* flush in slices to keep the progress line moving */
        while (esbulk_flush(L.eb, 250) == ESBULK_ERR_TIMED_OUT && !interrupted)
            show_progress(&L, 1);
        esbulk_close(L.eb, interrupted ? 5000 : -1);
    }
    el = elapsed_s(&L);
    if (L.eb != NULL) {
        /* (no document, no handle: nothing was sent) */
        stats_text = esbulk_stats_json(L.eb);
        if (stats_text != NULL)
            stats = json_loads(stats_text, 0, NULL);
        esbulk_free(stats_text);
        awscreds_destroy(L.aws); /* its thread updates the handle */
        L.aws = NULL;
        esbulk_destroy(L.eb);
        L.eb = NULL;
    }

    print_summary(&L, stats, el);
    if (L.show_stats && stats != NULL)
        print_node_stats(stats);
    if (L.failed_fp != NULL) {
        if (fclose(L.failed_fp) != 0)
            L.write_error = 1;
        L.failed_fp = NULL;
        if (fclose(L.reasons_fp) != 0)
            L.write_error = 1;
        L.reasons_fp = NULL;
        if (L.write_error)
            fprintf(stderr, "esbulk load: writing %s or %s failed\n", L.failed_path,
                    L.reasons_path);
        else if (L.failed + L.possibly > L.unpaired)
            fprintf(stderr, "esbulk load: failed documents are in %s (re-run with --format "
                            "bulk), reasons in %s%s\n", L.failed_path, L.reasons_path,
                    L.unpaired > 0 ? "; lines that are no document to re-run (not an action "
                                     "line, a missing source line) are in the reasons only"
                                   : "");
        else if (L.unpaired > 0)
            fprintf(stderr, "esbulk load: no document to re-run: the failures (lines that are "
                            "not an action line, missing source lines) are in %s\n",
                    L.reasons_path);
    }
    if (L.failed + L.possibly > 0) {
        uint64_t n = L.failed + L.possibly;

        fprintf(stderr, "esbulk load: %" PRIu64 " document%s failed", n, n == 1 ? "" : "s");
        if (L.possibly > 0)
            fprintf(stderr, " (%" PRIu64 " of them possibly indexed)", L.possibly);
        fputc('\n', stderr);
        rc = 1;
    }
    if (fatal)
        rc = fatal;
    else if (L.write_error)
        rc = 1;
out:
    if (handlers) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
    }
    json_decref(stats);
    for (i = 0; i < MAX_SETS; i++)
        firstline_free(set_values[i]);
    envcreds_free(&env);
    awscreds_destroy(L.aws);
    if (L.eb != NULL)
        esbulk_destroy(L.eb);
    if (L.failed_fp != NULL)
        fclose(L.failed_fp);
    if (L.reasons_fp != NULL)
        fclose(L.reasons_fp);
    free(L.reasons_path);
    free(L.scratch);
    esbulk_docopts_destroy(L.docopts);
    free(urlbuf);
    free(headerbuf);
    esbulk_conf_destroy(conf);
    return rc;
}
