"""No leak: RSS and Python object counts stay flat over many documents.

ESBULK_LEAK_DOCS documents (default 100,000, the quick mode of make check;
`make check-leak` runs 1,000,000) through Indexer.add_many, then as many
through helpers.streaming_bulk, into one index. The first two fifths are a
warm-up (allocator arenas; the library's buffer, 20,000 documents here,
fills up to about the 30,000th: RSS climbs until then, and a warm-up of one
fifth made the test fail at random); from then on RSS may grow by at most
LEAK_SLACK_MB in all and the number of memory blocks Python has allocated
(sys.getallocatedblocks: every object, tracked by the collector or not) by
at most 2,000. A per-document leak of 140 bytes over the quick run's 60,000
measured documents is 8 MB, of 14 bytes over make check-leak's 600,000; a
Python object kept per document is 60,000 blocks or more."""
import gc
import os
import sys

from esbulk import helpers
import esbulk
from conftest import count

DOCS = int(os.environ.get("ESBULK_LEAK_DOCS", "100000"))
LEAK_SLACK_MB = 8.0
CHUNK = 1000


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1048576.0


def measure(run):
    """run(mark) feeds DOCS documents and calls mark() every CHUNK; returns
    (RSS growth after warm-up, object growth)."""
    marks = []

    def mark(end=False):
        """Every CHUNK documents, and once with end=True when every result
        has come, while the indexer is still open."""
        marks.append(1)
        if len(marks) == DOCS // CHUNK * 2 // 5 or end:
            gc.collect()
            base.append((rss_mb(), sys.getallocatedblocks()))
    base = []
    run(mark)
    assert len(base) == 2, "the test's own marks"
    return base[1][0] - base[0][0], base[1][1] - base[0][1]


def test_indexer_flat_memory(url, make_index):
    index = make_index(shards=2)
    served = [0]

    def on_result(r):
        served[0] += 1
        assert r.ok, (r.status, r.reason)

    def run(mark):
        # buffer.max.docs bounds what reading ahead of sending may hold (the
        # default, 1M-ish documents, would make the buffer itself grow over
        # the whole quick run): the steady state is reached in the warm-up
        with esbulk.Indexer(url, on_result=on_result, flush_docs=2000, block=True,
                            buffer_max_docs=20000) as ix:
            for start in range(0, DOCS, CHUNK):
                ix.add_many(index, [{"n": i, "s": "leak test document %d" % i}
                                    for i in range(start, start + CHUNK)],
                            contexts=range(start, start + CHUNK))
                ix.poll(0)
                mark()
            assert ix.flush() == 0
            tokens_left.append(len(ix._tokens))
            mark(end=True)
    tokens_left = []
    drss, dobj = measure(run)
    print("Indexer, %d docs: RSS %+.1f MB, blocks %+d after warm-up" % (DOCS, drss, dobj))
    assert served[0] == DOCS
    assert drss < LEAK_SLACK_MB, "RSS grew %.1f MB over %d documents" % (drss, DOCS)
    assert dobj < 2000, "%d more Python memory blocks after %d documents" % (dobj, DOCS)
    assert tokens_left == [0]
    assert count(index) == DOCS


def test_streaming_bulk_flat_memory(url, make_index):
    index = make_index(shards=2)

    def run(mark):
        def gen():
            for i in range(DOCS):
                if i % CHUNK == 0:
                    mark()
                yield {"_index": index, "n": i, "s": "leak test document %d" % i}
        n = 0
        # opensearch-py's default chunk: what the helper hands the library
        # ahead of the chunk it yields (IN_FLIGHT_DOCS, 10,000 documents at
        # this size; more with larger chunks) fills within the warm-up
        for ok, _ in helpers.streaming_bulk(url, gen(), chunk_size=500):
            assert ok
            n += 1
            if n == DOCS:  # the last result: the helper's indexer is still open
                mark(end=True)
        assert n == DOCS
    drss, dobj = measure(run)
    print("streaming_bulk, %d docs: RSS %+.1f MB, blocks %+d after warm-up"
          % (DOCS, drss, dobj))
    assert drss < LEAK_SLACK_MB, "RSS grew %.1f MB over %d documents" % (drss, DOCS)
    assert dobj < 2000, "%d more Python memory blocks after %d documents" % (dobj, DOCS)
    assert count(index) == DOCS
