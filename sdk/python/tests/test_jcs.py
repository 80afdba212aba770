"""RFC 8785 canonicalization: numbers, strings, member order, and the strict reader."""

from __future__ import annotations

import hashlib
import struct
import unittest

from vectors import DP004_PAYLOAD_JSON, DP_004

from ma2h import jcs
from ma2h.contexts import payload_sha256

# source: RFC 8785 Appendix B — IEEE-754 bit patterns and their canonical number text
RFC8785_NUMBERS = [
    ("0000000000000000", "0"),
    ("8000000000000000", "0"),
    ("0000000000000001", "5e-324"),
    ("8000000000000001", "-5e-324"),
    ("7fefffffffffffff", "1.7976931348623157e+308"),
    ("ffefffffffffffff", "-1.7976931348623157e+308"),
    ("4340000000000000", "9007199254740992"),
    ("c340000000000000", "-9007199254740992"),
    ("4430000000000000", "295147905179352830000"),
    ("44b52d02c7e14af5", "9.999999999999997e+22"),
    ("44b52d02c7e14af6", "1e+23"),
    ("44b52d02c7e14af7", "1.0000000000000001e+23"),
    ("444b1ae4d6e2ef4e", "999999999999999700000"),
    ("444b1ae4d6e2ef4f", "999999999999999900000"),
    ("444b1ae4d6e2ef50", "1e+21"),
    ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"),
    ("3eb0c6f7a0b5ed8d", "0.000001"),
    ("41b3de4355555553", "333333333.3333332"),
    ("41b3de4355555554", "333333333.33333325"),
    ("41b3de4355555555", "333333333.3333333"),
    ("41b3de4355555556", "333333333.3333334"),
    ("41b3de4355555557", "333333333.33333343"),
    ("becbf647612f3696", "-0.0000033333333333333333"),
    ("43143ff3c1cb0959", "1424953923781206.2"),
]


def c(value: object) -> str:
    return jcs.canonicalize(value).decode("utf-8")


class Numbers(unittest.TestCase):
    def test_rfc8785_appendix_b_number_table(self) -> None:
        for bits, expected in RFC8785_NUMBERS:
            with self.subTest(bits=bits):
                self.assertEqual(jcs.format_number(struct.unpack(">d", bytes.fromhex(bits))[0]), expected)

    def test_ecmascript_forms_the_spec_names(self) -> None:
        cases = {
            1e-7: "1e-7",
            1e21: "1e+21",
            1e20: "100000000000000000000",
            -0.0: "0",
            0.1: "0.1",
            -0.001: "-0.001",
            1234.5: "1234.5",
            1.0: "1",
            100.0: "100",
            1e-6: "0.000001",
            1.5e-7: "1.5e-7",
            123e18: "123000000000000000000",
            1.25e21: "1.25e+21",
        }
        for value, expected in cases.items():
            with self.subTest(value=value):
                self.assertEqual(jcs.format_number(value), expected)

    def test_integers_up_to_2_53_are_exact_and_larger_ones_round_to_the_nearest_double(self) -> None:
        self.assertEqual(jcs.format_number(9007199254740991), "9007199254740991")
        self.assertEqual(jcs.format_number(-(2**53)), "-9007199254740992")
        self.assertEqual(jcs.format_number(0), "0")
        self.assertEqual(jcs.format_number(2**53 + 1), "9007199254740992")  # a JSON number is a double
        self.assertEqual(jcs.format_number(2**64), "18446744073709552000")
        self.assertEqual(jcs.format_number(10**21), "1e+21")

    def test_non_finite_and_non_numbers_are_refused(self) -> None:
        for bad in (float("nan"), float("inf"), float("-inf"), 10**400, True):
            with self.subTest(bad=bad), self.assertRaises(jcs.JCSError):
                jcs.format_number(bad)  # type: ignore[arg-type]
        with self.assertRaises(jcs.JCSError):
            jcs.canonicalize({"x": float("nan")})


class Strings(unittest.TestCase):
    def test_minimal_escapes_with_lowercase_hex(self) -> None:
        self.assertEqual(c('"\\/'), r'"\"\\/"')
        self.assertEqual(c("\b\f\n\r\t"), r'"\b\f\n\r\t"')
        self.assertEqual(c("\x00\x0f\x1f"), r'"\u0000\u000f\u001f"')
        # DEL, U+2028 and non-ASCII are written as themselves (UTF-8), never escaped
        self.assertEqual(jcs.canonicalize("\x7f\u2028€😀"), '"\x7f\u2028€😀"'.encode("utf-8"))

    def test_rfc8785_string_example(self) -> None:
        # source: RFC 8785 §3.2.2.2 — "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/"
        self.assertEqual(c("\u20ac$\u000f\u000aA'\u0042\u0022\u005c\\\"/"), '"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"')

    def test_no_unicode_normalization(self) -> None:
        decomposed, composed = "e\u0301", "\u00e9"
        self.assertNotEqual(c(decomposed), c(composed))
        self.assertEqual(jcs.canonicalize(decomposed), b'"e\xcc\x81"')

    def test_lone_surrogates_are_refused(self) -> None:
        with self.assertRaises(jcs.JCSError):
            jcs.canonicalize("\ud800")
        with self.assertRaises(jcs.JCSError):
            jcs.canonicalize({"\udfff": 1})


class Structure(unittest.TestCase):
    def test_members_sort_by_utf16_code_units(self) -> None:
        # source: RFC 8785 §3.2.3 — the sorting example (U+1F600 sorts before U+FB33 in UTF-16)
        obj = {
            "\u20ac": "Euro Sign",
            "\r": "Carriage Return",
            "\ufb33": "Hebrew Letter Dalet With Dagesh",
            "1": "One",
            "\U0001f600": "Emoji: Grinning Face",
            "\u0080": "Control",
            "\u00f6": "Latin Small Letter O With Diaeresis",
        }
        keys = [k for k in jcs.loads(jcs.canonicalize(obj))]
        self.assertEqual(keys, ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"])

    def test_nested_values_and_literals(self) -> None:
        self.assertEqual(
            c({"b": [1, {"z": None, "a": True}], "a": False, "c": (2.5, "x")}),
            '{"a":false,"b":[1,{"a":true,"z":null}],"c":[2.5,"x"]}',
        )

    def test_non_json_values_and_keys_are_refused(self) -> None:
        for bad in ({1: "x"}, {"x": object()}, {"x": b"bytes"}, {"x": {1, 2}}):
            with self.subTest(bad=bad), self.assertRaises(jcs.JCSError):
                jcs.canonicalize(bad)

    def test_dp004_numeric_payload_bytes_and_digest(self) -> None:
        payload = jcs.loads(DP004_PAYLOAD_JSON)  # the payload as received, number spellings included
        canonical = jcs.canonicalize(payload)
        self.assertEqual(canonical.decode("utf-8"), DP_004["payload_canonical_jcs"])
        self.assertEqual(hashlib.sha256(canonical).hexdigest(), DP_004["payload_sha256"])
        self.assertEqual(payload_sha256(payload["response"], payload["state"]), DP_004["payload_sha256"])
        # re-parsing the canonical form is a fixed point
        self.assertEqual(jcs.canonicalize(jcs.loads(canonical)), canonical)


class StrictReader(unittest.TestCase):
    def test_duplicate_names_nan_and_overflow_are_refused(self) -> None:
        for text in ('{"a":1,"a":2}', '{"x":NaN}', "[Infinity]", "[-Infinity]", "[1e400]", '{"a":', b"\xff"):
            with self.subTest(text=text), self.assertRaises(jcs.JCSError):
                jcs.loads(text)

    def test_plain_json_parses(self) -> None:
        self.assertEqual(jcs.loads(b'{"a":[1,2.5,"\\u00e9"],"b":null}'), {"a": [1, 2.5, "é"], "b": None})


if __name__ == "__main__":
    unittest.main()
