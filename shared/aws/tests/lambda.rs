//! The Lambda handlers in-process against moto (DynamoDB + SQS): API Gateway HTTP API (payload
//! v2) events through the shared Router, the SQS `deliver` handler, and the scheduled `sweep`.
//! Skipped loudly without `AWS_ENDPOINT_URL`, failed if `MA2H_REQUIRE_AWS_TESTS=1`.

mod support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use aws_lambda_events::sqs::SqsEvent;
use axum::http::StatusCode;
use chrono::Duration;
use http_body_util::BodyExt;
use ma2h_aws::{AwsSettings, Deployment, assemble, handlers};
use ma2h_core::admin;
use ma2h_core::kernel::auth;
use ma2h_core::messages::resolve;
use ma2h_core::ports::ManualClock;
use ma2h_queue_sqs::SqsPushQueue;
use ma2h_store_dynamodb::{DynamoStore, provision};
use serde_json::{Value, json};
use support::{event, event_from, moto_config, raw_event, sqs_event, test_settings, unique};
use tower::ServiceExt;

const SCHEDULE: &str = include_str!("fixtures/schedule-event.json");

struct Env {
    /// The test's own set-up and inspection (moto's key, unchecked).
    dep: Deployment,
    /// The template's functions, each with its own role (IAM enforced).
    fns: support::Functions,
    clock: Arc<ManualClock>,
    agent: String,
    operator: String,
}

async fn env() -> Option<Env> {
    env_with(TEMPLATE, true).await
}

/// [`env`] with the functions' policies from `template` (a copy with a grant removed); only
/// `report`ing runs write the IAM decision log (a test's deliberate denials are no under-grant).
async fn env_with(template: &str, report: bool) -> Option<Env> {
    let config = moto_config().await?;
    let table = unique("lambda");
    let ddb = aws_sdk_dynamodb::Client::new(&config);
    provision::create_table(&ddb, &table).await.unwrap();
    let sqs = aws_sdk_sqs::Client::new(&config);
    let queue_url = sqs.create_queue().queue_name(unique("push")).send().await.unwrap().queue_url.unwrap();
    let mut settings = test_settings();
    settings.push.backoff_base = std::time::Duration::from_millis(100);
    let aws = AwsSettings {
        table: table.clone(),
        push_queue_url: queue_url.clone(),
        long_poll_interval: std::time::Duration::from_millis(50),
        // a few shards keep each sweep's reads few on moto (the cost tests run the default)
        shards: 4,
        list_shards: 4,
    };
    // One hand-moved clock for every hub and store (a store judges retention by it).
    let clock = Arc::new(ManualClock::new(chrono::Utc::now()));
    let mut fns = support::Functions::start(&config, template, &settings, &aws, report, clock.clone()).await;
    let mut dep = assemble(
        settings,
        &aws,
        DynamoStore::new(ddb, table).with_shards(aws.store_shards()).with_clock(clock.clone()),
        SqsPushQueue::new(sqs, queue_url),
    )
    .unwrap();
    dep.hub.clock = clock.clone();
    for f in fns.each_mut() {
        f.hub.clock = clock.clone();
    }
    let agent = admin::create_agent(&dep.hub, "acme", "bot", None).await.unwrap().api_key;
    let operator = admin::create_operator(&dep.hub, "acme", "alice", None).await.unwrap().api_key;
    Some(Env { dep, fns, clock, agent, operator })
}

const TEMPLATE: &str = include_str!("../../../infra/template.yaml");

impl Env {
    fn deliver(&self) -> &Deployment {
        self.fns.get("DeliverFunction")
    }

    fn sweep(&self) -> &Deployment {
        self.fns.get("SweepFunction")
    }

    /// Change the settings of every deployment (as a redeploy with new variables would).
    fn set_settings(&mut self, change: impl Fn(&mut ma2h_core::kernel::settings::Settings)) {
        for dep in std::iter::once(&mut self.dep).chain(self.fns.each_mut()) {
            let mut s = (*dep.hub.settings).clone();
            change(&mut s);
            dep.hub.settings = Arc::new(s);
        }
    }
}

/// Serve `req` with the function the template routes it to, under that function's role.
async fn call(e: &Env, req: lambda_http::Request) -> (StatusCode, Value) {
    support::call_routed(&e.fns, req).await
}

fn ask(key: &str, callback: Option<Value>) -> Value {
    let mut env = json!({
        "ma2h_version": "0.5", "type": "ask", "created_at": "2026-12-02T15:00:00Z",
        "agent": { "id": "bot", "run_id": "r1", "runtime": "github-actions" },
        "title": "Ship?", "idempotency_key": key,
        "request": { "mode": "select", "options": [{"value": "ship", "label": "Ship"}, {"value": "hold", "label": "Hold"}],
                     "allowed_resolvers": ["human:alice"] }
    });
    if let Some(cb) = callback {
        env["request"]["callback"] = cb;
    }
    env
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_gateway_events_are_served_by_the_shared_router_over_dynamodb() {
    let Some(e) = env().await else { return };
    let (status, ack) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&ask("k1", None)))).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{ack}");
    assert!(ack["poll_url"].as_str().unwrap().starts_with("https://api.test/v1/messages/msg_"));
    let id = ack["id"].as_str().unwrap().to_owned();
    // idempotent replay through the TransactWriteItems claim
    let (_, again) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&ask("k1", None)))).await;
    assert_eq!(again["id"], ack["id"]);
    let (status, read) = call(&e, event("GET", &format!("/v1/messages/{id}"), &e.agent, None)).await;
    assert_eq!((status, read["status"].as_str()), (StatusCode::OK, Some("open")));
    let (status, _) = call(&e, event("GET", &format!("/v1/messages/{id}"), &e.operator, None)).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "submitter-bound on Lambda too");
    let body = json!({"resolution": "answered", "value": "ship"});
    let (status, res) = call(&e, event("POST", &format!("/v1/messages/{id}/resolve"), &e.operator, Some(&body))).await;
    assert_eq!(status, StatusCode::OK, "{res}");
    let (status, c) = call(&e, event("POST", &format!("/v1/messages/{id}/cancel"), &e.agent, None)).await;
    assert_eq!((status, c["status"].as_str()), (StatusCode::CONFLICT, Some("answered")));
    let (_, read) = call(&e, event("GET", &format!("/v1/messages/{id}?wait=1"), &e.agent, None)).await;
    assert_eq!(read["response"]["resolution_id"], res["resolution_id"]);
    let (status, cap) = call(&e, event("GET", "/.well-known/ma2h", &e.agent, None)).await;
    assert_eq!((status, cap["ma2h_version"].as_str()), (StatusCode::OK, Some("0.5")));
}

/// A callback receiver answering each path from a script (then 200), counting hits.
async fn receiver(script: HashMap<&'static str, Vec<u16>>) -> (String, Arc<Mutex<HashMap<String, usize>>>) {
    let hits = Arc::new(Mutex::new(HashMap::<String, usize>::new()));
    let script = Arc::new(Mutex::new(script.into_iter().map(|(k, v)| (k.to_owned(), v)).collect::<HashMap<_, _>>()));
    let (h, s) = (hits.clone(), script.clone());
    let app = axum::Router::new().route(
        "/cb/{path}",
        axum::routing::post(move |axum::extract::Path(p): axum::extract::Path<String>| {
            let (h, s) = (h.clone(), s.clone());
            async move {
                *h.lock().unwrap().entry(p.clone()).or_default() += 1;
                let next =
                    s.lock().unwrap().get_mut(&p).and_then(|v| (!v.is_empty()).then(|| v.remove(0))).unwrap_or(200);
                StatusCode::from_u16(next).unwrap()
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/cb"), hits)
}

/// Submit a push ask and resolve it (which enqueues the push to SQS); returns the message id.
async fn pushed_and_resolved(e: &Env, key: &str, url: &str) -> String {
    let cb = json!({"mode": "push", "url": url, "auth": {"scheme": "hmac", "secret_ref": "cb"}});
    let (status, ack) = call(e, event("POST", "/v1/messages", &e.agent, Some(&ask(key, Some(cb))))).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{ack}");
    let id = ack["id"].as_str().unwrap().to_owned();
    let who = auth::authenticate(&e.dep.hub, Some(&e.operator)).await.unwrap();
    resolve::resolve(&e.dep.hub, &who, None, &id, br#"{"resolution":"declined"}"#).await.unwrap();
    id
}

/// Receive every queued job as one SQS event (the fixture's shape, real bodies and handles).
async fn drain(e: &Env) -> SqsEvent {
    let out = e
        .dep
        .queue
        .client()
        .receive_message()
        .queue_url(e.dep.queue.queue_url())
        .max_number_of_messages(10)
        .send()
        .await
        .unwrap();
    sqs_event(out.messages())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deliver_handler_pushes_and_returns_retryable_failures_to_the_queue() {
    let Some(mut e) = env().await else { return };
    admin::bind_callback(&e.dep.hub, "acme", "bot", "127.0.0.1").await.unwrap();
    admin::put_secret(&e.dep.hub, "acme", "bot", "cb", "s3cret").await.unwrap();
    let (base, hits) = receiver(HashMap::from([("down", vec![503, 503, 503])])).await;
    let ok = pushed_and_resolved(&e, "d1", &format!("{base}/ok")).await;
    let down = pushed_and_resolved(&e, "d2", &format!("{base}/down")).await;

    let batch = drain(&e).await;
    assert_eq!(batch.records.len(), 2, "the terminal transitions enqueued both pushes");
    let sender = handlers::deliverer(e.deliver()).unwrap();
    let response = handlers::deliver(e.deliver(), &sender, batch.clone()).await;
    assert_eq!(hits.lock().unwrap().get("ok"), Some(&1));
    assert_eq!(hits.lock().unwrap().get("down"), Some(&1));
    let failed: Vec<&str> = response.batch_item_failures.iter().map(|f| f.item_identifier.as_str()).collect();
    let down_msg = batch.records.iter().find(|r| r.body.as_deref().unwrap_or("").contains(&down)).unwrap();
    assert_eq!(failed, [down_msg.message_id.as_deref().unwrap()], "only the 503 stays on the queue");

    // The backoff the attempt recorded becomes the job's invisibility: 100 ms rounds to 0 s, so
    // it is visible again at once (not after the queue's default visibility timeout)…
    let again = drain(&e).await;
    assert_eq!(again.records.len(), 1, "the retryable job is back without waiting");
    // …and a minute-scale backoff keeps it hidden.
    e.set_settings(|s| s.push.backoff_base = std::time::Duration::from_secs(60));
    let response = handlers::deliver(e.deliver(), &sender, again).await;
    assert_eq!(response.batch_item_failures.len(), 1, "the second 503 is retryable too");
    assert_eq!(hits.lock().unwrap().get("down"), Some(&2));
    assert!(drain(&e).await.records.is_empty(), "hidden for the recorded backoff");

    let (_, read) = call(&e, event("GET", &format!("/v1/messages/{ok}"), &e.agent, None)).await;
    assert_eq!(read["delivery"]["state"], "delivered-to-agent");
    let (_, read) = call(&e, event("GET", &format!("/v1/messages/{down}"), &e.agent, None)).await;
    // No push was delivered; this authenticated read is the delivery evidence (§14.2).
    assert_eq!(read["delivery"]["state"], "delivered-to-agent");
    // a malformed job is consumed, not retried forever
    let mut junk = batch;
    junk.records.truncate(1);
    junk.records[0].body = Some("{}".into());
    assert!(handlers::deliver(e.deliver(), &sender, junk).await.batch_item_failures.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sweep_handler_expires_due_messages_and_requeues_lost_pushes() {
    let Some(e) = env().await else { return };
    admin::bind_callback(&e.dep.hub, "acme", "bot", "127.0.0.1").await.unwrap();
    admin::put_secret(&e.dep.hub, "acme", "bot", "cb", "s3cret").await.unwrap();
    let mut due = ask("s1", None);
    due["expires_at"] = json!((chrono::Utc::now() + Duration::minutes(1)).to_rfc3339());
    let (_, ack) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&due))).await;
    let due_id = ack["id"].as_str().unwrap().to_owned();
    let pushed = pushed_and_resolved(&e, "s2", "http://127.0.0.1:9/cb/x").await;
    // The job was announced before the terminal committed (SQS holds it: no index entry).
    let (_, read) = call(&e, event("GET", &format!("/v1/messages/{pushed}"), &e.agent, None)).await;
    assert_eq!(read["status"], "declined");
    // Its first attempt fails (nothing listens on port 9): retried, so indexed for the sweeper
    // at its next attempt; then the job is lost (deleted, as if the queue had dropped it).
    let lost = drain(&e).await;
    assert_eq!(lost.records.len(), 1);
    let sender = handlers::deliverer(e.deliver()).unwrap();
    let retried = handlers::deliver(e.deliver(), &sender, lost.clone()).await;
    assert_eq!(retried.batch_item_failures.len(), 1, "a retryable failure stays on the queue");
    for r in &lost.records {
        e.dep
            .queue
            .client()
            .delete_message()
            .queue_url(e.dep.queue.queue_url())
            .receipt_handle(r.receipt_handle.clone().unwrap())
            .send()
            .await
            .unwrap();
    }
    e.clock.advance(Duration::minutes(10));
    // the EventBridge schedule event the sweep function receives parses as what it is
    let tick: aws_lambda_events::eventbridge::EventBridgeEvent = serde_json::from_str(SCHEDULE).unwrap();
    assert_eq!(tick.detail_type, "Scheduled Event");
    let outcome = handlers::sweep(e.sweep()).await.unwrap();
    assert_eq!((outcome.expired, outcome.requeued), (1, 1), "{outcome:?}");
    let (_, read) = call(&e, event("GET", &format!("/v1/messages/{due_id}"), &e.agent, None)).await;
    assert_eq!(read["status"], "expired");
    let again = drain(&e).await;
    assert!(again.records.iter().any(|r| r.body.as_deref().unwrap_or("").contains(&pushed)), "re-enqueued");
    // leased: the next sweep does not enqueue it again
    assert_eq!(handlers::sweep(e.sweep()).await.unwrap().requeued, 0);
}

/// §3.1 with the job announced before the terminal commits: a job whose terminal has not
/// committed is retried shortly, then dropped once it is older than the grace; a job whose
/// terminal lost the CAS to another is dropped; neither pushes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn announced_jobs_push_only_the_terminal_that_committed() {
    use ma2h_core::ports::PushQueue;
    let Some(e) = env().await else { return };
    admin::bind_callback(&e.dep.hub, "acme", "bot", "127.0.0.1").await.unwrap();
    admin::put_secret(&e.dep.hub, "acme", "bot", "cb", "s3cret").await.unwrap();
    let (base, hits) = receiver(HashMap::new()).await;
    let sender = handlers::deliverer(e.deliver()).unwrap();
    let cb = json!({"mode": "push", "url": format!("{base}/a"), "auth": {"scheme": "hmac", "secret_ref": "cb"}});
    let (_, ack) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&ask("a1", Some(cb))))).await;
    let id = ma2h_protocol::ids::MessageId::parse(ack["id"].as_str().unwrap()).unwrap();
    let acme = ma2h_protocol::ids::AccountId::parse("acme").unwrap();
    let stray = e.dep.hub.new_resolution_id();

    // announced, never committed: retried while young, dropped after the grace
    assert!(e.dep.queue.announce(&acme, &id, &stray, e.dep.hub.clock.now()).await.unwrap());
    let young = drain(&e).await;
    assert_eq!(handlers::deliver(e.deliver(), &sender, young.clone()).await.batch_item_failures.len(), 1);
    e.clock.advance(ma2h_core::push::deliver::UNCOMMITTED_GRACE + Duration::seconds(1));
    assert!(handlers::deliver(e.deliver(), &sender, young).await.batch_item_failures.is_empty(), "dropped");

    // the real terminal commits (its own job), the stray one names another resolution: dropped
    let who = auth::authenticate(&e.dep.hub, Some(&e.operator)).await.unwrap();
    resolve::resolve(&e.dep.hub, &who, None, id.as_str(), br#"{"resolution":"declined"}"#).await.unwrap();
    assert!(e.dep.queue.announce(&acme, &id, &stray, e.dep.hub.clock.now()).await.unwrap());
    std::thread::sleep(std::time::Duration::from_millis(50));
    let both = drain(&e).await;
    assert_eq!(both.records.len(), 2);
    assert!(handlers::deliver(e.deliver(), &sender, both).await.batch_item_failures.is_empty());
    assert_eq!(hits.lock().unwrap().get("a"), Some(&1), "pushed once, by the committed terminal's job");
    let (_, read) = call(&e, event("GET", &format!("/v1/messages/{id}"), &e.agent, None)).await;
    assert_eq!(read["status"], "declined");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_authentications_from_one_source_ip_are_throttled() {
    // issue 13 item 9, on the Lambda path: API Gateway's sourceIp is the client
    let Some(mut e) = env().await else { return };
    e.set_settings(|s| s.auth_failures_per_minute = 3);
    let attacker = Some("198.51.100.7");
    for _ in 0..3 {
        let (status, _) = call(&e, event_from(attacker, "GET", "/v1/operator/messages", "ma2h_op_wrong", None)).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    let req = event_from(attacker, "GET", "/v1/operator/messages", "ma2h_op_wrong", None);
    let resp = ma2h_aws::http_app(e.fns.for_request(&req)).oneshot(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(resp.headers().contains_key("retry-after"));
    // another client is unaffected, and a valid key from the throttled one still works
    let (status, _) = call(&e, event_from(Some("192.0.2.1"), "GET", "/v1/operator/messages", "ma2h_op_x", None)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = call(&e, event_from(attacker, "GET", "/v1/operator/messages", &e.operator, None)).await;
    assert_eq!(status, StatusCode::OK);
}

/// The human→agent leg as the Lambda functions serve it: a directive through the operator
/// route, a long-polling drain that finds it by re-polling DynamoDB (no in-process wake-up
/// across Lambda instances), the ack, and the track.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn directives_are_drained_and_acked_through_lambda_events() {
    let Some(e) = env().await else { return };
    let directive = json!({"to": "agent:bot", "title": "Freeze deploys", "priority": "high"});
    let (status, sent) = call(&e, event("POST", "/v1/operator/directives", &e.operator, Some(&directive))).await;
    assert_eq!(status, StatusCode::CREATED, "{sent}");
    let id = sent["id"].as_str().unwrap().to_owned();
    let (status, drained) = call(&e, event("GET", "/v1/inbox?wait=2", &e.agent, None)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(drained["messages"][0]["directive"]["id"], json!(id));
    assert!(drained["messages"][0]["signature"].as_str().unwrap().starts_with("MA2H-Signature: t="));
    let (_, acked) = call(&e, event("POST", "/v1/inbox/ack", &e.agent, Some(&json!({"ids": [id]})))).await;
    assert_eq!(acked, json!({"acked": 1}));
    let (_, track) = call(&e, event("GET", &format!("/v1/operator/directives/{id}"), &e.operator, None)).await;
    assert_eq!(track["delivery"]["state"], "acknowledged");
    let (_, presence) = call(&e, event("GET", "/v1/agents/bot/presence", &e.operator, None)).await;
    assert_eq!(presence["state"], "online");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_registered_renewed_killed_and_swept_through_lambda_events() {
    let Some(e) = env().await else { return };
    let (status, reg) = call(&e, event("POST", "/v1/sessions", &e.agent, Some(&json!({"ttl_seconds": 60})))).await;
    assert_eq!(status, StatusCode::CREATED, "{reg}");
    let sess = reg["session"]["id"].as_str().unwrap().to_owned();
    let directive = json!({"to": format!("agent:bot#{sess}"), "title": "Only this run"});
    let (status, sent) = call(&e, event("POST", "/v1/operator/directives", &e.operator, Some(&directive))).await;
    assert_eq!(status, StatusCode::CREATED, "{sent}");
    let (_, plain) = call(&e, event("GET", "/v1/inbox", &e.agent, None)).await;
    assert_eq!(plain["messages"], json!([]), "session-addressed: not on a session-less drain");
    let (_, drained) = call(&e, event("GET", &format!("/v1/inbox?session={sess}"), &e.agent, None)).await;
    assert_eq!(drained["messages"][0]["directive"]["id"], sent["id"]);

    // The operator's kill-switch: the session ends, its mail bounces, the agent is stopped.
    let (status, killed) = call(&e, event("DELETE", &format!("/v1/sessions/{sess}"), &e.operator, None)).await;
    assert_eq!((status, killed["session"]["closed_by_operator"].as_bool()), (StatusCode::OK, Some(true)));
    let id = sent["id"].as_str().unwrap();
    let (_, track) = call(&e, event("GET", &format!("/v1/operator/directives/{id}"), &e.operator, None)).await;
    assert_eq!(
        (track["delivery"]["state"].as_str(), track["delivery"]["prior"].as_str()),
        (Some("bounced"), Some("delivered"))
    );
    let (status, refused) = call(&e, event("POST", "/v1/sessions", &e.agent, Some(&json!({})))).await;
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (StatusCode::FORBIDDEN, Some("session_closed_by_operator"))
    );
    let (status, _) = call(&e, event("DELETE", "/v1/agents/bot/stop", &e.operator, None)).await;
    assert_eq!(status, StatusCode::OK);

    // A lapsed lease is expired by the scheduled sweep, and gone after retention (DynamoDB's TTL
    // deletes it; until then it reads as purged).
    let (_, reg) = call(&e, event("POST", "/v1/sessions", &e.agent, Some(&json!({"ttl_seconds": 60})))).await;
    let lapsing = reg["session"]["id"].as_str().unwrap().to_owned();
    e.clock.advance(chrono::Duration::seconds(61));
    let outcome = handlers::sweep(e.sweep()).await.unwrap();
    assert_eq!(outcome.sessions_expired, 1, "{outcome:?}");
    let (_, read) = call(&e, event("GET", &format!("/v1/sessions/{lapsing}"), &e.agent, None)).await;
    assert_eq!(read["session"]["state"], "expired");
    e.clock.advance(chrono::Duration::days(2));
    assert_eq!(handlers::sweep(e.sweep()).await.unwrap().sessions_purged, 0, "the TTL's, not the sweeper's");
    let (status, _) = call(&e, event("GET", &format!("/v1/sessions/{lapsing}"), &e.agent, None)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_to_agent_ask_is_routed_answered_and_acknowledged_through_lambda_events() {
    let Some(e) = env().await else { return };
    let worker = admin::create_agent(&e.dep.hub, "acme", "worker", None).await.unwrap().api_key;
    let (status, policy) =
        call(&e, event("PATCH", "/v1/operator/inter-agent", &e.operator, Some(&json!({"enabled": true})))).await;
    assert_eq!((status, policy["enabled"].as_bool()), (StatusCode::OK, Some(true)), "{policy}");
    let (_, reg) = call(&e, event("POST", "/v1/sessions", &worker, Some(&json!({"ttl_seconds": 600})))).await;
    let sess = reg["session"]["id"].as_str().unwrap().to_owned();
    let ask = json!({"ma2h_version": "0.5", "type": "ask", "created_at": "2026-06-04T12:00:00Z",
                     "agent": {"id": "bot", "run_id": "r", "runtime": "cloud"}, "to": "agent:worker",
                     "title": "Restart the consumer?", "idempotency_key": "a2a-1", "request": {"mode": "confirm"}});
    let (status, ack) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&ask))).await;
    assert_eq!(
        (status, ack["status"].as_str(), &ack["destination"]),
        (StatusCode::ACCEPTED, Some("open"), &json!({"state": "unknown"}))
    );
    let id = ack["id"].as_str().unwrap().to_owned();
    let (_, drained) = call(&e, event("GET", &format!("/v1/inbox?session={sess}"), &worker, None)).await;
    assert_eq!(drained["messages"][0]["message"]["from"], "agent:bot");
    let answer = json!({"resolution": "answered", "value": "approve"});
    let (status, done) =
        call(&e, event("POST", &format!("/v1/messages/{id}/resolve?session={sess}"), &worker, Some(&answer))).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    let (_, acked) =
        call(&e, event("POST", &format!("/v1/inbox/ack?session={sess}"), &worker, Some(&json!({"ids": [id]})))).await;
    assert_eq!(acked, json!({"acked": 1}));
    let (_, read) = call(&e, event("GET", &format!("/v1/messages/{id}"), &e.agent, None)).await;
    assert_eq!((read["status"].as_str(), read["mailbox"]["state"].as_str()), (Some("answered"), Some("acknowledged")));
    assert_eq!(read["response"]["response"]["actor"], format!("agent:worker#{sess}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_openapi_and_the_api_gateway_request_id_through_lambda_events() {
    let Some(e) = env().await else { return };
    let resp = {
        let req = event("GET", "/healthz", "", None);
        tower::ServiceExt::oneshot(ma2h_aws::http_app(e.fns.for_request(&req)), req)
    }
    .await
    .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    // the fixture's requestContext.requestId is the request id the Router answers and logs
    assert_eq!(resp.headers()["x-request-id"], "c6af9ac6-7b61-11e6-9a41-93e8deadbeef");
    let (status, doc) = call(&e, event("GET", "/openapi.json", "", None)).await;
    assert_eq!((status, doc["openapi"].as_str()), (StatusCode::OK, Some("3.1.0")));
    assert_eq!(doc["servers"][0]["url"], "https://api.test", "the deployment's public URL");
}

/// Issue 20 on Lambda: the `resolve` function verifies a Slack press and answers 200 at once
/// without applying it; the `deliver` function applies it from the queue as the linked operator
/// and replies to Slack's `response_url`. A replay of the same signed request is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slack_press_is_acknowledged_at_once_and_applied_from_the_queue() {
    use ma2h_core::channels::manage;
    let Some(e) = env().await else { return };
    manage::put_slack(&e.dep.hub, "admin", "acme", "ops", "T0TEAM", "C0OPS", "xoxb-1", "slack-signing").await.unwrap();
    manage::link_slack(&e.dep.hub, "admin", "acme", "T0TEAM", "U0ALICE", Some("alice")).await.unwrap();
    let (status, ack) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&ask("s1", None)))).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{ack}");
    let id = ack["id"].as_str().unwrap().to_owned();
    drain(&e).await; // no route: nothing else is queued; leaves the queue empty

    let (reply_base, replies) = receiver(HashMap::new()).await;
    let payload = json!({"type": "block_actions", "team": {"id": "T0TEAM"}, "user": {"id": "U0ALICE"},
        "response_url": format!("{reply_base}/reply"),
        "actions": [{"action_id": "ma2h_answer_0", "value": format!("{id} ship")}]});
    let body = format!("payload={}", ma2h_test_support::form_encode(&payload.to_string()));
    let ts = ma2h_core::ports::Clock::now(e.clock.as_ref()).timestamp().to_string();
    let mac = ma2h_protocol::signature::sign_canonical_raw(
        format!("v0:{ts}:{body}").as_bytes(),
        &ma2h_protocol::signature::SigningKey::Hmac(b"slack-signing".to_vec()),
    );
    let sig = format!("v0={}", hex::encode(mac));
    let headers = [
        ("content-type", "application/x-www-form-urlencoded"),
        ("x-slack-request-timestamp", ts.as_str()),
        ("x-slack-signature", sig.as_str()),
    ];
    let path = "/v1/integrations/slack/interactions?account=acme";
    let (status, _) = call(&e, raw_event("POST", path, &headers, &body)).await;
    assert_eq!(status, StatusCode::OK);
    let (_, read) = call(&e, event("GET", &format!("/v1/messages/{id}"), &e.agent, None)).await;
    assert_eq!(read["status"], "open", "acknowledged, not yet applied");
    let (status, _) = call(&e, raw_event("POST", path, &headers, &body)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "the same signed request twice is a replay");

    let batch = drain(&e).await;
    assert_eq!(batch.records.len(), 1, "one queued press");
    let sender = handlers::deliverer(e.deliver()).unwrap();
    assert!(handlers::deliver(e.deliver(), &sender, batch).await.batch_item_failures.is_empty());
    let (_, read) = call(&e, event("GET", &format!("/v1/messages/{id}"), &e.agent, None)).await;
    assert_eq!(read["status"], "answered", "{read}");
    assert_eq!(read["response"]["response"]["actor"], "human:alice");
    assert_eq!(replies.lock().unwrap().get("reply"), Some(&1), "the ephemeral reply went to response_url");
}

/// The auth-failure counter on the mailbox route (the first wrong key of a client-minute opens
/// the window with a put): a 401 under the inbox function's own role, never a denied write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_key_on_the_mailbox_route_is_a_401_under_the_inbox_functions_role() {
    let Some(e) = env().await else { return };
    let (status, body) = call(&e, event_from(Some("203.0.113.9"), "GET", "/v1/inbox", "ma2h_agent_wrong", None)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    let (status, _) = call(&e, event("GET", "/v1/inbox", &e.agent, None)).await;
    assert_eq!(status, StatusCode::OK);
}

/// §14.2 repair on read: an ask still queued for a session that ended without its bounce (a
/// bounce that lost the race with the entry's write) is bounced by whichever function reads it
/// next — get, cancel, resolve — each under its own role (the mailbox index, the bounce's writes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_repairs_the_bounce_a_sessions_end_missed_in_every_function_that_settles() {
    let Some(e) = env().await else { return };
    let worker = admin::create_agent(&e.dep.hub, "acme", "worker", None).await.unwrap().api_key;
    let (status, _) =
        call(&e, event("PATCH", "/v1/operator/inter-agent", &e.operator, Some(&json!({"enabled": true})))).await;
    assert_eq!(status, StatusCode::OK);
    // One session per ask: a session's bounce takes all of its mail, and each function must
    // find its own ask still queued.
    let acme = ma2h_protocol::ids::AccountId::parse("acme").unwrap();
    let mut ids = Vec::new();
    for n in 0..3 {
        let (_, reg) = call(&e, event("POST", "/v1/sessions", &worker, Some(&json!({"ttl_seconds": 600})))).await;
        let sess = reg["session"]["id"].as_str().unwrap().to_owned();
        let ask = json!({"ma2h_version": "0.5", "type": "ask", "created_at": "2026-06-04T12:00:00Z",
                         "agent": {"id": "bot", "run_id": "r", "runtime": "cloud"}, "to": format!("agent:worker#{sess}"),
                         "title": "Restart?", "idempotency_key": format!("repair-{n}"), "request": {"mode": "confirm"}});
        let (status, ack) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&ask))).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{ack}");
        ids.push(ack["id"].as_str().unwrap().to_owned());
        // The session ends in the store alone: no bounce ran.
        let sid = ma2h_protocol::ids::SessionId::parse(&sess).unwrap();
        let end = ma2h_core::sessions::model::SessionEnd {
            at: e.dep.hub.clock.now(),
            kind: ma2h_core::sessions::model::EndKind::Closed,
        };
        e.dep
            .hub
            .sessions
            .end_session(&acme, &sid, end, e.dep.hub.clock.now() + Duration::hours(1), None)
            .await
            .unwrap();
    }

    let (status, read) = call(&e, event("GET", &format!("/v1/messages/{}", ids[0]), &e.agent, None)).await;
    assert_eq!(status, StatusCode::OK, "{read}");
    assert_eq!(read["mailbox"]["state"], "bounced", "{read}");
    let (status, cancelled) = call(&e, event("POST", &format!("/v1/messages/{}/cancel", ids[1]), &e.agent, None)).await;
    assert!(status.is_success() || status == StatusCode::CONFLICT, "{status} {cancelled}");
    let answer = json!({"resolution": "answered", "value": "approve"});
    let (status, resolved) =
        call(&e, event("POST", &format!("/v1/messages/{}/resolve", ids[2]), &e.operator, Some(&answer))).await;
    assert!(status.is_client_error() || status.is_success(), "never a 5xx: {status} {resolved}");
    for id in &ids[1..] {
        let (_, read) = call(&e, event("GET", &format!("/v1/messages/{id}"), &e.agent, None)).await;
        assert_eq!(read["mailbox"]["state"], "bounced", "{read}");
    }
}

/// Proof that IAM bites: the same template with one grant removed — the submit function's
/// `mailbox` index — and an agent→agent ask (which counts the audience's live entries there)
/// fails, the front having answered that one call `AccessDeniedException`, while a submit that
/// needs no index still works. The denial names the action and the resource, never a secret.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_a_grant_from_the_template_denies_the_call_it_covered() {
    const GRANT: &str = r#"Resource: [!Sub "${Table.Arn}/index/inbox", !Sub "${Table.Arn}/index/mailbox"]
            # A routed ask's channel notification"#;
    assert_eq!(TEMPLATE.matches(GRANT).count(), 1, "the submit function's grant, exactly once");
    let without = TEMPLATE.replace(GRANT, &GRANT.replace(r#", !Sub "${Table.Arn}/index/mailbox""#, ""));
    let Some(e) = env_with(&without, false).await else { return };
    let worker = admin::create_agent(&e.dep.hub, "acme", "worker", None).await.unwrap().api_key;
    let (status, _) =
        call(&e, event("PATCH", "/v1/operator/inter-agent", &e.operator, Some(&json!({"enabled": true})))).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = call(&e, event("POST", "/v1/sessions", &worker, Some(&json!({"ttl_seconds": 600})))).await;
    assert_eq!(status, StatusCode::CREATED);

    let (status, ack) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&ask("plain", None)))).await;
    assert_eq!(status, StatusCode::ACCEPTED, "a submit that needs no index: {ack}");
    assert!(e.fns.front.denials().is_empty());

    let to_worker = json!({"ma2h_version": "0.5", "type": "ask", "created_at": "2026-06-04T12:00:00Z",
                           "agent": {"id": "bot", "run_id": "r", "runtime": "cloud"}, "to": "agent:worker",
                           "title": "Restart?", "idempotency_key": "denied", "request": {"mode": "confirm"}});
    let (status, body) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&to_worker))).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
    assert!(!body.to_string().contains("AccessDenied"), "5xx bodies are opaque: {body}");
    let denials = e.fns.front.denials();
    assert_eq!(denials.len(), 1, "{denials:?}");
    assert_eq!((denials[0].function.as_str(), denials[0].action.as_str()), ("SubmitFunction", "dynamodb:Query"));
    assert!(denials[0].resource.ends_with("/index/mailbox"), "{}", denials[0].resource);

    // As AWS answers it: the SDK sees AccessDeniedException naming the role, action and resource.
    let err = e
        .fns
        .dynamodb("SubmitFunction")
        .query()
        .table_name(e.dep.store.table())
        .index_name("mailbox")
        .key_condition_expression("mbx_pk = :p")
        .expression_attribute_values(":p", aws_sdk_dynamodb::types::AttributeValue::S("x".into()))
        .send()
        .await
        .unwrap_err();
    let service = err.as_service_error().expect("a service error");
    assert_eq!(aws_smithy_types::error::metadata::ProvideErrorMetadata::code(service), Some("AccessDeniedException"));
    let text = aws_sdk_dynamodb::error::DisplayErrorContext(&err).to_string();
    assert!(text.contains("assumed-role/ma2h-SubmitFunctionRole/SubmitFunction"), "{text}");
    assert!(text.contains("is not authorized to perform: dynamodb:Query on resource: arn:aws:dynamodb:"), "{text}");
    // The other functions keep their grants: the operator's listing still reads the index.
    let (status, _) = call(&e, event("GET", "/v1/operator/messages", &e.operator, None)).await;
    assert_eq!(status, StatusCode::OK);
}

/// Each function reads only the key material it needs: discovery reads the public keys (the
/// template's HubPublicKeysSecretName) and is denied the key secret; the others read the key
/// secret and not the public one. The public secret holds nothing private.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_reads_only_the_public_keys_and_the_others_only_the_key_secret() {
    // Denials on purpose: not reported as under-grants.
    let Some(e) = env_with(TEMPLATE, false).await else { return };
    let (secret, public) = ("ma2h/hub", "ma2h/hub-public"); // the template's defaults
    let admin = aws_sdk_secretsmanager::Client::new(&moto_config().await.unwrap());
    ma2h_aws::hub_secret::create(&admin, secret).await.unwrap();
    let published = ma2h_aws::hub_secret::publish(&admin, secret, public).await.unwrap();

    let read = |function: &'static str, id: &'static str| {
        let sm = e.fns.secretsmanager(function);
        async move { sm.get_secret_value().secret_id(id).send().await }
    };
    let text = read("DiscoveryFunction", public).await.unwrap().secret_string().unwrap().to_owned();
    assert_eq!(serde_json::from_str::<ma2h_aws::hub_secret::PublicKeys>(&text).unwrap(), published);
    assert!(!text.contains("seed") && !text.contains("master"), "{text}");
    let denied = read("DiscoveryFunction", secret).await.unwrap_err();
    assert_eq!(
        aws_smithy_types::error::metadata::ProvideErrorMetadata::code(denied.as_service_error().unwrap()),
        Some("AccessDeniedException")
    );
    for f in ["SubmitFunction", "GetFunction", "DeliverFunction", "SweepFunction", "InboxFunction"] {
        assert!(read(f, secret).await.is_ok(), "{f} reads the key secret");
        assert!(read(f, public).await.is_err(), "{f} has no use for the public one");
    }
    // What discovery serves from them is what the others sign with.
    let keys = ma2h_aws::hub_secret::load_public(&moto_config().await.unwrap(), public).await.unwrap();
    assert!(keys.signer().is_none());
    assert_eq!(keys.current_public(), published.ed25519_public);
}

/// Issue 42 on AWS: an SSO login through the functions the template routes `/login/sso…` and
/// `/inbox` to, under their roles — the provider (the tests' stand-in on a loopback port) reached
/// through the function's own outbound client, the state counter and the `login` entry written on
/// DynamoDB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_signs_in_by_sso_through_the_functions() {
    let Some(e) = env().await else { return };
    let (idp, issuer) = support::sso_provider(&e.dep.hub, e.clock.clone(), ma2h_test_support::idp::Alg::Es256).await;
    // on before any function reads (and caches) the account's settings: logout goes to the
    // provider too, and only members of `sre` (in the token's `groups`) sign in by email
    let on = ma2h_core::sso::manage::SsoSpec {
        provider_logout: Some(true),
        required_groups: Some(vec!["sre".into()]),
        ..Default::default()
    };
    let acme = ma2h_protocol::ids::AccountId::parse("acme").unwrap();
    ma2h_core::sso::manage::set(&e.dep.hub, "admin", &acme, on).await.unwrap();
    let routed = |req: lambda_http::Request| {
        let app = ma2h_aws::http_app(e.fns.for_request(&req));
        async move { app.oneshot(req).await.unwrap() }
    };
    let begin = routed(raw_event("GET", "/login/sso?account=acme", &[], "")).await;
    assert_eq!(begin.status(), StatusCode::SEE_OTHER);
    let sso_cookie = support::set_cookie(&begin, "ma2h_sso").expect("the state cookie");
    let authorize = begin.headers()["location"].to_str().unwrap().to_owned();
    let path = authorize.strip_prefix(&issuer).expect("to the provider");
    idp.reshape_next(|c| c["groups"] = serde_json::json!(["everyone", "sre"]));
    let req = axum::http::Request::get(format!("{path}&login_hint=alice%40acme.com")).body(axum::body::Body::empty());
    let at_idp = idp.router().oneshot(req.unwrap()).await.unwrap();
    let back = at_idp.headers()["location"].to_str().unwrap().to_owned();
    let callback = back.strip_prefix("https://api.test").expect("to MA2H_PUBLIC_URL's callback");
    let done = routed(raw_event("GET", callback, &[("cookie", &sso_cookie)], "")).await;
    assert_eq!(done.status(), StatusCode::OK);
    let session = support::set_cookie(&done, "ma2h_inbox").expect("a session");
    let inbox = routed(raw_event("GET", "/inbox", &[("cookie", &session)], "")).await;
    assert_eq!(inbox.status(), StatusCode::OK);
    let html = String::from_utf8_lossy(&inbox.into_body().collect().await.unwrap().to_bytes()).into_owned();
    assert!(html.contains("human:alice"));
    // the same callback again is a replay
    let again = routed(raw_event("GET", callback, &[("cookie", &sso_cookie)], "")).await;
    assert_eq!(again.status(), StatusCode::BAD_REQUEST);
    assert_eq!(idp.token_calls(), ["ok"]);
    // with provider logout on, logging out sends the browser on to the provider's end session
    let (_, rest) = html.split_once(r#"name="csrf" value=""#).expect("the logout form's token");
    let csrf = &rest[..rest.find('"').unwrap()];
    let form = [("content-type", "application/x-www-form-urlencoded"), ("cookie", session.as_str())];
    let out = routed(raw_event("POST", "/logout", &form, &format!("csrf={csrf}"))).await;
    assert_eq!(out.status(), StatusCode::OK);
    let page = String::from_utf8_lossy(&out.into_body().collect().await.unwrap().to_bytes()).into_owned();
    let hint = idp.issued().pop().unwrap();
    assert!(page.contains(&format!("{issuer}/logout?client_id=ma2h-hub-test")), "{page}");
    assert!(page.contains("post_logout_redirect_uri=https%3A%2F%2Fapi.test%2Flogin") && page.contains(&hint), "{page}");
    let gone = routed(raw_event("GET", "/inbox", &[("cookie", &session)], "")).await;
    assert_eq!(gone.status(), StatusCode::SEE_OTHER, "the Hub's session ended");
}
