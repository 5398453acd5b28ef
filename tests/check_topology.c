/* Topology parsers, driven by the answers in tests/data/topology/: tolerant
 * of fields they do not use, strict about those they do. */
#include "http.h"
#include "topology.h"

#include "unit_util.h"

#include <check.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *load(const char *name)
{
    char path[4096];
    json_error_t jerr;
    json_t *j;

    snprintf(path, sizeof(path), "%s/tests/data/topology/%s",
             getenv("top_srcdir") ? getenv("top_srcdir") : ".", name);
    j = json_load_file(path, 0, &jerr);
    ck_assert_msg(j != NULL, "%s: %s", path, jerr.text);
    return j;
}

typedef struct {
    esbulk__index_t e;
    char **ids;
    esbulk_err_t err;
    char errstr[256];
} parsed_t;

static void parse(const char *file, int is_es, parsed_t *p)
{
    json_t *j = load(file);

    memset(p, 0, sizeof(*p));
    esbulk__layout_init(&p->e.layout);
    p->e.write_index = "idx";
    p->err = esbulk__topology_parse_state(j, "idx", is_es, &p->e, &p->ids, p->errstr,
                                          sizeof(p->errstr));
    json_decref(j);
}

static void done(parsed_t *p)
{
    int32_t i;

    if (p->ids != NULL)
        for (i = 0; i < p->e.layout.shards; i++)
            free(p->ids[i]);
    free(p->ids);
    free(p->e.reason);
}

START_TEST(test_root)
{
    char *dist = NULL, *ver = NULL, errstr[256];
    json_t *j = load("root_opensearch.json");

    ck_assert_int_eq(esbulk__topology_parse_root(j, &dist, &ver, errstr, sizeof(errstr)), ESBULK_OK);
    ck_assert_str_eq(dist, "opensearch");
    ck_assert_str_eq(ver, "2.19.6");
    free(dist);
    free(ver);
    json_decref(j);
    j = load("root_elasticsearch.json");
    ck_assert_int_eq(esbulk__topology_parse_root(j, &dist, &ver, errstr, sizeof(errstr)), ESBULK_OK);
    ck_assert_str_eq(dist, "elasticsearch");
    ck_assert_str_eq(ver, "8.14.3");
    free(dist);
    free(ver);
    json_decref(j);
    j = load("root_garbage.json");
    ck_assert_int_eq(esbulk__topology_parse_root(j, &dist, &ver, errstr, sizeof(errstr)),
                     ESBULK_ERR_BAD_RESPONSE);
    ck_assert_ptr_nonnull(strstr(errstr, "version.number"));
    json_decref(j);
}
END_TEST

START_TEST(test_state_basic)
{
    parsed_t p;

    parse("state_basic.json", 0, &p);
    ck_assert_int_eq(p.err, ESBULK_OK);
    ck_assert_int_eq(p.e.state, ESBULK__IDX_OK);
    ck_assert_int_eq(p.e.layout.shards, 3);
    ck_assert_int_eq(p.e.layout.routing_shards, 768);
    ck_assert_int_eq(p.e.layout.partition_size, 1);
    ck_assert_int_eq(p.e.layout.fn, ESBULK_ROUTE_LEGACY);
    ck_assert_int_eq(p.e.version_created, 136407827);
    ck_assert_str_eq(p.ids[0], "n1");
    ck_assert_str_eq(p.ids[1], "n3");
    ck_assert_ptr_null(p.ids[2]); /* unassigned primary */
    done(&p);
}
END_TEST

START_TEST(test_state_flat_settings)
{
    parsed_t p;

    parse("state_flat.json", 1, &p);
    ck_assert_int_eq(p.err, ESBULK_OK);
    ck_assert_int_eq(p.e.layout.shards, 4);
    ck_assert_int_eq(p.e.layout.routing_shards, 8);
    ck_assert_int_eq(p.e.layout.partition_size, 3);
    ck_assert_int_eq(p.e.layout.fn, ESBULK_ROUTE_LEGACY); /* 8.14 index */
    ck_assert_str_eq(p.ids[3], "b");
    done(&p);
}
END_TEST

START_TEST(test_state_mod_function_only_on_elasticsearch)
{
    parsed_t p;

    parse("state_es94.json", 1, &p);
    ck_assert_int_eq(p.err, ESBULK_OK);
    ck_assert_int_eq(p.e.layout.fn, ESBULK_ROUTE_MOD);
    done(&p);
    /* the same number on OpenSearch is not an Elasticsearch 9.4 index */
    parse("state_es94.json", 0, &p);
    ck_assert_int_eq(p.err, ESBULK_OK);
    ck_assert_int_eq(p.e.layout.fn, ESBULK_ROUTE_LEGACY);
    done(&p);
}
END_TEST

START_TEST(test_state_pre7_uses_shard_count)
{
    parsed_t p;

    parse("state_pre7.json", 1, &p);
    ck_assert_int_eq(p.err, ESBULK_OK);
    ck_assert_int_eq(p.e.layout.routing_shards, 5);
    ck_assert_int_eq(esbulk_layout_routing_shards(&p.e.layout), 5);
    done(&p);
}
END_TEST

START_TEST(test_state_not_routable)
{
    static const char *files[] = {"state_time_series.json", "state_routing_path.json",
                                  "state_logsdb.json", "state_closed.json"};
    size_t i;
    parsed_t p;

    for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        parse(files[i], 1, &p);
        ck_assert_msg(p.err == ESBULK_OK, "%s: %s", files[i], p.errstr);
        ck_assert_msg(p.e.state == ESBULK__IDX_UNROUTABLE, "%s routable", files[i]);
        ck_assert_ptr_nonnull(p.e.reason);
        done(&p);
    }
}
END_TEST

START_TEST(test_state_garbage)
{
    static const struct { const char *file, *msg; } cases[] = {
        {"state_bad_nshards.json", "number_of_shards"},
        {"state_bad_shard_key.json", "bad shard entry"},
        {"state_bad_routing_shards.json", "not a multiple"},
        {"state_no_metadata.json", "no metadata"},
        {"state_shards_not_object.json", "not an object"},
        {"root_garbage.json", "no metadata"},
    };
    size_t i;
    parsed_t p;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        parse(cases[i].file, 0, &p);
        ck_assert_msg(p.err == ESBULK_ERR_BAD_RESPONSE, "%s: err %d", cases[i].file, p.err);
        ck_assert_msg(strstr(p.errstr, cases[i].msg) != NULL, "%s: \"%s\"", cases[i].file,
                      p.errstr);
        ck_assert_ptr_null(p.ids);
        done(&p);
    }
}
END_TEST

START_TEST(test_publish_address)
{
    static const struct { const char *in, *out; } v[] = {
        {"127.0.0.1:9200", "127.0.0.1:9200"},
        {"localhost/127.0.0.1:19200", "localhost:19200"},
        {"es1.example.com/10.0.0.5:9200", "es1.example.com:9200"},
        {"[::1]:9200", "[::1]:9200"},
        {"/127.0.0.1:9200", "127.0.0.1:9200"},
    };
    size_t i;

    for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        char *s = esbulk__publish_address_to_hostport(v[i].in);
        ck_assert_str_eq(s, v[i].out);
        free(s);
    }
}
END_TEST

START_TEST(test_urls)
{
    esbulk__url_t *urls;
    char *user = NULL, *pass = NULL, errstr[256];
    int n;

    ck_assert_int_eq(esbulk__urls_parse(" http://a:1/ , https://u:p%40ss@b/es/,c:9201,d,http://e,"
                                        "https://[::1]", &urls, &n, &user, &pass, errstr,
                                        sizeof(errstr)),
                     ESBULK_OK);
    ck_assert_int_eq(n, 6);
    ck_assert_str_eq(urls[0].base, "http://a:1");
    /* no port: the scheme's; a bare host, the server's 9200 */
    ck_assert_str_eq(urls[1].base, "https://b:443/es");
    ck_assert_str_eq(urls[2].base, "http://c:9201");
    ck_assert_str_eq(urls[3].base, "http://d:9200");
    ck_assert_str_eq(urls[4].base, "http://e:80");
    ck_assert_str_eq(urls[5].base, "https://[::1]:443");
    ck_assert_str_eq(user, "u");
    ck_assert_str_eq(pass, "p@ss");
    esbulk__urls_free(urls, n);
    free(user);
    free(pass);
    user = pass = NULL;
    ck_assert_int_eq(esbulk__urls_parse("", &urls, &n, &user, &pass, errstr, sizeof(errstr)),
                     ESBULK_ERR_BAD_VALUE);
    ck_assert_int_eq(esbulk__urls_parse("ftp://x:secret@h", &urls, &n, &user, &pass, errstr,
                                        sizeof(errstr)),
                     ESBULK_ERR_BAD_VALUE);
    ck_assert_ptr_null(strstr(errstr, "secret")); /* credentials never echoed */
}
END_TEST

START_TEST(test_topology_new_errors)
{
    esbulk_conf_t *conf = esbulk_conf_new();
    char errstr[256];

    ck_assert_ptr_null(esbulk_topology_new(NULL, errstr, sizeof(errstr)));
    esbulk_conf_set(conf, "urls", " , ", NULL, 0);
    ck_assert_ptr_null(esbulk_topology_new(conf, errstr, sizeof(errstr)));
    ck_assert_ptr_nonnull(strstr(errstr, "empty"));
    esbulk_conf_destroy(conf);
}
END_TEST

/* Nothing listens on port 1 of loopback: a clear transport error. */
START_TEST(test_unreachable_cluster)
{
    esbulk_conf_t *conf = esbulk_conf_new();
    esbulk_topology_t *topo;
    char errstr[256];
    int32_t shard;

    esbulk_conf_set(conf, "urls", "http://127.0.0.1:1", NULL, 0);
    esbulk_conf_set(conf, "connect.timeout.ms", "500", NULL, 0);
    topo = esbulk_topology_new(conf, errstr, sizeof(errstr));
    ck_assert_ptr_nonnull(topo);
    ck_assert_int_eq(esbulk_topology_route(topo, "idx", "a", 1, NULL, 0, &shard, NULL, 0, errstr,
                                           sizeof(errstr)),
                     ESBULK_ERR_TRANSPORT);
    ck_assert_ptr_nonnull(strstr(errstr, "127.0.0.1:1"));
    ck_assert_int_eq(esbulk_topology_route(topo, "bad*name", "a", 1, NULL, 0, &shard, NULL, 0,
                                           errstr, sizeof(errstr)),
                     ESBULK_ERR_TRANSPORT); /* the cluster is fetched first */
    esbulk_topology_destroy(topo);
    esbulk_conf_destroy(conf);
}
END_TEST

/* ------------------------------------------------------------------------- */
/* A cluster of one node on loopback that answers the cluster read slowly
 * (SLOW_MS), and counts the reads: GET /_nodes/http is asked once a read. */

#define SLOW_MS 300

#define SLOW_CONNS 32

typedef struct {
    int fd, port;
    pthread_mutex_t lock;
    int nodes_reads;
    int nconns, conn_fd[SLOW_CONNS];
    pthread_t conn_th[SLOW_CONNS];
} slow_node_t;

typedef struct {
    slow_node_t *n;
    int c;
} slow_conn_t;

static void *slow_conn(void *arg)
{
    slow_conn_t *k = arg;
    char req[4096], body[512], head[256];
    size_t got = 0;

    for (;;) {
        ssize_t r;
        char *end;
        int blen, hlen;

        /* a GET: the head alone */
        while ((end = memmem(req, got, "\r\n\r\n", 4)) == NULL) {
            if (got == sizeof(req) || (r = read(k->c, req + got, sizeof(req) - got)) <= 0)
                goto out;
            got += (size_t)r;
        }
        if (strncmp(req, "GET /_nodes", 11) == 0) {
            pthread_mutex_lock(&k->n->lock);
            k->n->nodes_reads++;
            pthread_mutex_unlock(&k->n->lock);
            blen = snprintf(body, sizeof(body), "{\"nodes\":{\"n1id\":{\"name\":\"n1\",\"http\":"
                            "{\"publish_address\":\"127.0.0.1:%d\"}}}}", k->n->port);
        } else if (strncmp(req, "GET / ", 6) == 0) {
            usleep(SLOW_MS * 1000); /* the read stays in flight */
            blen = snprintf(body, sizeof(body), "{\"name\":\"n1\",\"version\":{\"distribution\":"
                            "\"opensearch\",\"number\":\"2.19.1\"}}");
        } else {
            blen = snprintf(body, sizeof(body), "{}");
        }
        hlen = snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                        "Content-Length: %d\r\n\r\n", blen);
        if (write(k->c, head, (size_t)hlen) != hlen || write(k->c, body, (size_t)blen) != blen)
            goto out;
        end += 4;
        got -= (size_t)(end - req);
        memmove(req, end, got);
    }
out:
    free(k);
    return NULL;
}

static void *slow_accept(void *arg)
{
    slow_node_t *n = arg;

    while (n->nconns < SLOW_CONNS) {
        int c = accept(n->fd, NULL, NULL), one = 1;
        slow_conn_t *k;

        if (c < 0)
            break;
        (void)setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        k = malloc(sizeof(*k));
        ck_assert_ptr_nonnull(k);
        k->n = n;
        k->c = c;
        n->conn_fd[n->nconns] = c;
        ck_assert_int_eq(pthread_create(&n->conn_th[n->nconns], NULL, slow_conn, k), 0);
        n->nconns++;
    }
    return NULL;
}

static void slow_node_start(slow_node_t *n, pthread_t *th)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    int one = 1;

    memset(n, 0, sizeof(*n));
    pthread_mutex_init(&n->lock, NULL);
    n->fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(n->fd, 0);
    (void)setsockopt(n->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(n->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(getsockname(n->fd, (struct sockaddr *)&sa, &len), 0);
    n->port = ntohs(sa.sin_port);
    ck_assert_int_eq(listen(n->fd, 64), 0);
    ck_assert_int_eq(pthread_create(th, NULL, slow_accept, n), 0);
}

static void slow_node_stop(slow_node_t *n, pthread_t th)
{
    int i;

    shutdown(n->fd, SHUT_RDWR);
    pthread_join(th, NULL);
    for (i = 0; i < n->nconns; i++) {
        shutdown(n->conn_fd[i], SHUT_RDWR);
        pthread_join(n->conn_th[i], NULL);
        close(n->conn_fd[i]);
    }
    close(n->fd);
    pthread_mutex_destroy(&n->lock);
}

static int slow_node_reads(slow_node_t *n)
{
    int r;

    pthread_mutex_lock(&n->lock);
    r = n->nodes_reads;
    pthread_mutex_unlock(&n->lock);
    return r;
}

#define ASKERS 4

typedef struct {
    esbulk_topology_t *topo;
    pthread_barrier_t *go;
    esbulk__cluster_fresh_t fresh;
    esbulk_err_t err;
    esbulk__cluster_t *c;
} asker_t;

static void *ask_cluster(void *arg)
{
    asker_t *a = arg;
    char errstr[256];

    pthread_barrier_wait(a->go);
    a->err = esbulk__topology_get_cluster(a->topo, a->fresh, &a->c, errstr, sizeof(errstr));
    return NULL;
}

/* ASKERS threads ask at once; returns the reads the node saw. */
static int ask_at_once(esbulk_topology_t *topo, slow_node_t *n, esbulk__cluster_fresh_t fresh)
{
    pthread_barrier_t go;
    pthread_t th[ASKERS];
    asker_t a[ASKERS];
    int before = slow_node_reads(n), i;

    ck_assert_int_eq(pthread_barrier_init(&go, NULL, ASKERS), 0);
    for (i = 0; i < ASKERS; i++) {
        a[i].topo = topo;
        a[i].go = &go;
        a[i].fresh = fresh;
        a[i].c = NULL;
        ck_assert_int_eq(pthread_create(&th[i], NULL, ask_cluster, &a[i]), 0);
    }
    for (i = 0; i < ASKERS; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(a[i].err, ESBULK_OK);
        ck_assert_ptr_nonnull(a[i].c);
        ck_assert_int_eq(a[i].c->nnodes, 1);
        esbulk__cluster_release(a[i].c);
    }
    pthread_barrier_destroy(&go);
    return slow_node_reads(n) - before;
}

/* Several topology workers ask for the cluster at once, at every start: one
 * read serves them all (it was one read each). An ask that wants a read
 * begun after it (AFTER) waits out one in flight, and shares the next. */
START_TEST(test_one_cluster_read_at_a_time)
{
    esbulk_conf_t *conf = esbulk_conf_new();
    esbulk_topology_t *topo;
    slow_node_t n;
    pthread_t th;
    char url[64], errstr[256];
    int reads;

    slow_node_start(&n, &th);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", n.port);
    ck_assert_int_eq(esbulk_conf_set(conf, "urls", url, NULL, 0), 0);
    topo = esbulk_topology_new(conf, errstr, sizeof(errstr));
    ck_assert_ptr_nonnull(topo);
    ck_assert_int_eq(ask_at_once(topo, &n, ESBULK__CLUSTER_CACHED), 1);
    /* fresh now: no read at all */
    ck_assert_int_eq(ask_at_once(topo, &n, ESBULK__CLUSTER_CACHED), 0);
    /* not the cache: the first begins a read, the others join it (the read
     * takes SLOW_MS, far longer than the threads take to ask) */
    ck_assert_int_eq(ask_at_once(topo, &n, ESBULK__CLUSTER_JOIN), 1);
    /* the first begins a read; the others came after it began, so they
     * wait for it and share the one begun after it (a thread so late that
     * it finds that one in flight too begins a third) */
    reads = ask_at_once(topo, &n, ESBULK__CLUSTER_AFTER);
    ck_assert_int_ge(reads, 2);
    ck_assert_int_le(reads, 3);
    esbulk_topology_destroy(topo);
    esbulk_conf_destroy(conf);
    slow_node_stop(&n, th);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("topology");
    TCase *tc = tcase_create("core");
    SRunner *sr;
    int failed;

    tcase_add_test(tc, test_root);
    tcase_add_test(tc, test_state_basic);
    tcase_add_test(tc, test_state_flat_settings);
    tcase_add_test(tc, test_state_mod_function_only_on_elasticsearch);
    tcase_add_test(tc, test_state_pre7_uses_shard_count);
    tcase_add_test(tc, test_state_not_routable);
    tcase_add_test(tc, test_state_garbage);
    tcase_add_test(tc, test_publish_address);
    tcase_add_test(tc, test_urls);
    tcase_add_test(tc, test_topology_new_errors);
    tcase_add_test(tc, test_unreachable_cluster);
    tcase_add_test(tc, test_one_cluster_read_at_a_time);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
