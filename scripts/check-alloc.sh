#!/usr/bin/env bash
# The full allocation-failure sweep (tests/alloc_fail --full): every N, with
# the build's compiler, then again built with clang's AddressSanitizer and
# UndefinedBehaviorSanitizer (LeakSanitizer on) over the library sources.
#
#   top_builddir=BUILD scripts/check-alloc.sh
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
bld=${top_builddir:-$src}
out=${ESBULK_ALLOC_DIR:-$bld/_build/alloc}
mkdir -p "$out"
export top_srcdir="$src"
echo "check-alloc: $bld/tests/alloc_fail --full"
"$bld/tests/alloc_fail" --full
cc=${CC_SANITIZE:-clang}
echo "check-alloc: the same under $cc -fsanitize=address,undefined"
# shellcheck disable=SC2046
"$cc" -std=c11 -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined \
    -fno-sanitize-recover=undefined -Wall -Wextra -Werror -D_GNU_SOURCE -I"$src/include" \
    -I"$src/lib" -I"$bld" -I"$src" "$src"/lib/*.c "$src/tests/alloc_fail.c" \
    $(pkg-config --cflags --libs libcurl jansson libxxhash zlib) -lpthread -lm \
    -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,--wrap=free -o "$out/alloc_fail"
ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$out/alloc_fail" --full
