#!/bin/sh
# scripts/demo.sh - what `make demo` runs: loads a sample data set of order
# records into the OpenSearch test cluster with `esbulk load` and shows the
# summary, the per-node statistics and the index's _count.
#
# Environment:
#   ESBULK       the esbulk binary (default: tools/esbulk/esbulk in the build dir,
#                i.e. $top_builddir or the current directory)
#   DEMO_DOCS    documents to generate (default 200000)
#   DEMO_DATA    the data file; generated when missing
#                (default ${TMPDIR:-/tmp}/esbulk-demo-orders-$DEMO_DOCS.ndjson)
#   DEMO_URL     a node of the cluster (default http://127.0.0.1:19200)
#   DEMO_INDEX   the index, deleted and re-created (default demo-orders)
#   DEMO_SHARDS  its number of shards (default 6)
#   DEMO_ARGS    extra arguments for esbulk load (e.g. "--compression gzip")
set -eu

srcdir=$(cd "$(dirname "$0")/.." && pwd)
builddir=${top_builddir:-$(pwd)}
ESBULK=${ESBULK:-$builddir/tools/esbulk/esbulk}
DEMO_DOCS=${DEMO_DOCS:-200000}
DEMO_DATA=${DEMO_DATA:-${TMPDIR:-/tmp}/esbulk-demo-orders-$DEMO_DOCS.ndjson}
DEMO_URL=${DEMO_URL:-http://127.0.0.1:19200}
DEMO_INDEX=${DEMO_INDEX:-demo-orders}
DEMO_SHARDS=${DEMO_SHARDS:-6}
DEMO_ARGS=${DEMO_ARGS:-}
cluster="$srcdir/tests/cluster/opensearch.sh"

if [ ! -x "$ESBULK" ]; then
    echo "demo: $ESBULK not found or not executable: build first (make), or set ESBULK" >&2
    exit 1
fi

echo "== OpenSearch test cluster"
# ensure.sh: fetch, then start unless running (serialized with other tests)
if [ -x "$srcdir/tests/cluster/ensure.sh" ]; then
    "$srcdir/tests/cluster/ensure.sh" opensearch
else
    "$cluster" fetch
    "$cluster" status >/dev/null 2>&1 || "$cluster" start
fi
"$cluster" status

if [ ! -s "$DEMO_DATA" ]; then
    echo "== generating $DEMO_DOCS order records into $DEMO_DATA"
    tmp="$DEMO_DATA.tmp.$$"
    # Deterministic (fixed seed): the same file on every machine.
    awk -v n="$DEMO_DOCS" '
    # RFC 3339 UTC time of epoch seconds t (no strftime: not in every awk)
    function iso(t,    d, s, z, era, doe, yoe, y, doy, mp, dd, m) {
        d = int(t / 86400); s = t - d * 86400
        z = d + 719468; era = int(z / 146097); doe = z - era * 146097
        yoe = int((doe - int(doe / 1460) + int(doe / 36524) - int(doe / 146096)) / 365)
        y = yoe + era * 400; doy = doe - (365 * yoe + int(yoe / 4) - int(yoe / 100))
        mp = int((5 * doy + 2) / 153); dd = doy - int((153 * mp + 2) / 5) + 1
        m = mp < 10 ? mp + 3 : mp - 9; if (m <= 2) y++
        return sprintf("%04d-%02d-%02dT%02d:%02d:%02dZ", y, m, dd, int(s / 3600),
                       int(s / 60) % 60, s % 60)
    }
    BEGIN {
        srand(20240601)
        split("DE FR US GB NL SE PL ES IT JP BR IN", country, " ")
        split("new paid shipped delivered cancelled returned", status, " ")
        split("card paypal invoice giftcard", pay, " ")
        split("web ios android store", channel, " ")
        split("EUR USD GBP JPY", cur, " ")
        t0 = 1717200000  # 2024-06-01T00:00:00Z
        for (i = 1; i <= n; i++) {
            t = t0 + int(i * 12.96)  # about 30 days over 200,000 orders
            items = 1 + int(rand() * 5)
            total = 0
            lines = ""
            for (k = 1; k <= items; k++) {
                qty = 1 + int(rand() * 3)
                price = int(rand() * 20000) / 100 + 0.99
                total += qty * price
                lines = lines sprintf("%s{\"sku\":\"SKU-%05d\",\"qty\":%d,\"price\":%.2f}",
                                      k > 1 ? "," : "", int(rand() * 50000), qty, price)
            }
            printf("{\"order_id\":%d,\"@timestamp\":\"%s\",\"customer_id\":\"C%07d\"," \
                   "\"country\":\"%s\",\"status\":\"%s\",\"channel\":\"%s\"," \
                   "\"payment\":\"%s\",\"currency\":\"%s\",\"total\":%.2f," \
                   "\"client_ip\":\"10.%d.%d.%d\",\"items\":[%s]}\n",
                   1000000 + i, iso(t),
                   int(rand() * 500000), country[1 + int(rand() * 12)],
                   status[1 + int(rand() * 6)], channel[1 + int(rand() * 4)],
                   pay[1 + int(rand() * 4)], cur[1 + int(rand() * 4)], total,
                   int(rand() * 256), int(rand() * 256), int(rand() * 256), lines)
        }
    }' >"$tmp"
    mv "$tmp" "$DEMO_DATA"
fi
echo "== data: $DEMO_DATA ($(wc -l <"$DEMO_DATA" | tr -d ' ') lines, $(wc -c <"$DEMO_DATA" | tr -d ' ') bytes)"

echo "== index $DEMO_INDEX: $DEMO_SHARDS shards, 0 replicas"
curl -s -o /dev/null -X DELETE "$DEMO_URL/$DEMO_INDEX" || true
curl -sf -o /dev/null -X PUT "$DEMO_URL/$DEMO_INDEX" -H 'Content-Type: application/json' -d '{
  "settings": {"number_of_shards": '"$DEMO_SHARDS"', "number_of_replicas": 0},
  "mappings": {"properties": {
    "order_id": {"type": "long"}, "@timestamp": {"type": "date"},
    "customer_id": {"type": "keyword"}, "country": {"type": "keyword"},
    "status": {"type": "keyword"}, "channel": {"type": "keyword"},
    "payment": {"type": "keyword"}, "currency": {"type": "keyword"},
    "total": {"type": "scaled_float", "scaling_factor": 100},
    "client_ip": {"type": "ip"},
    "items": {"properties": {"sku": {"type": "keyword"}, "qty": {"type": "integer"},
                             "price": {"type": "scaled_float", "scaling_factor": 100}}}}}
}' || { echo "demo: could not create $DEMO_INDEX" >&2; exit 1; }
curl -sf -o /dev/null "$DEMO_URL/_cluster/health/$DEMO_INDEX?wait_for_status=green&timeout=60s"

echo "== esbulk load"
echo "\$ $ESBULK load --url $DEMO_URL --index $DEMO_INDEX --id-field order_id --stats${DEMO_ARGS:+ $DEMO_ARGS} $DEMO_DATA"
rc=0
# shellcheck disable=SC2086 # DEMO_ARGS is a list of words
"$ESBULK" load --url "$DEMO_URL" --index "$DEMO_INDEX" --id-field order_id --stats \
    $DEMO_ARGS "$DEMO_DATA" || rc=$?

echo "== _count"
curl -s -o /dev/null -X POST "$DEMO_URL/$DEMO_INDEX/_refresh"
count=$(curl -s "$DEMO_URL/$DEMO_INDEX/_count" | sed -n 's/.*"count":\([0-9]*\).*/\1/p')
echo "$DEMO_INDEX: ${count:-?} documents (expected $(wc -l <"$DEMO_DATA" | tr -d ' '))"
exit $rc
