"""Fixtures of the esbulk tests: the real test cluster (ESBULK_TEST_URL,
default http://127.0.0.1:19200, started by tests/cluster/ensure.sh) and
fresh indices on it. The library comes from $ESBULK_LIBRARY (tests/python.test
points it at the build's .libs/libesbulk.so)."""
import json
import time
import os
import urllib.error
import urllib.request
import uuid

import pytest

URL = os.environ.get("ESBULK_TEST_URL", "http://127.0.0.1:19200").rstrip("/")


def http(method, path, body=None):
    """The test's own calls (create, count, delete): a 429 from the shared
    test cluster under load is asked again, with a growing pause."""
    data = None if body is None else json.dumps(body).encode()
    pause = 0.2
    for attempt in range(40):
        req = urllib.request.Request(URL + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as e:
            if e.code != 429 or attempt == 39:
                return e.code, json.loads(e.read() or b"null")
        time.sleep(pause)
        pause = min(pause * 2, 5.0)
    raise AssertionError("unreachable")


def create_index(name, shards=3):
    st, body = http("PUT", "/" + name, {
        "settings": {"number_of_shards": shards, "number_of_replicas": 0},
        "mappings": {"properties": {"n": {"type": "integer"}}}})
    assert st == 200, body
    st, body = http("GET", "/_cluster/health/%s?wait_for_status=green&timeout=60s" % name)
    assert st == 200 and body["status"] == "green", body


def count(name):
    http("POST", "/%s/_refresh" % name)
    st, body = http("GET", "/%s/_count" % name)
    assert st == 200, body
    return body["count"]


@pytest.fixture
def url():
    return URL


@pytest.fixture
def make_index(request):
    """make_index(tag) -> a new index "pytest-<test>-<tag>-<random>" (3
    shards, 0 replicas, "n" an integer), deleted after the test."""
    made = []

    def make(tag="", shards=3):
        base = request.node.name.lower().replace("[", "-").replace("]", "")
        name = ("pytest-%s-%s-%s" % (base, tag, uuid.uuid4().hex[:8]))
        name = "".join(c if c.isalnum() or c in "-_" else "-" for c in name)
        create_index(name, shards)
        made.append(name)
        return name

    yield make
    for name in made:
        http("DELETE", "/" + name)
