#!/usr/bin/env bash
# Benchmark a fresh local Hub (release build, SQLite store) with ma2h-bench (bench/README.md):
#   1. submit throughput/latency at each concurrency level (durable asks by default),
#   2. resolve → signed push received (our own loopback receiver),
#   3. resolve → parked long-poll returned.
# Builds both release binaries, creates an agent and an operator in a temporary data directory
# (on the same filesystem as TMPDIR: fsync cost depends on it), binds 127.0.0.1 as the agent's
# callback host with an HMAC secret, starts `ma2h-hub serve` on a free port with the settings
# below, runs the three scenarios, prints the results and stops the Hub.
#
# Knobs (environment): BENCH_CONCURRENCY (1,16,64), BENCH_DURATION (10s), BENCH_WARMUP (2s),
# BENCH_KIND (ask|notify), BENCH_SAMPLES (200), BENCH_OUT (directory for the JSON summaries;
# default: a temporary one, printed), BENCH_ONLY (submit|push|longpoll: run just that one),
# HUB_BIN / BENCH_BIN (use these binaries instead of building), BENCH_LOG (hub log filter, warn;
# the hub's log is kept as BENCH_OUT/hub.log),
# BENCH_PERF=1 (`perf record` the Hub during the submit run, dwarf call graphs unless BENCH_PERF_ARGS
# says otherwise; the report goes to BENCH_OUT/perf-top.txt).
set -euo pipefail

CARGO=${CARGO:-cargo}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
# shellcheck source=lib/hub.sh
. scripts/lib/hub.sh

CONCURRENCY=${BENCH_CONCURRENCY:-1,16,64}
DURATION=${BENCH_DURATION:-10s}
WARMUP=${BENCH_WARMUP:-2s}
KIND=${BENCH_KIND:-ask}
SAMPLES=${BENCH_SAMPLES:-200}
ONLY=${BENCH_ONLY:-}
LOG=${BENCH_LOG:-warn}

if [ -z "${HUB_BIN:-}" ] || [ -z "${BENCH_BIN:-}" ]; then
    "$CARGO" build --release --quiet -p ma2h-hub -p ma2h-bench
    TARGET=$("$CARGO" metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
fi
HUB=${HUB_BIN:-$TARGET/release/ma2h-hub}
BENCH=${BENCH_BIN:-$TARGET/release/ma2h-bench}

DATA=$(mktemp -d "${TMPDIR:-/tmp}/ma2h-bench-data.XXXXXX")
OUT=${BENCH_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/ma2h-bench-out.XXXXXX")}
mkdir -p "$OUT"
HUB_PID=""
cleanup() {
    if [ -n "$HUB_PID" ]; then kill "$HUB_PID" 2>/dev/null || true; wait "$HUB_PID" 2>/dev/null || true; fi
    # Keep the hub's output (BENCH_LOG=ma2h_store_sqlite=debug shows the WAL restarts).
    cp "$DATA/hub.out" "$OUT/hub.out" 2>/dev/null || true
    cp "$DATA/hub.err" "$OUT/hub.log" 2>/dev/null || true
    rm -rf "$DATA"
}
trap cleanup EXIT

export MA2H_MODE=dev MA2H_DATA_DIR="$DATA" MA2H_LOG="$LOG"
ACCOUNT=bench
AGENT=bench-bot
HUMAN=bench-op

AGENT_KEY=$("$HUB" admin create-agent --account $ACCOUNT --agent $AGENT --label bench --json | hub_field api_key)
OP_KEY=$("$HUB" admin create-operator --account $ACCOUNT --human $HUMAN --json | hub_field api_key)
# Push to a loopback receiver: the host is bound to the agent, the secret registered by name,
# and the Hub started in dev mode with MA2H_DEV_EGRESS_ALLOW=127.0.0.0/8 (§9.4 refuses loopback otherwise).
"$HUB" admin bind-callback --account $ACCOUNT --agent $AGENT --host 127.0.0.1 >/dev/null
CALLBACK_SECRET="whsec-bench-$RANDOM$RANDOM$RANDOM"
printf '%s' "$CALLBACK_SECRET" | "$HUB" admin put-secret --account $ACCOUNT --agent $AGENT --name bench-hmac --value-stdin >/dev/null

# No per-agent rate limit or inbox cap (the load generator would hit both at once); the rest is
# the default configuration (WAL, synchronous=FULL: every acked submit is durable).
HUB_OUT="$DATA/hub.out"
MA2H_BIND=127.0.0.1:0 MA2H_PUBLIC_URL=http://127.0.0.1:8080 MA2H_DEV_EGRESS_ALLOW=127.0.0.0/8 \
    MA2H_REQUESTS_PER_MINUTE=0 MA2H_INBOX_DEPTH=0 "$HUB" serve >"$HUB_OUT" 2>"$DATA/hub.err" &
HUB_PID=$!
ADDR=$(hub_address "$HUB_PID" "$HUB_OUT" "$DATA/hub.err" bench)

export MA2H_HUB_URL="http://$ADDR" MA2H_API_KEY="$AGENT_KEY" MA2H_AGENT_ID=$AGENT
export MA2H_OPERATOR_KEY="$OP_KEY" MA2H_OPERATOR_ACTOR="human:$HUMAN"

echo "== ma2h-bench against $MA2H_HUB_URL (hub pid $HUB_PID, $(nproc) cores, data on $(df -T "$DATA" | awk 'NR==2 {print $2}'), load avg $(cut -d' ' -f1-3 /proc/loadavg))"
if [ -n "${HUB_BIN:-}" ]; then
    echo "== hub: $HUB (prebuilt)"
else
    dirty=$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo ', uncommitted changes' || true)
    echo "== hub: $HUB (built from $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$dirty)"
fi
status=0

if [ -z "$ONLY" ] || [ "$ONLY" = submit ]; then
    echo
    echo "== submit ($KIND, concurrency $CONCURRENCY, $DURATION per level after $WARMUP warmup)"
    PERF_PID=""
    if [ "${BENCH_PERF:-0}" = 1 ] && command -v perf >/dev/null; then
        # shellcheck disable=SC2086 # word-split the extra perf options on purpose
        perf record ${BENCH_PERF_ARGS:---call-graph dwarf,16384 -F 199} -p "$HUB_PID" -o "$OUT/perf.data" \
            >/dev/null 2>"$OUT/perf.err" &
        PERF_PID=$!
    fi
    "$BENCH" submit --kind "$KIND" --concurrency "$CONCURRENCY" --duration "$DURATION" --warmup "$WARMUP" \
        --server-pid "$HUB_PID" --json "$OUT/submit.json" || status=$?
    if [ -n "$PERF_PID" ]; then
        kill -INT "$PERF_PID" 2>/dev/null || true
        wait "$PERF_PID" 2>/dev/null || true
        report() { perf report -i "$OUT/perf.data" --stdio -g none "$@" 2>/dev/null | grep '%' | grep -v '^#' | cut -c1-160; }
        {
            echo "-- hub CPU by object (self)"
            report --no-children --sort dso | head -n 8
            echo "-- hub symbols by self time"
            report --no-children --sort symbol | head -n 40
            echo "-- hub symbols by inclusive time (children; needs the dwarf call graph)"
            report --children --sort symbol | head -n 60
        } >"$OUT/perf-top.txt" || true
        echo "== perf: where the hub's CPU went (full list: $OUT/perf-top.txt)"
        head -n 35 "$OUT/perf-top.txt"
    fi
fi

if [ -z "$ONLY" ] || [ "$ONLY" = push ]; then
    echo
    echo "== push-latency ($SAMPLES samples)"
    MA2H_BENCH_CALLBACK_SECRET="$CALLBACK_SECRET" "$BENCH" push-latency --samples "$SAMPLES" --secret-ref bench-hmac \
        --json "$OUT/push-latency.json" || status=$?
fi

if [ -z "$ONLY" ] || [ "$ONLY" = longpoll ]; then
    echo
    echo "== longpoll-wake ($SAMPLES samples)"
    "$BENCH" longpoll-wake --samples "$SAMPLES" --json "$OUT/longpoll-wake.json" || status=$?
fi

echo
echo "== JSON summaries in $OUT"
if [ "$status" -ne 0 ]; then
    echo "bench: a scenario failed ($status); the hub's log follows" >&2
    tail -n 30 "$DATA/hub.err" >&2 || true
fi
exit $status
