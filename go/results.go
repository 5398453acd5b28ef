package esbulk

/*
#include <esbulk.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// One result, read with one crossing per batch rather than one per field.
typedef struct esbgo_res {
    uintptr_t opaque;
    int32_t outcome, err, status, attempts;
    int64_t seq_no, primary_term, version;
    const char *index, *id, *error_type, *error_reason, *cause_type, *cause_reason, *result;
    size_t index_len, id_len, result_len;
} esbgo_res;

static void esbgo_read(const esbulk_result_t *const *rs, size_t n, esbgo_res *out)
{
    for (size_t i = 0; i < n; i++) {
        const esbulk_result_t *r = rs[i];
        out[i].opaque = (uintptr_t)esbulk_result_opaque(r);
        out[i].outcome = (int32_t)esbulk_result_outcome(r);
        out[i].err = (int32_t)esbulk_result_err(r);
        out[i].status = esbulk_result_status(r);
        out[i].attempts = esbulk_result_attempts(r);
        out[i].seq_no = esbulk_result_seq_no(r);
        out[i].primary_term = esbulk_result_primary_term(r);
        out[i].version = esbulk_result_version(r);
        out[i].index = esbulk_result_index(r);
        out[i].id = esbulk_result_id(r);
        out[i].error_type = esbulk_result_error_type(r);
        out[i].error_reason = esbulk_result_error_reason(r);
        out[i].cause_type = esbulk_result_error_cause_type(r);
        out[i].cause_reason = esbulk_result_error_cause_reason(r);
        out[i].result = esbulk_result_result(r);
        out[i].index_len = out[i].index != NULL ? strlen(out[i].index) : 0;
        out[i].id_len = out[i].id != NULL ? strlen(out[i].id) : 0;
        out[i].result_len = out[i].result != NULL ? strlen(out[i].result) : 0;
    }
}
*/
import "C"

import (
	"context"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

// run is the result goroutine: the only caller of esbulk_poll_results,
// esbulk_results_release, esbulk_flush and esbulk_close, and the only
// goroutine that runs item callbacks.
func (b *indexer) run() {
	defer close(b.finished)
	b.runID.Store(goid())
	out := (**C.esbulk_result_t)(C.malloc(C.size_t(pollBatch) * C.size_t(unsafe.Sizeof(uintptr(0)))))
	res := (*C.esbgo_res)(C.malloc(C.size_t(pollBatch) * C.size_t(unsafe.Sizeof(C.esbgo_res{}))))
	defer C.free(unsafe.Pointer(out))
	defer C.free(unsafe.Pointer(res))
	logFac := (*C.char)(C.malloc(logFacilityBytes))
	logMsg := (*C.char)(C.malloc(logMessageBytes))
	defer C.free(unsafe.Pointer(logFac))
	defer C.free(unsafe.Pointer(logMsg))
	d := drainer{b: b, out: out, res: res, logFac: logFac, logMsg: logMsg}
	for {
		select {
		case c := <-b.cmds:
			if c.close {
				c.done <- d.close(c.ctx)
				return
			}
			c.done <- d.flush(c.ctx, false)
		default:
			d.pull(pollWait)
		}
	}
}

type drainer struct {
	b      *indexer
	out    **C.esbulk_result_t
	res    *C.esbgo_res
	logFac *C.char // esbulk_log_take's buffers
	logMsg *C.char
	// mark is the pending.acc up to which a Flush or Close waits for the
	// callbacks (0: none runs), left how many of those items have not
	// had theirs
	mark uint64
	left int
}

const (
	logFacilityBytes = 32
	logMessageBytes  = 1024
)

// takeLog hands the library's log lines kept since the last pull to
// OnLog and DebugLogger, on this goroutine (the library never calls into
// Go). Without either they stay in the handle, which keeps the last 64.
func (d *drainer) takeLog() {
	onLog, dl := d.b.cfg.OnLog, d.b.cfg.DebugLogger
	if onLog == nil && dl == nil {
		return
	}
	var level C.int32_t
	for C.esbulk_log_take(d.b.eb, &level, d.logFac, logFacilityBytes, d.logMsg, logMessageBytes) == 1 {
		lv, fac, msg := int(level), C.GoString(d.logFac), C.GoString(d.logMsg)
		d.b.userCode(func() {
			if dl != nil {
				dl.Printf("esbulk %s %s: %s\n", levelName(lv), fac, msg)
			}
			if onLog != nil {
				onLog(lv, fac, msg)
			}
		})
	}
}

// levelName is the syslog name of a log level ("warning").
func levelName(level int) string {
	switch level {
	case LogErr:
		return "err"
	case LogWarning:
		return "warning"
	case LogNotice:
		return "notice"
	case LogInfo:
		return "info"
	case LogDebug:
		return "debug"
	}
	return "level" + strconv.Itoa(level)
}

// pull takes one batch (waiting up to wait for the first result), releases
// it and runs its callbacks. It returns how many results it took.
func (d *drainer) pull(wait time.Duration) int {
	b := d.b
	n := int(C.esbulk_poll_results(b.eb, d.out, pollBatch, C.int32_t(wait.Milliseconds())))
	d.takeLog()
	if n <= 0 {
		return 0
	}
	C.esbgo_read(d.out, C.size_t(n), d.res)
	rs := unsafe.Slice(d.res, n)
	type done struct {
		p    pending
		ok   bool // p was found
		resp BulkIndexerResponseItem
		err  error
	}
	batch := make([]done, n)
	b.itemsMu.Lock()
	for i := range rs {
		p, ok := b.items.take(uint64(rs[i].opaque))
		batch[i].p, batch[i].ok = p, ok
		if ok && p.acc != 0 && p.acc <= d.mark {
			d.left-- // one of the items a Flush or Close waits for
		}
	}
	b.itemsMu.Unlock()
	for i := range rs {
		r := &rs[i]
		dn := &batch[i]
		resp := &dn.resp
		// the item's own strings when the server answered with them (the
		// usual), so that a result allocates no string
		index := dn.p.item.Index
		if index == "" {
			index = b.cfg.Index
		}
		resp.Index = goStringAs(r.index, r.index_len, index)
		resp.DocumentID = goStringAs(r.id, r.id_len, dn.p.item.DocumentID)
		resp.Result = resultString(r.result, r.result_len)
		resp.Status = int(r.status)
		resp.Version = int64(r.version)
		resp.SeqNo = int64(r.seq_no)
		resp.PrimTerm = int64(r.primary_term)
		resp.Outcome = Outcome(r.outcome)
		resp.Attempts = int(r.attempts)
		if resp.Outcome != OutcomeIndexed {
			var cause *[2]string
			if r.cause_reason != nil {
				cause = &[2]string{goString(r.cause_type), goString(r.cause_reason)}
			}
			// a nil *Error must stay a nil error
			if e := failure(resp, ErrCode(r.err), goString(r.error_type),
				goString(r.error_reason), cause); e != nil {
				dn.err = e
			}
		}
	}
	C.esbulk_results_release(b.eb)
	b.signalRoom()

	b.inUser.Store(true)
	defer b.inUser.Store(false)
	var nerr int
	var first error
	for i := range batch {
		dn := &batch[i]
		if !dn.ok {
			continue // cannot happen: every opaque is the id of an item held
		}
		it := dn.p.item
		ctx := b.callbackCtx(dn.p.ctx)
		// As esutil and opensearchutil do, a delete of a missing document
		// (status 404, result not_found) goes to OnFailure with a nil err,
		// although libesbulk counts it done.
		if dn.resp.Outcome == OutcomeIndexed && dn.resp.Status < 300 {
			switch dn.p.action {
			case C.ESBULK_OP_INDEX:
				b.numIndexed.Add(1)
			case C.ESBULK_OP_CREATE:
				b.numCreated.Add(1)
			case C.ESBULK_OP_UPDATE:
				b.numUpdated.Add(1)
			case C.ESBULK_OP_DELETE:
				b.numDeleted.Add(1)
			}
			b.numFlushed.Add(1)
			if it.OnSuccess != nil {
				it.OnSuccess(ctx, it, dn.resp)
			}
			continue
		}
		if dn.resp.Outcome == OutcomePossibly {
			b.numPossibly.Add(1)
		}
		if dn.err != nil {
			nerr++
			if first == nil {
				first = dn.err
			}
		}
		b.numFailed.Add(1)
		if it.OnFailure != nil {
			it.OnFailure(ctx, it, dn.resp, dn.err)
		}
	}
	if nerr > 0 && b.cfg.OnError != nil {
		b.cfg.OnError(b.callbackCtx(nil), &BatchError{Items: nerr, First: first})
	}
	return n
}

// failure fills resp.Error for an item that failed with code, the error's
// type and reason as libesbulk gives them, and the server's caused_by
// (nil: none), and returns the *Error its OnFailure gets: nil when the
// server refused the item (ErrCodeItem), as esutil passes. The cause goes
// to Cause, as esutil has it, and off the end of Reason, where libesbulk
// appends it; the *Error keeps the whole reason, so that it says
// everything, for a retry that ran out as for a close that left the item
// unsent.
func failure(resp *BulkIndexerResponseItem, code ErrCode, etype, reason string,
	cause *[2]string) *Error {
	resp.Error.Type = etype
	resp.Error.Reason = reason
	if cause != nil {
		resp.Error.Reason = cutCause(reason, cause[0], cause[1])
		resp.Error.Cause.Type, resp.Error.Cause.Reason = cause[0], cause[1]
	}
	if code == ErrCodeItem {
		return nil
	}
	return &Error{Code: code, Reason: reason, Possibly: resp.Outcome == OutcomePossibly}
}

// cutCause is reason without the " (caused by <type>: <reason>)" that
// libesbulk ends it with for a cause of ctype (empty: "error") and creason
// (esbulk_result_error_reason(3)); reason itself when it does not end so.
func cutCause(reason, ctype, creason string) string {
	if ctype == "" {
		ctype = "error"
	}
	return strings.TrimSuffix(reason, " (caused by "+ctype+": "+creason+")")
}

// goStringAs is s (n bytes) as a Go string: same itself when the bytes are
// equal, without an allocation.
func goStringAs(s *C.char, n C.size_t, same string) string {
	if s == nil {
		return ""
	}
	if int(n) == len(same) && string(unsafe.Slice((*byte)(unsafe.Pointer(s)), int(n))) == same {
		return same
	}
	return C.GoStringN(s, C.int(n))
}

// the result strings the server writes, shared by every response item
var resultStrings = [...]string{"created", "updated", "deleted", "noop", "not_found"}

// resultString is an item's "result" (n bytes): one of resultStrings
// without an allocation, else a copy.
func resultString(s *C.char, n C.size_t) string {
	if s == nil {
		return ""
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(s)), int(n))
	for _, r := range resultStrings {
		if string(b) == r {
			return r
		}
	}
	return C.GoStringN(s, C.int(n))
}

func goString(s *C.char) string {
	if s == nil {
		return ""
	}
	return C.GoString(s)
}

// wait is how long one pull may wait for a result, so that a command
// sees its context end within about pollWait (a cancel as a deadline).
func wait(ctx context.Context) (time.Duration, bool) {
	d := pollWait
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		if left <= 0 {
			return 0, false
		}
		if left < d {
			d = left
		}
	}
	return d, true
}

// flush sends what is buffered and serves results until every item
// accepted before (Add returned nil before Flush was called) has had its
// callback. The mark is taken once: items added meanwhile (by other
// goroutines, or re-queued by callbacks) are sent but not waited for. A
// Flush (not closing) gives way to a Close that began: it returns ErrClosed,
// and Close, waiting for this goroutine, delivers what is left by its own
// context.
func (d *drainer) flush(ctx context.Context, closing bool) error {
	b := d.b
	// what OnFlushStart returns goes to OnFlushEnd only: the wait is by
	// ctx, the Flush's or the Close's
	fctx := ctx
	if b.cfg.OnFlushStart != nil {
		b.userCode(func() { fctx = b.cfg.OnFlushStart(ctx) })
	}
	if b.cfg.OnFlushEnd != nil {
		defer b.userCode(func() { b.cfg.OnFlushEnd(fctx) })
	}
	b.itemsMu.Lock()
	d.mark = b.accs
	d.left = b.items.accepted(d.mark)
	b.itemsMu.Unlock()
	defer func() { d.mark, d.left = 0, 0 }()
	// "send now": the library sends every item buffered at once, as
	// request slots free, until each has its result, also after this
	// call (which does not wait) returned
	C.esbulk_flush(b.eb, 0)
	for d.left > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !closing && b.closed.Load() {
			return ErrClosed
		}
		w, ok := wait(ctx)
		if !ok {
			return context.DeadlineExceeded
		}
		d.pull(w)
	}
	return nil
}

// close flushes until ctx ends, closes the handle (what is left gets its
// ESBULK_ERR_CLOSED result), serves every result left and destroys the
// handle.
func (d *drainer) close(ctx context.Context) error {
	b := d.b
	// No Add is accepted any more (Close's barrier): flush waits for
	// every item accepted, until ctx ends.
	err := d.flush(ctx, true)
	rc := C.esbulk_close(b.eb, 0)
	for d.pull(0) > 0 {
	}
	if err == nil && rc != C.ESBULK_OK {
		// cannot happen: every item had its result before the close
		err = &Error{Code: ErrCode(rc), Reason: "close: items were left without their result"}
	}
	// Every item the library accepted has had its result by now. One still
	// in the map is being added by an Add that the closed handle refuses:
	// that Add returns ErrClosed and the item gets no callback.
	b.itemsMu.Lock()
	b.items.reset()
	b.itemsMu.Unlock()

	js := C.esbulk_stats_json(b.eb)
	b.mu.Lock()
	if js != nil {
		b.final = C.GoBytes(unsafe.Pointer(js), C.int(C.strlen(js)))
		C.esbulk_free(unsafe.Pointer(js))
	}
	C.esbulk_destroy(b.eb)
	b.eb = nil
	b.gone = true
	b.mu.Unlock()

	return err
}
