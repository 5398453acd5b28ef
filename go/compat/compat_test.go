package compat

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	esbulk "github.com/libesbulk/libesbulk/go"
	"github.com/opensearch-project/opensearch-go/v4"
	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"
	"github.com/opensearch-project/opensearch-go/v4/opensearchutil"
)

func clusterURL() string {
	if u := os.Getenv("ESBULK_TEST_URL"); u != "" {
		return u
	}
	return "http://127.0.0.1:19200"
}

func call(t testing.TB, method, path, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, clusterURL()+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if strings.Contains(path, "_bulk") {
		req.Header.Set("Content-Type", "application/x-ndjson")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// outcome is what a test compares of one item.
type outcome struct {
	OK      bool
	Status  int
	ErrType string
}

// item is one operation of the test body.
type item struct {
	action, id, body string
	version          *int64
}

// indexer is the part of a BulkIndexer the test body uses.
type indexer interface {
	add(ctx context.Context, index string, it item, done func(outcome)) error
	close(ctx context.Context) error
}

// The test body: the same items, then the outcome of each and the count.
func body(t *testing.T, ix indexer, index string) (map[string]outcome, int) {
	call(t, "DELETE", "/"+index, "")
	if st, b := call(t, "PUT", "/"+index+"?wait_for_active_shards=all",
		`{"settings":{"number_of_shards":3,"number_of_replicas":0},"mappings":{"properties":{"n":{"type":"integer"}}}}`); st != 200 {
		t.Fatalf("create: %d %s", st, b)
	}
	t.Cleanup(func() { call(t, "DELETE", "/"+index, "") })
	var seed strings.Builder
	for k := 0; k < 20; k++ {
		fmt.Fprintf(&seed, "{\"index\":{\"_id\":\"v%d\",\"version\":10,\"version_type\":\"external\"}}\n{\"n\":%d}\n", k, k)
	}
	if st, b := call(t, "POST", "/"+index+"/_bulk?refresh=true", seed.String()); st != 200 || strings.Contains(b, `"errors":true`) {
		t.Fatalf("seed: %d %s", st, b)
	}

	var items []item
	for k := 0; k < 2000; k++ {
		items = append(items, item{"index", fmt.Sprintf("ok%d", k), fmt.Sprintf(`{"n":%d}`, k), nil})
	}
	for k := 0; k < 20; k++ {
		items = append(items, item{"index", fmt.Sprintf("bad%d", k), `{"n":"not a number"}`, nil})
	}
	for k := 0; k < 20; k++ {
		v := int64(5) // older than the stored 10: refused
		if k >= 10 {
			v = 20
		}
		items = append(items, item{"index", fmt.Sprintf("v%d", k), `{"n":1}`, &v})
	}
	for k := 0; k < 5; k++ {
		items = append(items, item{"delete", fmt.Sprintf("missing%d", k), "", nil})
	}
	items = append(items, item{"update", "missing-update", `{"doc":{"n":1}}`, nil})
	items = append(items, item{"create", "v0", `{"n":1}`, nil})

	var mu sync.Mutex
	got := map[string]outcome{}
	calls := map[string]int{}
	for _, it := range items {
		key := it.action + ":" + it.id
		if err := ix.add(context.Background(), index, it, func(o outcome) {
			mu.Lock()
			got[key] = o
			calls[key]++
			mu.Unlock()
		}); err != nil {
			t.Fatalf("add %s: %v", key, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := ix.close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	for _, it := range items {
		if key := it.action + ":" + it.id; calls[key] != 1 {
			t.Errorf("%s: %d callbacks", key, calls[key])
		}
	}
	call(t, "POST", "/"+index+"/_refresh", "")
	_, b := call(t, "GET", "/"+index+"/_count", "")
	var c struct{ Count int }
	if err := json.Unmarshal([]byte(b), &c); err != nil {
		t.Fatal(err)
	}
	return got, c.Count
}

type osIndexer struct{ bi opensearchutil.BulkIndexer }

func (o *osIndexer) add(ctx context.Context, index string, it item, done func(outcome)) error {
	bit := opensearchutil.BulkIndexerItem{Index: index, Action: it.action, DocumentID: it.id,
		OnSuccess: func(_ context.Context, _ opensearchutil.BulkIndexerItem, r opensearchapi.BulkRespItem) {
			done(outcome{true, r.Status, ""})
		},
		OnFailure: func(_ context.Context, _ opensearchutil.BulkIndexerItem, r opensearchapi.BulkRespItem, err error) {
			o := outcome{false, r.Status, ""}
			if r.Error != nil {
				o.ErrType = r.Error.Type
			}
			if err != nil {
				o.ErrType = "error: " + err.Error()
			}
			done(o)
		}}
	if it.body != "" {
		bit.Body = strings.NewReader(it.body)
	}
	if it.version != nil {
		vt := "external"
		bit.Version, bit.VersionType = it.version, &vt
	}
	return o.bi.Add(ctx, bit)
}

func (o *osIndexer) close(ctx context.Context) error { return o.bi.Close(ctx) }

type esbulkIndexer struct{ bi esbulk.BulkIndexer }

func (e *esbulkIndexer) add(ctx context.Context, index string, it item, done func(outcome)) error {
	bit := esbulk.BulkIndexerItem{Index: index, Action: it.action, DocumentID: it.id, Version: it.version,
		OnSuccess: func(_ context.Context, _ esbulk.BulkIndexerItem, r esbulk.BulkIndexerResponseItem) {
			done(outcome{true, r.Status, ""})
		},
		OnFailure: func(_ context.Context, _ esbulk.BulkIndexerItem, r esbulk.BulkIndexerResponseItem, err error) {
			o := outcome{false, r.Status, r.Error.Type}
			if err != nil {
				o.ErrType = "error: " + err.Error()
			}
			done(o)
		}}
	if it.body != "" {
		bit.Body = strings.NewReader(it.body)
	}
	if it.version != nil {
		bit.VersionType = "external"
	}
	return e.bi.Add(ctx, bit)
}

func (e *esbulkIndexer) close(ctx context.Context) error { return e.bi.Close(ctx) }

// The same body through opensearch-go's BulkIndexer and through esbulk's:
// the same outcome (success, status, error type) for every item, and the
// same number of documents in the index.
func TestSameOutcomesAsOpensearchGo(t *testing.T) {
	client, err := opensearchapi.NewClient(opensearchapi.Config{
		Client: opensearch.Config{Addresses: []string{clusterURL()}},
	})
	if err != nil {
		t.Fatal(err)
	}
	obi, err := opensearchutil.NewBulkIndexer(opensearchutil.BulkIndexerConfig{
		Client: client, NumWorkers: 2, FlushBytes: 64 << 10, FlushInterval: time.Second,
		OnError: func(_ context.Context, err error) { t.Errorf("opensearch-go OnError: %v", err) },
	})
	if err != nil {
		t.Fatal(err)
	}
	theirs, theirCount := body(t, &osIndexer{obi}, "go-compat-opensearch-go")

	ebi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{
		Addresses: []string{clusterURL()}, NumWorkers: 2, FlushBytes: 64 << 10, FlushInterval: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	ours, ourCount := body(t, &esbulkIndexer{ebi}, "go-compat-esbulk")

	if theirCount != ourCount {
		t.Errorf("documents in the index: opensearch-go %d, esbulk %d", theirCount, ourCount)
	}
	var keys []string
	for k := range theirs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	diff := 0
	kinds := map[outcome]int{}
	for _, k := range keys {
		kinds[theirs[k]]++
		if theirs[k] != ours[k] {
			if diff < 10 {
				t.Errorf("%s: opensearch-go %+v, esbulk %+v", k, theirs[k], ours[k])
			}
			diff++
		}
	}
	if len(ours) != len(theirs) {
		t.Errorf("%d outcomes from opensearch-go, %d from esbulk", len(theirs), len(ours))
	}
	t.Logf("%d items, %d documents; outcomes: %v; %d differ", len(theirs), ourCount, kinds, diff)
}
