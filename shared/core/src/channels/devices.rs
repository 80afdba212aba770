//! An operator's devices (issue 41): the browsers and installed apps that receive Web Push
//! notifications. An operator subscribes a device from the inbox (several each); the
//! subscription — the push service's endpoint and the browser's keys — is stored sealed under
//! the master key, bound to its slot, and only the push service's host is ever shown. A device is
//! dropped when its operator removes it or when the push service says it is gone (404/410).

use ma2h_protocol::ids::{AccountId, HumanId};
use ma2h_protocol::time::Timestamp;
use serde::{Deserialize, Serialize};

/// Most devices per operator.
pub const MAX_DEVICES: usize = 10;

/// One subscribed device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    pub account: AccountId,
    pub human: HumanId,
    /// `dev_…`, chosen by the Hub.
    pub id: String,
    /// What the operator called it (or the browser's own description).
    pub label: String,
    pub created_at: Timestamp,
    /// The push service's host (`fcm.googleapis.com`, `web.push.apple.com`): all that is shown.
    pub push_host: String,
    /// The [`Subscription`] as JSON, sealed under the master key for [`seal_context`].
    pub sealed: String,
}

/// What the browser's `PushSubscription` gave: where to post, and the keys to encrypt to.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subscription {
    pub endpoint: String,
    /// The browser's P-256 public key (uncompressed point, base64url).
    pub p256dh: String,
    /// The 16-byte authentication secret (base64url).
    pub auth: String,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Subscription(…)") // the endpoint is a capability URL; the keys are secrets
    }
}

/// The slot a device's subscription is sealed for: moved to another account or device, it does
/// not open.
pub fn seal_context(account: &AccountId, id: &str) -> String {
    format!("device/{account}/{id}")
}
