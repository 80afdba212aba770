//! Trace context for the `request` span (issue 43), used only when the Hub exports traces
//! (`MA2H_OTLP_ENDPOINT`): the caller's W3C `traceparent` makes the request a child of the
//! caller's trace; without one, the trace id is derived from the request id — the first 16 bytes
//! of its SHA-256 — so the `request_id` in a log line, an `x-request-id` answer or an agent's own
//! record names its trace too (`trace_id_of`). Nothing here is trusted for anything but tracing.

use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt as _, TraceFlags, TraceId, TraceState};
use sha2::{Digest as _, Sha256};

/// The OpenTelemetry context a request's span starts in.
pub(crate) fn parent(traceparent: Option<&str>, request_id: &str) -> opentelemetry::Context {
    let remote = traceparent.and_then(parse_traceparent).unwrap_or_else(|| derived(request_id));
    opentelemetry::Context::new().with_remote_span_context(remote)
}

/// The trace id (32 lowercase hex digits) a request without `traceparent` is traced under.
pub fn trace_id_of(request_id: &str) -> String {
    derived(request_id).trace_id().to_string()
}

fn derived(request_id: &str) -> SpanContext {
    let digest = Sha256::digest(request_id.as_bytes());
    let mut trace = [0u8; 16];
    trace.copy_from_slice(&digest[..16]);
    let mut span = [0u8; 8];
    span.copy_from_slice(&digest[16..24]);
    SpanContext::new(
        TraceId::from_bytes(trace),
        SpanId::from_bytes(span),
        TraceFlags::SAMPLED,
        true,
        TraceState::default(),
    )
}

/// `00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>` (W3C Trace Context, version 00; a
/// later version is read by the same first four fields). All-zero ids are invalid.
fn parse_traceparent(value: &str) -> Option<SpanContext> {
    let mut parts = value.trim().split('-');
    let (version, trace, span, flags) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if !hex(version, 2) || version == "ff" || (version == "00" && parts.next().is_some()) {
        return None;
    }
    if !hex(trace, 32) || !hex(span, 16) || !hex(flags, 2) {
        return None;
    }
    let trace = TraceId::from_hex(trace).ok().filter(|t| *t != TraceId::INVALID)?;
    let span = SpanId::from_hex(span).ok().filter(|s| *s != SpanId::INVALID)?;
    let flags = TraceFlags::new(u8::from_str_radix(flags, 16).ok()? & 1);
    Some(SpanContext::new(trace, span, flags, true, TraceState::default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_w3c_traceparent_is_the_parent() {
        // the W3C Trace Context specification's example header
        let cx = parent(Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"), "req_1");
        let span = cx.span();
        let sc = span.span_context();
        assert_eq!(sc.trace_id().to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(sc.span_id().to_string(), "00f067aa0ba902b7");
        assert!(sc.is_sampled() && sc.is_remote());
    }

    #[test]
    fn without_a_valid_traceparent_the_trace_id_comes_from_the_request_id() {
        let expected = trace_id_of("req_01J0ABC");
        assert_eq!(expected.len(), 32);
        assert_ne!(expected, trace_id_of("req_01J0ABD"), "one trace per request id");
        for bad in [
            None,
            Some("00-00000000000000000000000000000000-00f067aa0ba902b7-01"),
            Some("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"),
            Some("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"),
            Some("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
            Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra"),
            Some("garbage"),
        ] {
            let cx = parent(bad, "req_01J0ABC");
            assert_eq!(cx.span().span_context().trace_id().to_string(), expected, "{bad:?}");
        }
    }
}
