package esbulk_test

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
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
		refused(t, tc.cfg, tc.says)
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
	// the fourth call begins once the third one's update is done
	rotationRun(t, bi, index, &calls, 4, 401, "Credentials")
	if kindErrs.Load() != 1 {
		t.Errorf("an API key in place of a password: %d errors to OnError, want 1", kindErrs.Load())
	}
}
