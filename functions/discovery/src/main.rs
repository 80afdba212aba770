//! `ma2h-discovery`: the discovery route on Lambda — API Gateway (HTTP API, payload v2) events served by
//! the shared Router over DynamoDB + SQS. The template routes only this function's path here.

use lambda_http::Error;

#[tokio::main]
async fn main() -> Result<(), Error> {
    ma2h_aws::init_tracing();
    let deployment = ma2h_aws::build().await?;
    ma2h_aws::emf::run_http(ma2h_aws::http_app(&deployment)).await
}
