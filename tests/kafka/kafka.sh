#!/usr/bin/env bash
# tests/kafka/kafka.sh - a real Apache Kafka broker (4.x, KRaft mode, one
# node that is broker and controller) on loopback, run from the jars on Maven
# Central (no distribution tarball), for esbulk-kafka's tests and benchmark.
#
# Usage:
#   tests/kafka/kafka.sh fetch          download the jars (mvn, cached in ~/.m2 and
#                                       ESBULK_KAFKA_CACHE); silent when up to date
#   tests/kafka/kafka.sh start [--keep-data]
#                                       start the broker unless it is running (then
#                                       return at once), wait until it answers;
#                                       a fresh log directory unless --keep-data
#   tests/kafka/kafka.sh stop           TERM the broker, KILL after ESBULK_STOP_TIMEOUT
#   tests/kafka/kafka.sh status         one line; exit 0 only if the broker answers
#   tests/kafka/kafka.sh create-topic NAME [PARTITIONS]
#                                       create a topic (default 1 partition); exits
#                                       0 if it exists already with that count
#   tests/kafka/kafka.sh delete-topic NAME
#   tests/kafka/kafka.sh tool CLASS [ARGS...]
#                                       run one of Kafka's command-line tools on the
#                                       broker's classpath with quiet logging, e.g.
#       tool org.apache.kafka.tools.consumer.group.ConsumerGroupCommand \
#            --bootstrap-server 127.0.0.1:19092 --describe --group G
#
# Layout (fixed): client listener 127.0.0.1:19092 (PLAINTEXT), controller
# 127.0.0.1:19093, node id 1. Auto topic creation is off (a topic the test did
# not create is an error); offsets and transaction logs have replication 1;
# group.min.session.timeout.ms is 1000 so that a killed consumer is noticed
# within about a second when it asks for a short session timeout;
# group.initial.rebalance.delay.ms is 0 (the first member starts at once).
#
# Environment:
#   ESBULK_KAFKA_VERSION   Kafka version (default 4.1.1; 4.x runs on Java 17)
#   ESBULK_KAFKA_DIR       run directory: config, log dirs, pid, log
#                          (default <repo>/tests/kafka/run)
#   ESBULK_KAFKA_CACHE     jars (default $HOME/.cache/libesbulk/kafka-VERSION)
#   ESBULK_KAFKA_HEAP      broker heap, -Xms = -Xmx (default 256m)
#   ESBULK_KAFKA_TIMEOUT   seconds to wait for the broker on start (default 120)
#   ESBULK_KAFKA_SETTINGS  extra server.properties lines, separated by ';'
#                          (applied on a fresh start, e.g. "num.io.threads=4")
#   ESBULK_STOP_TIMEOUT    seconds between TERM and KILL on stop (default 30)
#   ESBULK_JAVA            java binary (default: java on PATH)
#   ESBULK_M2_REPO         optional Maven local repository (default ~/.m2/repository)
#
# Logs: $ESBULK_KAFKA_DIR/logs/kafka.log (stdout+stderr of the JVM), kept
# after stop; a new start moves the previous one to kafka.log.prev.
set -euo pipefail

readonly KAFKA_VERSION=${ESBULK_KAFKA_VERSION:-4.1.1}
[[ $KAFKA_VERSION =~ ^4\.[0-9]+\.[0-9]+$ ]] || {
    echo "kafka.sh: ESBULK_KAFKA_VERSION must be a 4.x version like 4.1.1, got '$KAFKA_VERSION'" >&2
    exit 2
}
readonly PORT=19092 CONTROLLER_PORT=19093
readonly BOOTSTRAP=127.0.0.1:$PORT

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/../.." && pwd)
readonly SCRIPT_DIR REPO_ROOT
readonly POM="$SCRIPT_DIR/pom.xml"

CACHE_DIR=${ESBULK_KAFKA_CACHE:-$HOME/.cache/libesbulk/kafka-$KAFKA_VERSION}
RUN_DIR=${ESBULK_KAFKA_DIR:-$REPO_ROOT/tests/kafka/run}
# by its real path: the broker is known as ours by this directory on its
# command line, which must not depend on a symbolic link on the way to it
RUN_DIR=$(realpath -m -- "$RUN_DIR")
HEAP=${ESBULK_KAFKA_HEAP:-256m}
START_TIMEOUT=${ESBULK_KAFKA_TIMEOUT:-120}
STOP_TIMEOUT=${ESBULK_STOP_TIMEOUT:-30}
JAVA=${ESBULK_JAVA:-java}
KEEP_DATA=0

PID_FILE="$RUN_DIR/kafka.pid"
LOG_DIR="$RUN_DIR/logs"
LOG_FILE="$LOG_DIR/kafka.log"
CONF_FILE="$RUN_DIR/server.properties"
DATA_DIR="$RUN_DIR/data"
LOCK_FILE="$RUN_DIR/.start.lock"

log() { printf 'kafka.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

usage() {
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
}

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
        command -v java >/dev/null 2>&1 || pkgs+=(openjdk-17-jdk-headless)
    fi
    command -v mvn >/dev/null 2>&1 || pkgs+=(maven)
    command -v flock >/dev/null 2>&1 || pkgs+=(util-linux)
    if ((${#pkgs[@]})); then apt_install "${pkgs[@]}"; fi
    "$JAVA" -version >/dev/null 2>&1 || die "cannot run $JAVA"
}

do_fetch() {
    ensure_tools
    mkdir -p "$CACHE_DIR"
    # one fetch at a time per cache; a descriptor of its own (start holds
    # its lock on another one through the whole start)
    local lockfd
    exec {lockfd}>"$CACHE_DIR/.lock"
    flock "$lockfd"
    local pom_sum lib="$CACHE_DIR/lib"
    pom_sum=$( (cat "$POM"; printf '%s\n' "$KAFKA_VERSION") | sha256sum | cut -d' ' -f1)
    if [[ ! -f $lib/.stamp || $(<"$lib/.stamp") != "$pom_sum" ]]; then
        log "fetching Apache Kafka $KAFKA_VERSION jars from Maven Central into $lib"
        local tmp="$CACHE_DIR/lib.tmp.$$" mvn_args=()
        rm -rf "$tmp"
        if [[ -n ${ESBULK_M2_REPO:-} ]]; then
            mvn_args+=("-Dmaven.repo.local=$ESBULK_M2_REPO")
        fi
        # run from a scratch dir so nothing (target/) lands in the repo
        if ! (cd "$CACHE_DIR" && mvn -B -q -Dstyle.color=never -f "$POM" "${mvn_args[@]}" \
            "-Dkafka.version=$KAFKA_VERSION" \
            dependency:copy-dependencies -DincludeScope=runtime \
            -DoutputDirectory="$tmp") >"$CACHE_DIR/mvn.log" 2>&1; then
            tail -n 40 "$CACHE_DIR/mvn.log" >&2
            rm -rf "$tmp"
            die "mvn dependency:copy-dependencies failed (full log: $CACHE_DIR/mvn.log)"
        fi
        [[ -f $tmp/kafka_2.13-$KAFKA_VERSION.jar ]] || die "kafka_2.13-$KAFKA_VERSION.jar missing after mvn"
        [[ -f $tmp/kafka-tools-$KAFKA_VERSION.jar ]] || die "kafka-tools-$KAFKA_VERSION.jar missing after mvn"
        printf '%s\n' "$pom_sum" >"$tmp/.stamp"
        rm -rf "$lib"
        mv "$tmp" "$lib"
    fi
    exec {lockfd}>&-
}

# ------------------------------------------------------------ processes ----

# true if $1 is a live JVM that this script started for this run directory
pid_is_ours() {
    local pid=$1 args
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    [[ -r /proc/$pid/cmdline ]] || return 1
    args=$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
    grep -qxF -- "-Desbulk.kafka.dir=$RUN_DIR" <<<"$args"
}

broker_pid() {
    local pid
    [[ -f $PID_FILE ]] || return 1
    pid=$(<"$PID_FILE")
    pid_is_ours "$pid" || return 1
    printf '%s' "$pid"
}

port_open() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# The broker answers: an ApiVersions request (v0: api key 18, correlation id
# 1, client id "k") written to the client port gets a response whose
# correlation id is 1 and whose error code is 0 (a broker still starting
# closes the connection or answers later). Bash alone, no JVM per probe.
broker_answers() {
    local out
    out=$(
        exec 2>/dev/null
        exec 3<>"/dev/tcp/127.0.0.1/$PORT" || exit 1
        # size 11 | api_key 18 | api_version 0 | correlation 1 | client id len 1, "k"
        printf '\x00\x00\x00\x0b\x00\x12\x00\x00\x00\x00\x00\x01\x00\x01k' >&3
        timeout 3 head -c 10 <&3 | od -An -tx1 | tr -d ' \n'
    ) || return 1
    # 4 bytes size, correlation id 00000001, error code 0000
    [[ ${out:8:12} == 000000010000 ]]
}

write_config() {
    local s
    mkdir -p "$RUN_DIR" "$LOG_DIR"
    {
        cat <<EOF
# written by tests/kafka/kafka.sh start; rewritten on every fresh start
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$DATA_DIR
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
auto.create.topics.enable=false
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.min.session.timeout.ms=1000
group.consumer.min.session.timeout.ms=1000
group.consumer.min.heartbeat.interval.ms=500
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=4
log.retention.hours=-1
log.retention.bytes=-1
log.segment.bytes=67108864
delete.topic.enable=true
EOF
        if [[ -n ${ESBULK_KAFKA_SETTINGS:-} ]]; then
            local IFS=';'
            for s in $ESBULK_KAFKA_SETTINGS; do
                [[ -n $s ]] && printf '%s\n' "$s"
            done
        fi
    } >"$CONF_FILE"
}

# the log dir's format (KRaft needs one before the first start); a cluster
# id made here: 16 random bytes, URL-safe base64 without padding, as
# StorageTool random-uuid prints it (saves a JVM start)
format_storage() {
    local id
    id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')
    if ! "$JAVA" -Xmx128m -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
        -cp "$CACHE_DIR/lib/*" kafka.tools.StorageTool format \
        -t "$id" -c "$CONF_FILE" >"$LOG_DIR/format.log" 2>&1; then
        cat "$LOG_DIR/format.log" >&2
        die "kafka-storage format failed"
    fi
}

launch() {
    local jvm=(
        "-Xms$HEAP" "-Xmx$HEAP" -XX:+UseG1GC -XX:MaxGCPauseMillis=20
        -Djava.awt.headless=true
        "-Desbulk.kafka.dir=$RUN_DIR"
        -Dorg.slf4j.simpleLogger.defaultLogLevel=info
        -Dorg.slf4j.simpleLogger.showDateTime=true
        "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd HH:mm:ss.SSS"
        -Dorg.slf4j.simpleLogger.log.kafka.coordinator=warn
        -Dorg.slf4j.simpleLogger.log.org.apache.kafka.coordinator=warn
    )
    printf '===== %s: starting Kafka %s (heap %s) =====\n' "$(date '+%F %T')" "$KAFKA_VERSION" "$HEAP" >>"$LOG_FILE"
    nohup "$JAVA" "${jvm[@]}" -cp "$CACHE_DIR/lib/*" kafka.Kafka "$CONF_FILE" \
        </dev/null >>"$LOG_FILE" 2>&1 9>&- &
    printf '%s\n' "$!" >"$PID_FILE"
}

stop_broker() {
    local pid
    pid=$(broker_pid) || { rm -f "$PID_FILE"; return 0; }
    kill -TERM "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + STOP_TIMEOUT))
    while pid_is_ours "$pid"; do
        if ((SECONDS >= deadline)); then
            log "broker did not stop in ${STOP_TIMEOUT}s: SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
            sleep 1
            break
        fi
        sleep 0.2
    done
    rm -f "$PID_FILE"
}

# ------------------------------------------------------------- commands ----

do_start() {
    mkdir -p "$RUN_DIR"
    # one start at a time per run directory (tests run in parallel); a
    # second caller waits here and then finds the broker up
    exec 9>"$LOCK_FILE"
    flock 9
    if broker_pid >/dev/null && broker_answers; then
        return 0
    fi
    local pid
    if pid=$(broker_pid); then
        # alive but not answering: give it the start timeout, then restart
        local deadline=$((SECONDS + START_TIMEOUT))
        while pid_is_ours "$pid" && ((SECONDS < deadline)); do
            broker_answers && return 0
            sleep 0.5
        done
        log "broker (pid $pid) not answering after ${START_TIMEOUT}s: restarting it"
        STOP_TIMEOUT=10 stop_broker
    fi
    port_open "$PORT" && die "127.0.0.1:$PORT is already in use by another process"
    port_open "$CONTROLLER_PORT" && die "127.0.0.1:$CONTROLLER_PORT is already in use by another process"
    do_fetch

    mkdir -p "$LOG_DIR"
    mv -f "$LOG_FILE" "$LOG_FILE.prev" 2>/dev/null || true # absent on a first start
    if ((!KEEP_DATA)) || [[ ! -f $DATA_DIR/meta.properties ]]; then
        rm -rf "${DATA_DIR:?}"
        write_config
        format_storage
    fi
    local t0=$SECONDS
    trap 'log "interrupted: stopping the broker"; STOP_TIMEOUT=10 stop_broker; exit 130' INT TERM
    launch
    local deadline=$((SECONDS + START_TIMEOUT)) launched
    launched=$(<"$PID_FILE")
    until broker_answers; do
        # the child itself (its cmdline is that of java only once it ran exec)
        if ! kill -0 "$launched" 2>/dev/null; then
            tail -n 40 "$LOG_FILE" >&2
            die "the broker exited during startup (log: $LOG_FILE)"
        fi
        if ((SECONDS >= deadline)); then
            tail -n 40 "$LOG_FILE" >&2
            STOP_TIMEOUT=10 stop_broker
            die "the broker did not answer within ${START_TIMEOUT}s (log: $LOG_FILE)"
        fi
        sleep 0.25
    done
    trap - INT TERM
    printf 'Kafka %s broker up in %ss on %s (run dir %s)\n' "$KAFKA_VERSION" $((SECONDS - t0)) "$BOOTSTRAP" "$RUN_DIR"
}

do_stop() {
    if ! broker_pid >/dev/null; then
        rm -f "$PID_FILE"
        printf 'no Kafka broker of ours is running\n'
        return 0
    fi
    stop_broker
    printf 'stopped the Kafka broker; log in %s\n' "$LOG_FILE"
}

do_status() {
    local pid
    if pid=$(broker_pid); then
        if broker_answers; then
            printf 'kafka up       pid=%s %s\n' "$pid" "$BOOTSTRAP"
            return 0
        fi
        printf 'kafka starting pid=%s (%s not answering)\n' "$pid" "$BOOTSTRAP"
        return 1
    fi
    printf 'kafka down\n'
    return 1
}

run_tool() {
    local class=$1
    shift
    [[ -f $CACHE_DIR/lib/.stamp ]] || do_fetch
    "$JAVA" -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC \
        -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
        -cp "$CACHE_DIR/lib/*" "$class" "$@"
}

do_create_topic() {
    local name=$1 parts=${2:-1} out
    [[ $parts =~ ^[1-9][0-9]*$ ]] || die "PARTITIONS must be a positive number"
    if out=$(run_tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$BOOTSTRAP" \
        --create --topic "$name" --partitions "$parts" --replication-factor 1 2>&1); then
        printf '%s\n' "$out"
        return 0
    fi
    if grep -q 'already exists' <<<"$out"; then
        local have
        have=$(run_tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$BOOTSTRAP" \
            --describe --topic "$name" 2>/dev/null | sed -n 's/.*PartitionCount: *\([0-9]*\).*/\1/p' | head -n 1)
        [[ $have == "$parts" ]] && return 0
        die "topic $name exists with $have partition(s), not $parts"
    fi
    printf '%s\n' "$out" >&2
    die "creating topic $name failed"
}

do_delete_topic() {
    run_tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$BOOTSTRAP" \
        --delete --topic "$1"
}

# ----------------------------------------------------------------- main ----

main() {
    (($#)) || {
        usage
        exit 2
    }
    local cmd=$1
    shift
    [[ $HEAP =~ ^[0-9]+[kKmMgG]$ ]] || die "ESBULK_KAFKA_HEAP must look like 256m or 1g"
    case $cmd in
        fetch) do_fetch ;;
        start)
            while (($#)); do
                case $1 in
                    --keep-data) KEEP_DATA=1 ;;
                    *) die "unknown option $1" ;;
                esac
                shift
            done
            do_start
            ;;
        stop) do_stop ;;
        status) do_status ;;
        create-topic)
            (($# >= 1 && $# <= 2)) || die "usage: create-topic NAME [PARTITIONS]"
            do_create_topic "$@"
            ;;
        delete-topic)
            (($# == 1)) || die "usage: delete-topic NAME"
            do_delete_topic "$1"
            ;;
        tool)
            (($# >= 1)) || die "usage: tool CLASS [ARGS...]"
            run_tool "$@"
            ;;
        -h | --help | help) usage ;;
        *)
            usage
            exit 2
            ;;
    esac
}

main "$@"
