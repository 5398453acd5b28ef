# Sourced by tests/mysql_*.test: the MariaDB test server
# (tests/mariadb/mariadb.sh, 127.0.0.1:13306), the shared OpenSearch test
# cluster, esbulk-mysql, and checks. Each test works in its own database and
# indices (named after the test) and removes them at the end.
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
esm_bin="$top_builddir/tools/mysql/esbulk-mysql"
url=${ESBULK_MYSQL_TEST_URL:-http://127.0.0.1:19200}
mariadb="$top_srcdir/tests/mariadb/mariadb.sh"
port=${ESBULK_MARIADB_PORT:-13306}
tmp=$(mktemp -d)
passed=0 failed=0
bg_pids=

pass() { passed=$((passed + 1)); echo "PASS: $1"; }
fail() { failed=$((failed + 1)); echo "FAIL: $1"; }
check() { name=$1; shift; if "$@"; then pass "$name"; else fail "$name"; fi; }
sql() { "$mariadb" client -N --raw --batch "$@"; }
finish() {
    for p in $bg_pids; do kill -9 "$p" 2>/dev/null; done
    [ -n "${cleanup_sql:-}" ] && sql -e "$cleanup_sql" >/dev/null 2>&1
    [ -n "${cleanup_indices:-}" ] && curl -s -o /dev/null -X DELETE "$url/$cleanup_indices"
    rm -rf "$tmp"
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
    exit $?
}
trap 'finish' EXIT
trap 'exit 1' INT TERM

# Each test reads the binlog with a replica id of its own: the server drops
# an older binlog reader that has the same id (tests run in parallel).
server_id=$((10000 + $$ % 50000))
# esm ARGS...: runs esbulk-mysql against the test servers; stderr in $tmp/err
esm() {
    "$esm_bin" --port "$port" --url "$url" --server-id "$server_id" --quiet "$@" 2>"$tmp/err"
}
# esm_bg ARGS...: the same in the background; $! is its pid
esm_bg() {
    "$esm_bin" --port "$port" --url "$url" --server-id "$server_id" --quiet "$@" \
        2>>"$tmp/err.bg" &
}
# state_key STATE TABLE: the checkpoint key of TABLE (its first part), "" when none
state_key() {
    python3 -c 'import json,sys
try:
    s = json.load(open(sys.argv[1]))
    k = s["tables"][sys.argv[2]]["key"]
    print(k[0] if k else "")
except Exception:
    print("")' "$1" "$2"
}
state_get() { # state_get STATE PYEXPR (s is the state)
    python3 -c 'import json,sys
s = json.load(open(sys.argv[1]))
print(eval(sys.argv[2]))' "$1" "$2" 2>/dev/null
}
# kill_at STATE TABLE MIN PID: SIGKILL PID once TABLE's checkpoint is >= MIN
# (at most 300 s); 0 when killed there, 1 when the job ended first
kill_at() {
    i=0
    while kill -0 "$4" 2>/dev/null; do
        k=$(state_key "$1" "$2")
        if [ -n "$k" ] && [ "$k" -ge "$3" ]; then
            kill -9 "$4"
            wait "$4" 2>/dev/null
            return 0
        fi
        i=$((i + 1))
        [ $i -gt 3000 ] && break
        sleep 0.1
    done
    return 1
}
# compare INDEX SQLFILE [CLIENT-OPTIONS...]: the index equals what SQLFILE's query says
compare() {
    index=$1 file=$2
    shift 2
    sql "$@" <"$file" >"$tmp/expected.tsv" || return 1
    python3 "$top_srcdir/tests/mysql_compare.py" "$url" "$index" "$tmp/expected.tsv"
}

# --- setup: the binary, the servers
if [ ! -x "$esm_bin" ]; then
    if [ "${CI:-}" = true ]; then
        echo "FAIL: $esm_bin was not built (configure did not find libmariadb; CI installs libmariadb-dev)"
        exit 1
    fi
    echo "SKIP: esbulk-mysql not built (configure --with-mysql needs libmariadb-dev)"
    trap - EXIT
    exit 77
fi
if [ -x "$top_srcdir/tests/cluster/ensure.sh" ]; then
    "$top_srcdir/tests/cluster/ensure.sh" opensearch >/dev/null ||
        { echo "FAIL: the OpenSearch test cluster did not start"; exit 1; }
fi
mkdir -p "${ESBULK_MARIADB_DIR:-$top_srcdir/tests/mariadb/run}" 2>/dev/null
(
    flock 9
    # the server must not inherit the lock (fd 9): it would hold it for good
    "$mariadb" status >/dev/null 2>&1 || "$mariadb" start 9>&-
) 9>"${ESBULK_MARIADB_DIR:-$top_srcdir/tests/mariadb/run}/start.lock" ||
    { echo "FAIL: the MariaDB test server did not start"; exit 1; }
