//! The inbox's search (issue 39): an operator's words, parsed here into terms every store reads
//! the same way — the alphanumeric words of the query (`users_legacy` is `users` and `legacy`),
//! each the prefix of a word of a matching message, case-insensitively. SQLite matches titles
//! and bodies (FTS5); DynamoDB titles over the newest messages (`MessageStore::search_messages`).

use crate::kernel::auth::Principal;
use crate::kernel::credentials::PrincipalId;
use crate::messages::listing::{SearchHits, SearchQuery};
use crate::{Hub, HubError};

/// The longest query.
pub const MAX_QUERY_CHARS: usize = 200;
/// Words a query may hold.
pub const MAX_TERMS: usize = 8;
/// Results shown.
pub const LIMIT: usize = 50;

/// What a search found, and how the store searched.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Found {
    pub hits: SearchHits,
    /// Titles and bodies (`true`) or titles only.
    pub full_text: bool,
}

/// The query's terms: its alphanumeric words, in order, without repeats.
pub fn terms(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in query.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        let w = w.to_lowercase();
        if !out.contains(&w) {
            out.push(w);
        }
    }
    out
}

pub async fn search(hub: &Hub, principal: &Principal, query: &str) -> Result<Found, HubError> {
    if !matches!(principal.id, PrincipalId::Operator(_)) {
        return Err(HubError::NotAuthorized("searching the inbox needs an operator credential".into()));
    }
    if query.chars().count() > MAX_QUERY_CHARS {
        return Err(HubError::validation(format!("a search is at most {MAX_QUERY_CHARS} characters")));
    }
    let terms = terms(query);
    if terms.len() > MAX_TERMS {
        return Err(HubError::validation(format!("a search is at most {MAX_TERMS} words")));
    }
    let full_text = hub.messages.full_text_search();
    if terms.is_empty() {
        return Ok(Found { hits: SearchHits { items: Vec::new(), complete: true }, full_text });
    }
    let hits = hub.messages.search_messages(&principal.account, &SearchQuery { terms, limit: LIMIT }).await?;
    Ok(Found { hits, full_text })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_is_its_alphanumeric_words_lowercased_once_each() {
        assert_eq!(terms("Drop `users_legacy`? USERS"), ["drop", "users", "legacy"]);
        assert_eq!(terms("  ***  "), Vec::<String>::new());
        assert_eq!(terms("\"x\" OR y*"), ["x", "or", "y"], "no search syntax survives");
    }
}
