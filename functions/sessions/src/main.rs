//! `ma2h-sessions`: the §16 session routes on Lambda (register, list, read, close — including the
//! operator's kill-switch) — API Gateway (HTTP API, payload v2) events served by the shared Router
//! over DynamoDB.

use lambda_http::Error;

#[tokio::main]
async fn main() -> Result<(), Error> {
    ma2h_aws::init_tracing();
    let deployment = ma2h_aws::build().await?;
    ma2h_aws::emf::run_http(ma2h_aws::http_app(&deployment)).await
}
