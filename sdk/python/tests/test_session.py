"""§16 SessionLease against a stand-in Hub: re-register on an ended session, and the §16.4.1 hard
stop — latched, never retried, never re-registered through."""

from __future__ import annotations

import json
import unittest
import urllib.parse
from typing import Any, Dict, List, Optional

from ma2h import Hub, LeaseClosed, SessionEnded, StoppedByOperator
from ma2h._transport import Reply


def _reply(status: int, body: Any) -> Reply:
    return Reply(status=status, headers={}, body=json.dumps(body).encode(), retry_after=None)


def _err(status: int, code: str) -> Reply:
    return _reply(status, {"error": {"code": code, "message": code}})


class FakeHub:
    """Just enough of the Hub's session behaviour (§16.3 touchpoint table)."""

    def __init__(self) -> None:
        self.sessions: Dict[str, str] = {}  # id -> active | expired | closed | operator
        self.stopped = False
        self.minted = 0
        self.calls: List[str] = []
        self.submits: List[Dict[str, Any]] = []
        self.scope = "own"

    def session(self, sid: str) -> Dict[str, Any]:
        state = self.sessions[sid]
        out = {
            "id": sid,
            "agent_id": "bot",
            "state": "closed" if state == "operator" else state,
            "created_at": "2026-06-04T12:00:00Z",
            "expires_at": "2026-06-04T12:15:00Z",
            "ttl_seconds": 900,
        }
        if state == "operator":
            out["closed_by_operator"] = True
        return out

    def presented(self, sid: str) -> Optional[Reply]:
        state = self.sessions.get(sid)
        if state is None:
            return _err(404, "not_found")
        if state == "operator":
            return _err(410, "session_closed_by_operator")
        return None if state == "active" else _err(410, "gone")

    def __call__(self, method: str, url: str, headers: Dict[str, str], body: Optional[bytes], timeout: float) -> Reply:
        parts = urllib.parse.urlsplit(url)
        query = dict(urllib.parse.parse_qsl(parts.query))
        self.calls.append(f"{method} {parts.path}")
        if method == "POST" and parts.path == "/v1/sessions":
            if self.stopped:
                return _err(403, "session_closed_by_operator")
            self.minted += 1
            sid = f"sess_{self.minted}"
            self.sessions[sid] = "active"
            return _reply(201, {"session": self.session(sid)})
        if method == "GET" and parts.path == "/v1/sessions":
            return _reply(200, {"sessions": [self.session(s) for s in self.sessions], "scope": self.scope})
        if parts.path.startswith("/v1/sessions/"):
            sid = parts.path.rsplit("/", 1)[1]
            if sid not in self.sessions:
                return _err(404, "not_found")
            if method == "DELETE" and self.sessions[sid] == "active":
                self.sessions[sid] = "closed"
            return _reply(200, {"session": self.session(sid)})
        if parts.path in ("/v1/inbox", "/v1/inbox/ack"):
            refused = self.presented(query["session"])
            if refused is not None:
                return refused
            return _reply(200, {"messages": []} if method == "GET" else {"acked": 1})
        if parts.path == "/v1/messages":
            env = json.loads(body or b"")
            refused = self.presented(env["agent"]["session"])
            if refused is not None:  # a submit reads an ended session as destination_gone (§16.3)
                code = json.loads(refused.body)["error"]["code"]
                return _err(410, code if code == "session_closed_by_operator" else "destination_gone")
            self.submits.append(env)
            return _reply(202, {"id": "msg_1", "status": "open", "poll_url": "x"})
        raise AssertionError(f"unexpected {method} {url}")


def setup() -> "tuple[FakeHub, Hub]":
    fake = FakeHub()
    return fake, Hub("http://hub.test", "k", "bot", "whsec_x", transport=fake)


class Lease(unittest.TestCase):
    def test_an_ended_session_is_replaced_once_and_the_call_retried(self) -> None:
        fake, hub = setup()
        lease = hub.lease(label="run", ttl_seconds=600)
        self.assertEqual((lease.id, lease.address), ("sess_1", "agent:bot#sess_1"))
        self.assertEqual(lease.drain().session, "sess_1")
        self.assertEqual(lease.renew(), "sess_1")  # an empty ack presenting the session
        fake.sessions["sess_1"] = "expired"
        self.assertEqual(lease.drain().session, "sess_2")
        self.assertEqual((lease.id, lease.previous_ids), ("sess_2", ["sess_1"]))
        del fake.sessions["sess_2"]  # ended and purged: the 404 self-heal
        self.assertEqual(lease.ack(["dir_1"]), 1)
        self.assertEqual(lease.id, "sess_3")
        lease.reregister = False
        fake.sessions["sess_3"] = "closed"
        with self.assertRaises(SessionEnded):
            lease.drain()

    def test_a_submit_carries_the_session_and_survives_a_replacement_with_the_same_key(self) -> None:
        fake, hub = setup()
        lease = hub.lease()
        msg = hub.ask("Ship?", allowed_resolvers=["human:a"])
        lease.submit(msg)
        fake.sessions["sess_1"] = "expired"
        lease.submit(msg)
        self.assertEqual([s["agent"]["session"] for s in fake.submits], ["sess_1", "sess_2"])
        self.assertEqual(len({s["idempotency_key"] for s in fake.submits}), 1)
        self.assertIn("GET /v1/sessions/sess_1", fake.calls)  # the ambiguous 410 was explained first
        bare = {k: v for k, v in msg.envelope.items() if k != "idempotency_key"}
        fake.sessions["sess_2"] = "expired"
        lease.submit(bare)  # a plain envelope is keyed once, before the first attempt
        self.assertEqual(fake.submits[-1]["agent"]["session"], "sess_3")
        self.assertTrue(fake.submits[-1]["idempotency_key"].startswith("ma2h-"))

    def test_the_operator_stop_is_latched_and_never_registered_through(self) -> None:
        fake, hub = setup()
        lease = hub.lease()
        fake.sessions["sess_1"] = "operator"
        fake.stopped = True
        with self.assertRaises(StoppedByOperator) as first:
            lease.drain()
        self.assertEqual(first.exception.session, "sess_1")
        calls = len(fake.calls)
        for call in (
            lambda: lease.drain(),
            lambda: lease.ack(["x"]),
            lambda: lease.renew(),
            lambda: lease.submit(hub.notify("hi")),
            lambda: lease.resolve("msg_1", "declined"),
        ):
            with self.assertRaises(StoppedByOperator):
                call()
        self.assertEqual(len(fake.calls), calls, "latched: the Hub is not called again")
        self.assertEqual(fake.minted, 1, "no registration through the stop")
        self.assertIsNotNone(lease.stopped)
        self.assertIsNone(lease.close())  # ends the lease without contacting the Hub
        self.assertEqual(len(fake.calls), calls)

    def test_a_stop_met_while_re_registering_is_latched_too(self) -> None:
        fake, hub = setup()
        lease = hub.lease()
        fake.sessions["sess_1"] = "expired"  # the session lapsed, and meanwhile the agent was stopped
        fake.stopped = True
        with self.assertRaises(StoppedByOperator):
            lease.drain()
        calls = len(fake.calls)
        with self.assertRaises(StoppedByOperator):
            lease.drain()
        self.assertEqual((len(fake.calls), fake.minted), (calls, 1))

    def test_a_stop_on_a_submit_is_recognised_without_a_probe(self) -> None:
        fake, hub = setup()
        lease = hub.lease()
        fake.sessions["sess_1"] = "operator"
        with self.assertRaises(StoppedByOperator):
            lease.submit(hub.notify("hi"))
        self.assertNotIn("GET /v1/sessions/sess_1", fake.calls)
        self.assertEqual(fake.minted, 1)

    def test_register_refused_by_a_stop_and_close(self) -> None:
        fake, hub = setup()
        with hub.lease() as lease:
            self.assertEqual(lease.drain().session, "sess_1")
        self.assertEqual(fake.sessions["sess_1"], "closed")
        with self.assertRaises(LeaseClosed):
            lease.drain()
        fake.stopped = True
        with self.assertRaises(StoppedByOperator):
            hub.register_session()
        listed = hub.list_sessions()
        self.assertEqual(([x.id for x in listed.sessions], listed.scope), (["sess_1"], "own"))
        fake.scope = "galaxy"
        self.assertIsNone(hub.list_sessions().scope, "an unknown scope is unknown, never `account` (§16.4)")


if __name__ == "__main__":
    unittest.main()
