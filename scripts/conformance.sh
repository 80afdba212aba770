#!/usr/bin/env bash
# Run the black-box conformance runner (conformance/) against a fresh local Hub:
# build both binaries (debug), create four agents and an operator in a temporary data directory
# (plus an agent of a second account for the cross-account mailbox checks), bind 127.0.0.1 as the
# first agent's callback host, register its HMAC secret and bearer/apikey token and sign its
# token-scheme pushes and drained directives with Ed25519, start `ma2h-hub serve` on a free port
# with short mailbox and session windows, run `ma2h-conformance` with its own callback receiver,
# stop the Hub, and exit with the runner's status. Extra arguments go to the runner (e.g. --json).
set -euo pipefail

CARGO=${CARGO:-cargo}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
# shellcheck source=lib/hub.sh
. scripts/lib/hub.sh

BINS=$(CARGO=$CARGO hub_debug_bins)
HUB="$BINS/ma2h-hub"
RUNNER="$BINS/ma2h-conformance"

hub_scratch
DATA=$HUB_SCRATCH

export MA2H_MODE=dev MA2H_DATA_DIR="$DATA" MA2H_LOG=warn
ACCOUNT=conformance

AGENT_KEY=$("$HUB" admin create-agent --account $ACCOUNT --agent conf-bot --label conformance --json | hub_field api_key)
OTHER_KEY=$("$HUB" admin create-agent --account $ACCOUNT --agent conf-other --label conformance --json | hub_field api_key)
LIMITED_KEY=$("$HUB" admin create-agent --account $ACCOUNT --agent conf-limited --label conformance --json | hub_field api_key)
# §16.4/§16.4.1: the agent the kill-switch and hard-stop checks stop and resume
STOP_KEY=$("$HUB" admin create-agent --account $ACCOUNT --agent conf-stop --label conformance --json | hub_field api_key)
OP_KEY=$("$HUB" admin create-operator --account $ACCOUNT --human conf-alice --json | hub_field api_key)
# §8.7/§13.2/§15.3: an agent of another account, for the cross-account mailbox and presence checks
FOREIGN_KEY=$("$HUB" admin create-agent --account $ACCOUNT-elsewhere --agent conf-elsewhere --label conformance --json |
    hub_field api_key)
"$HUB" admin bind-callback --account $ACCOUNT --agent conf-bot --host 127.0.0.1 >/dev/null
CALLBACK_SECRET="whsec-conformance-$RANDOM$RANDOM"
printf '%s' "$CALLBACK_SECRET" |
    "$HUB" admin put-secret --account $ACCOUNT --agent conf-bot --name conformance-hmac --value-stdin >/dev/null
# bearer/apikey pushes: a token by reference, signed with the Hub's published Ed25519 key (as are
# conf-bot's drained directives, §9.7)
TOKEN="tok-conformance-$RANDOM$RANDOM"
printf '%s' "$TOKEN" |
    "$HUB" admin put-secret --account $ACCOUNT --agent conf-bot --name conformance-token --value-stdin >/dev/null
"$HUB" admin set-signing --account $ACCOUNT --agent conf-bot --alg ed25519 >/dev/null
# §8.0 the inter-agent leg is account-opt-in; conf-other (its sender) gets Ed25519-signed receipts
"$HUB" admin inter-agent --account $ACCOUNT --enable >/dev/null
"$HUB" admin set-signing --account $ACCOUNT --agent conf-other --alg ed25519 >/dev/null

# §8.6: a per-agent limit the checks' own agents stay well under (~150 submissions a run);
# conf-limited is driven past it.
RPM=${MA2H_CONFORMANCE_RPM:-400}

# A free port, the Hub prints "ma2h hub listening on http://ADDR" on stdout.
# §8.7/§15.2: mailbox windows short enough for the runner to wait out (it skips those checks above
# 10 s): a drained, unacked directive is redelivered after 2 s and an idle agent reads offline after
# 4 s — which must exceed the long-poll maximum by more than its sixth, so long-polls cap at 2 s.
# §16: leases as short as 2 s (the lapse checks register 3 s ones), and terminal sessions purged
# 5 s after they end by a sweeper running every 500 ms, so the §16.4.1 stop is seen to outlive
# the purge; long leases are still allowed (the other session checks ask for 600 s).
HUB_OUT="$DATA/hub.out"
MA2H_BIND=127.0.0.1:0 MA2H_DEV_EGRESS_ALLOW=127.0.0.0/8 MA2H_PUSH_BACKOFF_MS=100 \
    MA2H_REQUESTS_PER_MINUTE=$RPM MA2H_INBOX_DEPTH=0 \
    MA2H_VISIBILITY_TIMEOUT_SECONDS=2 MA2H_PRESENCE_FRESHNESS_SECONDS=4 MA2H_LONG_POLL_MAX_SECONDS=2 \
    MA2H_SESSION_MIN_TTL_SECONDS=2 MA2H_SESSION_MAX_TTL_SECONDS=3600 MA2H_SESSION_RETENTION_SECONDS=5 \
    MA2H_SWEEP_INTERVAL_MS=500 MA2H_STREAM_MAX_HOLD_SECONDS=2 \
    "$HUB" serve >"$HUB_OUT" 2>"$DATA/hub.err" &
HUB_PID=$!
ADDR=$(hub_address "$HUB_PID" "$HUB_OUT" "$DATA/hub.err" conformance)

status=0
MA2H_CONFORMANCE_URL="http://$ADDR" \
    MA2H_CONFORMANCE_AGENT_KEY="$AGENT_KEY" MA2H_CONFORMANCE_AGENT_ID=conf-bot \
    MA2H_CONFORMANCE_OTHER_AGENT_KEY="$OTHER_KEY" MA2H_CONFORMANCE_OTHER_AGENT_ID=conf-other \
    MA2H_CONFORMANCE_OPERATOR_KEY="$OP_KEY" MA2H_CONFORMANCE_OPERATOR_ACTOR=human:conf-alice \
    MA2H_CONFORMANCE_CALLBACK_HOST=127.0.0.1 MA2H_CONFORMANCE_CALLBACK_LISTEN=127.0.0.1:0 \
    MA2H_CONFORMANCE_CALLBACK_SECRET="$CALLBACK_SECRET" \
    MA2H_CONFORMANCE_TOKEN="$TOKEN" \
    MA2H_CONFORMANCE_LIMITED_AGENT_KEY="$LIMITED_KEY" MA2H_CONFORMANCE_LIMITED_AGENT_ID=conf-limited \
    MA2H_CONFORMANCE_FOREIGN_AGENT_KEY="$FOREIGN_KEY" MA2H_CONFORMANCE_FOREIGN_AGENT_ID=conf-elsewhere \
    MA2H_CONFORMANCE_STOP_AGENT_KEY="$STOP_KEY" MA2H_CONFORMANCE_STOP_AGENT_ID=conf-stop \
    "$RUNNER" "$@" || status=$?
if [ "$status" -ne 0 ]; then
    echo "conformance: runner exited $status; the hub's log (warnings and errors) follows" >&2
    tail -n 50 "$DATA/hub.err" >&2 || true
fi
exit $status
