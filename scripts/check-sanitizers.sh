#!/usr/bin/env bash
# Builds the library, the unit tests and the engine integration test with
# clang's AddressSanitizer and UndefinedBehaviorSanitizer (plus -Werror) in a
# scratch directory and runs them; any report fails the run.
# char is unsigned here (-funsigned-char), as on ARM, where x86's is signed:
# the main build runs the tests with the one, this run with the other (a
# record's `signed char err` made plain `char` fails 14 of check_core's
# tests here and none in the main build).
#
#   scripts/check-sanitizers.sh [--unit-only]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
out=${ESBULK_SANITIZE_DIR:-$src/_build/sanitize}
mkdir -p "$out"
cc=${CC_SANITIZE:-clang}
if ! command -v "$cc" >/dev/null 2>&1; then
    echo "check-sanitizers: $cc is not installed: install clang and its sanitizer" \
         "runtime (scripts/install-deps.sh test), or set CC_SANITIZE" >&2
    exit 1
fi
flags=(-std=c11 -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -funsigned-char
       -fno-sanitize-recover=undefined -Wall -Wextra -Wshadow -Wstrict-prototypes
       -Wmissing-prototypes -Wformat=2 -Wno-format-nonliteral -Werror -fvisibility=hidden
       -I"$src/include" -I"$src/lib" -I"${top_builddir:-$src}" -I"$src")
pc=$(pkg-config --cflags --libs libcurl jansson libxxhash zlib check)
libs=(-lpthread -lm)
lib_srcs=("$src"/lib/*.c)
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export CK_FORK=no top_srcdir="$src" # config.h comes from top_builddir (out-of-tree builds)

echo "sanitizers: building with $cc -fsanitize=address,undefined"
for t in "$src"/tests/check_*.c; do
    name=$(basename "$t" .c)
    # shellcheck disable=SC2086
    "$cc" "${flags[@]}" "${lib_srcs[@]}" "$t" $pc "${libs[@]}" -o "$out/$name"
done
# shellcheck disable=SC2086
"$cc" "${flags[@]}" "${lib_srcs[@]}" "$src/tests/it_engine.c" "$src/tests/it_common.c" $pc \
    "${libs[@]}" -o "$out/it_engine"
# the command-line tool too (all of it builds warning-free with clang)
# shellcheck disable=SC2086
"$cc" "${flags[@]}" "${lib_srcs[@]}" "$src"/tools/esbulk/*.c "$src"/tools/common/*.c $pc "${libs[@]}" -o "$out/esbulk"

pass=0 fail=0
for t in "$src"/tests/check_*.c; do
    name=$(basename "$t" .c)
    if "$out/$name" >"$out/$name.log" 2>&1; then
        pass=$((pass + 1)); echo "PASS: $name under ASan+UBSan"
    else
        fail=$((fail + 1)); echo "FAIL: $name under ASan+UBSan"; tail -n 40 "$out/$name.log"
    fi
done
if [ "${1:-}" != --unit-only ]; then
    "$src/tests/cluster/ensure.sh" opensearch
    if "$out/it_engine" http://127.0.0.1:19200 >"$out/it_engine.log" 2>&1; then
        pass=$((pass + 1)); echo "PASS: it_engine under ASan+UBSan ($(tail -n 1 "$out/it_engine.log"))"
    else
        fail=$((fail + 1)); echo "FAIL: it_engine under ASan+UBSan"; tail -n 60 "$out/it_engine.log"
    fi
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
