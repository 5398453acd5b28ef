package esbulk_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	esbulk "github.com/libesbulk/libesbulk/go"
)

// sigv4Proxy starts tests/faultproxy.py in front of the test cluster on
// port, checking every request's AWS SigV4 signature with botocore (Debian's
// python3-botocore, for /usr/bin/python3), as Amazon OpenSearch Service
// does. It is stopped when the test ends.
func sigv4Proxy(t *testing.T, port int, spec string) string {
	t.Helper()
	return authProxy(t, port, "--require-sigv4", spec)
}

// authProxy starts tests/faultproxy.py in front of the test cluster on
// port with one of its checks of credentials (flag, value).
func authProxy(t *testing.T, port int, flag, spec string) string {
	t.Helper()
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "pid")
	cmd := exec.Command("/usr/bin/python3", filepath.Join("..", "tests", "faultproxy.py"),
		"--listen", strconv.Itoa(port), "--upstream", clusterURL(), "--pidfile", pidfile,
		"--log", filepath.Join(dir, "log"), "--max-seconds", "120", flag, spec)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	for i := 0; ; i++ {
		if b, err := os.ReadFile(pidfile); err == nil && len(b) > 0 {
			break
		}
		select {
		case <-done:
			t.Fatalf("the checking proxy did not start: %s", out.String())
		default:
		}
		if i > 100 {
			t.Fatal("the checking proxy did not start on port " + strconv.Itoa(port))
		}
		time.Sleep(100 * time.Millisecond)
	}
	return "http://127.0.0.1:" + strconv.Itoa(port)
}

// TestAWSSigned: AWSRegion and AWSCredentials sign every request; the
// credentials are asked for again every AWSRefresh and the requests that
// start after they changed carry the new ones (expired ones are replaced
// without a new indexer). Misconfigurations are NewBulkIndexer's errors.
func TestAWSSigned(t *testing.T) {
	good := func(ctx context.Context) (string, string, string, error) {
		return "AKIDGOTEST", "go-s3cr3t", "go-tok/en=", nil
	}
	for _, tc := range []struct {
		cfg  esbulk.BulkIndexerConfig
		says string
	}{
		{esbulk.BulkIndexerConfig{AWSRegion: "eu-west-1"}, "AWSRegion and AWSCredentials go together"},
		{esbulk.BulkIndexerConfig{AWSCredentials: good}, "AWSRegion and AWSCredentials go together"},
		{esbulk.BulkIndexerConfig{AWSRegion: "eu-west-1", AWSCredentials: func(context.Context) (string, string, string, error) {
			return "", "", "", errors.New("no EC2 IMDS role found")
		}}, "AWSCredentials: no EC2 IMDS role found"},
		{esbulk.BulkIndexerConfig{AWSRegion: "eu west", AWSCredentials: good}, "AWSRegion"},
		{esbulk.BulkIndexerConfig{AWSRegion: "eu-west-1", AWSCredentials: good,
			Username: "u", Password: "p"}, "set only one of"},
	} {
		refused(t, tc.cfg, tc.says)
	}

	url := sigv4Proxy(t, 19278, "AKIDGOTEST:go-s3cr3t:eu-west-1:es:go-tok/en=")
	index := uniqueIndex("go-esbulk-aws")
	freshIndex(t, index, "")
	var calls atomic.Int32
	bi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{
		Addresses: []string{url}, Index: index, AWSRegion: "eu-west-1",
		AWSCredentials: func(ctx context.Context) (string, string, string, error) {
			if calls.Add(1) == 1 { // what NewBulkIndexer gets: already expired
				return "AKIDGOTEST", "expired", "old-token", nil
			}
			return good(ctx)
		},
		AWSRefresh: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rotationRun(t, bi, index, &calls, 3, 403, "AWSCredentials")
}

// refused: NewBulkIndexer(cfg), cfg pointed at the test cluster, returns
// an *Error whose reason says says.
func refused(t *testing.T, cfg esbulk.BulkIndexerConfig, says string) {
	t.Helper()
	cfg.Addresses = []string{clusterURL()}
	bi, err := esbulk.NewBulkIndexer(cfg)
	var e *esbulk.Error
	if err == nil {
		_ = closeWithin(t, bi, time.Second)
		t.Errorf("%q: accepted", says)
	} else if !errors.As(err, &e) || !strings.Contains(e.Reason, says) {
		t.Errorf("%v, want an *Error saying %q", err, says)
	}
}

// rotationRun: bi's credentials function (which counts its calls in calls)
// first gave credentials the proxy refuses: 10 items fail with status
// refused; once it has been called `after` times (every update before the
// last call done), 10 more items must all be indexed; after Close, the
// function is not called again.
func rotationRun(t *testing.T, bi esbulk.BulkIndexer, index string, calls *atomic.Int32,
	after int32, refused int, field string) {
	t.Helper()
	var mu sync.Mutex
	var failed []string
	add := func(from int) {
		for i := from; i < from+10; i++ {
			if err := bi.Add(context.Background(), esbulk.BulkIndexerItem{Action: "index",
				DocumentID: strconv.Itoa(i), Body: strings.NewReader(`{"n":1}`),
				OnFailure: func(_ context.Context, _ esbulk.BulkIndexerItem, r esbulk.BulkIndexerResponseItem, err error) {
					mu.Lock()
					failed = append(failed, strconv.Itoa(r.Status)+" "+r.Error.Reason)
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
	if len(failed) != 10 || !strings.HasPrefix(failed[0], strconv.Itoa(refused)+" ") {
		t.Errorf("with the first credentials: %d failed (%v), want 10 with %d", len(failed), failed, refused)
	}
	failed = nil
	mu.Unlock()
	for deadline := time.Now().Add(10 * time.Second); calls.Load() < after; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s called %d times in 10 s, refreshed every 50 ms", field, calls.Load())
		}
	}
	add(10)
	if err := closeWithin(t, bi, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(failed) != 0 {
		t.Errorf("with the refreshed credentials: %d failed: %v", len(failed), failed)
	}
	if st := bi.Stats(); st.NumIndexed != 10 || count(t, index) != 10 {
		t.Errorf("indexed %d, index count %d, want 10", st.NumIndexed, count(t, index))
	}
	n := calls.Load()
	time.Sleep(200 * time.Millisecond)
	if calls.Load() != n {
		t.Errorf("%s still called after Close (%d, then %d)", field, n, calls.Load())
	}
}
