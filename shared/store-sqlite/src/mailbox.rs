//! [`MailboxStore`] over SQLite.
//!
//! * `enqueue` — one writer job: count the mailbox's live entries (`mailbox_ready`), insert if
//!   under the cap. `seq` (`AUTOINCREMENT`) is the first-enqueue order.
//! * `claim` — a reader first checks for a claimable entry (an empty drain or long-poll costs no
//!   fsync); only then one writer job claims with `UPDATE … WHERE seq IN (… LIMIT) RETURNING`.
//!   The writer runs jobs one at a time, so each claim sees the previous one's `visible_at`: two
//!   claims never return one entry inside a visibility window.
//! * `ack_entries` — one writer job; per key a guarded `UPDATE` (own mailbox, live, returned once).
//! * `close_due_entries` / `purge_entries` — from the `mailbox_due` / `mailbox_retain` indexes.
//! * presence — an upsert keeping the larger `last_seen`.

use async_trait::async_trait;
use ma2h_core::mailbox::model::{
    AckRecord, Audience, Claim, Claimer, CloseReason, Closed, Enqueued, EntryKind, Mailbox, MailboxEntry,
};
use ma2h_core::ports::{MailboxStore, StoreError};
use ma2h_protocol::ids::{AccountId, AgentId, SessionId};
use ma2h_protocol::time::Timestamp;
use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::SqliteStore;
use crate::codec::{DbError, json_text, json_value, limit, ms, opt_ts, parsed, ts};

const COLUMNS: &str = "account, entry_key, agent_id, kind, audience, payload, author, enqueued_at, visible_at, \
     deadline, deliveries, delivered_at, closed_at, closed_reason, ack_by, ack_note, retain_until, claimant";

const COUNT_LIVE: &str = "SELECT COUNT(*) FROM mailbox WHERE account = ?1 AND agent_id = ?2 AND audience = ?4 \
     AND closed_at IS NULL AND deadline >= ?3";
const INSERT: &str = "INSERT INTO mailbox (account, entry_key, agent_id, kind, audience, payload, author, \
     enqueued_at, visible_at, deadline, orphanable) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";
// `?4`..`?6` are the audiences the drain may see (repeated to fill three for a session-less drain).
const CLAIMABLE: &str = "SELECT EXISTS (SELECT 1 FROM mailbox WHERE account = ?1 AND agent_id = ?2 \
     AND closed_at IS NULL AND visible_at <= ?3 AND deadline >= ?3 AND audience IN (?4, ?5, ?6))";
const NEXT_VISIBLE: &str = "SELECT MIN(visible_at) FROM mailbox WHERE account = ?1 AND agent_id = ?2 \
     AND closed_at IS NULL AND visible_at > ?3 AND deadline >= visible_at AND audience IN (?4, ?5, ?6)";
const TOUCH: &str = "INSERT INTO presence (account, agent_id, last_seen) VALUES (?1, ?2, ?3) \
     ON CONFLICT (account, agent_id) DO UPDATE SET last_seen = max(last_seen, excluded.last_seen)";
const LAST_SEEN: &str = "SELECT last_seen FROM presence WHERE account = ?1 AND agent_id = ?2";

/// `?9` = 1 for a drain (delivery evidence stamps `delivered_at`), 0 for a stream push (§8.7.2);
/// `?10` the claiming session, if any.
fn claim_sql() -> String {
    format!(
        "UPDATE mailbox SET visible_at = ?4, deliveries = deliveries + 1, \
             delivered_at = CASE WHEN ?9 THEN COALESCE(delivered_at, ?3) ELSE delivered_at END, \
             claimant = COALESCE(?10, claimant) \
         WHERE seq IN (SELECT seq FROM mailbox WHERE account = ?1 AND agent_id = ?2 AND closed_at IS NULL \
                       AND visible_at <= ?3 AND deadline >= ?3 AND audience IN (?6, ?7, ?8) \
                       ORDER BY visible_at, seq LIMIT ?5) \
         RETURNING seq, {COLUMNS}"
    )
}

fn ack_sql() -> String {
    format!(
        "UPDATE mailbox SET closed_at = ?4, closed_reason = 'acked', ack_by = ?5, ack_note = ?6, retain_until = ?7 \
         WHERE account = ?1 AND entry_key = ?2 AND agent_id = ?3 AND closed_at IS NULL \
           AND deliveries > 0 AND deadline >= ?4 RETURNING {COLUMNS}"
    )
}

/// Does `e`'s audience partition of its mailbox already hold `depth_cap` live entries?
pub(crate) fn is_full(conn: &Connection, e: &MailboxEntry, depth_cap: u32) -> Result<bool, DbError> {
    let (account, agent) = (e.mailbox.account.as_str(), e.mailbox.agent.as_str());
    let live: i64 = conn
        .prepare_cached(COUNT_LIVE)?
        .query_row(params![account, agent, ms(e.enqueued_at), e.audience.as_str()], |r| r.get(0))?;
    Ok(live >= i64::from(depth_cap))
}

/// Insert one entry (inside the caller's write job: an enqueue, or a terminal's `response` entry).
pub(crate) fn insert_entry(conn: &Connection, e: &MailboxEntry) -> Result<(), DbError> {
    conn.prepare_cached(INSERT)?.execute(params![
        e.mailbox.account.as_str(),
        e.key,
        e.mailbox.agent.as_str(),
        e.kind.as_str(),
        e.audience.as_str(),
        json_text(&e.payload),
        e.author,
        ms(e.enqueued_at),
        ms(e.visible_at),
        ms(e.deadline),
        e.orphaned_if_unacked_at_deadline(),
    ])?;
    Ok(())
}

/// The three audience parameters of a claim, the first repeated to fill: `[Any]` → any ×3.
fn audience_triple(audiences: &[Audience]) -> (String, String, String) {
    let first = audiences.first().map_or("any", Audience::as_str).to_owned();
    let at = |i: usize| audiences.get(i).map_or(first.clone(), |a| a.as_str().to_owned());
    (first.clone(), at(1), at(2))
}

#[async_trait]
impl MailboxStore for SqliteStore {
    async fn enqueue(&self, entry: &MailboxEntry, depth_cap: u32) -> Result<Enqueued, StoreError> {
        let e = entry.clone();
        self.write(move |conn| {
            if is_full(conn, &e, depth_cap)? {
                return Ok(Enqueued::Full);
            }
            insert_entry(conn, &e)?;
            Ok(Enqueued::New)
        })
        .await
    }

    async fn claim(
        &self,
        mailbox: &Mailbox,
        audiences: &[Audience],
        by: &Claimer,
        now: Timestamp,
        invisible_until: Timestamp,
        max: usize,
    ) -> Result<Claim, StoreError> {
        if audiences.len() > 3 {
            return Err(StoreError::Unavailable("a drain sees at most three audiences".into()));
        }
        let (account, agent) = (mailbox.account.to_string(), mailbox.agent.to_string());
        let (a1, a2, a3) = audience_triple(audiences);
        let scope: ClaimScope = (account, agent, a1, a2, a3);
        let probe = scope.clone();
        let claimable = self
            .read(move |conn| {
                let (account, agent, a1, a2, a3) = &probe;
                let any: bool = conn
                    .prepare_cached(CLAIMABLE)?
                    .query_row(params![account, agent, ms(now), a1, a2, a3], |r| r.get(0))?;
                if any { Ok(None) } else { next_visible(conn, &probe, now).map(Some) }
            })
            .await?;
        if let Some(next_visible_at) = claimable {
            return Ok(Claim { entries: Vec::new(), next_visible_at });
        }
        let (evidence, claimant) = (by.evidence, by.session.as_ref().map(|s| s.to_string()));
        self.write(move |conn| {
            let (account, agent, a1, a2, a3) = &scope;
            let mut stmt = conn.prepare_cached(&claim_sql())?;
            let rows = stmt.query_map(
                params![account, agent, ms(now), ms(invisible_until), limit(max), a1, a2, a3, evidence, claimant],
                |r| Ok((r.get::<_, i64>(0)?, RawEntry::read(r, 1)?)),
            )?;
            let mut claimed = rows.collect::<Result<Vec<_>, _>>()?;
            // RETURNING order is unspecified: deliver in first-enqueue order.
            claimed.sort_by_key(|(seq, _)| *seq);
            let entries = claimed.into_iter().map(|(_, raw)| raw.decode()).collect::<Result<Vec<_>, _>>()?;
            Ok(Claim { entries, next_visible_at: next_visible(conn, &scope, now)? })
        })
        .await
    }

    async fn ack_entries(
        &self,
        mailbox: &Mailbox,
        keys: &[String],
        ack: &AckRecord,
        retain_until: Timestamp,
    ) -> Result<Vec<MailboxEntry>, StoreError> {
        let (mailbox, keys, ack) = (mailbox.clone(), keys.to_vec(), ack.clone());
        self.write(move |conn| {
            let mut stmt = conn.prepare_cached(&ack_sql())?;
            let mut acked = Vec::new();
            for key in &keys {
                let row = stmt
                    .query_row(
                        params![
                            mailbox.account.as_str(),
                            key,
                            mailbox.agent.as_str(),
                            ms(ack.acked_at),
                            ack.by,
                            ack.note,
                            ms(retain_until),
                        ],
                        |r| RawEntry::read(r, 0),
                    )
                    .optional()?;
                if let Some(raw) = row {
                    acked.push(raw.decode()?);
                }
            }
            Ok(acked)
        })
        .await
    }

    async fn bounce_entries(
        &self,
        mailbox: &Mailbox,
        session: &SessionId,
        at: Timestamp,
        retain_until: Timestamp,
        max: usize,
    ) -> Result<Vec<MailboxEntry>, StoreError> {
        let (account, agent, audience) = (mailbox.account.to_string(), mailbox.agent.to_string(), session.to_string());
        self.write(move |conn| {
            // §14.2: command entries bounce; `response`/`receipt` entries never do.
            let mut stmt = conn.prepare_cached(&format!(
                "UPDATE mailbox SET closed_at = ?4, closed_reason = 'bounced', retain_until = ?5 \
                 WHERE seq IN (SELECT seq FROM mailbox WHERE account = ?1 AND agent_id = ?2 AND audience = ?3 \
                               AND closed_at IS NULL AND deadline >= ?4 AND kind IN ('directive', 'message') \
                               ORDER BY seq LIMIT ?6) RETURNING {COLUMNS}"
            ))?;
            let rows = stmt
                .query_map(params![account, agent, audience, ms(at), ms(retain_until), limit(max)], |r| {
                    RawEntry::read(r, 0)
                })?;
            rows.map(|row| row?.decode()).collect()
        })
        .await
    }

    async fn get_entry(&self, account: &AccountId, key: &str) -> Result<Option<MailboxEntry>, StoreError> {
        let (account, key) = (account.to_string(), key.to_owned());
        self.read(move |conn| {
            conn.prepare_cached(&format!("SELECT {COLUMNS} FROM mailbox WHERE account = ?1 AND entry_key = ?2"))?
                .query_row(params![account, key], |r| RawEntry::read(r, 0))
                .optional()?
                .map(RawEntry::decode)
                .transpose()
        })
        .await
    }

    async fn recent_entries(&self, mailbox: &Mailbox, max: usize) -> Result<Vec<MailboxEntry>, StoreError> {
        let (account, agent) = (mailbox.account.to_string(), mailbox.agent.to_string());
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM mailbox WHERE account = ?1 AND agent_id = ?2 ORDER BY seq DESC LIMIT ?3"
            ))?;
            let rows = stmt.query_map(params![account, agent, limit(max)], |r| RawEntry::read(r, 0))?;
            rows.map(|row| row?.decode()).collect()
        })
        .await
    }

    async fn close_due_entries(
        &self,
        now: Timestamp,
        retain_until: Timestamp,
        max: usize,
    ) -> Result<Vec<MailboxEntry>, StoreError> {
        self.write(move |conn| {
            // §14.2: a command entry drained but never acked when its retention lapses is an
            // orphan (bounced, prior `delivered`); everything else closes at its deadline.
            let mut stmt = conn.prepare_cached(&format!(
                "UPDATE mailbox SET closed_at = ?1, retain_until = ?2, closed_reason = CASE \
                     WHEN orphanable = 1 AND delivered_at IS NOT NULL THEN 'bounced' ELSE 'deadline' END \
                 WHERE seq IN (SELECT seq FROM mailbox WHERE closed_at IS NULL AND deadline < ?1 \
                               ORDER BY deadline LIMIT ?3) RETURNING {COLUMNS}"
            ))?;
            let rows = stmt.query_map(params![ms(now), ms(retain_until), limit(max)], |r| RawEntry::read(r, 0))?;
            rows.map(|row| row?.decode()).collect()
        })
        .await
    }

    async fn purge_entries(&self, now: Timestamp, max: usize) -> Result<usize, StoreError> {
        self.write(move |conn| {
            Ok(conn
                .prepare_cached(
                    "DELETE FROM mailbox WHERE seq IN (SELECT seq FROM mailbox WHERE retain_until IS NOT NULL \
                     AND retain_until <= ?1 ORDER BY retain_until LIMIT ?2)",
                )?
                .execute(params![ms(now), limit(max)])?)
        })
        .await
    }

    async fn touch_presence(&self, mailbox: &Mailbox, at: Timestamp) -> Result<(), StoreError> {
        let (account, agent) = (mailbox.account.to_string(), mailbox.agent.to_string());
        self.write(move |conn| {
            conn.prepare_cached(TOUCH)?.execute(params![account, agent, ms(at)])?;
            Ok(())
        })
        .await
    }

    async fn last_seen(&self, mailbox: &Mailbox) -> Result<Option<Timestamp>, StoreError> {
        let (account, agent) = (mailbox.account.to_string(), mailbox.agent.to_string());
        self.read(move |conn| {
            let seen: Option<i64> =
                conn.prepare_cached(LAST_SEEN)?.query_row(params![account, agent], |r| r.get(0)).optional()?;
            opt_ts(seen, "presence.last_seen")
        })
        .await
    }
}

/// `(account, agent, audience ×3)` of a claim.
type ClaimScope = (String, String, String, String, String);

fn next_visible(conn: &Connection, scope: &ClaimScope, now: Timestamp) -> Result<Option<Timestamp>, DbError> {
    let (account, agent, a1, a2, a3) = scope;
    let next: Option<i64> =
        conn.prepare_cached(NEXT_VISIBLE)?.query_row(params![account, agent, ms(now), a1, a2, a3], |r| r.get(0))?;
    opt_ts(next, "mailbox.visible_at")
}

/// A `mailbox` row as stored ([`COLUMNS`] from column `first`).
struct RawEntry {
    account: String,
    key: String,
    agent: String,
    kind: String,
    audience: String,
    payload: String,
    author: String,
    enqueued_at: i64,
    visible_at: i64,
    deadline: i64,
    deliveries: i64,
    delivered_at: Option<i64>,
    closed_at: Option<i64>,
    closed_reason: Option<String>,
    ack_by: Option<String>,
    ack_note: Option<String>,
    retain_until: Option<i64>,
    claimant: Option<String>,
}

impl RawEntry {
    fn read(r: &Row<'_>, first: usize) -> rusqlite::Result<Self> {
        Ok(Self {
            account: r.get(first)?,
            key: r.get(first + 1)?,
            agent: r.get(first + 2)?,
            kind: r.get(first + 3)?,
            audience: r.get(first + 4)?,
            payload: r.get(first + 5)?,
            author: r.get(first + 6)?,
            enqueued_at: r.get(first + 7)?,
            visible_at: r.get(first + 8)?,
            deadline: r.get(first + 9)?,
            deliveries: r.get(first + 10)?,
            delivered_at: r.get(first + 11)?,
            closed_at: r.get(first + 12)?,
            closed_reason: r.get(first + 13)?,
            ack_by: r.get(first + 14)?,
            ack_note: r.get(first + 15)?,
            retain_until: r.get(first + 16)?,
            claimant: r.get(first + 17)?,
        })
    }

    fn decode(self) -> Result<MailboxEntry, DbError> {
        let closed = match (self.closed_at, self.closed_reason.as_deref()) {
            (None, _) => None,
            (Some(at), Some("acked")) => {
                let at = ts(at, "mailbox.closed_at")?;
                let by = self.ack_by.ok_or_else(|| DbError::Corrupt("mailbox: acked without ack_by".into()))?;
                Some(Closed { at, reason: CloseReason::Acked(AckRecord { by, acked_at: at, note: self.ack_note }) })
            }
            (Some(at), Some("deadline")) => {
                Some(Closed { at: ts(at, "mailbox.closed_at")?, reason: CloseReason::Deadline })
            }
            (Some(at), Some("bounced")) => {
                Some(Closed { at: ts(at, "mailbox.closed_at")?, reason: CloseReason::Bounced })
            }
            (Some(_), other) => return Err(DbError::Corrupt(format!("mailbox.closed_reason: {other:?}"))),
        };
        Ok(MailboxEntry {
            mailbox: Mailbox {
                account: parsed(&self.account, "mailbox.account", AccountId::parse)?,
                agent: parsed(&self.agent, "mailbox.agent_id", AgentId::parse)?,
            },
            key: self.key,
            kind: parsed(&self.kind, "mailbox.kind", EntryKind::parse)?,
            audience: parsed(&self.audience, "mailbox.audience", Audience::parse)?,
            payload: json_value(&self.payload, "mailbox.payload")?,
            author: self.author,
            enqueued_at: ts(self.enqueued_at, "mailbox.enqueued_at")?,
            visible_at: ts(self.visible_at, "mailbox.visible_at")?,
            deadline: ts(self.deadline, "mailbox.deadline")?,
            deliveries: u32::try_from(self.deliveries).unwrap_or(u32::MAX),
            delivered_at: opt_ts(self.delivered_at, "mailbox.delivered_at")?,
            closed,
            retain_until: opt_ts(self.retain_until, "mailbox.retain_until")?,
            claimant: match self.claimant {
                Some(c) => Some(parsed(&c, "mailbox.claimant", SessionId::parse)?),
                None => None,
            },
        })
    }
}
