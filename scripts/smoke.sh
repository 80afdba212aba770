#!/usr/bin/env bash
# A smoke test of a running Hub (a SAM deployment's ApiUrl, your custom domain, or a local Hub):
# discovery, a notify, an ask answered by an operator, an ask cancelled by its agent, and a
# refused unauthenticated submit — one `ok - …` / `not ok - …` line per check, exit 1 if any
# failed. Needs only curl and python3.
#
#   MA2H_SMOKE_AGENT_ID=smoke-bot MA2H_SMOKE_AGENT_KEY=ma2h_ak_… \
#   MA2H_SMOKE_OPERATOR=alice MA2H_SMOKE_OPERATOR_KEY=ma2h_op_… \
#     scripts/smoke.sh https://hub.example.com
#
# The agent key must belong to MA2H_SMOKE_AGENT_ID, and the operator key (attested as
# `human:$MA2H_SMOKE_OPERATOR`) to the same account. It leaves two answered/cancelled asks and a
# low-priority notify in that account's history (they go wherever the account's routes send them).
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 BASE_URL   (env: MA2H_SMOKE_AGENT_ID, MA2H_SMOKE_AGENT_KEY, MA2H_SMOKE_OPERATOR, MA2H_SMOKE_OPERATOR_KEY)" >&2
  exit 2
fi
BASE=${1%/}
missing=0
for v in MA2H_SMOKE_AGENT_ID MA2H_SMOKE_AGENT_KEY MA2H_SMOKE_OPERATOR MA2H_SMOKE_OPERATOR_KEY; do
  if [ -z "${!v:-}" ]; then
    echo "$0: $v is not set" >&2
    missing=1
  fi
done
[ "$missing" = 0 ] || exit 2
export MA2H_SMOKE_AGENT_ID MA2H_SMOKE_OPERATOR

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
BODY=$TMP/body
STATUS=000
FAILED=0
RUN="smoke-$(date -u +%Y%m%dT%H%M%SZ)-$$"
export RUN

# req METHOD PATH KEY [JSON]: the answer's body in $BODY, its status in $STATUS (000: no answer).
req() {
  local method=$1 path=$2 key=$3 data=${4:-}
  local args=(-sS -o "$BODY" -w '%{http_code}' --max-time 40 -X "$method" "$BASE$path")
  [ -z "$key" ] || args+=(-H "Authorization: Bearer $key")
  [ -z "$data" ] || args+=(-H 'Content-Type: application/json' --data-binary "$data")
  STATUS=$(curl "${args[@]}" 2>"$TMP/curl.err") || STATUS=000
  if [ "$STATUS" = 000 ]; then
    printf '%s' "$(head -c 300 "$TMP/curl.err")" >"$BODY"
  fi
}

# py EXPR: evaluate EXPR with `j` = the answer's JSON (None if it is not JSON) and `env`; print
# it (strings bare, anything else as JSON). Exit status 1 when EXPR raises.
py() {
  python3 - "$1" "$BODY" <<'PY'
import json, os, sys
expr, path = sys.argv[1], sys.argv[2]
try:
    j = json.load(open(path, encoding="utf-8"))
except ValueError:
    j = None
try:
    v = eval(expr, {"j": j, "env": os.environ, "json": json})
except Exception as e:  # noqa: BLE001 - any failure is a failed check
    print(f"{type(e).__name__}: {e}")
    sys.exit(1)
print(v if isinstance(v, str) else json.dumps(v))
PY
}

ok() { echo "ok - $1"; }
not_ok() {
  echo "not ok - $1 (HTTP $STATUS: $2)"
  FAILED=$((FAILED + 1))
}
# check NAME WANT_STATUS_REGEX PYTHON_CONDITION REASON: one test line.
check() {
  local name=$1 want=$2 cond=$3 reason=$4
  if ! [[ $STATUS =~ ^($want)$ ]]; then
    not_ok "$name" "expected $want; $(head -c 200 "$BODY" | tr '\n' ' ')"
  elif [ "$(py "bool($cond)" 2>/dev/null)" != true ]; then
    not_ok "$name" "$reason; $(head -c 200 "$BODY" | tr '\n' ' ')"
  else
    ok "$name"
  fi
}

# envelope TYPE: a fresh notify or ask from the smoke agent, as JSON.
envelope() {
  python3 - "$1" <<'PY'
import datetime, json, os, sys, uuid
kind = sys.argv[1]
now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
m = {
    "ma2h_version": "0.5", "type": kind, "created_at": now,
    "agent": {"id": os.environ["MA2H_SMOKE_AGENT_ID"], "run_id": os.environ["RUN"], "runtime": "cli"},
    "priority": "low",
}
if kind == "notify":
    m.update(title="ma2h smoke test", body="A smoke test of this Hub; nothing to do.")
else:
    m.update(
        title="ma2h smoke test: proceed?",
        idempotency_key=f"{os.environ['RUN']}-{uuid.uuid4().hex}",
        request={
            "mode": "select",
            "options": [{"value": "yes", "label": "Yes"}, {"value": "no", "label": "No"}],
            "allowed_resolvers": ["human:" + os.environ["MA2H_SMOKE_OPERATOR"]],
        },
    )
print(json.dumps(m))
PY
}

AGENT=$MA2H_SMOKE_AGENT_KEY
OPERATOR=$MA2H_SMOKE_OPERATOR_KEY
echo "# smoke test of $BASE (agent $MA2H_SMOKE_AGENT_ID, operator human:$MA2H_SMOKE_OPERATOR, run $RUN)"

req GET /healthz ""
check "GET /healthz" 200 'True' ''

req GET /.well-known/ma2h ""
check "GET /.well-known/ma2h has ma2h_version and signing_keys" 200 \
  'j["ma2h_version"] and len(j["signing_keys"]) > 0' "no ma2h_version or no signing_keys"

req POST /v1/messages "$AGENT" "$(envelope notify)"
check "POST /v1/messages: a notify is accepted" '200|202' 'j["id"]' "no id in the ack"

req POST /v1/messages "$AGENT" "$(envelope ask)"
check "POST /v1/messages: an ask is accepted" '200|202' 'j["id"].startswith("msg_")' "no id in the ack"
ASK=$(py 'j["id"]' 2>/dev/null) || ASK=""
[[ $ASK == msg_* ]] || ASK=msg_missing
export ASK

req GET "/v1/messages/$ASK" "$AGENT"
check "GET /v1/messages/{id}: the ask is open" 200 'j["status"] == "open"' "status is not open"

AGENT_Q=$(python3 -c 'import os, urllib.parse; print(urllib.parse.quote(os.environ["MA2H_SMOKE_AGENT_ID"], safe=""))')
req GET "/v1/operator/messages?agent=$AGENT_Q&limit=500" "$OPERATOR"
check "GET /v1/operator/messages: the operator sees the ask" 200 \
  'env["ASK"] in [m["id"] for m in j["messages"]]' "the ask is not in the operator's open list"

req POST "/v1/messages/$ASK/resolve" "$OPERATOR" '{"resolution":"answered","value":"yes","comment":"smoke test"}'
check "POST /v1/messages/{id}/resolve: the operator answers" 200 'j["status"] == "answered"' "status is not answered"

req GET "/v1/messages/$ASK" "$AGENT"
check "GET /v1/messages/{id}: answered, with the operator's Response" 200 \
  'j["status"] == "answered" and j["response"]["resolution"] == "answered" and j["response"]["response"]["value"] == "yes" and j["response"]["response"]["actor"] == "human:" + env["MA2H_SMOKE_OPERATOR"]' \
  "not answered, or no Response with the operator's answer"

req POST /v1/messages "$AGENT" "$(envelope ask)"
SECOND=$(py 'j["id"]' 2>/dev/null) || SECOND=""
if [[ $STATUS =~ ^(200|202)$ && $SECOND == msg_* ]]; then
  req POST "/v1/messages/$SECOND/cancel" "$AGENT"
  check "POST /v1/messages/{id}/cancel: the agent cancels a second ask" 200 \
    'j["status"] == "cancelled" and j["response"]["resolution"] == "cancelled"' "status is not cancelled"
else
  not_ok "POST /v1/messages/{id}/cancel: the agent cancels a second ask" "the second ask was not accepted"
fi

req POST /v1/messages "" "$(envelope notify)"
check "POST /v1/messages without a key: 401 with the error envelope" 401 \
  'j["error"]["code"] == "unauthenticated" and j["error"]["message"]' "no {\"error\": {\"code\": \"unauthenticated\", …}}"

if [ "$FAILED" -gt 0 ]; then
  echo "# $FAILED check(s) failed"
  exit 1
fi
echo "# all checks passed"
