"""Hub client behaviour against a scripted transport: §8.1 retry recipe, §8.6 Retry-After, §8.5
errors, §8.2 reads and the wait loop, §8.4 cancel, builders."""

from __future__ import annotations

import json
import os
import unittest
from typing import Any, Callable, Dict, List, Optional, Tuple
from unittest import mock

from ma2h import (
    AlreadyTerminal,
    Callback,
    ConfigError,
    Gone,
    Hub,
    HubError,
    IdempotencyConflict,
    InternalError,
    MisrouteError,
    NotFound,
    ProtocolError,
    RetryPolicy,
    SessionClosedByOperator,
    StoppedByOperator,
    TransportError,
    ValidationError,
    WaitTimeout,
    build_ask,
)
from ma2h._transport import Reply, parse_retry_after

Call = Tuple[str, str, Dict[str, str], Optional[bytes]]


def reply(status: int, body: Any = None, retry_after: Optional[float] = None) -> Reply:
    data = b"" if body is None else json.dumps(body).encode()
    return Reply(status=status, headers={}, body=data, retry_after=retry_after)


def error(http_status: int, code: str, **extra: Any) -> Reply:
    return reply(http_status, {"error": {"code": code, "message": f"{code}!"}, **extra})


class Script:
    """A transport answering from a list of replies (or exceptions), recording every call."""

    def __init__(self, *answers: Any) -> None:
        self.answers: List[Any] = list(answers)
        self.calls: List[Call] = []

    def __call__(self, method: str, url: str, headers: Dict[str, str], body: Optional[bytes], timeout: float) -> Reply:
        self.calls.append((method, url, headers, body))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer(method, url, body) if callable(answer) else answer


def hub(script: Script, sleeps: Optional[List[float]] = None, **kw: Any) -> Hub:
    record: Callable[[float], None] = sleeps.append if sleeps is not None else (lambda s: None)
    return Hub(
        "http://hub.test/",
        "ma2h_ak_secret",
        "bot",
        "whsec_x",
        transport=script,
        sleep=record,
        resolvers=["human:alice"],
        **kw,
    )


ACK = {"id": "msg_1", "status": "open", "poll_url": "http://hub.test/v1/messages/msg_1"}


class Submit(unittest.TestCase):
    def test_lost_ack_recipe_resends_the_same_bytes_until_a_202(self) -> None:
        script = Script(TransportError("reset"), error(502, "internal_error"), reply(202, ACK))
        sleeps: List[float] = []
        h = hub(script, sleeps)
        ack = h.submit(h.ask("Ship?", options=["ship", "hold"]))
        self.assertEqual((ack.id, ack.status, ack.attempts), ("msg_1", "open", 3))
        bodies = [c[3] for c in script.calls]
        self.assertEqual(len(set(bodies)), 1, "every attempt sends the same bytes (same idempotency key)")
        sent = json.loads(bodies[0] or b"")
        self.assertEqual(sent["idempotency_key"], ack.idempotency_key)
        self.assertEqual(sent["request"]["allowed_resolvers"], ["human:alice"])
        self.assertEqual(sleeps, [0.5, 1.0])
        self.assertEqual(script.calls[0][2]["Authorization"], "Bearer ma2h_ak_secret")

    def test_429_waits_out_retry_after(self) -> None:
        sleeps: List[float] = []
        h = hub(
            Script(
                error(
                    429,
                    "rate_limited",
                ),
                reply(202, ACK),
            ),
            sleeps,
        )
        h._transport.answers[0] = Reply(429, {}, b'{"error":{"code":"rate_limited","message":"slow"}}', 7.0)  # type: ignore[attr-defined]
        self.assertEqual(h.submit(h.notify("hi")).attempts, 2)
        self.assertEqual(sleeps, [7.0])

    def test_409_and_4xx_are_final_and_the_budget_is_bounded(self) -> None:
        h = hub(Script(error(409, "idempotency_conflict"), error(400, "validation_error")))
        with self.assertRaises(IdempotencyConflict):
            h.submit(h.ask("x"))
        with self.assertRaises(ValidationError):
            h.submit(h.ask("x"))
        script = Script(*[error(503, "internal_error")] * 3)
        with self.assertRaises(InternalError):
            hub(script, retry=RetryPolicy(max_attempts=3)).submit(build_ask(hub(Script()).agent, "x"))
        self.assertEqual(len(script.calls), 3)

    def test_resubmitting_one_message_reuses_its_key_and_payload(self) -> None:
        script = Script(reply(202, ACK), reply(202, ACK))
        h = hub(script)
        msg = h.ask("Ship?")
        self.assertEqual(h.submit(msg).id, h.submit(msg).id)
        self.assertEqual(script.calls[0][3], script.calls[1][3])

    def test_an_addressed_submit_acked_without_destination_is_a_misroute_and_is_cancelled(self) -> None:
        script = Script(reply(202, ACK), reply(200, {"id": "msg_1", "status": "cancelled"}))
        h = hub(script)
        with self.assertRaises(MisrouteError) as caught:
            h.submit(h.ask("peer?", to="agent:worker"))
        self.assertTrue(caught.exception.cancelled)
        self.assertTrue(script.calls[1][1].endswith("/v1/messages/msg_1/cancel"))
        ok = hub(Script(reply(202, dict(ACK, destination={"state": "unknown"}))))
        self.assertEqual(ok.submit(ok.ask("peer?", to="agent:worker")).destination, {"state": "unknown"})

    def test_a_non_ack_answer_is_a_protocol_error(self) -> None:
        with self.assertRaises(ProtocolError):
            hub(Script(reply(202, {"ok": True}))).submit(hub(Script()).notify("x"))


class Errors(unittest.TestCase):
    def test_codes_map_to_classes_with_the_unknown_code_fallback(self) -> None:
        self.assertIsInstance(HubError.from_response(404, b"<html>"), NotFound)
        e = HubError.from_response(410, b'{"error":{"code":"some_future_code","message":"m"}}')
        self.assertIsInstance(e, Gone)
        self.assertEqual(e.code, "some_future_code")
        stop = HubError.from_response(403, b'{"error":{"code":"session_closed_by_operator","message":"m"}}')
        self.assertIsInstance(stop, SessionClosedByOperator)
        self.assertIsInstance(stop, StoppedByOperator)
        self.assertIsInstance(HubError.from_response(500, b""), InternalError)

    def test_retry_after_forms(self) -> None:
        self.assertEqual(parse_retry_after("7"), 7.0)
        self.assertEqual(parse_retry_after("Thu, 04 Jun 2026 12:00:05 GMT", now=1780574400.0), 5.0)
        self.assertIsNone(parse_retry_after("soon"))
        self.assertIsNone(parse_retry_after(None))


class ReadAndWait(unittest.TestCase):
    RESPONSE = {
        "ma2h_version": "0.5",
        "in_reply_to": "msg_1",
        "resolution_id": "res_1",
        "resolution": "answered",
        "agent": {"id": "bot", "run_id": "r"},
        "response": {"value": "ship", "actor": "human:alice", "resolved_at": "2026-06-04T12:00:00Z"},
    }

    def test_wait_long_polls_until_terminal_and_dedups_the_resolution(self) -> None:
        open_ = {"id": "msg_1", "type": "ask", "status": "open"}
        done = {"id": "msg_1", "type": "ask", "status": "answered", "response": self.RESPONSE}
        script = Script(reply(200, open_), error(503, "internal_error"), reply(200, done), reply(200, done))
        h = hub(script)
        seen: List[str] = []
        r = h.wait("msg_1", on_status=lambda b: seen.append(b["status"]))
        self.assertEqual((r.value, r.actor, r.channel, r.duplicate), ("ship", "human:alice", "pull", False))
        self.assertEqual(seen, ["open", "answered"])
        self.assertIn("?wait=30", script.calls[0][1])
        self.assertTrue(h.wait("msg_1").duplicate)  # already taken once

    def test_wait_times_out_with_the_last_body(self) -> None:
        h = hub(Script(reply(200, {"id": "msg_1", "type": "ask", "status": "open"})))
        with self.assertRaises(WaitTimeout) as caught:
            h.wait("msg_1", timeout=0)
        self.assertEqual(caught.exception.body["status"], "open")

    def test_reads_that_are_not_the_message_are_refused(self) -> None:
        for body in (
            {"id": "msg_2", "status": "open"},
            {"id": "msg_1"},
            {"id": "msg_1", "type": "ask", "status": "answered"},
            {"id": "msg_1", "type": "ask", "status": "answered", "response": dict(self.RESPONSE, in_reply_to="msg_9")},
        ):
            with self.subTest(body=body), self.assertRaises(ProtocolError):
                hub(Script(reply(200, body))).wait("msg_1")
        with self.assertRaises(ConfigError):
            hub(Script()).get("..")

    def test_cancel_outcomes(self) -> None:
        h = hub(
            Script(
                reply(200, {"id": "msg_1", "status": "cancelled"}),
                error(409, "already_terminal", id="msg_1", status="answered", resolution="answered"),
                error(404, "not_found"),
            )
        )
        self.assertTrue(h.cancel("msg_1").cancelled)
        lost = h.cancel("msg_1")
        self.assertEqual((lost.cancelled, lost.status, lost.resolution), (False, "answered", "answered"))
        with self.assertRaises(NotFound):
            h.cancel("msg_1")

    def test_resolve_with_session_and_a_lost_race(self) -> None:
        script = Script(
            reply(200, {"id": "msg_1", "status": "answered", "resolution_id": "res_1"}),
            error(409, "already_terminal", id="msg_1", status="declined", resolution="declined"),
        )
        h = hub(script)
        won = h.resolve("msg_1", "answered", "yes", comment="ok", session="sess_A")
        self.assertEqual((won.resolved, won.resolution_id), (True, "res_1"))
        self.assertTrue(script.calls[0][1].endswith("/v1/messages/msg_1/resolve?session=sess_A"))
        self.assertEqual(
            json.loads(script.calls[0][3] or b""), {"resolution": "answered", "value": "yes", "comment": "ok"}
        )
        self.assertFalse(h.resolve("msg_1", "declined").resolved)
        with self.assertRaises(AlreadyTerminal):
            raise HubError.from_response(409, b'{"error":{"code":"already_terminal","message":"m"}}')


class Builders(unittest.TestCase):
    def test_mode_rules_are_checked_locally(self) -> None:
        h = hub(Script())
        for bad in (
            dict(mode="select"),
            dict(mode="input"),
            dict(mode="confirm", options=["a", "b", "c"]),
            dict(mode="poll"),
        ):
            with self.subTest(bad=bad), self.assertRaises(ConfigError):
                h.ask("x", **bad)
        self.assertEqual(h.ask("x").envelope["request"]["mode"], "confirm")
        self.assertEqual(h.ask("x", schema={"type": "object"}).envelope["request"]["mode"], "input")
        with self.assertRaises(ConfigError):
            h.notify("")
        with self.assertRaises(ConfigError):
            h.notify("x", priority="extreme")

    def test_envelopes(self) -> None:
        h = hub(Script())
        env = h.ask(
            "Ship?",
            options=[("ship", "Ship now"), "hold"],
            default_on_expire="hold",
            expires_in=600,
            callback=Callback("https://me.example/cb", secret_ref="cb"),
            tags=["deploy"],
        ).envelope
        self.assertEqual(
            env["request"]["options"], [{"value": "ship", "label": "Ship now"}, {"value": "hold", "label": "hold"}]
        )
        self.assertEqual(
            env["request"]["callback"],
            {"mode": "push", "url": "https://me.example/cb", "auth": {"scheme": "hmac", "secret_ref": "cb"}},
        )
        self.assertEqual((env["ma2h_version"], env["agent"]["id"], env["agent"]["runtime"]), ("0.5", "bot", "other"))
        self.assertTrue(env["idempotency_key"].startswith("ma2h-"))
        # an addressed ask defaults to its addressee as resolver, not to MA2H_RESOLVERS (§9.1, v0.5)
        self.assertNotIn("allowed_resolvers", h.ask("peer?", to="agent:worker").envelope["request"])
        self.assertEqual(h.ask("x").envelope["request"]["allowed_resolvers"], ["human:alice"])
        task = h.task("Rotate", "rotate the key", checklist=["new key"]).envelope
        self.assertEqual(task["action"]["checklist"], [{"text": "new key", "done": False}])
        self.assertNotIn("idempotency_key", h.notify("hi").envelope)

    def test_expires_in_rounds_up_so_the_message_lives_at_least_that_long(self) -> None:
        from datetime import datetime, timezone

        from ma2h import builders

        class Clock(datetime):
            @classmethod
            def now(cls, tz: Any = None) -> "Clock":
                return cls(2026, 12, 8, 0, 0, 0, 900_000, tzinfo=timezone.utc)

        h = hub(Script())
        with mock.patch.object(builders, "datetime", Clock):
            self.assertEqual(h.ask("x", expires_in=1).envelope["expires_at"], "2026-12-08T00:00:02Z")

    def test_state_is_sealed_unless_told_otherwise(self) -> None:
        with self.assertRaises(ConfigError):
            hub(Script()).ask("x", state={"a": 1})
        h = hub(Script(), state_key="ab" * 32)
        sealed = h.ask("x", state={"a": 1}).envelope["state"]
        self.assertEqual(sealed["ma2h_sealed"], "v1")
        self.assertEqual(h.open_state(sealed), {"a": 1})
        self.assertEqual(h.ask("x", state={"a": 1}, seal=False).envelope["state"], {"a": 1})

    def test_config_and_redaction(self) -> None:
        h = hub(Script(), state_key="ab" * 32)
        self.assertNotIn("secret", repr(h))
        self.assertNotIn("whsec", repr(h.keys))
        for bad in (
            dict(url="ftp://x", key="k"),
            dict(url="http://x", key=""),
            dict(url="http://x", key="k", agent_id="a#b"),
        ):
            with self.subTest(bad=bad), self.assertRaises(ConfigError):
                Hub(**bad)  # type: ignore[arg-type]
        env = {
            "MA2H_HUB_URL": "http://h.test",
            "MA2H_API_KEY": "k",
            "MA2H_AGENT_ID": "bot",
            "MA2H_RESOLVERS": "human:a, human:b",
            "MA2H_ACCEPT_FROM": "coord",
        }
        with mock.patch.dict(os.environ, env, clear=True):
            from_env = Hub.from_env()
        self.assertEqual((from_env.resolvers, from_env.accept_from), (["human:a", "human:b"], frozenset({"coord"})))


if __name__ == "__main__":
    unittest.main()
