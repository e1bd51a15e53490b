#!/bin/sh
# What NATS JetStream costs `aep relay`: one node on a nats-server, and
# three nodes on one nats-server posted to on one node and read on
# another, against the same relay in process, under the same load, from
# the repository root:
#   bench/peers/nats.sh [RUNS]   (default 3; every figure is a median)
# Both sides are this build of `aep relay` (release, with the `nats`
# feature); every run of the node starts a fresh nats-server (JetStream on
# a temporary store), so no run reads what another left. The load posts to
# the node and reads from it, so each event goes to the server and back
# (publish, store, the node's ordered consumer) before it is fanned out;
# with three nodes it posts to node A and reads on node B (memory and
# CPU are node A's). Each run also measures a fresh nats-server alone with
# `nats-ceiling` (JetStream publish with awaited acks, the same read back
# by one ordered consumer, core NATS fan-out), and the relay's figures are
# printed last as a share of that ceiling.
# Environment: AEP_NATS_SERVER (the nats-server, else `nats-server` on the
# PATH), AEP_BENCH_BUFFER (replay depth per session, default 1000),
# AEP_BENCH_OUT (reports and logs, default /tmp/aep-nats-bench), extra
# relay-load flags in AEP_BENCH_FLAGS (its --events, --fanout-deliveries,
# --fanout, --sessions, --batch and --limit-secs are nats-ceiling's too),
# extra nats-ceiling flags in AEP_CEILING_FLAGS. Everything listens on
# 127.0.0.1.
set -eu
runs=${1:-3}
buffer=${AEP_BENCH_BUFFER:-1000}
out=${AEP_BENCH_OUT:-/tmp/aep-nats-bench}
flags=${AEP_BENCH_FLAGS:-}
ceiling_flags=
# shellcheck disable=SC2086 # AEP_BENCH_FLAGS is a list of flags
set -- $flags
while [ $# -gt 1 ]; do
    case $1 in
    --events | --fanout-deliveries | --fanout | --sessions | --batch | --limit-secs)
        ceiling_flags="$ceiling_flags $1 $2"
        shift
        ;;
    esac
    shift
done
ceiling_flags="$ceiling_flags ${AEP_CEILING_FLAGS:-}"
server=${AEP_NATS_SERVER:-nats-server}
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/aep-nats-bench.XXXXXX")
relay_pid=
nats_pid=
other_pids=
cleanup() {
    if [ -n "$relay_pid" ]; then kill "$relay_pid" 2>/dev/null || true; fi
    for pid in $other_pids; do kill "$pid" 2>/dev/null || true; done
    if [ -n "$nats_pid" ]; then kill "$nats_pid" 2>/dev/null || true; fi
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$out"
rm -f "$out"/nats-*.json "$out"/three-*.json "$out"/local-*.json "$out"/ceiling-*.json

cargo build --release -q -p aep-cli -p aep-bench --features aep-cli/nats,aep-bench/nats --manifest-path "$root/Cargo.toml"
bin="${CARGO_TARGET_DIR:-$root/target}/release"
ulimit -n 4096 2>/dev/null || true

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start_nats() { # label-run
    nats_port=$(free_port)
    rm -rf "$tmp/js"
    "$server" -js -a 127.0.0.1 -p "$nats_port" -sd "$tmp/js" >"$out/nats-server-$1.log" 2>&1 &
    nats_pid=$!
    tries=0
    until python3 -c "import socket; socket.create_connection(('127.0.0.1', $nats_port), 1)" 2>/dev/null; do
        tries=$((tries + 1))
        if [ "$tries" -gt 100 ]; then echo "nats-server did not listen" >&2; exit 1; fi
        sleep 0.1
    done
}

node() { # label run name port
    "$bin/aep" relay --listen "127.0.0.1:$4" --buffer "$buffer" \
        --nats "nats://127.0.0.1:$nats_port" >"$out/$1-$2-$3.log" 2>&1 &
}

measure() { # label run
    port=$(free_port)
    read_url="http://127.0.0.1:$port"
    case $1 in
    ceiling)
        start_nats "$1-$2"
        # shellcheck disable=SC2086 # a list of flags
        "$bin/nats-ceiling" --url "nats://127.0.0.1:$nats_port" --pid "$nats_pid" \
            --json "$out/$1-$2.json" $ceiling_flags >"$out/$1-$2.txt"
        kill "$nats_pid"
        wait "$nats_pid" 2>/dev/null || true
        nats_pid=
        echo "run $2, $1: done ($out/$1-$2.txt)" >&2
        return
        ;;
    three)
        start_nats "$1-$2"
        port_b=$(free_port)
        port_c=$(free_port)
        node "$1" "$2" b "$port_b"
        other_pids="$!"
        node "$1" "$2" c "$port_c"
        other_pids="$other_pids $!"
        read_url="http://127.0.0.1:$port_b"
        node "$1" "$2" a "$port"
        ;;
    nats)
        start_nats "$1-$2"
        "$bin/aep" relay --listen "127.0.0.1:$port" --buffer "$buffer" \
            --nats "nats://127.0.0.1:$nats_port" >"$out/$1-$2.log" 2>&1 &
        ;;
    local)
        "$bin/aep" relay --listen "127.0.0.1:$port" --buffer "$buffer" >"$out/$1-$2.log" 2>&1 &
        ;;
    esac
    relay_pid=$!
    # shellcheck disable=SC2086 # AEP_BENCH_FLAGS is a list of flags
    "$bin/relay-load" --url "http://127.0.0.1:$port" --read-url "$read_url" --label "$1" \
        --pid "$relay_pid" --json "$out/$1-$2.json" $flags >"$out/$1-$2.txt"
    for pid in $relay_pid $other_pids; do
        kill "$pid"
        wait "$pid" 2>/dev/null || true
    done
    relay_pid=
    other_pids=
    if [ -n "$nats_pid" ]; then
        kill "$nats_pid"
        wait "$nats_pid" 2>/dev/null || true
        nats_pid=
    fi
    echo "run $2, $1: done ($out/$1-$2.txt)" >&2
}

# Alternate the setups, so noise on a shared machine falls on both alike.
i=1
while [ "$i" -le "$runs" ]; do
    measure ceiling "$i"
    measure nats "$i"
    measure three "$i"
    measure local "$i"
    i=$((i + 1))
done

echo "aep relay ($(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)): one node on $("$server" --version) against the relay in process, replay depth $buffer, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
"$bin/relay-load" compare --no-aims --ours "$out"/nats-*.json --reference "$out"/local-*.json
echo
echo "three nodes, posted to on node A and read on node B, against the relay in process"
echo
"$bin/relay-load" compare --no-aims --ours "$out"/three-*.json --reference "$out"/local-*.json
echo
echo "the nats-server alone (nats-ceiling, a fresh server each run), and the relay on NATS as a share of it"
echo
"$bin/nats-ceiling" summary --ceiling "$out"/ceiling-*.json --relay "$out"/nats-*.json "$out"/three-*.json
