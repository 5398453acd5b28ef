#!/usr/bin/env bash
# Builds the library, the threaded unit tests and the engine integration
# tests with clang's ThreadSanitizer in a scratch directory and runs them:
# the callers' threads, the I/O thread and the topology thread's workers,
# close racing adds and polls. Any report fails the run.
#
#   scripts/check-tsan.sh [--unit-only]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
out=${ESBULK_TSAN_DIR:-$src/_build/tsan}
mkdir -p "$out"
cc=${CC_SANITIZE:-clang}
flags=(-std=c11 -g -O1 -fno-omit-frame-pointer -fsanitize=thread -Wall -Wextra -Werror
       -D_GNU_SOURCE -fvisibility=hidden -I"$src/include" -I"$src/lib" -I"${top_builddir:-$src}" -I"$src")
pc=$(pkg-config --cflags --libs libcurl jansson libxxhash zlib check)
libs=(-lpthread -lm)
lib_srcs=("$src"/lib/*.c)
# halt_on_error=0: every report is printed; exitcode=66 makes the run fail
export TSAN_OPTIONS="halt_on_error=0:exitcode=66:second_deadlock_stack=1"
export CK_FORK=no top_srcdir="$src"

units=(check_engine check_misuse check_pull check_topology)
echo "tsan: building with $cc -fsanitize=thread"
for name in "${units[@]}"; do
    # shellcheck disable=SC2086
    "$cc" "${flags[@]}" "${lib_srcs[@]}" "$src/tests/$name.c" $pc "${libs[@]}" -o "$out/$name"
done
for name in it_engine it_topology; do
    # shellcheck disable=SC2086
    "$cc" "${flags[@]}" "${lib_srcs[@]}" "$src/tests/$name.c" "$src/tests/it_common.c" $pc \
        "${libs[@]}" -o "$out/$name"
done

pass=0 fail=0
run() {
    local name=$1; shift
    if "$@" >"$out/$name.log" 2>&1 && ! grep -q "WARNING: ThreadSanitizer" "$out/$name.log"; then
        pass=$((pass + 1)); echo "PASS: $name under TSan"
    else
        fail=$((fail + 1)); echo "FAIL: $name under TSan"
        grep -A30 "WARNING: ThreadSanitizer" "$out/$name.log" | head -n 80 || tail -n 40 "$out/$name.log"
    fi
}
for name in "${units[@]}"; do
    run "$name" "$out/$name"
done
if [ "${1:-}" != --unit-only ]; then
    "$src/tests/cluster/ensure.sh" opensearch
    run it_engine "$out/it_engine" http://127.0.0.1:19200
    IT_FAULTPROXY="$src/tests/faultproxy.py" run it_topology "$out/it_topology" \
        http://127.0.0.1:19200 gap silent
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
