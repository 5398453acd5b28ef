package esbulk_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The README's example is a whole program that builds against this module
// (go vet: it compiles and type-checks it, without running it).
func TestReadmeExample(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(readme)
	i := strings.Index(s, "```go\n")
	if i < 0 {
		t.Fatal("README.md has no ```go block")
	}
	s = s[i+len("```go\n"):]
	j := strings.Index(s, "```")
	if j < 0 {
		t.Fatal("README.md: the ```go block does not end")
	}
	mod, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod := "module readme\n\ngo 1.19\n\nrequire github.com/libesbulk/libesbulk/go v0.0.0\n\n" +
		"replace github.com/libesbulk/libesbulk/go => " + mod + "\n"
	for name, text := range map[string]string{"go.mod": gomod, "main.go": s[:j]} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go") // the go running the tests
	if _, err := os.Stat(goCmd); err != nil {
		goCmd = "go"
	}
	cmd := exec.Command(goCmd, "vet", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go vet of the README example: %v\n%s", err, out)
	}
}
