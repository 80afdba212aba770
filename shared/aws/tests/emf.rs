//! Metrics on Lambda: what the use cases and the Router record reaches CloudWatch as Embedded
//! Metric Format lines in the `ma2h` namespace, with the function's name as a dimension.

use serde_json::Value;

#[test]
fn the_hubs_metrics_flush_as_embedded_metric_format_lines() {
    let collector = ma2h_aws::emf::collector().unwrap();
    ma2h_core::kernel::metrics::http("/v1/messages", "POST", 202, 0.004);
    ma2h_core::kernel::metrics::submitted("ask");
    ma2h_core::kernel::metrics::resolved("ask", "answered", Some(42.0));
    let mut out = Vec::new();
    collector.flush(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let docs: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).expect("one JSON document per line")).collect();
    assert!(!docs.is_empty(), "nothing flushed");
    let mut names = Vec::new();
    for d in &docs {
        let cw = &d["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(cw["Namespace"], ma2h_aws::emf::NAMESPACE, "{d}");
        assert!(d["_aws"]["Timestamp"].is_u64(), "{d}");
        for m in cw["Metrics"].as_array().unwrap() {
            names.push(m["Name"].as_str().unwrap().to_owned());
        }
        assert!(d.get("function").is_some(), "the function dimension: {d}");
    }
    for want in [
        ma2h_core::kernel::metrics::HTTP_REQUESTS,
        ma2h_core::kernel::metrics::HTTP_DURATION,
        ma2h_core::kernel::metrics::SUBMITTED,
        ma2h_core::kernel::metrics::RESOLVED,
        ma2h_core::kernel::metrics::TIME_TO_ANSWER,
    ] {
        assert!(names.iter().any(|n| n == want), "{want} missing from {text}");
    }
    assert!(text.contains("\"route\":\"/v1/messages\""), "labels become dimensions: {text}");
}
