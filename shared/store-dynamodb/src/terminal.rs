//! The §7 terminal transition without a transaction.
//!
//! The compare-and-set is one conditional `PutItem` of the message: it is refused unless the
//! stored message is still `open`, unchanged since it was read (`updated_at`), and — unless this
//! is the expiry — not past `expires_at` (§7: an answer at `expires_at` beats the default). The
//! push obligation (`push_status = pending`) is an attribute of that same item, so it is durable
//! in the very write that makes the message terminal (§3.1).
//!
//! Before it, the tombstone is put (unconditionally: any terminal writes the same key, and its
//! only content is the agent id), so no terminal message ever lacks the tombstone that answers
//! 410 once it is purged; a losing transition leaves a tombstone the winner writes anyway.
//!
//! Only a terminal carrying a §8.7.1 `response` entry, or audit records (issue 42), stays a
//! transaction: the entry and the records commit with the terminal, or not at all.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, Put, ReturnValue, TransactWriteItem};
use ma2h_core::messages::records::{MessageRecord, PushTrack, TerminalWrite};
use ma2h_core::ports::StoreError;

use crate::codec::*;
use crate::{DynamoStore, unavailable};

type R<T> = Result<T, StoreError>;

const CAS: &str = "#st = :open AND updated_at = :seen \
                   AND (:is_expiry = :true OR attribute_not_exists(expires_at) OR expires_at >= :at)";

impl DynamoStore {
    /// The terminal record `w` makes of `current`.
    fn terminal_record(current: &MessageRecord, w: &TerminalWrite) -> MessageRecord {
        MessageRecord {
            status: w.status,
            response: Some(w.response.clone()),
            resolution_id: Some(w.resolution_id.clone()),
            updated_at: w.resolved_at,
            retain_until: Some(w.retain_until),
            // An announced push is the queue's (no `next_attempt_at`: no `push` index entry).
            push: if w.push {
                Some(PushTrack {
                    next_attempt_at: (!w.announced).then_some(w.resolved_at),
                    ..PushTrack::pending(w.resolved_at)
                })
            } else {
                current.push.clone()
            },
            ..current.clone()
        }
    }

    fn cas_values(current: &MessageRecord, w: &TerminalWrite) -> HashMap<String, AttributeValue> {
        HashMap::from([
            (":open".to_owned(), s("open")),
            (":seen".to_owned(), n(ms(current.updated_at))),
            (":is_expiry".to_owned(), AttributeValue::Bool(w.is_expiry)),
            (":true".to_owned(), AttributeValue::Bool(true)),
            (":at".to_owned(), n(ms(w.resolved_at))),
        ])
    }

    /// One attempt at the §7 CAS over `current`: the terminal record when it won.
    pub(crate) async fn try_terminal(&self, current: &MessageRecord, w: &TerminalWrite) -> R<Option<MessageRecord>> {
        let next = Self::terminal_record(current, w);
        let (account, id) = (&current.account, &current.id);
        let tomb = tombstone_item(account, id, &current.agent_id, w.retain_until);
        let cas = Put::builder()
            .table_name(&self.table)
            .set_item(Some(message_item(&next, self.shards)))
            .condition_expression(CAS)
            .expression_attribute_names("#st", "status")
            .set_expression_attribute_values(Some(Self::cas_values(current, w)))
            .build()
            .map_err(|e| unavailable("put", e))?;
        // issue 42: with audit records pending, the transaction too (the records commit with it)
        let audited = ma2h_core::audit::scope::current().is_some();
        if w.entry.is_some() || audited {
            // Counted? (A transaction returns no old item; the CAS below makes this read the
            // state it replaces: `updated_at` unchanged means `cnt` unchanged.)
            let counted = self
                .client
                .get_item()
                .table_name(&self.table)
                .set_key(Some(key(msg_pk(account, id), MSG_SK)))
                .projection_expression(crate::counts::COUNTED)
                .consistent_read(true)
                .send()
                .await
                .map_err(|e| unavailable("GetItem", e))?
                .item
                .is_some_and(|i| i.contains_key(crate::counts::COUNTED));
            // §8.7.1: the session's `response` entry commits with the terminal, or not at all.
            let mut items = vec![TransactWriteItem::builder().put(cas).build(), self.put(tomb, None, HashMap::new())?];
            if let Some(entry) = &w.entry {
                items.push(self.put(
                    crate::mailbox::entry_item(entry, self.shards),
                    Some("attribute_not_exists(pk)"),
                    HashMap::new(),
                )?);
            }
            if !self.transact_audited(items).await? {
                return Ok(None);
            }
            if counted {
                self.count_open_message(current, -1).await;
            }
            return Ok(Some(next));
        }
        self.put_if(tomb, None, HashMap::new()).await?;
        // The same conditional put, on its own.
        let res = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(cas.item))
            .set_condition_expression(cas.condition_expression)
            .set_expression_attribute_names(cas.expression_attribute_names)
            .set_expression_attribute_values(cas.expression_attribute_values)
            // The item replaced, free: was it in the open counters (`counts.rs`)?
            .return_values(ReturnValue::AllOld)
            .send()
            .await;
        match res {
            // (No agent open-count decrement: `admission.rs` keeps an upper bound.)
            Ok(out) => {
                if out.attributes.is_some_and(|old| old.contains_key(crate::counts::COUNTED)) {
                    self.count_open_message(current, -1).await;
                }
                Ok(Some(next))
            }
            Err(e) if e.as_service_error().is_some_and(|s| s.is_conditional_check_failed_exception()) => Ok(None),
            Err(e) => Err(unavailable("PutItem", e)),
        }
    }
}
