//! HTTP request ⇄ API Gateway HTTP API payload format 2.0, as API Gateway builds it for a Lambda
//! proxy integration: lower-case headers with repeats joined by commas, the `cookie` header moved
//! to `cookies`, a decoded `queryStringParameters` beside `rawQueryString`, `pathParameters`,
//! the route key, and a base64 body for anything that is not text. The function's answer (status,
//! headers, multi-value headers, cookies, body) becomes the HTTP response.

use std::collections::BTreeMap;
use std::net::IpAddr;

use axum::body::Body;
use axum::http::{HeaderName, HeaderValue, Response, StatusCode, request::Parts};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::routes::Matched;

/// Who asked, as API Gateway's request context tells the function.
pub struct Caller {
    pub source_ip: IpAddr,
    pub request_id: String,
    pub now: chrono::DateTime<chrono::Utc>,
}

fn is_text(content_type: Option<&str>) -> bool {
    let Some(ct) = content_type else { return true };
    let ct = ct.to_ascii_lowercase();
    ct.starts_with("text/")
        || ct.contains("json")
        || ct.contains("xml")
        || ct.starts_with("application/x-www-form-urlencoded")
        || ct.starts_with("application/javascript")
}

/// The payload-2.0 event for one request.
pub fn request_event(parts: &Parts, body: &[u8], matched: &Matched<'_>, caller: &Caller) -> Value {
    let mut headers: BTreeMap<String, String> = BTreeMap::new();
    let mut cookies = Vec::new();
    for (name, value) in &parts.headers {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        if name == axum::http::header::COOKIE {
            cookies.extend(value.split(';').map(str::trim).filter(|c| !c.is_empty()).map(str::to_owned));
            continue;
        }
        headers.entry(name.as_str().to_owned()).and_modify(|v| *v = format!("{v},{value}")).or_insert(value);
    }
    headers.insert("x-forwarded-for".into(), caller.source_ip.to_string());
    headers.insert("x-forwarded-proto".into(), "http".into());
    let raw_query = parts.uri.query().unwrap_or_default();
    let mut query: BTreeMap<String, String> = BTreeMap::new();
    for (k, v) in url::form_urlencoded::parse(raw_query.as_bytes()) {
        query.entry(k.into_owned()).and_modify(|e| *e = format!("{e},{v}")).or_insert_with(|| v.into_owned());
    }
    let text = is_text(headers.get("content-type").map(String::as_str)) && std::str::from_utf8(body).is_ok();
    let body_field = match (body.is_empty(), text) {
        (true, _) => Value::Null,
        (false, true) => Value::String(String::from_utf8_lossy(body).into_owned()),
        (false, false) => Value::String(B64.encode(body)),
    };
    let route_key = matched.route.route_key();
    let path = parts.uri.path();
    let mut event = json!({
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": path,
        "rawQueryString": raw_query,
        "headers": headers,
        "requestContext": {
            "accountId": "000000000000",
            "apiId": "local",
            "domainName": headers.get("host").cloned().unwrap_or_else(|| "localhost".into()),
            "domainPrefix": "local",
            "http": {
                "method": parts.method.as_str(),
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": caller.source_ip.to_string(),
                "userAgent": headers.get("user-agent").cloned().unwrap_or_default(),
            },
            "requestId": caller.request_id,
            "routeKey": route_key,
            "stage": "$default",
            "time": caller.now.format("%d/%b/%Y:%H:%M:%S %z").to_string(),
            "timeEpoch": caller.now.timestamp_millis(),
        },
        "isBase64Encoded": !text && !body.is_empty(),
    });
    let obj = event.as_object_mut().expect("an object");
    if !cookies.is_empty() {
        obj.insert("cookies".into(), json!(cookies));
    }
    if !query.is_empty() {
        obj.insert("queryStringParameters".into(), json!(query));
    }
    if !matched.path_parameters.is_empty() {
        obj.insert("pathParameters".into(), json!(matched.path_parameters));
    }
    if !body_field.is_null() {
        obj.insert("body".into(), body_field);
    }
    event
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FunctionResponse {
    status_code: u16,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    multi_value_headers: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    cookies: Vec<String>,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    is_base64_encoded: bool,
}

/// Why a function's answer is not a payload-2.0 response (API Gateway answers 500 then).
#[derive(Debug, thiserror::Error)]
#[error("the function's response is not an API Gateway v2 response: {0}")]
pub struct BadResponse(String);

/// The HTTP response for a function's payload-2.0 answer.
pub fn http_response(answer: &[u8]) -> Result<Response<Body>, BadResponse> {
    let r: FunctionResponse = serde_json::from_slice(answer).map_err(|e| BadResponse(e.to_string()))?;
    let status = StatusCode::from_u16(r.status_code).map_err(|e| BadResponse(e.to_string()))?;
    let body = match (r.body, r.is_base64_encoded) {
        (None, _) => Vec::new(),
        (Some(b), true) => B64.decode(b).map_err(|e| BadResponse(e.to_string()))?,
        (Some(b), false) => b.into_bytes(),
    };
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    let header = |k: &str, v: &str| -> Result<(HeaderName, HeaderValue), BadResponse> {
        Ok((
            HeaderName::try_from(k).map_err(|e| BadResponse(e.to_string()))?,
            HeaderValue::try_from(v).map_err(|e| BadResponse(e.to_string()))?,
        ))
    };
    for (k, v) in &r.headers {
        let (k, v) = header(k, v)?;
        h.insert(k, v);
    }
    for (k, vs) in &r.multi_value_headers {
        for (i, v) in vs.iter().enumerate() {
            let (k, v) = header(k, v)?;
            // the multi-value form replaces the single-value one for the same name
            if i == 0 {
                h.insert(k, v);
            } else {
                h.append(k, v);
            }
        }
    }
    for c in &r.cookies {
        let (k, v) = header("set-cookie", c)?;
        h.append(k, v);
    }
    Ok(resp)
}

/// API Gateway's own error answers (`{"message": …}`), e.g. 404 for no route.
pub fn gateway_error(status: StatusCode, message: &str) -> Response<Body> {
    let mut resp = Response::new(Body::from(json!({ "message": message }).to_string()));
    *resp.status_mut() = status;
    resp.headers_mut().insert(axum::http::header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::HttpRoute;

    fn parts(req: axum::http::Request<()>) -> Parts {
        req.into_parts().0
    }

    #[test]
    fn a_request_becomes_a_payload_2_event() {
        let route = HttpRoute { method: "GET".into(), path: "/v1/messages/{id}".into(), function: "get".into() };
        let matched = Matched { route: &route, path_parameters: [("id".to_owned(), "m1".to_owned())].into() };
        let req = axum::http::Request::get("/v1/messages/m1?wait=5&tag=a&tag=b")
            .header("Authorization", "Bearer k")
            .header("X-Multi", "1")
            .header("X-Multi", "2")
            .header("Cookie", "a=1; b=2")
            .body(())
            .unwrap();
        let caller =
            Caller { source_ip: "127.0.0.2".parse().unwrap(), request_id: "rid".into(), now: chrono::Utc::now() };
        let ev = request_event(&parts(req), b"", &matched, &caller);
        assert_eq!(ev["routeKey"], "GET /v1/messages/{id}");
        assert_eq!(ev["rawPath"], "/v1/messages/m1");
        assert_eq!(ev["rawQueryString"], "wait=5&tag=a&tag=b");
        assert_eq!(ev["queryStringParameters"]["tag"], "a,b");
        assert_eq!(ev["headers"]["authorization"], "Bearer k");
        assert_eq!(ev["headers"]["x-multi"], "1,2");
        assert!(ev["headers"].get("cookie").is_none());
        assert_eq!(ev["cookies"], json!(["a=1", "b=2"]));
        assert_eq!(ev["pathParameters"]["id"], "m1");
        assert_eq!(ev["requestContext"]["http"]["sourceIp"], "127.0.0.2");
        assert_eq!(ev["requestContext"]["requestId"], "rid");
        assert!(ev.get("body").is_none());
    }

    #[test]
    fn text_bodies_stay_text_and_binary_ones_are_base64() {
        let route = HttpRoute { method: "POST".into(), path: "/x".into(), function: "f".into() };
        let matched = Matched { route: &route, path_parameters: BTreeMap::new() };
        let caller =
            Caller { source_ip: "127.0.0.1".parse().unwrap(), request_id: "r".into(), now: chrono::Utc::now() };
        let json_req = axum::http::Request::post("/x").header("content-type", "application/json").body(()).unwrap();
        let ev = request_event(&parts(json_req), br#"{"a":1}"#, &matched, &caller);
        assert_eq!((ev["body"].as_str(), ev["isBase64Encoded"].as_bool()), (Some(r#"{"a":1}"#), Some(false)));
        let bin = axum::http::Request::post("/x").header("content-type", "application/octet-stream").body(()).unwrap();
        let ev = request_event(&parts(bin), &[0, 159, 146, 150], &matched, &caller);
        assert_eq!((ev["body"].as_str(), ev["isBase64Encoded"].as_bool()), (Some("AJ+Slg=="), Some(true)));
    }

    #[test]
    fn a_function_answer_becomes_the_http_response() {
        let answer = json!({
            "statusCode": 202,
            "headers": {"content-type": "application/json", "x-request-id": "abc"},
            "multiValueHeaders": {"vary": ["a", "b"]},
            "cookies": ["s=1; HttpOnly", "t=2"],
            "body": "eyJvayI6dHJ1ZX0=",
            "isBase64Encoded": true
        });
        let resp = http_response(answer.to_string().as_bytes()).unwrap();
        assert_eq!(resp.status(), StatusCode::ACCEPTED);
        assert_eq!(resp.headers()["x-request-id"], "abc");
        assert_eq!(resp.headers().get_all("vary").iter().count(), 2);
        assert_eq!(resp.headers().get_all("set-cookie").iter().count(), 2);
        assert!(http_response(b"{\"errorMessage\":\"boom\"}").is_err());
    }
}
