//! Passkeys on DynamoDB (issue 41, docs/COST.md "Passkeys"): what adding one, logging in with one
//! and confirming an answer with one cost. A ceremony stores nothing while it runs (its state is
//! sealed into the page); finishing it burns its challenge (a fresh counter: the conditional
//! `UpdateItem` that finds none, then the `PutItem` that starts it at 1), finds
//! the passkey by its credential id (one `GetItem`) and checks its operator still holds an active
//! key (a `Query` and a `GetItem`); a passkey's two items are written in one transaction — when it
//! is added, and on its first use of a day.

use ma2h_core::kernel::auth::Principal;
use ma2h_core::kernel::credentials::PrincipalId;
use ma2h_core::passkeys::{self, ceremony};
use ma2h_protocol::ids::{AccountId, HumanId};
use ma2h_test_support::authenticator::Authenticator;
use serde_json::Value;

use crate::env::*;
use crate::metering::Tally;

const ORIGIN: &str = "https://api.test";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_of_adding_a_passkey_logging_in_and_a_step_up() {
    with_env("passkeys", false, |e| async move {
        let hub = &e.dep.hub;
        let alice = Principal {
            account: AccountId::parse("acme").unwrap(),
            id: PrincipalId::Operator(HumanId::parse("alice").unwrap()),
            credential_id: "cost".into(),
        };
        let mut device = Authenticator::default();
        e.phase().await;
        let mut rows: Vec<(String, Tally)> = Vec::new();
        let mut phase = |name: &str, t: Tally, expected: &[(&str, u64)]| {
            crate::cost_eq!(t.requests, expect(expected), "{name}");
            rows.push((name.to_owned(), t));
        };

        let existing = passkeys::mine(hub, &alice).await.unwrap();
        let started = ceremony::begin_registration(hub, &alice, &existing).unwrap();
        phase(
            "the Devices page's passkey list (and a sealed ceremony: nothing stored)",
            e.phase().await,
            &[("dynamodb:Query", 1)],
        );
        let options: Value = serde_json::from_str(&started.options).unwrap();
        let reply = device.create(&options, ORIGIN).to_string();
        ceremony::finish_registration(hub, &alice, &started.state, reply.as_bytes(), "phone").await.unwrap();
        phase(
            "add a passkey: burn the challenge, count the operator's, write both items",
            e.phase().await,
            &[
                ("dynamodb:UpdateItem", 1),
                ("dynamodb:PutItem", 1),
                ("dynamodb:Query", 1),
                ("dynamodb:TransactWriteItems", 1),
            ],
        );

        let login = |which| {
            let started = ceremony::begin_assertion(hub, None).unwrap();
            let options: Value = serde_json::from_str(&started.options).unwrap();
            (started.state, device.get(which, &options, ORIGIN).to_string())
        };
        let (state, reply) = login(0);
        ceremony::finish_login(hub, &state, reply.as_bytes()).await.unwrap();
        phase(
            "log in with a passkey, its first use of the day (last use written)",
            e.phase().await,
            &[
                ("dynamodb:UpdateItem", 1),
                ("dynamodb:PutItem", 1),
                ("dynamodb:GetItem", 2),
                ("dynamodb:Query", 1),
                ("dynamodb:TransactWriteItems", 1),
            ],
        );
        let (state, reply) = login(0);
        ceremony::finish_login(hub, &state, reply.as_bytes()).await.unwrap();
        phase(
            "log in again the same day",
            e.phase().await,
            &[("dynamodb:UpdateItem", 1), ("dynamodb:PutItem", 1), ("dynamodb:GetItem", 2), ("dynamodb:Query", 1)],
        );

        let started = ceremony::begin_assertion(hub, Some((&alice, "msg_01KCOSTCOSTCOSTCOSTCOSTCOS"))).unwrap();
        let options: Value = serde_json::from_str(&started.options).unwrap();
        let reply = device.get(0, &options, ORIGIN).to_string();
        ceremony::finish_step_up(hub, &alice, "msg_01KCOSTCOSTCOSTCOSTCOSTCOS", &started.state, reply.as_bytes())
            .await
            .unwrap();
        phase(
            "a step-up before an answer (then the answer, as any)",
            e.phase().await,
            &[("dynamodb:UpdateItem", 1), ("dynamodb:PutItem", 1), ("dynamodb:GetItem", 2), ("dynamodb:Query", 1)],
        );
        print_table("Passkeys (counted on the wire, asserted)", &rows);
    })
    .await;
}
