//! §8.6 published limits: a Hub advertising `rate_limit.requests_per_minute` answers a
//! submission over it with `429 rate_limited` and a `Retry-After` (§8.5), and refuses none
//! under it.
//!
//! Needs `--limited-agent-key`: a dedicated agent the runner drives past the limit with
//! `notify` messages (at most twice the limit, eight at a time), so no other check is throttled.

use chrono::DateTime;
use serde_json::{Value, json};
use tokio::task::JoinSet;

use super::{Ctx, ts};
use crate::client::Resp;
use crate::report::{Report, ensure};

const CHECKS: [(&str, &str); 2] = [
    ("8.6", "a submission over the advertised requests_per_minute is refused 429 `rate_limited` with Retry-After"),
    ("8.6", "no submission within the advertised requests_per_minute is refused"),
];

/// Concurrent submissions per round.
const WIDTH: u64 = 8;
/// Above this the flood would take too long to be part of a conformance run.
const MAX_LIMIT: u64 = 5_000;

pub async fn run(cx: &Ctx, r: &mut Report, capability: &Value) {
    let skip = |r: &mut Report, why: &str| CHECKS.iter().for_each(|(s, n)| r.skip(s, n, why));
    let Some(key) = cx.cfg.limited_agent_key.clone() else {
        return skip(r, "needs --limited-agent-key (an agent the runner may drive past the limit)");
    };
    let Some(limit) = capability["rate_limit"]["requests_per_minute"].as_u64().filter(|l| *l > 0) else {
        return skip(r, "the Hub advertises no rate_limit.requests_per_minute");
    };
    if limit > MAX_LIMIT {
        return skip(r, &format!("the advertised limit {limit} is above the {MAX_LIMIT} this runner will exceed"));
    }

    // Rounds of WIDTH concurrent submissions until one is refused; a minute boundary resets a
    // fixed window once, so 2 × limit attempts always cross it.
    let (mut accepted, mut sent, mut refused, mut other) = (0u64, 0u64, None::<Resp>, None::<Resp>);
    while refused.is_none() && other.is_none() && sent < 2 * limit + WIDTH {
        let mut round = JoinSet::new();
        for _ in 0..WIDTH {
            let (hub, key, body) = (cx.hub.clone(), key.clone(), notify(cx));
            round.spawn(async move { hub.submit(&key, &body).await });
        }
        sent += WIDTH;
        while let Some(Ok(resp)) = round.join_next().await {
            match resp.status {
                202 => accepted += 1,
                429 => refused = refused.or(Some(resp)),
                _ => other = other.or(Some(resp)),
            }
        }
    }

    let refusal = match (&other, &refused) {
        (Some(o), _) => Err(format!("a submission answered {}", o.show())),
        (None, None) => Err(format!("{accepted} of {sent} submissions accepted, none refused")),
        (None, Some(resp)) => check_refusal(resp),
    };
    r.result("8.6", CHECKS[0].1, refusal);
    let within = ensure(other.is_none(), || "a submission failed otherwise (above)".into()).and_then(|()| {
        ensure(accepted >= limit, || format!("refused after {accepted} accepted, under the advertised {limit}"))
    });
    r.result("8.6", CHECKS[1].1, within);
}

/// `429`, code `rate_limited`, and a `Retry-After` in delay-seconds (≥ 1) or HTTP-date form.
fn check_refusal(resp: &Resp) -> Result<(), String> {
    resp.expect(429, Some("rate_limited"))?;
    let after = resp.retry_after.as_deref().ok_or("no Retry-After header")?;
    let valid = after.parse::<u64>().is_ok_and(|s| s >= 1) || DateTime::parse_from_rfc2822(after).is_ok();
    ensure(valid, || format!("Retry-After `{after}` is neither delay-seconds ≥ 1 nor an HTTP-date"))
}

fn notify(cx: &Ctx) -> Value {
    json!({ "ma2h_version": "0.5", "type": "notify", "created_at": ts(chrono::Utc::now()),
        "agent": cx.agent(&cx.cfg.limited_agent_id), "title": "conformance: rate limit" })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resp(status: u16, code: &str, retry_after: Option<&str>) -> Resp {
        let body = json!({ "error": { "code": code, "message": "slow down" } });
        Resp { status, body, date: None, retry_after: retry_after.map(str::to_owned), location: None }
    }

    #[test]
    fn a_refusal_needs_429_rate_limited_and_a_usable_retry_after() {
        assert!(check_refusal(&resp(429, "rate_limited", Some("17"))).is_ok());
        assert!(check_refusal(&resp(429, "rate_limited", Some("Thu, 03 Dec 2026 05:00:00 GMT"))).is_ok());
        assert!(check_refusal(&resp(429, "rate_limited", None)).unwrap_err().contains("no Retry-After"));
        assert!(check_refusal(&resp(429, "rate_limited", Some("0"))).is_err());
        assert!(check_refusal(&resp(429, "rate_limited", Some("soon"))).is_err());
        assert!(check_refusal(&resp(429, "too_many", Some("5"))).is_err());
        assert!(check_refusal(&resp(503, "rate_limited", Some("5"))).is_err());
    }
}
