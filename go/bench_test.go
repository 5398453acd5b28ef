package esbulk_test

import (
	"bytes"
	"context"
	"strconv"
	"testing"
	"time"

	esbulk "github.com/libesbulk/libesbulk/go"
)

var benchBody = []byte(`{"msg":"a benchmark document of about a hundred bytes","n":12345,"tags":["a","b","c"]}`)

// The cost of Add alone (Go side, the cgo crossing and the library's copy):
// a silent cluster, so that nothing is sent back. go test -bench Add -run X
func BenchmarkAdd(b *testing.B) {
	bi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{Addresses: []string{silentListener(b)},
		BufferMaxDocs: int64(b.N) + 1, BufferMaxBytes: int64(b.N)*1024 + 1<<20})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := bi.Add(ctx, esbulk.BulkIndexerItem{Index: "bench", DocumentID: strconv.Itoa(i),
			Body: bytes.NewReader(benchBody)}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	bi.Close(cctx)
}

// Documents per second to the test cluster, results included.
func BenchmarkIndex(b *testing.B) {
	index := uniqueIndex("go-esbulk-bench")
	freshIndex(b, index, "")
	bi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{Addresses: []string{clusterURL()}, Index: index})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ResetTimer()
	t0 := time.Now()
	for i := 0; i < b.N; i++ {
		if err := bi.Add(ctx, esbulk.BulkIndexerItem{DocumentID: strconv.Itoa(i),
			Body: bytes.NewReader(benchBody)}); err != nil {
			b.Fatal(err)
		}
	}
	if err := bi.Close(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if st := bi.Stats(); st.NumFailed != 0 {
		b.Fatalf("%d failed", st.NumFailed)
	}
	b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "docs/s")
}
