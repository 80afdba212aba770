#!/usr/bin/env bash
# `ma2h mcp` and `ma2h hook` against a real MCP client: the official Python `mcp` package (pinned,
# in .venv-mcp) drives the server over stdio (scripts/mcp_client_test.py) against a dev Hub started
# the way `make run` starts it, on a free port and a temp data dir; the operator answers over HTTP.
# Uses the debug binaries `cargo test --workspace` built (CARGO builds them if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/hub.sh
. scripts/lib/hub.sh

bash scripts/venv.sh mcp
BINS=$(hub_debug_bins)
hub_scratch
TMP=$HUB_SCRATCH
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
MA2H_MODE=dev MA2H_BIND=127.0.0.1:$PORT MA2H_PUBLIC_URL=http://127.0.0.1:$PORT MA2H_DATA_DIR="$TMP/data" \
  "$BINS/ma2h-hub" serve >"$TMP/hub.out" 2>"$TMP/hub.err" &
HUB_PID=$!
hub_address "$HUB_PID" "$TMP/hub.out" "$TMP/hub.err" mcp-test >/dev/null
for _ in $(seq 1 50); do [ -f "$TMP/data/dev.env" ] && break; sleep 0.1; done
# shellcheck disable=SC1091
. "$TMP/data/dev.env"
export MA2H_HUB_URL MA2H_AGENT_ID MA2H_API_KEY MA2H_SIGNING_SECRET MA2H_OPERATOR_KEY
MA2H_BIN="$BINS/ma2h" EVENTS="$PWD/functions/cli/tests/hook-events" SCRATCH="$TMP" \
  .venv-mcp/bin/python scripts/mcp_client_test.py
