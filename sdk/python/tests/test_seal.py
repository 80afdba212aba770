"""§9.3 sealed state: the XChaCha20-Poly1305 construction, round trip, tamper, wrong key/agent."""

from __future__ import annotations

import base64
import copy
import pickle
import unittest
from typing import Optional

from ma2h.errors import StateError
from ma2h.seal import (
    StateKey,
    hchacha20,
    is_sealed,
    seal,
    xchacha20poly1305_decrypt,
    xchacha20poly1305_encrypt,
)
from ma2h.seal import (
    open as open_state,
)

# source: draft-irtf-cfrg-xchacha-03 §2.2.1 — HChaCha20 test vector
HCHACHA_KEY = bytes(range(32))
HCHACHA_NONCE = bytes.fromhex("000000090000004a0000000031415927")
HCHACHA_OUT = bytes.fromhex("82413b4227b27bfed30e42508a877d73a0f9e4d58a74a853c12ec41326d3ecdc")
# source: draft-irtf-cfrg-xchacha-03 Appendix A.3.1 — AEAD_XChaCha20_Poly1305 test vector
X_KEY = bytes(range(0x80, 0xA0))
X_NONCE = bytes(range(0x40, 0x58))
X_AAD = bytes.fromhex("50515253c0c1c2c3c4c5c6c7")
X_PLAIN = (
    b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, "
    b"sunscreen would be it."
)
X_CIPHER = bytes.fromhex(
    "bd6d179d3e83d43b9576579493c0e939572a1700252bfaccbed2902c21396cbb731c7f1b0b4aa6440bf3a82f4eda7e39ae64c670"
    "8c54c216cb96b72e1213b4522f8c9ba40db5d945b11b69b982c1bb9e3f3fac2bc369488f76b2383565d3fff921f9664c97637da9"
    "768812f615c68b13b52e"
)
X_TAG = bytes.fromhex("c0875924c1c7987947deafd8780acf49")


def key(b: int) -> StateKey:
    return StateKey(bytes([b]) * 32)


def reason(sealed: object, k: Optional[StateKey] = None, agent: str = "bot") -> str:
    try:
        open_state(k or key(1), agent, sealed)
    except StateError as e:
        return e.reason
    return "opened"


class Construction(unittest.TestCase):
    def test_hchacha20_vector(self) -> None:
        self.assertEqual(hchacha20(HCHACHA_KEY, HCHACHA_NONCE), HCHACHA_OUT)

    def test_xchacha20poly1305_vector(self) -> None:
        self.assertEqual(xchacha20poly1305_encrypt(X_KEY, X_NONCE, X_PLAIN, X_AAD), X_CIPHER + X_TAG)
        self.assertEqual(xchacha20poly1305_decrypt(X_KEY, X_NONCE, X_CIPHER + X_TAG, X_AAD), X_PLAIN)

    def test_the_associated_data_binds_the_agent_id(self) -> None:
        # the wire format shared with the Rust client: AAD = "ma2h-state/v1\0" + agent.id
        k = key(9)
        sealed = seal(k, "deploybot/web", {"step": 3})
        nonce = base64.urlsafe_b64decode(sealed["nonce"] + "==")
        ct = base64.urlsafe_b64decode(sealed["ciphertext"] + "=" * (-len(sealed["ciphertext"]) % 4))
        plain = xchacha20poly1305_decrypt(bytes([9]) * 32, nonce, ct, b"ma2h-state/v1\x00deploybot/web")
        self.assertEqual(plain, b'{"step":3}')


class SealOpen(unittest.TestCase):
    def test_round_trip_hides_the_plaintext(self) -> None:
        state = {"step": 3, "pr": "refs/pull/7", "n": [1, 2.5, None, "é"]}
        sealed = seal(key(1), "bot", state)
        self.assertEqual(set(sealed), {"ma2h_sealed", "alg", "nonce", "ciphertext"})
        self.assertEqual((sealed["ma2h_sealed"], sealed["alg"]), ("v1", "xchacha20poly1305"))
        self.assertNotIn("refs/pull/7", str(sealed))
        self.assertNotIn("=", sealed["nonce"] + sealed["ciphertext"])
        self.assertTrue(is_sealed(sealed))
        self.assertEqual(open_state(key(1), "bot", sealed), state)
        self.assertNotEqual(seal(key(1), "bot", state)["nonce"], sealed["nonce"])  # fresh nonce per seal

    def test_tampered_wrong_key_and_other_agent_are_rejected(self) -> None:
        sealed = seal(key(1), "bot", {"ok": True})
        for field in ("ciphertext", "nonce"):
            tampered = copy.deepcopy(sealed)
            value = tampered[field]
            tampered[field] = ("B" if value[0] == "A" else "A") + value[1:]
            with self.subTest(field=field):
                self.assertEqual(reason(tampered), "tampered")
        self.assertEqual(reason(sealed, k=key(2)), "tampered")
        self.assertEqual(reason(sealed, agent="other-bot"), "tampered")
        self.assertEqual(reason(sealed), "opened")

    def test_not_sealed_and_malformed_are_rejected(self) -> None:
        sealed = seal(key(1), "bot", {"ok": True})
        self.assertEqual(reason({"ok": True}), "not_sealed")
        self.assertEqual(reason(None), "not_sealed")
        self.assertEqual(reason(dict(sealed, ma2h_sealed="v2")), "not_sealed")
        self.assertEqual(reason(dict(sealed, alg="aes-gcm")), "not_sealed")
        self.assertEqual(reason(dict(sealed, nonce=sealed["nonce"][:-4])), "malformed")  # 21 bytes
        self.assertEqual(reason(dict(sealed, ciphertext=sealed["ciphertext"] + "=")), "malformed")
        self.assertEqual(reason(dict(sealed, ciphertext="+/" + sealed["ciphertext"][2:])), "malformed")
        self.assertEqual(reason(dict(sealed, ciphertext=7)), "malformed")
        with self.assertRaises(StateError):
            seal(key(1), "bot", {"x": float("nan")})
        with self.assertRaises(StateError):
            seal(key(1), "", {"x": 1})


class Keys(unittest.TestCase):
    def test_parse_base64_urlsafe_and_hex(self) -> None:
        raw = bytes(range(32))
        forms = [
            base64.b64encode(raw).decode(),
            base64.urlsafe_b64encode(raw).decode(),
            base64.urlsafe_b64encode(raw).decode().rstrip("="),
            raw.hex(),
            raw.hex().upper(),
            "  " + base64.b64encode(raw).decode() + "\n",
        ]
        for form in forms:
            with self.subTest(form=form):
                self.assertEqual(StateKey.parse(form), StateKey(raw))
        self.assertTrue(StateKey.parse(StateKey.generate_base64()))
        self.assertEqual(StateKey.parse(StateKey(raw).to_base64()), StateKey(raw))

    def test_bad_keys_are_refused(self) -> None:
        for bad in (
            "short",
            "",
            base64.b64encode(bytes(31)).decode(),
            base64.b64encode(bytes(33)).decode(),
            "zz" * 32,
            "ab" * 31,
        ):
            with self.subTest(bad=bad), self.assertRaises(StateError):
                StateKey.parse(bad)
        with self.assertRaises(StateError):
            StateKey(bytes(16))

    def test_keys_never_print_or_pickle(self) -> None:
        k = StateKey.parse(bytes(range(32)).hex())
        self.assertEqual(repr(k), "StateKey(<redacted>)")
        self.assertEqual(str(k), "StateKey(<redacted>)")
        self.assertNotIn(bytes(range(32)).hex(), repr([k]))
        with self.assertRaises(TypeError):
            pickle.dumps(k)
        with self.assertRaises(TypeError):
            hash(k)
        self.assertNotEqual(StateKey.generate(), StateKey.generate())


if __name__ == "__main__":
    unittest.main()
