//! Records ↔ DynamoDB items. Keys and index attributes are derived here, in one place.

use std::collections::HashMap;

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use ma2h_core::kernel::credentials::{CredentialRecord, PrincipalId};
use ma2h_core::mailbox::model::AckRecord;
use ma2h_core::messages::listing::{ListCursor, MessageSummary, project_of, tags_of};
use ma2h_core::messages::records::{IdempotencyRecord, MessageRecord, PushStatus, PushTrack};
use ma2h_core::ports::StoreError;
use ma2h_protocol::envelope::{MessageType, Priority};
use ma2h_protocol::ids::{AccountId, AgentId, HumanId, MessageId, ResolutionId, key_part, key_part_decode};
use ma2h_protocol::lifecycle::Status;
use ma2h_protocol::time::{self, Timestamp};

use crate::shards::Shards;

pub(crate) type Item = HashMap<String, AttributeValue>;

pub(crate) const MSG_SK: &str = "MSG";
pub(crate) const TOMB_SK: &str = "TOMB";
/// Tombstones outlive their message by this long, so a purged id answers 410 (then TTL).
pub(crate) const TOMBSTONE_DAYS: i64 = 365;

// Every caller-chosen component is escaped (`key_part`), so `#` joins are unambiguous whatever
// the ids contain; ordinary ids are unchanged by the escape.

/// The message sweeper partition families (`shards.rs`): open with an `expires_at`, past
/// retention, a push due.
pub(crate) const DUE: &str = "DUE";
pub(crate) const PUSH: &str = "PUSH";

pub(crate) fn msg_pk(account: &AccountId, id: &MessageId) -> String {
    format!("MSG#{}#{id}", key_part(account.as_str()))
}
pub(crate) fn claim_pk(account: &AccountId, agent: &AgentId, key: &str) -> String {
    format!("IDEM#{}#{}#{}", key_part(account.as_str()), key_part(agent.as_str()), key_part(key))
}
pub(crate) fn open_pk(account: &AccountId, agent: &AgentId) -> String {
    format!("OPEN#{}#{}", key_part(account.as_str()), key_part(agent.as_str()))
}
pub(crate) fn agent_pk(account: &AccountId, agent: &AgentId) -> String {
    format!("AGENT#{}#{}", key_part(account.as_str()), key_part(agent.as_str()))
}
/// The `inbox` index partition of one account's open or terminal messages.
pub(crate) fn list_pk(account: &AccountId, open: bool) -> String {
    format!("{}#{}", key_part(account.as_str()), if open { "open" } else { "done" })
}

/// Split `MSG#{account}#{id}` (message ids never contain `#`; the id is the last segment).
pub(crate) fn parse_msg_pk(pk: &str) -> Option<(AccountId, MessageId)> {
    let rest = pk.strip_prefix("MSG#")?;
    let (account, id) = rest.split_once('#')?;
    Some((AccountId::parse(&key_part_decode(account)?)?, MessageId::from_trusted(id.to_owned())))
}

pub(crate) fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}
pub(crate) fn n(v: i64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}
pub(crate) fn ms(t: Timestamp) -> i64 {
    t.timestamp_millis()
}
/// Unix seconds, for the TTL attribute.
/// A TTL attribute for `t`: epoch seconds, rounded up (DynamoDB may delete an item once its TTL
/// second has passed, never before `t`).
pub(crate) fn ttl_secs(t: Timestamp) -> AttributeValue {
    n(t.timestamp() + i64::from(t.timestamp_subsec_nanos() > 0))
}

pub(crate) fn key(pk: String, sk: &str) -> Item {
    HashMap::from([("pk".to_owned(), s(pk)), ("sk".to_owned(), s(sk))])
}

pub(crate) fn corrupt(what: &str) -> StoreError {
    StoreError::Corrupt(format!("dynamodb item: {what}"))
}

pub(crate) fn get_s<'a>(item: &'a Item, k: &str) -> Result<&'a str, StoreError> {
    item.get(k).and_then(|v| v.as_s().ok()).map(String::as_str).ok_or_else(|| corrupt(&format!("missing string `{k}`")))
}
pub(crate) fn opt_s(item: &Item, k: &str) -> Option<String> {
    item.get(k).and_then(|v| v.as_s().ok()).cloned()
}
pub(crate) fn get_n(item: &Item, k: &str) -> Result<i64, StoreError> {
    item.get(k)
        .and_then(|v| v.as_n().ok())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| corrupt(&format!("missing number `{k}`")))
}
pub(crate) fn opt_n(item: &Item, k: &str) -> Result<Option<i64>, StoreError> {
    match item.get(k) {
        None | Some(AttributeValue::Null(_)) => Ok(None),
        Some(_) => get_n(item, k).map(Some),
    }
}
fn opt_ts(item: &Item, k: &str) -> Result<Option<Timestamp>, StoreError> {
    Ok(opt_n(item, k)?.map(time::from_millis))
}
fn json(item: &Item, k: &str) -> Result<Option<serde_json::Value>, StoreError> {
    opt_s(item, k).map(|t| serde_json::from_str(&t).map_err(|_| corrupt(&format!("`{k}` is not JSON")))).transpose()
}
fn parsed<T>(item: &Item, k: &str, f: impl Fn(&str) -> Option<T>) -> Result<T, StoreError> {
    f(get_s(item, k)?).ok_or_else(|| corrupt(&format!("bad `{k}`")))
}

/// The `inbox` index sort key of a listing position: open → most urgent first, then oldest, then
/// id; done → by update time, then id (read descending). Its string order is the listing order.
pub(crate) fn list_sk(c: &ListCursor) -> String {
    match c {
        ListCursor::Open { rank, created_at, id } => format!("{rank}#{:015}#{id}", ms(*created_at)),
        ListCursor::Done { updated_at, id } => format!("{:015}#{id}", ms(*updated_at)),
    }
}

/// The listing position a sort key encodes (the inverse of [`list_sk`]).
pub(crate) fn cursor_from_sk(open: bool, sk: &str) -> Option<ListCursor> {
    let millis = |v: &str| v.parse::<i64>().ok().map(time::from_millis);
    let id = |v: &str| Some(MessageId::from_trusted(v.to_owned()));
    if open {
        let mut parts = sk.splitn(3, '#');
        let rank = parts.next()?.parse().ok()?;
        Some(ListCursor::Open { rank, created_at: millis(parts.next()?)?, id: id(parts.next()?)? })
    } else {
        let (ms, rest) = sk.split_once('#')?;
        Some(ListCursor::Done { updated_at: millis(ms)?, id: id(rest)? })
    }
}

/// A message's listing keys: its shard of the account's open or done partition (issue 38: one
/// partition took every submit and terminal of the account), and its position.
pub(crate) fn list_keys(m: &MessageRecord, shards: Shards) -> (String, String) {
    let position = if m.status == Status::Open {
        ListCursor::Open { rank: m.priority.rank(), created_at: m.created_at, id: m.id.clone() }
    } else {
        ListCursor::Done { updated_at: m.updated_at, id: m.id.clone() }
    };
    let base = list_pk(&m.account, m.status == Status::Open);
    (shards.list_key(&base, &msg_pk(&m.account, &m.id)), list_sk(&position))
}

/// The full item for a message, index attributes included.
pub(crate) fn message_item(m: &MessageRecord, shards: Shards) -> Item {
    let pk = msg_pk(&m.account, &m.id);
    let mut item = key(pk.clone(), MSG_SK);
    let mut put = |k: &str, v: AttributeValue| {
        item.insert(k.to_owned(), v);
    };
    // The account and id are read from `pk` (they are not repeated: item size is billed).
    put("agent_id", s(m.agent_id.as_str()));
    put("kind", s(m.kind.as_str()));
    put("status", s(m.status.as_str()));
    put("priority", s(m.priority.as_str()));
    put("title", s(&m.title));
    // The envelope, the Response and the verbatim state travel as one deflated attribute: item
    // size is what every write of the message bills (1 unit per started KB, docs/COST.md).
    put(BODY, AttributeValue::B(pack(&m.envelope, m.response.as_ref(), m.state_text.as_deref())));
    put("created_at", n(ms(m.created_at)));
    put("updated_at", n(ms(m.updated_at)));
    if let Some(e) = m.expires_at {
        put("expires_at", n(ms(e)));
        if m.status == Status::Open {
            put("due_pk", s(shards.key(DUE, &pk)));
            put("due_sk", n(ms(e)));
        }
    }
    if let Some(r) = &m.resolution_id {
        put("resolution_id", s(r.as_str()));
    }
    if let Some(r) = m.retain_until {
        put("retain_until", n(ms(r)));
        // DynamoDB's TTL deletes the message once retention ends (free; usually within two
        // days); until then the Hub reads it as gone (`Hub::lookup`), and the tombstone keeps
        // answering 410. No `retain` index entry (issue 38): nothing must happen at the deadline.
        put("ttl", ttl_secs(r));
    }
    if let Some(p) = &m.push {
        for (k, v) in push_attrs(p, &pk, shards) {
            put(&k, v);
        }
    }
    if let Some(d) = m.delivered_at {
        put("delivered_at", n(ms(d)));
    }
    if let Some(a) = &m.ack {
        put("ack_by", s(&a.by));
        put("ack_at", n(ms(a.acked_at)));
        if let Some(note) = &a.note {
            put("ack_note", s(note));
        }
    }
    // The listing's summary attributes (projected into the `inbox` index with the fields above).
    if let Some(p) = project_of(&m.envelope) {
        put("project", s(p));
    }
    let tags = tags_of(&m.envelope);
    if !tags.is_empty() {
        // A list, not a set: order and repeats survive, as on SQLite.
        put("tags", AttributeValue::L(tags.into_iter().map(s).collect()));
    }
    let said = |k: &str| m.response.as_ref().and_then(|r| r["response"][k].as_str()).map(str::to_owned);
    for k in ["actor", "comment"] {
        if let Some(v) = said(k) {
            put(k, s(v));
        }
    }
    let (lpk, lsk) = list_keys(m, shards);
    put("list_pk", s(lpk));
    put("list_sk", s(lsk));
    if m.status == Status::Open {
        // In the account's open counters (`counts.rs`) from its insert to its terminal.
        put(crate::counts::COUNTED, n(1));
        if m.kind != MessageType::Notify {
            // §8.6: the agent's open asks/tasks, counted at its depth limit (`admission.rs`).
            put("mbx_pk", s(open_pk_of(&m.account, &m.agent_id)));
            put("mbx_sk", s(m.id.as_str()));
        }
    }
    item
}

/// The `mailbox` index partition of an agent's open asks and tasks (issue 38: the §8.6 recount
/// reads this, not the account's whole open listing). `@` never starts an audience, so it meets
/// no mailbox partition.
pub(crate) fn open_pk_of(account: &AccountId, agent: &AgentId) -> String {
    format!("{}#{}#@open", key_part(account.as_str()), key_part(agent.as_str()))
}

/// A message item's account and id, from its `pk`.
fn message_key(item: &Item) -> Result<(AccountId, MessageId), StoreError> {
    parse_msg_pk(get_s(item, "pk")?).ok_or_else(|| corrupt("bad message pk"))
}

/// A listing summary from an `inbox` index item.
pub(crate) fn summary_from(item: &Item) -> Result<MessageSummary, StoreError> {
    let tags = match item.get("tags") {
        None => Vec::new(),
        Some(v) => v
            .as_l()
            .map_err(|_| corrupt("bad `tags`"))?
            .iter()
            .map(|t| t.as_s().cloned().map_err(|_| corrupt("bad `tags`")))
            .collect::<Result<_, _>>()?,
    };
    Ok(MessageSummary {
        id: message_key(item)?.1,
        agent_id: parsed(item, "agent_id", AgentId::parse)?,
        kind: parsed(item, "kind", MessageType::parse)?,
        status: parsed(item, "status", Status::parse)?,
        priority: parsed(item, "priority", Priority::parse)?,
        title: get_s(item, "title")?.to_owned(),
        project: opt_s(item, "project"),
        tags,
        created_at: time::from_millis(get_n(item, "created_at")?),
        expires_at: opt_ts(item, "expires_at")?,
        updated_at: time::from_millis(get_n(item, "updated_at")?),
        resolution_id: opt_s(item, "resolution_id").map(ResolutionId::from_trusted),
        actor: opt_s(item, "actor"),
        comment: opt_s(item, "comment"),
        push: push_from(item)?,
    })
}

/// The push track's attributes. They are *not* projected into the `inbox` index, so recording a
/// delivery writes the message item only (docs/COST.md); the listing reads the track from the
/// items ([`PUSH_READ`]). Items written before 2026-12-04 hold it in the projected `push_*`
/// attributes instead, read as a fallback and removed by the next `record_push`.
pub(crate) const TRACK_STATUS: &str = "track_status";
const TRACK_ATTEMPTS: &str = "track_attempts";
pub(crate) const TRACK_NEXT_AT: &str = "track_next_at";
const TRACK_ERROR: &str = "track_error";
const TRACK_DELIVERED_AT: &str = "track_delivered_at";
/// The legacy (projected) names, in the same order.
pub(crate) const LEGACY_PUSH: [&str; 5] =
    ["push_status", "push_attempts", "push_next_at", "push_last_error", "push_delivered_at"];
/// What a listing reads of an item to show its push track.
pub(crate) const PUSH_READ: &str = "pk, track_status, track_attempts, track_next_at, track_error, \
                                    track_delivered_at, push_status, push_attempts, push_next_at, push_last_error, \
                                    push_delivered_at";

pub(crate) fn push_from(item: &Item) -> Result<Option<PushTrack>, StoreError> {
    let names = match item.contains_key(TRACK_STATUS) {
        true => [TRACK_STATUS, TRACK_ATTEMPTS, TRACK_NEXT_AT, TRACK_ERROR, TRACK_DELIVERED_AT],
        false => LEGACY_PUSH,
    };
    let Some(st) = opt_s(item, names[0]) else { return Ok(None) };
    Ok(Some(PushTrack {
        status: PushStatus::parse(&st).ok_or_else(|| corrupt("bad push status"))?,
        attempts: u32::try_from(opt_n(item, names[1])?.unwrap_or(0)).map_err(|_| corrupt("push attempts"))?,
        next_attempt_at: opt_ts(item, names[2])?,
        last_error: opt_s(item, names[3]),
        delivered_at: opt_ts(item, names[4])?,
    }))
}

/// The push columns (and the sparse `push` index keys while pending with a due time).
pub(crate) fn push_attrs(p: &PushTrack, pk: &str, shards: Shards) -> Vec<(String, AttributeValue)> {
    let mut v =
        vec![(TRACK_STATUS.to_owned(), s(p.status.as_str())), (TRACK_ATTEMPTS.to_owned(), n(i64::from(p.attempts)))];
    if let Some(t) = p.next_attempt_at {
        v.push((TRACK_NEXT_AT.into(), n(ms(t))));
        if p.status == PushStatus::Pending {
            v.push(("push_pk".into(), s(shards.key(PUSH, pk))));
            v.push(("push_sk".into(), n(ms(t))));
        }
    }
    if let Some(e) = &p.last_error {
        v.push((TRACK_ERROR.into(), s(e.clone())));
    }
    if let Some(t) = p.delivered_at {
        v.push((TRACK_DELIVERED_AT.into(), n(ms(t))));
    }
    v
}

/// The optional push columns `record_push` removes when a track no longer has them (the legacy
/// ones always: the track moves to the new names).
pub(crate) fn push_removable() -> Vec<&'static str> {
    let mut v = vec![TRACK_NEXT_AT, TRACK_ERROR, TRACK_DELIVERED_AT, "push_pk", "push_sk"];
    v.extend(LEGACY_PUSH);
    v
}

/// The attribute holding a message's deflated `[envelope, response, state_text]`.
pub(crate) const BODY: &str = "z";

fn pack(envelope: &serde_json::Value, response: Option<&serde_json::Value>, state: Option<&str>) -> Blob {
    use std::io::Write as _;
    let json = serde_json::to_vec(&(envelope, response, state)).unwrap_or_default();
    let mut z = flate2::write::DeflateEncoder::new(Vec::with_capacity(json.len() / 2), flate2::Compression::best());
    // writing to a Vec cannot fail
    let _ = z.write_all(&json);
    Blob::new(z.finish().unwrap_or_default())
}

type Body = (serde_json::Value, Option<serde_json::Value>, Option<String>);

/// A message's envelope, Response and state: from [`BODY`], or from the plain attributes of an
/// item written before it existed (2026-12-04).
fn unpack(item: &Item) -> Result<Body, StoreError> {
    use std::io::Read as _;
    let Some(z) = item.get(BODY) else {
        return Ok((
            json(item, "envelope")?.ok_or_else(|| corrupt("missing envelope"))?,
            json(item, "response")?,
            opt_s(item, "state_text"),
        ));
    };
    let z = z.as_b().map_err(|_| corrupt("bad body"))?;
    let mut json = Vec::new();
    flate2::read::DeflateDecoder::new(z.as_ref())
        .take(MAX_BODY)
        .read_to_end(&mut json)
        .map_err(|_| corrupt("body does not inflate"))?;
    serde_json::from_slice(&json).map_err(|_| corrupt("body is not a message"))
}

/// Far above what a stored message can hold (an item is at most 400 KB): a bound on inflating.
const MAX_BODY: u64 = 16 << 20;

pub(crate) fn message_from(item: &Item) -> Result<MessageRecord, StoreError> {
    let push = push_from(item)?;
    let (envelope, response, state_text) = unpack(item)?;
    let (account, id) = message_key(item)?;
    Ok(MessageRecord {
        id,
        account,
        agent_id: parsed(item, "agent_id", AgentId::parse)?,
        kind: parsed(item, "kind", MessageType::parse)?,
        status: parsed(item, "status", Status::parse)?,
        priority: parsed(item, "priority", Priority::parse)?,
        title: get_s(item, "title")?.to_owned(),
        envelope,
        state_text,
        created_at: time::from_millis(get_n(item, "created_at")?),
        expires_at: opt_ts(item, "expires_at")?,
        updated_at: time::from_millis(get_n(item, "updated_at")?),
        response,
        resolution_id: opt_s(item, "resolution_id").map(ResolutionId::from_trusted),
        retain_until: opt_ts(item, "retain_until")?,
        push,
        delivered_at: opt_ts(item, "delivered_at")?,
        ack: match (opt_s(item, "ack_by"), opt_ts(item, "ack_at")?) {
            (Some(by), Some(acked_at)) => Some(AckRecord { by, acked_at, note: opt_s(item, "ack_note") }),
            _ => None,
        },
    })
}

pub(crate) fn tombstone_item(account: &AccountId, id: &MessageId, agent: &AgentId, retain_until: Timestamp) -> Item {
    let mut item = key(msg_pk(account, id), TOMB_SK);
    item.insert("agent_id".into(), s(agent.as_str()));
    item.insert("ttl".into(), ttl_secs(retain_until + chrono::Duration::days(TOMBSTONE_DAYS)));
    item
}

pub(crate) fn claim_item(c: &IdempotencyRecord) -> Item {
    let mut item = key(claim_pk(&c.account, &c.agent_id, &c.key), "IDEM");
    item.insert("account".into(), s(c.account.as_str()));
    item.insert("agent_id".into(), s(c.agent_id.as_str()));
    item.insert("key".into(), s(c.key.clone()));
    item.insert("message_id".into(), s(c.message_id.as_str()));
    item.insert("fingerprint".into(), s(c.fingerprint.clone()));
    item.insert("expires_at".into(), n(ms(c.expires_at)));
    item.insert("ttl".into(), ttl_secs(c.expires_at));
    item
}

pub(crate) fn claim_from(item: &Item) -> Result<IdempotencyRecord, StoreError> {
    Ok(IdempotencyRecord {
        account: parsed(item, "account", AccountId::parse)?,
        agent_id: parsed(item, "agent_id", AgentId::parse)?,
        key: get_s(item, "key")?.to_owned(),
        message_id: MessageId::from_trusted(get_s(item, "message_id")?.to_owned()),
        fingerprint: get_s(item, "fingerprint")?.to_owned(),
        expires_at: time::from_millis(get_n(item, "expires_at")?),
    })
}

pub(crate) fn credential_item(c: &CredentialRecord) -> Item {
    let mut item = key(format!("KEY#{}", c.key_hash), "KEY");
    item.insert("id".into(), s(c.id.clone()));
    item.insert("key_hash".into(), s(c.key_hash.clone()));
    item.insert("account".into(), s(c.account.as_str()));
    item.insert("principal_kind".into(), s(c.principal.kind()));
    item.insert("principal_name".into(), s(c.principal.name()));
    if let Some(l) = &c.label {
        item.insert("label".into(), s(l.clone()));
    }
    item.insert("created_at".into(), n(ms(c.created_at)));
    if let Some(t) = c.expires_at {
        item.insert("expires_at".into(), n(ms(t)));
    }
    if let Some(t) = c.revoked_at {
        item.insert("revoked_at".into(), n(ms(t)));
    }
    item
}

pub(crate) fn credential_from(item: &Item) -> Result<CredentialRecord, StoreError> {
    let name = get_s(item, "principal_name")?;
    let principal = match get_s(item, "principal_kind")? {
        "agent" => PrincipalId::Agent(AgentId::parse(name).ok_or_else(|| corrupt("principal_name"))?),
        "operator" => PrincipalId::Operator(HumanId::parse(name).ok_or_else(|| corrupt("principal_name"))?),
        _ => return Err(corrupt("principal_kind")),
    };
    Ok(CredentialRecord {
        id: get_s(item, "id")?.to_owned(),
        account: parsed(item, "account", AccountId::parse)?,
        principal,
        key_hash: get_s(item, "key_hash")?.to_owned(),
        label: opt_s(item, "label"),
        created_at: time::from_millis(get_n(item, "created_at")?),
        expires_at: opt_ts(item, "expires_at")?,
        revoked_at: opt_ts(item, "revoked_at")?,
    })
}
