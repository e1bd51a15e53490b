#!/bin/sh
# Runs the peer comparisons of README.md from the repository root:
#   bench/peers/run.sh [SIZE_MB]   (default 100)
# Needs python3 (3.9+) and node (18+) with npm; installs the peers into
# /tmp/aep-peers (a venv with agenteventprotocol-sdk, ajv 8 + ajv-formats).
set -eu
size=${1:-100}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=/tmp/aep-peers
mkdir -p "$work"
corpus="$work/corpus-${size}mb.jsonl"

cargo build --release -q -p aep-cli -p aep-bench --manifest-path "$root/Cargo.toml"
bin="$root/target/release"
[ -f "$corpus" ] || "$bin/aep-bench" --size "$size" --write-corpus "$corpus"

[ -x "$work/venv/bin/python" ] || python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q agenteventprotocol-sdk
if [ ! -d "$work/node_modules/ajv-formats" ]; then
    (cd "$work" && npm init -y >/dev/null && npm install -q ajv@8 ajv-formats >/dev/null)
fi
cp "$root/bench/peers/ajv-validate.mjs" "$work/"

measure() { # label, command...
    label=$1; shift
    /usr/bin/time -f "$label: %e s wall, %U s user, peak RSS %M KiB" "$@" >/dev/null 2>"$work/time.txt" || true
    tail -n 1 "$work/time.txt"
}

echo "corpus: $corpus ($(wc -c <"$corpus") bytes)"
echo "== typed decoding (envelope model, then the payload model its type selects)"
"$work/venv/bin/python" "$root/bench/peers/python_sdk.py" "$corpus" 3
"$bin/aep-bench" --corpus "$corpus" --passes 3 | grep -E '^\| `(floor|typed|filter)`'
echo "== stream validation of the corpus"
measure "aep validate --jobs 1" "$bin/aep" validate --jobs 1 "$corpus"
measure "aep validate --jobs $(nproc)" "$bin/aep" validate --jobs "$(nproc)" "$corpus"
measure "ajv 8 + ajv-formats peer" node "$work/ajv-validate.mjs" "$root/schemas" "$corpus"
