//! # ma2h-test-support
//!
//! The helpers the workspace's tests share (one copy, not one per crate): the gate for tests that
//! need the moto server, names unique to a run, and the fixed keys test Hubs are configured with.
//! A dev-dependency only; nothing here is linked into a binary.

use std::sync::atomic::{AtomicU64, Ordering};

pub mod authenticator;
pub mod idp;

/// A fixed master key for test Hubs (32 bytes 0..=31, base64). Never a production value.
pub const MASTER_KEY_B64: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
/// A fixed Ed25519 seed for test Hubs (32 × 0x07, base64).
pub const ED25519_SEED_B64: &str = "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=";

/// Is the moto server configured (`AWS_ENDPOINT_URL`)? Without it a test that needs it skips
/// loudly — or fails, under `MA2H_REQUIRE_AWS_TESTS=1` (what `make test` sets), so CI can never
/// pass by skipping.
pub fn moto_available() -> bool {
    if std::env::var("AWS_ENDPOINT_URL").is_ok() {
        return true;
    }
    assert!(
        std::env::var("MA2H_REQUIRE_AWS_TESTS").as_deref() != Ok("1"),
        "MA2H_REQUIRE_AWS_TESTS=1 but AWS_ENDPOINT_URL is unset: start moto (make test does)"
    );
    eprintln!("SKIPPED: AWS_ENDPOINT_URL is unset (run `make test` to start moto)");
    false
}

/// The SDK configuration for moto, or `None` (see [`moto_available`]). The HTTPS client is the
/// one `ma2h_aws::sdk_loader` builds (rustls with `ring`; the workspace turns the SDK's default
/// client off) — repeated here because the crates that use this one are `ma2h-aws`'s own deps.
pub async fn moto_config() -> Option<aws_config::SdkConfig> {
    use aws_smithy_http_client::tls::{Provider, rustls_provider::CryptoMode};
    if !moto_available() {
        return None;
    }
    let https = aws_smithy_http_client::Builder::new().tls_provider(Provider::Rustls(CryptoMode::Ring)).build_https();
    Some(aws_config::defaults(aws_config::BehaviorVersion::latest()).http_client(https).load().await)
}

/// A DynamoDB client for moto, or `None` (see [`moto_available`]).
pub async fn dynamodb() -> Option<aws_sdk_dynamodb::Client> {
    moto_config().await.map(|c| aws_sdk_dynamodb::Client::new(&c))
}

/// A table or queue name unique to this run (and within it).
pub fn unique(prefix: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    format!("{prefix}-{nanos}-{}", N.fetch_add(1, Ordering::Relaxed))
}

/// `application/x-www-form-urlencoded` encoding of one value (what Slack sends as `payload=`).
pub fn form_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
