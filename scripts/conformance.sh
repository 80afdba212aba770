#!/usr/bin/env bash
# Run the black-box conformance runner (conformance/) against a fresh Hub — by default the local
# binary on a temporary SQLite data directory; with MA2H_CONFORMANCE_STACK=aws-local, the Lambda
# functions as Lambda processes behind `ma2h-aws-local` (the template's routes, payload 2.0, SQS →
# deliver, the schedule → sweep) over DynamoDB, SQS and Secrets Manager on moto (started here
# unless AWS_ENDPOINT_URL names an endpoint already, and stopped again).
# Both: build the debug binaries, create four agents and an operator (plus an agent of a second
# account for the cross-account mailbox checks), bind 127.0.0.1 as the first agent's callback
# host, register its HMAC secret and bearer/apikey token and sign its token-scheme pushes and
# drained directives with Ed25519, start the Hub with short mailbox and session windows, run
# `ma2h-conformance` with its own callback receiver, stop the Hub, and exit with the runner's
# status. Extra arguments go to the runner (e.g. --json).
set -euo pipefail

CARGO=${CARGO:-cargo}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
# shellcheck source=lib/hub.sh
. scripts/lib/hub.sh

BINS=$(CARGO=$CARGO hub_debug_bins)
HUB="$BINS/ma2h-hub"
RUNNER="$BINS/ma2h-conformance"
STACK=${MA2H_CONFORMANCE_STACK:-local}

hub_scratch
DATA=$HUB_SCRATCH
HUB_OUT="$DATA/hub.out"
ACCOUNT=conformance

# The Hub's environment. §8.6: a per-agent limit the checks' own agents stay well under (~150
# submissions a run); conf-limited is driven past it. §8.7/§15.2: mailbox windows short enough
# for the runner to wait out (it skips those checks above 10 s): a drained, unacked directive is
# redelivered after 2 s and an idle agent reads offline after 4 s — which must exceed the
# long-poll maximum by more than its sixth, so long-polls cap at 2 s. §16: leases as short as 2 s
# (the lapse checks register 3 s ones), and terminal sessions purged 5 s after they end by a
# sweeper running every 500 ms, so the §16.4.1 stop is seen to outlive the purge; long leases are
# still allowed (the other session checks ask for 600 s).
# The Lambda stack on moto (one request at a time) is slower: its limit is lower, so the §8.6
# flood (twice the limit) still crosses it within one minute boundary.
case "$STACK" in aws-local) RPM=${MA2H_CONFORMANCE_RPM:-200} ;; *) RPM=${MA2H_CONFORMANCE_RPM:-400} ;; esac
export MA2H_MODE=dev MA2H_LOG=warn MA2H_DEV_EGRESS_ALLOW=127.0.0.0/8 MA2H_PUSH_BACKOFF_MS=100 \
    MA2H_REQUESTS_PER_MINUTE="$RPM" MA2H_INBOX_DEPTH=0 \
    MA2H_VISIBILITY_TIMEOUT_SECONDS=2 MA2H_PRESENCE_FRESHNESS_SECONDS=4 MA2H_LONG_POLL_MAX_SECONDS=2 \
    MA2H_SESSION_MIN_TTL_SECONDS=2 MA2H_SESSION_MAX_TTL_SECONDS=3600 MA2H_SESSION_RETENTION_SECONDS=5 \
    MA2H_SWEEP_INTERVAL_MS=500 MA2H_STREAM_MAX_HOLD_SECONDS=2

case "$STACK" in
local)
    export MA2H_DATA_DIR="$DATA"
    ADMIN=("$HUB" admin)
    ;;
aws-local)
    # moto unless the caller names its own endpoint (LocalStack: the same contract)
    if [ -z "${AWS_ENDPOINT_URL:-}" ]; then
        bash scripts/moto.sh start
        MOTO_STARTED=1
        export AWS_ENDPOINT_URL=http://127.0.0.1:4566 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test
    fi
    export AWS_REGION=${AWS_REGION:-us-east-1}
    bash scripts/venv.sh aws-local
    # this run's own table, queues and key secret; the admin commands use the same two
    RUN="conf-$RANDOM$RANDOM"
    export MA2H_TABLE=$RUN MA2H_HUB_SECRET="ma2h/$RUN"
    # a sweep every 500 ms reads each family's every shard: a few keep that within moto's means
    export MA2H_DYNAMODB_SHARDS=${MA2H_DYNAMODB_SHARDS:-4} MA2H_DYNAMODB_LIST_SHARDS=${MA2H_DYNAMODB_LIST_SHARDS:-4}
    "$BINS/ma2h-aws-local" --listen 127.0.0.1:0 --bin-dir "$BINS" --table "$RUN" \
        --parameter "HubSecretName=$MA2H_HUB_SECRET" --parameter "HubPublicKeysSecretName=$MA2H_HUB_SECRET-public" \
        --schedule-every-ms 500 --log-dir "$DATA/logs" \
        >"$HUB_OUT" 2>"$DATA/hub.err" &
    HUB_PID=$!
    ADDR=$(hub_address "$HUB_PID" "$HUB_OUT" "$DATA/hub.err" conformance 120)
    ADMIN=("$BINS/ma2h-admin-aws")
    ;;
*)
    echo "conformance: MA2H_CONFORMANCE_STACK must be local or aws-local, got $STACK" >&2
    exit 2
    ;;
esac

AGENT_KEY=$("${ADMIN[@]}" create-agent --account $ACCOUNT --agent conf-bot --label conformance --json | hub_field api_key)
OTHER_KEY=$("${ADMIN[@]}" create-agent --account $ACCOUNT --agent conf-other --label conformance --json | hub_field api_key)
LIMITED_KEY=$("${ADMIN[@]}" create-agent --account $ACCOUNT --agent conf-limited --label conformance --json | hub_field api_key)
# §16.4/§16.4.1: the agent the kill-switch and hard-stop checks stop and resume
STOP_KEY=$("${ADMIN[@]}" create-agent --account $ACCOUNT --agent conf-stop --label conformance --json | hub_field api_key)
OP_KEY=$("${ADMIN[@]}" create-operator --account $ACCOUNT --human conf-alice --json | hub_field api_key)
# issue 40: a second person (a delegate, the second approval of a quorum)
OP2_KEY=$("${ADMIN[@]}" create-operator --account $ACCOUNT --human conf-bob --json | hub_field api_key)
# scripts/smoke.sh, the deployed-stack check, runs after the runner with an agent of its own
SMOKE_KEY=$("${ADMIN[@]}" create-agent --account $ACCOUNT --agent conf-smoke --label smoke --json | hub_field api_key)
# §8.7/§13.2/§15.3: an agent of another account, for the cross-account mailbox and presence checks
FOREIGN_KEY=$("${ADMIN[@]}" create-agent --account $ACCOUNT-elsewhere --agent conf-elsewhere --label conformance --json |
    hub_field api_key)
"${ADMIN[@]}" bind-callback --account $ACCOUNT --agent conf-bot --host 127.0.0.1 >/dev/null
CALLBACK_SECRET="whsec-conformance-$RANDOM$RANDOM"
printf '%s' "$CALLBACK_SECRET" |
    "${ADMIN[@]}" put-secret --account $ACCOUNT --agent conf-bot --name conformance-hmac --value-stdin >/dev/null
# bearer/apikey pushes: a token by reference, signed with the Hub's published Ed25519 key (as are
# conf-bot's drained directives, §9.7)
TOKEN="tok-conformance-$RANDOM$RANDOM"
printf '%s' "$TOKEN" |
    "${ADMIN[@]}" put-secret --account $ACCOUNT --agent conf-bot --name conformance-token --value-stdin >/dev/null
"${ADMIN[@]}" set-signing --account $ACCOUNT --agent conf-bot --alg ed25519 >/dev/null
# §8.0 the inter-agent leg is account-opt-in; conf-other (its sender) gets Ed25519-signed receipts
"${ADMIN[@]}" inter-agent --account $ACCOUNT --enable >/dev/null
"${ADMIN[@]}" set-signing --account $ACCOUNT --agent conf-other --alg ed25519 >/dev/null

if [ "$STACK" = local ]; then
    MA2H_BIND=127.0.0.1:0 "$HUB" serve >"$HUB_OUT" 2>"$DATA/hub.err" &
    HUB_PID=$!
    ADDR=$(hub_address "$HUB_PID" "$HUB_OUT" "$DATA/hub.err" conformance)
fi

status=0
MA2H_CONFORMANCE_URL="http://$ADDR" \
    MA2H_CONFORMANCE_AGENT_KEY="$AGENT_KEY" MA2H_CONFORMANCE_AGENT_ID=conf-bot \
    MA2H_CONFORMANCE_OTHER_AGENT_KEY="$OTHER_KEY" MA2H_CONFORMANCE_OTHER_AGENT_ID=conf-other \
    MA2H_CONFORMANCE_OPERATOR_KEY="$OP_KEY" MA2H_CONFORMANCE_OPERATOR_ACTOR=human:conf-alice \
    MA2H_CONFORMANCE_SECOND_OPERATOR_KEY="$OP2_KEY" MA2H_CONFORMANCE_SECOND_OPERATOR_ACTOR=human:conf-bob \
    MA2H_CONFORMANCE_CALLBACK_HOST=127.0.0.1 MA2H_CONFORMANCE_CALLBACK_LISTEN=127.0.0.1:0 \
    MA2H_CONFORMANCE_CALLBACK_SECRET="$CALLBACK_SECRET" \
    MA2H_CONFORMANCE_TOKEN="$TOKEN" \
    MA2H_CONFORMANCE_LIMITED_AGENT_KEY="$LIMITED_KEY" MA2H_CONFORMANCE_LIMITED_AGENT_ID=conf-limited \
    MA2H_CONFORMANCE_FOREIGN_AGENT_KEY="$FOREIGN_KEY" MA2H_CONFORMANCE_FOREIGN_AGENT_ID=conf-elsewhere \
    MA2H_CONFORMANCE_STOP_AGENT_KEY="$STOP_KEY" MA2H_CONFORMANCE_STOP_AGENT_ID=conf-stop \
    "$RUNNER" "$@" || status=$?
if [ "$status" -eq 0 ]; then
    MA2H_SMOKE_AGENT_KEY="$SMOKE_KEY" MA2H_SMOKE_AGENT_ID=conf-smoke \
        MA2H_SMOKE_OPERATOR_KEY="$OP_KEY" MA2H_SMOKE_OPERATOR=conf-alice \
        bash scripts/smoke.sh "http://$ADDR" || status=$?
fi
if [ "$status" -ne 0 ]; then
    echo "conformance ($STACK): runner exited $status; the hub's log (warnings and errors) follows" >&2
    tail -n 50 "$DATA/hub.err" >&2 || true
    for log in "$DATA"/logs/*.log; do
        [ -f "$log" ] || continue
        grep -h '"level":"\(ERROR\|WARN\)"' "$log" | tail -n 5 | sed "s#^#$(basename "$log"): #" >&2 || true
    done
fi
if [ -n "${MOTO_STARTED:-}" ]; then
    hub_cleanup
    HUB_PID=""
    bash scripts/moto.sh stop
fi
exit $status
