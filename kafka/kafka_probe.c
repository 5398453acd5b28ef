/*
 * kafka_probe: the few broker operations esbulk-kafka's smoke test needs
 * (tests/kafka_smoke.test), on librdkafka, so that the test needs no other
 * Kafka client.
 *
 *   kafka_probe produce BROKERS TOPIC N [FROM [PAD]]
 *       N messages, values {"n":i,"msg":"message i"} for i in FROM..FROM+N-1
 *       (with a "pad" field of PAD bytes when PAD is given),
 *       key "k<i>", spread over the topic's partitions by key; a value of
 *       "not json" for every i that is a multiple of 100 when FROM is
 *       negative (-FROM is then the first i); exit 0 once all are
 *       acknowledged (acks=all)
 *   kafka_probe offsets BROKERS GROUP TOPIC
 *       one line per partition: "PARTITION COMMITTED END" (COMMITTED -1:
 *       none), and a last line "total COMMITTED END" (sums)
 *   kafka_probe count BROKERS TOPIC
 *       the messages in the topic (sum of end - start over its partitions)
 *   kafka_probe tombstones BROKERS TOPIC N [FROM]
 *       N tombstones (null values) with the keys "k<i>" of produce
 *   kafka_probe send BROKERS TOPIC
 *       the records of standard input, separated by NUL bytes, to partition
 *       0: "KEY<TAB>VALUE", or VALUE alone (a null key); a VALUE of
 *       "<null>" is a tombstone
 *   kafka_probe dump BROKERS TOPIC N
 *       the first N messages of partition 0: one line each, "key value"
 *       then each header as " name=value"
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int produced_errors;

static void on_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    (void)opaque;
    if (m->err) {
        fprintf(stderr, "kafka_probe: delivery: %s\n", rd_kafka_err2str(m->err));
        produced_errors++;
    }
}

static rd_kafka_t *client(rd_kafka_type_t type, const char *brokers, const char *group)
{
    char err[512];
    rd_kafka_conf_t *kc = rd_kafka_conf_new();

    if (rd_kafka_conf_set(kc, "bootstrap.servers", brokers, err, sizeof(err)) ||
        (type == RD_KAFKA_PRODUCER &&
         (rd_kafka_conf_set(kc, "acks", "all", err, sizeof(err)) ||
          rd_kafka_conf_set(kc, "linger.ms", "5", err, sizeof(err)))) ||
        (group && rd_kafka_conf_set(kc, "group.id", group, err, sizeof(err)))) {
        fprintf(stderr, "kafka_probe: %s\n", err);
        exit(2);
    }
    if (type == RD_KAFKA_PRODUCER)
        rd_kafka_conf_set_dr_msg_cb(kc, on_dr);
    rd_kafka_t *rk = rd_kafka_new(type, kc, err, sizeof(err));
    if (rk == NULL) {
        fprintf(stderr, "kafka_probe: %s\n", err);
        exit(2);
    }
    return rk;
}

static int partitions_of(rd_kafka_t *rk, const char *topic)
{
    const struct rd_kafka_metadata *md;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    int n = -1;

    if (rd_kafka_metadata(rk, 0, rkt, &md, 10000) == 0) {
        if (md->topic_cnt == 1 && md->topics[0].err == 0)
            n = md->topics[0].partition_cnt;
        rd_kafka_metadata_destroy(md);
    }
    rd_kafka_topic_destroy(rkt);
    if (n < 0) {
        fprintf(stderr, "kafka_probe: topic %s: no metadata\n", topic);
        exit(1);
    }
    return n;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "send") == 0) {
        rd_kafka_t *rk = client(RD_KAFKA_PRODUCER, argv[2], NULL);
        char *rec = NULL;
        size_t cap = 0;
        ssize_t n;
        while ((n = getdelim(&rec, &cap, '\0', stdin)) > 0) {
            size_t len = (size_t)n;
            if (rec[len - 1] == '\0')
                len--;
            char *tab = memchr(rec, '\t', len), *v = tab ? tab + 1 : rec;
            size_t vlen = len - (size_t)(v - rec);
            /* (librdkafka's macros cast their argument unparenthesized) */
            void *key = tab ? rec : NULL, *value = v;
            size_t key_len = tab ? (size_t)(tab - rec) : 0;
            if (vlen == 6 && memcmp(v, "<null>", 6) == 0) {
                value = NULL;
                vlen = 0;
            }
            rd_kafka_resp_err_t e = rd_kafka_producev(
                rk, RD_KAFKA_V_TOPIC(argv[3]), RD_KAFKA_V_PARTITION(0),
                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_KEY(key, key_len),
                RD_KAFKA_V_VALUE(value, vlen), RD_KAFKA_V_END);
            if (e) {
                fprintf(stderr, "kafka_probe: produce: %s\n", rd_kafka_err2str(e));
                return 1;
            }
        }
        free(rec);
        if (rd_kafka_flush(rk, 60000) != 0)
            return 1;
        rd_kafka_destroy(rk);
        return produced_errors ? 1 : 0;
    }
    if (argc >= 5 && strcmp(argv[1], "tombstones") == 0) {
        rd_kafka_t *rk = client(RD_KAFKA_PRODUCER, argv[2], NULL);
        long n = atol(argv[4]), from = argc > 5 ? atol(argv[5]) : 0;
        for (long i = from; i < from + n; i++) {
            char key[32];
            snprintf(key, sizeof(key), "k%ld", i);
            rd_kafka_resp_err_t e = rd_kafka_producev(
                rk, RD_KAFKA_V_TOPIC(argv[3]), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                RD_KAFKA_V_KEY(key, strlen(key)), RD_KAFKA_V_VALUE(NULL, 0), RD_KAFKA_V_END);
            if (e) {
                fprintf(stderr, "kafka_probe: produce: %s\n", rd_kafka_err2str(e));
                return 1;
            }
        }
        if (rd_kafka_flush(rk, 60000) != 0)
            return 1;
        rd_kafka_destroy(rk);
        return produced_errors ? 1 : 0;
    }
    if (argc >= 5 && strcmp(argv[1], "produce") == 0) {
        rd_kafka_t *rk = client(RD_KAFKA_PRODUCER, argv[2], NULL);
        long n = atol(argv[4]), from = argc > 5 ? atol(argv[5]) : 0;
        long pad = argc > 6 ? atol(argv[6]) : 0;
        int bad = from < 0;
        if (bad)
            from = -from;
        if (pad < 0 || pad > 1000000)
            pad = 0;
        char *padding = malloc((size_t)pad + 1), *value = malloc((size_t)pad + 128);
        if (padding == NULL || value == NULL)
            return 1;
        memset(padding, 'x', (size_t)pad);
        padding[pad] = '\0';
        for (long i = from; i < from + n; i++) {
            char key[32];
            snprintf(key, sizeof(key), "k%ld", i);
            if (bad && i % 100 == 0)
                snprintf(value, (size_t)pad + 128, "not json %ld", i);
            else if (pad > 0)
                snprintf(value, (size_t)pad + 128, "{\"n\":%ld,\"msg\":\"message %ld\",\"pad\":\"%s\"}",
                         i, i, padding);
            else
                snprintf(value, (size_t)pad + 128, "{\"n\":%ld,\"msg\":\"message %ld\"}", i, i);
            for (;;) {
                rd_kafka_resp_err_t e = rd_kafka_producev(
                    rk, RD_KAFKA_V_TOPIC(argv[3]), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                    RD_KAFKA_V_KEY(key, strlen(key)), RD_KAFKA_V_VALUE(value, strlen(value)),
                    RD_KAFKA_V_END);
                if (e == RD_KAFKA_RESP_ERR_NO_ERROR)
                    break;
                if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
                    fprintf(stderr, "kafka_probe: produce: %s\n", rd_kafka_err2str(e));
                    return 1;
                }
                rd_kafka_poll(rk, 100);
            }
            rd_kafka_poll(rk, 0);
        }
        free(padding);
        free(value);
        if (rd_kafka_flush(rk, 60000) != 0) {
            fprintf(stderr, "kafka_probe: not all acknowledged within 60 s\n");
            return 1;
        }
        rd_kafka_destroy(rk);
        return produced_errors ? 1 : 0;
    }
    if (argc == 5 && strcmp(argv[1], "offsets") == 0) {
        rd_kafka_t *rk = client(RD_KAFKA_CONSUMER, argv[2], argv[3]);
        int np = partitions_of(rk, argv[4]);
        rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(np);
        int64_t tc = 0, te = 0;
        for (int p = 0; p < np; p++)
            rd_kafka_topic_partition_list_add(l, argv[4], p);
        rd_kafka_resp_err_t e = rd_kafka_committed(rk, l, 10000);
        if (e) {
            fprintf(stderr, "kafka_probe: committed: %s\n", rd_kafka_err2str(e));
            return 1;
        }
        for (int p = 0; p < np; p++) {
            int64_t lo, hi;
            if (rd_kafka_query_watermark_offsets(rk, argv[4], p, &lo, &hi, 10000)) {
                fprintf(stderr, "kafka_probe: watermarks of %d failed\n", p);
                return 1;
            }
            int64_t c = l->elems[p].offset;
            printf("%d %" PRId64 " %" PRId64 "\n", p, c < 0 ? -1 : c, hi);
            tc += c < 0 ? 0 : c;
            te += hi;
        }
        printf("total %" PRId64 " %" PRId64 "\n", tc, te);
        rd_kafka_topic_partition_list_destroy(l);
        rd_kafka_destroy(rk);
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "count") == 0) {
        rd_kafka_t *rk = client(RD_KAFKA_PRODUCER, argv[2], NULL);
        int np = partitions_of(rk, argv[3]);
        int64_t total = 0;
        for (int p = 0; p < np; p++) {
            int64_t lo, hi;
            if (rd_kafka_query_watermark_offsets(rk, argv[3], p, &lo, &hi, 10000)) {
                fprintf(stderr, "kafka_probe: watermarks of %d failed\n", p);
                return 1;
            }
            total += hi - lo;
        }
        printf("%" PRId64 "\n", total);
        rd_kafka_destroy(rk);
        return 0;
    }
    if (argc == 5 && strcmp(argv[1], "dump") == 0) {
        rd_kafka_t *rk = client(RD_KAFKA_CONSUMER, argv[2], "kafka_probe");
        rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
        long n = atol(argv[4]);
        rd_kafka_topic_partition_list_add(l, argv[3], 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
        rd_kafka_assign(rk, l);
        rd_kafka_topic_partition_list_destroy(l);
        for (long got = 0; got < n;) {
            rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 10000);
            if (m == NULL) {
                fprintf(stderr, "kafka_probe: no message within 10 s\n");
                return 1;
            }
            if (m->err == 0) {
                rd_kafka_headers_t *h = NULL;
                printf("%.*s %.*s", (int)m->key_len, m->key ? (char *)m->key : "",
                       (int)m->len, m->payload ? (char *)m->payload : "");
                if (rd_kafka_message_headers(m, &h) == 0) {
                    const char *name;
                    const void *v;
                    size_t vlen;
                    for (size_t i = 0; rd_kafka_header_get_all(h, i, &name, &v, &vlen) == 0; i++)
                        printf(" %s=%.*s", name, (int)vlen, v ? (const char *)v : "");
                }
                printf("\n");
                got++;
            }
            rd_kafka_message_destroy(m);
        }
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);
        return 0;
    }
    fprintf(stderr, "usage: kafka_probe produce BROKERS TOPIC N [FROM [PAD]] | offsets BROKERS GROUP "
                    "TOPIC | count BROKERS TOPIC | dump BROKERS TOPIC N | tombstones BROKERS TOPIC N [FROM] | send BROKERS TOPIC\n");
    return 2;
}
