"""The notification channels end to end, driven by scripts/channels-test.sh.

A dev Hub on a free port announces a routed ask to `alice` by mail (a real SMTP server, aiosmtpd)
and to Slack (a stand-in of the Web API that records chat.postMessage and answers like Slack).
The test parses the received mail (MIME, as any mail client would), checks what it must and must
not say, then follows the answer link: GET shows a confirmation and answers nothing, POST answers
once as human:alice, a second POST is refused, and the other option's link loses to the first
answer (first terminal wins). Finally the real Block Kit JSON and the mail's HTML are rendered to
PNGs with headless Chromium (docs/channels.md shows them). Issue 43: a webhook channel with a
generated `whsec_` secret and an agent's pushes with Standard Webhooks enabled are both verified
with the `standardwebhooks` library itself (not our own verifier), and a tampered body fails it.
"""

import email
import email.policy
import html as htmllib
import http.server
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

from aiosmtpd.controller import Controller
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

BIN = os.environ["HUB_BIN"]
SCRATCH = os.environ["SCRATCH"]
SHOTS = os.environ["SHOTS"]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# the stand-in docs/channels.md's "Test Slack locally" recipe runs by hand
from slack_standin import CALLS as SLACK_POSTS, FakeSlack, signed_press  # noqa: E402


def mrkdwn(text):
    """Enough of Slack's mrkdwn for a faithful picture: *bold*, `code`, <!date^…|fallback>."""
    text = re.sub(r"<!date\^\d+\^[^|]*\|([^>]*)>", r"\1", text)
    text = re.sub(r"<([^|>]+)\|([^>]+)>", r'<a href="\1">\2</a>', text)
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    text = re.sub(r"\*([^*]+)\*", r"<b>\1</b>", text)
    return text.replace("\n", "<br>")


def render_blocks(blocks):
    """Block Kit → HTML, styled after Slack's message view (header, context, section, actions)."""
    out = []
    for b in blocks:
        t = b["type"]
        if t == "header":
            out.append(f'<div class="h">{htmllib.escape(b["text"]["text"])}</div>')
        elif t == "context":
            out.append('<div class="c">' + " ".join(mrkdwn(e["text"]) for e in b["elements"]) + "</div>")
        elif t == "section":
            out.append(f'<div class="s">{mrkdwn(b["text"]["text"])}</div>')
        elif t == "actions":
            buttons = "".join(
                f'<span class="b {e.get("style", "")}">{htmllib.escape(e["text"]["text"])}</span>' for e in b["elements"]
            )
            out.append(f'<div class="a">{buttons}</div>')
    style = """body{font:15px/1.46 Lato,system-ui,sans-serif;background:#fff;margin:0;padding:20px;color:#1d1c1d}
.m{display:flex;gap:10px}.av{width:36px;height:36px;border-radius:6px;background:#0b5cad;color:#fff;
font-weight:700;display:flex;align-items:center;justify-content:center}.n{font-weight:900}.app{font-size:10px;
background:#e8e8e8;border-radius:2px;padding:1px 3px;margin-left:4px;color:#555}.t{color:#616061;font-size:12px;margin-left:6px}
.h{font-size:18px;font-weight:900;margin:4px 0}.c{color:#616061;font-size:13px;margin:4px 0}.s{margin:8px 0}
code{background:#f4f4f4;border:1px solid #ddd;border-radius:3px;padding:0 3px;color:#e01e5a;font-size:12px}
.a{margin-top:8px}.b{display:inline-block;border:1px solid #bbb;border-radius:4px;padding:4px 12px;margin-right:8px;
font-weight:700;font-size:14px}.b.primary{background:#007a5a;border-color:#007a5a;color:#fff}"""
    return (f"<!doctype html><html><head><meta charset=utf-8><style>{style}</style></head><body>"
            f'<div class="m"><div class="av">M</div><div><span class="n">MA2H Hub</span><span class="app">APP</span>'
            f'<span class="t">12:04 PM</span>{"".join(out)}</div></div></body></html>')


def screenshot(html_text, name, width, height):
    page = os.path.join(SCRATCH, name + ".html")
    with open(page, "w") as f:
        f.write(html_text)
    png = os.path.join(SHOTS, name + ".png")
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--window-size={width},{height}", f"--screenshot={png}", "file://" + page],
                   check=True, capture_output=True, timeout=60)
    check(os.path.getsize(png) > 5000, f"{name}.png rendered")
DATA = os.path.join(SCRATCH, "data")
checks = 0


def check(cond, what):
    global checks
    if not cond:
        print(f"FAIL: {what}", file=sys.stderr)
        err = os.path.join(SCRATCH, "hub.err")
        if os.path.exists(err):
            print(open(err).read()[-3000:], file=sys.stderr)
        sys.exit(1)
    checks += 1
    print(f"ok - {what}")


HOOKS = []  # (path, headers, raw body) of every webhook event and push received


class Hooks(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        HOOKS.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def standard_webhooks_verify(secret, headers, body):
    """The library's verdict: the parsed body, or None when it refuses."""
    try:
        return Webhook(secret).verify(body, headers)
    except WebhookVerificationError:
        return None


class Inbox:
    def __init__(self):
        self.mails = []

    async def handle_DATA(self, server, session, envelope):
        self.mails.append((envelope.rcpt_tos, envelope.content))
        return "250 OK"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def env():
    return {"PATH": os.environ.get("PATH", ""), "MA2H_MODE": "dev", "MA2H_DATA_DIR": DATA, "MA2H_LOG": "warn"}


def admin(*args):
    out = subprocess.run([BIN, "admin", *args, "--json"], env=env(), capture_output=True, text=True)
    if out.returncode != 0:
        print(out.stderr, file=sys.stderr)
        sys.exit(1)
    return json.loads(out.stdout)


def call(method, url, key=None, body=None):
    data = json.dumps(body).encode() if body is not None else (b"" if method == "POST" else None)
    req = urllib.request.Request(url, data=data, method=method)
    if key:
        req.add_header("Authorization", f"Bearer {key}")
    if body is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=15) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def main():
    inbox = Inbox()
    smtp_port = free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=smtp_port)
    controller.start()
    hub = None
    try:
        agent = admin("create-agent", "--account", "acme", "--agent", "ci")
        op = admin("create-operator", "--account", "acme", "--human", "alice")
        shown = admin("channels", "add-email", "--account", "acme", "--id", "mail", "--smtp-host", "127.0.0.1",
                      "--smtp-port", str(smtp_port), "--security", "none", "--password", "smtp-pass-123",
                      "--from", "MA2H Hub <hub@example.com>",
                      "--recipient", "alice=alice@example.com")
        check("smtp-pass-123" not in json.dumps(shown), "the SMTP password is never shown back")
        admin("channels", "add-slack", "--account", "acme", "--id", "ops", "--team", "T0TEAM", "--channel",
              "C0OPS", "--bot-token", "xoxb-test", "--signing-secret", "signing-secret")
        hooks = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hooks)
        threading.Thread(target=hooks.serve_forever, daemon=True).start()
        hooks_base = f"http://127.0.0.1:{hooks.server_address[1]}"
        std = admin("channels", "add-webhook", "--account", "acme", "--id", "std", "--url", f"{hooks_base}/events",
                    "--generate-secret")
        check(std["secret"].startswith("whsec_") and std["channels"]["std"]["standard_webhooks"] is True,
              "a generated webhook secret is a Standard Webhooks one, shown once")
        admin("channels", "add-route", "--account", "acme", "--id", "all", "--to", "mail", "--to", "ops",
              "--to", "std")
        admin("channels", "link-slack", "--account", "acme", "--team", "T0TEAM", "--user", "U0ALICE", "--human", "alice")
        slack = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeSlack)
        threading.Thread(target=slack.serve_forever, daemon=True).start()
        slack_api = f"http://127.0.0.1:{slack.server_address[1]}/api"

        port = free_port()
        base = f"http://127.0.0.1:{port}"
        hub_env = env() | {"MA2H_BIND": f"127.0.0.1:{port}", "MA2H_PUBLIC_URL": base,
                           "MA2H_SLACK_API_URL": slack_api, "MA2H_DEV_EGRESS_ALLOW": "127.0.0.0/8"}
        log = open(os.path.join(SCRATCH, "hub.err"), "w")
        hub = subprocess.Popen([BIN, "serve"], env=hub_env, stdout=subprocess.PIPE, stderr=log, text=True)
        for line in hub.stdout:
            if "listening on" in line:
                break

        ask = {"ma2h_version": "0.5", "type": "ask", "created_at": "2026-06-04T12:00:00Z",
               "agent": {"id": "ci", "run_id": "r1", "runtime": "cli"}, "title": "Deploy build 42?",
               "body": "Canary is **clean**.", "idempotency_key": "mail-1", "priority": "high",
               "state": {"secret": "never-in-mail"},
               "expires_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600)),
               "request": {"mode": "select", "options": [{"value": "ship", "label": "Ship it"},
                                                          {"value": "hold", "label": "Hold"}],
                           "allowed_resolvers": ["human:alice"]}}
        status, ack = call("POST", f"{base}/v1/messages", agent["api_key"], ask)
        check(status == 202, f"the ask is accepted ({status})")
        msg_id = json.loads(ack)["id"]

        deadline = time.time() + 20
        while not inbox.mails and time.time() < deadline:
            time.sleep(0.1)
        check(len(inbox.mails) == 1, "one mail reached the SMTP server")
        rcpts, raw = inbox.mails[0]
        check(rcpts == ["alice@example.com"], "addressed to the recipient")
        mail = email.message_from_bytes(raw, policy=email.policy.default)
        check("Deploy build 42?" in mail["subject"], f"subject names the ask: {mail['subject']}")
        text = mail.get_body(preferencelist=("plain",)).get_content()
        html = mail.get_body(preferencelist=("html",)).get_content()
        check("Canary is **clean**." in text and "never-in-mail" not in text + html, "the body, never the state")
        # issue 39: the HTML part renders the Markdown and says when in words and in UTC
        check("<strong>clean</strong>" in html and "**" not in html, "the HTML body is rendered Markdown")
        check(re.search(r"Expires in (59 min|1 h) \(\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC\)", text) is not None,
              "the expiry reads as a human time")
        links = dict(re.findall(r'Answer "([^"]+)": (\S+)', text))
        check(set(links) == {"Ship it", "Hold"}, f"one link per option: {sorted(links)}")
        check(all(url in html for url in links.values()), "the HTML part carries the same links")

        ship = links["Ship it"]
        for _ in range(2):
            status, page = call("GET", ship)
            check(status == 200 and "<form" in page and "Ship it" in page, "GET shows a confirmation page")
        status, read = call("GET", f"{base}/v1/messages/{msg_id}", agent["api_key"])
        check(json.loads(read)["status"] == "open", "a GET never answers (link scanners)")

        status, page = call("POST", ship)
        check(status == 200 and "Answered" in page, f"POST answers ({status})")
        read = json.loads(call("GET", f"{base}/v1/messages/{msg_id}", agent["api_key"])[1])
        check(read["status"] == "answered", "the ask is answered")
        check(read["response"]["response"]["actor"] == "human:alice", "as the recipient operator")
        check(read["response"]["response"]["value"] == "ship", "with the link's option")
        status, _ = call("POST", ship)
        check(status == 409, "a second POST of the link is refused")
        status, _ = call("POST", links["Hold"])
        check(status == 409, "the other option loses: first terminal wins")
        read = json.loads(call("GET", f"{base}/v1/messages/{msg_id}", agent["api_key"])[1])
        check(read["response"]["response"]["value"] == "ship", "the first answer stands")

        # Slack: the announcement, then its update in place once answered
        deadline = time.time() + 20
        while len(SLACK_POSTS) < 2 and time.time() < deadline:
            time.sleep(0.1)
        paths = [p for p, _, _ in SLACK_POSTS]
        check(paths == ["/api/chat.postMessage", "/api/chat.update"], f"Slack got the post and its update: {paths}")
        check(SLACK_POSTS[0][1] == "Bearer xoxb-test", "the bot token authenticates the Web API call")
        post, update = SLACK_POSTS[0][2], SLACK_POSTS[1][2]
        check("never-in-mail" not in json.dumps(post), "the post carries no state")
        check(update["ts"] == "1700000000.000001" and "human:alice" in json.dumps(update), "updated in place: who decided")
        # a button press, signed as Slack signs it (the recipe's `press`): answers as the linked operator
        ask2 = dict(ask, idempotency_key="mail-2", title="Rotate the key?")
        msg2 = json.loads(call("POST", f"{base}/v1/messages", agent["api_key"], ask2)[1])["id"]
        body, headers = signed_press("signing-secret", "T0TEAM", "U0ALICE", msg2, "hold",
                                     response_url=f"{slack_api}/respond")
        req = urllib.request.Request(f"{base}/v1/integrations/slack/interactions?account=acme",
                                     data=body.encode(), headers=headers, method="POST")
        with urllib.request.urlopen(req, timeout=15) as r:
            check(r.status == 200, f"the signed press is accepted ({r.status} {r.read().decode()})")
        read = json.loads(call("GET", f"{base}/v1/messages/{msg2}", agent["api_key"])[1])
        said = (read.get("response") or {}).get("response") or {}
        check((read["status"], said.get("value"), said.get("actor")) == ("answered", "hold", "human:alice"),
              f"the press answered as alice{'' if said else ': ' + json.dumps(read)}")
        deadline = time.time() + 10
        while not any(p == "/api/respond" for p, _, _ in SLACK_POSTS) and time.time() < deadline:
            time.sleep(0.1)
        check(any(p == "/api/respond" and "human:alice" in json.dumps(b) for p, _, b in SLACK_POSTS),
              "the presser got the ephemeral reply at response_url")
        status, _ = call("POST", f"{base}/v1/integrations/slack/interactions?account=acme", None, None)
        check(status == 401, f"an unsigned press is refused ({status})")
        # issue 43: the webhook channel's event, checked by the Standard Webhooks library
        events = [h for h in HOOKS if h[0] == "/events"]
        check(bool(events), "the webhook channel received the announcement")
        path, headers, body = events[0]
        parsed = standard_webhooks_verify(std["secret"], headers, body)
        check(parsed is not None and parsed["event_id"] == headers["webhook-id"],
              "the standardwebhooks library verifies the event; webhook-id is its event_id")
        check(standard_webhooks_verify(std["secret"], headers, body.replace(b"Deploy", b"Destroy")) is None,
              "a tampered event fails the library's check")
        check("ma2h-signature" in headers, "MA2H-Signature is still sent beside them")

        # ... and a push callback with the agent's Standard Webhooks secret
        admin("bind-callback", "--account", "acme", "--agent", "ci", "--host", "127.0.0.1")
        admin("put-secret", "--account", "acme", "--agent", "ci", "--name", "cb", "--value", "cb-secret-0123")
        on = admin("standard-webhooks", "--account", "acme", "--agent", "ci", "--enable")
        ask3 = dict(ask, idempotency_key="std-3", title="Push me")
        ask3["request"] = dict(ask["request"], callback={"mode": "push", "url": f"{hooks_base}/push",
                                                          "auth": {"scheme": "hmac", "secret_ref": "cb"}})
        msg3 = json.loads(call("POST", f"{base}/v1/messages", agent["api_key"], ask3)[1])["id"]
        status, _ = call("POST", f"{base}/v1/messages/{msg3}/resolve", op["api_key"],
                         {"resolution": "answered", "value": "ship"})
        check(status == 200, f"the operator answers over HTTP ({status})")
        deadline = time.time() + 20
        while not any(h[0] == "/push" for h in HOOKS) and time.time() < deadline:
            time.sleep(0.1)
        pushes = [h for h in HOOKS if h[0] == "/push"]
        check(len(pushes) >= 1, "the Response was pushed")
        _, headers, body = pushes[0]
        parsed = standard_webhooks_verify(on["secret"], headers, body)
        check(parsed is not None and parsed["in_reply_to"] == msg3
              and headers["webhook-id"] == parsed["resolution_id"],
              "the standardwebhooks library verifies the push; webhook-id is the resolution_id")
        check(standard_webhooks_verify(std["secret"], headers, body) is None, "another secret does not verify it")

        screenshot(render_blocks(post["blocks"]), "channel-slack-post", 720, 330)
        screenshot(render_blocks(update["blocks"]), "channel-slack-outcome", 720, 300)
        screenshot(html, "channel-email", 720, 560)
    finally:
        if hub:
            hub.kill()
            hub.wait()
        controller.stop()
    print(f"channels test: {checks} checks passed")


if __name__ == "__main__":
    main()
