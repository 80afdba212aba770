//! The partition-heat model (issue 38, docs/COST.md "Partition heat"): each workload runs
//! through the Lambda handlers over metered clients, every write unit it consumed is attributed
//! to the partition that absorbs it — the item's `pk` on the table, the entry's hash key on each
//! index — and scaled to the deployment goal's rates. DynamoDB gives every partition 1,000 WCU/s
//! (a throttled index back-pressures the table); the goal keeps every partition under half that.
//!
//! A key's rate depends on what it is shared by: a key naming one message, entry or session
//! takes that item's writes only; one naming an agent takes at most the agent's §8.6 request
//! budget; one naming the account — or nothing at all — takes the whole workload (one company on
//! one account is the case to hold); one shard of a sweeper family (`DUE#017`) its share of the
//! family's writes. Each test asserts the set of partitions over the bound, so
//! the table in docs/COST.md is what the design does, and a fix shows as a shorter list.

use std::collections::BTreeSet;

use axum::http::StatusCode;
use chrono::Duration;
use ma2h_aws::handlers;
use ma2h_core::admin;
use ma2h_core::ports::Clock as _;
use serde_json::json;

use crate::env::*;
use crate::inter_agent::addressed;
use crate::metering::Tally;
use crate::support::event;
use crate::units::Heat;

/// Half of DynamoDB's 1,000 WCU/s per partition.
const BOUND: f64 = 500.0;
/// Half of DynamoDB's 3,000 RCU/s per partition.
const READ_BOUND: f64 = 1_500.0;
/// The most one agent writes per second: the §8.6 default budget (600 requests a minute).
const AGENT_RATE: f64 = 10.0;

/// The goal's rates (issue 38), per workload.
const ASKS: f64 = 20_000.0;
const DIRECTIVES: f64 = 2_000.0;
/// 100,000 agents holding sessions, each a 5-minute session renewed every 30 s.
const SESSIONS: f64 = 100_000.0 / 300.0;
const INTER_AGENT: f64 = 2_000.0;
/// A tenth of the asks routed to a channel, and a tenth pushed to a receiver that is down.
const ROUTED: f64 = 2_000.0;
const FAILING_PUSHES: f64 = 2_000.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Scope {
    /// One message, entry, session or claim.
    Item,
    /// One shard of a sweeper partition family (`DUE#017`): items hash over the shards, so each
    /// takes its share of the family's writes.
    Shard,
    /// One shard of an account's partition family (`SESSACCT#{account}#001`).
    AccountShard,
    Agent,
    Account,
    Global,
    /// (reads only) An item every container keeps in a cache of its own — a credential
    /// (`KEY#`, `MA2H_CREDENTIAL_CACHE_MS`, 1 s) or the account's inter-agent policy (`ACCT#`):
    /// read at most once per refresh per container, whatever the rate.
    Cached,
    /// (reads only) A sweeper partition (`DUE#017`, `PUSH`, …): read once per sweep (a minute),
    /// whatever the rate.
    Sweep,
    /// (writes only) The account partition (`ACCT#`): an operator's activity (issue 40) is
    /// written at most once a minute per operator per container, whatever the rate; the policy
    /// item only by an administrator's edit.
    Activity,
}

/// Containers refreshing a cached item at once, each once a second (the credential cache).
const CACHE_REFRESHES: f64 = 100.0;
/// Operators of one account active at once, for the activity writes' bound (each written at
/// most once a minute per warm container: 100 containers × 50 operators / 60 s).
const ACTIVE_OPERATORS: f64 = 50.0;
/// Sweeps a second: one a minute.
const SWEEPS: f64 = 1.0 / 60.0;
const SWEEPER_FAMILIES: [&str; 9] =
    ["DUE", "PUSH", "NOTEDUE", "MBXDUE", "SESSDUE", "SESSBNC", "RET", "MBXRET", "SESSRET"];

/// A read's scope where it differs from a write's: cached items and sweeper partitions.
fn read_scope(index: &str, key: &str) -> Option<(Scope, String)> {
    if key.starts_with("KEY#") {
        return Some((Scope::Cached, "KEY#{credential}".into()));
    }
    if key.starts_with("ACCT#") {
        return Some((Scope::Cached, "ACCT#{account}".into()));
    }
    let family = key.split('#').next().unwrap_or(key);
    (matches!(index, "due" | "push") && SWEEPER_FAMILIES.contains(&family))
        .then(|| (Scope::Sweep, if key.contains('#') { format!("{family}#{{shard}}") } else { family.to_owned() }))
}

const ID_PREFIXES: [&str; 6] = ["msg_", "sess_", "dir_", "ent_", "rct_", "res_"];

/// What a partition key is shared by, and its shape with names and ids replaced.
fn classify(key: &str, agents: &[&str]) -> (Scope, String) {
    let mut scope = Scope::Global;
    let mut shape = String::new();
    let item_kind = ["IDEM#", "NOTE#", "MSG#", "MBX#", "SESS#"].iter().any(|p| key.starts_with(p));
    for (i, token) in key.split_inclusive(['#', '/', ':']).enumerate() {
        let (word, sep) = match token.strip_suffix(['#', '/', ':']) {
            Some(w) => (w, &token[w.len()..]),
            None => (token, ""),
        };
        let replaced = if ID_PREFIXES.iter().any(|p| word.starts_with(p)) {
            scope = Scope::Item;
            "{id}"
        } else if agents.contains(&word) {
            scope = scope.min(Scope::Agent);
            "{agent}"
        } else if word == "acme" {
            scope = scope.min(Scope::Account);
            "{account}"
        } else if i > 0 && word.chars().all(|c| c.is_ascii_digit()) && !word.is_empty() {
            "{n}"
        } else {
            word
        };
        shape.push_str(replaced);
        shape.push_str(sep);
    }
    if item_kind {
        scope = Scope::Item;
    }
    if let Some((base, shard)) = key.split_once('#')
        && base.chars().all(|c| c.is_ascii_uppercase())
        && !shard.is_empty()
        && shard.chars().all(|c| c.is_ascii_digit())
    {
        return (Scope::Shard, format!("{base}#{{shard}}"));
    }
    if scope == Scope::Account && shape.ends_with("#{n}") {
        return (Scope::AccountShard, format!("{}#{{shard}}", shape.trim_end_matches("#{n}")));
    }
    (scope, shape)
}

/// How many shards an account's partition family has: the message listing's and the open
/// counters' (`{account}#open#{shard}`, `OPENCNT#{account}#{shard}`: `MA2H_DYNAMODB_LIST_SHARDS`)
/// or the session list's.
fn account_shards(shape: &str) -> u16 {
    if shape.starts_with("AUD#{account}#") {
        return ma2h_core::audit::SHARDS; // the audit ledger's chains (issue 42)
    }
    match shape.starts_with("{account}#open#")
        || shape.starts_with("{account}#done#")
        || shape.starts_with("OPENCNT#{account}#")
    {
        true => ma2h_store_dynamodb::shards::DEFAULT_LIST_SHARDS,
        false => ma2h_store_dynamodb::shards::ACCOUNT_LIST_SHARDS,
    }
}

/// One partition's load at the goal.
#[derive(Debug, Clone)]
struct Row {
    index: String,
    shape: String,
    units: f64,
    load: f64,
}

/// Scale a workload's heat (units per operation, write or read) to its goal rate.
fn rows<'a>(
    rate: f64,
    heat: impl IntoIterator<Item = (&'a (String, String), f64)>,
    agents: &[&str],
    reads: bool,
) -> Vec<Row> {
    let mut out: Vec<Row> = Vec::new();
    for ((index, key), units) in heat {
        let (scope, shape) = match reads.then(|| read_scope(index, key)).flatten() {
            Some(s) => s,
            None if !reads && key.starts_with("ACCT#") => (Scope::Activity, "ACCT#{account}".into()),
            None => classify(key, agents),
        };
        let per_second = match scope {
            Scope::Item => 1.0,
            Scope::Shard => rate / f64::from(ma2h_store_dynamodb::shards::DEFAULT_SHARDS),
            Scope::AccountShard => rate / f64::from(account_shards(&shape)),
            Scope::Agent => rate.min(AGENT_RATE),
            Scope::Account | Scope::Global | Scope::Cached => rate,
            Scope::Sweep => SWEEPS,
            Scope::Activity => rate.min(CACHE_REFRESHES * ACTIVE_OPERATORS / 60.0),
        };
        // a cached item: each container reads it (one unit) at most once per refresh
        let load = match scope {
            Scope::Cached => (units * per_second).min(CACHE_REFRESHES),
            _ => units * per_second,
        };
        // keys of one shape are distinct partitions: the hottest one is what counts — except the
        // audit ledger's shards, which an operation's entries pick at random: their units add
        // up, spread over the family (issue 42)
        if shape.starts_with("AUD#")
            && let Some(r) = out.iter_mut().find(|r| r.index == *index && r.shape == shape)
        {
            (r.units, r.load) = (r.units + units, r.load + load);
            continue;
        }
        match out.iter_mut().find(|r| r.index == *index && r.shape == shape) {
            Some(r) if r.load >= load => {}
            Some(r) => (r.units, r.load) = (units, load),
            None => out.push(Row { index: index.clone(), shape, units, load }),
        }
    }
    out.sort_by(|a, b| b.load.total_cmp(&a.load));
    out
}

/// Print a workload's partitions (hottest first) and assert which are over the bound.
fn check(workload: &'static str, rate: f64, phases: &[Tally], agents: &[&str], hot_today: &[(&str, &str)]) {
    let mut total = Tally::default();
    for p in phases {
        total.add(p);
    }
    let rows = self::rows(rate, total.heat.iter().map(|(k, v)| (k, *v as f64)), agents, false);
    let units: u64 = total.heat.values().sum();
    println!("\n#### {workload} at {rate:.0}/s\n");
    println!("{units} WRU per operation in all (table and indexes).\n");
    println!("| index | partition | WRU per op | WCU/s at the goal | |");
    println!("|---|---|---|---|---|");
    for r in &rows {
        let over = if r.load > BOUND { "**over**" } else { "" };
        println!("| {} | `{}` | {} | {:.0} | {over} |", r.index, r.shape, r.units, r.load);
    }
    let hot: BTreeSet<(String, String)> =
        rows.iter().filter(|r| r.load > BOUND).map(|r| (r.index.clone(), r.shape.clone())).collect();
    let want: BTreeSet<(String, String)> = hot_today.iter().map(|(i, s)| ((*i).to_owned(), (*s).to_owned())).collect();
    crate::cost_eq!(hot, want, "{workload}: partitions over {BOUND} WCU/s at the goal ({} rows)", rows.len());

    // Reads: the same attribution (the partition each GetItem/Query read, each BatchGetItem item's
    // own), against 1,500 RCU/s.
    let reads = self::rows(rate, total.read_heat.iter().map(|(k, v)| (k, *v)), agents, true);
    let swept = |(index, key): &(String, String)| read_scope(index, key).is_some_and(|(s, _)| s == Scope::Sweep);
    let per_op: f64 = total.read_heat.iter().filter(|(k, _)| !swept(k)).map(|(_, v)| v).sum();
    let per_sweep: f64 = total.read_heat.iter().filter(|(k, _)| swept(k)).map(|(_, v)| v).sum::<f64>() + 0.0;
    println!(
        "\nReads: {per_op} RRU per operation in all (and the sweep's {per_sweep} RRU a minute, whatever the rate).\n"
    );
    println!("| index | partition | RRU per op | RCU/s at the goal | |");
    println!("|---|---|---|---|---|");
    // (the sweeper's partitions: half a unit each a minute — not listed)
    for r in reads
        .iter()
        .filter(|r| !SWEEPER_FAMILIES.iter().any(|f| r.shape == *f || r.shape.starts_with(&format!("{f}#"))))
    {
        let over = if r.load > READ_BOUND { "**over**" } else { "" };
        println!("| {} | `{}` | {} | {:.0} | {over} |", r.index, r.shape, r.units, r.load);
    }
    let hot: Vec<&Row> = reads.iter().filter(|r| r.load > READ_BOUND).collect();
    assert!(hot.is_empty(), "{workload}: partitions over {READ_BOUND} RCU/s at the goal: {hot:?}");
}

#[test]
fn keys_are_classified_by_what_shares_them() {
    let agents = ["bot", "worker"];
    assert_eq!(classify("DUE", &agents), (Scope::Global, "DUE".into()));
    assert_eq!(classify("DUE#017", &agents), (Scope::Shard, "DUE#{shard}".into()));
    assert_eq!(classify("SESSACCT#acme#003", &agents), (Scope::AccountShard, "SESSACCT#{account}#{shard}".into()));
    assert_eq!(classify("acme#open", &agents), (Scope::Account, "{account}#open".into()));
    assert_eq!(classify("acme#open#017", &agents), (Scope::AccountShard, "{account}#open#{shard}".into()));
    assert_eq!(account_shards("{account}#done#{shard}"), ma2h_store_dynamodb::shards::DEFAULT_LIST_SHARDS);
    assert_eq!(classify("OPEN#acme#bot", &agents), (Scope::Agent, "OPEN#{account}#{agent}".into()));
    assert_eq!(classify("MSG#acme#msg_01J", &agents), (Scope::Item, "MSG#{account}#{id}".into()));
    assert_eq!(classify("IDEM#acme#bot#c1", &agents), (Scope::Item, "IDEM#{account}#{agent}#c1".into()));
    assert_eq!(classify("CNT#ia/acme/bot/29500", &agents), (Scope::Agent, "CNT#ia/{account}/{agent}/{n}".into()));
    let heat = Heat::from([(("due".into(), "DUE".into()), 2), (("table".into(), "OPEN#acme#bot".into()), 1)]);
    let r = rows(1_000.0, heat.iter().map(|(k, v)| (k, *v as f64)), &agents, false);
    assert_eq!((r[0].shape.as_str(), r[0].load), ("DUE", 2_000.0));
    assert_eq!((r[1].shape.as_str(), r[1].load), ("OPEN#{account}#{agent}", AGENT_RATE));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heat_of_a_pushed_ask_with_expiry_answered() {
    with_env("heat-ask", false, |e| async move {
        let (url, _) = receiver().await;
        let cb = json!({"mode": "push", "url": url, "auth": {"scheme": "hmac", "secret_ref": "cb"}});
        let expires = e.clock.now() + Duration::hours(1);
        let (status, ack) =
            call(&e, event("POST", "/v1/messages", &e.agent, Some(&ask("h1", Some(cb), Some(expires))))).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{ack}");
        let id = ack["id"].as_str().unwrap().to_owned();
        let mut phases = vec![e.phase().await];
        let answer = json!({"resolution": "answered", "value": "ship"});
        let (status, _) =
            call(&e, event("POST", &format!("/v1/messages/{id}/resolve"), &e.operator, Some(&answer))).await;
        assert_eq!(status, StatusCode::OK);
        phases.push(e.phase().await);
        assert_eq!(deliver_via_esm(&e).await, (1, 0));
        phases.push(e.phase().await);
        let (status, _) = call(&e, event("GET", &format!("/v1/messages/{id}"), &e.agent, None)).await;
        assert_eq!(status, StatusCode::OK);
        phases.push(e.phase().await);
        e.clock.advance(Duration::days(40));
        handlers::sweep(&e.dep).await.unwrap();
        phases.push(e.phase().await);
        check("pushed ask with expires_at, answered", ASKS, &phases, &["bot"], &[]);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heat_of_a_directive() {
    with_env("heat-dir", false, |e| async move {
        let body = json!({"to": "agent:bot", "title": "Freeze deploys", "body": "Until the incident closes."});
        let (status, sent) = call(&e, event("POST", "/v1/operator/directives", &e.operator, Some(&body))).await;
        assert_eq!(status, StatusCode::CREATED, "{sent}");
        let key = sent["id"].as_str().unwrap().to_owned();
        let mut phases = vec![e.phase().await];
        let (_, drained) = call(&e, event("GET", "/v1/inbox", &e.agent, None)).await;
        assert_eq!(drained["messages"].as_array().map(Vec::len), Some(1), "{drained}");
        phases.push(e.phase().await);
        let (_, acked) = call(&e, event("POST", "/v1/inbox/ack", &e.agent, Some(&json!({"ids": [key]})))).await;
        assert_eq!(acked, json!({"acked": 1}));
        phases.push(e.phase().await);
        e.clock.advance(Duration::days(40));
        handlers::sweep(&e.dep).await.unwrap();
        phases.push(e.phase().await);
        check("directive: send, drain, ack, purge", DIRECTIVES, &phases, &["bot"], &[]);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heat_of_a_session_with_ten_renewals() {
    with_env("heat-sess", false, |e| async move {
        let (status, reg) = call(&e, event("POST", "/v1/sessions", &e.agent, Some(&json!({"ttl_seconds": 120})))).await;
        assert_eq!(status, StatusCode::CREATED, "{reg}");
        let sess = reg["session"]["id"].as_str().unwrap().to_owned();
        let mut phases = vec![e.phase().await];
        for _ in 0..10 {
            e.clock.advance(Duration::seconds(30));
            let (status, _) = call(&e, event("GET", &format!("/v1/inbox?session={sess}"), &e.agent, None)).await;
            assert_eq!(status, StatusCode::OK);
            phases.push(e.phase().await);
        }
        let (status, _) = call(&e, event("DELETE", &format!("/v1/sessions/{sess}"), &e.agent, None)).await;
        assert_eq!(status, StatusCode::OK);
        phases.push(e.phase().await);
        e.clock.advance(Duration::days(40));
        handlers::sweep(&e.dep).await.unwrap();
        phases.push(e.phase().await);
        check("session: register, 10 renewals, close, purge", SESSIONS, &phases, &["bot"], &[]);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heat_of_an_inter_agent_ask_both_ways() {
    with_env("heat-a2a", false, |e| async move {
        let worker = admin::create_agent(&e.dep.hub, "acme", "worker", None).await.unwrap().api_key;
        let (status, _) =
            call(&e, event("PATCH", "/v1/operator/inter-agent", &e.operator, Some(&json!({"enabled": true})))).await;
        assert_eq!(status, StatusCode::OK);
        let (_, a) = call(&e, event("POST", "/v1/sessions", &e.agent, Some(&json!({"ttl_seconds": 900})))).await;
        let asker = a["session"]["id"].as_str().unwrap().to_owned();
        let (_, w) = call(&e, event("POST", "/v1/sessions", &worker, Some(&json!({"ttl_seconds": 900})))).await;
        let sess = w["session"]["id"].as_str().unwrap().to_owned();
        e.phase().await;

        let to = format!("agent:worker#{sess}");
        let (status, ack) =
            call(&e, event("POST", "/v1/messages", &e.agent, Some(&addressed("h1", &to, &asker)))).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{ack}");
        let id = ack["id"].as_str().unwrap().to_owned();
        let mut phases = vec![e.phase().await];
        let (_, drained) = call(&e, event("GET", &format!("/v1/inbox?session={sess}"), &worker, None)).await;
        assert_eq!(drained["messages"][0]["message"]["id"], id.as_str());
        phases.push(e.phase().await);
        let answer = json!({"resolution": "answered", "value": "approve"});
        let uri = format!("/v1/messages/{id}/resolve?session={sess}");
        let (status, r) = call(&e, event("POST", &uri, &worker, Some(&answer))).await;
        assert_eq!(status, StatusCode::OK, "{r}");
        let resolution_id = r["resolution_id"].as_str().unwrap().to_owned();
        phases.push(e.phase().await);
        let uri = format!("/v1/inbox/ack?session={sess}");
        let (_, acked) = call(&e, event("POST", &uri, &worker, Some(&json!({"ids": [id]})))).await;
        assert_eq!(acked, json!({"acked": 1}));
        phases.push(e.phase().await);
        let (_, back) = call(&e, event("GET", &format!("/v1/inbox?session={asker}"), &e.agent, None)).await;
        assert_eq!(back["messages"][0]["response"]["resolution_id"], resolution_id.as_str());
        phases.push(e.phase().await);
        let uri = format!("/v1/inbox/ack?session={asker}");
        let (_, acked) = call(&e, event("POST", &uri, &e.agent, Some(&json!({"ids": [resolution_id]})))).await;
        assert_eq!(acked, json!({"acked": 1}));
        phases.push(e.phase().await);
        check("inter-agent ask both ways", INTER_AGENT, &phases, &["bot", "worker"], &[]);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heat_of_a_routed_ask_with_reminder_and_escalation() {
    with_env("heat-route", false, |e| async move {
        let (url, _) = receiver().await;
        let hub = &e.dep.hub;
        ma2h_core::channels::manage::put_webhook(hub, "admin", "acme", "pager", &url, "whk").await.unwrap();
        let route = ma2h_core::channels::manage::RouteSpec {
            id: "all".into(),
            targets: vec!["pager".into()],
            remind_after_minutes: Some(10),
            escalate: vec!["pager".into()],
            escalate_percent_left: Some(20),
            ..Default::default()
        };
        ma2h_core::channels::manage::put_route(hub, "admin", "acme", route).await.unwrap();
        e.phase().await; // the configuration is set-up, not the workload
        let expires = e.clock.now() + Duration::hours(1);
        let (status, ack) =
            call(&e, event("POST", "/v1/messages", &e.agent, Some(&ask("r1", None, Some(expires))))).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{ack}");
        let id = ack["id"].as_str().unwrap().to_owned();
        let mut phases = vec![e.phase().await];
        // announce, remind (10 min), escalate (at 20 % left: 48 min)
        for minutes in [0, 11, 38] {
            e.clock.advance(Duration::minutes(minutes));
            if minutes > 0 {
                handlers::sweep(&e.dep).await.unwrap();
            }
            deliver_via_esm(&e).await;
            phases.push(e.phase().await);
        }
        let answer = json!({"resolution": "answered", "value": "ship"});
        let (status, _) =
            call(&e, event("POST", &format!("/v1/messages/{id}/resolve"), &e.operator, Some(&answer))).await;
        assert_eq!(status, StatusCode::OK);
        phases.push(e.phase().await);
        deliver_via_esm(&e).await;
        phases.push(e.phase().await);
        check("routed ask with reminder and escalation", ROUTED, &phases, &["bot"], &[]);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heat_of_ten_minutes_of_a_failing_push_receiver() {
    with_env("heat-fail", false, |e| async move {
        // a receiver that is down: nothing listens on the port
        let dead = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let cb =
            json!({"mode": "push", "url": format!("http://{dead}/cb"), "auth": {"scheme": "hmac", "secret_ref": "cb"}});
        let (status, ack) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&ask("f1", Some(cb), None)))).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{ack}");
        let id = ack["id"].as_str().unwrap().to_owned();
        let answer = json!({"resolution": "answered", "value": "ship"});
        let (status, _) =
            call(&e, event("POST", &format!("/v1/messages/{id}/resolve"), &e.operator, Some(&answer))).await;
        assert_eq!(status, StatusCode::OK);
        e.phase().await;
        let deliverer = handlers::deliverer(&e.dep).unwrap();
        let (account, mid) =
            (ma2h_protocol::ids::AccountId::parse("acme").unwrap(), ma2h_protocol::ids::MessageId::parse(&id).unwrap());
        let mut phases = Vec::new();
        let end = e.clock.now() + Duration::minutes(10);
        let mut attempts = 0;
        while e.clock.now() < end {
            let track = deliverer.attempt(&e.dep.hub, &account, &mid).await.unwrap();
            attempts += 1;
            phases.push(e.phase().await);
            match track.and_then(|t| t.next_attempt_at) {
                Some(next) if next > e.clock.now() => e.clock.set(next),
                _ => break,
            }
        }
        assert!(attempts >= 3, "{attempts} attempts in 10 minutes");
        check("ten minutes of a failing push receiver", FAILING_PUSHES, &phases, &["bot"], &[]);
    })
    .await;
}

/// The partitions of one key family (`AUD#`) at `rate`: printed, and none over the bound.
pub(crate) fn check_family(workload: &'static str, rate: f64, phases: &[Tally], family: &str) {
    let mut total = Tally::default();
    for p in phases {
        total.add(p);
    }
    let rows = self::rows(rate, total.heat.iter().map(|(k, v)| (k, *v as f64)), &["bot"], false);
    let rows: Vec<&Row> = rows.iter().filter(|r| r.shape.starts_with(family)).collect();
    assert!(!rows.is_empty(), "{workload}: no `{family}` partition written");
    println!("\n#### {workload} at {rate:.0}/s: the `{family}` partitions\n");
    for r in &rows {
        println!("| {} | `{}` | {} WRU per op | {:.0} WCU/s at the goal |", r.index, r.shape, r.units, r.load);
        assert!(r.load <= BOUND, "{workload}: `{}` takes {:.0} WCU/s, over {BOUND}", r.shape, r.load);
    }
}
