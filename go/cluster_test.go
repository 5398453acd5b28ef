package esbulk_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The test cluster (tests/cluster/ensure.sh starts it): ESBULK_TEST_URL, by
// default the OpenSearch one.
func clusterURL() string {
	if u := os.Getenv("ESBULK_TEST_URL"); u != "" {
		return u
	}
	return "http://127.0.0.1:19200"
}

var httpClient = &http.Client{Timeout: 60 * time.Second}

// call sends one request to the cluster and returns the status and body.
func call(t testing.TB, method, path, body string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, clusterURL()+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		ct := "application/json"
		if strings.HasSuffix(path, "_bulk") || strings.Contains(path, "_bulk?") {
			ct = "application/x-ndjson"
		}
		req.Header.Set("Content-Type", ct)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// freshIndex deletes index and creates it with settings and mappings.
func freshIndex(t testing.TB, index, mappings string) {
	t.Helper()
	call(t, "DELETE", "/"+index, "")
	body := `{"settings":{"number_of_shards":3,"number_of_replicas":0}`
	if mappings != "" {
		body += `,"mappings":` + mappings
	}
	body += "}"
	if st, b := call(t, "PUT", "/"+index+"?wait_for_active_shards=all", body); st != 200 {
		t.Fatalf("create %s: %d %s", index, st, b)
	}
	t.Cleanup(func() { call(t, "DELETE", "/"+index, "") })
}

// count refreshes index and returns its document count.
func count(t testing.TB, index string) int64 {
	t.Helper()
	call(t, "POST", "/"+index+"/_refresh", "")
	st, b := call(t, "GET", "/"+index+"/_count", "")
	if st != 200 {
		t.Fatalf("count %s: %d %s", index, st, b)
	}
	var c struct{ Count int64 }
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c.Count
}

// silentListener accepts connections on a loopback port and never answers;
// it is closed when the test ends.
func silentListener(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() { _, _ = io.Copy(io.Discard, c) }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return "http://" + ln.Addr().String()
}

// closedPort returns the URL of a loopback port nobody listens on.
func closedPort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

func jsonBody(v interface{}) *bytes.Reader {
	b, _ := json.Marshal(v)
	return bytes.NewReader(b)
}

// uniqueIndex names a test's index after base and this process, so that two
// runs of the tests on one shared cluster (other worktrees, make -j) never
// write into, or delete, each other's index.
func uniqueIndex(base string) string {
	return base + "-" + strconv.Itoa(os.Getpid())
}
