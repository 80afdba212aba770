#!/usr/bin/env bash
# Browser test of the web inbox: build the Hub (debug), create an operator and an agent in a temp
# data dir, start `ma2h-hub serve` on a free port, submit asks with curl, drive headless Chromium
# (playwright-core) against it, stop the Hub. Screenshots land in ui-tests/artifacts/ (ignored).
# Needs /usr/bin/chromium (Debian `chromium`) and node/npm. UI_TESTS=test/sso.test.mjs runs one file.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
# shellcheck source=lib/hub.sh
. scripts/lib/hub.sh

CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$CHROMIUM" ]; then
  echo "ui-test: $CHROMIUM not found; install it with: apt-get install -y chromium" >&2
  exit 1
fi

BIN="$(hub_debug_bins)/ma2h-hub"

if [ ! -d ui-tests/node_modules/playwright-core ]; then
  (cd ui-tests && npm ci --no-audit --no-fund)
fi

hub_scratch
TMP=$HUB_SCRATCH

# fast push retries, so the failed-push fixture below settles within seconds
export MA2H_MODE=dev MA2H_DATA_DIR="$TMP/data" MA2H_BIND=127.0.0.1:0 MA2H_PUBLIC_URL=http://127.0.0.1 \
  MA2H_PUSH_BACKOFF_MS=100 MA2H_PUSH_BACKOFF_MAX_MS=200 MA2H_PUSH_MAX_ATTEMPTS=5
mkdir -p "$MA2H_DATA_DIR"
OPERATOR_KEY=$("$BIN" admin create-operator --account ui --human tester --json | hub_field api_key)
AGENT_KEY=$("$BIN" admin create-agent --account ui --agent uibot --json | hub_field api_key)
"$BIN" admin bind-callback --account ui --agent uibot --host 127.0.0.1 >/dev/null
# a channel, so the Channels page offers routes (the ladder test adds one and removes it)
MA2H_WEBHOOK_SECRET=ui-test-secret "$BIN" admin channels add-webhook --account ui --id pager \
  --url https://events.example.com/ma2h >/dev/null
# issue 41: Web Push to the operator's devices, for asks tagged ui-push only
"$BIN" admin channels add-webpush --account ui --id phones --recipient tester >/dev/null
"$BIN" admin channels add-route --account ui --id push --tag ui-push --to phones >/dev/null
# issue 41: asks tagged ui-passkey are answered only with a passkey (the passkeys test)
"$BIN" admin approvals add --account ui --id keyed --approvals 1 --passkey --tag ui-passkey >/dev/null

# the push service stand-in (scripts/webpush_standin.py: checks VAPID, decrypts RFC 8291); it
# needs `cryptography`, which the project's .venv has (moto depends on it)
PY=python3
if [ -x .venv/bin/python ]; then PY=.venv/bin/python; fi
"$PY" scripts/webpush_standin.py serve 2>"$TMP/push.err" >"$TMP/push.out" &
PUSH_PID=$!
trap 'kill "$PUSH_PID" 2>/dev/null || true; hub_cleanup' EXIT
for _ in $(seq 50); do grep -q listening "$TMP/push.err" 2>/dev/null && break; sleep 0.1; done
PUSH_URL=$(sed -n 's/^listening on //p' "$TMP/push.err")
[ -n "$PUSH_URL" ] || { echo "ui-test: the push stand-in did not start:" >&2; cat "$TMP/push.err" >&2; exit 1; }

# issue 42: single sign-on through the tests' OpenID Connect provider (ma2h-test-idp: anyone who
# types an email is signed in as it); verified @ui.test emails are operators of account ui
"$(dirname "$BIN")/ma2h-test-idp" >"$TMP/idp.out" 2>"$TMP/idp.err" &
IDP_PID=$!
trap 'kill "$PUSH_PID" "$IDP_PID" 2>/dev/null || true; hub_cleanup' EXIT
for _ in $(seq 50); do [ -s "$TMP/idp.out" ] && break; sleep 0.1; done
IDP_URL=$(head -1 "$TMP/idp.out")
[ -n "$IDP_URL" ] || { echo "ui-test: the identity provider stand-in did not start:" >&2; cat "$TMP/idp.err" >&2; exit 1; }
printf '%s\n' test-client-secret >"$TMP/idp-secret"
"$BIN" admin sso set --account ui --issuer "$IDP_URL" --client-id ma2h-hub-test \
  --client-secret-file "$TMP/idp-secret" --email-domains ui.test --provider-logout true >/dev/null

"$BIN" serve >"$TMP/hub.out" 2>"$TMP/hub.err" &
HUB_PID=$!
HUB_URL="http://$(hub_address "$HUB_PID" "$TMP/hub.out" "$TMP/hub.err" ui-test)"

submit() {
  curl -sS --fail-with-body -X POST "$HUB_URL/v1/messages" -H "Authorization: Bearer $AGENT_KEY" \
    -H 'Content-Type: application/json' -d "$1" | hub_field id
}
AGENT='"agent":{"id":"uibot","run_id":"run-ui","runtime":"cli"},"ma2h_version":"0.5","created_at":"2026-01-01T00:00:00Z"'
SELECT_ID=$(submit '{'"$AGENT"',"type":"ask","title":"Pick a release channel","priority":"high","idempotency_key":"ui-select",
  "body":"Which channel should **build 7** go to?",
  "request":{"mode":"select","allowed_resolvers":["human:tester"],"options":[
    {"value":"stable","label":"Stable","description":"Ship to everyone at once."},
    {"value":"beta","label":"Beta","description":"Ship to the beta ring first."}]}}')
INPUT_ID=$(submit '{'"$AGENT"',"type":"ask","title":"How many replicas?","idempotency_key":"ui-input",
  "request":{"mode":"input","allowed_resolvers":["human:tester"],"schema":{"type":"object","required":["replicas"],
    "properties":{"replicas":{"type":"integer","minimum":1,"title":"Replicas","description":"Pods to run"}}}}}')
XSS_ID=$(submit '{'"$AGENT"',"type":"ask","title":"Hostile body","idempotency_key":"ui-xss",
  "body":"<script>alert(1)</script>\n\n<img src=x onerror=alert(2)>\n\n[click me](javascript:alert(3)) and [docs](https://example.com/docs)",
  "request":{"mode":"confirm","allowed_resolvers":["human:tester"]}}')

LONG_URL="https://artifacts.example.com/builds/412/$(printf 'very-long-path-segment-%.0s' $(seq 1 12))report.html"
URGENT_ID=$(submit '{'"$AGENT"',"type":"ask","title":"Roll back the payments deploy?","priority":"urgent","idempotency_key":"ui-urgent",
  "expires_at":"'"$(date -u -d '+20 minutes' +%Y-%m-%dT%H:%M:%SZ)"'",
  "body":"Error rate is **4%** since build 412. Roll back now?",
  "context":[{"kind":"file","file":{"uri":"'"$LONG_URL"'","name":"'"$LONG_URL"'"}}],
  "request":{"mode":"select","allowed_resolvers":["human:tester"],"default_on_expire":"keep","options":[
    {"value":"rollback","label":"Roll back"},{"value":"keep","label":"Keep build 412"},{"value":"page","label":"Page the owner"}]}}')
PROPOSED_ID=$(submit '{'"$AGENT"',"type":"ask","title":"Scale the web tier?","idempotency_key":"ui-proposed",
  "request":{"mode":"input","allowed_resolvers":["human:tester"],
    "permissions":{"allow_accept":true,"allow_edit":true,"allow_respond":true,"allow_ignore":true},
    "schema":{"type":"object","required":["replicas"],"properties":{
      "replicas":{"type":"integer","minimum":1,"default":6,"title":"Replicas"},
      "region":{"enum":["eu","us"],"default":"eu","title":"Region"}}}}}')
NOT_MINE_ID=$(submit '{'"$AGENT"',"type":"ask","title":"Approve the budget?","idempotency_key":"ui-not-mine",
  "request":{"mode":"confirm","allowed_resolvers":["human:someone-else"]}}')
submit '{'"$AGENT"',"type":"notify","title":"Nightly build is green","body":"All 412 tests passed."}' >/dev/null
# an answered ask whose push fails (nothing listens on port 9): history shows why
PUSHFAIL_ID=$(submit '{'"$AGENT"',"type":"ask","title":"Push me the answer","idempotency_key":"ui-pushfail",
  "request":{"mode":"confirm","allowed_resolvers":["human:tester"],"callback":{"mode":"push","url":"http://127.0.0.1:9/cb"}}}')
curl -sS --fail-with-body -X POST "$HUB_URL/v1/messages/$PUSHFAIL_ID/resolve" -H "Authorization: Bearer $OPERATOR_KEY" \
  -H 'Content-Type: application/json' -d '{"resolution":"answered","value":"approve"}' >/dev/null

export HUB_URL AGENT_KEY OPERATOR_KEY SELECT_ID INPUT_ID XSS_ID CHROMIUM
export URGENT_ID PROPOSED_ID NOT_MINE_ID PUSHFAIL_ID PUSH_URL IDP_URL
export SCREENSHOT_DIR="$ROOT/ui-tests/artifacts"
cd ui-tests
if ! node --test --test-concurrency=1 ${UI_TESTS:-test/}; then
  echo "ui-test: failed; the Hub's warnings and errors, and the push stand-in's, follow" >&2
  grep -E 'WARN|ERROR' "$TMP/hub.err" | tail -40 >&2 || true
  tail -20 "$TMP/push.err" >&2 || true
  exit 1
fi
