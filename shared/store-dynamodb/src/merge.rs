//! The k-way merge behind a sharded listing (issue 38). An account's open and done listings are
//! split over shards (`{account}#open#017`) so that no index partition takes every submit; a page
//! is the first entries of the union, in the listing order. Every shard is read with the same
//! key condition (the cursor is a position in the listing order, not a shard's token, so it needs
//! no per-shard state), a few entries each; the merge then decides which shards must be read
//! further before the page is known — only those whose last entry read comes before the page's
//! end. Pure: `listing.rs` does the reading.

use ma2h_core::messages::listing::MessageSummary;

/// How one shard's reading ended so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum End {
    /// It returned all it was asked for; more may follow its last entry.
    More,
    /// The shard has nothing after its last entry.
    Ended,
    /// Its scan budget ran out at this sort key (every entry up to it has been seen).
    Cut(String),
}

/// One shard of a listing: what was read from it, in listing order, and where reading stopped.
#[derive(Debug, Clone)]
pub(crate) struct Lane {
    pub items: Vec<(String, MessageSummary)>,
    pub end: End,
}

impl Lane {
    /// Up to where this shard is known: every entry of it before this key has been read.
    /// `None`: all of it.
    fn frontier(&self) -> Option<&str> {
        match &self.end {
            End::Ended => None,
            End::Cut(sk) => Some(sk),
            End::More => self.items.last().map(|(sk, _)| sk.as_str()),
        }
    }
}

/// What the merge needs next.
#[derive(Debug, PartialEq)]
pub(crate) enum Step {
    /// The page: at most `want` entries, and the cut position when a shard's scan budget ended
    /// it early.
    Page { items: Vec<MessageSummary>, cut_at: Option<String> },
    /// Read these lanes further (after their last entry) before the page is known; the page
    /// still lacks `missing` final entries.
    Read { lanes: Vec<usize>, missing: usize },
}

/// `a` comes before `b` in the listing order (ascending for open, descending for done).
fn before(a: &str, b: &str, forward: bool) -> bool {
    if forward { a < b } else { a > b }
}

/// Decide the page from what the lanes hold, or which lanes to read further.
pub(crate) fn settle(lanes: &[Lane], forward: bool, want: usize) -> Step {
    let frontier = lanes.iter().filter_map(Lane::frontier).reduce(|a, b| if before(b, a, forward) { b } else { a });
    let mut all: Vec<&(String, MessageSummary)> = lanes.iter().flat_map(|l| l.items.iter()).collect();
    all.sort_by(|a, b| if forward { a.0.cmp(&b.0) } else { b.0.cmp(&a.0) });
    // Entries at or before the frontier are final: no shard can hold one before them unread.
    let safe = match frontier {
        None => all.len(),
        Some(f) => all.iter().take_while(|(sk, _)| !before(f, sk, forward)).count(),
    };
    let page = |n: usize, cut_at: Option<String>| Step::Page {
        items: all.iter().take(n.min(want)).map(|(_, s)| s.clone()).collect(),
        cut_at,
    };
    if safe >= want || frontier.is_none() {
        return page(safe, None);
    }
    // The shards that may still hold an entry before the page's end: the `want`-th entry read so
    // far, or the first cut (nothing past a cut may be listed on this page).
    let first_cut = lanes
        .iter()
        .filter_map(|l| match &l.end {
            End::Cut(sk) => Some(sk.as_str()),
            _ => None,
        })
        .reduce(|a, b| if before(b, a, forward) { b } else { a });
    let limit = [all.get(want - 1).map(|(sk, _)| sk.as_str()), first_cut]
        .into_iter()
        .flatten()
        .reduce(|a, b| if before(b, a, forward) { b } else { a });
    let read: Vec<usize> = (0..lanes.len())
        .filter(|&i| lanes[i].end == End::More)
        .filter(|&i| match (lanes[i].frontier(), limit) {
            (Some(f), Some(l)) => before(f, l, forward),
            (Some(_), None) => true,
            (None, _) => false,
        })
        .collect();
    match read.is_empty() {
        // The earliest frontier is a cut: the page ends there, short, and the next continues.
        true => page(safe, frontier.map(str::to_owned)),
        false => Step::Read { lanes: read, missing: want - safe },
    }
}

/// How many entries to ask each of `lanes` shards for at first: a few each when there are many
/// (hashing spreads the page over them), the whole page when there are few.
pub(crate) fn first_read(want: usize, lanes: usize) -> usize {
    if lanes <= 5 { want } else { (want.div_ceil(lanes - 1) + 2).min(want) }
}

#[cfg(test)]
mod tests {
    use ma2h_store_contract::fixtures::{account, agent, ask, at};

    use super::*;

    fn entry(sk: &str) -> (String, MessageSummary) {
        let m = ask(&account("acme"), &agent("bot"), at(1));
        (sk.to_owned(), MessageSummary { title: sk.to_owned(), ..MessageSummary::from(&m) })
    }

    fn lane(keys: &[&str], end: End) -> Lane {
        Lane { items: keys.iter().map(|k| entry(k)).collect(), end }
    }

    fn titles(step: &Step) -> (Vec<String>, Option<String>) {
        match step {
            Step::Page { items, cut_at } => (items.iter().map(|s| s.title.clone()).collect(), cut_at.clone()),
            Step::Read { lanes, .. } => panic!("expected a page, got a read of {lanes:?}"),
        }
    }

    #[test]
    fn ended_shards_merge_in_listing_order() {
        let lanes = [lane(&["b", "e"], End::Ended), lane(&["a", "d"], End::Ended), lane(&[], End::Ended)];
        assert_eq!(titles(&settle(&lanes, true, 3)), (vec!["a".into(), "b".into(), "d".into()], None));
        let back = [lane(&["e", "b"], End::Ended), lane(&["d", "a"], End::Ended)];
        assert_eq!(titles(&settle(&back, false, 10)), (vec!["e".into(), "d".into(), "b".into(), "a".into()], None));
    }

    #[test]
    fn a_shard_whose_last_entry_comes_before_the_page_end_is_read_further() {
        // Lane 0 stopped at "b": it may hold "c" — the page of 3 (a, b, then c or d?) is unknown.
        let lanes = [lane(&["a", "b"], End::More), lane(&["d", "e", "f"], End::More), lane(&["g"], End::Ended)];
        assert_eq!(settle(&lanes, true, 3), Step::Read { lanes: vec![0], missing: 1 });
        // Once lane 0 has ended at "b", the page is a, b, d — lane 1 is known up to "f".
        let lanes = [lane(&["a", "b"], End::Ended), lane(&["d", "e", "f"], End::More)];
        assert_eq!(titles(&settle(&lanes, true, 3)), (vec!["a".into(), "b".into(), "d".into()], None));
    }

    #[test]
    fn entries_past_an_unread_gap_are_not_listed() {
        // Lane 1 is known only up to "c": "x" in lane 0 cannot be listed before lane 1 is read on.
        let lanes = [lane(&["a", "x"], End::Ended), lane(&["c"], End::More)];
        assert_eq!(settle(&lanes, true, 3), Step::Read { lanes: vec![1], missing: 1 });
    }

    #[test]
    fn a_cut_shard_ends_the_page_short_at_its_cut() {
        let lanes = [lane(&["a"], End::Cut("c".into())), lane(&["b", "d", "e"], End::Ended)];
        assert_eq!(titles(&settle(&lanes, true, 3)), (vec!["a".into(), "b".into()], Some("c".into())));
        // A cut after the page's end does not shorten it.
        let lanes = [lane(&["a"], End::Cut("x".into())), lane(&["b", "d", "e"], End::Ended)];
        assert_eq!(titles(&settle(&lanes, true, 3)), (vec!["a".into(), "b".into(), "d".into()], None));
    }

    #[test]
    fn the_done_listing_merges_newest_first() {
        let lanes = [lane(&["9", "5"], End::More), lane(&["8", "7", "6"], End::More)];
        // Lane 0 is known down to "5", lane 1 down to "6": 9, 8, 7 are final.
        assert_eq!(titles(&settle(&lanes, false, 3)), (vec!["9".into(), "8".into(), "7".into()], None));
        let lanes = [lane(&["9", "2"], End::Ended), lane(&["8"], End::More)];
        assert_eq!(settle(&lanes, false, 3), Step::Read { lanes: vec![1], missing: 1 });
    }

    #[test]
    fn many_shards_are_first_asked_for_a_few_entries_each() {
        assert_eq!(first_read(51, 3), 51);
        assert_eq!(first_read(51, 129), 3);
        assert_eq!(first_read(2, 129), 2);
    }
}
