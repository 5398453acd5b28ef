package esbulk_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	esbulk "github.com/libesbulk/libesbulk/go"
)

// within runs f and fails the test if it has not returned after d (a hang:
// the goroutine is left behind, the test fails).
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s: still waiting after %v (deadlock)", what, d)
	}
}

// Add from a callback into a full buffer never waits (only the result
// goroutine, which runs the callback, makes room): it returns an error that
// matches ErrQueueFull at once, with the callback's ctx (which carries a
// marker) and with a context of the callback's own (the goroutine is
// recognised). Every item the callback added gets its one callback.
func TestAddFromCallbackFullBuffer(t *testing.T) {
	index := uniqueIndex("go-esbulk-cb-full")
	for _, own := range []bool{false, true} {
		t.Run("own-ctx="+strconv.FormatBool(own), func(t *testing.T) {
			bi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{
				Addresses: []string{clusterURL()}, Index: index, BufferMaxDocs: 10,
				FlushInterval: 10 * time.Millisecond,
			})
			if err != nil {
				t.Fatal(err)
			}
			const max = 1000
			ty := newTally(max + 1)
			var added atomic.Int64
			cbErr := make(chan error, 1)
			onSuccess := func(_ context.Context, item esbulk.BulkIndexerItem, _ esbulk.BulkIndexerResponseItem) {
				ty.onSuccess(idOf(item))
			}
			onFailure := func(_ context.Context, item esbulk.BulkIndexerItem, r esbulk.BulkIndexerResponseItem, err error) {
				ty.onFailure(idOf(item), r, err)
			}
			first := func(ctx context.Context, item esbulk.BulkIndexerItem, r esbulk.BulkIndexerResponseItem) {
				onSuccess(ctx, item, r)
				if own {
					ctx = context.Background()
				}
				for k := 1; k <= max; k++ {
					err := bi.Add(ctx, esbulk.BulkIndexerItem{DocumentID: strconv.Itoa(k),
						Body: strings.NewReader(`{"a":1}`), OnSuccess: onSuccess, OnFailure: onFailure})
					if err != nil {
						cbErr <- err
						return
					}
					added.Add(1)
				}
				cbErr <- nil
			}
			if err := bi.Add(context.Background(), esbulk.BulkIndexerItem{DocumentID: "0",
				Body: strings.NewReader(`{"a":1}`), OnSuccess: first, OnFailure: onFailure}); err != nil {
				t.Fatal(err)
			}
			var got error
			within(t, 20*time.Second, "Add from a callback into a full buffer", func() { got = <-cbErr })
			var e *esbulk.Error
			if !errors.Is(got, esbulk.ErrQueueFull) || !errors.As(got, &e) || e.Code != esbulk.ErrCodeQueueFull {
				t.Errorf("Add from a callback after %d items into a buffer of 10: %v, want ErrQueueFull",
					added.Load(), got)
			}
			if err := bi.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			accepted := make([]bool, max+1)
			for k := 0; k <= int(added.Load()); k++ {
				accepted[k] = true
			}
			ty.exactlyOnce(t, accepted)
			if ty.fail.Load() != 0 {
				t.Errorf("%d failures", ty.fail.Load())
			}
		})
	}
	call(t, "DELETE", "/"+index, "")
}

// Callbacks get the Add's context (its values), marked: Flush and Close
// called from a callback (with that ctx or any other) return an error that
// matches ErrInCallback at once instead of waiting for themselves, and the
// indexer goes on.
func TestCallbackContext(t *testing.T) {
	index := uniqueIndex("go-esbulk-cb-ctx")
	bi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{Addresses: []string{clusterURL()}, Index: index,
		FlushInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer call(t, "DELETE", "/"+index, "")
	type key struct{}
	type got struct {
		value             interface{}
		flush, close, bg  error
		flushBg, closeBg2 error
	}
	ch := make(chan got, 1)
	ctx := context.WithValue(context.Background(), key{}, "trace-1")
	err = bi.Add(ctx, esbulk.BulkIndexerItem{DocumentID: "1", Body: strings.NewReader(`{"a":1}`),
		OnSuccess: func(cctx context.Context, _ esbulk.BulkIndexerItem, _ esbulk.BulkIndexerResponseItem) {
			var g got
			g.value = cctx.Value(key{})
			g.flush = bi.Flush(cctx)
			g.close = bi.Close(cctx)
			g.flushBg = bi.Flush(context.Background())
			g.closeBg2 = bi.Close(context.Background())
			ch <- g
		}})
	if err != nil {
		t.Fatal(err)
	}
	var g got
	within(t, 20*time.Second, "Flush and Close from a callback", func() { g = <-ch })
	if g.value != "trace-1" {
		t.Errorf("callback ctx value %v, want the Add's ctx value trace-1", g.value)
	}
	for name, err := range map[string]error{"Flush(cb ctx)": g.flush, "Close(cb ctx)": g.close,
		"Flush(Background)": g.flushBg, "Close(Background)": g.closeBg2} {
		if !errors.Is(err, esbulk.ErrInCallback) {
			t.Errorf("%s from a callback: %v, want ErrInCallback", name, err)
		}
	}
	// still open: one more item, and a Flush from here
	var ok atomic.Int32
	if err := bi.Add(context.Background(), esbulk.BulkIndexerItem{DocumentID: "2", Body: strings.NewReader(`{"a":1}`),
		OnSuccess: func(context.Context, esbulk.BulkIndexerItem, esbulk.BulkIndexerResponseItem) { ok.Add(1) }}); err != nil {
		t.Fatalf("add after the refused Close: %v", err)
	}
	fctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := bi.Flush(fctx); err != nil || ok.Load() != 1 {
		t.Errorf("flush: %v, %d successes", err, ok.Load())
	}
	if err := bi.Close(fctx); err != nil {
		t.Error(err)
	}
}

// A callback's ctx marks code that the result goroutine waits for only
// while that callback runs: a goroutine that a callback started and did not
// wait for (an asynchronous retry) may Add and Flush with it later, and
// then waits for room and for the items as any other, also while the result
// goroutine runs another callback (Add returned ErrQueueFull, and Flush
// ErrInCallback, at once).
func TestCallbackContextAfterTheCallback(t *testing.T) {
	index := uniqueIndex("go-esbulk-cb-after")
	bi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{Addresses: []string{clusterURL()}, Index: index,
		BufferMaxDocs: 2, FlushInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer call(t, "DELETE", "/"+index, "")
	ty := newTally(5)
	onSuccess := func(_ context.Context, item esbulk.BulkIndexerItem, _ esbulk.BulkIndexerResponseItem) {
		ty.onSuccess(idOf(item))
	}
	onFailure := func(_ context.Context, item esbulk.BulkIndexerItem, r esbulk.BulkIndexerResponseItem, err error) {
		ty.onFailure(idOf(item), r, err)
	}
	add := func(ctx context.Context, id string, ok func(context.Context, esbulk.BulkIndexerItem, esbulk.BulkIndexerResponseItem)) error {
		return bi.Add(ctx, esbulk.BulkIndexerItem{DocumentID: id, Body: strings.NewReader(`{"a":1}`),
			OnSuccess: ok, OnFailure: onFailure})
	}
	// item 0: its callback hands its ctx over and returns
	ctx0 := make(chan context.Context, 1)
	if err := add(context.Background(), "0", func(ctx context.Context, it esbulk.BulkIndexerItem, r esbulk.BulkIndexerResponseItem) {
		onSuccess(ctx, it, r)
		ctx0 <- ctx
	}); err != nil {
		t.Fatal(err)
	}
	var cbCtx context.Context
	within(t, 20*time.Second, "the first callback", func() { cbCtx = <-ctx0 })
	// item 1: its callback holds the result goroutine until released
	started, release := make(chan struct{}), make(chan struct{})
	if err := add(context.Background(), "1", func(ctx context.Context, it esbulk.BulkIndexerItem, r esbulk.BulkIndexerResponseItem) {
		onSuccess(ctx, it, r)
		close(started)
		select {
		case <-release:
		case <-time.After(20 * time.Second):
		}
	}); err != nil {
		t.Fatal(err)
	}
	within(t, 20*time.Second, "the second callback", func() { <-started })
	// the buffer full (2 items not served while the callback runs)
	for _, id := range []string{"2", "3"} {
		if err := add(context.Background(), id, onSuccess); err != nil {
			t.Fatal(err)
		}
	}
	// item 0's ctx, on a goroutine of its own, long after its callback
	addErr, flushErr := make(chan error, 1), make(chan error, 1)
	go func() { addErr <- add(cbCtx, "4", onSuccess) }()
	go func() { flushErr <- bi.Flush(cbCtx) }()
	time.Sleep(300 * time.Millisecond)
	if len(addErr) != 0 {
		t.Errorf("Add with the ctx of a callback that returned, into a full buffer: %v before there was room, want it to wait", <-addErr)
		addErr <- nil
	}
	if len(flushErr) != 0 {
		t.Errorf("Flush with the ctx of a callback that returned: %v before its items were done, want it to wait", <-flushErr)
		flushErr <- nil
	}
	close(release)
	within(t, 20*time.Second, "Add and Flush once the callback returned", func() {
		if err := <-addErr; err != nil {
			t.Errorf("Add: %v", err)
		}
		if err := <-flushErr; err != nil {
			t.Errorf("Flush: %v", err)
		}
	})
	if err := bi.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	accepted := []bool{true, true, true, true, true}
	if ty.ok.Load() != 5 {
		// item 4 was refused: no callback for it
		accepted[4] = ty.calls[4] != 0
	}
	ty.exactlyOnce(t, accepted)
}
