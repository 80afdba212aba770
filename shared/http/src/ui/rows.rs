//! What an inbox row shows besides its summary, from the message's envelope ([`Glance`]): a
//! preview of the question and its options, whether *this* operator may answer it, the chosen
//! option's label in history — and the time stamps every page writes the same way (relative,
//! then absolute in UTC).

use chrono::Duration;
use ma2h_core::mailbox::inbox::{Allowed, Glance};
use ma2h_protocol::envelope::{Mode, Verb};
use ma2h_protocol::time::{self, Timestamp};
use maud::{Markup, html};
use serde_json::Value;

use super::human_duration;

/// An open message that expires within this is highlighted as "expires soon".
pub const SOON: Duration = Duration::hours(1);
/// Characters of the body a row previews.
const PREVIEW_CHARS: usize = 160;

/// "1 task", "2 tasks".
pub fn plural(n: u64, word: &str) -> String {
    if n == 1 { format!("{n} {word}") } else { format!("{n} {word}s") }
}

/// `2026-12-04 10:00 UTC`.
pub fn absolute(t: Timestamp) -> String {
    t.format("%Y-%m-%d %H:%M UTC").to_string()
}

/// "5 min ago · 2026-12-04 10:00 UTC" (or "in 2 h · …"): relative first, for deciding quickly,
/// and the absolute time beside it, the same on every page.
pub fn stamp(t: Timestamp, now: Timestamp) -> Markup {
    let rel =
        if t > now { format!("in {}", human_duration(t - now)) } else { format!("{} ago", human_duration(now - t)) };
    html! { time datetime=(time::format(t)) title=(time::format(t)) { (rel) } span.abs { " · " (absolute(t)) } }
}

/// "5 min ago" (or "in 2 h"), as text (a tooltip).
pub fn stamp_text(t: Timestamp, now: Timestamp) -> String {
    if t > now { format!("in {}", human_duration(t - now)) } else { format!("{} ago", human_duration(now - t)) }
}

/// The expiry of an open message: "expires in 40 min · …" (highlighted when [`SOON`]), or
/// "expired … ago" once past.
pub fn expiry(e: Timestamp, now: Timestamp) -> Markup {
    html! {
        @if e <= now {
            span.overdue { "expired " (stamp(e, now)) }
        } @else if e - now <= SOON {
            span.soon { "⚠ expires soon: " (stamp(e, now)) }
        } @else {
            span { "expires " (stamp(e, now)) }
        }
    }
}

/// The first words of a Markdown body as the reader sees it rendered (issue 39: code spans and
/// link texts intact, never the raw markup), bounded; the page escapes it.
fn excerpt(markdown: &str) -> String {
    let text = super::markdown::plain_text(markdown);
    if text.chars().count() <= PREVIEW_CHARS {
        return text;
    }
    let cut: String = text.chars().take(PREVIEW_CHARS).collect();
    format!("{}…", cut.trim_end())
}

/// What a row shows of the question: an excerpt of the body (not for a sensitive message) and
/// the choices — option labels, the form's fields, or the task's checklist size.
pub fn preview(g: &Glance) -> Markup {
    let env = &g.envelope;
    let body = env.raw.get("body").and_then(Value::as_str).map(excerpt).filter(|b| !b.is_empty());
    html! {
        @if env.sensitive {
            p.preview.masked { "Sensitive: open it to reveal the content." }
        } @else if let Some(b) = body {
            p.preview { (b) }
        }
        @match &env.verb {
            Verb::Ask(req) => {
                @match req.mode {
                    Mode::Input => {
                        @let names: Vec<&str> = req.schema.as_ref().and_then(|s| s["properties"].as_object())
                            .map(|p| p.keys().map(String::as_str).collect()).unwrap_or_default();
                        p.choices { "Form: " (names.join(", ")) }
                    }
                    _ => {
                        p.choices {
                            @for (i, o) in req.options.iter().enumerate() {
                                @if i > 0 { " · " }
                                span.option { (o.label) }
                            }
                        }
                    }
                }
            }
            Verb::Task(action) => {
                @if !action.checklist.is_empty() { p.choices { "Task · checklist of " (action.checklist.len()) } }
            }
            Verb::Notify => {}
        }
    }
}

/// Whether the logged-in operator may answer this row (§9.1), so they can skip what is not theirs.
pub fn answerable(g: &Glance) -> Markup {
    html! {
        @match &g.allowed {
            Allowed::Resolve(_) => span.can { "✓ you can answer" },
            Allowed::Denied(_) => span.cannot { "view only — not a resolver" },
            Allowed::Closed => {}
        }
    }
}

/// The label of the option an answered select/confirm ask chose (history), with its value.
pub fn chosen(g: &Glance) -> Option<String> {
    if g.envelope.sensitive {
        return None; // §9.6: masked on the message page, so not spelled out in a list either
    }
    let value = g.response.as_ref()?.get("response")?.get("value")?.as_str()?;
    let req = g.envelope.request()?;
    let label = req.label_of(value);
    Some(if label == value { format!("“{label}”") } else { format!("“{label}” ({value})") })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_read_in_the_singular_and_the_plural() {
        assert_eq!(plural(1, "task"), "1 task");
        assert_eq!(plural(0, "ask"), "0 asks");
        assert_eq!(plural(2, "ask"), "2 asks");
    }

    #[test]
    fn an_excerpt_is_plain_text_and_bounded() {
        assert_eq!(excerpt("# Build 7\n\nShip **now**?\n> `quoted`"), "Build 7 Ship now? quoted");
        // issue 39: code spans keep their underscores, a link shows its text, not its markup
        assert_eq!(
            excerpt("Drop `users_legacy`? See [migration PR](https://example.com/pr/1) and *snake_case*."),
            "Drop users_legacy? See migration PR and snake_case."
        );
        assert_eq!(excerpt("- one\n- two\n\n```\nlet a_b = 1;\n```"), "one two let a_b = 1;");
        assert_eq!(excerpt("<b>raw</b> stays text"), "<b>raw</b> stays text", "as the render shows it");
        let long = "word ".repeat(100);
        let e = excerpt(&long);
        assert!(e.ends_with('…') && e.chars().count() <= PREVIEW_CHARS + 1, "{e}");
    }

    #[test]
    fn a_stamp_is_relative_then_absolute_and_soon_is_highlighted() {
        let now = time::parse("2026-12-04T10:00:00Z").unwrap();
        let past = stamp(now - Duration::minutes(5), now).into_string();
        assert!(past.contains("5 min ago") && past.contains("2026-12-04 09:55 UTC"), "{past}");
        assert!(stamp(now + Duration::hours(2), now).into_string().contains("in 2 h"));
        assert!(expiry(now + Duration::minutes(30), now).into_string().contains("expires soon"));
        assert!(!expiry(now + Duration::hours(3), now).into_string().contains("soon"));
        assert!(expiry(now - Duration::minutes(1), now).into_string().contains("overdue"));
    }
}
