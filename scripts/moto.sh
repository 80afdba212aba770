#!/usr/bin/env bash
# Start / stop the moto server that stands in for DynamoDB and SQS in `make test`.
# Same endpoint contract as LocalStack (localstack/): AWS_ENDPOINT_URL=http://127.0.0.1:4566.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv
PORT="${MOTO_PORT:-4566}"
PIDFILE="${TMPDIR:-/tmp}/ma2h-moto-$PORT.pid"

case "${1:-}" in
  install)
    bash scripts/venv.sh
    ;;
  start)
    "$0" install
    if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then exit 0; fi
    # One request at a time: see moto_serial.py (conditional writes must be atomic).
    "$VENV/bin/python" scripts/moto_serial.py 127.0.0.1 "$PORT" > "${TMPDIR:-/tmp}/ma2h-moto-$PORT.log" 2>&1 &
    echo $! > "$PIDFILE"
    for _ in $(seq 1 100); do
      if curl -fsS "http://127.0.0.1:$PORT/moto-api/" >/dev/null 2>&1; then exit 0; fi
      sleep 0.1
    done
    echo "moto did not start; see ${TMPDIR:-/tmp}/ma2h-moto-$PORT.log" >&2
    exit 1
    ;;
  reset)
    curl -fsS -X POST "http://127.0.0.1:$PORT/moto-api/reset" >/dev/null
    ;;
  stop)
    if [ -f "$PIDFILE" ]; then kill "$(cat "$PIDFILE")" 2>/dev/null || true; rm -f "$PIDFILE"; fi
    ;;
  *)
    echo "usage: $0 install|start|reset|stop" >&2; exit 2 ;;
esac
