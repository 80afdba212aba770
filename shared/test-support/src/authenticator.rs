//! A software WebAuthn authenticator for Router and cost tests (issue 41): it makes a discoverable
//! P-256 credential from the Hub's creation options and signs assertions for request options,
//! answering in the JSON `PublicKeyCredential.toJSON()` gives — what passkeys.js posts. Its
//! bytes follow WebAuthn Level 3 §6.1 (authenticator data), §6.5.4 (`none` attestation) and
//! RFC 9053 (COSE EC2 key), CBOR in CTAP2 canonical form. The browser tests use Chromium's own
//! virtual authenticator instead.

use base64::Engine as _;
use p256::ecdsa::signature::Signer as _;
use p256::ecdsa::{DerSignature, SigningKey};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn unb64(s: &str) -> Vec<u8> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(s).unwrap()
}

/// CBOR heads (RFC 8949 §3): major type and argument, shortest form.
fn head(major: u8, n: u64, out: &mut Vec<u8>) {
    let m = major << 5;
    match n {
        0..=23 => out.push(m | n as u8),
        24..=0xff => out.extend([m | 24, n as u8]),
        0x100..=0xffff => {
            out.push(m | 25);
            out.extend((n as u16).to_be_bytes());
        }
        _ => {
            out.push(m | 26);
            out.extend((n as u32).to_be_bytes());
        }
    }
}

fn int(i: i64, out: &mut Vec<u8>) {
    if i >= 0 { head(0, i as u64, out) } else { head(1, (-1 - i) as u64, out) }
}

fn bytes(b: &[u8], out: &mut Vec<u8>) {
    head(2, b.len() as u64, out);
    out.extend_from_slice(b);
}

fn text(s: &str, out: &mut Vec<u8>) {
    head(3, s.len() as u64, out);
    out.extend_from_slice(s.as_bytes());
}

/// One stored credential.
#[derive(Clone)]
pub struct Credential {
    pub id: Vec<u8>,
    key: SigningKey,
    pub user_handle: Vec<u8>,
    pub rp_id: String,
}

/// An authenticator holding discoverable credentials (user verification always done).
#[derive(Default)]
pub struct Authenticator {
    pub credentials: Vec<Credential>,
    seed: u8,
}

impl Authenticator {
    /// `navigator.credentials.create(options)` at `origin`: the registration JSON.
    pub fn create(&mut self, options: &Value, origin: &str) -> Value {
        self.seed += 1;
        let rp_id = options["rp"]["id"].as_str().expect("the options name the RP").to_owned();
        let mut secret = [self.seed; 32];
        secret[0] = 0x42;
        let key = SigningKey::from_slice(&secret).unwrap();
        let id: Vec<u8> = (0..16).map(|i| i ^ self.seed.wrapping_mul(31)).collect();
        let point = key.verifying_key().to_encoded_point(false);
        let mut cose = Vec::new();
        head(5, 5, &mut cose);
        for (k, v) in [(1, 2), (3, -7), (-1, 1)] {
            int(k, &mut cose);
            int(v, &mut cose);
        }
        int(-2, &mut cose);
        bytes(point.x().unwrap(), &mut cose);
        int(-3, &mut cose);
        bytes(point.y().unwrap(), &mut cose);

        let mut auth = Sha256::digest(rp_id.as_bytes()).to_vec();
        auth.push(0x01 | 0x04 | 0x40); // UP, UV, AT
        auth.extend(0u32.to_be_bytes());
        auth.extend([0u8; 16]); // AAGUID
        auth.extend((id.len() as u16).to_be_bytes());
        auth.extend(&id);
        auth.extend(&cose);

        let mut att = Vec::new();
        head(5, 3, &mut att);
        text("fmt", &mut att);
        text("none", &mut att);
        text("attStmt", &mut att);
        head(5, 0, &mut att);
        text("authData", &mut att);
        bytes(&auth, &mut att);

        let client = json!({"type": "webauthn.create", "challenge": options["challenge"], "origin": origin, "crossOrigin": false});
        let user_handle = unb64(options["user"]["id"].as_str().unwrap());
        self.credentials.push(Credential { id: id.clone(), key, user_handle, rp_id });
        json!({
            "id": b64(&id), "rawId": b64(&id), "type": "public-key", "authenticatorAttachment": "platform",
            "clientExtensionResults": {},
            "response": {
                "clientDataJSON": b64(client.to_string().as_bytes()),
                "attestationObject": b64(&att),
                "transports": ["internal"]
            }
        })
    }

    /// `navigator.credentials.get(options)` at `origin` with credential `which`: the assertion JSON.
    pub fn get(&self, which: usize, options: &Value, origin: &str) -> Value {
        let c = &self.credentials[which];
        let client =
            json!({"type": "webauthn.get", "challenge": options["challenge"], "origin": origin, "crossOrigin": false})
                .to_string();
        let mut auth = Sha256::digest(c.rp_id.as_bytes()).to_vec();
        auth.push(0x01 | 0x04); // UP, UV
        auth.extend(0u32.to_be_bytes());
        let mut signed = auth.clone();
        signed.extend(Sha256::digest(client.as_bytes()));
        let signature: DerSignature = c.key.sign(&signed);
        json!({
            "id": b64(&c.id), "rawId": b64(&c.id), "type": "public-key", "authenticatorAttachment": "platform",
            "clientExtensionResults": {},
            "response": {
                "clientDataJSON": b64(client.as_bytes()),
                "authenticatorData": b64(&auth),
                "signature": b64(signature.as_bytes()),
                "userHandle": b64(&c.user_handle)
            }
        })
    }
}
