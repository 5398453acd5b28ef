#!/usr/bin/env bash
# Builds the libFuzzer harnesses of tests/fuzz/ (clang, -fsanitize=fuzzer,
# address,undefined) in a scratch directory, runs every committed seed and
# regression input once, then fuzzes each harness for SECONDS (a fixed time,
# a fresh working corpus grown from the seeds), printing libFuzzer's final
# figures: executions and coverage. Any crash, leak, sanitizer report or
# failed harness check fails the run and leaves the input in the scratch
# directory (keep it under tests/fuzz/regress/HARNESS/ once fixed).
#
# --ci (make check-fuzz, the CI stage) fuzzes a fixed number of inputs per
# harness (about 20 s each here) from a fixed seed (ESBULK_FUZZ_SEED, 1 by
# default): the same inputs every run, so that CI does not turn red at
# random on a defect it happened to reach this time. Finding new defects is
# make fuzz's job (time-bound, a new seed each run).
#
#   scripts/check-fuzz.sh [--seconds N | --ci] [--regress-only] [HARNESS...]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
bld=${top_builddir:-$src}
out=${ESBULK_FUZZ_DIR:-$bld/_build/fuzz}
seconds=25 regress_only=0 ci=0
harnesses=()
while [ $# -gt 0 ]; do
    case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --seconds=*) seconds=${1#*=}; shift ;;
    --ci) ci=1; shift ;;
    --regress-only) regress_only=1; shift ;;
    *) harnesses+=("$1"); shift ;;
    esac
done
if [ ${#harnesses[@]} -eq 0 ]; then
    for f in "$src"/tests/fuzz/fuzz_*.c; do harnesses+=("$(basename "$f" .c)"); done
fi
cc=${CC_FUZZ:-clang}
if ! command -v "$cc" >/dev/null 2>&1; then
    echo "check-fuzz: $cc is not installed (scripts/install-deps.sh test), or set CC_FUZZ" >&2
    exit 1
fi
mkdir -p "$out/obj"
flags=(-std=c11 -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined
       -fno-sanitize-recover=undefined -Wall -Wextra -Werror -D_GNU_SOURCE -fvisibility=hidden
       -I"$src/include" -I"$src/lib" -I"$bld" -I"$src")
pc_cflags=$(pkg-config --cflags libcurl jansson libxxhash zlib)
pc_libs=$(pkg-config --libs libcurl jansson libxxhash zlib)

echo "check-fuzz: building with $cc -fsanitize=fuzzer,address,undefined"
objs=()
for f in "$src"/lib/*.c; do
    o="$out/obj/$(basename "$f" .c).o"
    # shellcheck disable=SC2086
    "$cc" "${flags[@]}" -fsanitize=fuzzer-no-link $pc_cflags -c "$f" -o "$o"
    objs+=("$o")
done
for h in "${harnesses[@]}"; do
    extra=()
    # the topology harness answers the library's HTTP requests itself
    [ "$h" = fuzz_topology ] && extra=(-Wl,--wrap=esbulk__http_request -Wl,--wrap=esbulk__now_ms)
    # shellcheck disable=SC2086
    "$cc" "${flags[@]}" -fsanitize=fuzzer $pc_cflags -I"$src/tools/esbulk" "${extra[@]}" \
        "$src/tests/fuzz/$h.c" "$src/tests/fuzz/fixed_seed.c" "${objs[@]}" $pc_libs -lpthread -lm -o "$out/$h"
done

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fail=0
printf '%-16s %8s %12s %8s %8s %6s  %s\n' harness inputs executions cov ft corpus result
for h in "${harnesses[@]}"; do
    seeds="$src/tests/fuzz/corpus/$h" regress="$src/tests/fuzz/regress/$h"
    files=()
    for d in "$seeds" "$regress"; do
        [ -d "$d" ] && for f in "$d"/*; do [ -f "$f" ] && files+=("$f"); done
    done
    log="$out/$h.log"
    if [ ${#files[@]} -gt 0 ] && ! "$out/$h" -rss_limit_mb=2048 "${files[@]}" >"$log.regress" 2>&1; then
        echo "FAIL: $h on a committed input"; tail -n 40 "$log.regress"
        fail=1
        continue
    fi
    if [ "$regress_only" = 1 ]; then
        printf '%-16s %8s %12s %8s %8s %6s  %s\n' "$h" "${#files[@]}" - - - - "PASS (inputs only)"
        continue
    fi
    work="$out/corpus-$h"
    rm -rf "$work"; mkdir -p "$work"
    dirs=("$work")
    [ -d "$seeds" ] && dirs+=("$seeds")
    dict=() fixed=()
    [ -f "$src/tests/fuzz/$h.dict" ] && dict=(-dict="$src/tests/fuzz/$h.dict")
    if [ "$ci" = 1 ]; then
        # inputs per harness: about 20 s of each on the CI machine (2 cores)
        case "$h" in
        fuzz_conf) runs=160000 ;;
        fuzz_load) runs=240000 ;;
        fuzz_response) runs=700000 ;;
        fuzz_route) runs=2000000 ;;
        fuzz_sigv4) runs=140000 ;;
        fuzz_topology) runs=400000 ;;
        fuzz_writer) runs=1700000 ;;
        *) runs=200000 ;;
        esac
        budget=(-runs="$runs" -seed="${ESBULK_FUZZ_SEED:-1}" -reload=0)
        # and the same addresses (no ASLR): pointer compares and hashes
        # steer libFuzzer too
        if setarch "$(uname -m)" -R true 2>/dev/null; then
            fixed=(setarch "$(uname -m)" -R)
        else
            echo "check-fuzz: setarch -R refused: addresses vary between runs" >&2
        fi
    else
        budget=(-max_total_time="$seconds")
    fi
    if "${fixed[@]}" "$out/$h" "${budget[@]}" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
        -max_len=65536 -artifact_prefix="$out/$h-" "${dict[@]}" "${dirs[@]}" >"$log" 2>&1; then
        result=PASS
    else
        result="FAIL (see $log; the input is $out/$h-*)"
        fail=1
    fi
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    last=$(grep -E '^#[0-9]+' "$log" | tail -n 1 || true)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
    corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
    printf '%-16s %8s %12s %8s %8s %6s  %s\n' "$h" "${#files[@]}" "${execs:-?}" "${cov:-?}" \
        "${ft:-?}" "${corp:-?}" "$result"
    [ "$result" = PASS ] || { grep -B5 -A40 -E 'ERROR|fuzz_[a-z]+:|SUMMARY' "$log" | head -n 80; }
done
[ "$fail" -eq 0 ]
