//! `ma2h-inbox`: the agent mailbox routes on Lambda (§8.7 drain with long-poll, consume/ack) —
//! API Gateway (HTTP API, payload v2) events served by the shared Router over DynamoDB.

use lambda_http::Error;

#[tokio::main]
async fn main() -> Result<(), Error> {
    ma2h_aws::init_tracing();
    let deployment = ma2h_aws::build().await?;
    ma2h_aws::emf::run_http(ma2h_aws::http_app(&deployment)).await
}
