package esbulk

import (
	"regexp"
	"testing"
)

func TestLibraryVersion(t *testing.T) {
	v := LibraryVersion()
	if !regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+`).MatchString(v) {
		t.Fatalf("LibraryVersion() = %q", v)
	}
	if libraryVersionNumber() == 0 {
		t.Fatal("esbulk_version() is 0")
	}
	// the module and the library share a major version: an ABI break is a
	// new major of both
	if major := func(s string) string { return regexp.MustCompile(`^[0-9]+`).FindString(s) }; major(v) != major(Version) {
		t.Fatalf("LibraryVersion() = %q, the module's Version = %q: different major versions", v, Version)
	}
}

// The cost of one cgo crossing and nothing else: what each Add pays on top
// of the library's own esbulk_add_opts (BenchmarkAdd is the whole Add).
// go test -run X -bench CgoCall
func BenchmarkCgoCall(b *testing.B) {
	var sum uint32
	for i := 0; i < b.N; i++ {
		sum += libraryVersionNumber()
	}
	if sum == 42 {
		b.Log(sum)
	}
}
