//! `GET /metrics` on the local server: the Hub's metrics (ma2h_core::kernel::metrics) as Prometheus
//! text. Open counts are read from the store at scrape time, so they are right after a restart.
//! Served to loopback clients, and to anyone presenting an operator key (a remote scraper's
//! `bearer_token`); the labels never carry ids or content (§9.6).

use std::sync::OnceLock;

use axum::Extension;
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use ma2h_core::Hub;
use ma2h_core::kernel::auth;
use ma2h_core::kernel::credentials::PrincipalId;
use ma2h_core::kernel::metrics::{self as m, ANSWER_BUCKETS, LATENCY_BUCKETS};
use ma2h_http::extract::ClientIp;
use ma2h_protocol::envelope::{MessageType, Priority};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// Install the process-wide Prometheus recorder once (a second call returns the same handle).
pub fn install() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let recorder = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Full(m::HTTP_DURATION.into()), &LATENCY_BUCKETS)
                .and_then(|b| b.set_buckets_for_metric(Matcher::Full(m::TIME_TO_ANSWER.into()), &ANSWER_BUCKETS))
                .expect("static, non-empty buckets")
                .build_recorder();
            let handle = recorder.handle();
            // Fails only if another recorder was installed first (then this one stays empty).
            if metrics::set_global_recorder(recorder).is_err() {
                tracing::warn!("a metrics recorder was already installed; /metrics shows none of the Hub's");
            }
            m::describe();
            handle
        })
        .clone()
}

/// The `/metrics` route, to merge into the Router.
pub fn routes(hub: Hub, handle: PrometheusHandle) -> Router {
    Router::new().route("/metrics", get(render)).with_state((hub, handle))
}

async fn render(
    State((hub, handle)): State<(Hub, PrometheusHandle)>,
    ip: Option<Extension<ClientIp>>,
    headers: HeaderMap,
) -> Response {
    let key = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
    if !allowed(&hub, ip.map(|Extension(ip)| ip), key).await {
        return (StatusCode::FORBIDDEN, "metrics: loopback clients or an operator key only\n").into_response();
    }
    if let Err(e) = refresh_open(&hub).await {
        tracing::warn!(error = %e, "metrics: open counts not refreshed");
    }
    handle.run_upkeep();
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], handle.render()).into_response()
}

async fn allowed(hub: &Hub, ip: Option<ClientIp>, key: Option<&str>) -> bool {
    if ip.is_some_and(|ip| ip.0.is_loopback()) {
        return true;
    }
    matches!(auth::authenticate(hub, key).await, Ok(p) if matches!(p.id, PrincipalId::Operator(_)))
}

/// Open messages by priority and by type, summed over every account.
async fn refresh_open(hub: &Hub) -> Result<(), ma2h_core::ports::StoreError> {
    let mut accounts: Vec<_> = hub.credentials.list_credentials().await?.into_iter().map(|c| c.account).collect();
    accounts.sort();
    accounts.dedup();
    let (mut by_priority, mut by_type) = ([0u64; 4], [0u64; 3]);
    for account in &accounts {
        let counts = hub.messages.open_counts(account, &Default::default()).await?;
        for (i, p) in PRIORITIES.iter().enumerate() {
            by_priority[i] += counts.priority(*p);
        }
        for (i, k) in TYPES.iter().enumerate() {
            by_type[i] += counts.kind(*k);
        }
    }
    for (i, p) in PRIORITIES.iter().enumerate() {
        m::open(p.as_str(), by_priority[i]);
    }
    for (i, k) in TYPES.iter().enumerate() {
        m::open_by_type(k.as_str(), by_type[i]);
    }
    Ok(())
}

const PRIORITIES: [Priority; 4] = [Priority::Urgent, Priority::High, Priority::Normal, Priority::Low];
const TYPES: [MessageType; 3] = [MessageType::Notify, MessageType::Ask, MessageType::Task];

#[cfg(test)]
mod tests {
    use super::*;
    use ma2h_core::admin;
    use ma2h_core::kernel::settings::Settings;

    #[tokio::test]
    async fn a_remote_scrape_needs_an_operator_key_and_loopback_needs_none() {
        let dir = tempfile::tempdir().unwrap();
        let settings = Settings { data_dir: dir.path().into(), ..Settings::default() };
        let hub = crate::app::build_hub(settings).unwrap();
        let operator = admin::create_operator(&hub, "acme", "alice", None).await.unwrap().api_key;
        let agent = admin::create_agent(&hub, "acme", "bot", None).await.unwrap().api_key;
        let remote = Some(ClientIp("10.1.2.3".parse().unwrap()));
        let loopback = Some(ClientIp("127.0.0.1".parse().unwrap()));
        assert!(allowed(&hub, remote, Some(&operator)).await);
        assert!(!allowed(&hub, remote, Some(&agent)).await, "an agent key is not enough");
        assert!(!allowed(&hub, remote, None).await);
        assert!(!allowed(&hub, remote, Some("ma2h_wrong")).await);
        assert!(!allowed(&hub, None, None).await, "an unknown client is remote");
        assert!(allowed(&hub, loopback, None).await);
    }
}
