//! The two legs of an SSO login (issue 42): [`begin`] makes the authorization request (state,
//! nonce and a PKCE S256 challenge, RFC 7636), [`finish`] exchanges the code and validates the ID
//! token with the `openidconnect` crate — signature by the issuer's published keys, `iss`, `aud`
//! (and no other audience), `exp`, `iat` not in the future, `nonce` — then maps the identity to an
//! operator. The pending state travels with the browser (the HTTP layer seals it into a cookie),
//! so any Lambda container can finish a login another began.
//!
//! Every request to the provider goes through [`Hub::outbound`] — the one HTTP client, behind
//! the §9.4 egress guard, redirects refused — never a client of the crate's own.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::time::{Duration, Instant};

use base64::Engine;
use ma2h_protocol::ids::AccountId;
use openidconnect::core::{CoreAuthenticationFlow, CoreClient, CoreIdTokenClaims, CoreJwsSigningAlgorithm};
use openidconnect::{
    AsyncHttpClient, AuthorizationCode, ClaimsVerificationError, ClientId, ClientSecret, CsrfToken, HttpRequest,
    HttpResponse, IssuerUrl, LogoutRequest, Nonce, PkceCodeChallenge, PkceCodeVerifier, PostLogoutRedirectUrl,
    ProviderMetadataWithLogout, RedirectUrl, Scope, SignatureVerificationError, TokenResponse,
};

use super::{Identity, SsoConfig, Via, secret_context};
use crate::kernel::auth::Principal;
use crate::kernel::credentials::PrincipalId;
use crate::push::queue::{FetchRequest, PushSender};
use crate::{Hub, HubError};

/// How long a provider's discovery document and keys are reused.
const PROVIDER_TTL: Duration = Duration::from_secs(3600);
/// An `iat` this far in the future is tolerated (clock skew); further is refused.
const SKEW: chrono::TimeDelta = chrono::TimeDelta::minutes(2);
/// The longest ID token kept as the logout's `id_token_hint`: it rides in the session cookie,
/// which must stay under the browsers' 4 KiB. A longer one (an Entra token with many groups)
/// is not kept, and the logout names the client instead.
pub const MAX_ID_TOKEN_HINT: usize = 1800;

/// Why a login did not happen. The HTTP layer shows a generic message and logs the cause.
#[derive(Debug, thiserror::Error)]
pub enum SsoError {
    #[error("this account has no single sign-on")]
    NotConfigured,
    /// Discovery, the keys or the token endpoint failed (or the Hub cannot reach them).
    #[error("identity provider: {0}")]
    Provider(String),
    /// The answer was not a valid login (bad token, state, nonce…).
    #[error("refused: {0}")]
    Refused(String),
    /// A valid identity that is no operator of this account (its subject, for the admin to link),
    /// or not in a required group.
    #[error("not an operator of this account ({})", refusal.as_str())]
    Unmapped { subject: String, refusal: super::Refusal },
    #[error(transparent)]
    Hub(#[from] HubError),
}

/// What the browser carries between the legs (sealed by the HTTP layer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    pub account: AccountId,
    pub state: String,
    pub nonce: String,
    pub verifier: String,
}

/// A finished login: the operator, and how they were mapped.
#[derive(Debug, Clone)]
pub struct Login {
    pub principal: Principal,
    pub via: Via,
    /// The issuer that vouched (for the ledger's `login` entry).
    pub issuer: String,
    /// The validated ID token, for a later RP-Initiated Logout's `id_token_hint` (`None` when
    /// longer than [`MAX_ID_TOKEN_HINT`]).
    pub id_token_hint: Option<String>,
}

/// The account's SSO configuration (through the policy cache).
pub async fn config(hub: &Hub, account: &AccountId) -> Result<Option<SsoConfig>, HubError> {
    Ok(crate::channels::schedule::config(hub, account).await?.sso.clone())
}

/// Leg one: where to send the browser, and what it must bring back.
pub async fn begin(hub: &Hub, account: &AccountId, redirect_uri: &str) -> Result<(String, Pending), SsoError> {
    let config = config(hub, account).await?.ok_or(SsoError::NotConfigured)?;
    let metadata = provider(hub, &config.issuer, false).await?;
    let client = CoreClient::from_provider_metadata(metadata, ClientId::new(config.client_id.clone()), None)
        .set_redirect_uri(redirect(redirect_uri)?);
    let pending = Pending { account: account.clone(), state: random(hub), nonce: random(hub), verifier: random(hub) };
    let challenge = PkceCodeChallenge::from_code_verifier_sha256(&PkceCodeVerifier::new(pending.verifier.clone()));
    let (state, nonce) = (pending.state.clone(), pending.nonce.clone());
    let mut request = client
        .authorize_url(
            CoreAuthenticationFlow::AuthorizationCode,
            move || CsrfToken::new(state),
            move || Nonce::new(nonce),
        )
        .set_pkce_challenge(challenge);
    for scope in config.scope_list().into_iter().skip(1) {
        request = request.add_scope(Scope::new(scope));
    }
    let (url, _, _) = request.url();
    Ok((url.to_string(), pending))
}

/// Leg two: `code` from the provider's redirect (the caller has checked its `state` against
/// `pending`'s, and claimed it once) → the operator.
pub async fn finish(hub: &Hub, pending: &Pending, code: &str, redirect_uri: &str) -> Result<Login, SsoError> {
    let config = config(hub, &pending.account).await?.ok_or(SsoError::NotConfigured)?;
    let secret = config
        .client_secret
        .open(&hub.master_key, &secret_context(pending.account.as_str()))
        .ok_or_else(|| SsoError::Provider("the client secret does not open under this master key".into()))?;
    let metadata = provider(hub, &config.issuer, false).await?;
    let client = CoreClient::from_provider_metadata(
        metadata,
        ClientId::new(config.client_id.clone()),
        Some(ClientSecret::new(secret.clone())),
    )
    .set_redirect_uri(redirect(redirect_uri)?);
    let http = Http(hub.outbound.clone());
    let token = client
        .exchange_code(AuthorizationCode::new(code.to_owned()))
        .map_err(|e| SsoError::Provider(format!("no token endpoint: {e}")))?
        .set_pkce_verifier(PkceCodeVerifier::new(pending.verifier.clone()))
        .request_async(&http)
        .await
        .map_err(|e| SsoError::Provider(format!("token exchange: {}", chain(&e))))?;
    let id_token = token.id_token().ok_or_else(|| SsoError::Refused("the token response has no id_token".into()))?;
    let nonce = Nonce::new(pending.nonce.clone());
    let now = hub.clock.now();
    let verify = |client: &CoreClient<_, _, _, _, _, _>| -> Result<Identity, ClaimsVerificationError> {
        let verifier = client
            .id_token_verifier()
            // Asymmetric signatures only: an HS256 token would be "signed" with our own secret.
            .set_allowed_algs([
                CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256,
                CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha384,
                CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha512,
                CoreJwsSigningAlgorithm::RsaSsaPssSha256,
                CoreJwsSigningAlgorithm::EcdsaP256Sha256,
                CoreJwsSigningAlgorithm::EcdsaP384Sha384,
                CoreJwsSigningAlgorithm::EdDsa,
            ])
            .set_time_fn(move || now)
            .set_issue_time_verifier_fn(move |iat| {
                if iat > now + SKEW { Err(format!("issued in the future ({iat})")) } else { Ok(()) }
            })
            .set_other_audience_verifier_fn(|_| false);
        let claims: &CoreIdTokenClaims = id_token.claims(&verifier, &nonce)?;
        Ok(Identity {
            subject: claims.subject().as_str().to_owned(),
            email: claims.email().map(|e| e.as_str().to_owned()),
            email_verified: claims.email_verified().unwrap_or(false),
            groups: groups_in(&id_token.to_string(), config.groups_claim()),
        })
    };
    let identity = match verify(&client) {
        // A key the cached set does not have: the provider rotated — fetch its keys once more.
        Err(ClaimsVerificationError::SignatureVerification(SignatureVerificationError::NoMatchingKey)) => {
            let fresh = provider(hub, &config.issuer, true).await?;
            let client = CoreClient::from_provider_metadata(
                fresh,
                ClientId::new(config.client_id.clone()),
                Some(ClientSecret::new(secret)),
            );
            verify(&client)
        }
        other => other,
    }
    .map_err(|e| SsoError::Refused(format!("id token: {}", chain(&e))))?;
    // the identity's name in the ledger and the session (never the subject itself)
    let named = format!("{}{}", super::SESSION_PREFIX, crate::audit::short_digest(&identity.subject));
    let (human, via) = match config.map(&identity) {
        Ok(mapped) => mapped,
        Err(refusal) => {
            let event = crate::audit::Event::new("login.refused", "sso")
                .target(&named)
                .detail("issuer", config.issuer.as_str())
                .detail("reason", refusal.as_str());
            crate::audit::record_now(hub, &pending.account, event).await?;
            return Err(SsoError::Unmapped { subject: identity.subject, refusal });
        }
    };
    let principal =
        Principal { account: pending.account.clone(), id: PrincipalId::Operator(human), credential_id: named };
    let id_token_hint = Some(id_token.to_string()).filter(|t| t.len() <= MAX_ID_TOKEN_HINT);
    Ok(Login { principal, via, issuer: config.issuer, id_token_hint })
}

/// Where to send the browser after an SSO session ended, to end the provider's session too
/// (OpenID Connect RP-Initiated Logout 1.0): `None` unless the account turned
/// `provider_logout` on and the provider advertises an `end_session_endpoint`. The provider
/// comes back to `post_logout_redirect_uri` (which it must know). A provider that cannot be
/// reached is an error the caller logs; the Hub's own logout has happened either way.
pub async fn logout_url(
    hub: &Hub,
    account: &AccountId,
    id_token_hint: Option<&str>,
    post_logout_redirect_uri: &str,
) -> Result<Option<String>, SsoError> {
    let Some(config) = config(hub, account).await?.filter(|c| c.provider_logout) else { return Ok(None) };
    let metadata = provider(hub, &config.issuer, false).await?;
    let Some(endpoint) = metadata.additional_metadata().end_session_endpoint.clone() else { return Ok(None) };
    let back = PostLogoutRedirectUrl::new(post_logout_redirect_uri.to_owned())
        .map_err(|e| SsoError::Provider(format!("post-logout redirect uri `{post_logout_redirect_uri}`: {e}")))?;
    let mut url = LogoutRequest::from(endpoint)
        .set_client_id(ClientId::new(config.client_id))
        .set_post_logout_redirect_uri(back)
        .http_get_url();
    if let Some(hint) = id_token_hint {
        // the crate takes a parsed token; the string is the one it validated at login
        url.query_pairs_mut().append_pair("id_token_hint", hint);
    }
    Ok(Some(url.to_string()))
}

/// The groups a verified ID token lists in `claim` (an array of strings, or one string), read
/// from its payload: the signature just checked covers these very bytes. At most
/// [`MAX_TOKEN_GROUPS`] are read.
fn groups_in(token: &str, claim: &str) -> Vec<String> {
    let payload = token
        .split('.')
        .nth(1)
        .and_then(|p| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(p).ok())
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
    match payload.as_ref().and_then(|v| v.get(claim)) {
        Some(serde_json::Value::Array(list)) => {
            list.iter().filter_map(|g| g.as_str().map(str::to_owned)).take(MAX_TOKEN_GROUPS).collect()
        }
        Some(serde_json::Value::String(one)) => vec![one.clone()],
        _ => Vec::new(),
    }
}

/// The most groups read from one token (Entra ID stops listing at 200 and sends an overage
/// reference instead; app roles — `groups_claim: roles` — do not overflow).
const MAX_TOKEN_GROUPS: usize = 1000;

fn redirect(uri: &str) -> Result<RedirectUrl, SsoError> {
    RedirectUrl::new(uri.to_owned()).map_err(|e| SsoError::Provider(format!("redirect uri `{uri}`: {e}")))
}

/// 256 random bits, base64url (also a valid PKCE verifier: 43 characters).
fn random(hub: &Hub) -> String {
    let mut b = [0u8; 32];
    hub.random.fill(&mut b);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
}

/// An error and its sources, for the log.
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

type Providers = Mutex<HashMap<String, (ProviderMetadataWithLogout, Instant)>>;
static PROVIDERS: LazyLock<Providers> = LazyLock::new(Providers::default);
/// Issuers whose discovery failed, and when: a login page hammered while the provider is down
/// does not turn into a request to it per hit.
static FAILED: LazyLock<Mutex<HashMap<String, Instant>>> = LazyLock::new(Mutex::default);
/// How long a failed discovery is not retried.
const FAILED_TTL: Duration = Duration::from_secs(10);

/// The issuer's discovery document with its keys (and its `end_session_endpoint`, if any),
/// cached for [`PROVIDER_TTL`] (`fresh`: fetch again). The crate refuses a document whose
/// `issuer` is not exactly the configured one.
async fn provider(hub: &Hub, issuer: &str, fresh: bool) -> Result<ProviderMetadataWithLogout, SsoError> {
    if !fresh
        && let Some((m, at)) = PROVIDERS.lock().unwrap_or_else(PoisonError::into_inner).get(issuer)
        && at.elapsed() < PROVIDER_TTL
    {
        return Ok(m.clone());
    }
    if let Some(at) = FAILED.lock().unwrap_or_else(PoisonError::into_inner).get(issuer)
        && at.elapsed() < FAILED_TTL
    {
        return Err(SsoError::Provider("discovery failed moments ago; not retried yet".into()));
    }
    let url = IssuerUrl::new(issuer.to_owned()).map_err(|e| SsoError::Provider(format!("issuer: {e}")))?;
    let metadata = match ProviderMetadataWithLogout::discover_async(url, &Http(hub.outbound.clone())).await {
        Ok(m) => m,
        Err(e) => {
            let mut failed = FAILED.lock().unwrap_or_else(PoisonError::into_inner);
            if failed.len() > 1024 {
                failed.clear();
            }
            failed.insert(issuer.to_owned(), Instant::now());
            return Err(SsoError::Provider(format!("discovery: {}", chain(&e))));
        }
    };
    let mut cache = PROVIDERS.lock().unwrap_or_else(PoisonError::into_inner);
    if cache.len() > 1024 {
        cache.clear();
    }
    cache.insert(issuer.to_owned(), (metadata.clone(), Instant::now()));
    Ok(metadata)
}

/// The crate's HTTP client: [`PushSender::fetch`] (egress guard, no redirects, bounded reads).
struct Http(Option<Arc<dyn PushSender>>);

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct FetchFailed(String);

impl<'c> AsyncHttpClient<'c> for Http {
    type Error = FetchFailed;
    type Future = Pin<Box<dyn Future<Output = Result<HttpResponse, FetchFailed>> + Send + 'c>>;

    fn call(&'c self, request: HttpRequest) -> Self::Future {
        Box::pin(async move {
            let sender = self.0.as_ref().ok_or_else(|| FetchFailed("this process has no outbound HTTP".into()))?;
            let (parts, body) = request.into_parts();
            let headers = parts
                .headers
                .iter()
                .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
                .collect();
            let body = (parts.method == openidconnect::http::Method::POST).then_some(body);
            let reply =
                sender.fetch(&FetchRequest { url: parts.uri.to_string(), headers, body }).await.map_err(FetchFailed)?;
            let mut response = openidconnect::http::Response::builder().status(reply.status);
            if let Some(ct) = reply.content_type {
                response = response.header(openidconnect::http::header::CONTENT_TYPE, ct);
            }
            response.body(reply.body).map_err(|e| FetchFailed(e.to_string()))
        })
    }
}
