//! The OpenAPI document (`GET /openapi.json`, schema/openapi.json) against the Router: every
//! route is documented, every documented operation is routed, real responses validate against
//! the document, and the published copy (docs/openapi.json) is current.

mod common;

use axum::http::{Method, StatusCode};
use common::*;
use ma2h_http::openapi;
use serde_json::{Value, json};

/// The server named in the published copy.
const PUBLISHED_SERVER: &str = "https://hub.example.com";

fn doc() -> Value {
    openapi::document("https://hub.test")
}

/// `(path, method)` of every `.route(…)` in the Router's sources: one call per line, methods as
/// `get(`/`post(`/… (the chained `.post(` too).
fn router_routes() -> Vec<(String, String)> {
    let sources = [include_str!("../src/lib.rs"), include_str!("../src/ui/mod.rs")];
    let mut out = Vec::new();
    for src in sources {
        for line in src.lines().map(str::trim).filter(|l| l.starts_with(".route(\"")) {
            let path = line[".route(\"".len()..].split('"').next().unwrap().to_owned();
            let rest = &line[".route(\"".len() + path.len() + 1..];
            for m in ["get", "post", "put", "patch", "delete"] {
                let called = rest
                    .match_indices(&format!("{m}("))
                    .any(|(i, _)| i == 0 || !rest[..i].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_'));
                if called {
                    out.push((path.clone(), m.to_owned()));
                }
            }
        }
    }
    assert!(out.len() > 30, "the route parser found only {out:?}");
    out
}

/// Does the documented path template `doc_path` cover the Router's `route` (`{*rest}` matches
/// one or more segments, `{x}` one)?
fn covers(route: &str, doc_path: &str) -> bool {
    let r: Vec<&str> = route.trim_start_matches('/').split('/').collect();
    let d: Vec<&str> = doc_path.trim_start_matches('/').split('/').collect();
    match r.iter().position(|s| s.starts_with("{*")) {
        Some(i) => d.len() > i && r[..i].iter().zip(&d[..i]).all(|(a, b)| same_segment(a, b)),
        None => r.len() == d.len() && r.iter().zip(&d).all(|(a, b)| same_segment(a, b)),
    }
}

fn same_segment(a: &str, b: &str) -> bool {
    a == b || (a.starts_with('{') && b.starts_with('{'))
}

#[test]
fn every_route_of_the_router_is_in_the_document() {
    let doc = doc();
    let paths = doc["paths"].as_object().unwrap();
    let mut missing = Vec::new();
    for (route, method) in router_routes() {
        let found = paths.iter().any(|(p, ops)| covers(&route, p) && ops.get(&method).is_some());
        if !found {
            missing.push(format!("{} {route}", method.to_uppercase()));
        }
    }
    assert!(missing.is_empty(), "routed but not in schema/openapi.json: {missing:#?}");
}

#[tokio::test]
async fn every_documented_operation_is_routed() {
    let t = hub().await;
    let doc = doc();
    let mut unrouted = Vec::new();
    for (path, ops) in doc["paths"].as_object().unwrap() {
        let uri = path.replace("{id}", "msg_01HZZZZZZZZZZZZZZZZZZZZZZZ").replace("{agent_id}", "bot");
        for method in ops.as_object().unwrap().keys() {
            let m = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let r = t.call(m, &uri, None, None).await;
            // the Router's own fallbacks: no such endpoint / method not allowed
            let fallback = (r.status == StatusCode::NOT_FOUND && r.message() == "no such endpoint")
                || r.status == StatusCode::METHOD_NOT_ALLOWED;
            if fallback {
                unrouted.push(format!("{} {path} → {}", method.to_uppercase(), r.status));
            }
        }
    }
    assert!(unrouted.is_empty(), "documented but not routed: {unrouted:#?}");
}

/// A validator for the response schema of `path`/`method`/`status` (JSON), with the document's
/// components as `$defs`.
fn response_validator(doc: &Value, path: &str, method: &str, status: &str) -> jsonschema::Validator {
    let schema = &doc["paths"][path][method]["responses"][status]["content"]["application/json"]["schema"];
    assert!(schema.is_object(), "no JSON schema documented for {method} {path} {status}");
    let text = schema.to_string().replace("#/components/schemas/", "#/$defs/");
    let mut root: Value = serde_json::from_str(&text).unwrap();
    root["$schema"] = json!("https://json-schema.org/draft/2020-12/schema");
    root["$defs"] = doc["components"]["schemas"].clone();
    let defs = root["$defs"].to_string().replace("#/components/schemas/", "#/$defs/");
    root["$defs"] = serde_json::from_str(&defs).unwrap();
    jsonschema::validator_for(&root).unwrap_or_else(|e| panic!("{method} {path} {status}: {e}"))
}

fn assert_valid(doc: &Value, path: &str, method: &str, status: StatusCode, body: &Value) {
    let v = response_validator(doc, path, method, status.as_str());
    let errors: Vec<String> = v.iter_errors(body).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(errors.is_empty(), "{method} {path} {status}: {errors:#?}\n{body:#}");
}

#[tokio::test]
async fn real_responses_validate_against_the_document() {
    let t = hub().await;
    let doc = doc();
    let r = t.call(Method::GET, "/.well-known/ma2h", None, None).await;
    assert_valid(&doc, "/.well-known/ma2h", "get", r.status, &r.body);

    let r = t.submit(&t.agent, ask("openapi-1")).await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    assert_valid(&doc, "/v1/messages", "post", r.status, &r.body);
    let id = r.body["id"].as_str().unwrap().to_owned();

    let r = t.get(&t.agent, &id).await;
    assert_valid(&doc, "/v1/messages/{id}", "get", r.status, &r.body);
    let r = t.get(&t.agent, "msg_01HZZZZZZZZZZZZZZZZZZZZZZZ").await;
    assert_valid(&doc, "/v1/messages/{id}", "get", r.status, &r.body);

    let r = t.resolve(&t.operator, &id, json!({"resolution": "answered", "value": "ship"})).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let r = t.get(&t.agent, &id).await;
    assert_valid(&doc, "/v1/messages/{id}", "get", r.status, &r.body);

    let r = t.call(Method::GET, "/v1/operator/messages?status=resolved", Some(&t.operator), None).await;
    assert_valid(&doc, "/v1/operator/messages", "get", r.status, &r.body);

    let r = t.call(Method::POST, "/v1/sessions", Some(&t.agent), Some(json!({"label": "openapi"}))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    assert_valid(&doc, "/v1/sessions", "post", r.status, &r.body);
    let r = t.call(Method::GET, "/v1/sessions", Some(&t.agent), None).await;
    assert_valid(&doc, "/v1/sessions", "get", r.status, &r.body);

    let r = t.call(Method::GET, "/v1/inbox", Some(&t.agent), None).await;
    assert_valid(&doc, "/v1/inbox", "get", r.status, &r.body);
    let r = t.call(Method::POST, "/v1/messages", None, Some(ask("openapi-2"))).await;
    assert_valid(&doc, "/v1/messages", "post", r.status, &r.body);

    let served = t.call(Method::GET, "/openapi.json", None, None).await;
    assert_eq!(served.status, StatusCode::OK);
    assert_eq!(served.body["servers"][0]["url"], "https://hub.test", "the Hub names its public URL");
    assert_eq!(served.body["paths"], doc["paths"]);
}

#[test]
fn the_published_copy_is_current() {
    let text = serde_json::to_string_pretty(&openapi::document(PUBLISHED_SERVER)).unwrap() + "\n";
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/openapi.json");
    if std::env::var_os("MA2H_UPDATE_OPENAPI").is_some() {
        std::fs::write(path, &text).unwrap();
    }
    let published = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        published == text,
        "docs/openapi.json is stale: MA2H_UPDATE_OPENAPI=1 cargo test -p ma2h-http --test openapi"
    );
}
