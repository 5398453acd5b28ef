#!/usr/bin/env bash
# tests/cluster/opensearch.sh - a real multi-node OpenSearch cluster (2.19 by
# default, 3.x with ESBULK_OS_VERSION) on loopback, built from the jars on
# Maven Central (no distribution tarball).
#
# Every node is its own JVM (esbulk.os.OsNodeLauncher, source in
# tests/cluster/java/os/, compiled at fetch time) that embeds
# org.opensearch.node.Node with the needed modules as classpath plugins.
# Plain HTTP, no security plugin, no auth.
#
# Usage:
#   tests/cluster/opensearch.sh fetch            download jars (mvn) + compile launcher;
#                                                silent and offline when up to date
#   tests/cluster/opensearch.sh start [--nodes N] [--setting K=V]... [--keep-data]
#                                                start N nodes (default 3), wait for
#                                                green; wipes old data unless --keep-data
#   tests/cluster/opensearch.sh stop             TERM our nodes, KILL after ESBULK_STOP_TIMEOUT
#   tests/cluster/opensearch.sh status           one line per node; exit 0 only if all up
#   tests/cluster/opensearch.sh kill-node I      SIGKILL node I (0-based)
#   tests/cluster/opensearch.sh start-node I [--setting K=V]...
#                                                restart node I alone (keeps its data),
#                                                wait until it joined and health is green
#   tests/cluster/opensearch.sh stop-node I      TERM node I (KILL after ESBULK_STOP_TIMEOUT)
#   tests/cluster/opensearch.sh add-node         start one more node (data only, index N,
#                                                fresh data), wait until it joined, green
#   tests/cluster/opensearch.sh remove-node      stop the last node and forget it (move
#                                                its shards away first: allocation filtering)
#
# Layout (fixed): cluster.name esbulk-os; node I is os-node-I with HTTP on
# 127.0.0.1:(19200+I) and transport on 127.0.0.1:(19300+I); every node is
# data + cluster-manager eligible. --setting K=V is passed to every node (and
# remembered for start-node), e.g. to get real 429s from a tiny write pool:
#   tests/cluster/opensearch.sh start --setting thread_pool.write.size=1 \
#       --setting thread_pool.write.queue_size=1
#
# Environment:
#   ESBULK_OS_VERSION      OpenSearch version (default 2.19.6). 3.x needs Java 21+:
#                          ESBULK_JAVA, else the newest JDK >= 21 under /usr/lib/jvm
#   ESBULK_CLUSTER_CACHE   jars + compiled launcher
#                          (default $HOME/.cache/libesbulk/opensearch-VERSION)
#   ESBULK_CLUSTER_DIR     node homes, data, pid files, logs
#                          (default <repo>/tests/cluster/run/opensearch)
#   ESBULK_NODE_HEAP       heap per node, -Xms = -Xmx (default 512m)
#   ESBULK_CLUSTER_TIMEOUT seconds to wait for green on start/start-node (default 180)
#   ESBULK_STOP_TIMEOUT    seconds between TERM and KILL on stop (default 30)
#   ESBULK_JAVA            java binary (default: java on PATH; javac next to it)
#   ESBULK_JAVA_OPTS       extra JVM flags for every node (word-split)
#   ESBULK_M2_REPO         optional Maven local repository (default ~/.m2/repository)
#   ESBULK_OS_HTTP_BASE, ESBULK_OS_TRANSPORT_BASE, ESBULK_OS_CLUSTER_NAME
#                          ports and name of a second cluster (defaults 19200,
#                          19300, esbulk-os); give it its own ESBULK_CLUSTER_DIR
#
# Logs: $ESBULK_CLUSTER_DIR/logs/os-node-I.log (stdout+stderr of that JVM),
# kept after stop; a new `start` moves the previous one to os-node-I.log.prev.
set -euo pipefail

readonly OS_VERSION=${ESBULK_OS_VERSION:-2.19.6}
[[ $OS_VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || {
    echo "opensearch.sh: ESBULK_OS_VERSION must look like 2.19.6, got '$OS_VERSION'" >&2
    exit 2
}
readonly OS_MAJOR=${OS_VERSION%%.*}
# A second, independent cluster (the 429 test's tiny one) sets these three and
# its own ESBULK_CLUSTER_DIR.
readonly CLUSTER_NAME=${ESBULK_OS_CLUSTER_NAME:-esbulk-os}
readonly HTTP_BASE=${ESBULK_OS_HTTP_BASE:-19200}
readonly TRANSPORT_BASE=${ESBULK_OS_TRANSPORT_BASE:-19300}
readonly LAUNCHER_CLASS=esbulk.os.OsNodeLauncher

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/../.." && pwd)
readonly SCRIPT_DIR REPO_ROOT
readonly POM="$SCRIPT_DIR/os-pom.xml"
readonly JAVA_SRC_DIR="$SCRIPT_DIR/java/os"

CACHE_DIR=${ESBULK_CLUSTER_CACHE:-$HOME/.cache/libesbulk/opensearch-$OS_VERSION}
CLUSTER_DIR=${ESBULK_CLUSTER_DIR:-$REPO_ROOT/tests/cluster/run/opensearch}
# by its real path: a node is known as ours by the directory on its command
# line, which must not depend on a symbolic link on the way to it
CLUSTER_DIR=$(realpath -m -- "$CLUSTER_DIR")
NODE_HEAP=${ESBULK_NODE_HEAP:-512m}
START_TIMEOUT=${ESBULK_CLUSTER_TIMEOUT:-180}
STOP_TIMEOUT=${ESBULK_STOP_TIMEOUT:-30}
# OpenSearch 3 runs on Java 21 or newer; the machine's default may be 17.
java_major() { "$1" -version 2>&1 | sed -n 's/.*version "\([0-9][0-9]*\).*/\1/p' | head -n 1; }
if [[ -z ${ESBULK_JAVA:-} ]] && ((OS_MAJOR >= 3)); then
    if [[ $(java_major java 2>/dev/null || true) -lt 21 ]]; then
        for j in $(ls -d /usr/lib/jvm/*/ 2>/dev/null | sort -rV); do
            if [[ -x $j/bin/java && -x $j/bin/javac && $(java_major "$j/bin/java") -ge 21 ]]; then
                ESBULK_JAVA=$j/bin/java
                break
            fi
        done
        [[ -n ${ESBULK_JAVA:-} ]] || {
            echo "opensearch.sh: OpenSearch $OS_VERSION needs a JDK 21 or newer (none under /usr/lib/jvm; set ESBULK_JAVA)" >&2
            exit 1
        }
    fi
fi
JAVA=${ESBULK_JAVA:-java}
if [[ -n ${ESBULK_JAVA:-} ]]; then
    JAVAC="$(dirname "$ESBULK_JAVA")/javac"
else
    JAVAC=javac
fi

PID_DIR="$CLUSTER_DIR/pids"
LOG_DIR="$CLUSTER_DIR/logs"
STATE_FILE="$CLUSTER_DIR/cluster.state"

# filled by option parsing / load_state
NODES=3
SETTINGS=()
KEEP_DATA=0
STARTED=()   # node indexes this invocation launched (cleaned up on failure)

log() { printf 'opensearch.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

usage() {
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
}

node_name() { printf 'os-node-%s' "$1"; }
http_port() { printf '%s' $((HTTP_BASE + $1)); }
transport_port() { printf '%s' $((TRANSPORT_BASE + $1)); }
pid_file() { printf '%s/%s.pid' "$PID_DIR" "$(node_name "$1")"; }
log_file() { printf '%s/%s.log' "$LOG_DIR" "$(node_name "$1")"; }

# ---------------------------------------------------------------- fetch ----

apt_install() {
    command -v apt-get >/dev/null 2>&1 || die "missing $* and no apt-get to install it"
    log "installing Debian package(s): $*"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

ensure_tools() {
    local pkgs=()
    if [[ -z ${ESBULK_JAVA:-} ]]; then
        command -v java >/dev/null 2>&1 && command -v javac >/dev/null 2>&1 ||
            pkgs+=(openjdk-17-jdk-headless)
    fi
    command -v mvn >/dev/null 2>&1 || pkgs+=(maven)
    command -v curl >/dev/null 2>&1 || pkgs+=(curl)
    command -v flock >/dev/null 2>&1 || pkgs+=(util-linux)
    if ((${#pkgs[@]})); then apt_install "${pkgs[@]}"; fi
    "$JAVA" -version >/dev/null 2>&1 || die "cannot run $JAVA"
}

sha_of() { cat "$@" | sha256sum | cut -d' ' -f1; }

do_fetch() {
    ensure_tools
    mkdir -p "$CACHE_DIR"
    # One fetch at a time per cache (parallel test jobs). A descriptor of
    # its own: callers hold their locks on fd 9 (tests/cluster/ensure.sh holds
    # the cluster's lock through the whole start), and reopening their fd
    # here would drop their lock halfway and let a second start in.
    local lockfd
    exec {lockfd}>"$CACHE_DIR/.lock"
    flock "$lockfd"

    local pom_sum lib="$CACHE_DIR/lib"
    pom_sum=$( (cat "$POM"; printf '%s\n' "$OS_VERSION") | sha256sum | cut -d' ' -f1)
    if [[ ! -f $lib/.stamp || $(<"$lib/.stamp") != "$pom_sum" ]]; then
        log "fetching OpenSearch $OS_VERSION jars from Maven Central into $lib"
        local tmp="$CACHE_DIR/lib.tmp.$$" mvn_args=()
        rm -rf "$tmp"
        if [[ -n ${ESBULK_M2_REPO:-} ]]; then
            mvn_args+=("-Dmaven.repo.local=$ESBULK_M2_REPO")
        fi
        # run from a scratch dir so nothing (target/) lands in the repo
        if ! (cd "$CACHE_DIR" && mvn -B -q -Dstyle.color=never -f "$POM" "${mvn_args[@]}" \
            "-Dos.version=$OS_VERSION" $( ((OS_MAJOR >= 3)) && echo -Dos3) \
            dependency:copy-dependencies -DincludeScope=runtime \
            -DoutputDirectory="$tmp") >"$CACHE_DIR/mvn.log" 2>&1; then
            tail -n 40 "$CACHE_DIR/mvn.log" >&2
            rm -rf "$tmp"
            die "mvn dependency:copy-dependencies failed (full log: $CACHE_DIR/mvn.log)"
        fi
        [[ -f $tmp/opensearch-$OS_VERSION.jar ]] || die "opensearch-$OS_VERSION.jar missing after mvn"
        printf '%s\n' "$pom_sum" >"$tmp/.stamp"
        rm -rf "$lib"
        mv "$tmp" "$lib"
    fi

    local src_sum classes="$CACHE_DIR/classes" srcs=("$JAVA_SRC_DIR"/*.java)
    src_sum=$( (cat "$POM" "${srcs[@]}"; printf '%s %s\n' "$OS_VERSION" "$JAVA") | sha256sum | cut -d' ' -f1)
    if [[ ! -f $classes/.stamp || $(<"$classes/.stamp") != "$src_sum" ]]; then
        local tmp="$CACHE_DIR/classes.tmp.$$"
        rm -rf "$tmp"
        mkdir -p "$tmp"
        "$JAVAC" -nowarn -encoding UTF-8 -d "$tmp" -cp "$lib/*" "${srcs[@]}" ||
            die "compiling the launcher failed"
        printf '%s\n' "$src_sum" >"$tmp/.stamp"
        rm -rf "$classes"
        mv "$tmp" "$classes"
    fi
    exec {lockfd}>&-
}

# ------------------------------------------------------------ processes ----

# true if $1 is a live JVM that this script started for node index $2
pid_is_ours() {
    local pid=$1 name
    name=$(node_name "$2")
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    [[ -r /proc/$pid/cmdline ]] || return 1
    local args
    args=$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
    grep -qxF -- "-Desbulk.node=$name" <<<"$args" &&
        grep -qxF -- "-Desbulk.cluster.dir=$CLUSTER_DIR" <<<"$args"
}

# prints the pid of node $1 if it is running (ours), else returns 1
node_pid() {
    local f pid
    f=$(pid_file "$1")
    [[ -f $f ]] || return 1
    pid=$(<"$f")
    pid_is_ours "$pid" "$1" || return 1
    printf '%s' "$pid"
}

http_up() {
    curl -s -o /dev/null --max-time 3 "http://127.0.0.1:$(http_port "$1")/" 2>/dev/null
}

port_busy() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# node indexes that have a pid file (sorted)
known_nodes() {
    local f n
    [[ -d $PID_DIR ]] || return 0
    for f in "$PID_DIR"/os-node-*.pid; do
        [[ -e $f ]] || continue
        n=${f##*/os-node-}
        printf '%s\n' "${n%.pid}"
    done | sort -n
}

heap_half() {
    # half of the heap for direct memory (as the distribution's ergonomics do)
    local num=${NODE_HEAP%[kKmMgG]} unit=${NODE_HEAP: -1}
    case $unit in
        g | G) printf '%sm' $((num * 1024 / 2)) ;;
        m | M) printf '%sm' $((num / 2)) ;;
        k | K) printf '%sk' $((num / 2)) ;;
    esac
}

launch_node() {
    local i=$1 name home log pid seeds="" initial="" j
    shift
    name=$(node_name "$i")
    home="$CLUSTER_DIR/$name"
    log=$(log_file "$i")
    for ((j = 0; j < NODES; j++)); do
        seeds+="${seeds:+,}127.0.0.1:$(transport_port "$j")"
        initial+="${initial:+,}$(node_name "$j")"
    done
    mkdir -p "$home/tmp" "$PID_DIR" "$LOG_DIR"

    local jvm=(
        "-Xms$NODE_HEAP" "-Xmx$NODE_HEAP" "-XX:MaxDirectMemorySize=$(heap_half)"
        -Xss1m -XX:+UseSerialGC -XX:TieredStopAtLevel=1
        -XX:-OmitStackTraceInFastThrow -XX:+ExitOnOutOfMemoryError
        "-Djava.io.tmpdir=$home/tmp" -Dfile.encoding=UTF-8
        "-Djava.locale.providers=SPI,$( ((OS_MAJOR >= 3)) && echo CLDR || echo COMPAT)" -Djna.nosys=true
        -Dlog4j2.formatMsgNoLookups=true -Dlog4j.shutdownHookEnabled=false
        -Dlog4j2.disable.jmx=true
        -Dio.netty.noUnsafe=true -Dio.netty.noKeySetOptimization=true
        -Dio.netty.recycler.maxCapacityPerThread=0
        "-Desbulk.node=$name" "-Desbulk.cluster.dir=$CLUSTER_DIR"
    )
    local extra_opts=()
    if [[ -n ${ESBULK_JAVA_OPTS:-} ]]; then
        read -r -a extra_opts <<<"$ESBULK_JAVA_OPTS"
    fi
    local node_args=(
        "-Epath.home=$home" "-Epath.data=$home/data" "-Epath.logs=$home/logs"
        "-Enode.name=$name" "-Ecluster.name=$CLUSTER_NAME"
        -Enetwork.host=127.0.0.1
        "-Ehttp.port=$(http_port "$i")" "-Etransport.port=$(transport_port "$i")"
        -Ehttp.type=netty4 -Etransport.type=netty4
        "-Ediscovery.seed_hosts=$seeds"
        "-Ecluster.initial_cluster_manager_nodes=$initial"
        "-Enode.roles=cluster_manager,data,ingest"
        -Ecluster.routing.allocation.disk.threshold_enabled=false
    )
    local s
    for s in "${SETTINGS[@]}" "$@"; do node_args+=("-E$s"); done

    printf '===== %s: starting %s (heap %s) =====\n' "$(date '+%F %T')" "$name" "$NODE_HEAP" >>"$log"
    nohup "$JAVA" "${jvm[@]}" "${extra_opts[@]}" -cp "$CACHE_DIR/lib/*:$CACHE_DIR/classes" \
        "$LAUNCHER_CLASS" "${node_args[@]}" </dev/null >>"$log" 2>&1 9>&- &
    pid=$!
    printf '%s\n' "$pid" >"$(pid_file "$i")"
    STARTED+=("$i")
}

# send TERM to the given node indexes, wait, then KILL leftovers
stop_nodes() {
    local i pid pids=() idx=()
    for i in "$@"; do
        if pid=$(node_pid "$i"); then
            kill -TERM "$pid" 2>/dev/null || true
            pids+=("$pid")
            idx+=("$i")
        fi
    done
    local deadline=$((SECONDS + STOP_TIMEOUT)) alive k
    while :; do
        alive=0
        for k in "${!pids[@]}"; do
            pid_is_ours "${pids[$k]}" "${idx[$k]}" && alive=1
        done
        ((alive)) || break
        if ((SECONDS >= deadline)); then
            for k in "${!pids[@]}"; do
                if pid_is_ours "${pids[$k]}" "${idx[$k]}"; then
                    log "$(node_name "${idx[$k]}") did not stop in ${STOP_TIMEOUT}s: SIGKILL"
                    kill -KILL "${pids[$k]}" 2>/dev/null || true
                fi
            done
            sleep 1
            break
        fi
        sleep 0.5
    done
    for i in "$@"; do rm -f "$(pid_file "$i")"; done
    # reap children of this very invocation (failure path of start)
    wait 2>/dev/null || true
}

print_log_tails() {
    local i f
    for i in "$@"; do
        f=$(log_file "$i")
        [[ -f $f ]] || continue
        printf '\n----- last 40 lines of %s -----\n' "$f" >&2
        tail -n 40 "$f" >&2
    done
}

# wait until the cluster has $NODES nodes and is green, asking node $1;
# fails early when one of the nodes we are waiting on died
wait_green() {
    local ask=$1 deadline=$((SECONDS + START_TIMEOUT)) code i pid
    local url
    url="http://127.0.0.1:$(http_port "$ask")/_cluster/health?wait_for_status=green&wait_for_nodes=$NODES&timeout=5s"
    while :; do
        for ((i = 0; i < NODES; i++)); do
            if [[ -f $(pid_file "$i") ]] && ! pid=$(node_pid "$i"); then
                log "$(node_name "$i") exited during startup"
                return 1
            fi
        done
        code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$url" 2>/dev/null) || code=000
        if [[ $code == 200 ]]; then
            break
        fi
        if ((SECONDS >= deadline)); then
            log "timed out after ${START_TIMEOUT}s waiting for $NODES nodes and green (last HTTP $code)"
            return 1
        fi
        [[ $code == 408 ]] || sleep 1
    done
    # HTTP of a node opens a little after it joined: wait for every one
    for ((i = 0; i < NODES; i++)); do
        until http_up "$i"; do
            if ((SECONDS >= deadline)) || ! node_pid "$i" >/dev/null; then
                log "$(node_name "$i") HTTP not answering"
                return 1
            fi
            sleep 0.5
        done
    done
}

save_state() {
    local s
    {
        printf 'nodes=%s\n' "$NODES"
        for s in "${SETTINGS[@]}"; do printf 'setting=%s\n' "$s"; done
    } >"$STATE_FILE"
}

load_state() {
    [[ -f $STATE_FILE ]] || return 1
    local line
    SETTINGS=()
    while IFS= read -r line; do
        case $line in
            nodes=*) NODES=${line#nodes=} ;;
            setting=*) SETTINGS+=("${line#setting=}") ;;
        esac
    done <"$STATE_FILE"
}

check_index() {
    [[ $1 =~ ^[0-9]+$ ]] || die "node index must be a number, got '$1'"
    (($1 < NODES)) || die "node index $1 out of range (cluster has $NODES nodes)"
}

# ------------------------------------------------------------- commands ----

on_start_abort() {
    log "interrupted: stopping the nodes this run started"
    STOP_TIMEOUT=10 stop_nodes "${STARTED[@]}"
    exit 130
}

do_start() {
    local i pid p
    for i in $(known_nodes); do
        if pid=$(node_pid "$i"); then
            die "$(node_name "$i") already running (pid $pid): run '$0 stop' first"
        fi
    done
    rm -f "$PID_DIR"/os-node-*.pid
    for ((i = 0; i < NODES; i++)); do
        for p in "$(http_port "$i")" "$(transport_port "$i")"; do
            port_busy "$p" && die "127.0.0.1:$p is already in use by another process"
        done
    done
    do_fetch

    mkdir -p "$CLUSTER_DIR" "$LOG_DIR" "$PID_DIR"
    if ((!KEEP_DATA)); then
        rm -rf "${CLUSTER_DIR:?}"/os-node-*/
    fi
    for ((i = 0; i < NODES; i++)); do
        mv -f "$(log_file "$i")" "$(log_file "$i").prev" 2>/dev/null || true # absent on a first start
    done
    save_state

    local t0=$SECONDS
    trap on_start_abort INT TERM
    for ((i = 0; i < NODES; i++)); do launch_node "$i"; done
    if ! wait_green 0; then
        print_log_tails "${STARTED[@]}"
        STOP_TIMEOUT=10 stop_nodes "${STARTED[@]}"
        die "cluster start failed (logs kept in $LOG_DIR)"
    fi
    trap - INT TERM
    printf 'OpenSearch %s cluster %s: %s node(s) green in %ss, http://127.0.0.1:%s..%s\n' \
        "$OS_VERSION" "$CLUSTER_NAME" "$NODES" $((SECONDS - t0)) \
        "$(http_port 0)" "$(http_port $((NODES - 1)))"
}

do_start_node() {
    local i=$1 pid p
    shift
    load_state || die "no cluster state in $CLUSTER_DIR: run '$0 start' first"
    check_index "$i"
    if pid=$(node_pid "$i"); then die "$(node_name "$i") already running (pid $pid)"; fi
    for p in "$(http_port "$i")" "$(transport_port "$i")"; do
        port_busy "$p" && die "127.0.0.1:$p is already in use by another process"
    done
    do_fetch
    local t0=$SECONDS
    launch_node "$i" "$@"
    if ! wait_green "$i"; then
        print_log_tails "$i"
        STOP_TIMEOUT=10 stop_nodes "$i"
        die "$(node_name "$i") failed to rejoin (log: $(log_file "$i"))"
    fi
    printf '%s rejoined, cluster green with %s nodes in %ss\n' "$(node_name "$i")" "$NODES" $((SECONDS - t0))
}

do_kill_node() {
    local i=$1 pid n
    load_state || die "no cluster state in $CLUSTER_DIR"
    check_index "$i"
    pid=$(node_pid "$i") || die "$(node_name "$i") is not running"
    kill -KILL "$pid"
    for ((n = 0; n < 100; n++)); do
        pid_is_ours "$pid" "$i" || break
        sleep 0.1
    done
    pid_is_ours "$pid" "$i" && die "$(node_name "$i") (pid $pid) still alive after SIGKILL"
    rm -f "$(pid_file "$i")"
    printf '%s (pid %s) killed with SIGKILL\n' "$(node_name "$i")" "$pid"
}

do_stop_node() {
    load_state || die "no cluster state in $CLUSTER_DIR"
    check_index "$1"
    node_pid "$1" >/dev/null || die "$(node_name "$1") is not running"
    stop_nodes "$1"
    printf '%s stopped\n' "$(node_name "$1")"
}

# A node joining a formed cluster: data and ingest only (no vote), so the
# cluster manager quorum stays that of the first nodes.
do_add_node() {
    local i p
    load_state || die "no cluster state in $CLUSTER_DIR: run '$0 start' first"
    i=$NODES
    ((i < 10)) || die "at most 10 nodes"
    for p in "$(http_port "$i")" "$(transport_port "$i")"; do
        port_busy "$p" && die "127.0.0.1:$p is already in use by another process"
    done
    do_fetch
    rm -rf "${CLUSTER_DIR:?}/$(node_name "$i")"
    local t0=$SECONDS
    NODES=$((NODES + 1))
    save_state
    launch_node "$i" node.roles=data,ingest
    if ! wait_green "$i"; then
        print_log_tails "$i"
        STOP_TIMEOUT=10 stop_nodes "$i"
        NODES=$i
        save_state
        die "$(node_name "$i") failed to join (log: $(log_file "$i"))"
    fi
    printf '%s joined, cluster green with %s nodes in %ss\n' "$(node_name "$i")" "$NODES" $((SECONDS - t0))
}

do_remove_node() {
    load_state || die "no cluster state in $CLUSTER_DIR"
    local i=$((NODES - 1))
    ((i > 0)) || die "cannot remove the only node"
    stop_nodes "$i"
    NODES=$i
    save_state
    printf '%s stopped and removed, %s nodes left\n' "$(node_name "$i")" "$NODES"
}

do_stop() {
    local nodes
    mapfile -t nodes < <(known_nodes)
    if ((${#nodes[@]} == 0)); then
        printf 'no OpenSearch node of ours is running\n'
        return 0
    fi
    stop_nodes "${nodes[@]}"
    printf 'stopped %s node(s); logs in %s\n' "${#nodes[@]}" "$LOG_DIR"
}

do_status() {
    local i pid all_up=1 any_up=0 ask=""
    load_state || true
    for ((i = 0; i < NODES; i++)); do
        if pid=$(node_pid "$i"); then
            if http_up "$i"; then
                printf '%s up       pid=%s http=127.0.0.1:%s\n' "$(node_name "$i")" "$pid" "$(http_port "$i")"
                any_up=1
                ask=${ask:-$i}
            else
                printf '%s starting pid=%s (HTTP not answering)\n' "$(node_name "$i")" "$pid"
                all_up=0
            fi
        else
            printf '%s down\n' "$(node_name "$i")"
            all_up=0
        fi
    done
    if ((any_up)); then
        curl -s --max-time 5 "http://127.0.0.1:$(http_port "$ask")/_cat/health?h=cluster,status,node.total,shards,unassign" ||
            true
    fi
    ((all_up))
}

# ----------------------------------------------------------------- main ----

main() {
    (($#)) || {
        usage
        exit 2
    }
    local cmd=$1 pos=()
    shift
    while (($#)); do
        case $1 in
            --nodes)
                [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "--nodes needs a positive number"
                NODES=$2
                shift 2
                ;;
            --nodes=*)
                NODES=${1#--nodes=}
                [[ $NODES =~ ^[1-9][0-9]*$ ]] || die "--nodes needs a positive number"
                shift
                ;;
            --setting)
                [[ ${2:-} == ?*=* ]] || die "--setting needs KEY=VALUE"
                SETTINGS+=("$2")
                shift 2
                ;;
            --setting=*)
                [[ ${1#--setting=} == ?*=* ]] || die "--setting needs KEY=VALUE"
                SETTINGS+=("${1#--setting=}")
                shift
                ;;
            --keep-data)
                KEEP_DATA=1
                shift
                ;;
            -h | --help)
                usage
                exit 0
                ;;
            -*) die "unknown option $1" ;;
            *)
                pos+=("$1")
                shift
                ;;
        esac
    done
    [[ $NODE_HEAP =~ ^[0-9]+[kKmMgG]$ ]] || die "ESBULK_NODE_HEAP must look like 512m or 1g"
    # 19210+ / 19310+ are used by the Elasticsearch helper (tests/cluster/elasticsearch.sh)
    ((NODES <= 10)) || die "--nodes at most 10 (ports 19200-19209 / 19300-19309)"

    case $cmd in
        fetch) do_fetch ;;
        start) do_start ;;
        stop) do_stop ;;
        status) do_status ;;
        kill-node)
            ((${#pos[@]} == 1)) || die "usage: kill-node I"
            do_kill_node "${pos[0]}"
            ;;
        stop-node)
            ((${#pos[@]} == 1)) || die "usage: stop-node I"
            do_stop_node "${pos[0]}"
            ;;
        add-node) do_add_node ;;
        remove-node) do_remove_node ;;
        start-node)
            ((${#pos[@]} == 1)) || die "usage: start-node I [--setting K=V]..."
            local extra=("${SETTINGS[@]}")
            SETTINGS=()
            do_start_node "${pos[0]}" "${extra[@]}"
            ;;
        -h | --help | help) usage ;;
        *)
            usage
            exit 2
            ;;
    esac
}

main "$@"
