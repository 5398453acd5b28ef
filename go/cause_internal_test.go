package esbulk

import "testing"

// The caused_by that libesbulk appends to a server's reason goes back into
// Cause; a reason without it (or cut by the library's cap) stays whole.
func TestSplitCause(t *testing.T) {
	for _, tc := range []struct{ in, top, ctype, creason string }{
		{"failed to parse field [n] (caused by number_format_exception: For input string: \"x\")",
			"failed to parse field [n]", "number_format_exception", "For input string: \"x\""},
		{" (caused by error: a (b): c)", "", "error", "a (b): c"},
		{"no cause here", "no cause here", "", ""},
		// the value the server quotes holds the mark: the cause is the
		// one whose type is an exception's
		{"failed to parse field [n] of type [integer] in document with id '1'. Preview of field's value: 'x (caused by a: b)' (caused by number_format_exception: For input string: \"x (caused by a: b)\")",
			"failed to parse field [n] of type [integer] in document with id '1'. Preview of field's value: 'x (caused by a: b)'",
			"number_format_exception", "For input string: \"x (caused by a: b)\""},
		{"cut (caused by json_parse_exception: Unexpected charac", "cut (caused by json_parse_exception: Unexpected charac", "", ""},
	} {
		top, ct, cr, _ := splitCause(tc.in)
		if top != tc.top || ct != tc.ctype || cr != tc.creason {
			t.Errorf("splitCause(%q) = %q, %q, %q; want %q, %q, %q", tc.in, top, ct, cr, tc.top, tc.ctype, tc.creason)
		}
	}
}
