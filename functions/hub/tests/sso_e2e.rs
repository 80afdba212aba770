//! Issue 42 through the real `ma2h-hub` binary: `admin sso set|show|link|unlink|remove`, then a
//! whole SSO login over sockets — the Hub reaching the tests' OpenID Connect provider on a
//! loopback port through its real outbound client (the egress guard, dev mode), a browser's
//! requests made by hand.

mod support;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use ma2h_test_support::idp::{Alg, CLIENT_ID, CLIENT_SECRET, Idp};
use serde_json::json;
use support::*;

/// The provider on a loopback port (its own thread and runtime): its issuer URL.
fn start_idp() -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let issuer = format!("http://{}", listener.local_addr().unwrap());
            let now = || chrono::Utc::now().timestamp();
            let idp = Idp::new(&issuer, Alg::EdDsa, now);
            tx.send(issuer).unwrap();
            axum::serve(listener, idp.router()).await.unwrap();
        });
    });
    rx.recv().unwrap()
}

struct Got {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Got {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    fn cookie(&self, name: &str) -> Option<String> {
        self.headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case("set-cookie"))
            .map(|(_, v)| v.split(';').next().unwrap().to_owned())
            .find(|c| c.starts_with(&format!("{name}=")) && c.len() > name.len() + 1)
    }
}

/// A browser's GET of `url` (`http://host:port/path?query`), with a `Cookie` header.
fn get(url: &str, cookie: Option<&str>) -> Got {
    let rest = url.strip_prefix("http://").unwrap();
    let (addr, path) = rest.split_at(rest.find('/').unwrap());
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let cookie = cookie.map(|c| format!("Cookie: {c}\r\n")).unwrap_or_default();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{cookie}\r\n").unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let mut lines = head.lines();
    let status = lines.next().unwrap().split_whitespace().nth(1).unwrap().parse().unwrap();
    let headers =
        lines.filter_map(|l| l.split_once(':')).map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned())).collect();
    Got { status, headers, body: body.to_owned() }
}

#[test]
fn an_operator_signs_in_through_the_provider_on_the_local_binary() {
    let issuer = start_idp();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    let secret_file = path.join("client-secret");
    std::fs::write(&secret_file, format!("{CLIENT_SECRET}\n")).unwrap();

    let set = [
        "sso",
        "set",
        "--account",
        "acme",
        "--issuer",
        &issuer,
        "--client-id",
        CLIENT_ID,
        "--client-secret-file",
        secret_file.to_str().unwrap(),
        "--email-domains",
        "acme.com",
    ];
    let shown = admin_json(path, &set);
    assert_eq!(shown["sso"]["issuer"], json!(issuer));
    assert_eq!(shown["sso"]["client_secret"], "(set)");
    assert!(!shown.to_string().contains(CLIENT_SECRET));
    let linked = admin_json(path, &["sso", "link", "--account", "acme", "--subject", "00u-root", "--human", "root"]);
    assert_eq!(linked["sso"]["links"], json!([{ "subject": "00u-root", "human": "human:root" }]));
    let unlinked = admin_json(path, &["sso", "unlink", "--account", "acme", "--subject", "00u-root"]);
    assert_eq!(unlinked["sso"]["links"], json!([]));
    let off =
        admin_json(path, &["sso", "set", "--account", "acme", "--key-login", "false", "--provider-logout", "true"]);
    assert_eq!(off["sso"]["key_login"], false);
    assert_eq!(off["sso"]["provider_logout"], true);
    assert_eq!(admin_json(path, &["sso", "show", "--account", "acme"]), off);
    let gated =
        ["sso", "set", "--account", "acme", "--required-groups", "ma2h-reviewers,sre", "--groups-claim", "roles"];
    let gated = admin_json(path, &gated);
    assert_eq!(
        (&gated["sso"]["required_groups"], &gated["sso"]["groups_claim"]),
        (&json!(["ma2h-reviewers", "sre"]), &json!("roles"))
    );
    // empty values set both back: no group required, the `groups` claim
    let open = admin_json(path, &["sso", "set", "--account", "acme", "--required-groups", "", "--groups-claim", ""]);
    assert_eq!((&open["sso"]["required_groups"], &open["sso"]["groups_claim"]), (&json!([]), &json!("groups")));
    let bad =
        base_command(path).args(["admin", "sso", "set", "--account", "acme", "--issuer", "ftp://x"]).output().unwrap();
    assert!(!bad.status.success() && String::from_utf8_lossy(&bad.stderr).contains("issuer"));

    let hub = Hub::start_with(path, &[("MA2H_PUBLIC_URL", "http://127.0.0.1:8080")]);
    let base = format!("http://{}", hub.addr);
    let begin = get(&format!("{base}/login/sso?account=acme"), None);
    assert_eq!(begin.status, 303, "{}", begin.body);
    let sso_cookie = begin.cookie("ma2h_sso").expect("the state cookie");
    let authorize = begin.header("location").unwrap().to_owned();
    assert!(authorize.starts_with(&format!("{issuer}/authorize?")), "{authorize}");
    let at_idp = get(&format!("{authorize}&login_hint=alice%40acme.com"), None);
    assert_eq!(at_idp.status, 303);
    // the provider sends the browser to MA2H_PUBLIC_URL's callback; this test's Hub is elsewhere
    let back = at_idp.header("location").unwrap().replace("http://127.0.0.1:8080", &base);
    let done = get(&back, Some(&sso_cookie));
    assert_eq!(done.status, 200, "{}", done.body);
    let session = done.cookie("ma2h_inbox").expect("a session");
    let inbox = get(&format!("{base}/inbox"), Some(&session));
    assert_eq!(inbox.status, 200);
    assert!(inbox.body.contains("human:alice"));

    let ledger = audit_export(path, "acme");
    let kinds: HashMap<&str, usize> = ledger
        .lines()
        .filter_map(|l| l.split("\"kind\":\"").nth(1)?.split('"').next())
        .fold(HashMap::new(), |mut m, k| {
            *m.entry(k).or_default() += 1;
            m
        });
    assert_eq!(kinds.get("login"), Some(&1), "{kinds:?}");
    assert!(kinds.get("policy.changed").copied().unwrap_or(0) >= 4, "{kinds:?}");

    drop(hub);
    let removed = admin_json(path, &["sso", "remove", "--account", "acme"]);
    assert_eq!(removed["sso"], json!(null));
}
