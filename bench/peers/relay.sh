#!/bin/sh
# Compares `aep relay` with the published reference relay under the same
# load, from the repository root:
#   bench/peers/relay.sh [RUNS]   (default 3; every figure is a median)
# Environment: AEP_BENCH_BUFFER (replay depth per session of both relays,
# default 1000), AEP_BENCH_OUT (where reports and logs go, default
# /tmp/aep-relay-bench). Extra relay-load flags go in AEP_BENCH_FLAGS.
# Needs python3 with pip, and node (18+) with npm. The reference relay is
# downloaded (the source distribution of agenteventprotocol-sdk
# 0.1.0.dev1 ships it in tests/fixtures/relay) into a temporary directory
# that is removed at exit. Everything listens on 127.0.0.1 only.
set -eu
runs=${1:-3}
buffer=${AEP_BENCH_BUFFER:-1000}
out=${AEP_BENCH_OUT:-/tmp/aep-relay-bench}
flags=${AEP_BENCH_FLAGS:-}
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/aep-reference-relay.XXXXXX")
relay_pid=
cleanup() {
    if [ -n "$relay_pid" ]; then kill "$relay_pid" 2>/dev/null || true; fi
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$out"
rm -f "$out"/ours-*.json "$out"/reference-*.json

cargo build --release -q -p aep-cli -p aep-bench --manifest-path "$root/Cargo.toml"
bin="$root/target/release"

sdk=agenteventprotocol-sdk==0.1.0.dev1
python3 -m pip download -q --no-deps --no-binary :all: "$sdk" -d "$tmp"
tar -xzf "$tmp"/agenteventprotocol_sdk-0.1.0.dev1.tar.gz -C "$tmp"
reference="$tmp/agenteventprotocol_sdk-0.1.0.dev1/tests/fixtures/relay"
(cd "$reference" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)

# 1,000 idle connections are opened on each side.
ulimit -n 4096 2>/dev/null || true

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start() { # label port; run in the background, it becomes the relay (exec), so $! is its PID
    case $1 in
    ours) exec "$bin/aep" relay --listen "127.0.0.1:$2" --buffer "$buffer" ;;
    reference) exec env AEP_HOST=127.0.0.1 AEP_PORT="$2" AEP_BUFFER="$buffer" node "$reference/server.cjs" ;;
    esac
}

measure() { # label run
    port=$(free_port)
    start "$1" "$port" >"$out/$1-$2.log" 2>&1 &
    relay_pid=$!
    # shellcheck disable=SC2086 # AEP_BENCH_FLAGS is a list of flags
    "$bin/relay-load" --url "http://127.0.0.1:$port" --label "$1" --pid "$relay_pid" \
        --json "$out/$1-$2.json" $flags >"$out/$1-$2.txt"
    kill "$relay_pid"
    wait "$relay_pid" 2>/dev/null || true
    relay_pid=
    echo "run $2, $1: done ($out/$1-$2.txt)" >&2
}

# Alternate the relays, so noise on a shared machine falls on both alike.
i=1
while [ "$i" -le "$runs" ]; do
    measure ours "$i"
    measure reference "$i"
    i=$((i + 1))
done

echo "aep relay ($(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)) against the reference relay ($sdk), replay depth $buffer, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
"$bin/relay-load" compare --ours "$out"/ours-*.json --reference "$out"/reference-*.json
