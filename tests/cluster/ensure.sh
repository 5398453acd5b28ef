#!/bin/sh
# tests/cluster/ensure.sh FLAVOUR   (opensearch | elasticsearch)
# Fetches the cluster's jars and starts it unless it is running. Tests call
# this; it is serialized with flock, so tests that run in parallel (make -j)
# start one cluster, not two. ESBULK_CLUSTER_* variables pass through.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
flavour=${1:?usage: ensure.sh opensearch|elasticsearch}
case "$flavour" in opensearch | elasticsearch) ;; *) echo "ensure.sh: unknown flavour $flavour" >&2; exit 2 ;; esac
"$here/../../scripts/install-deps.sh" test
lockdir="$here/run"
mkdir -p "$lockdir"
(
    flock 9
    "$here/$flavour.sh" fetch # one download at a time: they share ~/.m2
) 9>"$lockdir/fetch.lock"
(
    flock 9
    # up: done. All down: start. Some nodes running but not answering (a
    # loaded machine, or still starting): wait for them rather than start a
    # second time; after 120 s, restart the cluster.
    waited=0
    while :; do
        st=$("$here/$flavour.sh" status 2>/dev/null) && exit 0
        if ! printf '%s\n' "$st" | grep -q ' up \| starting '; then
            exec "$here/$flavour.sh" start
        fi
        if [ "$waited" -ge 120 ]; then
            "$here/$flavour.sh" stop || true
            exec "$here/$flavour.sh" start
        fi
        sleep 2
        waited=$((waited + 2))
    done
) 9>"$lockdir/$flavour.lock"
