/* The pull API without a cluster: esbulk_poll_results() and
 * esbulk_results_release(). Every document is pulled exactly once, in
 * batches no larger than asked; pulled results stay readable until released
 * (serving calls in between free nothing); timeouts; misuse errors; flush,
 * close and destroy of a handle without result callbacks; results held at
 * destroy are freed (ASan and valgrind run this file too).
 *
 * The handles point at a loopback port where nothing listens, with
 * retry.max 0: a sent document fails at once. Callbacks record, the test
 * asserts after (a failed ck_assert must not unwind through the library). */
#include <esbulk.h>

#include <check.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "unit_util.h"

#define MAX_DOCS 512

/* What the callbacks (when set) saw and did. */
typedef struct {
    esbulk_t *eb;
    int per_doc[MAX_DOCS]; /* results per document, all paths (doc_opaque is its number) */
    int next_doc;
    int cb_results;        /* results seen by the result callback */
    int stats_calls;
    int32_t rc_pull_in_cb; /* esbulk_poll_results from inside the callback */
    esbulk_err_t rc_release_in_cb; /* esbulk_results_release from inside it */
    int pull_in_cb_done;
    int destroy_in_stats;  /* the stats callback destroys the handle */
} state_t;

static state_t st;

static esbulk_err_t add_doc(void)
{
    char id[16], errstr[256];
    int n = st.next_doc;
    esbulk_err_t err;

    if (n >= MAX_DOCS)
        return ESBULK_ERR_INVALID_ARG;
    snprintf(id, sizeof(id), "d%d", n);
    err = esbulk_add(st.eb, ESBULK_OP_INDEX, "idx", id, strlen(id), NULL, 0, "{\"a\":1}", 7,
                     (void *)(intptr_t)n, errstr, sizeof(errstr));
    if (err == ESBULK_OK)
        st.next_doc++;
    return err;
}

static void add_docs(int n)
{
    int i;

    for (i = 0; i < n; i++)
        ck_assert_int_eq(add_doc(), ESBULK_OK);
}

static void count(const esbulk_result_t *r)
{
    intptr_t n = (intptr_t)esbulk_result_opaque(r);

    if (n >= 0 && n < MAX_DOCS)
        st.per_doc[n]++;
}

static void on_result(esbulk_t *eb, const esbulk_result_t *r, void *opaque)
{
    const esbulk_result_t *out[4];

    (void)opaque;
    count(r);
    st.cb_results++;
    if (!st.pull_in_cb_done) {
        st.pull_in_cb_done = 1;
        st.rc_pull_in_cb = esbulk_poll_results(eb, out, 4, -1);
        /* refused: it would free the batch the program holds */
        st.rc_release_in_cb = esbulk_results_release(eb);
    }
}

static void on_stats(esbulk_t *eb, const char *json, size_t json_len, void *opaque)
{
    (void)json;
    (void)json_len;
    (void)opaque;
    st.stats_calls++;
    if (st.destroy_in_stats && st.stats_calls == 1)
        esbulk_destroy(eb);
}

/* SLOW_RETRY: a refused document is retried, but only after a long backoff,
 * so that it has no outcome until a close gives it one. */
enum { PULL = 0, WITH_CB = 1, WITH_STATS = 2, SLOW_RETRY = 4 };

/* A handle on a dead port. flush_ms: how soon added documents are sent
 * (600000: never before a flush). */
static esbulk_t *dead_handle(int flags, const char *flush_ms, const char *max_docs)
{
    esbulk_conf_t *conf = dead_conf("2000", flush_ms, max_docs, "0");
    char errstr[256];
    esbulk_t *eb;

    if (flags & SLOW_RETRY) {
        ck_assert_int_eq(esbulk_conf_set(conf, "retry.max", "100", NULL, 0), 0);
        ck_assert_int_eq(esbulk_conf_set(conf, "retry.backoff.ms", "600000", NULL, 0), 0);
        ck_assert_int_eq(esbulk_conf_set(conf, "retry.backoff.max.ms", "600000", NULL, 0), 0);
        ck_assert_int_eq(esbulk_conf_set(conf, "delivery.timeout.ms", "0", NULL, 0), 0);
    }
    if (flags & WITH_CB)
        esbulk_conf_set_result_cb(conf, on_result);
    if (flags & WITH_STATS) {
        ck_assert_int_eq(esbulk_conf_set(conf, "stats.interval.ms", "50", NULL, 0), 0);
        esbulk_conf_set_stats_cb(conf, on_stats);
    }
    eb = esbulk_new(conf, errstr, sizeof(errstr));
    ck_assert_msg(eb != NULL, "%s", errstr);
    esbulk_conf_destroy(conf);
    memset(&st, 0, sizeof(st));
    st.eb = eb;
    st.rc_pull_in_cb = INT32_MIN;
    st.rc_release_in_cb = ESBULK_OK;
    return eb;
}

/* Checks one pulled result against its document: every accessor answers,
 * as a result callback would see it. */
static void assert_result(const esbulk_result_t *r, int want_closed)
{
    intptr_t n = (intptr_t)esbulk_result_opaque(r);
    char id[16];

    ck_assert_int_ge(n, 0);
    ck_assert_int_lt(n, st.next_doc);
    snprintf(id, sizeof(id), "d%d", (int)n);
    ck_assert_str_eq(esbulk_result_id(r), id);
    ck_assert_str_eq(esbulk_result_index(r), "idx");
    ck_assert_int_eq(esbulk_result_op(r), ESBULK_OP_INDEX);
    ck_assert_int_ne(esbulk_result_outcome(r), ESBULK_OUTCOME_INDEXED);
    ck_assert_int_ne(esbulk_result_err(r), ESBULK_OK);
    if (want_closed)
        ck_assert_int_eq(esbulk_result_err(r), ESBULK_ERR_CLOSED);
    ck_assert_ptr_nonnull(esbulk_result_error_reason(r));
    ck_assert_ptr_null(esbulk_result_result(r));
    ck_assert_int_eq(esbulk_result_status(r), 0);
    ck_assert_int_eq(esbulk_result_seq_no(r), -1);
    ck_assert_int_eq(esbulk_result_primary_term(r), -1);
    ck_assert_int_eq(esbulk_result_version(r), -1);
    ck_assert_int_ge(esbulk_result_attempts(r), 0);
}

/* Pulls until `want` results came (or 5 s), at most `max` at a time,
 * checking each batch before its release. Returns the number pulled. */
static int pull_all(esbulk_t *eb, int want, size_t max, int want_closed)
{
    const esbulk_result_t *out[64];
    int got = 0, i;
    int64_t t0 = now_ms();

    ck_assert_uint_le(max, 64);
    while (got < want && now_ms() - t0 < 5000) {
        int32_t n = esbulk_poll_results(eb, out, max, 100);

        ck_assert_int_ge(n, 0);
        ck_assert_int_le(n, (int32_t)max);
        for (i = 0; i < n; i++) {
            count(out[i]);
            assert_result(out[i], want_closed);
        }
        got += n;
        if (n > 0) {
            /* one batch at a time: the next call is refused until released */
            ck_assert_int_eq(esbulk_poll_results(eb, out, max, 0), ESBULK_ERR_RESULTS_HELD);
            for (i = 0; i < n; i++) /* and took nothing: the batch is intact */
                assert_result(out[i], want_closed);
            esbulk_results_release(eb);
        }
    }
    return got;
}

static void assert_exactly_once(void)
{
    int i;

    ck_assert_int_gt(st.next_doc, 0);
    for (i = 0; i < st.next_doc; i++)
        ck_assert_msg(st.per_doc[i] == 1, "document %d got %d results", i, st.per_doc[i]);
}

/* ------------------------------------------------------------------------- */

START_TEST(test_misuse_args)
{
    esbulk_t *eb = dead_handle(PULL, "600000", "1000");
    const esbulk_result_t *out[4];

    ck_assert_int_eq(esbulk_poll_results(NULL, out, 4, 0), ESBULK_ERR_INVALID_ARG);
    ck_assert_int_eq(esbulk_poll_results(NULL, out, 4, -1), ESBULK_ERR_INVALID_ARG);
    ck_assert_int_eq(esbulk_poll_results(eb, NULL, 4, -1), ESBULK_ERR_INVALID_ARG);
    ck_assert_int_eq(esbulk_poll_results(eb, out, 0, -1), ESBULK_ERR_INVALID_ARG);
    ck_assert_int_eq(esbulk_results_release(NULL), ESBULK_ERR_INVALID_ARG);
    ck_assert_int_eq(esbulk_results_release(eb), ESBULK_OK); /* nothing held */
    ck_assert_int_eq(ESBULK_ERR_RESULTS_HELD, -23);
    ck_assert_str_eq(esbulk_err2str(ESBULK_ERR_RESULTS_HELD),
                     "results of an earlier esbulk_poll_results() are not released");
    esbulk_destroy(eb);
}
END_TEST

/* 300 documents pulled 7 at a time: each exactly once, no batch larger. */
START_TEST(test_batches_exactly_once)
{
    esbulk_t *eb = dead_handle(PULL, "5", "1000");

    add_docs(300);
    ck_assert_int_eq(pull_all(eb, 300, 7, 0), 300);
    assert_exactly_once();
    ck_assert_int_eq(esbulk_pending(eb), 0);
    {
        const esbulk_result_t *out[4];
        ck_assert_int_eq(esbulk_poll_results(eb, out, 4, 0), 0);
    }
    esbulk_destroy(eb);
}
END_TEST

/* Pulled results stay readable across serving calls, until released; they
 * count as pending until then. */
START_TEST(test_fields_until_release)
{
    esbulk_t *eb = dead_handle(PULL, "600000", "1000");
    const esbulk_result_t *out[64];
    int32_t n;
    int i;

    add_docs(40);
    ck_assert_int_eq(esbulk_flush(eb, 5000), ESBULK_OK);
    n = esbulk_poll_results(eb, out, 64, 0);
    ck_assert_int_eq(n, 40);
    ck_assert_int_eq(esbulk_pending(eb), 40);
    /* serving calls while the batch is held free nothing of it */
    ck_assert_int_eq(esbulk_poll(eb, 0), 0);
    ck_assert_int_eq(esbulk_flush(eb, 1000), ESBULK_OK);
    add_docs(5);
    ck_assert_int_eq(esbulk_flush(eb, 5000), ESBULK_OK);
    for (i = 0; i < n; i++) {
        count(out[i]);
        assert_result(out[i], 0);
    }
    esbulk_results_release(eb);
    ck_assert_int_eq(esbulk_pending(eb), 5);
    ck_assert_int_eq(pull_all(eb, 5, 64, 0), 5);
    ck_assert_int_eq(esbulk_pending(eb), 0);
    assert_exactly_once();
    esbulk_destroy(eb);
}
END_TEST

/* esbulk_results_read: the fields of a pulled batch in one call equal the
 * single accessors'; a strs too small for all stops before the result that
 * does not fit, and the rest is read from there; misuse is refused. */
START_TEST(test_results_read)
{
    esbulk_t *eb = dead_handle(PULL, "600000", "1000");
    const esbulk_result_t *out[64];
    void *opq[64];
    int32_t ints[64 * ESBULK_RESULT_INTS];
    int64_t longs[64 * ESBULK_RESULT_LONGS];
    char strs[4096], small[40];
    size_t used = 1, off;
    int32_t n;
    int64_t got, done;
    int i;

    add_docs(30);
    ck_assert_int_eq(esbulk_flush(eb, 5000), ESBULK_OK);
    n = esbulk_poll_results(eb, out, 64, 0);
    ck_assert_int_eq(n, 30);
    ck_assert_int_eq(esbulk_results_read(out, (size_t)n, opq, ints, longs, strs, sizeof(strs),
                                         &used), n);
    off = 0;
    for (i = 0; i < n; i++) {
        const int32_t *in = ints + i * ESBULK_RESULT_INTS;
        const int64_t *lo = longs + i * ESBULK_RESULT_LONGS;

        count(out[i]);
        assert_result(out[i], 0);
        ck_assert_ptr_eq(opq[i], esbulk_result_opaque(out[i]));
        ck_assert_int_eq(in[0], esbulk_result_outcome(out[i]));
        ck_assert_int_eq(in[1], esbulk_result_err(out[i]));
        ck_assert_int_eq(in[2], esbulk_result_op(out[i]));
        ck_assert_int_eq(in[3], esbulk_result_status(out[i]));
        ck_assert_int_eq(in[4], esbulk_result_attempts(out[i]));
        ck_assert_int_eq(in[5], ESBULK_RESULT_NO_RESULT); /* index and id set, no result */
        ck_assert_int_eq(lo[0], esbulk_result_seq_no(out[i]));
        ck_assert_int_eq(lo[1], esbulk_result_primary_term(out[i]));
        ck_assert_int_eq(lo[2], esbulk_result_version(out[i]));
        ck_assert_str_eq(strs + off, esbulk_result_index(out[i]));
        off += strlen(strs + off) + 1;
        ck_assert_str_eq(strs + off, esbulk_result_id(out[i]));
        off += strlen(strs + off) + 1;
        ck_assert_str_eq(strs + off, ""); /* NULL result */
        off += 1;
    }
    ck_assert_uint_eq(used, off);
    /* "idx", "dN" or "dNN", "": at most 9 bytes a result: 40 bytes hold 4 */
    done = 0;
    while (done < n) {
        got = esbulk_results_read(out + done, (size_t)(n - done), opq, ints, longs, small,
                                  sizeof(small), &used);
        ck_assert_int_ge(got, 4);
        ck_assert_int_le(got, 5);
        ck_assert_uint_le(used, sizeof(small));
        for (i = 0; i < got; i++) {
            const char *idp = small + strlen(small) + 1; /* the first result's id */

            ck_assert_ptr_eq(opq[i], esbulk_result_opaque(out[done + i]));
            if (i == 0)
                ck_assert_str_eq(idp, esbulk_result_id(out[done]));
        }
        done += got;
        if (n - done < 4)
            break;
    }
    ck_assert_int_eq(esbulk_results_read(out + done, (size_t)(n - done), NULL, ints, longs,
                                         small, sizeof(small), &used), n - done);
    /* too small for the first: 0, nothing used */
    ck_assert_int_eq(esbulk_results_read(out, (size_t)n, opq, ints, longs, small, 5, &used), 0);
    ck_assert_uint_eq(used, 0);
    /* no strings: all read */
    ck_assert_int_eq(esbulk_results_read(out, (size_t)n, NULL, ints, longs, NULL, 0, NULL), n);
    ck_assert_int_eq(ints[(n - 1) * ESBULK_RESULT_INTS + 1], esbulk_result_err(out[n - 1]));
    /* misuse */
    ck_assert_int_eq(esbulk_results_read(NULL, 1, opq, ints, longs, NULL, 0, NULL),
                     ESBULK_ERR_INVALID_ARG);
    ck_assert_int_eq(esbulk_results_read(out, 1, opq, NULL, longs, NULL, 0, NULL),
                     ESBULK_ERR_INVALID_ARG);
    ck_assert_int_eq(esbulk_results_read(out, 1, opq, ints, NULL, NULL, 0, NULL),
                     ESBULK_ERR_INVALID_ARG);
    ck_assert_int_eq(esbulk_results_read(out, 1, opq, ints, longs, NULL, 10, NULL),
                     ESBULK_ERR_INVALID_ARG);
    {
        const esbulk_result_t *holes[2] = {out[0], NULL};

        ck_assert_int_eq(esbulk_results_read(holes, 2, opq, ints, longs, NULL, 0, NULL),
                         ESBULK_ERR_INVALID_ARG);
    }
    ck_assert_int_eq(esbulk_results_read(NULL, 0, NULL, NULL, NULL, NULL, 0, &used), 0);
    esbulk_results_release(eb);
    assert_exactly_once();
    esbulk_destroy(eb);
}
END_TEST

START_TEST(test_timeouts)
{
    esbulk_t *eb = dead_handle(PULL, "600000", "1000");
    const esbulk_result_t *out[8];
    int64_t t0, dt;

    add_docs(3); /* never sent before a flush: no result can come */
    t0 = now_ms();
    ck_assert_int_eq(esbulk_poll_results(eb, out, 8, 0), 0);
    ck_assert_int_lt(now_ms() - t0, 50);
    t0 = now_ms();
    ck_assert_int_eq(esbulk_poll_results(eb, out, 8, 150), 0);
    dt = now_ms() - t0;
    ck_assert_int_ge(dt, 140);
    ck_assert_int_lt(dt, 1000);
    /* nothing was held by calls that returned 0 */
    ck_assert_int_eq(esbulk_poll_results(eb, out, 8, 0), 0);
    esbulk_results_release(eb);
    esbulk_destroy(eb);
}
END_TEST

/* -1 waits until results come: here a flush on the fast handle sends. */
START_TEST(test_wait_forever_gets_results)
{
    esbulk_t *eb = dead_handle(PULL, "5", "1000");
    const esbulk_result_t *out[8];
    int32_t n, i;
    int64_t t0 = now_ms();

    add_docs(2);
    n = esbulk_poll_results(eb, out, 8, -1);
    ck_assert_int_ge(n, 1);
    ck_assert_int_lt(now_ms() - t0, 4000);
    for (i = 0; i < n; i++)
        count(out[i]);
    esbulk_results_release(eb);
    if (n < 2) {
        ck_assert_int_eq(esbulk_poll_results(eb, out, 8, -1), 1);
        count(out[0]);
        esbulk_results_release(eb);
    }
    assert_exactly_once();
    esbulk_destroy(eb);
}
END_TEST

/* A handle without result callbacks: flush waits for the outcomes, serves
 * nothing; esbulk_poll serves nothing either; everything stays pullable. */
START_TEST(test_flush_and_poll_keep_results)
{
    esbulk_t *eb = dead_handle(PULL, "600000", "1000");

    add_docs(50);
    ck_assert_int_eq(esbulk_flush(eb, 5000), ESBULK_OK);
    ck_assert_int_eq(esbulk_pending(eb), 50); /* known, not released */
    ck_assert_int_eq(esbulk_poll(eb, 0), 0);
    ck_assert_int_eq(esbulk_poll(eb, 100), 0); /* returns at once: results are ready */
    ck_assert_int_eq(pull_all(eb, 50, 16, 0), 50);
    assert_exactly_once();
    ck_assert_int_eq(esbulk_pending(eb), 0);
    esbulk_destroy(eb);
}
END_TEST

/* Close keeps every result (the not-delivered ones too) pullable until
 * destroy; after close, a pull never waits. SLOW_RETRY: without it the
 * I/O thread, woken by the close, may fail every document on the refused
 * port before the close looks, and the close would find nothing left. */
START_TEST(test_close_keeps_results)
{
    esbulk_t *eb = dead_handle(PULL | SLOW_RETRY, "600000", "1000");
    const esbulk_result_t *out[4];
    int64_t t0;

    add_docs(20);
    ck_assert_int_eq(esbulk_close(eb, 0), ESBULK_ERR_TIMED_OUT);
    ck_assert_int_eq(add_doc(), ESBULK_ERR_CLOSED);
    ck_assert_int_eq(esbulk_pending(eb), 20);
    ck_assert_int_eq(pull_all(eb, 20, 6, 1), 20);
    assert_exactly_once();
    t0 = now_ms();
    ck_assert_int_eq(esbulk_poll_results(eb, out, 4, -1), 0);
    ck_assert_int_lt(now_ms() - t0, 100);
    ck_assert_int_eq(esbulk_close(eb, 0), ESBULK_OK); /* already closed */
    esbulk_destroy(eb);
}
END_TEST

/* Destroy with a batch held and results never pulled frees them all. */
START_TEST(test_destroy_with_results_held)
{
    esbulk_t *eb = dead_handle(PULL, "600000", "1000");
    const esbulk_result_t *out[8];

    add_docs(30);
    ck_assert_int_eq(esbulk_flush(eb, 5000), ESBULK_OK);
    ck_assert_int_eq(esbulk_poll_results(eb, out, 8, 0), 8);
    add_docs(4); /* never sent: the destroy's close gives them results */
    esbulk_destroy(eb);
}
END_TEST

START_TEST(test_destroy_never_pulled)
{
    esbulk_t *eb = dead_handle(PULL, "5", "1000");

    add_docs(30);
    esbulk_destroy(eb);
}
END_TEST

/* A closed handle destroyed with a batch held. (The documents wait for a
 * far-off retry: close(0) finds them without an outcome however fast the
 * dead port refuses them.) */
START_TEST(test_close_then_destroy_held)
{
    esbulk_t *eb = dead_handle(PULL | SLOW_RETRY, "600000", "1000");
    const esbulk_result_t *out[8];

    add_docs(10);
    ck_assert_int_eq(esbulk_close(eb, 0), ESBULK_ERR_TIMED_OUT);
    ck_assert_int_eq(esbulk_poll_results(eb, out, 8, 0), 8);
    esbulk_destroy(eb);
}
END_TEST

/* buffer.max.docs counts a pulled document until it is released. */
START_TEST(test_max_docs_until_release)
{
    esbulk_t *eb = dead_handle(PULL, "600000", "4");
    const esbulk_result_t *out[8];

    add_docs(4);
    ck_assert_int_eq(add_doc(), ESBULK_ERR_QUEUE_FULL);
    ck_assert_int_eq(esbulk_flush(eb, 5000), ESBULK_OK);
    ck_assert_int_eq(add_doc(), ESBULK_ERR_QUEUE_FULL); /* known, not released */
    ck_assert_int_eq(esbulk_poll_results(eb, out, 2, 0), 2);
    count(out[0]);
    count(out[1]);
    ck_assert_int_eq(add_doc(), ESBULK_ERR_QUEUE_FULL); /* pulled, not released */
    esbulk_results_release(eb);
    ck_assert_int_eq(add_doc(), ESBULK_OK);
    ck_assert_int_eq(add_doc(), ESBULK_OK);
    ck_assert_int_eq(add_doc(), ESBULK_ERR_QUEUE_FULL);
    ck_assert_int_eq(esbulk_flush(eb, 5000), ESBULK_OK);
    ck_assert_int_eq(pull_all(eb, 4, 8, 0), 4);
    assert_exactly_once();
    esbulk_destroy(eb);
}
END_TEST

/* With a result callback set, pulling still works: each result goes to
 * whichever takes it first; flush does not wait for a held batch; a pull
 * from inside the callback is refused. */
START_TEST(test_with_callback)
{
    esbulk_t *eb = dead_handle(WITH_CB, "5", "1000");
    const esbulk_result_t *out[10];
    int32_t n, i;

    add_docs(60);
    n = esbulk_poll_results(eb, out, 10, -1); /* no callback runs here */
    ck_assert_int_ge(n, 1);
    ck_assert_int_eq(st.cb_results, 0);
    for (i = 0; i < n; i++)
        count(out[i]);
    /* the rest through the callback; the held batch counts as delivered */
    ck_assert_int_eq(esbulk_flush(eb, 5000), ESBULK_OK);
    for (i = 0; i < n; i++)
        assert_result(out[i], 0);
    esbulk_results_release(eb);
    ck_assert_int_eq(st.cb_results + n, 60);
    ck_assert(st.pull_in_cb_done);
    ck_assert_int_eq(st.rc_pull_in_cb, ESBULK_ERR_IN_CALLBACK);
    ck_assert_int_eq(st.rc_release_in_cb, ESBULK_ERR_IN_CALLBACK);
    assert_exactly_once();
    ck_assert_int_eq(esbulk_pending(eb), 0);
    esbulk_destroy(eb);
}
END_TEST

/* The stats callback runs in esbulk_poll, never in esbulk_poll_results. */
START_TEST(test_stats_not_in_pull)
{
    esbulk_t *eb = dead_handle(WITH_STATS, "600000", "1000");
    const esbulk_result_t *out[4];
    int64_t t0 = now_ms();

    while (now_ms() - t0 < 300)
        ck_assert_int_eq(esbulk_poll_results(eb, out, 4, 100), 0);
    ck_assert_int_eq(st.stats_calls, 0);
    t0 = now_ms();
    while (st.stats_calls == 0 && now_ms() - t0 < 3000)
        ck_assert_int_eq(esbulk_poll(eb, 100), 0);
    ck_assert_int_ge(st.stats_calls, 1);
    esbulk_destroy(eb);
}
END_TEST

/* A destroy deferred from the stats callback of a pull handle: the results
 * kept for pulling are freed with it. */
START_TEST(test_destroy_in_stats_pull)
{
    esbulk_t *eb = dead_handle(WITH_STATS, "600000", "1000");
    int64_t t0 = now_ms();

    st.destroy_in_stats = 1;
    add_docs(10);
    ck_assert_int_eq(esbulk_poll(eb, -1), 0); /* the stats callback destroys: eb is freed */
    ck_assert_int_lt(now_ms() - t0, 4000);
    ck_assert_int_eq(st.stats_calls, 1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("pull");
    TCase *tc = tcase_create("pull");
    SRunner *sr;
    int failed;

    tcase_set_timeout(tc, 15);
    tcase_add_test(tc, test_misuse_args);
    tcase_add_test(tc, test_batches_exactly_once);
    tcase_add_test(tc, test_fields_until_release);
    tcase_add_test(tc, test_results_read);
    tcase_add_test(tc, test_timeouts);
    tcase_add_test(tc, test_wait_forever_gets_results);
    tcase_add_test(tc, test_flush_and_poll_keep_results);
    tcase_add_test(tc, test_close_keeps_results);
    tcase_add_test(tc, test_destroy_with_results_held);
    tcase_add_test(tc, test_destroy_never_pulled);
    tcase_add_test(tc, test_close_then_destroy_held);
    tcase_add_test(tc, test_max_docs_until_release);
    tcase_add_test(tc, test_with_callback);
    tcase_add_test(tc, test_stats_not_in_pull);
    tcase_add_test(tc, test_destroy_in_stats_pull);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
