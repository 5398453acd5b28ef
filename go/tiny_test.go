package esbulk_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	esbulk "github.com/libesbulk/libesbulk/go"
)

// envInt is the integer in $name, or def.
func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// tinyURL is the tiny 429 cluster (tests/cluster/ensure.sh opensearch-tiny:
// one write thread, a write queue of one), set by tests/go.test. Without it
// the test is skipped, except in CI, where that is a failure.
func tinyURL(t *testing.T) string {
	u := strings.TrimRight(os.Getenv("ESBULK_TEST_TINY_URL"), "/")
	if u == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("ESBULK_TEST_TINY_URL is not set (tests/go.test sets it)")
		}
		t.Skip("ESBULK_TEST_TINY_URL not set: no tiny 429 cluster")
	}
	return u
}

func tinyCall(t *testing.T, base, method, path, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// writeRejected sums the write pool's rejections over the tiny cluster's nodes.
func writeRejected(t *testing.T, base string) int64 {
	t.Helper()
	st, b := tinyCall(t, base, "GET", "/_nodes/stats/thread_pool", "")
	var v struct {
		Nodes map[string]struct {
			ThreadPool map[string]struct {
				Rejected int64 `json:"rejected"`
			} `json:"thread_pool"`
		} `json:"nodes"`
	}
	if st != 200 || json.Unmarshal(b, &v) != nil {
		t.Fatalf("thread pool stats: %d %s", st, b)
	}
	var n int64
	for _, nd := range v.Nodes {
		n += nd.ThreadPool["write"].Rejected
	}
	return n
}

// Item 429s from the tiny cluster: the write queue overflows, every refused
// item is retried, none is lost, every item has exactly one callback.
func TestItem429s(t *testing.T) {
	base := tinyURL(t)
	const n = 4000
	index := uniqueIndex("go-esbulk-tiny-429")
	tinyCall(t, base, "DELETE", "/"+index, "")
	if st, b := tinyCall(t, base, "PUT", "/"+index,
		`{"settings":{"number_of_shards":4,"number_of_replicas":0}}`); st != 200 {
		t.Fatalf("create: %d %s", st, b)
	}
	defer tinyCall(t, base, "DELETE", "/"+index, "")
	tinyCall(t, base, "GET", "/_cluster/health/"+index+"?wait_for_status=green&timeout=60s", "")
	r0 := writeRejected(t, base)
	retries := 100
	bi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{
		Addresses: []string{base}, Index: index, FlushDocs: 50, NumWorkers: 8,
		RetryMax: &retries, RetryBackoff: 20 * time.Millisecond, RetryBackoffMax: time.Second,
		DeliveryTimeout: 5 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	ty := newTally(n)
	addToIndex(t, bi, ty, n, "")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if err := bi.Close(ctx); err != nil {
		t.Fatal(err)
	}
	st := bi.Stats()
	ty.exactlyOnce(t, nil)
	rejected := writeRejected(t, base) - r0
	t.Logf("%d items: %d write rejections on the cluster, %d retries, %d requests",
		n, rejected, st.NumRetried, st.NumRequests)
	if ty.ok.Load() != n {
		for k, f := range ty.failures {
			t.Errorf("item %d failed: %d %s %v", k, f.resp.Status, f.resp.Error.Reason, f.err)
			break
		}
		t.Fatalf("%d of %d indexed", ty.ok.Load(), n)
	}
	if rejected == 0 || st.NumRetried == 0 {
		t.Errorf("no item 429 (%d rejections, %d retries): the test proves nothing", rejected, st.NumRetried)
	}
	tinyCall(t, base, "POST", "/"+index+"/_refresh", "")
	if code, b := tinyCall(t, base, "GET", "/"+index+"/_count", ""); code != 200 ||
		!strings.Contains(string(b), `"count":`+strconv.Itoa(n)+`,`) {
		t.Errorf("count: %d %s, want %d", code, b, n)
	}
}

// addToIndex adds items 0..n-1 ({"n":k}, id k) with the tally's callbacks.
func addToIndex(t *testing.T, bi esbulk.BulkIndexer, ty *tally, n int, index string) {
	t.Helper()
	onOK := func(_ context.Context, item esbulk.BulkIndexerItem, _ esbulk.BulkIndexerResponseItem) {
		ty.onSuccess(idOf(item))
	}
	onFail := func(_ context.Context, item esbulk.BulkIndexerItem, r esbulk.BulkIndexerResponseItem, err error) {
		ty.onFailure(idOf(item), r, err)
	}
	for k := 0; k < n; k++ {
		id := strconv.Itoa(k)
		if err := bi.Add(context.Background(), esbulk.BulkIndexerItem{Index: index, DocumentID: id,
			Body:      strings.NewReader(`{"n":` + id + `,"s":"leak and 429 test document"}`),
			OnSuccess: onOK, OnFailure: onFail}); err != nil {
			t.Fatal(err)
		}
	}
}

// Memory flat over many items through one indexer: ESBULK_LEAK_ITEMS
// (default 100,000 in make check; make check-leak: 1,000,000). After a
// warm-up (half of the items, at most 50,000, at least a fifth: the buffer
// and the allocator's arenas reach their size), the Go heap in use (after a
// GC) may grow by at most 4 MB and, without -race, the RSS by at most
// 16 MB, measured once every callback has run, before Close. A per-item
// leak of 64 bytes over the quick run's 50,000 measured items is 3 MB of
// heap, over 1M 49 MB.
func TestItemsDoNotLeak(t *testing.T) {
	n := envInt(t, "ESBULK_LEAK_ITEMS", 100000)
	index := uniqueIndex("go-esbulk-leak-items")
	freshIndex(t, index, "")
	defer call(t, "DELETE", "/"+index, "")
	bi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{Addresses: []string{clusterURL()},
		Index: index, FlushDocs: 2000, BufferMaxDocs: 20000})
	if err != nil {
		t.Fatal(err)
	}
	ty := newTally(n)
	heap := func() (uint64, int64) {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc, procStatus(t, "VmRSS")
	}
	warm := n / 2
	if warm > 50000 {
		warm = 50000
	}
	if warm < n/5 {
		warm = n / 5
	}
	addToIndex(t, bi, ty, warm, "")
	h0, r0 := heap()
	onOK := func(_ context.Context, item esbulk.BulkIndexerItem, _ esbulk.BulkIndexerResponseItem) {
		ty.onSuccess(idOf(item))
	}
	onFail := func(_ context.Context, item esbulk.BulkIndexerItem, r esbulk.BulkIndexerResponseItem, err error) {
		ty.onFailure(idOf(item), r, err)
	}
	for k := warm; k < n; k++ {
		id := strconv.Itoa(k)
		if err := bi.Add(context.Background(), esbulk.BulkIndexerItem{DocumentID: id,
			Body:      strings.NewReader(`{"n":` + id + `,"s":"leak and 429 test document"}`),
			OnSuccess: onOK, OnFailure: onFail}); err != nil {
			t.Fatal(err)
		}
	}
	if err := bi.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	h1, r1 := heap()
	st := bi.Stats()
	if err := bi.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d items: Go heap %d -> %d kB, RSS %d -> %d kB after the first %d",
		n, h0/1024, h1/1024, r0, r1, warm)
	ty.exactlyOnce(t, nil)
	if ty.ok.Load() != int64(n) || st.Pending != 0 {
		t.Fatalf("%d of %d indexed, %d pending", ty.ok.Load(), n, st.Pending)
	}
	if h1 > h0+4<<20 {
		t.Errorf("Go heap grew from %d to %d kB over %d items", h0/1024, h1/1024, n-warm)
	}
	if !raceEnabled && r1 > r0+16*1024 {
		t.Errorf("RSS grew from %d to %d kB over %d items", r0, r1, n-warm)
	}
}
