//! Bidi controls in a page's text made visible (`ma2h_core::kernel::display`), leaving what a form
//! submits as written: attribute values (`value=`, a button's value, an `<option>`'s) and
//! `<textarea>` contents. maud escapes `<`, `>` and `"` inside both, so a raw `<` only ever opens
//! the page's own markup and a raw `"` only ever delimits an attribute.

use std::borrow::Cow;

use ma2h_core::kernel::display::visible_bidi_unless;

/// `html` with every bidi control in its text nodes shown as `[U+XXXX]`.
pub(crate) fn visible_in_text(html: &str) -> Cow<'_, str> {
    let (mut in_tag, mut in_value, mut in_textarea) = (false, false, false);
    visible_bidi_unless(html, |i, c| {
        if in_tag {
            match c {
                '"' => in_value = !in_value,
                '>' if !in_value => in_tag = false,
                _ => {}
            }
        } else if c == '<' {
            let tag = html[i..].get(..10).unwrap_or(&html[i..]).to_ascii_lowercase();
            if tag.starts_with("<textarea") {
                in_textarea = true;
            } else if tag.starts_with("</textarea") {
                in_textarea = false;
            }
            in_tag = true;
        }
        in_tag || in_textarea
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_marked_and_form_values_stay_as_written() {
        let rlo = '\u{202E}';
        let page = format!(
            "<h1>a{rlo}b</h1><input value=\"x{rlo}y\"><button value=\"v{rlo}\">l{rlo}</button>\
             <textarea name=\"t\">q{rlo}</textarea><p>{rlo}</p>"
        );
        let want = format!(
            "<h1>a[U+202E]b</h1><input value=\"x{rlo}y\"><button value=\"v{rlo}\">l[U+202E]</button>\
             <textarea name=\"t\">q{rlo}</textarea><p>[U+202E]</p>"
        );
        assert_eq!(visible_in_text(&page), want);
        assert!(matches!(visible_in_text("<p>plain</p>"), Cow::Borrowed(_)));
    }
}
