// os_go: the opensearch-go contender of libesbulk's benchmark (bench/run.py).
//
// It loads an NDJSON file (one document body per line) with
// opensearchutil.BulkIndexer the way its documentation shows: one client over
// every node URL, NumWorkers = the shared concurrency, one Add per document.
// BulkIndexer flushes a worker's buffer by size only, so FlushBytes is
// computed from the file's average bulk item size (action line + body) times
// the shared batch size: requests then carry that many documents on average
// (reported as avg_batch). FlushInterval is long so that only size flushes.
//
//	os_go --url URL[,URL...] --index NAME --file DATA [--ids] [--batch N] [--workers N]
//
// Prints one JSON line {"docs":N,"seconds":S,"failed":F,...}; exits non-zero
// if any document failed or the indexer reported an error.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/opensearch-project/opensearch-go/v4"
	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"
	"github.com/opensearch-project/opensearch-go/v4/opensearchutil"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:19200", "comma-separated node URLs")
	index := flag.String("index", "", "index name")
	file := flag.String("file", "", "NDJSON data file")
	ids := flag.Bool("ids", false, "_id of line k is k")
	batch := flag.Int("batch", 1000, "documents per bulk request (via FlushBytes)")
	workers := flag.Int("workers", 6, "NumWorkers (concurrent bulk requests)")
	flag.Parse()
	if *index == "" || *file == "" {
		fmt.Fprintln(os.Stderr, "usage: os_go --url URL --index NAME --file DATA [--ids] [--batch N] [--workers N]")
		os.Exit(2)
	}

	// The lines, read up front (not timed): a typical loader streams, but
	// this keeps disk reads out of the figure, as for the other contenders
	// (the file is in the page cache anyway).
	data, err := os.ReadFile(*file)
	if err != nil {
		fmt.Fprintln(os.Stderr, "os_go:", err)
		os.Exit(1)
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	n := len(lines)
	if n == 0 {
		fmt.Fprintln(os.Stderr, "os_go: empty file")
		os.Exit(1)
	}
	var itemBytes int64
	for k, l := range lines {
		// BulkIndexer's action line: {"index":{}} or {"index":{"_id":"k"}}
		meta := len(`{"index":{}}`) + 1
		if *ids {
			meta = len(`{"index":{"_id":""}}`) + len(strconv.Itoa(k+1)) + 1
		}
		itemBytes += int64(meta + len(l) + 1)
	}
	avg := float64(itemBytes) / float64(n)
	// the worker flushes once its buffer is >= FlushBytes after an Add
	flushBytes := int(math.Max(1, math.Round(avg*(float64(*batch)-0.5))))

	addrs := strings.Split(*url, ",")
	client, err := opensearchapi.NewClient(opensearchapi.Config{
		Client: opensearch.Config{Addresses: addrs},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "os_go: client:", err)
		os.Exit(1)
	}

	var indexerErrors atomic.Int64
	var firstErr atomic.Value
	bi, err := opensearchutil.NewBulkIndexer(opensearchutil.BulkIndexerConfig{
		Client:        client,
		Index:         *index,
		NumWorkers:    *workers,
		FlushBytes:    flushBytes,
		FlushInterval: 10 * time.Minute,
		OnError: func(_ context.Context, err error) {
			indexerErrors.Add(1)
			firstErr.CompareAndSwap(nil, err.Error())
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "os_go: indexer:", err)
		os.Exit(1)
	}

	var failed atomic.Int64
	onFailure := func(_ context.Context, _ opensearchutil.BulkIndexerItem, r opensearchapi.BulkRespItem, err error) {
		failed.Add(1)
		if err != nil {
			firstErr.CompareAndSwap(nil, err.Error())
		} else if r.Error != nil {
			firstErr.CompareAndSwap(nil, r.Error.Type+": "+r.Error.Reason)
		}
	}

	ctx := context.Background()
	t0 := time.Now()
	for k, l := range lines {
		item := opensearchutil.BulkIndexerItem{
			Action:    "index",
			Body:      bytes.NewReader(l),
			OnFailure: onFailure,
		}
		if *ids {
			item.DocumentID = strconv.Itoa(k + 1)
		}
		if err := bi.Add(ctx, item); err != nil {
			fmt.Fprintln(os.Stderr, "os_go: add:", err)
			os.Exit(1)
		}
	}
	if err := bi.Close(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "os_go: close:", err)
		os.Exit(1)
	}
	secs := time.Since(t0).Seconds()
	st := bi.Stats()

	out := map[string]any{
		"docs":           n,
		"seconds":        secs,
		"failed":         failed.Load(),
		"indexed":        st.NumIndexed + st.NumCreated,
		"requests":       st.NumRequests,
		"avg_batch":      float64(st.NumFlushed) / math.Max(1, float64(st.NumRequests)),
		"flush_bytes":    flushBytes,
		"workers":        *workers,
		"indexer_errors": indexerErrors.Load(),
	}
	if e, ok := firstErr.Load().(string); ok {
		out["first_error"] = e
	}
	w := bufio.NewWriter(os.Stdout)
	_ = json.NewEncoder(w).Encode(out)
	_ = w.Flush()
	if failed.Load() > 0 || indexerErrors.Load() > 0 || int(st.NumFlushed) != n {
		os.Exit(1)
	}
}
