//! `GET/POST /inbox/policies` (issue 40): the account's approval policies — which asks need
//! the same answer from several people, and who may never answer them — listed in the order
//! they are tried, with a form to add or replace one and a **Remove** button each. The same
//! use cases as `PUT /v1/operator/approval-policies/{id}` and `ma2h-hub admin approvals`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use ma2h_core::decisions::delegation;
use ma2h_core::decisions::manage::{self, PolicySpec};
use ma2h_core::{Hub, HubError};
use maud::html;

use super::session::Session;
use super::{csrf_refused, form_get, form_pairs, notice, page, respond, went_wrong};
use crate::extract::{Body, Params};

/// `GET /inbox/policies`.
pub async fn page_get(State(hub): State<Hub>, session: Session, params: Params) -> Response {
    render(&hub, &session, params.get("done").map(str::to_owned), None, StatusCode::OK).await
}

async fn render(
    hub: &Hub,
    session: &Session,
    info: Option<String>,
    error: Option<String>,
    status: StatusCode,
) -> Response {
    let policy = match hub.credentials.get_account_policy(&session.principal.account).await {
        Ok(p) => p.unwrap_or_default(),
        Err(e) => return went_wrong(Some(session), "policies page", &e),
    };
    let csrf = &session.csrf;
    let now = hub.clock.now();
    let grants = match ma2h_core::decisions::grants::list(hub, &session.principal).await {
        Ok(g) => g,
        Err(e) => return went_wrong(Some(session), "policies page", &e),
    };
    let away = ma2h_core::decisions::delegation::running(&policy, now);
    let team = match hub.credentials.operators_seen(&session.principal.account).await {
        Ok(seen) => ma2h_core::decisions::presence::members(&policy, &seen, now),
        Err(e) => return went_wrong(Some(session), "policies page", &e),
    };
    let me = super::claims::me(session).map(ToString::to_string).unwrap_or_default();
    let mine = away.iter().find(|(h, _)| *h == me).map(|(_, a)| a.clone());
    let body = html! {
        @if let Some(i) = &info { p.notice role="status" { (i) } }
        @if let Some(e) = &error { p.notice.error role="alert" { (super::prose(e)) } }
        h1 { "Approval policies" }
        p.hint { "An ask matching a policy needs the same answer from that many different people; "
            "each answer is one approval until the last completes it (a decline ends the ask at once). "
            "A policy can also name people who may never answer, or read the run's owner from one of its "
            code { "agent.labels" } ", or ask each answer to be confirmed with a passkey. The first matching policy applies." }
        @if policy.approvals.is_empty() { p { "No policy: one allowed answer resolves an ask." } }
        @else {
            table.cards {
                thead { tr { th { "Policy" } th { "Matches" } th { "Approvals" } th { "Passkey" } th { "Never" } th {} } }
                tbody {
                    @for p in &policy.approvals {
                        tr {
                            td data-label="Policy" { code { (p.id) } }
                            td data-label="Matches" { (p.filter.describe()) }
                            td data-label="Approvals" { (p.approvals) }
                            td data-label="Passkey" { @if p.passkey { "required" } @else { "—" } }
                            td data-label="Never" {
                                (p.exclude.iter().map(|h| format!("human:{h}")).collect::<Vec<_>>().join(", "))
                                @if let Some(l) = &p.exclude_label { @if !p.exclude.is_empty() { ", " } "the run's " code { (l) } }
                            }
                            td.act {
                                form.inline method="post" action="/inbox/policies" {
                                    input type="hidden" name="csrf" value=(csrf);
                                    input type="hidden" name="action" value="remove";
                                    input type="hidden" name="id" value=(p.id);
                                    button.link type="submit" { "Remove" }
                                }
                            }
                        }
                    }
                }
            }
        }
        h2 #grants { "Standing answers (grants)" }
        p.hint { "Answers a human chose to make stand for later asks of the same kind (the ask's grant key) from one agent. "
            "A sensitive ask, or one under an approval policy, is never answered by a grant." }
        @if grants.is_empty() { p { "None." } }
        @else {
            table.cards {
                thead { tr { th { "Grant" } th { "Agent and key" } th { "Answer" } th { "Scope" } th { "Granted" } th { "Used" } th {} } }
                tbody {
                    @for g in &grants {
                        tr {
                            td data-label="Grant" { code { (g.id) } @if !g.is_active(now) { br; span.hint { @if g.revoked_at.is_some() { "revoked" } @else { "expired" } } } }
                            td data-label="Agent and key" { (g.agent) br; code { (g.key) } }
                            td data-label="Answer" { code { (g.value) } }
                            td data-label="Scope" {
                                @match &g.scope {
                                    ma2h_core::decisions::grants::GrantScope::Minutes => { "timed" }
                                    ma2h_core::decisions::grants::GrantScope::Session { session } => { "session " code { (session) } }
                                    ma2h_core::decisions::grants::GrantScope::Project { project } => { "project " (project) }
                                    ma2h_core::decisions::grants::GrantScope::Agent => { "this agent, until revoked" }
                                }
                                @if let Some(e) = g.expires_at { br; span.hint { "until " (super::rows::absolute(e)) } }
                            }
                            td data-label="Granted" { "human:" (g.granted_by) br; (super::rows::stamp(g.created_at, now)) }
                            td data-label="Used" { (g.uses) }
                            td.act {
                                @if g.is_active(now) {
                                    form.inline method="post" action="/inbox/policies" {
                                        input type="hidden" name="csrf" value=(csrf);
                                        input type="hidden" name="action" value="revoke";
                                        input type="hidden" name="id" value=(g.id);
                                        button.danger type="submit" { "Revoke" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        h2 #away { "Away" }
        p.hint { "While you are away, your delegate may answer the asks that name you (as themself, “on behalf of” you in the answer)." }
        @if away.is_empty() { p { "Nobody is away." } }
        ul { @for (h, a) in &away { li { "human:" (h) " is away until " (super::rows::stamp(a.until, now)) " — human:" (a.delegate) " answers for them." } } }
        @if let Some(a) = &mine {
            form.inline method="post" action="/inbox/policies" {
                input type="hidden" name="csrf" value=(csrf);
                input type="hidden" name="action" value="back";
                "You are away until " (super::rows::absolute(a.until)) ". "
                button.secondary type="submit" { "I'm back" }
            }
        } @else {
            form method="post" action="/inbox/policies" {
                input type="hidden" name="csrf" value=(csrf);
                input type="hidden" name="action" value="away";
                label for="until" { "I'm away until " span.hint { "(UTC)" } }
                input #until type="datetime-local" name="until" required;
                label for="delegate" { "Delegate " span.hint { "(the operator who answers for me)" } }
                input #delegate type="text" name="delegate" required placeholder="bob";
                div.actions { button type="submit" { "Set away" } }
            }
        }
        h2 #team { "Team" }
        p.hint { "When each operator last used the inbox, the API or a channel (at most a minute behind). "
            "An on-call ladder (a route's “On call”, on the " a href="/inbox/channels" { "Channels" } " page) skips "
            "whoever is away — reaching their delegate — or offline." }
        @if team.is_empty() { p { "Nobody yet." } }
        @else {
            table.cards {
                thead { tr { th { "Operator" } th { "State" } th { "Last active" } } }
                tbody {
                    @for m in &team {
                        tr {
                            td data-label="Operator" { "human:" (m.human) }
                            td data-label="State" {
                                (m.state(now))
                                @if let Some((d, _)) = &m.away { " " span.hint { "(human:" (d) " answers)" } }
                            }
                            td data-label="Last active" {
                                @if let Some(t) = m.last_seen { (super::rows::stamp(t, now)) } @else { "never seen" }
                            }
                        }
                    }
                }
            }
        }
        h2 { "Add or replace a policy" }
        form method="post" action="/inbox/policies" {
            input type="hidden" name="csrf" value=(csrf);
            input type="hidden" name="action" value="put";
            label for="pid" { "Id" } input #pid type="text" name="id" required pattern="[a-z0-9-]{1,64}" placeholder="prod-deploys";
            label for="approvals" { "Approvals needed " span.hint { "(different people, 1–10)" } }
            input #approvals type="number" name="approvals" min="1" max="10" value="2" required;
            label for="agent" { "Only this agent " span.hint { "(empty: any)" } } input #agent type="text" name="agent";
            label for="project" { "Only this project" } input #project type="text" name="project";
            label for="tag" { "Only this tag" } input #tag type="text" name="tag";
            label for="minp" { "Priority at least" }
            select #minp name="min_priority" {
                option value="" { "any" } option value="normal" { "normal" } option value="high" { "high" } option value="urgent" { "urgent" }
            }
            label for="exclude" { "Never these operators " span.hint { "(comma-separated ids)" } } input #exclude type="text" name="exclude" placeholder="alice, bob";
            label for="label" { "Never the run's owner named by label " span.hint { "(an agent.labels key)" } }
            input #label type="text" name="exclude_label" placeholder="requested_by";
            label.choice for="sensitive" {
                input #sensitive type="checkbox" name="sensitive" value="1";
                span { "Only sensitive asks" }
            }
            label.choice for="passkey" {
                input #passkey type="checkbox" name="passkey" value="1";
                span { "Confirm each answer with a passkey " span.hint { "(from the inbox; a decline needs none)" } }
            }
            div.actions { button type="submit" { "Save policy" } }
        }
    };
    respond(status, page("Policies", Some(session), body))
}

/// `POST /inbox/policies` (`action=put|remove`).
pub async fn update(State(hub): State<Hub>, session: Session, Body(body): Body) -> Response {
    let pairs = form_pairs(&body);
    if !session.csrf_ok(form_get(&pairs, "csrf")) {
        return csrf_refused(Some(&session));
    }
    let account = session.principal.account.to_string();
    let get = |k: &str| form_get(&pairs, k).map(str::trim).filter(|v| !v.is_empty()).map(str::to_owned);
    let result = match form_get(&pairs, "action") {
        Some("put") => {
            let approvals = match get("approvals").map(|v| v.parse::<u8>()) {
                Some(Ok(n)) => n,
                _ => {
                    return render(
                        &hub,
                        &session,
                        None,
                        Some("`approvals`: a number from 1 to 10".into()),
                        StatusCode::UNPROCESSABLE_ENTITY,
                    )
                    .await;
                }
            };
            let spec = PolicySpec {
                id: get("id").unwrap_or_default(),
                agent: get("agent"),
                project: get("project"),
                tag: get("tag"),
                min_priority: get("min_priority"),
                approvals,
                exclude: get("exclude")
                    .map(|v| v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect())
                    .unwrap_or_default(),
                exclude_label: get("exclude_label"),
                sensitive: get("sensitive").is_some(),
                passkey: get("passkey").is_some(),
            };
            manage::put(&hub, &session.who(), &account, spec).await.map(|_| "Policy saved.")
        }
        Some("remove") => manage::remove(&hub, &session.who(), &account, &get("id").unwrap_or_default())
            .await
            .map(|_| "Policy removed."),
        Some("away") => {
            let until = get("until").and_then(|u| {
                chrono::NaiveDateTime::parse_from_str(&u, "%Y-%m-%dT%H:%M")
                    .ok()
                    .map(|t| chrono::TimeZone::from_utc_datetime(&chrono::Utc, &t))
            });
            match until {
                Some(until) => {
                    delegation::set_mine(&hub, &session.principal, &get("delegate").unwrap_or_default(), until)
                        .await
                        .map(|_| "You are away.")
                }
                None => Err(HubError::validation("`until`: a date and time (UTC)")),
            }
        }
        Some("back") => delegation::lift_mine(&hub, &session.principal).await.map(|_| "Welcome back."),
        Some("revoke") => {
            ma2h_core::decisions::grants::revoke(&hub, &session.principal, &get("id").unwrap_or_default())
                .await
                .map(|_| "Grant revoked.")
        }
        _ => Err(HubError::validation("action must be put, remove, away or back")),
    };
    match result {
        Ok(done) => Redirect::to(&format!("/inbox/policies?done={}", done.replace(' ', "+"))).into_response(),
        Err(e @ HubError::Protocol(_)) => {
            render(&hub, &session, None, Some(e.to_string()), StatusCode::UNPROCESSABLE_ENTITY).await
        }
        Err(HubError::NotFound) => {
            notice(StatusCode::NOT_FOUND, Some(&session), "Not found", "There is no such grant in your account.")
        }
        Err(e @ HubError::NotAuthorized(_)) => {
            notice(StatusCode::FORBIDDEN, Some(&session), "Not allowed", &e.to_string())
        }
        Err(e) => went_wrong(Some(&session), "policies update", &e),
    }
}
