#!/usr/bin/env bash
# The Python SDK (sdk/python, package `ma2h`): ruff and mypy --strict, its unit tests (the dp-* conformance fixtures, JCS,
# sealing, replay, the client against stand-ins), then its end-to-end tests against a dev Hub
# started the way `make run` starts it, on a free port and a temp data dir: notify, ask answered
# by the operator over HTTP, idempotent resubmit, cancel, verified push callbacks to a receiver on
# 127.0.0.1, a signed directive drained and acked, a session's response entry, the operator's
# hard stop, sealed state through the Hub and across the Rust CLI, Ed25519 signing.
# The binaries come from MA2H_BINS when set (a directory holding ma2h-hub and ma2h), else from
# `cargo build` (hub_debug_bins). The venv is .venv-sdk (`scripts/venv.sh sdk`).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/hub.sh
. scripts/lib/hub.sh

bash scripts/venv.sh sdk
PY=.venv-sdk/bin/python

echo "== python sdk: ruff (lint, format) and mypy --strict (sdk/python/pyproject.toml)"
(cd sdk/python && ../../.venv-sdk/bin/ruff check . && ../../.venv-sdk/bin/ruff format --check . && ../../.venv-sdk/bin/mypy)

echo "== python sdk: unit tests"
(cd sdk/python && "../../$PY" -m unittest discover -s tests -t tests)

BINS=${MA2H_BINS:-$(hub_debug_bins)}
hub_scratch
TMP=$HUB_SCRATCH
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# Created first: hub_address reads hub.out at once, and under pipefail a sed that runs before the
# background shell has opened the file would end this script.
: >"$TMP/hub.out"
MA2H_MODE=dev MA2H_BIND=127.0.0.1:$PORT MA2H_PUBLIC_URL=http://127.0.0.1:$PORT MA2H_DATA_DIR="$TMP/data" \
  MA2H_CREDENTIAL_CACHE_MS=0 MA2H_DEV_EGRESS_ALLOW=127.0.0.0/8 \
  "$BINS/ma2h-hub" serve >"$TMP/hub.out" 2>"$TMP/hub.err" &
HUB_PID=$!
hub_address "$HUB_PID" "$TMP/hub.out" "$TMP/hub.err" python-sdk-test >/dev/null
for _ in $(seq 1 50); do [ -f "$TMP/data/dev.env" ] && break; sleep 0.1; done
# shellcheck disable=SC1091
. "$TMP/data/dev.env"
export MA2H_HUB_URL MA2H_AGENT_ID MA2H_API_KEY MA2H_SIGNING_SECRET MA2H_OPERATOR_KEY

# An `hmac` callback secret, registered for the dev agent by the operator (README "Push callbacks").
MA2H_E2E_CALLBACK_SECRET=$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')
MA2H_E2E_CALLBACK_SECRET_REF=sdk-e2e-hmac
printf '%s' "$MA2H_E2E_CALLBACK_SECRET" | MA2H_MODE=dev MA2H_DATA_DIR="$TMP/data" \
  MA2H_PUBLIC_URL=http://127.0.0.1:$PORT "$BINS/ma2h-hub" admin put-secret --account dev \
  --agent "$MA2H_AGENT_ID" --name "$MA2H_E2E_CALLBACK_SECRET_REF" --value-stdin >/dev/null 2>"$TMP/admin.err" ||
  { cat "$TMP/admin.err" >&2; exit 1; }
export MA2H_E2E_CALLBACK_SECRET MA2H_E2E_CALLBACK_SECRET_REF

echo "== python sdk: end to end against the hub on port $PORT"
MA2H_BIN="$BINS/ma2h" MA2H_HUB_BIN="$BINS/ma2h-hub" MA2H_DATA_DIR="$TMP/data" MA2H_STATE_DIR="$TMP/state" \
  "$PY" -m unittest discover -v -s sdk/python/e2e -t sdk/python/e2e
