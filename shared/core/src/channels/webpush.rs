//! Web Push as a channel (issue 41): a route target beside Slack, email and webhooks that
//! notifies each recipient operator on every device they subscribed from the inbox — with the
//! same reminders, escalation, ladders and outcome updates as the other channels.
//!
//! - **Keys.** The VAPID key pair (RFC 8292) is derived from the deployment's master key
//!   ([`crate::kernel::secrets::MasterKey::derive`]): one per deployment, the same in every
//!   process, never stored in clear. A subscription is stored sealed ([`crate::channels::devices`]).
//! - **Payload.** JSON, encrypted per RFC 8291 (`aes128gcm`) to the device's keys by
//!   `web-push-native`, and posted through the same sender — and §9.4 egress guard — as every
//!   push. It carries the title, priority, agent and a preview; a sensitive message's never
//!   (only "open it in the inbox"), and never `state` or `client_ref`.
//! - **Answer buttons.** For a confirm ask, or a select ask of at most two options, the payload
//!   holds one single-use token per option ([`crate::channels::answer_token`], bound to the
//!   message, the option, the operator, this device and the message's expiry); the service
//!   worker POSTs it — never a GET, never in a URL.
//! - **Gone devices.** A push service's 404 or 410 removes the device.

use base64::Engine as _;
use ma2h_protocol::envelope::{Envelope, MessageType, Mode, Verb};
use ma2h_protocol::ids::HumanId;
use serde_json::{Value, json};

use crate::channels::answer_token::{self, Purpose};
use crate::channels::devices::{Device, MAX_DEVICES, Subscription, seal_context};
use crate::channels::outbox::{Step, StepKind};
use crate::channels::sender::{Failure, Notifier};
use crate::kernel::auth::Principal;
use crate::kernel::credentials::PrincipalId;
use crate::messages::records::MessageRecord;
use crate::push::queue::{PushOutcome, PushRequest};
use crate::{Hub, HubError};

use web_push_native::jwt_simple::algorithms::{ECDSAP256PublicKeyLike as _, ES256KeyPair};

/// The most a payload's plaintext may be (4,096 bytes a push, less the record's overhead).
const MAX_PAYLOAD: usize = 3_000;
/// Notifications show at most two action buttons on most platforms.
const MAX_BUTTONS: usize = 2;
/// How long a push service keeps a notification for an offline device.
const TTL_SECONDS: u64 = 24 * 3600;

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn unb64(s: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(s.trim_end_matches('=')).ok()
}

/// The deployment's VAPID key pair.
fn vapid(hub: &Hub) -> ES256KeyPair {
    // a derived scalar is out of range with probability ~2^-128: take the next derivation then
    (0u32..)
        .find_map(|i| ES256KeyPair::from_bytes(&hub.master_key.derive(&format!("webpush-vapid/{i}"))).ok())
        .expect("some derived scalar is a valid P-256 key")
}

/// The VAPID public key the browser subscribes with (`applicationServerKey`, base64url of the
/// uncompressed point).
pub fn public_key(hub: &Hub) -> String {
    b64(&vapid(hub).public_key().public_key().to_bytes_uncompressed())
}

fn operator(principal: &Principal) -> Result<&HumanId, HubError> {
    match &principal.id {
        PrincipalId::Operator(h) => Ok(h),
        PrincipalId::Agent(_) => Err(HubError::NotAuthorized("only an operator subscribes a device".into())),
    }
}

/// Subscribe a device of the calling operator: `subscription` is the browser's
/// `PushSubscription.toJSON()` (`{endpoint, keys: {p256dh, auth}}`).
pub async fn subscribe(
    hub: &Hub,
    principal: &Principal,
    subscription: &Value,
    label: &str,
) -> Result<Device, HubError> {
    let human = operator(principal)?;
    let endpoint = subscription["endpoint"].as_str().unwrap_or_default().trim();
    let url = url::Url::parse(endpoint).map_err(|_| HubError::validation("`endpoint`: a URL"))?;
    let dev = hub.settings.mode == crate::kernel::settings::Mode::Dev;
    if url.scheme() != "https" && !(dev && url.scheme() == "http") {
        return Err(HubError::validation("`endpoint`: an https URL of a push service"));
    }
    if endpoint.len() > 2048 {
        return Err(HubError::validation("`endpoint`: at most 2048 characters"));
    }
    let key = subscription["keys"]["p256dh"].as_str().unwrap_or_default();
    let auth = subscription["keys"]["auth"].as_str().unwrap_or_default();
    let key_ok = unb64(key).is_some_and(|k| web_push_native::p256::PublicKey::from_sec1_bytes(&k).is_ok());
    if !key_ok || unb64(auth).is_none_or(|a| a.len() != 16) {
        return Err(HubError::validation("`keys`: the browser's p256dh key and 16-byte auth secret (base64url)"));
    }
    let existing = hub.credentials.devices_of(&principal.account, human).await?;
    let sub = Subscription { endpoint: endpoint.to_owned(), p256dh: key.to_owned(), auth: auth.to_owned() };
    let sealed_of = |d: &Device| open(hub, d).is_some_and(|s| s.endpoint == sub.endpoint);
    // the same browser subscribing again replaces its device (keeping its id)
    let id = match existing.iter().find(|d| sealed_of(d)) {
        Some(d) => d.id.clone(),
        None if existing.len() >= MAX_DEVICES => {
            return Err(HubError::validation(format!("at most {MAX_DEVICES} devices per operator: remove one first")));
        }
        None => {
            let mut raw = [0u8; 10];
            hub.random.fill(&mut raw);
            format!("dev_{}", hex::encode(raw))
        }
    };
    let label: String = label.trim().chars().filter(|c| !c.is_control()).take(80).collect();
    let plain = serde_json::to_vec(&sub).map_err(|e| HubError::Internal(e.to_string()))?;
    let device = Device {
        account: principal.account.clone(),
        human: human.clone(),
        label: if label.is_empty() { "a browser".into() } else { label },
        created_at: hub.clock.now(),
        push_host: url.host_str().unwrap_or_default().to_owned(),
        sealed: b64(&hub.master_key.seal(hub.random.as_ref(), &seal_context(&principal.account, &id), &plain)),
        id,
    };
    hub.credentials.put_device(&device).await?;
    tracing::info!(account = %device.account, human = %human, device = %device.id, push_host = %device.push_host, "device subscribed");
    Ok(device)
}

/// The calling operator's devices.
pub async fn mine(hub: &Hub, principal: &Principal) -> Result<Vec<Device>, HubError> {
    Ok(hub.credentials.devices_of(&principal.account, operator(principal)?).await?)
}

/// Remove one of the calling operator's devices (its notifications' buttons stop at once).
pub async fn remove(hub: &Hub, principal: &Principal, id: &str) -> Result<(), HubError> {
    let human = operator(principal)?;
    if hub.credentials.delete_device(&principal.account, human, id).await? {
        tracing::info!(account = %principal.account, human = %human, device = %id, "device removed");
        Ok(())
    } else {
        Err(HubError::NotFound)
    }
}

fn open(hub: &Hub, device: &Device) -> Option<Subscription> {
    let sealed = unb64(&device.sealed)?;
    serde_json::from_slice(&hub.master_key.open(&seal_context(&device.account, &device.id), &sealed).ok()?).ok()
}

/// What a notification says (the plaintext JSON the service worker reads).
pub fn payload(
    hub: &Hub,
    record: &MessageRecord,
    envelope: &Envelope,
    kind: StepKind,
    human: &str,
    device: &str,
) -> Value {
    let sensitive = crate::channels::audience::is_sensitive(envelope);
    let lead = match kind {
        StepKind::Reminder => "Reminder: ",
        StepKind::Escalated => "Escalated: ",
        StepKind::Ladder => "On call: ",
        _ => "",
    };
    let mut out = json!({
        "v": 1,
        "id": record.id.as_str(),
        "tag": record.id.as_str(),
        "kind": kind.as_str(),
        "url": hub.review_url(&record.id),
        "priority": record.priority.as_str(),
    });
    if kind == StepKind::Outcome {
        let response = record.response.as_ref().and_then(|r| r.get("response"));
        let actor = response.and_then(|r| r.get("actor")).and_then(Value::as_str).unwrap_or("the Hub");
        out["title"] = json!(clip(&format!("{} — {}", record.title, record.status.as_str()), 120));
        out["body"] = json!(format!("{} by {actor}", record.status.as_str()));
        return out;
    }
    out["title"] = json!(clip(&format!("{lead}{}", record.title), 120));
    let body = if sensitive {
        "Sensitive: open it in the inbox.".to_owned()
    } else {
        let text =
            envelope.raw.get("body").and_then(Value::as_str).map(str::to_owned).or_else(|| match &envelope.verb {
                Verb::Task(a) => Some(a.instructions.clone()),
                _ => None,
            });
        let plain = text.map(|t| ma2h_render::plain_text(&t)).unwrap_or_default();
        format!("{} from {} · {}", record.kind.as_str(), record.agent_id, clip(&plain, 400))
    };
    out["body"] = json!(body);
    out["urgent"] = json!(matches!(record.priority, ma2h_protocol::envelope::Priority::Urgent));
    // answer buttons: a confirm, or a select of at most two options, that takes an inline answer
    let small = envelope.request().is_some_and(|r| match r.mode {
        Mode::Confirm => true,
        Mode::Select => r.options.len() <= MAX_BUTTONS,
        _ => false,
    });
    if small && record.kind == MessageType::Ask {
        let buttons: Vec<Value> = answer_token::mint_for(hub, Purpose::Push, record, envelope, human, Some(device))
            .into_iter()
            .take(MAX_BUTTONS)
            .enumerate()
            .map(|(i, m)| json!({"action": format!("answer-{i}"), "title": clip(&m.label, 40), "token": m.token}))
            .collect();
        if !buttons.is_empty() {
            out["actions"] = json!(buttons);
        }
    }
    out
}

fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut s: String = text.chars().take(max.saturating_sub(1)).collect();
    s.push('…');
    s
}

/// Send one step to every device of its recipient. Sent when at least one push service took it;
/// a device the push service reports gone (404/410) is removed.
pub(crate) async fn send(
    notifier: &Notifier,
    hub: &Hub,
    step: &Step,
    record: &MessageRecord,
    envelope: &Envelope,
) -> Result<(), Failure> {
    let human = step.recipient.as_deref().ok_or_else(|| Failure::Permanent("no recipient".into()))?;
    let human = HumanId::parse(human).ok_or_else(|| Failure::Permanent("not an operator id".into()))?;
    // a revoked operator's devices get nothing more
    match crate::channels::audience::operator_active(hub, &record.account, &human).await {
        Ok(true) => {}
        Ok(false) => return Err(Failure::Permanent(format!("human:{human} holds no active credential"))),
        Err(e) => return Err(Failure::Retry(format!("the operator could not be checked: {e}"))),
    }
    let devices = hub
        .credentials
        .devices_of(&record.account, &human)
        .await
        .map_err(|e| Failure::Retry(format!("devices unreadable: {e}")))?;
    if devices.is_empty() {
        return Err(Failure::Permanent(format!("human:{human} has no device subscribed")));
    }
    let keys = vapid(hub);
    let (mut sent, mut retry) = (0, None);
    for device in &devices {
        let Some(sub) = open(hub, device) else {
            tracing::warn!(device = %device.id, "a device's subscription does not open; skipped");
            continue;
        };
        let body = payload(hub, record, envelope, step.kind, human.as_str(), &device.id);
        let Some(request) = encrypt(hub, &keys, &sub, &body, record) else {
            tracing::warn!(device = %device.id, "a device's keys do not take a payload; skipped");
            continue;
        };
        match notifier.sender.send(&request).await {
            PushOutcome::Delivered { .. } => sent += 1,
            PushOutcome::Rejected { status: 404 | 410 } => {
                tracing::info!(device = %device.id, push_host = %device.push_host, "the push service says the device is gone; removed");
                if let Err(e) = hub.credentials.delete_device(&record.account, &human, &device.id).await {
                    tracing::warn!(device = %device.id, error = %e, "a gone device could not be removed");
                }
            }
            outcome => {
                if let Err(f) = Failure::from_outcome(outcome) {
                    retry = Some(f);
                }
            }
        }
    }
    match (sent, retry) {
        (0, Some(f)) => Err(f),
        (0, None) => Err(Failure::Permanent(format!("no device of human:{human} took the notification"))),
        _ => Ok(()),
    }
}

/// The encrypted, VAPID-signed push request for one device; `None` when its keys are unusable.
fn encrypt(
    hub: &Hub,
    keys: &ES256KeyPair,
    sub: &Subscription,
    body: &Value,
    record: &MessageRecord,
) -> Option<PushRequest> {
    // agent-written text may carry bidi controls that reorder what a lock screen shows: made
    // visible over the whole payload (the markers are plain text, the JSON stays valid)
    let visible = |v: &Value| crate::kernel::display::visible_bidi(&v.to_string()).into_owned();
    let mut plain = visible(body);
    if plain.len() > MAX_PAYLOAD {
        // never cut JSON: drop the preview first
        let mut smaller = body.clone();
        smaller["body"] = json!("Open it in the inbox.");
        plain = visible(&smaller);
    }
    let key = web_push_native::p256::PublicKey::from_sec1_bytes(&unb64(&sub.p256dh)?).ok()?;
    let auth = unb64(&sub.auth)?;
    if auth.len() != 16 {
        return None;
    }
    let contact = if hub.settings.public_url.starts_with("https://") {
        hub.settings.public_url.clone()
    } else {
        "mailto:ma2h-hub@localhost".to_owned()
    };
    let builder = web_push_native::WebPushBuilder::new(
        sub.endpoint.parse().ok()?,
        key,
        web_push_native::Auth::clone_from_slice(&auth),
    )
    .with_valid_duration(std::time::Duration::from_secs(12 * 3600))
    .with_vapid(keys, &contact);
    let built = builder.build(plain.into_bytes()).ok()?;
    let mut headers: Vec<(String, String)> = built
        .headers()
        .iter()
        .filter_map(|(n, v)| Some((n.as_str().to_owned(), v.to_str().ok()?.to_owned())))
        .filter(|(n, _)| !n.eq_ignore_ascii_case("content-type") && !n.eq_ignore_ascii_case("content-length"))
        .collect();
    let urgency = match record.priority {
        ma2h_protocol::envelope::Priority::Urgent | ma2h_protocol::envelope::Priority::High => "high",
        ma2h_protocol::envelope::Priority::Normal => "normal",
        ma2h_protocol::envelope::Priority::Low => "low",
    };
    headers.retain(|(n, _)| !n.eq_ignore_ascii_case("ttl") && !n.eq_ignore_ascii_case("urgency"));
    headers.push(("TTL".into(), TTL_SECONDS.to_string()));
    headers.push(("Urgency".into(), urgency.into()));
    Some(PushRequest { url: sub.endpoint.clone(), headers, body: built.into_body() })
}
