#!/usr/bin/env bash
# The same submit load as `make bench` against the MA2H reference Hub (autnmy/ma2h-protocol
# `reference/`, TypeScript, in memory, no persistence) behind a plain node:http server
# (bench/reference/serve.mjs): the yardstick docs/BENCHMARKS.md compares ma2h-hub with.
#
#   REFERENCE_DIR=/path/to/ma2h-protocol/reference bash scripts/bench-reference.sh
#
# Without REFERENCE_DIR the public repository is cloned into a temporary directory. Needs node
# (≥ 20) and npm (`npm ci` installs the reference's pinned dependencies: ajv, tsx). Knobs as
# scripts/bench.sh: BENCH_CONCURRENCY (1,16,64), BENCH_DURATION (10s), BENCH_WARMUP (2s),
# BENCH_OUT (JSON summaries), BENCH_BIN (a built ma2h-bench instead of building it).
set -euo pipefail

CARGO=${CARGO:-cargo}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

CONCURRENCY=${BENCH_CONCURRENCY:-1,16,64}
DURATION=${BENCH_DURATION:-10s}
WARMUP=${BENCH_WARMUP:-2s}
OUT=${BENCH_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/ma2h-bench-ref.XXXXXX")}
mkdir -p "$OUT"

if [ -z "${BENCH_BIN:-}" ]; then
    "$CARGO" build --release --quiet -p ma2h-bench
    TARGET=$("$CARGO" metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
fi
BENCH=${BENCH_BIN:-$TARGET/release/ma2h-bench}

CLONE=""
if [ -z "${REFERENCE_DIR:-}" ]; then
    CLONE=$(mktemp -d "${TMPDIR:-/tmp}/ma2h-protocol.XXXXXX")
    git clone --quiet --depth 1 https://github.com/autnmy/ma2h-protocol "$CLONE"
    REFERENCE_DIR=$CLONE/reference
fi
REFERENCE_DIR=$(cd "$REFERENCE_DIR" && pwd)
[ -d "$REFERENCE_DIR/node_modules" ] || (cd "$REFERENCE_DIR" && npm ci --no-audit --no-fund --silent)

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
KEY=bench-reference-key
SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
    if [ -n "$CLONE" ]; then rm -rf "$CLONE"; fi
}
trap cleanup EXIT

export REFERENCE_DIR PORT BENCH_KEY=$KEY
node --import "$REFERENCE_DIR/node_modules/tsx/dist/esm/index.mjs" bench/reference/serve.mjs > "$OUT/reference.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 100); do
    if grep -q "listening" "$OUT/reference.log" 2>/dev/null; then break; fi
    sleep 0.1
done
grep -q "listening" "$OUT/reference.log" || { cat "$OUT/reference.log" >&2; exit 1; }

echo "== submit (reference Hub, in memory) → $OUT/submit-reference.json"
"$BENCH" submit --url "http://127.0.0.1:$PORT" --agent-key "$KEY" --agent-id bench-bot --kind ask \
    --concurrency "$CONCURRENCY" --duration "$DURATION" --warmup "$WARMUP" \
    --server-pid "$SERVER_PID" --json "$OUT/submit-reference.json"
