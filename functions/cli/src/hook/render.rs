//! A hook event → the ask's title and Markdown body: what the tool call would do, in the words a
//! reviewer needs (the command, the file and a diff summary), with secret-looking values
//! replaced and the ask marked sensitive when any were found (§9.6).

use serde_json::Value;

use super::HookEvent;

/// Longest body section shown (a larger command, diff or file is cut with a note).
const MAX_SECTION: usize = 6000;
const MAX_DIFF_LINES: usize = 80;
const TITLE_MAX: usize = 200;
const HIDDEN: &str = "‹hidden›";

pub struct Rendered {
    pub title: String,
    pub body: String,
    /// A secret-looking value was hidden.
    pub sensitive: bool,
}

pub fn render(event: &HookEvent) -> Rendered {
    let input = &event.tool_input;
    let s = |k: &str| input.get(k).and_then(Value::as_str);
    let tool = event.tool_name.as_str();
    let mut found = false;
    let mut clean = |text: &str| {
        let (t, hit) = redact(text);
        found |= hit;
        t
    };
    let (summary, section) = match tool {
        "Bash" | "shell" | "exec_command" => {
            let cmd = clean(s("command").unwrap_or_default());
            (first_line(&cmd), fenced("sh", &cmd))
        }
        "Edit" | "MultiEdit" => {
            let path = s("file_path").unwrap_or("?").to_owned();
            let edits: Vec<(String, String)> = match input.get("edits").and_then(Value::as_array) {
                Some(list) => list
                    .iter()
                    .map(|e| {
                        let g = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or_default();
                        (clean(g("old_string")), clean(g("new_string")))
                    })
                    .collect(),
                None => vec![(clean(s("old_string").unwrap_or_default()), clean(s("new_string").unwrap_or_default()))],
            };
            (format!("edit {path}"), diff_section(&path, &edits))
        }
        "Write" => {
            let path = s("file_path").unwrap_or("?").to_owned();
            let content = clean(s("content").unwrap_or_default());
            let lines = content.lines().count();
            let section = format!("Writes **{lines} line(s)** to `{path}`:\n\n{}", fenced("", &content));
            (format!("write {path}"), section)
        }
        "WebFetch" => {
            let url = clean(s("url").unwrap_or_default());
            (format!("fetch {url}"), format!("URL: <{url}>\n\n{}", clean(s("prompt").unwrap_or_default())))
        }
        _ => {
            let pretty = serde_json::to_string_pretty(input).unwrap_or_default();
            let text = clean(&pretty);
            (tool.to_owned(), fenced("json", &text))
        }
    };
    let mut body = String::new();
    if let Some(why) = s("description").or_else(|| s("justification")) {
        body.push_str(&format!("**Why:** {}\n\n", clean(why)));
    }
    body.push_str(&format!("**Tool:** `{tool}`"));
    if let Some(cwd) = &event.cwd {
        body.push_str(&format!(" · **in** `{cwd}`"));
    }
    if let Some(m) = &event.permission_mode {
        body.push_str(&format!(" · mode `{m}`"));
    }
    body.push_str("\n\n");
    body.push_str(&section);
    if found {
        body.push_str(&format!("\n\n_Values that look like secrets are shown as {HIDDEN}._"));
    }
    let title = truncate(&format!("Allow {tool}: {summary}"), TITLE_MAX);
    Rendered { title, body, sensitive: found }
}

/// A retried hook for the same tool call files the same ask (§8.1 replay), not a second one.
pub fn idempotency_key(event: &HookEvent) -> Option<String> {
    let id = event.tool_use_id.as_deref()?;
    let raw = format!("hook:{}:{id}", event.session_id.as_deref().unwrap_or("-"));
    Some(raw.chars().filter(|c| c.is_ascii_graphic()).take(200).collect())
}

fn first_line(s: &str) -> String {
    let line = s.lines().find(|l| !l.trim().is_empty()).unwrap_or_default().trim();
    if s.trim().lines().count() > 1 { format!("{line} …") } else { line.to_owned() }
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let cut: String = s.chars().take(max - 1).collect();
    format!("{cut}…")
}

/// A fenced code block whose fence is longer than any backtick run inside (so content cannot
/// close it early), cut at [`MAX_SECTION`].
fn fenced(lang: &str, text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let (shown, cut) = if text.len() > MAX_SECTION {
        let mut end = MAX_SECTION;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        (&text[..end], format!("\n_…{} more bytes not shown_", text.len() - end))
    } else {
        (text, String::new())
    };
    format!("{fence}{lang}\n{shown}\n{fence}{cut}")
}

fn diff_section(path: &str, edits: &[(String, String)]) -> String {
    let (mut removed, mut added, mut lines) = (0usize, 0usize, Vec::new());
    for (old, new) in edits {
        removed += old.lines().count();
        added += new.lines().count();
        lines.extend(old.lines().map(|l| format!("- {l}")));
        lines.extend(new.lines().map(|l| format!("+ {l}")));
    }
    let total = lines.len();
    lines.truncate(MAX_DIFF_LINES);
    let mut out = format!(
        "Edits `{path}`: {} change(s), **−{removed} / +{added}** lines.\n\n{}",
        edits.len(),
        fenced("diff", &lines.join("\n"))
    );
    if total > MAX_DIFF_LINES {
        out.push_str(&format!("\n_…{} more diff lines not shown_", total - MAX_DIFF_LINES));
    }
    out
}

/// Known token prefixes (API keys, cloud access keys, chat and forge tokens, MA2H's own keys).
const PREFIXES: [&str; 12] =
    ["sk-", "ghp_", "gho_", "ghs_", "github_pat_", "xoxb-", "xoxp-", "AKIA", "ASIA", "glpat-", "ma2h_", "AIza"];
/// Names whose assigned value is a secret (`NAME=value`, `NAME: value`, `--name value`).
const NAMES: [&str; 7] = ["key", "token", "secret", "password", "passwd", "credential", "auth"];

/// Replace secret-looking values with [`HIDDEN`]: tokens with known prefixes, values assigned to
/// secret-sounding names, bearer credentials and PEM private keys. Returns whether any was found.
pub fn redact(text: &str) -> (String, bool) {
    let mut found = false;
    let mut out = String::with_capacity(text.len());
    if let Some(start) = text.find("-----BEGIN")
        && text[start..].contains("PRIVATE KEY")
    {
        return (format!("{}{HIDDEN} (a private key)", &text[..start]), true);
    }
    let mut hide_next = false;
    for piece in text.split_inclusive(|c: char| c.is_whitespace()) {
        let word = piece.trim_end();
        let tail = &piece[word.len()..];
        let bare = word.trim_matches(|c| matches!(c, '"' | '\'' | '`' | ',' | ';' | '(' | ')'));
        if hide_next && !bare.is_empty() {
            hide_next = false;
            found = true;
            out.push_str(&word.replacen(bare, HIDDEN, 1));
            out.push_str(tail);
            continue;
        }
        let lower = bare.to_ascii_lowercase();
        // NAME=value / NAME:value
        if let Some(i) = bare.find(['=', ':']).filter(|_| !lower.starts_with("http")) {
            let (name, value) = (&lower[..i], &bare[i + 1..]);
            if NAMES.iter().any(|n| name.contains(n)) && value.len() >= 4 && !value.starts_with('$') {
                found = true;
                out.push_str(&word.replacen(value, HIDDEN, 1));
                out.push_str(tail);
                continue;
            }
        }
        // `--password value`, `Bearer value`, `-H "Authorization: Bearer value"`
        let flag = lower.trim_start_matches('-');
        if (lower.starts_with("--") && NAMES.iter().any(|n| flag.contains(n)) && !lower.contains('='))
            || lower == "bearer"
            || lower == "basic"
        {
            hide_next = true;
        }
        if PREFIXES.iter().any(|p| bare.starts_with(p) && bare.len() >= p.len() + 12) {
            found = true;
            out.push_str(&word.replacen(bare, HIDDEN, 1));
            out.push_str(tail);
            continue;
        }
        out.push_str(piece);
    }
    (out, found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(tool: &str, input: Value) -> HookEvent {
        serde_json::from_value(json!({"hook_event_name": "PermissionRequest", "tool_name": tool,
            "tool_input": input, "cwd": "/repo", "session_id": "s1", "tool_use_id": "toolu_1"}))
        .unwrap()
    }

    #[test]
    fn a_bash_call_shows_its_command_and_why() {
        let r = render(&event("Bash", json!({"command": "git push --force origin main", "description": "publish"})));
        assert_eq!(r.title, "Allow Bash: git push --force origin main");
        assert!(r.body.contains("**Why:** publish") && r.body.contains("```sh\ngit push --force origin main\n```"));
        assert!(r.body.contains("`/repo`"));
        assert!(!r.sensitive);
    }

    #[test]
    fn an_edit_shows_a_diff_summary() {
        let r = render(&event("Edit", json!({"file_path": "src/a.rs", "old_string": "a\nb", "new_string": "c"})));
        assert_eq!(r.title, "Allow Edit: edit src/a.rs");
        assert!(r.body.contains("−2 / +1") && r.body.contains("- a\n- b\n+ c"), "{}", r.body);
    }

    #[test]
    fn secrets_are_hidden_in_title_and_body_and_mark_the_ask_sensitive() {
        let cmd = "curl -H \"Authorization: Bearer abcdefghijklmnop\" https://x.example && \
                   AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENG deploy --password hunter22 --token=ghp_0123456789abcdefXYZ";
        let r = render(&event("Bash", json!({"command": cmd})));
        assert!(r.sensitive);
        for secret in ["abcdefghijklmnop", "wJalrXUtnFEMIK7MDENG", "hunter22", "ghp_0123456789abcdefXYZ"] {
            assert!(!r.title.contains(secret) && !r.body.contains(secret), "{secret} leaked: {}", r.body);
        }
        assert!(r.body.contains("https://x.example"), "a plain URL stays: {}", r.body);
        let (pem, hit) = redact("cat <<EOF\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END");
        assert!(hit && !pem.contains("b3Blbn"));
        assert_eq!(redact("cargo test --workspace"), ("cargo test --workspace".into(), false));
        assert!(!redact("echo $API_KEY").1, "a variable reference is not a value");
    }

    #[test]
    fn a_backtick_fence_in_the_content_cannot_close_the_block() {
        let f = fenced("", "a ``` b");
        assert!(f.starts_with("````\n") && f.ends_with("\n````"), "{f}");
    }

    #[test]
    fn long_titles_are_cut_and_keys_are_stable_per_tool_call() {
        let r = render(&event("Bash", json!({"command": "x".repeat(500)})));
        assert_eq!(r.title.chars().count(), TITLE_MAX);
        let e = event("Bash", json!({"command": "ls"}));
        assert_eq!(idempotency_key(&e), idempotency_key(&e));
        assert_eq!(idempotency_key(&e).unwrap(), "hook:s1:toolu_1");
    }
}
