#!/usr/bin/env bash
# tests/cluster_faults.sh quick|full|soak
# Cluster changes during a load (tests/it_cluster_faults.c): starts a 3-node
# OpenSearch cluster of its own (HTTP 19240-19243, transport 19340-19343,
# cluster esbulk-faults, never the shared one), a fault proxy for the stall
# scenario (19249), runs the scenarios and prints their table; stops the
# cluster at the end.
#
#   quick  (make check, tests/cluster_faults.test): relocate, delete-recreate,
#          write-block, closed-index, silent-node, stall, cluster-down
#   full   (make check-faults): quick + add-node, rolling-restart
#   soak   (make soak): scenarios of the full list drawn at random until
#          SOAK_SECONDS (default 1800) have passed (SOAK_SEED repeats a
#          draw); each run bounded
#
# Each scenario runs with a time limit of its own (SCENARIO_TIMEOUT, 600 s).
# The last line is "N passed, N failed".
set -u
mode=${1:-quick}
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
bin="$top_builddir/tests/it_cluster_faults"
quick_list="relocate delete-recreate write-block closed-index silent-node stall cluster-down"
full_list="$quick_list add-node rolling-restart"
case $mode in
    quick) list=$quick_list ;;
    full) list=$full_list ;;
    soak) list="" ;;
    *) echo "usage: $0 quick|full|soak" >&2; exit 2 ;;
esac

export ESBULK_OS_HTTP_BASE=19240 ESBULK_OS_TRANSPORT_BASE=19340
export ESBULK_OS_CLUSTER_NAME=esbulk-faults
export ESBULK_CLUSTER_DIR=${FAULTS_CLUSTER_DIR:-$top_builddir/tests/cluster/run/opensearch-faults}
unset ESBULK_OS_VERSION
export FAULTS_CLUSTER_SH="$top_srcdir/tests/cluster/opensearch.sh"
export FAULTS_URLS=http://127.0.0.1:19240,http://127.0.0.1:19241,http://127.0.0.1:19242
proxy_port=19249
export FAULTS_PROXY_URL=http://127.0.0.1:$proxy_port

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cluster_faults.XXXXXX") || exit 1
export FAULTS_STALL_FILE="$tmp/stall" FAULTS_LOG="$tmp/cluster.log"
proxy_pid=""
cleanup() {
    [ -n "$proxy_pid" ] && kill "$proxy_pid" 2>/dev/null
    "$FAULTS_CLUSTER_SH" stop >/dev/null 2>&1
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fail_all() {
    echo "FAIL: $*"
    [ -s "$FAULTS_LOG" ] && tail -n 40 "$FAULTS_LOG" | sed 's/^/  cluster: /'
    echo "0 passed, 1 failed"
    exit 1
}

# a fresh cluster every run: the scenarios stop and add nodes
"$FAULTS_CLUSTER_SH" stop >/dev/null 2>&1
"$top_srcdir/scripts/install-deps.sh" test || fail_all "missing dependencies"
"$FAULTS_CLUSTER_SH" start >>"$FAULTS_LOG" 2>&1 || fail_all "the fault cluster did not start"
python3 "$top_srcdir/tests/faultproxy.py" --listen $proxy_port --upstream http://127.0.0.1:19240 \
    --stall-file "$FAULTS_STALL_FILE" --max-seconds $((${SOAK_SECONDS:-1800} + 3600)) \
    --pidfile "$tmp/proxy.pid" >"$tmp/proxy.out" 2>&1 &
proxy_pid=$!
i=0
until [ -s "$tmp/proxy.pid" ]; do
    i=$((i + 1))
    [ $i -lt 100 ] && kill -0 $proxy_pid 2>/dev/null || fail_all "the fault proxy did not start: $(cat "$tmp/proxy.out")"
    sleep 0.1
done

total_pass=0 total_fail=0 rows=""
run_one() {
    local name=$1 out="$tmp/$1.out" rc line p f
    echo "== $name"
    timeout -k 10 "${SCENARIO_TIMEOUT:-600}" "$bin" "$name" >"$out" 2>&1
    rc=$?
    cat "$out"
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$out" | tail -n 1)
    if [ -n "$line" ]; then
        p=${line%% passed*}
        f=${line#*passed, }
        f=${f%% failed}
        total_pass=$((total_pass + p))
        total_fail=$((total_fail + f))
        [ $rc -ne 0 ] && [ "$f" -eq 0 ] && { echo "FAIL: $name exited with status $rc"; total_fail=$((total_fail + 1)); }
    else
        echo "FAIL: $name ended (status $rc$([ $rc = 124 ] && echo ': time limit')) without its totals"
        total_fail=$((total_fail + 1))
    fi
    rows="$rows$(grep '^ROW ' "$out" | tail -n 1)
"
    # a scenario that failed half-way may leave a node down: bring it back
    if ! "$FAULTS_CLUSTER_SH" status >/dev/null 2>&1; then
        echo "  (restarting the fault cluster after $name)"
        "$FAULTS_CLUSTER_SH" stop >>"$FAULTS_LOG" 2>&1
        "$FAULTS_CLUSTER_SH" start --keep-data >>"$FAULTS_LOG" 2>&1 || fail_all "the fault cluster did not restart"
    fi
    rm -f "$FAULTS_STALL_FILE"
}

t0=$SECONDS
if [ "$mode" = soak ]; then
    seed=${SOAK_SEED:-$$}
    RANDOM=$seed
    echo "soak: ${SOAK_SECONDS:-1800} s, scenarios drawn with SOAK_SEED=$seed"
    set -- $full_list
    n=$#
    while [ $((SECONDS - t0)) -lt "${SOAK_SECONDS:-1800}" ]; do
        k=$((RANDOM % n + 1))
        eval "run_one \${$k}"
    done
else
    for s in $list; do run_one "$s"; done
fi

echo
echo "Cluster changes during a load ($mode, $((SECONDS - t0)) s):"
printf '%-16s %9s %9s %7s %9s %5s %10s %9s %8s\n' scenario documents indexed failed possibly \
    lost duplicated "RSS MiB" seconds
printf '%s' "$rows" | while read -r _ name docs ix fl po lo du rss secs; do
    [ -n "$name" ] || continue
    printf '%-16s %9s %9s %7s %9s %5s %10s %9s %8s\n' "$name" "$docs" "$ix" "$fl" "$po" "$lo" \
        "$du" "$rss" "$secs"
done
echo "$total_pass passed, $total_fail failed"
[ $total_fail -eq 0 ]
