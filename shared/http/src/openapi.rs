//! `GET /openapi.json`: the OpenAPI 3.1 description of every route. The paths are written by
//! hand in `schema/openapi.json`; the protocol's own JSON Schemas (schema/v0.5) are embedded
//! under `components.schemas` here, with their `$id`s, so there is one copy of each. The Router
//! test `tests/openapi.rs` fails when a route is missing from the document or the document names
//! one the Router does not serve, and checks real responses against it.

use std::sync::OnceLock;

use axum::Json;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use ma2h_core::Hub;
use ma2h_protocol::schema::SchemaKind;
use serde_json::{Value, json};

const PATHS: &str = include_str!("../../../schema/openapi.json");

/// The protocol schemas by component name.
const EMBEDDED: [(&str, SchemaKind); 11] = [
    ("message", SchemaKind::Message),
    ("response", SchemaKind::Response),
    ("capability", SchemaKind::Capability),
    ("submitAck", SchemaKind::SubmitAck),
    ("getMessage", SchemaKind::GetMessage),
    ("resolveRequest", SchemaKind::ResolveRequest),
    ("directive", SchemaKind::Directive),
    ("inboundMessage", SchemaKind::InboundMessage),
    ("ack", SchemaKind::Ack),
    ("presence", SchemaKind::Presence),
    ("session", SchemaKind::Session),
];

/// Sub-schemas of an embedded file, referenced by its `$id`.
const POINTED: [(&str, SchemaKind); 3] = [
    ("sessionRegister", SchemaKind::SessionRegister),
    ("sessionEnvelope", SchemaKind::SessionEnvelope),
    ("sessionList", SchemaKind::SessionList),
];

/// The complete document, its `servers` naming `public_url`.
pub fn document(public_url: &str) -> Value {
    static BASE: OnceLock<Value> = OnceLock::new();
    let mut doc = BASE
        .get_or_init(|| {
            let mut doc: Value = serde_json::from_str(PATHS).expect("schema/openapi.json is JSON");
            let schemas = doc["components"]["schemas"].as_object_mut().expect("components.schemas");
            for (name, kind) in EMBEDDED {
                let mut schema: Value = serde_json::from_str(kind.source()).expect("embedded schemas are JSON");
                // Document-relative references only: many OpenAPI tools do not scope `#` by `$id`.
                if let Some(m) = schema.as_object_mut() {
                    m.remove("$id");
                    m.remove("$schema");
                }
                rewrite_refs(&mut schema, name);
                schemas.insert(name.into(), schema);
            }
            for (name, kind) in POINTED {
                let pointer = kind.pointer().expect("a sub-schema");
                let file = component_of(kind.file_name()).expect("an embedded file");
                schemas.insert(name.into(), json!({"$ref": format!("#/components/schemas/{file}{pointer}")}));
            }
            doc
        })
        .clone();
    doc["servers"] = json!([{"url": public_url}]);
    doc
}

/// The component that embeds the schema file `file` (`message.schema.json`).
fn component_of(file: &str) -> Option<&'static str> {
    EMBEDDED.iter().find(|(_, k)| k.file_name() == file).map(|(n, _)| *n)
}

/// Point every `$ref` of the schema embedded as `name` into the document: `#…` (the file
/// itself), `other.schema.json#…` and absolute `$id`s of the embedded files.
fn rewrite_refs(v: &mut Value, name: &str) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get_mut("$ref") {
                let (target, fragment) = r.split_once('#').unwrap_or((r.as_str(), ""));
                let file = target.rsplit('/').next().unwrap_or(target);
                let component = if target.is_empty() { Some(name) } else { component_of(file) };
                if let Some(c) = component {
                    *r = format!("#/components/schemas/{c}{fragment}");
                }
            }
            m.values_mut().for_each(|x| rewrite_refs(x, name));
        }
        Value::Array(a) => a.iter_mut().for_each(|x| rewrite_refs(x, name)),
        _ => {}
    }
}

pub async fn serve(State(hub): State<Hub>) -> impl IntoResponse {
    ([(header::CACHE_CONTROL, "public, max-age=300")], Json(document(&hub.settings.public_url)))
}
