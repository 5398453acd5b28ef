package esbulk

/*
#include <esbulk.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

// Options of one item; flags say which are set.
enum { ESBGO_VERSION = 1, ESBGO_SEQ_NO = 2, ESBGO_REQUIRE_ALIAS = 4, ESBGO_RETRY_ON_CONFLICT = 8 };

// One esbulk_add_opts call with the item's options as scalars (no Go
// pointer is kept: every input is copied before esbulk_add_opts returns).
// The document opaque is the item's integer id, never a Go pointer.
static int32_t esbgo_add(esbulk_t *eb, int32_t op, const char *index, const char *id,
                         size_t id_len, const char *routing, size_t routing_len,
                         const char *body, size_t body_len, int32_t flags, int64_t version,
                         int32_t version_type, int64_t seq_no, int64_t primary_term,
                         int32_t retry_on_conflict, uintptr_t opaque, char *errstr,
                         size_t errstr_size)
{
    esbulk_docopts_t *o = NULL;
    esbulk_err_t err = ESBULK_OK;

    if (flags != 0) {
        o = esbulk_docopts_new();
        if (o == NULL)
            return ESBULK_ERR_NOMEM;
        const char *what = NULL; // the option refused, by its Go name
        if ((flags & ESBGO_VERSION) && err == ESBULK_OK) {
            err = esbulk_docopts_set_version(o, version, (esbulk_version_type_t)version_type);
            what = "Version (0 or more)";
        }
        if ((flags & ESBGO_SEQ_NO) && err == ESBULK_OK) {
            err = esbulk_docopts_set_if_seq_no(o, seq_no, primary_term);
            what = "IfSeqNo (0 or more) or IfPrimaryTerm (1 or more)";
        }
        if ((flags & ESBGO_REQUIRE_ALIAS) && err == ESBULK_OK) {
            err = esbulk_docopts_set_require_alias(o, 1);
            what = "RequireAlias";
        }
        if ((flags & ESBGO_RETRY_ON_CONFLICT) && err == ESBULK_OK) {
            err = esbulk_docopts_set_retry_on_conflict(o, retry_on_conflict);
            what = "RetryOnConflict (-1 to 1000000)";
        }
        if (err != ESBULK_OK) {
            if (errstr_size > 0)
                snprintf(errstr, errstr_size, "%s is out of range", what);
            esbulk_docopts_destroy(o);
            return err;
        }
    }
    err = esbulk_add_opts(eb, (esbulk_op_t)op, index, id, id_len, routing, routing_len, body,
                          body_len, o, (void *)opaque, errstr, errstr_size);
    esbulk_docopts_destroy(o);
    return err;
}

*/
import "C"

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

const (
	pollBatch   = 1024                  // results pulled per crossing
	pollWait    = 20 * time.Millisecond // longest wait of one pull (commands wait at most this)
	errstrBytes = 512
	// A full buffer is retried when the result goroutine releases a batch,
	// and at least every roomRetry, doubled up to roomRetryMax while no
	// release comes (room also appears when the I/O thread frees bytes, or
	// the buffer grows at a cluster read): an attempt that the library does
	// not refuse at once (the buffer known full by its count) builds the
	// document again, its body checked and copied.
	roomRetry    = 5 * time.Millisecond
	roomRetryMax = 100 * time.Millisecond
)

var zeros [errstrBytes]byte

// LibraryVersion is the version of the libesbulk linked in, as "major.minor.patch".
func LibraryVersion() string { return C.GoString(C.esbulk_version_str()) }

// libraryVersionNumber is esbulk_version(): one cgo call and nothing else
// (BenchmarkCgoCall measures the crossing with it).
func libraryVersionNumber() uint32 { return uint32(C.esbulk_version()) }

func err2str(c ErrCode) string { return C.GoString(C.esbulk_err2str(C.esbulk_err_t(c))) }

// An item waiting for its result.
type pending struct {
	item BulkIndexerItem
	ctx  context.Context // the Add's, passed on to the callbacks
	// gen tells this item from the others that used or will use the slot;
	// acc is its number in the order the library accepted items (0 while
	// its Add is still under way): Flush waits for the items accepted up
	// to a mark.
	gen, acc uint64
	action   int32
	used     bool // the slot holds an item (slots)
}

// A Flush or Close asked of the result goroutine.
type command struct {
	ctx   context.Context
	close bool
	done  chan error
}

type indexer struct {
	cfg BulkIndexerConfig

	// mu guards eb against destroy: Add and Stats hold it for reading
	// around their calls; Close holds it for writing to destroy.
	mu     sync.RWMutex
	eb     *C.esbulk_t
	closed atomic.Bool // set by Close before anything else
	gone   bool        // eb destroyed (under mu)
	final  []byte      // the stats JSON read just before destroy

	itemsMu sync.Mutex
	items   slots  // the items the library holds, by the opaque they carry
	gens    uint64 // the last pending.gen given (under itemsMu)
	accs    uint64 // the last pending.acc given (under itemsMu)

	runID  atomic.Uint64 // the result goroutine's id (goid)
	inUser atomic.Bool   // the result goroutine runs user code (callbacks)
	// userGen numbers the callback ctxs made (callbackCtx): only the last
	// one's marker holds
	userGen atomic.Uint64

	// room is closed (and replaced) by the result goroutine after each
	// release while adders wait for room.
	roomMu  sync.Mutex
	room    chan struct{}
	waiters atomic.Int32
	closing chan struct{} // closed when Close starts

	cmds     chan command
	finished chan struct{} // closed when the result goroutine has ended

	numAdded, numFlushed, numFailed                atomic.Uint64
	numIndexed, numCreated, numUpdated, numDeleted atomic.Uint64
	numPossibly                                    atomic.Uint64

	bufPool sync.Pool
}

var actions = map[string]int32{
	"":       C.ESBULK_OP_INDEX,
	"index":  C.ESBULK_OP_INDEX,
	"create": C.ESBULK_OP_CREATE,
	"update": C.ESBULK_OP_UPDATE,
	"delete": C.ESBULK_OP_DELETE,
}

func ms(d time.Duration) string {
	v := d.Milliseconds()
	if v < 1 {
		v = 1
	}
	return strconv.FormatInt(v, 10)
}

// readable says why path is not a readable file (or directory, with dir).
func readable(path string, dir bool) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() != dir {
		if dir {
			return errors.New("not a directory")
		}
		return errors.New("a directory, not a file")
	}
	if dir {
		return nil
	}
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	return fh.Close()
}

// fieldOf names the BulkIndexerConfig field that sets a libesbulk key
// (settings), for the errors of NewBulkIndexer; a key set through Config
// is named by itself.
var fieldOf = map[string]string{
	"urls": "Addresses", "max.inflight.per.node": "NumWorkers", "flush.bytes": "FlushBytes",
	"flush.interval.ms": "FlushInterval", "flush.docs": "FlushDocs", "bulk.pipeline": "Pipeline",
	"bulk.refresh": "Refresh", "auth.username": "Username", "auth.password": "Password",
	"auth.api_key": "APIKey", "auth.aws.region": "AWSRegion", "auth.aws.service": "AWSService",
	"auth.aws.access_key_id": "AWSCredentials", "auth.aws.secret_access_key": "AWSCredentials",
	"auth.aws.session_token": "AWSCredentials", "tls.ca.file": "CACertFile", "tls.ca.path": "CAPath",
	"tls.cert.file": "CertFile", "tls.key.file": "KeyFile", "tls.key.password": "KeyPassword",
	"tls.insecure": "InsecureSkipVerify", "routing.level": "RoutingLevel", "retry.max": "RetryMax",
	"retry.backoff.ms": "RetryBackoff", "retry.backoff.max.ms": "RetryBackoffMax",
	"delivery.timeout.ms": "DeliveryTimeout", "buffer.max.bytes": "BufferMaxBytes",
	"buffer.max.docs": "BufferMaxDocs", "request.timeout.ms": "Timeout", "http.headers": "Header",
}

// headerLines is h as http.headers: a "Name: value" line for each value,
// the names sorted (a canonical order: http.Header is a map).
func headerLines(h http.Header) (string, error) {
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		for _, v := range h[name] {
			if strings.ContainsAny(name, "\r\n") || strings.ContainsAny(v, "\r\n") {
				return "", &Error{Code: ErrCodeInvalidArg,
					Reason: "BulkIndexerConfig.Header " + strconv.Quote(name) + " holds a line break"}
			}
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(name + ": " + v)
		}
	}
	return b.String(), nil
}

// settings turns the config into libesbulk keys and values, in order.
func settings(cfg *BulkIndexerConfig) ([][2]string, error) {
	var kv [][2]string
	set := func(k, v string) { kv = append(kv, [2]string{k, v}) }
	if len(cfg.Addresses) == 0 {
		return nil, &Error{Code: ErrCodeInvalidArg, Reason: "BulkIndexerConfig.Addresses is empty"}
	}
	if strings.IndexByte(cfg.Index, 0) >= 0 {
		return nil, &Error{Code: ErrCodeInvalidArg,
			Reason: "BulkIndexerConfig.Index " + strconv.Quote(cfg.Index) + " contains a NUL byte"}
	}
	set("urls", strings.Join(cfg.Addresses, ","))
	if cfg.NumWorkers > 0 {
		n := cfg.NumWorkers
		if n > 64 {
			n = 64
		}
		set("max.inflight.per.node", strconv.Itoa(n))
	}
	if cfg.FlushBytes > 0 {
		n := cfg.FlushBytes
		if n < 1024 {
			n = 1024
		}
		set("flush.bytes", strconv.Itoa(n))
	}
	if cfg.FlushInterval > 0 {
		set("flush.interval.ms", ms(cfg.FlushInterval))
	}
	if cfg.FlushDocs > 0 {
		set("flush.docs", strconv.Itoa(cfg.FlushDocs))
	}
	if cfg.Pipeline != "" {
		set("bulk.pipeline", cfg.Pipeline)
	}
	if cfg.Refresh != "" {
		set("bulk.refresh", cfg.Refresh)
	}
	if cfg.Username != "" {
		set("auth.username", cfg.Username)
	}
	if cfg.Password != "" {
		set("auth.password", cfg.Password)
	}
	if cfg.APIKey != "" {
		set("auth.api_key", cfg.APIKey)
	}
	if cfg.Credentials != nil {
		if cfg.Username != "" || cfg.Password != "" || cfg.APIKey != "" || cfg.AWSRegion != "" {
			return nil, &Error{Code: ErrCodeInvalidArg,
				Reason: "BulkIndexerConfig.Credentials gives the credentials: set it or Username, Password, APIKey and AWSRegion, not both"}
		}
		for _, k := range []string{"auth.username", "auth.password", "auth.api_key", "auth.bearer"} {
			if _, ok := cfg.Config[k]; ok {
				return nil, &Error{Code: ErrCodeInvalidArg,
					Reason: "BulkIndexerConfig.Credentials and Config[\"" + k + "\"] are both set: set one"}
			}
		}
	}
	if (cfg.AWSRegion != "") != (cfg.AWSCredentials != nil) {
		return nil, &Error{Code: ErrCodeInvalidArg,
			Reason: "BulkIndexerConfig.AWSRegion and AWSCredentials go together: set both or neither"}
	}
	if cfg.AWSRegion != "" {
		// a managed domain answers at one endpoint; its nodes' addresses
		// are private (Config["topology.discovery"] still wins)
		set("topology.discovery", "false")
		set("auth.aws.region", cfg.AWSRegion)
		if cfg.AWSService != "" {
			set("auth.aws.service", cfg.AWSService)
		}
		for _, k := range []string{"auth.aws.access_key_id", "auth.aws.secret_access_key",
			"auth.aws.session_token"} {
			if _, ok := cfg.Config[k]; ok {
				return nil, &Error{Code: ErrCodeInvalidArg,
					Reason: "BulkIndexerConfig.AWSCredentials and Config[\"" + k + "\"] are both set: set one"}
			}
		}
	}
	for _, f := range []struct{ field, key, path string }{
		{"CACertFile", "tls.ca.file", cfg.CACertFile},
		{"CAPath", "tls.ca.path", cfg.CAPath},
		{"CertFile", "tls.cert.file", cfg.CertFile},
		{"KeyFile", "tls.key.file", cfg.KeyFile},
	} {
		if f.path == "" {
			continue
		}
		// the library reads them only when it connects: say it now
		if err := readable(f.path, f.field == "CAPath"); err != nil {
			return nil, &Error{Code: ErrCodeInvalidArg,
				Reason: fmt.Sprintf("BulkIndexerConfig.%s %q: %v", f.field, f.path, err)}
		}
		set(f.key, f.path)
	}
	if cfg.KeyPassword != "" {
		set("tls.key.password", cfg.KeyPassword)
	}
	if cfg.InsecureSkipVerify {
		set("tls.insecure", "true")
	}
	if cfg.RoutingLevel != "" {
		set("routing.level", cfg.RoutingLevel)
	}
	if cfg.RetryMax != nil {
		set("retry.max", strconv.Itoa(*cfg.RetryMax))
	}
	if cfg.RetryBackoff > 0 {
		set("retry.backoff.ms", ms(cfg.RetryBackoff))
	}
	if cfg.RetryBackoffMax > 0 {
		set("retry.backoff.max.ms", ms(cfg.RetryBackoffMax))
	}
	if cfg.DeliveryTimeout > 0 {
		set("delivery.timeout.ms", ms(cfg.DeliveryTimeout))
	}
	if cfg.BufferMaxBytes > 0 {
		set("buffer.max.bytes", strconv.FormatInt(cfg.BufferMaxBytes, 10))
	}
	if cfg.BufferMaxDocs > 0 {
		set("buffer.max.docs", strconv.FormatInt(cfg.BufferMaxDocs, 10))
	}
	if cfg.Timeout < 0 {
		return nil, &Error{Code: ErrCodeInvalidArg,
			Reason: "BulkIndexerConfig.Timeout " + cfg.Timeout.String() + " is negative (0 for the default, 30 s)"}
	}
	if cfg.Timeout > 0 {
		if _, ok := cfg.Config["request.timeout.ms"]; ok {
			return nil, &Error{Code: ErrCodeInvalidArg,
				Reason: "BulkIndexerConfig.Timeout and Config[\"request.timeout.ms\"] are both set: set one"}
		}
		set("request.timeout.ms", ms(cfg.Timeout))
	}
	if len(cfg.Header) > 0 {
		if _, ok := cfg.Config["http.headers"]; ok {
			return nil, &Error{Code: ErrCodeInvalidArg,
				Reason: "BulkIndexerConfig.Header and Config[\"http.headers\"] are both set: set one"}
		}
		lines, err := headerLines(cfg.Header)
		if err != nil {
			return nil, err
		}
		set("http.headers", lines)
	}
	if cfg.DebugLogger != nil {
		// every line the handle makes (Config["log.level"] may lower it)
		set("log.level", strconv.Itoa(LogDebug))
	}
	// Every item's SeqNo, PrimTerm and Version, as esutil's BulkIndexer gives
	// them (Config["result.meta"] = "false" spares the server writing them).
	set("result.meta", "true")
	for k, v := range cfg.Config {
		if k == "enqueue.timeout.ms" {
			return nil, &Error{Code: ErrCodeInvalidArg,
				Reason: "enqueue.timeout.ms cannot be set: Add waits on its context"}
		}
		if k == "result.failures_only" {
			// the items indexed would get no result: no OnSuccess, and
			// Flush and Close would wait for them for ever
			return nil, &Error{Code: ErrCodeInvalidArg,
				Reason: "result.failures_only cannot be set: every item gets its callback"}
		}
		set(k, v)
	}
	// Add never waits in C (it waits in Go, on its context).
	set("enqueue.timeout.ms", "0")
	return kv, nil
}

// NewBulkIndexer makes an indexer over the cluster at cfg.Addresses and
// starts its result goroutine. It does no I/O: the library reads the
// cluster in the background. Unknown Config keys and values out of range
// are reported here, as an *Error.
func NewBulkIndexer(cfg BulkIndexerConfig) (BulkIndexer, error) {
	kv, err := settings(&cfg)
	if err != nil {
		return nil, err
	}
	var creds [3]string
	if cfg.AWSCredentials != nil {
		if creds, err = awsRetrieve(cfg.AWSCredentials); err != nil {
			return nil, &Error{Code: ErrCodeInvalidArg, Reason: "BulkIndexerConfig.AWSCredentials: " + err.Error()}
		}
		kv = append(kv, awsKeys(creds)...)
	}
	if cfg.Credentials != nil {
		if creds, err = passRetrieve(cfg.Credentials); err != nil {
			return nil, &Error{Code: ErrCodeInvalidArg, Reason: "BulkIndexerConfig.Credentials: " + err.Error()}
		}
		kv = append(kv, passKeys(creds)...)
	}
	errstr := (*C.char)(C.malloc(errstrBytes))
	defer C.free(unsafe.Pointer(errstr))
	conf, bad, rc := makeConf(kv, errstr)
	if conf == nil && bad < 0 {
		return nil, &Error{Code: ErrCodeNoMem}
	}
	if conf == nil {
		p := kv[bad]
		reason := C.GoString(errstr)
		if v, ok := cfg.Config[p[0]]; ok && v == p[1] {
			reason = "BulkIndexerConfig.Config[" + strconv.Quote(p[0]) + "]: " + reason
		} else if cfg.Credentials != nil && (p[0] == "auth.username" || p[0] == "auth.password" || p[0] == "auth.api_key") {
			reason = "BulkIndexerConfig.Credentials: " + reason
		} else if f, ok := fieldOf[p[0]]; ok {
			// the field the program set, and the library's words
			reason = "BulkIndexerConfig." + f + ": " + reason
		}
		return nil, &Error{Code: ErrCode(rc), Reason: reason}
	}
	defer C.esbulk_conf_destroy(conf)
	eb := C.esbulk_new(conf, errstr, errstrBytes)
	if eb == nil {
		return nil, &Error{Code: ErrCodeInvalidArg, Reason: C.GoString(errstr)}
	}
	b := &indexer{
		cfg:      cfg,
		eb:       eb,
		room:     make(chan struct{}),
		closing:  make(chan struct{}),
		cmds:     make(chan command),
		finished: make(chan struct{}),
	}
	b.bufPool.New = func() interface{} { return new(bytes.Buffer) }
	go b.run()
	if cfg.AWSCredentials != nil {
		go b.refresh(creds, b.cfg.AWSRefresh, "AWSCredentials", func() ([3]string, error) {
			return awsRetrieve(b.cfg.AWSCredentials)
		}, b.awsUpdate)
	}
	if cfg.Credentials != nil {
		go b.refresh(creds, b.cfg.CredentialsRefresh, "Credentials", func() ([3]string, error) {
			return passRetrieve(b.cfg.Credentials)
		}, func(c [3]string) error { return b.updateAuth(passKeys(c)) })
	}
	return b, nil
}

// makeConf is a new configuration with kv set, in order. When a key is
// refused: nil, its index in kv and the library's code (its words in
// errstr); out of memory: nil, -1.
func makeConf(kv [][2]string, errstr *C.char) (*C.esbulk_conf_t, int, C.esbulk_err_t) {
	conf := C.esbulk_conf_new()
	if conf == nil {
		return nil, -1, C.ESBULK_ERR_NOMEM
	}
	for i, p := range kv {
		ck, cv := C.CString(p[0]), C.CString(p[1])
		rc := C.esbulk_conf_set(conf, ck, cv, errstr, errstrBytes)
		C.free(unsafe.Pointer(ck))
		C.free(unsafe.Pointer(cv))
		if rc != C.ESBULK_OK {
			C.esbulk_conf_destroy(conf)
			return nil, i, rc
		}
	}
	return conf, 0, C.ESBULK_OK
}

// awsRetrieve calls an AWSCredentials function, within 30 s.
func awsRetrieve(f func(context.Context) (string, string, string, error)) ([3]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id, secret, token, err := f(ctx)
	if err == nil && (id == "" || secret == "") {
		err = errors.New("no access key id or secret access key")
	}
	return [3]string{id, secret, token}, err
}

// awsKeys: the auth.aws.* keys of credentials (id, secret, token).
func awsKeys(c [3]string) [][2]string {
	kv := [][2]string{{"auth.aws.access_key_id", c[0]}, {"auth.aws.secret_access_key", c[1]}}
	if c[2] != "" {
		kv = append(kv, [2]string{"auth.aws.session_token", c[2]})
	}
	return kv
}

// passRetrieve calls a Credentials function, within 30 s.
func passRetrieve(f func(context.Context) (string, string, string, error)) ([3]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	user, password, apiKey, err := f(ctx)
	if err == nil && (user == "") == (apiKey == "") {
		err = errors.New("give a username and password, or an API key")
	}
	return [3]string{user, password, apiKey}, err
}

// passKeys: the auth.* keys of credentials (username, password, API key).
func passKeys(c [3]string) [][2]string {
	if c[2] != "" {
		return [][2]string{{"auth.api_key", c[2]}}
	}
	return [][2]string{{"auth.username", c[0]}, {"auth.password", c[1]}}
}

// refresh asks get again every `every` (a minute when 0) until Close
// begins, and updates the handle's credentials with update when they
// changed; a failure goes to OnError, named after the field.
func (b *indexer) refresh(last [3]string, every time.Duration, field string,
	get func() ([3]string, error), update func([3]string) error) {
	if every <= 0 {
		every = time.Minute
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-b.closing:
			return
		case <-t.C:
		}
		creds, err := get()
		if err == nil && creds != last {
			if err = update(creds); err == nil {
				last = creds
			}
		}
		if errors.Is(err, ErrClosed) {
			return // Close ran while the credentials were read: nothing to say
		}
		if err != nil && b.cfg.OnError != nil {
			b.cfg.OnError(context.Background(), &Error{Code: ErrCodeAuth,
				Reason: "BulkIndexerConfig." + field + ": " + err.Error() + " (the credentials in use stay)"})
		}
	}
}

// awsUpdate gives the handle AWS credentials, with the configuration's
// region and service.
func (b *indexer) awsUpdate(c [3]string) error {
	all := [][2]string{{"auth.aws.region", b.cfg.AWSRegion}}
	if b.cfg.AWSService != "" {
		all = append(all, [2]string{"auth.aws.service", b.cfg.AWSService})
	}
	return b.updateAuth(append(all, awsKeys(c)...))
}

// updateAuth gives the handle the credentials of kv (esbulk_auth_update).
func (b *indexer) updateAuth(kv [][2]string) error {
	errstr := (*C.char)(C.malloc(errstrBytes))
	defer C.free(unsafe.Pointer(errstr))
	conf, bad, rc := makeConf(kv, errstr)
	if conf == nil && bad < 0 {
		return &Error{Code: ErrCodeNoMem}
	}
	if conf == nil {
		return &Error{Code: ErrCode(rc), Reason: C.GoString(errstr)}
	}
	defer C.esbulk_conf_destroy(conf)
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.gone {
		return ErrClosed
	}
	if rc := C.esbulk_auth_update(b.eb, conf, errstr, errstrBytes); rc != C.ESBULK_OK {
		return &Error{Code: ErrCode(rc), Reason: C.GoString(errstr)}
	}
	return nil
}

func (b *indexer) roomChan() chan struct{} {
	b.roomMu.Lock()
	ch := b.room
	b.roomMu.Unlock()
	return ch
}

func (b *indexer) signalRoom() {
	if b.waiters.Load() == 0 {
		return
	}
	b.roomMu.Lock()
	close(b.room)
	b.room = make(chan struct{})
	b.roomMu.Unlock()
}

// Add implements BulkIndexer.
func (b *indexer) Add(ctx context.Context, item BulkIndexerItem) error {
	if b.closed.Load() {
		return ErrClosed
	}
	op, ok := actions[item.Action]
	if !ok {
		return &Error{Code: ErrCodeInvalidArg, Reason: "unknown action " + strconv.Quote(item.Action)}
	}
	index := item.Index
	if index == "" {
		index = b.cfg.Index
	}
	if strings.IndexByte(index, 0) >= 0 {
		// the library reads the index as a C string: it would be cut there
		return &Error{Code: ErrCodeInvalidArg, Reason: "Index " + strconv.Quote(index) + " contains a NUL byte"}
	}
	routing := item.Routing
	if routing == "" {
		routing = b.cfg.Routing
	}
	var flags C.int32_t
	var version, seqNo, primTerm C.int64_t
	var versionType, retries C.int32_t
	if item.Version != nil {
		flags |= C.ESBGO_VERSION
		version = C.int64_t(*item.Version)
		switch item.VersionType {
		case "", "external", "external_gt": // the server's two names of one type
			versionType = C.ESBULK_VERSION_EXTERNAL
		case "external_gte":
			versionType = C.ESBULK_VERSION_EXTERNAL_GTE
		default:
			return &Error{Code: ErrCodeInvalidArg,
				Reason: "VersionType " + strconv.Quote(item.VersionType) + ": only external (external_gt) and external_gte"}
		}
	}
	if item.Version == nil && item.VersionType != "" {
		// it would be ignored: the server's internal versioning
		return &Error{Code: ErrCodeInvalidArg, Reason: "VersionType " + strconv.Quote(item.VersionType) + " without a Version"}
	}
	if (item.IfSeqNo == nil) != (item.IfPrimaryTerm == nil) {
		return &Error{Code: ErrCodeInvalidArg, Reason: "IfSeqNo and IfPrimaryTerm go together"}
	}
	if item.IfSeqNo != nil {
		flags |= C.ESBGO_SEQ_NO
		seqNo, primTerm = C.int64_t(*item.IfSeqNo), C.int64_t(*item.IfPrimaryTerm)
	}
	// not on a delete: esutil sends the configuration's as the request's
	// ?require_alias, which the server applies to index, create and update
	// only, and the server ignores an item's on a delete line (the library
	// refuses it there)
	if (item.RequireAlias || b.cfg.RequireAlias) && op != C.ESBULK_OP_DELETE {
		flags |= C.ESBGO_REQUIRE_ALIAS
	}
	// on other actions ignored, as esutil does (and the server)
	if item.RetryOnConflict != nil && op == C.ESBULK_OP_UPDATE {
		flags |= C.ESBGO_RETRY_ON_CONFLICT
		r := *item.RetryOnConflict
		if r < -1 || r > 1000000 {
			r = -2 // out of int32 maybe: the library refuses it, by name
		}
		retries = C.int32_t(r)
	}

	// One Go buffer holds body, index + NUL, id, routing and errstr: it is
	// passed to C for the call only, and C copies from it once.
	buf := b.bufPool.Get().(*bytes.Buffer)
	defer b.bufPool.Put(buf)
	buf.Reset()
	if item.Body != nil {
		// the whole body, wherever the reader stands (as esutil)
		if _, err := item.Body.Seek(0, io.SeekStart); err != nil {
			return err
		}
		if _, err := buf.ReadFrom(item.Body); err != nil {
			return err
		}
		if _, err := item.Body.Seek(0, io.SeekStart); err != nil {
			return err
		}
	} else if op != C.ESBULK_OP_DELETE {
		return errNoBody
	}
	bodyLen := buf.Len()
	buf.WriteString(index)
	buf.WriteByte(0)
	buf.WriteString(item.DocumentID)
	buf.WriteString(routing)
	buf.Write(zeros[:])
	raw := buf.Bytes()
	base := unsafe.Pointer(&raw[0])
	at := func(off int) *C.char { return (*C.char)(unsafe.Add(base, off)) }
	indexOff := bodyLen
	idOff := indexOff + len(index) + 1
	routingOff := idOff + len(item.DocumentID)
	errOff := routingOff + len(routing)
	var bodyPtr *C.char
	if item.Body != nil {
		bodyPtr = at(0)
	}
	var idPtr, routingPtr *C.char
	if len(item.DocumentID) > 0 {
		idPtr = at(idOff)
	}
	if len(routing) > 0 {
		routingPtr = at(routingOff)
	}

	b.itemsMu.Lock()
	b.gens++
	gen := b.gens
	id := b.items.put(item, int32(op), ctx, gen)
	b.itemsMu.Unlock()

	waiting := false
	retry := roomRetry
	defer func() {
		if waiting {
			b.waiters.Add(-1)
		}
	}()
	for {
		// the room channel is taken before the attempt that may wait on
		// it, so that a release between the two is not missed; the first
		// attempt never waits, and needs none
		var room chan struct{}
		if waiting {
			room = b.roomChan()
		}
		// Close sets closed, then takes mu for writing once: an attempt
		// is either over by then or sees closed, so that nothing is
		// accepted after Close started (Close waits for all accepted).
		b.mu.RLock()
		var rc C.int32_t = C.ESBULK_ERR_CLOSED
		if !b.gone && !b.closed.Load() {
			rc = C.esbgo_add(b.eb, C.int32_t(op), at(indexOff), idPtr, C.size_t(len(item.DocumentID)),
				routingPtr, C.size_t(len(routing)), bodyPtr, C.size_t(bodyLen), flags, version,
				versionType, seqNo, primTerm, retries, C.uintptr_t(id), at(errOff), errstrBytes)
			if rc == C.ESBULK_OK {
				// numbered before Add returns (and before Close's
				// barrier ends), for the marks of Flush and Close
				b.itemsMu.Lock()
				if b.items.accept(id, gen, b.accs+1) {
					b.accs++
				} // else its result came first: nothing to wait for
				b.itemsMu.Unlock()
			}
		}
		b.mu.RUnlock()
		if rc == C.ESBULK_OK {
			b.numAdded.Add(1)
			return nil
		}
		if rc != C.ESBULK_ERR_QUEUE_FULL {
			b.forget(id)
			if rc == C.ESBULK_ERR_CLOSED {
				return ErrClosed
			}
			return &Error{Code: ErrCode(rc), Reason: C.GoString(at(errOff))}
		}
		if b.inResultGoroutine(ctx) {
			// only the result goroutine makes room: it must not wait for
			// itself (libesbulk's esbulk_add never waits in a callback)
			b.forget(id)
			return &Error{Code: ErrCodeQueueFull,
				Reason: "the buffer is full, and Add from a callback never waits (only the result goroutine makes room)"}
		}
		if !waiting {
			waiting = true
			b.waiters.Add(1)
			continue // the room channel taken before was maybe already closed
		}
		t := time.NewTimer(retry)
		select {
		case <-ctx.Done():
			t.Stop()
			b.forget(id)
			return ctx.Err()
		case <-b.closing:
			t.Stop()
			b.forget(id)
			return ErrClosed
		case <-room:
			retry = roomRetry
		case <-t.C:
			if retry < roomRetryMax {
				retry *= 2
			}
		}
		t.Stop()
	}
}

func (b *indexer) forget(id uint64) {
	b.itemsMu.Lock()
	b.items.take(id)
	b.itemsMu.Unlock()
}

// Flush implements BulkIndexer.
func (b *indexer) Flush(ctx context.Context) error {
	if b.inResultGoroutine(ctx) {
		return &Error{Code: ErrCodeInCallback,
			Reason: "Flush called from a callback (it would wait for the callback itself)"}
	}
	if b.closed.Load() {
		return ErrClosed
	}
	return b.ask(ctx, false)
}

// Close implements BulkIndexer.
func (b *indexer) Close(ctx context.Context) error {
	if b.inResultGoroutine(ctx) {
		return &Error{Code: ErrCodeInCallback,
			Reason: "Close called from a callback (it would wait for the callback itself)"}
	}
	if b.closed.Swap(true) {
		// another Close is under way: wait for it, as long as ctx allows
		select {
		case <-b.finished:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	close(b.closing)
	// the barrier: every Add attempt under way ends, no later one is
	// accepted (each looks at closed under mu)
	b.mu.Lock()
	//nolint:staticcheck // an empty critical section, on purpose
	b.mu.Unlock()
	err := b.ask(ctx, true)
	<-b.finished
	return err
}

// ask hands a Flush or a Close to the result goroutine and waits for it. A
// Flush stops waiting when ctx ends; a Close always waits (the result
// goroutine honours ctx's deadline itself, and then fails what is left).
func (b *indexer) ask(ctx context.Context, closing bool) error {
	c := command{ctx: ctx, close: closing, done: make(chan error, 1)}
	select {
	case b.cmds <- c:
	case <-b.finished:
		return ErrClosed
	case <-ctx.Done():
		if !closing {
			return ctx.Err()
		}
		b.cmds <- c
	}
	if closing {
		return <-c.done
	}
	select {
	case err := <-c.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
