"""§9.2: the header, the ``v1`` rule (dp-025), HMAC/Ed25519 verification, the window, dp-001/dp-003."""

from __future__ import annotations

import base64
import unittest

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from vectors import DP_001, DP_003, DP_025, TEST_KEY

from ma2h import jcs
from ma2h.contexts import payload_sha256, response_context
from ma2h.errors import SignatureError
from ma2h.signature import (
    Ed25519Key,
    HmacKey,
    b64url,
    check_window,
    decode_mac,
    format_header,
    is_well_formed_mac,
    keys_from_capability,
    parse_header,
    parse_signature_member,
    sign_hmac,
    verify_canonical,
)

KEY = HmacKey(TEST_KEY)


def reason(fn: object, *args: object) -> str:
    try:
        fn(*args)  # type: ignore[operator]
    except SignatureError as e:
        return e.reason
    return "accepted"


class MacWellFormedness(unittest.TestCase):
    def test_dp025_cases(self) -> None:
        for case in DP_025["cases"]:
            with self.subTest(value=case["value"]):
                raw = decode_mac(case["value"])
                self.assertEqual(is_well_formed_mac(case["value"]), case["expect"] == "well-formed")
                if case["expect"] == "well-formed":
                    assert raw is not None
                    self.assertEqual(len(raw), case["decoded_length"])
                    if "decodes_identically_to" in case:
                        self.assertEqual(raw, decode_mac(case["decodes_identically_to"]))
                else:
                    self.assertIsNone(raw)

    def test_dp025_signer_output_is_reproduced(self) -> None:
        canonical = jcs.canonicalize(DP_025["signed_context"])
        self.assertEqual(canonical.decode(), DP_025["canonical_jcs"])
        self.assertEqual(sign_hmac(canonical, KEY), DP_025["v1"])

    def test_more_boundaries(self) -> None:
        sig64 = b64url(bytes(64))
        self.assertTrue(is_well_formed_mac(sig64))  # an Ed25519 signature: 86 chars, takes "=="
        self.assertTrue(is_well_formed_mac(sig64 + "=="))
        self.assertFalse(is_well_formed_mac(sig64 + "="))
        self.assertFalse(is_well_formed_mac(""))
        self.assertFalse(is_well_formed_mac("A" * 41))  # 41 ≡ 1 (mod 4): structurally impossible
        self.assertFalse(is_well_formed_mac(b64url(bytes(31))))  # under the 32-byte floor
        self.assertFalse(is_well_formed_mac("In3evtBNZywRzuNYkphbw-_764_Wu98zW=M5rZ1iN4VI"))
        self.assertFalse(is_well_formed_mac("Iñ3evtBNZywRzuNYkphbw-_764_Wu98zWM5rZ1iN4VI"))


class Header(unittest.TestCase):
    def test_dp001_header_parses_in_any_order_and_with_its_name(self) -> None:
        p = parse_signature_member(DP_001["header"])
        self.assertEqual(
            (p.t, p.t_unix, p.jti, p.v1), ("1749050910", 1749050910, "jti_01HZX7Q9Z3DEMOFIX", DP_001["v1"])
        )
        value = DP_001["header"].split(": ", 1)[1]
        self.assertEqual(parse_header(value), p)
        reordered = f"v1={p.v1}, jti={p.jti},t={p.t}"
        self.assertEqual(parse_header(reordered), p)
        self.assertEqual(format_header(p.t, p.jti, p.v1, with_name=True), DP_001["header"])

    def test_malformed_headers_are_rejected(self) -> None:
        v1 = DP_001["v1"]
        cases = {
            "t=1,jti=x": "malformed_header",
            f"t=1,jti=x,v1={v1},v1={v1}": "malformed_header",
            f"t=01,jti=x,v1={v1}": "malformed_header",
            f"t=-1,jti=x,v1={v1}": "malformed_header",
            f"t=1.5,jti=x,v1={v1}": "malformed_header",
            f"t=1,jti=,v1={v1}": "malformed_header",
            f"t=1,jti=a b,v1={v1}": "malformed_header",
            f"t=1,jti=x,v1={v1},v2=y": "malformed_header",
            f"t=1,jti=x,{v1}": "malformed_header",
            "t=1,jti=x,v1=short": "bad_mac",
            f"t=1,jti={'j' * 257},v1={v1}": "malformed_header",
            f"t=١,jti=x,v1={v1}": "malformed_header",
            "": "malformed_header",
            "x" * 5000: "malformed_header",
        }
        for value, why in cases.items():
            with self.subTest(value=value[:60]):
                self.assertEqual(reason(parse_header, value), why)
        self.assertEqual(reason(parse_signature_member, f"Other: t=1,jti=x,v1={v1}"), "malformed_header")


class Verify(unittest.TestCase):
    def test_dp001_reproduces_the_digest_canonical_bytes_and_v1(self) -> None:
        body = {
            "ma2h_version": "0.3",
            "in_reply_to": "msg_01HZXASK0001",
            "resolution_id": "res_01HZXR3SOLVE",
            "resolution": "answered",
            **DP_001["payload"],
        }
        ctx = response_context(body, DP_001["signed_context"]["callback_url"], "jti_01HZX7Q9Z3DEMOFIX", "1749050910")
        self.assertEqual(ctx, DP_001["signed_context"])
        self.assertEqual(
            payload_sha256(DP_001["payload"]["response"], DP_001["payload"]["state"]),
            DP_001["signed_context"]["payload_sha256"],
        )
        canonical = jcs.canonicalize(ctx)
        self.assertEqual(canonical.decode(), DP_001["canonical_jcs"])
        self.assertEqual(sign_hmac(canonical, HmacKey(DP_001["test_key"])), DP_001["v1"])
        verify_canonical(canonical, DP_001["v1"], [KEY])

    def test_dp001_a_tampered_context_fails(self) -> None:
        for field, value in (
            ("resolution", "declined"),
            ("callback_url", "https://evil.example/"),
            ("resolution_id", "res_other"),
            ("t", "1749050911"),
        ):
            ctx = dict(DP_001["signed_context"], **{field: value})
            with self.subTest(field=field):
                self.assertEqual(reason(verify_canonical, jcs.canonicalize(ctx), DP_001["v1"], [KEY]), "mismatch")

    def test_dp003_a_flipped_value_fails_with_mismatch(self) -> None:
        signed = DP_003["signed_context"]
        for payload, expected in ((DP_003["honest_payload"], "accepted"), (DP_003["tampered_payload"], "mismatch")):
            body = {
                "ma2h_version": signed["ma2h_version"],
                "in_reply_to": signed["in_reply_to"],
                "resolution_id": signed["resolution_id"],
                "resolution": signed["resolution"],
                **payload,
            }
            canonical = jcs.canonicalize(response_context(body, signed["callback_url"], signed["jti"], signed["t"]))
            self.assertEqual(reason(verify_canonical, canonical, DP_003["v1"], [KEY]), expected)

    def test_any_held_key_verifies_and_none_is_refused(self) -> None:
        canonical = DP_001["canonical_jcs"].encode()
        verify_canonical(canonical, DP_001["v1"], [HmacKey("old-secret"), KEY])  # rotation overlap
        self.assertEqual(reason(verify_canonical, canonical, DP_001["v1"], [HmacKey("other")]), "mismatch")
        self.assertEqual(reason(verify_canonical, canonical, DP_001["v1"], []), "no_keys")
        self.assertEqual(reason(verify_canonical, canonical, "not-a-mac", [KEY]), "bad_mac")

    def test_ed25519_signatures_verify_with_the_published_key(self) -> None:
        private = Ed25519PrivateKey.generate()
        public = private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        doc = {
            "signing_keys": [
                {"alg": "ed25519", "public_key": b64url(public), "status": "current"},
                {
                    "alg": "ed25519",
                    "public_key": base64.urlsafe_b64encode(bytes(range(32))).decode(),
                    "status": "previous",
                },
                {"alg": "hmac-sha256", "public_key": b64url(public)},
                {"alg": "ed25519", "public_key": "!!"},
                {"alg": "ed25519"},
            ]
        }
        keys = keys_from_capability(doc)
        self.assertEqual([k.public_bytes for k in keys], [public, bytes(range(32))])
        canonical = DP_001["canonical_jcs"].encode()
        v1 = b64url(private.sign(canonical))
        verify_canonical(canonical, v1, keys)
        self.assertEqual(reason(verify_canonical, canonical[:-1] + b" ", v1, keys), "mismatch")
        self.assertEqual(reason(verify_canonical, canonical, DP_001["v1"], keys), "mismatch")  # 32 bytes: not Ed25519
        self.assertEqual(keys_from_capability({}), [])

    def test_window_edges_are_inclusive(self) -> None:
        check_window(1000, 1120)
        check_window(1120, 1000)
        self.assertEqual(reason(check_window, 1000, 1121), "out_of_window")
        self.assertEqual(reason(check_window, 1121, 1000), "out_of_window")
        self.assertEqual(reason(check_window, 1000, 1010, 5), "out_of_window")

    def test_secrets_are_redacted(self) -> None:
        self.assertEqual(repr(HmacKey("whsec_topsecret")), "HmacKey(<redacted>)")
        self.assertNotIn("topsecret", repr([HmacKey("whsec_topsecret")]))
        self.assertEqual(HmacKey("a"), HmacKey(b"a"))
        self.assertIn(b64url(bytes(range(32))), repr(Ed25519Key(bytes(range(32)))))  # public: fine to show


if __name__ == "__main__":
    unittest.main()
