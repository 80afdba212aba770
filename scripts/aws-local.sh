#!/usr/bin/env bash
# `make aws-local`: the Hub's Lambda functions run locally end to end. Starts moto (unless
# AWS_ENDPOINT_URL names an endpoint already — LocalStack from localstack/ has the same contract),
# installs cargo-lambda into .venv, builds the debug binaries, and runs `ma2h-aws-local`: the table,
# queues and key secret created from infra/template.yaml, every function as Lambda processes on
# cargo lambda's Runtime API, an HTTP front on $LISTEN routed like the template's HTTP API, SQS →
# deliver and the schedule → sweep. Ctrl-C stops it all (and moto, if started here).
set -euo pipefail

CARGO=${CARGO:-cargo}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
# shellcheck source=lib/hub.sh
. scripts/lib/hub.sh

LISTEN=${LISTEN:-127.0.0.1:8090}
TABLE=${MA2H_TABLE:-ma2h-local}
SECRET=${MA2H_HUB_SECRET:-ma2h/local}

if [ -z "${AWS_ENDPOINT_URL:-}" ]; then
    bash scripts/moto.sh start
    trap 'bash scripts/moto.sh stop' EXIT
    export AWS_ENDPOINT_URL=http://127.0.0.1:4566 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test
fi
export AWS_REGION=${AWS_REGION:-us-east-1} MA2H_MODE=${MA2H_MODE:-dev}
bash scripts/venv.sh aws-local
BINS=$(CARGO=$CARGO hub_debug_bins)

cat >&2 <<MSG
ma2h aws-local: table $TABLE, key secret $SECRET on $AWS_ENDPOINT_URL.
Credentials (in another shell, same endpoint):
  AWS_ENDPOINT_URL=$AWS_ENDPOINT_URL AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=$AWS_REGION \\
  MA2H_MODE=dev MA2H_TABLE=$TABLE MA2H_HUB_SECRET=$SECRET $BINS/ma2h-admin-aws create-agent --account demo --agent my-bot
MSG
"$BINS/ma2h-aws-local" --listen "$LISTEN" --bin-dir "$BINS" --table "$TABLE" \
    --parameter "HubSecretName=$SECRET" --parameter "HubPublicKeysSecretName=$SECRET-public" "$@"
