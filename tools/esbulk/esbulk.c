/*
 * esbulk - command-line front end of libesbulk.
 *
 *   esbulk route --shards N [--routing-shards R] [--partition-size P]
 *                [--routing VALUE] [--mod] [ID ...]
 *   esbulk route --url URL --index NAME [--routing VALUE] [--set K=V] ID ...
 *   esbulk topology --url URL [--set K=V] INDEX ...
 *   esbulk load [--url URL] [--index NAME] [OPTIONS] [FILE ...]   (esbulk_load.c)
 *
 * Exit status: 0 success, 1 a runtime error (cluster, invalid id, an index of
 * topology that does not exist), 2 bad usage.
 */
#define _GNU_SOURCE 1
#include <esbulk.h>

#include "esbulk_load.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_USAGE 2

static const char *usage_text =
    "usage: esbulk route --shards N [--routing-shards R] [--partition-size P]\n"
    "                    [--routing VALUE] [--mod] [ID ...]\n"
    "       esbulk route --url URL --index NAME [--routing VALUE] [--set KEY=VALUE] [ID ...]\n"
    "       esbulk topology --url URL [--set KEY=VALUE] INDEX ...\n"
    "       esbulk load [--url URL] [--index NAME] [OPTIONS] [FILE ...]  (see load --help)\n"
    "       esbulk --version\n"
    "\n"
    "route prints the shard of each ID, one per line (with --url: shard and primary\n"
    "node). Without ID arguments it reads IDs from standard input, one per line.\n";

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "esbulk: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n%s", usage_text);
    return EXIT_USAGE;
}

/* getopt_long's '?' or ':' (opterr 0, optstring ":"): the message, once. */
static int bad_option(const char *cmd, int c, char **argv)
{
    char opt[3] = {'-', (char)optopt, '\0'};
    /* an unknown short option is in optopt, a long one only in argv (and a
     * missing argument's option too: optopt is its value then) */
    const char *name = c == '?' && optopt > 0 && optopt < 128 ? opt : argv[optind - 1];

    fprintf(stderr, "esbulk: %s: ", cmd);
    fprintf(stderr, c == ':' ? "option %s needs an argument" : "unknown option %s", name);
    fprintf(stderr, "\n%s", usage_text);
    return EXIT_USAGE;
}

static int parse_int32(const char *s, int32_t min, int32_t *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min || v > INT32_MAX)
        return -1;
    *out = (int32_t)v;
    return 0;
}

/* Applies "--url" and "--set K=V" options to conf. */
static int conf_apply(esbulk_conf_t *conf, const char *urls, char **sets, int nsets)
{
    char errstr[512];
    int i;

    if (urls != NULL && esbulk_conf_set(conf, "urls", urls, errstr, sizeof(errstr)) != ESBULK_OK) {
        fprintf(stderr, "esbulk: %s\n", errstr);
        return EXIT_USAGE;
    }
    for (i = 0; i < nsets; i++) {
        char *eq = strchr(sets[i], '=');
        if (eq == NULL)
            return usage_error("--set wants KEY=VALUE, got \"%s\"", sets[i]);
        *eq = '\0';
        if (esbulk_conf_set(conf, sets[i], eq + 1, errstr, sizeof(errstr)) != ESBULK_OK) {
            fprintf(stderr, "esbulk: --set: %s\n", errstr);
            return EXIT_USAGE;
        }
    }
    return 0;
}

/* A topology for --url and --set: 0, or the exit status after a message. */
static int open_topology(const char *url, char **sets, int nsets, esbulk_topology_t **topo)
{
    esbulk_conf_t *conf = esbulk_conf_new();
    char errstr[512];
    int rc;

    if (conf == NULL)
        return 1;
    if ((rc = conf_apply(conf, url, sets, nsets)) != 0) {
        esbulk_conf_destroy(conf);
        return rc;
    }
    *topo = esbulk_topology_new(conf, errstr, sizeof(errstr));
    esbulk_conf_destroy(conf);
    if (*topo == NULL) {
        fprintf(stderr, "esbulk: %s\n", errstr);
        return EXIT_USAGE;
    }
    return 0;
}

/* Calls fn for each ID: the arguments, or standard input lines. */
typedef int (id_fn_t)(const char *id, size_t len, void *ctx);

static int for_each_id(int argc, char **argv, id_fn_t *fn, void *ctx)
{
    int i, rc = 0;

    if (argc > 0) {
        for (i = 0; i < argc; i++)
            rc |= fn(argv[i], strlen(argv[i]), ctx);
        return rc;
    }
    {
        char *line = NULL;
        size_t cap = 0;
        ssize_t n;

        while ((n = getline(&line, &cap, stdin)) >= 0) {
            /* the line end is not part of the id (LF or CRLF) */
            if (n > 0 && line[n - 1] == '\n') {
                n--;
                if (n > 0 && line[n - 1] == '\r')
                    n--;
            }
            rc |= fn(line, (size_t)n, ctx);
        }
        free(line);
    }
    return rc;
}

typedef struct {
    esbulk_layout_t *layout;
    const char *routing;
} offline_ctx_t;

static int route_offline_one(const char *id, size_t len, void *arg)
{
    offline_ctx_t *ctx = arg;
    size_t rlen = ctx->routing ? strlen(ctx->routing) : 0;
    int32_t shard;
    esbulk_err_t err;

    err = esbulk_layout_shard(ctx->layout, id, len, ctx->routing, rlen, &shard);
    if (err != ESBULK_OK) {
        fprintf(stderr, "esbulk: id \"%.*s\": %s\n", (int)len, id, esbulk_err2str(err));
        printf("-\n");
        return 1;
    }
    printf("%d\n", (int)shard);
    return 0;
}

typedef struct {
    esbulk_topology_t *topo;
    const char *index;
    const char *routing;
} live_ctx_t;

static int route_live_one(const char *id, size_t len, void *arg)
{
    live_ctx_t *ctx = arg;
    size_t rlen = ctx->routing ? strlen(ctx->routing) : 0;
    char node[256], errstr[512];
    int32_t shard;
    esbulk_err_t err;

    err = esbulk_topology_route(ctx->topo, ctx->index, id, len, ctx->routing, rlen, &shard, node,
                                sizeof(node), errstr, sizeof(errstr));
    if (err != ESBULK_OK) {
        fprintf(stderr, "esbulk: id \"%.*s\": %s\n", (int)len, id, errstr);
        printf("-\t-\n");
        return 1;
    }
    printf("%d\t%s\n", (int)shard, node[0] ? node : "(unassigned)");
    return 0;
}

static int cmd_route(int argc, char **argv)
{
    static const struct option opts[] = {
        {"shards", required_argument, NULL, 's'},
        {"routing-shards", required_argument, NULL, 'r'},
        {"partition-size", required_argument, NULL, 'p'},
        {"routing", required_argument, NULL, 'R'},
        {"mod", no_argument, NULL, 'm'},
        {"url", required_argument, NULL, 'u'},
        {"index", required_argument, NULL, 'i'},
        {"set", required_argument, NULL, 'S'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    int32_t shards = 0, routing_shards = 0, partition = 1;
    const char *routing = NULL, *url = NULL, *index = NULL;
    char *sets[64];
    int nsets = 0, mod = 0, c, rc;

    optind = 1;
    opterr = 0; /* bad_option says it, once */
    while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            if (parse_int32(optarg, 1, &shards))
                return usage_error("--shards wants an integer >= 1, got \"%s\"", optarg);
            break;
        case 'r':
            if (parse_int32(optarg, 1, &routing_shards))
                return usage_error("--routing-shards wants an integer >= 1, got \"%s\"", optarg);
            break;
        case 'p':
            if (parse_int32(optarg, 1, &partition))
                return usage_error("--partition-size wants an integer >= 1, got \"%s\"", optarg);
            break;
        case 'R': routing = optarg; break;
        case 'm': mod = 1; break;
        case 'u': url = optarg; break;
        case 'i': index = optarg; break;
        case 'S':
            if (nsets == (int)(sizeof(sets) / sizeof(sets[0])))
                return usage_error("too many --set options%s", "");
            sets[nsets++] = optarg;
            break;
        case 'h': fputs(usage_text, stdout); return 0;
        default: return bad_option("route", c, argv);
        }
    }
    argc -= optind;
    argv += optind;

    if (url != NULL || index != NULL) {
        live_ctx_t ctx;

        if (url == NULL || index == NULL)
            return usage_error("route: --url and --index go together%s", "");
        if (shards || routing_shards || partition != 1 || mod)
            return usage_error("route: --shards/--routing-shards/--partition-size/--mod are for "
                               "offline routing, not with --url%s", "");
        if ((rc = open_topology(url, sets, nsets, &ctx.topo)) != 0)
            return rc;
        ctx.index = index;
        ctx.routing = routing;
        rc = for_each_id(argc, argv, route_live_one, &ctx);
        esbulk_topology_destroy(ctx.topo);
        return rc ? 1 : 0;
    }

    if (nsets > 0)
        return usage_error("route: --set needs --url%s", "");
    if (shards == 0)
        return usage_error("route: --shards N is required (or --url and --index)%s", "");
    if (routing_shards != 0 && routing_shards % shards != 0 && !mod)
        return usage_error("route: --routing-shards must be a multiple of --shards%s", "");
    if (partition > 1 && routing == NULL)
        return usage_error("route: --partition-size > 1 needs --routing%s", "");
    {
        offline_ctx_t ctx;

        ctx.layout = esbulk_layout_new();
        if (ctx.layout == NULL)
            return 1;
        esbulk_layout_set_shards(ctx.layout, shards);
        esbulk_layout_set_routing_shards(ctx.layout, routing_shards);
        esbulk_layout_set_partition_size(ctx.layout, partition);
        esbulk_layout_set_function(ctx.layout, mod ? ESBULK_ROUTE_MOD : ESBULK_ROUTE_LEGACY);
        ctx.routing = (routing != NULL && *routing != '\0') ? routing : NULL;
        rc = for_each_id(argc, argv, route_offline_one, &ctx);
        esbulk_layout_destroy(ctx.layout);
        return rc ? 1 : 0;
    }
}

static const char *jstr(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : "-";
}

/* Prints a topology description. 1 when it names an index whose layout is
 * not known: it does not exist, has no write index, or could not be read
 * (a script asking about a missing index wants to know); else 0. */
static int print_topology(const char *text, int with_cluster)
{
    json_error_t jerr;
    json_t *root = json_loads(text, 0, &jerr), *nodes, *idx, *prim, *v;
    size_t i;
    int rc = 0;

    if (root == NULL) {
        fprintf(stderr, "esbulk: bad topology description: %s\n", jerr.text);
        return 1;
    }
    nodes = json_object_get(root, "nodes");
    if (with_cluster) {
        printf("cluster: %s %s, %zu nodes, sending to %s\n", jstr(root, "distribution"),
               jstr(root, "version"), json_array_size(nodes),
               strcmp(jstr(root, "mode"), "seeds") == 0 ? "the seed URLs only"
                                                        : "each primary's node");
        printf("  %-20s %-24s %s\n", "NODE", "ID", "HTTP");
        json_array_foreach(nodes, i, v)
            printf("  %-20s %-24s %s%s\n", jstr(v, "name"), jstr(v, "id"), jstr(v, "http"),
                   strcmp(jstr(root, "mode"), "nodes") != 0 ||
                           json_is_true(json_object_get(v, "reachable")) ? "" : " (unreachable)");
    }
    idx = json_object_get(root, "index");
    if (idx != NULL && json_object_get(idx, "shards") == NULL)
        rc = 1;
    if (idx != NULL) {
        const char *name = jstr(idx, "name"), *wi = jstr(idx, "write_index");

        printf("\nindex %s", name);
        if (json_is_string(json_object_get(idx, "write_index")) && strcmp(name, wi) != 0)
            printf(" -> write index %s", wi);
        printf("\n");
        if (!json_is_true(json_object_get(idx, "routable")))
            printf("  not routable: %s\n", jstr(idx, "reason"));
        if (json_object_get(idx, "shards") != NULL) {
            printf("  shards %lld, routing_num_shards %lld, routing_partition_size %lld, "
                   "function %s, version.created %lld, from %s\n",
                   (long long)json_integer_value(json_object_get(idx, "shards")),
                   (long long)json_integer_value(json_object_get(idx, "routing_shards")),
                   (long long)json_integer_value(json_object_get(idx, "partition_size")),
                   jstr(idx, "function"),
                   (long long)json_integer_value(json_object_get(idx, "version_created")),
                   jstr(idx, "source"));
            if (json_is_string(json_object_get(idx, "alias_routing")))
                printf("  alias index_routing: %s\n", jstr(idx, "alias_routing"));
            prim = json_object_get(idx, "primaries");
            printf("  %-6s %-20s %s\n", "SHARD", "PRIMARY", "HTTP");
            json_array_foreach(prim, i, v)
                printf("  %-6lld %-20s %s\n",
                       (long long)json_integer_value(json_object_get(v, "shard")),
                       json_is_string(json_object_get(v, "node")) ? jstr(v, "node") : "(unassigned)",
                       jstr(v, "http"));
        }
    }
    json_decref(root);
    return rc;
}

static int cmd_topology(int argc, char **argv)
{
    static const struct option opts[] = {
        {"url", required_argument, NULL, 'u'},
        {"set", required_argument, NULL, 'S'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *url = NULL;
    char *sets[64], errstr[512], *text;
    esbulk_topology_t *topo;
    int nsets = 0, c, rc = 0, i;

    optind = 1;
    opterr = 0; /* bad_option says it, once */
    while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
        switch (c) {
        case 'u': url = optarg; break;
        case 'S':
            if (nsets == (int)(sizeof(sets) / sizeof(sets[0])))
                return usage_error("too many --set options%s", "");
            sets[nsets++] = optarg;
            break;
        case 'h': fputs(usage_text, stdout); return 0;
        default: return bad_option("topology", c, argv);
        }
    }
    argc -= optind;
    argv += optind;
    if (url == NULL)
        return usage_error("topology: --url is required%s", "");
    if ((rc = open_topology(url, sets, nsets, &topo)) != 0)
        return rc;
    text = esbulk_topology_describe(topo, NULL, errstr, sizeof(errstr));
    if (text == NULL) {
        fprintf(stderr, "esbulk: %s\n", errstr);
        esbulk_topology_destroy(topo);
        return 1;
    }
    rc |= print_topology(text, 1);
    esbulk_free(text);
    for (i = 0; i < argc; i++) {
        text = esbulk_topology_describe(topo, argv[i], errstr, sizeof(errstr));
        if (text == NULL) {
            fprintf(stderr, "esbulk: %s: %s\n", argv[i], errstr);
            rc = 1;
            continue;
        }
        rc |= print_topology(text, 0);
        esbulk_free(text);
    }
    esbulk_topology_destroy(topo);
    return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage_error("a command is required%s", "");
    if (strcmp(argv[1], "route") == 0)
        return cmd_route(argc - 1, argv + 1);
    if (strcmp(argv[1], "topology") == 0)
        return cmd_topology(argc - 1, argv + 1);
    if (strcmp(argv[1], "load") == 0)
        return esbulk_cmd_load(argc - 1, argv + 1);
    if (strcmp(argv[1], "--version") == 0) {
        printf("esbulk %s\n", esbulk_version_str());
        return 0;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(usage_text, stdout);
        return 0;
    }
    return usage_error("unknown command \"%s\"", argv[1]);
}
