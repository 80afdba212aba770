//! Each function's IAM policy as SAM writes it into the function's role: every entry of the
//! function's `Policies` — a SAM policy template (expanded from SAM's own definitions, the
//! `policy_templates.json` that ships with `aws-sam-translator`) or an inline policy document —
//! with the intrinsics (`Ref`, `Fn::GetAtt`, `Fn::Sub`, `Fn::Join`) resolved against the
//! resources of one run. The statements are evaluated by [`scratchstack_aspen`]; this module only
//! produces them, plus the list of grants (effect × action × resource) the report counts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::template::Function;

/// Why a function's policy cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error(
        "SAM's policy templates were not found ({0}); run `bash scripts/venv.sh` (it installs aws-sam-cli) or set MA2H_SAM_POLICY_TEMPLATES"
    )]
    NoTemplates(String),
    #[error("{0}")]
    Shape(String),
}

fn shape(msg: impl Into<String>) -> PolicyError {
    PolicyError::Shape(msg.into())
}

/// SAM's policy template definitions (`aws-sam-translator`'s `policy_templates.json`).
#[derive(Debug, Clone)]
pub struct SamTemplates(Map<String, Value>);

impl SamTemplates {
    pub fn parse(text: &str) -> Result<Self, PolicyError> {
        let v: Value = serde_json::from_str(text).map_err(|e| shape(format!("policy_templates.json: {e}")))?;
        match v.get("Templates") {
            Some(Value::Object(m)) => Ok(Self(m.clone())),
            _ => Err(shape("policy_templates.json has no Templates object")),
        }
    }

    /// `MA2H_SAM_POLICY_TEMPLATES`, else the copy in the workspace's `.venv` (the SAM CLI the
    /// project pins installs it).
    pub fn find(workspace: &Path) -> Result<Self, PolicyError> {
        let path = match std::env::var_os("MA2H_SAM_POLICY_TEMPLATES") {
            Some(p) => PathBuf::from(p),
            None => venv_copy(workspace)
                .ok_or_else(|| PolicyError::NoTemplates(workspace.join(".venv").display().to_string()))?,
        };
        let text =
            std::fs::read_to_string(&path).map_err(|e| PolicyError::NoTemplates(format!("{}: {e}", path.display())))?;
        Self::parse(&text)
    }

    /// The policy document SAM writes for `name` with these parameter values: every
    /// `{"Ref": <template parameter>}` in the definition replaced by the value given.
    fn expand(&self, name: &str, values: &Value) -> Result<Value, PolicyError> {
        let def = self.0.get(name).ok_or_else(|| shape(format!("{name} is not a SAM policy template")))?;
        let params = def.get("Parameters").and_then(Value::as_object).cloned().unwrap_or_default();
        let values = values.as_object().cloned().unwrap_or_default();
        for p in params.keys() {
            if !values.contains_key(p) {
                return Err(shape(format!("{name}: parameter {p} is missing")));
            }
        }
        fn substitute(v: &Value, params: &Map<String, Value>, values: &Map<String, Value>) -> Value {
            match v {
                Value::Object(m)
                    if m.len() == 1 && m.get("Ref").and_then(Value::as_str).is_some_and(|r| params.contains_key(r)) =>
                {
                    values[m["Ref"].as_str().expect("checked")].clone()
                }
                Value::Object(m) => m.iter().map(|(k, v)| (k.clone(), substitute(v, params, values))).collect(),
                Value::Array(a) => a.iter().map(|v| substitute(v, params, values)).collect(),
                other => other.clone(),
            }
        }
        Ok(substitute(&def["Definition"], &params, &values))
    }
}

fn venv_copy(workspace: &Path) -> Option<PathBuf> {
    let lib = workspace.join(".venv/lib");
    std::fs::read_dir(&lib).ok()?.flatten().map(|e| e.path()).find_map(|py| {
        let p = py.join("site-packages/samtranslator/policy_templates_data/policy_templates.json");
        p.exists().then_some(p)
    })
}

/// The short tags as CloudFormation's long form: `!Sub` → `Fn::Sub`, `!Ref` → `Ref`,
/// `!GetAtt X.Y` → `Fn::GetAtt: [X, Y]`.
fn long_form(v: &Value) -> Value {
    match v {
        Value::Object(m) if m.len() == 1 && m.keys().next().is_some_and(|k| k.starts_with('!')) => {
            let (k, inner) = m.iter().next().expect("one entry");
            let inner = long_form(inner);
            match &k[1..] {
                "Ref" => json!({ "Ref": inner }),
                "GetAtt" => match inner.as_str().and_then(|s| s.split_once('.')) {
                    Some((res, attr)) => json!({ "Fn::GetAtt": [res, attr] }),
                    None => json!({ "Fn::GetAtt": inner }),
                },
                other => json!({ format!("Fn::{other}"): inner }),
            }
        }
        Value::Object(m) => m.iter().map(|(k, v)| (k.clone(), long_form(v))).collect(),
        Value::Array(a) => a.iter().map(long_form).collect(),
        other => other.clone(),
    }
}

/// The policy documents SAM attaches to the function's role, intrinsics intact.
pub fn documents(f: &Function, sam: &SamTemplates) -> Result<Vec<Value>, PolicyError> {
    f.policies
        .iter()
        .map(|p| {
            let p = long_form(p);
            match &p {
                Value::Object(m) if m.contains_key("Statement") => Ok(p.clone()),
                Value::Object(m) if m.len() == 1 => {
                    let (name, values) = m.iter().next().expect("one entry");
                    sam.expand(name, values)
                }
                _ => Err(shape(format!(
                    "{}: only SAM policy templates and inline policy documents are modelled, not {p}",
                    f.logical_id
                ))),
            }
        })
        .collect()
}

/// What the intrinsics of one run resolve to.
#[derive(Debug, Clone, Default)]
pub struct Resolver {
    pub partition: String,
    pub region: String,
    pub account: String,
    /// Template parameters (defaults overlaid with the run's values).
    pub parameters: BTreeMap<String, String>,
    /// `Ref` of a resource (a table's name, a queue's URL).
    pub refs: BTreeMap<String, String>,
    /// `Fn::GetAtt` of a resource: `(logical id, attribute)` → value.
    pub attrs: BTreeMap<(String, String), String>,
}

impl Resolver {
    pub fn new(region: &str, account: &str) -> Self {
        Self { partition: "aws".into(), region: region.into(), account: account.into(), ..Self::default() }
    }

    /// A table: `Ref` is its name, `Arn` its ARN.
    pub fn table(mut self, logical: &str, name: &str) -> Self {
        let arn = format!("arn:{}:dynamodb:{}:{}:table/{name}", self.partition, self.region, self.account);
        self.refs.insert(logical.into(), name.into());
        self.attrs.insert((logical.into(), "Arn".into()), arn);
        self
    }

    /// A queue: `Ref` is its URL, `Arn` and `QueueName` from its name.
    pub fn queue(mut self, logical: &str, url: &str) -> Self {
        let name = url.rsplit('/').next().unwrap_or(url).to_owned();
        let arn = format!("arn:{}:sqs:{}:{}:{name}", self.partition, self.region, self.account);
        self.refs.insert(logical.into(), url.into());
        self.attrs.insert((logical.into(), "Arn".into()), arn);
        self.attrs.insert((logical.into(), "QueueName".into()), name);
        self
    }

    pub fn parameters(mut self, parameters: &BTreeMap<String, String>) -> Self {
        self.parameters.extend(parameters.iter().map(|(k, v)| (k.clone(), v.clone())));
        self
    }

    fn reference(&self, name: &str) -> Option<String> {
        match name {
            "AWS::Partition" => Some(self.partition.clone()),
            "AWS::Region" => Some(self.region.clone()),
            "AWS::AccountId" => Some(self.account.clone()),
            "AWS::URLSuffix" => Some("amazonaws.com".into()),
            _ => self.parameters.get(name).or_else(|| self.refs.get(name)).cloned(),
        }
    }

    fn attribute(&self, res: &str, attr: &str) -> Result<String, PolicyError> {
        self.attrs
            .get(&(res.to_owned(), attr.to_owned()))
            .cloned()
            .ok_or_else(|| shape(format!("Fn::GetAtt {res}.{attr}: unknown in this run")))
    }

    fn sub(&self, text: &str, vars: &Map<String, Value>) -> Result<String, PolicyError> {
        let mut out = String::new();
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let end = after.find('}').ok_or_else(|| shape(format!("Fn::Sub `{text}`: unclosed ${{")))?;
            let name = &after[..end];
            if let Some(literal) = name.strip_prefix('!') {
                out.push_str("${");
                out.push_str(literal);
                out.push('}');
            } else if let Some(v) = vars.get(name) {
                out.push_str(&self.string(v)?);
            } else if let Some(v) = self.reference(name) {
                out.push_str(&v);
            } else if let Some((res, attr)) = name.split_once('.') {
                out.push_str(&self.attribute(res, attr)?);
            } else {
                return Err(shape(format!("Fn::Sub `{text}`: ${{{name}}} is unknown in this run")));
            }
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }

    fn string(&self, v: &Value) -> Result<String, PolicyError> {
        match self.resolve(v)? {
            Value::String(s) => Ok(s),
            other => Err(shape(format!("expected a string, got {other}"))),
        }
    }

    /// `v` with every intrinsic replaced by its value.
    pub fn resolve(&self, v: &Value) -> Result<Value, PolicyError> {
        let v = long_form(v);
        Ok(match &v {
            Value::Object(m) if m.len() == 1 => {
                let (k, inner) = m.iter().next().expect("one entry");
                match k.as_str() {
                    "Ref" => {
                        let name = inner.as_str().ok_or_else(|| shape("Ref of a non-string"))?;
                        Value::String(
                            self.reference(name).ok_or_else(|| shape(format!("Ref {name}: unknown in this run")))?,
                        )
                    }
                    "Fn::GetAtt" => match inner.as_array().map(Vec::as_slice) {
                        Some([Value::String(r), Value::String(a)]) => Value::String(self.attribute(r, a)?),
                        _ => return Err(shape(format!("Fn::GetAtt {inner}"))),
                    },
                    "Fn::Sub" => match inner {
                        Value::String(s) => Value::String(self.sub(s, &Map::new())?),
                        Value::Array(a) if a.len() == 2 => {
                            let text = a[0].as_str().ok_or_else(|| shape("Fn::Sub: the template is not a string"))?;
                            Value::String(self.sub(text, a[1].as_object().ok_or_else(|| shape("Fn::Sub: variables"))?)?)
                        }
                        _ => return Err(shape(format!("Fn::Sub {inner}"))),
                    },
                    "Fn::Join" => match inner.as_array().map(Vec::as_slice) {
                        Some([Value::String(sep), Value::Array(parts)]) => Value::String(
                            parts.iter().map(|p| self.string(p)).collect::<Result<Vec<_>, _>>()?.join(sep),
                        ),
                        _ => return Err(shape(format!("Fn::Join {inner}"))),
                    },
                    k if k.starts_with("Fn::") => return Err(shape(format!("{k} is not modelled in policies"))),
                    _ => Value::Object(m.iter().map(|(k, v)| Ok((k.clone(), self.resolve(v)?))).collect::<Result<
                        _,
                        PolicyError,
                    >>(
                    )?),
                }
            }
            Value::Object(m) => Value::Object(
                m.iter().map(|(k, v)| Ok((k.clone(), self.resolve(v)?))).collect::<Result<_, PolicyError>>()?,
            ),
            Value::Array(a) => Value::Array(a.iter().map(|v| self.resolve(v)).collect::<Result<_, _>>()?),
            other => other.clone(),
        })
    }
}

/// One grant of a policy: an effect, one action, one resource pattern — as resolved for a run,
/// and as shown in the report (the template's own names: `Table/index/inbox`, `PushQueue`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct Grant {
    pub allow: bool,
    pub action: String,
    pub resource: String,
    pub shown: String,
}

impl Grant {
    /// `dynamodb:Query Table/index/inbox` — how the report and the justifications name it.
    pub fn key(&self) -> String {
        format!("{} {}", self.action, self.shown)
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a.iter().filter_map(|x| x.as_str().map(str::to_owned)).collect(),
        _ => Vec::new(),
    }
}

/// The resolver that names resources as the template does: `GetAtt X.Arn` → `X`, `Ref X` → `X`,
/// a parameter → `${Name}`, pseudo parameters → `*`.
pub fn display_resolver(template: &crate::template::Template) -> Resolver {
    let mut r = Resolver { partition: "*".into(), region: "*".into(), account: "*".into(), ..Resolver::default() };
    for (id, ty) in &template.resource_types {
        r.refs.insert(id.clone(), id.clone());
        for attr in ["Arn", "QueueName", "Name"] {
            r.attrs.insert((id.clone(), attr.into()), id.clone());
        }
        let _ = ty;
    }
    for name in template.parameter_names.iter() {
        r.parameters.insert(name.clone(), format!("${{{name}}}"));
    }
    r
}

/// The function's resolved policy documents and its grants (resolved and shown).
pub fn resolved(
    f: &Function,
    sam: &SamTemplates,
    run: &Resolver,
    shown: &Resolver,
) -> Result<(Vec<Value>, Vec<Grant>), PolicyError> {
    let mut docs = Vec::new();
    let mut grants = Vec::new();
    for doc in documents(f, sam)? {
        let real = run.resolve(&doc)?;
        let named = shown.resolve(&doc)?;
        let (rs, ns) = (statements(&real), statements(&named));
        for (r, n) in rs.iter().zip(ns.iter()) {
            let allow = r.get("Effect").and_then(Value::as_str) == Some("Allow");
            for action in strings(r.get("Action")) {
                for (res, show) in strings(r.get("Resource")).into_iter().zip(strings(n.get("Resource"))) {
                    grants.push(Grant { allow, action: action.clone(), resource: res, shown: show });
                }
            }
        }
        docs.push(real);
    }
    Ok((docs, grants))
}

fn statements(doc: &Value) -> Vec<Value> {
    match doc.get("Statement") {
        Some(Value::Array(a)) => a.clone(),
        Some(one @ Value::Object(_)) => vec![one.clone()],
        _ => Vec::new(),
    }
}
