#!/usr/bin/env bash
# This Hub against the MA2H reference Hub, same load generator, interleaved rounds (issue 19's
# "≥ 1.5× the reference's throughput in the same run"). Each round runs `make bench`'s submit
# load (`ma2h-bench submit`, 64 concurrent) against a fresh durable Hub and against the reference
# behind node:http, one right after the other — in alternating order, so the machine's drift
# does not favour either — then prints the round's ratio. At the end: the median ratio with a
# distribution-free 95 % interval (scripts/bench_compare.py), written to OUT/compare.json.
#
#   BENCH_ROUNDS=20 REFERENCE_DIR=/path/to/ma2h-protocol/reference bash scripts/bench-compare.sh
#
# Knobs: BENCH_ROUNDS (10), BENCH_GOAL (1.5), BENCH_CONCURRENCY (64), BENCH_DURATION (10s),
# BENCH_WARMUP (2s), BENCH_OUT (a temp dir), HUB_BIN / BENCH_BIN (built binaries instead of a
# release build), REFERENCE_DIR (else the public repository is cloned once). Needs node ≥ 20.
set -euo pipefail

CARGO=${CARGO:-cargo}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

ROUNDS=${BENCH_ROUNDS:-10}
GOAL=${BENCH_GOAL:-1.5}
CONCURRENCY=${BENCH_CONCURRENCY:-64}
OUT=${BENCH_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/ma2h-bench-compare.XXXXXX")}
mkdir -p "$OUT"

if [ -z "${HUB_BIN:-}" ] || [ -z "${BENCH_BIN:-}" ]; then
    "$CARGO" build --release --quiet -p ma2h-hub -p ma2h-bench
    TARGET=$("$CARGO" metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
fi
export HUB_BIN=${HUB_BIN:-$TARGET/release/ma2h-hub} BENCH_BIN=${BENCH_BIN:-$TARGET/release/ma2h-bench}

CLONE=""
trap '[ -z "$CLONE" ] || rm -rf "$CLONE"' EXIT
if [ -z "${REFERENCE_DIR:-}" ]; then
    CLONE=$(mktemp -d "${TMPDIR:-/tmp}/ma2h-protocol.XXXXXX")
    git clone --quiet --depth 1 https://github.com/autnmy/ma2h-protocol "$CLONE"
    REFERENCE_DIR=$CLONE/reference
fi
export REFERENCE_DIR
export BENCH_CONCURRENCY=$CONCURRENCY BENCH_ONLY=submit

# Before each run, wait (up to a minute) until the machine is idle: a run that shares the cores
# with another process measures that process (bench_compare.py also leaves such rounds out).
quiet() {
    local busy
    for _ in $(seq 1 30); do
        busy=$(python3 -c '
import time
def idle_total():
    v = list(map(int, open("/proc/stat").readline().split()[1:]))
    return v[3] + v[4], sum(v)
i0, t0 = idle_total(); time.sleep(1); i1, t1 = idle_total()
print(round(100 * (1 - (i1 - i0) / max(1, t1 - t0))))')
        [ "$busy" -le 10 ] && return 0
        sleep 1
    done
    echo "   (machine still ${busy}% busy; measuring anyway)" >&2
}

hub() { quiet; BENCH_OUT="$OUT/round-$1/hub" bash scripts/bench.sh >"$OUT/round-$1/hub.log" 2>&1; }
ref() { quiet; BENCH_OUT="$OUT/round-$1/ref" bash scripts/bench-reference.sh >"$OUT/round-$1/ref.log" 2>&1; }

echo "== $ROUNDS interleaved rounds, $CONCURRENCY concurrent, hub $HUB_BIN, load generator $BENCH_BIN, results in $OUT"
echo "| round | this Hub (durable) | reference (in memory) | ratio |"
echo "|---:|---:|---:|---:|"
for r in $(seq 1 "$ROUNDS"); do
    mkdir -p "$OUT/round-$r"
    if [ $((r % 2)) = 1 ]; then
        hub "$r" || { tail -n 20 "$OUT/round-$r/hub.log" >&2; exit 1; }
        ref "$r" || { tail -n 20 "$OUT/round-$r/ref.log" >&2; exit 1; }
    else
        ref "$r" || { tail -n 20 "$OUT/round-$r/ref.log" >&2; exit 1; }
        hub "$r" || { tail -n 20 "$OUT/round-$r/hub.log" >&2; exit 1; }
    fi
    python3 scripts/bench_compare.py summarize "$OUT" --goal "$GOAL" --round "$r"
done
echo
python3 scripts/bench_compare.py summarize "$OUT" --goal "$GOAL"
