//! # ma2h-aws-local
//!
//! `make aws-local`: the Hub's Lambda functions run locally end to end, as AWS runs them. The
//! table and queues are created on the local endpoint (moto or LocalStack, `AWS_ENDPOINT_URL`)
//! from `infra/template.yaml`'s own resource definitions; every function's binary runs as Lambda
//! processes against `cargo lambda watch`'s Runtime API; a small HTTP front routes requests as the
//! template's HTTP API does (path → function, payload format 2.0); the SQS queue feeds `deliver`
//! and the schedule drives `sweep`. Agents talk to one base URL, exactly as to API Gateway.

pub mod apigw;
pub mod front;
pub mod iam;
pub mod provision;
pub mod pumps;
pub mod runtime;

// The template model and API Gateway's route selection live in ma2h-sam (the in-process Lambda
// tests route events with them too).
pub use ma2h_sam::{routes, template};

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};

use crate::runtime::{Invoked, LambdaHost, ProcessSpec};
use crate::template::{EnvValue, Function, Template};

/// How to run the local stack (`ma2h-aws-local --help`).
#[derive(Debug, Clone)]
pub struct Config {
    pub template: PathBuf,
    /// Where cargo lambda runs (the workspace root).
    pub workspace: PathBuf,
    /// Where the functions' binaries are (`target/debug`).
    pub bin_dir: PathBuf,
    pub cargo_lambda: PathBuf,
    /// The HTTP front's address (port 0: any free port).
    pub listen: SocketAddr,
    /// Processes per HTTP function (Lambda scales out; long-polls must not block other calls).
    pub instances: usize,
    pub table: String,
    /// Queue names are `<prefix>-<LogicalId>`.
    pub prefix: String,
    /// Template parameter values over the defaults (`PublicUrl` defaults to the front's URL).
    pub parameters: BTreeMap<String, String>,
    /// Overrides the template's schedule (the conformance run sweeps every 500 ms).
    pub schedule_every: Option<Duration>,
    /// Pause between empty SQS receives.
    pub sqs_idle: Duration,
    pub log_dir: PathBuf,
    pub region: String,
    /// Enforce each function's IAM policy through the checking front (`--no-iam` turns it off).
    pub iam: bool,
}

/// A function's environment: the template's variables (a `Ref` resolved to a parameter or to a
/// created resource), except those this process's environment sets — those win, as `MA2H_*`
/// overrides for a test run.
pub fn function_env(
    f: &Function,
    parameters: &BTreeMap<String, String>,
    resources: &BTreeMap<String, String>,
    own: impl Fn(&str) -> bool,
) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for (k, v) in &f.env {
        if own(k) {
            continue;
        }
        let value = match v {
            EnvValue::Literal(s) => s.clone(),
            EnvValue::Ref(r) => parameters.get(r).or_else(|| resources.get(r)).cloned().ok_or_else(|| {
                anyhow!("{}: {k} refers to {r}, which is neither a parameter nor a resource", f.logical_id)
            })?,
        };
        out.push((k.clone(), value));
    }
    Ok(out)
}

/// The event that brings a function up before its processes start polling: cargo lambda answers
/// a poll for a function it has never been asked to invoke with an empty 204 (no queue yet).
fn warm_up_event(f: &Function, is_http: bool, region: &str) -> serde_json::Value {
    if is_http {
        let route = template::HttpRoute { method: "GET".into(), path: "/healthz".into(), function: f.binary.clone() };
        let matched = routes::Matched { route: &route, path_parameters: BTreeMap::new() };
        let parts = axum::http::Request::get("/healthz").header("host", "localhost").body(()).expect("a request");
        let caller =
            apigw::Caller { source_ip: [127, 0, 0, 1].into(), request_id: "warm-up".into(), now: chrono::Utc::now() };
        apigw::request_event(&parts.into_parts().0, b"", &matched, &caller)
    } else if f.sqs.is_some() {
        serde_json::json!({ "Records": [] })
    } else {
        pumps::scheduled_event("arn:aws:events:local:000000000000:rule/warm-up", region)
    }
}

/// The running stack: drop it (or call `shutdown`) to stop every process.
pub struct Stack {
    pub host: LambdaHost,
    pub url: String,
    pub listener: tokio::net::TcpListener,
    pub front: front::Front,
}

impl Stack {
    /// Create the resources, start the Runtime API and the functions, and bind the front.
    pub async fn start(cfg: Config) -> Result<Self> {
        if std::env::var_os("AWS_ENDPOINT_URL").is_none() {
            bail!(
                "AWS_ENDPOINT_URL is not set: aws-local creates tables and queues, and runs only against a local endpoint (moto, LocalStack)"
            );
        }
        let text =
            std::fs::read_to_string(&cfg.template).with_context(|| format!("reading {}", cfg.template.display()))?;
        let template = Template::parse(&text)?;
        std::fs::create_dir_all(&cfg.log_dir)?;

        let listener = tokio::net::TcpListener::bind(cfg.listen).await.context("binding the HTTP front")?;
        let url = format!("http://{}", listener.local_addr()?);
        let mut parameters = template.parameters.clone();
        parameters.insert("PublicUrl".into(), url.clone());
        parameters.extend(cfg.parameters.clone());

        let aws = ma2h_aws::sdk_loader().region(aws_config::Region::new(cfg.region.clone())).load().await;
        let ddb = aws_sdk_dynamodb::Client::new(&aws);
        let sqs = aws_sdk_sqs::Client::new(&aws);
        provision::table(&ddb, &template, &cfg.table).await?;
        let mut made = provision::Provisioned::default();
        provision::queues(&sqs, &template, &cfg.prefix, &mut made).await?;
        if let Some(secret) = parameters.get("HubSecretName") {
            let public = parameters.get("HubPublicKeysSecretName").map(String::as_str);
            let created = provision::hub_secrets(&aws_sdk_secretsmanager::Client::new(&aws), secret, public).await?;
            tracing::info!(secret, created, "the Hub's key secret and its public keys");
        }
        let mut resources = made.queue_urls.clone();
        if let Some((id, _)) = &template.table {
            resources.insert(id.clone(), cfg.table.clone());
        }
        let roles = if cfg.iam { Some(iam::start(&cfg, &template, &parameters, &made).await?) } else { None };

        let runtime_addr = free_loopback_port()?;
        let (cl, ws, log) = (cfg.cargo_lambda.clone(), cfg.workspace.clone(), cfg.log_dir.join("cargo-lambda.log"));
        let mut host = tokio::task::spawn_blocking(move || LambdaHost::start(&cl, &ws, runtime_addr, &log)).await??;

        // Queue a warm-up for every function first, then start the processes that will take them.
        // The key secrets' names come from the parameters (`--parameter HubSecretName=…`), never
        // from the caller's environment: an exported MA2H_HUB_SECRET (the admin commands read
        // it) must not hand the discovery function the key secret it is not given.
        let own = |k: &str| !matches!(k, "MA2H_HUB_SECRET" | "MA2H_HUB_PUBLIC_SECRET") && std::env::var_os(k).is_some();
        let mut warm_ups = Vec::new();
        for f in &template.functions {
            let is_http = template.routes.iter().any(|r| r.function == f.binary);
            let event = warm_up_event(f, is_http, &cfg.region);
            let (invoker, name) = (host.invoke.clone(), f.binary.clone());
            warm_ups.push((
                f.binary.clone(),
                is_http,
                tokio::spawn(async move { invoker.invoke(&name, &event, Duration::from_secs(60)).await }),
            ));
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        for f in &template.functions {
            let is_http = template.routes.iter().any(|r| r.function == f.binary);
            let binary = cfg.bin_dir.join(&f.binary);
            if !binary.exists() {
                bail!("{} is not built (cargo build --workspace --all-targets)", binary.display());
            }
            host.run_function(
                runtime_addr,
                ProcessSpec {
                    binary,
                    name: f.binary.clone(),
                    env: [function_env(f, &parameters, &resources, own)?, iam::env(roles.as_ref(), f)].concat(),
                    instances: if is_http { cfg.instances.max(1) } else { 1 },
                    log: cfg.log_dir.join(format!("{}.log", f.binary)),
                },
            )?;
        }
        for (name, is_http, task) in warm_ups {
            let log = cfg.log_dir.join(format!("{name}.log"));
            let answer =
                task.await?.with_context(|| format!("{name} did not start; its log ends:\n{}", log_tail(&log)))?;
            let ok = match &answer {
                Invoked::Ok(bytes) if is_http => {
                    serde_json::from_slice::<serde_json::Value>(bytes).map(|v| v["statusCode"] == 200).unwrap_or(false)
                }
                Invoked::Ok(_) => true,
                Invoked::FunctionError(_) => false,
            };
            if !ok {
                bail!("{name} failed its first invocation: {answer:?}; its log ends:\n{}", log_tail(&log));
            }
        }

        for f in &template.functions {
            if let Some(src) = &f.sqs {
                // Lambda's event source mapping polls with the function's own role.
                let mapping = pumps::SqsMapping {
                    sqs: iam::sqs_client(roles.as_ref(), f, &sqs),
                    invoker: host.invoke.clone(),
                    function: f.binary.clone(),
                    timeout: f.timeout,
                    queue_url: made
                        .queue_urls
                        .get(&src.queue)
                        .cloned()
                        .ok_or_else(|| anyhow!("no queue {}", src.queue))?,
                    queue_arn: made.queue_arns.get(&src.queue).cloned().unwrap_or_default(),
                    region: cfg.region.clone(),
                    batch_size: src.batch_size,
                    idle: cfg.sqs_idle,
                };
                tokio::spawn(mapping.run());
            }
            if let Some(every) = f.schedule {
                let every = cfg.schedule_every.unwrap_or(every);
                let (invoker, name, region) = (host.invoke.clone(), f.binary.clone(), cfg.region.clone());
                tokio::spawn(pumps::schedule(invoker, name, f.timeout, every, region));
            }
        }
        let front = front::Front::new(&template, host.invoke.clone());
        Ok(Self { host, url, listener, front })
    }
}

/// The last lines of a function's log, for a start-up error.
fn log_tail(path: &std::path::Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(8)..].join("\n")
}

fn free_loopback_port() -> Result<SocketAddr> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_resolve_to_parameters_and_resources_and_the_callers_environment_wins() {
        let t = Template::parse(include_str!("../../../infra/template.yaml")).unwrap();
        let f = t.function_by_binary("ma2h-submit").unwrap();
        let mut params = t.parameters.clone();
        params.insert("PublicUrl".into(), "http://127.0.0.1:9".into());
        let resources: BTreeMap<_, _> =
            [("Table".to_owned(), "tbl".to_owned()), ("PushQueue".to_owned(), "http://q".to_owned())].into();
        let env: BTreeMap<_, _> =
            function_env(f, &params, &resources, |k| k == "MA2H_MODE").unwrap().into_iter().collect();
        assert_eq!(env["MA2H_TABLE"], "tbl");
        assert_eq!(env["MA2H_PUSH_QUEUE_URL"], "http://q");
        assert_eq!(env["MA2H_PUBLIC_URL"], "http://127.0.0.1:9");
        assert_eq!(env["MA2H_HUB_SECRET"], "ma2h/hub");
        assert!(!env.contains_key("MA2H_MODE"), "set by the caller: not overridden");
        let err = function_env(f, &params, &BTreeMap::new(), |_| false).unwrap_err();
        assert!(err.to_string().contains("neither a parameter nor a resource"), "{err}");
    }
}
