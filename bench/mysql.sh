#!/bin/sh
# make bench-mysql: esbulk-mysql's figures on this machine (not in CI).
#  1. snapshot rows/s of an orders-like table (ROWS, default 200000) into a
#     3-shard index, with and without --import-mode, with routing on
#     (routing.level=node) and off;
#  2. binlog lag at a steady RATE changes/s (default 2000) for SECS seconds
#     (default 30): p50/p99 of the time from an event's timestamp (whole
#     seconds: an upper bound) to its re-read, and of the time from reading
#     a batch's first event to every document of it acknowledged.
# Uses the MariaDB test server and the OpenSearch test cluster.
set -eu
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
esm="$top_builddir/tools/mysql/esbulk-mysql"
url=${ESBULK_MYSQL_TEST_URL:-http://127.0.0.1:19200}
mariadb="$top_srcdir/tests/mariadb/mariadb.sh"
rows=${ROWS:-200000}
rate=${RATE:-2000}
secs=${SECS:-30}
db=esm_bench
index=mysql-bench-orders
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; "$mariadb" client -e "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1; curl -s -o /dev/null -X DELETE "$url/$index"' EXIT
sql() { "$mariadb" client -N --raw --batch "$@"; }
"$top_srcdir/tests/cluster/ensure.sh" opensearch >/dev/null
"$mariadb" status >/dev/null 2>&1 || "$mariadb" start
sql -e "DROP DATABASE IF EXISTS $db; CREATE DATABASE $db; USE $db; SET @orders = $rows; SOURCE $top_srcdir/tests/data/mysql/orders.sql;"
printf '[%s.orders]\nindex = %s\n' "$db" "$index" >"$tmp/job.conf"
field() { python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }

echo "snapshot of $rows rows (orders-like: 6 columns), into a 3-shard index, 1 replica:"
for mode in "" "--import-mode"; do
    for routing in node off; do
        curl -s -o /dev/null -X DELETE "$url/$index"
        curl -s -o /dev/null -X PUT "$url/$index" -H 'Content-Type: application/json' \
            -d '{"settings":{"index":{"number_of_shards":3,"number_of_replicas":1}}}'
        rm -f "$tmp/state"
        # shellcheck disable=SC2086
        "$esm" --port 13306 --url "$url" --config "$tmp/job.conf" --state "$tmp/state" \
            --snapshot-only --quiet --stats "$tmp/stats" --set routing.level=$routing \
            --set max.inflight.per.node=4 $mode
        printf '  %-14s routing %-4s %8.0f rows/s\n' "${mode:-normal}" "$routing" \
            "$(field "$tmp/stats" 's["snapshot_rows_per_s"]')"
    done
done

echo "binlog lag at $rate changes/s for $secs s:"
"$esm" --port 13306 --url "$url" --config "$tmp/job.conf" --state "$tmp/state" --quiet \
    --stats "$tmp/lag" --set max.inflight.per.node=4 &
pid=$!
sleep 2
sql --database=$db -e "CALL churn_rate($rate, $secs, 10000000, $rows)"
sleep 3
kill -TERM $pid
wait $pid || true
echo "  changes read: $(field "$tmp/lag" 's["binlog_rows"]')"
echo "  event timestamp to re-read (upper bound): p50 $(field "$tmp/lag" 's["binlog_lag"]["p50_ms"]') ms, p99 $(field "$tmp/lag" 's["binlog_lag"]["p99_ms"]') ms"
echo "  bulk request latency per node (p50/p99 ms): $(field "$tmp/lag" '" ".join("%s %s/%s" % (n["name"], n["latency_ms"]["p50"], n["latency_ms"]["p99"]) for n in s["esbulk"]["nodes"])')"
echo "  batch read to acknowledged: p50 $(field "$tmp/lag" 's["binlog_apply"]["p50_ms"]') ms, p99 $(field "$tmp/lag" 's["binlog_apply"]["p99_ms"]') ms"
