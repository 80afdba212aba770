//! # ma2h-telemetry
//!
//! The one tracing initialiser, for the local binary and every Lambda function.
//!
//! * **Logs.** `MA2H_LOG` filters (default `info`). What is logged follows §9.6: ids, statuses,
//!   actors — never `state`, bodies, answers, comments, keys or secrets (the call sites' concern;
//!   nothing here adds fields).
//! * **Traces (issue 43).** With `MA2H_OTLP_ENDPOINT` set, spans are exported over OTLP/HTTP
//!   (protobuf, `{endpoint}/v1/traces`) by a batching thread: the `request` span of every HTTP
//!   request (its trace id from a W3C `traceparent`, else derived from the request id — see
//!   `ma2h_http::trace`), store calls (`store` spans of the SQLite adapter; the AWS SDK's own
//!   `DynamoDB.*` / `SQS.*` operation spans), push attempts (`push.attempt`) and channel sends
//!   (`channel.send`), with the Hub's log events inside them as span events. The store, push and
//!   channel spans are `debug` level: without an endpoint they are never built, so the request
//!   path pays nothing. On Lambda, [`flush`] after each invocation exports before the sandbox is
//!   frozen (the ADOT layer's collector listens on `http://localhost:4318`).

use std::sync::OnceLock;

use ma2h_core::kernel::settings::TelemetrySettings;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::{Level, Metadata};
use tracing_subscriber::filter::{EnvFilter, filter_fn};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{Layer, Registry, fmt};

/// Where and how log lines go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines on stderr; ANSI colour only when stderr is a terminal (and `NO_COLOR`
    /// is unset, no-color.org).
    Text,
    /// JSON lines on stderr (`MA2H_LOG_JSON=1` on the local binary).
    Json,
    /// JSON lines on stdout without timestamps: CloudWatch stamps each line itself.
    Lambda,
}

/// Why trace export could not start.
#[derive(Debug, thiserror::Error)]
#[error("OpenTelemetry export: {0}")]
pub struct TelemetryError(String);

static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();

/// Install the global subscriber once (a second call is a no-op): log lines, plus the OTLP
/// exporter when `settings` names an endpoint. An exporter that cannot be built is an `Err`
/// after the log lines are installed without it.
pub fn init(format: LogFormat, settings: &TelemetrySettings) -> Result<(), TelemetryError> {
    let filter = EnvFilter::try_from_env("MA2H_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let logs: Box<dyn Layer<Registry> + Send + Sync> = match format {
        LogFormat::Lambda => fmt::layer().json().without_time().boxed(),
        LogFormat::Text | LogFormat::Json => {
            // colour only for a person at a terminal, never into a log file or pipe
            let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr())
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
            let layer = fmt::layer().with_writer(std::io::stderr).with_ansi(ansi);
            if format == LogFormat::Json { layer.json().boxed() } else { layer.boxed() }
        }
    };
    let (traces, problem) = match &settings.otlp_endpoint {
        Some(endpoint) if PROVIDER.get().is_none() => match provider(endpoint, &settings.service_name) {
            Ok(provider) => {
                let tracer = provider.tracer("ma2h-hub");
                let _ = PROVIDER.set(provider);
                (Some(tracing_opentelemetry::layer().with_tracer(tracer).with_filter(filter_fn(exported))), None)
            }
            Err(e) => (None, Some(e)),
        },
        _ => (None, None),
    };
    // the log lines are installed even when the exporter could not be built
    let _ = tracing_subscriber::registry().with(logs.with_filter(filter)).with(traces).try_init();
    problem.map_or(Ok(()), Err)
}

fn provider(endpoint: &str, service_name: &str) -> Result<SdkTracerProvider, TelemetryError> {
    // The workspace's one TLS stack: rustls on ring, installed before reqwest builds a client
    // (an https collector); a provider already installed stays.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(format!("{endpoint}/v1/traces"))
        .build()
        .map_err(|e| TelemetryError(e.to_string()))?;
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(Resource::builder().with_service_name(service_name.to_owned()).build())
        .build())
}

/// What the trace layer sees, whatever `MA2H_LOG` says: the Hub's spans down to `debug` (store,
/// push and channel spans are `debug`), the AWS SDK's per-operation spans (`debug`, one per
/// call — not the SDK's inner retry and serialization spans), and the Hub's `info`+ events.
fn exported(meta: &Metadata<'_>) -> bool {
    let target = meta.target();
    let ours = target.starts_with("ma2h");
    if meta.is_span() {
        *meta.level() <= Level::DEBUG && (ours || (target.starts_with("aws_sdk_") && target.contains("::operation::")))
    } else {
        ours && *meta.level() <= Level::INFO
    }
}

/// Whether spans are being exported (the Router derives trace context only then).
pub fn exporting() -> bool {
    PROVIDER.get().is_some()
}

/// Export every finished span now (Lambda: after each invocation, before the freeze). Waits on
/// the blocking pool, never on the caller's worker thread.
pub async fn flush() {
    if let Some(provider) = PROVIDER.get().cloned() {
        let result = tokio::task::spawn_blocking(move || provider.force_flush()).await;
        if let Ok(Err(e)) = result {
            tracing::warn!(error = %e, "trace export flush failed");
        }
    }
}

/// Flush and stop the exporter (the local binary, on its way out).
pub fn shutdown() {
    if let Some(provider) = PROVIDER.get() {
        let _ = provider.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing::callsite::Identifier;
    use tracing::field::FieldSet;
    use tracing::metadata::Kind;

    struct Callsite;
    impl tracing::callsite::Callsite for Callsite {
        fn set_interest(&self, _: tracing::subscriber::Interest) {}
        fn metadata(&self) -> &Metadata<'_> {
            unreachable!()
        }
    }
    static CS: Callsite = Callsite;

    fn meta(target: &'static str, level: Level, kind: Kind) -> Metadata<'static> {
        Metadata::new("x", target, level, None, None, None, FieldSet::new(&[], Identifier(&CS)), kind)
    }

    #[test]
    fn the_trace_layer_takes_our_spans_and_the_sdks_operation_spans_only() {
        assert!(exported(&meta("ma2h_store_sqlite", Level::DEBUG, Kind::SPAN)));
        assert!(exported(&meta("ma2h_http", Level::INFO, Kind::SPAN)));
        assert!(!exported(&meta("ma2h_http", Level::TRACE, Kind::SPAN)));
        assert!(exported(&meta("aws_sdk_dynamodb::operation::put_item", Level::DEBUG, Kind::SPAN)));
        assert!(!exported(&meta("aws_smithy_runtime::client::orchestrator", Level::DEBUG, Kind::SPAN)));
        assert!(!exported(&meta("hyper_util::client", Level::INFO, Kind::SPAN)));
        // events: ours from info up, never debug chatter or other crates'
        assert!(exported(&meta("ma2h_core::push", Level::WARN, Kind::EVENT)));
        assert!(!exported(&meta("ma2h_core::push", Level::DEBUG, Kind::EVENT)));
        assert!(!exported(&meta("aws_sdk_dynamodb::operation::put_item", Level::INFO, Kind::EVENT)));
    }
}
