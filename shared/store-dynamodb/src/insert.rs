//! Inserting a message (§8.1) without a transaction.
//!
//! A transaction bills every item twice (docs/COST.md), so a submit writes its items one by one,
//! in an order that keeps every invariant at every step:
//!
//! 1. **The idempotency claim**, conditionally (`attribute_not_exists(pk) OR expires_at <= :now`).
//!    This write *is* the §8.1 decision: of any number of submits with one key, exactly one
//!    claims it and carries on; every other one is a replay of the claimed message id (or a 409
//!    if its payload differs). There is no window where two submits with one key both succeed.
//! 2. **The message**, conditionally (`attribute_not_exists(pk)`).
//! 3. **The tombstone**, for a message that is terminal on insert (a notify).
//!
//! A submit that stops between 1 and 2 leaves a claim whose message does not exist — and no
//! tombstone, which is how it differs from a message purged after retention (a tombstone only
//! ever follows its message). The agent's retry (§8.1: retry with the same key until a 202 or
//! 409) is a replay with the same payload; it waits briefly for the first writer's message and,
//! if there is still neither message nor tombstone, writes its own record under the claimed id —
//! the agent gets the claimed id either way, and the first submit never answered, so its caller
//! never saw a different one. (§8.1 excludes `agent.session` and `agent.run_id` from the payload
//! comparison: the record written is the replay's, whose session is the one still listening.) A
//! submit that stops between 2 and 3 leaves a notify without its tombstone: once purged it reads
//! 404 instead of 410.
//!
//! An addressed message (§8.7.1) keeps its single transaction: its mailbox entry must commit with
//! it or not at all.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use ma2h_core::mailbox::model::MailboxEntry;
use ma2h_core::messages::records::{IdempotencyRecord, Inserted, Lookup, MessageRecord};
use ma2h_core::ports::{MessageStore, StoreError};
use ma2h_protocol::time::Timestamp;

use crate::codec::*;
use crate::{DynamoStore, unavailable};

type R<T> = Result<T, StoreError>;

/// How long a replay waits for the first writer's message before writing it itself
/// (the first writer puts it a few milliseconds after its claim).
const ORPHAN_WAITS_MS: [u64; 5] = [0, 100, 200, 400, 800];

impl DynamoStore {
    /// `PutItem` under `condition`: `Ok(false)` when the condition failed.
    pub(crate) async fn put_if(
        &self,
        item: Item,
        condition: Option<&str>,
        values: HashMap<String, AttributeValue>,
    ) -> R<bool> {
        let mut req = self.client.put_item().table_name(&self.table).set_item(Some(item));
        if let Some(c) = condition {
            req = req.condition_expression(c);
        }
        if !values.is_empty() {
            req = req.set_expression_attribute_values(Some(values));
        }
        match req.send().await {
            Ok(_) => Ok(true),
            Err(e) if e.as_service_error().is_some_and(|s| s.is_conditional_check_failed_exception()) => Ok(false),
            Err(e) => Err(unavailable("PutItem", e)),
        }
    }

    /// Steps 1–3 of the module docs.
    pub(crate) async fn insert_plain(
        &self,
        m: &MessageRecord,
        claim: Option<&IdempotencyRecord>,
        now: Timestamp,
    ) -> R<Inserted> {
        if let Some(c) = claim {
            let fresh = HashMap::from([(":now".to_owned(), n(ms(now)))]);
            if !self.put_if(claim_item(c), Some("attribute_not_exists(pk) OR expires_at <= :now"), fresh).await? {
                return self.claimed_before(m, c, now).await;
            }
        }
        if !self.put_message_items(m).await? {
            // Only a replay completing this very claim (below) writes a message id it did not mint.
            return match claim {
                Some(c) => Ok(Inserted::Existing(c.clone())),
                None => Err(StoreError::Unavailable(format!("message {} already exists", m.id))),
            };
        }
        Ok(Inserted::New)
    }

    /// Steps 2–3: the message, then its tombstone (when terminal on insert). `false` if the
    /// message id exists already.
    async fn put_message_items(&self, m: &MessageRecord) -> R<bool> {
        // (The open count was raised by `admit`, before: see `admission.rs`.)
        // issue 42: the message's commit carries its audit record (a transaction, then)
        let item = message_item(m, self.shards);
        if !self.put_if_audited(item, Some("attribute_not_exists(pk)"), HashMap::new()).await? {
            return Ok(false);
        }
        if m.status == ma2h_protocol::lifecycle::Status::Open {
            self.count_open_message(m, 1).await;
        }
        if let Some(r) = m.retain_until {
            self.put_if(tombstone_item(&m.account, &m.id, &m.agent_id, r), None, HashMap::new()).await?;
        }
        Ok(true)
    }

    /// The key was claimed by an earlier (or concurrent) submit: a replay — after making sure
    /// the claimed message exists when the payloads match.
    async fn claimed_before(&self, m: &MessageRecord, mine: &IdempotencyRecord, now: Timestamp) -> R<Inserted> {
        let Some(existing) = self.get_claim(&mine.account, &mine.agent_id, &mine.key, now).await? else {
            // Refused, yet no live claim: it expired in between. The caller's retry claims it.
            return Err(StoreError::Unavailable("idempotency claim changed while being claimed (retry)".into()));
        };
        if existing.fingerprint == mine.fingerprint {
            for wait in ORPHAN_WAITS_MS {
                tokio::time::sleep(std::time::Duration::from_millis(wait)).await;
                // Written (or written and purged since: its tombstone says so).
                if self.get_message(&existing.account, &existing.message_id).await? != Lookup::Missing {
                    return Ok(Inserted::Existing(existing));
                }
            }
            // The first writer stopped after its claim: this replay writes the message under the
            // claimed id (a concurrent replay doing the same loses the conditional put: harmless).
            let record = MessageRecord { id: existing.message_id.clone(), ..m.clone() };
            self.put_message_items(&record).await?;
        }
        Ok(Inserted::Existing(existing))
    }

    /// An addressed message and its mailbox entry: one transaction (with the claim and, when
    /// terminal on insert, the tombstone).
    pub(crate) async fn insert_addressed(
        &self,
        m: &MessageRecord,
        claim: Option<&IdempotencyRecord>,
        e: &MailboxEntry,
        cap: u32,
        now: Timestamp,
    ) -> R<Inserted> {
        // A soft cap, as `enqueue`'s; a replay is answered even when the mailbox is full.
        if self.live_count(&e.mailbox, &e.audience, e.enqueued_at, cap).await? >= u64::from(cap) {
            return match claim {
                Some(c) => Ok(self
                    .get_claim(&c.account, &c.agent_id, &c.key, now)
                    .await?
                    .map_or(Inserted::MailboxFull, Inserted::Existing)),
                None => Ok(Inserted::MailboxFull),
            };
        }
        let mut items = vec![
            self.put(message_item(m, self.shards), Some("attribute_not_exists(pk)"), HashMap::new())?,
            // §8.7.1: the addressed message and its mailbox entry commit in one transaction.
            self.put(crate::mailbox::entry_item(e, self.shards), Some("attribute_not_exists(pk)"), HashMap::new())?,
        ];
        if let Some(c) = claim {
            // §8.1: a live claim blocks the write; an expired one is replaced.
            items.push(self.put(
                claim_item(c),
                Some("attribute_not_exists(pk) OR expires_at <= :now"),
                HashMap::from([(":now".to_owned(), n(ms(now)))]),
            )?);
        }
        if let Some(r) = m.retain_until {
            items.push(self.put(tombstone_item(&m.account, &m.id, &m.agent_id, r), None, HashMap::new())?);
        }
        if self.transact_audited(items).await? {
            if m.status == ma2h_protocol::lifecycle::Status::Open {
                self.count_open_message(m, 1).await;
            }
            return Ok(Inserted::New);
        }
        match claim {
            Some(c) => match self.get_claim(&c.account, &c.agent_id, &c.key, now).await? {
                Some(existing) => Ok(Inserted::Existing(existing)),
                None => Err(StoreError::Unavailable("insert cancelled without a live claim (retry)".into())),
            },
            None => Err(StoreError::Unavailable(format!("message {} already exists", m.id))),
        }
    }
}
