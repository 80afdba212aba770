//! The answer form and `POST /inbox/{id}/resolve`. The form is plain HTML (works without JavaScript): select
//! asks offer each option's label and description, confirm asks show their two options as
//! buttons, input asks get fields generated from the flat schema (§5.2), tasks get their checklist
//! as toggles. `permissions` decide which buttons appear. The POST checks the CSRF token, turns
//! the form into the §8.8 JSON and calls the same `resolve` use case as the API, with the
//! Hub-attested actor `human:<id>`; its validation errors come back as form messages.

use std::collections::HashMap;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use ma2h_core::mailbox::inbox;
use ma2h_core::mailbox::inbox::{Affordances, InboxMessage};
use ma2h_core::messages::resolve;
use ma2h_core::passkeys::ceremony::{self, Refused, Started};
use ma2h_core::{Hub, HubError};
use ma2h_protocol::ProtocolError;
use ma2h_protocol::envelope::{MessageType, Mode};
use maud::{Markup, html};
use serde_json::{Map, Value, json};

use super::message::{self, FormState, sensitive_fields};
use super::session::Session;
use super::{csrf_refused, form_get, form_pairs, notice};
use crate::extract::{Body, Path};

const FIELD_PREFIX: &str = "field.";

/// The form for an open message this operator may resolve.
/// `step_up`: where a policy asks for a passkey (issue 41), the ceremony to run before an
/// answer is posted (or why passkeys cannot work here).
pub fn form(
    view: &InboxMessage,
    aff: Affordances,
    csrf: &str,
    state: &FormState,
    step_up: Option<&Result<Started, String>>,
) -> Markup {
    let env = &view.envelope;
    let id = view.record.id.as_str();
    let chosen = state.values.get("value").map(String::as_str);
    let step_options = step_up.and_then(|s| s.as_ref().ok()).map(|s| s.options.as_str());
    let step_rp = step_up.and_then(|s| s.as_ref().ok()).map(|s| s.rp.as_str());
    html! {
        h2 #answer { "Answer" }
        form method="post" action=(format!("/inbox/{id}/resolve")) novalidate data-step-up=[step_options] data-rp=[step_rp] {
            input type="hidden" name="csrf" value=(csrf);
            @match step_up {
                Some(Ok(s)) => {
                    input type="hidden" name="passkey_state" value=(s.state);
                    input type="hidden" name="passkey_response" value="";
                    p.notice role="note" #step-up-note {
                        "A policy asks for your passkey: answering opens your device's passkey prompt. A decline needs none."
                    }
                    p.notice.error data-passkey-status role="alert" hidden {}
                }
                Some(Err(why)) => {
                    p.notice.error role="note" { "A policy asks for a passkey to answer this, and passkeys cannot be used here: " (why) }
                }
                None => {}
            }
            // rendered only once a sensitive message's content is shown (message::render)
            @if env.sensitive { input type="hidden" name="revealed" value="1"; }
            @if let Some(e) = &state.error { p.notice.error role="alert" #form-error { (super::prose(e)) } }
            @if let (Some(req), true) = (env.request(), aff.answer) {
                @match req.mode {
                    Mode::Select => {
                        @let group_err = state.field_errors.get("value");
                        fieldset.invalid[group_err.is_some()] aria-invalid=[group_err.map(|_| "true")]
                            aria-describedby=[group_err.map(|_| "value-err")] {
                            legend { "Choose one" }
                            @if let Some(e) = group_err { p.error #value-err { (super::prose(e)) } }
                            @for (i, o) in req.options.iter().enumerate() {
                                label.choice for=(format!("opt-{i}")) {
                                    input #(format!("opt-{i}")) type="radio" name="value" value=(o.value)
                                        checked[chosen == Some(o.value.as_str())];
                                    span { strong { (o.label) }
                                        @if let Some(d) = &o.description { br; span.hint { (d) } } }
                                }
                            }
                        }
                    }
                    Mode::Input => {
                        @let schema = req.schema.clone().unwrap_or(Value::Null);
                        (input_fields(&schema, state, locked(req)))
                    }
                    Mode::Confirm => {}
                }
            }
            @if let Some(action) = env.action() {
                fieldset {
                    legend { "Checklist" }
                    @for (i, item) in action.checklist.iter().enumerate() {
                        @let done = if state.values.is_empty() { item.done } else { state.values.contains_key(&format!("check.{i}")) };
                        label.choice for=(format!("check-{i}")) {
                            input #(format!("check-{i}")) type="checkbox" name=(format!("check.{i}")) value="on" checked[done];
                            span { (item.text) }
                        }
                    }
                }
            }
            label for="comment" { "Comment " span.hint { "(optional, sent to the agent)" } }
            textarea #comment name="comment" { (state.values.get("comment").map(String::as_str).unwrap_or("")) }
            // Issue 40: a keyed ask's answer may stand for later asks of the same kind.
            @if let Some(key) = grant_key_offered(view) {
                label for="grant" { "Remember this answer " span.hint { "(later asks from " (view.record.agent_id) " for “" (key) "”)" } }
                select #grant name="grant" {
                    option value="once" selected[state.values.get("grant").is_none_or(|v| v == "once")] { "just this once" }
                    @for (v, l) in [("15m", "for 15 minutes"), ("60m", "for 1 hour"), ("480m", "for 8 hours")] {
                        option value=(v) selected[state.values.get("grant").is_some_and(|x| x == v)] { (l) }
                    }
                    @if env.agent.session.is_some() { option value="session" { "for this session" } }
                    @if env.agent.project.is_some() { option value="project" { "for this project" } }
                    option value="agent" { "for this agent, until revoked" }
                }
            }
            label.choice.then for="then-next" {
                input #then-next type="checkbox" name="then" value="next"
                    checked[state.next || state.values.get("then").is_some_and(|v| v == "next")];
                span { "Then open the next message I can answer" }
            }
            div.actions {
                @if let (Some(req), true) = (env.request(), aff.answer) {
                    @if req.mode == Mode::Confirm {
                        @for o in &req.options {
                            button type="submit" name="act" value=(format!("answer:{}", o.value)) { (o.label) }
                        }
                    } @else {
                        @if proposal(req).is_some() && req.permissions.allow_accept {
                            button type="submit" name="act" value="accept" { "Accept as proposed" }
                        }
                        @if !locked(req) {
                            button.secondary[proposal(req).is_some()] type="submit" name="act" value="answered" {
                                @if proposal(req).is_some() { "Submit edited answer" } @else { "Submit answer" }
                            }
                        }
                    }
                }
                @if aff.decline { button.danger type="submit" name="act" value="declined" { "Decline" } }
                @if aff.complete { button type="submit" name="act" value="completed" { "Mark completed" } }
                @if aff.dismiss { button.danger type="submit" name="act" value="dismissed" { "Dismiss" } }
            }
            @if aff.decline && aff.answer {
                p.hint.explain {
                    "Decline answers none of the options: the agent learns that you chose not to answer (resolution “declined”). "
                    "To say no, pick the agent's own option instead"
                    @if let Some(no) = env.request().and_then(|r| r.options.iter().find(|o| is_no(&o.value))) { " (“" (no.label) "”)" }
                    "."
                }
            }
            @if aff.dismiss {
                p.hint.explain { "Dismiss closes the task without doing it; the agent learns it was dismissed, not completed." }
            }
        }
    }
}

/// The grant key an answer may make stand (issue 40): a keyed ask that is neither sensitive nor
/// under an approval policy.
fn grant_key_offered(view: &InboxMessage) -> Option<String> {
    if view.envelope.sensitive || view.approval_policy.is_some() {
        return None;
    }
    ma2h_core::decisions::grants::key_of(&view.envelope)
}

/// Fields generated from a flat input schema: enums and booleans as selects, numbers and strings
/// as text inputs (`x-ma2h-sensitive` ones as password inputs), each with its label, description,
/// constraints and validation message.
fn input_fields(schema: &Value, state: &FormState, locked: bool) -> Markup {
    let required: Vec<&str> =
        schema["required"].as_array().map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    let props = schema["properties"].as_object().cloned().unwrap_or_default();
    html! {
        @for (name, p) in &props {
            @let fid = format!("in-{name}");
            @let err = state.field_errors.get(name);
            // First showing: the agent's proposal (the `default`, §5.2); after a POST: what was typed.
            @let proposed = p.get("default").map(scalar);
            @let fixed = locked && proposed.is_some();
            @let current = match state.values.get(&format!("{FIELD_PREFIX}{name}")) {
                _ if fixed => proposed.as_deref().unwrap_or(""),
                Some(v) => v.as_str(),
                None if state.values.is_empty() => proposed.as_deref().unwrap_or(""),
                None => "",
            };
            @let is_required = required.contains(&name.as_str());
            @let described = format!("{fid}-hint{}", if err.is_some() { format!(" {fid}-err") } else { String::new() });
            label for=(fid) {
                (p["title"].as_str().unwrap_or(name))
                @if is_required { " " span.hint { "(required)" } }
            }
            @if let Some(e) = err { p.error #(format!("{fid}-err")) { (super::prose(e)) } }
            @if let Some(options) = p["enum"].as_array() {
                select #(fid) name=(format!("{FIELD_PREFIX}{name}")) aria-describedby=(described) aria-invalid=[err.map(|_| "true")] {
                    @if !fixed { option value="" { "—" } }
                    @for o in options { @let v = scalar(o); @if !fixed || v == current { option value=(v) selected[v == current] { (v) } } }
                }
            } @else if p["type"] == "boolean" {
                select #(fid) name=(format!("{FIELD_PREFIX}{name}")) aria-describedby=(described) aria-invalid=[err.map(|_| "true")] {
                    @if !fixed { option value="" { "—" } }
                    @if !fixed || current == "true" { option value="true" selected[current == "true"] { "yes" } }
                    @if !fixed || current == "false" { option value="false" selected[current == "false"] { "no" } }
                }
            } @else {
                @let sensitive = p["x-ma2h-sensitive"] == Value::Bool(true);
                @let mode = match p["type"].as_str() { Some("integer") => "numeric", Some("number") => "decimal", _ => "text" };
                input #(fid) type=(if sensitive { "password" } else { "text" }) name=(format!("{FIELD_PREFIX}{name}"))
                    value=(if sensitive { "" } else { current }) inputmode=(mode) autocomplete="off"
                    aria-required=[is_required.then_some("true")] aria-describedby=(described)
                    aria-invalid=[err.map(|_| "true")] readonly[fixed];
            }
            p.hint #(format!("{fid}-hint")) { (hint(p)) }
        }
    }
}

fn hint(p: &Value) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(d) = p["description"].as_str() {
        parts.push(d.to_owned());
    }
    // Issue 39: plain words, never the schema's jargon ("string", "boolean"): a text field or a
    // yes/no select says what it is by itself; numbers say which kind.
    match p["type"].as_str() {
        Some("integer") => parts.push("a whole number".to_owned()),
        Some("number") => parts.push("a number".to_owned()),
        _ => {}
    }
    for (k, label) in [("minimum", "at least"), ("maximum", "at most")] {
        if let Some(v) = p.get(k) {
            parts.push(format!("{label} {v}"));
        }
    }
    for (k, label) in [("minLength", "at least"), ("maxLength", "at most")] {
        if let Some(n) = p.get(k).and_then(Value::as_u64) {
            parts.push(format!("{label} {n} character{}", if n == 1 { "" } else { "s" }));
        }
    }
    if p["x-ma2h-sensitive"] == Value::Bool(true) {
        parts.push("sensitive: hidden while typing and masked afterwards".to_owned());
    }
    if let Some(d) = p.get("default").filter(|_| p["x-ma2h-sensitive"] != Value::Bool(true)) {
        parts.push(format!("proposed by the agent: {}", scalar(d)));
    }
    parts.join(" · ")
}

/// The agent's proposed answer (the input schema's `default`s, §5.2), if any.
fn proposal(req: &ma2h_protocol::envelope::Request) -> Option<Value> {
    req.schema.as_ref().and_then(ma2h_protocol::rules::proposal)
}

/// `allow_edit: false` with a proposal to accept: the proposed fields are shown read-only.
fn locked(req: &ma2h_protocol::envelope::Request) -> bool {
    !req.permissions.allow_edit && req.permissions.allow_accept && proposal(req).is_some()
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `POST /inbox/{id}/resolve`.
pub async fn resolve(State(hub): State<Hub>, session: Session, Path(id): Path<String>, Body(body): Body) -> Response {
    let pairs = form_pairs(&body);
    if !session.csrf_ok(form_get(&pairs, "csrf")) {
        return csrf_refused(Some(&session));
    }
    let view = match inbox::view(&hub, &session.principal, &id).await {
        Ok(v) => v,
        Err(e) => return message::error_page(&session, &e),
    };
    let mut state = FormState {
        values: pairs.iter().filter(|(k, _)| k != "csrf").map(|(k, v)| (k.clone(), v.clone())).collect(),
        ..FormState::default()
    };
    // Issue 39: a sensitive message is answered only from the revealed page (a form posted
    // without having shown its content is refused, and shown revealed to read first).
    let revealed = form_get(&pairs, "revealed") == Some("1");
    if view.envelope.sensitive && !revealed {
        let state = FormState {
            error: Some("This message is sensitive: read its content (shown now) before you answer.".to_owned()),
            ..FormState::default()
        };
        return message::render(&hub, &session, &view, true, &state, StatusCode::UNPROCESSABLE_ENTITY);
    }
    // A sensitive value is never echoed back into the page.
    for f in sensitive_fields(&view) {
        state.values.remove(&format!("{FIELD_PREFIX}{f}"));
    }
    let request = match build_request(&view, &pairs, &mut state.field_errors) {
        Some(r) if state.field_errors.is_empty() => r,
        _ => {
            // A whole-form problem (no button, a locked proposal) is the banner; otherwise the
            // banner points at the marked fields.
            let whole = state.field_errors.remove("");
            state.error = Some(whole.unwrap_or_else(|| "Please correct the fields marked below.".to_owned()));
            return message::render(&hub, &session, &view, revealed, &state, StatusCode::UNPROCESSABLE_ENTITY);
        }
    };
    let bytes = serde_json::to_vec(&request).expect("a JSON value serializes");
    // Issue 41: the passkey assertion the page made for this answer, verified before it applies.
    let step_up = match (form_get(&pairs, "passkey_state"), form_get(&pairs, "passkey_response")) {
        (Some(st), Some(resp)) if !resp.is_empty() => {
            let message = view.record.id.as_str();
            match ceremony::finish_step_up(&hub, &session.principal, message, st, resp.as_bytes()).await {
                Ok(s) => Some(s),
                Err(Refused::No(why)) => {
                    state.error = Some(why);
                    return message::render(&hub, &session, &view, revealed, &state, StatusCode::FORBIDDEN);
                }
                Err(Refused::Hub(e)) => return message::error_page(&session, &e),
            }
        }
        _ => None,
    };
    match resolve::resolve_as(&hub, &session.principal, None, &id, &bytes, step_up.as_ref()).await {
        // Issue 40: one approval of a quorum — recorded; the page says how many are still needed.
        Ok(resolve::Outcome::Pending(_)) => Redirect::to(&format!("/inbox/{id}?approved=1")).into_response(),
        // Issue 40: the answer stands for later asks of the same key when the human chose so.
        Ok(_) if form_get(&pairs, "grant").is_some_and(|g| g != "once") => {
            let choice = ma2h_core::decisions::grants::Choice::parse(form_get(&pairs, "grant").unwrap_or(""));
            let granted = match choice {
                Ok(Some(c)) => {
                    ma2h_core::decisions::grants::grant(&hub, &session.principal, &id, c).await.map(|g| g.id)
                }
                Ok(None) => Err(HubError::validation("no grant chosen")),
                Err(e) => Err(e),
            };
            match granted {
                Ok(gid) => Redirect::to(&format!("/inbox/{id}?granted={gid}")).into_response(),
                Err(e) => {
                    tracing::warn!(error = %e, "the grant was not made");
                    Redirect::to(&format!("/inbox/{id}?grant_failed=1")).into_response()
                }
            }
        }
        // Issue 39: answer-and-next goes on to the next message this operator may answer.
        Ok(_) if form_get(&pairs, "then") == Some("next") => {
            Redirect::to(&format!("/inbox/next?after={id}")).into_response()
        }
        Ok(_) => Redirect::to(&format!("/inbox/{id}?done=1")).into_response(),
        Err(HubError::Protocol(e @ (ProtocolError::InvalidField { .. } | ProtocolError::Validation { .. }))) => {
            // Every answer field the rules named is marked at once; anything else is the banner.
            for f in e.fields() {
                if let Some(name) = answer_field(&f.pointer) {
                    state.field_errors.insert(name, f.message.clone());
                }
            }
            state.error = Some(if state.field_errors.is_empty() {
                e.to_string()
            } else {
                "Please correct the fields marked below.".to_owned()
            });
            message::render(&hub, &session, &view, revealed, &state, StatusCode::UNPROCESSABLE_ENTITY)
        }
        Err(HubError::AlreadyTerminal { .. }) => {
            let info = Some("This message was already resolved (first answer wins); here is the outcome.".to_owned());
            let mut resp = message::show(&hub, &session, &id, false, info).await;
            *resp.status_mut() = StatusCode::CONFLICT;
            resp
        }
        // Issue 41: no passkey where a policy asks for one — the form again, saying so.
        Err(e @ HubError::PasskeyRequired { .. }) => {
            state.error = Some(e.to_string());
            message::render(&hub, &session, &view, revealed, &state, StatusCode::FORBIDDEN)
        }
        Err(HubError::NotAuthorized(reason)) => notice(StatusCode::FORBIDDEN, Some(&session), "Not allowed", &reason),
        Err(e) => message::error_page(&session, &e),
    }
}

/// An option that reads as "no" (deny, reject, …): named in the Decline explanation.
fn is_no(value: &str) -> bool {
    matches!(
        value.to_ascii_lowercase().as_str(),
        "deny" | "denied" | "no" | "reject" | "rejected" | "refuse" | "abort" | "cancel"
    )
}

/// The §8.8 body from the form; `None` (with `errors` filled) when a field cannot be converted.
fn build_request(
    view: &InboxMessage,
    pairs: &[(String, String)],
    errors: &mut HashMap<String, String>,
) -> Option<Value> {
    let act = form_get(pairs, "act").unwrap_or("");
    let (resolution, chosen) = match act.split_once(':') {
        Some(("answer", v)) => ("answered", Some(v)),
        _ if act == "accept" => ("answered", None),
        _ => (act, None),
    };
    let kind = view.record.kind;
    let valid = match kind {
        MessageType::Ask => matches!(resolution, "answered" | "declined"),
        MessageType::Task => matches!(resolution, "completed" | "dismissed"),
        MessageType::Notify => false,
    };
    if !valid {
        errors.insert(String::new(), "Choose one of the buttons to answer.".to_owned());
        return None;
    }
    let mut out = Map::new();
    out.insert("resolution".into(), json!(resolution));
    if resolution == "answered" {
        let req = view.envelope.request()?;
        let value = match (req.mode, chosen) {
            (_, Some(v)) => json!(v),
            // "Accept as proposed": the proposed fields exactly as proposed (`edited` stays false,
            // §6), plus whatever the human filled into fields the proposal left open.
            (Mode::Input, None) if act == "accept" && req.permissions.allow_accept => {
                let proposed = proposal(req)?;
                let mut typed = input_value(req.schema.as_ref()?, pairs, errors);
                if let (Some(t), Some(p)) = (typed.as_object_mut(), proposed.as_object()) {
                    for (k, v) in p {
                        errors.remove(k);
                        t.insert(k.clone(), v.clone());
                    }
                }
                typed
            }
            (Mode::Input, None) => input_value(req.schema.as_ref()?, pairs, errors),
            (_, None) => match form_get(pairs, "value") {
                Some(v) => json!(v),
                None => {
                    errors.insert("value".to_owned(), "Choose one of the options.".to_owned());
                    return None;
                }
            },
        };
        out.insert("value".into(), value);
    }
    if let Some(c) = form_get(pairs, "comment").map(str::trim).filter(|c| !c.is_empty()) {
        out.insert("comment".into(), json!(c));
    }
    if let Some(action) = view.envelope.action() {
        let items: Vec<Value> = (0..action.checklist.len())
            .map(|i| {
                let done = form_get(pairs, &format!("check.{i}")).is_some();
                json!({ "text": action.checklist[i].text, "done": done })
            })
            .collect();
        if !items.is_empty() {
            out.insert("checklist".into(), Value::Array(items));
        }
    }
    Some(Value::Object(out))
}

/// Convert the schema fields to typed JSON; empty fields are left out (the schema's `required`
/// then speaks for them).
fn input_value(schema: &Value, pairs: &[(String, String)], errors: &mut HashMap<String, String>) -> Value {
    let mut obj = Map::new();
    let props = schema["properties"].as_object().cloned().unwrap_or_default();
    let required: Vec<&str> =
        schema["required"].as_array().map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    for (name, p) in &props {
        let raw = form_get(pairs, &format!("{FIELD_PREFIX}{name}")).map(str::trim).unwrap_or("");
        if raw.is_empty() {
            if required.contains(&name.as_str()) {
                errors.insert(name.clone(), "This field is required.".to_owned());
            }
            continue;
        }
        let converted = if let Some(options) = p["enum"].as_array() {
            options.iter().find(|o| scalar(o) == raw).cloned().ok_or("Choose one of the listed values.")
        } else {
            match p["type"].as_str() {
                Some("integer") => raw.parse::<i64>().map(Value::from).map_err(|_| "Enter a whole number."),
                Some("number") => raw
                    .parse::<f64>()
                    .ok()
                    .and_then(serde_json::Number::from_f64)
                    .map(Value::Number)
                    .ok_or("Enter a number."),
                Some("boolean") => match raw {
                    "true" => Ok(Value::Bool(true)),
                    "false" => Ok(Value::Bool(false)),
                    _ => Err("Choose yes or no."),
                },
                _ => Ok(Value::String(raw.to_owned())),
            }
        };
        match converted {
            Ok(v) => {
                obj.insert(name.clone(), v);
            }
            Err(msg) => {
                errors.insert(name.clone(), msg.to_owned());
            }
        }
    }
    let value = Value::Object(obj);
    // The schema's own rules (minimum, pattern, …) for the fields that did convert, so every
    // invalid field is marked in one round — not one per submit.
    if let Err(found) = ma2h_protocol::rules::validate_input(schema, &value) {
        for f in found {
            if let Some(name) = f.pointer.strip_prefix('/').filter(|n| !n.is_empty() && !n.contains('/')) {
                let name = name.replace("~1", "/").replace("~0", "~");
                errors.entry(name).or_insert(f.message);
            }
        }
    }
    value
}

/// The input-form field a pointer names: `/value/n` → `n` (an RFC 6901 token, unescaped).
fn answer_field(pointer: &str) -> Option<String> {
    let token = pointer.strip_prefix("/value/")?;
    (!token.is_empty() && !token.contains('/')).then(|| token.replace("~1", "/").replace("~0", "~"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answer_errors_are_attributed_to_their_field() {
        assert_eq!(answer_field("/value/n"), Some("n".to_owned()));
        assert_eq!(answer_field("/value/a~1b"), Some("a/b".to_owned()));
        assert_eq!(answer_field("/value"), None);
        assert_eq!(answer_field("/comment"), None);
    }

    #[test]
    fn input_fields_convert_to_their_schema_types() {
        let schema = json!({"type":"object","properties":{
            "n":{"type":"integer"},"x":{"type":"number"},"ok":{"type":"boolean"},
            "c":{"enum":["red", 2]},"s":{"type":"string"},"empty":{"type":"string"}},"required":["n"]});
        let pairs: Vec<(String, String)> =
            [("field.n", "3"), ("field.x", "1.5"), ("field.ok", "true"), ("field.c", "2"), ("field.s", " hi ")]
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
        let mut errors = HashMap::new();
        let v = input_value(&schema, &pairs, &mut errors);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(v, json!({"n": 3, "x": 1.5, "ok": true, "c": 2, "s": "hi"}));
        let bad: Vec<(String, String)> = vec![("field.n".into(), "three".into())];
        let mut errors = HashMap::new();
        input_value(&schema, &bad, &mut errors);
        assert_eq!(errors.get("n").map(String::as_str), Some("Enter a whole number."));
        let mut errors = HashMap::new();
        input_value(&schema, &[], &mut errors);
        assert_eq!(errors.get("n").map(String::as_str), Some("This field is required."));
    }

    #[test]
    fn field_hints_speak_plainly_without_schema_jargon() {
        let text = serde_json::json!({"type": "string", "description": "Why", "minLength": 3, "maxLength": 1});
        assert_eq!(hint(&text), "Why · at least 3 characters · at most 1 character");
        assert_eq!(hint(&serde_json::json!({"type": "boolean"})), "");
        let n = serde_json::json!({"type": "integer", "minimum": 1, "maximum": 9});
        assert_eq!(hint(&n), "a whole number · at least 1 · at most 9");
    }
}
