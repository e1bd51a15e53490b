#!/bin/sh
# Drives `relay-hostile` against `aep relay` (release build, default
# limits, a token), from the repository root:
#   bench/hostile.sh [ATTACKS] [SCALE]   (default: all attacks, full scale)
# Each attack gets a fresh relay, so its figures are its own. Prints one
# row per attack: the relay's resident set before it and at its peak
# (MiB), its slowest /healthz answer (ms) and what the wire said. The
# sigterm attack ends its relay and times the exit. AEP_BENCH_OUT (default
# /tmp/aep-relay-hostile) keeps the relays' logs and the JSON reports.
# AEP_RELAY_BIN runs another `aep` binary as the relay (an older build, to
# compare). Everything listens on 127.0.0.1 only.
set -eu
attacks=${1:-closing,claims,fanout,batches,filters,replay,hellos,hello-values,big-events,messages,wide-json,stuck-readers,connections,sigterm}
scale=${2:-full}
out=${AEP_BENCH_OUT:-/tmp/aep-relay-hostile}
root=$(cd "$(dirname "$0")/.." && pwd)
relay_pid=
cleanup() {
    if [ -n "$relay_pid" ]; then kill -9 "$relay_pid" 2>/dev/null || true; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$out"
ulimit -n 4096 2>/dev/null || true

cargo build --release -q -p aep-cli -p aep-bench --manifest-path "$root/Cargo.toml"
bin="$root/target/release"
header=
for attack in $(echo "$attacks" | tr ',' ' '); do
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    token=hostile-$$
    AEP_TOKEN=$token "${AEP_RELAY_BIN:-$bin/aep}" relay --listen "127.0.0.1:$port" >"$out/relay-$attack.log" 2>&1 &
    relay_pid=$!
    i=0
    until curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; do
        i=$((i + 1))
        if [ "$i" -gt 100 ]; then echo "the relay did not start; see $out/relay-$attack.log" >&2; exit 1; fi
        sleep 0.1
    done
    "$bin/relay-hostile" --url "http://127.0.0.1:$port" --pid "$relay_pid" --token "$token" \
        --attacks "$attack" --scale "$scale" --json "$out/hostile-$attack.json" |
        if [ -n "$header" ]; then tail -n +2; else cat; fi
    header=printed
    kill -9 "$relay_pid" 2>/dev/null || true
    wait "$relay_pid" 2>/dev/null || true
    relay_pid=
done
