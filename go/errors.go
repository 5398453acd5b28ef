package esbulk

import (
	"errors"
	"strconv"
)

// ErrCode is a libesbulk error code (esbulk_err_t).
type ErrCode int

// The libesbulk error codes an item's *Error or NewBulkIndexer may carry.
const (
	ErrCodeOK               = ErrCode(0)
	ErrCodeInvalidArg       = ErrCode(-1)
	ErrCodeNoMem            = ErrCode(-2)
	ErrCodeInvalidUTF8      = ErrCode(-3)
	ErrCodeUnknownKey       = ErrCode(-4)
	ErrCodeBadValue         = ErrCode(-5)
	ErrCodeTransport        = ErrCode(-6)
	ErrCodeHTTP             = ErrCode(-7)
	ErrCodeAuth             = ErrCode(-8)
	ErrCodeBadResponse      = ErrCode(-9)
	ErrCodeUnknownIndex     = ErrCode(-10)
	ErrCodeNotRoutable      = ErrCode(-11)
	ErrCodeRoutingConflict  = ErrCode(-12)
	ErrCodeTooLarge         = ErrCode(-13)
	ErrCodeQueueFull        = ErrCode(-14)
	ErrCodeTimedOut         = ErrCode(-15)
	ErrCodeClosed           = ErrCode(-16)
	ErrCodeDocTooLarge      = ErrCode(-17)
	ErrCodeInvalidJSON      = ErrCode(-18)
	ErrCodeItem             = ErrCode(-19)
	ErrCodeRetriesExhausted = ErrCode(-20)
	ErrCodeDeliveryTimeout  = ErrCode(-21)
	ErrCodeInCallback       = ErrCode(-22)
	ErrCodeResultsHeld      = ErrCode(-23)
)

// String is the library's description of the code (esbulk_err2str).
func (c ErrCode) String() string { return err2str(c) }

// Error is a failure reported by libesbulk: of a call (Add,
// NewBulkIndexer), or of an item, passed to its OnFailure.
type Error struct {
	Code ErrCode
	// Reason says why, in the library's or the server's words.
	Reason string
	// Possibly is true when the operation may have been applied (the
	// request broke after it was sent).
	Possibly bool
}

// Error returns the reason, or the code's description when there is none.
func (e *Error) Error() string {
	if e.Reason == "" {
		return "esbulk: " + e.Code.String()
	}
	return "esbulk: " + e.Reason
}

// Is reports whether target is an *Error without a Reason and with the
// same Code: errors.Is(err, ErrClosed) matches every ErrCodeClosed error.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Reason == "" && t.Code == e.Code
}

// ErrClosed is returned by Add after Close (errors.Is also matches the
// ErrCodeClosed failures of items that Close did not deliver).
var ErrClosed error = &Error{Code: ErrCodeClosed}

// ErrInCallback matches (errors.Is) the error of Flush or Close called from
// code the result goroutine runs (an item callback, OnError, OnLog,
// OnFlushStart, OnFlushEnd): they would wait for that code itself.
var ErrInCallback error = &Error{Code: ErrCodeInCallback}

// ErrQueueFull matches (errors.Is) the error of Add called from such code
// when the buffer is full: there it never waits, since only the result
// goroutine makes room (as libesbulk's esbulk_add in a result callback).
var ErrQueueFull error = &Error{Code: ErrCodeQueueFull}

// BatchError is what OnError receives: how many items of one batch of
// results failed without the server refusing them, and the first error.
type BatchError struct {
	Items int
	First error
}

// Error names the count and the first error.
func (e *BatchError) Error() string {
	return "esbulk: " + strconv.Itoa(e.Items) + " items failed: " + e.First.Error()
}

// Unwrap returns the first error.
func (e *BatchError) Unwrap() error { return e.First }

var errNoBody = errors.New("esbulk: the item has no Body")
