#!/usr/bin/env python3
"""A Slack stand-in for trying the Hub's Slack channel without a Slack workspace (issue 39;
docs/channels.md, "Test Slack locally"). Standard library only. Two commands:

  serve  — Slack's Web API as far as the Hub uses it (chat.postMessage, chat.update, and the
           ephemeral replies it POSTs to a press's response_url): every call is printed as one
           JSON line ({"path", "authorization", "body"}) and answered {"ok": true, "ts": …}.
           Point the Hub at it with MA2H_SLACK_API_URL=http://127.0.0.1:<port>/api.

  press  — a button press: the signed `block_actions` interaction Slack would POST to
           /v1/integrations/slack/interactions — a form body `payload=<json>` with
           X-Slack-Request-Timestamp and X-Slack-Signature = v0=hex(HMAC-SHA256(signing secret,
           "v0:{timestamp}:{body}")). The button's value is "{message id} {option value}".

scripts/channels_test.py (part of `make test`) uses this file's FakeSlack and signed_press.
"""
import argparse
import hashlib
import hmac
import http.server
import json
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

CALLS = []


class FakeSlack(http.server.BaseHTTPRequestHandler):
    """Records each Web API call (and response_url reply) and answers like Slack does."""

    echo = False

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"raw": raw.decode("utf-8", "replace")}
        CALLS.append((self.path, self.headers.get("Authorization"), body))
        if self.echo:
            print(json.dumps({"path": self.path, "authorization": self.headers.get("Authorization"), "body": body}),
                  flush=True)
        reply = json.dumps({"ok": True, "channel": body.get("channel"), "ts": f"1700000000.{len(CALLS):06d}"})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(reply.encode())

    def log_message(self, *args):
        pass


def signed_press(secret, team, user, message_id, value, response_url=None, timestamp=None):
    """The body and headers of a signed block_actions interaction pressing `value` on `message_id`."""
    payload = {
        "type": "block_actions",
        "team": {"id": team},
        "user": {"id": user, "team_id": team},
        "actions": [{"type": "button", "action_id": "ma2h_answer_0", "value": f"{message_id} {value}"}],
    }
    if response_url:
        payload["response_url"] = response_url
    body = urllib.parse.urlencode({"payload": json.dumps(payload)})
    ts = str(int(timestamp if timestamp is not None else time.time()))
    mac = hmac.new(secret.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
    headers = {"Content-Type": "application/x-www-form-urlencoded", "X-Slack-Request-Timestamp": ts,
               "X-Slack-Signature": f"v0={mac}"}
    return body, headers


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve", help="run the Web API stand-in, printing each call")
    s.add_argument("--port", type=int, default=9911)
    p = sub.add_parser("press", help="send a signed button press to a Hub")
    p.add_argument("--hub", required=True, help="the Hub's base URL, e.g. http://127.0.0.1:8080")
    p.add_argument("--account", required=True, help="the account whose Slack channel this is")
    p.add_argument("--signing-secret", required=True, help="the channel's signing secret (add-slack)")
    p.add_argument("--team", required=True, help="the Slack workspace id, as in add-slack / link-slack")
    p.add_argument("--user", required=True, help="the Slack user id linked with link-slack")
    p.add_argument("--message", required=True, help="the message id (msg_…)")
    p.add_argument("--value", required=True, help="the option value to answer, e.g. approve")
    p.add_argument("--response-url", help="where the Hub sends the ephemeral reply (e.g. the serve stand-in)")
    args = ap.parse_args()
    if args.cmd == "serve":
        FakeSlack.echo = True
        server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), FakeSlack)
        print(f"Slack stand-in on http://127.0.0.1:{args.port}/api — start the Hub with "
              f"MA2H_SLACK_API_URL=http://127.0.0.1:{args.port}/api", file=sys.stderr, flush=True)
        server.serve_forever()
    body, headers = signed_press(args.signing_secret, args.team, args.user, args.message, args.value,
                                 args.response_url)
    url = f"{args.hub.rstrip('/')}/v1/integrations/slack/interactions?account={urllib.parse.quote(args.account)}"
    req = urllib.request.Request(url, data=body.encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            print(r.status, r.read().decode())
    except urllib.error.HTTPError as e:
        print(e.code, e.read().decode())
        sys.exit(1)


if __name__ == "__main__":
    main()
