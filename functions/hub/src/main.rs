//! `ma2h-hub`: serve the Hub (default) or run an admin command against its store.

use anyhow::Result;
use clap::{Parser, Subcommand};
use ma2h_core::kernel::settings::Settings;
use ma2h_hub::{admin, app};

// Many small short-lived allocations per request (JSON values, ids): mimalloc serves them from
// thread-local pages where glibc malloc took ~10% of a submit's CPU (docs/BENCHMARKS.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "ma2h-hub", version, about = "MA2H Hub: local server and admin commands")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the Hub (the default).
    Serve,
    /// Manage credentials.
    #[command(subcommand)]
    Admin(Box<ma2h_admin::AdminCommand>),
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let mut settings = Settings::from_env()?;
    settings.local_dev_egress(std::env::var_os("MA2H_DEV_EGRESS_ALLOW").is_some());
    // §8.7.2: this process holds connections open, so it serves (and advertises) the stream.
    settings.inter_agent.stream_served = true;
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(settings.server.request_threads(cores))
        .enable_all()
        .build()?;
    runtime.block_on(async {
        match cli.command.unwrap_or(Command::Serve) {
            Command::Serve => {
                app::init_tracing(&settings, true)?;
                let result = app::run(settings).await;
                ma2h_telemetry::shutdown(); // the last spans out before the process ends
                result
            }
            Command::Admin(cmd) => {
                app::init_tracing(&settings, false)?;
                admin::run(settings, *cmd).await
            }
        }
    })
}
