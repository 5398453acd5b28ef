#!/usr/bin/env bash
# tests/cluster/elasticsearch.sh -- a real multi-node Elasticsearch 8.14.3
# cluster on loopback, for libesbulk integration tests.  Every node is its own
# JVM process, built from jars on Maven Central (no tarball, no Docker).
#
# Usage:
#   tests/cluster/elasticsearch.sh fetch                 download jars + compile launcher (idempotent)
#   tests/cluster/elasticsearch.sh start [--nodes N] [--setting K=V]... [--keep-data] [--timeout S]
#   tests/cluster/elasticsearch.sh stop                  TERM our nodes, KILL after ESBULK_STOP_TIMEOUT
#   tests/cluster/elasticsearch.sh status                pids, ports, cluster health (exit 3 if none of ours runs)
#   tests/cluster/elasticsearch.sh kill-node I           SIGKILL node I (0-based)
#   tests/cluster/elasticsearch.sh start-node I [--setting K=V]... [--timeout S]
#                                                        restart node I alone (data kept), wait for green
#
# Cluster layout (fixed):
#   cluster.name esbulk-es; node i is es-node-<i>, HTTP 127.0.0.1:(19210+i),
#   transport 127.0.0.1:(19310+i); all nodes master+data eligible (default
#   roles), seed hosts = all transport ports, initial master nodes = all nodes.
#   Plain HTTP, no auth (there is no x-pack in this build at all).
#   cluster.routing.allocation.disk.threshold_enabled=false.
#   --setting K=V (repeatable) is passed to every node after the defaults, so it
#   can override them (e.g. --setting thread_pool.write.queue_size=1).
#   start wipes the data of a previous run unless --keep-data; it waits for
#   N nodes and green, and on failure prints each node's log tail, stops what it
#   started and exits non-zero.  start-node reuses the node count and settings
#   recorded by start (plus any --setting given to it).
#
# Environment:
#   ESBULK_CLUSTER_CACHE   jars + compiled launcher (default $HOME/.cache/libesbulk/elasticsearch-8.14.3)
#   ESBULK_CLUSTER_DIR     data, logs, pid files (default <repo>/tests/cluster/run/elasticsearch)
#   ESBULK_NODE_HEAP       heap per node, -Xms = -Xmx (default 512m)
#   ESBULK_START_TIMEOUT   seconds for start / start-node to reach green (default 180)
#   ESBULK_STOP_TIMEOUT    seconds between TERM and KILL in stop (default 30)
#   ESBULK_ES_JAVA_HOME    JDK to use (default $JAVA_HOME, else java/javac on PATH); needs Java >= 17
#   ESBULK_ES_JVM_TUNING   GC/JIT flags (default "-XX:+UseSerialGC -XX:TieredStopAtLevel=1";
#                          set to "" for the JVM's defaults, i.e. G1 + C2)
#   ESBULK_ES_JAVA_OPTS    extra JVM options appended for every node
#
# Files under ESBULK_CLUSTER_DIR: node-<i>/{data,config}, logs/es-node-<i>.log
# (stdout+stderr of that node; kept after stop), pids/es-node-<i>.pid,
# cluster.nodes and cluster.settings (what start recorded).
#
# What this build is: the real Elasticsearch 8.14.3 server jar and its libs
# plus the real transport-netty4 module (HTTP + transport), started through the
# normal Node / PluginsService code with the server on the module path, one
# node per JVM, by a tiny launcher (java/es/EsNodeMain.java).  Elastic does not
# publish its other modules to Maven Central, so they are absent: rest-root is
# replaced by a small stand-in (java/es/rest-root/, serves GET/HEAD /); there is
# no lang-painless (no scripts), no reindex (_reindex, _update_by_query,
# _delete_by_query), no data-streams REST APIs (GET/PUT/DELETE _data_stream;
# data streams themselves are created on first write through an index template
# with "data_stream": {} and can be rolled over), no ingest-common processors,
# no analysis-common extras, mapper-extras, aggregations module, x-pack.
# Elasticsearch is licensed under SSPL/Elastic License 2.0; used here for
# local testing only, nothing of it is committed.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/../.." && pwd)"

ES_VERSION=8.14.3
CLUSTER_NAME=esbulk-es
HTTP_BASE=19210
TRANSPORT_BASE=19310
MAIN_CLASS=esbulk.EsNodeMain
# GC/JIT flags for fast startup on small machines (see ESBULK_ES_JVM_TUNING).
DEFAULT_JVM_TUNING="-XX:+UseSerialGC -XX:TieredStopAtLevel=1"

CACHE="${ESBULK_CLUSTER_CACHE:-$HOME/.cache/libesbulk/elasticsearch-$ES_VERSION}"
WORK="${ESBULK_CLUSTER_DIR:-$REPO_ROOT/tests/cluster/run/elasticsearch}"
# by its real path: a node is known as ours by its data path on its command
# line, which must not depend on a symbolic link on the way to it
WORK=$(realpath -m -- "$WORK")
HEAP="${ESBULK_NODE_HEAP:-512m}"
START_TIMEOUT="${ESBULK_START_TIMEOUT:-180}"
STOP_TIMEOUT="${ESBULK_STOP_TIMEOUT:-30}"

POM="$SCRIPT_DIR/es-pom.xml"
LAUNCHER_SRC="$SCRIPT_DIR/java/es/EsNodeMain.java"
RESTROOT_SRC="$SCRIPT_DIR/java/es/rest-root/RestRootPlugin.java"

log() { printf 'elasticsearch.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# ---------------------------------------------------------------- java / tools

JAVA_HOME_USE="${ESBULK_ES_JAVA_HOME:-${JAVA_HOME:-}}"
if [[ -n "$JAVA_HOME_USE" ]]; then
    JAVA="$JAVA_HOME_USE/bin/java"; JAVAC="$JAVA_HOME_USE/bin/javac"; JAR="$JAVA_HOME_USE/bin/jar"
else
    JAVA=java; JAVAC=javac; JAR=jar
fi

have() { command -v "$1" >/dev/null 2>&1; }

java_major() {
    local v
    v="$("$JAVA" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = //p')"
    echo "${v%%.*}"
}

check_java() {
    have "$JAVA" || die "no java ($JAVA); install a JDK >= 17 or set ESBULK_ES_JAVA_HOME"
    local m; m="$(java_major)"
    [[ -n "$m" && "$m" -ge 17 ]] || die "Java >= 17 needed, $JAVA is '$m'"
}

# Install missing Debian packages (only when something is missing).
ensure_tools() {
    local missing=()
    have mvn || missing+=(maven)
    have curl || missing+=(curl)
    if [[ -z "$JAVA_HOME_USE" ]] && { ! have javac || ! have jar; }; then
        missing+=(openjdk-17-jdk-headless)
    fi
    ((${#missing[@]} == 0)) && return 0
    if have apt-get && [[ "$(id -u)" == 0 ]]; then
        log "installing missing Debian packages: ${missing[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    else
        die "missing tools (${missing[*]}) and cannot apt-get install them"
    fi
}

# ---------------------------------------------------------------- fetch

# Bump when the cache layout built by cmd_fetch changes.
CACHE_LAYOUT=1

stamp_of_inputs() {
    { echo "layout=$CACHE_LAYOUT es=$ES_VERSION"; cat "$POM" "$LAUNCHER_SRC" "$RESTROOT_SRC"; } | sha256sum | cut -d' ' -f1
}

cache_ready() {
    [[ -f "$CACHE/.stamp" && "$(cat "$CACHE/.stamp")" == "$(stamp_of_inputs)" \
        && -f "$CACHE/launcher/esbulk/EsNodeMain.class" \
        && -f "$CACHE/home/lib/elasticsearch-$ES_VERSION.jar" \
        && -f "$CACHE/home/modules/transport-netty4/transport-netty4-$ES_VERSION.jar" \
        && -f "$CACHE/home/modules/esbulk-rest-root/esbulk-rest-root.jar" ]]
}

write_descriptor() { # dir name classname description [modulename]
    {
        echo "description=$4"
        echo "version=$ES_VERSION"
        echo "name=$2"
        echo "classname=$3"
        echo "java.version=17"
        echo "elasticsearch.version=$ES_VERSION"
        echo "extended.plugins="
        echo "has.native.controller=false"
        if [[ -n "${5:-}" ]]; then echo "modulename=$5"; fi
    } >"$1/plugin-descriptor.properties"
}

cmd_fetch() {
    if cache_ready; then
        return 0
    fi
    ensure_tools
    check_java
    have "$JAVAC" || die "no javac ($JAVAC): a full JDK is needed to compile the launcher"
    log "fetching Elasticsearch $ES_VERSION jars from Maven Central into $CACHE"
    local parent tmp
    parent="$(dirname "$CACHE")"
    mkdir -p "$parent"
    tmp="$(mktemp -d "$parent/.es-fetch.XXXXXX")"
    # shellcheck disable=SC2064
    trap "rm -rf '$tmp'" EXIT

    if ! mvn -q -B -f "$POM" dependency:copy-dependencies \
        -DincludeScope=runtime -DoutputDirectory="$tmp/dl" >"$tmp/mvn.log" 2>&1; then
        cat "$tmp/mvn.log" >&2
        die "mvn could not fetch the Elasticsearch jars"
    fi

    # Server + libs on the module path; the netty4 module (with netty and
    # ssl-config) as a module bundle, exactly like the distribution's layout.
    local h="$tmp/home" j b
    mkdir -p "$h/lib" "$h/modules/transport-netty4" "$h/modules/esbulk-rest-root" "$h/plugins"
    for j in "$tmp"/dl/*.jar; do
        b="$(basename "$j")"
        case "$b" in
            netty-*.jar | transport-netty4-*.jar | elasticsearch-ssl-config-*.jar)
                mv "$j" "$h/modules/transport-netty4/" ;;
            *) mv "$j" "$h/lib/" ;;
        esac
    done
    write_descriptor "$h/modules/transport-netty4" transport-netty4 \
        org.elasticsearch.transport.netty4.Netty4Plugin \
        "Netty 4 based transport implementation" org.elasticsearch.transport.netty4

    local cp="$h/lib/*:$h/modules/transport-netty4/*"
    mkdir -p "$tmp/launcher" "$tmp/restroot"
    "$JAVAC" -nowarn --release 17 -d "$tmp/launcher" -cp "$cp" "$LAUNCHER_SRC"
    "$JAVAC" -nowarn --release 17 -d "$tmp/restroot" -cp "$cp" "$RESTROOT_SRC"
    if have "$JAR"; then
        "$JAR" cf "$h/modules/esbulk-rest-root/esbulk-rest-root.jar" -C "$tmp/restroot" .
    else
        (cd "$tmp/restroot" && zip -qr "$h/modules/esbulk-rest-root/esbulk-rest-root.jar" .)
    fi
    write_descriptor "$h/modules/esbulk-rest-root" esbulk-rest-root esbulk.restroot.RestRootPlugin \
        "libesbulk test stand-in for the rest-root module (GET/HEAD /)"

    mkdir -p "$tmp/final"
    mv "$h" "$tmp/final/home"
    mv "$tmp/launcher" "$tmp/final/launcher"
    stamp_of_inputs >"$tmp/final/.stamp"
    rm -rf "$CACHE"
    mv "$tmp/final" "$CACHE"
    rm -rf "$tmp"
    trap - EXIT
    log "cache ready: $CACHE ($(du -sh "$CACHE" | cut -f1))"
}

# ---------------------------------------------------------------- helpers

node_name() { echo "es-node-$1"; }
http_port() { echo $((HTTP_BASE + $1)); }
transport_port() { echo $((TRANSPORT_BASE + $1)); }
pid_file() { echo "$WORK/pids/es-node-$1.pid"; }
log_file() { echo "$WORK/logs/es-node-$1.log"; }
node_dir() { echo "$WORK/node-$1"; }

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Is PID alive AND one of ours (our launcher, this node's name, this work dir)?
is_our_node() { # pid index
    local pid="$1" i="$2" cmd
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    [[ -r "/proc/$pid/cmdline" ]] || return 1
    cmd="$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null)" || return 1
    grep -qxF "$MAIN_CLASS" <<<"$cmd" \
        && grep -qxF "node.name=$(node_name "$i")" <<<"$cmd" \
        && grep -qxF "path.data=$(node_dir "$i")/data" <<<"$cmd"
}

# Gone = no such pid, or a zombie (a zombie has closed all its sockets).
proc_gone() { # pid
    local st
    st="$(cat "/proc/$1/stat" 2>/dev/null)" || return 0
    st="${st##*) }"
    [[ "${st%% *}" == Z ]]
}

# Still ours and running, or still exiting (cmdline already released, but
# files/sockets maybe not yet closed)?  A reused pid of a stranger is "no".
ours_or_dying() { # pid index
    proc_gone "$1" && return 1
    is_our_node "$1" "$2" && return 0
    [[ ! -s "/proc/$1/cmdline" ]]
}

node_pid() { # index -> prints pid if the node is running (ours), else fails
    local f; f="$(pid_file "$1")"
    [[ -f "$f" ]] || return 1
    local pid; pid="$(cat "$f")"
    is_our_node "$pid" "$1" || return 1
    echo "$pid"
}

recorded_nodes() {
    if [[ -f "$WORK/cluster.nodes" ]]; then cat "$WORK/cluster.nodes"; else echo 3; fi
}

# all indices that have a pid file (even beyond the recorded count)
pid_indices() {
    local f n
    shopt -s nullglob
    for f in "$WORK"/pids/es-node-*.pid; do
        n="${f##*/es-node-}"; echo "${n%.pid}"
    done | sort -n
    shopt -u nullglob
}

half_of() { # 512m -> 256m, 2g -> 1024m; anything else -> empty
    if [[ "$1" =~ ^([0-9]+)([mM])$ ]]; then echo "$((BASH_REMATCH[1] / 2))m"
    elif [[ "$1" =~ ^([0-9]+)([gG])$ ]]; then echo "$((BASH_REMATCH[1] * 512))m"
    fi
}

write_log4j_config() { # dir
    cat >"$1/log4j2.properties" <<'EOF'
status = error
appender.console.type = Console
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d{ISO8601}][%-5p][%-25c{1.}] [%node_name]%marker %m%n
rootLogger.level = info
rootLogger.appenderRef.console.ref = console
EOF
}

launch_node() { # index nodes
    local i="$1" n="$2" k seeds="" masters="" nd
    for ((k = 0; k < n; k++)); do
        seeds+="${seeds:+,}127.0.0.1:$(transport_port "$k")"
        masters+="${masters:+,}$(node_name "$k")"
    done
    nd="$(node_dir "$i")"
    mkdir -p "$nd/data" "$nd/config" "$nd/logs" "$WORK/logs" "$WORK/pids"
    write_log4j_config "$nd/config"

    local jvm=(-Xms"$HEAP" -Xmx"$HEAP" -Xss1m
        -XX:+ExitOnOutOfMemoryError -XX:-OmitStackTraceInFastThrow
        -Djava.awt.headless=true -Dfile.encoding=UTF-8 -Djna.nosys=true
        -Dio.netty.noUnsafe=true -Dio.netty.noKeySetOptimization=true
        -Dio.netty.recycler.maxCapacityPerThread=0
        -Dlog4j.shutdownHookEnabled=false -Dlog4j2.disable.jmx=true -Dlog4j2.formatMsgNoLookups=true
        -Des.networkaddress.cache.ttl=60 -Des.networkaddress.cache.negative.ttl=10
        -Djava.io.tmpdir="$nd/tmp")
    mkdir -p "$nd/tmp"
    local dm; dm="$(half_of "$HEAP")"
    if [[ -n "$dm" ]]; then jvm+=(-XX:MaxDirectMemorySize="$dm"); fi
    # shellcheck disable=SC2206
    jvm+=(${ESBULK_ES_JVM_TUNING-$DEFAULT_JVM_TUNING})
    # Java 22+ warns on JNA / FFI native access unless it is granted.
    if (("$(java_major)" >= 22)); then
        # shellcheck disable=SC2054
        jvm+=(--enable-native-access=com.sun.jna,org.elasticsearch.nativeaccess)
    fi
    if [[ -n "${ESBULK_ES_JAVA_OPTS:-}" ]]; then
        # shellcheck disable=SC2206
        jvm+=($ESBULK_ES_JAVA_OPTS)
    fi
    local settings=(
        "path.home=$CACHE/home"
        "path.data=$nd/data"
        "path.logs=$nd/logs"
        "node.name=$(node_name "$i")"
        "cluster.name=$CLUSTER_NAME"
        "network.host=127.0.0.1"
        "http.port=$(http_port "$i")"
        "transport.port=$(transport_port "$i")"
        "discovery.seed_hosts=$seeds"
        "cluster.initial_master_nodes=$masters"
        "cluster.routing.allocation.disk.threshold_enabled=false"
    )
    local s
    while IFS= read -r s; do
        if [[ -n "$s" ]]; then settings+=("$s"); fi
    done <"$WORK/cluster.settings"

    {
        echo "==== $(date '+%F %T') starting $(node_name "$i") (http $(http_port "$i"), transport $(transport_port "$i"))"
    } >>"$(log_file "$i")"
    # The background child execs java directly, so $! is the JVM's pid.
    nohup "$JAVA" "${jvm[@]}" --module-path "$CACHE/home/lib" --add-modules ALL-MODULE-PATH \
        -cp "$CACHE/launcher" "$MAIN_CLASS" --config="$nd/config" "${settings[@]}" \
        >>"$(log_file "$i")" 2>&1 </dev/null 9>&- &
    echo $! >"$(pid_file "$i")"
}

http_code() { # url -> prints HTTP status (000 if no answer)
    curl -s -o /dev/null -m "${2:-5}" -w '%{http_code}' "$1" 2>/dev/null || true
}

# Wait until the cluster (seen from node $via) has N nodes and is green.
wait_green() { # nodes via deadline_epoch watched_indices...
    local n="$1" via="$2" deadline="$3"; shift 3
    local port; port="$(http_port "$via")"
    local i body
    while :; do
        for i in "$@"; do
            if ! node_pid "$i" >/dev/null; then
                log "$(node_name "$i") exited during startup"
                return 1
            fi
        done
        body="$(curl -s -m 7 "http://127.0.0.1:$port/_cluster/health?wait_for_status=green&wait_for_nodes=$n&timeout=5s" 2>/dev/null || true)"
        if [[ "$body" == *'"status":"green"'* && "$body" == *'"timed_out":false'* ]]; then
            return 0
        fi
        (($(date +%s) < deadline)) || { log "timed out; last health: ${body:-<no answer>}"; return 1; }
        sleep 1
    done
}

print_log_tails() {
    local i
    for i in "$@"; do
        echo "----- tail of $(log_file "$i") -----" >&2
        tail -n 40 "$(log_file "$i")" >&2 2>/dev/null || true
    done
}

stop_indices() { # TERM then KILL the given node indices (only our pids)
    local i pid pids=() idx=()
    for i in "$@"; do
        if pid="$(node_pid "$i")"; then
            kill -TERM "$pid" 2>/dev/null || true
            pids+=("$pid"); idx+=("$i")
        fi
    done
    local deadline=$(($(date +%s%3N) + STOP_TIMEOUT * 1000)) k k2 alive
    while :; do
        alive=0
        for k in "${!pids[@]}"; do
            if ours_or_dying "${pids[$k]}" "${idx[$k]}"; then alive=1; fi
        done
        ((alive == 0)) && break
        if (($(date +%s%3N) >= deadline)); then
            for k in "${!pids[@]}"; do
                if is_our_node "${pids[$k]}" "${idx[$k]}"; then
                    log "$(node_name "${idx[$k]}") (pid ${pids[$k]}) did not stop in ${STOP_TIMEOUT}s: SIGKILL"
                    kill -KILL "${pids[$k]}" 2>/dev/null || true
                fi
            done
            for ((k2 = 0; k2 < 50; k2++)); do
                alive=0
                for k in "${!pids[@]}"; do
                    if ours_or_dying "${pids[$k]}" "${idx[$k]}"; then alive=1; fi
                done
                ((alive == 0)) && break
                sleep 0.1
            done
            break
        fi
        sleep 0.2
    done
    for i in "$@"; do rm -f "$(pid_file "$i")"; done
}

# ---------------------------------------------------------------- commands

NODES=3
SETTINGS=()
KEEP_DATA=0

cmd_start() {
    [[ "$NODES" =~ ^[1-9][0-9]*$ ]] || die "--nodes must be a positive integer"
    ((NODES <= 90)) || die "--nodes too large (ports would collide)"
    local i running=()
    for i in $(pid_indices); do
        if node_pid "$i" >/dev/null; then running+=("$i"); fi
    done
    ((${#running[@]} == 0)) || die "nodes ${running[*]} already running (pid files in $WORK/pids); run stop first"
    for ((i = 0; i < NODES; i++)); do
        if port_in_use "$(http_port "$i")"; then die "port $(http_port "$i") is already in use (not by us)"; fi
        if port_in_use "$(transport_port "$i")"; then die "port $(transport_port "$i") is already in use (not by us)"; fi
    done
    cmd_fetch
    check_java
    if ! have curl; then ensure_tools; fi

    mkdir -p "$WORK/logs" "$WORK/pids"
    if ((KEEP_DATA == 0)); then
        rm -rf "$WORK"/node-*
        rm -f "$WORK"/logs/es-node-*.log
    fi
    echo "$NODES" >"$WORK/cluster.nodes"
    : >"$WORK/cluster.settings"
    local s
    for s in "${SETTINGS[@]+"${SETTINGS[@]}"}"; do printf '%s\n' "$s" >>"$WORK/cluster.settings"; done

    local t0; t0="$(date +%s.%N)"
    local idx=()
    for ((i = 0; i < NODES; i++)); do
        launch_node "$i" "$NODES"
        idx+=("$i")
    done
    log "started ${NODES} JVMs (pids: $(for i in "${idx[@]}"; do printf '%s ' "$(cat "$(pid_file "$i")")"; done)), waiting for green (timeout ${START_TIMEOUT}s)"
    if ! wait_green "$NODES" 0 $(($(date +%s) + START_TIMEOUT)) "${idx[@]}"; then
        print_log_tails "${idx[@]}"
        log "start failed; stopping the nodes it started"
        stop_indices "${idx[@]}"
        exit 1
    fi
    local t1; t1="$(date +%s.%N)"
    log "cluster $CLUSTER_NAME green with $NODES nodes in $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}') s (http 127.0.0.1:$HTTP_BASE..$((HTTP_BASE + NODES - 1)))"
}

cmd_stop() {
    local all; all="$(pid_indices)"
    if [[ -z "$all" ]]; then
        log "no pid files in $WORK/pids: nothing to stop"
        return 0
    fi
    # shellcheck disable=SC2086
    stop_indices $all
    log "stopped (logs kept in $WORK/logs)"
}

cmd_status() {
    local n i pid st code any=0
    n="$(recorded_nodes)"
    local seen=" "
    for i in $(seq 0 $((n - 1))) $(pid_indices); do
        [[ "$seen" == *" $i "* ]] && continue
        seen+="$i "
        if pid="$(node_pid "$i")"; then
            any=1
            code="$(http_code "http://127.0.0.1:$(http_port "$i")/_cluster/health" 3)"
            st="running pid $pid, http $(http_port "$i") -> $code"
        else
            st="not running"
        fi
        printf '%-10s %s\n' "$(node_name "$i")" "$st"
    done
    if ((any)); then
        for i in $(seq 0 $((n - 1))); do
            if node_pid "$i" >/dev/null; then
                curl -s -m 5 "http://127.0.0.1:$(http_port "$i")/_cat/health?v" || true
                break
            fi
        done
        return 0
    fi
    return 3
}

need_index() {
    [[ -n "${1:-}" && "$1" =~ ^[0-9]+$ ]] || die "node index (0-based) required"
}

cmd_kill_node() {
    local i="$1" pid
    pid="$(node_pid "$i")" || die "$(node_name "$i") is not running (or not ours)"
    kill -KILL "$pid"
    local k
    for ((k = 0; k < 100; k++)); do
        ours_or_dying "$pid" "$i" || break
        sleep 0.1
    done
    rm -f "$(pid_file "$i")"
    echo "==== $(date '+%F %T') SIGKILLed by kill-node" >>"$(log_file "$i")"
    log "SIGKILLed $(node_name "$i") (pid $pid)"
}

cmd_start_node() {
    local i="$1" n
    [[ -f "$WORK/cluster.nodes" ]] || die "no cluster recorded in $WORK (run start first)"
    n="$(recorded_nodes)"
    ((i < n)) || die "node $i is outside the recorded cluster of $n nodes"
    if node_pid "$i" >/dev/null; then die "$(node_name "$i") is already running"; fi
    local k
    for ((k = 0; k < 50; k++)); do # a just-killed node may still be closing its sockets
        port_in_use "$(http_port "$i")" || port_in_use "$(transport_port "$i")" || break
        sleep 0.2
    done
    if port_in_use "$(http_port "$i")"; then die "port $(http_port "$i") is in use"; fi
    if port_in_use "$(transport_port "$i")"; then die "port $(transport_port "$i") is in use"; fi
    cmd_fetch
    local s
    for s in "${SETTINGS[@]+"${SETTINGS[@]}"}"; do printf '%s\n' "$s" >>"$WORK/cluster.settings"; done
    local t0; t0="$(date +%s.%N)"
    launch_node "$i" "$n"
    log "started $(node_name "$i") (pid $(cat "$(pid_file "$i")")), waiting for $n nodes + green"
    if ! wait_green "$n" "$i" $(($(date +%s) + START_TIMEOUT)) "$i"; then
        print_log_tails "$i"
        log "start-node failed; stopping $(node_name "$i")"
        stop_indices "$i"
        exit 1
    fi
    local t1; t1="$(date +%s.%N)"
    log "$(node_name "$i") rejoined, cluster green in $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}') s"
}

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }

CMD=""
ARG=""
while (($#)); do
    case "$1" in
        --nodes) [[ $# -ge 2 ]] || die "--nodes needs a value"; NODES="$2"; shift 2 ;;
        --nodes=*) NODES="${1#--nodes=}"; shift ;;
        --setting) [[ $# -ge 2 ]] || die "--setting needs K=V"; SETTINGS+=("$2"); shift 2 ;;
        --setting=*) SETTINGS+=("${1#--setting=}"); shift ;;
        --keep-data) KEEP_DATA=1; shift ;;
        --timeout) [[ $# -ge 2 ]] || die "--timeout needs seconds"; START_TIMEOUT="$2"; shift 2 ;;
        --timeout=*) START_TIMEOUT="${1#--timeout=}"; shift ;;
        -h | --help | help) usage ;;
        -*) die "unknown option $1" ;;
        *)
            if [[ -z "$CMD" ]]; then CMD="$1"
            elif [[ -z "$ARG" ]]; then ARG="$1"
            else die "unexpected argument $1"
            fi
            shift ;;
    esac
done
for s in "${SETTINGS[@]+"${SETTINGS[@]}"}"; do
    [[ "$s" == ?*=* ]] || die "--setting wants K=V, got '$s'"
done

case "$CMD" in
    fetch) cmd_fetch ;;
    start) cmd_start ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    kill-node) need_index "$ARG"; cmd_kill_node "$ARG" ;;
    start-node) need_index "$ARG"; cmd_start_node "$ARG" ;;
    "") usage ;;
    *) die "unknown command '$CMD'" ;;
esac
