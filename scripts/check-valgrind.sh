#!/usr/bin/env bash
# Runs the built unit tests (and the CLI's offline routing) under valgrind's
# memcheck: any error or definite leak fails the run. Run after `make`.
#
#   scripts/check-valgrind.sh BUILDDIR
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src}" && pwd)
export CK_FORK=no top_srcdir="$src"
vg=(valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite
    --show-leak-kinds=definite)
pass=0 fail=0
run() { # run NAME COMMAND...
    local name=$1; shift
    if "$build/libtool" --mode=execute "${vg[@]}" "$@" >"$build/tests/$name.valgrind.log" 2>&1; then
        pass=$((pass + 1)); echo "PASS: $name under valgrind"
    else
        fail=$((fail + 1)); echo "FAIL: $name under valgrind"; tail -n 40 "$build/tests/$name.valgrind.log"
    fi
}
for t in "$build"/tests/check_*; do
    case "$t" in *.c | *.o | *.log | *.trs) continue ;; esac
    [ -x "$t" ] || continue
    run "$(basename "$t")" "$t"
done
run esbulk-route "$build/tools/esbulk/esbulk" route --shards 6 --routing-shards 768 a b c d
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
