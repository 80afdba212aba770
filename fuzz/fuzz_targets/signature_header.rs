//! Fuzz target `signature_header`: arbitrary strings through the §9.2 `MA2H-Signature` header
//! parser and the `v1` well-formedness rule (`decode_mac`, pinned by `dp-025`), plus a sign/verify
//! round trip keyed by the input.
//!
//! Asserts: nothing panics; `is_well_formed_mac` agrees with `decode_mac`, and an accepted MAC is
//! at least 32 bytes; a header that parses re-renders (`header_value`) to a value that parses to
//! the same `ParsedHeader` and renders identically again (the parser's canonical form is a fixed
//! point), with `t` being exactly the decimal form of `t_unix` and `mac` being `decode_mac(v1)`;
//! the replay-window check never overflows; an HMAC over the input verifies with its key and
//! fails with any other.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ma2h_protocol::signature::{
    SignatureError, SigningKey, VerifyingKey, check_window, decode_mac, header_value, is_well_formed_mac, parse_header,
    sign_canonical, verify_canonical,
};

fuzz_target!(|data: &[u8]| {
    // Header values reach the Hub's peers as bytes; non-UTF-8 never gets past `to_str()`.
    let input = String::from_utf8_lossy(data);
    let input = input.as_ref();

    let mac = decode_mac(input);
    assert_eq!(is_well_formed_mac(input), mac.is_some());
    if let Some(mac) = &mac {
        assert!(mac.len() >= 32);
    }

    // Every `v1=` segment of the input is a MAC candidate too (cheap extra coverage of decode_mac).
    for seg in input.split(',') {
        if let Some(v1) = seg.trim_matches([' ', '\t']).strip_prefix("v1=") {
            let _ = decode_mac(v1);
        }
    }

    if let Ok(parsed) = parse_header(input) {
        assert_eq!(parsed.t_unix.to_string(), parsed.t, "t is canonical decimal");
        assert_eq!(decode_mac(&parsed.v1).as_ref(), Some(&parsed.mac));
        let rendered = header_value(&parsed.t, &parsed.jti, &parsed.v1);
        let again = parse_header(&rendered).expect("a re-rendered header parses");
        assert_eq!(again, parsed);
        assert_eq!(header_value(&again.t, &again.jti, &again.v1), rendered);
        // Any clock, any window: never an arithmetic panic.
        let _ = check_window(parsed.t_unix, i64::MIN, i64::MAX);
        let _ = check_window(parsed.t_unix, i64::MAX, 120);
        let _ = check_window(i64::MIN, parsed.t_unix, -1);
    }

    // HMAC accepts keys of any length, including empty: sign the input with itself as key.
    let key = SigningKey::Hmac(data.to_vec());
    let v1 = sign_canonical(data, &key);
    assert!(is_well_formed_mac(&v1));
    assert_eq!(verify_canonical(data, &v1, &[key.verifying_key()]), Ok(()));
    // A *different* key: not `data` + NUL, which HMAC's zero-padding of short keys makes the same key.
    let mut other = data.to_vec();
    other.push(b'x');
    assert_eq!(verify_canonical(data, &v1, &[VerifyingKey::Hmac(other)]), Err(SignatureError::Mismatch));
    // An arbitrary (ill- or well-formed) v1 never verifies by accident under an unrelated key.
    if mac.is_some() {
        assert!(verify_canonical(b"", input, &[VerifyingKey::Hmac(b"fuzz".to_vec())]).is_err());
    }
});
