//! The mailbox store port (§8.7 entries, claims and acks; §15 presence).

use crate::kernel::error::StoreError;
use async_trait::async_trait;
use ma2h_protocol::ids::{AccountId, SessionId};
use ma2h_protocol::time::Timestamp;

use crate::mailbox::model::{AckRecord, Audience, Claim, Claimer, Enqueued, Mailbox, MailboxEntry};

/// The §8.7 agent mailbox and §15 presence.
#[async_trait]
pub trait MailboxStore: Send + Sync + 'static {
    /// Append `entry` iff fewer than `depth_cap` live entries (not closed, deadline not passed at
    /// `entry.enqueued_at`) of its audience are in its mailbox — so one audience (say, other
    /// agents' mail) can never crowd out another (the human's directives); otherwise write nothing.
    async fn enqueue(&self, entry: &MailboxEntry, depth_cap: u32) -> Result<Enqueued, StoreError>;

    /// Claim at most `max` live entries of `mailbox` visible at `now` (`visible_at <= now <=
    /// deadline`), oldest `visible_at` first. The claiming write sets `visible_at =
    /// invisible_until`, adds one delivery, sets `claimant` when `by.session` is given and —
    /// only when `by.evidence` (a drain, not a stream push, §8.7.2) — stamps `delivered_at` if
    /// unset, so no two claims return one entry before `invisible_until`, whatever runs
    /// concurrently. Only entries whose audience is one of `audiences` are considered.
    async fn claim(
        &self,
        mailbox: &Mailbox,
        audiences: &[Audience],
        by: &Claimer,
        now: Timestamp,
        invisible_until: Timestamp,
        max: usize,
    ) -> Result<Claim, StoreError>;

    /// Close as acked each of `keys` that is in `mailbox`, live at `ack.acked_at` and already
    /// returned at least once (`deliveries > 0`); returns the entries this call closed, as
    /// written. Every other key — unknown, another mailbox's, never returned, already acked,
    /// expired — is left unchanged and not returned (§8.7: an ack cannot fabricate a receipt nor
    /// reveal another mailbox).
    async fn ack_entries(
        &self,
        mailbox: &Mailbox,
        keys: &[String],
        ack: &AckRecord,
        retain_until: Timestamp,
    ) -> Result<Vec<MailboxEntry>, StoreError>;

    /// §14.2: close as `bounced` at `at` up to `limit` open entries of `mailbox` addressed to
    /// `session` whose deadline had not passed at `at`. Returns them as written; callers repeat
    /// until none is returned.
    async fn bounce_entries(
        &self,
        mailbox: &Mailbox,
        session: &SessionId,
        at: Timestamp,
        retain_until: Timestamp,
        limit: usize,
    ) -> Result<Vec<MailboxEntry>, StoreError>;

    /// One entry of the account by key, open or closed, until it is purged.
    async fn get_entry(&self, account: &AccountId, key: &str) -> Result<Option<MailboxEntry>, StoreError>;

    /// An agent's most recent entries (open or closed), newest first, at most `limit`.
    async fn recent_entries(&self, mailbox: &Mailbox, limit: usize) -> Result<Vec<MailboxEntry>, StoreError>;

    /// Close up to `limit` live entries whose deadline is before `now` (oldest deadline first, from
    /// an index — never a scan), keeping them readable until `retain_until`. The reason is
    /// `Deadline`, except a delivered entry for which
    /// [`MailboxEntry::orphaned_if_unacked_at_deadline`] held at enqueue (a directive or `message`
    /// whose deadline is the inbound retention): drained, never acked, never rescued — `Bounced`
    /// (§14.2). One that reached its own `expires_at` after delivery stays `delivered` (seen but
    /// unanswered). Returns them as written.
    async fn close_due_entries(
        &self,
        now: Timestamp,
        retain_until: Timestamp,
        limit: usize,
    ) -> Result<Vec<MailboxEntry>, StoreError>;

    /// Delete up to `limit` closed entries whose `retain_until` is at or before `now`, from an index.
    async fn purge_entries(&self, now: Timestamp, limit: usize) -> Result<usize, StoreError>;

    /// Record agent activity (§15.1); the stored `last_seen` never moves backwards.
    async fn touch_presence(&self, mailbox: &Mailbox, at: Timestamp) -> Result<(), StoreError>;

    async fn last_seen(&self, mailbox: &Mailbox) -> Result<Option<Timestamp>, StoreError>;
}
