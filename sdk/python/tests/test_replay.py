"""The replay cache (jti replay vs. duplicate delivery), its persistence, and §9.2 push verification."""

from __future__ import annotations

import json
import tempfile
import threading
import unittest
from pathlib import Path
from typing import Dict, Optional

from vectors import DP_001, TEST_KEY

from ma2h import jcs
from ma2h.contexts import response_context
from ma2h.errors import SignatureError
from ma2h.replay import JTI_TTL_SLACK_SECS, ReplayCache, ReplayCacheError, Seen
from ma2h.signature import HmacKey, format_header, sign_hmac
from ma2h.verify import CallbackVerifier

URL = DP_001["signed_context"]["callback_url"]
T = 1749050910
BODY = {
    "ma2h_version": "0.3",
    "in_reply_to": "msg_01HZXASK0001",
    "resolution_id": "res_01HZXR3SOLVE",
    "agent": {"id": "deploybot/dev-team", "run_id": "run_1"},
    "resolution": "answered",
    "defaulted": False,
    **DP_001["payload"],
}


def push(
    body: Dict[str, object], t: int = T, jti: str = "jti_01HZX7Q9Z3DEMOFIX", url: str = URL, key: str = TEST_KEY
) -> Dict[str, object]:
    """A pushed Response as a Hub sends it: headers and body bytes."""
    v1 = sign_hmac(jcs.canonicalize(response_context(body, url, jti, str(t))), HmacKey(key))
    return {"headers": {"MA2H-Signature": format_header(t, jti, v1)}, "body": json.dumps(body).encode()}


def outcome(v: CallbackVerifier, p: Dict[str, object], now: int = T) -> str:
    try:
        r = v.verify(p["headers"], p["body"], now)  # type: ignore[arg-type]
    except SignatureError as e:
        return e.reason
    return "duplicate" if r.duplicate else "accepted"


class Cache(unittest.TestCase):
    def check(self, cache: ReplayCache) -> None:
        self.assertIs(cache.check_and_record("j1", 1300, "msg_1", "res_1", 1000), Seen.FRESH)
        self.assertIs(cache.check_and_record("j1", 1300, "msg_1", "res_1", 1001), Seen.REPLAYED_JTI)
        self.assertIs(cache.check_and_record("j2", 1300, "msg_1", "res_1", 1002), Seen.DUPLICATE)
        self.assertIs(cache.check_and_record("j3", 1300, "msg_2", "res_2", 1003), Seen.FRESH)
        self.assertFalse(cache.mark_resolution("msg_2", "res_2", 1004))
        self.assertTrue(cache.mark_resolution("msg_3", "res_3", 1004))
        self.assertTrue(cache.has("msg_3", "res_3", 1005))
        # after its TTL the nonce is forgotten; the delivery is still remembered (35 days)
        self.assertIs(cache.check_and_record("j1", 1700, "msg_1", "res_1", 1400), Seen.DUPLICATE)

    def test_in_memory(self) -> None:
        self.check(ReplayCache())

    def test_persistent_file_is_shared_between_instances(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            self.check(ReplayCache(d))
            other = ReplayCache(d)
            self.assertIs(other.check_and_record("j1", 1800, "x", "y", 1401), Seen.REPLAYED_JTI)
            doc = json.loads((Path(d) / "replay.json").read_text())
            self.assertEqual(doc["jti"]["j1"], 1700)
            self.assertIn("msg_1 res_1", doc["resolutions"])  # the Rust CLI's key format
            self.assertFalse((Path(d) / "replay.lock").exists())
            self.assertEqual((Path(d) / "replay.json").stat().st_mode & 0o777, 0o600)

    def test_a_corrupt_file_fails_closed(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "replay.json").write_text("{not json")
            with self.assertRaises(ReplayCacheError):
                ReplayCache(d).check_and_record("j", 2000, "m", "r", 1000)
            verifier = CallbackVerifier(URL, [HmacKey(TEST_KEY)], ReplayCache(d))
            self.assertEqual(outcome(verifier, push(BODY)), "cache")

    def test_concurrent_recorders_accept_a_delivery_exactly_once(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            results = []

            def run(i: int) -> None:
                results.append(ReplayCache(d).check_and_record(f"j{i}", 2000, "msg_1", "res_1", 1000))

            threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            self.assertEqual(results.count(Seen.FRESH), 1)
            self.assertEqual(results.count(Seen.DUPLICATE), 7)


class PushVerification(unittest.TestCase):
    def verifier(self, cache: Optional[ReplayCache] = None) -> CallbackVerifier:
        return CallbackVerifier(URL, [HmacKey("previous-secret"), HmacKey(TEST_KEY)], cache)

    def test_dp001_delivery_is_accepted_then_replay_and_duplicate_are_told_apart(self) -> None:
        cache = ReplayCache()
        p = push(BODY)
        self.assertEqual(p["headers"]["MA2H-Signature"], DP_001["header"].split(": ", 1)[1])  # type: ignore[index]
        r = self.verifier(cache).verify(p["headers"], p["body"], T)  # type: ignore[arg-type]
        self.assertEqual(
            (r.in_reply_to, r.resolution_id, r.value, r.actor, r.channel, r.duplicate),
            ("msg_01HZXASK0001", "res_01HZXR3SOLVE", "hold", "human:alice", "push", False),
        )
        self.assertEqual(outcome(self.verifier(cache), p, T + 1), "replay")
        self.assertEqual(outcome(self.verifier(cache), push(BODY, T + 30, "jti_retry"), T + 30), "duplicate")
        # the jti is kept at least t + window (the TTL is never shorter than the window, §9.2)
        with tempfile.TemporaryDirectory() as d:
            CallbackVerifier(URL, [HmacKey(TEST_KEY)], ReplayCache(d)).verify(p["headers"], p["body"], T)  # type: ignore[arg-type]
            stored = json.loads((Path(d) / "replay.json").read_text())["jti"]["jti_01HZX7Q9Z3DEMOFIX"]
            self.assertEqual(stored, T + 120 + JTI_TTL_SLACK_SECS)

    def test_window_edges(self) -> None:
        v = self.verifier()
        self.assertEqual(outcome(v, push(BODY, jti="a"), T + 120), "accepted")
        self.assertEqual(outcome(v, push(BODY, jti="b"), T - 120), "accepted")
        self.assertEqual(outcome(v, push(BODY, jti="c"), T + 121), "out_of_window")
        self.assertEqual(outcome(v, push(BODY, jti="d"), T - 121), "out_of_window")

    def test_the_binding_is_the_receivers_own_url_and_the_received_payload(self) -> None:
        v = self.verifier()
        self.assertEqual(outcome(v, push(BODY, url="https://other.example/hook")), "mismatch")
        tampered = push(BODY)
        tampered["body"] = json.dumps(dict(BODY, response=dict(BODY["response"], value="ship"))).encode()  # type: ignore[arg-type]
        self.assertEqual(outcome(v, tampered), "mismatch")
        state = push(BODY)
        state["body"] = json.dumps(dict(BODY, state={"sealed": "other"})).encode()
        self.assertEqual(outcome(v, state), "mismatch")
        # unbound advisory members (`defaulted`, top-level `agent`) do not affect the signature
        advisory = push(BODY)
        advisory["body"] = json.dumps(dict(BODY, defaulted=True, agent={"id": "x", "run_id": "y"})).encode()
        self.assertEqual(outcome(v, advisory), "accepted")
        injected = push(BODY, jti="injected")
        injected["body"] = json.dumps(dict(BODY, run_this="rm -rf /")).encode()
        accepted = v.verify(injected["headers"], injected["body"], T)  # type: ignore[arg-type]
        self.assertNotIn("run_this", accepted.body, "unsigned top-level members are dropped")
        self.assertEqual(outcome(v, push(BODY, key="wrong-secret")), "mismatch")

    def test_malformed_deliveries_are_rejected(self) -> None:
        v = self.verifier()
        p = push(BODY)
        self.assertEqual(outcome(v, {"headers": {}, "body": p["body"]}), "missing_header")
        self.assertEqual(
            outcome(
                v,
                {
                    "headers": {
                        "ma2h-signature": p["headers"]["MA2H-Signature"],  # type: ignore[index]
                        "MA2H-Signature": p["headers"]["MA2H-Signature"],
                    },  # type: ignore[index]
                    "body": p["body"],
                },
            ),
            "malformed_header",
        )
        dup = p["body"][:-1] + b',"resolution":"declined"}'  # type: ignore[index]
        self.assertEqual(outcome(v, {"headers": p["headers"], "body": dup}), "bad_body")
        self.assertEqual(outcome(v, {"headers": p["headers"], "body": b"[1]"}), "bad_body")
        no_id = json.dumps({k: x for k, x in BODY.items() if k != "resolution_id"}).encode()
        self.assertEqual(outcome(v, {"headers": p["headers"], "body": no_id}), "bad_body")
        # a case-insensitive header name is fine
        self.assertEqual(
            outcome(
                v,
                {
                    "headers": {"ma2h-signature": p["headers"]["MA2H-Signature"]},  # type: ignore[index]
                    "body": p["body"],
                },
            ),
            "accepted",
        )


if __name__ == "__main__":
    unittest.main()
