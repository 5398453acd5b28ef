# Sourced by tests/kafka_*.test and bench/kafka.sh: esbulk-kafka, the real
# broker (tests/kafka/kafka.sh, 127.0.0.1:19092) and the venv with the Kafka
# client the checks use (confluent-kafka, opensearch-py for the benchmark's
# plain loop), pinned in tests/kafka/requirements.txt.
#   ESBULK_KAFKA_BIN   the program (default $top_builddir/kafka/esbulk-kafka)
#   ESBULK_KAFKA_DIR   the broker's run directory (kafka.sh; default
#                      tests/kafka/run)
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
ekf=${ESBULK_KAFKA_BIN:-$top_builddir/kafka/esbulk-kafka}
kafka_sh="$top_srcdir/tests/kafka/kafka.sh"
kafka_venv=$top_builddir/tests/kafka-venv
kafka_py=$kafka_venv/bin/python

# kafka_need_program: esbulk-kafka must be there (a build without it fails
# the test, as a missing esbulk-mysql fails the sync job's: no silent skip)
kafka_need_program() {
    if [ ! -x "$ekf" ]; then
        echo "$0: $ekf not found: build it (configure finds librdkafka-dev; make)" \
            "or point ESBULK_KAFKA_BIN at it" >&2
        exit 1
    fi
}

# kafka_need_venv: the venv (kept for re-runs), its pinned requirements
kafka_need_venv() {
    req=$top_srcdir/tests/kafka/requirements.txt
    if [ ! -x "$kafka_py" ]; then
        rm -rf "$kafka_venv"
        python3 -m venv "$kafka_venv" || {
            echo "$0: python3 -m venv failed (Debian: apt-get install python3-venv," \
                "or scripts/install-deps.sh test)" >&2
            exit 1
        }
    fi
    if ! cmp -s "$req" "$kafka_venv/requirements.stamp"; then
        "$kafka_py" -m pip install --quiet --disable-pip-version-check -r "$req" || exit 1
        cp "$req" "$kafka_venv/requirements.stamp"
    fi
}

# kafka_need_broker: the broker, started unless it runs (kafka.sh start is
# idempotent and serialized)
kafka_need_broker() {
    "$kafka_sh" start >/dev/null || {
        echo "$0: the Kafka broker did not start (tests/kafka/kafka.sh start)" >&2
        exit 1
    }
}
