//! Checks for the [`GrantStore`](ma2h_core::decisions::grant_store::GrantStore) (issue 40): a
//! grant round-trips, is found by (account, agent, key) only, listed newest first, counted per
//! use without undoing a revocation, revoked once, and purged after its retention where the
//! store does not expire it natively.

use chrono::Duration;
use ma2h_core::decisions::grant_store::{Grant, GrantScope, KEEP};
use ma2h_core::kernel::credentials::PrincipalId;
use serde_json::json;

use crate::Store;
use crate::fixtures::{account, agent, at, credential, human, message_id};

fn grant(id: &str, agent_id: &str, key: &str, created: i64, scope: GrantScope) -> Grant {
    Grant {
        id: id.to_owned(),
        account: account("grants"),
        agent: agent(agent_id),
        key: key.to_owned(),
        scope,
        value: json!("allow"),
        granted_by: human("alice"),
        from_message: message_id(),
        created_at: at(created),
        expires_at: Some(at(created + 3600)),
        revoked_at: None,
        revoked_by: None,
        uses: 0,
        last_used_at: None,
    }
}

pub async fn grants_are_found_by_agent_and_key_counted_and_revoked_once<S: Store>(store: S) {
    let acct = account("grants");
    // the roster: a store that lists grants by agent knows the account's agents
    for a in ["ci", "web"] {
        store.put_credential(&credential(&acct, PrincipalId::Agent(agent(a)), at(-10))).await.unwrap();
    }
    let push = grant("grt_1", "ci", "Bash:git push#x", 1, GrantScope::Minutes);
    let project = grant("grt_2", "ci", "Bash:git push#x", 2, GrantScope::Project { project: "web".into() });
    let other_key = grant("grt_3", "ci", "Bash:git push", 3, GrantScope::Agent);
    let other_agent = grant("grt_4", "web", "Bash:git push#x", 4, GrantScope::Session { session: "sess_1".into() });
    for g in [&push, &project, &other_key, &other_agent] {
        store.put_grant(g).await.unwrap();
    }
    let mut found = store.grants_for(&acct, &agent("ci"), "Bash:git push#x").await.unwrap();
    found.sort_by(|a, b| a.id.cmp(&b.id));
    assert_eq!(found, vec![push.clone(), project.clone()], "one agent's grants for one key, the key taken whole");
    assert!(store.grants_for(&account("grants-other"), &agent("ci"), "Bash:git push#x").await.unwrap().is_empty());
    let listed: Vec<String> = store.list_grants(&acct, 10).await.unwrap().into_iter().map(|g| g.id).collect();
    assert_eq!(listed, ["grt_4", "grt_3", "grt_2", "grt_1"], "newest first");
    assert_eq!(store.list_grants(&acct, 2).await.unwrap().len(), 2);
    assert_eq!(store.get_grant(&acct, "grt_3").await.unwrap(), Some(other_key.clone()));
    assert_eq!(store.get_grant(&acct, "grt_9").await.unwrap(), None);

    assert!(store.revoke_grant(&push, at(10), "human:bob").await.unwrap());
    assert!(!store.revoke_grant(&push, at(11), "human:carol").await.unwrap(), "revoked once");
    store.record_grant_use(&push, at(12)).await.unwrap(); // a use racing the revocation
    let after = store.get_grant(&acct, "grt_1").await.unwrap().unwrap();
    assert_eq!((after.revoked_at, after.revoked_by.as_deref(), after.uses), (Some(at(10)), Some("human:bob"), 1));
    assert_eq!(after.last_used_at, Some(at(12)));
    assert!(!after.is_active(at(13)));

    let purged = store.purge_grants(at(10) + KEEP + Duration::seconds(1), 100).await.unwrap();
    if !store.native_ttl() {
        assert_eq!(purged, 1, "the revoked one, after its retention");
        assert_eq!(store.get_grant(&acct, "grt_1").await.unwrap(), None);
        assert!(store.get_grant(&acct, "grt_3").await.unwrap().is_some(), "a grant until revoked stays");
    }
}
