//! The `ma2h-hub.decisions` extension (issue 40; docs/decisions.md), black-box, on a Hub whose
//! capability document advertises it (skipped otherwise): a standing grant answers a later ask
//! with the same `request.grant_key` at once — `answered`, attested to the granting human,
//! `response.grant_id` set, the Response still valid against the v0.5 schema — never a
//! `sensitive` one, and stops the moment it is revoked; under an approval policy an answer is
//! one approval (`202`, the ask still `open` for its agent) until the quorum; an operator's own
//! request counts as their activity in `GET /v1/operator/presence`; under a passkey policy an
//! answer that carries no passkey assertion is refused and a decline is not. Everything the
//! checks create is scoped to this run (its own grant key, its own tag) and removed afterwards.

use ma2h_protocol::schema::{SchemaKind, validate};
use serde_json::{Value, json};

use super::Ctx;
use crate::report::{Report, ensure};

const SECTION: &str = "ext";

fn keyed(cx: &Ctx, label: &str, key: &str) -> Value {
    let mut a = cx.ask(label);
    a["request"] = json!({"mode": "confirm", "allowed_resolvers": [cx.cfg.operator_actor], "grant_key": key,
                          "options": [{"value": "allow", "label": "Allow"}, {"value": "deny", "label": "Deny"}]});
    a
}

/// After an edit of the account's policies or absences: wait until every process of the Hub
/// applies it (`policy_propagation_seconds`, advertised).
async fn propagated(ext: &Value) {
    let seconds = ext["policy_propagation_seconds"].as_u64().unwrap_or(0).min(60);
    if seconds > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(seconds * 1000 + 250)).await;
    }
}

async fn submit(cx: &Ctx, envelope: &Value) -> Result<String, String> {
    super::ack_id(&cx.hub.submit(&cx.cfg.agent_key, envelope).await)
}

pub async fn run(cx: &Ctx, r: &mut Report, capability: &Value) {
    let ext = &capability["extensions"]["ma2h-hub.decisions"];
    let names = [
        "a standing grant answers a later ask of the same agent and grant key at once, attested to its human, with response.grant_id",
        "a sensitive ask is never answered by a grant",
        "a revoked grant answers nothing more",
        "under an approval policy an answer is one approval (202, still open for the agent) until its quorum",
        "an operator's own request is activity: GET /v1/operator/presence lists them online with last_seen",
        "a delegate answers for an away operator (actor the delegate, response.on_behalf_of), and not once the absence is lifted",
        "the second distinct approval completes a quorum of two: answered, response.approvals lists both",
        "under a passkey policy an answer without a passkey is refused (403 not_authorized, still open); a decline is not",
    ];
    if !ext.is_object() {
        for n in names {
            r.skip(SECTION, n, "the Hub does not advertise ma2h-hub.decisions");
        }
        return;
    }
    let key = format!("conformance:{}", cx.nonce);
    let (op, agent) = (&cx.cfg.operator_key, &cx.cfg.agent_key);
    let mut cleanup: Vec<String> = Vec::new();

    // 1. grant, then a keyed ask answered at once
    let mut grant_id = None;
    let res = async {
        let first = submit(cx, &keyed(cx, "grant-first", &key)).await?;
        let a = cx.hub.resolve(op, &first, &json!({"resolution": "answered", "value": "allow"})).await;
        ensure(a.status == 200, || format!("answering the first: {}", a.show()))?;
        let g = cx
            .hub
            .call("POST", "/v1/operator/grants", Some(op), Some(&json!({"message": first, "scope": "15m"})))
            .await;
        ensure(g.status == 201, || format!("POST /v1/operator/grants: {}", g.show()))?;
        let id = g.body["id"].as_str().ok_or("the grant has no id")?.to_owned();
        grant_id = Some(id.clone());
        let second = submit(cx, &keyed(cx, "grant-second", &key)).await?;
        let read = cx.hub.get(&format!("/v1/messages/{second}"), agent).await;
        cleanup.push(second);
        validate(SchemaKind::GetMessage, &read.body).map_err(|e| format!("{e}: {}", read.show()))?;
        let resp = &read.body["response"]["response"];
        ensure(
            read.body["status"] == "answered"
                && resp["value"] == "allow"
                && resp["grant_id"].as_str() == Some(id.as_str())
                && resp["actor"].as_str() == Some(cx.cfg.operator_actor.as_str()),
            || format!("the second ask: {}", read.show()),
        )
    }
    .await;
    r.result(SECTION, names[0], res);

    // 2. never a sensitive ask
    let res = async {
        let mut s = keyed(cx, "grant-sensitive", &key);
        s["sensitive"] = json!(true);
        let id = submit(cx, &s).await?;
        let read = cx.hub.get(&format!("/v1/messages/{id}"), agent).await;
        cleanup.push(id);
        ensure(read.body["status"] == "open", || format!("a sensitive keyed ask: {}", read.show()))
    }
    .await;
    r.result(SECTION, names[1], res);

    // 3. revoked at once
    let res = async {
        let id = grant_id.clone().ok_or("no grant to revoke (the first check failed)")?;
        let d = cx.hub.call("DELETE", &format!("/v1/operator/grants/{id}"), Some(op), None).await;
        ensure(d.status == 200 && d.body["active"] == false, || format!("DELETE the grant: {}", d.show()))?;
        let third = submit(cx, &keyed(cx, "grant-third", &key)).await?;
        let read = cx.hub.get(&format!("/v1/messages/{third}"), agent).await;
        cleanup.push(third);
        ensure(read.body["status"] == "open", || format!("after the revocation: {}", read.show()))
    }
    .await;
    r.result(SECTION, names[2], res);

    // 4. a quorum of 2, this run's tag only: one answer is one approval
    let policy = format!("/v1/operator/approval-policies/conf-{}", cx.nonce);
    let res = async {
        let put = cx.hub.call("PUT", &policy, Some(op), Some(&json!({"approvals": 2, "tag": cx.nonce}))).await;
        ensure(put.status == 200, || format!("PUT the policy: {}", put.show()))?;
        propagated(ext).await;
        let mut a = cx.ask("quorum");
        a["tags"] = json!([cx.nonce]);
        let id = submit(cx, &a).await?;
        cleanup.push(id.clone());
        let one = cx.hub.resolve(op, &id, &json!({"resolution": "answered", "value": "ship"})).await;
        ensure(one.status == 202 && one.body["status"] == "open" && one.body["approval"]["required"] == 2, || {
            format!("one approval: {}", one.show())
        })?;
        let read = cx.hub.get(&format!("/v1/messages/{id}"), agent).await;
        ensure(read.body["status"] == "open" && read.body.get("response").is_none(), || {
            format!("the agent's read: {}", read.show())
        })
    }
    .await;
    r.result(SECTION, names[3], res);
    cx.hub.call("DELETE", &policy, Some(op), None).await;

    // 5. presence: the request that reads the listing is itself the caller's activity
    if ext["operator_presence"] == true {
        let res = async {
            let p = cx.hub.call("GET", "/v1/operator/presence", Some(op), None).await;
            ensure(p.status == 200, || format!("GET /v1/operator/presence: {}", p.show()))?;
            let me = p.body["operators"]
                .as_array()
                .and_then(|ops| ops.iter().find(|o| o["human"].as_str() == Some(cx.cfg.operator_actor.as_str())))
                .ok_or_else(|| format!("{} is not listed: {}", cx.cfg.operator_actor, p.show()))?;
            ensure(
                me["state"] == "online" && me["last_seen"].as_str().and_then(ma2h_protocol::time::parse).is_some(),
                || format!("the caller's row: {me}"),
            )?;
            let agent_read = cx.hub.call("GET", "/v1/operator/presence", Some(agent), None).await;
            ensure(agent_read.status == 403, || format!("an agent reading it: {}", agent_read.show()))
        }
        .await;
        r.result(SECTION, names[4], res);
    } else {
        r.skip(SECTION, names[4], "the Hub does not advertise operator_presence");
    }
    // 6. a passkey policy (issue 41), this run's own tag: the API cannot carry an assertion
    if ext["passkey_step_up"] == true {
        let policy = format!("/v1/operator/approval-policies/conf-pk-{}", cx.nonce);
        let tag = format!("pk-{}", cx.nonce);
        let res = async {
            let body = json!({"approvals": 1, "passkey": true, "tag": tag});
            let put = cx.hub.call("PUT", &policy, Some(op), Some(&body)).await;
            ensure(put.status == 200, || format!("PUT the policy: {}", put.show()))?;
            propagated(ext).await;
            let mut a = cx.ask("passkey");
            a["tags"] = json!([tag]);
            let id = submit(cx, &a).await?;
            cleanup.push(id.clone());
            let refused = cx.hub.resolve(op, &id, &json!({"resolution": "answered", "value": "ship"})).await;
            ensure(refused.status == 403 && refused.code() == "not_authorized", || {
                format!("an answer without a passkey: {}", refused.show())
            })?;
            let read = cx.hub.get(&format!("/v1/messages/{id}"), agent).await;
            ensure(read.body["status"] == "open", || format!("the agent's read: {}", read.show()))?;
            let declined = cx.hub.resolve(op, &id, &json!({"resolution": "declined"})).await;
            ensure(declined.status == 200 && declined.body["status"] == "declined", || {
                format!("a decline: {}", declined.show())
            })
        }
        .await;
        r.result(SECTION, names[7], res);
        cx.hub.call("DELETE", &policy, Some(op), None).await;
    } else {
        r.skip(SECTION, names[7], "the Hub does not advertise passkey_step_up");
    }
    match cx.cfg.second_operator_key.as_deref() {
        Some(second) => two_operators(cx, r, ext, second, &names[5..7], &mut cleanup).await,
        None => {
            for n in &names[5..7] {
                r.skip(SECTION, n, "needs a second operator (MA2H_CONFORMANCE_SECOND_OPERATOR_KEY)");
            }
        }
    }
    for id in cleanup {
        cx.close(&id).await;
    }
}

/// The checks that need two people: the first operator away with the second as delegate; a
/// quorum of two, one approval each.
async fn two_operators(cx: &Ctx, r: &mut Report, ext: &Value, second: &str, names: &[&str], cleanup: &mut Vec<String>) {
    let (op, agent) = (&cx.cfg.operator_key, &cx.cfg.agent_key);
    let (first_actor, second_actor) = (cx.cfg.operator_actor.as_str(), cx.cfg.second_operator_actor.as_str());
    if ext["delegation"] == true {
        let delegate = second_actor.strip_prefix("human:").unwrap_or(second_actor);
        let until = ma2h_protocol::time::format(chrono::Utc::now() + chrono::Duration::hours(1));
        let res = async {
            let away = cx
                .hub
                .call("PUT", "/v1/operator/away", Some(op), Some(&json!({"delegate": delegate, "until": until})))
                .await;
            ensure(away.status == 200, || format!("PUT /v1/operator/away: {}", away.show()))?;
            propagated(ext).await;
            // an ask only the first operator may answer
            let id = submit(cx, &cx.ask("delegated")).await?;
            cleanup.push(id.clone());
            let a = cx.hub.resolve(second, &id, &json!({"resolution": "answered", "value": "ship"})).await;
            ensure(a.status == 200, || format!("the delegate's answer: {}", a.show()))?;
            let read = cx.hub.get(&format!("/v1/messages/{id}"), agent).await;
            validate(SchemaKind::GetMessage, &read.body).map_err(|e| format!("{e}: {}", read.show()))?;
            let resp = &read.body["response"]["response"];
            ensure(resp["actor"] == second_actor && resp["on_behalf_of"] == first_actor, || {
                format!("the delegate's Response: {}", read.show())
            })?;
            let back = cx.hub.call("DELETE", "/v1/operator/away", Some(op), None).await;
            ensure(back.status == 200, || format!("DELETE /v1/operator/away: {}", back.show()))?;
            propagated(ext).await;
            let later = submit(cx, &cx.ask("delegation-lifted")).await?;
            cleanup.push(later.clone());
            let refused = cx.hub.resolve(second, &later, &json!({"resolution": "answered", "value": "ship"})).await;
            ensure(refused.status == 403, || format!("the former delegate after the lift: {}", refused.show()))
        }
        .await;
        cx.hub.call("DELETE", "/v1/operator/away", Some(op), None).await;
        r.result(SECTION, names[0], res);
    } else {
        r.skip(SECTION, names[0], "the Hub does not advertise delegation");
    }

    let policy = format!("/v1/operator/approval-policies/conf2-{}", cx.nonce);
    let tag = format!("{}-2", cx.nonce);
    let res = async {
        let put = cx.hub.call("PUT", &policy, Some(op), Some(&json!({"approvals": 2, "tag": tag}))).await;
        ensure(put.status == 200, || format!("PUT the policy: {}", put.show()))?;
        propagated(ext).await;
        let mut a = cx.ask("quorum-two");
        a["tags"] = json!([tag]);
        a["request"]["allowed_resolvers"] = json!([first_actor, second_actor]);
        let id = submit(cx, &a).await?;
        cleanup.push(id.clone());
        let ship = json!({"resolution": "answered", "value": "ship"});
        let one = cx.hub.resolve(op, &id, &ship).await;
        ensure(one.status == 202, || format!("the first approval: {}", one.show()))?;
        let two = cx.hub.resolve(second, &id, &ship).await;
        ensure(two.status == 200, || format!("the second approval: {}", two.show()))?;
        let read = cx.hub.get(&format!("/v1/messages/{id}"), agent).await;
        validate(SchemaKind::GetMessage, &read.body).map_err(|e| format!("{e}: {}", read.show()))?;
        let resp = &read.body["response"]["response"];
        let approvers: Vec<&str> =
            resp["approvals"].as_array().into_iter().flatten().filter_map(|x| x["actor"].as_str()).collect();
        ensure(
            read.body["status"] == "answered"
                && resp["actor"] == second_actor
                && approvers.len() == 2
                && approvers.contains(&first_actor)
                && approvers.contains(&second_actor),
            || format!("the quorum's Response: {}", read.show()),
        )
    }
    .await;
    cx.hub.call("DELETE", &policy, Some(op), None).await;
    r.result(SECTION, names[1], res);
}
