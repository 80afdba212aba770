//! The cost model (docs/COST.md): DynamoDB and SQS requests per phase of an ask's lifecycle
//! (submit → resolve → push → get), a notify, an idempotent replay, and the sweeper with a small
//! and a large open set — counted on the wire by an SDK interceptor on moto-backed clients and
//! asserted exactly, so a change that adds a round-trip fails here.
//!
//! `MA2H_COST_OPEN` sets the large open set (default 10 000; docs/COST.md records 100 000):
//! `MA2H_COST_OPEN=100000 cargo test -p ma2h-aws --test cost -- --nocapture`.
//! Skipped loudly without `AWS_ENDPOINT_URL`, failed if `MA2H_REQUIRE_AWS_TESTS=1`.

mod support;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use aws_sdk_dynamodb::types::{AttributeValue, PutRequest, WriteRequest};
use axum::http::StatusCode;
use chrono::Duration;
use ma2h_aws::{AwsSettings, Deployment, assemble, handlers};
use ma2h_core::admin;
use ma2h_core::ports::ManualClock;
use ma2h_core::records::Lookup;
use ma2h_core::settings::{Mode, Secret, Settings};
use ma2h_protocol::ids::{AccountId, MessageId};
use ma2h_queue_sqs::SqsPushQueue;
use ma2h_store_dynamodb::{DynamoStore, provision};
use metering::{Meter, Tally};
use serde_json::{Value, json};
use support::{call_app, event, sqs_event};

/// Counting requests on the real SDK clients. Test-only: nothing here is on a production path;
/// it plugs into `aws_sdk_dynamodb::config::Builder::interceptor` (and the SQS equivalent) of
/// clients that are then handed to `assemble`.
mod metering {
    use std::collections::BTreeMap;
    use std::sync::{Arc, Mutex};

    use aws_sdk_dynamodb::config::interceptors::{
        AfterDeserializationInterceptorContextRef, BeforeSerializationInterceptorContextMut,
        BeforeTransmitInterceptorContextRef,
    };
    use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
    use aws_sdk_dynamodb::operation as op;
    use aws_sdk_dynamodb::types::{ConsumedCapacity, ReturnConsumedCapacity};

    type BoxError = Box<dyn std::error::Error + Send + Sync>;

    /// What went over the wire since the last [`Meter::take`].
    #[derive(Debug, Default, Clone, PartialEq)]
    pub struct Tally {
        /// HTTP requests (every attempt, retries included: each is billed) per
        /// `service:Operation`, e.g. `dynamodb:TransactWriteItems`, `sqs:SendMessage`.
        pub requests: BTreeMap<String, u64>,
        /// Items DynamoDB evaluated for `Query`/`Scan` (`ScannedCount`): what a read is billed on.
        pub scanned: u64,
        /// Capacity units from `ConsumedCapacity`, when the responses carry it (see
        /// [`Meter::ask_for_capacity`]; moto reports placeholders, real DynamoDB real units).
        pub capacity: f64,
    }

    impl Tally {
        pub fn total(&self, service: &str) -> u64 {
            self.requests.iter().filter(|(k, _)| k.starts_with(&format!("{service}:"))).map(|(_, v)| v).sum()
        }
        pub fn add(&mut self, other: &Tally) {
            for (k, v) in &other.requests {
                *self.requests.entry(k.clone()).or_default() += v;
            }
            self.scanned += other.scanned;
            self.capacity += other.capacity;
        }
    }

    /// One tally shared by the interceptors of several clients.
    #[derive(Debug, Clone, Default)]
    pub struct Meter {
        tally: Arc<Mutex<Tally>>,
        capacity: bool,
    }

    impl Meter {
        /// Also set `ReturnConsumedCapacity=TOTAL` on every DynamoDB request that takes it.
        pub fn ask_for_capacity(mut self) -> Self {
            self.capacity = true;
            self
        }
        /// The interceptor to register on a client of `service` (the prefix in the tally).
        pub fn interceptor(&self, service: &'static str) -> Counting {
            Counting { service, meter: self.clone() }
        }
        /// The tally so far, reset to zero.
        pub fn take(&self) -> Tally {
            std::mem::take(&mut *self.tally.lock().unwrap())
        }
    }

    #[derive(Debug)]
    pub struct Counting {
        service: &'static str,
        meter: Meter,
    }

    fn units(c: Option<&ConsumedCapacity>) -> f64 {
        c.and_then(|c| c.capacity_units).unwrap_or(0.0)
    }

    impl Intercept for Counting {
        fn name(&self) -> &'static str {
            "ma2h-cost-meter"
        }

        fn modify_before_serialization(
            &self,
            context: &mut BeforeSerializationInterceptorContextMut<'_>,
            _rc: &RuntimeComponents,
            _cfg: &mut ConfigBag,
        ) -> Result<(), BoxError> {
            if !self.meter.capacity {
                return Ok(());
            }
            let input = context.input_mut();
            let total = Some(ReturnConsumedCapacity::Total);
            if let Some(i) = input.downcast_mut::<op::get_item::GetItemInput>() {
                i.return_consumed_capacity = total;
            } else if let Some(i) = input.downcast_mut::<op::put_item::PutItemInput>() {
                i.return_consumed_capacity = total;
            } else if let Some(i) = input.downcast_mut::<op::update_item::UpdateItemInput>() {
                i.return_consumed_capacity = total;
            } else if let Some(i) = input.downcast_mut::<op::delete_item::DeleteItemInput>() {
                i.return_consumed_capacity = total;
            } else if let Some(i) = input.downcast_mut::<op::query::QueryInput>() {
                i.return_consumed_capacity = total;
            } else if let Some(i) = input.downcast_mut::<op::scan::ScanInput>() {
                i.return_consumed_capacity = total;
            } else if let Some(i) = input.downcast_mut::<op::transact_write_items::TransactWriteItemsInput>() {
                i.return_consumed_capacity = total;
            } else if let Some(i) = input.downcast_mut::<op::batch_write_item::BatchWriteItemInput>() {
                i.return_consumed_capacity = total;
            }
            Ok(())
        }

        /// Once per attempt that goes on the wire. Both services speak an awsJson protocol, so
        /// the operation is the `X-Amz-Target` header's suffix (`DynamoDB_20120810.GetItem`,
        /// `AmazonSQS.SendMessage`).
        fn read_before_transmit(
            &self,
            context: &BeforeTransmitInterceptorContextRef<'_>,
            _rc: &RuntimeComponents,
            _cfg: &mut ConfigBag,
        ) -> Result<(), BoxError> {
            let target = context.request().headers().get("x-amz-target").unwrap_or("?");
            let operation = target.rsplit_once('.').map_or(target, |(_, op)| op);
            let mut tally = self.meter.tally.lock().unwrap();
            *tally.requests.entry(format!("{}:{operation}", self.service)).or_default() += 1;
            Ok(())
        }

        fn read_after_deserialization(
            &self,
            context: &AfterDeserializationInterceptorContextRef<'_>,
            _rc: &RuntimeComponents,
            _cfg: &mut ConfigBag,
        ) -> Result<(), BoxError> {
            let Ok(out) = context.output_or_error() else { return Ok(()) };
            let (scanned, capacity) = if let Some(o) = out.downcast_ref::<op::query::QueryOutput>() {
                (o.scanned_count, units(o.consumed_capacity.as_ref()))
            } else if let Some(o) = out.downcast_ref::<op::scan::ScanOutput>() {
                (o.scanned_count, units(o.consumed_capacity.as_ref()))
            } else if let Some(o) = out.downcast_ref::<op::get_item::GetItemOutput>() {
                (0, units(o.consumed_capacity.as_ref()))
            } else if let Some(o) = out.downcast_ref::<op::put_item::PutItemOutput>() {
                (0, units(o.consumed_capacity.as_ref()))
            } else if let Some(o) = out.downcast_ref::<op::update_item::UpdateItemOutput>() {
                (0, units(o.consumed_capacity.as_ref()))
            } else if let Some(o) = out.downcast_ref::<op::delete_item::DeleteItemOutput>() {
                (0, units(o.consumed_capacity.as_ref()))
            } else if let Some(o) = out.downcast_ref::<op::transact_write_items::TransactWriteItemsOutput>() {
                (0, o.consumed_capacity().iter().map(|c| units(Some(c))).sum())
            } else if let Some(o) = out.downcast_ref::<op::batch_write_item::BatchWriteItemOutput>() {
                (0, o.consumed_capacity().iter().map(|c| units(Some(c))).sum())
            } else {
                (0, 0.0)
            };
            let mut tally = self.meter.tally.lock().unwrap();
            tally.scanned += u64::try_from(scanned).unwrap_or(0);
            tally.capacity += capacity;
            Ok(())
        }
    }
}

struct Env {
    dep: Deployment,
    clock: Arc<ManualClock>,
    /// The Hub's DynamoDB and SQS clients report here.
    meter: Meter,
    /// Lambda's SQS event source mapping (ReceiveMessage / DeleteMessageBatch), simulated here.
    esm: Meter,
    esm_sqs: aws_sdk_sqs::Client,
    /// Unmetered: seeding and inspection.
    raw: aws_sdk_dynamodb::Client,
    agent: String,
    operator: String,
}

/// A fresh table and queue over metered clients. `None` (skipped) without moto.
async fn env(name: &str, capacity: bool) -> Option<Env> {
    if std::env::var("AWS_ENDPOINT_URL").is_err() {
        assert!(std::env::var("MA2H_REQUIRE_AWS_TESTS").as_deref() != Ok("1"), "AWS_ENDPOINT_URL unset: start moto");
        eprintln!("SKIPPED: AWS_ENDPOINT_URL is unset (run `make test` to start moto)");
        return None;
    }
    let config = aws_config::load_from_env().await;
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let table = format!("cost-{name}-{nanos}");
    let meter = if capacity { Meter::default().ask_for_capacity() } else { Meter::default() };
    let esm = Meter::default();
    let ddb = aws_sdk_dynamodb::Client::from_conf(
        aws_sdk_dynamodb::config::Builder::from(&config).interceptor(meter.interceptor("dynamodb")).build(),
    );
    let sqs = aws_sdk_sqs::Client::from_conf(
        aws_sdk_sqs::config::Builder::from(&config).interceptor(meter.interceptor("sqs")).build(),
    );
    let esm_sqs = aws_sdk_sqs::Client::from_conf(
        aws_sdk_sqs::config::Builder::from(&config).interceptor(esm.interceptor("sqs")).build(),
    );
    let raw = aws_sdk_dynamodb::Client::new(&config);
    provision::create_table(&raw, &table).await.unwrap();
    let queue_url = raw_sqs(&config)
        .create_queue()
        .queue_name(format!("cost-{name}-{nanos}"))
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    let settings = Settings {
        mode: Mode::Dev,
        public_url: "https://api.test".into(),
        master_key: Some(Secret("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=".into())),
        ed25519_seed: Some(Secret("BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=".into())),
        dev_egress_allow: vec!["127.0.0.0/8".into()],
        // The production defaults for what submit checks: 600 requests/min, inbox depth 1000.
        ..Settings::default()
    };
    // The production default re-read interval for Lambda long-polls.
    let aws = AwsSettings { table: table.clone(), push_queue_url: queue_url.clone(), long_poll_interval: ms(500) };
    let mut dep = assemble(settings, &aws, DynamoStore::new(ddb, table), SqsPushQueue::new(sqs, queue_url)).unwrap();
    let clock = Arc::new(ManualClock::new(chrono::Utc::now()));
    dep.hub.clock = clock.clone();
    let agent = admin::create_agent(&dep.hub, "acme", "bot", None).await.unwrap().api_key;
    let operator = admin::create_operator(&dep.hub, "acme", "alice", None).await.unwrap().api_key;
    admin::bind_callback(&dep.hub, "acme", "bot", "127.0.0.1").await.unwrap();
    admin::put_secret(&dep.hub, "acme", "bot", "cb", "s3cret").await.unwrap();
    meter.take();
    Some(Env { dep, clock, meter, esm, esm_sqs, raw, agent, operator })
}

fn ms(n: u64) -> std::time::Duration {
    std::time::Duration::from_millis(n)
}

fn raw_sqs(config: &aws_config::SdkConfig) -> aws_sdk_sqs::Client {
    aws_sdk_sqs::Client::new(config)
}

/// Run `body` over a fresh environment, then drop its table and queue (a 100k-item table is
/// not left in the shared moto), re-raising the body's panic after the cleanup.
async fn with_env<T, F, Fut>(name: &str, capacity: bool, body: F) -> Option<T>
where
    T: Send + 'static,
    F: FnOnce(Arc<Env>) -> Fut,
    Fut: Future<Output = T> + Send + 'static,
{
    let e = Arc::new(env(name, capacity).await?);
    let result = tokio::spawn(body(e.clone())).await;
    let (table, url) = (e.dep.store.table().to_owned(), e.dep.queue.queue_url().to_owned());
    let _ = e.raw.delete_table().table_name(table).send().await;
    let _ = e.esm_sqs.delete_queue().queue_url(url).send().await;
    match result {
        Ok(v) => Some(v),
        Err(err) => std::panic::resume_unwind(err.into_panic()),
    }
}

async fn call(e: &Env, req: lambda_http::Request) -> (StatusCode, Value) {
    call_app(&e.dep, req).await
}

fn ask(key: &str, callback: Option<Value>, expires_at: Option<chrono::DateTime<chrono::Utc>>) -> Value {
    let mut env = json!({
        "ma2h_version": "0.5", "type": "ask", "created_at": "2026-12-02T15:00:00Z",
        "agent": { "id": "bot", "run_id": "r1", "runtime": "github-actions" },
        "title": "Ship release 1.4 to production?", "idempotency_key": key,
        "body": "The canary has been green for 30 minutes. Ship to all regions, or hold?",
        "request": { "mode": "select", "options": [{"value": "ship", "label": "Ship"}, {"value": "hold", "label": "Hold"}],
                     "allowed_resolvers": ["human:alice"] }
    });
    if let Some(cb) = callback {
        env["request"]["callback"] = cb;
    }
    if let Some(t) = expires_at {
        env["expires_at"] = json!(t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
    }
    env
}

fn notify(key: &str) -> Value {
    json!({
        "ma2h_version": "0.5", "type": "notify", "created_at": "2026-12-02T15:00:00Z",
        "agent": { "id": "bot", "run_id": "r1", "runtime": "github-actions" },
        "title": "Nightly build finished", "body": "All green.", "priority": "low", "idempotency_key": key
    })
}

/// A callback receiver that answers 200 and counts hits.
async fn receiver() -> (String, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let h = hits.clone();
    let app = axum::Router::new().route(
        "/cb",
        axum::routing::post(move || {
            let h = h.clone();
            async move {
                h.fetch_add(1, Ordering::SeqCst);
                StatusCode::OK
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/cb"), hits)
}

/// What Lambda's SQS event source mapping does around one `deliver` invocation: receive a batch,
/// hand it over as an `SqsEvent`, delete the records not reported as failures.
async fn deliver_via_esm(e: &Env) -> (usize, usize) {
    let queue_url = e.dep.queue.queue_url();
    let out = e.esm_sqs.receive_message().queue_url(queue_url).max_number_of_messages(10).send().await.unwrap();
    let batch = sqs_event(out.messages());
    let received = batch.records.len();
    let sender = handlers::push_sender(&e.dep).unwrap();
    let response = handlers::deliver(&e.dep, &sender, batch.clone()).await;
    let failed: BTreeSet<String> = response.batch_item_failures.iter().map(|f| f.item_identifier.clone()).collect();
    let done: Vec<_> = batch
        .records
        .iter()
        .filter(|r| !failed.contains(r.message_id.as_deref().unwrap_or_default()))
        .enumerate()
        .map(|(i, r)| {
            aws_sdk_sqs::types::DeleteMessageBatchRequestEntry::builder()
                .id(i.to_string())
                .receipt_handle(r.receipt_handle.clone().unwrap())
                .build()
                .unwrap()
        })
        .collect();
    if !done.is_empty() {
        e.esm_sqs.delete_message_batch().queue_url(queue_url).set_entries(Some(done)).send().await.unwrap();
    }
    (received, failed.len())
}

/// The expected tally of a phase: `[("dynamodb:GetItem", 4), …]`.
fn expect(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().filter(|(_, n)| *n > 0).map(|(k, n)| ((*k).to_owned(), *n)).collect()
}

/// DynamoDB's item size (attribute names + values; numbers approximated as 1 byte per two
/// significant digits + 1), the basis of its request units.
fn item_size(item: &HashMap<String, AttributeValue>) -> usize {
    item.iter()
        .map(|(k, v)| {
            k.len()
                + match v {
                    AttributeValue::S(s) => s.len(),
                    AttributeValue::N(n) => n.trim_start_matches(['-', '0']).len().div_ceil(2) + 1,
                    AttributeValue::B(b) => b.as_ref().len(),
                    _ => 1,
                }
        })
        .sum()
}

async fn raw_item(e: &Env, pk: String, sk: &str) -> HashMap<String, AttributeValue> {
    e.raw
        .get_item()
        .table_name(e.dep.store.table())
        .key("pk", AttributeValue::S(pk))
        .key("sk", AttributeValue::S(sk.into()))
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item
        .unwrap_or_else(|| panic!("no item {sk}"))
}

/// Print phases as a Markdown table (`--nocapture`), one column per operation seen.
fn print_table(title: &str, rows: &[(String, Tally)]) {
    let ops: BTreeSet<&String> = rows.iter().flat_map(|(_, t)| t.requests.keys()).collect();
    println!("\n### {title}\n");
    let head: Vec<String> = ops.iter().map(|o| o.to_string()).collect();
    println!("| phase | {} | DynamoDB | SQS |", head.join(" | "));
    println!("|---|{}---|---|", "---|".repeat(ops.len()));
    for (phase, t) in rows {
        let cells: Vec<String> = ops.iter().map(|o| t.requests.get(*o).map_or("·".into(), |n| n.to_string())).collect();
        println!("| {phase} | {} | {} | {} |", cells.join(" | "), t.total("dynamodb"), t.total("sqs"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_per_phase_of_an_ask_a_notify_and_a_replay() {
    with_env("lifecycle", false, |e| async move {
        let (url, hits) = receiver().await;
        // Warm the agent's rate window (the first request of a minute costs one more write;
        // measured on its own below).
        let (status, _) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&notify("warm")))).await;
        assert_eq!(status, StatusCode::ACCEPTED);
        e.meter.take();
        let mut rows: Vec<(String, Tally)> = Vec::new();
        let mut sizes: Vec<(String, usize)> = Vec::new();

        // 1. submit: an ask with a push callback and an idempotency key
        let cb = json!({"mode": "push", "url": url, "auth": {"scheme": "hmac", "secret_ref": "cb"}});
        let body = ask("c1", Some(cb), None);
        let (status, ack) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&body))).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{ack}");
        let id = ack["id"].as_str().unwrap().to_owned();
        let pk = format!("MSG#acme#{id}");
        let submit = e.meter.take();
        assert_eq!(
            submit.requests,
            expect(&[
                // auth (KEY#), callback secret (SECRET#cb), inbox depth (OPEN#); the idempotency
                // claim is not read first: the transaction claims it (§8.1)
                ("dynamodb:GetItem", 3),
                // callback bindings (AGENT# BIND#)
                ("dynamodb:Query", 1),
                // rate window (CNT# ADD)
                ("dynamodb:UpdateItem", 1),
                // MSG + IDEM + OPEN +1
                ("dynamodb:TransactWriteItems", 1),
            ]),
            "submit"
        );
        sizes.push(("message item, open".into(), item_size(&raw_item(&e, pk.clone(), "MSG").await)));
        sizes.push(("idempotency claim".into(), item_size(&raw_item(&e, "IDEM#acme#bot#c1".into(), "IDEM").await)));
        rows.push(("submit (ask, push callback)".into(), submit));

        // (not part of the total) a long-poll while the ask is open: on Lambda the wait is a
        // re-read of the message every `long_poll_interval` (500 ms)
        let started = Instant::now();
        let (status, _) = call(&e, event("GET", &format!("/v1/messages/{id}?wait=2"), &e.agent, None)).await;
        assert_eq!(status, StatusCode::OK);
        let waited = started.elapsed();
        let long_poll = e.meter.take();
        let reads = long_poll.requests.get("dynamodb:Query").copied().unwrap_or(0);
        assert!((4..=6).contains(&reads), "one read per 500 ms of a 2 s wait (+1): {long_poll:?} in {waited:?}");
        assert_eq!(long_poll.requests.get("dynamodb:GetItem"), Some(&1), "auth once");
        assert_eq!(long_poll.total("dynamodb"), reads + 1, "{long_poll:?}");
        let long_poll_row = ("get ?wait=2 on an open ask (not in the total)".to_owned(), long_poll);

        // 2. resolve, by the operator
        let answer = json!({"resolution": "answered", "value": "ship", "comment": "Canary is clean; go."});
        let path = format!("/v1/messages/{id}/resolve");
        let (status, res) = call(&e, event("POST", &path, &e.operator, Some(&answer))).await;
        assert_eq!(status, StatusCode::OK, "{res}");
        let resolve = e.meter.take();
        assert_eq!(
            resolve.requests,
            expect(&[
                // auth, then the store's re-read of MSG inside `complete`
                ("dynamodb:GetItem", 2),
                // the lookup (MSG + TOMB in one partition read)
                ("dynamodb:Query", 1),
                // MSG (CAS) + OPEN −1 + TOMB
                ("dynamodb:TransactWriteItems", 1),
                // the push job
                ("sqs:SendMessage", 1),
            ]),
            "resolve"
        );
        sizes.push(("message item, resolved (push pending)".into(), item_size(&raw_item(&e, pk.clone(), "MSG").await)));
        sizes.push(("tombstone".into(), item_size(&raw_item(&e, pk.clone(), "TOMB").await)));
        rows.push(("resolve (operator)".into(), resolve));

        // 3. push: the event source mapping hands the job to `deliver`
        assert_eq!(deliver_via_esm(&e).await, (1, 0));
        assert_eq!(hits.load(Ordering::SeqCst), 1, "pushed once");
        let push = e.meter.take();
        assert_eq!(
            push.requests,
            expect(&[
                // the message (lookup), the callback bindings (§9.4 re-check at send time)
                ("dynamodb:Query", 2),
                // the HMAC secret
                ("dynamodb:GetItem", 1),
                // the push track
                ("dynamodb:UpdateItem", 1),
            ]),
            "deliver"
        );
        let esm = e.esm.take();
        assert_eq!(esm.requests, expect(&[("sqs:ReceiveMessage", 1), ("sqs:DeleteMessageBatch", 1)]), "ESM");
        sizes.push(("message item, delivered".into(), item_size(&raw_item(&e, pk.clone(), "MSG").await)));
        rows.push(("push (deliver function)".into(), push));
        rows.push(("push (Lambda's SQS poller, simulated)".into(), esm));

        // 4. the agent reads the answer
        let (status, read) = call(&e, event("GET", &format!("/v1/messages/{id}"), &e.agent, None)).await;
        assert_eq!((status, read["status"].as_str()), (StatusCode::OK, Some("answered")));
        assert_eq!(read["delivery"]["state"], "delivered-to-agent");
        let get = e.meter.take();
        assert_eq!(get.requests, expect(&[("dynamodb:GetItem", 1), ("dynamodb:Query", 1)]), "get");
        rows.push(("get (agent)".into(), get));

        let mut ask_total = Tally::default();
        for (_, t) in &rows {
            ask_total.add(t);
        }
        assert_eq!((ask_total.total("dynamodb"), ask_total.total("sqs")), (16, 3), "one ask, end to end");
        rows.push(("**ask total**".into(), ask_total));
        rows.push(long_poll_row);

        // notify: submit (terminal at once) and one read
        let (status, ack) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&notify("n1")))).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{ack}");
        let nid = ack["id"].as_str().unwrap().to_owned();
        let submit_notify = e.meter.take();
        assert_eq!(
            submit_notify.requests,
            expect(&[
                // auth (no callback to check, no inbox depth for a notify, no claim pre-read)
                ("dynamodb:GetItem", 1),
                ("dynamodb:UpdateItem", 1),
                // MSG + IDEM + TOMB
                ("dynamodb:TransactWriteItems", 1),
            ]),
            "notify"
        );
        sizes.push(("message item, notify".into(), item_size(&raw_item(&e, format!("MSG#acme#{nid}"), "MSG").await)));
        let (status, _) = call(&e, event("GET", &format!("/v1/messages/{nid}"), &e.agent, None)).await;
        assert_eq!(status, StatusCode::OK);
        let get_notify = e.meter.take();
        assert_eq!(get_notify.requests, expect(&[("dynamodb:GetItem", 1), ("dynamodb:Query", 1)]));
        rows.push(("submit (notify)".into(), submit_notify));
        rows.push(("get (notify)".into(), get_notify));

        // idempotent replay of the ask: same key, same payload → the original ack
        let (status, again) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&body))).await;
        assert_eq!((status, again["id"].as_str()), (StatusCode::ACCEPTED, Some(id.as_str())));
        let replay = e.meter.take();
        assert_eq!(
            replay.requests,
            expect(&[
                // auth, callback secret (validated first), inbox depth, the claim once the
                // transaction is refused
                ("dynamodb:GetItem", 4),
                // callback bindings, the message (for the current status)
                ("dynamodb:Query", 2),
                ("dynamodb:UpdateItem", 1),
                // the insert, cancelled by the live claim (a replay costs 2 more requests so a
                // first submit costs 1 fewer)
                ("dynamodb:TransactWriteItems", 1),
            ]),
            "replay"
        );
        rows.push(("replay (same ask again)".into(), replay));

        // the first request of an agent's minute window: the conditional ADD fails, a put starts
        // the window
        e.clock.advance(Duration::seconds(60));
        let (status, _) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&body))).await;
        assert_eq!(status, StatusCode::ACCEPTED);
        let window = e.meter.take();
        assert_eq!(window.requests.get("dynamodb:UpdateItem"), Some(&1));
        assert_eq!(window.requests.get("dynamodb:PutItem"), Some(&1), "{window:?}");
        assert_eq!(window.total("dynamodb"), 9, "the replay plus one PutItem");
        rows.push(("replay, first request of a rate window".into(), window));

        sizes.push((
            "rate counter".into(),
            item_size(&raw_item(&e, format!("CNT#rpm/acme/bot/{}", e.clock_minute()), "CNT").await),
        ));
        // retention: the sweeper purges the three messages (two notifies, the ask) once their
        // `retain_until` passes; tombstones, claims and counters go by TTL (free)
        e.clock.advance(Duration::days(31));
        let outcome = handlers::sweep(&e.dep).await.unwrap();
        assert_eq!((outcome.expired, outcome.purged, outcome.requeued), (0, 3, 0), "{outcome:?}");
        let purge = e.meter.take();
        assert_eq!(purge.requests, expect(&[("dynamodb:Query", 3), ("dynamodb:DeleteItem", 3)]), "purge");
        assert_eq!(purge.scanned, 3, "the three `retain` keys");
        rows.push(("sweep after retention (purges 3 messages)".into(), purge));

        sizes.push(("open counter".into(), item_size(&raw_item(&e, "OPEN#acme#bot".into(), "OPEN").await)));
        sizes.push(("credential".into(), {
            let hash = ma2h_core::auth::hash_key(&e.agent);
            item_size(&raw_item(&e, format!("KEY#{hash}"), "KEY").await)
        }));
        print_table("Requests per phase (counted on the wire, asserted)", &rows);
        println!("\n### Item sizes (bytes, DynamoDB's accounting)\n");
        println!("| item | bytes |\n|---|---|");
        for (what, n) in &sizes {
            println!("| {what} | {n} |");
        }
    })
    .await;
}

impl Env {
    fn clock_minute(&self) -> i64 {
        self.dep.hub.clock.now().timestamp().div_euclid(60)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumed_capacity_is_recorded_when_the_response_reports_it() {
    // moto's numbers are placeholders (real DynamoDB reports real units): this checks the meter's
    // plumbing, not a price.
    with_env("capacity", true, |e| async move {
        let (status, _) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&notify("k")))).await;
        assert_eq!(status, StatusCode::ACCEPTED);
        let t = e.meter.take();
        assert!(t.capacity > 0.0, "{t:?}");
        assert_eq!(t.total("dynamodb"), 4, "{t:?}");
    })
    .await;
}

/// What one sweeper run cost over `open` open (not yet due) asks and `DUE` due ones.
#[derive(Debug, Clone)]
struct SweepRun {
    open: usize,
    seed_secs: f64,
    sweep: Tally,
    sweep_secs: f64,
    idle: Tally,
    idle_secs: f64,
}

/// Few: each expiry is a `TransactWriteItems`, for which moto deep-copies the whole table once per
/// transaction item (seconds per transaction at 10 000 items, the shared moto blocked meanwhile).
const DUE: usize = 2;

/// Seed `open` open asks (expiring in a day: all in the `due` index, none due) and `DUE` asks
/// due now, then run the sweep handler twice (with due work, then idle).
async fn sweep_over(open: usize) -> Option<SweepRun> {
    with_env(&format!("sweep{open}"), false, move |e| async move {
        let now = e.dep.hub.clock.now();
        for i in 0..DUE {
            let body = ask(&format!("due{i}"), None, Some(now + Duration::seconds(61)));
            let (status, ack) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&body))).await;
            assert_eq!(status, StatusCode::ACCEPTED, "{ack}");
        }
        // The template: one open ask written by the store itself; the rest are byte-for-byte
        // copies under fresh ids (pk, id and the `list` sort key, which embeds the id).
        let body = ask("template", None, Some(now + Duration::days(1)));
        let (status, ack) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&body))).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{ack}");
        let template_id = ack["id"].as_str().unwrap().to_owned();
        let template = raw_item(&e, format!("MSG#acme#{template_id}"), "MSG").await;
        assert!(template.contains_key("due_sk"), "open asks with an expiry are in the `due` index");
        let started = Instant::now();
        let ids = seed_copies(&e, &template, &template_id, open - 1).await;
        let seed_secs = started.elapsed().as_secs_f64();
        // The copies decode, through the store's codec, to the template under another id.
        let account = AccountId::parse("acme").unwrap();
        let want = match e.dep.hub.messages.get_message(&account, &MessageId::parse(&template_id).unwrap()).await {
            Ok(Lookup::Found(r)) => r,
            other => panic!("{other:?}"),
        };
        for id in [&ids[0], &ids[ids.len() / 2], &ids[ids.len() - 1]] {
            let got = match e.dep.hub.messages.get_message(&account, id).await {
                Ok(Lookup::Found(r)) => r,
                other => panic!("{other:?}"),
            };
            assert_eq!(got, ma2h_core::records::MessageRecord { id: id.clone(), ..want.clone() });
            let (status, read) = call(&e, event("GET", &format!("/v1/messages/{id}"), &e.agent, None)).await;
            assert_eq!((status, read["status"].as_str()), (StatusCode::OK, Some("open")));
        }

        e.clock.advance(Duration::seconds(120));
        e.meter.take();
        let started = Instant::now();
        let outcome = handlers::sweep(&e.dep).await.unwrap();
        let sweep_secs = started.elapsed().as_secs_f64();
        assert_eq!((outcome.expired, outcome.purged, outcome.requeued), (DUE, 0, 0), "{outcome:?}");
        let sweep = e.meter.take();
        let started = Instant::now();
        let outcome = handlers::sweep(&e.dep).await.unwrap();
        let idle_secs = started.elapsed().as_secs_f64();
        assert_eq!((outcome.expired, outcome.purged, outcome.requeued), (0, 0, 0), "{outcome:?}");
        let idle = e.meter.take();
        SweepRun { open, seed_secs, sweep, sweep_secs, idle, idle_secs }
    })
    .await
}

/// `BatchWriteItem` copies of `template` under fresh ids, four requests in flight.
async fn seed_copies(
    e: &Arc<Env>,
    template: &HashMap<String, AttributeValue>,
    template_id: &str,
    n: usize,
) -> Vec<MessageId> {
    let ids: Vec<MessageId> = (0..n).map(|_| e.dep.hub.new_message_id()).collect();
    let items: Vec<HashMap<String, AttributeValue>> = ids
        .iter()
        .map(|id| {
            let mut item = template.clone();
            for attr in ["pk", "id", "list_sk"] {
                let v = item[attr].as_s().unwrap().replace(template_id, id.as_str());
                item.insert(attr.into(), AttributeValue::S(v));
            }
            item
        })
        .collect();
    let batches: Vec<Vec<HashMap<String, AttributeValue>>> = items.chunks(25).map(<[_]>::to_vec).collect();
    let batches = Arc::new(Mutex::new(batches));
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..4 {
        let (batches, client, table) = (batches.clone(), e.raw.clone(), e.dep.store.table().to_owned());
        workers.spawn(async move {
            loop {
                let Some(batch) = batches.lock().unwrap().pop() else { return };
                let mut pending: Vec<WriteRequest> = batch
                    .into_iter()
                    .map(|i| {
                        WriteRequest::builder()
                            .put_request(PutRequest::builder().set_item(Some(i)).build().unwrap())
                            .build()
                    })
                    .collect();
                while !pending.is_empty() {
                    let out = client.batch_write_item().request_items(&table, pending).send().await.unwrap();
                    pending = out.unprocessed_items.and_then(|mut u| u.remove(&table)).unwrap_or_default();
                }
            }
        });
    }
    while let Some(done) = workers.join_next().await {
        done.unwrap();
    }
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sweepers_cost_does_not_grow_with_the_open_set() {
    let large: usize = std::env::var("MA2H_COST_OPEN").ok().map_or(10_000, |v| v.parse().expect("MA2H_COST_OPEN"));
    let Some(small) = sweep_over(1_000).await else { return };
    let big = sweep_over(large).await.unwrap();
    // Per due ask: the lookup (Query MSG), the store's re-read in `complete` (GetItem), the CAS
    // (TransactWriteItems); per sweep: one Query on each of `due`, `retain` and `push`.
    let with_due = expect(&[
        ("dynamodb:Query", 3 + DUE as u64),
        ("dynamodb:GetItem", DUE as u64),
        ("dynamodb:TransactWriteItems", DUE as u64),
    ]);
    for run in [&small, &big] {
        assert_eq!(run.sweep.requests, with_due, "{} open", run.open);
        assert_eq!(run.idle.requests, expect(&[("dynamodb:Query", 3)]), "{} open", run.open);
        // DUE keys from `due`, DUE message partitions (one item each): nothing open is read.
        assert_eq!(run.sweep.scanned, 2 * DUE as u64, "{} open", run.open);
        assert_eq!(run.idle.scanned, 0, "{} open", run.open);
    }
    println!("\n### Sweeper ({DUE} due asks; the open ones expire in a day)\n");
    println!("| open asks | requests (due work) | items read | sweep time | idle sweep | idle time | seeding |");
    println!("|---|---|---|---|---|---|---|");
    for run in [&small, &big] {
        println!(
            "| {} | {} | {} | {:.3} s | {} | {:.3} s | {:.1} s |",
            run.open,
            run.sweep.total("dynamodb"),
            run.sweep.scanned,
            run.sweep_secs,
            run.idle.total("dynamodb"),
            run.idle_secs,
            run.seed_secs
        );
    }
}
