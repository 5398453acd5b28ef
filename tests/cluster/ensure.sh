#!/bin/sh
# tests/cluster/ensure.sh FLAVOUR   (opensearch | elasticsearch | opensearch-tiny)
# Fetches the cluster's jars and starts it unless it is running. Tests call
# this; it is serialized with flock, so tests that run in parallel (make -j)
# start one cluster, not two. ESBULK_CLUSTER_* variables pass through.
#
# opensearch-tiny: the 429 cluster, an OpenSearch of 2 nodes on
# 127.0.0.1:19220-19221 (transport 19320-19321) with one write thread and a
# write queue of one, so that bulk items get real 429s. Every test that needs
# item 429s shares it (tests/it_engine_rejections.test, tests/python.test,
# tests/go.test); nobody stops or restarts it but `make cluster-stop`. Its
# directory is $ESBULK_TINY_CLUSTER_DIR (default tests/cluster/run/
# opensearch-tiny beside the others): ESBULK_CLUSTER_DIR, which callers may
# set for the main cluster, does not apply to it.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
flavour=${1:?usage: ensure.sh opensearch|elasticsearch|opensearch-tiny}
script=$flavour
start_args=
case "$flavour" in
opensearch)
    # the main cluster hosts every suite for the whole of `make check` and
    # the sanitizer runs after it (thousands of indices made and deleted): at
    # 512m its cluster manager's parent breaker tripped late in a CI run and
    # refused "shard started", so a new index stayed unavailable for minutes
    ESBULK_NODE_HEAP=${ESBULK_NODE_HEAP:-1g}
    export ESBULK_NODE_HEAP
    ;;
elasticsearch) ;;
opensearch-tiny)
    script=opensearch
    start_args="--nodes 2 --setting thread_pool.write.size=1 --setting thread_pool.write.queue_size=1"
    ESBULK_OS_HTTP_BASE=19220 ESBULK_OS_TRANSPORT_BASE=19320 ESBULK_OS_CLUSTER_NAME=esbulk-tiny
    ESBULK_CLUSTER_DIR=${ESBULK_TINY_CLUSTER_DIR:-$here/run/opensearch-tiny}
    export ESBULK_OS_HTTP_BASE ESBULK_OS_TRANSPORT_BASE ESBULK_OS_CLUSTER_NAME ESBULK_CLUSTER_DIR
    ;;
*) echo "ensure.sh: unknown flavour $flavour" >&2; exit 2 ;;
esac
"$here/../../scripts/install-deps.sh" test
lockdir="$here/run"
mkdir -p "$lockdir"
(
    flock 9
    "$here/$script.sh" fetch # one download at a time: they share ~/.m2
) 9>"$lockdir/fetch.lock"
(
    flock 9
    # up: done. All down: start. Some nodes running but not answering (a
    # loaded machine, or still starting): wait for them rather than start a
    # second time; after 120 s, restart the cluster.
    waited=0
    while :; do
        st=$("$here/$script.sh" status 2>/dev/null) && exit 0
        if ! printf '%s\n' "$st" | grep -q ' up \| starting '; then
            # shellcheck disable=SC2086 # start_args: words on purpose
            exec "$here/$script.sh" start $start_args
        fi
        if [ "$waited" -ge 120 ]; then
            "$here/$script.sh" stop || true
            # shellcheck disable=SC2086
            exec "$here/$script.sh" start $start_args
        fi
        sleep 2
        waited=$((waited + 2))
    done
) 9>"$lockdir/$flavour.lock"
