//! The inbox's search on DynamoDB (issue 39): there is no full-text index here, so a search is
//! a bounded walk of the account's listing (open, then resolved newest first — the `inbox`
//! index pages the listing already reads), matching titles: every term must be the prefix of a
//! word of the title, case-insensitively. At most [`BUDGET`] summaries are read; past that the
//! answer says it is incomplete. Bodies are not searched (they are not in the index).

use ma2h_core::messages::listing::{ListFilter, ListQuery, MessageSummary, SearchHits, SearchQuery};
use ma2h_core::ports::StoreError;
use ma2h_protocol::ids::AccountId;

use crate::DynamoStore;

/// Summaries one search reads at most (10 listing pages).
pub const BUDGET: usize = 1000;
const PAGE: usize = 100;

/// The lower-case alphanumeric words of `text` (the words SQLite's FTS tokenizer sees).
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// Whether every term starts a word of `title`.
pub fn title_matches(title: &str, terms: &[String]) -> bool {
    let words = words(title);
    terms.iter().all(|t| {
        let t = t.to_lowercase();
        words.iter().any(|w| w.starts_with(&t))
    })
}

impl DynamoStore {
    pub(crate) async fn search_titles(&self, account: &AccountId, q: &SearchQuery) -> Result<SearchHits, StoreError> {
        let mut hits: Vec<MessageSummary> = Vec::new();
        let (mut read, mut complete) = (0, true);
        if q.terms.is_empty() {
            return Ok(SearchHits { items: hits, complete });
        }
        'lists: for open in [true, false] {
            let mut after = None;
            loop {
                let query = ListQuery { open, filter: ListFilter::default(), after, limit: PAGE };
                let page = self.list_page(account, &query).await?;
                read += page.items.len();
                hits.extend(page.items.into_iter().filter(|s| title_matches(&s.title, &q.terms)));
                match page.next {
                    None => break,
                    Some(_) if read >= BUDGET => {
                        complete = false;
                        break 'lists;
                    }
                    Some(next) => after = Some(next),
                }
            }
        }
        hits.sort_by(|a, b| b.created_at.cmp(&a.created_at).then_with(|| b.id.cmp(&a.id)));
        hits.truncate(q.limit);
        Ok(SearchHits { items: hits, complete })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_match_word_prefixes_case_insensitively() {
        let terms = |t: &[&str]| t.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert!(title_matches("Drop users_legacy?", &terms(&["USERS", "leg"])));
        assert!(title_matches("Déploy build 412", &terms(&["DÉPLOY", "41"])));
        assert!(!title_matches("Déploy", &terms(&["deploy"])), "accents count (as in the SQLite index)");
        assert!(!title_matches("Drop users_legacy?", &terms(&["sers"])), "a prefix, not a substring");
        assert!(!title_matches("Ship it", &terms(&["ship", "now"])), "every term");
    }
}
