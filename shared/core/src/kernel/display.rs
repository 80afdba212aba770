//! Agent-written text shown to a human: its Unicode bidirectional controls made visible.
//!
//! An agent controls titles, bodies, option labels, tags and ids. A right-to-left override
//! (U+202E) inside one reorders what the human reads: `report`, U+202E, `fdp.exe` reads as
//! `reportexe.pdf` (the "Trojan Source" trick). In an approval inbox what the human sees must be
//! what was asked, so every human-facing rendering (the web inbox, mail, Slack) shows each
//! embedding, override and isolate control as a visible marker, e.g. `[U+202E]`. Stored data,
//! the agent's own reads and what a form submits are never changed (the inbox applies it to an
//! HTML page's text only: `http::ui::bidi`). (Found by a black-box pass, session 19.)

use std::borrow::Cow;

/// "5 min", "3 h 10 min", "2 d 4 h" — coarse and readable, for every human-facing time (the
/// inbox, mail); a negative span reads as its size.
pub fn human_duration(d: chrono::Duration) -> String {
    let secs = d.num_seconds().abs();
    let (days, hours, mins) = (secs / 86_400, (secs % 86_400) / 3600, (secs % 3600) / 60);
    match (days, hours, mins) {
        (0, 0, 0) => "under a minute".to_owned(),
        (0, 0, m) => format!("{m} min"),
        (0, h, 0) => format!("{h} h"),
        (0, h, m) => format!("{h} h {m} min"),
        (d, 0, _) => format!("{d} d"),
        (d, h, _) => format!("{d} d {h} h"),
    }
}

/// The explicit directional formatting characters (Unicode TR9 §2: embeddings, overrides,
/// isolates). The implicit marks (LRM, RLM, ALM) cannot reorder other text and stay.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every explicit bidi control replaced by a visible `[U+XXXX]`.
pub fn visible_bidi(text: &str) -> Cow<'_, str> {
    visible_bidi_unless(text, |_, _| false)
}

/// [`visible_bidi`], except where `raw(index, char)` says to keep a control as written. `raw` sees
/// every character in order (so it may track where it is, e.g. inside HTML markup) and its
/// answer counts only for the controls.
pub fn visible_bidi_unless(text: &str, mut raw: impl FnMut(usize, char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(is_bidi_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for (i, c) in text.char_indices() {
        if raw(i, c) || !is_bidi_control(c) {
            out.push(c);
        } else {
            out.push_str(&format!("[U+{:04X}]", u32::from(c)));
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_embeddings_and_isolates_become_visible_and_plain_text_is_untouched() {
        assert_eq!(visible_bidi("report\u{202E}fdp.exe"), "report[U+202E]fdp.exe");
        assert_eq!(visible_bidi("\u{2066}a\u{2069}\u{202A}"), "[U+2066]a[U+2069][U+202A]");
        assert!(matches!(visible_bidi("שלום, deploy\u{200F} ok"), Cow::Borrowed(_)), "RTL text and marks stay");
    }
}
