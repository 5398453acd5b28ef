/* The contracts of the callbacks, enforced, without a cluster: from inside a
 * result, results or stats callback, esbulk_poll/flush/close return
 * ESBULK_ERR_IN_CALLBACK at once (never wait, never re-enter), esbulk_destroy
 * is deferred to the call that ran the callback (every document still gets
 * exactly one result), and esbulk_add keeps working without waiting.
 *
 * The handles point at a loopback port where nothing listens, with
 * retry.max 0: a sent document fails at once and its callback runs. Nothing
 * is asserted inside a callback (a failed ck_assert must not unwind through
 * the library); callbacks record, the test asserts after. */
#include <esbulk.h>

#include <check.h>
#include <dirent.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "unit_util.h"

#define MAX_DOCS 64

/* What a test's callbacks do and what they saw. */
typedef struct {
    esbulk_t *eb;
    /* what the callback does, once (on the first result or stats call) */
    enum { DO_NOTHING, DO_POLL, DO_FLUSH, DO_CLOSE, DO_DESTROY, DO_ADD, DO_FILL, DO_POLL_OTHER } action;
    int done;              /* the action ran */
    int stats_only;        /* only the stats callback acts */
    int add_before;        /* DO_DESTROY: documents to add before destroying */
    esbulk_t *other;       /* DO_POLL_OTHER: a second handle */
    /* what it saw */
    int32_t rc_poll0, rc_poll_inf;
    esbulk_err_t rc_flush, rc_close, rc_add, rc_add_after, rc_add_full;
    int64_t flush_ms, fill_ms;
    int filled;            /* DO_FILL: adds accepted before QUEUE_FULL */
    int results, closed, batches, stats_calls;
    int per_doc[MAX_DOCS]; /* results per document (doc_opaque is its number) */
    int next_doc;          /* the next document number to add */
} state_t;

static state_t st;
/* a second thread may serve too (test_flush_while_other_thread_polls) */
static pthread_mutex_t st_lock = PTHREAD_MUTEX_INITIALIZER;

static esbulk_err_t add_doc(state_t *s)
{
    char id[16], errstr[256];
    int n = s->next_doc;
    esbulk_err_t err;

    if (n >= MAX_DOCS)
        return ESBULK_ERR_INVALID_ARG;
    snprintf(id, sizeof(id), "d%d", n);
    err = esbulk_add(s->eb, ESBULK_OP_INDEX, "idx", id, strlen(id), NULL, 0, "{\"a\":1}", 7,
                     (void *)(intptr_t)n, errstr, sizeof(errstr));
    if (err == ESBULK_OK)
        s->next_doc++;
    return err;
}

/* The misuse under test, run once from inside a callback. */
static void act(state_t *s)
{
    int64_t t0;
    int i;

    if (s->done)
        return;
    s->done = 1;
    switch (s->action) {
    case DO_NOTHING:
        break;
    case DO_POLL:
        s->rc_poll0 = esbulk_poll(s->eb, 0);
        s->rc_poll_inf = esbulk_poll(s->eb, -1);
        break;
    case DO_FLUSH:
        t0 = now_ms();
        s->rc_flush = esbulk_flush(s->eb, -1);
        s->flush_ms = now_ms() - t0;
        break;
    case DO_CLOSE:
        s->rc_close = esbulk_close(s->eb, -1);
        break;
    case DO_DESTROY:
        for (i = 0; i < s->add_before; i++)
            s->rc_add = add_doc(s);
        esbulk_destroy(s->eb);
        s->rc_add_after = add_doc(s); /* the handle is closing */
        esbulk_destroy(s->eb);        /* a second destroy adds nothing */
        break;
    case DO_ADD:
        s->rc_add = add_doc(s);
        break;
    case DO_FILL:
        /* buffer.max.docs reached inside a callback: QUEUE_FULL at once,
         * whatever enqueue.timeout.ms says */
        t0 = now_ms();
        while ((s->rc_add_full = add_doc(s)) == ESBULK_OK)
            s->filled++;
        s->fill_ms = now_ms() - t0;
        break;
    case DO_POLL_OTHER:
        s->rc_poll0 = esbulk_poll(s->other, 0); /* another handle: allowed */
        break;
    }
}

static void count_result(state_t *s, const esbulk_result_t *r)
{
    intptr_t n = (intptr_t)esbulk_result_opaque(r);

    pthread_mutex_lock(&st_lock);
    s->results++;
    if (n >= 0 && n < MAX_DOCS)
        s->per_doc[n]++;
    if (esbulk_result_err(r) == ESBULK_ERR_CLOSED)
        s->closed++;
    pthread_mutex_unlock(&st_lock);
}

static void on_result(esbulk_t *eb, const esbulk_result_t *r, void *opaque)
{
    state_t *s = opaque;

    (void)eb;
    count_result(s, r);
    if (!s->stats_only)
        act(s);
}

static void on_results(esbulk_t *eb, const esbulk_result_t *const *results, size_t count,
                       void *opaque)
{
    state_t *s = opaque;
    size_t i;

    (void)eb;
    s->batches++;
    for (i = 0; i < count; i++) {
        count_result(s, results[i]);
        if (i == 0 && !s->stats_only)
            act(s); /* mid-batch: the rest of this batch is still delivered */
    }
}

static void on_stats(esbulk_t *eb, const char *json, size_t json_len, void *opaque)
{
    state_t *s = opaque;

    (void)eb;
    (void)json;
    (void)json_len;
    s->stats_calls++;
    act(s);
}

enum { CB_RESULT, CB_RESULTS, CB_STATS };

/* A handle on a dead port whose documents fail fast; flush_ms: how soon
 * added documents are sent. The callbacks record into st. */
static esbulk_t *dead_handle(int cb, const char *flush_ms, const char *max_docs,
                             const char *enqueue_ms)
{
    esbulk_conf_t *conf = dead_conf("1000", flush_ms, max_docs, enqueue_ms);
    char errstr[256];
    esbulk_t *eb;

    if (cb == CB_RESULTS)
        esbulk_conf_set_results_cb(conf, on_results);
    else
        esbulk_conf_set_result_cb(conf, on_result);
    if (cb == CB_STATS) {
        ck_assert_int_eq(esbulk_conf_set(conf, "stats.interval.ms", "50", NULL, 0), 0);
        esbulk_conf_set_stats_cb(conf, on_stats);
    }
    esbulk_conf_set_opaque(conf, &st);
    eb = esbulk_new(conf, errstr, sizeof(errstr));
    ck_assert_msg(eb != NULL, "%s", errstr);
    esbulk_conf_destroy(conf);
    memset(&st, 0, sizeof(st));
    st.eb = eb;
    st.rc_poll0 = st.rc_poll_inf = INT32_MIN;
    st.rc_flush = st.rc_close = st.rc_add = st.rc_add_after = st.rc_add_full = ESBULK_OK;
    return eb;
}

static esbulk_t *quick_handle(int cb)
{
    return dead_handle(cb, "5", "1000", "0");
}

/* Every document added got exactly one result. */
static void assert_exactly_once(void)
{
    int i;

    ck_assert_int_gt(st.next_doc, 0);
    ck_assert_int_eq(st.results, st.next_doc);
    for (i = 0; i < st.next_doc; i++)
        ck_assert_msg(st.per_doc[i] == 1, "document %d got %d results", i, st.per_doc[i]);
}

/* ------------------------------------------------------------------------- */

/* The library's threads carry their names (ps -L, top -H, perf). */
static int thread_named(const char *name)
{
    char path[128], comm[64];
    int tid, found = 0;
    FILE *f;
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;

    ck_assert_ptr_nonnull(d);
    while (!found && (e = readdir(d)) != NULL) {
        if ((tid = atoi(e->d_name)) <= 0)
            continue;
        snprintf(path, sizeof(path), "/proc/self/task/%d/comm", tid);
        if ((f = fopen(path, "r")) == NULL)
            continue;
        if (fgets(comm, sizeof(comm), f) != NULL) {
            comm[strcspn(comm, "\n")] = '\0';
            found = strcmp(comm, name) == 0;
        }
        fclose(f);
    }
    closedir(d);
    return found;
}

START_TEST(test_thread_names)
{
    esbulk_t *eb;

    ck_assert(!thread_named("esbulk-io"));
    eb = quick_handle(CB_RESULT);
    /* the I/O thread names itself as it starts */
    for (int i = 0; i < 200 && !(thread_named("esbulk-io") && thread_named("esbulk-topo")); i++)
        nanosleep(&(struct timespec){.tv_nsec = 5000000}, NULL);
    ck_assert(thread_named("esbulk-io"));
    ck_assert(thread_named("esbulk-topo"));
    esbulk_destroy(eb);
    ck_assert(!thread_named("esbulk-io"));
    ck_assert(!thread_named("esbulk-topo"));
}
END_TEST

START_TEST(test_null_handle)
{
    ck_assert_int_eq(esbulk_poll(NULL, 0), ESBULK_ERR_INVALID_ARG);
    ck_assert_int_eq(esbulk_poll(NULL, -1), ESBULK_ERR_INVALID_ARG);
    ck_assert_int_eq(esbulk_flush(NULL, 0), ESBULK_ERR_INVALID_ARG);
    ck_assert_int_eq(esbulk_close(NULL, 0), ESBULK_ERR_INVALID_ARG);
    esbulk_destroy(NULL);
    ck_assert_str_eq(esbulk_err2str(ESBULK_ERR_IN_CALLBACK),
                     "called from inside a result or statistics callback");
    ck_assert_int_eq(ESBULK_ERR_IN_CALLBACK, -22);
}
END_TEST

START_TEST(test_poll_in_callback)
{
    esbulk_t *eb = quick_handle(CB_RESULT);

    st.action = DO_POLL;
    ck_assert_int_eq(add_doc(&st), ESBULK_OK);
    ck_assert_int_eq(add_doc(&st), ESBULK_OK);
    ck_assert_int_eq(esbulk_flush(eb, 5000), ESBULK_OK);
    ck_assert(st.done);
    ck_assert_int_eq(st.rc_poll0, ESBULK_ERR_IN_CALLBACK);
    ck_assert_int_eq(st.rc_poll_inf, ESBULK_ERR_IN_CALLBACK);
    assert_exactly_once();
    /* outside a callback, poll works again */
    ck_assert_int_eq(esbulk_poll(eb, 0), 0);
    esbulk_destroy(eb);
}
END_TEST

START_TEST(test_flush_in_callback)
{
    esbulk_t *eb = quick_handle(CB_RESULT);
    int64_t t0;

    st.action = DO_FLUSH;
    ck_assert_int_eq(add_doc(&st), ESBULK_OK);
    t0 = now_ms();
    ck_assert_int_eq(esbulk_poll(eb, 5000), 1);
    ck_assert_int_lt(now_ms() - t0, 4000);
    ck_assert(st.done);
    ck_assert_int_eq(st.rc_flush, ESBULK_ERR_IN_CALLBACK);
    ck_assert_int_lt(st.flush_ms, 200); /* at once: it did not wait on itself */
    assert_exactly_once();
    esbulk_destroy(eb);
}
END_TEST

START_TEST(test_close_in_callback)
{
    esbulk_t *eb = quick_handle(CB_RESULT);

    st.action = DO_CLOSE;
    ck_assert_int_eq(add_doc(&st), ESBULK_OK);
    ck_assert_int_eq(esbulk_flush(eb, 5000), ESBULK_OK);
    ck_assert_int_eq(st.rc_close, ESBULK_ERR_IN_CALLBACK);
    /* the refused close did not close: the handle still takes documents */
    ck_assert_int_eq(add_doc(&st), ESBULK_OK);
    ck_assert_int_eq(esbulk_close(eb, 5000), ESBULK_OK);
    assert_exactly_once();
    esbulk_destroy(eb);
}
END_TEST

/* Poll, flush and close from the statistics callback are refused too. */
START_TEST(test_calls_in_stats_callback)
{
    esbulk_t *eb = dead_handle(CB_STATS, "600000", "1000", "0");
    int64_t t0 = now_ms();

    st.action = DO_POLL;
    st.stats_only = 1;
    while (!st.done && now_ms() - t0 < 3000)
        ck_assert_int_ge(esbulk_poll(eb, 100), 0);
    ck_assert(st.done);
    ck_assert_int_eq(st.rc_poll0, ESBULK_ERR_IN_CALLBACK);
    ck_assert_int_eq(st.rc_poll_inf, ESBULK_ERR_IN_CALLBACK);
    st.done = 0;
    st.action = DO_FLUSH;
    while (!st.done && now_ms() - t0 < 3000)
        ck_assert_int_ge(esbulk_poll(eb, 100), 0);
    ck_assert_int_eq(st.rc_flush, ESBULK_ERR_IN_CALLBACK);
    ck_assert_int_lt(st.flush_ms, 200);
    st.done = 0;
    st.action = DO_CLOSE;
    while (!st.done && now_ms() - t0 < 3000)
        ck_assert_int_ge(esbulk_poll(eb, 100), 0);
    ck_assert_int_eq(st.rc_close, ESBULK_ERR_IN_CALLBACK);
    esbulk_destroy(eb);
}
END_TEST

/* Destroy from a result callback: deferred to the call that ran it. The
 * callback first adds documents (pending when the handle closes). */
static void destroy_in_result_cb(int cb, int outer)
{
    esbulk_t *eb = quick_handle(cb);
    int64_t t0;
    int i;

    st.action = DO_DESTROY;
    st.add_before = 4;
    for (i = 0; i < 3; i++)
        ck_assert_int_eq(add_doc(&st), ESBULK_OK);
    t0 = now_ms();
    switch (outer) {
    case 0: /* poll served the 3, then the close served the rest */
        ck_assert_int_ge(esbulk_poll(eb, -1), 3);
        break;
    case 1:
        ck_assert_int_eq(esbulk_flush(eb, -1), ESBULK_ERR_CLOSED);
        break;
    case 2:
        ck_assert_int_eq(esbulk_close(eb, -1), ESBULK_ERR_CLOSED);
        break;
    }
    /* eb is freed: the outer call returned, promptly */
    ck_assert_int_lt(now_ms() - t0, 4000);
    ck_assert(st.done);
    /* added before the destroy; but a closing handle takes nothing */
    ck_assert_int_eq(st.rc_add, outer == 2 ? ESBULK_ERR_CLOSED : ESBULK_OK);
    ck_assert_int_eq(st.rc_add_after, ESBULK_ERR_CLOSED);
    ck_assert_int_eq(st.next_doc, outer == 2 ? 3 : 7);
    assert_exactly_once();
}

START_TEST(test_destroy_in_result_cb_poll) { destroy_in_result_cb(CB_RESULT, 0); }
END_TEST
START_TEST(test_destroy_in_result_cb_flush) { destroy_in_result_cb(CB_RESULT, 1); }
END_TEST
START_TEST(test_destroy_in_result_cb_close) { destroy_in_result_cb(CB_RESULT, 2); }
END_TEST
START_TEST(test_destroy_in_results_cb_poll) { destroy_in_result_cb(CB_RESULTS, 0); }
END_TEST
START_TEST(test_destroy_in_results_cb_flush) { destroy_in_result_cb(CB_RESULTS, 1); }
END_TEST

/* The poll counts every result it served, the deferred close's included. */
START_TEST(test_destroy_poll_count)
{
    esbulk_t *eb = dead_handle(CB_RESULT, "5", "1000", "0");

    st.action = DO_DESTROY;
    st.add_before = 5;
    ck_assert_int_eq(add_doc(&st), ESBULK_OK);
    ck_assert_int_eq(esbulk_poll(eb, 5000), 6);
    assert_exactly_once();
}
END_TEST

/* Destroy from the statistics callback, documents pending (never sent:
 * flush.interval.ms is long): they get ESBULK_ERR_CLOSED results. */
START_TEST(test_destroy_in_stats_cb)
{
    esbulk_t *eb = dead_handle(CB_STATS, "600000", "1000", "0");
    int64_t t0;
    int i;

    st.action = DO_DESTROY;
    st.stats_only = 1;
    for (i = 0; i < 3; i++)
        ck_assert_int_eq(add_doc(&st), ESBULK_OK);
    t0 = now_ms();
    ck_assert_int_eq(esbulk_poll(eb, -1), 3);
    ck_assert_int_lt(now_ms() - t0, 4000);
    ck_assert_int_eq(st.stats_calls, 1);
    ck_assert_int_eq(st.rc_add_after, ESBULK_ERR_CLOSED);
    assert_exactly_once();
}
END_TEST

/* esbulk_add from a callback works, and never waits. */
START_TEST(test_add_in_callback)
{
    esbulk_t *eb = quick_handle(CB_RESULT);
    int64_t t0 = now_ms();

    st.action = DO_ADD;
    ck_assert_int_eq(add_doc(&st), ESBULK_OK);
    while (st.results < 2 && now_ms() - t0 < 3000)
        ck_assert_int_ge(esbulk_poll(eb, 100), 0);
    ck_assert_int_eq(st.rc_add, ESBULK_OK);
    assert_exactly_once();
    esbulk_destroy(eb);
}
END_TEST

START_TEST(test_add_in_callback_never_waits)
{
    /* enqueue.timeout.ms 10 s, 4 documents at most */
    esbulk_t *eb = dead_handle(CB_RESULT, "5", "4", "10000");
    int64_t t0 = now_ms();

    st.action = DO_FILL;
    ck_assert_int_eq(add_doc(&st), ESBULK_OK);
    ck_assert_int_ge(esbulk_poll(eb, 3000), 1);
    ck_assert(st.done);
    ck_assert_int_eq(st.filled, 4); /* the served one no longer counts */
    ck_assert_int_eq(st.rc_add_full, ESBULK_ERR_QUEUE_FULL);
    ck_assert_int_lt(st.fill_ms, 200);
    ck_assert_int_lt(now_ms() - t0, 4000);
    esbulk_destroy(eb);
    assert_exactly_once();
}
END_TEST

/* A callback of one handle may serve another handle. */
START_TEST(test_poll_other_handle_in_callback)
{
    esbulk_t *other = quick_handle(CB_RESULT), *eb = quick_handle(CB_RESULT);

    st.action = DO_POLL_OTHER;
    st.other = other;
    ck_assert_int_eq(add_doc(&st), ESBULK_OK);
    ck_assert_int_eq(esbulk_flush(eb, 5000), ESBULK_OK);
    ck_assert(st.done);
    ck_assert_int_eq(st.rc_poll0, 0);
    assert_exactly_once();
    esbulk_destroy(eb);
    esbulk_destroy(other);
}
END_TEST

/* A flush on thread B while thread A polls keeps working. */
typedef struct {
    esbulk_t *eb;
    atomic_int stop;
    int bad;
} poller_t;

static void *poller(void *arg)
{
    poller_t *p = arg;

    while (!atomic_load(&p->stop))
        if (esbulk_poll(p->eb, 20) < 0)
            p->bad++;
    return NULL;
}

START_TEST(test_flush_while_other_thread_polls)
{
    esbulk_t *eb = dead_handle(CB_RESULT, "600000", "1000", "0");
    poller_t p;
    pthread_t t;
    int i;

    p.eb = eb;
    atomic_init(&p.stop, 0);
    p.bad = 0;
    ck_assert_int_eq(pthread_create(&t, NULL, poller, &p), 0);
    for (i = 0; i < 3; i++)
        ck_assert_int_eq(add_doc(&st), ESBULK_OK);
    ck_assert_int_eq(esbulk_flush(eb, 5000), ESBULK_OK);
    atomic_store(&p.stop, 1);
    pthread_join(t, NULL);
    ck_assert_int_eq(p.bad, 0);
    esbulk_destroy(eb);
    assert_exactly_once();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("misuse");
    TCase *tc = tcase_create("callbacks");
    SRunner *sr;
    int failed;

    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_null_handle);
    tcase_add_test(tc, test_thread_names);
    tcase_add_test(tc, test_poll_in_callback);
    tcase_add_test(tc, test_flush_in_callback);
    tcase_add_test(tc, test_close_in_callback);
    tcase_add_test(tc, test_calls_in_stats_callback);
    tcase_add_test(tc, test_destroy_in_result_cb_poll);
    tcase_add_test(tc, test_destroy_in_result_cb_flush);
    tcase_add_test(tc, test_destroy_in_result_cb_close);
    tcase_add_test(tc, test_destroy_in_results_cb_poll);
    tcase_add_test(tc, test_destroy_in_results_cb_flush);
    tcase_add_test(tc, test_destroy_poll_count);
    tcase_add_test(tc, test_destroy_in_stats_cb);
    tcase_add_test(tc, test_add_in_callback);
    tcase_add_test(tc, test_add_in_callback_never_waits);
    tcase_add_test(tc, test_poll_other_handle_in_callback);
    tcase_add_test(tc, test_flush_while_other_thread_polls);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
