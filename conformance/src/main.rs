//! `ma2h-conformance` — run every check against the configured Hub; exit 0 iff all pass.

use clap::Parser;
use ma2h_conformance::config::Config;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let config = Config::parse();
    let json = config.json;
    match ma2h_conformance::checks::run(config).await {
        Ok(report) => {
            if json {
                println!("{}", serde_json::to_string_pretty(&report.to_json()).unwrap_or_default());
                // keep stdout a single JSON document; the closing line goes to stderr
                eprintln!("{}", report.summary());
            } else {
                println!("{}", report.summary());
            }
            if report.failed() == 0 { std::process::ExitCode::SUCCESS } else { std::process::ExitCode::FAILURE }
        }
        Err(e) => {
            eprintln!("ma2h-conformance: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}
