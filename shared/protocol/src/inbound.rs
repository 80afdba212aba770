//! §9.7 directive integrity and §14.4 ack integrity: the §9.2 header and primitives over two more
//! contexts.
//!
//! A delivered directive is signed over
//! `inbound_signed_context = {from, id, jti, ma2h_version, payload_sha256, t, to}` (all strings),
//! where `payload_sha256` digests `{"directive": C}` and `C` holds exactly the directive's **present**
//! `title`, `body`, `priority`, `tags`, `context` (absent members are omitted, not `null`).
//! `created_at`, `expires_at` and `sensitive` are advisory and unbound. Every delivery is re-signed
//! with a fresh `t`/`jti` (§9.7); the bound members never change.
//!
//! A pushed ack is signed over `ack_signed_context = {ack_sha256, by, in_reply_to, jti,
//! ma2h_version, t}`, `ack_sha256` digesting the fixed-key `{acked_at, by, in_reply_to, note,
//! resolution_id}` with absent optionals as `null` (§14.4). This Hub pushes no acks; the signer ships
//! for clients and for the conformance vectors.

use serde_json::{Map, Value};

use crate::jcs;
use crate::signature::{ParsedHeader, SIGNATURE_HEADER, SignatureError, parse_header};

/// The directive members `payload_sha256` binds (§9.7), in no particular order (JCS sorts).
pub const DIRECTIVE_BOUND: [&str; 5] = ["title", "body", "priority", "tags", "context"];

/// §9.7 `payload_sha256` of a directive: SHA-256 of `JCS({"directive": {present bound members}})`.
pub fn directive_sha256(directive: &Value) -> String {
    let content: Map<String, Value> =
        DIRECTIVE_BOUND.iter().filter_map(|k| directive.get(*k).map(|v| ((*k).to_owned(), v.clone()))).collect();
    let mut wrapper = Map::with_capacity(1);
    wrapper.insert("directive".to_owned(), Value::Object(content));
    jcs::canonical_sha256(&Value::Object(wrapper))
}

/// The §9.7 `inbound_signed_context`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboundContext {
    pub from: String,
    pub id: String,
    pub jti: String,
    pub ma2h_version: String,
    pub payload_sha256: String,
    /// Unix seconds as the header's `t=` string.
    pub t: String,
    pub to: String,
}

impl InboundContext {
    /// The context for a delivered directive: the one construction the Hub signs and every agent
    /// rebuilds (recomputing the digest from what it received). `Err` names a missing member.
    pub fn for_directive(directive: &Value, jti: &str, t: &str) -> Result<Self, &'static str> {
        let s = |k: &'static str| directive.get(k).and_then(Value::as_str).map(str::to_owned).ok_or(k);
        Ok(Self {
            from: s("from")?,
            id: s("id")?,
            jti: jti.to_owned(),
            ma2h_version: s("ma2h_version")?,
            payload_sha256: directive_sha256(directive),
            t: t.to_owned(),
            to: s("to")?,
        })
    }

    /// RFC 8785 canonical bytes — exactly what is signed.
    pub fn to_canonical(&self) -> Vec<u8> {
        let s = |v: &str| Value::String(v.to_owned());
        let mut m = Map::with_capacity(7);
        m.insert("from".into(), s(&self.from));
        m.insert("id".into(), s(&self.id));
        m.insert("jti".into(), s(&self.jti));
        m.insert("ma2h_version".into(), s(&self.ma2h_version));
        m.insert("payload_sha256".into(), s(&self.payload_sha256));
        m.insert("t".into(), s(&self.t));
        m.insert("to".into(), s(&self.to));
        jcs::canonicalize(&Value::Object(m))
    }
}

/// §14.4 `ack_sha256`: SHA-256 of `JCS({acked_at, by, in_reply_to, note, resolution_id})`, each
/// absent member `null`.
pub fn ack_sha256(ack: &Value) -> String {
    let mut m = Map::with_capacity(5);
    for k in ["acked_at", "by", "in_reply_to", "note", "resolution_id"] {
        m.insert(k.to_owned(), ack.get(k).cloned().unwrap_or(Value::Null));
    }
    jcs::canonical_sha256(&Value::Object(m))
}

/// The §14.4 `ack_signed_context`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AckContext {
    pub ack_sha256: String,
    pub by: String,
    pub in_reply_to: String,
    pub jti: String,
    pub ma2h_version: String,
    pub t: String,
}

impl AckContext {
    pub fn for_ack(ack: &Value, jti: &str, t: &str) -> Result<Self, &'static str> {
        let s = |k: &'static str| ack.get(k).and_then(Value::as_str).map(str::to_owned).ok_or(k);
        Ok(Self {
            ack_sha256: ack_sha256(ack),
            by: s("by")?,
            in_reply_to: s("in_reply_to")?,
            jti: jti.to_owned(),
            ma2h_version: s("ma2h_version")?,
            t: t.to_owned(),
        })
    }

    pub fn to_canonical(&self) -> Vec<u8> {
        let s = |v: &str| Value::String(v.to_owned());
        let mut m = Map::with_capacity(6);
        m.insert("ack_sha256".into(), s(&self.ack_sha256));
        m.insert("by".into(), s(&self.by));
        m.insert("in_reply_to".into(), s(&self.in_reply_to));
        m.insert("jti".into(), s(&self.jti));
        m.insert("ma2h_version".into(), s(&self.ma2h_version));
        m.insert("t".into(), s(&self.t));
        jcs::canonicalize(&Value::Object(m))
    }
}

/// Parse a mailbox entry's `signature` member: the §8.7 examples carry the full header line
/// (`MA2H-Signature: t=…,jti=…,v1=…`); a bare value is accepted too.
pub fn parse_signature_member(member: &str) -> Result<ParsedHeader, SignatureError> {
    let trimmed = member.trim();
    let value = match trimmed.split_once(':') {
        Some((name, rest)) if name.trim().eq_ignore_ascii_case(SIGNATURE_HEADER) => rest,
        _ => trimmed,
    };
    parse_header(value.trim())
}

#[cfg(test)]
mod tests {
    //! Byte-for-byte fixtures from the upstream `autnmy/ma2h-protocol` conformance vectors
    //! `dp-005`, `dp-006` (directive) and `dp-008`, `dp-009` (ack); key `ma2h-test-secret-key-0123456789ab`.
    use serde_json::json;

    use super::*;
    use crate::signature::{SigningKey, VerifyingKey, header_line, sign_canonical, verify_canonical};

    const KEY: &[u8] = b"ma2h-test-secret-key-0123456789ab";

    fn dp005_directive() -> Value {
        json!({"ma2h_version":"0.4","type":"directive","id":"dir_01HZXDIR0001","from":"human:alice",
               "to":"agent:deploybot/dev-team","created_at":"2026-06-30T12:00:00Z",
               "title":"Pause deploys until the incident is resolved",
               "body":"We are mid-incident on prod. Hold all deploys until I say otherwise.",
               "priority":"urgent","tags":["incident","deploy-freeze"]})
    }

    fn dp008_ack() -> Value {
        json!({"ma2h_version":"0.4","type":"ack","in_reply_to":"msg_01HZXASK0001","by":"agent:deploybot/dev-team",
               "acked_at":"2026-06-30T15:49:00Z","note":"got your Ship it — resuming the deploy",
               "resolution_id":"res_01HZXR3SOLVE"})
    }

    #[test]
    fn dp005_directive_signature_is_reproduced_byte_for_byte() {
        let ctx = InboundContext::for_directive(&dp005_directive(), "jti_01HZXDIRDEMOFIX", "1782043200").unwrap();
        assert_eq!(ctx.payload_sha256, "73a4c4c78425ebb286d36fe12905fab35eb07adf38166940137872b43fef0483");
        assert_eq!(
            String::from_utf8(ctx.to_canonical()).unwrap(),
            r#"{"from":"human:alice","id":"dir_01HZXDIR0001","jti":"jti_01HZXDIRDEMOFIX","ma2h_version":"0.4","payload_sha256":"73a4c4c78425ebb286d36fe12905fab35eb07adf38166940137872b43fef0483","t":"1782043200","to":"agent:deploybot/dev-team"}"#
        );
        let v1 = sign_canonical(&ctx.to_canonical(), &SigningKey::Hmac(KEY.to_vec()));
        assert_eq!(v1, "Bh6zPUfvl_p3SJdgxCPEPgEKZ9VyvXbl8yRKDGzufSk");
        assert_eq!(
            header_line(&ctx.t, &ctx.jti, &v1),
            "MA2H-Signature: t=1782043200,jti=jti_01HZXDIRDEMOFIX,v1=Bh6zPUfvl_p3SJdgxCPEPgEKZ9VyvXbl8yRKDGzufSk"
        );
    }

    #[test]
    fn dp006_a_readdressed_or_edited_directive_fails_with_mismatch() {
        let keys = [VerifyingKey::Hmac(KEY.to_vec())];
        let v1 = "Bh6zPUfvl_p3SJdgxCPEPgEKZ9VyvXbl8yRKDGzufSk";
        let check = |d: &Value| {
            let ctx = InboundContext::for_directive(d, "jti_01HZXDIRDEMOFIX", "1782043200").unwrap();
            verify_canonical(&ctx.to_canonical(), v1, &keys)
        };
        assert_eq!(check(&dp005_directive()), Ok(()));
        for (field, value) in [
            ("to", json!("agent:victim/other-bot")),
            ("from", json!("human:mallory")),
            ("body", json!("Deploy now.")),
            ("priority", json!("low")),
        ] {
            let mut d = dp005_directive();
            d[field] = value;
            assert_eq!(check(&d), Err(SignatureError::Mismatch), "tampered {field}");
        }
        // Stripping a bound member changes the digest; unbound advisory members do not.
        let mut stripped = dp005_directive();
        stripped.as_object_mut().unwrap().remove("tags");
        assert_eq!(check(&stripped), Err(SignatureError::Mismatch));
        let mut advisory = dp005_directive();
        advisory["expires_at"] = json!("2030-01-01T00:00:00Z");
        advisory["sensitive"] = json!(true);
        assert_eq!(check(&advisory), Ok(()));
    }

    #[test]
    fn dp008_ack_signature_is_reproduced_byte_for_byte() {
        let ctx = AckContext::for_ack(&dp008_ack(), "jti_01HZXACKDEMOFIX", "1782056940").unwrap();
        assert_eq!(ctx.ack_sha256, "bed33692b74ad4f5a84d9575ad2711db9658470180d57a994773d5f1da7607fc");
        assert_eq!(
            String::from_utf8(ctx.to_canonical()).unwrap(),
            r#"{"ack_sha256":"bed33692b74ad4f5a84d9575ad2711db9658470180d57a994773d5f1da7607fc","by":"agent:deploybot/dev-team","in_reply_to":"msg_01HZXASK0001","jti":"jti_01HZXACKDEMOFIX","ma2h_version":"0.4","t":"1782056940"}"#
        );
        let v1 = sign_canonical(&ctx.to_canonical(), &SigningKey::Hmac(KEY.to_vec()));
        assert_eq!(v1, "BVd0e8A-Qd55YFbrIqk7QwUFacTCa2iQ93fa0Lm3ErU");
    }

    #[test]
    fn dp009_a_tampered_ack_fails_with_mismatch_and_absent_optionals_hash_as_null() {
        let keys = [VerifyingKey::Hmac(KEY.to_vec())];
        let check = |a: &Value| {
            let ctx = AckContext::for_ack(a, "jti_01HZXACKDEMOFIX", "1782056940").unwrap();
            verify_canonical(&ctx.to_canonical(), "BVd0e8A-Qd55YFbrIqk7QwUFacTCa2iQ93fa0Lm3ErU", &keys)
        };
        assert_eq!(check(&dp008_ack()), Ok(()));
        for (field, value) in [("note", json!("HOLD — do not deploy")), ("by", json!("agent:other"))] {
            let mut a = dp008_ack();
            a[field] = value;
            assert_eq!(check(&a), Err(SignatureError::Mismatch), "tampered {field}");
        }
        let mut noteless = dp008_ack();
        noteless.as_object_mut().unwrap().remove("note");
        let mut nulled = dp008_ack();
        nulled["note"] = Value::Null;
        assert_eq!(ack_sha256(&noteless), ack_sha256(&nulled));
    }

    #[test]
    fn an_ed25519_directive_signature_round_trips_and_each_delivery_differs_only_in_t_and_jti() {
        let key = SigningKey::ed25519_from_seed(&[7; 32]);
        let d = dp005_directive();
        let a = InboundContext::for_directive(&d, "jti_a", "1782043200").unwrap();
        let b = InboundContext::for_directive(&d, "jti_b", "1782043260").unwrap();
        assert_eq!(a.payload_sha256, b.payload_sha256);
        let (va, vb) = (sign_canonical(&a.to_canonical(), &key), sign_canonical(&b.to_canonical(), &key));
        assert_ne!(va, vb);
        assert_eq!(verify_canonical(&a.to_canonical(), &va, &[key.verifying_key()]), Ok(()));
        assert_eq!(verify_canonical(&b.to_canonical(), &va, &[key.verifying_key()]), Err(SignatureError::Mismatch));
    }

    #[test]
    fn the_signature_member_parses_with_or_without_the_header_name() {
        let line = "MA2H-Signature: t=1782043200,jti=jti_x,v1=Bh6zPUfvl_p3SJdgxCPEPgEKZ9VyvXbl8yRKDGzufSk";
        let bare = line.split_once(": ").unwrap().1;
        assert_eq!(parse_signature_member(line).unwrap(), parse_signature_member(bare).unwrap());
        assert_eq!(
            parse_signature_member(
                "ma2h-signature:t=1782043200,jti=jti_x,v1=Bh6zPUfvl_p3SJdgxCPEPgEKZ9VyvXbl8yRKDGzufSk"
            )
            .unwrap()
            .jti,
            "jti_x"
        );
        assert!(parse_signature_member("Other: t=1,jti=x,v1=y").is_err());
        assert!(parse_signature_member("").is_err());
    }
}
