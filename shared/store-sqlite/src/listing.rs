//! The operator listing on SQLite: one statement per combination of filters, so the planner
//! picks the index that answers it (account + priority rank + age for the open inbox, with the
//! agent in front when filtered by agent; account + update time for history), keyset pages, and
//! summary columns only — a listed envelope's overflow pages are never read.
//!
//! Public so tests (and operators) can check the plans: [`page_sql`], [`counts_sql`].

use ma2h_core::messages::listing::{ListCursor, ListFilter, ListQuery, MessageSummary, OpenCounts, SearchQuery};
use ma2h_protocol::envelope::{MessageType, Priority};
use ma2h_protocol::ids::{AgentId, MessageId, ResolutionId};
use ma2h_protocol::lifecycle::Status;
use rusqlite::types::Value as Sql;
use rusqlite::{Connection, Row, params, params_from_iter};

use crate::codec::{DbError, RawPush, limit, ms, opt_ts, parsed, ts};

const SUMMARY_COLUMNS: &str = "id, agent_id, kind, status, priority, title, project, tags, created_at, expires_at, \
     updated_at, resolution_id, json_extract(response, '$.response.actor'), \
     json_extract(response, '$.response.comment'), push_status, push_attempts, push_next_at, push_last_error, \
     push_delivered_at";

/// `AND …` clauses for `filter`, appending their parameters to `args`.
fn filter_clauses(filter: &ListFilter, args: &mut Vec<Sql>) -> String {
    let mut sql = String::new();
    let mut clause = |text: &str, v: Sql| {
        sql.push_str(text);
        args.push(v);
    };
    if let Some(a) = &filter.agent_id {
        clause(" AND agent_id = ?", Sql::Text(a.as_str().into()));
    }
    if let Some(k) = filter.kind {
        clause(" AND kind = ?", Sql::Text(k.as_str().into()));
    }
    if let Some(p) = filter.priority {
        clause(" AND prank = ?", Sql::Integer(i64::from(p.rank())));
    }
    if let Some(p) = &filter.project {
        clause(" AND project = ?", Sql::Text(p.clone()));
    }
    if let Some(t) = &filter.tag {
        clause(" AND EXISTS (SELECT 1 FROM json_each(messages.tags) WHERE value = ?)", Sql::Text(t.clone()));
    }
    sql
}

/// The page statement for `q` (asking one row more than the page, to know whether `next` exists).
pub fn page_sql(account: &str, q: &ListQuery) -> (String, Vec<Sql>) {
    let mut args = vec![Sql::Text(account.into())];
    let status = if q.open { "status = 'open'" } else { "status <> 'open'" };
    let mut sql = format!("SELECT {SUMMARY_COLUMNS} FROM messages WHERE account = ? AND {status}");
    sql.push_str(&filter_clauses(&q.filter, &mut args));
    match &q.after {
        Some(ListCursor::Open { rank, created_at, id }) => {
            sql.push_str(" AND (prank, created_at, id) > (?, ?, ?)");
            args.extend([Sql::Integer(i64::from(*rank)), Sql::Integer(ms(*created_at)), Sql::Text(id.to_string())]);
        }
        Some(ListCursor::Done { updated_at, id }) => {
            sql.push_str(" AND (updated_at, id) < (?, ?)");
            args.extend([Sql::Integer(ms(*updated_at)), Sql::Text(id.to_string())]);
        }
        None => {}
    }
    sql.push_str(if q.open {
        " ORDER BY prank, created_at, id LIMIT ?"
    } else {
        " ORDER BY updated_at DESC, id DESC LIMIT ?"
    });
    args.push(Sql::Integer(limit(q.limit.saturating_add(1))));
    (sql, args)
}

/// The counts statement: every open message of the account grouped by priority and type, with
/// how many of each pass `filter`.
pub fn counts_sql(account: &str, filter: &ListFilter) -> (String, Vec<Sql>) {
    let mut args = Vec::new();
    let clauses = filter_clauses(filter, &mut args);
    let matching = if clauses.is_empty() { "1".to_owned() } else { format!("(1{clauses})") };
    args.push(Sql::Text(account.into()));
    let sql = format!(
        "SELECT prank, kind, COUNT(*), COALESCE(SUM({matching}), 0) FROM messages \
         WHERE account = ? AND status = 'open' GROUP BY prank, kind"
    );
    (sql, args)
}

pub(crate) fn page(conn: &Connection, account: &str, q: &ListQuery) -> Result<(Vec<MessageSummary>, bool), DbError> {
    let (sql, args) = page_sql(account, q);
    // Not cached: the text varies with the filters and would evict the hot statements.
    let mut stmt = conn.prepare(&sql)?;
    let mut items = stmt
        .query_map(params_from_iter(args), RawSummary::read)?
        .map(|r| r?.decode())
        .collect::<Result<Vec<_>, _>>()?;
    let more = items.len() > q.limit;
    items.truncate(q.limit);
    Ok((items, more))
}

/// An FTS5 query every term of which must match as a word prefix: each term quoted (a quote
/// inside doubled), so no term is read as FTS syntax.
pub fn fts_query(terms: &[String]) -> String {
    terms.iter().map(|t| format!("\"{}\"*", t.replace('"', "\"\""))).collect::<Vec<_>>().join(" AND ")
}

/// Issue 39: the account's messages matching every term in title or body (FTS5), newest first.
pub(crate) fn search(conn: &Connection, account: &str, q: &SearchQuery) -> Result<Vec<MessageSummary>, DbError> {
    if q.terms.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT {SUMMARY_COLUMNS} FROM messages WHERE account = ?1 AND rowid IN \
         (SELECT rowid FROM message_text WHERE message_text MATCH ?2) ORDER BY created_at DESC, id DESC LIMIT ?3"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(params![account, fts_query(&q.terms), limit(q.limit)], RawSummary::read)?;
    rows.map(|r| r?.decode()).collect()
}

pub(crate) fn counts(conn: &Connection, account: &str, filter: &ListFilter) -> Result<OpenCounts, DbError> {
    let (sql, args) = counts_sql(account, filter);
    let mut stmt = conn.prepare(&sql)?;
    let mut rows = stmt.query(params_from_iter(args))?;
    let mut out = OpenCounts::default();
    while let Some(r) = rows.next()? {
        let (rank, kind, n, matching): (i64, String, i64, i64) = (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?);
        let priority = [Priority::Urgent, Priority::High, Priority::Normal, Priority::Low]
            .into_iter()
            .find(|p| i64::from(p.rank()) == rank)
            .ok_or_else(|| DbError::Corrupt(format!("messages.prank: {rank}")))?;
        let kind = parsed(&kind, "messages.kind", MessageType::parse)?;
        let (n, matching) = (n.max(0) as u64, matching.max(0) as u64);
        out.add(priority, kind, false, n);
        out.matching += matching;
    }
    Ok(out)
}

/// A summary row as stored, before validation.
struct RawSummary {
    id: String,
    agent_id: String,
    kind: String,
    status: String,
    priority: String,
    title: String,
    project: Option<String>,
    tags: Option<String>,
    created_at: i64,
    expires_at: Option<i64>,
    updated_at: i64,
    resolution_id: Option<String>,
    actor: Option<String>,
    comment: Option<String>,
    push: RawPush,
}

impl RawSummary {
    fn read(r: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: r.get(0)?,
            agent_id: r.get(1)?,
            kind: r.get(2)?,
            status: r.get(3)?,
            priority: r.get(4)?,
            title: r.get(5)?,
            project: r.get(6)?,
            tags: r.get(7)?,
            created_at: r.get(8)?,
            expires_at: r.get(9)?,
            updated_at: r.get(10)?,
            resolution_id: r.get(11)?,
            actor: r.get(12)?,
            comment: r.get(13)?,
            push: RawPush::read(r, 14)?,
        })
    }

    fn decode(self) -> Result<MessageSummary, DbError> {
        let what = |field: &str| format!("messages.{field} of {}", self.id);
        let tags = match &self.tags {
            None => Vec::new(),
            Some(t) => serde_json::from_str(t).map_err(|_| DbError::Corrupt(what("tags")))?,
        };
        Ok(MessageSummary {
            agent_id: parsed(&self.agent_id, &what("agent_id"), AgentId::parse)?,
            kind: parsed(&self.kind, &what("kind"), MessageType::parse)?,
            status: parsed(&self.status, &what("status"), Status::parse)?,
            priority: parsed(&self.priority, &what("priority"), Priority::parse)?,
            project: self.project,
            tags,
            created_at: ts(self.created_at, &what("created_at"))?,
            expires_at: opt_ts(self.expires_at, &what("expires_at"))?,
            updated_at: ts(self.updated_at, &what("updated_at"))?,
            resolution_id: self.resolution_id.map(ResolutionId::from_trusted),
            actor: self.actor,
            comment: self.comment,
            push: self.push.decode(what)?,
            title: self.title,
            id: MessageId::from_trusted(self.id),
        })
    }
}

/// The `tags` column for an envelope: a JSON array of its string tags, `NULL` when none.
pub(crate) fn tags_column(envelope: &serde_json::Value) -> Option<String> {
    let tags = ma2h_core::messages::listing::tags_of(envelope);
    (!tags.is_empty()).then(|| serde_json::Value::from(tags).to_string())
}
