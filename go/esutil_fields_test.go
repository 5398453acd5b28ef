package esbulk_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	esbulk "github.com/libesbulk/libesbulk/go"
)

// closeWithin closes bi, giving it d.
func closeWithin(t *testing.T, bi esbulk.BulkIndexer, d time.Duration) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return bi.Close(ctx)
}

// Timeout is request.timeout.ms: a bulk request through a proxy asks the
// server to answer within 5/6 of it (the timeout parameter). Negative, and
// Timeout with Config["request.timeout.ms"] too, are refused.
func TestConfigTimeout(t *testing.T) {
	for _, cfg := range []esbulk.BulkIndexerConfig{
		{Addresses: []string{clusterURL()}, Timeout: -time.Second},
		{Addresses: []string{clusterURL()}, Timeout: time.Second,
			Config: map[string]string{"request.timeout.ms": "1000"}},
	} {
		bi, err := esbulk.NewBulkIndexer(cfg)
		var e *esbulk.Error
		if err == nil {
			_ = closeWithin(t, bi, time.Second)
			t.Errorf("Timeout %v, Config %v: accepted", cfg.Timeout, cfg.Config)
		} else if !errors.As(err, &e) || e.Code != esbulk.ErrCodeInvalidArg || !strings.Contains(e.Reason, "Timeout") {
			t.Errorf("Timeout %v, Config %v: %v, want an invalid-argument *Error naming Timeout", cfg.Timeout, cfg.Config, err)
		}
	}

	target, _ := url.Parse(clusterURL())
	proxy := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	var timeouts []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/_bulk") {
			mu.Lock()
			timeouts = append(timeouts, r.URL.Query().Get("timeout"))
			mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	}))
	defer srv.Close()
	index := uniqueIndex("go-esbulk-timeout")
	freshIndex(t, index, "")
	defer call(t, "DELETE", "/"+index, "")
	bi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{
		Addresses: []string{srv.URL}, Index: index, Timeout: 12 * time.Second,
		// the proxy is the only address
		Config: map[string]string{"topology.discovery": "false"},
	})
	if err != nil {
		t.Fatal(err)
	}
	ty := newTally(3)
	for k := 0; k < 3; k++ {
		addTallied(t, bi, ty, k, "", strconv.Itoa(k))
	}
	if err := closeWithin(t, bi, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	ty.exactlyOnce(t, nil)
	if ty.ok.Load() != 3 {
		t.Errorf("%d of 3 indexed: %v", ty.ok.Load(), ty.failures)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(timeouts) == 0 {
		t.Fatal("no bulk request went through the proxy")
	}
	for _, v := range timeouts {
		if v != "10000ms" {
			t.Errorf("bulk request timeout=%q, want 10000ms (5/6 of Timeout 12 s)", v)
		}
	}
}

// aliasedIndex makes a new index (the caller deletes it) with an alias, and
// an indexer with RequireAlias in its config.
func aliasedIndex(t *testing.T, prefix string) (index, alias string, bi esbulk.BulkIndexer) {
	t.Helper()
	index = uniqueIndex(prefix)
	alias = index + "-alias"
	freshIndex(t, index, "")
	if st, b := call(t, "PUT", "/"+index+"/_alias/"+alias, ""); st != 200 {
		t.Fatalf("alias: %d %s", st, b)
	}
	bi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{
		Addresses: []string{clusterURL()}, RequireAlias: true,
		Config: map[string]string{"retry.max": "0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return index, alias, bi
}

// RequireAlias in the config applies to every item: an item whose index is
// a name that is no alias (and no index) fails, and no index is created;
// an item that names an alias is indexed.
func TestConfigRequireAlias(t *testing.T) {
	index, alias, bi := aliasedIndex(t, "go-esbulk-reqalias")
	defer call(t, "DELETE", "/"+index, "")
	missing := index + "-missing"
	call(t, "DELETE", "/"+missing, "")
	defer call(t, "DELETE", "/"+missing, "")
	ty := newTally(2)
	for k, ix := range []string{missing, alias} {
		addTallied(t, bi, ty, k, ix, "1")
	}
	if err := closeWithin(t, bi, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	ty.exactlyOnce(t, nil)
	f, failed := ty.failures[0]
	if !failed {
		t.Errorf("%s (no alias) with RequireAlias in the config: indexed", missing)
	} else if why := fmt.Sprintf("%+v %v", f.resp.Error, f.err); !strings.Contains(why, "index_not_found") &&
		!strings.Contains(why, "require_alias") {
		t.Errorf("%s: failed with %s, want index_not_found or require_alias", missing, why)
	}
	if _, failed := ty.failures[1]; failed {
		t.Errorf("%s (an alias): failed: %+v", alias, ty.failures[1])
	}
	if st, b := call(t, "GET", "/"+missing, ""); st != 404 {
		t.Errorf("GET /%s: %d %s, want 404 (no index created)", missing, st, b)
	}
}

// countingLogger is a BulkIndexerDebugLogger that counts its lines.
type countingLogger struct {
	mu    sync.Mutex
	lines []string
}

func (l *countingLogger) Printf(format string, args ...interface{}) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

func (l *countingLogger) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// DebugLogger gets the library's log lines: against a port nobody listens
// on, the warning that says so, and debug lines (log.level is raised).
func TestDebugLogger(t *testing.T) {
	addr := closedPort(t)
	host := strings.TrimPrefix(addr, "http://")
	var _ esbulk.BulkIndexerDebugLogger = (*countingLogger)(nil)
	lg := &countingLogger{}
	bi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{Addresses: []string{addr}, DebugLogger: lg})
	if err != nil {
		t.Fatal(err)
	}
	if err := bi.Add(context.Background(), esbulk.BulkIndexerItem{Index: "go-esbulk-nowhere",
		DocumentID: "1", Body: strings.NewReader(`{}`)}); err != nil {
		t.Fatal(err)
	}
	found := func() (warn, debug bool) {
		for _, l := range lg.snapshot() {
			if strings.HasPrefix(l, "esbulk warning ") && strings.Contains(l, host) {
				warn = true
			}
			if strings.HasPrefix(l, "esbulk debug ") {
				debug = true
			}
		}
		return
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if w, d := found(); w && d {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = closeWithin(t, bi, 300*time.Millisecond)
	lines := lg.snapshot()
	if len(lines) == 0 {
		t.Fatal("DebugLogger got no line")
	}
	if w, _ := found(); !w {
		t.Errorf("no warning naming %s in %d lines: %q", host, len(lines), lines)
	}
	if _, d := found(); !d {
		t.Errorf("no debug line in %d lines: %q", len(lines), lines)
	}
}

// FlushedBytes is the bytes of the bulk bodies sent, uncompressed: at
// least every document's body and newline, at most that plus an action
// line of 300 bytes each; with gzip the same.
func TestFlushedBytes(t *testing.T) {
	index := uniqueIndex("go-esbulk-flushedbytes")
	freshIndex(t, index, "")
	defer call(t, "DELETE", "/"+index, "")
	for _, comp := range []string{"none", "gzip"} {
		bi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{
			Addresses: []string{clusterURL()}, Index: index,
			Config: map[string]string{"compression": comp},
		})
		if err != nil {
			t.Fatal(err)
		}
		const n = 200
		body := `{"msg":"` + strings.Repeat("x", 500) + `"}`
		for k := 0; k < n; k++ {
			if err := bi.Add(context.Background(), esbulk.BulkIndexerItem{DocumentID: comp + strconv.Itoa(k),
				Body: strings.NewReader(body)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := closeWithin(t, bi, 60*time.Second); err != nil {
			t.Fatal(err)
		}
		st := bi.Stats()
		if st.NumFlushed != n {
			t.Fatalf("%s: %d of %d indexed", comp, st.NumFlushed, n)
		}
		lo, hi := uint64(n*(len(body)+1)), uint64(n*(len(body)+1+300))
		if st.FlushedBytes < lo || st.FlushedBytes > hi {
			t.Errorf("%s: FlushedBytes %d, want %d to %d", comp, st.FlushedBytes, lo, hi)
		}
	}
}

// Header (esutil's global request header) goes with every request, the
// metadata reads and the bulk requests; a header the library sets itself,
// a line break, and Header with Config["http.headers"] too are refused by
// NewBulkIndexer.
func TestConfigHeader(t *testing.T) {
	for _, tc := range []struct {
		h    http.Header
		cfg  map[string]string
		says string
	}{
		{http.Header{"Content-Type": {"text/plain"}}, nil, "Content-Type is the library's to set"},
		{http.Header{"Authorization": {"Basic eA=="}}, nil, "use auth.username"},
		{http.Header{"X-A": {"1\r\nX-B: 2"}}, nil, "line break"},
		{http.Header{"X-A": {"1"}}, map[string]string{"http.headers": "X-A: 1"}, "both set"},
	} {
		bi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{Addresses: []string{clusterURL()},
			Header: tc.h, Config: tc.cfg})
		var e *esbulk.Error
		if err == nil {
			_ = closeWithin(t, bi, time.Second)
			t.Errorf("Header %v: accepted", tc.h)
		} else if !errors.As(err, &e) || !strings.Contains(e.Reason, tc.says) || !strings.Contains(e.Reason, "Header") {
			t.Errorf("Header %v: %v, want an *Error naming Header and saying %q", tc.h, err, tc.says)
		}
	}

	target, _ := url.Parse(clusterURL())
	proxy := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	var bulks, metas, without int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if r.Header.Get("X-Opaque-Id") != "go-test" || strings.Join(r.Header.Values("X-Multi"), ",") != "1,2" {
			without++
		} else if strings.HasSuffix(r.URL.Path, "/_bulk") {
			bulks++
		} else {
			metas++
		}
		mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	defer srv.Close()
	index := uniqueIndex("go-esbulk-header")
	freshIndex(t, index, "")
	bi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{Addresses: []string{srv.URL},
		Index: index, Header: http.Header{"X-Opaque-Id": {"go-test"}, "X-Multi": {"1", "2"}},
		// through the proxy: the nodes' own addresses would go around it
		Config: map[string]string{"topology.discovery": "false"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		if err := bi.Add(context.Background(), esbulk.BulkIndexerItem{Action: "index",
			DocumentID: strconv.Itoa(i), Body: strings.NewReader(`{"n":1}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := closeWithin(t, bi, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if st := bi.Stats(); st.NumIndexed != 20 {
		t.Errorf("indexed %d of 20", st.NumIndexed)
	}
	mu.Lock()
	defer mu.Unlock()
	if without != 0 || bulks == 0 || metas == 0 {
		t.Errorf("requests with the headers: %d bulk, %d metadata; without: %d", bulks, metas, without)
	}
}

// RequireAlias in the config (or an item's) does not stop deletes: esutil
// sends it as the request's ?require_alias, which the server applies to
// index, create and update only. Add refused every delete of such an
// indexer ("document options do not fit a delete").
func TestConfigRequireAliasLetsDeletesThrough(t *testing.T) {
	index, alias, bi := aliasedIndex(t, "go-esbulk-reqalias-del")
	defer call(t, "DELETE", "/"+index, "")
	for _, id := range []string{"1", "2"} {
		if st, b := call(t, "PUT", "/"+index+"/_doc/"+id+"?refresh=true", `{"a":1}`); st != 201 {
			t.Fatalf("PUT doc %s: %d %s", id, st, b)
		}
	}
	ty := newTally(2)
	for k, id := range []string{"1", "2"} {
		k := k
		err := bi.Add(context.Background(), esbulk.BulkIndexerItem{
			Action: "delete", Index: alias, DocumentID: id, RequireAlias: k == 1,
			OnSuccess: func(context.Context, esbulk.BulkIndexerItem, esbulk.BulkIndexerResponseItem) {
				ty.onSuccess(k)
			},
			OnFailure: func(_ context.Context, _ esbulk.BulkIndexerItem, r esbulk.BulkIndexerResponseItem, err error) {
				ty.onFailure(k, r, err)
			},
		})
		if err != nil {
			t.Fatalf("delete %s with RequireAlias: Add: %v", id, err)
		}
	}
	if err := closeWithin(t, bi, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	ty.exactlyOnce(t, nil)
	if len(ty.failures) != 0 {
		t.Errorf("deletes failed: %+v", ty.failures)
	}
	for _, id := range []string{"1", "2"} {
		if st, b := call(t, "GET", "/"+index+"/_doc/"+id, ""); st != 404 {
			t.Errorf("GET doc %s after its delete: %d %s, want 404", id, st, b)
		}
	}
}

// A Close while another is under way waits for it only as long as its own
// ctx allows (esutil's Close returns ctx.Err()); it waited for the first
// whatever its deadline.
func TestSecondCloseKeepsItsOwnDeadline(t *testing.T) {
	bi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{
		Addresses: []string{"http://127.0.0.1:1"}, Index: "nowhere",
		Config: map[string]string{"connect.timeout.ms": "100", "retry.max": "1000",
			"delivery.timeout.ms": "0", "topology.discovery": "false"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := bi.Add(context.Background(), esbulk.BulkIndexerItem{Action: "index",
		Body: strings.NewReader(`{"a":1}`)}); err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() { first <- closeWithin(t, bi, 3*time.Second) }()
	time.Sleep(200 * time.Millisecond) // the first Close is flushing, against nothing
	t0 := time.Now()
	err = closeWithin(t, bi, 100*time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("second Close: %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("second Close took %v with a 100 ms deadline", d)
	}
	if err := <-first; !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("first Close: %v, want context.DeadlineExceeded", err)
	}
}
