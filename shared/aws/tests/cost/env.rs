//! One metered Hub deployment over moto per test, and the helpers the cost tests share.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use aws_sdk_dynamodb::types::AttributeValue;
use axum::http::StatusCode;
use ma2h_aws::{AwsSettings, Deployment, assemble, handlers};
use ma2h_core::admin;
use ma2h_core::ports::ManualClock;
use ma2h_queue_sqs::SqsPushQueue;
use ma2h_store_dynamodb::{DynamoStore, provision};
use serde_json::{Value, json};

use crate::metering::{Meter, Tally};
use crate::support::{call_app, moto_config, sqs_event, test_settings, unique};
use crate::units::{self, IndexDef, Snapshot};

pub(crate) struct Env {
    pub(crate) dep: Deployment,
    pub(crate) clock: Arc<ManualClock>,
    /// The Hub's DynamoDB and SQS clients report here.
    pub(crate) meter: Meter,
    /// Lambda's SQS event source mapping (ReceiveMessage / DeleteMessageBatch), simulated here.
    pub(crate) esm: Meter,
    pub(crate) esm_sqs: aws_sdk_sqs::Client,
    /// Unmetered: seeding and inspection.
    pub(crate) raw: aws_sdk_dynamodb::Client,
    pub(crate) agent: String,
    pub(crate) operator: String,
    /// The table as the last [`Env::phase`] left it.
    last: std::sync::Mutex<Snapshot>,
    indexes: Vec<IndexDef>,
}

/// A fresh table and queue over metered clients, the audit ledger off: each leg's lines are
/// its own, and `audit.rs` adds the ledger's per event (docs/COST.md). `None` (skipped)
/// without moto.
pub(crate) async fn env(name: &str, capacity: bool, shards: u16) -> Option<Env> {
    env_with(name, capacity, shards, false).await
}

/// [`env`], with the audit ledger on or off.
pub(crate) async fn env_with(name: &str, capacity: bool, shards: u16, audit: bool) -> Option<Env> {
    let config = moto_config().await?;
    let table = unique(&format!("cost-{name}"));
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
    let queue_url = raw_sqs(&config).create_queue().queue_name(&table).send().await.unwrap().queue_url.unwrap();
    // The production defaults for what submit checks: 600 requests/min, inbox depth 1000.
    let mut settings = test_settings();
    settings.audit.enabled = audit;
    // Every request reads its credential, as on a cold or busy fleet of Lambdas (the in-process
    // cache only helps a warm instance that saw the same key within the last second).
    settings.credential_cache = std::time::Duration::ZERO;
    // The account's channels configuration (issue 20) is read once per container per
    // `MA2H_CHANNELS_CACHE_MS` (5 s by default) — warmed below, as on a busy container; the
    // channels test counts the read where it happens.
    settings.channels.config_cache = std::time::Duration::from_secs(3600);
    // The production default re-read interval for Lambda long-polls. (Past retention, messages,
    // entries and sessions are DynamoDB's TTL's to delete, for free: the sweeper deletes nothing.)
    let aws = AwsSettings {
        table: table.clone(),
        push_queue_url: queue_url.clone(),
        long_poll_interval: ms(500),
        shards,
        // the production default: the heat model reads the listing's shards from it
        list_shards: ma2h_store_dynamodb::shards::DEFAULT_LIST_SHARDS,
    };
    let clock = Arc::new(ManualClock::new(chrono::Utc::now()));
    let store = DynamoStore::new(ddb, table).with_shards(aws.store_shards()).with_clock(clock.clone());
    let mut dep = assemble(settings, &aws, store, SqsPushQueue::new(sqs, queue_url)).unwrap();
    dep.hub.clock = clock.clone();
    let agent = admin::create_agent(&dep.hub, "acme", "bot", None).await.unwrap().api_key;
    let operator = admin::create_operator(&dep.hub, "acme", "alice", None).await.unwrap().api_key;
    admin::bind_callback(&dep.hub, "acme", "bot", "127.0.0.1").await.unwrap();
    admin::put_secret(&dep.hub, "acme", "bot", "cb", "s3cret").await.unwrap();
    let acme = ma2h_protocol::ids::AccountId::parse("acme").unwrap();
    ma2h_core::channels::schedule::config(&dep.hub, &acme).await.unwrap();
    // An operator's activity (issue 40) is written on their first request in a minute per
    // container — counted on its own line (channels.rs, "presence"); warm here, as on a busy one.
    let alice = ma2h_protocol::ids::HumanId::parse("alice").unwrap();
    ma2h_core::decisions::presence::seen(&dep.hub, &acme, &alice).await;
    meter.take();
    let last = std::sync::Mutex::new(snapshot(&raw, dep.store.table()).await);
    Some(Env { dep, clock, meter, esm, esm_sqs, raw, agent, operator, last, indexes: units::indexes() })
}

/// One sweep's index reads: six partition families (`due`, `push`, the mailbox's MBXDUE, the
/// sessions' SESSDUE and SESSBNC, the notifications' NOTEDUE), each read on its every shard and on
/// the unsharded partition of items written before sharding (issue 38: the price of no hot
/// partition — 774 eventually consistent reads a minute, about $4 a month at on-demand rates;
/// the three `retain` families went with TTL-only purges).
pub(crate) const SWEEP_QUERIES: u64 = sweep_queries(ma2h_store_dynamodb::shards::DEFAULT_SHARDS);

pub(crate) const fn sweep_queries(shards: u16) -> u64 {
    6 * (shards as u64 + 1)
}

pub(crate) fn ms(n: u64) -> std::time::Duration {
    std::time::Duration::from_millis(n)
}

pub(crate) fn raw_sqs(config: &aws_config::SdkConfig) -> aws_sdk_sqs::Client {
    aws_sdk_sqs::Client::new(config)
}

/// Run `body` over a fresh environment, then drop its table and queue (a 100k-item table is
/// not left in the shared moto), re-raising the body's panic after the cleanup.
pub(crate) async fn with_env<T, F, Fut>(name: &str, capacity: bool, body: F) -> Option<T>
where
    T: Send + 'static,
    F: FnOnce(Arc<Env>) -> Fut,
    Fut: Future<Output = T> + Send + 'static,
{
    with_env_sharded(name, capacity, ma2h_store_dynamodb::shards::DEFAULT_SHARDS, body).await
}

/// [`with_env`] with `shards` per sweeper partition family instead of the production default.
pub(crate) async fn with_env_sharded<T, F, Fut>(name: &str, capacity: bool, shards: u16, body: F) -> Option<T>
where
    T: Send + 'static,
    F: FnOnce(Arc<Env>) -> Fut,
    Fut: Future<Output = T> + Send + 'static,
{
    let e = Arc::new(env(name, capacity, shards).await?);
    let result = tokio::spawn(body(e.clone())).await;
    let (table, url) = (e.dep.store.table().to_owned(), e.dep.queue.queue_url().to_owned());
    let _ = e.raw.delete_table().table_name(table).send().await;
    let _ = e.esm_sqs.delete_queue().queue_url(url).send().await;
    match result {
        Ok(v) => Some(v),
        Err(err) => std::panic::resume_unwind(err.into_panic()),
    }
}

pub(crate) async fn call(e: &Env, req: lambda_http::Request) -> (StatusCode, Value) {
    call_app(&e.dep, req).await
}

pub(crate) fn ask(key: &str, callback: Option<Value>, expires_at: Option<chrono::DateTime<chrono::Utc>>) -> Value {
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

pub(crate) fn notify(key: &str) -> Value {
    json!({
        "ma2h_version": "0.5", "type": "notify", "created_at": "2026-12-02T15:00:00Z",
        "agent": { "id": "bot", "run_id": "r1", "runtime": "github-actions" },
        "title": "Nightly build finished", "body": "All green.", "priority": "low", "idempotency_key": key
    })
}

/// A callback receiver that answers 200 and counts hits.
pub(crate) async fn receiver() -> (String, Arc<AtomicUsize>) {
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
pub(crate) async fn deliver_via_esm(e: &Env) -> (usize, usize) {
    let queue_url = e.dep.queue.queue_url();
    let out = e.esm_sqs.receive_message().queue_url(queue_url).max_number_of_messages(10).send().await.unwrap();
    let batch = sqs_event(out.messages());
    let received = batch.records.len();
    let sender = handlers::deliverer(&e.dep).unwrap();
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
pub(crate) fn expect(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().filter(|(_, n)| *n > 0).map(|(k, n)| ((*k).to_owned(), *n)).collect()
}

pub(crate) use crate::metering::item_size;

/// `assert_eq!` for a measured count; with `MA2H_COST_MEASURE=1` a mismatch is printed instead
/// (to re-measure every phase after a design change, then update the expectations).
#[macro_export]
macro_rules! cost_eq {
    ($left:expr, $right:expr $(, $($arg:tt)+)?) => {{
        let (l, r) = (&$left, &$right);
        if std::env::var_os("MA2H_COST_MEASURE").is_some() {
            if l != r {
                eprintln!("COST MISMATCH at line {}: {:?} != {:?}", line!(), l, r);
            }
        } else {
            assert_eq!(l, r $(, $($arg)+)?);
        }
    }};
}

/// Every item of the table (unmetered, strongly consistent).
pub(crate) async fn snapshot(raw: &aws_sdk_dynamodb::Client, table: &str) -> Snapshot {
    let mut out = Snapshot::new();
    let mut start = None;
    loop {
        let page =
            raw.scan().table_name(table).consistent_read(true).set_exclusive_start_key(start).send().await.unwrap();
        for item in page.items() {
            let key = |k: &str| item.get(k).and_then(|v| v.as_s().ok()).cloned().unwrap_or_default();
            out.insert((key("pk"), key("sk")), item.clone());
        }
        match page.last_evaluated_key {
            Some(k) if !k.is_empty() => start = Some(k),
            _ => return out,
        }
    }
}

/// What the `inbox` index keeps of a message item: the keys and its projected attributes, as
/// `infra/dynamodb-table.json` declares them.
pub(crate) fn inbox_entry(item: &HashMap<String, AttributeValue>) -> HashMap<String, AttributeValue> {
    let def: serde_json::Value = serde_json::from_str(ma2h_store_dynamodb::provision::TABLE_DEFINITION).unwrap();
    let index = def["GlobalSecondaryIndexes"].as_array().unwrap().iter().find(|g| g["IndexName"] == "inbox").unwrap();
    let projected = index["Projection"]["NonKeyAttributes"].as_array().unwrap();
    item.iter()
        .filter(|(k, _)| {
            ["pk", "sk", "list_pk", "list_sk"].contains(&k.as_str()) || projected.iter().any(|a| a == k.as_str())
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

pub(crate) async fn raw_item(e: &Env, pk: String, sk: &str) -> HashMap<String, AttributeValue> {
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

/// Print phases as a Markdown table (`--nocapture`), one column per operation seen, then the
/// derived units.
pub(crate) fn print_table(title: &str, rows: &[(String, Tally)]) {
    let ops: BTreeSet<&String> = rows.iter().flat_map(|(_, t)| t.requests.keys()).collect();
    println!("\n### {title}\n");
    let head: Vec<String> = ops.iter().map(|o| o.to_string()).collect();
    println!("| phase | {} | DynamoDB | SQS | RRU | WRU table | WRU indexes | WRU |", head.join(" | "));
    println!("|---|{}---|---|---|---|---|---|", "---|".repeat(ops.len()));
    for (phase, t) in rows {
        let cells: Vec<String> = ops.iter().map(|o| t.requests.get(*o).map_or("·".into(), |n| n.to_string())).collect();
        println!(
            "| {phase} | {} | {} | {} | {} | {} | {} | {} |",
            cells.join(" | "),
            t.total("dynamodb"),
            t.total("sqs"),
            t.rru,
            t.wru_table,
            t.wru_gsi,
            t.wru()
        );
    }
}

impl Env {
    /// What went over the wire since the last phase, with its write units derived from the table
    /// before and after.
    pub(crate) async fn phase(&self) -> Tally {
        let mut t = self.meter.take();
        let after = snapshot(&self.raw, self.dep.store.table()).await;
        let mut last = self.last.lock().unwrap();
        (t.wru_table, t.wru_gsi) = units::write_units(&last, &after, &t.writes, &self.indexes);
        t.heat = units::write_heat(&last, &after, &t.writes, &self.indexes);
        *last = after;
        t
    }
}
