//! §3.1 durability under `kill -9`, as a fault loop over one data directory.
//!
//! Each of [`ITERATIONS`] iterations starts the real `ma2h-hub` binary, drives it with concurrent
//! load — agents submitting notifies and asks (half the asks with a §8.3 push callback to a
//! receiver this test runs on 127.0.0.1), an operator resolving open asks (§8.8) and the agent
//! cancelling some (§8.4) — and SIGKILLs it after a pseudo-random 50–400 ms (fixed seed). Every
//! acknowledged submit (202) and every acknowledged resolve/cancel (200 with a `resolution_id`)
//! is recorded; requests the kill cut off are retried in the next iteration with the same
//! idempotency key (§8.1) or the same resolution.
//!
//! What is proven, at every restart for the previous iteration and for everything after the
//! last one:
//! - no accepted message is lost: every acked notify reads `delivered`, every acked ask exists;
//! - no committed resolution is lost or changed: it reads back with the acked `resolution_id`;
//! - nothing resolves by itself: an ask nobody (possibly) resolved is still `open`;
//! - idempotency claims survive (§8.1): a replay returns the original id;
//! - every pending push obligation survives (§3.1, §8.3): after the final restart the receiver
//!   sees, for every resolved ask with a callback, a push carrying the resolution's
//!   `resolution_id` (duplicates allowed — at-least-once), and never a different one (§7).

mod support;

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use serde_json::{Value, json};
use support::*;

/// Kill/restart cycles over the same data directory.
const ITERATIONS: usize = 24;
/// The seed of the kill schedule.
const SEED: u64 = 0x0007_c4a5_u64;
/// Concurrent submitting agents per iteration.
const SUBMITTERS: usize = 3;

/// Loopback callbacks allowed (dev mode), fast retries, and short per-attempt timeouts: a push
/// claimed just before a kill is leased for 2 × timeout + 5 s, then re-attempted.
const HUB_ENV: &[(&str, &str)] = &[
    ("MA2H_DEV_EGRESS_ALLOW", "127.0.0.0/8"),
    ("MA2H_PUSH_BACKOFF_MS", "100"),
    ("MA2H_PUSH_MAX_ATTEMPTS", "8"),
    ("MA2H_PUSH_CONNECT_TIMEOUT_MS", "500"),
    ("MA2H_PUSH_TIMEOUT_MS", "1000"),
];

/// How long the final check waits for every owed push (the lease above, plus slack).
const PUSH_DEADLINE: Duration = Duration::from_secs(30);

/// Every push the receiver got: `in_reply_to` → the `resolution_id`s seen.
#[derive(Clone, Default)]
struct Pushes(Arc<Mutex<HashMap<String, HashSet<String>>>>);

async fn receive(State(p): State<Pushes>, body: Bytes) -> &'static str {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let (Some(id), Some(rid)) = (body["in_reply_to"].as_str(), body["resolution_id"].as_str()) else {
        return "ignored";
    };
    // A receiver that takes a moment, so pushes are in flight when the kill lands.
    tokio::time::sleep(Duration::from_millis(10)).await;
    p.0.lock().unwrap().entry(id.to_owned()).or_default().insert(rid.to_owned());
    "ok"
}

/// A callback receiver that outlives every hub; returns it and its base URL.
fn start_receiver() -> (Pushes, String) {
    let pushes = Pushes::default();
    let (tx, rx) = std::sync::mpsc::channel();
    let state = pushes.clone();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            let app = axum::Router::new().route("/cb/{key}", axum::routing::post(receive)).with_state(state);
            axum::serve(listener, app).await.unwrap();
        });
    });
    (pushes, format!("http://{}/cb", rx.recv().unwrap()))
}

/// A terminal the load applies to an open ask.
#[derive(Clone, Copy, Debug)]
enum Action {
    Answer(&'static str),
    Decline,
    Cancel,
}

impl Action {
    fn status(self) -> &'static str {
        match self {
            Action::Answer(_) => "answered",
            Action::Decline => "declined",
            Action::Cancel => "cancelled",
        }
    }

    /// The request; `None` if the hub died under it.
    fn perform(self, addr: &str, keys: &Keys, id: &str) -> Option<(u16, Value)> {
        let (path, key, body) = match self {
            Action::Answer(v) => ("resolve", &keys.operator, json!({"resolution": "answered", "value": v})),
            Action::Decline => ("resolve", &keys.operator, json!({"resolution": "declined"})),
            Action::Cancel => ("cancel", &keys.agent, json!({})),
        };
        try_request(addr, "POST", &format!("/v1/messages/{id}/{path}"), Some(key), Some(&body))
    }

    /// The `resolution_id` of a 200: top level for resolve (§8.8), in the Response for cancel.
    fn resolution_id(self, body: &Value) -> Option<String> {
        let rid = match self {
            Action::Cancel => &body["response"]["resolution_id"],
            _ => &body["resolution_id"],
        };
        rid.as_str().map(str::to_owned)
    }
}

struct Keys {
    agent: String,
    operator: String,
}

/// A message the hub acknowledged with 202.
#[derive(Clone, Debug)]
struct Acked {
    id: String,
    envelope: Value,
    callback: bool,
}

/// Everything acknowledged so far, and what the kills left uncertain.
#[derive(Default)]
struct Ledger {
    acked: Vec<Acked>,
    /// Acked resolve/cancel: id → (status, resolution_id).
    resolved: HashMap<String, (String, String)>,
    /// Ids in the order their resolution was acked (for the per-restart check).
    resolved_log: Vec<String>,
    /// A resolve/cancel cut off by a kill and not retried yet: it may or may not have committed.
    lost_actions: Vec<(String, Action)>,
    /// A cut-off action whose retry got 409: the cut-off attempt had committed this status.
    committed_unacked: HashMap<String, &'static str>,
    /// Submits cut off by a kill, replayed with the same idempotency key next iteration.
    lost_submits: Vec<(Value, bool)>,
    /// Acked asks nobody has acted on yet.
    open: VecDeque<String>,
    errors: Vec<String>,
}

type Shared = Arc<Mutex<Ledger>>;

/// Submit `envelope`; record the 202. `false` once the hub is gone (or answered wrongly).
fn submit_one(addr: &str, key: &str, ledger: &Shared, envelope: Value, callback: bool) -> bool {
    match try_request(addr, "POST", "/v1/messages", Some(key), Some(&envelope)) {
        Some((202, ack)) => {
            let id = ack["id"].as_str().unwrap().to_owned();
            let mut l = ledger.lock().unwrap();
            if envelope["type"] == "ask" {
                l.open.push_back(id.clone());
            }
            l.acked.push(Acked { id, envelope, callback });
            true
        }
        Some((status, body)) => {
            ledger.lock().unwrap().errors.push(format!("submit answered {status}: {body}"));
            false
        }
        None => {
            ledger.lock().unwrap().lost_submits.push((envelope, callback));
            false
        }
    }
}

/// Apply `action` to `id`; record the outcome. `false` once the hub is gone.
fn act(addr: &str, keys: &Keys, ledger: &Shared, id: String, action: Action, retry: bool) -> bool {
    match action.perform(addr, keys, &id) {
        Some((200, body)) if body["status"] == action.status() && action.resolution_id(&body).is_some() => {
            let rid = action.resolution_id(&body).unwrap();
            let mut l = ledger.lock().unwrap();
            l.resolved.insert(id.clone(), (action.status().to_owned(), rid));
            l.resolved_log.push(id);
            true
        }
        // The cut-off attempt had committed: the retry must see exactly that terminal.
        Some((409, body))
            if retry && body["error"]["code"] == "already_terminal" && body["status"] == action.status() =>
        {
            ledger.lock().unwrap().committed_unacked.insert(id, action.status());
            true
        }
        Some((status, body)) => {
            ledger.lock().unwrap().errors.push(format!("{action:?} {id} (retry: {retry}) answered {status}: {body}"));
            false
        }
        None => {
            ledger.lock().unwrap().lost_actions.push((id, action));
            false
        }
    }
}

fn ask_with(key: &str, callback: Option<&str>) -> Value {
    let mut env = ask_envelope(key);
    if let Some(url) = callback {
        env["request"]["callback"] =
            json!({"mode": "push", "url": url, "auth": {"scheme": "hmac", "secret_ref": "cb"}});
    }
    env
}

/// One iteration's load against `addr` until `stop`: submitters, an operator, a cancelling agent.
fn run_load(iteration: usize, addr: &str, keys: &Arc<Keys>, ledger: &Shared, base: &str, stop: &Arc<AtomicBool>) {
    let mut threads = Vec::new();
    let retries = std::mem::take(&mut ledger.lock().unwrap().lost_submits);
    for t in 0..SUBMITTERS {
        let (addr, keys, ledger, stop, base) =
            (addr.to_owned(), keys.clone(), ledger.clone(), stop.clone(), base.to_owned());
        let mut retries = if t == 0 { retries.clone() } else { Vec::new() };
        threads.push(std::thread::spawn(move || {
            // First the submits the last kill cut off: the same key must be accepted (§8.1).
            while let Some((envelope, callback)) = retries.pop() {
                if !submit_one(&addr, &keys.agent, &ledger, envelope, callback) {
                    ledger.lock().unwrap().lost_submits.extend(retries);
                    return;
                }
            }
            for n in 0.. {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let key = format!("i{iteration}-t{t}-{n}");
                let (envelope, callback) = match n % 6 {
                    0 => (notify_envelope(), false),
                    k if k % 2 == 1 => (ask_with(&key, Some(&format!("{base}/{key}"))), true),
                    _ => (ask_with(&key, None), false),
                };
                if !submit_one(&addr, &keys.agent, &ledger, envelope, callback) {
                    return;
                }
            }
        }));
    }
    // The operator answers/declines from the oldest open ask; the agent cancels the newest.
    for resolver in 0..2 {
        let (addr, keys, ledger, stop) = (addr.to_owned(), keys.clone(), ledger.clone(), stop.clone());
        threads.push(std::thread::spawn(move || {
            let pending = {
                let mut l = ledger.lock().unwrap();
                let (mine, theirs): (Vec<_>, Vec<_>) =
                    l.lost_actions.drain(..).partition(|(_, a)| matches!(a, Action::Cancel) == (resolver == 1));
                l.lost_actions = theirs;
                mine
            };
            let mut pending = pending.into_iter();
            while let Some((id, action)) = pending.next() {
                if !act(&addr, &keys, &ledger, id, action, true) {
                    ledger.lock().unwrap().lost_actions.extend(pending);
                    return;
                }
            }
            for n in 0u64.. {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let next = {
                    let mut l = ledger.lock().unwrap();
                    if resolver == 0 { l.open.pop_front() } else { l.open.pop_back() }
                };
                let Some(id) = next else {
                    std::thread::sleep(Duration::from_millis(2));
                    continue;
                };
                let action = match (resolver, n % 3) {
                    (1, _) => Action::Cancel,
                    (_, 0) => Action::Answer("ship"),
                    (_, 1) => Action::Answer("hold"),
                    _ => Action::Decline,
                };
                if !act(&addr, &keys, &ledger, id, action, false) {
                    return;
                }
                if resolver == 1 {
                    std::thread::sleep(Duration::from_millis(8)); // fewer cancels than answers
                }
            }
        }));
    }
    for t in threads {
        t.join().unwrap();
    }
}

/// Read `acked` back and check it against the ledger; returns id → (status, resolution_id).
fn check_messages(hub: &Hub, agent_key: &str, ledger: &Ledger, acked: &[Acked]) -> HashMap<String, (String, String)> {
    let maybe: HashMap<&str, &'static str> =
        ledger.lost_actions.iter().map(|(id, a)| (id.as_str(), a.status())).collect();
    let mut seen = HashMap::new();
    for m in acked {
        let (status, body) = get(hub, &format!("/v1/messages/{}", m.id), agent_key);
        assert_eq!(status, 200, "acked {} was lost: {body}", m.id);
        let st = body["status"].as_str().unwrap().to_owned();
        let rid = body["response"]["resolution_id"].as_str().unwrap_or_default().to_owned();
        if m.envelope["type"] == "notify" {
            assert_eq!(st, "delivered", "acked notify {}", m.id);
            continue;
        }
        match (ledger.resolved.get(&m.id), ledger.committed_unacked.get(m.id.as_str()), maybe.get(m.id.as_str())) {
            (Some((want, want_rid)), _, _) => {
                assert_eq!((&st, &rid), (want, want_rid), "acked resolution of {} changed or was lost", m.id);
            }
            (None, Some(want), _) => assert_eq!(&st, want, "{}: the cut-off resolution committed", m.id),
            (None, None, Some(attempted)) => {
                assert!(st == "open" || st == *attempted, "{}: {st}, but only {attempted} was attempted", m.id);
            }
            (None, None, None) => assert_eq!(st, "open", "{} resolved although nobody resolved it", m.id),
        }
        if st != "open" {
            assert!(rid.starts_with("res_"), "{}: terminal without a resolution_id: {body}", m.id);
        }
        seen.insert(m.id.clone(), (st, rid));
    }
    seen
}

/// Resolutions acked in `ids` read back with the same status and `resolution_id`.
fn check_resolutions(hub: &Hub, agent_key: &str, ledger: &Ledger, ids: &[String]) {
    for id in ids {
        let (want, want_rid) = &ledger.resolved[id];
        let (status, body) = get(hub, &format!("/v1/messages/{id}"), agent_key);
        assert_eq!(status, 200, "{id}: {body}");
        assert_eq!(
            (body["status"].as_str(), body["response"]["resolution_id"].as_str()),
            (Some(want.as_str()), Some(want_rid.as_str())),
            "acked resolution of {id} lost"
        );
    }
}

/// Acked resolutions of asks with a callback whose push the receiver has not seen (yet).
fn owed_not_pushed(ledger: &Ledger, pushes: &Pushes) -> usize {
    let seen = pushes.0.lock().unwrap();
    ledger
        .acked
        .iter()
        .filter(|m| m.callback)
        .filter_map(|m| ledger.resolved.get(&m.id).map(|(_, rid)| (&m.id, rid)))
        .filter(|(id, rid)| !seen.get(*id).is_some_and(|r| r.contains(*rid)))
        .count()
}

/// Issue 42: the ledger holds exactly the events that committed. After the final restart (every
/// owed push delivered), the export verifies with the Hub's published key; every stored message
/// has one `message.submitted` entry, every terminal one exactly one terminal entry naming its
/// stored `resolution_id`, every delivered push one `push.delivered`; and no entry names a message
/// that does not exist or a resolution that lost. Returns how many entries were checked.
fn check_audit(
    data: &std::path::Path,
    hub: &Hub,
    keys: &Keys,
    final_state: &HashMap<String, (String, String)>,
    owed: &[(&str, &str)],
) -> usize {
    let text = audit_export(data, "acme");
    let cap = try_request(&hub.addr, "GET", "/.well-known/ma2h", None, None).unwrap().1;
    let report = ma2h_protocol::audit::verify(text.lines(), &ma2h_protocol::signature::VerifyingKey::published(&cap))
        .unwrap_or_else(|f| panic!("the export does not verify: {f}"));
    let entries: Vec<Value> =
        text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).filter(|v| v["type"] == "entry").collect();
    assert_eq!(entries.len() as u64, report.entries);
    let of = |kind: &str, id: &str| -> Vec<&Value> {
        entries.iter().filter(|e| e["kind"] == kind && e["target"] == id).collect()
    };
    for (id, (status, rid)) in final_state {
        assert_eq!(of("message.submitted", id).len(), 1, "{id}: one submitted entry");
        if status == "open" || status == "delivered" {
            continue;
        }
        let terminals: Vec<&Value> =
            ["message.resolved", "message.cancelled", "message.expired"].iter().flat_map(|k| of(k, id)).collect();
        assert_eq!(terminals.len(), 1, "{id} ({status}): one terminal entry, got {terminals:?}");
        assert_eq!(terminals[0]["detail"]["resolution_id"].as_str(), Some(rid.as_str()), "{id}: the stored resolution");
    }
    for (id, _) in owed {
        assert_eq!(of("push.delivered", id).len(), 1, "{id}: one push.delivered entry");
    }
    // no entry of an event that did not commit: every message named exists, every terminal
    // entry names the stored resolution (a cut-off submit that committed is in the ledger and
    // in the store alike)
    for e in entries.iter().filter(|e| e["kind"].as_str().is_some_and(|k| k.starts_with("message."))) {
        let id = e["target"].as_str().unwrap();
        let (status, body) = get(hub, &format!("/v1/messages/{id}"), &keys.agent);
        assert_eq!(status, 200, "{id} is in the ledger but not in the store: {body}");
        if e["kind"] != "message.submitted" {
            assert_eq!(e["detail"]["resolution_id"], body["response"]["resolution_id"], "{id}: a terminal that lost");
        }
    }
    entries.len()
}

#[test]
fn kill_9_under_concurrent_load_loses_no_ack_and_every_owed_push_is_delivered() {
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let agent = admin_json(dir.path(), &["create-agent", "--account", "acme", "--agent", "bot"]);
    let operator = admin_json(dir.path(), &["create-operator", "--account", "acme", "--human", "alice"]);
    admin_json(dir.path(), &["bind-callback", "--account", "acme", "--agent", "bot", "--host", "127.0.0.1"]);
    admin_json(
        dir.path(),
        &["put-secret", "--account", "acme", "--agent", "bot", "--name", "cb", "--value", "whsec-x"],
    );
    let keys = Arc::new(Keys {
        agent: agent["api_key"].as_str().unwrap().to_owned(),
        operator: operator["api_key"].as_str().unwrap().to_owned(),
    });
    let (pushes, base) = start_receiver();
    let ledger: Shared = Arc::default();
    let mut rng = Rng::new(SEED);

    // A notify and an answered ask before any kill (the original single-kill scenario).
    let hub = Hub::start_with(dir.path(), HUB_ENV);
    let (s, ack) = submit(&hub, &keys.agent, &notify_envelope());
    assert_eq!(s, 202, "{ack}");
    let notify_id = ack["id"].as_str().unwrap().to_owned();
    let (s, ack) = submit(&hub, &keys.agent, &ask_envelope("answered"));
    assert_eq!(s, 202, "{ack}");
    let answered = ack["id"].as_str().unwrap().to_owned();
    let (s, body) = post(
        &hub,
        &format!("/v1/messages/{answered}/resolve"),
        &keys.operator,
        &json!({"resolution": "answered", "value": "ship"}),
    );
    assert_eq!(s, 200, "{body}");
    {
        let mut l = ledger.lock().unwrap();
        l.acked.push(Acked { id: notify_id.clone(), envelope: notify_envelope(), callback: false });
        l.acked.push(Acked { id: answered.clone(), envelope: ask_envelope("answered"), callback: false });
        l.resolved.insert(answered.clone(), ("answered".into(), body["resolution_id"].as_str().unwrap().into()));
        l.resolved_log.push(answered.clone());
    }
    drop(hub);

    let (mut checked_acked, mut checked_resolved) = (0, 0);
    let (mut kills_under_load, mut owed_at_kills) = (0, 0);
    for iteration in 0..ITERATIONS {
        let mut hub = Hub::start_with(dir.path(), HUB_ENV);
        {
            // Cheap per-restart check: what the previous iteration acked is all there.
            let l = ledger.lock().unwrap();
            check_messages(&hub, &keys.agent, &l, &l.acked[checked_acked..]);
            check_resolutions(&hub, &keys.agent, &l, &l.resolved_log[checked_resolved..]);
            (checked_acked, checked_resolved) = (l.acked.len(), l.resolved_log.len());
            // §8.1: an idempotent replay after the crash returns the original id.
            let probe =
                l.acked.iter().filter(|m| m.envelope["type"] == "ask").nth(iteration * 7 % l.acked.len().max(1));
            for m in [&l.acked[1]].into_iter().chain(probe) {
                let (s, replay) = submit(&hub, &keys.agent, &m.envelope);
                assert_eq!((s, replay["id"].as_str()), (202, Some(m.id.as_str())), "replay of {}", m.id);
            }
        }
        let stop = Arc::new(AtomicBool::new(false));
        let load = {
            let (addr, keys, ledger, base, stop) =
                (hub.addr.clone(), keys.clone(), ledger.clone(), base.clone(), stop.clone());
            std::thread::spawn(move || run_load(iteration, &addr, &keys, &ledger, &base, &stop))
        };
        let before = ledger.lock().unwrap().acked.len();
        std::thread::sleep(Duration::from_millis(rng.range(50, 400)));
        hub.kill9();
        stop.store(true, Ordering::Relaxed);
        load.join().unwrap();
        let l = ledger.lock().unwrap();
        assert!(l.errors.is_empty(), "iteration {iteration}: {:#?}", l.errors);
        if l.acked.len() > before {
            kills_under_load += 1;
        }
        owed_at_kills += owed_not_pushed(&l, &pushes);
    }
    assert!(kills_under_load >= ITERATIONS / 2, "only {kills_under_load} kills landed under load");

    // Final restart: everything ever acked, every acked resolution, then every owed push.
    let hub = Hub::start_with(dir.path(), HUB_ENV);
    let l = ledger.lock().unwrap();
    let final_state = check_messages(&hub, &keys.agent, &l, &l.acked);
    check_resolutions(&hub, &keys.agent, &l, &l.resolved_log);
    let (s, replay) = submit(&hub, &keys.agent, &ask_envelope("answered"));
    assert_eq!((s, replay["id"].as_str()), (202, Some(answered.as_str())), "idempotency claims survive");
    let (s, n) = get(&hub, &format!("/v1/messages/{notify_id}"), &keys.agent);
    assert_eq!((s, n["status"].as_str()), (200, Some("delivered")));

    let owed: Vec<(&str, &str)> = l
        .acked
        .iter()
        .filter(|m| m.callback)
        .filter_map(|m| {
            let (st, rid) = &final_state[&m.id];
            (st != "open").then_some((m.id.as_str(), rid.as_str()))
        })
        .collect();
    assert!(owed.len() >= 20, "too few resolved asks with a callback to prove anything: {}", owed.len());
    let owed_at_restart = owed_not_pushed(&l, &pushes);
    let deadline = Instant::now() + PUSH_DEADLINE;
    loop {
        let seen = pushes.0.lock().unwrap().clone();
        let missing: Vec<_> =
            owed.iter().filter(|(id, rid)| !seen.get(*id).is_some_and(|r| r.contains(*rid))).collect();
        if missing.is_empty() {
            // §7 at-most-once: a push never carried a different resolution than the stored one.
            for (id, rids) in &seen {
                if let Some((st, rid)) = final_state.get(id) {
                    assert_ne!(st, "open", "{id} was pushed but is open");
                    assert_eq!(rids, &HashSet::from([rid.clone()]), "{id}: pushes disagree with the pull");
                }
            }
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{} of {} owed pushes never arrived after the final restart, e.g. {:?}",
            missing.len(),
            owed.len(),
            &missing[..missing.len().min(5)]
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let audited = check_audit(dir.path(), &hub, &keys, &final_state, &owed);
    eprintln!(
        "{ITERATIONS} kill -9 cycles ({kills_under_load} under load): {} acked messages, {} acked resolutions, {} cut-off actions that had committed, {} pushes owed and delivered ({owed_at_kills} acked ones were still owed when a kill landed, {owed_at_restart} at the final restart), {audited} audit entries matching them, in {:.1?}",
        l.acked.len(),
        l.resolved.len(),
        l.committed_unacked.len(),
        owed.len(),
        started.elapsed()
    );
}
