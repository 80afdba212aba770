#!/usr/bin/env bash
# `make lambda-measure`: the Lambda functions built for this machine (x86_64) with the Lambda
# profile ([profile.lambda-release] in Cargo.toml: fat LTO, one codegen unit, stripped), their
# binary and zipped sizes, and each one's init time — process start to its first Runtime API
# request, median of 7 cold starts against a stub Runtime API (`ma2h-lambda-init`), the Hub's keys
# read from Secrets Manager on moto (started here if AWS_ENDPOINT_URL is unset). `BIN_DIR=…`
# measures binaries built elsewhere instead (e.g. an older release, for a before/after).
# Not part of `make test` (a cold release build of ten binaries with fat LTO: ~20 min on 2 cores).
set -euo pipefail
CARGO=${CARGO:-cargo}
cd "$(dirname "$0")/.."
TARGET=$("$CARGO" metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
read -ra FUNCTIONS <<<"$(python3 -c 'import re; print(" ".join(re.findall(r"Binary: (ma2h-[a-z-]+)", open("infra/template.yaml").read())))')"
if [ -z "${BIN_DIR:-}" ]; then
    began=$(date +%s)
    "$CARGO" build --locked --profile lambda-release "${FUNCTIONS[@]/#/--bin=}"
    echo "built in $(( $(date +%s) - began )) s"
    BIN_DIR="$TARGET/lambda-release"
fi
python3 - "$BIN_DIR" "${FUNCTIONS[@]}" <<'PY'
import io, os, sys, zipfile
bins, names = sys.argv[1], sys.argv[2:]
print(f"{'function':<16} {'binary':>10} {'zipped':>10}")
for n in names:
    p = os.path.join(bins, n)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.write(p, "bootstrap")
    print(f"{n.removeprefix('ma2h-'):<16} {os.path.getsize(p) / 1e6:>7.1f} MB {len(buf.getvalue()) / 1e6:>7.1f} MB")
PY
if [ -z "${AWS_ENDPOINT_URL:-}" ]; then
    bash scripts/moto.sh start
    trap 'bash scripts/moto.sh stop' EXIT
    export AWS_ENDPOINT_URL=http://127.0.0.1:4566 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test
fi
export AWS_REGION=${AWS_REGION:-us-east-1}
"$CARGO" build --quiet --locked -p ma2h-aws-local --bin ma2h-lambda-init
"$TARGET/debug/ma2h-lambda-init" --bin-dir "$BIN_DIR"
