//! [`MessageStore`] over SQLite: messages, idempotency claims (§8.1), the §7 terminal CAS, the
//! expiry index, retention with tombstones (§8.2) and the §8.6 counters.
//!
//! Every write runs on the single writer connection as one savepoint of a group-committed
//! transaction (see `writer`), committed before the method returns (and therefore before the Hub
//! acknowledges anything, §3.1). Every read runs in one read transaction: one snapshot.
//!
//! * `insert_message` — if a claim for `(account, agent, key)` is live at `now`, returns
//!   `Existing(claim)` (nothing written); otherwise inserts the message and appends the claim
//!   (a newer row for a key supersedes an expired one). Claims are found through the in-memory
//!   index of the `claims` module, not a SQL index on the key.
//! * `get_claim` — the claim row if `expires_at > now`.
//! * `get_message` — the row scoped to `account`; else that account's tombstone (`Gone`); else
//!   `Missing` (also for another account's id). Both reads share one snapshot.
//! * `complete` — `UPDATE … WHERE account = ? AND id = ? AND status = 'open'`; one row changed →
//!   `Applied` (re-read in the same transaction), else the current row → `AlreadyTerminal`, or
//!   `Missing`.
//! * `due_expiries` — open rows with `expires_at <= now` from the partial index `messages_due`,
//!   earliest deadline first, across all accounts.
//! * `purge` — up to `limit` rows with `retain_until <= now` become tombstones in the same
//!   transaction; expired claims and counters are deleted in batches of at most `limit` each.
//! * `list_messages` / `open_counts` — see [`crate::listing`]: `open: true` → status `open`,
//!   most urgent then oldest first; `open: false` → every other status (including a delivered
//!   notify, which is terminal on acceptance, §7), most recently updated first.
//! * `count_open` — `COUNT(*)` of the agent's open asks/tasks from an index.
//! * `incr_counter` — an upsert `RETURNING value`; an expired row restarts at 1. The port passes
//!   no `now`, so expiry is judged against the system clock here.

use std::sync::Arc;

use async_trait::async_trait;
use ma2h_core::mailbox::model::AckRecord;
use ma2h_core::messages::listing::{ListCursor, ListFilter, ListPage, ListQuery, OpenCounts, SearchHits, SearchQuery};
use ma2h_core::messages::records::{
    Completion, IdempotencyRecord, Inserted, Lookup, MessageRecord, PushTrack, TerminalWrite,
};
use ma2h_core::ports::{MessageStore, StoreError};
use ma2h_protocol::envelope::{MessageType, Priority};
use ma2h_protocol::ids::{AccountId, AgentId, MessageId, ResolutionId};
use ma2h_protocol::lifecycle::Status;
use ma2h_protocol::time::Timestamp;
use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::codec::{DbError, RawPush, json_text, json_value, limit, ms, opt_ms, opt_ts, parsed, ts};
use crate::{SqliteStore, listing, sql};

#[async_trait]
impl MessageStore for SqliteStore {
    async fn insert_message(
        &self,
        message: &MessageRecord,
        claim: Option<&IdempotencyRecord>,
        entry: Option<(&ma2h_core::mailbox::model::MailboxEntry, u32)>,
        now: Timestamp,
    ) -> Result<Inserted, StoreError> {
        // Encode on the caller's thread: the writer thread is the one serial resource. Only the
        // columns travel (the record's parsed envelope is not copied).
        let (row, claim) = (NewRow::of(message), claim.cloned());
        let entry = entry.map(|(e, cap)| (e.clone(), cap));
        let claims = Arc::clone(&self.inner.claims);
        self.write(move |conn| {
            if let Some(c) = &claim
                && let Some(existing) = claims.live(conn, true, &c.account, &c.agent_id, &c.key, now)?
            {
                // §8.1: the key is taken; nothing is written.
                return Ok(Inserted::Existing(existing));
            }
            if let Some((e, cap)) = &entry
                && crate::mailbox::is_full(conn, e, *cap)?
            {
                return Ok(Inserted::MailboxFull);
            }
            let inserted = insert_message(conn, &row, claim.as_ref().map(|c| (&*claims, c)))?;
            // §8.7.1: the addressed message and its mailbox entry commit in one transaction.
            if let (Inserted::New, Some((e, _))) = (&inserted, &entry) {
                crate::mailbox::insert_entry(conn, e)?;
            }
            Ok(inserted)
        })
        .await
    }

    async fn get_claim(
        &self,
        account: &AccountId,
        agent: &AgentId,
        key: &str,
        now: Timestamp,
    ) -> Result<Option<IdempotencyRecord>, StoreError> {
        let (account, agent, key) = (account.clone(), agent.clone(), key.to_owned());
        let claims = Arc::clone(&self.inner.claims);
        let writer = !self.has_readers();
        self.read(move |conn| claims.live(conn, writer, &account, &agent, &key, now)).await
    }

    async fn get_message(&self, account: &AccountId, id: &MessageId) -> Result<Lookup, StoreError> {
        let (account, id) = (account.clone(), id.clone());
        self.read(move |conn| {
            let found = lookup(conn, &account, &id)?;
            Ok(found)
        })
        .await
    }

    async fn complete(
        &self,
        account: &AccountId,
        id: &MessageId,
        write: &TerminalWrite,
    ) -> Result<Completion, StoreError> {
        let (account, id, response) = (account.clone(), id.clone(), json_text(&write.response));
        let write = write.clone();
        self.write(move |conn| complete(conn, &account, &id, &write, &response)).await
    }

    async fn due_expiries(&self, now: Timestamp, max: usize) -> Result<Vec<(AccountId, MessageId)>, StoreError> {
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(sql::DUE_EXPIRIES)?;
            let rows =
                stmt.query_map(params![ms(now), limit(max)], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
            rows.map(|row| {
                let (account, id) = row?;
                Ok((parsed(&account, "messages.account", AccountId::parse)?, MessageId::from_trusted(id)))
            })
            .collect()
        })
        .await
    }

    async fn purge(&self, now: Timestamp, max: usize) -> Result<usize, StoreError> {
        let claims = Arc::clone(&self.inner.claims);
        self.write(move |conn| purge(conn, &claims, now, max)).await
    }

    async fn list_messages(&self, account: &AccountId, query: &ListQuery) -> Result<ListPage, StoreError> {
        let (account, query) = (account.clone(), query.clone());
        self.read(move |conn| {
            let (items, more) = listing::page(conn, account.as_str(), &query)?;
            let next = if more { items.last().map(ListCursor::of) } else { None };
            Ok(ListPage { items, next })
        })
        .await
    }

    async fn search_messages(&self, account: &AccountId, query: &SearchQuery) -> Result<SearchHits, StoreError> {
        let (account, query) = (account.clone(), query.clone());
        self.read(move |conn| {
            Ok(SearchHits { items: listing::search(conn, account.as_str(), &query)?, complete: true })
        })
        .await
    }

    fn full_text_search(&self) -> bool {
        true
    }

    async fn open_counts(&self, account: &AccountId, filter: &ListFilter) -> Result<OpenCounts, StoreError> {
        let (account, filter) = (account.clone(), filter.clone());
        self.read(move |conn| listing::counts(conn, account.as_str(), &filter)).await
    }

    async fn claim_due_pushes(
        &self,
        now: Timestamp,
        lease_until: Timestamp,
        max: usize,
    ) -> Result<Vec<(AccountId, MessageId)>, StoreError> {
        self.write(move |conn| {
            let claimed = {
                let mut stmt = conn.prepare_cached(sql::CLAIM_PUSHES)?;
                let rows = stmt.query_map(params![ms(now), ms(lease_until), limit(max)], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
                })?;
                rows.map(|row| {
                    let (account, id) = row?;
                    Ok((parsed(&account, "messages.account", AccountId::parse)?, MessageId::from_trusted(id)))
                })
                .collect::<Result<Vec<_>, DbError>>()?
            };
            Ok(claimed)
        })
        .await
    }

    async fn record_push(&self, account: &AccountId, id: &MessageId, track: &PushTrack) -> Result<(), StoreError> {
        let (account, id, t) = (account.clone(), id.clone(), track.clone());
        self.write(move |conn| {
            conn.prepare_cached(sql::RECORD_PUSH)?.execute(params![
                account.as_str(),
                id.as_str(),
                t.status.as_str(),
                i64::from(t.attempts),
                t.next_attempt_at.map(ms),
                t.last_error,
                t.delivered_at.map(ms),
            ])?;
            Ok(())
        })
        .await
    }

    async fn mark_delivered(
        &self,
        account: &AccountId,
        id: &MessageId,
        at: Timestamp,
    ) -> Result<Option<Timestamp>, StoreError> {
        let (account, id) = (account.clone(), id.clone());
        self.write(move |conn| {
            conn.prepare_cached(sql::MARK_DELIVERED)?.execute(params![account.as_str(), id.as_str(), ms(at)])?;
            let stamp: Option<Option<i64>> = conn
                .prepare_cached(
                    "SELECT delivered_at FROM messages WHERE account = ?1 AND id = ?2 AND status <> 'open' AND kind <> 'notify'",
                )?
                .query_row(params![account.as_str(), id.as_str()], |r| r.get(0))
                .optional()?;
            opt_ts(stamp.flatten(), "messages.delivered_at")
        })
        .await
    }

    async fn ack_response(
        &self,
        account: &AccountId,
        id: &MessageId,
        ack: &AckRecord,
    ) -> Result<Option<AckRecord>, StoreError> {
        let (account, id, ack) = (account.clone(), id.clone(), ack.clone());
        self.write(move |conn| {
            conn.prepare_cached(sql::ACK_RESPONSE)?.execute(params![
                account.as_str(),
                id.as_str(),
                ack.by,
                ms(ack.acked_at),
                ack.note
            ])?;
            let stored: Option<(Option<String>, Option<i64>, Option<String>)> = conn
                .prepare_cached("SELECT ack_by, ack_at, ack_note FROM messages WHERE account = ?1 AND id = ?2")?
                .query_row(params![account.as_str(), id.as_str()], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .optional()?;
            match stored {
                Some((Some(by), Some(at), note)) => {
                    Ok(Some(AckRecord { by, acked_at: ts(at, "messages.ack_at")?, note }))
                }
                _ => Ok(None),
            }
        })
        .await
    }

    async fn count_open(&self, account: &AccountId, agent: &AgentId) -> Result<u64, StoreError> {
        let (account, agent) = (account.clone(), agent.clone());
        self.read(move |conn| {
            let n: i64 = conn
                .prepare_cached(sql::COUNT_OPEN)?
                .query_row(params![account.as_str(), agent.as_str()], |r| r.get(0))?;
            Ok(u64::try_from(n).unwrap_or(0))
        })
        .await
    }

    async fn incr_counter(&self, key: &str, expires_at: Timestamp, now: Timestamp) -> Result<u64, StoreError> {
        let key = key.to_owned();
        self.write(move |conn| {
            let value: i64 = conn
                .prepare_cached(sql::INCR_COUNTER)?
                .query_row(params![key, ms(expires_at), ms(now)], |r| r.get(0))?;
            u64::try_from(value).map_err(|_| DbError::Corrupt(format!("counter {key} holds {value}")))
        })
        .await
    }

    async fn read_counter(&self, key: &str, now: Timestamp) -> Result<u64, StoreError> {
        let key = key.to_owned();
        self.read(move |conn| {
            let value: Option<i64> =
                conn.prepare_cached(sql::READ_COUNTER)?.query_row(params![key, ms(now)], |r| r.get(0)).optional()?;
            Ok(value.map_or(0, |v| u64::try_from(v).unwrap_or(0)))
        })
        .await
    }
}

/// A new message's columns, encoded off the writer thread.
struct NewRow {
    id: String,
    account: String,
    agent_id: String,
    kind: &'static str,
    status: &'static str,
    priority: &'static str,
    title: String,
    envelope: String,
    created_at: i64,
    expires_at: Option<i64>,
    updated_at: i64,
    response: Option<String>,
    resolution_id: Option<String>,
    retain_until: Option<i64>,
    push: Option<PushTrack>,
    state_text: Option<String>,
    project: Option<String>,
    tags: Option<String>,
}

impl NewRow {
    fn of(m: &MessageRecord) -> Self {
        Self {
            id: m.id.as_str().to_owned(),
            account: m.account.as_str().to_owned(),
            agent_id: m.agent_id.as_str().to_owned(),
            kind: m.kind.as_str(),
            status: m.status.as_str(),
            priority: m.priority.as_str(),
            title: m.title.clone(),
            envelope: json_text(&m.envelope),
            created_at: ms(m.created_at),
            expires_at: opt_ms(m.expires_at),
            updated_at: ms(m.updated_at),
            response: m.response.as_ref().map(json_text),
            resolution_id: m.resolution_id.as_ref().map(|r| r.as_str().to_owned()),
            retain_until: opt_ms(m.retain_until),
            push: m.push.clone(),
            state_text: m.state_text.clone(),
            project: ma2h_core::messages::listing::project_of(&m.envelope),
            tags: listing::tags_column(&m.envelope),
        }
    }
}

/// Insert the message and append its claim (superseding an expired one). The caller has checked that no
/// live claim holds the key, in the same transaction.
fn insert_message(
    conn: &Connection,
    m: &NewRow,
    claim: Option<(&crate::claims::ClaimIndex, &IdempotencyRecord)>,
) -> Result<Inserted, DbError> {
    let push = m.push.as_ref();
    conn.prepare_cached(sql::INSERT_MESSAGE)?.execute(params![
        m.id,
        m.account,
        m.agent_id,
        m.kind,
        m.status,
        m.priority,
        m.title,
        m.envelope,
        m.created_at,
        m.expires_at,
        m.updated_at,
        m.response,
        m.resolution_id,
        m.retain_until,
        push.map(|p| p.status.as_str()),
        push.map_or(0, |p| i64::from(p.attempts)),
        push.and_then(|p| p.next_attempt_at).map(ms),
        push.and_then(|p| p.last_error.as_deref()),
        push.and_then(|p| p.delivered_at).map(ms),
        m.state_text,
        m.project,
        m.tags,
    ])?;
    if let Some((claims, c)) = claim {
        claims.insert(conn, c)?;
    }
    Ok(Inserted::New)
}

fn select_message(conn: &Connection, account: &AccountId, id: &MessageId) -> Result<Option<MessageRecord>, DbError> {
    conn.prepare_cached(sql::GET_MESSAGE)?
        .query_row(params![account.as_str(), id.as_str()], RawMessage::read)
        .optional()?
        .map(RawMessage::decode)
        .transpose()
}

fn lookup(conn: &Connection, account: &AccountId, id: &MessageId) -> Result<Lookup, DbError> {
    if let Some(record) = select_message(conn, account, id)? {
        return Ok(Lookup::Found(record));
    }
    let tombstone: Option<String> = conn
        .prepare_cached(sql::GET_TOMBSTONE)?
        .query_row(params![account.as_str(), id.as_str()], |r| r.get(0))
        .optional()?;
    Ok(match tombstone {
        Some(agent) => Lookup::Gone { agent_id: parsed(&agent, "tombstones.agent_id", AgentId::parse)? },
        None => Lookup::Missing,
    })
}

fn complete(
    conn: &Connection,
    account: &AccountId,
    id: &MessageId,
    w: &TerminalWrite,
    response: &str,
) -> Result<Completion, DbError> {
    let changed = conn.prepare_cached(sql::COMPLETE)?.execute(params![
        w.status.as_str(),
        response,
        w.resolution_id.as_str(),
        ms(w.resolved_at),
        ms(w.retain_until),
        account.as_str(),
        id.as_str(),
        w.is_expiry,
        w.push,
    ])?;
    if changed == 1
        && let Some(entry) = &w.entry
    {
        // §8.7.1: the session's `response` entry commits with the terminal, or not at all.
        crate::mailbox::insert_entry(conn, entry)?;
    }
    let current = select_message(conn, account, id)?;
    Ok(match (changed, current) {
        (1, Some(record)) => Completion::Applied(record),
        (_, Some(record)) => Completion::AlreadyTerminal(record),
        (_, None) => Completion::Missing,
    })
}

fn purge(
    conn: &Connection,
    claim_index: &crate::claims::ClaimIndex,
    now: Timestamp,
    max: usize,
) -> Result<usize, DbError> {
    let due: Vec<(String, String, String)> = conn
        .prepare_cached(sql::PURGEABLE)?
        .query_map(params![ms(now), limit(max)], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<Result<_, _>>()?;
    let mut purged = 0;
    {
        let mut tombstone = conn.prepare_cached(sql::INSERT_TOMBSTONE)?;
        let mut delete = conn.prepare_cached(sql::DELETE_MESSAGE)?;
        for (id, account, agent_id) in &due {
            tombstone.execute(params![id, account, agent_id, ms(now)])?;
            purged += delete.execute(params![id])?;
        }
    }
    let claims = claim_index.purge(conn, now, limit(max))?;
    let counters = conn.prepare_cached(sql::PURGE_COUNTERS)?.execute(params![ms(now), limit(max)])?;
    if purged + claims + counters > 0 {
        tracing::debug!(purged, claims, counters, "sqlite store: purged expired rows");
    }
    Ok(purged)
}

/// A message row as stored, before validation.
struct RawMessage {
    id: String,
    account: String,
    agent_id: String,
    kind: String,
    status: String,
    priority: String,
    title: String,
    envelope: String,
    created_at: i64,
    expires_at: Option<i64>,
    updated_at: i64,
    response: Option<String>,
    resolution_id: Option<String>,
    retain_until: Option<i64>,
    push: RawPush,
    state_text: Option<String>,
    delivered_at: Option<i64>,
    ack_by: Option<String>,
    ack_at: Option<i64>,
    ack_note: Option<String>,
}

impl RawMessage {
    /// Read the `message_columns!()` projection.
    fn read(r: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: r.get(0)?,
            account: r.get(1)?,
            agent_id: r.get(2)?,
            kind: r.get(3)?,
            status: r.get(4)?,
            priority: r.get(5)?,
            title: r.get(6)?,
            envelope: r.get(7)?,
            created_at: r.get(8)?,
            expires_at: r.get(9)?,
            updated_at: r.get(10)?,
            response: r.get(11)?,
            resolution_id: r.get(12)?,
            retain_until: r.get(13)?,
            push: RawPush::read(r, 14)?,
            state_text: r.get(19)?,
            delivered_at: r.get(20)?,
            ack_by: r.get(21)?,
            ack_at: r.get(22)?,
            ack_note: r.get(23)?,
        })
    }

    fn decode(self) -> Result<MessageRecord, DbError> {
        let what = |field: &str| format!("messages.{field} of {}", self.id);
        Ok(MessageRecord {
            account: parsed(&self.account, &what("account"), AccountId::parse)?,
            agent_id: parsed(&self.agent_id, &what("agent_id"), AgentId::parse)?,
            kind: parsed(&self.kind, &what("kind"), MessageType::parse)?,
            status: parsed(&self.status, &what("status"), Status::parse)?,
            priority: parsed(&self.priority, &what("priority"), Priority::parse)?,
            envelope: json_value(&self.envelope, &what("envelope"))?,
            state_text: self.state_text.clone(),
            created_at: ts(self.created_at, &what("created_at"))?,
            expires_at: opt_ts(self.expires_at, &what("expires_at"))?,
            updated_at: ts(self.updated_at, &what("updated_at"))?,
            response: self.response.as_deref().map(|r| json_value(r, &what("response"))).transpose()?,
            resolution_id: self.resolution_id.clone().map(ResolutionId::from_trusted),
            retain_until: opt_ts(self.retain_until, &what("retain_until"))?,
            push: self.push.decode(what)?,
            delivered_at: opt_ts(self.delivered_at, &what("delivered_at"))?,
            ack: match (self.ack_by, self.ack_at) {
                (Some(by), Some(at)) => Some(AckRecord { by, acked_at: ts(at, &what("ack_at"))?, note: self.ack_note }),
                _ => None,
            },
            title: self.title,
            id: MessageId::from_trusted(self.id),
        })
    }
}
