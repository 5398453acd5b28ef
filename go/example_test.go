package esbulk_test

import (
	"context"
	"fmt"
	"log"
	"strconv"
	"strings"
	"sync/atomic"

	esbulk "github.com/libesbulk/libesbulk/go"
)

// Three documents indexed on the test cluster, the esutil way.
func ExampleNewBulkIndexer() {
	bi, err := esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{
		Addresses: []string{"http://127.0.0.1:19200"},
		Index:     "go-esbulk-example",
	})
	if err != nil {
		log.Fatal(err)
	}
	var indexed, failed atomic.Int64
	for i := 1; i <= 3; i++ {
		err := bi.Add(context.Background(), esbulk.BulkIndexerItem{
			Action:     "index",
			DocumentID: strconv.Itoa(i),
			Body:       strings.NewReader(`{"title":"hello"}`),
			OnSuccess: func(ctx context.Context, item esbulk.BulkIndexerItem, res esbulk.BulkIndexerResponseItem) {
				indexed.Add(1)
			},
			OnFailure: func(ctx context.Context, item esbulk.BulkIndexerItem, res esbulk.BulkIndexerResponseItem, err error) {
				failed.Add(1)
				log.Printf("%s: %v %s", item.DocumentID, err, res.Error.Reason)
			},
		})
		if err != nil {
			log.Fatal(err)
		}
	}
	if err := bi.Close(context.Background()); err != nil {
		log.Fatal(err)
	}
	fmt.Println("indexed", indexed.Load(), "failed", failed.Load())
	// Output: indexed 3 failed 0
}
