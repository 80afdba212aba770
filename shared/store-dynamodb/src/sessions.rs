//! [`SessionStore`] on DynamoDB (design: `docs/dynamodb.md`, "Sessions").
//!
//! * A session is one item `SESS#{account}#{id}` / `SESSION`. Its indexes, all sparse:
//!   `inbox` (`list_pk = {account}#sess#{agent}`: an agent's sessions by creation), `push`
//!   (`push_pk = SESSACCT#{account}`: the account's, by creation), `mailbox`
//!   (`mbx_pk = {account}#{agent}#@live`, with the lease end in `deadline`: live sessions, for
//!   the cap) and `due` — `SESSDUE` by lease end while active, then `SESSBNC` while its bounce
//!   is owed. Once its bounce is done the session's TTL is set to its retention and DynamoDB
//!   deletes it (issue 38: no `retain` index entry, no paid delete; sessions ended before that
//!   carry `SESSRET` keys and a TTL, and go the same way).
//! * Every transition is one conditional write on "no end yet and the lease not lapsed".
//! * The stop record `STOP#{account}#{agent}` / `STOP` lives apart from session items; a
//!   registration is a transaction that checks it is absent while putting the session, so a
//!   stop and a registration cannot interleave.

use std::collections::HashMap;

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{AttributeValue, ConditionCheck, ReturnValue, TransactWriteItem, Update};
use ma2h_core::mailbox::model::Mailbox;
use ma2h_core::ports::{SessionStore, StoreError};
use ma2h_core::sessions::model::{EndKind, Ended, Registered, SessionEnd, SessionRecord, StopRecord};
use ma2h_protocol::ids::{AccountId, AgentId, SessionId, key_part};
use ma2h_protocol::time::{self, Timestamp};

use crate::codec::*;
use crate::mailbox::is_condition_failure;
use crate::shards::{ACCOUNT_LIST_SHARDS, Due, Shards};
use crate::{DynamoStore, unavailable};

type R<T> = Result<T, StoreError>;

const SESSION_SK: &str = "SESSION";
const STOP_SK: &str = "STOP";
const DUE: &str = "SESSDUE";
const BOUNCE: &str = "SESSBNC";
/// The bounce is done: the session may now go at its retention (DynamoDB's TTL, free). A session
/// ended before issue 38 has its TTL already and no `ttl_later`.
const BOUNCE_DONE: &str =
    "SET bounce_pending = :false, #ttl = if_not_exists(ttl_later, #ttl) REMOVE due_pk, due_sk, ttl_later";

fn session_pk(account: &AccountId, id: &SessionId) -> String {
    format!("SESS#{}#{}", key_part(account.as_str()), id)
}
fn stop_pk(m: &Mailbox) -> String {
    format!("STOP#{}#{}", key_part(m.account.as_str()), key_part(m.agent.as_str()))
}
fn agent_list_pk(account: &AccountId, agent: &AgentId) -> String {
    format!("{}#sess#{}", key_part(account.as_str()), key_part(agent.as_str()))
}
fn account_list_pk(account: &AccountId) -> String {
    format!("SESSACCT#{}", key_part(account.as_str()))
}
fn live_pk(account: &AccountId, agent: &AgentId) -> String {
    format!("{}#{}#@live", key_part(account.as_str()), key_part(agent.as_str()))
}

fn session_item(x: &SessionRecord, shards: Shards) -> Item {
    let pk = session_pk(&x.account, &x.id);
    let mut item = key(pk.clone(), SESSION_SK);
    let created = ms(x.created_at);
    let mut put = |k: &str, v: AttributeValue| {
        item.insert(k.to_owned(), v);
    };
    put("account", s(x.account.as_str()));
    put("agent_id", s(x.agent.as_str()));
    put("id", s(x.id.as_str()));
    put("created_at", n(created));
    // Not `expires_at`: the `inbox` index projects that name (a message's expiry), so every
    // renewal would rewrite the session's index entry (issue 38). Sessions written before keep
    // `expires_at` until their next renewal moves it here (`LEASE`).
    put("lease_until", n(ms(x.expires_at)));
    put("ttl_seconds", n(i64::from(x.ttl_seconds)));
    put("ttl_ms", n(i64::from(x.ttl_seconds) * 1000));
    if let Some(seen) = x.last_seen {
        put("last_seen", n(ms(seen)));
    }
    put("meta", s(serde_json::Value::Object(x.meta.clone()).to_string()));
    put("bounce_pending", AttributeValue::Bool(false));
    put("list_pk", s(agent_list_pk(&x.account, &x.agent)));
    put("list_sk", s(format!("{created:015}#{}", x.id)));
    put("push_pk", s(Shards::new(ACCOUNT_LIST_SHARDS).key(&account_list_pk(&x.account), &pk)));
    put("push_sk", n(created));
    put("mbx_pk", s(live_pk(&x.account, &x.agent)));
    put("mbx_sk", s(x.id.as_str()));
    put("deadline", n(ms(x.expires_at)));
    put("due_pk", s(shards.key(DUE, &pk)));
    put("due_sk", n(ms(x.expires_at)));
    item
}

fn session_from(item: &Item) -> R<SessionRecord> {
    let corrupt = |what: &str| StoreError::Corrupt(format!("dynamodb session item: {what}"));
    let end = match (opt_s(item, "end_kind"), opt_n(item, "ended_at")?) {
        (None, _) => None,
        (Some(k), Some(at)) => {
            Some(SessionEnd { at: time::from_millis(at), kind: EndKind::parse(&k).ok_or_else(|| corrupt("end_kind"))? })
        }
        (Some(_), None) => return Err(corrupt("end_kind without ended_at")),
    };
    let meta = match serde_json::from_str(get_s(item, "meta")?) {
        Ok(serde_json::Value::Object(m)) => m,
        _ => return Err(corrupt("meta")),
    };
    Ok(SessionRecord {
        account: AccountId::parse(get_s(item, "account")?).ok_or_else(|| corrupt("account"))?,
        agent: AgentId::parse(get_s(item, "agent_id")?).ok_or_else(|| corrupt("agent_id"))?,
        id: SessionId::from_trusted(get_s(item, "id")?.to_owned()),
        created_at: time::from_millis(get_n(item, "created_at")?),
        expires_at: time::from_millis(match opt_n(item, "lease_until")? {
            Some(v) => v,
            None => get_n(item, "expires_at")?,
        }),
        ttl_seconds: u32::try_from(get_n(item, "ttl_seconds")?).unwrap_or(u32::MAX),
        last_seen: opt_n(item, "last_seen")?.map(time::from_millis),
        meta,
        end,
        retain_until: opt_n(item, "retain_until")?.map(time::from_millis),
        bounce_pending: matches!(item.get("bounce_pending"), Some(AttributeValue::Bool(true))),
    })
}

/// The terminal update: end stamped, live/due keys swapped for the bounce's; the TTL the session
/// takes once its bounce is done (`bounce_done`) is kept aside in `ttl_later` — a TTL set now
/// could delete a session whose bounce is still owed.
const END_EXPRESSION: &str = "SET end_kind = :kind, ended_at = :at, retain_until = :ret, ttl_later = :ttl, \
     bounce_pending = :true, due_pk = :bp, due_sk = :at REMOVE mbx_pk, mbx_sk";
fn end_condition() -> String {
    format!("attribute_exists(pk) AND attribute_not_exists(end_kind) AND {}", lease_is(">=", ":at"))
}

/// The lease end in an update's values: `lease_until`, or `expires_at` on a session written
/// before issue 38 that has not been renewed since.
const LEASE: &str = "if_not_exists(lease_until, expires_at)";

/// The same in a condition (which takes no `if_not_exists`): the lease end `op` `value`.
fn lease_is(op: &str, value: &str) -> String {
    format!("(lease_until {op} {value} OR (attribute_not_exists(lease_until) AND expires_at {op} {value}))")
}

impl DynamoStore {
    /// Full items for index rows (`pk` of each), in the rows' order; purged ones are skipped.
    async fn sessions_by_keys(&self, rows: &[Item]) -> R<Vec<SessionRecord>> {
        let keys = rows.iter().map(|r| Ok(key(get_s(r, "pk")?.to_owned(), SESSION_SK))).collect::<R<Vec<Item>>>()?;
        let mut found: HashMap<String, Item> = HashMap::new();
        for item in self.batch_get(keys, true, None).await? {
            found.insert(get_s(&item, "pk")?.to_owned(), item);
        }
        let now = self.clock.now();
        let sessions = rows.iter().filter_map(|r| found.get(get_s(r, "pk").ok()?)).map(session_from);
        sessions.filter(|s| !s.as_ref().is_ok_and(|s| purged(s, now))).collect()
    }

    async fn index_rows(
        &self,
        index: &str,
        condition: &str,
        values: &[(&str, AttributeValue)],
        forward: bool,
        limit: usize,
    ) -> R<Vec<Item>> {
        let mut q = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(index)
            .key_condition_expression(condition)
            .scan_index_forward(forward)
            .limit(i32::try_from(limit.max(1)).unwrap_or(i32::MAX));
        for (k, v) in values {
            q = q.expression_attribute_values(*k, v.clone());
        }
        Ok(q.send().await.map_err(|e| unavailable("Query", e))?.items.unwrap_or_default())
    }

    /// Bring a live session's lease-following index keys (`due_sk`, `deadline`) up to its
    /// lease end; nothing once it has ended or lapsed (its keys are the end's then).
    async fn move_lease_keys(&self, pk: &str, now: Timestamp) -> R<()> {
        let res = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(pk.to_owned(), SESSION_SK)))
            .update_expression(format!("SET due_sk = {LEASE}, deadline = {LEASE}"))
            .condition_expression(format!("attribute_not_exists(end_kind) AND {}", lease_is(">=", ":now")))
            .expression_attribute_values(":now", n(ms(now)))
            .send()
            .await;
        match res {
            Ok(_) => Ok(()),
            Err(e) if is_condition_failure(&e) => Ok(()),
            Err(e) => Err(unavailable("UpdateItem", e)),
        }
    }

    fn end_update(&self, account: &AccountId, id: &SessionId, end: SessionEnd, retain_until: Timestamp) -> R<Update> {
        Update::builder()
            .table_name(&self.table)
            .set_key(Some(key(session_pk(account, id), SESSION_SK)))
            .update_expression(END_EXPRESSION)
            .condition_expression(end_condition())
            .set_expression_attribute_values(Some(end_values(end, retain_until, self.shards, &session_pk(account, id))))
            .build()
            .map_err(|e| unavailable("update", e))
    }
}

fn end_values(end: SessionEnd, retain_until: Timestamp, shards: Shards, pk: &str) -> HashMap<String, AttributeValue> {
    [
        (":kind", s(end.kind.as_str())),
        (":at", n(ms(end.at))),
        (":ret", n(ms(retain_until))),
        (":true", AttributeValue::Bool(true)),
        (":bp", s(shards.key(BOUNCE, pk))),
        (":ttl", ttl_secs(retain_until)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

/// An ended session whose retention is over and whose bounce is done: DynamoDB's TTL deletes it
/// some time after, and until then it reads as purged — as on a store that deletes it itself.
fn purged(s: &SessionRecord, now: Timestamp) -> bool {
    !s.bounce_pending && s.retain_until.is_some_and(|r| r <= now)
}

fn stop_item(m: &Mailbox, stop: &StopRecord) -> Item {
    let mut item = key(stop_pk(m), STOP_SK);
    item.insert("stopped_by".into(), s(stop.by.clone()));
    item.insert("stopped_at".into(), n(ms(stop.at)));
    if let Some(sess) = &stop.session {
        item.insert("session_id".into(), s(sess.as_str()));
    }
    item
}

#[async_trait]
impl SessionStore for DynamoStore {
    async fn register(&self, session: &SessionRecord, max_live: u32) -> R<Registered> {
        let mailbox = session.mailbox();
        // A soft cap (like the mailbox depth): two racing registrations may each see room.
        let live = self
            .client
            .query()
            .table_name(&self.table)
            .index_name("mailbox")
            .key_condition_expression("mbx_pk = :p")
            .filter_expression("deadline >= :now")
            .expression_attribute_values(":p", s(live_pk(&session.account, &session.agent)))
            .expression_attribute_values(":now", n(ms(session.created_at)))
            .select(aws_sdk_dynamodb::types::Select::Count)
            .send()
            .await
            .map_err(|e| unavailable("Query", e))?;
        if u32::try_from(live.count).unwrap_or(0) >= max_live {
            // A stopped principal is told so, not "full".
            return Ok(if self.get_stop(&mailbox).await?.is_some() { Registered::Stopped } else { Registered::Full });
        }
        // §16.4.1: the stop is checked in the transaction that inserts.
        let check = ConditionCheck::builder()
            .table_name(&self.table)
            .set_key(Some(key(stop_pk(&mailbox), STOP_SK)))
            .condition_expression("attribute_not_exists(pk)")
            .build()
            .map_err(|e| unavailable("condition", e))?;
        let items = vec![
            TransactWriteItem::builder().condition_check(check).build(),
            self.put(session_item(session, self.shards), Some("attribute_not_exists(pk)"), HashMap::new())?,
        ];
        if self.transact_audited(items).await? { Ok(Registered::New) } else { Ok(Registered::Stopped) }
    }

    async fn get_session(&self, account: &AccountId, id: &SessionId) -> R<Option<SessionRecord>> {
        let found = self.get(key(session_pk(account, id), SESSION_SK)).await?.as_ref().map(session_from).transpose()?;
        Ok(found.filter(|s| !purged(s, self.clock.now())))
    }

    async fn list_sessions(&self, account: &AccountId, agent: Option<&AgentId>, limit: usize) -> R<Vec<SessionRecord>> {
        let rows = match agent {
            Some(agent) => {
                self.index_rows("inbox", "list_pk = :p", &[(":p", s(agent_list_pk(account, agent)))], false, limit)
                    .await?
            }
            None => {
                // every shard of the account's list (and its unsharded partition: sessions
                // registered before it was sharded), read at once, newest first, merged
                let reads =
                    Shards::new(ACCOUNT_LIST_SHARDS).all(&account_list_pk(account)).into_iter().map(|p| async move {
                        self.index_rows("push", "push_pk = :p", &[(":p", s(p))], false, limit).await
                    });
                let mut rows: Vec<Item> =
                    futures_util::future::try_join_all(reads).await?.into_iter().flatten().collect();
                rows.sort_by_key(|r| std::cmp::Reverse(get_n(r, "push_sk").unwrap_or(0)));
                rows.truncate(limit);
                rows
            }
        };
        self.sessions_by_keys(&rows).await
    }

    async fn renew_session(
        &self,
        account: &AccountId,
        agent: &AgentId,
        id: &SessionId,
        now: Timestamp,
    ) -> R<Option<SessionRecord>> {
        // Issue 38: a renewal writes the item only. The index keys that follow the lease — the
        // sweeper's `due_sk` and the live count's `deadline` — move only once less than half the
        // lease is left on them, so an agent renewing on every long-poll moves them once per half
        // lease, not once per poll (each move rewrites two index entries). An agent renewing less
        // often than that leaves a stale `due_sk`: the sweeper re-checks the lease before it
        // expires anything, and moves the key instead (`expire_due_sessions`). The lease is
        // `lease_until`, which no index projects: the renewal rewrites no index entry.
        let res = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(session_pk(account, id), SESSION_SK)))
            .update_expression("SET lease_until = ttl_ms + :now, last_seen = :now REMOVE expires_at")
            .condition_expression(format!(
                "agent_id = :me AND attribute_not_exists(end_kind) AND {}",
                lease_is(">=", ":now")
            ))
            .expression_attribute_values(":me", s(agent.as_str()))
            .expression_attribute_values(":now", n(ms(now)))
            .return_values(ReturnValue::AllNew)
            .send()
            .await;
        let item = match res {
            Ok(out) => out.attributes.unwrap_or_default(),
            Err(e) if is_condition_failure(&e) => return Ok(None),
            Err(e) => return Err(unavailable("UpdateItem", e)),
        };
        let half_lease = opt_n(&item, "ttl_ms")?.unwrap_or(0) / 2;
        if opt_n(&item, "due_sk")?.is_some_and(|due| due < ms(now) + half_lease) {
            self.move_lease_keys(get_s(&item, "pk")?, now).await?;
        }
        Ok(Some(session_from(&item)?))
    }

    async fn end_session(
        &self,
        account: &AccountId,
        id: &SessionId,
        end: SessionEnd,
        retain_until: Timestamp,
        stop: Option<&StopRecord>,
    ) -> R<Ended> {
        let applied = match stop {
            Some(stop) => {
                let Some(current) = self.get_session(account, id).await? else { return Ok(Ended::Missing) };
                let items = vec![
                    TransactWriteItem::builder().update(self.end_update(account, id, end, retain_until)?).build(),
                    self.put(stop_item(&current.mailbox(), stop), None, HashMap::new())?,
                ];
                self.transact_audited(items).await?
            }
            // issue 42: with audit records pending, the same update in a transaction with them
            None if ma2h_core::audit::scope::current().is_some() => {
                let u = self.end_update(account, id, end, retain_until)?;
                self.transact_audited(vec![TransactWriteItem::builder().update(u).build()]).await?
            }
            None => {
                let u = self.end_update(account, id, end, retain_until)?;
                let res = self
                    .client
                    .update_item()
                    .table_name(&self.table)
                    .set_key(Some(u.key))
                    .update_expression(END_EXPRESSION)
                    .condition_expression(end_condition())
                    .set_expression_attribute_values(u.expression_attribute_values)
                    .return_values(ReturnValue::AllNew)
                    .send()
                    .await;
                match res {
                    // The write hands back the record: no read-back.
                    Ok(out) => return Ok(Ended::Applied(session_from(&out.attributes.unwrap_or_default())?)),
                    Err(e) if is_condition_failure(&e) => false,
                    Err(e) => return Err(unavailable("UpdateItem", e)),
                }
            }
        };
        Ok(match (applied, self.get_session(account, id).await?) {
            (_, None) => Ended::Missing,
            (true, Some(rec)) => Ended::Applied(rec),
            (false, Some(rec)) => Ended::AlreadyTerminal(rec),
        })
    }

    async fn expire_due_sessions(&self, now: Timestamp, retention: chrono::Duration, limit: usize) -> R<usize> {
        let rows = self.due_rows("due", ("due_pk", "due_sk"), DUE, Due::Before(ms(now)), limit).await?;
        let mut expired = 0;
        for row in rows {
            let pk = get_s(&row, "pk")?.to_owned();
            let res = self
                .client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(key(pk.clone(), SESSION_SK)))
                .update_expression(format!(
                    "SET end_kind = :kind, ended_at = {LEASE}, retain_until = {LEASE} + :ret, \
                         ttl_later = :ttl, bounce_pending = :true, due_pk = :bp, due_sk = {LEASE} \
                         REMOVE mbx_pk, mbx_sk"
                ))
                .condition_expression(format!("attribute_not_exists(end_kind) AND {}", lease_is("<", ":now")))
                .expression_attribute_values(":kind", s(EndKind::Expired.as_str()))
                .expression_attribute_values(":ret", n(retention.num_milliseconds()))
                .expression_attribute_values(":true", AttributeValue::Bool(true))
                .expression_attribute_values(":bp", s(self.shards.key(BOUNCE, &pk)))
                .expression_attribute_values(":now", n(ms(now)))
                // (the lease end + retention, rounded up: the lease ended before `now`)
                .expression_attribute_values(":ttl", ttl_secs(now + retention))
                .send()
                .await;
            match res {
                Ok(_) => expired += 1,
                // Ended since the index read, or renewed: a renewal leaves `due_sk` behind for up
                // to half a lease (`renew_session`), so a live session found here has its keys
                // moved up to its lease end, once.
                Err(e) if is_condition_failure(&e) => self.move_lease_keys(&pk, now).await?,
                Err(e) => return Err(unavailable("UpdateItem", e)),
            }
        }
        Ok(expired)
    }

    async fn pending_bounces(&self, limit: usize) -> R<Vec<SessionRecord>> {
        let rows = self.due_rows("due", ("due_pk", "due_sk"), BOUNCE, Due::All, limit).await?;
        self.sessions_by_keys(&rows).await
    }

    async fn bounce_done(&self, account: &AccountId, id: &SessionId) -> R<()> {
        // Issue 42: with a lapse's ledger entry pending, the same update in a transaction with
        // it, on the flag still being set (a second sweeper's completion records nothing).
        if ma2h_core::audit::scope::current().is_some() {
            let names = HashMap::from([("#ttl".to_owned(), "ttl".to_owned())]);
            let values = HashMap::from([
                (":false".to_owned(), AttributeValue::Bool(false)),
                (":true".to_owned(), AttributeValue::Bool(true)),
            ]);
            let u = self.update_tx(
                key(session_pk(account, id), SESSION_SK),
                BOUNCE_DONE,
                Some("bounce_pending = :true"),
                names,
                values,
            )?;
            self.transact_audited(vec![u]).await?;
            return Ok(());
        }
        self.client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(session_pk(account, id), SESSION_SK)))
            .update_expression(BOUNCE_DONE)
            .condition_expression("attribute_exists(pk)")
            .expression_attribute_names("#ttl", "ttl")
            .expression_attribute_values(":false", AttributeValue::Bool(false))
            .send()
            .await
            .map(|_| ())
            .or_else(|e| if is_condition_failure(&e) { Ok(()) } else { Err(unavailable("UpdateItem", e)) })
    }

    /// Ended sessions are DynamoDB's TTL's to delete, from when their bounce is done
    /// (`bounce_done`): nothing to do here.
    async fn purge_sessions(&self, _now: Timestamp, _limit: usize) -> R<usize> {
        Ok(0)
    }

    async fn put_stop(&self, mailbox: &Mailbox, stop: &StopRecord) -> R<()> {
        self.put_if_audited(stop_item(mailbox, stop), None, HashMap::new()).await.map(|_| ())
    }

    async fn get_stop(&self, mailbox: &Mailbox) -> R<Option<StopRecord>> {
        let Some(item) = self.get(key(stop_pk(mailbox), STOP_SK)).await? else { return Ok(None) };
        Ok(Some(StopRecord {
            by: get_s(&item, "stopped_by")?.to_owned(),
            at: time::from_millis(get_n(&item, "stopped_at")?),
            session: opt_s(&item, "session_id").map(SessionId::from_trusted),
        }))
    }

    async fn lift_stop(&self, mailbox: &Mailbox) -> R<bool> {
        self.delete_key_audited(stop_pk(mailbox), STOP_SK).await
    }
}
