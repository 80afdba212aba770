//! `POST /v1/integrations/slack/interactions` (issue 20): Slack's interactivity requests — a
//! button pressed on a Hub post. Authenticated by Slack's request signature (not a Hub
//! credential), answered 200 at once as Slack expects; the pressing user learns the outcome from
//! an ephemeral reply. Locally the press is applied before the answer (milliseconds); on AWS the
//! verified press is queued and the `deliver` function applies it, so Slack's 3 seconds never
//! depend on the store.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use ma2h_core::Hub;
use ma2h_core::channels::slack;
use ma2h_protocol::ids::AccountId;

use crate::error::ApiError;
use crate::extract::{Body, Params};

pub async fn slack_interactions(
    State(hub): State<Hub>,
    params: Params,
    headers: HeaderMap,
    // The Hub's body extractor: an over-size or unreadable body is an envelope like everywhere
    // else (a black-box pass found axum's plain-text 413 here, before any signature check).
    Body(body): Body,
) -> Result<Response, ApiError> {
    // `?account=`: the account whose Slack app this is (set in the app's Request URL).
    let account =
        AccountId::parse(params.get("account").unwrap_or("default")).ok_or(ma2h_core::HubError::Unauthenticated)?;
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let applied =
        slack::interaction(&hub, &account, header("x-slack-request-timestamp"), header("x-slack-signature"), &body)
            .await?;
    // `None`: queued (AWS) — the `deliver` function applies it and replies.
    if let Some((outcome, response_url)) = applied
        && let (Some(text), Some(url)) = (outcome.reply(), response_url)
    {
        // Inline (a Lambda may freeze a task left running after its response), bounded so that
        // Slack still gets its 200 within its 3 seconds.
        slack::reply(&hub, &url, &text).await;
    }
    Ok(StatusCode::OK.into_response())
}
