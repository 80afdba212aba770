//! The one tracing initialiser, for the local binary and every Lambda function. `MA2H_LOG`
//! filters (default `info`). What is logged follows §9.6: ids, statuses, actors — never `state`,
//! bodies, answers, comments, keys or secrets (the call sites' concern; nothing here adds fields).

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

/// Install the global subscriber once; a second call is a no-op.
pub fn init(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("MA2H_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = match format {
        LogFormat::Lambda => tracing_subscriber::fmt().json().with_env_filter(filter).without_time().try_init(),
        LogFormat::Text | LogFormat::Json => {
            // colour only for a person at a terminal, never into a log file or pipe
            let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr())
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
            let builder =
                tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi);
            if format == LogFormat::Json { builder.json().try_init() } else { builder.try_init() }
        }
    };
}
