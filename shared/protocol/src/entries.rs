//! §9.8 integrity of the v0.5 `response` mailbox entry, and the session-qualified address it binds.
//!
//! A §6 Response delivered to the submitting session's mailbox (§8.7.1) is signed over
//!
//! ```text
//! response_signed_context = { id, in_reply_to, jti, ma2h_version, payload_sha256,
//!                             resolution, resolution_id, resolved_at, t, to }
//! ```
//!
//! which is the §9.2 push context with `callback_url` swapped for `to`, the session address
//! `agent:<id>#<sess>` of the drain the entry is delivered to. The Response body carries no `to`:
//! a verifier rebuilds it from the identity it presented on the drain, which is what makes an entry
//! signed for one session fail when replayed to another (§9.8, `dp-014`).
//!
//! Everything else is derived exactly as §9.2 derives it, so [`ResponseEntryContext::for_response`]
//! goes through [`SignedContext::for_response`] rather than restating it: one code path for the
//! `payload_sha256` digest ([`crate::jcs::payload_sha256`]), `id` = `in_reply_to`, and `resolved_at`
//! taken from `response.resolved_at`, JSON `null` when the `response` object is absent (§9.8 pins
//! that case, `dp-015`). Signing and verifying use the shared §9.2 primitives
//! ([`crate::signature::sign_canonical`], [`crate::signature::verify_canonical`]).

use serde_json::{Map, Value};

use crate::jcs;
use crate::signature::SignedContext;

/// The session-qualified agent address `agent:<agent_id>#<session_id>` (§4). The first `#` ends the
/// agent id, so callers pass an `agent_id` already checked to contain none (§16.1).
pub fn session_address(agent_id: &str, session_id: &str) -> String {
    format!("agent:{agent_id}#{session_id}")
}

/// The §9.8 `response_signed_context`. All members are strings except `resolved_at`, which is
/// `None` → JSON `null` when the Response has no `response` object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseEntryContext {
    /// The message id; always equal to `in_reply_to` (§9.8 pins the reconstruction).
    pub id: String,
    pub in_reply_to: String,
    pub jti: String,
    pub ma2h_version: String,
    /// The §9.2 digest of the delivered `{response, state}` — a verifier recomputes it.
    pub payload_sha256: String,
    pub resolution: String,
    pub resolution_id: String,
    pub resolved_at: Option<String>,
    /// Unix seconds as the header's `t=` string.
    pub t: String,
    /// The destination session's address, [`session_address`].
    pub to: String,
}

impl ResponseEntryContext {
    /// The context for a §6 Response body delivered to the session addressed by `to`: the one
    /// construction the Hub signs and every draining agent rebuilds (with `to` taken from its own
    /// drain identity, never from the wire). `Err` names a missing string member of the body.
    pub fn for_response(response: &Value, to: &str, jti: &str, t: &str) -> Result<Self, &'static str> {
        // §9.8: "computed exactly as §9.2 defines it" — reuse the push construction and replace
        // only its destination binding; its `callback_url` is discarded.
        let push = SignedContext::for_response(response, "", jti, t)?;
        Ok(Self {
            id: push.id,
            in_reply_to: push.in_reply_to,
            jti: push.jti,
            ma2h_version: push.ma2h_version,
            payload_sha256: push.payload_sha256,
            resolution: push.resolution,
            resolution_id: push.resolution_id,
            resolved_at: push.resolved_at,
            t: push.t,
            to: to.to_owned(),
        })
    }

    /// The context a drainer reconstructs from its own presented identity (§9.8): `to` is
    /// `agent:<agent_id>#<session_id>`.
    pub fn for_drain(
        response: &Value,
        agent_id: &str,
        session_id: &str,
        jti: &str,
        t: &str,
    ) -> Result<Self, &'static str> {
        Self::for_response(response, &session_address(agent_id, session_id), jti, t)
    }

    /// The context as a JSON object (member order is irrelevant: JCS sorts).
    pub fn to_value(&self) -> Value {
        let s = |v: &str| Value::String(v.to_owned());
        let mut m = Map::with_capacity(10);
        m.insert("id".into(), s(&self.id));
        m.insert("in_reply_to".into(), s(&self.in_reply_to));
        m.insert("jti".into(), s(&self.jti));
        m.insert("ma2h_version".into(), s(&self.ma2h_version));
        m.insert("payload_sha256".into(), s(&self.payload_sha256));
        m.insert("resolution".into(), s(&self.resolution));
        m.insert("resolution_id".into(), s(&self.resolution_id));
        // Absent stays a `null` member, never a dropped key (§9.8, `dp-015`).
        m.insert("resolved_at".into(), self.resolved_at.as_deref().map_or(Value::Null, s));
        m.insert("t".into(), s(&self.t));
        m.insert("to".into(), s(&self.to));
        Value::Object(m)
    }

    /// RFC 8785 canonical bytes — exactly what is signed (§9.8, §9.2).
    pub fn to_canonical(&self) -> Vec<u8> {
        jcs::canonicalize(&self.to_value())
    }
}

#[cfg(test)]
mod tests {
    //! Byte-for-byte fixtures from the upstream `autnmy/ma2h-protocol` conformance vectors
    //! `dp-013`, `dp-014` and `dp-015` (response entry); key `ma2h-test-secret-key-0123456789ab`.
    use serde_json::json;

    use super::*;
    use crate::signature::{SignatureError, SigningKey, VerifyingKey, header_line, sign_canonical, verify_canonical};

    const KEY: &[u8] = b"ma2h-test-secret-key-0123456789ab";
    // from conformance/vectors/dp-013-entry-response-signature.json (also dp-014's `v1`)
    const DP013_V1: &str = "ML7nxivSFOMqQ8CerEeBJmMV6919d9GZ5GbSd49n36c";
    const DP013_JTI: &str = "jti_01J5RSPDEMOFIX";
    const DP013_T: &str = "1786752060";

    /// The delivered Response of dp-013 (dp-014's `honest_entry`).
    fn dp013_entry() -> Value {
        json!({"ma2h_version":"0.5","in_reply_to":"msg_01J5MSG0002","resolution_id":"res_01J5RSLV0001",
               "agent":{"id":"overseer/fleet","run_id":"run_01J5OVERSEER01"},"resolution":"answered",
               "response":{"value":"approve","edited":false,"actor":"agent:deploybot/dev-team#sess_01J5WRK0007",
                           "resolved_at":"2026-08-10T12:05:00Z"},
               "state":{"sealed":"v1.demo.MOCK-SEALED-STATE-BLOB"}})
    }

    fn verify_at(entry: &Value, session: &str) -> Result<(), SignatureError> {
        let ctx = ResponseEntryContext::for_drain(entry, "overseer/fleet", session, DP013_JTI, DP013_T).unwrap();
        verify_canonical(&ctx.to_canonical(), DP013_V1, &[VerifyingKey::Hmac(KEY.to_vec())])
    }

    #[test]
    fn the_session_address_joins_principal_and_session_with_a_hash() {
        assert_eq!(session_address("overseer/fleet", "sess_01J5OVR0001"), "agent:overseer/fleet#sess_01J5OVR0001");
    }

    #[test]
    fn dp013_response_entry_signature_is_reproduced_byte_for_byte() {
        let to = session_address("overseer/fleet", "sess_01J5OVR0001");
        let ctx = ResponseEntryContext::for_response(&dp013_entry(), &to, DP013_JTI, DP013_T).unwrap();
        assert_eq!(
            jcs::canonicalize_to_string(&jcs::payload_object(
                dp013_entry().get("response"),
                dp013_entry().get("state")
            )),
            r#"{"response":{"actor":"agent:deploybot/dev-team#sess_01J5WRK0007","edited":false,"resolved_at":"2026-08-10T12:05:00Z","value":"approve"},"state":{"sealed":"v1.demo.MOCK-SEALED-STATE-BLOB"}}"#
        );
        assert_eq!(ctx.payload_sha256, "21bf7d8c7b9245170bbe80d0256de0779fa2490a08cc96c3c4e02568a33f997f");
        assert_eq!(ctx.id, ctx.in_reply_to, "§9.8: id is reconstructed from in_reply_to");
        assert_eq!(
            String::from_utf8(ctx.to_canonical()).unwrap(),
            r#"{"id":"msg_01J5MSG0002","in_reply_to":"msg_01J5MSG0002","jti":"jti_01J5RSPDEMOFIX","ma2h_version":"0.5","payload_sha256":"21bf7d8c7b9245170bbe80d0256de0779fa2490a08cc96c3c4e02568a33f997f","resolution":"answered","resolution_id":"res_01J5RSLV0001","resolved_at":"2026-08-10T12:05:00Z","t":"1786752060","to":"agent:overseer/fleet#sess_01J5OVR0001"}"#
        );
        let v1 = sign_canonical(&ctx.to_canonical(), &SigningKey::Hmac(KEY.to_vec()));
        assert_eq!(v1, DP013_V1);
        assert_eq!(
            header_line(&ctx.t, &ctx.jti, &v1),
            "MA2H-Signature: t=1786752060,jti=jti_01J5RSPDEMOFIX,v1=ML7nxivSFOMqQ8CerEeBJmMV6919d9GZ5GbSd49n36c"
        );
    }

    #[test]
    fn the_payload_digest_is_the_push_contexts_digest() {
        // §9.8: the verifier shares the §9.2 digest byte for byte; only the destination differs.
        let push = SignedContext::for_response(&dp013_entry(), "https://agent.example/cb", DP013_JTI, DP013_T).unwrap();
        let entry =
            ResponseEntryContext::for_drain(&dp013_entry(), "overseer/fleet", "sess_x", DP013_JTI, DP013_T).unwrap();
        assert_eq!(entry.payload_sha256, push.payload_sha256);
        assert_eq!(entry.resolved_at, push.resolved_at);
    }

    #[test]
    fn dp014_cross_session_replay_and_tampering_fail_with_mismatch() {
        // from conformance/vectors/dp-014-entry-response-cross-session-replay-invalid.json
        assert_eq!(verify_at(&dp013_entry(), "sess_01J5OVR0001"), Ok(()), "the honest control passes first");
        assert_eq!(verify_at(&dp013_entry(), "sess_01J5OVR0002"), Err(SignatureError::Mismatch), "replayed");
        let mut flipped = dp013_entry();
        flipped["response"]["value"] = json!("deny");
        assert_eq!(verify_at(&flipped, "sess_01J5OVR0001"), Err(SignatureError::Mismatch), "answer tamper");
        let mut rebound = dp013_entry();
        rebound["in_reply_to"] = json!("msg_01J5MSG0009");
        assert_eq!(verify_at(&rebound, "sess_01J5OVR0001"), Err(SignatureError::Mismatch), "correlation rebind");
        // The advisory members stay unbound (§9.2, §9.8).
        let mut advisory = dp013_entry();
        advisory["agent"]["id"] = json!("someone/else");
        advisory["defaulted"] = json!(true);
        assert_eq!(verify_at(&advisory, "sess_01J5OVR0001"), Ok(()));
    }

    #[test]
    fn dp015_a_response_less_entry_binds_a_null_resolved_at() {
        // from conformance/vectors/dp-015-entry-response-null-resolved-at-signature.json
        let entry = json!({"ma2h_version":"0.5","in_reply_to":"msg_01J5MSG0004","resolution_id":"res_01J5RSLV0002",
                           "agent":{"id":"overseer/fleet","run_id":"run_01J5OVERSEER01"},"resolution":"completed"});
        let ctx = ResponseEntryContext::for_drain(
            &entry,
            "overseer/fleet",
            "sess_01J5OVR0001",
            "jti_01J5RSPDEMOFI2",
            "1786752180",
        )
        .unwrap();
        assert_eq!(ctx.resolved_at, None);
        assert_eq!(ctx.payload_sha256, jcs::sha256_hex(br#"{"response":null,"state":null}"#));
        assert_eq!(ctx.payload_sha256, "f8e362f091afdac944ab8f6a17e234c1662f1e39f846c0242824d0abc07b440c");
        assert_eq!(
            String::from_utf8(ctx.to_canonical()).unwrap(),
            r#"{"id":"msg_01J5MSG0004","in_reply_to":"msg_01J5MSG0004","jti":"jti_01J5RSPDEMOFI2","ma2h_version":"0.5","payload_sha256":"f8e362f091afdac944ab8f6a17e234c1662f1e39f846c0242824d0abc07b440c","resolution":"completed","resolution_id":"res_01J5RSLV0002","resolved_at":null,"t":"1786752180","to":"agent:overseer/fleet#sess_01J5OVR0001"}"#
        );
        let v1 = sign_canonical(&ctx.to_canonical(), &SigningKey::Hmac(KEY.to_vec()));
        assert_eq!(v1, "E1Uz2ExkFJFLSSwLdI5WGFvRffGtR98ptlp-f7F5ecw");
        // An explicit `null` response/state is the same delivery as an absent one.
        let mut nulled = entry.clone();
        nulled["response"] = Value::Null;
        nulled["state"] = Value::Null;
        let again = ResponseEntryContext::for_drain(
            &nulled,
            "overseer/fleet",
            "sess_01J5OVR0001",
            "jti_01J5RSPDEMOFI2",
            "1786752180",
        )
        .unwrap();
        assert_eq!(again, ctx);
    }

    #[test]
    fn a_body_missing_a_bound_member_is_refused_by_name() {
        let mut entry = dp013_entry();
        entry.as_object_mut().unwrap().remove("resolution_id");
        assert_eq!(ResponseEntryContext::for_response(&entry, "agent:a#sess_1", "j", "1"), Err("resolution_id"));
    }
}
