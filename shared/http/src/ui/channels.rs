//! The operator's channel settings (issue 20): where the account's asks and tasks are announced
//! (Slack, email, webhooks), the routes that decide it — with reminders and escalation — and the
//! operator's own Slack link. Channel credentials (bot tokens, signing secrets, SMTP passwords,
//! webhook secrets) are entered only through `ma2h-hub admin channels …`, never in a web form,
//! and never shown here.
//!
//! | route | action |
//! |---|---|
//! | `GET /inbox/channels` | the page |
//! | `POST /inbox/channels` | `action=route` (add/replace), `remove-route`, `link-slack`, `unlink-slack` (CSRF-checked) |

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use ma2h_core::channels::config::{Channel, ChannelsConfig};
use ma2h_core::channels::manage;
use ma2h_core::channels::manage::RouteSpec;
use ma2h_core::kernel::credentials::PrincipalId;
use ma2h_core::{Hub, HubError};
use ma2h_protocol::ids::HumanId;
use maud::html;

use super::session::Session;
use super::{csrf_refused, form_get, form_pairs, notice, page, respond, went_wrong};
use crate::extract::Body;

fn human_of(session: &Session) -> Option<HumanId> {
    match &session.principal.id {
        PrincipalId::Operator(h) => Some(h.clone()),
        PrincipalId::Agent(_) => None,
    }
}

/// `GET /inbox/channels`.
pub async fn page_get(State(hub): State<Hub>, session: Session) -> Response {
    let config = match hub.credentials.get_account_policy(&session.principal.account).await {
        Ok(p) => p.unwrap_or_default().channels,
        Err(e) => return went_wrong(Some(&session), "channels page", &e),
    };
    let me = human_of(&session).map(|h| h.to_string()).unwrap_or_default();
    let body = render(&config, &me, &session.csrf);
    respond(StatusCode::OK, page("Channels", Some(&session), body))
}

fn render(config: &ChannelsConfig, me: &str, csrf: &str) -> maud::Markup {
    let my_links: Vec<&String> = config.slack_links.iter().filter(|(_, h)| h.as_str() == me).map(|(k, _)| k).collect();
    html! {
        h1 { "Channels" }
        p { "Where this account's asks and tasks are announced, so nobody has to keep the inbox open. Answers given in Slack or from an email link go through the same rules as this inbox, as the linked person." }
        h2 { "Channels" }
        @if config.channels.is_empty() {
            p.notice { "No channels yet. An administrator adds them with " code { "ma2h-hub admin channels add-slack | add-email | add-webhook" } " (credentials never go through a web form)." }
        } @else {
            table.cards {
                thead { tr { th { "Id" } th { "Kind" } th { "Where" } } }
                tbody {
                    @for (id, c) in &config.channels {
                        tr {
                            td data-label="Id" { code { (id) } }
                            td data-label="Kind" { (c.kind()) }
                            td data-label="Where" {
                                @match c {
                                    Channel::Slack(s) => { "workspace " code { (s.team_id) } ", conversation " code { (s.channel) } }
                                    Channel::Email(m) => { (m.recipients.keys().map(|h| format!("human:{h}")).collect::<Vec<_>>().join(", ")) " via " code { (m.smtp_host) } }
                                    Channel::Webpush(w) => { (w.recipients.iter().map(|h| format!("human:{h}")).collect::<Vec<_>>().join(", ")) " on their devices" }
                                    Channel::Webhook(w) => { (manage::redact_url(&w.url)) }
                                }
                            }
                        }
                    }
                }
            }
        }
        h2 { "Routes" }
        p.hint { "Tried in order; the first that matches a new ask or task announces it. Empty filters match everything." }
        @if config.routes.is_empty() {
            p { "No routes: nothing is announced." }
        } @else {
            table.cards {
                thead { tr { th { "Route" } th { "Matches" } th { "Announce to" } th { "Remind" } th { "Escalate" } th { "On call" } th {} } }
                tbody {
                    @for r in &config.routes {
                        tr {
                            td data-label="Route" { code { (r.id) } }
                            td data-label="Matches" { (r.filter.describe()) }
                            td data-label="Announce to" { (r.targets.join(", ")) }
                            td data-label="Remind" { (r.remind_after_minutes.map(|m| format!("after {m} min")).unwrap_or_else(|| "—".into())) }
                            td data-label="Escalate" {
                                @if r.escalate.is_empty() { "—" } @else { (r.escalate.join(", ")) " at " (r.escalate_percent_left) " % left" }
                            }
                            td data-label="On call" {
                                @if r.ladder.is_empty() { "—" } @else {
                                    (r.ladder.iter().map(|h| format!("human:{h}")).collect::<Vec<_>>().join(" → "))
                                    " " span.hint { "every " (r.rung_minutes()) " min; offline after " (r.offline_after()) " min" }
                                }
                            }
                            td.act {
                                form.inline method="post" action="/inbox/channels" {
                                    input type="hidden" name="csrf" value=(csrf);
                                    input type="hidden" name="action" value="remove-route";
                                    input type="hidden" name="id" value=(r.id);
                                    button.link type="submit" { "Remove" }
                                }
                            }
                        }
                    }
                }
            }
        }
        @if !config.channels.is_empty() {
            h3 { "Add or replace a route" }
            form method="post" action="/inbox/channels" {
                input type="hidden" name="csrf" value=(csrf);
                input type="hidden" name="action" value="route";
                p {
                    label for="rid" { "Id " } input #rid type="text" name="id" required pattern="[a-z0-9-]{1,64}" placeholder="prod-urgent";
                    " " label for="targets" { "announce to " } input #targets type="text" name="targets" required placeholder="ops, mail";
                }
                p {
                    label for="agent" { "Agent " } input #agent type="text" name="agent" placeholder="any";
                    " " label for="project" { "project " } input #project type="text" name="project" placeholder="any";
                    " " label for="tag" { "tag " } input #tag type="text" name="tag" placeholder="any";
                    " " label for="minp" { "priority at least " }
                    select #minp name="min_priority" {
                        option value="" { "any" } option value="normal" { "normal" } option value="high" { "high" } option value="urgent" { "urgent" }
                    }
                }
                p {
                    label for="remind" { "Remind after (minutes) " } input #remind type="number" name="remind_after" min="1";
                    " " label for="esc" { "escalate to " } input #esc type="text" name="escalate" placeholder="oncall";
                    " " label for="pct" { "when % of the time is left " } input #pct type="number" name="escalate_percent" min="1" max="99" placeholder="20";
                }
                p {
                    label for="ladder" { "On-call ladder " } input #ladder type="text" name="ladder" placeholder="alice, bob";
                    " " label for="lmin" { "minutes per rung " } input #lmin type="number" name="ladder_minutes" min="1" max="1440" placeholder="15";
                    " " label for="omin" { "offline after (minutes) " } input #omin type="number" name="offline_minutes" min="1" max="10080" placeholder="60";
                }
                p.hint { "The ladder reaches each operator in turn while the message is open — by mail, a Slack mention or a webhook event — skipping one who is away (their delegate is reached instead) or has not used the inbox or a channel lately." }
                button type="submit" { "Save route" }
            }
        }
        h2 { "Your Slack account" }
        @if my_links.is_empty() {
            p { "Not linked: buttons you press in Slack answer nothing until you link your Slack user here. Find your member id in Slack under Profile → ⋮ → Copy member ID; the workspace id is in the workspace's URL or settings." }
        } @else {
            p { "Linked: presses by " @for l in &my_links { code { (l) } " " } "answer as " code { "human:" (me) } "." }
            @for l in &my_links {
                @if let Some((team, user)) = l.split_once(':') {
                    form.inline method="post" action="/inbox/channels" {
                        input type="hidden" name="csrf" value=(csrf);
                        input type="hidden" name="action" value="unlink-slack";
                        input type="hidden" name="team" value=(team);
                        input type="hidden" name="user" value=(user);
                        button.link type="submit" { "Unlink " (l) }
                    }
                }
            }
        }
        form method="post" action="/inbox/channels" {
            input type="hidden" name="csrf" value=(csrf);
            input type="hidden" name="action" value="link-slack";
            label for="team" { "Workspace id " } input #team type="text" name="team" required placeholder="T0123ABCD";
            " " label for="user" { "member id " } input #user type="text" name="user" required placeholder="U0123ABCD";
            " " button type="submit" { "Link to me" }
        }
    }
}

fn list(v: Option<&str>) -> Vec<String> {
    v.unwrap_or_default().split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect()
}

fn opt(v: Option<&str>) -> Option<String> {
    v.map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned)
}

/// `POST /inbox/channels`.
pub async fn update(State(hub): State<Hub>, session: Session, Body(body): Body) -> Response {
    let pairs = form_pairs(&body);
    if !session.csrf_ok(form_get(&pairs, "csrf")) {
        return csrf_refused(Some(&session));
    }
    let Some(me) = human_of(&session) else {
        return notice(StatusCode::FORBIDDEN, Some(&session), "Not allowed", "Only operators change channels.");
    };
    let account = session.principal.account.as_str();
    let field = |k: &str| form_get(&pairs, k);
    let result = match field("action").unwrap_or_default() {
        "route" => {
            let number = |k: &str| {
                opt(field(k)).map(|v| v.parse::<u32>().map_err(|_| HubError::validation(format!("`{k}`: a number"))))
            };
            let remind = match number("remind_after").transpose() {
                Ok(v) => v,
                Err(e) => return refused(&session, &e),
            };
            let percent = match number("escalate_percent").transpose() {
                Ok(v) => v.map(|p| u8::try_from(p.min(255)).unwrap_or(255)),
                Err(e) => return refused(&session, &e),
            };
            let (ladder_minutes, offline_minutes) =
                match (number("ladder_minutes").transpose(), number("offline_minutes").transpose()) {
                    (Ok(l), Ok(o)) => (l, o),
                    (Err(e), _) | (_, Err(e)) => return refused(&session, &e),
                };
            let spec = RouteSpec {
                id: field("id").unwrap_or_default().trim().to_owned(),
                agent: opt(field("agent")),
                project: opt(field("project")),
                tag: opt(field("tag")),
                min_priority: opt(field("min_priority")),
                targets: list(field("targets")),
                remind_after_minutes: remind,
                escalate: list(field("escalate")),
                escalate_percent_left: percent,
                ladder: list(field("ladder")),
                ladder_minutes,
                offline_minutes,
            };
            manage::put_route(&hub, &session.who(), account, spec).await
        }
        "remove-route" => manage::remove_route(&hub, &session.who(), account, field("id").unwrap_or_default()).await,
        // an operator links (or unlinks) a Slack user to themself only
        "link-slack" | "unlink-slack" => {
            let (team, user) = (field("team").unwrap_or_default().trim(), field("user").unwrap_or_default().trim());
            let link = field("action") == Some("link-slack");
            manage::link_own_slack(&hub, account, team, user, &me, link).await
        }
        _ => Err(HubError::validation("unknown action")),
    };
    match result {
        Ok(_) => Redirect::to("/inbox/channels").into_response(),
        Err(e) => refused(&session, &e),
    }
}

fn refused(session: &Session, e: &HubError) -> Response {
    match e {
        HubError::Protocol(_) => notice(StatusCode::UNPROCESSABLE_ENTITY, Some(session), "Not saved", &e.to_string()),
        HubError::NotFound => {
            notice(StatusCode::NOT_FOUND, Some(session), "Not found", "There is no such route or link.")
        }
        HubError::NotAuthorized(why) => notice(StatusCode::FORBIDDEN, Some(session), "Not allowed", why),
        other => went_wrong(Some(session), "channels update", &other),
    }
}
