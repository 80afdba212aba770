//! Wiring for the local server: adapters chosen here (SQLite store, in-process change feed,
//! system clock, OS randomness), the Router served on a TCP listener, the background sweeper.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use base64::Engine;
use ma2h_core::Hub;
use ma2h_core::channels::notify;
use ma2h_core::kernel::changes::InProcessChanges;
use ma2h_core::kernel::keys::HubKeys;
use ma2h_core::kernel::secrets::MasterKey;
use ma2h_core::kernel::settings::{Mode, Settings};
use ma2h_core::messages::sweep;
use ma2h_core::ports::{OsRandom, PushSender, Random, WakeWorker};
use ma2h_core::push::deliver;
use ma2h_delivery_http::{EgressPolicy, HttpPushSender};
use ma2h_store_sqlite::SqliteStore;
use tokio::net::TcpListener;

/// Log lines, and (issue 43) trace export when `MA2H_OTLP_ENDPOINT` is set and `traces` (the
/// server; never a one-shot admin command).
pub fn init_tracing(settings: &Settings, traces: bool) -> Result<()> {
    use ma2h_telemetry::{LogFormat, init};
    let format = if settings.log_json { LogFormat::Json } else { LogFormat::Text };
    let telemetry = if traces { settings.telemetry.clone() } else { Default::default() };
    Ok(init(format, &telemetry)?)
}

/// The local Hub and the wake-up its delivery worker waits on.
pub struct Local {
    pub hub: Hub,
    pub wake: Arc<WakeWorker>,
}

/// Open the store under `settings.data_dir` and build the Hub over it.
pub fn build_hub(settings: Settings) -> Result<Hub> {
    Ok(build_local(settings)?.hub)
}

pub fn build_local(settings: Settings) -> Result<Local> {
    private_dir(&settings.data_dir)?;
    let db = settings.data_dir.join("hub.db");
    private_file(&db)?;
    let store = Arc::new(SqliteStore::open(&db).context("opening the SQLite store")?);
    let master_key = load_master_key(&settings)?;
    let keys = load_ed25519(&settings)?;
    let wake = Arc::new(WakeWorker::default());
    let hub = Hub::new(store, settings, master_key, keys, Arc::new(InProcessChanges::new()), wake.clone());
    Ok(Local { hub, wake })
}

/// `MA2H_ED25519_SEED`, else `<data_dir>/ed25519.seed`, generated (mode 0600) on first start;
/// `MA2H_ED25519_PREVIOUS` adds previous public keys for a rotation overlap.
fn load_ed25519(settings: &Settings) -> Result<HubKeys> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let seed_text = match &settings.ed25519_seed {
        Some(s) => s.0.clone(),
        None => {
            let path = settings.data_dir.join("ed25519.seed");
            if path.exists() {
                std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?
            } else {
                let mut seed = [0u8; 32];
                OsRandom.fill(&mut seed);
                let text = b64.encode(seed);
                write_private(&path, &text)?;
                text
            }
        }
    };
    HubKeys::from_config(&seed_text, &settings.ed25519_previous).context("loading the Hub's Ed25519 keys")
}

/// The push sender with the §9.4 egress policy for this mode.
pub fn push_sender(settings: &Settings) -> Result<Arc<dyn PushSender>> {
    let policy = EgressPolicy::from_settings(settings)?;
    Ok(Arc::new(HttpPushSender::new(policy)?))
}

/// `MA2H_MASTER_KEY`, else `<data_dir>/master.key`, generated (mode 0600) on first start.
fn load_master_key(settings: &Settings) -> Result<MasterKey> {
    if let Some(k) = &settings.master_key {
        return MasterKey::from_base64(&k.0).context("MA2H_MASTER_KEY");
    }
    let path = settings.data_dir.join("master.key");
    if path.exists() {
        let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        return MasterKey::from_base64(&text).with_context(|| format!("{} is not a master key", path.display()));
    }
    let key = MasterKey::generate(&OsRandom);
    write_private(&path, &key.to_base64())?;
    tracing::info!(path = %path.display(), "generated a new master key");
    Ok(key)
}

/// The data directory, created (and kept) readable by its owner only: it holds the messages,
/// the keys and the sealed secrets.
fn private_dir(dir: &Path) -> Result<()> {
    ma2h_private_fs::create_dir(dir).with_context(|| format!("creating data directory {}", dir.display()))
}

/// Create `path` empty with mode 0600 if missing, or narrow an existing file to 0600. SQLite
/// gives the `-wal` and `-shm` files the database file's mode; older ones are narrowed here.
fn private_file(path: &Path) -> Result<()> {
    ma2h_private_fs::touch_file(path).with_context(|| format!("opening {}", path.display()))?;
    for file in [path.with_extension("db-wal"), path.with_extension("db-shm")] {
        if file.exists() {
            ma2h_private_fs::restrict(&file, ma2h_private_fs::FILE_MODE)
                .with_context(|| format!("restricting {} to mode 0600", file.display()))?;
        }
    }
    Ok(())
}

/// Write a file only its owner can read.
pub fn write_private(path: &Path, contents: &str) -> Result<()> {
    ma2h_private_fs::write_file(path, contents.as_bytes()).with_context(|| format!("writing {}", path.display()))
}

/// Serve the Hub on `listener` until `shutdown` resolves, with the sweeper and the push worker
/// running beside it.
pub async fn serve(
    listener: TcpListener,
    local: Local,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<()> {
    let sender = push_sender(&local.hub.settings)?;
    let Local { hub, wake } = local;
    let hub = hub.with_outbound(sender.clone());
    let deliverer = Arc::new(deliver::Deliverer::new(&hub, sender.clone()));
    let sweeper = tokio::spawn(run_sweeper(hub.clone()));
    let worker = tokio::spawn(deliver::run_worker(hub.clone(), deliverer, wake));
    // Issue 20: channel notifications (Slack, webhooks), their reminders and escalations.
    let notifier =
        ma2h_core::channels::sender::Notifier::new(sender).with_mailer(Arc::new(ma2h_delivery_smtp::SmtpMailer));
    let notifier = tokio::spawn(notify::run_worker(hub.clone(), Arc::new(notifier)));
    let changes = hub.changes.clone();
    let limits = hub.settings.server;
    let metrics = crate::metrics::routes(hub.clone(), crate::metrics::install());
    let app = ma2h_http::router(hub).merge(metrics);
    let shutdown = async move {
        shutdown.await;
        changes.close();
    };
    crate::server::serve(listener, app, limits, shutdown).await?;
    sweeper.abort();
    worker.abort();
    notifier.abort();
    Ok(())
}

/// The background sweeper: expiries via the `expires_at` index, then retention purge.
pub async fn run_sweeper(hub: Hub) {
    let mut tick = tokio::time::interval(hub.settings.sweep_interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        match sweep::sweep_once(&hub).await {
            Ok(r) if r.expired + r.purged > 0 => tracing::info!(expired = r.expired, purged = r.purged, "sweep"),
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e, "sweep failed"),
        }
    }
}

/// `make run` / `ma2h-hub serve`.
pub async fn run(settings: Settings) -> Result<()> {
    let bind = settings.bind;
    let dev = settings.mode == Mode::Dev;
    // Bind first: a busy port fails before anything is written to the data dir.
    let listener = TcpListener::bind(bind).await.with_context(|| format!("binding {bind}"))?;
    let local = build_local(settings)?;
    let creds = if dev { Some(crate::bootstrap::dev_credentials(&local.hub).await?) } else { None };
    let addr = listener.local_addr()?;
    tracing::info!(%addr, mode = if dev { "dev" } else { "production" }, "ma2h hub listening");
    // One machine-readable line on stdout: scripts and tests started with port 0 read it.
    println!("ma2h hub listening on http://{addr}");
    if let Some(creds) = creds {
        print!("{}", crate::bootstrap::banner(&local.hub.settings.public_url, &creds));
    }
    serve(listener, local, shutdown_signal()).await
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        if let Ok(mut s) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            s.recv().await;
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
    tracing::info!("shutting down");
}
