//! `ma2h-test-idp`: the SSO tests' local OpenID Connect provider on a loopback port, for the
//! browser test (issue 42). Prints its issuer URL on the first line, then serves until killed.
//! Never for production: anyone who types an email is signed in as it.

use ma2h_test_support::idp::{Alg, Idp};

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let issuer = format!("http://{}", listener.local_addr()?);
    let now = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
    let idp = Idp::new(&issuer, Alg::EdDsa, now);
    println!("{issuer}");
    axum::serve(listener, idp.router()).await
}
