//! §9.4 at delivery time: every forbidden destination is refused *because of its address*, and
//! nothing on loopback is ever contacted. Also the DNS-rebinding defence: one resolution per
//! attempt, and the connection goes to exactly what was vetted.

mod support;

use std::sync::Arc;

use ma2h_core::ports::{PushOutcome, PushRequest, PushSender};
use ma2h_delivery_http::{EgressMode, EgressPolicy, HttpPushSender, check_callback_url};
use support::{Scripted, Tripwire};
use tokio::net::TcpListener;

fn push(url: String) -> PushRequest {
    PushRequest { url, headers: vec![("MA2H-Signature".into(), "t=1,v1=abc".into())], body: b"{}".to_vec() }
}

/// Hosts that must be refused; `{port}` is the tripwire's port. The hostnames are answered by
/// the injected resolver (`internal.example` → 10.0.0.7, `localhost` → 127.0.0.1,
/// `six.example` → ::1, `meta.example` → 169.254.169.254).
const FORBIDDEN_HOSTS: &[&str] = &[
    "127.0.0.1",
    "10.0.0.1",
    "172.16.0.1",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "0.0.0.0",
    "[::1]",
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
    "[fc00::1]",
    "[fe80::1]",
    "2130706433",
    "0177.0.0.1",
    "0x7f.1",
    "internal.example",
    "localhost",
    "six.example",
    "meta.example",
];

struct ByName;

#[async_trait::async_trait]
impl ma2h_delivery_http::Resolve for ByName {
    async fn resolve(&self, host: &str, port: u16) -> std::io::Result<Vec<std::net::SocketAddr>> {
        let ip = match host {
            "internal.example" => "10.0.0.7",
            "localhost" => "127.0.0.1",
            "six.example" => "::1",
            "meta.example" => "169.254.169.254",
            other => panic!("unexpected lookup of {other}"),
        };
        Ok(vec![std::net::SocketAddr::new(ip.parse().unwrap(), port)])
    }
}

async fn assert_all_refused_by_address(policy: EgressPolicy, scheme: &str) {
    let tripwire = Tripwire::on("127.0.0.1").await;
    let sender = HttpPushSender::with_resolver(policy, Arc::new(ByName)).unwrap();
    for host in FORBIDDEN_HOSTS {
        let url = format!("{scheme}://{host}:{}/ma2h/resolve", tripwire.port);
        // The shape is fine: the scheme is not what refuses these.
        check_callback_url(&url, sender.policy().mode).unwrap_or_else(|e| panic!("{url}: {e}"));
        match sender.send(&push(url.clone())).await {
            PushOutcome::Refused { reason } => {
                assert!(reason.starts_with("forbidden destination address"), "{url}: {reason}")
            }
            other => panic!("{url}: expected Refused, got {other:?}"),
        }
    }
    assert_eq!(tripwire.accepted(), 0, "the local receiver must never be contacted");
}

#[tokio::test]
async fn production_refuses_every_forbidden_destination() {
    assert_all_refused_by_address(EgressPolicy::production(), "https").await;
}

#[tokio::test]
async fn dev_without_allow_list_refuses_them_too() {
    assert_all_refused_by_address(EgressPolicy::dev(Vec::new()), "http").await;
}

#[tokio::test]
async fn production_ignores_dev_allow() {
    let policy = EgressPolicy {
        mode: EgressMode::Production,
        dev_allow: vec!["0.0.0.0/0".parse().unwrap(), "::/0".parse().unwrap()],
        ..EgressPolicy::default()
    };
    assert_all_refused_by_address(policy, "https").await;
}

#[tokio::test]
async fn a_host_with_any_forbidden_answer_is_refused() {
    let tripwire = Tripwire::on("127.0.0.1").await;
    // 127.0.0.2 is allowed in this dev policy, 127.0.0.1 is not: one bad answer spoils the host.
    let resolver = Scripted::new(&[&["127.0.0.2", "127.0.0.1"]]);
    let sender =
        HttpPushSender::with_resolver(EgressPolicy::dev(vec!["127.0.0.2/32".parse().unwrap()]), resolver.clone())
            .unwrap();
    let outcome = sender.send(&push(format!("http://mixed.example:{}/ok", tripwire.port))).await;
    assert_eq!(outcome, PushOutcome::Refused { reason: "forbidden destination address 127.0.0.1".into() });
    assert_eq!(resolver.calls(), 1);
    assert_eq!(tripwire.accepted(), 0);
}

/// Binds a receiver on 127.0.0.2 and a tripwire listener on 127.0.0.1, on the same port.
async fn same_port_pair() -> (support::Receiver, TcpListener) {
    for _ in 0..50 {
        let wire = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = wire.local_addr().unwrap().port();
        if let Ok(listener) = TcpListener::bind(("127.0.0.2", port)).await {
            return (support::serve(listener), wire);
        }
    }
    panic!("could not bind 127.0.0.1 and 127.0.0.2 on one port");
}

/// Rebinding: the resolver answers an allowed address first and loopback afterwards. The sender
/// resolves once, vets, and connects to the vetted address only. (In this sandbox no public
/// address may be contacted, so the "public" address is 127.0.0.2, allowed by the dev policy,
/// while 127.0.0.1 stays forbidden.)
#[tokio::test]
async fn rebinding_connects_only_to_the_vetted_address() {
    let (good, wire) = same_port_pair().await;
    let port = good.port();
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while wire.accept().await.is_ok() {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    });

    let resolver = Scripted::new(&[&["127.0.0.2"], &["127.0.0.1"]]);
    let policy = EgressPolicy::dev(vec!["127.0.0.2/32".parse().unwrap()]);
    let sender = HttpPushSender::with_resolver(policy, resolver.clone()).unwrap();

    let url = format!("http://rebind.example:{port}/ok");
    assert_eq!(sender.send(&push(url.clone())).await, PushOutcome::Delivered { status: 200 });
    assert_eq!(resolver.calls(), 1, "resolved exactly once for the attempt");
    assert_eq!(good.hits("/ok"), 1, "delivered to the vetted address");
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 0, "loopback 127.0.0.1 never contacted");
    assert_eq!(good.requests()[0].headers["host"], format!("rebind.example:{port}").as_str());

    // The next attempt re-vets at delivery time and sees the rebound (forbidden) answer.
    let outcome = sender.send(&push(url)).await;
    assert_eq!(outcome, PushOutcome::Refused { reason: "forbidden destination address 127.0.0.1".into() });
    assert_eq!(resolver.calls(), 2);
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 0);
    assert_eq!(good.hits("/ok"), 1);
}

#[tokio::test]
async fn ip_literals_do_not_consult_the_resolver() {
    let resolver = Scripted::always("93.184.216.34");
    let sender = HttpPushSender::with_resolver(EgressPolicy::production(), resolver.clone()).unwrap();
    let outcome = sender.send(&push("https://0x7f.1/cb".into())).await;
    assert_eq!(outcome, PushOutcome::Refused { reason: "forbidden destination address 127.0.0.1".into() });
    assert_eq!(resolver.calls(), 0);
}
