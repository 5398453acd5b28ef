package esbulk

import "testing"

// The caused_by that libesbulk appends to a server's reason comes off its
// end exactly, whatever the reason quotes; a reason that does not end with
// it stays whole.
func TestCutCause(t *testing.T) {
	for _, tc := range []struct{ in, ctype, creason, want string }{
		{"failed to parse field [n] (caused by number_format_exception: For input string: \"x\")",
			"number_format_exception", "For input string: \"x\"", "failed to parse field [n]"},
		{" (caused by error: a (b): c)", "", "a (b): c", ""},
		// the value the server quotes holds the same words, and its cause
		// has no exception type
		{"Preview of field's value: 'x (caused by a: b)' (caused by my_error: y (caused by z_exception: w))",
			"my_error", "y (caused by z_exception: w)", "Preview of field's value: 'x (caused by a: b)'"},
		// the library's own words after the server's: left whole
		{"top (caused by c_exception: deep); the document has no _id", "c_exception", "deep",
			"top (caused by c_exception: deep); the document has no _id"},
	} {
		if got := cutCause(tc.in, tc.ctype, tc.creason); got != tc.want {
			t.Errorf("cutCause(%q, %q, %q) = %q; want %q", tc.in, tc.ctype, tc.creason, got, tc.want)
		}
	}
}

// Every failure with a cause has it in Error.Cause and off the end of
// Error.Reason, not only one the server refused; the *Error OnFailure gets
// keeps the whole reason, and a refusal gets none.
func TestFailureCause(t *testing.T) {
	const server = "failed to parse field [n] (caused by number_format_exception: For input string: \"x\")"
	cause := &[2]string{"number_format_exception", "For input string: \"x\""}
	for _, tc := range []struct {
		name       string
		code       ErrCode
		outcome    Outcome
		reason     string
		cause      *[2]string
		wantReason string
		wantErr    bool
	}{
		{"refused", ErrCodeItem, OutcomeFailed, server, cause, "failed to parse field [n]", false},
		{"retries ran out", ErrCodeRetriesExhausted, OutcomeFailed,
			"retries exhausted after 3 attempts: " + server, cause,
			"retries exhausted after 3 attempts: failed to parse field [n]", true},
		{"closed unsent", ErrCodeClosed, OutcomeFailed,
			"not delivered: closed; its last attempt: " + server, cause,
			"not delivered: closed; its last attempt: failed to parse field [n]", true},
		{"transport, no cause", ErrCodeTransport, OutcomePossibly, "connection reset", nil,
			"connection reset", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := &BulkIndexerResponseItem{Outcome: tc.outcome}
			e := failure(resp, tc.code, "mapper_parsing_exception", tc.reason, tc.cause)
			if resp.Error.Reason != tc.wantReason {
				t.Errorf("Error.Reason = %q; want %q", resp.Error.Reason, tc.wantReason)
			}
			if tc.cause != nil && (resp.Error.Cause.Type != tc.cause[0] || resp.Error.Cause.Reason != tc.cause[1]) {
				t.Errorf("Error.Cause = %+v; want %v", resp.Error.Cause, *tc.cause)
			}
			if tc.cause == nil && (resp.Error.Cause.Type != "" || resp.Error.Cause.Reason != "") {
				t.Errorf("Error.Cause = %+v; want none", resp.Error.Cause)
			}
			if (e != nil) != tc.wantErr {
				t.Fatalf("err = %v; want one: %v", e, tc.wantErr)
			}
			if e != nil && (e.Code != tc.code || e.Reason != tc.reason ||
				e.Possibly != (tc.outcome == OutcomePossibly)) {
				t.Errorf("err = %+v; want code %d, the whole reason, possibly %v", e, tc.code,
					tc.outcome == OutcomePossibly)
			}
		})
	}
}
