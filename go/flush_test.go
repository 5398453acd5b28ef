package esbulk_test

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	esbulk "github.com/libesbulk/libesbulk/go"
)

// Flush while another goroutine keeps the buffer full returns once every
// item added before the call has had its callback: it does not chase the
// items added after. Each request waits for a refresh (refresh=wait_for,
// the index's 1 s interval) and carries 200 items, one at a time per node,
// so that a full buffer (2000) takes some seconds to drain and a Flush that waited for everything added up to some moment
// after its call would never be done (libesbulk's esbulk_flush, called
// again for at most a second at a time, was).
func TestFlushWhileAdding(t *testing.T) {
	const max = 1 << 20
	index := uniqueIndex("go-esbulk-flush-live")
	freshIndex(t, index, "")
	bi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{Addresses: []string{clusterURL()}, Index: index,
		BufferMaxDocs: 2000, FlushDocs: 200, NumWorkers: 1, Refresh: "wait_for"})
	if err != nil {
		t.Fatal(err)
	}
	called := make([]atomic.Bool, max)
	cb := func(item esbulk.BulkIndexerItem) { called[idOf(item)].Store(true) }
	var returned atomic.Int64 // items 0..returned-1 have had their Add return nil
	stop := make(chan struct{})
	adderDone := make(chan error, 1)
	go func() {
		for k := 0; k < max; k++ {
			select {
			case <-stop:
				adderDone <- nil
				return
			default:
			}
			err := bi.Add(context.Background(), esbulk.BulkIndexerItem{DocumentID: strconv.Itoa(k),
				Body: strings.NewReader(`{"a":1}`),
				OnSuccess: func(_ context.Context, item esbulk.BulkIndexerItem, _ esbulk.BulkIndexerResponseItem) {
					cb(item)
				},
				OnFailure: func(_ context.Context, item esbulk.BulkIndexerItem, _ esbulk.BulkIndexerResponseItem, _ error) {
					cb(item)
				}})
			if err != nil {
				adderDone <- err
				return
			}
			returned.Store(int64(k + 1))
		}
		adderDone <- errors.New("ran out of items")
	}()
	for bi.Stats().Pending < 1800 {
		time.Sleep(10 * time.Millisecond)
	}
	before := returned.Load()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	t0 := time.Now()
	err = bi.Flush(ctx)
	el := time.Since(t0)
	missing := 0
	for k := int64(0); k < before; k++ {
		if !called[k].Load() {
			missing++
		}
	}
	close(stop)
	if e := <-adderDone; e != nil {
		t.Errorf("adder: %v", e)
	}
	t.Logf("flush of %d items while adding: %v after %v; %d added in all", before, err, el, returned.Load())
	if err != nil {
		t.Errorf("flush while adding: %v after %v", err, el)
	}
	if missing > 0 {
		t.Errorf("%d of the %d items added before the Flush without a callback when it returned", missing, before)
	}
	// what is left is no concern here: a short Close
	cctx, ccancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer ccancel()
	_ = bi.Close(cctx)
}

// Close without a limit delivers every item whose Add returned nil, while
// goroutines keep adding (Add returns ErrClosed once Close began): no
// accepted item gets ErrClosed. Many rounds, each a short race.
func TestCloseUnlimitedDeliversAll(t *testing.T) {
	const adders = 128
	index := uniqueIndex("go-esbulk-close-all")
	freshIndex(t, index, "")
	end := time.Now().Add(3 * time.Second)
	rounds := 0
	for ; time.Now().Before(end) || rounds < 10; rounds++ {
		bi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{Addresses: []string{clusterURL()}, Index: index,
			BufferMaxDocs: 20, FlushDocs: 5})
		if err != nil {
			t.Fatal(err)
		}
		var accepted, ok, closedFail, otherFail atomic.Int64
		var wg sync.WaitGroup
		var addErr atomic.Value
		for a := 0; a < adders; a++ {
			wg.Add(1)
			go func(a int) {
				defer wg.Done()
				for i := 0; ; i++ {
					err := bi.Add(context.Background(), esbulk.BulkIndexerItem{DocumentID: strconv.Itoa(a*1000000 + i),
						Body: strings.NewReader(`{"a":1}`),
						OnSuccess: func(context.Context, esbulk.BulkIndexerItem, esbulk.BulkIndexerResponseItem) {
							ok.Add(1)
						},
						OnFailure: func(_ context.Context, _ esbulk.BulkIndexerItem, _ esbulk.BulkIndexerResponseItem, err error) {
							if errors.Is(err, esbulk.ErrClosed) {
								closedFail.Add(1)
							} else {
								otherFail.Add(1)
							}
						}})
					if err != nil {
						if !errors.Is(err, esbulk.ErrClosed) {
							addErr.Store(err)
						}
						return
					}
					accepted.Add(1)
				}
			}(a)
		}
		time.Sleep(30 * time.Millisecond)
		err = bi.Close(context.Background())
		wg.Wait()
		if e := addErr.Load(); e != nil {
			t.Fatalf("round %d: add: %v", rounds, e)
		}
		if err != nil || closedFail.Load() != 0 || otherFail.Load() != 0 || ok.Load() != accepted.Load() {
			t.Fatalf("round %d: Close(Background) = %v; accepted %d, indexed %d, failed with ErrClosed %d, other failures %d",
				rounds, err, accepted.Load(), ok.Load(), closedFail.Load(), otherFail.Load())
		}
	}
	t.Logf("%d rounds", rounds)
}

// Flush and Close see a cancel (a context without a deadline) within a
// small fraction of a second, not at the end of a long wait inside the
// library.
func TestCancelSeenSoon(t *testing.T) {
	for _, closing := range []bool{false, true} {
		bi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{Addresses: []string{silentListener(t)}})
		if err != nil {
			t.Fatal(err)
		}
		ty := newTally(1)
		addN(t, bi, ty, 1)
		const after = 800 * time.Millisecond
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(after, cancel)
		t0 := time.Now()
		if closing {
			err = bi.Close(ctx)
		} else {
			err = bi.Flush(ctx)
		}
		late := time.Since(t0) - after
		if !errors.Is(err, context.Canceled) || late > 400*time.Millisecond {
			t.Errorf("close=%v, cancelled after %v: %v, %v late", closing, after, err, late)
		}
		if !closing {
			cctx, ccancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			bi.Close(cctx)
			ccancel()
		}
		ty.exactlyOnce(t, nil)
	}
}

// Close honours its deadline also while a Flush with a longer context (here
// none) waits for items the cluster does not answer: Flush returns
// ErrClosed once Close begins, and Close fails what is left by its
// deadline (it used to wait behind the Flush, up to the delivery timeout).
func TestCloseDeadlineDuringFlush(t *testing.T) {
	bi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{Addresses: []string{silentListener(t)},
		DeliveryTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ty := newTally(10)
	addN(t, bi, ty, 10)
	flushed := make(chan error, 1)
	go func() { flushed <- bi.Flush(context.Background()) }()
	time.Sleep(100 * time.Millisecond) // the Flush waits
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	err = bi.Close(ctx)
	if el := time.Since(t0); el > 2*time.Second {
		t.Errorf("Close with a 300 ms deadline took %v behind a Flush", el)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("close: %v, want the deadline", err)
	}
	if err := <-flushed; !errors.Is(err, esbulk.ErrClosed) {
		t.Errorf("the Flush under way at Close: %v, want ErrClosed", err)
	}
	ty.exactlyOnce(t, nil)
	for k, f := range ty.failures {
		if !errors.Is(f.err, esbulk.ErrClosed) {
			t.Errorf("item %d: %v, want ErrClosed", k, f.err)
		}
	}
}

// Adds waiting for room in a full buffer cost little CPU: each attempt
// builds the document in the library again (its body validated and
// copied) before it finds the buffer full, so the attempts that no release
// of room called for back off (20 waiters with 1 MiB bodies used half a
// core at one attempt each per 5 ms).
func TestFullBufferWaitIsCheap(t *testing.T) {
	if raceEnabled {
		// an Add of 1 MiB alone costs some 25 ms under it
		t.Skip("CPU time under -race is the race detector's: tests/go.test runs this test without it")
	}
	bi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{Addresses: []string{silentListener(t)},
		Index: "go-esbulk-nowhere", BufferMaxDocs: 10})
	if err != nil {
		t.Fatal(err)
	}
	ty := newTally(10)
	addN(t, bi, ty, 10)
	big := `{"s":"` + strings.Repeat("x", 1<<20) + `"}`
	// CPU is measured over window, once every Add has read its body and
	// waits, less what the process used over a window before (what other
	// tests left behind)
	const waiters, settle, window = 20, 500 * time.Millisecond, 1500 * time.Millisecond
	runtime.GC()
	b0 := cpuTime()
	time.Sleep(window)
	base := cpuTime() - b0
	ctx, cancel := context.WithTimeout(context.Background(), settle+window+300*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	for g := 0; g < waiters; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := bi.Add(ctx, esbulk.BulkIndexerItem{Body: strings.NewReader(big)}); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("add into a full buffer: %v", err)
			}
		}()
	}
	time.Sleep(settle)
	c0 := cpuTime()
	time.Sleep(window)
	used := cpuTime() - c0 - base
	wg.Wait()
	t.Logf("%d Adds waiting for room used %v of CPU in %v (%v without them)", waiters, used, window, base)
	if used > window/5 {
		t.Errorf("%d Adds waiting for room used %v of CPU in %v", waiters, used, window)
	}
	cctx, ccancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer ccancel()
	bi.Close(cctx)
	ty.exactlyOnce(t, nil)
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Flush and Close wait by their own context, whatever OnFlushStart returns
// (esutil gives it a context.Background() of its own, so that code written
// for it may well start from another context): the context it returns
// goes to OnFlushEnd only.
func TestFlushStartContextKeepsDeadline(t *testing.T) {
	type key struct{}
	// OnFlushEnd runs on the result goroutine as the flush ends, which
	// may be after Flush or Close returned on its deadline
	ended := make(chan interface{}, 4)
	zero := 0
	bi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{Addresses: []string{silentListener(t)},
		OnFlushStart: func(context.Context) context.Context {
			return context.WithValue(context.Background(), key{}, "span")
		},
		OnFlushEnd: func(ctx context.Context) { ended <- ctx.Value(key{}) },
		// without the fix, a wait of one request timeout, not minutes
		RetryMax: &zero, Config: map[string]string{"request.timeout.ms": "5000"}})
	if err != nil {
		t.Fatal(err)
	}
	ty := newTally(3)
	addN(t, bi, ty, 3)
	for _, closing := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		t0 := time.Now()
		if closing {
			err = bi.Close(ctx)
		} else {
			err = bi.Flush(ctx)
		}
		el := time.Since(t0)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || el > 2*time.Second {
			t.Errorf("close=%v with a 300 ms deadline: %v after %v", closing, err, el)
		}
		select {
		case v := <-ended:
			if v != "span" {
				t.Errorf("close=%v: OnFlushEnd got %v, want OnFlushStart's context", closing, v)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("close=%v: OnFlushEnd not called", closing)
		}
	}
	ty.exactlyOnce(t, nil)
}
