# shellcheck shell=bash
# lambda_profile_env — export [profile.lambda-release] from Cargo.toml as CARGO_PROFILE_RELEASE_*
# overrides, so a build that can only say `--release` (SAM's rust-cargolambda method) builds with
# the Lambda profile. One source of truth: the values are read from Cargo.toml, not repeated here.
lambda_profile_env() {
    local line
    while IFS= read -r line; do
        export "${line?}"
    done < <(python3 - <<'PY'
import tomllib
with open("Cargo.toml", "rb") as f:
    profile = tomllib.load(f)["profile"]["lambda-release"]
for key, value in profile.items():
    if key != "inherits":
        print(f"CARGO_PROFILE_RELEASE_{key.upper().replace('-', '_')}={str(value).lower() if isinstance(value, bool) else value}")
PY
    )
}
