//! Push delivery (§8.3) of signed Responses (§9.2), drained from the outbox that the terminal
//! transition wrote atomically (§3.1). Retries 5xx / network errors / timeouts with exponential
//! backoff and jitter, capped in attempts and total duration; stops at once on a 4xx or an egress
//! refusal. After exhaustion the Response stays pullable (§8.2).

use ma2h_protocol::envelope::{Callback, CallbackMode, CallbackScheme, Envelope};
use ma2h_protocol::ids::{AccountId, AgentId, MessageId, ResolutionId};
use ma2h_protocol::signature::{self, SignedContext, SigningKey};
use ma2h_protocol::standard_webhooks::WebhookSecret;
use ma2h_protocol::time::Timestamp;
use ma2h_protocol::verbatim;

use crate::kernel::credentials::AgentMaterial;
use crate::messages::records::{Lookup, MessageRecord, PushStatus, PushTrack};
use crate::push::queue::{PushOutcome, PushRequest};
use crate::{Hub, HubError};

pub use crate::push::worker::{Deliverer, DeliverySlots, Slot, run_worker};

/// Secret names under `hub:` are the Hub's own (the agent's signing secret and settings); a
/// `secret_ref`/`token_ref` may not name them.
pub const RESERVED_PREFIX: &str = "hub:";
/// The per-agent setting choosing how bearer/apikey pushes are signed (`hmac-sha256` default,
/// or `ed25519` with the Hub's published key).
pub const SIGNING_ALG_NAME: &str = "hub:signing-alg";
/// The per-agent Standard Webhooks secret (`whsec_…`, issue 43): when set, every push also
/// carries `webhook-id` (the resolution id), `webhook-timestamp` and `webhook-signature`.
pub const STANDARD_WEBHOOKS_NAME: &str = "hub:standard-webhooks";
/// How long a push waits before its next turn when its callback host already has its share of
/// attempts in flight (not counted as an attempt).
const HOST_BUSY_DELAY: chrono::Duration = chrono::Duration::seconds(1);

/// How long an announced job waits for its terminal to commit before it is dropped (a terminal
/// write takes milliseconds; a function that stopped before committing never will).
pub const UNCOMMITTED_GRACE: chrono::Duration = chrono::Duration::minutes(2);

/// What became of an announced job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Announced {
    /// Its terminal has not committed (yet): try again in a moment.
    NotYetCommitted,
    /// As [`Deliverer::attempt`].
    Tried(Option<PushTrack>),
}

/// Claim up to `limit` due pushes, leased for long enough that an attempt in flight is never
/// claimed twice.
pub async fn claim_due(hub: &Hub, limit: usize) -> Result<Vec<(AccountId, MessageId)>, HubError> {
    let now = hub.clock.now();
    let lease = chrono::Duration::from_std(hub.settings.push.total_timeout * 2 + std::time::Duration::from_secs(5))
        .unwrap_or(chrono::Duration::seconds(30));
    Ok(hub.messages.claim_due_pushes(now, now + lease, limit).await?)
}

impl Deliverer {
    /// One attempt for one message: the push track as recorded after it (a `Pending` one carries
    /// the backoff's `next_attempt_at`). `None` if there was nothing (left) to deliver.
    pub async fn attempt(&self, hub: &Hub, account: &AccountId, id: &MessageId) -> Result<Option<PushTrack>, HubError> {
        Ok(self.attempt_or_defer(hub, account, id).await?.0)
    }

    /// [`Self::attempt`], also saying whether the push was put back because a delivery cap was
    /// full (the local worker then claims less, see [`crate::push::worker::run_worker`]).
    pub(super) async fn attempt_or_defer(
        &self,
        hub: &Hub,
        account: &AccountId,
        id: &MessageId,
    ) -> Result<(Option<PushTrack>, bool), HubError> {
        let Lookup::Found(record) = hub.messages.get_message(account, id).await? else { return Ok((None, false)) };
        self.attempt_record(hub, record).await
    }

    /// One attempt for a job announced before its terminal committed
    /// ([`crate::push::queue::PushQueue::announce`]): only if `resolution` is the terminal that did.
    pub async fn attempt_announced(
        &self,
        hub: &Hub,
        account: &AccountId,
        id: &MessageId,
        resolution: &ResolutionId,
        announced_at: Timestamp,
    ) -> Result<Announced, HubError> {
        let Lookup::Found(record) = hub.messages.get_message(account, id).await? else {
            return Ok(Announced::Tried(None));
        };
        if record.status.is_open() {
            // Not committed yet — or never will be (its writer stopped): wait a little, then drop.
            let young = hub.clock.now() - announced_at < UNCOMMITTED_GRACE;
            return Ok(if young { Announced::NotYetCommitted } else { Announced::Tried(None) });
        }
        if record.resolution_id.as_ref() != Some(resolution) {
            // Another terminal won the CAS; its own job (or the sweeper) carries its push.
            return Ok(Announced::Tried(None));
        }
        Ok(Announced::Tried(self.attempt_record(hub, record).await?.0))
    }

    /// The attempt, and whether it was deferred for a full delivery cap.
    async fn attempt_record(&self, hub: &Hub, record: MessageRecord) -> Result<(Option<PushTrack>, bool), HubError> {
        // issue 43: one `push.attempt` span per attempt (built only when traces are exported)
        let span = tracing::debug_span!("push.attempt", message_id = %record.id, attempt = tracing::field::Empty);
        tracing::Instrument::instrument(self.attempt_record_inner(hub, record), span).await
    }

    async fn attempt_record_inner(
        &self,
        hub: &Hub,
        record: MessageRecord,
    ) -> Result<(Option<PushTrack>, bool), HubError> {
        let (account, id) = (&record.account, &record.id);
        let Some(mut track) = record.push.clone().filter(|t| t.status == PushStatus::Pending) else {
            return Ok((None, false));
        };
        tracing::Span::current().record("attempt", track.attempts + 1);
        let now = hub.clock.now();
        let outcome = match build_request(hub, &record, now).await {
            Ok(request) => {
                let host = callback_host(&request.url).unwrap_or_default();
                // One slow receiver must not hold every delivery slot, nor another account's
                // slots on the same host (issue 13 item 6, issue 36).
                let Some(_slot) = self.slots.claim(account.as_str(), &host) else {
                    track.next_attempt_at = Some(now + HOST_BUSY_DELAY);
                    hub.messages.record_push(account, id, &track).await?;
                    return Ok((Some(track), true));
                };
                self.sender.send(&request).await
            }
            Err(refusal) => PushOutcome::Refused { reason: refusal.to_string() },
        };
        record_outcome(hub, &record, track, outcome, now).await.map(|t| (Some(t), false))
    }
}

/// Count the attempt, decide delivered / retry (with backoff) / failed, and record the track.
async fn record_outcome(
    hub: &Hub,
    record: &MessageRecord,
    mut track: PushTrack,
    outcome: PushOutcome,
    now: Timestamp,
) -> Result<PushTrack, HubError> {
    let (account, id) = (&record.account, &record.id);
    track.attempts += 1;
    let resolved_at = record.updated_at;
    match &outcome {
        PushOutcome::Delivered { .. } => {
            track.status = PushStatus::Delivered;
            track.delivered_at = Some(now);
            track.next_attempt_at = None;
            track.last_error = None;
        }
        PushOutcome::Rejected { status } => fail(&mut track, format!("receiver answered {status}")),
        PushOutcome::Refused { reason } => fail(&mut track, format!("refused: {reason}")),
        PushOutcome::Retry { reason } => {
            let budget = chrono::Duration::from_std(hub.settings.push.max_duration).unwrap_or(chrono::Duration::MAX);
            let next = now + backoff(hub, track.attempts);
            if track.attempts >= hub.settings.push.max_attempts || next - resolved_at > budget {
                let n = track.attempts;
                fail(&mut track, format!("retries exhausted after {n} attempts: {reason}"));
            } else {
                track.next_attempt_at = Some(next);
                track.last_error = Some(reason.clone());
            }
        }
    }
    // Issue 42: the push outcome (delivered, or given up) is recorded in the track's own write.
    let events = match track.status {
        PushStatus::Delivered | PushStatus::Failed => {
            let kind = if track.status == PushStatus::Delivered { "push.delivered" } else { "push.failed" };
            let mut event = crate::audit::Event::new(kind, "system:push").target(id).detail("attempts", track.attempts);
            if let Some(error) = &track.last_error {
                event = event.detail("error", error.as_str());
            }
            vec![event]
        }
        _ => Vec::new(),
    };
    crate::audit::within(hub, account, events, hub.messages.record_push(account, id, &track)).await?;
    hub.changes.publish(id);
    hub.changes.publish_account(account);
    let outcome_label = match track.status {
        PushStatus::Delivered => "delivered",
        PushStatus::Failed => "failed",
        _ => "retry",
    };
    crate::kernel::metrics::push_attempt(outcome_label, track.status == PushStatus::Failed);
    tracing::info!(
        message_id = %id,
        attempt = track.attempts,
        outcome = match &outcome {
            PushOutcome::Delivered { .. } => "delivered",
            PushOutcome::Rejected { .. } => "rejected",
            PushOutcome::Retry { .. } => "retry",
            PushOutcome::Refused { .. } => "refused",
        },
        status = track.status.as_str(),
        "push attempt"
    );
    Ok(track)
}

fn fail(track: &mut PushTrack, reason: String) {
    track.status = PushStatus::Failed;
    track.next_attempt_at = None;
    track.last_error = Some(reason);
}

/// `base · 2^(n-1)`, capped, times a jitter factor in [0.8, 1.2] — so gaps still grow.
fn backoff(hub: &Hub, attempts: u32) -> chrono::Duration {
    let p = &hub.settings.push;
    let exp = p.backoff_base.saturating_mul(1u32 << attempts.saturating_sub(1).min(20)).min(p.backoff_max);
    let mut r = [0u8; 2];
    hub.random.fill(&mut r);
    let jitter = 0.8 + 0.4 * f64::from(u16::from_le_bytes(r)) / f64::from(u16::MAX);
    chrono::Duration::from_std(exp.mul_f64(jitter)).unwrap_or(chrono::Duration::seconds(1))
}

/// Why a push cannot be built: permanent, so the obligation ends `failed` with this reason as its
/// `last_error` (the Response stays pullable, §8.2).
#[derive(Debug, thiserror::Error)]
pub enum PushRefusal {
    #[error("the message has no push callback")]
    NoCallback,
    #[error("push callback without url")]
    NoUrl,
    #[error("no Response to deliver")]
    NoResponse,
    #[error("callback url has no host")]
    NoHost,
    #[error("callback host {host} is not bound to agent {agent}")]
    NotBound { host: String, agent: AgentId },
    #[error("secret `{0}` is gone")]
    SecretGone(String),
    #[error("the agent has no signing secret")]
    NoSigningSecret,
    #[error("this process holds no Hub signing key")]
    NoHubKey,
    #[error("secret `{0}` does not open or is not UTF-8")]
    BadSecret(String),
    #[error("stored record unusable: {0}")]
    BadRecord(String),
    #[error(transparent)]
    Store(#[from] crate::kernel::error::StoreError),
}

/// The signed POST for a resolved message: the §6 Response as the body, `MA2H-Signature` over
/// the §9.2 context, and the bearer/apikey token when the scheme asks for one. An `Err` is a
/// permanent refusal (the binding or a referenced secret is gone).
async fn build_request(hub: &Hub, record: &MessageRecord, now: Timestamp) -> Result<PushRequest, PushRefusal> {
    let envelope = record.envelope().map_err(|e| PushRefusal::BadRecord(e.to_string()))?;
    let callback = envelope.callback().filter(|c| c.mode == CallbackMode::Push).ok_or(PushRefusal::NoCallback)?;
    let url = callback.url.clone().ok_or(PushRefusal::NoUrl)?;
    let response = record.response.as_ref().ok_or(PushRefusal::NoResponse)?;
    // §9.4: credentials only to a host still bound to this agent.
    let host = callback_host(&url).ok_or(PushRefusal::NoHost)?;
    let material = hub.credentials.agent_material(&record.account, &record.agent_id).await?;
    if !material.bindings.contains(&host) {
        return Err(PushRefusal::NotBound { host, agent: record.agent_id.clone() });
    }

    let jti = hub.new_jti();
    let ctx = SignedContext::for_response(response, &url, &jti, &now.timestamp().to_string())
        .map_err(|field| PushRefusal::BadRecord(format!("stored Response lacks `{field}`")))?;
    let (key, token) = keys_for(hub, &record.account, &record.agent_id, callback, &material)?;
    let v1 = signature::sign(&ctx, &key);
    let mut headers = vec![(signature::SIGNATURE_HEADER.to_owned(), signature::header_value(&ctx.t, &ctx.jti, &v1))];
    match (callback.auth.as_ref().map(|a| &a.scheme), token) {
        (Some(CallbackScheme::Bearer), Some(t)) => headers.push(("Authorization".into(), format!("Bearer {t}"))),
        (Some(CallbackScheme::Apikey), Some(t)) => headers.push(("X-API-Key".into(), t)),
        _ => {}
    }
    let body = verbatim::to_vec_with_state(response, record.state_text.as_deref(), verbatim::RESPONSE_STATE);
    // Issue 43: the opt-in Standard Webhooks headers, beside the §9.2 signature (extra headers
    // a receiver that does not know them ignores).
    let standard = STANDARD_WEBHOOKS_NAME;
    if let Some(secret) = open_sealed(hub, &record.account, &record.agent_id, standard, material.secrets.get(standard))?
    {
        let secret = WebhookSecret::parse(&secret).map_err(|_| PushRefusal::BadSecret(standard.to_owned()))?;
        let id = record.resolution_id.as_ref().map_or_else(|| record.id.to_string(), ToString::to_string);
        headers.extend(secret.headers(&id, now.timestamp(), &body));
    }
    Ok(PushRequest { url, headers, body })
}

/// The signing key, and the token to attach (bearer/apikey), for this callback.
fn keys_for(
    hub: &Hub,
    account: &AccountId,
    agent: &AgentId,
    callback: &Callback,
    material: &AgentMaterial,
) -> Result<(SigningKey, Option<String>), PushRefusal> {
    let open = |name: &str| open_sealed(hub, account, agent, name, material.secrets.get(name));
    let auth = callback.auth.as_ref();
    if let Some(name) = auth.filter(|a| a.scheme == CallbackScheme::Hmac).and_then(|a| a.secret_ref.as_deref()) {
        let secret = open(name)?.ok_or_else(|| PushRefusal::SecretGone(name.into()))?;
        return Ok((SigningKey::Hmac(secret.into_bytes()), None));
    }
    let token = match auth.and_then(|a| a.token_ref.as_deref()) {
        Some(name) => Some(open(name)?.ok_or_else(|| PushRefusal::SecretGone(name.into()))?),
        None => None,
    };
    Ok((signing_key_from(hub, open(SIGNING_ALG_NAME)?, open(crate::kernel::secrets::SIGNING_SECRET_NAME)?)?, token))
}

/// The key the Hub signs for this agent with — pushes without an `hmac` secret_ref (§9.2) and
/// every mailbox delivery (§9.7): the Hub's Ed25519 key if the agent chose `ed25519`, else HMAC
/// with the agent's signing secret.
pub async fn agent_signing_key(hub: &Hub, account: &AccountId, agent: &AgentId) -> Result<SigningKey, PushRefusal> {
    let alg = open_secret(hub, account, agent, SIGNING_ALG_NAME).await?;
    if alg.as_deref() == Some(signature::ALG_ED25519) {
        return hub_signer(hub);
    }
    signing_key_from(hub, alg, open_secret(hub, account, agent, crate::kernel::secrets::SIGNING_SECRET_NAME).await?)
}

/// The Hub's own Ed25519 key, which a publish-only process (AWS discovery) does not hold.
fn hub_signer(hub: &Hub) -> Result<SigningKey, PushRefusal> {
    hub.keys.signer().cloned().ok_or(PushRefusal::NoHubKey)
}

fn signing_key_from(hub: &Hub, alg: Option<String>, secret: Option<String>) -> Result<SigningKey, PushRefusal> {
    if alg.as_deref() == Some(signature::ALG_ED25519) {
        return hub_signer(hub);
    }
    Ok(SigningKey::Hmac(secret.ok_or(PushRefusal::NoSigningSecret)?.into_bytes()))
}

/// An agent's stored secret, opened with the master key.
pub(crate) async fn open_secret(
    hub: &Hub,
    account: &AccountId,
    agent: &AgentId,
    name: &str,
) -> Result<Option<String>, PushRefusal> {
    let sealed = hub.credentials.get_secret(account, agent, name).await?;
    open_sealed(hub, account, agent, name, sealed.as_ref())
}

fn open_sealed(
    hub: &Hub,
    account: &AccountId,
    agent: &AgentId,
    name: &str,
    sealed: Option<&Vec<u8>>,
) -> Result<Option<String>, PushRefusal> {
    let Some(sealed) = sealed else { return Ok(None) };
    let bad = || PushRefusal::BadSecret(name.to_owned());
    let plain = hub.master_key.open(&format!("{account}/{agent}/{name}"), sealed).map_err(|_| bad())?;
    String::from_utf8(plain).map(Some).map_err(|_| bad())
}

/// The lowercase host of a URL (no port), as bindings store it.
pub fn callback_host(url: &str) -> Option<String> {
    url::Url::parse(url).ok()?.host_str().map(|h| h.trim_matches(['[', ']']).to_ascii_lowercase())
}

/// Submit-time checks for a push callback (§8.3, §9.4): an https URL (http only in dev mode)
/// without credentials, on a host bound to this agent, and `secret_ref`/`token_ref` naming
/// secrets registered for this agent — never the Hub's environment or another agent's.
pub async fn validate_callback(hub: &Hub, account: &AccountId, envelope: &Envelope) -> Result<(), HubError> {
    let Some(callback) = envelope.callback().filter(|c| c.mode == CallbackMode::Push) else { return Ok(()) };
    let field = if envelope.request().is_some() { "/request/callback" } else { "/action/callback" };
    let bad = |m: String| Err(HubError::invalid_field(format!("`{field}{m}")));
    let raw = callback.url.as_deref().unwrap_or_default();
    let Ok(url) = url::Url::parse(raw) else { return bad("/url`: not a valid URL".into()) };
    let dev = hub.settings.mode == crate::kernel::settings::Mode::Dev;
    if !(url.scheme() == "https" || (dev && url.scheme() == "http")) {
        return bad("/url`: must be https".into());
    }
    if !url.username().is_empty() || url.password().is_some() {
        return bad("/url`: must not carry credentials".into());
    }
    let Some(host) = callback_host(raw) else { return bad("/url`: has no host".into()) };
    let agent = &envelope.agent.id;
    let material = hub.credentials.agent_material(account, agent).await?;
    if !material.bindings.contains(&host) {
        return bad(format!(
            "/url`: host {host} is not a registered callback binding for agent {agent} (§9.4); an operator binds it \
             with the admin command `bind-callback --account {account} --agent {agent} --host {host}` \
             (`ma2h-hub admin …` locally, `ma2h-admin-aws …` on AWS)"
        ));
    }
    if let Some(auth) = &callback.auth {
        for (name, what) in [(&auth.secret_ref, "secret_ref"), (&auth.token_ref, "token_ref")] {
            let Some(name) = name else { continue };
            let known = !name.starts_with(RESERVED_PREFIX) && material.secrets.contains_key(name.as_str());
            if !known {
                return bad(format!(
                    "/auth/{what}`: no secret named `{name}` is registered for agent {agent}; an operator registers \
                     it with the admin command `put-secret --account {account} --agent {agent} --name {name} \
                     --value-stdin` (`ma2h-hub admin …` locally, `ma2h-admin-aws …` on AWS)"
                ));
            }
        }
    }
    Ok(())
}
