//! A local OpenID Connect provider standing in for Google, Okta, Entra ID or Keycloak in the
//! inbox SSO tests (issue 42). It is written for the tests, from OpenID Connect Core 1.0 and
//! RFC 7636, and signs its ID tokens with its own code (ed25519-dalek, p256) — not the crate the
//! Hub verifies with.
//!
//! - `GET /.well-known/openid-configuration`, `GET /jwks`;
//! - `GET /authorize`: with `login_hint` (an email, or a subject) it redirects straight back with
//!   a code; without one it shows a form asking who is signing in (the browser test fills it);
//! - `POST /token`: checks the client's Basic credentials, the code (once), the redirect URI and
//!   the PKCE S256 verifier, then answers with an ID token whose claims the test may reshape
//!   ([`Idp::reshape_next`]) or sign with a key it does not publish ([`Idp::sign_next_with_other_key`]);
//! - `GET /logout`: the `end_session_endpoint` (RP-Initiated Logout 1.0) — records the request
//!   ([`Idp::logout_calls`]) and sends the browser to its `post_logout_redirect_uri`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::get;
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::{Value, json};
use sha2::Digest;

/// The client the stand-in knows.
pub const CLIENT_ID: &str = "ma2h-hub-test";
pub const CLIENT_SECRET: &str = "test-client-secret";

/// Which algorithm the ID tokens are signed with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alg {
    EdDsa,
    Es256,
}

type Reshape = Box<dyn FnOnce(&mut Value) + Send>;

struct Grant {
    redirect_uri: String,
    challenge: String,
    nonce: String,
    hint: String,
}

struct Inner {
    issuer: String,
    alg: Alg,
    now: Box<dyn Fn() -> i64 + Send + Sync>,
    codes: HashMap<String, Grant>,
    next_code: u64,
    reshape: Option<Reshape>,
    other_key: bool,
    /// After [`Idp::rotate`]: the second key signs (as `k2`) and is the one published.
    rotated: bool,
    /// Every `/token` call, in order (`ok` or why it was refused).
    token_calls: Vec<String>,
    /// Every ID token issued, in order.
    issued: Vec<String>,
    /// Every `/logout` request's query parameters, in order.
    logout_calls: Vec<HashMap<String, String>>,
}

/// The stand-in: clone it freely (shared state).
#[derive(Clone)]
pub struct Idp(Arc<Mutex<Inner>>);

const ED_SEED: [u8; 32] = [0x42; 32];
const ED_OTHER: [u8; 32] = [0x43; 32];
const P256_SEED: [u8; 32] = [0x11; 32];
const P256_OTHER: [u8; 32] = [0x12; 32];

impl Idp {
    /// A provider whose issuer identifier is `issuer` (no trailing slash), telling time by `now`
    /// (Unix seconds: the test's clock, so tokens expire with it).
    pub fn new(issuer: &str, alg: Alg, now: impl Fn() -> i64 + Send + Sync + 'static) -> Self {
        Self(Arc::new(Mutex::new(Inner {
            issuer: issuer.to_owned(),
            alg,
            now: Box::new(now),
            codes: HashMap::new(),
            next_code: 0,
            reshape: None,
            other_key: false,
            rotated: false,
            token_calls: Vec::new(),
            issued: Vec::new(),
            logout_calls: Vec::new(),
        })))
    }

    pub fn issuer(&self) -> String {
        self.0.lock().unwrap().issuer.clone()
    }

    /// Change the next ID token's claims (and header: `claims["_header"]`) before it is signed.
    pub fn reshape_next(&self, f: impl FnOnce(&mut Value) + Send + 'static) {
        self.0.lock().unwrap().reshape = Some(Box::new(f));
    }

    /// Sign the next ID token with a key the JWKS does not publish (same `kid`).
    pub fn sign_next_with_other_key(&self) {
        self.0.lock().unwrap().other_key = true;
    }

    /// Rotate the signing key: from now on tokens are signed by a new key (`kid: k2`), and the
    /// key set publishes only it.
    pub fn rotate(&self) {
        self.0.lock().unwrap().rotated = true;
    }

    /// What each `/token` call came to.
    pub fn token_calls(&self) -> Vec<String> {
        self.0.lock().unwrap().token_calls.clone()
    }

    /// Every ID token issued, in order.
    pub fn issued(&self) -> Vec<String> {
        self.0.lock().unwrap().issued.clone()
    }

    /// The query parameters of every `/logout` request, in order.
    pub fn logout_calls(&self) -> Vec<HashMap<String, String>> {
        self.0.lock().unwrap().logout_calls.clone()
    }

    pub fn router(&self) -> Router {
        Router::new()
            .route("/.well-known/openid-configuration", get(discovery))
            .route("/jwks", get(jwks))
            .route("/authorize", get(authorize).post(authorize_form))
            .route("/token", axum::routing::post(token))
            .route("/logout", get(logout))
            .with_state(self.clone())
    }
}

async fn discovery(State(idp): State<Idp>) -> Response {
    let issuer = idp.issuer();
    let alg = match idp.0.lock().unwrap().alg {
        Alg::EdDsa => "EdDSA",
        Alg::Es256 => "ES256",
    };
    axum::Json(json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "jwks_uri": format!("{issuer}/jwks"),
        "end_session_endpoint": format!("{issuer}/logout"),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": [alg],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic"],
        "scopes_supported": ["openid", "email", "profile"],
    }))
    .into_response()
}

fn ed_key(seed: &[u8; 32]) -> ed25519_dalek::SigningKey {
    ed25519_dalek::SigningKey::from_bytes(seed)
}

fn p256_key(seed: &[u8; 32]) -> p256::ecdsa::SigningKey {
    p256::ecdsa::SigningKey::from_bytes(&(*seed).into()).expect("a valid scalar")
}

async fn jwks(State(idp): State<Idp>) -> Response {
    let (alg, rotated) = {
        let inner = idp.0.lock().unwrap();
        (inner.alg, inner.rotated)
    };
    let kid = if rotated { "k2" } else { "k1" };
    let key = match alg {
        Alg::EdDsa => json!({
            "kty": "OKP", "crv": "Ed25519", "use": "sig", "alg": "EdDSA", "kid": kid,
            "x": URL_SAFE_NO_PAD.encode(ed_key(if rotated { &ED_OTHER } else { &ED_SEED }).verifying_key().as_bytes()),
        }),
        Alg::Es256 => {
            let point =
                p256_key(if rotated { &P256_OTHER } else { &P256_SEED }).verifying_key().to_encoded_point(false);
            json!({
                "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": kid,
                "x": URL_SAFE_NO_PAD.encode(point.x().unwrap()),
                "y": URL_SAFE_NO_PAD.encode(point.y().unwrap()),
            })
        }
    };
    ([(header::CONTENT_TYPE, "application/json")], json!({ "keys": [key] }).to_string()).into_response()
}

fn issue_code(idp: &Idp, q: &HashMap<String, String>, hint: &str) -> Response {
    let get = |k: &str| q.get(k).cloned().unwrap_or_default();
    if get("client_id") != CLIENT_ID || get("response_type") != "code" || get("code_challenge_method") != "S256" {
        return (StatusCode::BAD_REQUEST, "bad authorization request").into_response();
    }
    let mut inner = idp.0.lock().unwrap();
    inner.next_code += 1;
    let code = format!("code-{}", inner.next_code);
    let grant = Grant {
        redirect_uri: get("redirect_uri"),
        challenge: get("code_challenge"),
        nonce: get("nonce"),
        hint: hint.to_owned(),
    };
    let back = format!(
        "{}?code={code}&state={}",
        grant.redirect_uri,
        url::form_urlencoded::byte_serialize(get("state").as_bytes()).collect::<String>()
    );
    inner.codes.insert(code, grant);
    Redirect::to(&back).into_response()
}

async fn authorize(State(idp): State<Idp>, Query(q): Query<HashMap<String, String>>) -> Response {
    if let Some(hint) = q.get("login_hint") {
        return issue_code(&idp, &q, hint);
    }
    // Who is signing in? (The browser test answers.) The request's parameters ride along.
    let hidden: String =
        q.iter().map(|(k, v)| format!(r#"<input type="hidden" name="{}" value="{}">"#, escape(k), escape(v))).collect();
    Html(format!(
        r#"<!doctype html><title>Test IdP</title><h1>Test identity provider</h1>
<form method="post" action="/authorize">{hidden}<label for="login">Email</label>
<input id="login" name="login_hint"><button id="idp-continue" type="submit">Continue</button></form>"#
    ))
    .into_response()
}

async fn authorize_form(State(idp): State<Idp>, body: String) -> Response {
    let q: HashMap<String, String> = url::form_urlencoded::parse(body.as_bytes()).into_owned().collect();
    let hint = q.get("login_hint").cloned().unwrap_or_default();
    issue_code(&idp, &q, &hint)
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('"', "&quot;").replace('<', "&lt;").replace('>', "&gt;")
}

fn refuse(idp: &Idp, why: &str) -> Response {
    idp.0.lock().unwrap().token_calls.push(why.to_owned());
    (StatusCode::BAD_REQUEST, axum::Json(json!({ "error": "invalid_grant", "error_description": why }))).into_response()
}

async fn token(State(idp): State<Idp>, headers: HeaderMap, body: String) -> Response {
    let form: HashMap<String, String> = url::form_urlencoded::parse(body.as_bytes()).into_owned().collect();
    let get = |k: &str| form.get(k).cloned().unwrap_or_default();
    let basic = format!("Basic {}", STANDARD.encode(format!("{CLIENT_ID}:{CLIENT_SECRET}")));
    if headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) != Some(basic.as_str()) {
        return refuse(&idp, "client authentication");
    }
    if get("grant_type") != "authorization_code" {
        return refuse(&idp, "grant_type");
    }
    let Some(grant) = idp.0.lock().unwrap().codes.remove(&get("code")) else {
        return refuse(&idp, "unknown or used code");
    };
    if grant.redirect_uri != get("redirect_uri") {
        return refuse(&idp, "redirect_uri");
    }
    // RFC 7636 §4.6: BASE64URL(SHA256(code_verifier)) == code_challenge.
    if URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(get("code_verifier").as_bytes())) != grant.challenge {
        return refuse(&idp, "pkce");
    }
    let id_token = sign(&idp, &grant);
    let mut inner = idp.0.lock().unwrap();
    inner.token_calls.push("ok".into());
    inner.issued.push(id_token.clone());
    drop(inner);
    axum::Json(json!({ "access_token": "at-1", "token_type": "Bearer", "expires_in": 300, "id_token": id_token }))
        .into_response()
}

async fn logout(State(idp): State<Idp>, Query(q): Query<HashMap<String, String>>) -> Response {
    let back = q.get("post_logout_redirect_uri").cloned();
    idp.0.lock().unwrap().logout_calls.push(q);
    match back {
        Some(back) => Redirect::to(&back).into_response(),
        None => Html("<!doctype html><title>Test IdP</title><h1>Signed out of the test identity provider</h1>")
            .into_response(),
    }
}

fn sign(idp: &Idp, grant: &Grant) -> String {
    let mut inner = idp.0.lock().unwrap();
    let now = (inner.now)();
    let (subject, email) = match grant.hint.split_once('@') {
        Some(_) => (format!("sub-{}", grant.hint), Some(grant.hint.clone())),
        None => (grant.hint.clone(), None),
    };
    let alg = match inner.alg {
        Alg::EdDsa => "EdDSA",
        Alg::Es256 => "ES256",
    };
    let mut claims = json!({
        "iss": inner.issuer, "aud": CLIENT_ID, "sub": subject, "iat": now, "exp": now + 300,
        "nonce": grant.nonce, "_header": { "alg": alg, "typ": "JWT", "kid": if inner.rotated { "k2" } else { "k1" } },
    });
    if let Some(email) = email {
        claims["email"] = json!(email);
        claims["email_verified"] = json!(true);
    }
    if let Some(reshape) = inner.reshape.take() {
        reshape(&mut claims);
    }
    let header = claims.as_object_mut().unwrap().remove("_header").unwrap();
    let input =
        format!("{}.{}", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()));
    // the key the JWKS does not publish: the other one of the pair (same `kid`)
    let other = std::mem::take(&mut inner.other_key) != inner.rotated;
    let signature = match inner.alg {
        Alg::EdDsa => {
            use ed25519_dalek::Signer;
            ed_key(if other { &ED_OTHER } else { &ED_SEED }).sign(input.as_bytes()).to_bytes().to_vec()
        }
        Alg::Es256 => {
            use p256::ecdsa::signature::Signer;
            let sig: p256::ecdsa::Signature =
                p256_key(if other { &P256_OTHER } else { &P256_SEED }).sign(input.as_bytes());
            sig.to_bytes().to_vec()
        }
    };
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature))
}
