#!/usr/bin/env bash
# bench/setup.sh [BUILDDIR] - installs what bench/run.py needs; idempotent and
# silent when everything is in place.
#
#   - a Python venv with bench/requirements.txt (opensearch-py, matplotlib),
#     at $ESBULK_BENCH_VENV (default ~/.cache/libesbulk/bench-venv); it is
#     rebuilt when requirements.txt changes;
#   - the esbulk-go contender, bench/peers/esbulk_go built over go/ with this
#     build's libesbulk.a into BUILDDIR/bench/esbulk_go (esbulk-py needs no
#     build: run.py runs python/ from the source tree);
#   - the opensearch-go contender, `go build` of bench/peers/os_go into
#     BUILDDIR/bench/os_go (default BUILDDIR: the source tree), rebuilt when
#     its sources change. Without a Go toolchain it installs Debian's
#     golang-go; if that cannot build the module the os-go contender is
#     reported missing by run.py, and this script still succeeds.
#
# Prints the venv's python on stdout with --print-python.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
print_python=0
if [[ ${1:-} == --print-python ]]; then print_python=1; shift; fi
builddir=${1:-$(cd "$here/.." && pwd)}
venv=${ESBULK_BENCH_VENV:-$HOME/.cache/libesbulk/bench-venv}
req="$here/requirements.txt"

say() { printf 'bench/setup.sh: %s\n' "$*" >&2; }

apt_install() {
    command -v apt-get >/dev/null 2>&1 && [[ $(id -u) == 0 ]] || return 1
    say "installing Debian package(s): $*"
    apt-get update -qq >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# ---- Python venv
want=$(sha256sum "$req" | cut -d' ' -f1)
if [[ ! -x $venv/bin/python || ! -f $venv/.stamp || $(<"$venv/.stamp") != "$want" ]]; then
    py=$(command -v python3 || true)
    if [[ -z $py ]]; then apt_install python3 python3-venv; py=$(command -v python3); fi
    say "creating the benchmark venv in $venv"
    rm -rf "$venv"
    mkdir -p "$(dirname "$venv")"
    if ! "$py" -m venv "$venv" >/dev/null 2>&1; then
        rm -rf "$venv"
        apt_install python3-venv python3-pip || true
        "$py" -m venv "$venv"
    fi
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req" >&2
    printf '%s\n' "$want" >"$venv/.stamp"
fi

# ---- the opensearch-go contender
gosrc="$here/peers/os_go"
gobin="$builddir/bench/os_go"
if ! command -v go >/dev/null 2>&1 && [[ -x /usr/local/go/bin/go ]]; then
    PATH=$PATH:/usr/local/go/bin
fi
if ! command -v go >/dev/null 2>&1; then apt_install golang-go || true; fi
if command -v go >/dev/null 2>&1; then
    stale=0
    [[ -x $gobin ]] || stale=1
    for f in "$gosrc"/*.go "$gosrc/go.mod" "$gosrc/go.sum"; do
        [[ $f -nt $gobin ]] && stale=1
    done
    if ((stale)); then
        say "building the opensearch-go contender into $gobin"
        mkdir -p "$(dirname "$gobin")"
        # -mod=readonly: the committed go.mod/go.sum are the versions measured
        if ! (cd "$gosrc" && go build -mod=readonly -trimpath -o "$gobin.tmp" .) >&2; then
            rm -f "$gobin.tmp"
            say "warning: could not build bench/peers/os_go; os-go will be missing"
        else
            mv "$gobin.tmp" "$gobin"
        fi
    fi
else
    say "warning: no Go toolchain; the os-go contender will be missing"
fi

# ---- the esbulk Go module's contender: bench/peers/esbulk_go over go/, with
# this build's libesbulk.a linked in (-tags esbulk_static)
esrc="$here/peers/esbulk_go"
ebin="$builddir/bench/esbulk_go"
if command -v go >/dev/null 2>&1 && [[ -f $builddir/.libs/libesbulk.a ]]; then
    stale=0
    [[ -x $ebin ]] || stale=1
    for f in "$esrc"/*.go "$esrc/go.mod" "$here"/../go/*.go "$builddir/.libs/libesbulk.a"; do
        [[ $f -nt $ebin ]] && stale=1
    done
    if ((stale)); then
        say "building the esbulk-go contender into $ebin"
        mkdir -p "$(dirname "$ebin")"
        if ! (cd "$esrc" && GOTOOLCHAIN=local CGO_ENABLED=1 \
            CGO_CFLAGS="-I$here/../include ${CGO_CFLAGS:-}" \
            CGO_LDFLAGS="-L$builddir/.libs ${CGO_LDFLAGS:-}" \
            go build -tags esbulk_static -trimpath -o "$ebin.tmp" .) >&2; then
            rm -f "$ebin.tmp"
            say "warning: could not build bench/peers/esbulk_go; esbulk-go will be missing"
        else
            mv "$ebin.tmp" "$ebin"
        fi
    fi
else
    say "warning: no Go toolchain or no $builddir/.libs/libesbulk.a; esbulk-go will be missing"
fi

if ((print_python)); then printf '%s\n' "$venv/bin/python"; fi
