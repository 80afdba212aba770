//! `ma2h-render`: the inbox's and the mail's one Markdown renderer (issue 39).
//!
//! Message bodies are untrusted Markdown (§4, §9.6). They render to a no-raw-HTML profile:
//!
//! - raw HTML blocks and inline HTML are shown as literal text, never interpreted;
//! - images are never loaded: an image becomes its alt text plus its URL, as text;
//! - links keep only `http`, `https` and `mailto` targets, open in a new tab with
//!   `rel="noopener noreferrer nofollow"`, and carry a visible "↗ external" marker naming the
//!   host; any other target (`javascript:`, `data:`, relative…) loses its link and is flagged.
//!
//! The event stream is rewritten first, then the HTML goes through an `ammonia` allowlist as a
//! second, independent line of defence.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, TagEnd, html};

const SAFE_SCHEMES: [&str; 3] = ["http", "https", "mailto"];

/// Render untrusted Markdown to sanitized HTML.
pub fn render(markdown: &str) -> String {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    let mut events: Vec<Event<'_>> = Vec::new();
    // Links cannot nest in CommonMark: at most one is open; `None` while it is dropped.
    let mut open_link_marker: Option<String> = None;
    for event in Parser::new_ext(markdown, options) {
        match event {
            Event::Html(raw) | Event::InlineHtml(raw) => events.push(Event::Text(raw)),
            Event::Start(Tag::HtmlBlock) => events.push(Event::Start(Tag::Paragraph)),
            Event::End(TagEnd::HtmlBlock) => events.push(Event::End(TagEnd::Paragraph)),
            Event::Start(Tag::Image { dest_url, .. }) => {
                events.push(Event::Html(CowStr::from("<span class=\"img\">[image not loaded: ")));
                events.push(Event::Text(CowStr::from(format!("{dest_url} — "))));
            }
            Event::End(TagEnd::Image) => events.push(Event::Html(CowStr::from("]</span>"))),
            Event::Start(Tag::Link { link_type, dest_url, title, id }) => {
                if safe_url(&dest_url) {
                    open_link_marker = Some(external_marker(&dest_url));
                    events.push(Event::Start(Tag::Link { link_type, dest_url, title, id }));
                } else {
                    open_link_marker = None;
                }
            }
            Event::End(TagEnd::Link) => match open_link_marker.take() {
                Some(marker) => {
                    events.push(Event::End(TagEnd::Link));
                    events.push(Event::Html(CowStr::from(marker)));
                }
                None => events.push(Event::Html(CowStr::from(
                    " <span class=\"ext unsafe\">[link removed: unsafe target]</span>",
                ))),
            },
            other => events.push(other),
        }
    }
    let mut out = String::with_capacity(markdown.len() * 2);
    html::push_html(&mut out, events.into_iter());
    sanitizer().clean(&out).to_string()
}

/// The plain text a reader sees in [`render`]'s output, in one line: code spans and link texts
/// intact, raw HTML as the literal text the render shows, an image as its alt text; block ends
/// and line breaks become single spaces. For list previews (issue 39), escaped by the page.
pub fn plain_text(markdown: &str) -> String {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    let mut out = String::with_capacity(markdown.len());
    for event in Parser::new_ext(markdown, options) {
        match event {
            Event::Text(t) | Event::Code(t) | Event::Html(t) | Event::InlineHtml(t) => out.push_str(&t),
            Event::SoftBreak | Event::HardBreak | Event::Rule | Event::Start(Tag::Item) => out.push(' '),
            // block ends separate words; inline ends (emphasis, links) do not
            Event::End(
                TagEnd::Paragraph
                | TagEnd::Heading(_)
                | TagEnd::BlockQuote(_)
                | TagEnd::CodeBlock
                | TagEnd::HtmlBlock
                | TagEnd::Item
                | TagEnd::TableCell
                | TagEnd::TableRow
                | TagEnd::TableHead,
            ) => out.push(' '),
            _ => {}
        }
    }
    let words: Vec<&str> = out.split(|c: char| c.is_whitespace() || c.is_control()).filter(|w| !w.is_empty()).collect();
    words.join(" ")
}

fn safe_url(url: &str) -> bool {
    url::Url::parse(url.trim()).is_ok_and(|u| SAFE_SCHEMES.contains(&u.scheme()))
}

fn external_marker(url: &str) -> String {
    let target = url::Url::parse(url.trim())
        .ok()
        .map(|u| match u.host_str() {
            Some(h) => h.to_owned(),
            None => u.scheme().to_owned(),
        })
        .unwrap_or_default();
    format!(" <span class=\"ext\">↗ external: {}</span>", escape(&target))
}

/// Minimal HTML text escaping for strings this module writes itself.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn sanitizer() -> &'static ammonia::Builder<'static> {
    static B: OnceLock<ammonia::Builder<'static>> = OnceLock::new();
    B.get_or_init(|| {
        let tags: HashSet<&str> = [
            "p",
            "br",
            "hr",
            "h1",
            "h2",
            "h3",
            "h4",
            "h5",
            "h6",
            "em",
            "strong",
            "del",
            "code",
            "pre",
            "blockquote",
            "ul",
            "ol",
            "li",
            "a",
            "span",
            "table",
            "thead",
            "tbody",
            "tr",
            "th",
            "td",
        ]
        .into_iter()
        .collect();
        let mut attrs: HashMap<&str, HashSet<&str>> = HashMap::new();
        attrs.insert("a", ["href"].into_iter().collect());
        attrs.insert("ol", ["start"].into_iter().collect());
        let mut classes: HashMap<&str, HashSet<&str>> = HashMap::new();
        classes.insert("span", ["ext", "unsafe", "img"].into_iter().collect());
        let mut b = ammonia::Builder::empty();
        b.tags(tags)
            .tag_attributes(attrs)
            .allowed_classes(classes)
            .url_schemes(SAFE_SCHEMES.into_iter().collect())
            .url_relative(ammonia::UrlRelative::Deny)
            .link_rel(Some("noopener noreferrer nofollow"))
            .set_tag_attribute_value("a", "target", "_blank")
            .clean_content_tags(["script", "style"].into_iter().collect());
        b
    })
}

#[cfg(test)]
mod tests {
    use super::render;

    #[test]
    fn script_tags_render_as_inert_text() {
        let out = render("hello <script>alert(1)</script>\n\n<script>\nalert(2)\n</script>");
        assert!(!out.contains("<script"), "{out}");
        assert!(out.contains("&lt;script&gt;"), "the markup is shown, not run: {out}");
    }

    #[test]
    fn img_with_onerror_is_neither_loaded_nor_run() {
        let out = render("<img src=x onerror=alert(1)>\n\nand ![logo](https://evil.example/t.png)");
        assert!(!out.contains("<img"), "{out}");
        assert!(!out.contains("onerror=") || out.contains("&lt;img"), "{out}");
        assert!(out.contains("image not loaded: https://evil.example/t.png"), "{out}");
    }

    #[test]
    fn javascript_links_lose_their_target() {
        let out = render("[click me](javascript:alert(1)) and [d](data:text/html,hi) and <javascript:alert(2)>");
        assert!(!out.contains("href"), "{out}");
        assert!(!out.to_lowercase().contains("javascript:alert(1)"), "{out}");
        assert!(out.contains("click me") && out.contains("link removed"), "{out}");
    }

    #[test]
    fn external_links_are_marked_and_do_not_leak_referrers() {
        let out = render("see [the PR](https://github.com/o/r/pull/1)");
        assert!(out.contains(r#"href="https://github.com/o/r/pull/1""#), "{out}");
        assert!(out.contains("noopener noreferrer nofollow"), "{out}");
        assert!(out.contains(r#"target="_blank""#), "{out}");
        assert!(out.contains("↗ external: github.com"), "{out}");
    }

    #[test]
    fn ordinary_markdown_still_renders() {
        let out = render("# Title\n\n*em* **strong** `code`\n\n- a\n- b");
        for tag in ["<h1>", "<em>", "<strong>", "<code>", "<li>"] {
            assert!(out.contains(tag), "{tag} in {out}");
        }
    }
}
