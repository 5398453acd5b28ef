package esbulk

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"time"
)

// BulkIndexer buffers documents and sends each one to the node that holds
// its primary shard. It is the interface of go-elasticsearch's
// esutil.BulkIndexer and opensearch-go's opensearchutil.BulkIndexer.
//
// Every item that Add accepted (returned nil) gets exactly one callback,
// OnSuccess or OnFailure, run by the indexer's single result goroutine; an
// item whose Add returned an error gets none. Callbacks run one at a time,
// so they should be quick. Each gets the context of the item's Add (its
// values, deadline and cancellation), marked as a callback's.
//
// A callback may call Add, to re-queue an item: there Add never waits (as
// libesbulk's esbulk_add from a result callback), since only the result
// goroutine, busy with the callback, makes room: with the buffer full it
// returns an *Error with ErrCodeQueueFull at once (errors.Is(err,
// ErrQueueFull)). Flush and Close called from a callback (or from OnError,
// OnLog, OnFlushStart, OnFlushEnd) would wait for themselves: they return
// an *Error with ErrCodeInCallback (ErrInCallback) at once. Such calls are
// recognised by the callback's ctx, or, with another ctx, by the goroutine
// (a goroutine that a callback starts and waits for should be given the
// callback's ctx). The ctx marks the callback only while it runs: a
// goroutine that uses it after the callback returned (an asynchronous
// retry) waits for room as any other.
type BulkIndexer interface {
	// Add copies the item into the library's buffer. It blocks while the
	// buffer is full (BufferMaxBytes, BufferMaxDocs) and returns ctx.Err()
	// when ctx ends first, ErrClosed after Close, or an *Error when the
	// item is refused (bad UTF-8, a NUL byte in Index, a body that is not
	// one JSON object, too large, options that do not fit the action).
	// Safe from any number of goroutines at once.
	Add(ctx context.Context, item BulkIndexerItem) error

	// Flush sends everything buffered now and returns once every item
	// added before the call (its Add returned nil) has had its callback,
	// or ctx.Err() when ctx ends first (the items stay buffered and get
	// their callbacks later), or ErrClosed when Close begins meanwhile
	// (Close delivers them, by its own context). Items added while it runs
	// are sent too, but not waited for. A cancel of ctx is seen within
	// some 20 ms.
	Flush(ctx context.Context) error

	// Close flushes until ctx ends, then gives every item still without an
	// outcome its OnFailure (an *Error with Code ErrCodeClosed), waits for
	// every callback to return, and frees the library's handle. It returns
	// nil when everything was delivered before ctx ended, else ctx.Err():
	// with a ctx that never ends, every item Add accepted is delivered.
	// Once Close has begun, Add (also one already waiting for room)
	// returns ErrClosed: no item is accepted after it. Later calls of
	// Close return nil; one made while the first is under way waits for
	// it as long as its own ctx allows (then ctx.Err()).
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
	// {"doc":{...}}); nil for delete. It is read once, from its start
	// (wherever the reader stands), copied into the library, and sought
	// back to its start so that a callback may read it again.
	Body io.ReadSeeker
	// Version is an external version (index, delete); VersionType is
	// "external" (also when empty; "external_gt" is the same) or
	// "external_gte".
	Version     *int64
	VersionType string
	// IfSeqNo and IfPrimaryTerm make the operation conditional on the
	// document's current sequence number and primary term (both or none).
	IfSeqNo       *int64
	IfPrimaryTerm *int64
	// RetryOnConflict is how often the server retries an update on a
	// version conflict; ignored for the other actions, as in esutil.
	RetryOnConflict *int
	// RequireAlias makes the server refuse the item unless Index is an
	// alias; not sent for a delete (the server ignores it there).
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
	// Index is the concrete index written to; DocumentID the _id (given,
	// generated by the library, or assigned by the server); Version, SeqNo
	// and PrimTerm -1 when the server did not say; Result "created",
	// "updated", "deleted", "noop" or "not_found"; Status the item's HTTP
	// status, 0 when there was no answer.
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
	// explanation (Type empty, or that of the last attempt's error) when
	// the item failed without an answer. The server's caused_by, of the
	// refusal or of the last attempt, is in Cause, as esutil has it, and
	// not repeated at the end of Reason.
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
	// OnLog gets libesbulk's log lines on the result goroutine, as results
	// are pulled: warnings such as a node that cannot be reached and is
	// marked down, or a cluster or index that cannot be read, and notices
	// (at most log.level, default LogInfo, LogDebug with DebugLogger set).
	// level is one of LogErr, LogWarning, LogNotice, LogInfo, LogDebug;
	// facility a short word such as "topology". nil (and no DebugLogger):
	// the lines are dropped (the handle keeps the last 64 it was not asked
	// for). The library never calls into Go: the lines
	// wait in the handle until this goroutine takes them.
	OnLog func(level int, facility, message string)
	// DebugLogger, as esutil's, gets every log line of the library's
	// handle, debug lines included: setting it sets log.level to LogDebug
	// (7; Config["log.level"], applied after, still wins), so that OnLog,
	// when set too, gets the debug lines as well. Each line is one Printf
	// call, "esbulk <level> <facility>: <message>\n", on the result
	// goroutine, as results are pulled (as OnLog: the library never calls
	// into Go).
	DebugLogger BulkIndexerDebugLogger
	// OnFlushStart and OnFlushEnd are called around each Flush and around
	// the flush of Close (libesbulk sends its requests by itself, per
	// node: there is no per-request hook). OnFlushStart gets the ctx of
	// the Flush or Close; the context it returns goes to OnFlushEnd only
	// (Flush and Close wait by their own ctx).
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
	// RequireAlias is the default of the items' RequireAlias: true makes
	// every item require an alias (an item cannot turn it off; with false
	// each item's own RequireAlias holds). Deletes go through, as with
	// esutil's ?require_alias.
	RequireAlias bool
	// Timeout is the time allowed for each request, from connecting to the
	// last byte of the answer (request.timeout.ms; the library asks the
	// server to answer a bulk request within 5/6 of it). 0 keeps the
	// library's default, 30 s; below 1 ms counts as 1 ms; negative is
	// refused, and so is a Timeout with Config["request.timeout.ms"] set
	// too (one of the two).
	Timeout time.Duration

	// Header is sent with every request, bulk and metadata, as esutil's
	// global HTTP request header (http.headers): for example X-Opaque-Id,
	// to find the requests in the server's tasks and slow logs, or
	// securitytenant for OpenSearch's security plugin. A header the library
	// sets itself (Authorization: use Username/Password or APIKey;
	// Content-Type, Host, Accept-Encoding, ...) is refused by
	// NewBulkIndexer, and so is Header with Config["http.headers"] too.
	Header http.Header

	// Addresses are the seed URLs of the cluster (urls), such as
	// "http://127.0.0.1:9200".
	Addresses []string
	// Username and Password (auth.username, auth.password), or APIKey, the
	// base64 "id:key" (auth.api_key).
	Username string
	Password string
	APIKey   string
	// Credentials, instead of Username, Password and APIKey, gives them
	// (a username and password, or an API key): NewBulkIndexer calls it
	// once, then the indexer every CredentialsRefresh (a minute when 0)
	// until Close, and when they changed, the requests that start from then
	// carry the new ones (esbulk_auth_update), so that a password or API key
	// rotated by a secrets manager is taken without a new indexer. The kind
	// (password or API key) cannot change on a live indexer. An error from
	// NewBulkIndexer's call is its error; a later one goes to OnError and
	// the credentials in use stay.
	Credentials        func(ctx context.Context) (username, password, apiKey string, err error)
	CredentialsRefresh time.Duration
	// AWSRegion, when set, signs every request, bulk and metadata, with
	// AWS Signature Version 4 for Amazon OpenSearch Service (AWSService
	// "es", the default) or Amazon OpenSearch Serverless ("aoss")
	// (auth.aws.region, auth.aws.service), with the credentials
	// AWSCredentials gives. It also sets topology.discovery false: a
	// managed domain answers at one endpoint, its nodes' addresses are
	// private (Config["topology.discovery"] wins).
	AWSRegion  string
	AWSService string
	// AWSCredentials gives the credentials to sign with: NewBulkIndexer
	// calls it once, then the indexer every AWSRefresh (a minute when 0)
	// until Close, and when they changed, the requests that start from then
	// are signed with the new ones (esbulk_auth_update), so that temporary
	// credentials (roles, SSO) are replaced before they expire. An error
	// from NewBulkIndexer's call is its error; a later one goes to OnError
	// and the credentials in use stay. aws-sdk-go-v2's provider, in a line:
	//
	//	func(ctx context.Context) (string, string, string, error) {
	//		c, err := awsCfg.Credentials.Retrieve(ctx)
	//		return c.AccessKeyID, c.SecretAccessKey, c.SessionToken, err
	//	}
	AWSCredentials func(ctx context.Context) (accessKeyID, secretAccessKey, sessionToken string, err error)
	AWSRefresh     time.Duration
	// TLS, for https:// addresses, as files (opensearch-go's and
	// go-elasticsearch's CACert takes the PEM bytes; write them to a file):
	// CACertFile is the PEM bundle of the certificate authorities to trust
	// instead of the system's (tls.ca.file), CAPath a directory of them
	// (tls.ca.path); CertFile and KeyFile the client certificate and its
	// private key, PEM, for clusters that require one (tls.cert.file,
	// tls.key.file), KeyPassword the key's passphrase (tls.key.password);
	// InsecureSkipVerify accepts any server certificate and host name
	// (tls.insecure: for tests only). NewBulkIndexer checks that the files
	// given can be read and returns an *Error naming the field otherwise.
	CACertFile         string
	CAPath             string
	CertFile           string
	KeyFile            string
	KeyPassword        string
	InsecureSkipVerify bool
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
	// while they are reached (buffer.max.bytes, buffer.max.docs). Zero
	// keeps the library's default: 256 MiB, and a document count sized by
	// the cluster (twice what keeps every node's requests in flight with a
	// full one queued per destination, at least 10,000).
	BufferMaxBytes int64
	BufferMaxDocs  int64

	// Config sets any libesbulk key (esbulk-config(7)), applied after the
	// fields above, for example {"compression": "gzip"}. The key
	// enqueue.timeout.ms is the indexer's own (Add waits in Go, on its
	// context) and cannot be set, nor can result.failures_only (every item
	// gets its callback, OnSuccess included).
	Config map[string]string
}

// BulkIndexerStats are the indexer's counters: esutil's, then libesbulk's.
type BulkIndexerStats struct {
	// As in esutil and opensearchutil: NumFlushed counts the successes
	// only, so that NumFlushed + NumFailed + Pending == NumAdded.
	NumAdded    uint64 // items accepted by Add
	NumFlushed  uint64 // items whose OnSuccess has run (or is running)
	NumFailed   uint64 // items whose OnFailure has run (or is running)
	NumIndexed  uint64 // successes of "index" items
	NumCreated  uint64 // successes of "create" items
	NumUpdated  uint64 // successes of "update" items
	NumDeleted  uint64 // successes of "delete" items
	NumRequests uint64 // bulk requests sent
	// FlushedBytes is the bytes of the bulk request bodies sent,
	// uncompressed (libesbulk's bytes_uncompressed, whatever compression
	// says): a request sent again (a retry) counts again.
	FlushedBytes uint64

	NumRetried  uint64 // retries scheduled
	NumPossibly uint64 // items whose outcome is not known (OutcomePossibly)
	Pending     int64  // items accepted whose callback has not run yet
	// BufferMaxDocs is the most items the buffer takes: the config's
	// BufferMaxDocs, or the size libesbulk computed from the cluster.
	BufferMaxDocs int64
	// Nodes holds one entry per HTTP endpoint used or known.
	Nodes []NodeStats
}

// BulkIndexerDebugLogger is the interface of BulkIndexerConfig.DebugLogger,
// as esutil's (a *log.Logger is one).
type BulkIndexerDebugLogger interface {
	Printf(string, ...interface{})
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

// The levels of BulkIndexerConfig.OnLog's lines (syslog numbering, as
// libesbulk's ESBULK_LOG_*).
const (
	LogErr     = 3
	LogWarning = 4
	LogNotice  = 5
	LogInfo    = 6
	LogDebug   = 7
)
