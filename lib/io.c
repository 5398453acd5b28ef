/* The I/O thread: a thin driver over the engine core (core*.c). It moves
 * documents from the callers (handoff.c) into the core, runs the requests
 * the core wants over one curl multi handle, turns each transfer's end into
 * an answer for the core, hands metadata reads to the topology thread
 * (fetch.c) and their answers back, and hands outcomes to the callers. It
 * never blocks on anything but curl_multi_poll. */
#include "docmem.h"
#include "engine.h"
#include "fetch.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* Buffers kept for reuse, at most SPARE_BYTES of them in all. */
#define SPARE_BUFS 16
#define SPARE_BYTES ((size_t)32 << 20)
/* curl handles kept for the next requests: a new one allocates its 512 KiB
 * upload and 256 KiB download buffers, which the kernel faults in page by
 * page (keeping them took about 5% off bench/micro's whole path). More than
 * the requests in flight at once are never needed; past this many, they are
 * freed. */
#define SPARE_EASY 16
#define SNAPSHOT_MS 500
#define UPLOAD_BUFFER (512L * 1024)
#define DOWNLOAD_BUFFER (256L * 1024)
#define REFRESH_MIN_GAP_MS 1000
#define UNKNOWN_RECHECK_MS 1000
/* The longest the loop sleeps without a reason to wake. */
#define MAX_WAIT_MS 1000

/* One transfer, for one esbulk__send_t. */
typedef struct xfer_s {
    CURL *easy;
    struct curl_slist *headers;
    esbulk__buf_t body, resp;   /* body: the compressed request (gzip only) */
    size_t body_len;            /* the request's bytes, as sent */
    size_t rd_doc, rd_off;      /* uncompressed: where curl reads next, in send's lines */
    int prereqs;        /* requests curl was about to send for it */
    esbulk_err_t resp_err; /* why the answer's body could not be kept (TOO_LARGE, NOMEM) */
    esbulk__send_t *send;
    char errbuf[CURL_ERROR_SIZE];
    struct xfer_s *prev, *next;
} xfer_t;

typedef struct {
    CURLM *multi;
    esbulk__core_t *core;
    esbulk__fetch_t *fetch;
    xfer_t *xfers;              /* in flight */
    int cluster_failing;        /* the cluster view could not be read (logged once) */
    int64_t next_snapshot_ms;
    int idle_snapshot;          /* the last snapshot was taken with nothing in flight */
    int gzip, gzip_level;
    long request_timeout_ms;
    char *bulk_path[8];         /* by want_index * 4 + want_id * 2 + want_result
                                   (esbulk__io_bulk_path()) */
    uint64_t bytes_sent;        /* since the last hand-over */
    uint64_t handles_made;      /* curl handles made, since the last hand-over */
    CURL *spare_easy[SPARE_EASY]; /* done with, kept for the next transfers */
    int nspare_easy;
    /* request and response buffers kept for the next requests: no
     * allocation, growth or page faults per request */
    esbulk__buf_t spare[SPARE_BUFS];
    int nspare;
    size_t spare_bytes;
    size_t buffer_docs;         /* buffer.max.docs=0: the size last handed over */
} io_t;

/* ------------------------------------------------------------------------- */
/* Buffers */

/* A kept buffer, emptied, with the given maximum (or a new one). */
static void buf_take(io_t *io, esbulk__buf_t *b, size_t max)
{
    if (io->nspare > 0) {
        *b = io->spare[--io->nspare];
        io->spare_bytes -= b->cap;
        esbulk__buf_reset(b);
        b->max = max;
    } else {
        esbulk__buf_init(b, max);
    }
}

/* Keeps b's allocation for a later buf_take, or frees it; b is left empty. */
static void buf_give(io_t *io, esbulk__buf_t *b)
{
    if (b->data != NULL && io->nspare < SPARE_BUFS && io->spare_bytes + b->cap <= SPARE_BYTES) {
        io->spare_bytes += b->cap;
        io->spare[io->nspare++] = *b;
        esbulk__buf_init(b, 0);
    } else {
        esbulk__buf_free(b);
    }
}

static esbulk_err_t gzip_body(const esbulk__buf_t *in, esbulk__buf_t *out, int level)
{
    z_stream zs;
    size_t cap = compressBound((uLong)in->len) + 64;
    int rc;

    memset(&zs, 0, sizeof(zs));
    if (deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return ESBULK_ERR_NOMEM;
    out->data = malloc(cap);
    if (out->data == NULL) {
        deflateEnd(&zs);
        return ESBULK_ERR_NOMEM;
    }
    out->cap = cap;
    zs.next_in = (Bytef *)in->data;
    zs.avail_in = (uInt)in->len;
    zs.next_out = (Bytef *)out->data;
    zs.avail_out = (uInt)cap;
    rc = deflate(&zs, Z_FINISH);
    out->len = cap - zs.avail_out;
    deflateEnd(&zs);
    return rc == Z_STREAM_END ? ESBULK_OK : ESBULK_ERR_NOMEM;
}

/* ------------------------------------------------------------------------- */
/* Transfers */

static size_t on_body(char *data, size_t size, size_t nmemb, void *userdata)
{
    xfer_t *x = userdata;
    esbulk_err_t err = esbulk__buf_add(&x->resp, data, size * nmemb);

    if (err != ESBULK_OK) {
        x->resp_err = err; /* the transfer ends with CURLE_WRITE_ERROR */
        return 0;
    }
    return size * nmemb;
}

/* Called by curl before each request it sends for a transfer. libcurl
 * re-sends a request by itself when a kept-alive connection dies without an
 * answer ("Connection died, retrying a fresh connect"): a request the server
 * had applied would be applied twice (documents without _id indexed twice)
 * with nobody knowing. Only the first request goes; the transfer then fails
 * (CURLE_ABORTED_BY_CALLBACK) and the retry decision stays with the core. */
static int on_prereq(void *userdata, char *primary_ip, char *local_ip, int primary_port,
                     int local_port)
{
    xfer_t *x = userdata;

    (void)primary_ip;
    (void)local_ip;
    (void)primary_port;
    (void)local_port;
    return x->prereqs++ == 0 ? CURL_PREREQFUNC_OK : CURL_PREREQFUNC_ABORT;
}

/* A curl handle for a new transfer: a kept one (its options are all set
 * again by xfer_start), or a new one; NULL if out of memory. */
static CURL *easy_take(io_t *io)
{
    CURL *easy;

    if (io->nspare_easy > 0)
        return io->spare_easy[--io->nspare_easy];
    if ((easy = curl_easy_init()) != NULL)
        io->handles_made++;
    return easy;
}

/* x's handle, out of the multi handle, is kept for a later transfer or
 * freed. */
static void xfer_free(io_t *io, xfer_t *x)
{
    if (x->easy != NULL) {
        if (io->nspare_easy < SPARE_EASY) {
            /* nothing in it points at x's memory any more */
            curl_easy_setopt(x->easy, CURLOPT_HTTPHEADER, NULL);
            curl_easy_setopt(x->easy, CURLOPT_POSTFIELDS, NULL);
            curl_easy_setopt(x->easy, CURLOPT_ERRORBUFFER, NULL);
            io->spare_easy[io->nspare_easy++] = x->easy;
        } else {
            curl_easy_cleanup(x->easy);
        }
    }
    esbulk__http_headers_free(x->headers); /* wipes the Authorization line */
    buf_give(io, &x->body);
    buf_give(io, &x->resp);
    free(x);
}

/* curl reads an uncompressed request straight from the documents' lines:
 * they were written once, when added, and are not copied into a request
 * buffer (curl copies them to its send buffer, as it would a POSTFIELDS). */
static size_t on_read(char *out, size_t size, size_t nitems, void *userdata)
{
    xfer_t *x = userdata;
    const esbulk__send_t *s = x->send;
    size_t room = size * nitems, n = 0;

    while (room > 0 && x->rd_doc < s->ndocs) {
        const esbulk__send_lines_t *d = &s->lines[x->rd_doc];
        size_t k = d->len - x->rd_off;

        /* every line of a document some documents ahead */
        if (x->rd_off == 0 && x->rd_doc + 8 < s->ndocs) {
            const esbulk__send_lines_t *f = &s->lines[x->rd_doc + 8];
            size_t o;

            for (o = 0; o < f->len; o += ESBULK__CACHE_LINE)
                ESBULK__PREFETCH(f->p + o);
        }

        if (k > room)
            k = room;
        memcpy(out + n, d->p + x->rd_off, k);
        n += k;
        room -= k;
        x->rd_off += k;
        if (x->rd_off == d->len) {
            x->rd_doc++;
            x->rd_off = 0;
        }
    }
    return n;
}

/* Back to the start (curl rewinds before it sends a request again). */
static int on_seek(void *userdata, curl_off_t offset, int origin)
{
    xfer_t *x = userdata;
    const esbulk__send_t *s = x->send;
    size_t left = (size_t)offset;

    if (origin != SEEK_SET || offset < 0)
        return CURL_SEEKFUNC_CANTSEEK;
    for (x->rd_doc = 0; x->rd_doc < s->ndocs && left >= s->lines[x->rd_doc].len; x->rd_doc++)
        left -= s->lines[x->rd_doc].len;
    x->rd_off = left;
    return left > 0 && x->rd_doc == s->ndocs ? CURL_SEEKFUNC_FAIL : CURL_SEEKFUNC_OK;
}

/* Starts s as a transfer: ESBULK_ERR_NOMEM if it could not be. */
static esbulk_err_t xfer_start(esbulk_t *eb, io_t *io, esbulk__send_t *s)
{
    xfer_t *x = calloc(1, sizeof(*x));
    char url[4096];
    size_t i;

    if (x == NULL)
        return ESBULK_ERR_NOMEM;
    x->send = s;
    buf_take(io, &x->resp, eb->http.response_max_bytes);
    x->body_len = s->bytes;
    if (io->gzip) {
        esbulk__buf_t raw;

        /* compressed: the lines side by side, then deflated in one go */
        buf_take(io, &raw, (size_t)-1);
        if (esbulk__buf_reserve(&raw, s->bytes) != ESBULK_OK) {
            buf_give(io, &raw);
            goto nomem;
        }
        for (i = 0; i < s->ndocs; i++)
            (void)esbulk__buf_add(&raw, s->lines[i].p, s->lines[i].len);
        if (gzip_body(&raw, &x->body, io->gzip_level) == ESBULK_OK) {
            x->body_len = x->body.len;
            if ((x->headers = curl_slist_append(NULL, "Content-Encoding: gzip")) == NULL) {
                buf_give(io, &raw);
                goto nomem;
            }
            buf_give(io, &raw);
        } else {
            /* deflate could not: the request goes uncompressed */
            esbulk__buf_free(&x->body);
            buf_give(io, &raw);
        }
    }
    if ((x->easy = easy_take(io)) == NULL)
        goto nomem;
    {
        struct curl_slist *h = curl_slist_append(x->headers, "Content-Type: application/x-ndjson");
        if (h == NULL)
            goto nomem;
        x->headers = h;
        /* no "Expect: 100-continue" round trip before large bodies */
        if ((h = curl_slist_append(x->headers, "Expect:")) == NULL)
            goto nomem;
        x->headers = h;
    }
    if (esbulk__http_apply(x->easy, &eb->http, &x->headers) != ESBULK_OK)
        goto nomem;
    snprintf(url, sizeof(url), "%s%s", s->url,
             io->bulk_path[s->want_index * 4 + s->want_id * 2 + s->want_result]);
    if (eb->http.signs) {
        /* auth.aws.*: the signature covers the body's hash, the bytes as
         * sent (compressed, when they are) */
        unsigned char payload[ESBULK__SHA256_LEN];
        char *wire_url;

        if (x->body.data != NULL) {
            esbulk__sha256(x->body.data, x->body_len, payload);
        } else {
            esbulk__sha256_t c;

            esbulk__sha256_init(&c);
            for (i = 0; i < s->ndocs; i++)
                esbulk__sha256_update(&c, s->lines[i].p, s->lines[i].len);
            esbulk__sha256_final(&c, payload);
        }
        if (esbulk__http_sign(&eb->http, "POST", url, payload, &x->headers, &wire_url) !=
            ESBULK_OK)
            goto nomem;
        curl_easy_setopt(x->easy, CURLOPT_URL, wire_url != NULL ? wire_url : url);
        free(wire_url); /* curl keeps its own copy */
    } else {
        curl_easy_setopt(x->easy, CURLOPT_URL, url);
    }
    curl_easy_setopt(x->easy, CURLOPT_POST, 1L);
    /* a kept handle holds the previous transfer's options: every option
     * set on any transfer is set here on every one, but POSTFIELDS, which
     * xfer_free clears (without it curl reads the body by the callback) */
    if (x->body.data != NULL) {
        curl_easy_setopt(x->easy, CURLOPT_POSTFIELDS, x->body.data);
    } else {
        curl_easy_setopt(x->easy, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(x->easy, CURLOPT_READDATA, x);
        curl_easy_setopt(x->easy, CURLOPT_SEEKFUNCTION, on_seek);
        curl_easy_setopt(x->easy, CURLOPT_SEEKDATA, x);
    }
    curl_easy_setopt(x->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)x->body_len);
    curl_easy_setopt(x->easy, CURLOPT_HTTPHEADER, x->headers);
    curl_easy_setopt(x->easy, CURLOPT_TIMEOUT_MS, io->request_timeout_ms);
    /* larger reads and writes than curl's 16 KiB / 64 KiB: a request is
     * megabytes each way, and each system call costs the kernel's TCP path */
    curl_easy_setopt(x->easy, CURLOPT_UPLOAD_BUFFERSIZE, UPLOAD_BUFFER);
    curl_easy_setopt(x->easy, CURLOPT_BUFFERSIZE, DOWNLOAD_BUFFER);
    curl_easy_setopt(x->easy, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(x->easy, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(x->easy, CURLOPT_PRIVATE, x);
    curl_easy_setopt(x->easy, CURLOPT_PREREQFUNCTION, on_prereq);
    curl_easy_setopt(x->easy, CURLOPT_PREREQDATA, x);
    curl_easy_setopt(x->easy, CURLOPT_ERRORBUFFER, x->errbuf);
    /* Compressed answers only with compression=gzip: OpenSearch gzips any
     * answer the client accepts so, and on a fast network that costs both
     * sides more CPU than the bytes it saves (filter_path keeps answers small) */
    if (io->gzip)
        curl_easy_setopt(x->easy, CURLOPT_ACCEPT_ENCODING, "");
    if (curl_multi_add_handle(io->multi, x->easy) != CURLM_OK)
        goto nomem;
    s->driver = x;
    io->bytes_sent += x->body_len;
    io->idle_snapshot = 0;
    x->next = io->xfers;
    if (io->xfers != NULL)
        io->xfers->prev = x;
    io->xfers = x;
    return ESBULK_OK;
nomem:
    xfer_free(io, x);
    return ESBULK_ERR_NOMEM;
}

/* The end of x, as the core's answer. */
static void xfer_done(esbulk_t *eb, io_t *io, xfer_t *x, CURLcode rc, int64_t now)
{
    esbulk__answer_t a;
    char why[CURL_ERROR_SIZE + 128];
    long status = 0;

    memset(&a, 0, sizeof(a));
    if (rc == CURLE_OK) {
        curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
        esbulk__log(&eb->log, ESBULK_LOG_DEBUG, "io",
                    "%s: %zu documents, %zu bytes: HTTP %ld in %lld ms", x->send->url,
                    x->send->ndocs, x->body_len, status, (long long)(now - x->send->start_ms));
        a.kind = ESBULK__ANS_HTTP;
        a.status = status;
        a.body = x->resp.data;
        a.body_len = x->resp.len;
    } else {
        /* Sent: some byte of the request went out (CURLINFO_REQUEST_SIZE
         * counts them, over curl's own attempts). A refused connection, a
         * TLS handshake or certificate failure, a connect timeout send
         * nothing: not applied, safe to retry. */
        long request_size = 0;
        int sent;

        curl_easy_getinfo(x->easy, CURLINFO_REQUEST_SIZE, &request_size);
        sent = request_size > 0 || x->prereqs > 1;
        if (x->prereqs > 1)
            snprintf(why, sizeof(why), "the connection closed without an answer");
        else
            snprintf(why, sizeof(why), "%s", x->errbuf[0] ? x->errbuf : curl_easy_strerror(rc));
        a.message = why;
        if (rc == CURLE_WRITE_ERROR)
            a.kind = x->resp_err == ESBULK_ERR_NOMEM ? ESBULK__ANS_NOMEM : ESBULK__ANS_TOO_LARGE;
        else if (!sent && (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE ||
                           rc == CURLE_SSL_CERTPROBLEM || rc == CURLE_SSL_ISSUER_ERROR))
            a.kind = ESBULK__ANS_TLS_VERIFY;
        else if (!sent)
            a.kind = ESBULK__ANS_NOT_SENT;
        else if (rc == CURLE_OPERATION_TIMEDOUT)
            a.kind = ESBULK__ANS_TIMEOUT;
        else
            a.kind = ESBULK__ANS_BROKEN;
    }
    esbulk__core_answer(io->core, x->send, &a, now);
}

/* Ends the finished transfers: returns how many. */
static int read_completions(esbulk_t *eb, io_t *io, int64_t now)
{
    CURLMsg *msg;
    int left, n = 0;

    while ((msg = curl_multi_info_read(io->multi, &left)) != NULL) {
        xfer_t *x = NULL;

        if (msg->msg != CURLMSG_DONE)
            continue;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
        curl_multi_remove_handle(io->multi, msg->easy_handle);
        if (x->prev) x->prev->next = x->next; else io->xfers = x->next;
        if (x->next) x->next->prev = x->prev;
        xfer_done(eb, io, x, msg->data.result, now);
        xfer_free(io, x);
        n++;
    }
    return n;
}

/* Drops every transfer (close): the core then gives their documents
 * their results. */
static void drop_transfers(io_t *io)
{
    while (io->xfers != NULL) {
        xfer_t *x = io->xfers;

        io->xfers = x->next;
        curl_multi_remove_handle(io->multi, x->easy);
        xfer_free(io, x);
    }
}

/* ------------------------------------------------------------------------- */
/* Topology */

static void wake_io(void *arg)
{
    esbulk__io_wakeup(arg);
}

/* buffer.max.docs=0: the buffer's size for the cluster as the core sees
 * it now, to the adding threads when it changed (max_docs_auto is set
 * before this thread starts). */
static void buffer_docs(esbulk_t *eb, io_t *io)
{
    size_t n;

    if (!eb->max_docs_auto)
        return;
    n = esbulk__core_buffer_docs(io->core);
    if (n != io->buffer_docs) {
        io->buffer_docs = n;
        esbulk__handoff_buffer_docs(eb, n, esbulk__core_ndests(io->core));
    }
}

/* Answers of the topology thread into the core (before the round's
 * documents are routed). */
static void topology_answers(esbulk_t *eb, io_t *io, int64_t now)
{
    esbulk__fetched_t *a, *next;
    int cluster = 0;

    if (io->fetch == NULL)
        return;
    for (a = esbulk__fetch_take(io->fetch); a != NULL; a = next) {
        next = a->next;
        if (a->name == NULL) {
            if (a->err != ESBULK_OK) {
                if (!io->cluster_failing++)
                    esbulk__log(&eb->log, ESBULK_LOG_WARNING, "io", "cluster view: %s",
                                a->errstr);
            } else if (io->cluster_failing) {
                io->cluster_failing = 0;
                esbulk__log(&eb->log, ESBULK_LOG_NOTICE, "io", "cluster view is back");
            }
            esbulk__core_set_cluster(io->core, a->cluster, now);
            a->cluster = NULL;
            cluster = 1;
        } else {
            esbulk__core_index_fetched(io->core, a->name, a->e, a->err, a->errstr, now);
            a->e = NULL;
        }
        esbulk__fetched_free(a);
    }
    if (cluster)
        buffer_docs(eb, io);
}

/* The core's wishes (a cluster read, index reads) to the topology thread
 * (after the round's documents asked for theirs). */
static void topology_wishes(io_t *io, int64_t now)
{
    const char *name;

    if (io->fetch == NULL)
        return;
    if (esbulk__core_refresh_wanted(io->core, now) &&
        esbulk__fetch_cluster(io->fetch) != ESBULK_OK)
        esbulk__core_cluster_failed(io->core);
    while ((name = esbulk__core_next_fetch(io->core, now)) != NULL)
        if (esbulk__fetch_index(io->fetch, name) != ESBULK_OK)
            esbulk__core_index_fetched(io->core, name, NULL, ESBULK_ERR_NOMEM, "out of memory",
                                       now);
}

/* ------------------------------------------------------------------------- */
/* The loop */

static void hand_over(esbulk_t *eb, io_t *io)
{
    esbulk__queue_t done = {0};
    esbulk__core_counts_t n;

    memset(&n, 0, sizeof(n));
    esbulk__core_take_done(io->core, &done, &n);
    if (done.head == NULL && io->bytes_sent == 0 && io->handles_made == 0 &&
        !(n.retried | n.item_429 | n.unrouted | n.expired | n.http_429 | n.split_413 | n.split_400 |
          n.requests | n.fetches))
        return;
    esbulk__handoff_deliver(eb, &done, &n, io->bytes_sent, io->handles_made);
    io->bytes_sent = 0;
    io->handles_made = 0;
}

static void snapshot(esbulk_t *eb, io_t *io, int64_t now)
{
    json_t *arr = esbulk__core_node_stats(io->core, now);
    char *text = arr != NULL ? json_dumps(arr, JSON_COMPACT) : NULL;

    json_decref(arr);
    /* destinations come and go: a new buffer size is published with the
     * destinations it is for, then the rest (never the count alone before
     * the size it changed) */
    buffer_docs(eb, io);
    esbulk__handoff_publish(eb, text, esbulk__core_nindices(io->core),
                            esbulk__core_ndests(io->core));
}

static void io_free(io_t *io)
{
    int i;

    esbulk__fetch_stop(io->fetch);
    drop_transfers(io);
    esbulk__core_free(io->core);
    if (io->multi != NULL)
        curl_multi_cleanup(io->multi);
    while (io->nspare_easy > 0)
        curl_easy_cleanup(io->spare_easy[--io->nspare_easy]);
    for (i = 0; i < (int)ESBULK__ARRAY_LEN(io->bulk_path); i++)
        free(io->bulk_path[i]);
    while (io->nspare > 0)
        esbulk__buf_free(&io->spare[--io->nspare]);
    free(io);
}

/* The adding threads place each document beside the others of its
 * destination (place.h) from the layouts the core uses. */
static void publish_layouts(esbulk_t *eb, io_t *io)
{
    esbulk__index_t *e[ESBULK__PLACE_MAX];
    int n = esbulk__core_layouts(io->core, e, ESBULK__PLACE_MAX);

    if (n >= 0)
        esbulk__place_publish(&eb->place, e, n);
}

static void *io_main(void *arg)
{
    esbulk_t *eb = arg;
    io_t *io = eb->io;

    esbulk__thread_name("esbulk-io");
    for (;;) {
        esbulk__queue_t incoming = {0};
        esbulk__handoff_flags_t fl;
        esbulk__send_t *s;
        int64_t now, due;
        int still;

        esbulk__handoff_take(eb, &incoming, &fl);
        now = esbulk__now_ms();
        topology_answers(eb, io, now);
        esbulk__core_add_list(io->core, &incoming, now);
        publish_layouts(eb, io);
        if (fl.abort_all) {
            /* stop the topology thread first: nothing waits on a read */
            esbulk__fetch_stop(io->fetch);
            io->fetch = NULL;
            drop_transfers(io);
            esbulk__core_abort(io->core);
            hand_over(eb, io);
            if (fl.terminate)
                break;
            continue;
        }
        topology_wishes(io, now);
        esbulk__core_tick(io->core, now);
        /* An answer frees its node's request slot: the next batch goes out
         * in this round, not at the next wake-up for something else (the
         * node would idle on one request meanwhile). */
        do {
            while ((s = esbulk__core_next_send(io->core, fl.force, now)) != NULL)
                if (xfer_start(eb, io, s) != ESBULK_OK) {
                    esbulk__core_unsend(io->core, s, now);
                    break;
                }
            curl_multi_perform(io->multi, &still);
            now = esbulk__now_ms();
        } while (read_completions(eb, io, now) > 0);
        hand_over(eb, io);
        now = esbulk__now_ms();
        if (now >= io->next_snapshot_ms ||
            (esbulk__core_inflight(io->core) == 0 && !io->idle_snapshot)) {
            io->idle_snapshot = esbulk__core_inflight(io->core) == 0;
            snapshot(eb, io, now);
            io->next_snapshot_ms = now + SNAPSHOT_MS;
            esbulk__docmem_spares_trim(eb->dm, now);
        }
        due = esbulk__core_next_deadline(io->core, now);
        if (due - now > MAX_WAIT_MS)
            due = now + MAX_WAIT_MS;
        due = esbulk__handoff_sleep(eb, now, due);
        if (due > now)
            curl_multi_poll(io->multi, NULL, 0, (int)(due - now), NULL);
    }
    snapshot(eb, io, esbulk__now_ms());
    return NULL;
}

esbulk_err_t esbulk__io_bulk_path(const esbulk_conf_t *conf, int want_index, int want_id,
                                  int want_result, char **out)
{
    esbulk__buf_t path;
    int64_t refresh = esbulk__conf_int(conf, ESBULK__C_BULK_REFRESH);
    int failures_only = (int)esbulk__conf_int(conf, ESBULK__C_RESULT_FAILURES_ONLY);
    int meta = (int)esbulk__conf_int(conf, ESBULK__C_RESULT_META);

    esbulk__buf_init(&path, 4096);
    /* Only what the results show; each field an item carries costs the
     * server to write (on orders, the _seq_no, _primary_term, _version and
     * result of every item cost 3.5% of its indexing rate; a status alone,
     * nothing measurable). The status is always asked for: it keeps the
     * items in place, and says whether each succeeded. With
     * result.failures_only the successes are never shown, and a failure
     * needs only its error. Otherwise:
     * - _index and _id only when the request holds a document the server may
     *   name otherwise (an alias, a data stream, an index not read) or that
     *   has no _id: for the others they are the strings sent;
     * - result only when the request holds an update: for the other
     *   operations the status says it (201 created, 200 updated or deleted,
     *   404 not_found), and the core writes it from that;
     * - _seq_no, _primary_term and _version with result.meta only. */
    if (esbulk__buf_adds(&path, "/_bulk?filter_path=") != ESBULK_OK ||
        (!failures_only && want_index && esbulk__buf_adds(&path, "items.*._index,")) ||
        (!failures_only && want_id && esbulk__buf_adds(&path, "items.*._id,")) ||
        esbulk__buf_adds(&path, "items.*.status,") != ESBULK_OK ||
        (!failures_only && want_result && esbulk__buf_adds(&path, "items.*.result,")) ||
        (!failures_only && meta &&
         esbulk__buf_adds(&path, "items.*._seq_no,items.*._primary_term,items.*._version,")) ||
        esbulk__buf_adds(&path, "items.*.error.type,items.*.error.reason,"
                                "items.*.error.caused_by.type,items.*.error.caused_by.reason,"
                                "error.type,error.reason,status") != ESBULK_OK)
        goto nomem;
    if (*esbulk__conf_str(conf, ESBULK__C_BULK_PIPELINE) != '\0') {
        char *esc = esbulk__url_escape(esbulk__conf_str(conf, ESBULK__C_BULK_PIPELINE));
        if (esc == NULL || esbulk__buf_adds(&path, "&pipeline=") || esbulk__buf_adds(&path, esc)) {
            free(esc);
            goto nomem;
        }
        free(esc);
    }
    if (refresh != ESBULK__REFRESH_FALSE &&
        (esbulk__buf_adds(&path, "&refresh=") ||
         esbulk__buf_adds(&path, refresh == ESBULK__REFRESH_TRUE ? "true" : "wait_for")))
        goto nomem;
    {
        /* The server waits up to its bulk timeout (1m by default) for a
         * primary that is not active (an index red), an index to be made
         * or a mapping to be updated, holding the request; past
         * request.timeout.ms the request is broken off, its documents
         * maybe applied, and sent again, silently, for minutes. Asked to
         * wait 5/6 of request.timeout.ms at most, the server answers
         * first: each document its own 503 (unavailable_shards_exception,
         * retried, then failed with that reason). */
        char t[48];
        int64_t ms = esbulk__conf_int(conf, ESBULK__C_REQUEST_TIMEOUT_MS) * 5 / 6;

        snprintf(t, sizeof(t), "&timeout=%lldms", (long long)(ms > 0 ? ms : 1));
        if (esbulk__buf_adds(&path, t) != ESBULK_OK)
            goto nomem;
    }
    *out = path.data;
    return ESBULK_OK;
nomem:
    esbulk__buf_free(&path);
    return ESBULK_ERR_NOMEM;
}

/* Every esbulk__io_bulk_path(), by want_index * 4 + want_id * 2 +
 * want_result: paths has n = 8 entries. */
static esbulk_err_t bulk_paths(const esbulk_conf_t *conf, char **paths, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (esbulk__io_bulk_path(conf, (int)(i >> 2) & 1, (int)(i >> 1) & 1, (int)i & 1,
                                 &paths[i]) != ESBULK_OK)
            return ESBULK_ERR_NOMEM;
    return ESBULK_OK;
}

/* The core's settings from the configuration. */
static void core_conf(const esbulk_conf_t *conf, esbulk__core_conf_t *cf)
{
    memset(cf, 0, sizeof(*cf));
    cf->flush.flush_bytes = (size_t)esbulk__conf_int(conf, ESBULK__C_FLUSH_BYTES);
    cf->flush.flush_docs = (size_t)esbulk__conf_int(conf, ESBULK__C_FLUSH_DOCS);
    cf->flush.flush_interval_ms = esbulk__conf_int(conf, ESBULK__C_FLUSH_INTERVAL_MS);
    cf->level = (esbulk__routing_level_t)esbulk__conf_int(conf, ESBULK__C_ROUTING_LEVEL);
    cf->per_id = esbulk__conf_int(conf, ESBULK__C_ORDERING) == ESBULK__ORDER_PER_ID;
    cf->max_inflight = (int)esbulk__conf_int(conf, ESBULK__C_MAX_INFLIGHT_PER_NODE);
    cf->retry_max = (int32_t)esbulk__conf_int(conf, ESBULK__C_RETRY_MAX);
    cf->backoff_ms = esbulk__conf_int(conf, ESBULK__C_RETRY_BACKOFF_MS);
    cf->backoff_max_ms = esbulk__conf_int(conf, ESBULK__C_RETRY_BACKOFF_MAX_MS);
    cf->recheck_ms = esbulk__conf_int(conf, ESBULK__C_NODE_RECHECK_MS);
    cf->request_timeout_ms = esbulk__conf_int(conf, ESBULK__C_REQUEST_TIMEOUT_MS);
    cf->retry_cluster_block = (int)esbulk__conf_int(conf, ESBULK__C_RETRY_ON_CLUSTER_BLOCK);
    cf->refresh_ms = esbulk__conf_int(conf, ESBULK__C_TOPOLOGY_REFRESH_MS);
    cf->unknown_recheck_ms = UNKNOWN_RECHECK_MS;
    cf->refresh_gap_ms = REFRESH_MIN_GAP_MS;
    cf->idle_ms = esbulk__conf_int(conf, ESBULK__C_TOPOLOGY_IDLE_MS);
    cf->wait_ms = esbulk__conf_int(conf, ESBULK__C_TOPOLOGY_WAIT_MS);
    cf->failures_only = (int)esbulk__conf_int(conf, ESBULK__C_RESULT_FAILURES_ONLY);
    cf->keep_body = (int)esbulk__conf_int(conf, ESBULK__C_RESULT_KEEP_BODY);
}

esbulk_err_t esbulk__io_start(esbulk_t *eb, char *errstr, size_t errstr_size)
{
    io_t *io = calloc(1, sizeof(*io));
    const esbulk_conf_t *conf = eb->conf;
    esbulk__core_conf_t cf;
    const char **seeds = NULL;
    int i;

    if (io == NULL)
        goto nomem;
    core_conf(conf, &cf);
    io->gzip = esbulk__conf_int(conf, ESBULK__C_COMPRESSION) == ESBULK__COMPRESS_GZIP;
    io->gzip_level = (int)esbulk__conf_int(conf, ESBULK__C_COMPRESSION_LEVEL);
    io->request_timeout_ms = (long)esbulk__conf_int(conf, ESBULK__C_REQUEST_TIMEOUT_MS);
    if ((io->multi = curl_multi_init()) == NULL ||
        (io->core = esbulk__core_new(&cf, &eb->log, eb->node_tag)) == NULL ||
        bulk_paths(conf, io->bulk_path, ESBULK__ARRAY_LEN(io->bulk_path)) != ESBULK_OK ||
        (seeds = calloc((size_t)eb->nseeds + 1, sizeof(*seeds))) == NULL)
        goto nomem;
    for (i = 0; i < eb->nseeds; i++)
        seeds[i] = eb->seeds[i].base;
    if (esbulk__core_set_seeds(io->core, seeds, eb->nseeds) != ESBULK_OK)
        goto nomem;
    free(seeds);
    seeds = NULL;
    eb->io = io;
    if ((io->fetch = esbulk__fetch_start(eb->topo, wake_io, eb)) == NULL)
        goto nomem;
    if (pthread_create(&eb->thread, NULL, io_main, eb) != 0) {
        eb->io = NULL;
        io_free(io);
        esbulk__errstr(errstr, errstr_size, "cannot start the I/O thread");
        return ESBULK_ERR_NOMEM;
    }
    eb->thread_started = 1;
    return ESBULK_OK;
nomem:
    free(seeds);
    eb->io = NULL;
    if (io != NULL)
        io_free(io);
    esbulk__errstr(errstr, errstr_size, "out of memory");
    return ESBULK_ERR_NOMEM;
}

void esbulk__io_wakeup(esbulk_t *eb)
{
    io_t *io = eb->io;

    if (io != NULL && io->multi != NULL)
        curl_multi_wakeup(io->multi);
}

void esbulk__io_join(esbulk_t *eb)
{
    if (!eb->thread_started)
        return;
    pthread_join(eb->thread, NULL);
    eb->thread_started = 0;
    io_free(eb->io);
    eb->io = NULL;
}
