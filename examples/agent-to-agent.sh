#!/usr/bin/env bash
# Two agents talk through the Hub (spec v0.5 inter-agent leg), against a local Hub started with
# `make run`:
#
#   operator: opts the `dev` account in (the leg is off by default) and lets only dev-agent
#             address dev-worker (a sender allowlist)
#   worker:   registers a session and waits on its inbox
#   asker:    registers a session, asks dev-worker#<session> "Restart the queue consumer?"
#             — the ack says how reachable the worker is
#   worker:   drains a signed `message` entry (verified, sender policy checked), answers it as
#             its session, acks it
#   asker:    drains the signed `response` entry, reads the whole track with `ma2h get`
#
# Usage (from the repository root, with `make run` in another terminal):
#   examples/agent-to-agent.sh
# It creates the second agent (dev-worker) once, with the admin CLI, into data/dev-worker.env.
set -euo pipefail
cd "$(dirname "$0")/.."

DATA_DIR=${DATA_DIR:-data}
DEV_ENV=${DEV_ENV:-$DATA_DIR/dev.env}
WORKER_ENV=$DATA_DIR/dev-worker.env
[ -f "$DEV_ENV" ] || { echo "no $DEV_ENV: start the Hub with 'make run' first" >&2; exit 2; }
# shellcheck disable=SC1090
. "$DEV_ENV"                    # MA2H_HUB_URL, MA2H_AGENT_ID, MA2H_API_KEY, MA2H_SIGNING_SECRET, MA2H_OPERATOR_KEY
# The binaries `make run` built (it honours CARGO_TARGET_DIR, so does this); never a rebuild
# here — a lone `-p ma2h-cli` build would compile another feature set for minutes.
MA2H=${MA2H:-${CARGO_TARGET_DIR:-target}/release/ma2h}
HUB_BIN=${HUB_BIN:-${CARGO_TARGET_DIR:-target}/release/ma2h-hub}
for bin in "$MA2H" "$HUB_BIN"; do
  if [ ! -x "$bin" ]; then
    echo "no $bin: 'make run' builds it (or: cargo build --release -p ma2h-hub -p ma2h-cli)" >&2
    exit 2
  fi
done
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
t() { timeout 60 "$@"; }

if [ ! -f "$WORKER_ENV" ]; then
  echo "== admin: create the second agent, dev-worker"
  OUT=$(MA2H_MODE=dev MA2H_DATA_DIR=$DATA_DIR "$HUB_BIN" admin create-agent --account dev --agent dev-worker --json)
  field() { python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
  umask 077
  printf 'export WORKER_API_KEY=%s\nexport WORKER_SIGNING_SECRET=%s\n' \
    "$(field api_key <<<"$OUT")" "$(field signing_secret <<<"$OUT")" >"$WORKER_ENV"
fi
# shellcheck disable=SC1090
. "$WORKER_ENV"
asker() { MA2H_STATE_DIR="$WORK/asker" t "$MA2H" "$@"; }
worker() {
  MA2H_AGENT_ID=dev-worker MA2H_API_KEY=$WORKER_API_KEY MA2H_SIGNING_SECRET=$WORKER_SIGNING_SECRET \
    MA2H_STATE_DIR="$WORK/worker" t "$MA2H" "$@"
}

echo "== operator: opt the account in; only dev-agent may address dev-worker"
curl -fsS -X PATCH "$MA2H_HUB_URL/v1/operator/inter-agent" \
  -H "Authorization: Bearer $MA2H_OPERATOR_KEY" -H 'Content-Type: application/json' \
  -d '{"enabled": true, "allowlists": {"dev-worker": ["dev-agent"]}}'
echo

echo "== both agents register a session"
WS=$(worker session start --label "worker" --ttl 600)
AS=$(asker session start --label "asker" --ttl 600)
echo "worker session $WS, asker session $AS"

echo "== asker: ask dev-worker#$WS (only the addressee may answer, §9.1)"
ID=$(asker ask "Restart the queue consumer?" --option yes --option no --expires-in 10m \
  --to "agent:dev-worker#$WS" --session "$AS")
echo "asked $ID"
asker get "$ID" || true          # open (13): mailbox=queued

echo "== worker: drain (verified §9.8; accepts asks from dev-agent only), answer, ack"
worker inbox --session "$WS" --accept-from dev-agent --wait 5
worker resolve "$ID" --answer yes --comment "Restarted; lag back to 0." --session "$WS"
worker ack "$ID" --session "$WS"

echo "== asker: the answer arrives as a signed response entry; the whole track by pull"
asker inbox --session "$AS" --wait 5 --ack
asker get "$ID"

echo "== a notify the worker never reads, and the worker's session ending: honest bounce"
N=$(asker send --to "agent:dev-worker#$WS" "Consumer lag alert cleared" --session "$AS")
worker session close "$WS" >/dev/null
asker get "$N" || true           # bounced (12): mailbox=bounced prior=queued
asker inbox --session "$AS" --ack || true   # the bounce receipt
asker session close "$AS" >/dev/null
echo "done"
