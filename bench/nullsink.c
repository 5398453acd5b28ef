/*
 * nullsink - a local HTTP/1.1 server that accepts bulk requests and indexes
 * nothing: the "infinitely fast cluster" the micro-benchmark measures the
 * client against.
 *
 * One thread, poll(2), keep-alive, pipelining, Expect: 100-continue and
 * gzip request bodies. It answers:
 *   POST [/NAME]/_bulk     an all-success bulk response, one item per action
 *                          line (delete has no source line), echoing each
 *                          action's _index and _id; a filter_path on took,
 *                          errors and items.*.<field> is applied
 *   GET /                  an OpenSearch 2.19.6 root
 *   GET /_nodes/http       the nodes (--nodes N, default 1), each published at
 *                          its own port: P, then free ports
 *   GET /_alias/NAME, /_data_stream/NAME, /_resolve/index/NAME   404
 *   GET /_cluster/state/metadata,routing_table/NAME   6 shards (routing_num_shards
 *                          768), shard s's primary on node s % N
 *   GET /NAME/_settings, /NAME/_search_shards, /NAME/_count, PUT/DELETE /NAME
 *   GET /_nullsink/stats   {"requests","bulk_requests","docs","bytes_in",
 *                          "expect_continue"}
 * It listens on 127.0.0.1 only, prints {"nullsink":URL,"pid":N} on stdout
 * once listening, and exits after --max-seconds or on SIGTERM/SIGINT.
 */
#define _GNU_SOURCE 1

#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#define MAX_CONNS 256
#define HEADER_MAX_BYTES 65536
#define BODY_MAX_BYTES ((size_t)512 << 20)      /* as received (compressed or not) */
#define INFLATED_MAX_BYTES ((size_t)1 << 30)    /* a gzip body once inflated */
#define OUT_MAX_BYTES ((size_t)1 << 30)         /* unsent answers per connection */
#define OUT_HIGH_WATER ((size_t)64 << 20)       /* stop reading past this much unsent */
#define READ_CHUNK 262144
#define VALUE_MAX_BYTES 1024                    /* _index/_id echoed: longer ones are cut */
#define NODE_ID "nullsink-node-"  /* + the node's number */
#define NODE_NAME "nullsink"
#define MAX_NODES 8
#define SHARDS 6
#define ROUTING_SHARDS 768
#define VERSION_CREATED "136408427" /* OpenSearch 2.19.6's version id */

/* ------------------------------------------------------------------------- */
/* Buffers */

typedef struct {
    char *data;
    size_t len, cap, max;
} sbuf_t;

static int sb_reserve(sbuf_t *b, size_t extra)
{
    size_t cap;
    char *p;

    if (extra > b->max || b->len > b->max - extra)
        return -1;
    if (b->len + extra <= b->cap)
        return 0;
    cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra)
        cap = cap > SIZE_MAX / 2 ? b->len + extra : cap * 2;
    p = realloc(b->data, cap);
    if (p == NULL)
        return -1;
    b->data = p;
    b->cap = cap;
    return 0;
}

static int sb_add(sbuf_t *b, const void *p, size_t n)
{
    if (sb_reserve(b, n) != 0)
        return -1;
    if (n > 0)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    return 0;
}

static int sb_adds(sbuf_t *b, const char *s)
{
    return sb_add(b, s, strlen(s));
}

static int sb_u64(sbuf_t *b, uint64_t v)
{
    char tmp[21];
    size_t n = sizeof(tmp);

    do {
        tmp[--n] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    return sb_add(b, tmp + n, sizeof(tmp) - n);
}

/* s[0..n) as a JSON string, quotes included. */
static int sb_json_str(sbuf_t *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t i;

    if (sb_reserve(b, n * 6 + 2) != 0)
        return -1;
    b->data[b->len++] = '"';
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            b->data[b->len++] = '\\';
            b->data[b->len++] = (char)c;
        } else if (c < 0x20) {
            memcpy(b->data + b->len, "\\u00", 4);
            b->data[b->len + 4] = hex[c >> 4];
            b->data[b->len + 5] = hex[c & 15];
            b->len += 6;
        } else {
            b->data[b->len++] = (char)c;
        }
    }
    b->data[b->len++] = '"';
    return 0;
}

static void sb_free(sbuf_t *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* Percent-decodes s[0..n) into out (size outsz, cut to fit). */
static void url_decode(const char *s, size_t n, char *out, size_t outsz)
{
    size_t i, o = 0;

    for (i = 0; i < n && o + 1 < outsz; i++) {
        if (s[i] == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
            out[o++] = (char)(hexval(s[i + 1]) << 4 | hexval(s[i + 2]));
            i += 2;
        } else {
            out[o++] = s[i];
        }
    }
    out[o] = '\0';
}

/* ------------------------------------------------------------------------- */
/* State */

typedef struct {
    int fd;
    sbuf_t in;          /* received, from in_off not yet handled */
    size_t in_off;
    sbuf_t out;         /* answers, from out_off not yet sent */
    size_t out_off;
    int close_after;    /* close once out is sent */
    int eof;            /* the peer closed its side */
    int continue_sent;  /* "100 Continue" sent for the request being received */
} conn_t;

typedef struct {
    const char *method;
    size_t method_len;
    const char *target;
    size_t target_len;
    size_t header_len;      /* request line and headers, with the blank line */
    size_t content_length;
    int keep_alive;
    int expect_continue;
    int gzip;
    int bad;                /* 0, or the status to answer before closing */
} request_t;

static struct {
    int port;                   /* node 0's */
    int ports[MAX_NODES];
    int nnodes;
    uint64_t requests, bulk_requests, docs, bytes_in, expect_continue, seq_no;
    sbuf_t body, inflated;  /* scratch: answer body, inflated request */
    conn_t *conns[MAX_CONNS];
    int nconns;
} g;

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------------------- */
/* Answers */

static const char *reason_of(int status)
{
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 411: return "Length Required";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 431: return "Request Header Fields Too Large";
    case 501: return "Not Implemented";
    default: return "Internal Server Error";
    }
}

/* Queues an answer with body g.body (no body bytes for HEAD). */
static int respond(conn_t *c, int status, int head)
{
    char hdr[256];
    int n = snprintf(hdr, sizeof(hdr),
                     "HTTP/1.1 %d %s\r\ncontent-type: application/json; charset=UTF-8\r\n"
                     "content-length: %zu\r\n%s\r\n",
                     status, reason_of(status), g.body.len,
                     c->close_after ? "connection: close\r\n" : "");

    if (n < 0 || (size_t)n >= sizeof(hdr) || sb_add(&c->out, hdr, (size_t)n) != 0 ||
        (!head && sb_add(&c->out, g.body.data, g.body.len) != 0))
        return -1;
    return 0;
}

/* Answers status with {"error":{"type","reason"},"status"}. */
static int respond_error(conn_t *c, int status, const char *type, const char *reason, int head)
{
    g.body.len = 0;
    if (sb_adds(&g.body, "{\"error\":{\"type\":") || sb_json_str(&g.body, type, strlen(type)) ||
        sb_adds(&g.body, ",\"reason\":") || sb_json_str(&g.body, reason, strlen(reason)) ||
        sb_adds(&g.body, "},\"status\":") || sb_u64(&g.body, (uint64_t)status) ||
        sb_adds(&g.body, "}"))
        return -1;
    return respond(c, status, head);
}

/* ------------------------------------------------------------------------- */
/* Bulk */

typedef struct {
    const char *p;
    size_t len;
} span_t;

static int is_ws(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

/* The raw (still escaped) text of the string value of key in an action
 * line, e.g. key "\"_id\"". */
static int find_str_value(const char *line, size_t len, const char *key, span_t *out)
{
    size_t klen = strlen(key);
    const char *p = memmem(line, len, key, klen), *end = line + len, *q;

    if (p == NULL)
        return 0;
    p += klen;
    while (p < end && is_ws(*p))
        p++;
    if (p == end || *p++ != ':')
        return 0;
    while (p < end && is_ws(*p))
        p++;
    if (p == end || *p++ != '"')
        return 0;
    for (q = p; q < end && *q != '"'; q++)
        if (*q == '\\' && q + 1 < end)
            q++;
    if (q == end)
        return 0;
    out->p = p;
    out->len = (size_t)(q - p);
    if (out->len > VALUE_MAX_BYTES) {
        out->len = VALUE_MAX_BYTES;
        while (out->len > 0 && p[out->len - 1] == '\\')
            out->len--; /* do not cut an escape in two */
    }
    return 1;
}

enum { OP_INDEX, OP_CREATE, OP_UPDATE, OP_DELETE };

/* The operation of an action line: its first key. */
static int action_op(const char *line, size_t len)
{
    static const char *const names[] = {"index", "create", "update", "delete"};
    const char *p = line, *end = line + len;
    size_t i;

    while (p < end && is_ws(*p))
        p++;
    if (p < end && *p == '{')
        p++;
    while (p < end && is_ws(*p))
        p++;
    if (p < end && *p == '"')
        p++;
    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        size_t n = strlen(names[i]);
        if ((size_t)(end - p) > n && memcmp(p, names[i], n) == 0 && p[n] == '"')
            return (int)i;
    }
    return OP_INDEX;
}

/* What a filter_path leaves of a bulk answer: the top-level "took" and
 * "errors", and which fields of each item (a successful item has no
 * "error", so filters on error fields alone leave no items at all). */
enum {
    F_INDEX = 1, F_ID = 2, F_VERSION = 4, F_RESULT = 8, F_SHARDS = 16, F_SEQ_NO = 32,
    F_PRIMARY_TERM = 64, F_STATUS = 128, F_ALL = 255
};

typedef struct {
    int took, errors;
    unsigned items; /* F_* of the fields kept */
} filter_t;

/* Parses the filter_path of query q[0..n) (no filter: everything). */
static void filter_parse(const char *q, size_t n, filter_t *f)
{
    static const struct {
        const char *name;
        unsigned bit;
    } fields[] = {{"_index", F_INDEX},   {"_id", F_ID},         {"_version", F_VERSION},
                  {"result", F_RESULT},  {"_shards", F_SHARDS}, {"_seq_no", F_SEQ_NO},
                  {"_primary_term", F_PRIMARY_TERM},            {"status", F_STATUS}};
    const char *fp = q ? memmem(q, n, "filter_path=", 12) : NULL, *end;
    char list[2048], *entry, *save = NULL;

    f->took = f->errors = 1;
    f->items = F_ALL;
    if (fp == NULL)
        return;
    fp += 12;
    end = memchr(fp, '&', n - (size_t)(fp - q));
    url_decode(fp, end ? (size_t)(end - fp) : n - (size_t)(fp - q), list, sizeof(list));
    f->took = f->errors = 0;
    f->items = 0;
    for (entry = strtok_r(list, ",", &save); entry != NULL; entry = strtok_r(NULL, ",", &save)) {
        size_t i;

        if (strcmp(entry, "took") == 0)
            f->took = 1;
        else if (strcmp(entry, "errors") == 0)
            f->errors = 1;
        else if (strcmp(entry, "items") == 0 || strcmp(entry, "items.*") == 0 ||
                 strcmp(entry, "items.*.*") == 0)
            f->items = F_ALL;
        else if (strncmp(entry, "items.*.", 8) == 0)
            for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
                if (strcmp(entry + 8, fields[i].name) == 0)
                    f->items |= fields[i].bit;
    }
}

/* Appends one item of the bulk answer, the fields in the server's order. */
static int bulk_item(int op, const span_t *index, const span_t *id, unsigned mask, int first)
{
    static const char *const ops[] = {"{\"index\":{", "{\"create\":{", "{\"update\":{",
                                      "{\"delete\":{"};
    static const char *const results[] = {"created", "created", "updated", "deleted"};
    sbuf_t *b = &g.body;
    uint64_t seq_no = g.seq_no++;
    int n = 0;

#define FIELD(name) ((n++ > 0 && sb_add(b, ",", 1)) || sb_adds(b, "\"" name "\":"))
    if ((!first && sb_add(b, ",", 1)) || sb_adds(b, ops[op]))
        return -1;
    if ((mask & F_INDEX) &&
        (FIELD("_index") || sb_add(b, "\"", 1) || sb_add(b, index->p, index->len) ||
         sb_add(b, "\"", 1)))
        return -1;
    if (mask & F_ID) {
        if (FIELD("_id") || sb_add(b, "\"", 1))
            return -1;
        if (id != NULL ? sb_add(b, id->p, id->len) : (sb_add(b, "ns", 2) || sb_u64(b, seq_no)))
            return -1; /* "ns<seq>": the server's id for a document that has none */
        if (sb_add(b, "\"", 1))
            return -1;
    }
    if ((mask & F_VERSION) && (FIELD("_version") || sb_adds(b, op <= OP_CREATE ? "1" : "2")))
        return -1;
    if ((mask & F_RESULT) &&
        (FIELD("result") || sb_add(b, "\"", 1) || sb_adds(b, results[op]) || sb_add(b, "\"", 1)))
        return -1;
    if ((mask & F_SHARDS) &&
        (FIELD("_shards") || sb_adds(b, "{\"total\":1,\"successful\":1,\"failed\":0}")))
        return -1;
    if ((mask & F_SEQ_NO) && (FIELD("_seq_no") || sb_u64(b, seq_no)))
        return -1;
    if ((mask & F_PRIMARY_TERM) && (FIELD("_primary_term") || sb_add(b, "1", 1)))
        return -1;
    if ((mask & F_STATUS) && (FIELD("status") || sb_adds(b, op <= OP_CREATE ? "201" : "200")))
        return -1;
#undef FIELD
    return sb_add(b, "}}", 2);
}

/* Inflates a gzip or zlib body into g.inflated. */
static int inflate_body(const char *body, size_t len)
{
    z_stream zs;
    int rc = Z_OK;

    memset(&zs, 0, sizeof(zs));
    g.inflated.len = 0;
    if (inflateInit2(&zs, 15 + 32) != Z_OK)
        return -1;
    zs.next_in = (Bytef *)(uintptr_t)body;
    zs.avail_in = (uInt)(len > UINT32_MAX ? UINT32_MAX : len);
    if (len > UINT32_MAX) {
        inflateEnd(&zs);
        return -1;
    }
    while (rc != Z_STREAM_END) {
        if (sb_reserve(&g.inflated, READ_CHUNK) != 0)
            break;
        zs.next_out = (Bytef *)g.inflated.data + g.inflated.len;
        zs.avail_out = READ_CHUNK;
        rc = inflate(&zs, Z_NO_FLUSH);
        g.inflated.len += READ_CHUNK - zs.avail_out;
        if (rc != Z_OK && rc != Z_STREAM_END)
            break;
        if (rc == Z_OK && zs.avail_in == 0 && zs.avail_out != 0)
            break; /* truncated */
    }
    inflateEnd(&zs);
    return rc == Z_STREAM_END ? 0 : -1;
}

static int handle_bulk(conn_t *c, const request_t *rq, const char *body, size_t len,
                       const span_t *path_index, const filter_t *f)
{
    static const span_t default_index = {"nullsink", 8};
    const char *p, *end;
    int expect_source = 0, first = 1;
    uint64_t items = 0;

    if (rq->gzip) {
        if (inflate_body(body, len) != 0)
            return respond_error(c, 400, "parse_exception", "bad gzip request body", 0);
        body = g.inflated.data;
        len = g.inflated.len;
    }
    g.body.len = 0;
    if (sb_adds(&g.body, "{") || (f->took && sb_adds(&g.body, "\"took\":0")) ||
        (f->errors && sb_adds(&g.body, f->took ? ",\"errors\":false" : "\"errors\":false")) ||
        (f->items && sb_adds(&g.body, f->took || f->errors ? ",\"items\":[" : "\"items\":[")))
        return -1;
    for (p = body, end = body + len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p)), *line = p;
        size_t n = (size_t)((nl ? nl : end) - p), i;
        span_t index, id;
        int op, has_id;

        p = nl ? nl + 1 : end;
        for (i = 0; i < n && is_ws(line[i]); i++)
            ;
        if (i == n)
            continue; /* blank */
        if (expect_source) {
            expect_source = 0;
            continue;
        }
        op = action_op(line, n);
        if (!find_str_value(line, n, "\"_index\"", &index))
            index = path_index->len > 0 ? *path_index : default_index;
        has_id = find_str_value(line, n, "\"_id\"", &id);
        if (f->items && bulk_item(op, &index, has_id ? &id : NULL, f->items, first) != 0)
            return -1;
        if (!f->items)
            g.seq_no++;
        first = 0;
        items++;
        expect_source = op != OP_DELETE;
    }
    if (items == 0)
        return respond_error(c, 400, "action_request_validation_exception",
                             "Validation Failed: 1: no requests added;", 0);
    if (sb_adds(&g.body, f->items ? "]}" : "}"))
        return -1;
    g.bulk_requests++;
    g.docs += items;
    return respond(c, 200, 0);
}

/* ------------------------------------------------------------------------- */
/* The other endpoints */

/* True when the endpoint ep[0..n) is want. */
static int ep_is(const char *ep, size_t n, const char *want)
{
    return n == strlen(want) && memcmp(ep, want, n) == 0;
}

static int starts(const char *s, size_t n, const char *prefix)
{
    size_t k = strlen(prefix);
    return n >= k && memcmp(s, prefix, k) == 0;
}

static int method_is(const request_t *rq, const char *m)
{
    return rq->method_len == strlen(m) && memcmp(rq->method, m, rq->method_len) == 0;
}

/* Appends the cluster state of index name: 6 shards, all on this node. */
static int cluster_state(const char *name)
{
    sbuf_t *b = &g.body;
    int s;

    if (sb_adds(b, "{\"cluster_name\":\"nullsink\",\"metadata\":{\"indices\":{") ||
        sb_json_str(b, name, strlen(name)) ||
        sb_adds(b, ":{\"state\":\"open\",\"routing_num_shards\":") ||
        sb_u64(b, ROUTING_SHARDS) ||
        sb_adds(b, ",\"settings\":{\"index\":{\"number_of_shards\":\"") || sb_u64(b, SHARDS) ||
        sb_adds(b, "\",\"number_of_replicas\":\"0\",\"version\":{\"created\":\"" VERSION_CREATED
                   "\"}}}}}},\"routing_table\":{\"indices\":{") ||
        sb_json_str(b, name, strlen(name)) || sb_adds(b, ":{\"shards\":{"))
        return -1;
    for (s = 0; s < SHARDS; s++)
        if ((s > 0 && sb_adds(b, ",")) || sb_adds(b, "\"") || sb_u64(b, (uint64_t)s) ||
            sb_adds(b, "\":[{\"state\":\"STARTED\",\"primary\":true,\"node\":\"" NODE_ID) ||
            sb_u64(b, (uint64_t)(s % g.nnodes)) || sb_adds(b, "\"}]"))
            return -1;
    return sb_adds(b, "}}}}}");
}

static int search_shards(const char *name)
{
    sbuf_t *b = &g.body;
    int s;

    if (sb_adds(b, "{\"nodes\":{"))
        return -1;
    for (s = 0; s < g.nnodes; s++)
        if ((s > 0 && sb_adds(b, ",")) || sb_adds(b, "\"" NODE_ID) || sb_u64(b, (uint64_t)s) ||
            sb_adds(b, "\":{\"name\":\"" NODE_NAME) || sb_u64(b, (uint64_t)s) ||
            sb_adds(b, "\"}"))
            return -1;
    if (sb_adds(b, "},\"indices\":{") || sb_json_str(b, name, strlen(name)) ||
        sb_adds(b, ":{}},\"shards\":["))
        return -1;
    for (s = 0; s < SHARDS; s++)
        if ((s > 0 && sb_adds(b, ",")) ||
            sb_adds(b, "[{\"state\":\"STARTED\",\"primary\":true,\"node\":\"" NODE_ID) ||
            sb_u64(b, (uint64_t)(s % g.nnodes)) || sb_adds(b, "\",\"index\":") ||
            sb_json_str(b, name, strlen(name)) || sb_adds(b, ",\"shard\":") ||
            sb_u64(b, (uint64_t)s) || sb_adds(b, "}]"))
            return -1;
    return sb_adds(b, "]}");
}

static int handle(conn_t *c, const request_t *rq, const char *body, size_t len)
{
    const char *q = memchr(rq->target, '?', rq->target_len);
    size_t plen = q ? (size_t)(q - rq->target) : rq->target_len;
    const char *path = rq->target;
    int head = method_is(rq, "HEAD"), get = method_is(rq, "GET") || head;
    char name[512], msg[640];
    sbuf_t *b = &g.body;

    g.requests++;
    g.body.len = 0;
    while (plen > 1 && path[plen - 1] == '/')
        plen--;
    /* [/NAME]/_bulk */
    if (plen >= 6 && memcmp(path + plen - 6, "/_bulk", 6) == 0) {
        span_t idx = {NULL, 0};
        filter_t f;
        if (!method_is(rq, "POST") && !method_is(rq, "PUT"))
            return respond_error(c, 405, "method_not_allowed", "use POST for _bulk", head);
        if (plen > 7) {
            idx.p = path + 1;
            idx.len = plen - 7;
        }
        filter_parse(q, q ? rq->target_len - (size_t)(q - rq->target) : 0, &f);
        return handle_bulk(c, rq, body, len, &idx, &f);
    }
    if (get && plen == 1) {
        if (sb_adds(b, "{\"name\":\"" NODE_NAME "0\",\"cluster_name\":\"nullsink\",\"version\":"
                       "{\"distribution\":\"opensearch\",\"number\":\"2.19.6\"},"
                       "\"tagline\":\"The OpenSearch Project: https://opensearch.org/\"}"))
            return -1;
        return respond(c, 200, head);
    }
    if (get && starts(path, plen, "/_nodes")) {
        int k;

        if (sb_adds(b, "{\"nodes\":{"))
            return -1;
        for (k = 0; k < g.nnodes; k++)
            if ((k > 0 && sb_adds(b, ",")) || sb_adds(b, "\"" NODE_ID) ||
                sb_u64(b, (uint64_t)k) || sb_adds(b, "\":{\"name\":\"" NODE_NAME) ||
                sb_u64(b, (uint64_t)k) ||
                sb_adds(b, "\",\"http\":{\"publish_address\":\"127.0.0.1:") ||
                sb_u64(b, (uint64_t)g.ports[k]) || sb_adds(b, "\"}}"))
                return -1;
        if (sb_adds(b, "}}"))
            return -1;
        return respond(c, 200, head);
    }
    if (get && starts(path, plen, "/_nullsink/stats")) {
        if (sb_adds(b, "{\"requests\":") || sb_u64(b, g.requests) ||
            sb_adds(b, ",\"bulk_requests\":") || sb_u64(b, g.bulk_requests) ||
            sb_adds(b, ",\"docs\":") || sb_u64(b, g.docs) || sb_adds(b, ",\"bytes_in\":") ||
            sb_u64(b, g.bytes_in) || sb_adds(b, ",\"expect_continue\":") ||
            sb_u64(b, g.expect_continue) || sb_adds(b, "}"))
            return -1;
        return respond(c, 200, head);
    }
    if (get && (starts(path, plen, "/_alias/") || starts(path, plen, "/_data_stream/") ||
                starts(path, plen, "/_resolve/index/"))) {
        const char *slash = memrchr(path, '/', plen);
        url_decode(slash + 1, plen - (size_t)(slash + 1 - path), name, sizeof(name));
        snprintf(msg, sizeof(msg), "no alias or data stream [%s] in nullsink", name);
        return respond_error(c, 404, "index_not_found_exception", msg, head);
    }
    if (get && starts(path, plen, "/_cluster/state/")) {
        const char *slash = memrchr(path, '/', plen);
        url_decode(slash + 1, plen - (size_t)(slash + 1 - path), name, sizeof(name));
        if (cluster_state(name) != 0)
            return -1;
        return respond(c, 200, head);
    }
    if (plen > 1 && path[1] != '_') {
        /* /NAME[/ENDPOINT] */
        const char *slash = memchr(path + 1, '/', plen - 1);
        size_t nlen = slash ? (size_t)(slash - path - 1) : plen - 1;
        const char *ep = slash ? slash : "";
        size_t eplen = slash ? plen - (size_t)(slash - path) : 0;

        url_decode(path + 1, nlen, name, sizeof(name));
        if (eplen == 0 && (method_is(rq, "PUT") || method_is(rq, "DELETE"))) {
            if (sb_adds(b, "{\"acknowledged\":true,\"shards_acknowledged\":true,\"index\":") ||
                sb_json_str(b, name, strlen(name)) || sb_adds(b, "}"))
                return -1;
            return respond(c, 200, 0);
        }
        if (get && eplen == 0) {
            if (sb_adds(b, "{}"))
                return -1;
            return respond(c, 200, head); /* every index exists */
        }
        if (get && ep_is(ep, eplen, "/_settings")) {
            if (sb_adds(b, "{") || sb_json_str(b, name, strlen(name)) ||
                sb_adds(b, ":{\"settings\":{\"index\":{\"number_of_shards\":\"") ||
                sb_u64(b, SHARDS) ||
                sb_adds(b, "\",\"number_of_replicas\":\"0\",\"uuid\":\"nullsinkuuid\","
                           "\"version\":{\"created\":\"" VERSION_CREATED "\"}}}}}"))
                return -1;
            return respond(c, 200, head);
        }
        if (get && ep_is(ep, eplen, "/_search_shards")) {
            if (search_shards(name) != 0)
                return -1;
            return respond(c, 200, head);
        }
        if (ep_is(ep, eplen, "/_count")) {
            if (sb_adds(b, "{\"count\":") || sb_u64(b, g.docs) || sb_adds(b, "}"))
                return -1;
            return respond(c, 200, head);
        }
        if (ep_is(ep, eplen, "/_refresh")) {
            if (sb_adds(b, "{\"_shards\":{\"total\":6,\"successful\":6,\"failed\":0}}"))
                return -1;
            return respond(c, 200, head);
        }
    }
    snprintf(msg, sizeof(msg), "no handler for [%.*s %.*s] in nullsink", (int)rq->method_len,
             rq->method, (int)(plen > 200 ? 200 : plen), path);
    return respond_error(c, 404, "not_found", msg, head);
}

/* ------------------------------------------------------------------------- */
/* HTTP/1.1 parsing */

static int header_is(const char *name, size_t n, const char *want)
{
    return n == strlen(want) && strncasecmp(name, want, n) == 0;
}

static int value_has(const char *v, size_t n, const char *token)
{
    size_t k = strlen(token), i;

    for (i = 0; i + k <= n; i++)
        if (strncasecmp(v + i, token, k) == 0)
            return 1;
    return 0;
}

/* Parses the head of the request at p[0..n). 1: parsed, 0: incomplete,
 * -1: too large (rq->bad set). */
static int parse_head(const char *p, size_t n, request_t *rq)
{
    const char *end = memmem(p, n, "\r\n\r\n", 4), *line, *eol, *sp;
    int http10;

    memset(rq, 0, sizeof(*rq));
    if (end == NULL) {
        if (n > HEADER_MAX_BYTES) {
            rq->bad = 431;
            return -1;
        }
        return 0;
    }
    rq->header_len = (size_t)(end - p) + 4;
    eol = memmem(p, rq->header_len, "\r\n", 2);
    sp = memchr(p, ' ', (size_t)(eol - p));
    if (sp == NULL) {
        rq->bad = 400;
        return 1;
    }
    rq->method = p;
    rq->method_len = (size_t)(sp - p);
    rq->target = sp + 1;
    sp = memchr(rq->target, ' ', (size_t)(eol - rq->target));
    if (sp == NULL || rq->target[0] != '/') {
        rq->bad = 400;
        return 1;
    }
    rq->target_len = (size_t)(sp - rq->target);
    http10 = (size_t)(eol - sp - 1) == 8 && memcmp(sp + 1, "HTTP/1.0", 8) == 0;
    rq->keep_alive = !http10;
    for (line = eol + 2; line < end + 2; line = eol + 2) {
        const char *colon, *v;
        size_t vlen;

        eol = memmem(line, (size_t)(end + 2 - line), "\r\n", 2);
        if (eol == NULL)
            break;
        colon = memchr(line, ':', (size_t)(eol - line));
        if (colon == NULL)
            continue;
        for (v = colon + 1; v < eol && (*v == ' ' || *v == '\t'); v++)
            ;
        vlen = (size_t)(eol - v);
        if (header_is(line, (size_t)(colon - line), "content-length")) {
            char num[32];
            char *numend;
            unsigned long long cl;

            if (vlen == 0 || vlen >= sizeof(num)) {
                rq->bad = 400;
                return 1;
            }
            memcpy(num, v, vlen);
            num[vlen] = '\0';
            errno = 0;
            cl = strtoull(num, &numend, 10);
            if (errno != 0 || *numend != '\0') {
                rq->bad = 400;
                return 1;
            }
            if (cl > BODY_MAX_BYTES) {
                rq->bad = 413;
                return 1;
            }
            rq->content_length = (size_t)cl;
        } else if (header_is(line, (size_t)(colon - line), "transfer-encoding")) {
            if (!value_has(v, vlen, "identity")) {
                rq->bad = 501;
                return 1;
            }
        } else if (header_is(line, (size_t)(colon - line), "connection")) {
            if (value_has(v, vlen, "close"))
                rq->keep_alive = 0;
            else if (value_has(v, vlen, "keep-alive"))
                rq->keep_alive = 1;
        } else if (header_is(line, (size_t)(colon - line), "expect")) {
            rq->expect_continue = value_has(v, vlen, "100-continue");
        } else if (header_is(line, (size_t)(colon - line), "content-encoding")) {
            if (value_has(v, vlen, "gzip") || value_has(v, vlen, "deflate"))
                rq->gzip = 1;
            else if (!value_has(v, vlen, "identity")) {
                rq->bad = 415;
                return 1;
            }
        }
    }
    return 1;
}

/* Handles every complete request in c->in. -1: close the connection now. */
static int process(conn_t *c)
{
    for (;;) {
        const char *p = c->in.data + c->in_off;
        size_t n = c->in.len - c->in_off;
        request_t rq;
        int r;

        if (n == 0 || c->close_after)
            break;
        r = parse_head(p, n, &rq);
        if (r == 0)
            break;
        if (rq.bad != 0) {
            c->close_after = 1;
            g.requests++;
            if (respond_error(c, rq.bad, "http_exception", reason_of(rq.bad), 0) != 0)
                return -1;
            break;
        }
        if (n - rq.header_len < rq.content_length) {
            /* the body is still coming */
            if (sb_reserve(&c->in, rq.header_len + rq.content_length - n) != 0)
                return -1;
            if (rq.expect_continue && !c->continue_sent) {
                g.expect_continue++;
                if (sb_adds(&c->out, "HTTP/1.1 100 Continue\r\n\r\n") != 0)
                    return -1;
                c->continue_sent = 1;
            }
            break;
        }
        c->continue_sent = 0;
        if (!rq.keep_alive)
            c->close_after = 1;
        g.bytes_in += rq.header_len + rq.content_length;
        if (handle(c, &rq, p + rq.header_len, rq.content_length) != 0)
            return -1;
        c->in_off += rq.header_len + rq.content_length;
    }
    if (c->in_off > 0) {
        memmove(c->in.data, c->in.data + c->in_off, c->in.len - c->in_off);
        c->in.len -= c->in_off;
        c->in_off = 0;
    }
    return 0;
}

/* ------------------------------------------------------------------------- */
/* Connections */

static void conn_close(int i)
{
    conn_t *c = g.conns[i];

    close(c->fd);
    sb_free(&c->in);
    sb_free(&c->out);
    free(c);
    g.conns[i] = g.conns[--g.nconns];
}

/* Sends what is pending. -1: the connection is finished. */
static int conn_write(conn_t *c)
{
    while (c->out_off < c->out.len) {
        ssize_t w = send(c->fd, c->out.data + c->out_off, c->out.len - c->out_off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (w <= 0)
            return -1;
        c->out_off += (size_t)w;
    }
    c->out.len = c->out_off = 0;
    return c->close_after ? -1 : 0;
}

/* Reads what is there. -1: the connection is finished. */
static int conn_read(conn_t *c)
{
    int rounds;

    for (rounds = 0; rounds < 64; rounds++) {
        ssize_t r;

        if (sb_reserve(&c->in, READ_CHUNK) != 0)
            return -1;
        r = recv(c->fd, c->in.data + c->in.len, c->in.cap - c->in.len, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (r < 0)
            return -1;
        if (r == 0) {
            /* answer what came, then close */
            c->eof = 1;
            break;
        }
        c->in.len += (size_t)r;
        if ((size_t)r < READ_CHUNK)
            break;
    }
    if (process(c) != 0)
        return -1;
    if (c->eof)
        c->close_after = 1;
    return 0;
}

static void accept_all(int lfd)
{
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), one = 1;
        conn_t *c;

        if (fd < 0)
            return;
        if (g.nconns == MAX_CONNS || (c = calloc(1, sizeof(*c))) == NULL) {
            close(fd);
            continue;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        c->fd = fd;
        c->in.max = HEADER_MAX_BYTES + BODY_MAX_BYTES + READ_CHUNK;
        c->out.max = OUT_MAX_BYTES;
        g.conns[g.nconns++] = c;
    }
}

static int listen_on(int port)
{
    struct sockaddr_in sa;
    socklen_t salen = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;

    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 128) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &salen) != 0) {
        close(fd);
        return -1;
    }
    g.ports[g.nnodes++] = ntohs(sa.sin_port);
    return fd;
}

static const char usage[] =
    "usage: nullsink --port P [--nodes N] [--max-seconds S] [--quiet]\n"
    "A null Elasticsearch/OpenSearch on 127.0.0.1:P (0: any free port) that answers\n"
    "every _bulk with success and indexes nothing. Prints {\"nullsink\":URL,\"pid\":N}\n"
    "once listening; exits after S seconds (default 600) or on SIGTERM/SIGINT.\n"
    "--nodes N (1-8): a cluster of N nodes, node 0 on P, the others on free ports,\n"
    "all served by this one process.\n";

int main(int argc, char **argv)
{
    struct pollfd pfd[MAX_CONNS + MAX_NODES];
    struct sigaction sa;
    long port = -1, max_s = 600, nodes = 1;
    double deadline;
    int i, lfd[MAX_NODES], nl, quiet = 0;

    for (i = 1; i < argc; i++) {
        char *end;
        if (strcmp(argv[i], "--port") == 0 && i + 1 < argc) {
            port = strtol(argv[++i], &end, 10);
            if (*end != '\0' || port < 0 || port > 65535)
                port = -2;
        } else if (strcmp(argv[i], "--max-seconds") == 0 && i + 1 < argc) {
            max_s = strtol(argv[++i], &end, 10);
            if (*end != '\0' || max_s < 1 || max_s > 86400)
                max_s = -1;
        } else if (strcmp(argv[i], "--nodes") == 0 && i + 1 < argc) {
            nodes = strtol(argv[++i], &end, 10);
            if (*end != '\0' || nodes < 1 || nodes > MAX_NODES)
                max_s = -1;
        } else if (strcmp(argv[i], "--quiet") == 0) {
            quiet = 1;
        } else if (strcmp(argv[i], "--help") == 0) {
            fputs(usage, stdout);
            return 0;
        } else {
            port = -2;
        }
    }
    if (port < 0 || max_s < 0) {
        fputs(usage, stderr);
        return 2;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    for (nl = 0; nl < nodes; nl++) {
        lfd[nl] = listen_on(nl == 0 ? (int)port : 0);
        if (lfd[nl] < 0) {
            fprintf(stderr, "nullsink: cannot listen on 127.0.0.1:%ld: %s\n",
                    nl == 0 ? port : 0L, strerror(errno));
            return 1;
        }
    }
    g.port = g.ports[0];
    g.body.max = OUT_MAX_BYTES;
    g.inflated.max = INFLATED_MAX_BYTES;
    printf("{\"nullsink\":\"http://127.0.0.1:%d\",\"pid\":%ld}\n", g.port, (long)getpid());
    fflush(stdout);
    deadline = now_s() + (double)max_s;

    while (!stop_flag) {
        double left = deadline - now_s();
        int n, timeout_ms;

        if (left <= 0)
            break;
        timeout_ms = left > 1.0 ? 1000 : (int)(left * 1000) + 1;
        for (i = 0; i < nl; i++) {
            pfd[i].fd = lfd[i];
            pfd[i].events = POLLIN;
            pfd[i].revents = 0;
        }
        for (i = 0; i < g.nconns; i++) {
            conn_t *c = g.conns[i];
            size_t unsent = c->out.len - c->out_off;

            pfd[nl + i].fd = c->fd;
            pfd[nl + i].events = (short)((unsent < OUT_HIGH_WATER && !c->close_after && !c->eof
                                             ? POLLIN : 0) |
                                        (unsent > 0 ? POLLOUT : 0));
            pfd[nl + i].revents = 0;
        }
        n = poll(pfd, (nfds_t)(g.nconns + nl), timeout_ms);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            fprintf(stderr, "nullsink: poll: %s\n", strerror(errno));
            break;
        }
        /* backwards: conn_close moves the last connection into slot i */
        for (i = g.nconns - 1; i >= 0; i--) {
            conn_t *c = g.conns[i];
            short ev = pfd[nl + i].revents;
            int done = 0;

            if (ev == 0)
                continue;
            if (ev & (POLLIN | POLLHUP | POLLERR))
                done = conn_read(c) != 0;
            if (!done && c->out.len > c->out_off)
                done = conn_write(c) != 0;
            else if (!done && c->close_after)
                done = 1;
            if (done)
                conn_close(i);
        }
        for (i = 0; i < nl; i++)
            if (pfd[i].revents & POLLIN)
                accept_all(lfd[i]);
    }
    while (g.nconns > 0)
        conn_close(g.nconns - 1);
    for (i = 0; i < nl; i++)
        close(lfd[i]);
    sb_free(&g.body);
    sb_free(&g.inflated);
    if (!quiet)
        fprintf(stderr, "nullsink: %" PRIu64 " requests, %" PRIu64 " bulk requests, %" PRIu64
                        " documents, %" PRIu64 " bytes in, %" PRIu64 " Expect: 100-continue\n",
                g.requests, g.bulk_requests, g.docs, g.bytes_in, g.expect_continue);
    return 0;
}
