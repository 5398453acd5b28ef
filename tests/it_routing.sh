#!/bin/sh
# tests/it_routing.sh FLAVOUR HTTP_PORT PROXY_PORT
# Starts the FLAVOUR cluster if it is not running (tests/cluster/FLAVOUR.sh),
# puts the fault proxy in front of it, and runs tests/it_routing.
set -eu
flavour=$1 port=$2 proxy_port=$3
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
"$top_srcdir/tests/cluster/ensure.sh" "$flavour"

pidfile=$(mktemp)
python3 "$top_srcdir/tests/faultproxy.py" --listen "$proxy_port" \
    --upstream "http://127.0.0.1:$port" --forbid /_cluster/state --unreachable-nodes \
    --pidfile "$pidfile" --max-seconds 900 &
proxy=$!
trap 'kill $proxy 2>/dev/null || true; rm -f "$pidfile"' EXIT INT TERM
i=0
until curl -s -o /dev/null "http://127.0.0.1:$proxy_port/"; do
    i=$((i + 1))
    [ $i -lt 100 ] || { echo "FAIL: fault proxy did not start"; exit 1; }
    sleep 0.1
done
"$top_builddir/tests/it_routing" "http://127.0.0.1:$port" "http://127.0.0.1:$proxy_port"
