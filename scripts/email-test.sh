#!/usr/bin/env bash
# The email channel against a real SMTP server (issue 20): aiosmtpd (pinned, in .venv-mail) on a
# free loopback port receives the Hub's notification mail; scripts/email_test.py parses it, GETs
# an answer link (nothing is answered), POSTs it (answered once, as the recipient) and POSTs it
# again (refused). Uses the debug binaries `cargo test --workspace` built.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/hub.sh
. scripts/lib/hub.sh

bash scripts/venv.sh mail
BINS=$(hub_debug_bins)
hub_scratch
HUB_BIN="$BINS/ma2h-hub" SCRATCH="$HUB_SCRATCH" .venv-mail/bin/python scripts/email_test.py
