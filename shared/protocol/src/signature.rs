//! §9.2 Response integrity: the detached `MA2H-Signature` over a JCS-canonical `signed_context`.
//!
//! The Hub MUST sign every pushed Response, for every `callback.auth.scheme` (§9.2). The signature is
//! computed over the RFC 8785 canonical bytes ([`crate::jcs`]) of
//!
//! ```text
//! { "ma2h_version", "callback_url", "id", "in_reply_to", "jti",
//!   "payload_sha256", "resolution", "resolution_id", "resolved_at", "t" }
//! ```
//!
//! with `hmac-sha256` (32-byte tag) or `ed25519` (64-byte signature over the canonical bytes directly),
//! and carried as `MA2H-Signature: t=<unix>,jti=<nonce>,v1=<base64url(signature)>`.
//!
//! Verification (§9.2): reconstruct the context (recomputing `payload_sha256` from the received
//! payload, [`crate::jcs::payload_sha256`]), check the `v1` well-formedness rule ([`decode_mac`],
//! pinned by `dp-025`), accept if ANY held key verifies (rotation overlap), and reject a `t` outside
//! ±120 s ([`check_window`], [`REPLAY_WINDOW_SECS`]). The `jti` replay cache is the caller's job.
//!
//! [`sign_canonical`] / [`verify_canonical`] expose the same primitive for the other contexts that
//! reuse the §9.2 header (§9.7 directive, §9.8 mailbox entries, §14.4 ack).

use base64::Engine as _;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use ed25519_dalek::Signer as _;
use hmac::{Hmac, KeyInit as _, Mac as _};
use serde_json::{Map, Value};
use sha2::Sha256;

use crate::jcs;

/// Name of the wire header carrying the detached signature (§9.2).
pub const SIGNATURE_HEADER: &str = "MA2H-Signature";
/// `alg` name of the HMAC-SHA256 scheme (§9.2, advertised in §8.0).
pub const ALG_HMAC_SHA256: &str = "hmac-sha256";
/// `alg` name of the Ed25519 scheme (§9.2, advertised in §8.0).
pub const ALG_ED25519: &str = "ed25519";
/// The verifier's replay window: reject `t` outside ±120 s of its own clock (§9.2).
pub const REPLAY_WINDOW_SECS: i64 = 120;
/// §9.2 `v1` floor: a well-formed MAC decodes to at least 32 bytes (HMAC-SHA256 = 32, Ed25519 = 64).
pub const MIN_MAC_LEN: usize = 32;
/// Upper bound on a header value we are willing to parse (robustness only; a real one is < 200 bytes).
pub const MAX_HEADER_LEN: usize = 4096;
/// Upper bound on a `jti` nonce length (robustness only).
pub const MAX_JTI_LEN: usize = 256;

type HmacSha256 = Hmac<Sha256>;

/// Why a signature header or signature was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// The `MA2H-Signature` value is not `t=<unix>,jti=<nonce>,v1=<b64url>` (§9.2).
    #[error("malformed MA2H-Signature header: {0}")]
    MalformedHeader(&'static str),
    /// `v1` violates the §9.2 well-formedness rule (alphabet, padding, ≥ 32 bytes; see `dp-025`).
    #[error("v1 is not a well-formed base64url MAC (spec §9.2)")]
    BadMac,
    /// No verification key was supplied.
    #[error("no verification key configured")]
    NoKeys,
    /// `v1` is well-formed but no held key verifies it over the canonical context.
    #[error("signature mismatch")]
    Mismatch,
    /// `t` lies outside the ±window replay window around the verifier's clock (§9.2).
    #[error("signature timestamp {t} outside ±{window_secs}s of now ({now})")]
    OutOfWindow { t: i64, now: i64, window_secs: i64 },
}

/// The §9.2 `signed_context`. All members are strings; `t` is the unix-seconds string exactly as it
/// appears in the header's `t=`.
///
/// `resolved_at` is `None` → JSON `null`: §9.2 leaves the response-less case unpinned, so this
/// follows the absent-as-null convention §9.8 pins for its response entry (`dp-015`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedContext {
    pub ma2h_version: String,
    pub callback_url: String,
    pub id: String,
    pub in_reply_to: String,
    pub jti: String,
    /// [`crate::jcs::payload_sha256`] of the delivered `{response, state}` — a verifier recomputes it.
    pub payload_sha256: String,
    pub resolution: String,
    pub resolution_id: String,
    pub resolved_at: Option<String>,
    /// Unix seconds as a decimal string (the header's `t=` verbatim).
    pub t: String,
}

impl SignedContext {
    /// The §9.2 context for a §6 Response body pushed to `callback_url`: the one construction
    /// the Hub signs and every receiver rebuilds. `id` is the message id (`in_reply_to`), and
    /// `payload_sha256` is recomputed from the body's own `response`/`state` (null = absent).
    /// `Err` names a missing string member.
    pub fn for_response(response: &Value, callback_url: &str, jti: &str, t: &str) -> Result<Self, &'static str> {
        let s = |k: &'static str| response.get(k).and_then(Value::as_str).map(str::to_owned).ok_or(k);
        let detail = response.get("response").filter(|r| !r.is_null());
        let in_reply_to = s("in_reply_to")?;
        Ok(Self {
            ma2h_version: s("ma2h_version")?,
            callback_url: callback_url.to_owned(),
            id: in_reply_to.clone(),
            in_reply_to,
            jti: jti.to_owned(),
            payload_sha256: jcs::payload_sha256(detail, response.get("state").filter(|s| !s.is_null())),
            resolution: s("resolution")?,
            resolution_id: s("resolution_id")?,
            resolved_at: detail.and_then(|d| d.get("resolved_at")).and_then(Value::as_str).map(str::to_owned),
            t: t.to_owned(),
        })
    }

    /// The context as a JSON object (member order is irrelevant: JCS sorts).
    pub fn to_value(&self) -> Value {
        let s = |v: &str| Value::String(v.to_owned());
        let mut m = Map::with_capacity(10);
        m.insert("ma2h_version".into(), s(&self.ma2h_version));
        m.insert("callback_url".into(), s(&self.callback_url));
        m.insert("id".into(), s(&self.id));
        m.insert("in_reply_to".into(), s(&self.in_reply_to));
        m.insert("jti".into(), s(&self.jti));
        m.insert("payload_sha256".into(), s(&self.payload_sha256));
        m.insert("resolution".into(), s(&self.resolution));
        m.insert("resolution_id".into(), s(&self.resolution_id));
        m.insert("resolved_at".into(), self.resolved_at.as_deref().map_or(Value::Null, s));
        m.insert("t".into(), s(&self.t));
        Value::Object(m)
    }

    /// RFC 8785 canonical bytes — exactly what is signed (§9.2).
    pub fn to_canonical(&self) -> Vec<u8> {
        jcs::canonicalize(&self.to_value())
    }
}

/// A signing key: the callback's `secret_ref` HMAC secret or the Hub's Ed25519 key (§9.2).
#[derive(Clone)]
pub enum SigningKey {
    Hmac(Vec<u8>),
    Ed25519(ed25519_dalek::SigningKey),
}

/// A verification key. An agent MAY hold two during rotation overlap (§9.2).
#[derive(Clone, PartialEq, Eq)]
pub enum VerifyingKey {
    Hmac(Vec<u8>),
    Ed25519(ed25519_dalek::VerifyingKey),
}

impl SigningKey {
    /// Ed25519 key from a 32-byte secret seed (RFC 8032).
    pub fn ed25519_from_seed(seed: &[u8; 32]) -> Self {
        Self::Ed25519(ed25519_dalek::SigningKey::from_bytes(seed))
    }

    /// `hmac-sha256` or `ed25519`.
    pub fn alg(&self) -> &'static str {
        match self {
            Self::Hmac(_) => ALG_HMAC_SHA256,
            Self::Ed25519(_) => ALG_ED25519,
        }
    }

    /// The matching verification key (the shared secret for HMAC, the public key for Ed25519).
    pub fn verifying_key(&self) -> VerifyingKey {
        match self {
            Self::Hmac(secret) => VerifyingKey::Hmac(secret.clone()),
            Self::Ed25519(k) => VerifyingKey::Ed25519(k.verifying_key()),
        }
    }
}

impl VerifyingKey {
    /// An Ed25519 public key from its 32 bytes (`None` if not a valid curve point).
    pub fn ed25519_from_bytes(bytes: &[u8; 32]) -> Option<Self> {
        ed25519_dalek::VerifyingKey::from_bytes(bytes).ok().map(Self::Ed25519)
    }

    /// An Ed25519 public key from its base64url form, as a capability document publishes it in
    /// `signing_keys[].public_key` (§8.0); padding is tolerated.
    pub fn ed25519_from_b64url(public_key: &str) -> Option<Self> {
        use base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let bytes: [u8; 32] = URL_SAFE_NO_PAD.decode(public_key.trim().trim_end_matches('=')).ok()?.try_into().ok()?;
        Self::ed25519_from_bytes(&bytes)
    }

    /// Every Ed25519 key a capability document publishes in `signing_keys` — the current one and,
    /// during a rotation overlap, the previous ones (§9.2: accept if ANY held key verifies).
    pub fn published(capability: &Value) -> Vec<Self> {
        let keys = capability.get("signing_keys").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        keys.iter()
            .filter(|k| k.get("alg").and_then(Value::as_str) == Some(ALG_ED25519))
            .filter_map(|k| k.get("public_key").and_then(Value::as_str).and_then(Self::ed25519_from_b64url))
            .collect()
    }

    /// The raw public key bytes of an Ed25519 key.
    pub fn ed25519_bytes(&self) -> Option<[u8; 32]> {
        match self {
            Self::Ed25519(k) => Some(k.to_bytes()),
            Self::Hmac(_) => None,
        }
    }

    /// `hmac-sha256` or `ed25519`.
    pub fn alg(&self) -> &'static str {
        match self {
            Self::Hmac(_) => ALG_HMAC_SHA256,
            Self::Ed25519(_) => ALG_ED25519,
        }
    }
}

// Never print secrets.
impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SigningKey({}, <redacted>)", self.alg())
    }
}

impl std::fmt::Debug for VerifyingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Hmac(_) => f.write_str("VerifyingKey(hmac-sha256, <redacted>)"),
            Self::Ed25519(k) => write!(f, "VerifyingKey(ed25519, {})", hex::encode(k.as_bytes())),
        }
    }
}

/// Canonical (unpadded) base64url, used for emission (§9.2 emits `v1` unpadded, as in `dp-001`).
const B64URL_NOPAD: GeneralPurpose = GeneralPurpose::new(
    &alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(DecodePaddingMode::RequireNone)
        // §9.2: "no canonical round-trip check" — a hex-shaped 43-char value (non-zero trailing bits)
        // is valid (dp-025, oh-hai#711).
        .with_decode_allow_trailing_bits(true),
);

/// Raw signature bytes over already-canonical bytes (shared by every context reusing §9.2).
pub fn sign_canonical_raw(canonical: &[u8], key: &SigningKey) -> Vec<u8> {
    match key {
        SigningKey::Hmac(secret) => {
            let mut mac = HmacSha256::new_from_slice(secret).expect("HMAC accepts keys of any length");
            mac.update(canonical);
            mac.finalize().into_bytes().to_vec()
        }
        SigningKey::Ed25519(k) => k.sign(canonical).to_bytes().to_vec(),
    }
}

/// base64url-unpadded `v1` over already-canonical bytes.
pub fn sign_canonical(canonical: &[u8], key: &SigningKey) -> String {
    B64URL_NOPAD.encode(sign_canonical_raw(canonical, key))
}

/// §9.2: `v1` = base64url(no padding) of the signature over `JCS(signed_context)`.
pub fn sign(ctx: &SignedContext, key: &SigningKey) -> String {
    sign_canonical(&ctx.to_canonical(), key)
}

/// The `MA2H-Signature` header VALUE: `t=<unix>,jti=<nonce>,v1=<b64url>` (§9.2).
pub fn header_value(t: &str, jti: &str, v1: &str) -> String {
    format!("t={t},jti={jti},v1={v1}")
}

/// The full header line `MA2H-Signature: t=…,jti=…,v1=…` (the form carried in `dp-001`'s `header`
/// and in §8.7 mailbox entries' `signature` member).
pub fn header_line(t: &str, jti: &str, v1: &str) -> String {
    format!("{SIGNATURE_HEADER}: {}", header_value(t, jti, v1))
}

/// §9.2 `v1` well-formedness — EXACTLY the shared rule (`decodeMac` in the reference, `dp-025`):
/// alphabet `[A-Za-z0-9_-]`; either no padding or exactly `(4 − len mod 4) mod 4` trailing `=`;
/// decoded length ≥ 32 bytes. Nothing more: no canonical round-trip / trailing-bits check, and the
/// standard-base64 `+` `/` are rejected. Returns the raw bytes, or `None` if ill-formed.
pub fn decode_mac(v1: &str) -> Option<Vec<u8>> {
    let bytes = v1.as_bytes();
    let body_len = bytes.iter().rposition(|&b| b != b'=').map_or(0, |i| i + 1);
    let (body, pad) = bytes.split_at(body_len);
    if !body.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
        return None; // also catches any '=' before the trailing run
    }
    // RFC 4648 §4: a final quantum of 1 character is structurally impossible.
    if body.len() % 4 == 1 {
        return None;
    }
    let required_pad = (4 - body.len() % 4) % 4;
    if !pad.is_empty() && pad.len() != required_pad {
        return None;
    }
    let raw = B64URL_NOPAD.decode(body).ok()?;
    (raw.len() >= MIN_MAC_LEN).then_some(raw)
}

/// `true` iff [`decode_mac`] accepts `v1` (§9.2, `dp-025`).
pub fn is_well_formed_mac(v1: &str) -> bool {
    decode_mac(v1).is_some()
}

/// Verify a `v1` over already-canonical bytes; accepts if ANY key verifies (rotation, §9.2).
/// HMAC tags are compared in constant time (`Mac::verify_slice`); Ed25519 uses `verify_strict`.
pub fn verify_canonical(canonical: &[u8], v1: &str, keys: &[VerifyingKey]) -> Result<(), SignatureError> {
    let mac = decode_mac(v1).ok_or(SignatureError::BadMac)?;
    if keys.is_empty() {
        return Err(SignatureError::NoKeys);
    }
    let ok = keys.iter().any(|key| match key {
        VerifyingKey::Hmac(secret) => {
            let Ok(mut h) = HmacSha256::new_from_slice(secret) else {
                return false;
            };
            h.update(canonical);
            h.verify_slice(&mac).is_ok()
        }
        VerifyingKey::Ed25519(pk) => {
            ed25519_dalek::Signature::from_slice(&mac).is_ok_and(|sig| pk.verify_strict(canonical, &sig).is_ok())
        }
    });
    if ok { Ok(()) } else { Err(SignatureError::Mismatch) }
}

/// §9.2 verification of `v1` against the reconstructed `signed_context`.
pub fn verify(ctx: &SignedContext, v1: &str, keys: &[VerifyingKey]) -> Result<(), SignatureError> {
    verify_canonical(&ctx.to_canonical(), v1, keys)
}

/// §9.2 replay window: accept iff `|t − now| ≤ window_secs` (inclusive edges). Overflow-safe.
pub fn check_window(t: i64, now_unix: i64, window_secs: i64) -> Result<(), SignatureError> {
    match u64::try_from(window_secs) {
        Ok(w) if t.abs_diff(now_unix) <= w => Ok(()),
        _ => Err(SignatureError::OutOfWindow { t, now: now_unix, window_secs }),
    }
}

/// A parsed `MA2H-Signature` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedHeader {
    /// `t` verbatim (decimal digits, no leading zeros) — goes into the reconstructed context.
    pub t: String,
    /// `t` as unix seconds, for [`check_window`].
    pub t_unix: i64,
    /// The nonce, for the context and the caller's replay cache.
    pub jti: String,
    /// `v1` verbatim, for [`verify`].
    pub v1: String,
    /// `v1` decoded per [`decode_mac`].
    pub mac: Vec<u8>,
}

/// Parse an `MA2H-Signature` header VALUE (`t=<unix>,jti=<nonce>,v1=<b64url>`, §9.2).
///
/// Strict: exactly the keys `t`, `jti`, `v1`, each once, in any order; optional spaces/tabs around
/// commas (and at the ends); `t` is ASCII digits without leading zeros fitting an `i64`; `jti` is
/// 1..=256 visible ASCII characters; `v1` must satisfy [`decode_mac`]. Never panics.
pub fn parse_header(value: &str) -> Result<ParsedHeader, SignatureError> {
    use SignatureError::MalformedHeader as M;
    if value.len() > MAX_HEADER_LEN {
        return Err(M("header too long"));
    }
    let (mut t, mut jti, mut v1) = (None, None, None);
    for part in value.split(',') {
        let part = part.trim_matches([' ', '\t']);
        let (key, val) = part.split_once('=').ok_or(M("segment without '='"))?;
        let slot = match key {
            "t" => &mut t,
            "jti" => &mut jti,
            "v1" => &mut v1,
            "" => return Err(M("empty key")),
            _ => return Err(M("unknown key")),
        };
        if slot.replace(val).is_some() {
            return Err(M("duplicate key"));
        }
    }
    let t = t.ok_or(M("missing t"))?;
    let jti = jti.ok_or(M("missing jti"))?;
    let v1 = v1.ok_or(M("missing v1"))?;

    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(M("t is not a decimal unix timestamp"));
    }
    if t.len() > 1 && t.starts_with('0') {
        return Err(M("t has leading zeros"));
    }
    let t_unix: i64 = t.parse().map_err(|_| M("t out of range"))?;
    if jti.is_empty() || jti.len() > MAX_JTI_LEN || !jti.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(M("jti must be 1..=256 visible ASCII characters"));
    }
    let mac = decode_mac(v1).ok_or(SignatureError::BadMac)?;
    Ok(ParsedHeader { t: t.to_owned(), t_unix, jti: jti.to_owned(), v1: v1.to_owned(), mac })
}

#[cfg(test)]
mod tests {
    use base64::engine::general_purpose::{URL_SAFE, URL_SAFE_NO_PAD};
    use serde_json::json;

    use super::*;

    #[test]
    fn published_keys_are_the_ed25519_entries_of_signing_keys_padded_or_not() {
        let (a, b) = (SigningKey::ed25519_from_seed(&[1; 32]), SigningKey::ed25519_from_seed(&[2; 32]));
        let (pa, pb) = (a.verifying_key().ed25519_bytes().unwrap(), b.verifying_key().ed25519_bytes().unwrap());
        let doc = json!({ "signing_keys": [
            { "alg": "ed25519", "public_key": URL_SAFE_NO_PAD.encode(pa), "status": "current" },
            { "alg": "ed25519", "public_key": URL_SAFE.encode(pb), "status": "previous" },
            { "alg": "hmac-sha256", "public_key": URL_SAFE_NO_PAD.encode(pa) },
            { "alg": "ed25519", "public_key": "not-a-key" },
            { "alg": "ed25519" },
        ] });
        assert_eq!(VerifyingKey::published(&doc), vec![a.verifying_key(), b.verifying_key()]);
        assert!(VerifyingKey::published(&json!({})).is_empty());
        assert!(VerifyingKey::published(&json!({ "signing_keys": "x" })).is_empty());
    }
}
