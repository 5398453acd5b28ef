#!/usr/bin/env python3
"""Mutation checks: applies small mutations of lib/ (and of the tools' pure
code: tools/, kafka/), one at a time, to a copy
of the sources, builds the library and the fast unit tests (tests/check_*.c,
and the fuzz harnesses replayed over their committed inputs, as
tests/fuzz_replay.test does, and for lib/sha256.c tests/sha256_arm64.test)
and runs them; a mutation is caught when at
least one of them fails. Prints a
table mutation -> the tests that caught it, and fails if any survives.

    scripts/check-mutants.py [--builddir DIR] [--keep] [NAME...]

Each mutation is an exact text replacement that must match once: a change
of lib/ that breaks it makes the script fail (refresh the mutation then)."""
import argparse, os, shutil, subprocess, sys, tempfile, time

# name, file, old text, new text, what a reviewer would call it
MUTANTS = [
    ("shard-div-no-bias", "lib/route.c",
     """    s->bias = (uint32_t)(((uint64_t)1 << 31) % s->mod);""",
     """    s->bias = 0;""",
     "the prepared shard function forgets that the hash was shifted by 2^31"),
    ("place-name-prefix", "lib/place.c",
     """        if (p->name_len[i] != index_len || memcmp(e->name, index, index_len) != 0)""",
     """        if (memcmp(e->name, index, index_len) != 0)""",
     "the placement takes an index whose name only begins like the one added"),
    ("docopts-version-without-id", "lib/ndjson.c",
     """    else if (!has_id && o->has_version)""",
     """    else if (0 && !has_id && o->has_version)""",
     "an external version on a document without an _id goes out under a generated one"),
    ("add-opts-id-unchecked", "lib/add.c",
     """esbulk__docopts_check(opts, op, id_len > 0, errstr, errstr_size)""",
     """esbulk__docopts_check(opts, op, 1, errstr, errstr_size)""",
     "esbulk_add_opts checks the options as if every document had an _id"),
    ("record-zero-short", "lib/docmem.c",
     """    v[8] = z, v[9] = z, v[10] = z, v[11] = z, v[12] = z, v[13] = z, v[14] = z, v[15] = z;""",
     """    v[8] = z, v[10] = z, v[11] = z, v[12] = z, v[13] = z, v[14] = z, v[15] = z;""",
     "a record taken keeps 16 bytes of the document before it"),
    ("block-not-prefaulted", "lib/docmem.c",
     """    if (b != NULL)
        prefault(dm, b->data, BLOCK_BYTES);""",
     """    if (b != NULL && 0)
        prefault(dm, b->data, BLOCK_BYTES);""",
     "a new block's pages fault in one by one as adds write them"),
    ("spin-lock-no-exclusion", "lib/spin.h",
     """    while (atomic_exchange_explicit(&s->held, 1, memory_order_acquire) != 0) {""",
     """    while (0 && atomic_exchange_explicit(&s->held, 1, memory_order_acquire) != 0) {""",
     "the placement's lock lets every thread in at once"),
    ("free-list-splice-drops", "lib/docmem.c",
     """        bottom[k]->next = dm->free_docs[k];""",
     """        bottom[k]->next = NULL;""",
     "records given back as a list lose the slot's free records before them"),
    ("block-race-overwrites", "lib/docmem.c",
     """            if (dm->cur[slot] == NULL) {""",
     """            if (1) {""",
     "a block allocated while another add put one in the slot replaces it"),
    ("drops-run-lost", "lib/docmem.c",
     """    if (run->block != NULL)
        block_unref_n(run->block, run->n);""",
     """    if (run->block != NULL && run->n > 1)
        block_unref_n(run->block, run->n - 1);""",
     "a run of drops gives back one share fewer than it counted"),
    ("retire-keeps-reservation", "lib/docmem.c",
     """    block_unref_n(b, 1 + RESERVE - b->taken);""",
     """    block_unref_n(b, 1);""",
     "a retired block keeps the rest of its reservation (it is never reused)"),
    ("route-sum-64bit", "lib/route.c",
     """            sum = (uint32_t)hash + (uint32_t)esbulk__floor_mod(id_hash, layout->partition_size);
            hash = esbulk__u32_to_i32(sum);""",
     """            {
                int64_t s64 = (int64_t)hash + esbulk__floor_mod(id_hash, layout->partition_size);
                int32_t rsh = esbulk_layout_routing_shards(layout);
                (void)sum;
                if (layout->fn != ESBULK_ROUTE_MOD && rsh >= layout->shards &&
                    rsh % layout->shards == 0) {
                    *shard = (int32_t)(((s64 % rsh) + rsh) % rsh / (rsh / layout->shards));
                    return ESBULK_OK;
                }
                hash = (int32_t)(uint32_t)s64;
            }""",
     "the partition sum computed in 64 bits, without int32 wraparound"),
    ("item-429-failed", "lib/core_answer.c",
     """        } else if (it->klass == ESBULK__ITEM_RETRY) {""",
     """        } else if (it->klass == ESBULK__ITEM_RETRY && it->status != 429) {""",
     "item-level 429s failed instead of retried"),
    ("possibly-as-indexed", "lib/core_retry.c",
     """    esbulk__core_deliver(c, doc, doc->ambiguous ? ESBULK_OUTCOME_POSSIBLY : ESBULK_OUTCOME_FAILED,
                         dec == ESBULK__RETRY_GIVE_UP_MAX ? ESBULK_ERR_RETRIES_EXHAUSTED""",
     """    esbulk__core_deliver(c, doc, doc->ambiguous ? ESBULK_OUTCOME_INDEXED : ESBULK_OUTCOME_FAILED,
                         dec == ESBULK__RETRY_GIVE_UP_MAX ? ESBULK_ERR_RETRIES_EXHAUSTED""",
     "a document given up after an ambiguous attempt delivered INDEXED, not POSSIBLY"),
    ("no-id-possibly-as-indexed", "lib/core_retry.c",
     """        esbulk__core_deliver(c, doc, ESBULK_OUTCOME_POSSIBLY, err, status, type, why, cause_type,
                             cause_reason);
        return;""",
     """        esbulk__core_deliver(c, doc, ESBULK_OUTCOME_INDEXED, err, status, type, why, cause_type,
                             cause_reason);
        return;""",
     "an ambiguous failure of a document without _id delivered INDEXED"),
    ("413-fails-batch", "lib/core_answer.c",
     """        if (s->ndocs == 1) {
            esbulk__core_deliver(c, s->docs[0], ESBULK_OUTCOME_FAILED, ESBULK_ERR_HTTP, 413,""",
     """        for (i = 1; i < s->ndocs; i++)
            esbulk__core_deliver(c, s->docs[i], ESBULK_OUTCOME_FAILED, ESBULK_ERR_HTTP, 413, NULL, "413",
                                 NULL, NULL);
        if (s->ndocs >= 1) {
            esbulk__core_deliver(c, s->docs[0], ESBULK_OUTCOME_FAILED, ESBULK_ERR_HTTP, 413,""",
     "HTTP 413 fails the whole batch instead of splitting it"),
    ("400-fails-batch", "lib/core_answer.c",
     """        if (a->status == 400 && s->ndocs > 1 && resp.error_type != NULL) {""",
     """        if (a->status == 400 && s->ndocs > 1 && 0) {""",
     "a request refused whole (400) for one document fails every document in it"),
    ("400-split-uncapped", "lib/core_send.c",
     """    if (dest->q.head != NULL && dest->q.head->split > 0 && dest->q.head->split < max_docs)""",
     """    if (0 && dest->q.head != NULL && dest->q.head->split > 0 && dest->q.head->split < max_docs)""",
     "the halves of a request refused whole go out together again"),
    ("id-over-512-taken", "lib/add.c",
     """    if (id_len > ESBULK__ID_MAX) {""",
     """    if (id_len > ESBULK__KEY_MAX) {""",
     "an _id longer than the server takes is accepted, and fails its whole request"),
    ("node-down-said-always", "lib/core_target.c",
     """        esbulk__log(&c->log, t->down_said ? ESBULK_LOG_DEBUG : ESBULK_LOG_WARNING, "io",""",
     """        esbulk__log(&c->log, ESBULK_LOG_WARNING, "io",""",
     "a node down is said at warning level at every recheck, not once per outage"),
    ("index-read-failure-said-always", "lib/core.c",
     """        esbulk__log(&c->log, ix->fetch_failed ? ESBULK_LOG_DEBUG : ESBULK_LOG_WARNING,""",
     """        esbulk__log(&c->log, ESBULK_LOG_WARNING,""",
     "an index read that keeps failing is said at warning level at every try"),
    ("seed-failure-said-always", "lib/topology_read.c",
     """                    atomic_exchange(&topo->seed_down[i], 1) ? ESBULK_LOG_DEBUG""",
     """                    atomic_exchange(&topo->seed_down[i], 1) && 0 ? ESBULK_LOG_DEBUG""",
     "a seed that does not answer is said at warning level at every read"),
    ("cluster-read-by-each", "lib/topology.c",
     """        if (!topo->cluster_reading)\n            break;""",
     """        if (1 || !topo->cluster_reading)\n            break;""",
     "every topology worker that asks reads the cluster itself, while one read is in flight"),
    ("forced-read-shares-older", "lib/topology.c",
     """        if (force && topo->cluster_done > since) {""",
     """        if (force && topo->cluster_done >= since && topo->cluster_done > 0) {""",
     "a cluster read asked to begin after the ask takes the outcome of one begun before"),
    ("cluster-ask-waits-out-read", "lib/topology.c",
     """    if (fresh == ESBULK__CLUSTER_JOIN && topo->cluster_reading)\n        since--;""",
     """    if (0)\n        since--;""",
     "the I/O thread's cluster asks wait out a read in flight and read again (two reads at every start)"),
    ("route-cache-any-entry", "lib/core_route.c",
     """        if (d->hint_serial != 0 && rc->gen == gen && rc->serial == d->hint_serial &&""",
     """        if (d->hint_serial != 0 && rc->gen == gen &&""",
     "a document takes the destination cached for another index's entry with the same shard"),
    ("route-cache-keeps-unrouted", "lib/core_route.c",
     """        if (dest != ROUTE_WAIT && dest != NULL && !d->unrouted && d->hint_serial != 0 &&""",
     """        if (dest != ROUTE_WAIT && dest != NULL && d->hint_serial != 0 &&""",
     "an unrouted document's destination is cached for the documents with its hint"),
    ("route-cache-other-calls", "lib/core_route.c",
     """    if ((gen = ++c->rcache_gen) == 0) {""",
     """    if ((gen = c->rcache_gen |= 1) == 0) {""",
     "the route cache outlives its list: a document hinted by a replaced entry goes where that entry sent it"),
    ("full-buffer-builds-first", "lib/handoff.c",
     """    if (!atomic_load_explicit(&eb->buffer_full, memory_order_relaxed))\n        return ESBULK_OK;""",
     """    if (1)\n        return ESBULK_OK;""",
     "an add into a full buffer that will not wait builds its document (checks and copies its body) before it is refused"),
    ("full-buffer-refuses-waiting-add", "lib/handoff.c",
     """        (esbulk__conf_int(eb->conf, ESBULK__C_ENQUEUE_TIMEOUT_MS) == 0 ||
         esbulk__caller_self(eb) != NULL))""",
     """        1)""",
     "an add that would wait for room is refused at once by the early check"),
    ("cause-dropped-at-give-up", "lib/core_retry.c",
     """            status, type, why, cause_type, cause_reason);""",
     """            status, type, why, NULL, NULL);""",
     "a document that ran out of retries loses its last attempt's caused_by"),
    ("cause-outlives-attempt", "lib/doc.c",
     """    free(m->cause_type);
    free(m->cause_reason);
    m->error_type""",
     """    if (cause_reason != NULL) {
        free(m->cause_type);
        free(m->cause_reason);
    } else {
        cause_reason = m->cause_reason;
        cause_type = m->cause_type;
    }
    m->error_type""",
     "an attempt that failed without a cause keeps an earlier attempt's"),
    ("cause-joined-then-cut", "lib/response.c",
     """    *reason = joined;
    free(*cause_type);""",
     """    *reason = dup_capped(joined, strlen(joined));
    free(joined);
    free(*cause_type);""",
     "a long reason and cause joined are cut again: the reason no longer ends with the cause"),
    ("custom-headers-not-sent", "lib/http.c",
     """    if (opts->headers != NULL && add_custom_headers(headers, opts->headers))""",
     """    if (0 && opts->headers != NULL && add_custom_headers(headers, opts->headers))""",
     "http.headers is accepted and never sent"),
    ("empty-header-dropped", "lib/http.c",
     """            memcpy(line + h.name_len, ";", 2);""",
     """            memcpy(line + h.name_len, ":", 2);""",
     "a header with an empty value goes as \"Name:\", which curl takes for \"remove it\""),
    ("owned-header-let-through", "lib/conf.c",
     """        if (strlen(owned[i].name) == h->name_len &&""",
     """        if (strlen(owned[i].name) == h->name_len + 1 &&""",
     "http.headers lets a header through that the library sets itself (Content-Type, Authorization)"),
    ("header-value-ctl-allowed", "lib/conf.c",
     """        if ((unsigned char)*q < 0x20 ? *q != '\\t' : *q == 0x7f) {""",
     """        if ((unsigned char)*q < 0x0d ? *q != '\\t' : *q == 0x7f) {""",
     "http.headers lets a CR (a header injected into the request) into a value"),
    ("give-up-cuts-cause", "lib/core_retry.c",
     """    char why[ESBULK__RESP_ERROR_MAX + 256];""",
     """    char why[512];""",
     "retries exhausted: the library's words cut a long reason before its cause"),
    ("timeout-said-always", "lib/core_answer.c",
     """        esbulk__log(&c->log, s->target->slow_said ? ESBULK_LOG_DEBUG : ESBULK_LOG_WARNING, "io",""",
     """        esbulk__log(&c->log, ESBULK_LOG_WARNING, "io",""",
     "a request that times out is said at warning level at every try"),
    ("bulk-waits-server-default", "lib/io.c",
     """        snprintf(t, sizeof(t), "&timeout=%lldms", (long long)(ms > 0 ? ms : 1));""",
     """        snprintf(t, sizeof(t), "&pretty=false");""",
     "the server may hold a bulk request past request.timeout.ms (its own 1m bulk timeout)"),
    ("unrouted-takes-every-slot", "lib/core_target.c",
     """    if (dest->kind == DEST_UNROUTED && c->active_routed > 0 && c->cf.max_inflight > 1)""",
     """    if (0)""",
     "unrouted requests (index creation) may hold every request slot of a node"),
    ("unrouted-always-limited", "lib/core_target.c",
     """    if (dest->kind == DEST_UNROUTED && c->active_routed > 0 && c->cf.max_inflight > 1)""",
     """    if (dest->kind == DEST_UNROUTED && c->cf.max_inflight > 1)""",
     "unrouted requests keep a slot free even when nothing routed waits"),
    ("retry-forgets-last-error", "lib/core_retry.c",
     """        esbulk__doc_set_outcome(doc, doc->outcome, err, doc->status, type,
                                reason ? reason : "failed", cause_type, cause_reason);""",
     """        (void)0;""",
     "a document closed or expired while waiting for its retry is not told why its attempt failed"),
    ("unsent-drops-error-type", "lib/core_retry.c",
     """        snprintf(type, sizeof(type), "%s", last_type);
        t = type;""",
     """        snprintf(type, sizeof(type), "%s", last_type);
        t = NULL;""",
     "the last attempt's error type is dropped from an unsent document's outcome"),
    ("flush-waits-past-its-mark", "lib/handoff.c",
     """        if (d->seq < m->upto)
            m->left--;""",
     """        if (d->seq <= m->upto)
            m->left--;""",
     "a flush counts a document added after it among those it waits for"),
    ("server-id-not-kept", "lib/core_answer.c",
     """    if (m == NULL && !other_index && (d->id != NULL || it->id == NULL) &&""",
     """    if (m == NULL && !other_index &&""",
     "the _id the server chose is not kept for a document added without one"),
    ("request-body-from-first-doc", "lib/io.c",
     """        memcpy(out + n, d->p + x->rd_off, k);""",
     """        memcpy(out + n, s->lines[0].p + x->rd_off, k);""",
     "a request's body repeats its first document's lines"),
    ("ahead-link-from-popped", "lib/doc.c",
     """                ahead->doc[i] = NULL;""",
     """                (void)0;""",
     "a document that left its queue stays in the ahead ring: a later push writes its record"),
    ("ahead-kept-after-take", "lib/doc.c",
     """    esbulk__queue_append(dst, src);
    memset(ahead, 0, sizeof(*ahead));""",
     """    esbulk__queue_append(dst, src);""",
     "the adding thread keeps linking from documents the I/O thread took"),
    ("outcomes-ring-kept-after-take", "lib/core.c",
     """    esbulk__queue_take_ahead(out, &c->done, &c->done_ahead);""",
     """    esbulk__queue_append(out, &c->done);""",
     "the core keeps linking from outcomes the serving thread already holds"),
    ("expired-kept-in-ahead", "lib/core_retry.c",
     """        esbulk__core_expire_ordered(c, &dest->q, &dest->ahead, now);""",
     """        esbulk__core_expire_ordered(c, &dest->q, NULL, now);""",
     "a document expired from a destination's queue stays in its ahead ring"),
    ("answer-slot-waits", "lib/io.c",
     """        } while (read_completions(eb, io, now) > 0);""",
     """        } while (read_completions(eb, io, now) > 0 && 0);""",
     "a request slot freed by an answer waits for the I/O thread's next wake-up"),
    ("meta-always-asked", "lib/io.c",
     """        (!failures_only && meta &&""",
     """        (!failures_only && (meta || 1) &&""",
     "every answer carries _seq_no, _primary_term and _version without result.meta"),
    ("result-not-derived", "lib/core_answer.c",
     """                      ? result_from_status((esbulk_op_t)d->op, it->status)""",
     """                      ? (result_from_status((esbulk_op_t)d->op, it->status), NULL)""",
     "a success answered with its status alone gets no result"),
    ("update-result-not-asked", "lib/core_send.c",
     """        s->want_result |= d->op == ESBULK_OP_UPDATE;""",
     """        s->want_result |= 0;""",
     "a request holding an update does not ask for the items' results (noop lost)"),
    ("503-not-retried", "lib/response_tree.c",
     """    if (http_status == 429 || http_status == 503) {
        out->klass = ESBULK__RESP_RETRY;""",
     """    if (http_status == 429) {
        out->klass = ESBULK__RESP_RETRY;""",
     "a request-level 503 classified as a plain failure, not retried"),
    ("json-escape-0x1f", "lib/text.c",
     """        if (c >= 0x20 && c != '"' && c != '\\\\')""",
     """        if (c >= 0x1f && c != '"' && c != '\\\\')""",
     "the writer leaves control character U+001F unescaped (invalid JSON)"),
    ("surrogate-high-bits", "lib/murmur3.c",
     """            m3_unit(&st, 0xd800 + (v >> 10));""",
     """            m3_unit(&st, 0xd800 + ((v >> 10) & 0xff));""",
     "the high surrogate of a code point from U+50000 up loses its top bits"),
    ("conf-max-exclusive", "lib/conf.c",
     """        if (v < prop->min || v > prop->max) {""",
     """        if (v < prop->min || v >= prop->max) {""",
     "an integer setting refuses its documented maximum"),
    ("state-transport-default-layout", "lib/topology_read.c",
     """    if (err != ESBULK_OK)
        goto out; /* not done: that would hand out a default layout as the index's */""",
     """    if (err != ESBULK_OK)
        goto done;""",
     "a failed alias lookup hands out a default one-shard layout (the fuzzer's find)"),
    ("hint-from-any-entry", "lib/core_route.c",
     """    if (doc->hint_serial != 0 && doc->hint_serial == e->serial)""",
     """    if (doc->hint_serial != 0)""",
     "the adding thread's shard trusted though computed from another index entry"),
    ("hint-names-any-index", "lib/core_route.c",
     """        ((hint_serial != 0 && c->last_ix->e != NULL && c->last_ix->e->serial == hint_serial) ||""",
     """        ((hint_serial != 0 && c->last_ix->e != NULL) ||""",
     "a document with any hint taken as the last index's, whatever its own index"),
    ("murmur3-ascii-length", "lib/murmur3.c",
     """    st.nbytes = (uint32_t)(i * 2);""",
     """    st.nbytes = (uint32_t)i;""",
     "the ASCII fast path counts bytes of UTF-8, not of UTF-16"),
    ("quick-key-without-value", "lib/response_fast.c",
     """    return p < end && *p == '"' ? str_scan(p, end, out) : NULL;""",
     """    return p < end && *p != '"' ? p : p < end ? str_scan(p, end, out) : NULL;""",
     "the fast path skips a string key without its value, as if it were absent"),
    ("expiry-walks-every-retry", "lib/core_retry.c",
     """        if (now < b->min_deadline) {""",
     """        if (now < b->min_deadline && 0) {""",
     "the expiry scan walks every waiting retry, deadline near or not"),
    ("look-walks-waiting-bucket", "lib/core_retry.c",
     """        /* whole buckets: only the documents due are walked */""",
     """        if (c->nrb > 1) {
            esbulk__doc_t *w;
            for (w = c->rb[c->nrb - 1].q.head; w != NULL; w = w->next)
                c->retry_walked++;
        }""",
     "each look walks a waiting bucket besides the due ones (the old walk of all)"),
    ("per-id-wakes-at-earliest", "lib/core.c",
     """        if (dest->retry_q.count > 0 && dest->retry_latest < due)
            due = dest->retry_latest;""",
     """        {
            esbulk__doc_t *w;
            for (w = dest->retry_q.head; w != NULL; w = w->next)
                if (w->retry_at_ms < due)
                    due = w->retry_at_ms;
        }""",
     "per_id retries wake the I/O thread at the earliest one's time (it spins)"),
    ("curl-handle-per-request", "lib/io.c",
     """        if (io->nspare_easy < SPARE_EASY) {""",
     """        if (io->nspare_easy < 0) {""",
     "a curl handle made and freed for every request"),
    ("request-arrays-per-request", "lib/core_send.c",
     """    if (c->nspare_sends < ESBULK__CORE_SPARE_SENDS &&""",
     """    if (c->nspare_sends < ESBULK__CORE_SPARE_SENDS - ESBULK__CORE_SPARE_SENDS &&""",
     "a request's arrays made and freed for every request"),
    ("kept-requests-unbounded-bytes", "lib/core_send.c",
     """    if (c->nspare_sends < ESBULK__CORE_SPARE_SENDS && bytes <= max) {""",
     """    if (c->nspare_sends < ESBULK__CORE_SPARE_SENDS && bytes <= max + bytes) {""",
     "answered requests kept past the bytes their arrays may hold"),
    ("answer-items-per-answer", "lib/response_fast.c",
     """            if (scratch == NULL) {
                out->items = malloc(expected_items * sizeof(*out->items));""",
     """            if (scratch == NULL || expected_items > 0) {
                out->items = malloc(expected_items * sizeof(*out->items));""",
     "an answer's items allocated for every answer, the caller's scratch unused"),
    ("failures-only-frees-one-by-one", "lib/handoff.c",
     """    esbulk__doc_free_list(drop.head);""",
     """    while ((d = esbulk__queue_pop(&drop)) != NULL)
        esbulk__doc_free(d);""",
     "result.failures_only: each success's record given back under a lock of its own"),
    ("failures-only-live-miscounted", "lib/handoff.c",
     """        esbulk__live_done_list(eb, drop.head, drop.count);""",
     """        esbulk__live_done_list(eb, drop.head, drop.count > 1 ? drop.count - 1 : drop.count);""",
     "result.failures_only: successes served with no flush waiting miscounted (a flush waits)"),
    ("malloc-tune-skipped", "lib/esbulk.c",
     """    if (esbulk__conf_int(conf, ESBULK__C_MALLOC_TUNE))""",
     """    if (0)""",
     "malloc.tune: glibc's thresholds never raised (curl's buffers trimmed and faulted in again)"),
    ("malloc-tune-ignores-false", "lib/esbulk.c",
     """    if (esbulk__conf_int(conf, ESBULK__C_MALLOC_TUNE))""",
     """    if (1)""",
     "malloc.tune=false still raises glibc's thresholds"),
    ("interval-from-pickup", "lib/core_route.c",
     """    esbulk__core_route_push_since(c, d, 0, added_ms < now ? added_ms : now, now);""",
     """    (void)added_ms;
    esbulk__core_route_push_since(c, d, 0, now, now);""",
     "flush.interval.ms and topology.wait.ms count from when the I/O thread takes a document, "
     "not from its add"),
    ("served-live-not-lowered", "lib/handoff.c",
     """        eb->live -= n;""",
     """        eb->live -= n > 1 ? n - 1 : 0;""",
     "results served with no flush waiting still count as unserved (the next flush waits for them)"),
    ("force-mark-kept", "lib/handoff.c",
     """    if (eb->force_mark.left == 0)
        esbulk__mark_remove(eb, &eb->force_mark);""",
     """    if (0)
        esbulk__mark_remove(eb, &eb->force_mark);""",
     "after a flush, every result served walks the marks for good (the spent force mark stays)"),
    ("deliver-drops-kept-body", "lib/core_answer.c",
     """    if (!c->cf.keep_body || outcome == ESBULK_OUTCOME_INDEXED)
        esbulk__doc_drop_lines_run(d, &c->drops);""",
     """    esbulk__doc_drop_lines_run(d, &c->drops);""",
     "result.keep_body: a failed document's body given back before its result is served"),
    ("deliver-keeps-success-lines", "lib/core_answer.c",
     """    if (!c->cf.keep_body || outcome == ESBULK_OUTCOME_INDEXED)
        esbulk__doc_drop_lines_run(d, &c->drops);""",
     """    if (!c->cf.keep_body)
        esbulk__doc_drop_lines_run(d, &c->drops);""",
     "result.keep_body: an indexed document's body kept and shown as if for a dead letter"),
    ("deliver-held-bytes-uncounted", "lib/core_answer.c",
     """    c->counts.held_bytes += d->body_bytes;""",
     """    c->counts.held_bytes += 0;""",
     "documents delivered keep counting against buffer.max.bytes"),
    ("deliver-closed-uncounted", "lib/core_answer.c",
     """    if (err == ESBULK_ERR_CLOSED)
        c->counts.closed++;""",
     """    if (err == ESBULK_ERR_CLOSED && 0)
        c->counts.closed++;""",
     "the statistics' closed count stays 0"),
    ("take-done-run-not-ended", "lib/core.c",
     """    esbulk__drops_end(&c->drops);
    esbulk__queue_take_ahead(out, &c->done, &c->done_ahead);""",
     """    esbulk__queue_take_ahead(out, &c->done, &c->done_ahead);""",
     "the lines delivered last are handed over with their block's shares not given back"),
    ("status-only-item-wrong-meta", "lib/response_fast.c",
     """    item->seq_no = item->primary_term = item->version = -1;
    item->error_type = item->error_reason = item->cause_type = item->cause_reason = NULL;
    item->klass = ESBULK__ITEM_OK;
    return 1;""",
     """    item->seq_no = item->primary_term = item->version = 0;
    item->error_type = item->error_reason = item->cause_type = item->cause_reason = NULL;
    item->klass = ESBULK__ITEM_OK;
    return 1;""",
     "an item of the status alone read with _seq_no, _primary_term and _version 0, not absent"),
    ("status-only-item-byte-unchecked", "lib/response_fast.c",
     """load8(p + 16) == load8(cr + 16) && p[24] == '}') {""",
     """load8(p + 17) == load8(cr + 17)) {""",
     "the create item of the status alone compared with one of its bytes unchecked"),
    ("body-line-fast-no-newline", "lib/ndjson.c",
     """            buf->data[buf->len++] = '\\n';""",
     """            buf->data[buf->len] = '\\n';""",
     "a body without CR or LF written without its line's newline"),
    ("buffer-docs-no-floor", "lib/batch.c",
     """    if (docs < ESBULK__BUFFER_DOCS_MIN)
        docs = ESBULK__BUFFER_DOCS_MIN;""",
     """    if (docs < 1)
        docs = 1;""",
     "buffer.max.docs=0 with a small flush.docs sized to a few hundred documents"),
    ("buffer-docs-dests-not-max", "lib/batch.c",
     """    uint64_t n = nodes > 0 ? nodes : 1, q = dests > n ? dests : n, docs;""",
     """    uint64_t n = nodes > 0 ? nodes : 1, q = dests, docs;""",
     "the buffer sized without a full request queued for each node before any destination exists"),
    ("buffer-docs-unreachable-counted", "lib/core.c",
     """            nodes += c->cluster->nodes[i].http != NULL && c->cluster->nodes[i].reachable;""",
     """            nodes += c->cluster->nodes[i].http != NULL;""",
     "nodes out of reach counted in the buffer's size"),
    ("buffer-docs-conf-value", "lib/handoff.c",
     """                eb->buffered_docs + 1 <= eb->max_docs)""",
     """                eb->buffered_docs + 1 <= (size_t)esbulk__conf_int(eb->conf, ESBULK__C_BUFFER_MAX_DOCS))""",
     "the add compares with buffer.max.docs as configured (0), not the size computed"),
    ("log-queue-drop-uncounted", "lib/logq.c",
     """        q->count--;
        q->dropped++;""",
     """        q->count--;""",
     "log lines dropped from a full queue without saying how many"),
    ("log-queue-not-made", "lib/esbulk.c",
     """    if (eb->log.cb == NULL) {
        /* no callback""",
     """    if (0) {
        /* no callback""",
     "a handle without a log callback keeps no lines for esbulk_log_take"),
    ("log-queue-topology-silent", "lib/esbulk.c",
     """    esbulk__topology_set_log(eb->topo, &eb->log);
""",
     "",
     "the topology thread's lines not kept (the configuration's silent log used)"),
    ("sha256-rotation", "lib/sha256.c",
     """#define BSIG1(x) (rotr32(x, 6) ^ rotr32(x, 11) ^ rotr32(x, 25))""",
     """#define BSIG1(x) (rotr32(x, 6) ^ rotr32(x, 11) ^ rotr32(x, 24))""",
     "a wrong rotation in SHA-256's compression"),
    ("sha-ni-schedule", "lib/sha256.c",
     """                x = _mm_add_epi32(x, _mm_alignr_epi8(w[(g + 3) & 3], w[(g + 2) & 3], 4));""",
     """                x = _mm_add_epi32(x, _mm_alignr_epi8(w[(g + 3) & 3], w[(g + 2) & 3], 8));""",
     "the SHA-NI message schedule takes the wrong words 7 back"),
    ("sha-ni-never-used", "lib/sha256.c",
     """    atomic_store(&impl, use && have);
    return atomic_load(&impl);""",
     """    atomic_store(&impl, 0);
    return atomic_load(&impl);""",
     "the CPU's SHA instructions found but never used (signing five times slower)"),
    ("hmac-outer-pad", "lib/sha256.c",
     """        pad[i] = (unsigned char)(k[i] ^ 0x5c);""",
     """        pad[i] = (unsigned char)(k[i] ^ 0x36);""",
     "HMAC's outer pad the same as its inner one"),
    ("sigv4-query-unsorted", "lib/sigv4.c",
     """    qsort(pairs, npairs, sizeof(*pairs), pair_cmp);""",
     "",
     "the query signed in the order it came, not sorted"),
    ("sigv4-path-once-encoded", "lib/sigv4.c",
     """        if (c == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {""",
     """        if (c == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0 && 0) {""",
     "the query's escapes encoded again (%2A signed as %252A)"),
    ("sigv4-host-ctl-taken", "lib/sigv4.c",
     """            if ((unsigned char)*q <= ' ' || *q == 0x7f)
                return ESBULK_ERR_INVALID_ARG;""",
     """            if (*q == 0x7f)
                return ESBULK_ERR_INVALID_ARG;""",
     "a URL's authority with a line break signed into the Host line"),
    ("sigv4-dot-segments-kept", "lib/sigv4.c",
     """        } else if (l > 0 && !(l == 1 && p[0] == '.')) {""",
     """        } else if (l > 0) {""",
     "'.' path segments signed as they are (the service drops them)"),
    ("sigv4-default-port-signed", "lib/sigv4.c",
     """    return dflt != 0 && port == dflt && colon > h ? (size_t)(colon - h) : (size_t)(end - h);""",
     """    return (size_t)(end - h);""",
     "https's :443 (http's :80) signed and sent in the Host line"),
    ("sigv4-host-case-kept", "lib/sigv4.c",
     """            if (host.data[i] >= 'A' && host.data[i] <= 'Z')""",
     """            if (host.data[i] >= 'A' && host.data[i] <= 'A' - 1)""",
     "the Host signed in the case the URL gave it, not botocore's lower case"),
    ("sigv4-plus-literal", "lib/sigv4.c",
     """        } else if (c == '+') {""",
     """        } else if (c == '+' && 0) {""",
     "a query's '+' signed and sent as %2B (a plus), where the server reads a space"),
    ("sigv4-semicolon-not-split", "lib/sigv4.c",
     """        while (pe < end && *pe != '&' && *pe != ';')""",
     """        while (pe < end && *pe != '&')""",
     "a query's ';' signed as part of a value, where the server splits pairs at it"),
    ("sigv4-last-dot-no-slash", "lib/sigv4.c",
     """            dir = 1; /* the last segment is "." or ".." */""",
     """            dir = 0; /* the last segment is "." or ".." */""",
     "a path ending in \"..\" signed without the '/' that curl sends"),
    ("sigv4-token-unsigned", "lib/sigv4.c",
     """        (aws->token != NULL && (esbulk__buf_adds(&creq, "\\nx-amz-security-token:") ||""",
     """        (0 && (esbulk__buf_adds(&creq, "\\nx-amz-security-token:") ||""",
     "the session token sent but left out of the canonical headers"),
    ("aws-secret-newline-taken", "lib/conf.c",
     """            if (*p <= ' ' || *p == 0x7f) {""",
     """            if (*p < '\\n' || *p == 0x7f) {""",
     "a secret or token with a line break (read from a file) taken"),
    ("aws-region-alone", "lib/http.c",
     """    if (opts->aws.region != NULL && (opts->aws.key_id == NULL || opts->aws.secret == NULL)) {""",
     """    if (0) {""",
     "auth.aws.region without the keys accepted (every request signed with none)"),
    ("aws-with-basic", "lib/http.c",
     """            (opts->aws.region != NULL) > 1) {""",
     """            0 > 1) {""",
     "auth.aws.* and auth.username both taken"),
    ("request-head-waits-for-body", "lib/http.c",
     """        curl_easy_setopt(easy, CURLOPT_NOBODY, 1L); /* no body is coming: none is waited for */""",
     """        (void)0;""",
     "esbulk_request's HEAD waits for the body its answer announces (until the timeout)"),
    ("request-first-seed-only", "lib/esbulk.c",
     """    for (s = 0; s < eb->nseeds && err == ESBULK_ERR_TRANSPORT; s++) {""",
     """    for (s = 0; s < 1 && err == ESBULK_ERR_TRANSPORT; s++) {""",
     "esbulk_request gives up after the first seed"),
    ("bulk-signed-without-body", "lib/io.c",
     """                esbulk__sha256_update(&c, s->lines[i].p, s->lines[i].len);""",
     "",
     "a bulk request signed with the hash of an empty body"),
    ("auth-header-crlf-taken", "lib/conf.c",
     """    case ESBULK__C_AUTH_API_KEY:
    case ESBULK__C_AUTH_BEARER:
""",
     "",
     "an API key or bearer token with a line break taken (it starts a header of its choosing)"),
    ("awscreds-handle-not-updated", "tools/common/awscreds.c",
     """                     esbulk_auth_update(ac->eb, conf, err, sizeof(err)) == ESBULK_OK;""",
     """                     1;""",
     "the tools' refreshed AWS credentials kept, but the handle not updated with them"),
    ("awscreds-lead-ignored", "tools/common/awscreds.c",
     """    at = expires_s - lead;""",
     """    at = expires_s;""",
     "temporary credentials asked for again only when they expire"),
    ("awscreds-offset-sign", "tools/common/awscreds.c",
     """    *out = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - off;""",
     """    *out = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se + off;""",
     "an Expiration with a +HH:MM offset read the wrong way"),
    ("awscreds-failed-run-taken", "tools/common/awscreds.c",
     """    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {""",
     """    } else if (!WIFEXITED(status)) {""",
     "the output of a credential process that failed taken"),
    ("awscreds-process-reads-stdin", "tools/common/awscreds.c",
     """    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);""",
     "",
     "a credential process reads the tool's standard input (esbulk load's documents)"),
    ("awscreds-expired-taken", "tools/common/awscreds.c",
     """    if (rc == 0 && out->expires_s != 0 && out->expires_s <= (int64_t)time(NULL)) {""",
     """    if (0) {""",
     "credentials that have already expired taken"),
    ("envcreds-left-in-environment", "tools/common/envcreds.h",
     """        unsetenv(names[i]);""",
     "",
     "ESBULK_PASSWORD and the others left in the environment, for a credential process"),
    ("envcreds-beside-another-kind", "tools/common/envcreds.h",
     """    if (other || (pass && user))""",
     """    if (pass && user)""",
     "a key from the environment added beside the command line's other kind"),
    ("envcreds-key-and-bearer-taken", "tools/common/envcreds.h",
     """    } else if (e->api_key != NULL && e->bearer != NULL) {""",
     """    } else if (0) {""",
     "ESBULK_API_KEY taken when ESBULK_BEARER is set too"),
    ("mysql-404-superseded", "tools/mysql/rules.c",
     """        if (status == 409)
            return ESM_RESULT_SUPERSEDED;""",
     """        if (status == 409 || status == 404)
            return ESM_RESULT_SUPERSEDED;""",
     "esbulk-mysql counts a missing index's 404 as a replay, and moves its checkpoint past the rows"),
    ("mysql-missing-index-refused", "tools/mysql/rules.c",
     """        if (error_type != NULL && (strcmp(error_type, "index_not_found_exception") == 0 ||""",
     """        if (error_type != NULL && (0 ||""",
     "esbulk-mysql dead-letters every document of a missing index as refused"),
    ("mysql-statement-dml-unseen", "tools/mysql/rules.c",
     """            return 1;
    return 0;
}

/* The name at s[*i]""",
     """            return 0;
    return 0;
}

/* The name at s[*i]""",
     "esbulk-mysql passes by a change logged as a statement"),
    ("mysql-statement-string-a-name", "tools/mysql/rules.c",
     """        if (c == '\\'' || c == '"') {""",
     """        if (0) {""",
     "esbulk-mysql takes a word in a statement's string for a table's name"),
    ("mysql-statement-any-db", "tools/mysql/rules.c",
     """                      : db_is_default && same(cur, cur_len, name))""",
     """                      : same(cur, cur_len, name))""",
     "esbulk-mysql takes a bare name for a followed table whatever the statement's database"),
    ("mysql-drop-table-unseen", "tools/mysql/rules.c",
     """        return word_is(w, "TABLE") && esm_stmt_names(s, n, evdb, evdb_len, db, name);""",
     """        return 0;""",
     "esbulk-mysql follows on past a DROP TABLE of a followed table, its documents left behind"),
    ("mysql-truncate-unseen", "tools/mysql/rules.c",
     """    if (word_is(w, "TRUNCATE")) /* TRUNCATE [TABLE] name */""",
     """    if (0) /* TRUNCATE [TABLE] name */""",
     "esbulk-mysql follows on past a TRUNCATE of a followed table, its documents left behind"),
    ("mysql-drop-partition-unseen", "tools/mysql/rules.c",
     """                (word_is(prev, "DROP") || word_is(prev, "TRUNCATE") || word_is(prev, "EXCHANGE")))""",
     """                (word_is(prev, "TRUNCATE") || word_is(prev, "EXCHANGE")))""",
     "esbulk-mysql follows on past ALTER TABLE ... DROP PARTITION, the partition's documents left behind"),
    ("kafka-watermark-past-pending", "kafka/tracker.c",
     """    if (t->len > 0)
        return t->off[t->head];
    return t->next;""",
     """    return t->next;""",
     "esbulk-kafka commits past messages that have no result yet"),
    ("kafka-dead-letter-unacknowledged", "kafka/tracker.c",
     """    while (t->len > 0 && t->st[t->head] == EKF_DONE) {""",
     """    while (t->len > 0 && t->st[t->head] != EKF_PENDING) {""",
     "esbulk-kafka commits a refused message before the broker acknowledged its dead letter"),
    ("kafka-index-upper-case", "kafka/message.c",
     """            out[o++] = (char)tolower((unsigned char)add[i]);""",
     """            out[o++] = add[i];""",
     "esbulk-kafka names an index after a topic with capitals, which the server refuses"),
    ("kafka-unknown-key-ignored", "kafka/config.c",
     """    if (e == ESBULK_ERR_UNKNOWN_KEY) {""",
     """    if (e == ESBULK_ERR_UNKNOWN_KEY && 0) {""",
     "esbulk-kafka starts with a misspelt configuration key"),
    ("kafka-tombstone-any-mode", "kafka/message.c",
     """        if (o->id_mode != EKF_ID_KEY || key == NULL || key_len == 0) {""",
     """        if (key == NULL || key_len == 0) {""",
     "esbulk-kafka deletes by a tombstone's key under --id offset, where the key is no _id"),
    ("arm-sha256-h2-new-abcd", "lib/sha256.c",
     """            efgh = vsha256h2q_u32(efgh, prev, m);""",
     """            efgh = vsha256h2q_u32(efgh, abcd, m);""",
     "ARMv8: the second half of the rounds reads A-D after the first half changed them"),
    ("arm-sha256-no-byte-swap", "lib/sha256.c",
     """                w[g] = vreinterpretq_u32_u8(vrev32q_u8(vld1q_u8(p + 16 * g)));""",
     """                w[g] = vreinterpretq_u32_u8(vld1q_u8(p + 16 * g));""",
     "ARMv8: the message words are read little-endian"),
    ("arm-sha256-not-detected", "lib/sha256.c",
     """    return (getauxval(AT_HWCAP) & HWCAP_SHA2) != 0;""",
     """    return (getauxval(AT_HWCAP) & HWCAP_SHA2) == 0;""",
     "ARMv8: the instructions are used where the CPU has none, and not where it has"),
    ("json-int64-range", "lib/json.c",
     """    } else {
        i = digits(s, i, n);
    }""",
     """    } else {
        i = digits(s, i, n);
        if (i - start > 19)
            return fail0(c, start, "too big integer");
    }""",
     "body.validate refuses an integer past int64's digits again (2^64, BIGINT UNSIGNED)"),
    ("json-leading-zero", "lib/json.c",
     """        if (i < n && s[i] >= '0' && s[i] <= '9')
            return fail0(c, start, "invalid number (leading zero)");""",
     """        if (0 && i < n && s[i] >= '0' && s[i] <= '9')
            return fail0(c, start, "invalid number (leading zero)");""",
     "a number with a leading zero (01) passes body.validate (the server refuses it)"),
    ("json-fraction-empty", "lib/json.c",
     """        if ((i = digits(s, d, n)) == d)
            return fail0(c, start, "invalid number (no digit after the point)");""",
     """        i = digits(s, d, n);""",
     "1. passes body.validate"),
    ("json-dups-unchecked", "lib/json.c",
     """        for (i = 1; i < n; i++)
            for (j = 0; j < i; j++)""",
     """        for (i = 1; i < 0; i++)
            for (j = 0; j < i; j++)""",
     "a key twice in a small object passes body.validate (the server refuses it)"),
    ("json-dups-escaped-unseen", "lib/json.c",
     """    if (!a->escaped && !b->escaped)
        return a->len == b->len""",
     """    if (1)
        return a->len == b->len""",
     "a key written once with an escape and once without is not a duplicate"),
    ("json-lone-surrogate", "lib/json.c",
     """    if (hi >= 0xDC00 && hi <= 0xDFFF)
        return fail0(c, i, "lone low""",
     """    if (0)
        return fail0(c, i, "lone low""",
     "a lone low surrogate escape (DC00) passes body.validate"),
    ("json-trailing-garbage", "lib/json.c",
     """                if (i != n)
                    return fail(c, i, "data after the object");""",
     """                if (0)
                    return fail(c, i, "data after the object");""",
     "bytes after the object pass body.validate"),
    ("json-depth-off-by-one", "lib/json.c",
     """            if (depth == ESBULK__JSON_MAX_DEPTH)""",
     """            if (depth == ESBULK__JSON_MAX_DEPTH - 1)""",
     "the nesting limit is one level lower than documented"),
    ("json-utf8-overlong", "lib/utf8.h",
     """    if (c >= 0xc2 && c <= 0xdf) {""",
     """    if (c >= 0xc0 && c <= 0xdf) {""",
     "an overlong UTF-8 sequence (C0 80) passes body.validate"),
    ("mysql-dead-letter-doc-reparsed", "tools/mysql/rowjson.c",
     """    } else if (esbulk__json_check(body, body_len, NULL, NULL) == ESBULK_OK) {""",
     """    } else if (0) {""",
     "a dead letter's valid document is written as a string, not as the document"),
    ("mysql-dead-letter-no-error-type", "tools/mysql/rowjson.c",
     """        dl_string(out, error_type, error_type ? strlen(error_type) : 0) ||""",
     """        dl_string(out, NULL, 0) ||""",
     "a dead letter loses its error_type"),
    ("mysql-dead-letter-no-status", "tools/mysql/rowjson.c",
     """    if (status > 0) {
        snprintf(num, sizeof(num), "%d", (int)status);""",
     """    if (0) {
        snprintf(num, sizeof(num), "%d", (int)status);""",
     "a dead letter loses the server's status"),
]

FUZZ = ["response", "topology", "load", "writer", "route", "conf", "sigv4"]
UNITS = ["check_murmur3", "check_route", "check_conf", "check_topology", "check_response",
         "check_engine", "check_core", "check_misuse", "check_pull", "check_docmem",
         "check_sha256", "check_sigv4", "check_awscreds", "check_mysql_map", "check_kafka",
         "check_json"]


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          errors="replace", **kw)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--builddir", default=os.environ.get("top_builddir", "."))
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    bld = os.path.abspath(args.builddir)
    if not os.path.exists(os.path.join(bld, "config.h")):
        sys.exit("check-mutants: no config.h in %s: configure first" % bld)
    cc = os.environ.get("CC", "cc")
    pc = run(["pkg-config", "--cflags", "--libs", "libcurl", "jansson", "libxxhash", "zlib",
              "check"]).stdout.split()
    work = tempfile.mkdtemp(prefix="esbulk-mutants-")
    t_all = time.time()
    rows, survived = [], 0
    try:
        for name, path, old, new, what in MUTANTS:
            if args.names and name not in args.names:
                continue
            t0 = time.time()
            tree = os.path.join(work, name)
            for d in ("lib", "include", "tests", "tools", "kafka"):
                shutil.copytree(os.path.join(src, d), os.path.join(tree, d),
                                ignore=shutil.ignore_patterns("cluster", "python-*", "*.o", "*.sock"))
            target = os.path.join(tree, path)
            text = open(target).read()
            if text.count(old) != 1:
                sys.exit("check-mutants: %s: the text to mutate is not found once in %s"
                         % (name, path))
            open(target, "w").write(text.replace(old, new))
            flags = ["-std=c11", "-O1", "-g0", "-w", "-D_GNU_SOURCE", "-I" + tree + "/include",
                     "-I" + tree + "/lib", "-I" + tree, "-I" + bld]
            objs = []
            for f in sorted(os.listdir(os.path.join(tree, "lib"))):
                if f.endswith(".c"):
                    o = os.path.join(tree, f[:-2] + ".o")
                    r = run([cc] + flags + [a for a in pc if a.startswith("-I")] +
                            ["-c", os.path.join(tree, "lib", f), "-o", o])
                    if r.returncode != 0:
                        sys.exit("check-mutants: %s does not compile:\n%s" % (name, r.stdout))
                    objs.append(o)
            caught = []
            env = dict(os.environ, CK_FORK="yes", top_srcdir=tree)
            for u in UNITS:
                exe = os.path.join(tree, u)
                r = run([cc] + flags + [os.path.join(tree, "tests", u + ".c")] + objs + pc +
                        ["-lpthread", "-lm", "-o", exe])
                if r.returncode != 0:
                    sys.exit("check-mutants: %s: %s does not build:\n%s" % (name, u, r.stdout))
                try:
                    r = run([exe], env=env, timeout=120)
                    if r.returncode != 0:
                        caught.append(u)
                except subprocess.TimeoutExpired:
                    caught.append(u + " (timeout)")
            # the fuzz harnesses over their committed seeds and regression inputs
            for h in FUZZ:
                exe = os.path.join(tree, "replay_" + h)
                extra = ["-Wl,--wrap=esbulk__http_request"] if h == "topology" else []
                r = run([cc] + flags + ["-I" + tree + "/tools/esbulk",
                                        os.path.join(tree, "tests/fuzz/fuzz_%s.c" % h),
                                        os.path.join(tree, "tests/fuzz/replay.c")] + objs + pc +
                        extra + ["-lpthread", "-lm", "-o", exe])
                if r.returncode != 0:
                    sys.exit("check-mutants: %s: replay_%s does not build:\n%s"
                             % (name, h, r.stdout))
                dirs = [d for d in (os.path.join(tree, "tests/fuzz/corpus/fuzz_" + h),
                                    os.path.join(tree, "tests/fuzz/regress/fuzz_" + h))
                        if os.path.isdir(d)]
                try:
                    if run([exe] + dirs, env=env, timeout=120).returncode != 0:
                        caught.append("fuzz_" + h + " inputs")
                except subprocess.TimeoutExpired:
                    caught.append("fuzz_" + h + " inputs (timeout)")
            # lib/sha256.c's ARMv8 path runs only cross-compiled, under qemu
            if path == "lib/sha256.c":
                r = run(["sh", os.path.join(tree, "tests", "sha256_arm64.test")],
                        env=dict(os.environ, top_srcdir=tree, top_builddir=bld), timeout=300)
                if r.returncode != 0:
                    caught.append("sha256_arm64.test")
            if not caught:
                survived += 1
            rows.append((name, what, caught, time.time() - t0))
            print("%-32s %-34s %5.0fs" % (name, ", ".join(caught) if caught else "SURVIVED",
                                          time.time() - t0), flush=True)
            if not args.keep:
                shutil.rmtree(tree)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print()
    print("| mutation | what | caught by |")
    print("|---|---|---|")
    for name, what, caught, _ in rows:
        print("| %s | %s | %s |" % (name, what, ", ".join(caught) if caught else "**survived**"))
    print("\n%d mutations, %d caught, %d survived, %.0f s" % (len(rows), len(rows) - survived,
                                                            survived, time.time() - t_all))
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
