#!/usr/bin/env bash
# Installs what libesbulk's build and tests need on a Debian machine.
# Idempotent and quiet when everything is present.
#
#   scripts/install-deps.sh [build|test|all]   (default: all)
#
#   build: what a plain `make` needs (the GNUmakefile bootstrap installs it):
#          gcc, autotools, pkg-config and the -dev packages
#   test:  build + Check (the unit tests), clang and its sanitizer runtimes
#          (make check-sanitizers), valgrind, Java and Maven for the test
#          clusters (the cluster scripts fetch their Maven artifacts themselves),
#          and a Go toolchain for the Go module's tests (tests/go.test): Debian's
#          golang-go when there is no `go` (nor /usr/local/go); cgo and the race
#          detector use gcc
#          python3-venv (tests/python.test makes a venv and pip-installs its
#          test requirements from PyPI)
#          python3-botocore (tests/faultproxy.py --require-sigv4 checks AWS
#          SigV4 signatures with botocore, run by /usr/bin/python3)
#          The OpenSearch 3.x tests need a JDK 21 or newer as well: Debian 12
#          packages none, so tests/cluster/opensearch.sh takes the newest one
#          under /usr/lib/jvm (the machines' Temurin 25) or ESBULK_JAVA, and
#          fails with that message when there is none
#          MariaDB server, client and Connector/C (esbulk-mysql and its tests,
#          tests/mariadb/mariadb.sh)
#          librdkafka (esbulk-kafka, the Kafka-to-index sink)
#          gcc for aarch64 and qemu-user (tests/sha256_arm64.test runs the
#          ARMv8 SHA-256 path under emulation)
set -euo pipefail

what=${1:-all}
build_pkgs=(gcc make autoconf automake libtool pkg-config
            libcurl4-openssl-dev libjansson-dev libxxhash-dev zlib1g-dev)
test_pkgs=(check clang valgrind curl python3 python3-venv python3-botocore
           openjdk-17-jdk-headless maven groff-base openssl util-linux golang-go
           mariadb-server mariadb-client libmariadb-dev librdkafka-dev
           gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user)

case "$what" in
build) pkgs=("${build_pkgs[@]}") ;;
test | all)
    # clang's sanitizer runtimes (make check-sanitizers) come in a package of
    # their own, named after clang's major version: 14 on Debian 12.
    clang_major=$(apt-cache depends clang 2>/dev/null |
        sed -n 's/.*Depends: clang-\([0-9][0-9]*\)$/\1/p' | head -n 1)
    pkgs=("${build_pkgs[@]}" "${test_pkgs[@]}" "libclang-rt-${clang_major:-14}-dev") ;;
*) echo "usage: $0 [build|test|all]" >&2; exit 2 ;;
esac

missing=()
for p in "${pkgs[@]}"; do
    # Accept a tool that is already on PATH under its own name (java, mvn
    # installed outside Debian's packages, for example).
    case "$p" in
    openjdk-17-jdk-headless) command -v java >/dev/null 2>&1 && command -v javac >/dev/null 2>&1 && continue ;;
    maven) command -v mvn >/dev/null 2>&1 && continue ;;
    golang-go) { command -v go || [ -x /usr/local/go/bin/go ]; } >/dev/null 2>&1 && continue ;;
    esac
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ]; then
    echo "libesbulk: missing packages: ${missing[*]}" >&2
    echo "run: sudo apt-get install -y ${missing[*]}" >&2
    exit 1
fi
echo "libesbulk: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
