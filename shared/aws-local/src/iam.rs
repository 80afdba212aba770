//! IAM in the local stack: a checking front (ma2h-sam) between the functions and the endpoint.
//! Each function's processes get the front as `AWS_ENDPOINT_URL` and an access key of their
//! own, as each Lambda function runs under its own role; the front evaluates every DynamoDB,
//! SQS and Secrets Manager call against that function's policy in the template and answers a
//! denied one with `AccessDeniedException`. The stack's own set-up (tables, queues, the key
//! secret) and the admin commands keep the caller's credentials, which the front admits.

use std::collections::BTreeMap;

use anyhow::{Context, Result, anyhow};
use ma2h_sam::iam::{Front, Resolver, register_functions};

use crate::Config;
use crate::provision::Provisioned;
use crate::template::{Function, Template};

/// The front's URL and each function's access key.
pub struct Roles {
    pub url: String,
    keys: BTreeMap<String, String>,
}

/// Start the front on a loopback port and register every function's identity.
pub async fn start(
    cfg: &Config,
    template: &Template,
    parameters: &BTreeMap<String, String>,
    made: &Provisioned,
) -> Result<Roles> {
    let endpoint = std::env::var("AWS_ENDPOINT_URL").context("AWS_ENDPOINT_URL")?;
    // The account every ARN of the endpoint carries (moto: 123456789012).
    let account = made
        .queue_arns
        .values()
        .find_map(|arn| arn.split(':').nth(4).map(str::to_owned))
        .ok_or_else(|| anyhow!("no queue ARN to read the account from"))?;
    let front = Front::new(&endpoint, &account, std::env::var_os("MA2H_IAM_LOG").map(Into::into));
    front.admit(&std::env::var("AWS_ACCESS_KEY_ID").unwrap_or_else(|_| "test".into()));
    let mut resolver = Resolver::new(&cfg.region, &account).parameters(parameters);
    if let Some((id, _)) = &template.table {
        resolver = resolver.table(id, &cfg.table);
    }
    for (id, url) in &made.queue_urls {
        resolver = resolver.queue(id, url);
    }
    let run = format!("{}-{}", cfg.prefix, std::process::id());
    let keys: BTreeMap<String, String> = register_functions(&front, template, &cfg.workspace, &resolver, &run)?
        .into_iter()
        .map(|(f, key)| (f.logical_id, key))
        .collect();
    let url = front.spawn().await.context("binding the IAM front")?;
    tracing::info!(%url, functions = keys.len(), "IAM enforced: every function calls AWS through the checking front");
    Ok(Roles { url, keys })
}

/// The variables that make `f`'s processes call AWS as `f` (none without IAM).
pub fn env(roles: Option<&Roles>, f: &Function) -> Vec<(String, String)> {
    let Some(roles) = roles else { return Vec::new() };
    vec![
        ("AWS_ENDPOINT_URL".into(), roles.url.clone()),
        ("AWS_ACCESS_KEY_ID".into(), roles.keys[&f.logical_id].clone()),
        ("AWS_SECRET_ACCESS_KEY".into(), "local".into()),
    ]
}

/// An SQS client acting as `f` (the event source mapping polls with the function's role).
pub fn sqs_client(roles: Option<&Roles>, f: &Function, admin: &aws_sdk_sqs::Client) -> aws_sdk_sqs::Client {
    let Some(roles) = roles else { return admin.clone() };
    let creds =
        aws_sdk_sqs::config::Credentials::new(&roles.keys[&f.logical_id], "local", None, None, "ma2h-iam-front");
    let conf = admin.config().to_builder().endpoint_url(&roles.url).credentials_provider(creds).build();
    aws_sdk_sqs::Client::from_conf(conf)
}
