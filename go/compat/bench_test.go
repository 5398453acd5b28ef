package compat

import (
	"bytes"
	"context"
	"strconv"
	"testing"
	"time"

	esbulk "github.com/libesbulk/libesbulk/go"
	"github.com/opensearch-project/opensearch-go/v4"
	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"
	"github.com/opensearch-project/opensearch-go/v4/opensearchutil"
)

var benchBody = []byte(`{"msg":"a benchmark document of about a hundred bytes","n":12345,"tags":["a","b","c"]}`)

func benchIndex(b *testing.B, name string) {
	call(b, "DELETE", "/"+name, "")
	call(b, "PUT", "/"+name+"?wait_for_active_shards=all",
		`{"settings":{"number_of_shards":3,"number_of_replicas":0}}`)
	b.Cleanup(func() { call(b, "DELETE", "/"+name, "") })
}

// Documents per second through each indexer, the same items, defaults
// otherwise. go test -run X -bench . -benchtime 200000x
func BenchmarkOpensearchGo(b *testing.B) {
	benchIndex(b, "go-bench-opensearch-go")
	client, err := opensearchapi.NewClient(opensearchapi.Config{Client: opensearch.Config{Addresses: []string{clusterURL()}}})
	if err != nil {
		b.Fatal(err)
	}
	bi, err := opensearchutil.NewBulkIndexer(opensearchutil.BulkIndexerConfig{Client: client, Index: "go-bench-opensearch-go"})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ResetTimer()
	t0 := time.Now()
	for i := 0; i < b.N; i++ {
		if err := bi.Add(ctx, opensearchutil.BulkIndexerItem{Action: "index", DocumentID: strconv.Itoa(i),
			Body: bytes.NewReader(benchBody)}); err != nil {
			b.Fatal(err)
		}
	}
	if err := bi.Close(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "docs/s")
	if st := bi.Stats(); st.NumFailed != 0 {
		b.Fatalf("%d failed", st.NumFailed)
	}
}

func BenchmarkEsbulk(b *testing.B) {
	benchIndex(b, "go-bench-esbulk")
	bi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{Addresses: []string{clusterURL()}, Index: "go-bench-esbulk"})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ResetTimer()
	t0 := time.Now()
	for i := 0; i < b.N; i++ {
		if err := bi.Add(ctx, esbulk.BulkIndexerItem{Action: "index", DocumentID: strconv.Itoa(i),
			Body: bytes.NewReader(benchBody)}); err != nil {
			b.Fatal(err)
		}
	}
	if err := bi.Close(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "docs/s")
	if st := bi.Stats(); st.NumFailed != 0 {
		b.Fatalf("%d failed", st.NumFailed)
	}
}
