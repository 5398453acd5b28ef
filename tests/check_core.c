/* The engine core (lib/core.c) fed documents, topology and canned answers,
 * with time passed in: every outcome rule of the README's "Decisions",
 * without a cluster, a thread or a socket. */
#include "core.h"
#include "docmem.h"
#include "unit_util.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------- */
/* Fixtures */

static const char *const SEEDS[] = {"http://seed:9200"};

static esbulk__core_conf_t base_conf(void)
{
    esbulk__core_conf_t cf;

    memset(&cf, 0, sizeof(cf));
    cf.flush.flush_docs = 10;
    cf.flush.flush_bytes = 1 << 20;
    cf.flush.flush_interval_ms = 1000;
    cf.level = ESBULK__ROUTING_NODE;
    cf.max_inflight = 2;
    cf.retry_max = 3;
    cf.backoff_ms = 100;
    cf.backoff_max_ms = 1000;
    cf.recheck_ms = 2000;
    cf.refresh_ms = 60000;
    cf.unknown_recheck_ms = 1000;
    cf.refresh_gap_ms = 1000;
    cf.idle_ms = 300000;
    cf.wait_ms = 2000;
    return cf;
}

/* A cluster of n nodes n0.. at http://nI:9200 (one reference). */
static esbulk__cluster_t *cluster_new(int n, const char *const *ids)
{
    esbulk__cluster_t *c = calloc(1, sizeof(*c));
    char buf[64];
    int i;

    atomic_init(&c->refs, 1);
    c->distribution = strdup("opensearch");
    c->version = strdup("2.19.6");
    c->nodes = calloc((size_t)n, sizeof(*c->nodes));
    c->nnodes = n;
    for (i = 0; i < n; i++) {
        c->nodes[i].id = strdup(ids[i]);
        c->nodes[i].name = strdup(ids[i]);
        snprintf(buf, sizeof(buf), "http://%s:9200", ids[i]);
        c->nodes[i].http = strdup(buf);
        c->nodes[i].reachable = 1;
    }
    return c;
}

static const char *const NODES3[] = {"n0", "n1", "n2"};

/* An index entry of `shards` shards whose shard s has its primary on node
 * primary[s] of c (a new reference; takes a reference to c). */
static esbulk__index_t *index_new(const char *name, esbulk__idx_state_t state, int32_t shards,
                                  const int32_t *primary, esbulk__cluster_t *c)
{
    esbulk__index_t *e = calloc(1, sizeof(*e));
    int32_t s;

    atomic_init(&e->refs, 1);
    e->name = strdup(name);
    e->write_index = strdup(name);
    e->state = state;
    esbulk__layout_init(&e->layout);
    e->layout.shards = shards;
    if (state != ESBULK__IDX_OK)
        e->reason = strdup("index does not exist (yet)");
    if (primary != NULL) {
        e->primary = malloc(sizeof(*e->primary) * (size_t)shards);
        for (s = 0; s < shards; s++)
            e->primary[s] = primary[s];
    }
    atomic_fetch_add(&c->refs, 1);
    e->cluster = c;
    return e;
}

/* Documents carry their number as the opaque. */
static esbulk__doc_t *doc_new(esbulk_op_t op, const char *index, const char *id, long n,
                              int64_t deadline)
{
    size_t il = strlen(index), dl = id ? strlen(id) : 0;
    esbulk__doc_t *d = calloc(1, sizeof(*d) + il + 1 + dl + 1);
    char *p = (char *)(d + 1);
    char lines[256];

    d->op = op;
    d->index = memcpy(p, index, il);
    d->index_len = (uint32_t)il;
    if (id != NULL) {
        d->id = memcpy(p + il + 1, id, dl);
        d->id_len = dl;
    }
    d->opaque = (void *)n;
    d->seq_no = d->primary_term = d->version = -1;
    d->deadline_ms = deadline;
    snprintf(lines, sizeof(lines), "{\"index\":{\"_index\":\"%s\"}}\n{\"n\":%ld}\n", index, n);
    d->lines = strdup(lines);
    d->lines_len = strlen(lines);
    d->body_bytes = d->lines_len;
    return d;
}

static long num(const esbulk__doc_t *d)
{
    return (long)d->opaque;
}

typedef struct {
    esbulk__core_t *core;
    esbulk__queue_t done;
    esbulk__core_counts_t counts;
    esbulk__cluster_t *cluster;
} fx_t;

static fx_t fx;

static void fx_open(const esbulk__core_conf_t *cf)
{
    memset(&fx, 0, sizeof(fx));
    fx.core = esbulk__core_new(cf, NULL, 42);
    ck_assert_ptr_nonnull(fx.core);
    ck_assert_int_eq(esbulk__core_set_seeds(fx.core, SEEDS, 1), ESBULK_OK);
}

/* A core with the 3-node cluster n0..n2 (seeds_only: nodes not reachable). */
static void fx_open_cluster(const esbulk__core_conf_t *cf, int seeds_only, int64_t now)
{
    fx_open(cf);
    fx.cluster = cluster_new(3, NODES3);
    fx.cluster->seeds_only = seeds_only;
    atomic_fetch_add(&fx.cluster->refs, 1);
    esbulk__core_set_cluster(fx.core, fx.cluster, now);
}

/* A core with a 3-node cluster and index "logs" of 3 shards, primaries
 * shard s on node s, all known. */
static void fx_open_known(const esbulk__core_conf_t *cf, int64_t now)
{
    const int32_t prim[3] = {0, 1, 2};
    const char *name;

    fx_open_cluster(cf, 0, now);
    /* the index is read when first used: ask and answer it now */
    esbulk__core_add(fx.core, doc_new(ESBULK_OP_INDEX, "logs", "warm", -1, 0), now, now);
    name = esbulk__core_next_fetch(fx.core, now);
    ck_assert_str_eq(name, "logs");
    esbulk__core_index_fetched(fx.core, "logs",
                               index_new("logs", ESBULK__IDX_OK, 3, prim, fx.cluster), ESBULK_OK,
                               NULL, now);
}

/* Takes the outcomes known so far into fx.done. */
static void take(void)
{
    esbulk__core_take_done(fx.core, &fx.done, &fx.counts);
}

/* Pops the outcome of document n from fx.done (fails if absent). */
static esbulk__doc_t *outcome_of(long n)
{
    esbulk__queue_t keep = {0};
    esbulk__doc_t *d, *found = NULL;

    take();
    while ((d = esbulk__queue_pop(&fx.done)) != NULL) {
        if (found == NULL && num(d) == n)
            found = d;
        else
            esbulk__queue_push(&keep, d);
    }
    fx.done = keep;
    ck_assert_msg(found != NULL, "document %ld has no outcome", n);
    return found;
}

static void expect(long n, esbulk_outcome_t outcome, esbulk_err_t err, int32_t status)
{
    esbulk__doc_t *d = outcome_of(n);

    ck_assert_msg(d->outcome == outcome && d->err == err && d->status == status,
                  "document %ld: outcome %d err %d status %d, expected %d %d %d (%s)", n,
                  d->outcome, d->err, d->status, outcome, err, status,
                  esbulk_result_error_reason(d) ? esbulk_result_error_reason(d) : "");
    esbulk__doc_free(d);
}

/* Drops the warm-up document's outcome (number -1), if any. */
static void drop_warm(void)
{
    esbulk__queue_t keep = {0};
    esbulk__doc_t *d;

    take();
    while ((d = esbulk__queue_pop(&fx.done)) != NULL) {
        if (num(d) == -1)
            esbulk__doc_free(d);
        else
            esbulk__queue_push(&keep, d);
    }
    fx.done = keep;
}

static void fx_close(void)
{
    esbulk__doc_t *d;

    take();
    /* every document has had its one outcome */
    ck_assert_uint_eq(esbulk__core_held(fx.core), 0);
    while ((d = esbulk__queue_pop(&fx.done)) != NULL)
        esbulk__doc_free(d);
    esbulk__core_free(fx.core);
    esbulk__cluster_release(fx.cluster);
}

/* An answer of HTTP status with body. */
static void answer_http(esbulk__send_t *s, long status, const char *body, int64_t now)
{
    esbulk__answer_t a;

    memset(&a, 0, sizeof(a));
    a.kind = ESBULK__ANS_HTTP;
    a.status = status;
    a.body = body;
    a.body_len = body ? strlen(body) : 0;
    esbulk__core_answer(fx.core, s, &a, now);
}

static void answer_kind(esbulk__send_t *s, esbulk__ans_kind_t kind, int64_t now)
{
    esbulk__answer_t a;

    memset(&a, 0, sizeof(a));
    a.kind = kind;
    a.message = "canned transport failure";
    esbulk__core_answer(fx.core, s, &a, now);
}

/* A 200 answer for s whose item i has status statuses[i] (all 201 when
 * statuses is NULL). */
static void answer_items(esbulk__send_t *s, const int *statuses, int64_t now)
{
    char *body = malloc(64 + s->ndocs * 200), *p = body;
    size_t i;

    p += sprintf(p, "{\"took\":1,\"errors\":false,\"items\":[");
    for (i = 0; i < s->ndocs; i++) {
        int st = statuses ? statuses[i] : 201;
        if (st < 300)
            p += sprintf(p, "%s{\"index\":{\"_index\":\"%s\",\"_id\":\"x%zu\",\"status\":%d,"
                         "\"result\":\"created\",\"_seq_no\":%zu,\"_primary_term\":1,"
                         "\"_version\":1}}", i ? "," : "", s->docs[i]->index, i, st, i);
        else
            p += sprintf(p, "%s{\"index\":{\"_index\":\"%s\",\"_id\":\"x%zu\",\"status\":%d,"
                         "\"error\":{\"type\":\"%s\",\"reason\":\"canned\"}}}", i ? "," : "",
                         s->docs[i]->index, i, st,
                         st == 429 ? "es_rejected_execution_exception"
                         : st == 409 ? "version_conflict_engine_exception"
                                     : "mapper_parsing_exception");
    }
    sprintf(p, "]}");
    answer_http(s, 200, body, now);
    free(body);
}

static esbulk__send_t *must_send(int force, int64_t now)
{
    esbulk__send_t *s = esbulk__core_next_send(fx.core, force, now);

    ck_assert_msg(s != NULL, "a request was due at %lld", (long long)now);
    return s;
}

/* The node (0..2) a send goes to. */
static int node_of(const esbulk__send_t *s)
{
    const char *p = strstr(s->url, "://n");
    return p ? p[4] - '0' : -1;
}

static int32_t shard_of(const esbulk__doc_t *d)
{
    esbulk_layout_t l;
    int32_t shard = -1;

    esbulk__layout_init(&l);
    l.shards = 3;
    ck_assert_int_eq(esbulk_layout_shard(&l, d->id, d->id_len, NULL, 0, &shard), ESBULK_OK);
    return shard;
}

static void add(long n, const char *id, int64_t now)
{
    char idbuf[32];

    if (id == NULL) {
        snprintf(idbuf, sizeof(idbuf), "id-%ld", n);
        id = idbuf;
    }
    esbulk__core_add(fx.core, doc_new(ESBULK_OP_INDEX, "logs", id, n, 0), now, now);
}

/* Answer every index read asked for: "logs" exists, any other does not. */
static void answer_fetches(int64_t now)
{
    const int32_t prim[3] = {0, 1, 2};
    const char *f;

    while ((f = esbulk__core_next_fetch(fx.core, now)) != NULL)
        esbulk__core_index_fetched(fx.core, f,
                                   strcmp(f, "logs") == 0
                                       ? index_new(f, ESBULK__IDX_OK, 3, prim, fx.cluster)
                                       : index_new(f, ESBULK__IDX_UNKNOWN, 1, NULL, fx.cluster),
                                   ESBULK_OK, NULL, now);
}

/* ------------------------------------------------------------------------- */

/* A document that waited for its index's layout keeps its place in
 * flush.interval.ms: it is due at once if it waited longer than that. */
START_TEST(test_wait_counts_toward_interval)
{
    esbulk__core_conf_t cf = base_conf();
    const int32_t prim[3] = {0, 1, 2};
    esbulk__send_t *s;
    int64_t now = 1000;

    fx_open_cluster(&cf, 0, now);
    add(1, "a", now);
    ck_assert_str_eq(esbulk__core_next_fetch(fx.core, now), "logs");
    now += cf.flush.flush_interval_ms + 500; /* a slow read, within topology.wait.ms */
    esbulk__core_tick(fx.core, now);
    esbulk__core_index_fetched(fx.core, "logs", index_new("logs", ESBULK__IDX_OK, 3, prim,
                                                          fx.cluster), ESBULK_OK, NULL, now);
    s = must_send(0, now); /* due by the interval, no flush asked for */
    ck_assert_int_eq(num(s->docs[0]), 1);
    answer_items(s, NULL, now);
    expect(1, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    fx_close();
}
END_TEST

/* flush.interval.ms and topology.wait.ms count from a document's add, not
 * from when the I/O thread takes it (which, woken only when it would look
 * too late by itself, may be up to flush.interval.ms later): a document
 * added at t and taken at t + 800 is due at t + 1000, and one for an index
 * never read, taken at t + 1500, goes unrouted at t + 2000 and at once.
 * Counted from the taking, a lone document against a silent server had
 * its result after 3994 ms in CI, where 3000 were due (it_topology). */
START_TEST(test_add_time_counts)
{
    esbulk__core_conf_t cf = base_conf();
    esbulk__send_t *s;
    int64_t t = 1000;

    fx_open_known(&cf, t);
    while ((s = esbulk__core_next_send(fx.core, 1, t)) != NULL) /* the warm-up document */
        answer_items(s, NULL, t);
    esbulk__core_add(fx.core, doc_new(ESBULK_OP_INDEX, "logs", "a", 1, 0), t, t + 800);
    ck_assert_ptr_null(esbulk__core_next_send(fx.core, 0, t + 999));
    s = must_send(0, t + cf.flush.flush_interval_ms); /* not t + 1800 */
    ck_assert_uint_eq(s->ndocs, 1);
    ck_assert_int_eq(num(s->docs[0]), 1);
    answer_items(s, NULL, t + 1100);
    expect(1, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);

    /* an index never read: its read is asked for and not answered */
    t += 5000;
    esbulk__core_add(fx.core, doc_new(ESBULK_OP_INDEX, "slow", "b", 2, 0), t, t + 1500);
    ck_assert_str_eq(esbulk__core_next_fetch(fx.core, t + 1500), "slow");
    esbulk__core_tick(fx.core, t + cf.wait_ms - 1);
    ck_assert_ptr_null(esbulk__core_next_send(fx.core, 0, t + cf.wait_ms - 1));
    esbulk__core_tick(fx.core, t + cf.wait_ms); /* not t + 3500 */
    s = must_send(0, t + cf.wait_ms);          /* and due by the interval at once */
    ck_assert_uint_eq(s->ndocs, 1);
    ck_assert_int_eq(num(s->docs[0]), 2);
    ck_assert_int_eq(s->docs[0]->unrouted, 1);
    answer_items(s, NULL, t + cf.wait_ms + 100);
    expect(2, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);

    /* an add stamped after the core's now counts as now */
    t += 5000;
    esbulk__core_add(fx.core, doc_new(ESBULK_OP_INDEX, "logs", "c", 3, 0), t + 50, t);
    ck_assert_ptr_null(esbulk__core_next_send(fx.core, 0, t + 999));
    s = must_send(0, t + cf.flush.flush_interval_ms);
    answer_items(s, NULL, t + 1100);
    expect(3, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    esbulk__core_index_fetched(fx.core, "slow", NULL, ESBULK_ERR_TRANSPORT, "canned", t + 1200);
    fx_close();
}
END_TEST

/* Documents of a known index go to the node of their primary, grouped. */
/* A request holds at most flush.docs documents and, past its first,
 * at most flush.bytes of lines; documents keep their order across
 * requests, and a first document larger than flush.bytes goes alone. */
/* The ahead links (doc.h): each document pushed links the one pushed
 * ESBULK__AHEAD before it, and a document that left the queue is never
 * written again (its record may be another thread's by then). */
START_TEST(test_ahead_links)
{
    enum { N = 3 * ESBULK__AHEAD };
    esbulk__doc_t *d[N], *sentinel = (esbulk__doc_t *)&sentinel;
    esbulk__queue_t q = {0};
    esbulk__ahead_t a;
    int i, popped = 0;

    memset(&a, 0, sizeof(a));
    for (i = 0; i < N; i++)
        d[i] = doc_new(ESBULK_OP_INDEX, "logs", "x", i, 0);
    for (i = 0; i < 2 * ESBULK__AHEAD; i++)
        esbulk__queue_push_ahead(&q, &a, d[i]);
    for (i = 0; i < 2 * ESBULK__AHEAD; i++)
        ck_assert_ptr_eq(d[i]->ahead, i < ESBULK__AHEAD ? d[i + ESBULK__AHEAD] : NULL);
    /* empty the queue down to one document; those that left are marked */
    while (q.count > 1) {
        esbulk__doc_t *x = esbulk__queue_pop_ahead(&q, &a);

        ck_assert_ptr_eq(x, d[popped++]);
        x->ahead = sentinel;
    }
    /* new pushes link only from what is still queued */
    for (i = 2 * ESBULK__AHEAD; i < N; i++)
        esbulk__queue_push_ahead(&q, &a, d[i]);
    for (i = 0; i < popped; i++)
        ck_assert_ptr_eq(d[i]->ahead, sentinel);
    ck_assert_ptr_eq(d[popped]->ahead, d[popped + ESBULK__AHEAD]);
    while (q.count > 0)
        ck_assert_ptr_eq(esbulk__queue_pop_ahead(&q, &a), d[popped++]);
    ck_assert_int_eq(popped, N);
    for (i = 0; i < ESBULK__AHEAD; i++)
        ck_assert_ptr_null(a.doc[i]);

    /* a queue taken whole (the hand-off to the I/O thread): the pushes
     * after it do not link from the documents taken */
    {
        esbulk__queue_t taken = {0};

        for (i = 0; i < ESBULK__AHEAD; i++)
            esbulk__queue_push_ahead(&q, &a, d[i]);
        esbulk__queue_take_ahead(&taken, &q, &a);
        ck_assert_uint_eq(taken.count, ESBULK__AHEAD);
        ck_assert_ptr_null(q.head);
        for (i = 0; i < ESBULK__AHEAD; i++)
            d[i]->ahead = sentinel;
        for (i = ESBULK__AHEAD; i < 2 * ESBULK__AHEAD; i++)
            esbulk__queue_push_ahead(&q, &a, d[i]);
        for (i = 0; i < ESBULK__AHEAD; i++)
            ck_assert_ptr_eq(d[i]->ahead, sentinel);
    }
    for (i = 0; i < N; i++)
        esbulk__doc_free(d[i]);
}
END_TEST

/* The core's queues carry ahead links: a destination's queue (send_batch
 * prefetches by them) and the outcomes (the serving thread does); the
 * outcomes taken are not written again by later deliveries. */
START_TEST(test_ahead_links_in_core)
{
    enum { N = 3 * ESBULK__AHEAD, MORE = 4 };
    esbulk__core_conf_t cf = base_conf();
    esbulk__doc_t *d[N + MORE], *sentinel = (esbulk__doc_t *)&sentinel, *x;
    esbulk__send_t *s;
    int64_t now = 1000;
    int i;

    cf.level = ESBULK__ROUTING_OFF;
    cf.flush.flush_docs = ESBULK__AHEAD / 2;
    fx_open(&cf);
    for (i = 0; i < N + MORE; i++)
        d[i] = doc_new(ESBULK_OP_INDEX, "logs", "x", i, 0);
    for (i = 0; i < N; i++)
        esbulk__core_add(fx.core, d[i], now, now);
    for (i = 0; i < N; i++)
        ck_assert_ptr_eq(d[i]->ahead, i + ESBULK__AHEAD < N ? d[i + ESBULK__AHEAD] : NULL);
    while ((s = esbulk__core_next_send(fx.core, 1, now)) != NULL)
        answer_items(s, NULL, now);
    take();
    ck_assert_uint_eq(fx.done.count, N);
    for (x = fx.done.head, i = 0; x != NULL; x = x->next, i++) {
        ck_assert_ptr_eq(x, d[i]);
        ck_assert_ptr_eq(x->ahead, i + ESBULK__AHEAD < N ? d[i + ESBULK__AHEAD] : NULL);
        x->ahead = sentinel; /* the serving thread's now */
    }
    for (i = N; i < N + MORE; i++)
        esbulk__core_add(fx.core, d[i], now, now);
    while ((s = esbulk__core_next_send(fx.core, 1, now)) != NULL)
        answer_items(s, NULL, now);
    for (i = 0; i < N; i++)
        ck_assert_ptr_eq(d[i]->ahead, sentinel);
    for (i = 0; i < N + MORE; i++)
        expect(i, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    fx_close();
}
END_TEST

/* A document expired from a destination's queue leaves its ahead ring: the
 * pushes after it never write its record (the serving thread's by then). */
START_TEST(test_ahead_forgets_expired)
{
    enum { N = ESBULK__AHEAD / 2, MORE = ESBULK__AHEAD };
    esbulk__core_conf_t cf = base_conf();
    esbulk__doc_t *sentinel = (esbulk__doc_t *)&sentinel, *x;
    esbulk__send_t *s;
    int64_t now = 1000;
    int i;

    cf.level = ESBULK__ROUTING_OFF;
    cf.max_inflight = 1;
    fx_open(&cf);
    esbulk__core_add(fx.core, doc_new(ESBULK_OP_INDEX, "logs", "a", 0, 0), now, now);
    s = must_send(1, now);
    /* the only target is busy: these wait in its queue, in its ring */
    for (i = 1; i <= N; i++)
        esbulk__core_add(fx.core, doc_new(ESBULK_OP_INDEX, "logs", "x", i, now + 300), now, now);
    esbulk__core_tick(fx.core, now + 300);
    take();
    ck_assert_uint_eq(fx.done.count, N);
    for (x = fx.done.head; x != NULL; x = x->next)
        x->ahead = sentinel; /* the serving thread's now */
    for (i = N + 1; i <= N + MORE; i++)
        esbulk__core_add(fx.core, doc_new(ESBULK_OP_INDEX, "logs", "x", i, 0), now + 300,
                         now + 300);
    for (x = fx.done.head; x != NULL; x = x->next)
        ck_assert_ptr_eq(x->ahead, sentinel);
    answer_items(s, NULL, now + 300);
    while ((s = esbulk__core_next_send(fx.core, 1, now + 300)) != NULL)
        answer_items(s, NULL, now + 300);
    expect(0, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    for (i = 1; i <= N; i++)
        expect(i, ESBULK_OUTCOME_FAILED, ESBULK_ERR_DELIVERY_TIMEOUT, 0);
    for (i = N + 1; i <= N + MORE; i++)
        expect(i, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    fx_close();
}
END_TEST

START_TEST(test_batch_limits)
{
    esbulk__core_conf_t cf = base_conf();
    esbulk__send_t *s;
    int64_t now = 1000;
    size_t i, per, bytes;
    long n, next = 0;

    cf.level = ESBULK__ROUTING_OFF;
    cf.flush.flush_docs = 7;
    {
        esbulk__doc_t *d = doc_new(ESBULK_OP_INDEX, "logs", "x", 9, 0);

        per = d->lines_len + 1; /* one document's lines, with a two-digit number */
        esbulk__doc_free(d);
    }
    cf.flush.flush_bytes = 3 * per + per / 2; /* 3 documents fit, not 4 */
    fx_open(&cf);
    for (n = 0; n < 20; n++)
        add(n, NULL, now);
    while ((s = esbulk__core_next_send(fx.core, 1, now)) != NULL) {
        ck_assert_uint_eq(s->ndocs, next + 3 <= 20 ? 3 : 20 - next);
        for (i = 0, bytes = 0; i < s->ndocs; i++) {
            const esbulk__doc_t *d = s->docs[i];

            ck_assert_int_eq(num(d), next++);
            bytes += d->lines_len;
            /* the compact arrays say what the records say */
            ck_assert_ptr_eq(s->lines[i].p, d->lines);
            ck_assert_uint_eq(s->lines[i].len, d->lines_len);
            ck_assert_ptr_eq(s->want[i].index, d->index);
            ck_assert_uint_eq(s->want[i].index_len, d->index_len);
            ck_assert_ptr_eq(s->want[i].id, d->id);
            ck_assert_uint_eq(s->want[i].id_len, d->id_len);
        }
        ck_assert_uint_eq(s->bytes, bytes);
        answer_items(s, NULL, now);
    }
    ck_assert_int_eq(next, 20);
    for (n = 0; n < 20; n++)
        expect(n, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    fx_close();

    cf.flush.flush_bytes = 1 << 20; /* now flush.docs decides */
    fx_open(&cf);
    for (n = 0; n < 20; n++)
        add(n, NULL, now);
    next = 0;
    while ((s = esbulk__core_next_send(fx.core, 1, now)) != NULL) {
        ck_assert_uint_eq(s->ndocs, next + 7 <= 20 ? 7 : 20 - next);
        next += (long)s->ndocs;
        answer_items(s, NULL, now);
    }
    ck_assert_int_eq(next, 20);
    for (n = 0; n < 20; n++)
        expect(n, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    fx_close();

    cf.flush.flush_bytes = per / 2; /* each document alone */
    fx_open(&cf);
    for (n = 0; n < 3; n++)
        add(n, NULL, now);
    for (n = 0; n < 3; n++) {
        s = esbulk__core_next_send(fx.core, 1, now);
        ck_assert_ptr_nonnull(s);
        ck_assert_uint_eq(s->ndocs, 1);
        ck_assert_int_eq(num(s->docs[0]), n);
        answer_items(s, NULL, now);
    }
    ck_assert_ptr_null(esbulk__core_next_send(fx.core, 1, now));
    for (n = 0; n < 3; n++)
        expect(n, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    fx_close();
}
END_TEST

START_TEST(test_routes_to_primaries)
{
    esbulk__core_conf_t cf = base_conf();
    esbulk__send_t *s;
    int64_t now = 1000;
    long n, sent = 0;
    size_t i;

    cf.flush.flush_docs = 1000;
    fx_open_known(&cf, now);
    for (n = 0; n < 300; n++)
        add(n, NULL, now);
    ck_assert_ptr_null(esbulk__core_next_send(fx.core, 0, now)); /* not due yet */
    while ((s = esbulk__core_next_send(fx.core, 1, now)) != NULL) {
        for (i = 0; i < s->ndocs; i++) {
            if (num(s->docs[i]) >= 0) {
                ck_assert_int_eq(shard_of(s->docs[i]), node_of(s));
                sent++;
            }
        }
        answer_items(s, NULL, now);
    }
    ck_assert_int_eq(sent, 300);
    drop_warm();
    for (n = 0; n < 300; n++)
        expect(n, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    ck_assert_uint_eq(fx.counts.unrouted, 0);
    fx_close();
}
END_TEST

/* A shard computed on the adding thread (place.c) is taken only when it was
 * computed from the very index entry the core routes by (its serial);
 * otherwise the core computes it again. Hints here are wrong on purpose, so
 * that where each document goes shows which was used. */
START_TEST(test_hint_shard_only_from_its_entry)
{
    const int32_t prim[3] = {0, 1, 2};
    esbulk__core_conf_t cf = base_conf();
    static const char *const ids[4] = {"a", "b", "c", "d"};
    /* hint serials: the entry's, an older entry's, none, the entry's */
    const uint64_t serials[4] = {5001, 5000, 0, 5001};
    esbulk__index_t *e;
    esbulk__send_t *s;
    int64_t now = 1000;
    long n, seen = 0;
    size_t i;

    cf.flush.flush_docs = 1000;
    fx_open_cluster(&cf, 0, now);
    for (n = 0; n < 4; n++) {
        esbulk__doc_t *d = doc_new(ESBULK_OP_INDEX, "logs", ids[n], n, 0);

        d->hint_serial = serials[n];
        d->hint_shard = (shard_of(d) + 1) % 3;
        esbulk__core_add(fx.core, d, now, now);
    }
    ck_assert_str_eq(esbulk__core_next_fetch(fx.core, now), "logs");
    e = index_new("logs", ESBULK__IDX_OK, 3, prim, fx.cluster);
    e->serial = 5001;
    esbulk__core_index_fetched(fx.core, "logs", e, ESBULK_OK, NULL, now);
    while ((s = esbulk__core_next_send(fx.core, 1, now)) != NULL) {
        for (i = 0; i < s->ndocs; i++) {
            const esbulk__doc_t *d = s->docs[i];
            int32_t want = shard_of(d);

            if (d->hint_serial == 5001)
                want = (want + 1) % 3;
            ck_assert_msg(node_of(s) == want, "document %ld (hint serial %llu) went to node %d, "
                          "not %d", num(d), (unsigned long long)d->hint_serial, node_of(s),
                          (int)want);
            seen++;
        }
        answer_items(s, NULL, now);
    }
    ck_assert_int_eq(seen, 4);
    /* another index's document, its hint from an entry that is not the
     * last index's: it is that other index's (not read yet, then unknown:
     * sent unrouted), whatever the hint says */
    {
        esbulk__doc_t *d = doc_new(ESBULK_OP_INDEX, "metrics", "a", 4, 0);

        d->hint_serial = 4999;
        d->hint_shard = 0;
        esbulk__core_add(fx.core, d, now, now);
    }
    answer_fetches(now);
    s = must_send(1, now);
    ck_assert_int_eq((int)s->ndocs, 1);
    ck_assert_str_eq(s->docs[0]->index, "metrics");
    ck_assert_int_eq(s->docs[0]->unrouted, 1);
    answer_items(s, NULL, now);
    for (n = 0; n < 5; n++)
        expect(n, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    fx_close();
}
END_TEST

/* esbulk__core_add_list: a document whose hint (index entry and shard) is
 * that of one before it in the list takes that one's destination without a
 * look-up; documents of two indices whose shards sit on different nodes,
 * hinted, unhinted and of an unknown index, in one list, each go where
 * esbulk__core_add sends it. */
START_TEST(test_add_list_routes_each)
{
    const int32_t prim_logs[3] = {0, 1, 2}, prim_metrics[3] = {2, 0, 1};
    const char *const names[3] = {"logs", "metrics", "gone"};
    esbulk__core_conf_t cf = base_conf();
    esbulk__queue_t in = {0};
    esbulk__index_t *e;
    esbulk__send_t *s;
    int64_t now = 1000;
    long n, seen = 0;
    size_t i;
    enum { N = 120 };

    cf.flush.flush_docs = 1000;
    fx_open_cluster(&cf, 0, now);
    /* three indices read first, by one document each: "gone" does not
     * exist (its documents are unrouted, hint or not) */
    for (n = 0; n < 3; n++) {
        const char *f;

        esbulk__core_add(fx.core, doc_new(ESBULK_OP_INDEX, names[n], "warm", -1 - n, 0), now,
                         now);
        f = esbulk__core_next_fetch(fx.core, now);
        ck_assert_str_eq(f, names[n]);
        e = n < 2 ? index_new(f, ESBULK__IDX_OK, 3, n == 0 ? prim_logs : prim_metrics, fx.cluster)
                  : index_new(f, ESBULK__IDX_UNKNOWN, 1, NULL, fx.cluster);
        e->serial = 7001 + (uint64_t)n;
        esbulk__core_index_fetched(fx.core, f, e, ESBULK_OK, NULL, now);
    }
    for (n = 0; n < N; n++) {
        char id[32];
        /* the last ten: "logs" alone, hinted (the cache ends up with its
         * shards, for the second list) */
        const char *index = n >= N - 10 ? "logs"
                            : n % 10 == 9 ? "other"
                            : n % 10 == 4 || n % 10 == 5 ? "gone" : names[n % 2];
        esbulk__doc_t *d;

        snprintf(id, sizeof(id), "id-%ld", n);
        d = doc_new(ESBULK_OP_INDEX, index, id, n, 0);
        if (strcmp(index, "gone") == 0) {
            d->hint_serial = 7003; /* a hint from an entry that routes nothing */
            d->hint_shard = 0;
        } else if (strcmp(index, "other") != 0 && (n % 7 != 3 || n >= N - 10)) {
            /* hinted as place.c does: the entry's serial, the shard */
            d->hint_serial = strcmp(index, "logs") == 0 ? 7001 : 7002;
            d->hint_shard = shard_of(d);
        } else {
            d->hint_shard = -1;
        }
        d->queued_ms = now - 5;
        esbulk__queue_push(&in, d);
    }
    esbulk__core_add_list(fx.core, &in, now);
    ck_assert_ptr_null(in.head);
    ck_assert_uint_eq(in.count, 0);
    answer_fetches(now); /* "other" does not exist: unrouted */
    while ((s = esbulk__core_next_send(fx.core, 1, now)) != NULL) {
        for (i = 0; i < s->ndocs; i++) {
            const esbulk__doc_t *d = s->docs[i];

            if (num(d) < 0)
                continue;
            if (strcmp(d->index, "other") == 0 || strcmp(d->index, "gone") == 0) {
                ck_assert_msg(d->unrouted, "document %ld of %s routed", num(d), d->index);
            } else {
                const int32_t *prim = strcmp(d->index, "logs") == 0 ? prim_logs : prim_metrics;

                ck_assert_msg(node_of(s) == prim[shard_of(d)],
                              "document %ld of %s (shard %d) went to node %d, not %d", num(d),
                              d->index, (int)shard_of(d), node_of(s), (int)prim[shard_of(d)]);
                ck_assert_int_eq(d->unrouted, 0);
            }
            ck_assert_int_eq(d->queued_ms, now - 5);
            seen++;
        }
        answer_items(s, NULL, now);
    }
    ck_assert_int_eq(seen, N);
    /* "logs" read again, its primaries moved (a new entry): documents still
     * hinted by the old entry, in a new list, go by the new one */
    {
        const int32_t prim_new[3] = {1, 2, 0};

        e = index_new("logs", ESBULK__IDX_OK, 3, prim_new, fx.cluster);
        e->serial = 7011;
        esbulk__core_index_fetched(fx.core, "logs", e, ESBULK_OK, NULL, now);
        for (n = N; n < N + 30; n++) {
            char id[32];
            esbulk__doc_t *d;

            snprintf(id, sizeof(id), "id-%ld", N - 10 + (n - N) % 10); /* the same shards */
            d = doc_new(ESBULK_OP_INDEX, "logs", id, n, 0);
            d->hint_serial = 7001;
            d->hint_shard = shard_of(d);
            d->queued_ms = now - 5;
            esbulk__queue_push(&in, d);
        }
        esbulk__core_add_list(fx.core, &in, now);
        while ((s = esbulk__core_next_send(fx.core, 1, now)) != NULL) {
            for (i = 0; i < s->ndocs; i++) {
                const esbulk__doc_t *d = s->docs[i];

                ck_assert_msg(node_of(s) == prim_new[shard_of(d)],
                              "document %ld (an old hint) went to node %d, not %d", num(d),
                              node_of(s), (int)prim_new[shard_of(d)]);
                seen++;
            }
            answer_items(s, NULL, now);
        }
        ck_assert_int_eq(seen, N + 30);
    }
    drop_warm();
    expect(-2, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    expect(-3, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    for (n = 0; n < N + 30; n++)
        expect(n, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    fx_close();
}
END_TEST

/* An index not read yet: its documents wait for the first read, then are
 * routed; a read that does not come within topology.wait.ms sends them
 * unrouted, and other indices keep sending meanwhile. */
START_TEST(test_waits_for_layout_then_unrouted)
{
    esbulk__core_conf_t cf = base_conf();
    const int32_t prim[3] = {0, 1, 2};
    esbulk__send_t *s;
    int64_t now = 1000;

    fx_open_cluster(&cf, 0, now);
    add(1, "a", now);
    ck_assert_str_eq(esbulk__core_next_fetch(fx.core, now), "logs");
    ck_assert_ptr_null(esbulk__core_next_fetch(fx.core, now)); /* one read per index */
    add(2, "b", now);
    ck_assert_ptr_null(esbulk__core_next_fetch(fx.core, now));
    ck_assert_ptr_null(esbulk__core_next_send(fx.core, 1, now)); /* waiting for the layout */
    ck_assert_int_le(esbulk__core_next_deadline(fx.core, now), now + cf.wait_ms);
    esbulk__core_index_fetched(fx.core, "logs", index_new("logs", ESBULK__IDX_OK, 3, prim,
                                                          fx.cluster), ESBULK_OK, NULL, now + 5);
    s = must_send(1, now + 5);
    answer_items(s, NULL, now + 6);
    while ((s = esbulk__core_next_send(fx.core, 1, now + 6)) != NULL)
        answer_items(s, NULL, now + 6);
    expect(1, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    expect(2, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    ck_assert_uint_eq(fx.counts.unrouted, 0);

    /* a second index whose read never answers */
    esbulk__core_add(fx.core, doc_new(ESBULK_OP_INDEX, "slow", "s1", 3, 0), now + 10, now + 10);
    ck_assert_str_eq(esbulk__core_next_fetch(fx.core, now + 10), "slow");
    ck_assert_ptr_null(esbulk__core_next_send(fx.core, 1, now + 10));
    /* the known index keeps sending while "slow" waits */
    add(4, "c", now + 20);
    s = must_send(1, now + 20);
    ck_assert_int_eq(num(s->docs[0]), 4);
    answer_items(s, NULL, now + 21);
    expect(4, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    esbulk__core_tick(fx.core, now + 10 + cf.wait_ms);
    s = must_send(1, now + 10 + cf.wait_ms);
    ck_assert_int_eq(num(s->docs[0]), 3);
    ck_assert_int_eq(s->docs[0]->unrouted, 1);
    answer_items(s, NULL, now + 10 + cf.wait_ms);
    expect(3, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    ck_assert_uint_eq(fx.counts.unrouted, 1);
    esbulk__core_index_fetched(fx.core, "slow", NULL, ESBULK_ERR_TRANSPORT, "canned", now + 5000);
    fx_close();
}
END_TEST

/* A request that broke after it was sent: documents with an _id are
 * retried, those without one are POSSIBLY at once. */
START_TEST(test_ambiguous_with_and_without_id)
{
    esbulk__core_conf_t cf = base_conf();
    esbulk__send_t *s;
    int64_t now = 1000;

    cf.level = ESBULK__ROUTING_OFF;
    fx_open(&cf);
    add(1, "with-id", now);
    esbulk__core_add(fx.core, doc_new(ESBULK_OP_INDEX, "logs", NULL, 2, 0), now, now);
    s = must_send(1, now);
    ck_assert_uint_eq(s->ndocs, 2);
    answer_kind(s, ESBULK__ANS_BROKEN, now + 10);
    expect(2, ESBULK_OUTCOME_POSSIBLY, ESBULK_ERR_TRANSPORT, 0);
    ck_assert_ptr_null(esbulk__core_next_send(fx.core, 1, now + 10)); /* backing off */
    esbulk__core_tick(fx.core, now + 10 + cf.backoff_ms);
    s = must_send(1, now + 10 + cf.backoff_ms);
    ck_assert_int_eq(num(s->docs[0]), 1);
    answer_items(s, NULL, now + 200);
    {
        esbulk__doc_t *d = outcome_of(1);
        ck_assert_int_eq(d->outcome, ESBULK_OUTCOME_INDEXED);
        ck_assert_int_eq(d->attempts, 2);
        esbulk__doc_free(d);
    }
    /* a timeout after sending is ambiguous too, but the node is not down */
    add(3, "t", now + 300);
    s = must_send(1, now + 300);
    answer_kind(s, ESBULK__ANS_TIMEOUT, now + 400);
    ck_assert_int_eq(esbulk__core_refresh_wanted(fx.core, now + 400), 1); /* no view yet */
    esbulk__core_set_cluster(fx.core, NULL, now + 400);
    esbulk__core_tick(fx.core, now + 400 + cf.backoff_ms);
    s = must_send(1, now + 400 + cf.backoff_ms);
    answer_items(s, NULL, now + 600);
    expect(3, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    fx_close();
}
END_TEST

/* A create retried after a broken attempt that meets 409 was most likely
 * created by that attempt: POSSIBLY. A 409 on a first attempt is FAILED. */
START_TEST(test_409_after_ambiguous_create)
{
    esbulk__core_conf_t cf = base_conf();
    const int conflict[2] = {409, 409};
    esbulk__send_t *s;
    int64_t now = 1000;

    cf.level = ESBULK__ROUTING_OFF;
    fx_open(&cf);
    esbulk__core_add(fx.core, doc_new(ESBULK_OP_CREATE, "logs", "c1", 1, 0), now, now);
    s = must_send(1, now);
    answer_kind(s, ESBULK__ANS_BROKEN, now);
    esbulk__core_tick(fx.core, now + cf.backoff_ms);
    esbulk__core_add(fx.core, doc_new(ESBULK_OP_CREATE, "logs", "c2", 2, 0), now + cf.backoff_ms,
                     now + cf.backoff_ms);
    s = must_send(1, now + cf.backoff_ms);
    ck_assert_uint_eq(s->ndocs, 2);
    answer_items(s, conflict, now + 200);
    expect(1, ESBULK_OUTCOME_POSSIBLY, ESBULK_ERR_ITEM, 409);
    expect(2, ESBULK_OUTCOME_FAILED, ESBULK_ERR_ITEM, 409);
    /* the same for a conditional index (external version, if_seq_no), and
     * not for a plain one */
    now += 1000;
    {
        esbulk__doc_t *cond = doc_new(ESBULK_OP_INDEX, "logs", "v1", 3, 0);
        cond->conditional = 1;
        esbulk__core_add(fx.core, cond, now, now);
    }
    add(4, "plain", now);
    s = must_send(1, now);
    answer_kind(s, ESBULK__ANS_BROKEN, now);
    esbulk__core_tick(fx.core, now + cf.backoff_ms);
    s = must_send(1, now + cf.backoff_ms);
    ck_assert_uint_eq(s->ndocs, 2);
    answer_items(s, conflict, now + 200);
    expect(3, ESBULK_OUTCOME_POSSIBLY, ESBULK_ERR_ITEM, 409);
    expect(4, ESBULK_OUTCOME_FAILED, ESBULK_ERR_ITEM, 409);
    fx_close();
}
END_TEST

/* 413 halves the batch down to one document, which then fails alone; the
 * others go through. A split is not a failed attempt. */
START_TEST(test_413_split_to_one)
{
    esbulk__core_conf_t cf = base_conf();
    esbulk__send_t *s;
    int64_t now = 1000;
    long n;

    cf.level = ESBULK__ROUTING_OFF;
    fx_open(&cf);
    for (n = 0; n < 4; n++)
        add(n, NULL, now);
    s = must_send(1, now);
    ck_assert_uint_eq(s->ndocs, 4);
    answer_http(s, 413, "", now);
    s = must_send(1, now);
    ck_assert_uint_eq(s->ndocs, 2);
    answer_http(s, 413, "", now);
    s = must_send(1, now);
    ck_assert_uint_eq(s->ndocs, 1);
    ck_assert_int_eq(num(s->docs[0]), 0);
    ck_assert_int_eq(s->docs[0]->attempts, 1);
    answer_http(s, 413, "", now);
    expect(0, ESBULK_OUTCOME_FAILED, ESBULK_ERR_HTTP, 413);
    while ((s = esbulk__core_next_send(fx.core, 1, now)) != NULL) {
        ck_assert_uint_eq(s->ndocs, 1);
        answer_items(s, NULL, now);
    }
    for (n = 1; n < 4; n++)
        expect(n, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    ck_assert_uint_eq(fx.counts.split_413, 3);
    fx_close();
}
END_TEST

/* A 400 for the whole request (the server refused one document while
 * reading it: an _id over 512 bytes, an update with neither doc nor script)
 * halves the request until that document is alone: only it fails, with the
 * server's reason, and the others are indexed. A split is not a failed
 * attempt, and the batches after it are full size again. */
START_TEST(test_400_isolates_the_refused_document)
{
    static const char refused[] =
        "{\"error\":{\"type\":\"action_request_validation_exception\",\"reason\":"
        "\"Validation Failed: 1: id is too long, must be no longer than 512 bytes;\"},"
        "\"status\":400}";
    esbulk__core_conf_t cf = base_conf();
    esbulk__send_t *s;
    int64_t now = 1000;
    long n, requests = 0;

    cf.level = ESBULK__ROUTING_OFF;
    fx_open(&cf);
    for (n = 0; n < 8; n++)
        add(n, NULL, now);
    while ((s = esbulk__core_next_send(fx.core, 1, now)) != NULL) {
        size_t i;
        int bad = 0;

        ck_assert_int_lt(++requests, 16);
        for (i = 0; i < s->ndocs; i++)
            bad |= num(s->docs[i]) == 5;
        if (bad) {
            if (s->ndocs == 1)
                ck_assert_int_eq(s->docs[0]->attempts, 1);
            answer_http(s, 400, refused, now);
        } else {
            answer_items(s, NULL, now);
        }
    }
    /* 8, then 4 + 4, then 2 + 2, then 1 + 1 */
    ck_assert_int_eq(requests, 7);
    for (n = 0; n < 8; n++) {
        if (n != 5) {
            expect(n, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
            continue;
        }
        {
            esbulk__doc_t *d = outcome_of(n);

            ck_assert_int_eq(d->outcome, ESBULK_OUTCOME_FAILED);
            ck_assert_int_eq(d->err, ESBULK_ERR_HTTP);
            ck_assert_int_eq(d->status, 400);
            ck_assert_str_eq(esbulk_result_error_type(d), "action_request_validation_exception");
            ck_assert_ptr_nonnull(strstr(esbulk_result_error_reason(d), "512 bytes"));
            esbulk__doc_free(d);
        }
    }
    ck_assert_uint_eq(fx.counts.split_400, 3);
    /* the next documents go in one request */
    for (n = 8; n < 16; n++)
        add(n, NULL, now);
    s = must_send(1, now);
    ck_assert_uint_eq(s->ndocs, 8);
    answer_items(s, NULL, now);
    for (n = 8; n < 16; n++)
        expect(n, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    /* a single document's 400 fails it at once */
    add(16, NULL, now);
    s = must_send(1, now);
    answer_http(s, 400, refused, now);
    expect(16, ESBULK_OUTCOME_FAILED, ESBULK_ERR_HTTP, 400);
    ck_assert_ptr_null(esbulk__core_next_send(fx.core, 1, now));
    /* a 400 that is not the server's (a proxy's text) fails the request's
     * documents at once: halving would not find one to blame */
    add(17, NULL, now);
    add(18, NULL, now);
    s = must_send(1, now);
    ck_assert_uint_eq(s->ndocs, 2);
    answer_http(s, 400, "bad Content-Length\n", now);
    expect(17, ESBULK_OUTCOME_FAILED, ESBULK_ERR_HTTP, 400);
    expect(18, ESBULK_OUTCOME_FAILED, ESBULK_ERR_HTTP, 400);
    ck_assert_uint_eq(fx.counts.split_400, 3);
    fx_close();
}
END_TEST

/* Log lines, counted by level for those holding a text. */
typedef struct {
    int warnings, notices, debugs;
    const char *text;
} said_t;

static void count_said(int32_t level, const char *facility, const char *message, void *opaque)
{
    said_t *s = opaque;

    (void)facility;
    if (strstr(message, s->text) == NULL)
        return;
    if (level <= ESBULK_LOG_WARNING)
        s->warnings++;
    else if (level == ESBULK_LOG_NOTICE)
        s->notices++;
    else if (level == ESBULK_LOG_DEBUG)
        s->debugs++;
}

/* A node down, and an index whose metadata cannot be read, are said once at
 * warning level until they are back (they are tried again every few
 * seconds: a dead URL gave a warning a second), then their return once. */
START_TEST(test_outages_said_once)
{
    esbulk__core_conf_t cf = base_conf();
    said_t down = {0, 0, 0, "is down"}, back = {0, 0, 0, "answers again"};
    said_t ixs = {0, 0, 0, "index logs:"};
    esbulk__log_t log = {count_said, &down, ESBULK_LOG_DEBUG};
    esbulk__send_t *s;
    int64_t now = 1000;
    int i;

    cf.level = ESBULK__ROUTING_OFF;
    cf.retry_max = 20;
    memset(&fx, 0, sizeof(fx));
    fx.core = esbulk__core_new(&cf, &log, 42);
    ck_assert_ptr_nonnull(fx.core);
    ck_assert_int_eq(esbulk__core_set_seeds(fx.core, SEEDS, 1), ESBULK_OK);
    add(0, NULL, now);
    for (i = 0; i < 3; i++) {
        s = must_send(1, now);
        answer_kind(s, ESBULK__ANS_NOT_SENT, now);
        now += cf.recheck_ms + cf.backoff_max_ms;
        esbulk__core_tick(fx.core, now);
    }
    ck_assert_int_eq(down.warnings, 1);
    ck_assert_int_eq(down.debugs, 2);
    s = must_send(1, now);
    answer_items(s, NULL, now);
    expect(0, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    fx_close();

    /* back, then down again: said again */
    memset(&fx, 0, sizeof(fx));
    log.opaque = &back;
    fx.core = esbulk__core_new(&cf, &log, 42);
    ck_assert_int_eq(esbulk__core_set_seeds(fx.core, SEEDS, 1), ESBULK_OK);
    add(0, NULL, now);
    s = must_send(1, now);
    answer_kind(s, ESBULK__ANS_NOT_SENT, now);
    now += cf.recheck_ms + cf.backoff_max_ms;
    esbulk__core_tick(fx.core, now);
    s = must_send(1, now);
    answer_items(s, NULL, now);
    ck_assert_int_eq(back.notices, 1);
    expect(0, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    add(1, NULL, now);
    s = must_send(1, now);
    answer_kind(s, ESBULK__ANS_NOT_SENT, now);
    ck_assert_int_eq(back.warnings, 0); /* "is down" is not counted here */
    now += cf.recheck_ms + cf.backoff_max_ms;
    esbulk__core_tick(fx.core, now);
    s = must_send(1, now);
    answer_items(s, NULL, now);
    ck_assert_int_eq(back.notices, 2); /* down again after it was back: said again */
    expect(1, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    fx_close();

    /* an index read that keeps failing, then succeeds */
    memset(&fx, 0, sizeof(fx));
    cf.level = ESBULK__ROUTING_NODE;
    log.opaque = &ixs;
    fx.core = esbulk__core_new(&cf, &log, 42);
    ck_assert_int_eq(esbulk__core_set_seeds(fx.core, SEEDS, 1), ESBULK_OK);
    fx.cluster = cluster_new(3, NODES3);
    atomic_fetch_add(&fx.cluster->refs, 1);
    esbulk__core_set_cluster(fx.core, fx.cluster, now);
    for (i = 0; i < 3; i++) {
        const char *name;

        add(i, NULL, now); /* a document of the index asks for it again */
        name = esbulk__core_next_fetch(fx.core, now);

        ck_assert_msg(name != NULL && strcmp(name, "logs") == 0, "read %d asked for", i);
        esbulk__core_index_fetched(fx.core, "logs", NULL, ESBULK_ERR_TRANSPORT,
                                   "GET http://seed:9200/_cluster/state: refused", now);
        now += cf.unknown_recheck_ms + 1;
        esbulk__core_tick(fx.core, now);
    }
    ck_assert_int_eq(ixs.warnings, 1);
    ck_assert_int_eq(ixs.debugs, 2);
    add(3, NULL, now);
    ck_assert_str_eq(esbulk__core_next_fetch(fx.core, now), "logs");
    {
        const int32_t prim[3] = {0, 1, 2};

        esbulk__core_index_fetched(fx.core, "logs",
                                   index_new("logs", ESBULK__IDX_OK, 3, prim, fx.cluster),
                                   ESBULK_OK, NULL, now);
    }
    ck_assert_int_eq(ixs.notices, 1);
    while ((s = esbulk__core_next_send(fx.core, 1, now)) != NULL)
        answer_items(s, NULL, now);
    fx_close();

    /* requests that time out: said once (it was never said), then again
     * after the node answered */
    {
        said_t slow = {0, 0, 0, "no answer within request.timeout.ms"};

        memset(&fx, 0, sizeof(fx));
        cf.level = ESBULK__ROUTING_OFF;
        cf.request_timeout_ms = 30000;
        log.opaque = &slow;
        fx.core = esbulk__core_new(&cf, &log, 42);
        ck_assert_int_eq(esbulk__core_set_seeds(fx.core, SEEDS, 1), ESBULK_OK);
        add(10, "t", now);
        for (i = 0; i < 3; i++) {
            s = must_send(1, now);
            answer_kind(s, ESBULK__ANS_TIMEOUT, now);
            now += cf.backoff_max_ms;
            esbulk__core_tick(fx.core, now);
        }
        ck_assert_int_eq(slow.warnings, 1);
        ck_assert_int_eq(slow.debugs, 2);
        s = must_send(1, now);
        answer_items(s, NULL, now);
        expect(10, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
        add(11, "u", now);
        s = must_send(1, now);
        answer_kind(s, ESBULK__ANS_TIMEOUT, now);
        ck_assert_int_eq(slow.warnings, 2); /* answered in between: said again */
        now += cf.backoff_max_ms;
        esbulk__core_tick(fx.core, now);
        s = must_send(1, now);
        answer_items(s, NULL, now);
        expect(11, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
        fx_close();
    }
}
END_TEST

/* A document as esbulk_add makes it: the record from dm, its lines in a
 * shared block. */
static esbulk__doc_t *doc_in_block(esbulk__docmem_t *dm, const char *id, long n)
{
    esbulk__doc_t *d;
    char lines[128], *p;
    size_t len;

    len = (size_t)snprintf(lines, sizeof(lines),
                           "{\"index\":{\"_index\":\"logs\",\"_id\":\"%s\"}}\n{\"n\":%ld}\n", id, n);
    ck_assert_int_eq(esbulk__docmem_take(dm, 0, len, &d, &p), ESBULK_OK);
    ck_assert_ptr_nonnull(d->block);
    memcpy(p, lines, len + 1);
    d->lines = p;
    d->lines_len = d->body_bytes = len;
    d->op = ESBULK_OP_INDEX;
    d->index = strcpy(d->strs, "logs");
    d->index_len = 4;
    d->id = strcpy(d->strs + 5, id);
    d->id_len = strlen(id);
    d->opaque = (void *)n;
    d->seq_no = d->primary_term = d->version = -1;
    return d;
}

/* Documents d0..d(k-1), numbered 0..k-1, in one block of dm, added to the
 * core at now (into d[]). */
static void add_in_block(esbulk__docmem_t *dm, esbulk__doc_t **d, long k, int64_t now)
{
    long n;

    for (n = 0; n < k; n++) {
        char id[24];

        snprintf(id, sizeof(id), "d%ld", n);
        d[n] = doc_in_block(dm, id, n);
        esbulk__core_add(fx.core, d[n], now, now);
    }
}

/* A document waiting for a retry moves its lines out of the shared block,
 * so that a few slow documents do not hold many blocks; the retry sends the
 * same bytes. The others keep theirs there. */
START_TEST(test_retry_moves_lines_out_of_block)
{
    esbulk__core_conf_t cf = base_conf();
    esbulk__docmem_t *dm = esbulk__docmem_new();
    const int st[3] = {201, 429, 201};
    esbulk__doc_t *d[3];
    esbulk__send_t *s;
    int64_t now = 1000;
    char want[128];

    cf.level = ESBULK__ROUTING_OFF;
    fx_open(&cf);
    add_in_block(dm, d, 3, now);
    snprintf(want, sizeof(want), "%.*s", (int)d[1]->lines_len, d[1]->lines);
    s = must_send(1, now);
    ck_assert_uint_eq(s->ndocs, 3);
    ck_assert_ptr_nonnull(d[1]->block);
    answer_items(s, st, now);
    ck_assert_ptr_null(d[1]->block); /* moved out */
    ck_assert_uint_eq(d[1]->lines_len, strlen(want));
    ck_assert(memcmp(d[1]->lines, want, d[1]->lines_len) == 0);
    expect(0, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    expect(2, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    esbulk__core_tick(fx.core, now + cf.backoff_ms);
    s = must_send(1, now + cf.backoff_ms);
    ck_assert_uint_eq(s->ndocs, 1);
    ck_assert(s->docs[0] == d[1]);
    ck_assert(memcmp(s->docs[0]->lines, want, strlen(want)) == 0);
    answer_items(s, NULL, now + 200);
    expect(1, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    fx_close();
    esbulk__docmem_destroy(dm);
}
END_TEST

/* Delivered documents give their lines back as the core delivers them (the
 * hand-off walks them no more), but with result.keep_body one not indexed
 * (a dead letter to be); the core counts the outcomes and what they held
 * of buffer.max.bytes; and a take hands them over with every share of the
 * block given back, so that the next add starts the block over. */
static void delivered_lines_run(int keep_body)
{
    esbulk__core_conf_t cf = base_conf();
    esbulk__docmem_t *dm = esbulk__docmem_new();
    const int st[3] = {201, 400, 201};
    esbulk__doc_t *d[3], *x;
    esbulk__send_t *s;
    char *p;
    int64_t now = 1000;
    uint64_t held = 0;
    long n;

    cf.level = ESBULK__ROUTING_OFF;
    cf.keep_body = keep_body;
    fx_open(&cf);
    add_in_block(dm, d, 3, now);
    for (n = 0; n < 3; n++)
        held += d[n]->body_bytes;
    s = must_send(1, now);
    ck_assert_uint_eq(s->ndocs, 3);
    answer_items(s, st, now);
    take();
    ck_assert_uint_eq(fx.counts.indexed, 2);
    ck_assert_uint_eq(fx.counts.failed, 1);
    ck_assert_uint_eq(fx.counts.possibly, 0);
    ck_assert_uint_eq(fx.counts.held_bytes, held);
    ck_assert_ptr_null(d[0]->lines);
    ck_assert_ptr_null(d[2]->lines);
    if (keep_body) {
        ck_assert_ptr_nonnull(d[1]->lines);
        ck_assert_ptr_nonnull(strstr(d[1]->lines, "{\"n\":1}"));
    } else {
        ck_assert_ptr_null(d[1]->lines);
    }
    expect(0, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    expect(1, ESBULK_OUTCOME_FAILED, ESBULK_ERR_ITEM, 400);
    expect(2, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    /* no document holds the block: the next one starts it over */
    ck_assert_int_eq(esbulk__docmem_take(dm, 0, 16, &x, &p), ESBULK_OK);
    ck_assert_ptr_nonnull(x->block);
    ck_assert_uint_eq(x->lines_off, 0);
    x->lines = p;
    esbulk__doc_free(x);
    fx_close();
    esbulk__docmem_destroy(dm);
}

START_TEST(test_delivered_lines_given_back)
{
    delivered_lines_run(0);
    delivered_lines_run(1);
}
END_TEST

/* Item 429/503 are retried alone and go first in line, in their order;
 * the other items' outcomes stand. */
START_TEST(test_item_retry_goes_first)
{
    esbulk__core_conf_t cf = base_conf();
    const int st[4] = {201, 429, 201, 503};
    esbulk__send_t *s;
    int64_t now = 1000;
    long n;

    cf.level = ESBULK__ROUTING_OFF;
    fx_open(&cf);
    for (n = 0; n < 4; n++)
        add(n, NULL, now);
    s = must_send(1, now);
    answer_items(s, st, now);
    expect(0, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    expect(2, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    ck_assert_uint_eq(fx.counts.item_429, 1);
    for (n = 10; n < 13; n++)
        add(n, NULL, now + 1);
    esbulk__core_tick(fx.core, now + cf.backoff_ms);
    s = must_send(1, now + cf.backoff_ms);
    ck_assert_uint_eq(s->ndocs, 5);
    ck_assert_int_eq(num(s->docs[0]), 1);
    ck_assert_int_eq(num(s->docs[1]), 3);
    ck_assert_int_eq(num(s->docs[2]), 10);
    answer_items(s, NULL, now + 200);
    expect(1, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    expect(3, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    for (n = 10; n < 13; n++)
        expect(n, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    fx_close();
}
END_TEST

/* retry.max more attempts after the first, then RETRIES_EXHAUSTED. */
START_TEST(test_retry_max)
{
    esbulk__core_conf_t cf = base_conf();
    esbulk__send_t *s;
    int64_t now = 1000;
    int attempt;

    cf.level = ESBULK__ROUTING_OFF;
    cf.retry_max = 2;
    fx_open(&cf);
    add(1, NULL, now);
    for (attempt = 1; attempt <= 3; attempt++) {
        esbulk__core_tick(fx.core, now);
        s = must_send(1, now);
        ck_assert_int_eq(s->docs[0]->attempts, attempt);
        answer_http(s, 503, "{\"error\":{\"type\":\"unavailable\",\"reason\":\"busy\"},\"status\":503}",
                    now);
        now += cf.backoff_max_ms;
    }
    ck_assert_ptr_null(esbulk__core_next_send(fx.core, 1, now));
    expect(1, ESBULK_OUTCOME_FAILED, ESBULK_ERR_RETRIES_EXHAUSTED, 503);
    ck_assert_uint_eq(fx.counts.retried, 2);
    fx_close();
}
END_TEST

/* A document whose first attempt may have been applied (HTTP 500) stays
 * POSSIBLY when it gives up later for other reasons (503s, retry.max used
 * up), never INDEXED or FAILED; one that never met an ambiguous answer is
 * FAILED. */
START_TEST(test_give_up_after_ambiguous_is_possibly)
{
    esbulk__core_conf_t cf = base_conf();
    esbulk__send_t *s;
    int64_t now = 1000;
    int attempt;

    cf.level = ESBULK__ROUTING_OFF;
    cf.retry_max = 2;
    fx_open(&cf);
    add(1, "amb", now);
    for (attempt = 1; attempt <= 3; attempt++) {
        esbulk__core_tick(fx.core, now);
        s = must_send(1, now);
        ck_assert_int_eq(s->docs[0]->attempts, attempt);
        answer_http(s, attempt == 1 ? 500 : 503,
                    "{\"error\":{\"type\":\"x\",\"reason\":\"y\"},\"status\":500}", now);
        now += cf.backoff_max_ms;
    }
    ck_assert_ptr_null(esbulk__core_next_send(fx.core, 1, now));
    expect(1, ESBULK_OUTCOME_POSSIBLY, ESBULK_ERR_RETRIES_EXHAUSTED, 503);
    fx_close();
}
END_TEST

/* delivery.timeout.ms: a retry that would come after the deadline gives up;
 * a document that waits in a queue past it fails there. */
START_TEST(test_delivery_timeout)
{
    esbulk__core_conf_t cf = base_conf();
    esbulk__send_t *s, *s2;
    int64_t now = 1000;

    cf.level = ESBULK__ROUTING_OFF;
    cf.max_inflight = 1;
    cf.retry_max = 100;
    cf.backoff_ms = 1000;
    cf.backoff_max_ms = 1000;
    fx_open(&cf);
    esbulk__core_add(fx.core, doc_new(ESBULK_OP_INDEX, "logs", "a", 1, now + 500), now, now);
    s = must_send(1, now);
    /* the only target is busy: the next document waits in its queue */
    esbulk__core_add(fx.core, doc_new(ESBULK_OP_INDEX, "logs", "b", 2, now + 300), now, now);
    ck_assert_ptr_null(esbulk__core_next_send(fx.core, 1, now));
    esbulk__core_tick(fx.core, now + 300);
    expect(2, ESBULK_OUTCOME_FAILED, ESBULK_ERR_DELIVERY_TIMEOUT, 0);
    ck_assert_uint_eq(fx.counts.expired, 1);
    /* a 503: the backoff (up to 1 s) would pass the deadline in 0.5 s unless
     * the jitter is small; retried until the deadline either way */
    answer_http(s, 503, "", now + 10);
    for (now += 10; esbulk__core_held(fx.core) > 0; now += 50) {
        esbulk__core_tick(fx.core, now);
        if ((s2 = esbulk__core_next_send(fx.core, 1, now)) != NULL)
            answer_http(s2, 503, "", now);
        ck_assert_int_le(now, 1000 + 600);
    }
    expect(1, ESBULK_OUTCOME_FAILED, ESBULK_ERR_DELIVERY_TIMEOUT, 503);
    fx_close();
}
END_TEST

/* Twenty requests of five documents (numbers from *n on) in flight at once,
 * then all answered: how many request arrays the core made for them. */
static uint64_t burst_of_twenty(long *n, int64_t now)
{
    esbulk__send_t *burst[20];
    uint64_t made = esbulk__core_sends_made(fx.core);
    size_t i;

    for (i = 0; i < 20 * 5; i++)
        add((*n)++, NULL, now);
    for (i = 0; i < 20; i++)
        burst[i] = must_send(1, now);
    for (i = 0; i < 20; i++)
        answer_items(burst[i], NULL, now);
    return esbulk__core_sends_made(fx.core) - made;
}

/* Answered requests keep their arrays for the next ones: one after
 * another, full and partial, two sets serve them all (the first, for two
 * documents, is too small for five); of many answered at once,
 * ESBULK__CORE_SPARE_SENDS are kept, and no more than the bytes allowed. */
START_TEST(test_requests_keep_their_arrays)
{
    esbulk__core_conf_t cf = base_conf();
    esbulk__send_t *s;
    int64_t now = 1000;
    long n = 0, m, first;
    size_t i, k, want;

    cf.level = ESBULK__ROUTING_OFF;
    cf.flush.flush_docs = 5;
    cf.max_inflight = 32;
    fx_open(&cf);
    for (i = 0; i < 20; i++) {
        want = i % 2 ? 5 : 2;
        for (k = 0; k < want; k++)
            add(n++, NULL, now);
        s = must_send(1, now);
        ck_assert_uint_eq(s->ndocs, want);
        answer_items(s, NULL, now);
    }
    ck_assert_uint_eq(esbulk__core_sends_made(fx.core), 2);
    /* the first burst found one kept, the second as many as are kept */
    ck_assert_uint_eq(burst_of_twenty(&n, now), 19);
    ck_assert_uint_eq(burst_of_twenty(&n, now), 20 - ESBULK__CORE_SPARE_SENDS);
    for (m = 0; m < n; m++)
        expect(m, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    fx_close();

    /* and no more than their bytes allow: arrays of 5 documents, room for 3 */
    cf.spare_send_bytes = 3 * 5 * (sizeof(*s->docs) + sizeof(*s->lines) + sizeof(*s->want));
    fx_open(&cf);
    first = n;
    ck_assert_uint_eq(burst_of_twenty(&n, now), 20);
    ck_assert_uint_eq(burst_of_twenty(&n, now), 20 - 3);
    for (m = first; m < n; m++)
        expect(m, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    fx_close();
}
END_TEST

/* A whole request fails (the cluster down): its documents wait for their
 * retries, each with its own jitter, and the scans visit each of them once
 * when it is due, not all of them for each one due (a busy core while the
 * cluster is down); the expiry scan skips them until a deadline is near.
 * Every document is retried and indexed once. */
START_TEST(test_retry_scans_walk_only_due)
{
    esbulk__core_conf_t cf = base_conf();
    esbulk__send_t *s;
    int64_t now = 1000, t;
    long n, total = 2000;

    cf.level = ESBULK__ROUTING_OFF;
    cf.max_inflight = 1;
    cf.flush.flush_docs = (size_t)total;
    cf.retry_max = 5;
    fx_open(&cf);
    for (n = 0; n < total; n++)
        esbulk__core_add(fx.core, doc_new(ESBULK_OP_INDEX, "logs", NULL, n, now + 600000), now,
                         now);
    s = must_send(1, now);
    ck_assert_uint_eq(s->ndocs, (size_t)total);
    answer_http(s, 503, "", now);
    ck_assert_uint_eq(esbulk__core_held(fx.core), (size_t)total);
    for (t = now; t <= now + 2 * cf.backoff_max_ms && esbulk__core_held(fx.core) > 0; t++) {
        esbulk__core_tick(fx.core, t);
        while ((s = esbulk__core_next_send(fx.core, 1, t)) != NULL)
            answer_items(s, NULL, t);
    }
    ck_assert_uint_eq(esbulk__core_held(fx.core), 0);
    ck_assert_uint_le(esbulk__core_retry_walked(fx.core), (uint64_t)total);
    for (n = 0; n < total; n++)
        expect(n, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    fx_close();
}
END_TEST

/* ordering=per_id: a destination's retries go together at the latest one's
 * time; until then the core has nothing due for them (the driver sleeps:
 * waking at the earliest one's time and finding nothing to send, it spun). */
START_TEST(test_per_id_retries_no_spin)
{
    esbulk__core_conf_t cf = base_conf();
    int st[8];
    esbulk__send_t *s;
    int64_t now = 1000, t;
    int i, sent = 0;

    cf.per_id = 1;
    cf.max_inflight = 1;
    fx_open_known(&cf, now);
    while ((s = esbulk__core_next_send(fx.core, 1, now)) != NULL)
        answer_items(s, NULL, now); /* the warm-up document */
    drop_warm();
    for (i = 0; i < 8; i++) {
        add(i, "same", now);
        st[i] = 429;
    }
    s = must_send(1, now);
    ck_assert_uint_eq(s->ndocs, 8);
    answer_items(s, st, now); /* each retry gets its own jitter */
    for (t = now; t <= now + 2 * cf.backoff_max_ms && esbulk__core_held(fx.core) > 0; t++) {
        esbulk__core_tick(fx.core, t);
        if ((s = esbulk__core_next_send(fx.core, 0, t)) != NULL) {
            ck_assert_uint_eq(s->ndocs, 8); /* together, in their order */
            for (i = 0; i < 8; i++)
                ck_assert_int_eq(num(s->docs[i]), i);
            answer_items(s, NULL, t);
            sent++;
            continue;
        }
        ck_assert_msg(esbulk__core_next_deadline(fx.core, t) > t,
                      "at %lld nothing to send, yet something is due", (long long)t);
    }
    ck_assert_int_eq(sent, 1);
    for (i = 0; i < 8; i++)
        expect(i, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    fx_close();
}
END_TEST

/* ordering=per_id: one request at a time per shard, and a retry goes
 * before a later version of the same id. */
START_TEST(test_per_id_ordering)
{
    esbulk__core_conf_t cf = base_conf();
    const int st[1] = {429};
    esbulk__send_t *s;
    int64_t now = 1000;

    cf.per_id = 1;
    fx_open_known(&cf, now);
    while ((s = esbulk__core_next_send(fx.core, 1, now)) != NULL)
        answer_items(s, NULL, now); /* the warm-up document */
    drop_warm();
    add(1, "same", now);
    s = must_send(1, now);
    ck_assert_int_eq(num(s->docs[0]), 1);
    add(2, "same", now + 1); /* version 2 of the same id */
    ck_assert_ptr_null(esbulk__core_next_send(fx.core, 1, now + 1)); /* one in flight */
    answer_items(s, st, now + 2);                                     /* v1: item 429 */
    ck_assert_ptr_null(esbulk__core_next_send(fx.core, 1, now + 2)); /* retry goes first */
    esbulk__core_tick(fx.core, now + 2 + cf.backoff_ms);
    s = must_send(1, now + 2 + cf.backoff_ms);
    ck_assert_int_eq(num(s->docs[0]), 1);
    ck_assert_uint_eq(s->ndocs, 2);
    ck_assert_int_eq(num(s->docs[1]), 2);
    answer_items(s, NULL, now + 200);
    expect(1, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    expect(2, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    fx_close();
}
END_TEST

/* per_id: documents wait for their index's first read (no wait cap), and
 * an index that went unrouted holds its shard destinations back until the
 * unrouted ones have ended. */
START_TEST(test_per_id_waits_and_unrouted_first)
{
    esbulk__core_conf_t cf = base_conf();
    const int32_t prim[3] = {0, 1, 2};
    esbulk__send_t *s, *u;
    int64_t now = 1000;

    cf.per_id = 1;
    fx_open_cluster(&cf, 0, now);
    add(1, "x", now);
    ck_assert_str_eq(esbulk__core_next_fetch(fx.core, now), "logs");
    esbulk__core_tick(fx.core, now + 10 * cf.wait_ms);
    ck_assert_ptr_null(esbulk__core_next_send(fx.core, 1, now + 10 * cf.wait_ms));
    /* the index does not exist yet: unrouted, in its own destination */
    esbulk__core_index_fetched(fx.core, "logs", index_new("logs", ESBULK__IDX_UNKNOWN, 1, NULL,
                                                          fx.cluster), ESBULK_OK, NULL, now);
    u = must_send(1, now);
    ck_assert_int_eq(u->docs[0]->unrouted, 1);
    /* asked again when used after the recheck time; meanwhile version 2
     * of x goes the way of version 1 */
    now += cf.unknown_recheck_ms;
    add(2, "x", now);
    ck_assert_str_eq(esbulk__core_next_fetch(fx.core, now), "logs");
    ck_assert_ptr_null(esbulk__core_next_send(fx.core, 1, now)); /* one in flight */
    /* now it exists: version 3 is routed, but waits for what went unrouted */
    esbulk__core_index_fetched(fx.core, "logs", index_new("logs", ESBULK__IDX_OK, 3, prim,
                                                          fx.cluster), ESBULK_OK, NULL, now);
    add(3, "x", now);
    ck_assert_ptr_null(esbulk__core_next_send(fx.core, 1, now));
    answer_items(u, NULL, now);
    s = must_send(1, now);
    ck_assert_int_eq(num(s->docs[0]), 2);
    ck_assert_uint_eq(s->ndocs, 1);
    ck_assert_ptr_null(esbulk__core_next_send(fx.core, 1, now)); /* 3 waits for 2 */
    answer_items(s, NULL, now);
    s = must_send(1, now);
    ck_assert_int_eq(num(s->docs[0]), 3);
    ck_assert_int_eq(s->docs[0]->unrouted, 0);
    answer_items(s, NULL, now);
    expect(3, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    expect(1, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    expect(2, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    fx_close();
}
END_TEST

/* A node that fails is marked down, a cluster read is asked for, and its
 * documents go elsewhere; after the new view, documents follow the moved
 * primary. */
START_TEST(test_node_death_reroutes)
{
    esbulk__core_conf_t cf = base_conf();
    static const char *const two[] = {"n0", "n2"};
    const int32_t moved[3] = {0, 1, 1}; /* node indices in the two-node view */
    esbulk__cluster_t *c2;
    esbulk__send_t *s;
    int64_t now = 1000;
    char id1[16];
    int32_t shard = -1;
    esbulk_layout_t l;
    long n;

    fx_open_known(&cf, now);
    while ((s = esbulk__core_next_send(fx.core, 1, now)) != NULL)
        answer_items(s, NULL, now);
    drop_warm();
    /* an id on shard 1 (node n1) */
    esbulk__layout_init(&l);
    l.shards = 3;
    for (n = 0; n < 100 && shard != 1; n++) {
        snprintf(id1, sizeof(id1), "k%ld", n);
        ck_assert_int_eq(esbulk_layout_shard(&l, id1, strlen(id1), NULL, 0, &shard), ESBULK_OK);
    }
    ck_assert_int_eq(shard, 1);
    ck_assert_int_eq(esbulk__core_refresh_wanted(fx.core, now), 0);
    add(1, id1, now);
    s = must_send(1, now);
    ck_assert_int_eq(node_of(s), 1);
    answer_kind(s, ESBULK__ANS_NOT_SENT, now + 5); /* refused: not applied */
    ck_assert_int_eq(esbulk__core_refresh_wanted(fx.core, now + 5), 1);
    esbulk__core_tick(fx.core, now + 5 + cf.backoff_ms);
    s = must_send(1, now + 5 + cf.backoff_ms);
    ck_assert_int_ne(node_of(s), 1); /* n1 is down: another node forwards it */
    ck_assert_int_eq(s->docs[0]->attempts, 2);
    answer_items(s, NULL, now + 200);
    expect(1, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    /* the new view: n1 left, shard 1's primary is on n2 */
    c2 = cluster_new(2, two);
    esbulk__core_set_cluster(fx.core, c2, now + 300);
    ck_assert_str_eq(esbulk__core_next_fetch(fx.core, now + 300) ? "logs" : "none", "none");
    add(2, id1, now + 300); /* its use asks for the index again */
    ck_assert_str_eq(esbulk__core_next_fetch(fx.core, now + 300), "logs");
    esbulk__core_index_fetched(fx.core, "logs", index_new("logs", ESBULK__IDX_OK, 3, moved, c2),
                               ESBULK_OK, NULL, now + 301);
    add(3, id1, now + 302);
    while ((s = esbulk__core_next_send(fx.core, 1, now + 302)) != NULL) {
        size_t i;
        for (i = 0; i < s->ndocs; i++)
            if (num(s->docs[i]) == 3)
                ck_assert_int_eq(node_of(s), 2);
        answer_items(s, NULL, now + 303);
    }
    expect(2, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    expect(3, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    fx_close();
}
END_TEST

/* Close: in flight POSSIBLY, queued and waiting FAILED, all ESBULK_ERR_CLOSED. */
START_TEST(test_close_with_documents_in_flight)
{
    esbulk__core_conf_t cf = base_conf();
    esbulk__send_t *s;
    int64_t now = 1000;

    cf.level = ESBULK__ROUTING_OFF;
    cf.max_inflight = 1;
    fx_open(&cf);
    add(1, NULL, now);
    s = must_send(1, now);
    (void)s;
    add(2, NULL, now);
    add(3, NULL, now);
    ck_assert_uint_eq(esbulk__core_inflight(fx.core), 1);
    esbulk__core_abort(fx.core);
    ck_assert_uint_eq(esbulk__core_inflight(fx.core), 0);
    expect(1, ESBULK_OUTCOME_POSSIBLY, ESBULK_ERR_CLOSED, 0);
    expect(2, ESBULK_OUTCOME_FAILED, ESBULK_ERR_CLOSED, 0);
    expect(3, ESBULK_OUTCOME_FAILED, ESBULK_ERR_CLOSED, 0);
    fx_close();
}
END_TEST

/* A document that waits for a retry when the handle closes, or whose retry
 * waits in its queue past its deadline, is told why its last attempt
 * failed, not only that it was closed or timed out. */
START_TEST(test_unsent_outcome_names_last_attempt)
{
    esbulk__core_conf_t cf = base_conf();
    esbulk__send_t *s, *busy;
    esbulk__doc_t *d;
    int64_t now = 1000;

    cf.level = ESBULK__ROUTING_OFF;
    cf.max_inflight = 1;
    cf.retry_max = 100;
    fx_open(&cf);
    /* closed while waiting for its retry */
    add(1, NULL, now);
    s = must_send(1, now);
    answer_kind(s, ESBULK__ANS_NOT_SENT, now + 1);
    ck_assert_uint_eq(esbulk__core_held(fx.core), 1);
    esbulk__core_abort(fx.core);
    d = outcome_of(1);
    ck_assert_int_eq(d->outcome, ESBULK_OUTCOME_FAILED);
    ck_assert_int_eq(d->err, ESBULK_ERR_CLOSED);
    ck_assert_ptr_nonnull(esbulk_result_error_reason(d));
    ck_assert_msg(strstr(esbulk_result_error_reason(d), "not delivered: closed; its last attempt: ") ==
                      esbulk_result_error_reason(d) && strstr(esbulk_result_error_reason(d), "canned transport failure"),
                  "reason: %s", esbulk_result_error_reason(d));
    esbulk__doc_free(d);
    fx_close();

    /* expired in its queue after a 503, behind a busy target */
    fx_open(&cf);
    now = 1000;
    esbulk__core_add(fx.core, doc_new(ESBULK_OP_INDEX, "logs", "a", 1, now + 3000), now, now);
    s = must_send(1, now);
    answer_http(s, 503, "{\"error\":{\"type\":\"unavailable_shards_exception\","
                        "\"reason\":\"primary shard is not active\"},\"status\":503}", now + 1);
    add(2, NULL, now + 2);
    busy = must_send(1, now + 2);
    ck_assert_int_eq(num(busy->docs[0]), 2);
    for (now += 3; esbulk__core_held(fx.core) > 1; now += 50) {
        esbulk__core_tick(fx.core, now);
        ck_assert_ptr_null(esbulk__core_next_send(fx.core, 1, now));
        ck_assert_int_le(now, 1000 + 3100);
    }
    d = outcome_of(1);
    ck_assert_int_eq(d->err, ESBULK_ERR_DELIVERY_TIMEOUT);
    ck_assert_int_eq(d->status, 0);
    ck_assert_ptr_nonnull(esbulk_result_error_reason(d));
    ck_assert_msg(strstr(esbulk_result_error_reason(d), "its last attempt: ") &&
                      strstr(esbulk_result_error_reason(d), "primary shard is not active"),
                  "reason: %s", esbulk_result_error_reason(d));
    ck_assert_str_eq(esbulk_result_error_type(d) ? esbulk_result_error_type(d) : "", "unavailable_shards_exception");
    esbulk__doc_free(d);
    answer_items(busy, NULL, now);
    expect(2, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    fx_close();
}
END_TEST

/* An item error's caused_by reaches the result apart (and at the end of
 * the reason); through a retry that gives up, and through a close, the last
 * attempt's cause stays; an attempt that fails without one clears it. */
START_TEST(test_item_cause_kept)
{
#define CAUSED(status)                                                                             \
    "{\"items\":[{\"index\":{\"status\":" #status ",\"error\":{\"type\":\"t_exception\","         \
    "\"reason\":\"top\",\"caused_by\":{\"type\":\"c_exception\",\"reason\":\"deep\"}}}}]}"
    esbulk__core_conf_t cf = base_conf();
    esbulk__doc_t *d;
    int64_t now = 1000;
    int k;

    cf.level = ESBULK__ROUTING_OFF;
    cf.retry_max = 1;
    cf.backoff_ms = cf.backoff_max_ms = 1;
    fx_open(&cf);
    /* refused; a 429 with a cause, then its retry refused again (retries
     * exhausted); the same, then a transport failure (no cause) */
    for (k = 0; k < 3; k++) {
        add(k + 1, NULL, now);
        answer_http(must_send(1, now), 200, k == 0 ? CAUSED(400) : CAUSED(429), now);
        if (k > 0) {
            now += 10;
            esbulk__core_tick(fx.core, now);
            if (k == 1)
                answer_http(must_send(1, now), 200, CAUSED(429), now);
            else
                answer_kind(must_send(1, now), ESBULK__ANS_NOT_SENT, now);
        }
        d = outcome_of(k + 1);
        ck_assert_int_eq(d->outcome, ESBULK_OUTCOME_FAILED);
        ck_assert_int_eq(d->err, k == 0 ? ESBULK_ERR_ITEM : ESBULK_ERR_RETRIES_EXHAUSTED);
        if (k < 2) {
            ck_assert_str_eq(esbulk_result_error_reason(d),
                             k == 0 ? "top (caused by c_exception: deep)"
                                    : "retries exhausted after 2 attempts: top (caused by "
                                      "c_exception: deep)");
            ck_assert_str_eq(esbulk_result_error_cause_type(d), "c_exception");
            ck_assert_str_eq(esbulk_result_error_cause_reason(d), "deep");
        } else {
            ck_assert_ptr_null(esbulk_result_error_cause_type(d));
            ck_assert_ptr_null(esbulk_result_error_cause_reason(d));
        }
        esbulk__doc_free(d);
    }
    /* a 429 with a cause, then closed while it waits for its retry */
    cf.retry_max = 5;
    cf.backoff_ms = cf.backoff_max_ms = 60000;
    fx_close();
    fx_open(&cf);
    add(4, NULL, now);
    answer_http(must_send(1, now), 200, CAUSED(429), now);
    esbulk__core_abort(fx.core);
    d = outcome_of(4);
    ck_assert_int_eq(d->err, ESBULK_ERR_CLOSED);
    ck_assert_msg(strstr(esbulk_result_error_reason(d), "its last attempt: top (caused by "
                                                         "c_exception: deep)") != NULL,
                  "reason: %s", esbulk_result_error_reason(d));
    ck_assert_str_eq(esbulk_result_error_cause_type(d), "c_exception");
    ck_assert_str_eq(esbulk_result_error_cause_reason(d), "deep");
    esbulk__doc_free(d);
    fx_close();
#undef CAUSED
}
END_TEST

/* The longest reason and cause the server can give keep their whole ending
 * through the library's words around them (retries exhausted; closed, with
 * its last attempt): the reason still ends with the cause. */
START_TEST(test_long_cause_through_give_up)
{
    char body[7000], suffix[2200];
    esbulk__core_conf_t cf = base_conf();
    esbulk__doc_t *d;
    const char *r;
    int64_t now = 1000;
    int k;

    long_cause_answer(body, sizeof(body), 429, 3000, 3000);
    cf.level = ESBULK__ROUTING_OFF;
    for (k = 0; k < 2; k++) {
        cf.retry_max = k == 0 ? 0 : 5;
        cf.backoff_ms = cf.backoff_max_ms = 60000;
        fx_open(&cf);
        add(1, NULL, now);
        answer_http(must_send(1, now), 200, body, now);
        if (k == 1)
            esbulk__core_abort(fx.core); /* closed while it waits for its retry */
        d = outcome_of(1);
        ck_assert_int_eq(d->err, k == 0 ? ESBULK_ERR_RETRIES_EXHAUSTED : ESBULK_ERR_CLOSED);
        ck_assert_uint_eq(strlen(esbulk_result_error_cause_reason(d)), ESBULK__RESP_REASON_MAX);
        snprintf(suffix, sizeof(suffix), " (caused by c_exception: %s)",
                 esbulk_result_error_cause_reason(d));
        r = esbulk_result_error_reason(d);
        ck_assert_uint_gt(strlen(r), strlen(suffix) + ESBULK__RESP_REASON_MAX);
        ck_assert_str_eq(r + strlen(r) - strlen(suffix), suffix);
        esbulk__doc_free(d);
        fx_close();
    }
}
END_TEST

/* Refusals: a whole-request 4xx fails every document with its error; a
 * certificate that does not verify is not retried; a truncated 2xx is
 * ambiguous and retried; a mapping error fails its item alone. */
START_TEST(test_refusals)
{
    esbulk__core_conf_t cf = base_conf();
    const int st[2] = {400, 201};
    esbulk__send_t *s;
    int64_t now = 1000;

    cf.level = ESBULK__ROUTING_OFF;
    fx_open(&cf);
    add(1, NULL, now);
    s = must_send(1, now);
    answer_http(s, 401, "{\"error\":{\"type\":\"security_exception\",\"reason\":\"no\"},"
                        "\"status\":401}", now);
    expect(1, ESBULK_OUTCOME_FAILED, ESBULK_ERR_AUTH, 401);
    add(2, NULL, now);
    s = must_send(1, now);
    answer_kind(s, ESBULK__ANS_TLS_VERIFY, now);
    expect(2, ESBULK_OUTCOME_FAILED, ESBULK_ERR_TRANSPORT, 0);
    now += cf.recheck_ms;
    add(3, NULL, now);
    s = must_send(1, now);
    answer_http(s, 200, "{\"took\":1,\"items\":[{\"index\":{\"sta", now);
    ck_assert_uint_eq(esbulk__core_held(fx.core), 1); /* retried */
    esbulk__core_tick(fx.core, now + cf.backoff_ms);
    add(4, NULL, now + cf.backoff_ms);
    s = must_send(1, now + cf.backoff_ms);
    ck_assert_int_eq(num(s->docs[0]), 3);
    ck_assert_int_eq(s->docs[0]->ambiguous, 1);
    answer_items(s, st, now + 200);
    {
        esbulk__doc_t *d = outcome_of(3);
        ck_assert_int_eq(d->outcome, ESBULK_OUTCOME_FAILED);
        ck_assert_int_eq(d->status, 400);
        ck_assert_str_eq(esbulk_result_error_type(d), "mapper_parsing_exception");
        esbulk__doc_free(d);
    }
    expect(4, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    fx_close();
}
END_TEST

/* buffer.max.docs=0: the buffer holds every node's requests in flight and
 * a full request queued on each destination, twice, from the nodes the
 * core can send to and the destinations it holds. */
START_TEST(test_buffer_docs)
{
    esbulk__core_conf_t cf = base_conf();
    const int32_t prim[6] = {0, 1, 2, 0, 1, 2};
    esbulk__cluster_t *c2;
    esbulk__send_t *s;
    int64_t now = 1000;
    char id[16];
    long n;

    /* flush.docs 5000 and 2 in flight, the defaults */
    ck_assert_uint_eq(esbulk__buffer_docs_for(1, 0, 2, 5000), 30000);
    ck_assert_uint_eq(esbulk__buffer_docs_for(1, 1, 2, 5000), 30000);
    ck_assert_uint_eq(esbulk__buffer_docs_for(3, 3, 2, 5000), 90000);
    ck_assert_uint_eq(esbulk__buffer_docs_for(1, 6, 2, 5000), 80000);
    ck_assert_uint_eq(esbulk__buffer_docs_for(3, 3, 4, 2000), 2 * (12 + 3) * 2000);
    /* a small flush.docs: the floor */
    ck_assert_uint_eq(esbulk__buffer_docs_for(3, 3, 2, 64), ESBULK__BUFFER_DOCS_MIN);
    ck_assert_uint_eq(esbulk__buffer_docs_for(0, 0, 0, 0), ESBULK__BUFFER_DOCS_MIN);
    /* the ceiling, without overflow */
    ck_assert_uint_eq(esbulk__buffer_docs_for(SIZE_MAX, SIZE_MAX, 64, 1000000),
                      ESBULK__BUFFER_DOCS_MAX);
    ck_assert_uint_eq(esbulk__buffer_docs_for(1000, 0, 64, 1000000), ESBULK__BUFFER_DOCS_MAX);
    ck_assert_uint_eq(esbulk__buffer_docs_for(1, 1, 2, SIZE_MAX), ESBULK__BUFFER_DOCS_MAX);

    cf.flush.flush_docs = 5000;
    cf.level = ESBULK__ROUTING_SHARD;
    /* no view yet: the one seed */
    fx_open(&cf);
    ck_assert_uint_eq(esbulk__core_buffer_docs(fx.core), 30000);
    fx_close();
    /* three nodes whose addresses cannot be reached: still the seed */
    fx_open_cluster(&cf, 1, now);
    ck_assert_uint_eq(esbulk__core_buffer_docs(fx.core), 30000);
    fx_close();
    fx_open_cluster(&cf, 0, now);
    ck_assert_uint_eq(esbulk__core_buffer_docs(fx.core), 90000);
    /* an index of six shards, a destination each */
    for (n = 0; n < 200; n++) {
        snprintf(id, sizeof(id), "d%ld", n);
        esbulk__core_add(fx.core, doc_new(ESBULK_OP_INDEX, "logs", id, n, 0), now, now);
    }
    ck_assert_str_eq(esbulk__core_next_fetch(fx.core, now), "logs");
    esbulk__core_index_fetched(fx.core, "logs",
                               index_new("logs", ESBULK__IDX_OK, 6, prim, fx.cluster), ESBULK_OK,
                               NULL, now);
    ck_assert_uint_eq(esbulk__core_ndests(fx.core), 6);
    ck_assert_uint_eq(esbulk__core_buffer_docs(fx.core), 2 * (3 * 2 + 6) * 5000);
    /* a node out of reach does not count */
    c2 = cluster_new(3, NODES3);
    c2->nodes[2].reachable = 0;
    esbulk__core_set_cluster(fx.core, c2, now + 1);
    ck_assert_uint_eq(esbulk__core_buffer_docs(fx.core), 2 * (2 * 2 + 6) * 5000);
    while ((s = esbulk__core_next_send(fx.core, 1, now + 1)) != NULL)
        answer_items(s, NULL, now + 1);
    fx_close();
}
END_TEST

/* Bounded state: destinations and index entries unused for
 * topology.idle.ms are freed; an index used again is read again. */
START_TEST(test_idle_state_freed)
{
    esbulk__core_conf_t cf = base_conf();
    const int32_t prim[1] = {0};
    esbulk__send_t *s;
    int64_t now = 1000;
    char name[32];
    long n;
    const char *f;

    cf.level = ESBULK__ROUTING_SHARD;
    cf.idle_ms = 1000;
    fx_open_cluster(&cf, 0, now);
    for (n = 0; n < 500; n++) {
        snprintf(name, sizeof(name), "day-%03ld", n);
        esbulk__core_add(fx.core, doc_new(ESBULK_OP_INDEX, name, "a", n, 0), now, now);
        while ((f = esbulk__core_next_fetch(fx.core, now)) != NULL)
            esbulk__core_index_fetched(fx.core, f, index_new(f, ESBULK__IDX_OK, 1, prim,
                                                             fx.cluster), ESBULK_OK, NULL, now);
        while ((s = esbulk__core_next_send(fx.core, 1, now)) != NULL)
            answer_items(s, NULL, now);
        esbulk__core_tick(fx.core, now);
        /* at most the indices of the last idle period are held */
        ck_assert_uint_le(esbulk__core_nindices(fx.core), 160);
        ck_assert_uint_le(esbulk__core_ndests(fx.core), 160);
        now += 10;
    }
    take();
    ck_assert_uint_eq(fx.counts.fetches, 500);
    esbulk__core_tick(fx.core, now + 2 * cf.idle_ms);
    ck_assert_uint_eq(esbulk__core_nindices(fx.core), 0);
    ck_assert_uint_eq(esbulk__core_ndests(fx.core), 0);
    /* used again: read again */
    esbulk__core_add(fx.core, doc_new(ESBULK_OP_INDEX, "day-000", "a", 1000, 0),
                     now + 2 * cf.idle_ms, now + 2 * cf.idle_ms);
    ck_assert_str_eq(esbulk__core_next_fetch(fx.core, now + 2 * cf.idle_ms), "day-000");
    esbulk__core_index_fetched(fx.core, "day-000", NULL, ESBULK_ERR_TRANSPORT, "canned",
                               now + 2 * cf.idle_ms);
    s = must_send(1, now + 2 * cf.idle_ms);
    answer_items(s, NULL, now + 2 * cf.idle_ms);
    fx_close();
}
END_TEST

/* A cluster view with nodes that cannot be reached: everything goes to the
 * seeds, still grouped by shard. Unknown indices go unrouted. */
START_TEST(test_seeds_only_and_unknown_index)
{
    esbulk__core_conf_t cf = base_conf();
    esbulk__send_t *s;
    int64_t now = 1000;

    fx_open_cluster(&cf, 1, now);
    add(1, NULL, now);
    esbulk__core_add(fx.core, doc_new(ESBULK_OP_INDEX, "nope", "z", 2, 0), now, now);
    answer_fetches(now);
    while ((s = esbulk__core_next_send(fx.core, 1, now)) != NULL) {
        ck_assert_str_eq(s->url, "http://seed:9200");
        answer_items(s, NULL, now);
    }
    expect(1, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    expect(2, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    ck_assert_uint_eq(fx.counts.unrouted, 1);
    fx_close();
}
END_TEST

/* Unrouted requests (often the ones that create an index, which can take
 * the server seconds) take all but one of a node's request slots while
 * routed documents wait, and all of them when none does. */
START_TEST(test_unrouted_leaves_a_slot)
{
    esbulk__core_conf_t cf = base_conf();
    esbulk__send_t *u1, *u2, *r;
    int64_t t0 = 1000;

    fx_open_cluster(&cf, 1, t0); /* one target: the seed, 2 slots */
    esbulk__core_add(fx.core, doc_new(ESBULK_OP_INDEX, "nope", "a", 2, 0), t0, t0);
    answer_fetches(t0);
    u1 = must_send(1, t0);
    ck_assert_int_eq(num(u1->docs[0]), 2);
    ck_assert_int_eq(u1->docs[0]->unrouted, 1);

    /* another unrouted document, then a routed one: the unrouted one is
     * due first, but the last slot is kept for the routed one */
    esbulk__core_add(fx.core, doc_new(ESBULK_OP_INDEX, "nope", "b", 3, 0), t0 + 10, t0 + 10);
    add(1, NULL, t0 + 500);
    answer_fetches(t0 + 500);
    ck_assert_ptr_null(esbulk__core_next_send(fx.core, 0, t0 + 1010));
    r = must_send(0, t0 + 1500);
    ck_assert_uint_eq(r->ndocs, 1);
    ck_assert_int_eq(num(r->docs[0]), 1);
    ck_assert_int_eq(r->docs[0]->unrouted, 0);
    ck_assert_ptr_null(esbulk__core_next_send(fx.core, 1, t0 + 1500)); /* full */
    answer_items(u1, NULL, t0 + 1600);
    u2 = must_send(0, t0 + 1600); /* a free slot: one unrouted may go */
    ck_assert_int_eq(num(u2->docs[0]), 3);
    answer_items(u2, NULL, t0 + 1700);
    answer_items(r, NULL, t0 + 1700);

    /* nothing routed waits: unrouted requests may take every slot */
    esbulk__core_next_deadline(fx.core, t0 + 1800);
    esbulk__core_add(fx.core, doc_new(ESBULK_OP_INDEX, "nope", "c", 4, 0), t0 + 1800, t0 + 1800);
    answer_fetches(t0 + 1800);
    u1 = must_send(1, t0 + 1800);
    esbulk__core_add(fx.core, doc_new(ESBULK_OP_INDEX, "nope", "d", 5, 0), t0 + 1800, t0 + 1800);
    answer_fetches(t0 + 1800);
    u2 = must_send(1, t0 + 1800);
    ck_assert_int_eq(num(u1->docs[0]), 4);
    ck_assert_int_eq(num(u2->docs[0]), 5);
    answer_items(u1, NULL, t0 + 1900);
    answer_items(u2, NULL, t0 + 1900);
    expect(1, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    expect(2, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    expect(3, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    expect(4, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    expect(5, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    answer_fetches(t0 + 1900);
    fx_close();
}
END_TEST

/* What the answer says of each document: the index only when the server's
 * differs from the one added (an alias), the result as one of the usual
 * static strings or a copy, the server's id only for a document without
 * one, the counters; whichever way the parser read the item (the common
 * shape, another key order, escapes). */
/* Which fields a request's answer must carry: _index only when a document
 * went to a name the metadata does not give as its own write index (an
 * alias, an index not read, routing off), _id only when a document has
 * none. An answer without them gives each result the strings as added. */
START_TEST(test_answer_fields_wanted)
{
    const int32_t prim[3] = {0, 1, 2};
    esbulk__core_conf_t cf = base_conf();
    esbulk__index_t *alias;
    esbulk__send_t *s;
    esbulk__doc_t *d;
    char body[2048];
    size_t i, off, seen;
    int64_t now = 1000;
    long n;

    fx_open_known(&cf, now);
    /* "alias-w" names "logs-000001" as its write index */
    esbulk__core_add(fx.core, doc_new(ESBULK_OP_INDEX, "alias-w", "a-warm", -1, 0), now, now);
    ck_assert_str_eq(esbulk__core_next_fetch(fx.core, now), "alias-w");
    alias = index_new("alias-w", ESBULK__IDX_OK, 3, prim, fx.cluster);
    free(alias->write_index);
    alias->write_index = strdup("logs-000001");
    esbulk__core_index_fetched(fx.core, "alias-w", alias, ESBULK_OK, NULL, now);
    while ((s = esbulk__core_next_send(fx.core, 1, now)) != NULL)
        answer_items(s, NULL, now);
    drop_warm();

    /* a concrete index, every document with its id: neither field */
    for (n = 0; n < 30; n++)
        add(n, NULL, now);
    for (seen = 0; (s = esbulk__core_next_send(fx.core, 1, now)) != NULL;) {
        ck_assert_msg(!s->want_index && !s->want_id, "want_index %d want_id %d", s->want_index,
                      s->want_id);
        off = (size_t)snprintf(body, sizeof(body), "{\"items\":[");
        for (i = 0; i < s->ndocs; i++)
            off += (size_t)snprintf(body + off, sizeof(body) - off,
                                    "%s{\"index\":{\"status\":201,\"result\":\"created\","
                                    "\"_seq_no\":%zu,\"_primary_term\":1,\"_version\":1}}",
                                    i ? "," : "", i);
        snprintf(body + off, sizeof(body) - off, "]}");
        seen += s->ndocs;
        answer_http(s, 200, body, now);
    }
    ck_assert_uint_eq(seen, 30);
    for (n = 0; n < 30; n++) {
        char id[32];

        d = outcome_of(n);
        snprintf(id, sizeof(id), "id-%ld", n);
        ck_assert_int_eq(d->outcome, ESBULK_OUTCOME_INDEXED);
        ck_assert_str_eq(esbulk_result_index(d), "logs");
        ck_assert_str_eq(esbulk_result_id(d), id);
        ck_assert_str_eq(d->r_result, "created");
        esbulk__doc_free(d);
    }

    /* through the alias: _index (the server names logs-000001), not _id */
    for (n = 100; n < 110; n++)
        esbulk__core_add(fx.core, doc_new(ESBULK_OP_INDEX, "alias-w", "x", n, 0), now, now);
    while ((s = esbulk__core_next_send(fx.core, 1, now)) != NULL) {
        ck_assert(s->want_index && !s->want_id);
        answer_items(s, NULL, now);
    }
    for (n = 100; n < 110; n++)
        expect(n, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);

    /* no id: both (the server assigns it, and it goes unrouted) */
    esbulk__core_add(fx.core, doc_new(ESBULK_OP_INDEX, "logs", NULL, 200, 0), now, now);
    s = must_send(1, now);
    ck_assert(s->want_index && s->want_id);
    answer_items(s, NULL, now);
    expect(200, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);

    /* an index whose metadata says it does not exist: _index */
    esbulk__core_add(fx.core, doc_new(ESBULK_OP_INDEX, "new-ix", "y", 300, 0), now, now);
    ck_assert_str_eq(esbulk__core_next_fetch(fx.core, now), "new-ix");
    esbulk__core_index_fetched(fx.core, "new-ix",
                               index_new("new-ix", ESBULK__IDX_UNKNOWN, 1, NULL, fx.cluster),
                               ESBULK_OK, NULL, now);
    s = must_send(1, now);
    ck_assert(s->want_index && !s->want_id);
    answer_items(s, NULL, now);
    expect(300, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    fx_close();

    /* routing off: nothing is read, _index always */
    cf.level = ESBULK__ROUTING_OFF;
    fx_open_cluster(&cf, 0, now);
    esbulk__core_add(fx.core, doc_new(ESBULK_OP_INDEX, "logs", "z", 400, 0), now, now);
    s = must_send(1, now);
    ck_assert(s->want_index && !s->want_id);
    answer_items(s, NULL, now);
    expect(400, ESBULK_OUTCOME_INDEXED, ESBULK_OK, 201);
    fx_close();
}
END_TEST

START_TEST(test_answer_fields)
{
    static const char *const item[] = {
        /* 0: the common shape, the index as added */
        "{\"index\":{\"_index\":\"logs\",\"_id\":\"a\",\"_version\":1,\"result\":\"created\","
        "\"_seq_no\":7,\"_primary_term\":2,\"status\":201}}",
        /* 1: an alias: the server names the write index */
        "{\"index\":{\"_index\":\"logs-000001\",\"_id\":\"b\",\"_version\":3,"
        "\"result\":\"updated\",\"_seq_no\":8,\"_primary_term\":2,\"status\":200}}",
        /* 2: no id added: the server's */
        "{\"index\":{\"_index\":\"logs\",\"_id\":\"srv-1\",\"_version\":1,"
        "\"result\":\"created\",\"_seq_no\":9,\"_primary_term\":2,\"status\":201}}",
        /* 3: the index escaped, the same name */
        "{\"index\":{\"_index\":\"lo\\u0067s\",\"_id\":\"c\",\"_version\":1,"
        "\"result\":\"created\",\"_seq_no\":10,\"_primary_term\":2,\"status\":201}}",
        /* 4: a usual result not in the common words */
        "{\"index\":{\"_index\":\"logs\",\"_id\":\"d\",\"_version\":2,\"result\":\"noop\","
        "\"_seq_no\":11,\"_primary_term\":2,\"status\":200}}",
        /* 5: an odd result */
        "{\"index\":{\"_index\":\"logs\",\"_id\":\"e\",\"_version\":2,\"result\":\"weird\","
        "\"_seq_no\":12,\"_primary_term\":2,\"status\":200}}",
        /* 6: another key order, another index */
        "{\"index\":{\"status\":201,\"result\":\"created\",\"_id\":\"f\",\"_index\":\"other\","
        "\"_seq_no\":13,\"_primary_term\":3,\"_version\":1}}",
        /* 7: only the status */
        "{\"index\":{\"status\":201}}",
    };
    static const char *const ids[] = {"a", "b", NULL, "c", "d", "e", "f", "g"};
    esbulk__core_conf_t cf = base_conf();
    char body[4096];
    esbulk__send_t *s;
    esbulk__doc_t *d;
    size_t i, off;
    int64_t now = 1000;

    cf.level = ESBULK__ROUTING_OFF;
    fx_open_cluster(&cf, 0, now);
    for (i = 0; i < ESBULK__ARRAY_LEN(item); i++)
        esbulk__core_add(fx.core, doc_new(ESBULK_OP_INDEX, "logs", ids[i], (long)i, 0), now, now);
    s = must_send(1, now);
    ck_assert_uint_eq(s->ndocs, ESBULK__ARRAY_LEN(item));
    off = (size_t)snprintf(body, sizeof(body), "{\"items\":[");
    for (i = 0; i < s->ndocs; i++)
        off += (size_t)snprintf(body + off, sizeof(body) - off, "%s%s", i ? "," : "",
                                item[num(s->docs[i])]);
    snprintf(body + off, sizeof(body) - off, "]}");
    answer_http(s, 200, body, now);

    d = outcome_of(0);
    ck_assert_int_eq(d->outcome, ESBULK_OUTCOME_INDEXED);
    ck_assert_int_eq(d->status, 201);
    ck_assert_ptr_null(ESBULK__DOC_MORE(d, index));
    ck_assert_str_eq(esbulk_result_index(d), "logs");
    ck_assert_str_eq(esbulk_result_id(d), "a");
    ck_assert_ptr_null(ESBULK__DOC_MORE(d, id));
    ck_assert_str_eq(d->r_result, "created");
    ck_assert_ptr_null(ESBULK__DOC_MORE(d, result_own)); /* a static string */
    ck_assert_int_eq(d->seq_no, 7);
    ck_assert_int_eq(d->primary_term, 2);
    ck_assert_int_eq(d->version, 1);
    esbulk__doc_free(d);
    d = outcome_of(1);
    ck_assert_str_eq(esbulk_result_index(d), "logs-000001");
    ck_assert_str_eq(d->r_result, "updated");
    ck_assert_ptr_null(ESBULK__DOC_MORE(d, result_own));
    ck_assert_int_eq(d->version, 3);
    esbulk__doc_free(d);
    d = outcome_of(2);
    ck_assert_ptr_null(ESBULK__DOC_MORE(d, index));
    ck_assert_str_eq(esbulk_result_id(d), "srv-1");
    ck_assert_int_eq(d->seq_no, 9);
    esbulk__doc_free(d);
    d = outcome_of(3);
    ck_assert_ptr_null(ESBULK__DOC_MORE(d, index)); /* the same name, escaped or not */
    esbulk__doc_free(d);
    d = outcome_of(4);
    ck_assert_str_eq(d->r_result, "noop");
    ck_assert_ptr_null(ESBULK__DOC_MORE(d, result_own));
    esbulk__doc_free(d);
    d = outcome_of(5);
    ck_assert_str_eq(d->r_result, "weird");
    ck_assert_ptr_eq(d->r_result, ESBULK__DOC_MORE(d, result_own));
    esbulk__doc_free(d);
    d = outcome_of(6);
    ck_assert_str_eq(esbulk_result_index(d), "other");
    ck_assert_str_eq(d->r_result, "created");
    ck_assert_int_eq(d->primary_term, 3);
    esbulk__doc_free(d);
    d = outcome_of(7);
    ck_assert_int_eq(d->outcome, ESBULK_OUTCOME_INDEXED);
    ck_assert_ptr_null(ESBULK__DOC_MORE(d, index));
    ck_assert_str_eq(d->r_result, "created"); /* from the status (result_from_status) */
    ck_assert_int_eq(d->seq_no, -1);
    ck_assert_int_eq(d->version, -1);
    esbulk__doc_free(d);
    fx_close();
}
END_TEST

/* Answers that give each item's status alone (bulk_path() asks for the
 * result only with updates in the request): the result is what the server
 * would have said for the operation and status, and a delete's 404 without
 * an error is done (not_found). An update's 200 is "updated" or "noop": no
 * result is made up for it, and a request with an update asks for them. */
START_TEST(test_result_from_status)
{
    static const struct {
        esbulk_op_t op;
        const char *item;
        esbulk_outcome_t outcome;
        const char *result;
    } cases[] = {
        {ESBULK_OP_INDEX, "{\"index\":{\"status\":201}}", ESBULK_OUTCOME_INDEXED, "created"},
        {ESBULK_OP_INDEX, "{\"index\":{\"status\":200}}", ESBULK_OUTCOME_INDEXED, "updated"},
        {ESBULK_OP_CREATE, "{\"create\":{\"status\":201}}", ESBULK_OUTCOME_INDEXED, "created"},
        {ESBULK_OP_DELETE, "{\"delete\":{\"status\":200}}", ESBULK_OUTCOME_INDEXED, "deleted"},
        {ESBULK_OP_DELETE, "{\"delete\":{\"status\":404}}", ESBULK_OUTCOME_INDEXED, "not_found"},
        {ESBULK_OP_DELETE,
         "{\"delete\":{\"status\":404,\"error\":{\"type\":\"index_not_found_exception\","
         "\"reason\":\"no such index\"}}}",
         ESBULK_OUTCOME_FAILED, NULL},
        {ESBULK_OP_UPDATE, "{\"update\":{\"status\":200}}", ESBULK_OUTCOME_INDEXED, NULL},
        {ESBULK_OP_UPDATE, "{\"update\":{\"status\":201}}", ESBULK_OUTCOME_INDEXED, "created"},
        {ESBULK_OP_INDEX,
         "{\"index\":{\"status\":400,\"error\":{\"type\":\"mapper_parsing_exception\","
         "\"reason\":\"bad\"}}}",
         ESBULK_OUTCOME_FAILED, NULL},
    };
    esbulk__core_conf_t cf = base_conf();
    char body[4096], id[16];
    esbulk__send_t *s;
    esbulk__doc_t *d;
    size_t i, off;
    int pass;
    int64_t now = 1000;

    cf.level = ESBULK__ROUTING_OFF;
    fx_open_cluster(&cf, 0, now);
    /* without the updates first: that request does not ask for results;
     * then with them: it does */
    for (pass = 0; pass < 2; pass++) {
        for (i = 0; i < ESBULK__ARRAY_LEN(cases); i++) {
            if ((cases[i].op == ESBULK_OP_UPDATE) != pass)
                continue;
            snprintf(id, sizeof(id), "d%zu", i);
            esbulk__core_add(fx.core, doc_new(cases[i].op, "logs", id, (long)i, 0), now, now);
        }
        s = must_send(1, now);
        ck_assert_int_eq(s->want_result, pass);
        off = (size_t)snprintf(body, sizeof(body), "{\"items\":[");
        for (i = 0; i < s->ndocs; i++)
            off += (size_t)snprintf(body + off, sizeof(body) - off, "%s%s", i ? "," : "",
                                    cases[num(s->docs[i])].item);
        snprintf(body + off, sizeof(body) - off, "]}");
        answer_http(s, 200, body, now);
    }
    for (i = 0; i < ESBULK__ARRAY_LEN(cases); i++) {
        d = outcome_of((long)i);
        ck_assert_msg(d->outcome == cases[i].outcome, "case %zu: outcome %d", i, d->outcome);
        if (cases[i].result == NULL)
            ck_assert_msg(d->r_result == NULL, "case %zu: result %s", i, d->r_result);
        else
            ck_assert_msg(d->r_result != NULL && strcmp(d->r_result, cases[i].result) == 0,
                          "case %zu: result %s, not %s", i, d->r_result ? d->r_result : "NULL",
                          cases[i].result);
        ck_assert_int_eq(d->seq_no, -1);
        esbulk__doc_free(d);
    }
    fx_close();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("core");
    TCase *tc = tcase_create("core");
    SRunner *sr;
    int failed;

    tcase_add_test(tc, test_ahead_links);
    tcase_add_test(tc, test_ahead_links_in_core);
    tcase_add_test(tc, test_ahead_forgets_expired);
    tcase_add_test(tc, test_batch_limits);
    tcase_add_test(tc, test_routes_to_primaries);
    tcase_add_test(tc, test_hint_shard_only_from_its_entry);
    tcase_add_test(tc, test_add_list_routes_each);
    tcase_add_test(tc, test_retry_moves_lines_out_of_block);
    tcase_add_test(tc, test_delivered_lines_given_back);
    tcase_add_test(tc, test_waits_for_layout_then_unrouted);
    tcase_add_test(tc, test_wait_counts_toward_interval);
    tcase_add_test(tc, test_add_time_counts);
    tcase_add_test(tc, test_ambiguous_with_and_without_id);
    tcase_add_test(tc, test_409_after_ambiguous_create);
    tcase_add_test(tc, test_413_split_to_one);
    tcase_add_test(tc, test_400_isolates_the_refused_document);
    tcase_add_test(tc, test_outages_said_once);
    tcase_add_test(tc, test_give_up_after_ambiguous_is_possibly);
    tcase_add_test(tc, test_item_retry_goes_first);
    tcase_add_test(tc, test_retry_max);
    tcase_add_test(tc, test_delivery_timeout);
    tcase_add_test(tc, test_per_id_ordering);
    tcase_add_test(tc, test_retry_scans_walk_only_due);
    tcase_add_test(tc, test_per_id_retries_no_spin);
    tcase_add_test(tc, test_answer_fields);
    tcase_add_test(tc, test_result_from_status);
    tcase_add_test(tc, test_answer_fields_wanted);
    tcase_add_test(tc, test_per_id_waits_and_unrouted_first);
    tcase_add_test(tc, test_node_death_reroutes);
    tcase_add_test(tc, test_close_with_documents_in_flight);
    tcase_add_test(tc, test_unsent_outcome_names_last_attempt);
    tcase_add_test(tc, test_item_cause_kept);
    tcase_add_test(tc, test_long_cause_through_give_up);
    tcase_add_test(tc, test_refusals);
    tcase_add_test(tc, test_idle_state_freed);
    tcase_add_test(tc, test_buffer_docs);
    tcase_add_test(tc, test_seeds_only_and_unknown_index);
    tcase_add_test(tc, test_unrouted_leaves_a_slot);
    tcase_add_test(tc, test_requests_keep_their_arrays);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
