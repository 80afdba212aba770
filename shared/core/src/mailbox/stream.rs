//! §8.7.2 the optional stream: the same session-scoped entries as the drain, pushed over one held
//! connection. The HTTP layer frames them as Server-Sent Events; this is the protocol logic.
//!
//! * Opening a stream presents the session (§8.7.1 rules: 404 / 410) and renews its lease — the
//!   connect is client-originated; the open socket afterwards is not (§8.7.2: a zombie socket
//!   must not hold a session online).
//! * Each hold ends at the lesser of `stream_max_hold_seconds` and a nonzero margin before the
//!   lease lapses, so the client's reconnect (its renewal) always lands inside the lease.
//! * A push is provisional: it starts the visibility window (no sibling gets the entry) but does
//!   not stamp `delivered` — only a drain or the ack advances a track.
//! * The credential is judged again at every check, like the session: a key revoked (or past its
//!   rotation overlap) mid-hold ends the stream, so it gets nothing a request with it would not.

use std::time::Duration;

use crate::kernel::auth::Principal;
use crate::mailbox::drain::{Delivery, claim_signed, own_mailbox};
use crate::mailbox::model::Mailbox;
use crate::sessions::model::{EndKind, SessionRecord, SessionState};
use crate::{Hub, HubError};

/// Longest wait between two checks that the stream's session is still live.
const RECHECK: Duration = Duration::from_secs(1);

/// What a held stream does next.
#[derive(Debug)]
pub enum Next {
    /// Entries to push (provisional until acked).
    Entries(Vec<Delivery>),
    /// The hold is over, or the Hub is shutting down: the client reconnects now (its renewal).
    Reconnect,
    /// The session ended or the credential stopped working mid-hold: a reconnect would be
    /// refused with this error, so the client should not try.
    Ended(HubError),
}

/// One held stream.
pub struct Stream {
    hub: Hub,
    mailbox: Mailbox,
    session: SessionRecord,
    /// The credential the stream was opened with.
    credential_id: String,
    until: tokio::time::Instant,
    /// How long this hold lasts, for the client's information.
    pub hold: Duration,
}

/// Open a stream for the caller's own live session (renewing it).
pub async fn open(hub: &Hub, principal: &Principal, session: Option<&str>) -> Result<Stream, HubError> {
    let mailbox = own_mailbox(principal)?;
    let Some(raw) = session else {
        return Err(HubError::validation("query `session` is required: the stream serves one session (§8.7.2)"));
    };
    // Presenting the session renewed it and stamped its `last_seen`: presence reads that
    // (`presence::read`), so no presence write of its own (issue 38).
    let session = crate::sessions::lease::present(hub, principal, raw).await?;
    let hold = hold_for(hub, &session);
    let credential_id = principal.credential_id.clone();
    Ok(Stream { hub: hub.clone(), mailbox, session, credential_id, until: tokio::time::Instant::now() + hold, hold })
}

/// §8.7.2: min(max hold, lease remaining − margin); the margin is a quarter of what remains,
/// capped at 5 s and never under 50 ms.
fn hold_for(hub: &Hub, session: &SessionRecord) -> Duration {
    let remaining = (session.expires_at - hub.clock.now()).to_std().unwrap_or_default();
    let margin = (remaining / 4).clamp(Duration::from_millis(50), Duration::from_secs(5));
    hub.settings.stream_hold().min(remaining.saturating_sub(margin))
}

impl Stream {
    /// Has the session ended (closed, killed, lapsed) or the credential been revoked since the
    /// stream opened? Then the stream stops claiming at once — reads, never a renewal — and
    /// this is the error a reconnect would get (the same mapping as `sessions::present`).
    async fn ended(&self) -> Result<Option<HubError>, HubError> {
        let now = self.hub.clock.now();
        let credential = self.hub.credentials.credential_by_id(&self.credential_id).await?;
        if !credential.is_some_and(|c| c.is_active(now)) {
            return Ok(Some(HubError::Unauthenticated));
        }
        let s = self.hub.sessions.get_session(&self.session.account, &self.session.id).await?;
        Ok(match s.map(|s| s.state(now)) {
            None => Some(HubError::UnknownSession),
            Some(SessionState::Active) => None,
            Some(SessionState::Ended(end)) => {
                Some(HubError::SessionEnded { by_operator: end.kind == EndKind::ClosedByOperator })
            }
        })
    }

    /// The next batch of entries, waiting for one; or how the hold ends.
    pub async fn next(&mut self) -> Result<Next, HubError> {
        let max = self.hub.settings.mailbox.max_batch as usize;
        loop {
            // The bound holds under steady traffic too: the reconnect is the only renewal.
            let left = self.until.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() || self.hub.changes.closing() {
                return Ok(Next::Reconnect);
            }
            if let Some(why) = self.ended().await? {
                return Ok(Next::Ended(why));
            }
            let subscription = self.hub.changes.subscribe_mailbox(&self.mailbox);
            let now = self.hub.clock.now();
            let (entries, next_visible_at) =
                claim_signed(&self.hub, &self.mailbox, Some(&self.session), max, false).await?;
            if !entries.is_empty() {
                return Ok(Next::Entries(entries));
            }
            let until_visible =
                next_visible_at.and_then(|t| (t - now).to_std().ok()).map_or(left, |d| d.max(Duration::from_millis(1)));
            // Re-checked at least every second: a session that ends mid-hold stops the stream soon
            // even when nothing arrives for it.
            subscription.wait(left.min(until_visible).min(RECHECK)).await;
        }
    }
}
