/* Helpers shared by the unit tests that run a handle without a cluster. */
#ifndef ESBULK_UNIT_UTIL_H
#define ESBULK_UNIT_UTIL_H

#include <esbulk.h>

#include <arpa/inet.h>
#include <check.h>
#include <stdio.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static inline int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A loopback port that nobody listens on: bound, read, closed. */
static inline int dead_port(void)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0), port;

    ck_assert_int_ge(fd, 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    port = ntohs(sa.sin_port);
    close(fd);
    return port;
}

/* A configuration for a handle on a dead loopback port whose documents fail
 * fast (retry.max 0, delivery_ms, connect timeout 200 ms), sent after
 * flush_ms, at most max_docs buffered, adds waiting enqueue_ms. */
static inline esbulk_conf_t *dead_conf(const char *delivery_ms, const char *flush_ms,
                                       const char *max_docs, const char *enqueue_ms)
{
    esbulk_conf_t *conf = esbulk_conf_new();
    char url[64], errstr[256];

    ck_assert_ptr_nonnull(conf);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", dead_port());
    ck_assert_int_eq(esbulk_conf_set(conf, "urls", url, errstr, sizeof(errstr)), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "connect.timeout.ms", "200", NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "retry.max", "0", NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "delivery.timeout.ms", delivery_ms, NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "flush.interval.ms", flush_ms, NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "buffer.max.docs", max_docs, NULL, 0), 0);
    ck_assert_int_eq(esbulk_conf_set(conf, "enqueue.timeout.ms", enqueue_ms, NULL, 0), 0);
    return conf;
}

/* A bulk answer of one item with this status, whose error's reason is
 * reason_len 'x's and whose caused_by (type c_exception) has cause_len 'y's,
 * NUL-terminated in out; its length. */
static inline size_t long_cause_answer(char *out, size_t size, int status, size_t reason_len,
                                       size_t cause_len)
{
    int n = snprintf(out, size, "{\"items\":[{\"index\":{\"status\":%d,\"error\":{\"type\":"
                                "\"t\",\"reason\":\"", status);
    size_t o = (size_t)n;

    ck_assert_uint_lt(o + reason_len + cause_len + 80, size);
    memset(out + o, 'x', reason_len);
    o += reason_len;
    o += (size_t)snprintf(out + o, size - o,
                          "\",\"caused_by\":{\"type\":\"c_exception\",\"reason\":\"");
    memset(out + o, 'y', cause_len);
    o += cause_len;
    o += (size_t)snprintf(out + o, size - o, "\"}}}}]}");
    return o;
}

#endif
