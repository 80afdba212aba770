//! What `make aws-local` needs from `infra/template.yaml`, read from the template itself so the
//! local stack cannot drift from what SAM deploys: each function's binary, timeout, environment
//! and event sources (HTTP API routes, the SQS queue, the schedule), the table's definition and
//! the queues'. CloudFormation's short tags (`!Ref`, `!GetAtt`) are read as tagged values.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_yaml_ng::Value;

/// Why the template cannot drive the local stack.
#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    #[error("the template is not YAML: {0}")]
    Yaml(#[from] serde_yaml_ng::Error),
    #[error("{0}")]
    Shape(String),
}

fn shape(msg: impl Into<String>) -> TemplateError {
    TemplateError::Shape(msg.into())
}

/// An environment value: a literal, or a `Ref` to a parameter or a resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvValue {
    Literal(String),
    Ref(String),
}

/// One `HttpApi` event: `Method Path` routed to a function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRoute {
    /// Upper-case method, or `ANY`.
    pub method: String,
    /// The path pattern as written (`/v1/messages/{id}`, `/inbox/{proxy+}`).
    pub path: String,
    /// The function's binary (its name in the Runtime API).
    pub function: String,
}

impl HttpRoute {
    /// API Gateway's route key, `METHOD /path`.
    pub fn route_key(&self) -> String {
        format!("{} {}", self.method, self.path)
    }
}

/// An `SQS` event source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqsSource {
    /// Logical id of the queue resource.
    pub queue: String,
    pub batch_size: i32,
}

/// One `AWS::Serverless::Function`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    pub logical_id: String,
    /// `Metadata.BuildProperties.Binary`: the cargo binary SAM builds.
    pub binary: String,
    pub timeout: Duration,
    /// The global variables with the function's own on top.
    pub env: BTreeMap<String, EnvValue>,
    pub sqs: Option<SqsSource>,
    pub schedule: Option<Duration>,
    /// `Properties.Policies` as JSON (short tags as `{"!Sub": …}`): SAM policy templates and
    /// inline statements, expanded and resolved by [`crate::iam::policy`].
    pub policies: Vec<serde_json::Value>,
}

/// One `AWS::SQS::Queue`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Queue {
    pub logical_id: String,
    pub visibility_timeout: Option<i64>,
    pub retention_seconds: Option<i64>,
    /// (logical id of the dead-letter queue, maxReceiveCount).
    pub redrive: Option<(String, i64)>,
}

/// The parts of the template the local stack runs.
#[derive(Debug, Clone)]
pub struct Template {
    /// Parameter defaults (a parameter without one is absent).
    pub parameters: BTreeMap<String, String>,
    /// Every parameter's name, with a default or not.
    pub parameter_names: Vec<String>,
    pub functions: Vec<Function>,
    pub routes: Vec<HttpRoute>,
    pub queues: Vec<Queue>,
    /// `(logical id, Properties as JSON)` of the DynamoDB table.
    pub table: Option<(String, serde_json::Value)>,
    /// Every resource's logical id → its `Type`.
    pub resource_types: BTreeMap<String, String>,
}

fn get<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.as_mapping().and_then(|m| m.get(key))
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// `!Tag value` or the long form `{Tag: value}` / `{Fn::Tag: value}`.
fn intrinsic<'a>(v: &'a Value, name: &str) -> Option<&'a Value> {
    if let Value::Tagged(t) = v {
        return (t.tag.to_string().trim_start_matches('!') == name).then_some(&t.value);
    }
    get(v, name).or_else(|| get(v, &format!("Fn::{name}")))
}

/// `!GetAtt X.Arn` / `[X, Arn]` → `X` (the resource whose attribute is taken).
fn get_att_resource(v: &Value) -> Option<String> {
    let inner = intrinsic(v, "GetAtt")?;
    match inner {
        Value::String(s) => s.split('.').next().map(str::to_owned),
        Value::Sequence(s) => s.first().and_then(scalar),
        _ => None,
    }
}

fn env_value(name: &str, v: &Value) -> Result<EnvValue, TemplateError> {
    if let Some(r) = intrinsic(v, "Ref") {
        return scalar(r).map(EnvValue::Ref).ok_or_else(|| shape(format!("{name}: a Ref names nothing")));
    }
    scalar(v).map(EnvValue::Literal).ok_or_else(|| shape(format!("{name}: only literals and Refs are supported")))
}

fn variables(env: Option<&Value>) -> Result<BTreeMap<String, EnvValue>, TemplateError> {
    let mut out = BTreeMap::new();
    if let Some(vars) = env.and_then(|e| get(e, "Variables")).and_then(Value::as_mapping) {
        for (k, v) in vars {
            let k = scalar(k).ok_or_else(|| shape("a variable name is not a string"))?;
            out.insert(k.clone(), env_value(&k, v)?);
        }
    }
    Ok(out)
}

fn seconds(v: Option<&Value>) -> Option<i64> {
    v.and_then(scalar).and_then(|s| s.parse().ok())
}

/// `rate(1 minute)`, `rate(5 minutes)`, `rate(2 hours)`, `rate(1 day)`.
pub fn parse_rate(expr: &str) -> Option<Duration> {
    let inner = expr.trim().strip_prefix("rate(")?.strip_suffix(')')?;
    let (n, unit) = inner.trim().split_once(' ')?;
    let n: u64 = n.parse().ok().filter(|n| *n > 0)?;
    let unit_seconds = match unit.trim().trim_end_matches('s') {
        "minute" => 60,
        "hour" => 3600,
        "day" => 86_400,
        _ => return None,
    };
    Some(Duration::from_secs(n * unit_seconds))
}

/// YAML → JSON (tags become `{"!Tag": value}`; the table's definition has none).
pub(crate) fn to_json(v: &Value) -> serde_json::Value {
    match v {
        Value::Null => serde_json::Value::Null,
        Value::Bool(b) => (*b).into(),
        Value::Number(n) => {
            n.as_i64().map(Into::into).or_else(|| n.as_f64().map(Into::into)).unwrap_or(serde_json::Value::Null)
        }
        Value::String(s) => s.clone().into(),
        Value::Sequence(s) => s.iter().map(to_json).collect(),
        Value::Mapping(m) => m.iter().filter_map(|(k, v)| Some((scalar(k)?, to_json(v)))).collect(),
        Value::Tagged(t) => serde_json::json!({ t.tag.to_string(): to_json(&t.value) }),
    }
}

impl Template {
    /// Read the template's text.
    pub fn parse(text: &str) -> Result<Self, TemplateError> {
        let doc: Value = serde_yaml_ng::from_str(text)?;
        let mut parameters = BTreeMap::new();
        let mut parameter_names = Vec::new();
        if let Some(params) = get(&doc, "Parameters").and_then(Value::as_mapping) {
            for (k, v) in params {
                parameter_names.extend(scalar(k));
                if let (Some(k), Some(d)) = (scalar(k), get(v, "Default").and_then(scalar)) {
                    parameters.insert(k, d);
                }
            }
        }
        let globals = get(&doc, "Globals").and_then(|g| get(g, "Function"));
        let global_env = variables(globals.and_then(|g| get(g, "Environment")))?;
        let global_timeout = seconds(globals.and_then(|g| get(g, "Timeout"))).unwrap_or(3);

        let resources = get(&doc, "Resources").and_then(Value::as_mapping).ok_or_else(|| shape("no Resources"))?;
        let (mut functions, mut routes, mut queues, mut table) = (Vec::new(), Vec::new(), Vec::new(), None);
        let mut resource_types = BTreeMap::new();
        for (id, res) in resources {
            let id = scalar(id).ok_or_else(|| shape("a resource id is not a string"))?;
            let props = get(res, "Properties");
            resource_types.insert(id.clone(), get(res, "Type").and_then(scalar).unwrap_or_default());
            match get(res, "Type").and_then(scalar).as_deref() {
                Some("AWS::Serverless::Function") => {
                    let f = function(&id, res, &global_env, global_timeout, &mut routes)?;
                    functions.push(f);
                }
                Some("AWS::SQS::Queue") => queues.push(Queue {
                    logical_id: id.clone(),
                    visibility_timeout: seconds(props.and_then(|p| get(p, "VisibilityTimeout"))),
                    retention_seconds: seconds(props.and_then(|p| get(p, "MessageRetentionPeriod"))),
                    redrive: match props.and_then(|p| get(p, "RedrivePolicy")) {
                        Some(r) => Some((
                            get(r, "deadLetterTargetArn")
                                .and_then(get_att_resource)
                                .ok_or_else(|| shape(format!("{id}: deadLetterTargetArn must be a GetAtt")))?,
                            seconds(get(r, "maxReceiveCount")).unwrap_or(10),
                        )),
                        None => None,
                    },
                }),
                Some("AWS::DynamoDB::Table") => {
                    if table.is_some() {
                        return Err(shape("more than one DynamoDB table"));
                    }
                    table = Some((id.clone(), props.map(to_json).unwrap_or_default()));
                }
                _ => {}
            }
        }
        Ok(Self { parameters, parameter_names, functions, routes, queues, table, resource_types })
    }

    pub fn function_by_binary(&self, binary: &str) -> Option<&Function> {
        self.functions.iter().find(|f| f.binary == binary)
    }
}

fn function(
    id: &str,
    res: &Value,
    global_env: &BTreeMap<String, EnvValue>,
    global_timeout: i64,
    routes: &mut Vec<HttpRoute>,
) -> Result<Function, TemplateError> {
    let binary = get(res, "Metadata")
        .and_then(|m| get(m, "BuildProperties"))
        .and_then(|b| get(b, "Binary"))
        .and_then(scalar)
        .ok_or_else(|| shape(format!("{id}: no Metadata.BuildProperties.Binary")))?;
    let props = get(res, "Properties");
    let mut env = global_env.clone();
    env.extend(variables(props.and_then(|p| get(p, "Environment")))?);
    let timeout = seconds(props.and_then(|p| get(p, "Timeout"))).unwrap_or(global_timeout);
    let (mut sqs, mut schedule) = (None, None);
    if let Some(events) = props.and_then(|p| get(p, "Events")).and_then(Value::as_mapping) {
        for (name, ev) in events {
            let name = scalar(name).unwrap_or_default();
            let ep = get(ev, "Properties");
            let field = |k: &str| ep.and_then(|p| get(p, k));
            match get(ev, "Type").and_then(scalar).as_deref() {
                Some("HttpApi") => {
                    let method = field("Method").and_then(scalar).unwrap_or_else(|| "ANY".into());
                    let path = field("Path").and_then(scalar).ok_or_else(|| shape(format!("{id}.{name}: no Path")))?;
                    routes.push(HttpRoute { method: method.to_uppercase(), path, function: binary.clone() });
                }
                Some("SQS") => {
                    let queue = field("Queue")
                        .and_then(get_att_resource)
                        .ok_or_else(|| shape(format!("{id}.{name}: Queue must be a GetAtt of a queue")))?;
                    let batch_size = seconds(field("BatchSize")).unwrap_or(10) as i32;
                    sqs = Some(SqsSource { queue, batch_size });
                }
                Some("Schedule") => {
                    let expr = field("Schedule").and_then(scalar).unwrap_or_default();
                    schedule = Some(
                        parse_rate(&expr)
                            .ok_or_else(|| shape(format!("{id}.{name}: unsupported schedule `{expr}`")))?,
                    );
                }
                other => return Err(shape(format!("{id}.{name}: unsupported event type {other:?}"))),
            }
        }
    }
    let timeout = Duration::from_secs(u64::try_from(timeout).map_err(|_| shape(format!("{id}: negative Timeout")))?);
    let policies = match props.and_then(|p| get(p, "Policies")) {
        None => Vec::new(),
        Some(Value::Sequence(s)) => s.iter().map(to_json).collect(),
        Some(one) => vec![to_json(one)],
    };
    Ok(Function { logical_id: id.to_owned(), binary, timeout, env, sqs, schedule, policies })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEMPLATE: &str = include_str!("../../../infra/template.yaml");

    #[test]
    fn the_committed_template_yields_every_function_route_and_event_source() {
        let t = Template::parse(TEMPLATE).unwrap();
        assert_eq!(t.functions.len(), 10, "{:?}", t.functions.iter().map(|f| &f.binary).collect::<Vec<_>>());
        let submit = t.function_by_binary("ma2h-submit").unwrap();
        assert_eq!(submit.env.get("MA2H_TABLE"), Some(&EnvValue::Ref("Table".into())));
        assert_eq!(submit.env.get("MA2H_LONG_POLL_MAX_SECONDS"), Some(&EnvValue::Literal("25".into())));
        assert_eq!(submit.timeout, Duration::from_secs(10));
        assert_eq!(t.function_by_binary("ma2h-get").unwrap().timeout, Duration::from_secs(29));
        let deliver = t.function_by_binary("ma2h-deliver").unwrap();
        assert_eq!(deliver.sqs, Some(SqsSource { queue: "PushQueue".into(), batch_size: 10 }));
        assert_eq!(t.function_by_binary("ma2h-sweep").unwrap().schedule, Some(Duration::from_secs(60)));
        assert!(t.routes.iter().any(|r| r.route_key() == "POST /v1/messages" && r.function == "ma2h-submit"));
        assert!(t.routes.iter().any(|r| r.route_key() == "ANY /inbox/{proxy+}" && r.function == "ma2h-operator"));
        let push = t.queues.iter().find(|q| q.logical_id == "PushQueue").unwrap();
        assert_eq!(push.redrive, Some(("PushDeadLetters".into(), 12)));
        assert_eq!(push.visibility_timeout, Some(180));
        assert_eq!(t.parameters.get("HubSecretName").map(String::as_str), Some("ma2h/hub"));
        assert!(!t.parameters.contains_key("PublicUrl"), "PublicUrl has no default");
    }

    #[test]
    fn the_templates_table_is_the_shared_table_definition() {
        // infra/dynamodb-table.json feeds LocalStack and the moto tests; the template must agree.
        let (_, table) = Template::parse(TEMPLATE).unwrap().table.unwrap();
        let shared: serde_json::Value =
            serde_json::from_str(include_str!("../../../infra/dynamodb-table.json")).unwrap();
        for key in ["KeySchema", "AttributeDefinitions", "GlobalSecondaryIndexes"] {
            let sorted = |v: &serde_json::Value| {
                let mut items: Vec<String> = v.as_array().unwrap().iter().map(|i| i.to_string()).collect();
                items.sort();
                items
            };
            assert_eq!(sorted(&table[key]), sorted(&shared[key]), "{key} differs");
        }
    }

    #[test]
    fn rates_parse_and_other_schedules_do_not() {
        assert_eq!(parse_rate("rate(1 minute)"), Some(Duration::from_secs(60)));
        assert_eq!(parse_rate("rate(5 minutes)"), Some(Duration::from_secs(300)));
        assert_eq!(parse_rate("rate(2 hours)"), Some(Duration::from_secs(7200)));
        assert_eq!(parse_rate("rate(0 minutes)"), None);
        assert_eq!(parse_rate("cron(0 12 * * ? *)"), None);
    }

    #[test]
    fn long_form_intrinsics_and_unsupported_events_are_handled() {
        let t = Template::parse(
            "Resources:\n  F:\n    Type: AWS::Serverless::Function\n    Metadata: { BuildProperties: { Binary: b } }\n    Properties:\n      Environment: { Variables: { A: { Ref: P } } }\n      Events:\n        Q: { Type: SQS, Properties: { Queue: { 'Fn::GetAtt': [Q1, Arn] } } }\n",
        )
        .unwrap();
        assert_eq!(t.functions[0].env["A"], EnvValue::Ref("P".into()));
        assert_eq!(t.functions[0].sqs.as_ref().unwrap().queue, "Q1");
        let err = Template::parse(
            "Resources:\n  F:\n    Type: AWS::Serverless::Function\n    Metadata: { BuildProperties: { Binary: b } }\n    Properties:\n      Events:\n        S: { Type: S3 }\n",
        )
        .unwrap_err();
        assert!(err.to_string().contains("unsupported event type"), "{err}");
    }
}
