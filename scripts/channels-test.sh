#!/usr/bin/env bash
# The notification channels against real protocol stand-ins (issue 20): aiosmtpd (pinned, in
# .venv-mail) on a free loopback port receives the Hub's mail, and a small Slack Web API stand-in
# records chat.postMessage. scripts/channels_test.py parses the mail, GETs an answer link (nothing
# is answered), POSTs it (answered once, as the recipient), POSTs it again (refused), and renders
# the Slack post (its real Block Kit JSON) and the mail's HTML to PNGs with headless Chromium:
# into the scratch dir, or into docs/img with MA2H_UPDATE_SCREENSHOTS=1. Uses the debug binaries
# `cargo test --workspace` built.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/hub.sh
. scripts/lib/hub.sh

CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$CHROMIUM" ]; then
  echo "channels-test: $CHROMIUM not found; install it with: apt-get install -y chromium" >&2
  exit 1
fi
bash scripts/venv.sh mail
BINS=$(hub_debug_bins)
hub_scratch
SHOTS="$HUB_SCRATCH/shots"
if [ "${MA2H_UPDATE_SCREENSHOTS:-}" = 1 ]; then SHOTS="$PWD/docs/img"; fi
mkdir -p "$SHOTS"
HUB_BIN="$BINS/ma2h-hub" SCRATCH="$HUB_SCRATCH" SHOTS="$SHOTS" CHROMIUM="$CHROMIUM" \
  .venv-mail/bin/python scripts/channels_test.py
