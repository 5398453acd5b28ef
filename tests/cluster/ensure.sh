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
    "$here/$flavour.sh" status >/dev/null 2>&1 || "$here/$flavour.sh" start
) 9>"$lockdir/$flavour.lock"
