//! The human inbox: server-rendered HTML pages on the same Router as the API, so the local binary
//! and every deployment serve them. Every page works without JavaScript (one small script adds
//! keyboard shortcuts); no CDN, nothing fetched at build time: the
//! stylesheet is embedded, markup comes from `maud` (escaping everything by default), and message
//! bodies go through [`markdown`] (§9.6).
//!
//! | route | page |
//! |---|---|
//! | `GET/POST /login`, `POST /logout` | [`login`]: operator API key → sealed session cookie |
//! | `GET /login/sso`, `GET /login/sso/callback` | [`sso`]: single sign-on through the account's OpenID Connect provider |
//! | `GET /inbox` | [`list`]: open messages, urgent/high first then oldest, with filters |
//! | `GET /inbox/history` | [`list`]: resolved messages with outcome and push delivery state |
//! | `GET /inbox/fyi` | [`list`]: the agents' notifies, newest first |
//! | `GET /inbox/events`, `GET /inbox/live` | [`live`]: the live inbox's pulse (SSE, JSON) |
//! | `GET /inbox/next`, `POST /inbox/bulk` | [`triage`]: answer-and-next, bulk decline/dismiss |
//! | `POST /inbox/{id}/claim`, `POST /inbox/{id}/snooze` | [`claims`]: "I'm on it", snooze |
//! | `GET /inbox/search` | [`search`]: titles and bodies (SQLite), titles (DynamoDB) |
//! | `GET /inbox/audit`, `GET /inbox/audit/export` | [`audit`]: the audit ledger, filtered; its signed export |
//! | `GET/POST /inbox/policies` | [`policies`]: approval policies (quorum, who may never approve) |
//! | `GET /inbox/{id}` | [`message`]: one message and its answer form (the ack's `review_url`) |
//! | `POST /inbox/{id}/resolve` | [`answer`]: the §8.8 use case with actor `human:<id>` |
//! | `/inbox/agents…`, `/inbox/directives…` | [`agents`]: presence, send a directive, its track |
//! | `GET/POST /inbox/channels` | [`channels`]: channels, routes (reminders, escalation), your Slack link |
//! | `GET/POST /a/{token}` | [`mail_answer`]: an email's answer link — GET confirms, POST answers once |
//! | `/inbox/manifest.webmanifest`, `/inbox/sw.js`, `/inbox/icons/…`, `/inbox/offline` | [`pwa`]: the installable app |
//! | `GET/POST /inbox/devices`, `POST /inbox/push/answer` | [`devices`]: Web Push devices; a notification's answer button |
//!
//! Every UI response carries a Content-Security-Policy that admits only the Hub's own script
//! files (`/inbox/keys.js`: keyboard shortcuts; `/inbox/live.js`: the live inbox — progressive
//! enhancement, every page works without them) and no inline script, plus `nosniff`, `no-referrer` and `no-store`.

mod agent_sessions;
mod agents;
mod answer;
mod approvals;
mod audit;
mod bidi;
mod channels;
mod claims;
mod devices;
mod inter_agent;
mod list;
mod live;
mod login;
mod mail_answer;
mod message;
mod passkeys;
mod policies;
mod pwa;
mod rows;
mod search;
mod session;
mod sso;
mod timeline;
mod triage;

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use chrono::Duration;
use ma2h_core::Hub;
use maud::{DOCTYPE, Markup, html};

use ma2h_render as markdown;
pub use ma2h_render::render as render_markdown;
use session::Session;

/// The Content-Security-Policy of every UI page: scripts only from the Hub's own files (no inline
/// script, no eval), nothing remote.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
                       img-src 'self' data:; connect-src 'self'; manifest-src 'self'; worker-src 'self'; \
                       form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

const CSS: &str = include_str!("style.css");
/// Keyboard shortcuts (j/k/Enter on lists, 1–9 on a message): an enhancement only.
const KEYS_JS: &str = include_str!("keys.js");
/// The live inbox (tab title count, list refresh, desktop alerts): an enhancement only.
const LIVE_JS: &str = include_str!("live.js");
/// Issue 41: passkey ceremonies (add, log in, confirm an answer).
const PASSKEYS_JS: &str = include_str!("passkeys.js");

/// The inbox routes, merged into the main Router.
pub fn routes() -> Router<Hub> {
    Router::new()
        .route("/login", get(login::form).post(login::submit))
        .route("/login/passkey", post(passkeys::login))
        .route("/login/sso", get(sso::begin))
        .route("/login/sso/callback", get(sso::callback))
        .route("/logout", post(login::logout))
        .route("/inbox", get(list::inbox))
        .route("/inbox/history", get(list::history))
        .route("/inbox/events", get(live::events))
        .route("/inbox/live", get(live::now))
        .route("/inbox/live.js", get(live_script))
        .route("/inbox/fyi", get(list::fyi))
        .route("/inbox/agents", get(agents::index))
        .route("/inbox/agents/{*agent}", get(agents::agent))
        .route("/inbox/directives", post(agents::send))
        .route("/inbox/sessions/{id}/close", post(agent_sessions::close))
        .route("/inbox/agent-stop", post(agent_sessions::stop))
        .route("/inbox/inter-agent", post(inter_agent::update))
        .route("/inbox/channels", get(channels::page_get).post(channels::update))
        .route("/inbox/policies", get(policies::page_get).post(policies::update))
        .route("/inbox/next", get(triage::next))
        .route("/inbox/search", get(search::results))
        .route("/inbox/audit", get(audit::page_get))
        .route("/inbox/audit/export", get(audit::export))
        .route("/inbox/bulk", post(triage::bulk))
        .route("/inbox/directives/{id}", get(agents::directive))
        .route("/inbox/{id}", get(message::page))
        .route("/inbox/{id}/resolve", post(answer::resolve))
        .route("/inbox/{id}/claim", post(claims::claim))
        .route("/inbox/{id}/snooze", post(claims::snooze))
        .route("/inbox/style.css", get(stylesheet))
        .route("/inbox/manifest.webmanifest", get(pwa::manifest))
        .route("/inbox/sw.js", get(pwa::service_worker))
        .route("/inbox/pwa.js", get(pwa::register_script))
        .route("/inbox/icons/{name}", get(pwa::icon))
        .route("/inbox/offline", get(pwa::offline))
        .route("/inbox/devices", get(devices::page_get).post(devices::update))
        .route("/inbox/push/answer", post(devices::answer))
        .route("/inbox/passkeys", post(passkeys::update))
        .route("/inbox/passkeys.js", get(passkeys_script))
        .route("/inbox/keys.js", get(keys_script))
        .route("/a/{token}", get(mail_answer::confirm).post(mail_answer::apply))
        .layer(middleware::from_fn(security_headers))
}

async fn stylesheet() -> Response {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], CSS).into_response()
}

async fn keys_script() -> Response {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], KEYS_JS).into_response()
}

async fn passkeys_script() -> Response {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], PASSKEYS_JS).into_response()
}

async fn live_script() -> Response {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], LIVE_JS).into_response()
}

async fn security_headers(req: Request, next: Next) -> Response {
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.entry(header::CACHE_CONTROL).or_insert(HeaderValue::from_static("no-store"));
    resp
}

/// The page frame: header with navigation (and the logout form) when logged in.
fn page(title: &str, session: Option<&Session>, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="referrer" content="no-referrer";
                title { (title) " · MA2H inbox" }
                link rel="stylesheet" href="/inbox/style.css";
                // issue 41: installable (Android Chrome, iOS Safari's "Add to Home Screen")
                link rel="manifest" href="/inbox/manifest.webmanifest";
                meta name="theme-color" content="#0b5cad";
                link rel="icon" type="image/png" href="/inbox/icons/icon-192.png";
                link rel="apple-touch-icon" href="/inbox/icons/apple-touch-icon.png";
                meta name="apple-mobile-web-app-capable" content="yes";
                meta name="apple-mobile-web-app-title" content="MA2H";
                script src="/inbox/pwa.js" defer {}
                script src="/inbox/keys.js" defer {}
                script src="/inbox/passkeys.js" defer {}
                @if session.is_some() { script src="/inbox/live.js" defer {} }
            }
            body {
                a.skip href="#main" { "Skip to content" }
                header.top {
                    nav aria-label="Main" {
                        a.brand href="/inbox" { "MA2H inbox" }
                        @if let Some(s) = session {
                            a href="/inbox" { "Open" span.count data-live-count {} }
                            a href="/inbox/fyi" { "FYI" }
                            a href="/inbox/history" { "History" }
                            a href="/inbox/agents" { "Agents" }
                            a href="/inbox/channels" { "Channels" }
                            a href="/inbox/policies" { "Policies" }
                            a href="/inbox/devices" { "Devices" }
                            a href="/inbox/audit" { "Audit" }
                            button.link #alerts type="button" hidden aria-pressed="false" { "Desktop alerts: off" }
                            span.who { (s.who()) }
                            form.inline method="post" action="/logout" {
                                input type="hidden" name="csrf" value=(s.csrf);
                                button.link type="submit" { "Log out" }
                            }
                        }
                    }
                }
                main #main { (body) }
            }
        }
    }
}

/// A full HTML response. Agent-written text may carry bidi controls that reorder what the human
/// reads; every page's text shows them as visible markers, while form values stay as written.
fn respond(status: StatusCode, markup: Markup) -> Response {
    let html = markup.into_string();
    let html = bidi::visible_in_text(&html).into_owned();
    (status, Html(html)).into_response()
}

/// A 500 page that says nothing of the cause; the cause goes to the log with `what` failed.
fn went_wrong(session: Option<&Session>, what: &str, e: &dyn std::fmt::Display) -> Response {
    tracing::error!(error = %e, "{what} failed");
    notice(StatusCode::INTERNAL_SERVER_ERROR, session, "Something went wrong", "Please try again.")
}

/// Text for a human that may name a field or value in backticks (the Hub's error messages do,
/// for the API and the CLI): each `…` span becomes a `<code>` element instead of showing its
/// backticks (issue 39). Everything is escaped; an unpaired backtick stays as it is.
fn prose(text: &str) -> Markup {
    let parts: Vec<&str> = text.split('`').collect();
    let paired = parts.len() % 2 == 1;
    html! {
        @for (i, part) in parts.iter().enumerate() {
            @if i % 2 == 1 && (paired || i + 1 < parts.len() - 1) { code { (part) } }
            @else if i % 2 == 1 { "`" (part) }
            @else { (part) }
        }
    }
}

/// A page with just a heading and a message (errors, refusals).
fn notice(status: StatusCode, session: Option<&Session>, heading: &str, text: &str) -> Response {
    let body = html! {
        h1 { (heading) }
        p.notice role="alert" { (prose(text)) }
        p { a href="/inbox" { "Back to the inbox" } }
    };
    respond(status, page(heading, session, body))
}

/// Issue 39: the confirmation step of a dangerous form (kill-switch, stop, bulk actions) — works
/// without JavaScript. A POST without `confirmed=1` lands here: the page says what will happen
/// and re-posts the same fields with `confirmed=1`, or goes `back`.
fn confirm_page(
    session: &Session,
    heading: &str,
    consequence: &str,
    action: &str,
    pairs: &[(String, String)],
    yes: &str,
    back: &str,
) -> Response {
    let body = html! {
        h1 { (heading) }
        p.notice.error role="alert" { (consequence) }
        form method="post" action=(action) {
            input type="hidden" name="csrf" value=(session.csrf);
            input type="hidden" name="confirmed" value="1";
            @for (k, v) in pairs.iter().filter(|(k, _)| k != "csrf" && k != "confirmed") {
                input type="hidden" name=(k) value=(v);
            }
            div.actions {
                button.danger type="submit" { (yes) }
                a.button.secondary href=(back) { "Cancel" }
            }
        }
    };
    respond(StatusCode::OK, page(heading, Some(session), body))
}

/// Whether a dangerous form was confirmed ([`confirm_page`]).
fn confirmed(pairs: &[(String, String)]) -> bool {
    form_get(pairs, "confirmed") == Some("1")
}

/// The 403 for a state-changing POST whose CSRF token is missing or wrong.
fn csrf_refused(session: Option<&Session>) -> Response {
    notice(
        StatusCode::FORBIDDEN,
        session,
        "Form refused",
        "This form was missing its security token or it did not match your session (CSRF protection). \
         Reload the page and try again.",
    )
}

/// "5 min", "3 h 10 min" (a past span too: callers say "ago" or "in").
fn human_duration(d: Duration) -> String {
    ma2h_core::kernel::display::human_duration(d.max(Duration::zero()))
}

/// Parse an `application/x-www-form-urlencoded` body into ordered pairs.
fn form_pairs(body: &[u8]) -> Vec<(String, String)> {
    url::form_urlencoded::parse(body).into_owned().collect()
}

fn form_get<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_coarsely() {
        assert_eq!(human_duration(Duration::seconds(20)), "under a minute");
        assert_eq!(human_duration(Duration::minutes(5)), "5 min");
        assert_eq!(human_duration(Duration::minutes(190)), "3 h 10 min");
        assert_eq!(human_duration(Duration::hours(52)), "2 d 4 h");
        assert_eq!(human_duration(Duration::seconds(-5)), "under a minute");
    }

    #[test]
    fn backticked_names_read_as_code_not_as_backticks() {
        assert_eq!(prose("`url`: not a <URL>").into_string(), "<code>url</code>: not a &lt;URL&gt;");
        assert_eq!(prose("a `b` c `d`").into_string(), "a <code>b</code> c <code>d</code>");
        assert_eq!(prose("odd ` one").into_string(), "odd ` one");
        assert_eq!(prose("`a` and ` alone").into_string(), "<code>a</code> and ` alone");
    }

    #[test]
    fn form_bodies_decode_in_order() {
        let p = form_pairs(b"a=1&b=two+words&a=3&c=%3Cx%3E");
        assert_eq!(form_get(&p, "a"), Some("1"));
        assert_eq!(form_get(&p, "b"), Some("two words"));
        assert_eq!(form_get(&p, "c"), Some("<x>"));
        assert_eq!(p.iter().filter(|(k, _)| k == "a").count(), 2);
    }
}
