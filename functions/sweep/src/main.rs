//! `ma2h-sweep`: the scheduled sweeper — due expiries, retention purge, and re-enqueueing push
//! obligations whose queue message was lost (§3.1, §7).

use lambda_runtime::{Error, LambdaEvent};
use metrics_cloudwatch_embedded::lambda::handler::run;
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), Error> {
    ma2h_aws::init_tracing();
    let deployment = ma2h_aws::build().await?;
    run(ma2h_aws::emf::collector()?, |_event: LambdaEvent<Value>| {
        let deployment = deployment.clone();
        async move {
            let outcome = ma2h_aws::handlers::sweep(&deployment).await;
            ma2h_aws::flush_traces().await; // before the sandbox is frozen (issue 43)
            outcome
        }
    })
    .await
}
