package esbulk

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The TLS fields become libesbulk's tls.* keys; files that cannot be read
// are refused by name before the library sees them.
func TestTLSSettings(t *testing.T) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	crt := filepath.Join(dir, "client.pem")
	key := filepath.Join(dir, "client.key")
	for _, f := range []string{ca, crt, key} {
		if err := os.WriteFile(f, []byte("-"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	kv, err := settings(&BulkIndexerConfig{Addresses: []string{"https://127.0.0.1:1"},
		CACertFile: ca, CAPath: dir, CertFile: crt, KeyFile: key, KeyPassword: "pw",
		InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range kv {
		got[p[0]] = p[1]
	}
	want := map[string]string{"tls.ca.file": ca, "tls.ca.path": dir, "tls.cert.file": crt,
		"tls.key.file": key, "tls.key.password": "pw", "tls.insecure": "true"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	kv, err = settings(&BulkIndexerConfig{Addresses: []string{"https://127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range kv {
		if strings.HasPrefix(p[0], "tls.") {
			t.Errorf("no TLS field set, yet %s = %q", p[0], p[1])
		}
	}

	for _, c := range []struct {
		cfg   BulkIndexerConfig
		field string
	}{
		{BulkIndexerConfig{CACertFile: filepath.Join(dir, "missing.pem")}, "CACertFile"},
		{BulkIndexerConfig{CACertFile: dir}, "CACertFile"},
		{BulkIndexerConfig{CAPath: ca}, "CAPath"},
		{BulkIndexerConfig{CertFile: filepath.Join(dir, "nope")}, "CertFile"},
		{BulkIndexerConfig{CertFile: crt, KeyFile: filepath.Join(dir, "nope")}, "KeyFile"},
	} {
		c.cfg.Addresses = []string{"https://127.0.0.1:1"}
		_, err := NewBulkIndexer(c.cfg)
		e, ok := err.(*Error)
		if !ok || e.Code != ErrCodeInvalidArg || !strings.Contains(e.Reason, "BulkIndexerConfig."+c.field) {
			t.Errorf("%s: NewBulkIndexer error %v, want an invalid-argument *Error naming it", c.field, err)
		}
	}
}
