#!/usr/bin/env bash
# The project's Python tools, pinned, in ./.venv (created on first use): moto (DynamoDB + SQS for
# the tests), cfn-lint and the SAM CLI (template lint, offline).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv
REQUIREMENTS=("moto[server]==5.2.5" "cfn-lint==1.58.0" "aws-sam-cli==1.170.0")
STAMP="$VENV/.ma2h-requirements"
WANT="${REQUIREMENTS[*]}"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "${REQUIREMENTS[@]}"
  echo "$WANT" > "$STAMP"
fi
