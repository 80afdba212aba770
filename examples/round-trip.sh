#!/usr/bin/env bash
# The whole §2.1 ephemeral-agent round trip against a local Hub started with `make run`:
#
#   run #1: seal state → ask → exit          (nothing held open)
#   human:  answers in the inbox              (here: curl with the dev operator key)
#   run #2: re-invoked → verify → dedup → open state → resume
#
# Run #2 is re-invoked by a scheduled pull (`ma2h get --once`) by default. With PUSH=1 it is
# re-invoked by the Hub's signed push to `ma2h listen` instead: a Hub started by `make run` allows
# that out of the box (dev mode reaches loopback, and binds 127.0.0.1 and localhost for the dev
# agent). If the push does not arrive within TIMEOUT seconds (default 30), the script says why —
# the Hub's push track, as `ma2h get` shows it — and exits 1.
#
# Usage (from the repository root, with `make run` in another terminal — it builds the release
# binaries this script uses):
#   examples/round-trip.sh            # pull path
#   PUSH=1 examples/round-trip.sh     # push path
set -euo pipefail
cd "$(dirname "$0")/.."

DEV_ENV=${DEV_ENV:-data/dev.env}
[ -f "$DEV_ENV" ] || { echo "no $DEV_ENV: start the Hub with 'make run' first" >&2; exit 2; }
# shellcheck disable=SC1090
. "$DEV_ENV"                                  # MA2H_HUB_URL, MA2H_AGENT_ID, MA2H_API_KEY, MA2H_SIGNING_SECRET, MA2H_OPERATOR_KEY
export MA2H_RESOLVERS=human:dev               # the dev operator may answer, no per-call flags
MA2H=${MA2H:-${CARGO_TARGET_DIR:-target}/release/ma2h}
if [ ! -x "$MA2H" ]; then
  echo "no $MA2H: 'make run' builds it (or: cargo build --release -p ma2h-cli)" >&2
  exit 2
fi
TIMEOUT=${TIMEOUT:-30}
# §9.3: the state key is pre-positioned in the agent's runtime, never sent to the Hub.
export MA2H_STATE_KEY=${MA2H_STATE_KEY:-$("$MA2H" seal-state --generate-key)}
WORK=$(mktemp -d)
export MA2H_STATE_DIR="$WORK/state"          # the replay/dedup cache
trap 'kill ${LISTENER:-} 2>/dev/null || true; rm -rf "$WORK"' EXIT

CALLBACK=()
if [ "${PUSH:-0}" = 1 ]; then
  PORT=${PORT:-8765}
  # the re-invoke endpoint: verifies each push, then runs run #2 once per resolution
  "$MA2H" listen --port "$PORT" --once \
    --exec "'$MA2H' open-state > '$WORK/resumed.json' && echo \"resumed after \$MA2H_RESOLUTION\"" &
  LISTENER=$!
  sleep 1
  CALLBACK=(--callback-url "http://127.0.0.1:$PORT/")
fi

echo "== run #1: seal state, ask, exit"
ID=$("$MA2H" ask "Ship build 412 to prod?" --option "ship=Ship now" --option "hold=Hold" \
  --default-on-expire hold --expires-in 10m --priority high \
  --state '{"build":412,"next":"deploy"}' "${CALLBACK[@]}")
echo "asked $ID; run #1 exits"

echo "== the human answers"
curl -fsS -X POST "$MA2H_HUB_URL/v1/messages/$ID/resolve" \
  -H "Authorization: Bearer $MA2H_OPERATOR_KEY" -H 'Content-Type: application/json' \
  -d '{"resolution":"answered","value":"ship","comment":"LGTM"}' >/dev/null

echo "== run #2"
if [ "${PUSH:-0}" = 1 ]; then
  # the listener exits after the first verified push; give up after TIMEOUT seconds
  for _ in $(seq "$((TIMEOUT * 10))"); do
    kill -0 "$LISTENER" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$LISTENER" 2>/dev/null; then
    echo "no push arrived within ${TIMEOUT}s; the Hub's push track for $ID:" >&2
    "$MA2H" get "$ID" >/dev/null || true      # prints the push failure and its reason on stderr
    exit 1
  fi
  wait "$LISTENER"; LISTENER=
  STATE=$(cat "$WORK/resumed.json")
else
  set +e
  "$MA2H" get "$ID" --wait 30 --once --json > "$WORK/get.json"
  rc=$?
  set -e
  case $rc in
    0) ;;                                     # answered
    6) echo "already handled"; exit 0 ;;      # duplicate: act at most once
    *) echo "not answered (exit $rc)"; exit "$rc" ;;
  esac
  STATE=$("$MA2H" open-state --in "$WORK/get.json")   # exit 7 if the state was tampered with
  # a second scheduled run must not act again
  "$MA2H" get "$ID" --once >/dev/null 2>&1 && { echo "dedup failed" >&2; exit 1; } || true
fi
echo "resumed with state $STATE"
