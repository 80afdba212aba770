#!/usr/bin/env bash
# `make package`: build exactly what SAM deploys — every function of infra/template.yaml as an
# arm64 `provided.al2023` bootstrap, by `sam build` (BuildMethod rust-cargolambda: cargo-lambda
# cross-compiles with zig from the `ziglang` package; all three tools come from the Python package
# index into .venv, nothing else is downloaded) — then print each function's binary and zip size
# and fail if a zip is over the budget (MA2H_ZIP_BUDGET_MB, default 10; Lambda's own limit for a
# direct upload is 50 MB zipped). Built with [profile.lambda-release] (Cargo.toml). Slow (about 30
# min on 2 cores from cold): not part of `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/venv.sh package
# shellcheck source=lib/lambda-profile.sh
. scripts/lib/lambda-profile.sh
# SAM's build method passes --release: the Lambda profile comes in as CARGO_PROFILE_RELEASE_*
lambda_profile_env
ROOT=$PWD
export PATH="$ROOT/.venv/bin:$PATH" SAM_CLI_TELEMETRY=0 AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}"
BUDGET_MB=${MA2H_ZIP_BUDGET_MB:-10}
began=$(date +%s)
# serial: parallel builds race on `rustup target add` (a reinstalled target breaks a running compile)
(cd infra && sam build --beta-features)
took=$(( $(date +%s) - began ))
python3 - "$ROOT/infra/.aws-sam/build" "$BUDGET_MB" "$took" <<'PY'
import io, os, sys, zipfile
build, budget_mb, took = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
rows, over = [], []
for fn in sorted(os.listdir(build)):
    path = os.path.join(build, fn, "bootstrap")
    if not os.path.isfile(path):
        continue
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.write(path, "bootstrap")
    size, zipped = os.path.getsize(path), len(buf.getvalue())
    rows.append((fn, size, zipped))
    if zipped > budget_mb * 1024 * 1024:
        over.append(fn)
if not rows:
    sys.exit("package: no bootstrap found under " + build)
print(f"\n{'function':<22} {'bootstrap':>12} {'zipped':>12}")
for fn, size, zipped in rows:
    print(f"{fn:<22} {size / 1e6:>10.1f} MB {zipped / 1e6:>10.1f} MB")
print(f"\n{len(rows)} functions built by `sam build` in {took // 60} min {took % 60} s; zip budget {budget_mb:g} MB")
if over:
    sys.exit("package: over the zip budget: " + ", ".join(over))
PY
