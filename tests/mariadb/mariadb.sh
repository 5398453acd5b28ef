#!/bin/sh
# tests/mariadb/mariadb.sh start|stop|status
# A MariaDB server for the esbulk-mysql tests, on loopback only: 127.0.0.1
# port ESBULK_MARIADB_PORT (13306), its own data directory under
# ESBULK_MARIADB_DIR (tests/mariadb/run), binary log in ROW format
# (ESBULK_MARIADB_BINLOG_FORMAT) with GTIDs.
# Runs as the current user (as root it passes --user=root: mariadbd refuses
# to run as root otherwise). The test user is root with no password, over TCP.
# TLS is offered (not required): a test CA (tls/ca.pem) and a server
# certificate for 127.0.0.1 and localhost, made here with openssl.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
port=${ESBULK_MARIADB_PORT:-13306}
dir=${ESBULK_MARIADB_DIR:-$here/run}
data=$dir/data
pidfile=$dir/mariadb.pid
sock=$dir/mariadb.sock
log=$dir/mariadb.err
# ROW, as esbulk-mysql requires; another for a test of its refusal
binlog_format=${ESBULK_MARIADB_BINLOG_FORMAT:-ROW}

find_bin() { # find_bin NAME...: the first on PATH or in /usr/sbin
    for n in "$@"; do
        for d in $(echo "$PATH" | tr ':' ' ') /usr/sbin /usr/bin; do
            [ -x "$d/$n" ] && { echo "$d/$n"; return 0; }
        done
    done
    return 1
}

client() { # a client command line on the test server
    "$(find_bin mariadb mysql)" --protocol=TCP -h 127.0.0.1 -P "$port" -u root --default-character-set=utf8mb4 "$@"
}

running() {
    [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null
}

answering() {
    client -N -e 'SELECT 1' >/dev/null 2>&1
}

case "${1:-}" in
start)
    if running && answering; then echo "mariadb: up on 127.0.0.1:$port"; exit 0; fi
    server=$(find_bin mariadbd mysqld) || {
        echo "mariadb: no mariadbd: install mariadb-server (scripts/install-deps.sh test)" >&2; exit 1; }
    mkdir -p "$dir"
    user_opt=
    [ "$(id -u)" = 0 ] && user_opt=--user=root
    if [ ! -d "$data/mysql" ]; then
        rm -rf "$data"
        "$(find_bin mariadb-install-db mysql_install_db)" --no-defaults $user_opt \
            --datadir="$data" --auth-root-authentication-method=normal \
            --skip-test-db >"$dir/install.log" 2>&1 || {
            echo "mariadb: mariadb-install-db failed:" >&2; tail -20 "$dir/install.log" >&2; exit 1; }
    fi
    tls=$dir/tls
    if [ ! -s "$tls/server.pem" ]; then
        mkdir -p "$tls"
        openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=esbulk test MariaDB CA" \
            -keyout "$tls/ca.key" -out "$tls/ca.pem" >/dev/null 2>&1 &&
        openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout "$tls/server.key" \
            -out "$tls/server.csr" >/dev/null 2>&1 &&
        printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$tls/san.ext" &&
        openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" \
            -CAcreateserial -days 3650 -extfile "$tls/san.ext" -out "$tls/server.pem" \
            >/dev/null 2>&1 || { echo "mariadb: cannot make the test certificates" >&2; exit 1; }
    fi
    # --no-defaults: no /etc/mysql configuration leaks in.
    # shellcheck disable=SC2086
    "$server" --no-defaults $user_opt --datadir="$data" --bind-address=127.0.0.1 \
        --port="$port" --socket="$sock" --pid-file="$pidfile" --log-error="$log" \
        --skip-name-resolve --log-bin=mysql-bin --binlog-format="$binlog_format" \
        --binlog-row-image=FULL --server-id=1 --gtid-domain-id=0 \
        --gtid-strict-mode=1 --innodb-buffer-pool-size=256M --innodb-log-file-size=256M \
        --innodb-flush-log-at-trx-commit=2 --sync-binlog=0 --max-connections=100 \
        --character-set-server=utf8mb4 --collation-server=utf8mb4_bin \
        --default-time-zone=+00:00 --max-allowed-packet=64M \
        --performance-schema=OFF --skip-log-slave-updates \
        --ssl-ca="$tls/ca.pem" --ssl-cert="$tls/server.pem" --ssl-key="$tls/server.key" \
        >/dev/null 2>&1 &
    i=0
    while ! answering; do
        i=$((i + 1))
        if [ $i -gt 120 ]; then
            echo "mariadb: did not answer within 60 s; log:" >&2; tail -20 "$log" >&2; exit 1
        fi
        sleep 0.5
    done
    echo "mariadb: up on 127.0.0.1:$port (data $data)"
    ;;
stop)
    if running; then
        pid=$(cat "$pidfile")
        kill "$pid"
        i=0
        while kill -0 "$pid" 2>/dev/null; do
            i=$((i + 1))
            [ $i -gt 120 ] && { kill -9 "$pid" 2>/dev/null || true; break; }
            sleep 0.5
        done
        echo "mariadb: stopped"
    else
        echo "mariadb: not running"
    fi
    ;;
status)
    if running && answering; then echo "mariadb: up on 127.0.0.1:$port"; exit 0; fi
    echo "mariadb: down"; exit 1
    ;;
client)
    shift; client "$@" ;;
*)
    echo "usage: $0 start|stop|status|client [ARGS]" >&2; exit 2 ;;
esac
