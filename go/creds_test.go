package esbulk_test

import (
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	esbulk "github.com/libesbulk/libesbulk/go"
)

// TestCredentialsRotated: Credentials gives the password (or API key), is
// asked again every CredentialsRefresh, and the requests that start after
// it changed carry the new one (a password rotated by a secrets manager is
// taken by a live indexer), through a proxy that takes only the current
// password. Misconfigurations are NewBulkIndexer's errors.
func TestCredentialsRotated(t *testing.T) {
	pass := func(u, p string) func(context.Context) (string, string, string, error) {
		return func(context.Context) (string, string, string, error) { return u, p, "", nil }
	}
	for _, tc := range []struct {
		cfg  esbulk.BulkIndexerConfig
		says string
	}{
		{esbulk.BulkIndexerConfig{Credentials: pass("u", "p"), Username: "u"}, "set it or Username"},
		{esbulk.BulkIndexerConfig{Credentials: pass("u", "p"), APIKey: "k"}, "set it or Username"},
		{esbulk.BulkIndexerConfig{Credentials: pass("u", "p"), Config: map[string]string{"auth.bearer": "t"}},
			`Credentials and Config["auth.bearer"] are both set`},
		{esbulk.BulkIndexerConfig{Credentials: pass("", "")}, "give a username and password, or an API key"},
		{esbulk.BulkIndexerConfig{Credentials: func(context.Context) (string, string, string, error) {
			return "u", "p", "k", nil
		}}, "give a username and password, or an API key"},
		{esbulk.BulkIndexerConfig{Credentials: func(context.Context) (string, string, string, error) {
			return "", "", "", errors.New("vault sealed")
		}}, "Credentials: vault sealed"},
		{esbulk.BulkIndexerConfig{Credentials: func(context.Context) (string, string, string, error) {
			return "", "", "a\nb", nil
		}}, "Credentials: auth.api_key"},
	} {
		tc.cfg.Addresses = []string{clusterURL()}
		bi, err := esbulk.NewBulkIndexer(tc.cfg)
		var e *esbulk.Error
		if err == nil {
			_ = closeWithin(t, bi, time.Second)
			t.Errorf("%q: accepted", tc.says)
		} else if !errors.As(err, &e) || !strings.Contains(e.Reason, tc.says) {
			t.Errorf("%v, want an *Error saying %q", err, tc.says)
		}
	}

	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("rotor:n3w-pass"))
	url := authProxy(t, 19295, "--require-auth", basic)
	index := uniqueIndex("go-esbulk-creds")
	freshIndex(t, index, "")
	var calls atomic.Int32
	var kindErrs atomic.Int32
	bi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{
		Addresses: []string{url}, Index: index,
		// the cluster behind the proxy is not reached by node discovery
		Config: map[string]string{"topology.discovery": "false"},
		Credentials: func(ctx context.Context) (string, string, string, error) {
			switch n := calls.Add(1); {
			case n == 1: // what NewBulkIndexer gets: the password before the rotation
				return "rotor", "old-pass", "", nil
			case n == 2: // an API key instead: refused, the password stays
				return "", "", "a2V5", nil
			default:
				return "rotor", "n3w-pass", "", nil
			}
		},
		CredentialsRefresh: 50 * time.Millisecond,
		OnError: func(_ context.Context, err error) {
			if strings.Contains(err.Error(), "cannot change on a live handle") {
				kindErrs.Add(1)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var failed []string
	add := func(from int) {
		for i := from; i < from+10; i++ {
			if err := bi.Add(context.Background(), esbulk.BulkIndexerItem{Action: "index",
				DocumentID: strconv.Itoa(i), Body: strings.NewReader(`{"n":1}`),
				OnFailure: func(_ context.Context, _ esbulk.BulkIndexerItem, r esbulk.BulkIndexerResponseItem, err error) {
					mu.Lock()
					failed = append(failed, strconv.Itoa(r.Status))
					mu.Unlock()
				}}); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := bi.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	add(0)
	mu.Lock()
	if len(failed) != 10 || failed[0] != "401" {
		t.Errorf("with the old password: %d failed (%v), want 10 with 401", len(failed), failed)
	}
	failed = nil
	mu.Unlock()
	// the fourth call begins once the third one's update is done
	for deadline := time.Now().Add(10 * time.Second); calls.Load() < 4; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("Credentials called %d times in 10 s with CredentialsRefresh 50 ms", calls.Load())
		}
	}
	if kindErrs.Load() != 1 {
		t.Errorf("an API key in place of a password: %d errors to OnError, want 1", kindErrs.Load())
	}
	add(10)
	if err := closeWithin(t, bi, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(failed) != 0 {
		t.Errorf("with the new password: %d failed: %v", len(failed), failed)
	}
	if st := bi.Stats(); st.NumIndexed != 10 || count(t, index) != 10 {
		t.Errorf("indexed %d, index count %d, want 10", st.NumIndexed, count(t, index))
	}
	n := calls.Load()
	time.Sleep(200 * time.Millisecond)
	if calls.Load() != n {
		t.Errorf("Credentials called after Close (%d, then %d)", n, calls.Load())
	}
}
