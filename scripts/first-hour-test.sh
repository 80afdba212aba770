#!/usr/bin/env bash
# The README's first hour, run as a newcomer would, against a dev Hub started the way `make run`
# starts it (dev mode, no extra settings) on a free port and a temp data dir:
#   - the start-up banner names the inbox URL, the operator key and the next command;
#   - the README's curl session (extracted from README.md, not copied) runs twice in a row, and
#     its long-poll returns the answer;
#   - examples/round-trip.sh works, by pull and by push (dev mode reaches loopback out of the box);
#   - Ctrl-C (SIGINT) stops the Hub at once even with a long-poll parked.
# Uses the debug binaries `cargo test --workspace` built (CARGO builds them if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
# shellcheck source=lib/hub.sh
. scripts/lib/hub.sh

BINS=$(hub_debug_bins)
HUB_BIN="$BINS/ma2h-hub"
MA2H_BIN="$BINS/ma2h"

hub_scratch
TMP=$HUB_SCRATCH
fail() { echo "first-hour: FAIL: $*" >&2; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

PORT=$(free_port)
start_hub() {
  MA2H_MODE=dev MA2H_BIND=127.0.0.1:$PORT MA2H_PUBLIC_URL=http://127.0.0.1:$PORT MA2H_DATA_DIR="$TMP/data" \
    "$HUB_BIN" serve >"$TMP/hub.out" 2>"$TMP/hub.err" &
  HUB_PID=$!
  hub_address "$HUB_PID" "$TMP/hub.out" "$TMP/hub.err" first-hour >/dev/null
  sleep 0.2 # the banner follows the listening line
}
start_hub
grep -q "inbox     http://127.0.0.1:$PORT/inbox" "$TMP/hub.out" || fail "no inbox URL in the banner: $(cat "$TMP/hub.out")"
grep -q "key ma2h_" "$TMP/hub.out" || fail "no operator key in the banner: $(cat "$TMP/hub.out")"
grep -q 'ma2h ask' "$TMP/hub.out" || fail "no next command in the banner"
echo "first-hour: ok   the banner names the inbox, the operator key and the next command"

# The README's curl session, verbatim: the first ```sh block after its heading.
python3 - "$ROOT/README.md" >"$TMP/session.sh" <<'PY'
import sys
text = open(sys.argv[1], encoding="utf-8").read()
start = text.index("## A first session with curl")
block = text.index("```sh\n", start) + len("```sh\n")
print(text[block:text.index("```", block)])
PY
mkdir -p "$TMP/cwd" && ln -s "$TMP/data" "$TMP/cwd/data"
for run in 1 2; do
  (cd "$TMP/cwd" && bash -e "$TMP/session.sh") >"$TMP/session-$run.out" 2>&1 || fail "curl session run $run: $(cat "$TMP/session-$run.out")"
  grep -q '"status":"answered"' "$TMP/session-$run.out" || fail "run $run: the resolve did not answer: $(cat "$TMP/session-$run.out")"
  grep -q 'already_terminal' "$TMP/session-$run.out" && fail "run $run: a resolve hit an answered ask: $(cat "$TMP/session-$run.out")"
  # the long-poll's body (printed after the resolve) carries the answer
  grep -q '"resolution":"answered".*"value":"ship"' "$TMP/session-$run.out" || fail "run $run: the long-poll did not return the answer"
done
echo "first-hour: ok   the README's curl session runs twice, its long-poll returns the answer"

export DEV_ENV="$TMP/data/dev.env" MA2H="$MA2H_BIN" TIMEOUT=20
examples/round-trip.sh >"$TMP/pull.out" 2>&1 || fail "round-trip (pull): $(cat "$TMP/pull.out")"
grep -q 'resumed with state {"build":412' "$TMP/pull.out" || fail "round-trip (pull): $(cat "$TMP/pull.out")"
PUSH=1 PORT=$(free_port) examples/round-trip.sh >"$TMP/push.out" 2>&1 || fail "round-trip (push): $(cat "$TMP/push.out")"
grep -q 'resumed with state {"build":412' "$TMP/push.out" || fail "round-trip (push): $(cat "$TMP/push.out")"
echo "first-hour: ok   examples/round-trip.sh resumes by pull and by push, nothing configured"

# Ctrl-C with a long-poll parked: the Hub exits promptly and the poll gets its answer (open).
# shellcheck disable=SC1090
. "$DEV_ENV"
ID=$(MA2H_HUB_URL=http://127.0.0.1:$PORT "$MA2H_BIN" ask "Parked?" --resolver human:dev)
curl -s "http://127.0.0.1:$PORT/v1/messages/$ID?wait=30" -H "Authorization: Bearer $MA2H_API_KEY" >"$TMP/parked.json" &
POLL=$!
sleep 0.5
began=$(date +%s%N)
kill -INT "$HUB_PID"
wait "$HUB_PID" || true
HUB_PID=""
took_ms=$(( ($(date +%s%N) - began) / 1000000 ))
wait "$POLL" || true
[ "$took_ms" -lt 3000 ] || fail "Ctrl-C took ${took_ms} ms with a long-poll parked"
grep -q '"status":"open"' "$TMP/parked.json" || fail "the parked long-poll was not answered: $(cat "$TMP/parked.json")"
echo "first-hour: ok   Ctrl-C stops the Hub in ${took_ms} ms with a long-poll parked"
