//! What the operator listing asks of a store and gets back: filters, a keyset cursor, message
//! summaries (never the envelope, `state` or `client_ref`) and the open counts.
//!
//! Every filter is applied by the store *before* a page is cut, and pages follow a keyset cursor,
//! so no message can hide behind others however many are open (a flood from one agent included).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ma2h_protocol::envelope::{MessageType, Priority};
use ma2h_protocol::ids::{AgentId, MessageId, ResolutionId};
use ma2h_protocol::lifecycle::Status;
use ma2h_protocol::time::{self, Timestamp};

use crate::messages::records::{MessageRecord, PushTrack};

/// The longest `project` or `tag` filter value (characters).
pub const MAX_FILTER_CHARS: usize = 256;

/// Filters of the operator listing; `None` means any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListFilter {
    pub kind: Option<MessageType>,
    pub priority: Option<Priority>,
    pub agent_id: Option<AgentId>,
    /// `agent.project`, exact.
    pub project: Option<String>,
    /// One of the message's `tags`, exact.
    pub tag: Option<String>,
}

impl ListFilter {
    /// Does `s` pass every filter? (The stores evaluate the same rule in their own query language.)
    pub fn matches(&self, s: &MessageSummary) -> bool {
        self.kind.is_none_or(|k| k == s.kind)
            && self.priority.is_none_or(|p| p == s.priority)
            && self.agent_id.as_ref().is_none_or(|a| a == &s.agent_id)
            && self.project.as_ref().is_none_or(|p| s.project.as_ref() == Some(p))
            && self.tag.as_ref().is_none_or(|t| s.tags.contains(t))
    }
}

/// One page request of the operator listing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListQuery {
    /// `true` → open only, most urgent first then oldest; `false` → terminal only (delivered
    /// notifies included), most recently updated first.
    pub open: bool,
    pub filter: ListFilter,
    /// Continue strictly after this position (from the previous page's `next`).
    pub after: Option<ListCursor>,
    pub limit: usize,
}

/// A position in the listing order. Open rows sort by (priority rank, created_at, id) ascending;
/// terminal rows by (updated_at, id) descending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListCursor {
    Open { rank: u8, created_at: Timestamp, id: MessageId },
    Done { updated_at: Timestamp, id: MessageId },
}

impl ListCursor {
    /// The position of `s` in its listing.
    pub fn of(s: &MessageSummary) -> Self {
        if s.status == Status::Open {
            Self::Open { rank: s.priority.rank(), created_at: s.created_at, id: s.id.clone() }
        } else {
            Self::Done { updated_at: s.updated_at, id: s.id.clone() }
        }
    }

    pub fn is_open(&self) -> bool {
        matches!(self, Self::Open { .. })
    }

    /// An opaque token for clients (base64url of `o.{rank}.{ms}.{id}` or `d.{ms}.{id}`).
    pub fn encode(&self) -> String {
        let plain = match self {
            Self::Open { rank, created_at, id } => format!("o.{rank}.{}.{id}", created_at.timestamp_millis()),
            Self::Done { updated_at, id } => format!("d.{}.{id}", updated_at.timestamp_millis()),
        };
        URL_SAFE_NO_PAD.encode(plain)
    }

    /// `None` for anything [`Self::encode`] did not produce.
    pub fn decode(token: &str) -> Option<Self> {
        if token.len() > 200 {
            return None;
        }
        let plain = String::from_utf8(URL_SAFE_NO_PAD.decode(token).ok()?).ok()?;
        let millis = |s: &str| s.parse::<i64>().ok().filter(|m| *m >= 0).map(time::from_millis);
        let parts: Vec<&str> = plain.split('.').collect();
        match parts[..] {
            ["o", rank, created, id] => Some(Self::Open {
                rank: rank.parse::<u8>().ok().filter(|r| *r <= 3)?,
                created_at: millis(created)?,
                id: MessageId::parse(id)?,
            }),
            ["d", updated, id] => Some(Self::Done { updated_at: millis(updated)?, id: MessageId::parse(id)? }),
            _ => None,
        }
    }
}

/// What a listing row shows: small fields only, so a page never loads whole envelopes.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageSummary {
    pub id: MessageId,
    pub agent_id: AgentId,
    pub kind: MessageType,
    pub status: Status,
    pub priority: Priority,
    pub title: String,
    pub project: Option<String>,
    pub tags: Vec<String>,
    pub created_at: Timestamp,
    pub expires_at: Option<Timestamp>,
    pub updated_at: Timestamp,
    pub resolution_id: Option<ResolutionId>,
    /// The Response's attested actor and comment (§6), once terminal.
    pub actor: Option<String>,
    pub comment: Option<String>,
    pub push: Option<PushTrack>,
}

/// `agent.project` of an envelope.
pub fn project_of(envelope: &serde_json::Value) -> Option<String> {
    envelope["agent"]["project"].as_str().map(str::to_owned)
}

/// The string `tags` of an envelope, in order.
pub fn tags_of(envelope: &serde_json::Value) -> Vec<String> {
    envelope["tags"]
        .as_array()
        .map(|t| t.iter().filter_map(|x| x.as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

impl From<&MessageRecord> for MessageSummary {
    fn from(r: &MessageRecord) -> Self {
        let said = |k: &str| r.response.as_ref().and_then(|v| v["response"][k].as_str()).map(str::to_owned);
        Self {
            id: r.id.clone(),
            agent_id: r.agent_id.clone(),
            kind: r.kind,
            status: r.status,
            priority: r.priority,
            title: r.title.clone(),
            project: project_of(&r.envelope),
            tags: tags_of(&r.envelope),
            created_at: r.created_at,
            expires_at: r.expires_at,
            updated_at: r.updated_at,
            resolution_id: r.resolution_id.clone(),
            actor: said("actor"),
            comment: said("comment"),
            push: r.push.clone(),
        }
    }
}

/// One page of the listing. `next` is set when more matching rows may follow (see
/// [`crate::messages::store::MessageStore::list_messages`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListPage {
    pub items: Vec<MessageSummary>,
    pub next: Option<ListCursor>,
}

/// A search of the account's messages (issue 39): every term must match (a prefix of a word;
/// case-insensitive), newest first, at most `limit`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchQuery {
    pub terms: Vec<String>,
    pub limit: usize,
}

/// What a search found. `complete` is false when the store stopped after a bounded read
/// (DynamoDB: the newest messages only) — older matches may exist.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchHits {
    pub items: Vec<MessageSummary>,
    pub complete: bool,
}

/// The account's open messages counted by the store: all of them, by priority and by type, and
/// how many pass the filter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpenCounts {
    pub total: u64,
    pub matching: u64,
    /// Indexed by [`Priority::rank`] (urgent, high, normal, low).
    pub by_priority: [u64; 4],
    /// notify, ask, task.
    pub by_kind: [u64; 3],
    /// `matching` is a lower bound: the store stopped counting a filter it cannot count from
    /// maintained counters after a bounded read (DynamoDB, issue 38).
    pub matching_partial: bool,
}

impl OpenCounts {
    pub fn priority(&self, p: Priority) -> u64 {
        self.by_priority[usize::from(p.rank())]
    }

    pub fn kind(&self, k: MessageType) -> u64 {
        self.by_kind[kind_index(k)]
    }

    /// Count one open message.
    pub fn add(&mut self, priority: Priority, kind: MessageType, matching: bool, n: u64) {
        self.total += n;
        self.by_priority[usize::from(priority.rank())] += n;
        self.by_kind[kind_index(kind)] += n;
        if matching {
            self.matching += n;
        }
    }

    /// Add counts taken over another part of the open set (a listing shard).
    pub fn merge(&mut self, other: &Self) {
        self.total += other.total;
        self.matching += other.matching;
        self.matching_partial |= other.matching_partial;
        for (a, b) in self.by_priority.iter_mut().zip(other.by_priority) {
            *a += b;
        }
        for (a, b) in self.by_kind.iter_mut().zip(other.by_kind) {
            *a += b;
        }
    }
}

fn kind_index(k: MessageType) -> usize {
    match k {
        MessageType::Notify => 0,
        MessageType::Ask => 1,
        MessageType::Task => 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_garbage_is_refused() {
        let id = MessageId::from_parts(1_000, 7);
        for c in [
            ListCursor::Open { rank: 2, created_at: time::from_millis(1_700_000_000_123), id: id.clone() },
            ListCursor::Done { updated_at: time::from_millis(5), id: id.clone() },
        ] {
            assert_eq!(ListCursor::decode(&c.encode()), Some(c));
        }
        for bad in ["", "!!", "bzAuMS4y", &URL_SAFE_NO_PAD.encode("o.9.1.msg_x"), &URL_SAFE_NO_PAD.encode("d.-1.x")] {
            assert_eq!(ListCursor::decode(bad), None, "{bad}");
        }
    }

    #[test]
    fn counts_add_up_by_priority_and_kind() {
        let mut c = OpenCounts::default();
        c.add(Priority::High, MessageType::Ask, true, 2);
        c.add(Priority::Low, MessageType::Task, false, 1);
        assert_eq!((c.total, c.matching), (3, 2));
        assert_eq!((c.priority(Priority::High), c.priority(Priority::Urgent)), (2, 0));
        assert_eq!((c.kind(MessageType::Ask), c.kind(MessageType::Task)), (2, 1));
    }
}
