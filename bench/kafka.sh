#!/bin/sh
# make bench-kafka (bench-quick runs it with --quick): esbulk-kafka against a
# plain consumer + bulk loop and esbulk load (bench/kafka.py says what and
# how), on the real broker (tests/kafka/kafka.sh) and the OpenSearch test
# cluster. The figures go to bench-out/kafka.txt.
#   ESBULK_KAFKA_BIN   the program (default $top_builddir/kafka/esbulk-kafka)
#   BENCH_KAFKA_ARGS   more bench/kafka.py options (--docs N, --rounds R, ...)
set -eu
. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/kafka/common.sh"
kafka_need_program
"$top_srcdir/tests/cluster/ensure.sh" opensearch >/dev/null
kafka_need_broker
kafka_need_venv
mkdir -p "$top_builddir/bench-out"
# shellcheck disable=SC2086 # BENCH_KAFKA_ARGS: words on purpose
exec timeout -k 10 3600 "$kafka_py" "$top_srcdir/bench/kafka.py" --bin "$ekf" \
    --esbulk "$top_builddir/tools/esbulk/esbulk" --out "$top_builddir/bench-out/kafka.txt" \
    "$@" ${BENCH_KAFKA_ARGS:-}
