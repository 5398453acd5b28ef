package esbulk

/*
#include <esbulk.h>
#include <string.h>
*/
import "C"

import (
	"encoding/json"
	"time"
	"unsafe"
)

type statsJSON struct {
	Requests uint64 `json:"requests"`
	BytesRaw uint64 `json:"bytes_uncompressed"`
	Retried  uint64 `json:"retried"`
	Pending  int64  `json:"pending"`
	MaxDocs  int64  `json:"buffer_max_docs"`
	Nodes    []struct {
		URL        string  `json:"url"`
		Name       *string `json:"name"`
		Seed       bool    `json:"seed"`
		QueuedDocs int64   `json:"queued_docs"`
		Inflight   int64   `json:"inflight"`
		Requests   int64   `json:"requests"`
		Errors     int64   `json:"errors"`
		Down       bool    `json:"down"`
		Latency    struct {
			P50 float64 `json:"p50"`
			P95 float64 `json:"p95"`
			P99 float64 `json:"p99"`
		} `json:"latency_ms"`
	} `json:"nodes"`
}

// Stats implements BulkIndexer.
func (b *indexer) Stats() BulkIndexerStats {
	st := BulkIndexerStats{
		NumAdded:    b.numAdded.Load(),
		NumFlushed:  b.numFlushed.Load(),
		NumFailed:   b.numFailed.Load(),
		NumIndexed:  b.numIndexed.Load(),
		NumCreated:  b.numCreated.Load(),
		NumUpdated:  b.numUpdated.Load(),
		NumDeleted:  b.numDeleted.Load(),
		NumPossibly: b.numPossibly.Load(),
	}
	// A callback may run before its Add has counted the item: never below 0.
	if st.Pending = int64(st.NumAdded) - int64(st.NumFlushed) - int64(st.NumFailed); st.Pending < 0 {
		st.Pending = 0
	}
	var raw []byte
	b.mu.RLock()
	if b.gone {
		raw = b.final
	} else if js := C.esbulk_stats_json(b.eb); js != nil {
		raw = C.GoBytes(unsafe.Pointer(js), C.int(C.strlen(js)))
		C.esbulk_free(unsafe.Pointer(js))
	}
	b.mu.RUnlock()
	var sj statsJSON
	if raw != nil && json.Unmarshal(raw, &sj) == nil {
		st.NumRequests = sj.Requests
		st.FlushedBytes = sj.BytesRaw
		st.NumRetried = sj.Retried
		st.BufferMaxDocs = sj.MaxDocs
		for _, n := range sj.Nodes {
			ns := NodeStats{URL: n.URL, Seed: n.Seed, QueuedDocs: n.QueuedDocs,
				Inflight: n.Inflight, Requests: n.Requests, Errors: n.Errors, Down: n.Down,
				LatencyP50: msDur(n.Latency.P50), LatencyP95: msDur(n.Latency.P95),
				LatencyP99: msDur(n.Latency.P99)}
			if n.Name != nil {
				ns.Name = *n.Name
			}
			st.Nodes = append(st.Nodes, ns)
		}
	}
	return st
}

func msDur(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
