//! API Gateway HTTP API route selection over the template's `HttpApi` events: the most specific
//! path wins (a literal segment beats `{param}`, which beats a greedy `{proxy+}`), and a route
//! naming the method beats `ANY` on the same path. No match is API Gateway's 404.

use std::collections::BTreeMap;

use crate::template::HttpRoute;

/// A request matched to a route: whose it is, its route key, and the path parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matched<'a> {
    pub route: &'a HttpRoute,
    pub path_parameters: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Segment {
    Greedy,
    Param,
    Literal,
}

/// The route table.
#[derive(Debug, Clone)]
pub struct Routes {
    routes: Vec<HttpRoute>,
}

/// Percent-decode one path segment (`+` is literal in a path).
fn decode(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1).and_then(|b| hex(*b)), bytes.get(i + 2).and_then(|b| hex(*b))) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Match `path` against `pattern`: the per-segment specificity and the parameters, or `None`.
fn match_path(pattern: &str, path: &str) -> Option<(Vec<Segment>, BTreeMap<String, String>)> {
    let pat: Vec<&str> = pattern.trim_start_matches('/').split('/').collect();
    let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let mut rank = Vec::with_capacity(pat.len());
    let mut params = BTreeMap::new();
    for (i, p) in pat.iter().enumerate() {
        if let Some(name) = p.strip_prefix('{').and_then(|p| p.strip_suffix("+}")) {
            // greedy: one or more remaining segments, only as the last pattern segment
            let rest = segs.get(i..).filter(|r| !r.is_empty() && !r[0].is_empty())?;
            params.insert(name.to_owned(), rest.iter().map(|s| decode(s)).collect::<Vec<_>>().join("/"));
            rank.push(Segment::Greedy);
            return Some((rank, params));
        }
        let seg = segs.get(i)?;
        if let Some(name) = p.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
            if seg.is_empty() {
                return None;
            }
            params.insert(name.to_owned(), decode(seg));
            rank.push(Segment::Param);
        } else if p == seg {
            rank.push(Segment::Literal);
        } else {
            return None;
        }
    }
    (segs.len() == pat.len()).then_some((rank, params))
}

impl Routes {
    pub fn new(routes: Vec<HttpRoute>) -> Self {
        Self { routes }
    }

    pub fn all(&self) -> &[HttpRoute] {
        &self.routes
    }

    /// The route API Gateway would pick for `method path`.
    pub fn select(&self, method: &str, path: &str) -> Option<Matched<'_>> {
        self.routes
            .iter()
            .filter(|r| r.method == "ANY" || r.method.eq_ignore_ascii_case(method))
            .filter_map(|r| match_path(&r.path, path).map(|(rank, params)| (rank, r.method != "ANY", r, params)))
            .max_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)))
            .map(|(_, _, route, path_parameters)| Matched { route, path_parameters })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(method: &str, path: &str, function: &str) -> HttpRoute {
        HttpRoute { method: method.into(), path: path.into(), function: function.into() }
    }

    fn table() -> Routes {
        Routes::new(vec![
            route("POST", "/v1/messages", "submit"),
            route("GET", "/v1/messages/{id}", "get"),
            route("POST", "/v1/messages/{id}/cancel", "cancel"),
            route("ANY", "/inbox", "operator"),
            route("ANY", "/inbox/{proxy+}", "operator"),
            route("ANY", "/v1/agents/{proxy+}", "operator"),
            route("GET", "/v1/agents/special", "other"),
        ])
    }

    #[test]
    fn literal_and_parameter_routes_match_with_their_parameters() {
        let t = table();
        let m = t.select("GET", "/v1/messages/msg_01").unwrap();
        assert_eq!((m.route.function.as_str(), m.path_parameters["id"].as_str()), ("get", "msg_01"));
        assert_eq!(t.select("POST", "/v1/messages").unwrap().route.function, "submit");
        assert_eq!(
            t.select("POST", "/v1/messages/x/cancel").unwrap().route.route_key(),
            "POST /v1/messages/{id}/cancel"
        );
    }

    #[test]
    fn a_method_mismatch_or_unknown_path_is_not_found() {
        let t = table();
        assert!(t.select("GET", "/v1/messages").is_none());
        assert!(t.select("DELETE", "/v1/messages/x").is_none());
        assert!(t.select("GET", "/v1/nothing").is_none());
        assert!(t.select("GET", "/v1/messages/").is_none(), "an empty {{id}} does not match");
    }

    #[test]
    fn greedy_routes_take_the_rest_and_lose_to_more_specific_ones() {
        let t = table();
        let m = t.select("GET", "/v1/agents/team/bot/presence").unwrap();
        assert_eq!(m.path_parameters["proxy"], "team/bot/presence");
        assert_eq!(t.select("GET", "/v1/agents/special").unwrap().route.function, "other");
        assert_eq!(t.select("POST", "/v1/agents/special").unwrap().route.function, "operator");
        assert_eq!(t.select("POST", "/inbox").unwrap().route.route_key(), "ANY /inbox");
        assert!(t.select("GET", "/v1/agents/").is_none(), "a greedy parameter needs a segment");
    }

    #[test]
    fn path_parameters_are_percent_decoded() {
        let m = table().select("GET", "/v1/messages/a%2Fb+c").unwrap().path_parameters;
        assert_eq!(m["id"], "a/b+c");
    }
}

#[cfg(test)]
mod template_coverage {
    use super::*;
    use crate::template::Template;

    /// Routes the local server alone serves (§8.7.2 stream: no Lambda function holds a socket).
    const LOCAL_ONLY: [&str; 1] = ["/v1/inbox/stream"];

    #[test]
    fn every_documented_route_but_the_local_only_ones_reaches_a_function_through_the_template() {
        let template = Template::parse(include_str!("../../../infra/template.yaml")).unwrap();
        let routes = Routes::new(template.routes);
        let doc: serde_json::Value = serde_json::from_str(include_str!("../../../docs/openapi.json")).unwrap();
        let mut missing = Vec::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            if LOCAL_ONLY.contains(&path.as_str()) {
                assert!(routes.select("GET", path).is_none(), "{path} is local-only but the template routes it");
                continue;
            }
            for method in ["get", "post", "put", "patch", "delete"].into_iter().filter(|m| item.get(*m).is_some()) {
                // a concrete path for the pattern: each `{param}` becomes a sample segment
                let concrete: String =
                    path.split('/').map(|s| if s.starts_with('{') { "x1" } else { s }).collect::<Vec<_>>().join("/");
                if routes.select(&method.to_uppercase(), &concrete).is_none() {
                    missing.push(format!("{} {path}", method.to_uppercase()));
                }
            }
        }
        assert!(missing.is_empty(), "documented routes infra/template.yaml does not route: {missing:?}");
    }
}
