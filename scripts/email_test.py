"""The email channel end to end against a real SMTP server (aiosmtpd), driven by scripts/email-test.sh.

A dev Hub on a free port mails a routed ask to `alice`; the test parses the received mail (MIME, as
any mail client would), checks what it must and must not say, then follows the answer link:
GET shows a confirmation and answers nothing, POST answers once as human:alice, a second POST is
refused, and the other option's link loses to the first answer (first terminal wins).
"""

import email
import email.policy
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

from aiosmtpd.controller import Controller

BIN = os.environ["HUB_BIN"]
SCRATCH = os.environ["SCRATCH"]
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


def http(method, url, key=None, body=None):
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
        admin("create-operator", "--account", "acme", "--human", "alice")
        shown = admin("channels", "add-email", "--account", "acme", "--id", "mail", "--smtp-host", "127.0.0.1",
                      "--smtp-port", str(smtp_port), "--security", "none", "--password", "smtp-pass-123",
                      "--from", "MA2H Hub <hub@example.com>",
                      "--recipient", "alice=alice@example.com")
        check("smtp-pass-123" not in json.dumps(shown), "the SMTP password is never shown back")
        admin("channels", "add-route", "--account", "acme", "--id", "all", "--to", "mail")

        port = free_port()
        base = f"http://127.0.0.1:{port}"
        hub_env = env() | {"MA2H_BIND": f"127.0.0.1:{port}", "MA2H_PUBLIC_URL": base}
        log = open(os.path.join(SCRATCH, "hub.err"), "w")
        hub = subprocess.Popen([BIN, "serve"], env=hub_env, stdout=subprocess.PIPE, stderr=log, text=True)
        for line in hub.stdout:
            if "listening on" in line:
                break

        ask = {"ma2h_version": "0.5", "type": "ask", "created_at": "2026-06-04T12:00:00Z",
               "agent": {"id": "ci", "run_id": "r1", "runtime": "cli"}, "title": "Deploy build 42?",
               "body": "Canary is clean.", "idempotency_key": "mail-1", "priority": "high",
               "state": {"secret": "never-in-mail"},
               "expires_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600)),
               "request": {"mode": "select", "options": [{"value": "ship", "label": "Ship it"},
                                                          {"value": "hold", "label": "Hold"}],
                           "allowed_resolvers": ["human:alice"]}}
        status, ack = http("POST", f"{base}/v1/messages", agent["api_key"], ask)
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
        check("Canary is clean." in text and "never-in-mail" not in text + html, "the body, never the state")
        links = dict(re.findall(r'Answer "([^"]+)": (\S+)', text))
        check(set(links) == {"Ship it", "Hold"}, f"one link per option: {sorted(links)}")
        check(all(url in html for url in links.values()), "the HTML part carries the same links")

        ship = links["Ship it"]
        for _ in range(2):
            status, page = http("GET", ship)
            check(status == 200 and "<form" in page and "Ship it" in page, "GET shows a confirmation page")
        status, read = http("GET", f"{base}/v1/messages/{msg_id}", agent["api_key"])
        check(json.loads(read)["status"] == "open", "a GET never answers (link scanners)")

        status, page = http("POST", ship)
        check(status == 200 and "Answered" in page, f"POST answers ({status})")
        read = json.loads(http("GET", f"{base}/v1/messages/{msg_id}", agent["api_key"])[1])
        check(read["status"] == "answered", "the ask is answered")
        check(read["response"]["response"]["actor"] == "human:alice", "as the recipient operator")
        check(read["response"]["response"]["value"] == "ship", "with the link's option")
        status, _ = http("POST", ship)
        check(status == 409, "a second POST of the link is refused")
        status, _ = http("POST", links["Hold"])
        check(status == 409, "the other option loses: first terminal wins")
        read = json.loads(http("GET", f"{base}/v1/messages/{msg_id}", agent["api_key"])[1])
        check(read["response"]["response"]["value"] == "ship", "the first answer stands")
    finally:
        if hub:
            hub.kill()
            hub.wait()
        controller.stop()
    print(f"email test: {checks} checks passed")


if __name__ == "__main__":
    main()
