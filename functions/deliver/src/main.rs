//! `ma2h-deliver`: the SQS consumer that performs signed pushes (§8.3), reporting partial batch
//! failures so only retryable messages return to the queue.

use aws_lambda_events::sqs::SqsEvent;
use lambda_runtime::{Error, LambdaEvent};
use metrics_cloudwatch_embedded::lambda::handler::run;

#[tokio::main]
async fn main() -> Result<(), Error> {
    ma2h_aws::init_tracing();
    let deployment = ma2h_aws::build().await?;
    let deliverer = ma2h_aws::handlers::deliverer(&deployment)?;
    run(ma2h_aws::emf::collector()?, |event: LambdaEvent<SqsEvent>| {
        let (deployment, deliverer) = (deployment.clone(), deliverer.clone());
        async move {
            let batch = ma2h_aws::handlers::deliver(&deployment, &deliverer, event.payload).await;
            ma2h_aws::flush_traces().await; // before the sandbox is frozen (issue 43)
            Ok::<_, Error>(batch)
        }
    })
    .await
}
