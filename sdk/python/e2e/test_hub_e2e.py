"""End to end against a real local Hub (``ma2h-hub serve`` in dev mode), driven by
``scripts/python-sdk-test.sh``, which starts the Hub and exports its dev credentials.

The operator's side (answering, directives, the session kill-switch, lifting the stop) goes over
plain HTTP with ``MA2H_OPERATOR_KEY``, independent of the SDK; the agent's side is the SDK.
"""

from __future__ import annotations

import copy
import http.server
import json
import os
import queue
import re
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Dict, Iterator, Optional, Tuple

from ma2h import (
    Callback,
    Hub,
    IdempotencyConflict,
    ReplayCache,
    SessionClosedByOperator,
    SignatureError,
    StateError,
    StateKey,
    StoppedByOperator,
)
from ma2h import seal as sealing

REQUIRED = (
    "MA2H_HUB_URL",
    "MA2H_AGENT_ID",
    "MA2H_API_KEY",
    "MA2H_SIGNING_SECRET",
    "MA2H_OPERATOR_KEY",
    "MA2H_BIN",
    "MA2H_HUB_BIN",
    "MA2H_DATA_DIR",
    "MA2H_E2E_CALLBACK_SECRET",
    "MA2H_E2E_CALLBACK_SECRET_REF",
)
MISSING = [k for k in REQUIRED if not os.environ.get(k)]
if MISSING:  # this suite only runs under scripts/python-sdk-test.sh: a missing variable is a failure
    raise RuntimeError(f"run scripts/python-sdk-test.sh (missing {', '.join(MISSING)})")

ENV = {k: os.environ[k] for k in REQUIRED}
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
AGENT = ENV["MA2H_AGENT_ID"]


def operator(method: str, path: str, body: Optional[Dict[str, Any]] = None) -> Tuple[int, Any]:
    """The human's side, over plain HTTP with the operator key."""
    req = urllib.request.Request(
        ENV["MA2H_HUB_URL"] + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {ENV['MA2H_OPERATOR_KEY']}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def answer_later(message_id: str, delay: float = 0.5, **body: Any) -> "queue.Queue[Tuple[int, Any]]":
    """The operator resolves ``message_id`` after ``delay`` s (while the agent waits); the queue
    receives the Hub's ``(status, body)`` so a test can check the answer was taken."""
    body = body or {"resolution": "answered", "value": "ship", "comment": "LGTM"}
    done: "queue.Queue[Tuple[int, Any]]" = queue.Queue()

    def run() -> None:
        time.sleep(delay)
        done.put(operator("POST", f"/v1/messages/{message_id}/resolve", body))

    threading.Thread(target=run, daemon=True).start()
    return done


def admin(*args: str) -> str:
    env = dict(os.environ, MA2H_MODE="dev", MA2H_DATA_DIR=ENV["MA2H_DATA_DIR"], MA2H_PUBLIC_URL=ENV["MA2H_HUB_URL"])
    return subprocess.run(
        [ENV["MA2H_HUB_BIN"], "admin", *args], env=env, check=True, capture_output=True, text=True, timeout=60
    ).stdout


def new_hub(**kw: Any) -> Hub:
    kw.setdefault("resolvers", ["human:dev"])
    kw.setdefault("state_key", StateKey.generate())
    kw.setdefault("accept_from", ["*"])
    return Hub.from_env(**kw)


@contextmanager
def receiver(hub: Hub) -> Iterator[Tuple[str, "queue.Queue[Any]", list]]:
    """A push receiver on 127.0.0.1 verifying each delivery with ``hub.verify_callback``."""
    outcomes: "queue.Queue[Any]" = queue.Queue()
    raw: list = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            raw.append((dict(self.headers.items()), body))
            try:
                outcomes.put(hub.verify_callback(self.headers, body, url))
                self.send_response(200)
            except SignatureError as e:
                outcomes.put(e)
                self.send_response(400)  # a 4xx: the Hub does not retry it (§8.3)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    url = f"http://127.0.0.1:{server.server_port}/ma2h/resume"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield url, outcomes, raw
    finally:
        server.shutdown()
        server.server_close()


class HubE2E(unittest.TestCase):
    def test_discover_and_notify(self) -> None:
        hub = new_hub()
        doc = hub.discover()
        self.assertEqual(doc["ma2h_version"], "0.5")
        self.assertTrue(doc["sessions"]["operator_hard_stop"])
        self.assertEqual(hub.submit(hub.notify("Nightly build is green", body="412 tests")).status, "delivered")

    def test_ask_answered_by_the_operator_wait_returns_the_answer_and_the_state_opens(self) -> None:
        hub = new_hub()
        state = {"build": 412, "next": "deploy", "ratio": 1e-7}
        msg = hub.ask(
            "Ship build 412?",
            options=[("ship", "Ship now"), ("hold", "Hold")],
            state=state,
            default_on_expire="hold",
            expires_in=600,
            priority="high",
        )
        ack = hub.submit(msg)
        self.assertEqual(ack.status, "open")
        self.assertEqual(hub.submit(msg).id, ack.id, "§8.1: the same key and payload return the original ack")
        resolved = answer_later(ack.id)
        seen = []
        answer = hub.wait(ack.id, timeout=30, on_status=lambda b: seen.append(b["status"]))
        self.assertEqual(
            (answer.resolution, answer.value, answer.actor, answer.comment, answer.duplicate),
            ("answered", "ship", "human:dev", "LGTM", False),
        )
        self.assertEqual(seen[-1], "answered")
        self.assertEqual(resolved.get(timeout=10)[0], 200)
        self.assertEqual(answer.open_state(hub.state_key, AGENT), state)  # type: ignore[arg-type]
        with self.assertRaises(StateError):
            answer.open_state(StateKey.generate(), AGENT)
        self.assertTrue(hub.wait(ack.id, timeout=5).duplicate, "a second read is the same resolution")
        changed = msg.envelope
        changed["title"] = "Ship build 413?"
        with self.assertRaises(IdempotencyConflict):
            hub.submit(changed)
        self.assertEqual(hub.ack_response(ack.id, note="deploying")["by"], f"agent:{AGENT}")

    def test_cancel(self) -> None:
        hub = new_hub()
        ack = hub.submit(hub.ask("Rotate the key?"))
        first, again = hub.cancel(ack.id), hub.cancel(ack.id)
        self.assertEqual((first.cancelled, again.cancelled), (True, True))
        self.assertEqual(hub.wait(ack.id, timeout=5).resolution, "cancelled")
        answered = hub.submit(hub.ask("Answered first?"))
        status, body = answer_later(answered.id, delay=0, resolution="declined").get(timeout=10)
        self.assertEqual(status, 200, body)
        self.assertEqual(hub.wait(answered.id, timeout=10).resolution, "declined")
        lost = hub.cancel(answered.id)
        self.assertEqual((lost.cancelled, lost.status), (False, "declined"))

    def test_push_callbacks_are_verified_and_replays_refused(self) -> None:
        hub = new_hub(replay_cache=ReplayCache(tempfile.mkdtemp()))
        with receiver(hub) as (url, outcomes, raw):
            ack = hub.submit(hub.ask("Push me?", options=["yes", "no"], callback=Callback(url)))
            self.assertEqual(answer_later(ack.id, value="yes", resolution="answered").get(timeout=10)[0], 200)
            pushed = outcomes.get(timeout=30)
            self.assertNotIsInstance(pushed, Exception)
            self.assertEqual(
                (pushed.in_reply_to, pushed.value, pushed.channel, pushed.duplicate), (ack.id, "yes", "push", False)
            )
            headers, body = raw[0]
            with self.assertRaises(SignatureError) as replay:
                hub.verify_callback(headers, body, url)
            self.assertEqual(replay.exception.reason, "replay")
            tampered = json.loads(body)
            tampered["response"]["value"] = "no"
            with self.assertRaises(SignatureError) as flip:
                hub.verify_callback(headers, json.dumps(tampered).encode(), url)
            self.assertEqual(flip.exception.reason, "mismatch")
            self.assertTrue(hub.wait(ack.id, timeout=5).duplicate, "pull after push: the same resolution")
            # an `hmac` callback signed with a secret the operator registered (README: put-secret)
            hub.add_verification_key(ENV["MA2H_E2E_CALLBACK_SECRET"])
            hmac_ack = hub.submit(
                hub.ask("HMAC push?", callback=Callback(url, secret_ref=ENV["MA2H_E2E_CALLBACK_SECRET_REF"]))
            )
            self.assertEqual(answer_later(hmac_ack.id, resolution="declined").get(timeout=10)[0], 200)
            declined = outcomes.get(timeout=30)
            self.assertNotIsInstance(declined, Exception)
            self.assertEqual((declined.resolution, declined.in_reply_to), ("declined", hmac_ack.id))
            only_agent_secret = Hub.from_env()
            with self.assertRaises(SignatureError) as wrong_key:
                only_agent_secret.verify_callback(raw[1][0], raw[1][1], url)
            self.assertEqual(wrong_key.exception.reason, "mismatch")

    def test_a_directive_is_drained_verified_and_acked(self) -> None:
        hub = new_hub()
        status, sent = operator(
            "POST",
            "/v1/operator/directives",
            {
                "to": f"agent:{AGENT}",
                "title": "Pause deploys",
                "body": "Incident on prod.",
                "priority": "urgent",
                "tags": ["incident"],
            },
        )
        self.assertEqual(status, 201, sent)
        drained = hub.drain(wait=5)
        mine = [e for e in drained.entries if e.ack_key == sent["id"]]
        self.assertEqual(len(mine), 1, drained)
        self.assertEqual(
            (mine[0].kind, mine[0].payload["from"], mine[0].payload["title"]),
            ("directive", "human:dev", "Pause deploys"),
        )
        self.assertEqual(drained.rejected, [])
        self.assertEqual(hub.ack(mine, note="paused"), 1)
        track = operator("GET", f"/v1/operator/directives/{sent['id']}")[1]
        self.assertEqual(track["delivery"]["state"], "acknowledged")
        # the raw entry verifies only untouched, and only with the agent's key
        status, second = operator("POST", "/v1/operator/directives", {"to": f"agent:{AGENT}", "title": "Resume"})
        raw = [e for e in hub.drain_raw(wait=5) if e.get("directive", {}).get("id") == second["id"]]
        self.assertEqual(len(raw), 1)
        forged = copy.deepcopy(raw[0])
        forged["directive"]["title"] = "Deploy everything now"
        with self.assertRaises(SignatureError) as caught:
            hub.entry_verifier().verify(forged)
        self.assertEqual(caught.exception.reason, "mismatch")
        self.assertEqual(hub.entry_verifier().verify(raw[0]).ack_key, second["id"])
        hub.ack([second["id"]])

    def test_a_session_gets_its_answer_as_a_signed_response_entry(self) -> None:
        hub = new_hub()
        with hub.lease(label="sdk e2e", ttl_seconds=300) as lease:
            before = hub.get_session(lease.id).expires_at
            time.sleep(0.02)
            self.assertEqual(lease.renew(), lease.id)
            self.assertGreater(hub.get_session(lease.id).expires_at, before, "§16.2: presenting it renews the lease")
            ack = lease.submit(hub.ask("Via my session?", options=["a", "b"]))
            self.assertEqual(
                operator("POST", f"/v1/messages/{ack.id}/resolve", {"resolution": "answered", "value": "b"})[0], 200
            )
            entries = []
            for _ in range(5):
                entries = [e for e in lease.drain(wait=2).entries if e.kind == "response"]
                if entries:
                    break
            self.assertEqual(len(entries), 1)
            resolution = entries[0].resolution
            assert resolution is not None
            self.assertEqual((resolution.in_reply_to, resolution.value, resolution.channel), (ack.id, "b", "mailbox"))
            self.assertEqual(lease.ack(entries), 1)
            self.assertTrue(hub.wait(ack.id, timeout=5).duplicate, "pull after the mailbox: one resolution")
            sessions = hub.list_sessions()
            self.assertIn(lease.id, [s.id for s in sessions.sessions])
            self.assertEqual(sessions.scope, "own")
        self.assertEqual(hub.get_session(lease.id).state, "closed")

    def test_the_operator_stop_is_final_for_the_lease(self) -> None:
        hub = new_hub()
        lease = hub.lease(label="to be stopped")
        try:
            self.assertEqual(operator("DELETE", f"/v1/sessions/{lease.id}")[0], 200)  # the kill-switch
            with self.assertRaises(SessionClosedByOperator) as stop:
                lease.drain()
            self.assertEqual((stop.exception.status, stop.exception.session), (410, lease.id))
            with self.assertRaises(StoppedByOperator):
                lease.submit(hub.notify("still here?"))
            with self.assertRaises(SessionClosedByOperator) as refused:
                hub.register_session(label="sneaking back")
            self.assertEqual(refused.exception.status, 403)
            self.assertEqual([s.closed_by_operator for s in hub.list_sessions().sessions if s.id == lease.id], [True])
        finally:
            self.assertEqual(operator("DELETE", f"/v1/agents/{AGENT}/stop")[0], 200)  # only a human lifts it
        with self.assertRaises(StoppedByOperator):
            lease.drain()  # lifted or not, this lease never re-registers
        hub.lease().close()  # a new lease after a human lifted the stop

    def test_state_sealed_by_the_rust_cli_opens_in_python_and_vice_versa(self) -> None:
        key = StateKey.generate()
        env = dict(os.environ, MA2H_STATE_KEY=key.to_base64(), MA2H_AGENT_ID=AGENT)
        state = {"build": 412, "é": [1, 2.5, None]}
        rust = subprocess.run(
            [ENV["MA2H_BIN"], "seal-state"],
            input=json.dumps(state),
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        self.assertEqual(sealing.open(key, AGENT, json.loads(rust)), state)
        mine = json.dumps(sealing.seal(key, AGENT, state))
        opened = subprocess.run([ENV["MA2H_BIN"], "open-state"], input=mine, env=env, capture_output=True, text=True)
        self.assertEqual((opened.returncode, json.loads(opened.stdout)), (0, state))
        other = subprocess.run(
            [ENV["MA2H_BIN"], "open-state"],
            input=mine,
            env=dict(env, MA2H_AGENT_ID="someone-else"),
            capture_output=True,
            text=True,
        )
        self.assertEqual(other.returncode, 7, "sealed for another agent: refused by the Rust client too")

    def run_example(self, name: str) -> str:
        """Run an example; answer its ask as the operator once it prints the id; its stdout."""
        env = dict(os.environ, MA2H_RESOLVERS="human:dev", PYTHONUNBUFFERED="1")
        env.pop("MA2H_STATE_KEY", None)
        proc = subprocess.Popen(
            [sys.executable, str(EXAMPLES / name)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            lines = []
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.append(line)
                found = re.search(r"asked (msg_[A-Za-z0-9]+)", line)
                if found:
                    status, body = operator(
                        "POST", f"/v1/messages/{found.group(1)}/resolve", {"resolution": "answered", "value": "ship"}
                    )
                    self.assertEqual(status, 200, body)
                    break
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        self.assertEqual(proc.returncode, 0, err)
        return "".join(lines) + out

    def test_the_examples_run_against_the_hub(self) -> None:
        self.assertIn("deploying build 412 (9f1c2ab)", self.run_example("plain_script.py"))
        out = self.run_example("langgraph_style.py")
        self.assertIn("human:dev answered 'ship'", out)
        self.assertIn("deployed build 412", out)

    def test_ed25519_signed_entries_verify_with_the_published_keys(self) -> None:
        admin("set-signing", "--account", "dev", "--agent", AGENT, "--alg", "ed25519")
        try:
            hmac_only = new_hub()
            _, first = operator("POST", "/v1/operator/directives", {"to": f"agent:{AGENT}", "title": "Signed how?"})
            drained = hmac_only.drain(wait=5)
            rejected = [r for r in drained.rejected if r.entry.get("directive", {}).get("id") == first["id"]]
            self.assertEqual([r.error.reason for r in rejected], ["mismatch"])
            with_keys = new_hub()
            self.assertTrue(with_keys.trust_published_keys())
            _, second = operator("POST", "/v1/operator/directives", {"to": f"agent:{AGENT}", "title": "Ed25519"})
            verified = [e for e in with_keys.drain(wait=5).entries if e.ack_key == second["id"]]
            self.assertEqual(len(verified), 1)
            with_keys.ack([first["id"], second["id"]])
        finally:
            admin("set-signing", "--account", "dev", "--agent", AGENT, "--alg", "hmac-sha256")


if __name__ == "__main__":
    unittest.main()
