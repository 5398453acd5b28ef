package esbulk_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	esbulk "github.com/libesbulk/libesbulk/go"
)

// The whole Body is the document, wherever its reader stands at Add (as
// esutil, which seeks it to its start): a body read before (logged, or
// read in a callback before the item is re-queued) is sent in full, and a
// callback reads it in full again.
func TestBodyReadFromStart(t *testing.T) {
	index, bi := freshIndexer(t, "go-esbulk-body")
	defer bi.Close(context.Background())
	read := strings.NewReader(`{"n":1}`)
	if _, err := io.ReadAll(read); err != nil { // logged, say
		t.Fatal(err)
	}
	half := strings.NewReader(`{"n":2}`)
	if _, err := half.Read(make([]byte, 3)); err != nil {
		t.Fatal(err)
	}
	seen := make(chan string, 2)
	for id, body := range map[string]*strings.Reader{"read": read, "half": half} {
		err := bi.Add(context.Background(), esbulk.BulkIndexerItem{DocumentID: id, Body: body,
			OnSuccess: func(_ context.Context, it esbulk.BulkIndexerItem, _ esbulk.BulkIndexerResponseItem) {
				b, _ := io.ReadAll(it.Body)
				seen <- it.DocumentID + " " + string(b)
			},
			OnFailure: func(_ context.Context, it esbulk.BulkIndexerItem, r esbulk.BulkIndexerResponseItem, err error) {
				seen <- it.DocumentID + " failed: " + r.Error.Reason
				_ = err
			}})
		if err != nil {
			t.Errorf("add %s: %v", id, err)
			seen <- id + " refused"
		}
	}
	if err := bi.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{<-seen: true, <-seen: true}
	for _, want := range []string{`read {"n":1}`, `half {"n":2}`} {
		if !got[want] {
			t.Errorf("callbacks %v, want %q", got, want)
		}
	}
	for id, n := range map[string]float64{"read": 1, "half": 2} {
		st, b := call(t, "GET", "/"+index+"/_doc/"+id, "")
		var doc struct {
			Source map[string]float64 `json:"_source"`
		}
		if st != 200 || json.Unmarshal(b, &doc) != nil || doc.Source["n"] != n {
			t.Errorf("%s: %d %s, want n %v", id, st, b, n)
		}
	}
}

// RetryOnConflict applies to updates; on other actions it is ignored, as
// esutil does (and the server): code that sets it on every item keeps
// working (Add refused those items).
func TestRetryOnConflictOnlyUpdates(t *testing.T) {
	_, bi := freshIndexer(t, "go-esbulk-roc")
	defer bi.Close(context.Background())
	three := 3
	results := make(chan string, 4)
	for _, it := range []esbulk.BulkIndexerItem{
		{Action: "index", DocumentID: "1", Body: strings.NewReader(`{"a":1}`)},
		{Action: "create", DocumentID: "2", Body: strings.NewReader(`{"a":2}`)},
		{Action: "update", DocumentID: "1", Body: strings.NewReader(`{"doc":{"b":1}}`)},
		{Action: "delete", DocumentID: "2"},
	} {
		it.RetryOnConflict = &three
		it.OnSuccess = func(_ context.Context, it esbulk.BulkIndexerItem, r esbulk.BulkIndexerResponseItem) {
			results <- it.Action + " " + r.Result
		}
		it.OnFailure = func(_ context.Context, it esbulk.BulkIndexerItem, r esbulk.BulkIndexerResponseItem, err error) {
			results <- it.Action + " failed"
		}
		if err := bi.Add(context.Background(), it); err != nil {
			t.Errorf("%s with RetryOnConflict: %v", it.Action, err)
			results <- it.Action + " refused"
		}
		if err := bi.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got, want := <-results, it.Action+" "+map[string]string{"index": "created", "create": "created",
			"update": "updated", "delete": "deleted"}[it.Action]; got != want {
			t.Errorf("%s, want %s", got, want)
		}
	}
}

// VersionType "external_gt", the server's other name of "external", is
// taken as such (Add refused it).
func TestVersionTypeExternalGt(t *testing.T) {
	_, bi := freshIndexer(t, "go-esbulk-external-gt")
	defer bi.Close(context.Background())
	for _, tc := range []struct {
		version int64
		status  int
	}{{5, 201}, {5, 409}, {6, 200}} {
		v := tc.version
		got := make(chan int, 1)
		err := bi.Add(context.Background(), esbulk.BulkIndexerItem{DocumentID: "1", Version: &v,
			VersionType: "external_gt", Body: strings.NewReader(`{}`),
			OnSuccess: func(_ context.Context, _ esbulk.BulkIndexerItem, r esbulk.BulkIndexerResponseItem) {
				got <- r.Status
			},
			OnFailure: func(_ context.Context, _ esbulk.BulkIndexerItem, r esbulk.BulkIndexerResponseItem, _ error) {
				got <- r.Status
			}})
		if err != nil {
			t.Fatalf("version %d external_gt: %v", v, err)
		}
		if err := bi.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if st := <-got; st != tc.status {
			t.Errorf("version %d external_gt: status %d, want %d", v, st, tc.status)
		}
	}
}

// Config["result.failures_only"] would drop the results of the items
// indexed: they would never get their OnSuccess, and Flush and Close would
// wait for them for ever. NewBulkIndexer refuses the key.
func TestFailuresOnlyRefused(t *testing.T) {
	bi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{Addresses: []string{clusterURL()},
		Config: map[string]string{"result.failures_only": "true"}})
	var e *esbulk.Error
	if !errors.As(err, &e) || e.Code != esbulk.ErrCodeInvalidArg || !strings.Contains(e.Reason, "result.failures_only") {
		t.Errorf("Config result.failures_only: %v, want an ErrCodeInvalidArg naming it", err)
	}
	if bi != nil {
		bi.Close(context.Background())
	}
}

// freshIndexer is a new index named from prefix and an indexer that writes
// to it, flushing every 10 ms.
func freshIndexer(t *testing.T, prefix string) (string, esbulk.BulkIndexer) {
	t.Helper()
	index := uniqueIndex(prefix)
	freshIndex(t, index, "")
	bi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{Addresses: []string{clusterURL()}, Index: index,
		FlushInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return index, bi
}
