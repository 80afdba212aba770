//! The cost model (docs/COST.md): DynamoDB and SQS requests per phase of an ask's lifecycle
//! (submit → resolve → push → get), a notify, an idempotent replay, and the sweeper with a small
//! and a large open set — counted on the wire by an SDK interceptor on moto-backed clients and
//! asserted exactly, so a change that adds a round-trip fails here.
//!
//! `MA2H_COST_OPEN` sets the large open set (default 10 000; docs/COST.md records 100 000):
//! `MA2H_COST_OPEN=100000 cargo test -p ma2h-aws --test cost -- --nocapture`.
//! Skipped loudly without `AWS_ENDPOINT_URL`, failed if `MA2H_REQUIRE_AWS_TESTS=1`.

mod audit;
mod channels;
mod env;
mod heat;
mod inbox;
mod inter_agent;
mod mailbox;
mod metering;
mod passkeys;
mod sessions;
mod sso;
mod standard_webhooks;
#[path = "../support/mod.rs"]
#[allow(dead_code)]
mod support;
mod sweep;
mod units;

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::Instant;

use axum::http::StatusCode;
use chrono::Duration;
use ma2h_aws::handlers;
use serde_json::json;

use crate::metering::Tally;
use env::*;
use support::event;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_per_phase_of_an_ask_a_notify_and_a_replay() {
    with_env("lifecycle", false, |e| async move {
        let (url, hits) = receiver().await;
        // Warm the agent's rate window (the first request of a minute costs one more write;
        // measured on its own below).
        let (status, _) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&notify("warm")))).await;
        assert_eq!(status, StatusCode::ACCEPTED);
        e.phase().await;
        let mut rows: Vec<(String, Tally)> = Vec::new();
        let mut sizes: Vec<(String, usize)> = Vec::new();

        // 1. submit: an ask with a push callback and an idempotency key
        let cb = json!({"mode": "push", "url": url, "auth": {"scheme": "hmac", "secret_ref": "cb"}});
        let body = ask("c1", Some(cb), None);
        let (status, ack) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&body))).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{ack}");
        let id = ack["id"].as_str().unwrap().to_owned();
        let pk = format!("MSG#acme#{id}");
        let submit = e.phase().await;
        cost_eq!(
            submit.requests,
            expect(&[
                // auth (KEY#)
                ("dynamodb:GetItem", 1),
                // callback bindings and secret (AGENT# BIND#…SECRET#, one partition read)
                ("dynamodb:Query", 1),
                // the agent's counter: request window + open count (OPEN#, one ADD); the
                // account's open counter, after the message (OPENCNT#, issue 38)
                ("dynamodb:UpdateItem", 2),
                // the idempotency claim (IDEM#, conditional: the §8.1 decision), then the message
                ("dynamodb:PutItem", 2),
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
        let long_poll = e.phase().await;
        let reads = long_poll.requests.get("dynamodb:Query").copied().unwrap_or(0);
        assert!((4..=6).contains(&reads), "one read per 500 ms of a 2 s wait (+1): {long_poll:?} in {waited:?}");
        assert_eq!(long_poll.requests.get("dynamodb:GetItem"), Some(&1), "auth once");
        // §15.1: a response long-poll is agent activity: one presence write (per 15 s per container)
        assert_eq!(long_poll.requests.get("dynamodb:UpdateItem"), Some(&1), "presence");
        assert_eq!(long_poll.total("dynamodb"), reads + 2, "{long_poll:?}");
        let long_poll_row = ("get ?wait=2 on an open ask (not in the total)".to_owned(), long_poll);

        // (not part of the total) the operator's inbox page: one `inbox` index page (one Query
        // per listing shard and the unsharded partition: the merge's first read covers a single
        // entry) and the counts: the account's counter items (one BatchGetItem per 100 shards),
        // whatever the open set holds (issue 38)
        let (status, list) = call(&e, event("GET", "/v1/operator/messages?counts=true", &e.operator, None)).await;
        assert_eq!((status, list["counts"]["open"].as_u64()), (StatusCode::OK, Some(1)), "{list}");
        let listing = e.phase().await;
        let shards = u64::from(ma2h_store_dynamodb::shards::DEFAULT_LIST_SHARDS);
        cost_eq!(
            listing.requests,
            expect(&[
                ("dynamodb:GetItem", 1),
                ("dynamodb:Query", 1 + shards),
                ("dynamodb:BatchGetItem", shards.div_ceil(100))
            ]),
            "listing"
        );
        let listing_row = ("operator listing with counts, 1 open (not in the total)".to_owned(), listing);

        // 2. resolve, by the operator
        let answer = json!({"resolution": "answered", "value": "ship", "comment": "Canary is clean; go."});
        let path = format!("/v1/messages/{id}/resolve");
        let (status, res) = call(&e, event("POST", &path, &e.operator, Some(&answer))).await;
        assert_eq!(status, StatusCode::OK, "{res}");
        let resolve = e.phase().await;
        cost_eq!(
            resolve.requests,
            expect(&[
                // auth (`complete` writes from the lookup's record under its CAS: no re-read)
                ("dynamodb:GetItem", 1),
                // the lookup (MSG + TOMB in one partition read)
                ("dynamodb:Query", 1),
                // the tombstone, then the message (the §7 CAS, conditional)
                ("dynamodb:PutItem", 2),
                // the account's open counter (the CAS returned the replaced item: it was counted)
                ("dynamodb:UpdateItem", 1),
                // the push job, announced before the CAS commits
                ("sqs:SendMessage", 1),
            ]),
            "resolve"
        );
        let resolved_item = raw_item(&e, pk.clone(), "MSG").await;
        sizes.push(("message item, resolved (push pending)".into(), item_size(&resolved_item)));
        let mut attrs: Vec<(usize, &String)> =
            resolved_item.iter().map(|(k, v)| (item_size(&HashMap::from([(k.clone(), v.clone())])), k)).collect();
        attrs.sort_by(|a, b| b.cmp(a));
        println!("resolved message item, bytes per attribute: {attrs:?}");
        assert!(item_size(&resolved_item) <= 1024, "one write unit per write of the resolved message");
        sizes.push(("tombstone".into(), item_size(&raw_item(&e, pk.clone(), "TOMB").await)));
        sizes.push((
            "`inbox` index entry, resolved (+100 B index overhead)".into(),
            item_size(&inbox_entry(&raw_item(&e, pk.clone(), "MSG").await)) + 100,
        ));
        rows.push(("resolve (operator)".into(), resolve));

        // 3. push: the event source mapping hands the job to `deliver`
        assert_eq!(deliver_via_esm(&e).await, (1, 0));
        assert_eq!(hits.load(Ordering::SeqCst), 1, "pushed once");
        let push = e.phase().await;
        cost_eq!(
            push.requests,
            expect(&[
                // the message (lookup); the callback bindings and the HMAC secret (§9.4 re-check
                // at send time, one partition read)
                ("dynamodb:Query", 2),
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
        let get = e.phase().await;
        cost_eq!(get.requests, expect(&[("dynamodb:GetItem", 1), ("dynamodb:Query", 1)]), "get");
        rows.push(("get (agent)".into(), get));

        let mut ask_total = Tally::default();
        for (_, t) in &rows {
            ask_total.add(t);
        }
        cost_eq!((ask_total.total("dynamodb"), ask_total.total("sqs")), (16, 3), "one ask, end to end");
        // ≤ 13 write and ≤ 8 read units per pushed ask, submit to purge (the purge is the TTL's,
        // free: below). Was 28 WRU + 12 RRU (docs/COST.md); 10 until issue 38 dropped the
        // `retain` entry (−1) and added the open counters (+2: the account's cell up at submit,
        // down at the terminal) and the agent's `@open` entry for the §8.6 recount (+2: put,
        // delete) — O(1) counts instead of a read of the account's open set.
        cost_eq!((ask_total.wru_table, ask_total.wru_gsi, ask_total.rru), (8, 5, 8.0), "units of one ask");
        assert!(ask_total.wru() <= 13 && ask_total.rru <= 8.0, "{ask_total:?}");
        rows.push(("**ask total**".into(), ask_total));
        rows.push(long_poll_row);
        rows.push(listing_row);

        // notify: submit (terminal at once) and one read
        let (status, ack) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&notify("n1")))).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{ack}");
        let nid = ack["id"].as_str().unwrap().to_owned();
        let submit_notify = e.phase().await;
        cost_eq!(
            submit_notify.requests,
            expect(&[
                // auth (no callback to check, no inbox depth for a notify, no claim pre-read)
                ("dynamodb:GetItem", 1),
                // the request window
                ("dynamodb:UpdateItem", 1),
                // IDEM (the claim), TOMB, MSG
                ("dynamodb:PutItem", 3),
            ]),
            "notify"
        );
        // 5 write units per notify: the three puts, the window and the `inbox` entry
        cost_eq!((submit_notify.wru_table, submit_notify.wru_gsi), (4, 1), "units of a notify");
        sizes.push(("message item, notify".into(), item_size(&raw_item(&e, format!("MSG#acme#{nid}"), "MSG").await)));
        let (status, _) = call(&e, event("GET", &format!("/v1/messages/{nid}"), &e.agent, None)).await;
        assert_eq!(status, StatusCode::OK);
        let get_notify = e.phase().await;
        cost_eq!(get_notify.requests, expect(&[("dynamodb:GetItem", 1), ("dynamodb:Query", 1)]));
        rows.push(("submit (notify)".into(), submit_notify));
        rows.push(("get (notify)".into(), get_notify));

        // idempotent replay of the ask: same key, same payload → the original ack
        let (status, again) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&body))).await;
        assert_eq!((status, again["id"].as_str()), (StatusCode::ACCEPTED, Some(id.as_str())));
        let replay = e.phase().await;
        cost_eq!(
            replay.requests,
            expect(&[
                // auth, the live claim once its conditional put is refused
                ("dynamodb:GetItem", 2),
                // callback bindings and secrets; the claimed message's partition (it exists: no
                // orphan to complete); the message again (for the current status)
                ("dynamodb:Query", 3),
                ("dynamodb:UpdateItem", 1),
                // the claim, refused by the live one
                ("dynamodb:PutItem", 1),
            ]),
            "replay"
        );
        rows.push(("replay (same ask again)".into(), replay));

        // the first request of an agent's minute window: the ADD within the window fails (still
        // billed), a second update starts the window
        e.clock.advance(Duration::seconds(60));
        let (status, _) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&body))).await;
        assert_eq!(status, StatusCode::ACCEPTED);
        let window = e.phase().await;
        cost_eq!(window.requests.get("dynamodb:UpdateItem"), Some(&2), "{window:?}");
        cost_eq!(window.total("dynamodb"), 8, "the replay plus one UpdateItem");
        rows.push(("replay, first request of a rate window".into(), window));

        // Retention: each message's TTL attribute is its `retain_until`, so DynamoDB deletes it
        // for free (moto does not run the TTL: the items stay, as they would until the TTL runs).
        // A sweep after retention has nothing to do — the purge costs no write, and since issue
        // 38 there is no backstop: no `retain` index, no paid delete.
        e.clock.advance(Duration::days(31));
        let outcome = handlers::sweep(&e.dep).await.unwrap();
        assert_eq!((outcome.expired, outcome.purged, outcome.requeued), (0, 0, 0), "{outcome:?}");
        let ttl = e.phase().await;
        // every shard of the six partition families (`SWEEP_QUERIES`; empty here)
        cost_eq!(ttl.requests, expect(&[("dynamodb:Query", SWEEP_QUERIES)]), "sweep after retention");
        let msg_ttl = raw_item(&e, pk.clone(), "MSG").await["ttl"].as_n().unwrap().parse::<i64>().unwrap();
        let retain = raw_item(&e, pk.clone(), "MSG").await["retain_until"].as_n().unwrap().parse::<i64>().unwrap();
        assert_eq!(msg_ttl, (retain + 999) / 1000, "the TTL deletes the message once retention ends");
        rows.push(("sweep after retention (the TTL deletes, free)".into(), ttl));

        sizes.push((
            "agent counter (request window + open count)".into(),
            item_size(&raw_item(&e, "OPEN#acme#bot".into(), "OPEN").await),
        ));
        sizes.push(("credential".into(), {
            let hash = ma2h_core::kernel::auth::hash_key(&e.agent);
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumed_capacity_is_recorded_when_the_response_reports_it() {
    // moto's numbers are placeholders (real DynamoDB reports real units): this checks the meter's
    // plumbing, not a price.
    with_env("capacity", true, |e| async move {
        let (status, _) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&notify("k")))).await;
        assert_eq!(status, StatusCode::ACCEPTED);
        let t = e.phase().await;
        assert!(t.capacity > 0.0, "{t:?}");
        // auth, the window (a failed ADD, then the new window), claim, tombstone, message
        assert_eq!(t.total("dynamodb"), 6, "{t:?}");
    })
    .await;
}
