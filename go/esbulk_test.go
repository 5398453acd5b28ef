package esbulk_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	esbulk "github.com/libesbulk/libesbulk/go"
)

// tally counts the callbacks of items numbered 0..n-1 (DocumentID or a
// number in the body).
type tally struct {
	calls    []int32
	ok, fail atomic.Int64
	mu       sync.Mutex
	failures map[int]failure
}

type failure struct {
	resp esbulk.BulkIndexerResponseItem
	err  error
}

func newTally(n int) *tally { return &tally{calls: make([]int32, n), failures: map[int]failure{}} }

func (ty *tally) onSuccess(k int) {
	atomic.AddInt32(&ty.calls[k], 1)
	ty.ok.Add(1)
}

func (ty *tally) onFailure(k int, resp esbulk.BulkIndexerResponseItem, err error) {
	atomic.AddInt32(&ty.calls[k], 1)
	ty.fail.Add(1)
	ty.mu.Lock()
	ty.failures[k] = failure{resp, err}
	ty.mu.Unlock()
}

// exactlyOnce fails the test for every item not called back exactly once
// (only items marked accepted, when accepted is not nil).
func (ty *tally) exactlyOnce(t *testing.T, accepted []bool) {
	t.Helper()
	bad := 0
	for k, c := range ty.calls {
		want := int32(1)
		if accepted != nil && !accepted[k] {
			want = 0
		}
		if c != want {
			if bad < 5 {
				t.Errorf("item %d: %d callbacks, want %d", k, c, want)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d items without exactly one callback", bad)
	}
}

func idOf(item esbulk.BulkIndexerItem) int {
	k, err := strconv.Atoi(item.DocumentID)
	if err != nil {
		panic("test item without a numeric id: " + item.DocumentID)
	}
	return k
}

// 100,000 items from 4 goroutines: every one gets exactly one callback, the
// mapping errors come through OnFailure with the server's reason, and the
// index holds exactly the successes.
func TestHundredThousand(t *testing.T) {
	const n, adders, every = 100000, 4, 1000
	index := uniqueIndex("go-esbulk-100k")
	freshIndex(t, index, `{"properties":{"n":{"type":"integer"}}}`)
	ty := newTally(n)
	bi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{
		Addresses:     []string{clusterURL()},
		Index:         index,
		FlushBytes:    512 << 10,
		FlushInterval: 200 * time.Millisecond,
		NumWorkers:    2,
	})
	if err != nil {
		t.Fatal(err)
	}
	onSuccess := func(_ context.Context, item esbulk.BulkIndexerItem, _ esbulk.BulkIndexerResponseItem) {
		ty.onSuccess(idOf(item))
	}
	onFailure := func(_ context.Context, item esbulk.BulkIndexerItem, r esbulk.BulkIndexerResponseItem, err error) {
		ty.onFailure(idOf(item), r, err)
	}
	t0 := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, adders)
	for a := 0; a < adders; a++ {
		wg.Add(1)
		go func(a int) {
			defer wg.Done()
			for k := a; k < n; k += adders {
				body := fmt.Sprintf(`{"n":%d,"msg":"document %d"}`, k, k)
				if k%every == every-1 {
					body = fmt.Sprintf(`{"n":"not a number %d"}`, k)
				}
				err := bi.Add(context.Background(), esbulk.BulkIndexerItem{
					Action: "index", DocumentID: strconv.Itoa(k),
					Body:      strings.NewReader(body),
					OnSuccess: onSuccess, OnFailure: onFailure,
				})
				if err != nil {
					errs <- fmt.Errorf("add %d: %w", k, err)
					return
				}
			}
		}(a)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := bi.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	t.Logf("%d items in %v", n, time.Since(t0))
	ty.exactlyOnce(t, nil)

	wantFail := n / every
	if got := ty.fail.Load(); got != int64(wantFail) {
		t.Errorf("%d failures, want %d", got, wantFail)
	}
	for k, f := range ty.failures {
		if k%every != every-1 {
			t.Errorf("item %d failed unexpectedly: %+v %v", k, f.resp.Error, f.err)
			continue
		}
		if f.err != nil || f.resp.Status != 400 || !strings.Contains(f.resp.Error.Type, "parsing_exception") ||
			!strings.Contains(f.resp.Error.Reason, "[n]") || f.resp.Outcome != esbulk.OutcomeFailed {
			t.Errorf("item %d: want a 400 mapping error with the server's reason, got status %d %q %q err %v",
				k, f.resp.Status, f.resp.Error.Type, f.resp.Error.Reason, f.err)
		}
	}
	if c := count(t, index); c != ty.ok.Load() {
		t.Errorf("index count %d, successes %d", c, ty.ok.Load())
	}
	st := bi.Stats()
	if st.NumAdded != n || st.NumFlushed != uint64(n-wantFail) || st.NumFailed != uint64(wantFail) ||
		st.NumIndexed != uint64(n-wantFail) || st.NumRequests == 0 || st.Pending != 0 {
		t.Errorf("stats %+v", st)
	}
	if len(st.Nodes) < 3 {
		t.Errorf("stats: %d nodes, want the 3 of the cluster: %+v", len(st.Nodes), st.Nodes)
	}
	// BufferMaxDocs left at 0: sized by the cluster, never below 10,000
	if st.BufferMaxDocs < 10000 {
		t.Errorf("stats: buffer of %d items, want the library's size (at least 10000)", st.BufferMaxDocs)
	}
}

func i64(v int64) *int64 { return &v }

// The per-item options against the server: an older external version is
// refused through OnFailure (409), a newer one applies; a stale if_seq_no
// conflicts; update with retry_on_conflict and delete apply; deleting a
// missing document fails with 404 as in esutil.
func TestItemOptions(t *testing.T) {
	index := uniqueIndex("go-esbulk-options")
	freshIndex(t, index, "")
	bi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{
		Addresses: []string{clusterURL()}, Index: index, FlushInterval: 10 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer bi.Close(context.Background())
	type got struct {
		ok   bool
		resp esbulk.BulkIndexerResponseItem
		err  error
	}
	do := func(item esbulk.BulkIndexerItem) got {
		t.Helper()
		ch := make(chan got, 2)
		item.OnSuccess = func(_ context.Context, _ esbulk.BulkIndexerItem, r esbulk.BulkIndexerResponseItem) {
			ch <- got{true, r, nil}
		}
		item.OnFailure = func(_ context.Context, _ esbulk.BulkIndexerItem, r esbulk.BulkIndexerResponseItem, err error) {
			ch <- got{false, r, err}
		}
		if err := bi.Add(context.Background(), item); err != nil {
			t.Fatalf("add %+v: %v", item, err)
		}
		if err := bi.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		g := <-ch
		if len(ch) != 0 {
			t.Fatalf("item %s called back twice", item.DocumentID)
		}
		return g
	}
	if g := do(esbulk.BulkIndexerItem{Action: "index", DocumentID: "v", Version: i64(5),
		VersionType: "external", Body: strings.NewReader(`{"v":5}`)}); !g.ok || g.resp.Version != 5 {
		t.Fatalf("version 5: %+v", g)
	}
	g := do(esbulk.BulkIndexerItem{Action: "index", DocumentID: "v", Version: i64(3),
		VersionType: "external", Body: strings.NewReader(`{"v":3}`)})
	if g.ok || g.err != nil || g.resp.Status != 409 || g.resp.Error.Type != "version_conflict_engine_exception" ||
		g.resp.Error.Reason == "" {
		t.Fatalf("older external version: want OnFailure 409 version_conflict_engine_exception, got %+v", g)
	}
	if g := do(esbulk.BulkIndexerItem{Action: "index", DocumentID: "v", Version: i64(7),
		VersionType: "external_gte", Body: strings.NewReader(`{"v":7}`)}); !g.ok || g.resp.Version != 7 {
		t.Fatalf("version 7: %+v", g)
	}

	first := do(esbulk.BulkIndexerItem{Action: "create", DocumentID: "s", Body: strings.NewReader(`{"s":1}`)})
	if !first.ok || first.resp.Result != "created" || first.resp.SeqNo < 0 || first.resp.PrimTerm < 1 {
		t.Fatalf("create: %+v", first)
	}
	if g := do(esbulk.BulkIndexerItem{Action: "index", DocumentID: "s", IfSeqNo: i64(first.resp.SeqNo),
		IfPrimaryTerm: i64(first.resp.PrimTerm), Body: strings.NewReader(`{"s":2}`)}); !g.ok {
		t.Fatalf("if_seq_no current: %+v", g)
	}
	if g := do(esbulk.BulkIndexerItem{Action: "index", DocumentID: "s", IfSeqNo: i64(first.resp.SeqNo),
		IfPrimaryTerm: i64(first.resp.PrimTerm), Body: strings.NewReader(`{"s":3}`)}); g.ok || g.resp.Status != 409 {
		t.Fatalf("if_seq_no stale: want 409, got %+v", g)
	}
	retries := 3
	if g := do(esbulk.BulkIndexerItem{Action: "update", DocumentID: "s", RetryOnConflict: &retries,
		Body: strings.NewReader(`{"doc":{"u":1}}`)}); !g.ok || g.resp.Result != "updated" {
		t.Fatalf("update: %+v", g)
	}
	if g := do(esbulk.BulkIndexerItem{Action: "delete", DocumentID: "s"}); !g.ok || g.resp.Result != "deleted" {
		t.Fatalf("delete: %+v", g)
	}
	if g := do(esbulk.BulkIndexerItem{Action: "delete", DocumentID: "s"}); g.ok || g.err != nil ||
		g.resp.Status != 404 || g.resp.Result != "not_found" {
		t.Fatalf("delete missing: want OnFailure 404 not_found as esutil, got %+v", g)
	}
	if g := do(esbulk.BulkIndexerItem{Action: "index", DocumentID: "a", RequireAlias: true,
		Body: strings.NewReader(`{}`)}); g.ok || g.resp.Status != 404 {
		t.Fatalf("require_alias on a concrete index: want 404, got %+v", g)
	}
	st := bi.Stats()
	// NumFlushed counts the successes only, as in esutil
	if st.NumCreated != 1 || st.NumUpdated != 1 || st.NumDeleted != 1 || st.NumIndexed != 3 || st.NumFailed != 4 ||
		st.NumAdded != 10 || st.NumFlushed != 6 || st.Pending != 0 {
		t.Errorf("stats %+v", st)
	}
}

// Refusals of Add get no callback: an unknown action, a bad option, a
// missing body, a body that is not an object; and NewBulkIndexer reports an
// unknown key.
func TestRefusals(t *testing.T) {
	if _, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{}); err == nil {
		t.Error("no Addresses accepted")
	}
	_, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{Addresses: []string{clusterURL()},
		Config: map[string]string{"no.such.key": "1"}})
	var e *esbulk.Error
	if !errors.As(err, &e) || e.Code != esbulk.ErrCodeUnknownKey || !strings.Contains(e.Reason, "no.such.key") {
		t.Errorf("unknown key: %v", err)
	}
	_, err = esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{Addresses: []string{clusterURL()}, Index: "x\x00y"})
	if !errors.As(err, &e) || e.Code != esbulk.ErrCodeInvalidArg || !strings.Contains(e.Reason, "NUL") {
		t.Errorf("an Index with a NUL: %v", err)
	}
	// a config error names the field
	_, err = esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{Addresses: []string{clusterURL()}, Refresh: "sometimes"})
	if !errors.As(err, &e) || !strings.HasPrefix(e.Reason, "BulkIndexerConfig.Refresh: ") {
		t.Errorf("Refresh \"sometimes\": %v, want the field named", err)
	}
	bi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{Addresses: []string{silentListener(t)}})
	if err != nil {
		t.Fatal(err)
	}
	// an option out of range is refused by its name
	huge := 1 << 40
	for name, it := range map[string]esbulk.BulkIndexerItem{
		"Version":         {Index: "x", Version: i64(-1), Body: strings.NewReader(`{}`)},
		"RetryOnConflict": {Index: "x", Action: "update", DocumentID: "1", RetryOnConflict: &huge, Body: strings.NewReader(`{"doc":{}}`)},
		"VersionType":     {Index: "x", VersionType: "external", Body: strings.NewReader(`{}`)}, // without a Version
	} {
		if err := bi.Add(context.Background(), it); !errors.As(err, &e) || e.Code != esbulk.ErrCodeInvalidArg ||
			!strings.Contains(e.Reason, name) {
			t.Errorf("%s: %v, want an ErrCodeInvalidArg naming it", name, err)
		}
	}
	var calls atomic.Int32
	cb := func(context.Context, esbulk.BulkIndexerItem, esbulk.BulkIndexerResponseItem, error) { calls.Add(1) }
	for _, it := range []esbulk.BulkIndexerItem{
		{Index: "x", Action: "upsert", Body: strings.NewReader(`{}`)},
		{Index: "x", Action: "index", Version: i64(1), VersionType: "internal", Body: strings.NewReader(`{}`)},
		{Index: "x", Action: "index", IfSeqNo: i64(1), Body: strings.NewReader(`{}`)},
		{Index: "x", Action: "index", Version: i64(5), VersionType: "external", Body: strings.NewReader(`{}`)}, // a condition needs a DocumentID
		{Index: "x", Action: "index", IfSeqNo: i64(1), IfPrimaryTerm: i64(1), Body: strings.NewReader(`{}`)},
		{Index: "x", Action: "index"},
		{Index: "x", Action: "index", Body: strings.NewReader(`[1]`)},
		{Index: "x", Action: "update", Body: strings.NewReader(`{}`)},     // update needs an id
		{Index: "x\x00y", Action: "index", Body: strings.NewReader(`{}`)}, // a C string would end at the NUL
	} {
		it.OnFailure = cb
		if err := bi.Add(context.Background(), it); err == nil {
			t.Errorf("accepted %+v", it)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := bi.Close(ctx); err != nil {
		t.Errorf("close of an empty indexer: %v", err)
	}
	if calls.Load() != 0 {
		t.Errorf("%d callbacks for refused items", calls.Load())
	}
	if err := bi.Add(context.Background(), esbulk.BulkIndexerItem{Index: "x", Body: strings.NewReader(`{}`)}); !errors.Is(err, esbulk.ErrClosed) {
		t.Errorf("add after close: %v", err)
	}
	if err := bi.Close(context.Background()); err != nil {
		t.Errorf("second close: %v", err)
	}
}

// addN adds n items numbered from 0 that call back into ty.
func addN(t *testing.T, bi esbulk.BulkIndexer, ty *tally, n int) {
	t.Helper()
	for k := 0; k < n; k++ {
		addTallied(t, bi, ty, k, "go-esbulk-nowhere", strconv.Itoa(k))
	}
}

// addTallied adds one document as item k of ty, its callbacks counted as
// k's (index "": the indexer's own).
func addTallied(t *testing.T, bi esbulk.BulkIndexer, ty *tally, k int, index, id string) {
	t.Helper()
	err := bi.Add(context.Background(), esbulk.BulkIndexerItem{
		Index: index, DocumentID: id, Body: bytes.NewReader([]byte(`{"a":1}`)),
		OnSuccess: func(context.Context, esbulk.BulkIndexerItem, esbulk.BulkIndexerResponseItem) {
			ty.onSuccess(k)
		},
		OnFailure: func(_ context.Context, _ esbulk.BulkIndexerItem, r esbulk.BulkIndexerResponseItem, err error) {
			ty.onFailure(k, r, err)
		},
	})
	if err != nil {
		t.Fatalf("add %d: %v", k, err)
	}
}

// Add blocks while the buffer is full and returns ctx.Err() when its context
// ends; the refused item gets no callback, the accepted ones one each at
// Close.
func TestAddFullBufferContext(t *testing.T) {
	bi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{
		Addresses: []string{silentListener(t)}, BufferMaxDocs: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := bi.Stats().BufferMaxDocs; got != 3 {
		t.Errorf("stats: buffer of %d items, want the 3 set", got)
	}
	ty := newTally(5)
	addN(t, bi, ty, 3)
	item := func(k int) esbulk.BulkIndexerItem {
		return esbulk.BulkIndexerItem{Index: "go-esbulk-nowhere", DocumentID: strconv.Itoa(k),
			Body: strings.NewReader(`{}`),
			OnSuccess: func(context.Context, esbulk.BulkIndexerItem, esbulk.BulkIndexerResponseItem) {
				ty.onSuccess(k)
			},
			OnFailure: func(_ context.Context, _ esbulk.BulkIndexerItem, r esbulk.BulkIndexerResponseItem, err error) {
				ty.onFailure(k, r, err)
			}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	err = bi.Add(ctx, item(3))
	el := time.Since(t0)
	if !errors.Is(err, context.DeadlineExceeded) || el < 150*time.Millisecond || el > 2*time.Second {
		t.Errorf("add into a full buffer, 200 ms context: %v after %v", err, el)
	}
	cctx, ccancel := context.WithCancel(context.Background())
	go func() { time.Sleep(100 * time.Millisecond); ccancel() }()
	if err := bi.Add(cctx, item(4)); !errors.Is(err, context.Canceled) {
		t.Errorf("add into a full buffer, context cancelled: %v", err)
	}
	closeCtx, closeCancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer closeCancel()
	if err := bi.Close(closeCtx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("close: %v", err)
	}
	ty.exactlyOnce(t, []bool{true, true, true, false, false})
	if ty.fail.Load() != 3 {
		t.Errorf("%d failures, want 3", ty.fail.Load())
	}
}

// Close with a short deadline against a port that accepts and never
// answers, and against a closed port: it returns by its deadline, and every
// item has had exactly one callback, an *Error with ErrCodeClosed.
func TestCloseDeadline(t *testing.T) {
	for _, tc := range []struct {
		name     string
		url      func(testing.TB) string
		inflight bool // requests are sent at once (not routed): they are in flight at Close
	}{{"silent", silentListener, false}, {"silent-inflight", silentListener, true},
		{"closed-port", closedPort, false}} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 2000
			var batches atomic.Int32
			cfg := esbulk.BulkIndexerConfig{
				Addresses:     []string{tc.url(t)},
				FlushInterval: 10 * time.Millisecond,
				OnError:       func(context.Context, error) { batches.Add(1) },
			}
			if tc.inflight {
				cfg.RoutingLevel = "off"
				cfg.Config = map[string]string{"topology.wait.ms": "0"}
			}
			bi, err := esbulk.NewBulkIndexer(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ty := newTally(n)
			addN(t, bi, ty, n)
			time.Sleep(200 * time.Millisecond) // let requests get in flight
			const deadline = 300 * time.Millisecond
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			t0 := time.Now()
			err = bi.Close(ctx)
			el := time.Since(t0)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("close: %v, want the deadline", err)
			}
			if el > deadline+1500*time.Millisecond {
				t.Errorf("close took %v with a %v deadline", el, deadline)
			}
			t.Logf("close returned after %v", el)
			ty.exactlyOnce(t, nil)
			if ty.fail.Load() != n {
				t.Errorf("%d failures, want %d", ty.fail.Load(), n)
			}
			possibly := 0
			for k, f := range ty.failures {
				var e *esbulk.Error
				if !errors.As(f.err, &e) || !errors.Is(f.err, esbulk.ErrClosed) || f.resp.Error.Reason == "" {
					t.Errorf("item %d: %v %+v", k, f.err, f.resp)
					break
				}
				if e.Possibly {
					possibly++
				}
			}
			t.Logf("%d possibly applied, %d OnError batches", possibly, batches.Load())
			if tc.inflight && possibly == 0 {
				t.Error("no item in flight came back as possibly applied")
			}
			if batches.Load() == 0 {
				t.Error("OnError was not called")
			}
			st := bi.Stats()
			if st.NumFailed != n || st.NumFlushed != 0 || st.Pending != 0 {
				t.Errorf("stats after close: %+v", st)
			}
		})
	}
}

// Flush returns its context's error by the deadline when the cluster does
// not answer; the items keep their one callback, delivered by Close.
func TestFlushDeadline(t *testing.T) {
	bi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{Addresses: []string{silentListener(t)}})
	if err != nil {
		t.Fatal(err)
	}
	ty := newTally(10)
	addN(t, bi, ty, 10)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	if err := bi.Flush(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("flush: %v", err)
	}
	if el := time.Since(t0); el > 1500*time.Millisecond {
		t.Errorf("flush took %v with a 200 ms deadline", el)
	}
	if n := ty.ok.Load() + ty.fail.Load(); n != 0 {
		t.Errorf("%d callbacks before close", n)
	}
	cctx, ccancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer ccancel()
	bi.Close(cctx)
	ty.exactlyOnce(t, nil)
	if err := bi.Flush(context.Background()); !errors.Is(err, esbulk.ErrClosed) {
		t.Errorf("flush after close: %v", err)
	}
}

// A callback may re-queue its item with Add: the corrected documents are
// indexed after the next Flush.
func TestRequeueFromCallback(t *testing.T) {
	const n = 200
	index := uniqueIndex("go-esbulk-requeue")
	freshIndex(t, index, `{"properties":{"n":{"type":"integer"}}}`)
	bi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{Addresses: []string{clusterURL()}, Index: index})
	if err != nil {
		t.Fatal(err)
	}
	var failed, requeued, ok atomic.Int64
	var requeueErr atomic.Value
	onSuccess := func(context.Context, esbulk.BulkIndexerItem, esbulk.BulkIndexerResponseItem) { ok.Add(1) }
	var onFailure func(context.Context, esbulk.BulkIndexerItem, esbulk.BulkIndexerResponseItem, error)
	var causeBad atomic.Value
	onFailure = func(ctx context.Context, item esbulk.BulkIndexerItem, r esbulk.BulkIndexerResponseItem, err error) {
		failed.Add(1)
		// the server's caused_by in Cause, as esutil has it
		if r.Error.Cause.Type == "" || r.Error.Cause.Reason == "" || strings.Contains(r.Error.Reason, "caused by") {
			causeBad.Store(fmt.Sprintf("%+v", r.Error))
		}
		item.Body = strings.NewReader(`{"n":1}`)
		if err := bi.Add(ctx, item); err != nil {
			requeueErr.Store(err)
			return
		}
		requeued.Add(1)
	}
	for k := 0; k < n; k++ {
		if err := bi.Add(context.Background(), esbulk.BulkIndexerItem{DocumentID: strconv.Itoa(k),
			Body: strings.NewReader(`{"n":"x"}`), OnSuccess: onSuccess, OnFailure: onFailure}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := bi.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := bi.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if e := causeBad.Load(); e != nil {
		t.Errorf("mapping error without its cause in Error.Cause: %v", e)
	}
	if e := requeueErr.Load(); e != nil {
		t.Errorf("re-queue from a callback: %v", e)
	}
	if failed.Load() != n || requeued.Load() != n || ok.Load() != n {
		t.Errorf("failed %d, re-queued %d, indexed %d; want %d each", failed.Load(), requeued.Load(), ok.Load(), n)
	}
	if c := count(t, index); c != n {
		t.Errorf("count %d, want %d", c, n)
	}
}

func procStatus(t *testing.T, key string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, key+":") {
			f := strings.Fields(l[len(key)+1:])
			v, _ := strconv.ParseInt(f[0], 10, 64)
			return v
		}
	}
	t.Fatalf("no %s in /proc/self/status", key)
	return 0
}

// Indexers made and closed one after another leave no goroutine, no thread
// and no memory behind (a short form of the 1,000-indexer test).
func TestIndexersDoNotLeak(t *testing.T) {
	// ESBULK_LEAK_INDEXERS: 120 in make check, 1,000 in make check-leak
	rounds := envInt(t, "ESBULK_LEAK_INDEXERS", 120)
	warm := 20
	if rounds < 2*warm {
		warm = rounds / 2
	}
	index := uniqueIndex("go-esbulk-leak")
	freshIndex(t, index, "")
	var g0, th0, rss0 int64
	for r := 0; r < rounds; r++ {
		if r == warm {
			runtime.GC()
			g0, th0, rss0 = int64(runtime.NumGoroutine()), procStatus(t, "Threads"), procStatus(t, "VmRSS")
		}
		bi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{Addresses: []string{clusterURL()}, Index: index})
		if err != nil {
			t.Fatal(err)
		}
		ty := newTally(20)
		for k := 0; k < 20; k++ {
			err := bi.Add(context.Background(), esbulk.BulkIndexerItem{DocumentID: strconv.Itoa(k),
				Body: strings.NewReader(`{"r":1}`),
				OnSuccess: func(_ context.Context, item esbulk.BulkIndexerItem, _ esbulk.BulkIndexerResponseItem) {
					ty.onSuccess(idOf(item))
				},
				OnFailure: func(_ context.Context, item esbulk.BulkIndexerItem, r esbulk.BulkIndexerResponseItem, err error) {
					ty.onFailure(idOf(item), r, err)
				}})
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := bi.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if ty.ok.Load() != 20 {
			t.Fatalf("round %d: %d indexed, failures %v", r, ty.ok.Load(), ty.failures)
		}
	}
	runtime.GC()
	g1, th1, rss1 := int64(runtime.NumGoroutine()), procStatus(t, "Threads"), procStatus(t, "VmRSS")
	t.Logf("after %d and %d indexers: goroutines %d -> %d, threads %d -> %d, RSS %d -> %d kB",
		warm, rounds, g0, g1, th0, th1, rss0, rss1)
	if g1 > g0+2 {
		t.Errorf("goroutines grew from %d to %d", g0, g1)
	}
	if th1 > th0+4 {
		t.Errorf("threads grew from %d to %d", th0, th1)
	}
	if !raceEnabled && rss1 > rss0+32*1024 {
		t.Errorf("RSS grew from %d to %d kB over %d indexers", rss0, rss1, rounds-warm)
	}
}

// Close while 4 goroutines keep adding: every item whose Add returned nil
// has exactly one callback, every other none, and Add returns ErrClosed
// once Close has begun.
func TestCloseRacingAdds(t *testing.T) {
	const adders, max = 4, 400000
	index := uniqueIndex("go-esbulk-race-close")
	freshIndex(t, index, "")
	bi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{Addresses: []string{clusterURL()}, Index: index,
		BufferMaxDocs: 5000, FlushDocs: 500})
	if err != nil {
		t.Fatal(err)
	}
	ty := newTally(max)
	accepted := make([]bool, max)
	onSuccess := func(_ context.Context, item esbulk.BulkIndexerItem, _ esbulk.BulkIndexerResponseItem) {
		ty.onSuccess(idOf(item))
	}
	onFailure := func(_ context.Context, item esbulk.BulkIndexerItem, r esbulk.BulkIndexerResponseItem, err error) {
		ty.onFailure(idOf(item), r, err)
	}
	var wg sync.WaitGroup
	var otherErr atomic.Value
	for a := 0; a < adders; a++ {
		wg.Add(1)
		go func(a int) {
			defer wg.Done()
			for k := a; k < max; k += adders {
				err := bi.Add(context.Background(), esbulk.BulkIndexerItem{DocumentID: strconv.Itoa(k),
					Body: strings.NewReader(`{"k":1}`), OnSuccess: onSuccess, OnFailure: onFailure})
				if errors.Is(err, esbulk.ErrClosed) {
					return
				}
				if err != nil {
					otherErr.Store(err)
					return
				}
				accepted[k] = true
			}
		}(a)
	}
	time.Sleep(300 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := bi.Close(ctx); err != nil {
		t.Errorf("close: %v", err)
	}
	wg.Wait()
	if e := otherErr.Load(); e != nil {
		t.Fatalf("add: %v", e)
	}
	n := 0
	for _, ok := range accepted {
		if ok {
			n++
		}
	}
	t.Logf("%d items accepted before the close", n)
	if n == 0 || n == max {
		t.Fatalf("%d accepted: the close did not race the adds", n)
	}
	ty.exactlyOnce(t, accepted)
	if c := count(t, index); c != ty.ok.Load() {
		t.Errorf("index count %d, successes %d", c, ty.ok.Load())
	}
}

// OnLog: against a port nobody listens on, libesbulk's warnings that say so
// reach OnLog on the result goroutine (the library never calls into Go),
// with their level and facility.
func TestOnLog(t *testing.T) {
	url := closedPort(t)
	type line struct {
		level             int
		facility, message string
	}
	var mu sync.Mutex
	var lines []line
	bi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{
		Addresses: []string{url},
		OnLog: func(level int, facility, message string) {
			mu.Lock()
			lines = append(lines, line{level, facility, message})
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := bi.Add(context.Background(), esbulk.BulkIndexerItem{Index: "go-esbulk-nowhere",
		DocumentID: "1", Body: strings.NewReader(`{}`)}); err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(url, "http://")
	found := func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, l := range lines {
			if l.level == esbulk.LogWarning && l.facility != "" &&
				strings.Contains(l.message, host) && strings.Contains(l.message, "onnect") {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(10 * time.Second); !found() && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_ = bi.Close(ctx)
	if !found() {
		mu.Lock()
		t.Errorf("no warning naming %s in %d lines: %v", host, len(lines), lines)
		mu.Unlock()
	}
}
