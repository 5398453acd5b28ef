package esbulk

import (
	"context"
	"io"
	"strconv"
	"time"
)

// BulkIndexer buffers documents and sends each one to the node that holds
// its primary shard. It is the interface of go-elasticsearch's
// esutil.BulkIndexer and opensearch-go's opensearchutil.BulkIndexer.
//
// Every item that Add accepted (returned nil) gets exactly one callback,
// OnSuccess or OnFailure, run by the indexer's single result goroutine; an
// item whose Add returned an error gets none.
type BulkIndexer interface {
	// Add copies the item into the library's buffer. It blocks while the
	// buffer is full (BufferMaxBytes, BufferMaxDocs) and returns ctx.Err()
	// when ctx ends first, ErrClosed after Close, or an *Error when the
	// library refuses the item (bad UTF-8, a body that is not one JSON
	// object, too large, options that do not fit the action). Safe from any
	// number of goroutines at once.
	Add(ctx context.Context, item BulkIndexerItem) error

	// Flush sends everything buffered now and returns once every item
	// added before the call has had its callback, or ctx.Err() when ctx
	// ends first (the items stay buffered and get their callbacks later).
	Flush(ctx context.Context) error

	// Close flushes until ctx ends, then gives every item still without an
	// outcome its OnFailure (an *Error with Code ErrCodeClosed), waits for
	// every callback to return, and frees the library's handle. It returns
	// nil when everything was delivered before ctx ended, else ctx.Err().
	// Later calls of Add return ErrClosed; later calls of Close return nil.
	Close(ctx context.Context) error

	// Stats returns the indexer's counters. Safe from any goroutine, also
	// after Close (it then returns the last figures).
	Stats() BulkIndexerStats
}

// BulkIndexerItem is one document operation, with esutil's field names.
type BulkIndexerItem struct {
	// Index is the index, alias or data stream; BulkIndexerConfig.Index
	// when empty.
	Index string
	// Action is "index" (the default when empty), "create", "update" or
	// "delete".
	Action string
	// DocumentID is the _id; when empty for index or create the library
	// generates one (id.generate), so that the document can be routed and
	// safely retried.
	DocumentID string
	// Routing is the custom routing value; BulkIndexerConfig.Routing when
	// empty.
	Routing string
	// Body is the document (for update: the update request, such as
	// {"doc":{...}}); nil for delete. It is read once, copied into the
	// library, and sought back to its start so that a callback may read it
	// again.
	Body io.ReadSeeker
	// Version is an external version (index, delete); VersionType is
	// "external" (also when empty) or "external_gte".
	Version     *int64
	VersionType string
	// IfSeqNo and IfPrimaryTerm make the operation conditional on the
	// document's current sequence number and primary term (both or none).
	IfSeqNo       *int64
	IfPrimaryTerm *int64
	// RetryOnConflict is how often the server retries an update on a
	// version conflict.
	RetryOnConflict *int
	// RequireAlias makes the server refuse the item unless Index is an
	// alias.
	RequireAlias bool

	// OnSuccess is called once the server applied the operation.
	OnSuccess func(context.Context, BulkIndexerItem, BulkIndexerResponseItem)
	// OnFailure is called when it did not, or when it is not known whether
	// it did. err is nil when the server refused the item (its reason is in
	// the response item's Error), else an *Error (transport, retries used
	// up, delivery timeout, closed, ...).
	OnFailure func(context.Context, BulkIndexerItem, BulkIndexerResponseItem, error)
}

// BulkIndexerResponseItem is the outcome of one item, with esutil's field
// names, plus libesbulk's Outcome and Attempts.
type BulkIndexerResponseItem struct {
	Index      string
	DocumentID string
	Version    int64
	Result     string
	Status     int
	SeqNo      int64
	PrimTerm   int64

	// Shards is kept for source compatibility with esutil; libesbulk does
	// not report it (always zero).
	Shards struct {
		Total      int
		Successful int
		Failed     int
	}

	// Error is the server's error for the item, or the library's own
	// explanation (Type empty) when the item failed without an answer.
	Error struct {
		Type   string
		Reason string
		Cause  struct {
			Type   string
			Reason string
		}
	}

	// Outcome says whether the operation was applied, was not, or possibly
	// was (the request broke after it was sent and could not be retried
	// safely).
	Outcome Outcome
	// Attempts is how many times the item was sent.
	Attempts int
}

// Outcome is what became of an item.
type Outcome int

const (
	// OutcomeIndexed: the server applied the operation.
	OutcomeIndexed Outcome = 0
	// OutcomeFailed: it did not.
	OutcomeFailed Outcome = 1
	// OutcomePossibly: unknown; the request broke or timed out after it
	// was sent and could not be safely retried.
	OutcomePossibly Outcome = 2
)

// String returns "indexed", "failed" or "possibly".
func (o Outcome) String() string {
	switch o {
	case OutcomeIndexed:
		return "indexed"
	case OutcomeFailed:
		return "failed"
	case OutcomePossibly:
		return "possibly"
	}
	return "outcome(" + strconv.Itoa(int(o)) + ")"
}

// BulkIndexerConfig configures NewBulkIndexer. The fields esutil has keep
// its names; zero values mean the library's defaults (esbulk-config(7)).
type BulkIndexerConfig struct {
	// NumWorkers is the most bulk requests in flight to one node
	// (max.inflight.per.node, at most 64); 0 for the default, 2.
	NumWorkers int
	// FlushBytes: a queue is sent when it holds this many bytes of bulk
	// lines (flush.bytes, at least 1024).
	FlushBytes int
	// FlushInterval: a queue is sent at the latest this long after its
	// oldest document was added (flush.interval.ms).
	FlushInterval time.Duration

	// OnError is called, on the result goroutine, once per batch of
	// results that holds failures other than the server refusing an item
	// (transport errors, retries used up, delivery timeouts, closed): err
	// is a *BatchError naming how many items and the first error. Each of
	// those items also gets its OnFailure.
	OnError func(context.Context, error)
	// OnFlushStart and OnFlushEnd are called around each Flush and around
	// the flush of Close (libesbulk sends its requests by itself, per
	// node: there is no per-request hook).
	OnFlushStart func(context.Context) context.Context
	OnFlushEnd   func(context.Context)

	// Index is the default index of items that name none.
	Index string
	// Pipeline is the ingest pipeline of every request (bulk.pipeline).
	Pipeline string
	// Refresh is the refresh parameter of every request: "", "false",
	// "true" or "wait_for" (bulk.refresh).
	Refresh string
	// Routing is the default routing of items that have none.
	Routing string

	// Addresses are the seed URLs of the cluster (urls), such as
	// "http://127.0.0.1:9200".
	Addresses []string
	// Username and Password (auth.username, auth.password), or APIKey, the
	// base64 "id:key" (auth.api_key).
	Username string
	Password string
	APIKey   string
	// RoutingLevel groups documents per "node" (the default), per "shard",
	// or not at all ("off") (routing.level).
	RoutingLevel string
	// FlushDocs: a queue is sent when it holds this many documents
	// (flush.docs).
	FlushDocs int
	// RetryMax is how many times a document is retried (retry.max); nil
	// for the default, 10.
	RetryMax *int
	// RetryBackoff and RetryBackoffMax are the base and the cap of the
	// jittered exponential backoff (retry.backoff.ms, retry.backoff.max.ms).
	RetryBackoff    time.Duration
	RetryBackoffMax time.Duration
	// DeliveryTimeout is the longest time from Add to an item's outcome
	// (delivery.timeout.ms).
	DeliveryTimeout time.Duration
	// BufferMaxBytes and BufferMaxDocs bound what is buffered; Add blocks
	// while they are reached (buffer.max.bytes, buffer.max.docs).
	BufferMaxBytes int64
	BufferMaxDocs  int64

	// Config sets any libesbulk key (esbulk-config(7)), applied after the
	// fields above, for example {"compression": "gzip"}. The key
	// enqueue.timeout.ms is the indexer's own (Add waits in Go, on its
	// context) and cannot be set.
	Config map[string]string
}

// BulkIndexerStats are the indexer's counters: esutil's, then libesbulk's.
type BulkIndexerStats struct {
	NumAdded    uint64 // items accepted by Add
	NumFlushed  uint64 // items whose callback has run
	NumFailed   uint64 // items whose OnFailure has run
	NumIndexed  uint64 // successes of "index" items
	NumCreated  uint64 // successes of "create" items
	NumUpdated  uint64 // successes of "update" items
	NumDeleted  uint64 // successes of "delete" items
	NumRequests uint64 // bulk requests sent

	NumRetried  uint64 // retries scheduled
	NumPossibly uint64 // items whose outcome is not known (OutcomePossibly)
	Pending     int64  // items accepted whose callback has not run yet
	// Nodes holds one entry per HTTP endpoint used or known.
	Nodes []NodeStats
}

// NodeStats are the figures of one node (or seed URL).
type NodeStats struct {
	URL        string
	Name       string // empty for a seed URL
	Seed       bool
	QueuedDocs int64
	Inflight   int64
	Requests   int64
	Errors     int64
	Down       bool
	// LatencyP50, P95 and P99 are over the last 512 requests (0 before
	// the first).
	LatencyP50 time.Duration
	LatencyP95 time.Duration
	LatencyP99 time.Duration
}
