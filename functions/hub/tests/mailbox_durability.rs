//! §3.1 durability of the agent mailbox under `kill -9` (§8.7, §13.3): a fault loop over one data
//! directory. Each iteration starts the real `ma2h-hub`, has an operator send directives while the
//! agent drains and acknowledges about half of what it receives, and SIGKILLs the Hub after a
//! pseudo-random 50–400 ms (fixed seed).
//!
//! What is proven:
//! - every directive the Hub answered 201 survives: its track is readable after every restart;
//! - an acknowledged directive (the ack answered `{"acked": 1}`) is never delivered again and
//!   reads `acknowledged` after every restart;
//! - after the last restart, every un-acked directive is still drainable (at-least-once): a
//!   final drain loop delivers each of them.

mod support;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use support::*;

const ITERATIONS: usize = 10;
const SEED: u64 = 0x00d1_2ec7;
/// A short window, so un-acked entries come back within the test; and a mailbox deep enough that
/// the sender (unpaced, while half of what is drained stays un-acked) never meets the 429 of the
/// depth cap on a fast machine: the property here is durability, not the cap (tested elsewhere).
const HUB_ENV: &[(&str, &str)] = &[("MA2H_VISIBILITY_TIMEOUT_SECONDS", "1"), ("MA2H_MAILBOX_DEPTH", "100000")];

#[derive(Default)]
struct Ledger {
    /// Directives the Hub answered 201.
    sent: Vec<String>,
    /// Acks answered `{"acked": 1}`.
    acked: HashSet<String>,
    /// Acks a kill cut off: they may or may not have committed.
    maybe_acked: HashSet<String>,
    errors: Vec<String>,
}

fn load(addr: &str, op: &str, agent: &str, ledger: &Arc<Mutex<Ledger>>, stop: &Arc<AtomicBool>, iteration: usize) {
    let sender = {
        let (addr, op, ledger, stop) = (addr.to_owned(), op.to_owned(), ledger.clone(), stop.clone());
        std::thread::spawn(move || {
            for n in 0.. {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let body = json!({"to": "agent:bot", "title": format!("d{iteration}-{n}")});
                match try_request(&addr, "POST", "/v1/operator/directives", Some(&op), Some(&body)) {
                    Some((201, r)) => ledger.lock().unwrap().sent.push(r["id"].as_str().unwrap().to_owned()),
                    Some((s, r)) => ledger.lock().unwrap().errors.push(format!("send: {s} {r}")),
                    None => return,
                }
            }
        })
    };
    let mut flip = false;
    loop {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let Some((200, drained)) = try_request(addr, "GET", "/v1/inbox?max=5", Some(agent), None) else { break };
        for entry in drained["messages"].as_array().unwrap() {
            let id = entry["directive"]["id"].as_str().unwrap().to_owned();
            if ledger.lock().unwrap().acked.contains(&id) {
                ledger.lock().unwrap().errors.push(format!("{id} was delivered again after its ack"));
            }
            flip = !flip;
            if !flip {
                continue; // leave every other one un-acked: it must come back
            }
            match try_request(addr, "POST", "/v1/inbox/ack", Some(agent), Some(&json!({"ids": [id]}))) {
                Some((200, r)) if r["acked"] == 1 => {
                    let mut l = ledger.lock().unwrap();
                    l.maybe_acked.remove(&id);
                    l.acked.insert(id);
                }
                Some((200, _)) => {} // a redelivery acked by an earlier cut-off ack, or expired
                Some((s, r)) => ledger.lock().unwrap().errors.push(format!("ack: {s} {r}")),
                None => {
                    ledger.lock().unwrap().maybe_acked.insert(id);
                    break;
                }
            }
        }
    }
    sender.join().unwrap();
}

fn check_tracks(hub: &Hub, op: &str, l: &Ledger) {
    for id in &l.sent {
        let (s, track) = get(hub, &format!("/v1/operator/directives/{id}"), op);
        assert_eq!(s, 200, "{id} was answered 201 and must survive: {track}");
        if l.acked.contains(id) {
            assert_eq!(track["delivery"]["state"], "acknowledged", "{id}");
        }
    }
}

#[test]
fn kill_9_loses_no_directive_and_never_redelivers_an_acked_one() {
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let agent = admin_json(dir.path(), &["create-agent", "--account", "acme", "--agent", "bot"]);
    let operator = admin_json(dir.path(), &["create-operator", "--account", "acme", "--human", "alice"]);
    let (agent, op) = (agent["api_key"].as_str().unwrap().to_owned(), operator["api_key"].as_str().unwrap().to_owned());
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let mut rng = Rng::new(SEED);
    for iteration in 0..ITERATIONS {
        let mut hub = Hub::start_with(dir.path(), HUB_ENV);
        check_tracks(&hub, &op, &ledger.lock().unwrap());
        let stop = Arc::new(AtomicBool::new(false));
        let worker = {
            let (addr, op, agent, ledger, stop) =
                (hub.addr.clone(), op.clone(), agent.clone(), ledger.clone(), stop.clone());
            std::thread::spawn(move || load(&addr, &op, &agent, &ledger, &stop, iteration))
        };
        std::thread::sleep(Duration::from_millis(rng.range(50, 400)));
        hub.kill9();
        stop.store(true, Ordering::Relaxed);
        worker.join().unwrap();
        let l = ledger.lock().unwrap();
        assert!(l.errors.is_empty(), "iteration {iteration}: {:#?}", l.errors);
    }

    // Final restart: every un-acked directive comes back; no acked one does.
    let hub = Hub::start_with(dir.path(), HUB_ENV);
    let l = ledger.lock().unwrap();
    check_tracks(&hub, &op, &l);
    let owed: HashSet<&String> =
        l.sent.iter().filter(|id| !l.acked.contains(*id) && !l.maybe_acked.contains(*id)).collect();
    assert!(
        owed.len() >= 20 && l.acked.len() >= 20,
        "too little load to prove anything: {} owed, {} acked",
        owed.len(),
        l.acked.len()
    );
    let mut seen = HashSet::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !owed.iter().all(|id| seen.contains(*id)) {
        assert!(
            Instant::now() < deadline,
            "{} un-acked directives never came back",
            owed.iter().filter(|id| !seen.contains(**id)).count()
        );
        let (_, drained) = get(&hub, "/v1/inbox?max=32&wait=2", &agent);
        for entry in drained["messages"].as_array().unwrap() {
            let id = entry["directive"]["id"].as_str().unwrap().to_owned();
            assert!(!l.acked.contains(&id), "{id} was delivered again after its ack");
            seen.insert(id);
        }
    }
    eprintln!(
        "{ITERATIONS} kill -9 cycles: {} directives sent, {} acked, {} owed and redelivered after the final restart, in {:.1?}",
        l.sent.len(),
        l.acked.len(),
        owed.len(),
        started.elapsed()
    );
}
