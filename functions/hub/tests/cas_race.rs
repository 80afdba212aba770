//! The §7 atomic single-writer CAS, raced through HTTP.
//!
//! Each of [`TRIALS`] trials (per backend) submits one ask whose `expires_at` is moments away
//! (every other one with `default_on_expire`), then fires eight concurrent actors at it: four
//! operator `POST /v1/messages/{id}/resolve` calls (§8.8: answered `ship`, answered `hold`,
//! declined, and a second answered `ship` — told apart only by `resolution_id`), two
//! agent `POST /v1/messages/{id}/cancel` calls (§8.4), an agent `GET` (lazy expiry, §8.2) and the
//! sweeper — on SQLite the binary's background sweeper on a 10 ms interval (plus a second `GET`),
//! on DynamoDB an explicit `sweep_once` racing beside the others. Trials aim the actors right
//! after the submit (a pure resolve/cancel race), around `expires_at` (aimed one measured round
//! trip early, so the CAS lands on both sides of it), or just after it (expiry against late
//! resolvers). Trials run several at a time.
//!
//! Proven per trial:
//! - exactly one terminal: every 200 names the same `resolution_id` — at most one resolve
//!   succeeds, never a resolve and a cancel both — and the final `GET` shows that
//!   `resolution_id` with a status and Response consistent with the winner (value, attested
//!   actor, `defaulted` per §6);
//! - every loser learns the real outcome: a losing resolve gets `409 already_terminal` with the
//!   existing `{id, status, resolution}` (§8.8, §8.5); a losing cancel gets the same 409, or — when
//!   the other cancel won — the idempotent `200 cancelled` with the same `resolution_id` (§8.4);
//! - §7 expiry vs answer, on the Hub clock (this machine's, millisecond precision, §9.5): a
//!   winning resolve/cancel was sent before that clock passed `expires_at` and its `resolved_at`
//!   is not after it; an expiry is never observed before the clock passed `expires_at`; a read
//!   sent after that never shows `open`; a default is applied iff the ask had one, attested to
//!   `system:default_on_expire`; every kind of terminal wins in some trial (the races are real).
//!
//! Run against (a) the local `ma2h-hub` binary on SQLite and (b) the local app's Router and
//! sweeper (`ma2h_hub::app`) over the DynamoDB store on moto, on [`DYNAMO_SHARDS`] fresh, uniquely
//! named tables — skipped with a note when `AWS_ENDPOINT_URL` is unset, a failure if
//! `MA2H_REQUIRE_AWS_TESTS=1`. (`ma2h-hub serve` itself only opens SQLite; the DynamoDB store is
//! a dev-dependency here, for this test only.)

mod support;

use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ma2h_core::kernel::changes::InProcessChanges;
use ma2h_core::kernel::keys::HubKeys;
use ma2h_core::kernel::secrets::MasterKey;
use ma2h_core::kernel::settings::Settings;
use ma2h_core::ports::WakeWorker;
use serde_json::{Value, json};
use support::*;

/// Trials per backend.
const TRIALS: usize = 200;
const ASK_KINDS: [&str; 4] = ["answered", "declined", "cancelled", "expired"];

/// One of the eight racers.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Racer {
    /// Operator resolve: `resolution` and, for `answered`, the value.
    Resolve(&'static str, Option<&'static str>),
    /// Agent cancel.
    Cancel,
    /// Agent read: applies lazy expiry when overdue.
    Read,
    /// An explicit `sweep_once` (in-process Hub); a `Read` otherwise.
    Sweep,
}

const RACERS: [Racer; 8] = [
    Racer::Resolve("answered", Some("ship")),
    Racer::Resolve("answered", Some("hold")),
    Racer::Resolve("declined", None),
    Racer::Resolve("answered", Some("ship")),
    Racer::Cancel,
    Racer::Cancel,
    Racer::Read,
    Racer::Sweep,
];

/// Where the actors aim, relative to the ask.
#[derive(Clone, Copy, Debug)]
enum Aim {
    /// Right after the 202, long before `expires_at`: resolve vs cancel.
    Early,
    /// Spread around `expires_at`.
    Edge,
    /// Just after `expires_at`: expiry vs late resolvers.
    Late,
}

/// A Hub to race against.
struct Target {
    name: String,
    addr: String,
    agent: String,
    operator: String,
    /// Lead from submit to `expires_at`, in ms (room for the submit, and for the `Early` racers).
    lead_ms: i64,
    /// A running average of a resolve's round trip, in ns.
    rtt_ns: AtomicI64,
    sweep: Option<Arc<dyn Fn() -> Result<(), String> + Send + Sync>>,
    _keep: Box<dyn std::any::Any + Send + Sync>,
}

/// What one racer saw.
#[derive(Debug)]
struct Seen {
    racer: Racer,
    sent_ns: i128,
    recv_ns: i128,
    status: u16,
    body: Value,
}

fn now_ns() -> i128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as i128
}

fn sleep_until_ns(at: i128) {
    let wait = at - now_ns();
    if wait > 0 {
        std::thread::sleep(Duration::from_nanos(wait as u64));
    }
}

fn fire(t: &Target, racer: Racer, id: &str) -> Seen {
    let sent_ns = now_ns();
    let path = format!("/v1/messages/{id}");
    let (status, body) = match racer {
        Racer::Resolve(resolution, value) => {
            let mut body = json!({"resolution": resolution});
            if let Some(v) = value {
                body["value"] = json!(v);
            }
            try_request(&t.addr, "POST", &format!("{path}/resolve"), Some(&t.operator), Some(&body))
                .expect("hub unreachable")
        }
        Racer::Cancel => try_request(&t.addr, "POST", &format!("{path}/cancel"), Some(&t.agent), Some(&json!({})))
            .expect("hub unreachable"),
        Racer::Sweep if t.sweep.is_some() => match (t.sweep.as_ref().unwrap())() {
            Ok(()) => (200, Value::Null),
            Err(e) => (500, json!(e)),
        },
        Racer::Read | Racer::Sweep => {
            try_request(&t.addr, "GET", &path, Some(&t.agent), None).expect("hub unreachable")
        }
    };
    let recv_ns = now_ns();
    if matches!(racer, Racer::Resolve(..)) {
        // A running average of a resolve's round trip (aims the next `Edge` trials).
        let rtt = (recv_ns - sent_ns) as i64;
        let _ = t.rtt_ns.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |avg| Some((avg * 7 + rtt) / 8));
    }
    Seen { racer, sent_ns, recv_ns, status, body }
}

/// One trial: submit, race, read back, check. `Ok(final status)`.
fn trial(t: &Target, n: usize) -> Result<&'static str, String> {
    let mut rng = Rng::new(0xCA5 ^ (n as u64).wrapping_mul(0x9E37_79B9));
    let aim = [Aim::Early, Aim::Edge, Aim::Late][n % 3];
    let with_default = n.is_multiple_of(2);
    // Submit; if a loaded machine took longer than the lead, try again with a fresh key.
    let mut attempt = 0;
    let (id, expires_ms, acked_ns) = loop {
        let expires_ms = now_ms() + t.lead_ms;
        let mut env = ask_envelope(&format!("cas-{n}-{attempt}"));
        env["expires_at"] = json!(rfc3339_ms(expires_ms));
        if with_default {
            env["request"]["default_on_expire"] = json!("hold");
        }
        let (status, ack) = try_request(&t.addr, "POST", "/v1/messages", Some(&t.agent), Some(&env)).unwrap();
        match status {
            202 => break (ack["id"].as_str().unwrap().to_owned(), expires_ms, now_ns()),
            422 if attempt < 3 && now_ms() >= expires_ms => attempt += 1,
            _ => return Err(format!("trial {n}: submit answered {status}: {ack}")),
        }
    };
    let expires_ns = i128::from(expires_ms) * 1_000_000;
    // The Hub clock has millisecond precision (§9.5): it first reads "after expires_at" here.
    let overdue_ns = expires_ns + 1_000_000;
    let rtt_ns = i128::from(t.rtt_ns.load(Ordering::Relaxed));
    let aims: Vec<i128> = RACERS
        .iter()
        .map(|_| {
            let (r, jitter_ns) = (i128::from(rng.range(0, 120)), i128::from(rng.range(0, 10)) * 1_000_000);
            match aim {
                Aim::Early => acked_ns + jitter_ns / 3,
                // Fire up to a round trip early, so the CAS lands on either side of expires_at.
                Aim::Edge => expires_ns - rtt_ns * r / 100 + jitter_ns,
                Aim::Late => overdue_ns + 2 * jitter_ns,
            }
        })
        .collect();
    let seen: Vec<Seen> = std::thread::scope(|s| {
        let handles: Vec<_> = RACERS
            .iter()
            .zip(&aims)
            .map(|(&racer, &at)| {
                let id = &id;
                s.spawn(move || {
                    sleep_until_ns(at);
                    fire(t, racer, id)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    // Read back once `expires_at` has passed: whatever happened, the ask is terminal now.
    sleep_until_ns(expires_ns + 2_000_000);
    let final_sent = now_ns();
    let (status, fin) = try_request(&t.addr, "GET", &format!("/v1/messages/{id}"), Some(&t.agent), None).unwrap();
    let dump = || {
        let at = |ns: i128| format!("{:+.1}ms", (ns - expires_ns) as f64 / 1e6);
        let mut out = format!(
            "{} trial {n} ({aim:?}, default: {with_default}) {id}, expires_at {}: final GET sent at {} -> {status} {} {} {}\n",
            t.name,
            rfc3339_ms(expires_ms),
            at(final_sent),
            fin["status"],
            fin["response"]["resolution_id"],
            fin["response"]["response"]
        );
        for o in &seen {
            let rid =
                [&o.body["resolution_id"], &o.body["response"]["resolution_id"]].into_iter().find(|v| !v.is_null());
            out += &format!(
                "  {:?}: sent {} received {} -> {} {} {} {}\n",
                o.racer,
                at(o.sent_ns),
                at(o.recv_ns),
                o.status,
                o.body["error"]["code"],
                o.body["status"],
                rid.unwrap_or(&Value::Null)
            );
        }
        out
    };
    let fail = |what: &str| Err(format!("{what}\n{}", dump()));
    if status != 200 {
        return fail("final GET failed");
    }
    let Some(kind) = ASK_KINDS.iter().copied().find(|k| fin["status"] == *k) else {
        return fail("not terminal after expires_at");
    };
    let rid = fin["response"]["resolution_id"].as_str().unwrap_or_default();
    let detail = &fin["response"]["response"];
    let resolved_ms = detail["resolved_at"].as_str().map(parse_ms).unwrap_or(i64::MIN);
    if !rid.starts_with("res_") || fin["response"]["resolution"] != kind {
        return fail("the final Response does not match its status");
    }

    let mut resolve_wins = Vec::new();
    let mut cancel_wins = 0;
    let mut first_cancel_ns = i128::MAX;
    for o in &seen {
        let code = o.body["error"]["code"].as_str();
        // §7: an expiry exists only strictly after expires_at; nothing can report one earlier.
        let reports_expired = o.body["status"] == "expired" || o.body["response"]["resolution"] == "expired";
        if reports_expired && o.recv_ns < overdue_ns {
            return fail(&format!("{:?} saw `expired` before expires_at", o.racer));
        }
        let loser_ok = o.status == 409
            && code == Some("already_terminal")
            && o.body["id"] == id.as_str()
            && o.body["status"] == kind
            && o.body["resolution"] == kind;
        match o.racer {
            Racer::Resolve(resolution, value) => match o.status {
                200 => {
                    if o.body["status"] != resolution || o.body["resolution_id"] != rid || kind != resolution {
                        return fail(&format!("{:?} won but the final state disagrees", o.racer));
                    }
                    if o.sent_ns >= overdue_ns {
                        return fail(&format!("{:?} sent after expires_at won against the expiry", o.racer));
                    }
                    resolve_wins.push((resolution, value));
                }
                _ if loser_ok => {}
                _ => {
                    return fail(&format!(
                        "{:?}: a losing resolve must get 409 already_terminal with the winner",
                        o.racer
                    ));
                }
            },
            Racer::Cancel => match o.status {
                200 => {
                    if o.body["status"] != "cancelled"
                        || o.body["response"]["resolution_id"] != rid
                        || kind != "cancelled"
                    {
                        return fail("a cancel succeeded but the final state disagrees");
                    }
                    // A repeat cancel gets the same 200 at any time (§8.4); the first must have
                    // been sent by expires_at.
                    first_cancel_ns = first_cancel_ns.min(o.sent_ns);
                    cancel_wins += 1;
                }
                _ if loser_ok && kind != "cancelled" => {}
                _ => return fail("a losing cancel must get 409 already_terminal with the winner"),
            },
            Racer::Sweep if t.sweep.is_some() => {
                if o.status != 200 {
                    return fail("the explicit sweep failed");
                }
            }
            Racer::Read | Racer::Sweep => {
                if o.status != 200 {
                    return fail("a read failed");
                }
                if o.body["status"] == "open" {
                    if o.sent_ns >= overdue_ns {
                        return fail("a read sent after expires_at saw the ask open (no lazy expiry)");
                    }
                } else if o.body["status"] != kind || o.body["response"]["resolution_id"] != rid {
                    return fail("a read saw a different terminal than the final one");
                }
            }
        }
    }

    // Exactly one winner, and the stored Response is that winner's.
    let human = matches!(kind, "answered" | "declined");
    let cancels_agree = if kind == "cancelled" { cancel_wins >= 1 } else { cancel_wins == 0 };
    if resolve_wins.len() != usize::from(human) || !cancels_agree {
        return fail(&format!(
            "{} resolve and {cancel_wins} cancel successes for a final `{kind}`",
            resolve_wins.len()
        ));
    }
    if cancel_wins > 0 && first_cancel_ns >= overdue_ns {
        return fail("a cancel sent after expires_at won against the expiry");
    }
    let (actor, defaulted, value) = match kind {
        "answered" | "declined" => ("human:alice", false, resolve_wins[0].1.map(|v| json!(v))),
        "cancelled" => ("agent:bot", false, None),
        _ if with_default => ("system:default_on_expire", true, Some(json!("hold"))),
        _ => ("system:expiry", false, None),
    };
    if detail["actor"] != actor || fin["response"]["defaulted"] != defaulted || detail.get("value") != value.as_ref() {
        return fail(&format!(
            "the Response is not the winner's: want actor {actor}, defaulted {defaulted}, value {value:?}"
        ));
    }
    // §7 expiry vs answer: the winner's resolved_at is on the right side of expires_at.
    // (`resolved_at` has millisecond precision: an expiry just after `expires_at` may print equal.)
    let on_time = if kind == "expired" { resolved_ms >= expires_ms } else { resolved_ms <= expires_ms };
    if !on_time {
        return fail("resolved_at is on the wrong side of expires_at");
    }
    Ok(kind)
}

/// Run every trial, `workers` at a time, trial `n` against `targets[n % targets.len()]`; panic
/// with the first failure.
fn race(name: &str, targets: &[Target], workers: usize) {
    let started = Instant::now();
    let next = AtomicUsize::new(0);
    let outcomes = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if n >= TRIALS {
                        return;
                    }
                    let r = trial(&targets[n % targets.len()], n);
                    outcomes.lock().unwrap().push(r);
                }
            });
        }
    });
    let outcomes = outcomes.into_inner().unwrap();
    let failures: Vec<&String> = outcomes.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(failures.is_empty(), "{} of {TRIALS} trials failed; first:\n{}", failures.len(), failures[0]);
    let tally: Vec<(&str, usize)> =
        ASK_KINDS.iter().map(|k| (*k, outcomes.iter().filter(|r| r.as_ref().ok() == Some(k)).count())).collect();
    eprintln!("{name}: {TRIALS} trials in {:.1?}, winners {tally:?}", started.elapsed());
    assert_eq!(outcomes.len(), TRIALS);
    // The races were real: every kind of racer won somewhere.
    for (kind, count) in &tally {
        assert!(*count > 0, "{name}: no trial ended `{kind}`: {tally:?}");
    }
}

/// The two races run one at a time: each is timed against `expires_at`, and on two cores the
/// other's eight racers (and moto) would skew it — a DynamoDB race once saw every early trial
/// lost to the agent's cancel while the SQLite race ran beside it.
static ONE_RACE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn racing_resolves_cancels_and_expiry_commit_exactly_one_terminal_on_the_local_sqlite_hub() {
    let _alone = ONE_RACE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = tempfile::tempdir().unwrap();
    let agent = admin_json(dir.path(), &["create-agent", "--account", "acme", "--agent", "bot"]);
    let operator = admin_json(dir.path(), &["create-operator", "--account", "acme", "--human", "alice"]);
    let hub = Hub::start_with(dir.path(), &[("MA2H_SWEEP_INTERVAL_MS", "10")]);
    let target = Target {
        name: "sqlite".into(),
        addr: hub.addr.clone(),
        agent: agent["api_key"].as_str().unwrap().into(),
        operator: operator["api_key"].as_str().unwrap().into(),
        lead_ms: 250,
        rtt_ns: AtomicI64::new(5_000_000),
        sweep: None,
        _keep: Box::new((hub, dir)),
    };
    race("sqlite", &[target], 8);
}

#[test]
fn racing_resolves_cancels_and_expiry_commit_exactly_one_terminal_on_dynamodb() {
    if !ma2h_test_support::moto_available() {
        return;
    }
    let _alone = ONE_RACE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    race("dynamodb", &dynamo_targets(DYNAMO_SHARDS), 8);
}

/// DynamoDB trials are spread over this many Hubs, each on its own table: moto deep-copies the
/// table on every `TransactWriteItems`, so small tables keep its single thread fast enough.
const DYNAMO_SHARDS: usize = 40;

/// `shards` Hubs wired like the local app (the shared Router and `ma2h_hub::app::run_sweeper`),
/// each over the DynamoDB store on a fresh, uniquely named moto table, sharing one runtime.
fn dynamo_targets(shards: usize) -> Vec<Target> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let handle = rt.handle().clone();
        rt.block_on(async move {
            let config = ma2h_test_support::moto_config().await.expect("moto (checked before)");
            let client = aws_sdk_dynamodb::Client::new(&config);
            for shard in 0..shards {
                let table = ma2h_test_support::unique(&format!("cas-race-{shard}"));
                ma2h_store_dynamodb::provision::create_table(&client, &table).await.unwrap();
                // a few sweeper shards: this Hub sweeps often, and each sweep reads every shard
                // (moto walks the table per read; the production 128 would swamp it)
                let store = Arc::new(
                    ma2h_store_dynamodb::DynamoStore::new(client.clone(), &table)
                        .with_shards(ma2h_store_dynamodb::Shards::new(4)),
                );
                let vars = [
                    ("MA2H_MODE", "dev"),
                    ("MA2H_REQUESTS_PER_MINUTE", "0"),
                    ("MA2H_INBOX_DEPTH", "0"),
                    // The racing sweep is the explicit one; the background sweeper stays slow.
                    ("MA2H_SWEEP_INTERVAL_MS", "10000"),
                ];
                let settings = Settings::from_vars(vars.iter().map(|(k, v)| (k.to_string(), v.to_string()))).unwrap();
                let hub = ma2h_core::Hub::new(
                    store,
                    settings,
                    MasterKey::from_base64(ma2h_test_support::MASTER_KEY_B64).unwrap(),
                    HubKeys::from_seed(&[7; 32], Vec::new()),
                    Arc::new(InProcessChanges::new()),
                    Arc::new(WakeWorker::default()),
                );
                let agent = ma2h_core::admin::create_agent(&hub, "acme", "bot", None).await.unwrap();
                let operator = ma2h_core::admin::create_operator(&hub, "acme", "alice", None).await.unwrap();
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                let addr = listener.local_addr().unwrap().to_string();
                let (sweeper, handle) = (hub.clone(), handle.clone());
                let sweep: Arc<dyn Fn() -> Result<(), String> + Send + Sync> = Arc::new(move || {
                    handle
                        .block_on(ma2h_core::messages::sweep::sweep_once(&sweeper))
                        .map(drop)
                        .map_err(|e| e.to_string())
                });
                tx.send(Target {
                    name: format!("dynamodb table {table}"),
                    addr,
                    agent: agent.api_key,
                    operator: operator.api_key,
                    lead_ms: 1500,
                    rtt_ns: AtomicI64::new(100_000_000),
                    sweep: Some(sweep),
                    _keep: Box::new(()),
                })
                .unwrap();
                // The local app's Router and background sweeper; no delivery worker (no callbacks
                // here, and its polling would only queue behind the racers on moto's one thread).
                tokio::spawn(ma2h_hub::app::run_sweeper(hub.clone()));
                tokio::spawn(async move { axum::serve(listener, ma2h_http::router(hub)).await.unwrap() });
            }
            std::future::pending::<()>().await
        });
    });
    rx.iter().take(shards).collect()
}
