//! §9.2 / §6 receiver checks against Responses signed exactly as the Hub signs pushes
//! (`ma2h_core::push::deliver` → `ma2h_protocol::signature::sign`).

use ma2h_client::replay::ReplayCache;
use ma2h_client::verify::{Rejection, Verdict, Verifier, hmac_key};
use ma2h_protocol::signature::{self, SignatureError, SignedContext, SigningKey};
use serde_json::{Value, json};

const URL: &str = "https://agent.example/ma2h/resolve";
const NOW: i64 = 1_780_000_000;

fn response() -> Value {
    json!({"ma2h_version": "0.5", "in_reply_to": "msg_1", "resolution_id": "res_1",
        "agent": {"id": "bot", "run_id": "r"}, "resolution": "answered",
        "response": {"value": "ship", "edited": false, "actor": "human:alice", "resolved_at": "2026-06-04T18:04:11Z"},
        "defaulted": false, "state": {"ma2h_sealed": "v1", "n": 0.1}})
}

/// Sign `body` for `url` the way the Hub does; returns the header value.
fn sign(body: &Value, url: &str, jti: &str, t: i64, key: &SigningKey) -> String {
    let ctx = SignedContext::for_response(body, url, jti, &t.to_string()).unwrap();
    signature::header_value(&ctx.t, jti, &signature::sign(&ctx, key))
}

fn secret() -> SigningKey {
    SigningKey::Hmac(b"whsec-test".to_vec())
}

fn verifier(dir: &std::path::Path) -> Verifier {
    Verifier::new(URL, vec![hmac_key("whsec-test")], Some(ReplayCache::open(dir).unwrap()))
}

fn bytes(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).unwrap()
}

#[test]
fn an_authentic_response_is_accepted_once_then_its_retry_is_a_duplicate() {
    let dir = tempfile::tempdir().unwrap();
    let v = verifier(dir.path());
    let body = response();
    let h1 = sign(&body, URL, "jti_a", NOW, &secret());
    let Verdict::Accepted(r) = v.verify(&bytes(&body), &h1, NOW).unwrap() else { panic!("not accepted") };
    assert_eq!((r.in_reply_to.as_str(), r.resolution_id.as_str(), r.actor()), ("msg_1", "res_1", Some("human:alice")));
    // the Hub's retry: same resolution, fresh jti
    let h2 = sign(&body, URL, "jti_b", NOW + 5, &secret());
    assert!(matches!(v.verify(&bytes(&body), &h2, NOW + 5).unwrap(), Verdict::Duplicate(_)));
}

#[test]
fn a_replayed_jti_is_rejected_even_by_a_new_process() {
    let dir = tempfile::tempdir().unwrap();
    let body = response();
    let h = format!("MA2H-Signature: {}", sign(&body, URL, "jti_a", NOW, &secret()));
    assert!(verifier(dir.path()).verify(&bytes(&body), &h, NOW).is_ok());
    let err = verifier(dir.path()).verify(&bytes(&body), &h, NOW + 1).unwrap_err();
    assert!(matches!(err, Rejection::Replay(j) if j == "jti_a"));
}

#[test]
fn a_tampered_body_state_or_foreign_callback_url_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let v = verifier(dir.path());
    let body = response();
    let h = sign(&body, URL, "jti_a", NOW, &secret());
    for path in [&["response", "value"][..], &["state", "n"], &["response", "actor"], &["resolution"]] {
        let mut t = body.clone();
        let slot = path.iter().fold(&mut t, |v, k| &mut v[*k]);
        *slot = json!("tampered");
        let err = v.verify(&bytes(&t), &h, NOW).unwrap_err();
        assert!(matches!(err, Rejection::Signature(SignatureError::Mismatch)), "{path:?}: {err}");
    }
    let foreign = sign(&body, "https://elsewhere.example/cb", "jti_b", NOW, &secret());
    assert!(matches!(v.verify(&bytes(&body), &foreign, NOW), Err(Rejection::Signature(SignatureError::Mismatch))));
    // nothing was recorded by the rejections: the genuine delivery is still fresh
    assert!(matches!(v.verify(&bytes(&body), &h, NOW).unwrap(), Verdict::Accepted(_)));
}

#[test]
fn a_t_outside_the_window_is_rejected_and_the_edge_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let v = verifier(dir.path());
    let body = response();
    let old = sign(&body, URL, "jti_old", NOW - 121, &secret());
    let future = sign(&body, URL, "jti_future", NOW + 121, &secret());
    for h in [old, future] {
        let err = v.verify(&bytes(&body), &h, NOW).unwrap_err();
        assert!(matches!(err, Rejection::Signature(SignatureError::OutOfWindow { .. })), "{err}");
    }
    let edge = sign(&body, URL, "jti_edge", NOW - 120, &secret());
    assert!(v.verify(&bytes(&body), &edge, NOW).is_ok());
}

#[test]
fn either_of_two_keys_verifies_during_rotation() {
    let dir = tempfile::tempdir().unwrap();
    let ed_old = SigningKey::ed25519_from_seed(&[7; 32]);
    let ed_new = SigningKey::ed25519_from_seed(&[8; 32]);
    let keys = vec![ed_new.verifying_key(), ed_old.verifying_key()];
    let v = Verifier::new(URL, keys, Some(ReplayCache::open(dir.path()).unwrap()));
    let mut body = response();
    assert!(v.verify(&bytes(&body), &sign(&body, URL, "j1", NOW, &ed_old), NOW).is_ok());
    body["resolution_id"] = "res_2".into();
    assert!(v.verify(&bytes(&body), &sign(&body, URL, "j2", NOW, &ed_new), NOW).is_ok());
    body["resolution_id"] = "res_3".into();
    let stranger = SigningKey::ed25519_from_seed(&[9; 32]);
    assert!(v.verify(&bytes(&body), &sign(&body, URL, "j3", NOW, &stranger), NOW).is_err());
}

#[test]
fn a_response_without_response_detail_verifies_with_null_resolved_at() {
    let dir = tempfile::tempdir().unwrap();
    let mut body = response();
    body.as_object_mut().unwrap().remove("response");
    body.as_object_mut().unwrap().remove("state");
    body["resolution"] = "completed".into();
    let h = sign(&body, URL, "j1", NOW, &secret());
    assert!(matches!(verifier(dir.path()).verify(&bytes(&body), &h, NOW).unwrap(), Verdict::Accepted(_)));
}

#[test]
fn missing_or_malformed_headers_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let v = verifier(dir.path());
    let body = bytes(&response());
    assert!(matches!(v.verify(&body, "", NOW), Err(Rejection::MissingHeader)));
    assert!(matches!(v.verify(&body, "t=1,jti=x", NOW), Err(Rejection::Signature(_))));
    assert!(matches!(
        v.verify(b"not json", &sign(&response(), URL, "j", NOW, &secret()), NOW),
        Err(Rejection::BadBody(_))
    ));
}
