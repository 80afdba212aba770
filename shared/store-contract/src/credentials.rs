//! Checks for the [`CredentialStore`](ma2h_core::ports::CredentialStore) half: hashed
//! credentials and per-agent sealed secrets.

use chrono::Duration;
use ma2h_core::kernel::credentials::PrincipalId;

use crate::Store;
use crate::fixtures::{account, agent, at, credential, human};

/// Credentials read back whole by hash and by id, all of them are listed, and an update
/// replaces revocation and expiry.
pub async fn credentials_put_lookup_list_update<S: Store>(store: S) {
    let acct = account("acme");
    let bot = credential(&acct, PrincipalId::Agent(agent("deploybot/dev")), at(-3600));
    let mut alice = credential(&account("globex"), PrincipalId::Operator(human("alice")), at(-60));
    alice.label = None;
    alice.expires_at = Some(at(86_400));
    alice.revoked_at = Some(at(-1));
    for c in [&bot, &alice] {
        store.put_credential(c).await.unwrap();
    }

    for c in [&bot, &alice] {
        assert_eq!(store.credential_by_hash(&c.key_hash).await.unwrap().as_ref(), Some(c), "by hash");
        assert_eq!(store.credential_by_id(&c.id).await.unwrap().as_ref(), Some(c), "by id");
    }
    assert_eq!(store.credential_by_hash("0000").await.unwrap(), None);
    assert_eq!(store.credential_by_id("cred_unknown").await.unwrap(), None);

    let mut all = store.list_credentials().await.unwrap();
    all.sort_by(|a, b| a.id.cmp(&b.id));
    let mut expected = vec![bot.clone(), alice.clone()];
    expected.sort_by(|a, b| a.id.cmp(&b.id));
    assert_eq!(all, expected);

    // Rotation (expiry) then revocation, as the admin use cases do.
    let mut rotated = bot.clone();
    rotated.expires_at = Some(at(0) + Duration::hours(1));
    store.update_credential(&rotated).await.unwrap();
    assert_eq!(store.credential_by_id(&bot.id).await.unwrap(), Some(rotated.clone()));
    let mut revoked = rotated.clone();
    revoked.revoked_at = Some(at(5));
    store.update_credential(&revoked).await.unwrap();
    assert_eq!(store.credential_by_hash(&bot.key_hash).await.unwrap(), Some(revoked.clone()));
    assert!(!revoked.is_active(at(6)));
    let mut reinstated = alice.clone();
    reinstated.revoked_at = None;
    reinstated.expires_at = None;
    store.update_credential(&reinstated).await.unwrap();
    assert_eq!(store.credential_by_id(&alice.id).await.unwrap(), Some(reinstated), "fields can be cleared");
    assert_eq!(store.list_credentials().await.unwrap().len(), 2, "updates add nothing");

    // One principal's credentials, as they stand after the updates; nobody else's.
    let alice_id = PrincipalId::Operator(human("alice"));
    let of_alice = store.credentials_of(&account("globex"), &alice_id).await.unwrap();
    assert_eq!(of_alice.iter().map(|c| (&c.id, c.revoked_at)).collect::<Vec<_>>(), [(&alice.id, None)]);
    assert!(store.credentials_of(&acct, &alice_id).await.unwrap().is_empty(), "another account's alice");
    let of_bot = store.credentials_of(&acct, &bot.principal).await.unwrap();
    assert_eq!(of_bot.iter().map(|c| (&c.id, c.revoked_at.is_some())).collect::<Vec<_>>(), [(&bot.id, true)]);
    assert!(store.credentials_of(&acct, &PrincipalId::Operator(human("bob"))).await.unwrap().is_empty());
}

/// Every agent of an account is listed once, sorted, revoked ones included; operators and other
/// accounts' agents are not (issue 39: the Agents page).
pub async fn the_account_lists_each_of_its_agents_once<S: Store>(store: S) {
    let acct = account("roster");
    assert!(store.list_agents(&acct).await.unwrap().is_empty(), "a new account has none");
    let mut revoked = credential(&acct, PrincipalId::Agent(agent("ci/web")), at(-10));
    revoked.revoked_at = Some(at(-1));
    for c in [
        credential(&acct, PrincipalId::Agent(agent("deploybot")), at(-3)),
        credential(&acct, PrincipalId::Agent(agent("deploybot")), at(-2)), // a second key
        revoked,
        credential(&acct, PrincipalId::Operator(human("alice")), at(-2)),
        credential(&account("roster-other"), PrincipalId::Agent(agent("stranger")), at(-2)),
    ] {
        store.put_credential(&c).await.unwrap();
    }
    let names: Vec<String> = store.list_agents(&acct).await.unwrap().iter().map(ToString::to_string).collect();
    assert_eq!(names, ["ci/web", "deploybot"]);
}

/// Issue 40 presence: an operator's last activity is one value per (account, operator) that only
/// moves forward; the account lists its operators by id, and nothing else (agents in the same
/// account partition, other accounts).
pub async fn operator_activity_is_kept_per_account_and_never_moves_backwards<S: Store>(store: S) {
    let acct = account("seen");
    assert!(store.operators_seen(&acct).await.unwrap().is_empty(), "a new account has none");
    store.put_credential(&credential(&acct, PrincipalId::Agent(agent("deploybot")), at(-3))).await.unwrap();
    store.touch_operator(&acct, &human("bob"), at(-5)).await.unwrap();
    store.touch_operator(&acct, &human("alice"), at(-4)).await.unwrap();
    store.touch_operator(&acct, &human("alice"), at(-1)).await.unwrap();
    store.touch_operator(&acct, &human("alice"), at(-2)).await.unwrap(); // a late write from another process
    store.touch_operator(&account("seen-other"), &human("carol"), at(0)).await.unwrap();
    let seen: Vec<(String, _)> =
        store.operators_seen(&acct).await.unwrap().into_iter().map(|(h, t)| (h.to_string(), t)).collect();
    assert_eq!(seen, vec![("alice".into(), at(-1)), ("bob".into(), at(-5))]);
    assert_eq!(store.list_agents(&acct).await.unwrap().len(), 1, "the roster is unaffected");
}

/// Issue 41: an operator's devices are listed oldest first, replaced by id, removed once, and
/// never seen by another operator or account.
pub async fn devices_are_kept_per_operator_replaced_by_id_and_removed_once<S: Store>(store: S) {
    use ma2h_core::channels::devices::Device;
    let acct = account("devices");
    let device = |human: &str, id: &str, at_s: i64| Device {
        account: acct.clone(),
        human: self::human(human),
        id: id.into(),
        label: format!("{id}'s browser"),
        created_at: at(at_s),
        push_host: "push.example.com".into(),
        sealed: format!("sealed-{id}"),
    };
    assert!(store.devices_of(&acct, &human("alice")).await.unwrap().is_empty());
    store.put_device(&device("alice", "dev_b", -5)).await.unwrap();
    store.put_device(&device("alice", "dev_a", -9)).await.unwrap();
    store.put_device(&device("bob", "dev_c", -1)).await.unwrap();
    let mut other = device("alice", "dev_x", -1);
    other.account = account("devices-other");
    store.put_device(&other).await.unwrap();
    let mut renewed = device("alice", "dev_b", -5);
    renewed.sealed = "sealed-again".into();
    store.put_device(&renewed).await.unwrap();
    let alice = store.devices_of(&acct, &human("alice")).await.unwrap();
    assert_eq!(
        alice.iter().map(|d| d.id.as_str()).collect::<Vec<_>>(),
        ["dev_a", "dev_b"],
        "oldest first, this account"
    );
    assert_eq!(alice[1], renewed, "replaced by id, every field kept");
    assert!(store.delete_device(&acct, &human("alice"), "dev_a").await.unwrap());
    assert!(!store.delete_device(&acct, &human("alice"), "dev_a").await.unwrap(), "removed once");
    assert!(!store.delete_device(&acct, &human("alice"), "dev_c").await.unwrap(), "bob's is not alice's");
    assert_eq!(store.devices_of(&acct, &human("bob")).await.unwrap().len(), 1);
}

/// Issue 41: passkeys are found by credential id (a login) and listed per operator oldest
/// first; a registration never takes over an id already registered (by anyone), an update never
/// brings back a removed one, and a removal is once and only by the owner.
pub async fn passkeys_are_found_by_id_never_taken_over_and_removed_once<S: Store>(store: S) {
    use ma2h_core::passkeys::Passkey;
    let acct = account("passkeys");
    let key = |human: &str, id: &str, at_s: i64| Passkey {
        account: acct.clone(),
        human: self::human(human),
        id: id.into(),
        name: format!("{id} key"),
        created_at: at(at_s),
        last_used_at: None,
        state: format!("{{\"s\":\"{id}\"}}"),
    };
    assert!(store.passkeys_of(&acct, &human("alice")).await.unwrap().is_empty());
    assert_eq!(store.passkey_by_id("pk-b").await.unwrap(), None);
    assert!(store.put_passkey(&key("alice", "pk-b", -5), true).await.unwrap());
    assert!(store.put_passkey(&key("alice", "pk-a", -9), true).await.unwrap());
    assert!(store.put_passkey(&key("bob", "pk-c", -1), true).await.unwrap());
    // the same credential id registered again — by bob, or by alice — is refused, nothing changes
    assert!(!store.put_passkey(&key("bob", "pk-b", -1), true).await.unwrap(), "an id is never taken over");
    assert!(!store.put_passkey(&key("alice", "pk-b", -1), true).await.unwrap());
    assert_eq!(store.passkey_by_id("pk-b").await.unwrap(), Some(key("alice", "pk-b", -5)));
    assert_eq!(store.passkeys_of(&acct, &human("bob")).await.unwrap(), vec![key("bob", "pk-c", -1)]);
    // an update keeps the key's state and last use
    let mut used = key("alice", "pk-b", -5);
    used.last_used_at = Some(at(-1));
    used.state = "{\"s\":\"counter 2\"}".into();
    assert!(store.put_passkey(&used, false).await.unwrap());
    assert_eq!(store.passkey_by_id("pk-b").await.unwrap(), Some(used.clone()));
    let alice = store.passkeys_of(&acct, &human("alice")).await.unwrap();
    assert_eq!(alice.iter().map(|p| p.id.as_str()).collect::<Vec<_>>(), ["pk-a", "pk-b"], "oldest first");
    assert_eq!(alice[1], used);
    // removal: only the owner's, once; then the id logs in no more and an update does not revive it
    assert!(!store.delete_passkey(&acct, &human("bob"), "pk-b").await.unwrap(), "alice's is not bob's");
    assert!(store.passkey_by_id("pk-b").await.unwrap().is_some());
    assert!(store.delete_passkey(&acct, &human("alice"), "pk-b").await.unwrap());
    assert!(!store.delete_passkey(&acct, &human("alice"), "pk-b").await.unwrap(), "removed once");
    assert_eq!(store.passkey_by_id("pk-b").await.unwrap(), None);
    assert!(!store.put_passkey(&used, false).await.unwrap(), "a removed passkey is not brought back");
    assert_eq!(store.passkey_by_id("pk-b").await.unwrap(), None);
    assert_eq!(store.passkeys_of(&acct, &human("alice")).await.unwrap().len(), 1);
}

/// A sealed secret is stored per `(account, agent, name)`; a second put replaces it; other
/// agents, accounts and names see nothing. Bytes are preserved exactly.
pub async fn secrets_put_get_replace_scoped<S: Store>(store: S) {
    let (acct, other, bot, other_bot) = (account("acme"), account("globex"), agent("bot"), agent("bot-2"));
    let first: Vec<u8> = vec![0, 1, 2, 0xfe, 0xff, b'x', 0];
    let second: Vec<u8> = (0..=255u8).collect();

    assert_eq!(store.get_secret(&acct, &bot, "hub:signing").await.unwrap(), None);
    store.put_secret(&acct, &bot, "hub:signing", &first).await.unwrap();
    assert_eq!(store.get_secret(&acct, &bot, "hub:signing").await.unwrap(), Some(first));
    store.put_secret(&acct, &bot, "hub:signing", &second).await.unwrap();
    assert_eq!(store.get_secret(&acct, &bot, "hub:signing").await.unwrap(), Some(second.clone()), "replaced");

    assert_eq!(store.get_secret(&acct, &other_bot, "hub:signing").await.unwrap(), None, "other agent");
    assert_eq!(store.get_secret(&other, &bot, "hub:signing").await.unwrap(), None, "other account");
    assert_eq!(store.get_secret(&acct, &bot, "other").await.unwrap(), None, "other name");

    store.put_secret(&other, &bot, "hub:signing", b"globex").await.unwrap();
    assert_eq!(store.get_secret(&other, &bot, "hub:signing").await.unwrap(), Some(b"globex".to_vec()));
    assert_eq!(store.get_secret(&acct, &bot, "hub:signing").await.unwrap(), Some(second), "unaffected");
}
