//! §8.3 delivery against a real local receiver (dev mode, dev_allow 127.0.0.0/8): body and
//! headers arrive intact, and every receiver behaviour maps to the right outcome.

mod support;

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ma2h_core::ports::{PushOutcome, PushRequest, PushSender};
use ma2h_delivery_http::{EgressMode, EgressPolicy, HttpPushSender, Resolve, check_callback_url};
use support::{Scripted, receiver};

const BODY: &[u8] = br#"{"in_reply_to":"01J0000000000000000000000","resolution_id":"r1","status":"answered"}"#;

fn dev() -> EgressPolicy {
    EgressPolicy::dev(vec!["127.0.0.0/8".parse().unwrap()])
}

fn dev_sender() -> HttpPushSender {
    HttpPushSender::new(dev()).unwrap()
}

fn push(url: String) -> PushRequest {
    PushRequest {
        url,
        headers: vec![
            ("MA2H-Signature".into(), "t=1700000000,v1=deadbeef".into()),
            ("Authorization".into(), "Bearer s3cr3t".into()),
        ],
        body: BODY.to_vec(),
    }
}

#[tokio::test]
async fn delivers_exact_body_and_headers() {
    let rx = receiver().await;
    let outcome = dev_sender().send(&push(format!("http://127.0.0.1:{}/ok", rx.port()))).await;
    assert_eq!(outcome, PushOutcome::Delivered { status: 200 });
    let seen = rx.requests();
    assert_eq!(seen.len(), 1);
    let req = &seen[0];
    assert_eq!(req.body, BODY);
    assert_eq!(req.headers["content-type"], "application/json");
    assert_eq!(req.headers["ma2h-signature"], "t=1700000000,v1=deadbeef");
    assert_eq!(req.headers["authorization"], "Bearer s3cr3t");
}

#[tokio::test]
async fn hostnames_connect_through_the_vetted_answer() {
    let rx = receiver().await;
    let resolver = Scripted::always("127.0.0.1");
    let sender = HttpPushSender::with_resolver(dev(), resolver.clone()).unwrap();
    let outcome = sender.send(&push(format!("http://Agent.Test:{}/ok", rx.port()))).await;
    assert_eq!(outcome, PushOutcome::Delivered { status: 200 });
    assert_eq!(resolver.calls(), 1);
    assert_eq!(resolver.hosts.lock().unwrap().as_slice(), ["agent.test"]);
    assert_eq!(rx.requests()[0].headers["host"], format!("agent.test:{}", rx.port()).as_str());
}

#[tokio::test]
async fn receiver_5xx_is_retried() {
    let rx = receiver().await;
    let outcome = dev_sender().send(&push(format!("http://127.0.0.1:{}/unavailable", rx.port()))).await;
    assert!(matches!(&outcome, PushOutcome::Retry { reason } if reason.contains("503")), "{outcome:?}");
}

#[tokio::test]
async fn receiver_4xx_is_rejected() {
    let rx = receiver().await;
    let outcome = dev_sender().send(&push(format!("http://127.0.0.1:{}/bad", rx.port()))).await;
    assert_eq!(outcome, PushOutcome::Rejected { status: 400 });
}

#[tokio::test]
async fn redirects_are_refused_and_never_followed() {
    let rx = receiver().await;
    let outcome = dev_sender().send(&push(format!("http://127.0.0.1:{}/redirect", rx.port()))).await;
    assert_eq!(outcome, PushOutcome::Refused { reason: "redirect not followed".into() });
    assert_eq!(rx.hits("/redirect"), 1);
    assert_eq!(rx.hits("/target"), 0, "the redirect target must never be hit");
}

#[tokio::test]
async fn a_receiver_slower_than_total_timeout_is_retried() {
    let rx = receiver().await;
    let policy = EgressPolicy { total_timeout: Duration::from_millis(300), ..dev() };
    let sender = HttpPushSender::new(policy).unwrap();
    let started = Instant::now();
    let outcome = sender.send(&push(format!("http://127.0.0.1:{}/slow", rx.port()))).await;
    assert!(matches!(&outcome, PushOutcome::Retry { reason } if reason.contains("timeout")), "{outcome:?}");
    assert!(started.elapsed() < Duration::from_secs(3), "gave up after {:?}", started.elapsed());
}

#[tokio::test]
async fn a_large_response_body_is_not_read_in_full() {
    let rx = receiver().await;
    let policy = EgressPolicy { max_response_bytes: 16, ..dev() };
    let outcome = HttpPushSender::new(policy).unwrap().send(&push(format!("http://127.0.0.1:{}/big", rx.port()))).await;
    assert_eq!(outcome, PushOutcome::Delivered { status: 200 });
}

#[tokio::test]
async fn connection_refused_is_retried() {
    let port = {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        listener.local_addr().unwrap().port()
    };
    let outcome = dev_sender().send(&push(format!("http://127.0.0.1:{port}/ok"))).await;
    assert!(
        matches!(&outcome, PushOutcome::Retry { reason } if reason.starts_with("connection failed")),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn dns_failure_is_retried() {
    struct Broken;
    #[async_trait::async_trait]
    impl Resolve for Broken {
        async fn resolve(&self, _host: &str, _port: u16) -> io::Result<Vec<SocketAddr>> {
            Err(io::Error::other("SERVFAIL"))
        }
    }
    let sender = HttpPushSender::with_resolver(dev(), Arc::new(Broken)).unwrap();
    let outcome = sender.send(&push("http://agent.test/ok".into())).await;
    assert!(matches!(&outcome, PushOutcome::Retry { reason } if reason.contains("SERVFAIL")), "{outcome:?}");
}

#[tokio::test]
async fn dev_allow_relaxes_only_its_networks() {
    let outcome = dev_sender().send(&push("http://10.0.0.1/ok".into())).await;
    assert_eq!(outcome, PushOutcome::Refused { reason: "forbidden destination address 10.0.0.1".into() });
}

#[tokio::test]
async fn the_same_receiver_is_refused_in_production() {
    let rx = receiver().await;
    let policy = EgressPolicy { mode: EgressMode::Production, ..dev() };
    let sender = HttpPushSender::new(policy).unwrap();
    let http = sender.send(&push(format!("http://127.0.0.1:{}/ok", rx.port()))).await;
    assert_eq!(http, PushOutcome::Refused { reason: "callback url must use https".into() });
    let https = sender.send(&push(format!("https://127.0.0.1:{}/ok", rx.port()))).await;
    assert_eq!(https, PushOutcome::Refused { reason: "forbidden destination address 127.0.0.1".into() });
    assert!(rx.requests().is_empty());
}

#[tokio::test]
async fn production_requires_https() {
    assert_eq!(
        check_callback_url("http://agent.example/ma2h/resolve", EgressMode::Production).unwrap_err().to_string(),
        "callback url must use https"
    );
    assert!(check_callback_url("https://agent.example/ma2h/resolve", EgressMode::Production).is_ok());
    let resolver = Scripted::always("93.184.216.34");
    let sender = HttpPushSender::with_resolver(EgressPolicy::production(), resolver.clone()).unwrap();
    let outcome = sender.send(&push("http://agent.example/ma2h/resolve".into())).await;
    assert_eq!(outcome, PushOutcome::Refused { reason: "callback url must use https".into() });
    assert_eq!(resolver.calls(), 0, "refused before any lookup");
    let creds = sender.send(&push("https://user:pw@agent.example/cb".into())).await;
    assert!(matches!(creds, PushOutcome::Refused { reason } if reason.contains("credentials")));
}

// Issue 42: `fetch`, the identity provider's path — the same guard, the answer read whatever
// its status, a redirect refused.
mod fetch {
    use super::*;
    use ma2h_core::ports::FetchRequest;

    fn get(url: String) -> FetchRequest {
        FetchRequest { url, headers: vec![("Accept".into(), "application/json".into())], body: None }
    }

    #[tokio::test]
    async fn a_get_and_a_post_read_their_answer_with_its_type() {
        let rx = receiver().await;
        let reply = dev_sender().fetch(&get(format!("http://127.0.0.1:{}/ok", rx.port()))).await.unwrap();
        assert_eq!((reply.status, reply.body.as_slice()), (200, b"thanks".as_slice()));
        assert!(reply.content_type.unwrap().starts_with("text/plain"));
        let form = FetchRequest {
            url: format!("http://127.0.0.1:{}/bad", rx.port()),
            headers: vec![("Content-Type".into(), "application/x-www-form-urlencoded".into())],
            body: Some(b"grant_type=authorization_code".to_vec()),
        };
        let reply = dev_sender().fetch(&form).await.unwrap();
        assert_eq!(reply.status, 400, "a provider's error answer is read, not dropped");
        let seen = rx.requests();
        assert_eq!(seen[0].headers["accept"], "application/json");
        assert_eq!(seen[1].body, b"grant_type=authorization_code");
        assert_eq!(seen[1].headers["content-type"], "application/x-www-form-urlencoded");
    }

    #[tokio::test]
    async fn redirects_loopback_in_production_and_plain_http_are_refused() {
        let rx = receiver().await;
        let e = dev_sender().fetch(&get(format!("http://127.0.0.1:{}/redirect", rx.port()))).await.unwrap_err();
        assert!(e.contains("redirect"), "{e}");
        let prod = HttpPushSender::new(EgressPolicy::production()).unwrap();
        assert!(prod.fetch(&get(format!("http://127.0.0.1:{}/ok", rx.port()))).await.is_err());
        assert!(prod.fetch(&get("https://127.0.0.1/ok".into())).await.unwrap_err().contains("forbidden"));
        assert!(prod.fetch(&get("https://169.254.169.254/latest".into())).await.is_err());
        assert_eq!(rx.requests().iter().filter(|r| r.path == "/target").count(), 0, "never followed");
    }
}
