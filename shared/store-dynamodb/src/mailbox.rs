//! [`MailboxStore`] on DynamoDB (design: `docs/dynamodb.md`, "Mailbox").
//!
//! * An entry is one item `MBX#{account}#{key}` / `ENTRY`. While live it carries the `mailbox`
//!   index keys — `mbx_pk = {account}#{agent}#{audience}`, `mbx_sk = {visible_at:015}#{key}` — and
//!   `due` keys under the partition `MBXDUE` (deadline). Once closed it drops them and gains
//!   `retain` keys under `MBXRET`, and a TTL backstop. Its history row lives in the `inbox` index
//!   under `{account}#mbx#{agent}` (enqueue order).
//! * **Claim** reads the `mailbox` index in `visible_at` order, then claims each candidate with a
//!   conditional `UpdateItem` requiring the index position it read (`mbx_sk = :seen`). The winner
//!   moves `mbx_sk` to the window's end, so every claim built on the old position fails: a stale
//!   index read can cause a skipped entry (a short batch), never a duplicate delivery.
//! * **Ack** is a conditional `UpdateItem` per key: own agent, live, returned at least once,
//!   within deadline.
//! * Presence is `AGENT#{account}#{agent}` / `PRESENCE`, written only forwards.

use std::collections::HashMap;

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, Select};
use ma2h_core::mailbox::model::{
    AckRecord, Audience, Claim, Claimer, CloseReason, Closed, Enqueued, EntryKind, Mailbox, MailboxEntry,
};
use ma2h_core::ports::{MailboxStore, StoreError};
use ma2h_protocol::ids::{AccountId, AgentId, SessionId, key_part};
use ma2h_protocol::time::{self, Timestamp};

use crate::codec::*;
use crate::shards::{Due, Shards};
use crate::{DynamoStore, unavailable};

type R<T> = Result<T, StoreError>;

const ENTRY_SK: &str = "ENTRY";
const PRESENCE_SK: &str = "PRESENCE";
const DUE_PARTITION: &str = "MBXDUE";
/// Index pages one claim reads at most (past-deadline rows the sweeper has not closed yet are
/// skipped; it closes them within a sweep).
const CLAIM_PAGES: usize = 3;

/// A closed entry past its retention: DynamoDB's TTL deletes it some time after, and until then
/// it reads as purged — as on a store that deletes it itself.
fn purged(e: &MailboxEntry, now: Timestamp) -> bool {
    e.closed.is_some() && e.retain_until.is_some_and(|r| r <= now)
}

fn entry_pk(account: &AccountId, key: &str) -> String {
    format!("MBX#{}#{}", key_part(account.as_str()), key_part(key))
}
fn ready_pk(mailbox: &Mailbox, audience: &Audience) -> String {
    format!("{}#{}#{}", key_part(mailbox.account.as_str()), key_part(mailbox.agent.as_str()), audience.as_str())
}
fn ready_sk(visible_at: Timestamp, key: &str) -> String {
    format!("{:015}#{key}", ms(visible_at))
}
fn history_pk(mailbox: &Mailbox) -> String {
    format!("{}#mbx#{}", key_part(mailbox.account.as_str()), key_part(mailbox.agent.as_str()))
}

/// Was this write refused by its condition (a lost compare-and-set, not a failure)?
pub(crate) fn is_condition_failure<E, R>(e: &aws_sdk_dynamodb::error::SdkError<E, R>) -> bool
where
    E: aws_sdk_dynamodb::error::ProvideErrorMetadata,
{
    e.as_service_error().and_then(|s| s.code()) == Some("ConditionalCheckFailedException")
}

pub(crate) fn entry_item(e: &MailboxEntry, shards: Shards) -> Item {
    let pk = entry_pk(&e.mailbox.account, &e.key);
    let mut item = key(pk.clone(), ENTRY_SK);
    let mut put = |k: &str, v: AttributeValue| {
        item.insert(k.to_owned(), v);
    };
    put("account", s(e.mailbox.account.as_str()));
    put("agent_id", s(e.mailbox.agent.as_str()));
    put("entry_key", s(e.key.clone()));
    put("kind", s(e.kind.as_str()));
    put("audience", s(e.audience.as_str()));
    put("payload", s(e.payload.to_string()));
    put("author", s(e.author.clone()));
    put("enqueued_at", n(ms(e.enqueued_at)));
    put("visible_at", n(ms(e.visible_at)));
    put("deadline", n(ms(e.deadline)));
    if !e.orphaned_if_unacked_at_deadline() {
        // §14.2: not an orphan if left delivered-but-unacked at its deadline (its own expiry, or
        // a response/receipt entry). Items written before this rule carry it when their payload
        // had an `expires_at` (the same deadline, but for one past the retention); items from
        // before `has_expiry` existed at all (the first days of the mailbox leg) lack it.
        put("has_expiry", AttributeValue::Bool(true));
    }
    put("deliveries", n(i64::from(e.deliveries)));
    put("mbx_pk", s(ready_pk(&e.mailbox, &e.audience)));
    put("mbx_sk", s(ready_sk(e.visible_at, &e.key)));
    put("due_pk", s(shards.key(DUE_PARTITION, &pk)));
    put("due_sk", n(ms(e.deadline)));
    put("list_pk", s(history_pk(&e.mailbox)));
    put("list_sk", s(format!("{:015}#{}", ms(e.enqueued_at), e.key)));
    item
}

fn entry_from(item: &Item) -> R<MailboxEntry> {
    let corrupt = |what: &str| StoreError::Corrupt(format!("dynamodb mailbox item: {what}"));
    let ts = |k: &str| -> R<Option<Timestamp>> { Ok(opt_n(item, k)?.map(time::from_millis)) };
    let closed = match (ts("closed_at")?, opt_s(item, "closed_reason").as_deref()) {
        (None, _) => None,
        (Some(at), Some("acked")) => {
            let by = opt_s(item, "ack_by").ok_or_else(|| corrupt("acked without ack_by"))?;
            let ack = AckRecord { by, acked_at: at, note: opt_s(item, "ack_note") };
            Some(Closed { at, reason: CloseReason::Acked(ack) })
        }
        (Some(at), Some("deadline")) => Some(Closed { at, reason: CloseReason::Deadline }),
        (Some(at), Some("bounced")) => Some(Closed { at, reason: CloseReason::Bounced }),
        (Some(_), other) => return Err(corrupt(&format!("closed_reason {other:?}"))),
    };
    let payload = serde_json::from_str(get_s(item, "payload")?).map_err(|_| corrupt("payload is not JSON"))?;
    Ok(MailboxEntry {
        mailbox: Mailbox {
            account: AccountId::parse(get_s(item, "account")?).ok_or_else(|| corrupt("account"))?,
            agent: AgentId::parse(get_s(item, "agent_id")?).ok_or_else(|| corrupt("agent_id"))?,
        },
        key: get_s(item, "entry_key")?.to_owned(),
        kind: EntryKind::parse(get_s(item, "kind")?).ok_or_else(|| corrupt("kind"))?,
        audience: Audience::parse(get_s(item, "audience")?).ok_or_else(|| corrupt("audience"))?,
        payload,
        author: get_s(item, "author")?.to_owned(),
        enqueued_at: time::from_millis(get_n(item, "enqueued_at")?),
        visible_at: time::from_millis(get_n(item, "visible_at")?),
        deadline: time::from_millis(get_n(item, "deadline")?),
        deliveries: u32::try_from(get_n(item, "deliveries")?).unwrap_or(u32::MAX),
        delivered_at: ts("delivered_at")?,
        closed,
        retain_until: ts("retain_until")?,
        claimant: opt_s(item, "claimant").as_deref().and_then(SessionId::parse),
    })
}

/// `visible_at` and key of a `mailbox` index position.
fn parse_ready_sk(sk: &str) -> Option<(i64, &str)> {
    let (ms, key) = sk.split_once('#')?;
    Some((ms.parse().ok()?, key))
}

impl DynamoStore {
    /// Up to `max` claimable positions of one audience partition at `now`, and the next instant
    /// one becomes visible.
    async fn claim_candidates(
        &self,
        mailbox: &Mailbox,
        audience: &Audience,
        now: Timestamp,
        max: usize,
    ) -> R<(Vec<(i64, String, String)>, Option<Timestamp>)> {
        let mut candidates = Vec::new();
        let mut start = None;
        for _ in 0..CLAIM_PAGES {
            let out = self
                .client
                .query()
                .table_name(&self.table)
                .index_name("mailbox")
                .key_condition_expression("mbx_pk = :p")
                .expression_attribute_values(":p", s(ready_pk(mailbox, audience)))
                .limit(i32::try_from(max + 8).unwrap_or(i32::MAX))
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| unavailable("Query", e))?;
            for item in out.items() {
                let position = get_s(item, "mbx_sk")?;
                let (visible_ms, key) =
                    parse_ready_sk(position).ok_or_else(|| StoreError::Corrupt(format!("mbx_sk {position:?}")))?;
                if visible_ms > ms(now) {
                    return Ok((candidates, Some(time::from_millis(visible_ms))));
                }
                if candidates.len() < max && get_n(item, "deadline")? >= ms(now) {
                    candidates.push((visible_ms, key.to_owned(), position.to_owned()));
                }
            }
            match out.last_evaluated_key {
                Some(k) => start = Some(k),
                None => break,
            }
        }
        Ok((candidates, None))
    }

    /// Close a live entry: drop its ready/due keys and set its TTL to its retention — DynamoDB
    /// deletes it then, for free (issue 38: no `retain` index entry, no paid delete).
    fn close_expression(ack: bool) -> String {
        let extra = if ack { ", ack_by = :by, ack_note = :note" } else { "" };
        format!(
            "SET closed_at = :at, closed_reason = :why, retain_until = :ret, #ttl = :ttl{extra} \
             REMOVE mbx_pk, mbx_sk, due_pk, due_sk"
        )
    }

    /// Close one entry for `why` at `at` iff `condition` (over `:at` and `values`) holds; the
    /// entry as written, or `None` if the condition refused it.
    async fn close_entry(
        &self,
        pk: String,
        why: &str,
        condition: &str,
        values: &[(&str, &str)],
        at: Timestamp,
        retain_until: Timestamp,
    ) -> R<Option<MailboxEntry>> {
        let mut req = self.client.update_item();
        for (name, value) in values {
            req = req.expression_attribute_values(*name, s(*value));
        }
        let res = req
            .table_name(&self.table)
            .set_key(Some(key(pk, ENTRY_SK)))
            .update_expression(Self::close_expression(false))
            .condition_expression(condition)
            .expression_attribute_names("#ttl", "ttl")
            .expression_attribute_values(":at", n(ms(at)))
            .expression_attribute_values(":why", s(why))
            .expression_attribute_values(":ret", n(ms(retain_until)))
            .expression_attribute_values(":ttl", ttl_secs(retain_until))
            .return_values(ReturnValue::AllNew)
            .send()
            .await;
        match res {
            Ok(out) => Ok(Some(entry_from(&out.attributes.unwrap_or_default())?)),
            Err(e) if is_condition_failure(&e) => Ok(None),
            Err(e) => Err(unavailable("UpdateItem", e)),
        }
    }

    /// Live entries of one audience partition, counted up to `cap` (the depth cap counts the new
    /// entry's own): the read stops there, so it is bounded by the cap, not by the partition
    /// (issue 38).
    pub(crate) async fn live_count(&self, mailbox: &Mailbox, audience: &Audience, now: Timestamp, cap: u32) -> R<u64> {
        let mut pages = self
            .client
            .query()
            .table_name(&self.table)
            .index_name("mailbox")
            .key_condition_expression("mbx_pk = :p")
            .filter_expression("deadline >= :now")
            .expression_attribute_values(":p", s(ready_pk(mailbox, audience)))
            .expression_attribute_values(":now", n(ms(now)))
            .select(Select::Count)
            .into_paginator()
            .send();
        let mut total = 0u64;
        while let Some(page) = pages.next().await {
            total += u64::try_from(page.map_err(|e| unavailable("Query", e))?.count).unwrap_or(0);
            if total >= u64::from(cap) {
                break;
            }
        }
        Ok(total)
    }

    /// Due entry rows (keys only) of the `MBXDUE` family (deadline strictly before `now`),
    /// across its shards.
    async fn due_keys(&self, now: Timestamp, limit: usize) -> R<Vec<Item>> {
        self.due_rows("due", ("due_pk", "due_sk"), DUE_PARTITION, Due::Before(ms(now)), limit).await
    }
}

#[async_trait]
impl MailboxStore for DynamoStore {
    async fn enqueue(&self, entry: &MailboxEntry, depth_cap: u32) -> R<Enqueued> {
        // A soft cap: two racing enqueues may each see room for one.
        if self.live_count(&entry.mailbox, &entry.audience, entry.enqueued_at, depth_cap).await? >= u64::from(depth_cap)
        {
            return Ok(Enqueued::Full);
        }
        // (entry keys are fresh ids: the condition only guards against a replayed write)
        if !self
            .put_if_audited(entry_item(entry, self.shards), Some("attribute_not_exists(pk)"), HashMap::new())
            .await?
        {
            return Err(StoreError::Unavailable(format!("mailbox entry {} exists already", entry.key)));
        }
        Ok(Enqueued::New)
    }

    async fn claim(
        &self,
        mailbox: &Mailbox,
        audiences: &[Audience],
        by: &Claimer,
        now: Timestamp,
        invisible_until: Timestamp,
        max: usize,
    ) -> R<Claim> {
        // Each audience is its own index partition: read each, then claim the oldest first.
        let mut candidates: Vec<(i64, String, String)> = Vec::new(); // (visible_at, key, position read)
        let mut next_visible_at: Option<Timestamp> = None;
        for audience in audiences {
            let (found, next) = self.claim_candidates(mailbox, audience, now, max).await?;
            candidates.extend(found);
            next_visible_at = match (next_visible_at, next) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        candidates.sort();
        candidates.truncate(max);
        let mut entries = Vec::new();
        // §8.7.2: only a drain is delivery evidence; a stream push moves the window alone.
        let mut update = String::from("SET visible_at = :until, mbx_sk = :next, deliveries = deliveries + :one");
        if by.evidence {
            update.push_str(", delivered_at = if_not_exists(delivered_at, :now)");
        }
        if by.session.is_some() {
            update.push_str(", claimant = :who");
        }
        for (_, entry_key, position) in candidates {
            let mut req = self.client.update_item();
            if let Some(who) = &by.session {
                req = req.expression_attribute_values(":who", s(who.as_str()));
            }
            let res = req
                .table_name(&self.table)
                .set_key(Some(key(entry_pk(&mailbox.account, &entry_key), ENTRY_SK)))
                .update_expression(update.as_str())
                .condition_expression("mbx_sk = :seen AND deadline >= :now")
                .expression_attribute_values(":until", n(ms(invisible_until)))
                .expression_attribute_values(":next", s(ready_sk(invisible_until, &entry_key)))
                .expression_attribute_values(":one", n(1))
                .expression_attribute_values(":now", n(ms(now)))
                .expression_attribute_values(":seen", s(position))
                .return_values(ReturnValue::AllNew)
                .send()
                .await;
            match res {
                Ok(out) => entries.push(entry_from(&out.attributes.unwrap_or_default())?),
                // Another drain won it, or it was acked/closed since the index read: skip.
                Err(e) if is_condition_failure(&e) => {}
                Err(e) => return Err(unavailable("UpdateItem", e)),
            }
        }
        if !entries.is_empty() {
            next_visible_at = Some(next_visible_at.map_or(invisible_until, |t| t.min(invisible_until)));
        }
        Ok(Claim { entries, next_visible_at })
    }

    async fn ack_entries(
        &self,
        mailbox: &Mailbox,
        keys: &[String],
        ack: &AckRecord,
        retain_until: Timestamp,
    ) -> R<Vec<MailboxEntry>> {
        let mut acked = Vec::new();
        for entry_key in keys {
            if ma2h_core::audit::scope::current().is_some() {
                // issue 42: the same update in a transaction with the pending records
                if let Some(entry) = self.ack_audited(mailbox, entry_key, ack, retain_until).await? {
                    acked.push(entry);
                }
                continue;
            }
            let res = self
                .client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(key(entry_pk(&mailbox.account, entry_key), ENTRY_SK)))
                .update_expression(Self::close_expression(true))
                .condition_expression(
                    "agent_id = :me AND attribute_exists(mbx_pk) AND deliveries > :zero AND deadline >= :at",
                )
                .expression_attribute_names("#ttl", "ttl")
                .expression_attribute_values(":me", s(mailbox.agent.as_str()))
                .expression_attribute_values(":zero", n(0))
                .expression_attribute_values(":at", n(ms(ack.acked_at)))
                .expression_attribute_values(":why", s("acked"))
                .expression_attribute_values(":ret", n(ms(retain_until)))
                .expression_attribute_values(":ttl", ttl_secs(retain_until))
                .expression_attribute_values(":by", s(ack.by.clone()))
                .expression_attribute_values(
                    ":note",
                    ack.note.clone().map_or(AttributeValue::Null(true), AttributeValue::S),
                )
                .return_values(ReturnValue::AllNew)
                .send()
                .await;
            match res {
                Ok(out) => acked.push(entry_from(&out.attributes.unwrap_or_default())?),
                Err(e) if is_condition_failure(&e) => {}
                Err(e) => return Err(unavailable("UpdateItem", e)),
            }
        }
        Ok(acked)
    }

    async fn bounce_entries(
        &self,
        mailbox: &Mailbox,
        session: &SessionId,
        at: Timestamp,
        retain_until: Timestamp,
        limit: usize,
    ) -> R<Vec<MailboxEntry>> {
        // Live entries of the session's audience partition (closed ones have left the index),
        // page after page: response and receipt entries never bounce and may fill a page.
        let mut bounced = Vec::new();
        let mut start = None;
        loop {
            let out = self
                .client
                .query()
                .table_name(&self.table)
                .index_name("mailbox")
                .key_condition_expression("mbx_pk = :p")
                .expression_attribute_values(":p", s(ready_pk(mailbox, &Audience::Session(session.clone()))))
                .limit(i32::try_from(limit.max(1)).unwrap_or(i32::MAX))
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| unavailable("Query", e))?;
            for item in out.items() {
                let position = get_s(item, "mbx_sk")?;
                let (_, entry_key) =
                    parse_ready_sk(position).ok_or_else(|| StoreError::Corrupt(format!("mbx_sk {position:?}")))?;
                // Acked, or past its deadline (the sweeper closes it as expired): not a bounce.
                let pk = entry_pk(&mailbox.account, entry_key);
                let condition = "attribute_exists(mbx_pk) AND deadline >= :at AND (kind = :dir OR kind = :msg)";
                let values = [(":dir", "directive"), (":msg", "message")];
                if let Some(e) = self.close_entry(pk, "bounced", condition, &values, at, retain_until).await? {
                    bounced.push(e);
                }
            }
            match out.last_evaluated_key {
                Some(k) if bounced.len() < limit => start = Some(k),
                _ => return Ok(bounced),
            }
        }
    }

    async fn get_entry(&self, account: &AccountId, entry_key: &str) -> R<Option<MailboxEntry>> {
        let found =
            self.get(key(entry_pk(account, entry_key), ENTRY_SK)).await?.as_ref().map(entry_from).transpose()?;
        Ok(found.filter(|e| !purged(e, self.clock.now())))
    }

    async fn recent_entries(&self, mailbox: &Mailbox, limit: usize) -> R<Vec<MailboxEntry>> {
        let out = self
            .client
            .query()
            .table_name(&self.table)
            .index_name("inbox")
            .key_condition_expression("list_pk = :p")
            .expression_attribute_values(":p", s(history_pk(mailbox)))
            .scan_index_forward(false)
            .limit(i32::try_from(limit.max(1)).unwrap_or(i32::MAX))
            .send()
            .await
            .map_err(|e| unavailable("Query", e))?;
        let mut entries = Vec::new();
        for row in out.items() {
            // The index row may outlive a purge briefly; a missing item is skipped.
            if let Some(item) = self.get(key(get_s(row, "pk")?.to_owned(), ENTRY_SK)).await? {
                let e = entry_from(&item)?;
                if !purged(&e, self.clock.now()) {
                    entries.push(e);
                }
            }
        }
        Ok(entries)
    }

    async fn close_due_entries(&self, now: Timestamp, retain_until: Timestamp, limit: usize) -> R<Vec<MailboxEntry>> {
        // §14.2: a command entry (directive or message) drained but never acked when its
        // retention lapses is an orphan: `bounced` (prior `delivered`). Every other entry closes
        // at its deadline — tried first, since it is nearly every entry; the orphan write only
        // follows its refusal. `has_expiry` marks an entry that is never an orphan.
        const DEADLINE: &str = "attribute_exists(mbx_pk) AND deadline < :at AND \
             (kind IN (:rsp, :rct) OR attribute_not_exists(delivered_at) OR attribute_exists(has_expiry))";
        const ORPHAN: &str = "attribute_exists(mbx_pk) AND deadline < :at AND \
             NOT (kind IN (:rsp, :rct)) AND attribute_exists(delivered_at) AND attribute_not_exists(has_expiry)";
        let values = [(":rsp", EntryKind::Response.as_str()), (":rct", EntryKind::Receipt.as_str())];
        let mut closed = Vec::new();
        for row in self.due_keys(now, limit).await? {
            let pk = get_s(&row, "pk")?.to_owned();
            if let Some(e) = self.close_entry(pk.clone(), "deadline", DEADLINE, &values, now, retain_until).await? {
                closed.push(e);
            } else if let Some(e) = self.close_entry(pk, "bounced", ORPHAN, &values, now, retain_until).await? {
                closed.push(e);
            }
        }
        Ok(closed)
    }

    /// Closed entries are DynamoDB's TTL's to delete, at their retention (`close_expression`):
    /// nothing to do here. (Entries closed before issue 38 carry a TTL a day past retention and
    /// `retain` keys; the TTL removes both.)
    async fn purge_entries(&self, _now: Timestamp, _limit: usize) -> R<usize> {
        Ok(0)
    }

    async fn touch_presence(&self, mailbox: &Mailbox, at: Timestamp) -> R<()> {
        let res = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(agent_pk(&mailbox.account, &mailbox.agent), PRESENCE_SK)))
            .update_expression("SET last_seen = :t")
            .condition_expression("attribute_not_exists(last_seen) OR last_seen < :t")
            .expression_attribute_values(":t", n(ms(at)))
            .send()
            .await;
        match res {
            Ok(_) => Ok(()),
            // A later activity is already recorded: never move backwards.
            Err(e) if is_condition_failure(&e) => Ok(()),
            Err(e) => Err(unavailable("UpdateItem", e)),
        }
    }

    async fn last_seen(&self, mailbox: &Mailbox) -> R<Option<Timestamp>> {
        let item = self.get(key(agent_pk(&mailbox.account, &mailbox.agent), PRESENCE_SK)).await?;
        Ok(item.as_ref().map(|i| opt_n(i, "last_seen")).transpose()?.flatten().map(time::from_millis))
    }
}

impl DynamoStore {
    /// `ack_entries` for one entry with audit records pending: the ack and the records in one
    /// transaction, then the entry read back (a transaction returns no item).
    async fn ack_audited(
        &self,
        mailbox: &Mailbox,
        entry_key: &str,
        ack: &AckRecord,
        retain_until: Timestamp,
    ) -> R<Option<MailboxEntry>> {
        let names = HashMap::from([("#ttl".to_owned(), "ttl".to_owned())]);
        let values = HashMap::from([
            (":me".to_owned(), s(mailbox.agent.as_str())),
            (":zero".to_owned(), n(0)),
            (":at".to_owned(), n(ms(ack.acked_at))),
            (":why".to_owned(), s("acked")),
            (":ret".to_owned(), n(ms(retain_until))),
            (":ttl".to_owned(), ttl_secs(retain_until)),
            (":by".to_owned(), s(ack.by.clone())),
            (":note".to_owned(), ack.note.clone().map_or(AttributeValue::Null(true), AttributeValue::S)),
        ]);
        let update = self.update_tx(
            key(entry_pk(&mailbox.account, entry_key), ENTRY_SK),
            &Self::close_expression(true),
            Some("agent_id = :me AND attribute_exists(mbx_pk) AND deliveries > :zero AND deadline >= :at"),
            names,
            values,
        )?;
        if !self.transact_audited(vec![update]).await? {
            return Ok(None);
        }
        self.get_entry(&mailbox.account, entry_key).await
    }
}
