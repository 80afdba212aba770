# shellcheck shell=bash
# Helpers for the scripts that start a throw-away local Hub (conformance.sh, bench.sh,
# ui-test.sh). Source it after `set -euo pipefail`.

# hub_field FIELD — FIELD of the JSON document on stdin (the admin commands' --json output).
hub_field() {
    python3 -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"
}

# hub_address PID OUT ERR NAME [SECONDS] — wait up to SECONDS (default 10) for `ma2h-hub serve`
# or `ma2h-aws-local` (PID, stdout in OUT) to print "ma2h hub listening on http://ADDR" and print
# ADDR. If the Hub exits or stays silent, say so as NAME, show the end of its log ERR and fail.
hub_address() {
    local pid=$1 out=$2 err=$3 name=$4 wait=${5:-10} addr=""
    for _ in $(seq 1 $((wait * 10))); do
        # (the background Hub may not have created OUT yet: no error, no exit under pipefail)
        addr=$(sed -n 's#^ma2h hub listening on http://\([^ ]*\).*#\1#p' "$out" 2>/dev/null | head -n1 || true)
        if [ -n "$addr" ]; then
            printf '%s\n' "$addr"
            return 0
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "$name: the hub exited before listening" >&2
            tail -n 50 "$err" >&2 || true
            return 1
        fi
        sleep 0.1
    done
    echo "$name: the hub did not print its address within $wait s" >&2
    tail -n 50 "$err" >&2 || true
    return 1
}

# hub_debug_bins — build the workspace's debug binaries with the feature set `cargo test
# --workspace` unifies (--all-targets: after the test run nothing is rebuilt; a plain `--bin`
# build would rebuild tokio and the HTTP stack) and print the directory that holds them.
hub_debug_bins() {
    "${CARGO:-cargo}" build --quiet --locked --workspace --all-targets
    "${CARGO:-cargo}" metadata --format-version 1 --no-deps |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"] + "/debug")'
}

# hub_scratch — a fresh temp dir in HUB_SCRATCH, removed at exit together with the Hub whose pid
# the caller keeps in HUB_PID (if any): the EXIT trap every throw-away-Hub script needs. Call it
# directly (not in `$(…)`: the trap and the variables must live in the calling shell).
HUB_PID=""
HUB_SCRATCH=""
hub_cleanup() {
    if [ -n "$HUB_PID" ]; then kill "$HUB_PID" 2>/dev/null || true; wait "$HUB_PID" 2>/dev/null || true; fi
    if [ -n "$HUB_SCRATCH" ]; then rm -rf "$HUB_SCRATCH"; fi
}
hub_scratch() {
    HUB_SCRATCH=$(mktemp -d)
    trap hub_cleanup EXIT
}
