//! The admin commands against the DynamoDB store (`ma2h-admin-aws`), on moto.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_ma2h-admin-aws");

fn admin(table: &str, args: &[&str]) -> serde_json::Value {
    let mut c = Command::new(BIN);
    c.env_clear().env("PATH", std::env::var("PATH").unwrap_or_default());
    for k in ["AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"] {
        if let Ok(v) = std::env::var(k) {
            c.env(k, v);
        }
    }
    let out = c
        .env("MA2H_TABLE", table)
        .env("MA2H_MODE", "dev")
        .env("MA2H_MASTER_KEY", ma2h_test_support::MASTER_KEY_B64)
        .env("MA2H_ED25519_SEED", ma2h_test_support::ED25519_SEED_B64)
        .env("MA2H_LOG", "warn")
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    assert!(out.status.success(), "admin {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test]
async fn admin_commands_work_against_dynamodb() {
    let Some(client) = ma2h_test_support::dynamodb().await else { return };
    let table = ma2h_test_support::unique("admin");
    ma2h_store_dynamodb::provision::create_table(&client, &table).await.unwrap();

    let agent = admin(&table, &["create-agent", "--account", "acme", "--agent", "bot"]);
    assert!(agent["api_key"].as_str().unwrap().starts_with("ma2h_ak_"));
    assert!(agent["signing_secret"].as_str().unwrap().starts_with("whsec_"));
    admin(&table, &["bind-callback", "--account", "acme", "--agent", "bot", "--host", "hooks.example"]);
    let bindings = admin(&table, &["list-bindings", "--account", "acme", "--agent", "bot"]);
    assert_eq!(bindings["hosts"], serde_json::json!(["hooks.example"]));
    let list = admin(&table, &["list"]);
    let creds = list["credentials"].as_array().unwrap();
    assert_eq!(creds.len(), 1);
    assert_eq!(creds[0]["principal"], "agent:bot");
    let id = creds[0]["credential_id"].as_str().unwrap();
    let revoked = admin(&table, &["revoke", id]);
    assert_eq!(revoked["active"], false);
    // a second create-agent for the same agent keeps its signing secret and does not show it again
    let again = admin(&table, &["create-agent", "--account", "acme", "--agent", "bot"]);
    assert!(again.get("signing_secret").is_none(), "{again}");
    // rotating it is explicit, and shows the new one once
    let rotated = admin(&table, &["rotate-signing-secret", "--account", "acme", "--agent", "bot"]);
    let new_secret = rotated["signing_secret"].as_str().unwrap();
    assert!(new_secret.starts_with("whsec_") && Some(new_secret) != agent["signing_secret"].as_str());
    // nothing stored before the `inbox` index here: the backfill has nothing to do
    assert_eq!(admin(&table, &["backfill-listing"])["updated"], 0);
    // nothing open from before the counters either
    assert_eq!(admin(&table, &["backfill-counts"])["counted"], 0);
    assert_eq!(admin(&table, &["recount-open", "--account", "acme"])["counted"], 0);

    // issue 42: the inbox's single sign-on, the secret sealed and never shown
    let secret = tempfile_with("sso-secret", "client-secret-value\n");
    let set = [
        "sso",
        "set",
        "--account",
        "acme",
        "--issuer",
        "https://idp.example.com",
        "--client-id",
        "hub",
        "--client-secret-file",
        secret.to_str().unwrap(),
        "--email-domains",
        "acme.com",
    ];
    let shown = admin(&table, &set);
    assert_eq!(
        (shown["sso"]["issuer"].as_str(), shown["sso"]["client_secret"].as_str()),
        (Some("https://idp.example.com"), Some("(set)"))
    );
    assert!(!shown.to_string().contains("client-secret-value"));
    let linked = admin(&table, &["sso", "link", "--account", "acme", "--subject", "00u1", "--human", "alice"]);
    assert_eq!(linked["sso"]["links"][0]["human"], "human:alice");
    assert_eq!(admin(&table, &["sso", "set", "--account", "acme", "--key-login", "false"])["sso"]["key_login"], false);
    assert_eq!(admin(&table, &["sso", "show", "--account", "acme"])["sso"]["links"][0]["subject"], "00u1");
    assert_eq!(admin(&table, &["sso", "remove", "--account", "acme"])["sso"], serde_json::Value::Null);
    let _ = std::fs::remove_file(secret);
}

/// A file under the temp dir holding `contents` (unique per process).
fn tempfile_with(name: &str, contents: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("{}-{name}", ma2h_test_support::unique("admin")));
    std::fs::write(&path, contents).unwrap();
    path
}
