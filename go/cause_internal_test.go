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
