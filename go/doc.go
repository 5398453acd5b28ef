// Package esbulk is a BulkIndexer for Elasticsearch and OpenSearch, with the
// API of go-elasticsearch's esutil.BulkIndexer and opensearch-go's
// opensearchutil.BulkIndexer, over libesbulk (cgo): every document goes
// straight to the node that holds its primary shard, item 429s are retried
// per document, Close honours its context's deadline, and every item that
// Add accepted gets exactly one callback.
//
// Switching from esutil is a change of import and constructor: replace
// esutil.NewBulkIndexer(esutil.BulkIndexerConfig{Client: es, ...}) with
// esbulk.NewBulkIndexer(esbulk.BulkIndexerConfig{Addresses: urls, ...}), and
// the callbacks' response item type with esbulk.BulkIndexerResponseItem.
//
// Threads: libesbulk runs its own I/O thread; one goroutine per indexer pulls
// results in batches (esbulk_poll_results) and runs the callbacks, one at a
// time, so callbacks should be quick; it also takes libesbulk's log lines
// (esbulk_log_take) for OnLog. The library never calls into Go. Add copies
// each body once into the library and keeps no Go pointer in C: per-item
// state stays in a Go slot table (a slice with a free list), and the slot's
// number travels as the document's opaque. Code run by that goroutine never
// waits for it: Add there never blocks, Flush and Close return
// ErrInCallback (see BulkIndexer).
//
// Building needs the library and its pkg-config file (libesbulk.pc):
// install libesbulk, or point PKG_CONFIG_PATH at a directory with a .pc file
// for a build tree. CGO_ENABLED=1 is required. The build tag esbulk_static
// links libesbulk.a instead of the shared library.
package esbulk
