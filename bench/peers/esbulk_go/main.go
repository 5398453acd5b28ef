// esbulk_go: the esbulk Go module's contender in libesbulk's benchmark
// (bench/run.py): the BulkIndexer of go/ (cgo over libesbulk, linked in
// with -tags esbulk_static), driven exactly as bench/peers/os_go drives
// opensearch-go's: the file read up front (not timed), one Add per
// document with a bytes.Reader body, one OnFailure for all, Close at the
// end. Its own settings: FlushDocs = the shared batch, NumWorkers = the
// shared in-flight requests per node (max.inflight.per.node), node routing.
//
//	esbulk_go --url URL --index NAME --file DATA [--ids] [--batch N] [--inflight N]
//
// Prints one JSON line {"docs":N,"seconds":S,"failed":F,...}, with the CPU
// time of the Add loop alone (add_cpu_ns_per_doc: body copied into the
// library through cgo, per-item state, routing); exits non-zero if any
// document failed.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	esbulk "github.com/libesbulk/libesbulk/go"
)

func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func main() {
	url := flag.String("url", "http://127.0.0.1:19200", "seed URL")
	index := flag.String("index", "", "index name")
	file := flag.String("file", "", "NDJSON data file")
	ids := flag.Bool("ids", false, "_id of line k is k")
	batch := flag.Int("batch", 5000, "documents per bulk request (FlushDocs)")
	inflight := flag.Int("inflight", 2, "requests in flight per node (NumWorkers)")
	flag.Parse()
	if *index == "" || *file == "" {
		fmt.Fprintln(os.Stderr, "usage: esbulk_go --url URL --index NAME --file DATA [--ids] [--batch N] [--inflight N]")
		os.Exit(2)
	}
	data, err := os.ReadFile(*file)
	if err != nil {
		fmt.Fprintln(os.Stderr, "esbulk_go:", err)
		os.Exit(1)
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	n := len(lines)

	var failed atomic.Int64
	var firstErr atomic.Value
	bi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{
		Addresses: []string{*url}, Index: *index, FlushDocs: *batch, NumWorkers: *inflight,
		RoutingLevel: "node",
		// the peers' requests are bounded by count only: so are these
		FlushBytes: 1 << 30, BufferMaxBytes: 1 << 30, BufferMaxDocs: 1 << 24,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "esbulk_go: indexer:", err)
		os.Exit(1)
	}
	onFailure := func(_ context.Context, _ esbulk.BulkIndexerItem, r esbulk.BulkIndexerResponseItem, err error) {
		failed.Add(1)
		if err != nil {
			firstErr.CompareAndSwap(nil, err.Error())
		} else {
			firstErr.CompareAndSwap(nil, r.Error.Type+": "+r.Error.Reason)
		}
	}
	ctx := context.Background()
	t0, c0 := time.Now(), cpuNow()
	for k, l := range lines {
		item := esbulk.BulkIndexerItem{Action: "index", Body: bytes.NewReader(l), OnFailure: onFailure}
		if *ids {
			item.DocumentID = strconv.Itoa(k + 1)
		}
		if err := bi.Add(ctx, item); err != nil {
			fmt.Fprintln(os.Stderr, "esbulk_go: add:", err)
			os.Exit(1)
		}
	}
	addWall, addCPU := time.Since(t0), cpuNow()-c0
	if err := bi.Close(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "esbulk_go: close:", err)
		os.Exit(1)
	}
	secs := time.Since(t0).Seconds()
	st := bi.Stats()
	out := map[string]any{
		"docs": n, "seconds": secs, "failed": failed.Load(),
		"indexed": st.NumIndexed + st.NumCreated, "requests": st.NumRequests,
		"retried": st.NumRetried, "inflight": *inflight,
		"add_seconds": addWall.Seconds(), "add_cpu_ns_per_doc": float64(addCPU.Nanoseconds()) / float64(n),
	}
	if e, ok := firstErr.Load().(string); ok {
		out["first_error"] = e
	}
	w := bufio.NewWriter(os.Stdout)
	_ = json.NewEncoder(w).Encode(out)
	_ = w.Flush()
	if failed.Load() > 0 || int(st.NumFlushed) != n {
		os.Exit(1)
	}
}
