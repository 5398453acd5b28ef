package esbulk

import (
	"bytes"
	"context"
	"runtime"
	"strconv"
)

// The result goroutine is the only one that makes room in the buffer and
// the one that serves Flush and Close: code it runs (item callbacks,
// OnError, OnLog, OnFlushStart, OnFlushEnd) must never wait for it. As
// libesbulk's esbulk_add does from a result callback, Add then never waits
// (a full buffer is ErrCodeQueueFull at once), and Flush and Close return
// ErrCodeInCallback at once.
//
// That code is recognised by its context (the callbacks' ctx carries a
// marker of the indexer, whatever goroutine it is then passed to) or else
// by the goroutine (a callback that calls Add with a context of its own),
// and only while the result goroutine is running such code: a callback's
// marker holds only while that callback runs (a goroutine it started and
// did not wait for may use its ctx later, and then waits as any other).

// cbKey is the key of the marker: ctx.Value(cbKey{}) is a cbMark.
type cbKey struct{}

// cbMark names the indexer and the run of user code (userGen) that a
// callback's ctx was made for.
type cbMark struct {
	b   *indexer
	gen uint64
}

// cbContext is the Add's context of an item, as its callbacks get it: its
// values, deadline and cancellation, plus the marker.
type cbContext struct {
	context.Context
	mark cbMark
}

func (c cbContext) Value(key interface{}) interface{} {
	if key == (cbKey{}) {
		return c.mark
	}
	return c.Context.Value(key)
}

// callbackCtx is the context to pass to code run by the result goroutine
// for an item added with ctx (nil: none), made just before that code runs:
// it is recognised until the result goroutine makes the next one.
func (b *indexer) callbackCtx(ctx context.Context) context.Context {
	if ctx == nil {
		ctx = context.Background()
	}
	return cbContext{ctx, cbMark{b, b.userGen.Add(1)}}
}

// inResultGoroutine says whether the caller is code the result goroutine
// runs (so that waiting would wait for itself). Cheap while the result
// goroutine runs no user code; otherwise it may read the goroutine's id,
// a few microseconds (only on a path that would block).
func (b *indexer) inResultGoroutine(ctx context.Context) bool {
	if !b.inUser.Load() {
		return false
	}
	if ctx != nil {
		if m, _ := ctx.Value(cbKey{}).(cbMark); m.b == b && m.gen == b.userGen.Load() {
			return true
		}
	}
	id := goid()
	return id != 0 && id == b.runID.Load()
}

// userCode runs f as the result goroutine's user code.
func (b *indexer) userCode(f func()) {
	b.userGen.Add(1) // the last callback's ctx marks it no more
	b.inUser.Store(true)
	defer b.inUser.Store(false)
	f()
}

// goid is the id of the calling goroutine, from the first line of its
// stack trace ("goroutine 18 [running]:"); 0 if that cannot be read. Go
// has no API for it; it serves only to refuse a call that would deadlock.
func goid() uint64 {
	var buf [64]byte
	s := buf[:runtime.Stack(buf[:], false)]
	s = bytes.TrimPrefix(s, []byte("goroutine "))
	if i := bytes.IndexByte(s, ' '); i > 0 {
		if id, err := strconv.ParseUint(string(s[:i]), 10, 64); err == nil {
			return id
		}
	}
	return 0
}
