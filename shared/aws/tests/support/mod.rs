//! Shared by the Lambda test binaries: the moto connection and the test settings, API Gateway v2
//! and SQS events built from the recorded fixtures, and one call through the shared Router as the
//! HTTP functions run it.

use aws_lambda_events::sqs::SqsEvent;
use axum::http::StatusCode;
use http_body_util::BodyExt;
use ma2h_aws::Deployment;
use ma2h_core::kernel::settings::{Mode, Secret, Settings};
use serde_json::{Value, json};
use tower::ServiceExt;

pub use ma2h_test_support::{moto_config, unique};

/// Dev mode with fixed test keys and loopback egress; everything else the production defaults
/// (600 requests/min, inbox depth 1000, …).
pub fn test_settings() -> Settings {
    Settings {
        mode: Mode::Dev,
        public_url: "https://api.test".into(),
        master_key: Some(Secret(ma2h_test_support::MASTER_KEY_B64.into())),
        ed25519_seed: Some(Secret(ma2h_test_support::ED25519_SEED_B64.into())),
        dev_egress_allow: vec!["127.0.0.0/8".into()],
        ..Settings::default()
    }
}

const APIGW: &str = include_str!("../fixtures/apigw-v2-request.json");

/// An API Gateway v2 event from the fixture, for `method path` with `key` and `body`.
pub fn event(method: &str, path_and_query: &str, key: &str, body: Option<&Value>) -> lambda_http::Request {
    event_from(None, method, path_and_query, key, body)
}

/// [`event`] from the client address `source_ip` (the fixture's own when `None`).
pub fn event_from(
    source_ip: Option<&str>,
    method: &str,
    path_and_query: &str,
    key: &str,
    body: Option<&Value>,
) -> lambda_http::Request {
    let mut ev: Value = serde_json::from_str(APIGW).unwrap();
    if let Some(ip) = source_ip {
        ev["requestContext"]["http"]["sourceIp"] = json!(ip);
    }
    let (path, query) = path_and_query.split_once('?').unwrap_or((path_and_query, ""));
    ev["rawPath"] = json!(path);
    ev["rawQueryString"] = json!(query);
    ev["requestContext"]["http"]["method"] = json!(method);
    ev["requestContext"]["http"]["path"] = json!(path);
    ev["headers"]["authorization"] = json!(format!("Bearer {key}"));
    ev["body"] = body.map_or(Value::Null, |b| json!(b.to_string()));
    lambda_http::request::from_str(&ev.to_string()).expect("a valid API Gateway v2 event")
}

/// An API Gateway v2 event with a raw body and the given headers (no credential): what Slack's
/// interactivity requests look like.
pub fn raw_event(method: &str, path_and_query: &str, headers: &[(&str, &str)], body: &str) -> lambda_http::Request {
    let mut ev: Value = serde_json::from_str(APIGW).unwrap();
    let (path, query) = path_and_query.split_once('?').unwrap_or((path_and_query, ""));
    ev["rawPath"] = json!(path);
    ev["rawQueryString"] = json!(query);
    ev["requestContext"]["http"]["method"] = json!(method);
    ev["requestContext"]["http"]["path"] = json!(path);
    ev["headers"].as_object_mut().unwrap().remove("authorization");
    for (k, v) in headers {
        ev["headers"][*k] = json!(v);
    }
    ev["body"] = json!(body);
    lambda_http::request::from_str(&ev.to_string()).expect("a valid API Gateway v2 event")
}

/// Serve `req` with the deployment's Router; the body parsed as JSON (`null` if it is not).
pub async fn call_app(dep: &Deployment, req: lambda_http::Request) -> (StatusCode, Value) {
    let resp = ma2h_aws::http_app(dep).oneshot(req).await.unwrap();
    let status = resp.status();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

const SQS: &str = include_str!("../fixtures/sqs-event.json");

/// The `SqsEvent` Lambda's event source mapping would hand `deliver` for these received messages:
/// the fixture's record shape with the real ids, receipt handles and bodies.
pub fn sqs_event(messages: &[aws_sdk_sqs::types::Message]) -> SqsEvent {
    let mut ev: Value = serde_json::from_str(SQS).unwrap();
    let template = ev["Records"][0].clone();
    ev["Records"] = Value::Array(
        messages
            .iter()
            .map(|m| {
                let mut r = template.clone();
                r["messageId"] = json!(m.message_id());
                r["receiptHandle"] = json!(m.receipt_handle());
                r["body"] = json!(m.body());
                r
            })
            .collect(),
    );
    serde_json::from_value(ev).unwrap()
}

/// The functions of `infra/template.yaml` as separate deployments, each calling AWS with its own
/// identity through an IAM front (ma2h-sam) that evaluates every call against that function's
/// policy in the template before moto sees it — as Lambda runs them, one role per function. The
/// test's own set-up (tables, credentials, inspection) keeps moto's test key, which the front
/// admits unchecked. With `MA2H_IAM_LOG` set, every distinct decision is appended there for
/// `ma2h-iam-report`.
pub struct Functions {
    template: ma2h_sam::template::Template,
    routes: ma2h_sam::routes::Routes,
    by_id: std::collections::BTreeMap<String, Deployment>,
    /// Each function's SDK configuration (its key) and the front's endpoint.
    configs: std::collections::BTreeMap<String, aws_config::SdkConfig>,
    url: String,
    pub front: ma2h_sam::iam::Front,
}

/// moto's account (every ARN it mints) and the tests' region.
pub const ACCOUNT: &str = "123456789012";

impl Functions {
    /// Every function of `template_text` over `aws`'s table and queue, with `settings`. Only a
    /// run of the committed template (`report`) writes to `MA2H_IAM_LOG`: a test's edited copy
    /// would report its deliberate denials as under-grants.
    pub async fn start(
        config: &aws_config::SdkConfig,
        template_text: &str,
        settings: &Settings,
        aws: &ma2h_aws::AwsSettings,
        report: bool,
        clock: std::sync::Arc<dyn ma2h_core::ports::Clock>,
    ) -> Self {
        use aws_sdk_dynamodb::config::{Credentials, SharedCredentialsProvider};
        use ma2h_sam::iam::{Front, Resolver, register_functions};
        let template = ma2h_sam::template::Template::parse(template_text).expect("the template parses");
        let endpoint = std::env::var("AWS_ENDPOINT_URL").expect("moto's endpoint");
        let log = std::env::var_os("MA2H_IAM_LOG").filter(|_| report).map(Into::into);
        let front = Front::new(&endpoint, ACCOUNT, log);
        front.admit(&std::env::var("AWS_ACCESS_KEY_ID").unwrap_or_else(|_| "test".into()));
        let url = front.clone().spawn().await.expect("the IAM front binds");
        let region = config.region().map(|r| r.to_string()).unwrap_or_else(|| "us-east-1".into());
        let resolver = Resolver::new(&region, ACCOUNT)
            .table("Table", &aws.table)
            .queue("PushQueue", &aws.push_queue_url)
            .parameters(&template.parameters);
        let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let run = unique("run");
        let mut by_id = std::collections::BTreeMap::new();
        let mut configs = std::collections::BTreeMap::new();
        let functions =
            register_functions(&front, &template, &workspace, &resolver, &run).expect("every policy resolves");
        for (function, key) in functions {
            let creds = Credentials::new(key, "local", None, None, "ma2h-iam-front");
            // The endpoint on each service's own config: AWS_ENDPOINT_URL (moto) would win over
            // an SdkConfig's.
            let own = config.to_builder().credentials_provider(SharedCredentialsProvider::new(creds)).build();
            let ddb = aws_sdk_dynamodb::config::Builder::from(&own).endpoint_url(&url).build();
            let sqs = aws_sdk_sqs::config::Builder::from(&own).endpoint_url(&url).build();
            configs.insert(function.logical_id.clone(), own.clone());
            let store = ma2h_store_dynamodb::DynamoStore::new(aws_sdk_dynamodb::Client::from_conf(ddb), &aws.table)
                .with_shards(aws.store_shards())
                .with_clock(clock.clone());
            let queue = ma2h_queue_sqs::SqsPushQueue::new(aws_sdk_sqs::Client::from_conf(sqs), &aws.push_queue_url);
            let dep = ma2h_aws::assemble(settings.clone(), aws, store, queue).expect("a deployment");
            by_id.insert(function.logical_id.clone(), dep);
        }
        let routes = ma2h_sam::routes::Routes::new(template.routes.clone());
        Self { template, routes, by_id, configs, url, front }
    }

    /// The function the template's HTTP API routes `req` to.
    pub fn for_request(&self, req: &lambda_http::Request) -> &Deployment {
        let matched =
            self.routes.select(req.method().as_str(), req.uri().path()).expect("the template routes the request");
        let f = self.template.function_by_binary(&matched.route.function).expect("a routed function");
        &self.by_id[&f.logical_id]
    }

    /// The function with this logical id (`DeliverFunction`).
    pub fn get(&self, logical_id: &str) -> &Deployment {
        &self.by_id[logical_id]
    }

    /// A DynamoDB client acting as the function with this logical id.
    pub fn dynamodb(&self, logical_id: &str) -> aws_sdk_dynamodb::Client {
        let conf = aws_sdk_dynamodb::config::Builder::from(&self.configs[logical_id]).endpoint_url(&self.url).build();
        aws_sdk_dynamodb::Client::from_conf(conf)
    }

    /// A Secrets Manager client acting as the function with this logical id.
    pub fn secretsmanager(&self, logical_id: &str) -> aws_sdk_secretsmanager::Client {
        let conf =
            aws_sdk_secretsmanager::config::Builder::from(&self.configs[logical_id]).endpoint_url(&self.url).build();
        aws_sdk_secretsmanager::Client::from_conf(conf)
    }

    pub fn each_mut(&mut self) -> impl Iterator<Item = &mut Deployment> {
        self.by_id.values_mut()
    }
}

/// Serve `req` with the function the template routes it to.
pub async fn call_routed(fns: &Functions, req: lambda_http::Request) -> (StatusCode, Value) {
    let dep = fns.for_request(&req);
    call_app(dep, req).await
}

/// Issue 42: the tests' OpenID Connect provider on a loopback port (telling time by `clock`), set
/// as account `acme`'s SSO with verified `@acme.com` emails as operators. Returns it and its
/// issuer URL.
pub async fn sso_provider(
    hub: &ma2h_core::Hub,
    clock: std::sync::Arc<ma2h_core::ports::ManualClock>,
    alg: ma2h_test_support::idp::Alg,
) -> (ma2h_test_support::idp::Idp, String) {
    use ma2h_core::sso::manage::{self, SsoSpec};
    use ma2h_test_support::idp::{CLIENT_ID, CLIENT_SECRET, Idp};
    use std::future::IntoFuture;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", listener.local_addr().unwrap());
    let idp = Idp::new(&issuer, alg, move || ma2h_core::ports::Clock::now(clock.as_ref()).timestamp());
    tokio::spawn(axum::serve(listener, idp.router()).into_future());
    let spec = SsoSpec {
        issuer: Some(issuer.clone()),
        client_id: Some(CLIENT_ID.into()),
        client_secret: Some(CLIENT_SECRET.into()),
        email_domains: Some(vec!["acme.com".into()]),
        ..SsoSpec::default()
    };
    manage::set(hub, "admin", &ma2h_protocol::ids::AccountId::parse("acme").unwrap(), spec).await.unwrap();
    (idp, issuer)
}

/// The value a response's `Set-Cookie` gives cookie `name` (`name=value`), unless it clears it.
pub fn set_cookie(resp: &axum::response::Response, name: &str) -> Option<String> {
    resp.headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().split(';').next().unwrap().to_owned())
        .find(|c| c.starts_with(&format!("{name}=")) && c.len() > name.len() + 1)
}
