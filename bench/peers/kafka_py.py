#!/usr/bin/env python3
"""The plain Kafka-to-index loop that esbulk-kafka is compared with
(bench/kafka.py): confluent-kafka's consumer and opensearch-py's
helpers.bulk, as a typical sink script is written.

One consumer in a group; each round takes up to --batch messages
(Consumer.consume), parses each value (json.loads), sends them with
helpers.bulk (chunk_size --batch, _id topic-partition-offset like
esbulk-kafka's default), then commits the consumed offsets synchronously:
at-least-once, offsets only after their documents' results. Messages whose
document failed are counted, not retried. Ends once every assigned
partition reached its end (partition EOF) and the last batch is committed.

    kafka_py.py --brokers HOST:PORT --group G --topic T --url URL[,URL...]
                --index NAME [--batch N]

Prints one JSON line {"docs":N,"failed":F,"seconds":S} (seconds from the
start of the process to the last commit); exits non-zero if any failed.
"""
import argparse
import json
import sys
import time

T0 = time.monotonic()

from confluent_kafka import Consumer, KafkaError  # noqa: E402
from opensearchpy import OpenSearch, helpers  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brokers", default="127.0.0.1:19092")
    ap.add_argument("--group", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--url", default="http://127.0.0.1:19200")
    ap.add_argument("--index", required=True)
    ap.add_argument("--batch", type=int, default=1000)
    a = ap.parse_args()

    client = OpenSearch(hosts=a.url.split(","), timeout=120)
    c = Consumer({"bootstrap.servers": a.brokers, "group.id": a.group,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "enable.partition.eof": True,
                  "partition.assignment.strategy": "cooperative-sticky"})
    at_end = set()
    assigned = set()

    def on_assign(_c, parts):
        for p in parts:
            assigned.add(p.partition)

    def on_revoke(_c, parts):
        for p in parts:
            assigned.discard(p.partition)
            at_end.discard(p.partition)

    c.subscribe([a.topic], on_assign=on_assign, on_revoke=on_revoke)
    docs = failed = 0
    first_error = None
    while True:
        msgs = c.consume(a.batch, 1.0)
        actions = []
        for m in msgs:
            err = m.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    at_end.add(m.partition())
                    continue
                raise SystemExit("kafka_py: %s" % err)
            at_end.discard(m.partition())
            actions.append({"_index": a.index,
                            "_id": "%s-%d-%d" % (m.topic(), m.partition(), m.offset()),
                            "_source": json.loads(m.value())})
        if actions:
            ok, errors = helpers.bulk(client, actions, chunk_size=a.batch,
                                      raise_on_error=False, raise_on_exception=False)
            docs += len(actions)
            if errors:
                failed += len(errors)
                if first_error is None:
                    first_error = json.dumps(errors[0], default=str)[:300]
            c.commit(asynchronous=False)
        if assigned and assigned <= at_end and not actions:
            break
    secs = time.monotonic() - T0
    c.close()
    out = {"docs": docs, "failed": failed, "seconds": secs}
    if first_error:
        out["first_error"] = first_error
    print(json.dumps(out))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
