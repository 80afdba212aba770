//! Settings and adapters for the Lambda functions.

use std::sync::Arc;
use std::time::Duration;

use ma2h_core::Hub;
use ma2h_core::kernel::changes::PollingChanges;
use ma2h_core::kernel::keys::{HubKeys, KeyError};
use ma2h_core::kernel::secrets::MasterKey;
use ma2h_core::kernel::settings::{Env, Settings, SettingsError};
use ma2h_queue_sqs::SqsPushQueue;
use ma2h_store_dynamodb::DynamoStore;

use crate::Error;

/// A deployment that cannot start: what is missing or wrong in its configuration.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("{0} is required on AWS")]
    Missing(&'static str),
    #[error("{var} {reason}")]
    Invalid { var: &'static str, reason: String },
    #[error(transparent)]
    Keys(#[from] KeyError),
    #[error(transparent)]
    Settings(#[from] SettingsError),
}

/// The AWS-only settings, from `MA2H_*` variables (the SAM template sets them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AwsSettings {
    /// DynamoDB table (`MA2H_TABLE`, default `ma2h`).
    pub table: String,
    /// SQS delivery queue URL (`MA2H_PUSH_QUEUE_URL`).
    pub push_queue_url: String,
    /// How often a Lambda long-poll re-reads the store (`MA2H_LONG_POLL_INTERVAL_MS`, default 500).
    pub long_poll_interval: Duration,
    /// Partitions per sweeper index family (`MA2H_DYNAMODB_SHARDS`, default 128, at most 1024;
    /// raise only — see `ma2h_store_dynamodb::shards`).
    pub shards: u16,
    /// Partitions of an account's listing (`MA2H_DYNAMODB_LIST_SHARDS`, default 128, at most
    /// 1024; raise only). Every listing page reads each of them.
    pub list_shards: u16,
}

impl AwsSettings {
    /// The store's shard counts (sweeper families and listing).
    pub fn store_shards(&self) -> ma2h_store_dynamodb::Shards {
        ma2h_store_dynamodb::Shards::new(self.shards).with_list(self.list_shards)
    }

    /// For the admin commands, which never enqueue: the queue URL may be absent.
    pub fn for_admin(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        Self::read(get, false)
    }

    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        Self::read(get, true)
    }

    /// Every variable named once; every bad one reported together.
    fn read(get: impl Fn(&str) -> Option<String>, queue_required: bool) -> Result<Self, ConfigError> {
        let mut e = Env::new(get);
        let mut s = Self {
            table: e.raw("MA2H_TABLE").unwrap_or_else(|| "ma2h".into()),
            push_queue_url: String::new(),
            long_poll_interval: Duration::from_millis(500),
            shards: ma2h_store_dynamodb::shards::DEFAULT_SHARDS,
            list_shards: ma2h_store_dynamodb::shards::DEFAULT_LIST_SHARDS,
        };
        e.duration("MA2H_LONG_POLL_INTERVAL_MS", &mut s.long_poll_interval);
        e.int("MA2H_DYNAMODB_SHARDS", &mut s.shards);
        if !(1..=ma2h_store_dynamodb::shards::MAX_SHARDS).contains(&s.shards) {
            e.refuse(&format!("MA2H_DYNAMODB_SHARDS must be 1–{}", ma2h_store_dynamodb::shards::MAX_SHARDS));
        }
        e.int("MA2H_DYNAMODB_LIST_SHARDS", &mut s.list_shards);
        if !(1..=ma2h_store_dynamodb::shards::MAX_SHARDS).contains(&s.list_shards) {
            e.refuse(&format!("MA2H_DYNAMODB_LIST_SHARDS must be 1–{}", ma2h_store_dynamodb::shards::MAX_SHARDS));
        }
        if e.raw("MA2H_PURGE_GRACE_HOURS").is_some() {
            // Issue 38: DynamoDB's TTL is the only purge; the sweeper's backstop delete is gone.
            tracing::warn!("MA2H_PURGE_GRACE_HOURS is no longer used: DynamoDB's TTL deletes what retention ends");
        }
        if s.long_poll_interval.is_zero() {
            e.refuse("MA2H_LONG_POLL_INTERVAL_MS must be at least 1");
        }
        match e.raw("MA2H_PUSH_QUEUE_URL") {
            Some(url) => s.push_queue_url = url,
            None if queue_required => e.refuse("MA2H_PUSH_QUEUE_URL is required on AWS"),
            None => {}
        }
        e.finish()?;
        Ok(s)
    }
}

/// Everything a function needs, built once per cold start.
#[derive(Clone)]
pub struct Deployment {
    pub hub: Hub,
    pub store: DynamoStore,
    pub queue: SqsPushQueue,
}

/// Log JSON lines to stdout (CloudWatch); `MA2H_LOG` filters. With `MA2H_OTLP_ENDPOINT` set
/// (issue 43), spans are exported too (flushed after each invocation: [`crate::emf::run_http`],
/// the deliver and sweep handlers); a bad endpoint is logged and export stays off.
pub fn init_tracing() {
    use ma2h_core::kernel::settings::TelemetrySettings;
    let (telemetry, bad_setting) = match TelemetrySettings::from_env() {
        Ok(t) => (t, None),
        Err(e) => (TelemetrySettings::default(), Some(e.to_string())),
    };
    let problem = ma2h_telemetry::init(ma2h_telemetry::LogFormat::Lambda, &telemetry).err().map(|e| e.to_string());
    if let Some(why) = bad_setting.or(problem) {
        tracing::error!(error = %why, "trace export is off");
    }
}

fn env(k: &str) -> Option<String> {
    std::env::var(k).ok().map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

/// Build from the process environment. `AWS_ENDPOINT_URL` (moto, LocalStack) is honoured by the
/// SDK's standard configuration.
pub async fn build() -> Result<Deployment, Error> {
    build_with(AwsSettings::from_vars(env)?, true).await
}

/// Build for the admin commands run against DynamoDB (`ma2h-admin-aws`).
pub async fn build_admin() -> Result<Deployment, Error> {
    // Never publish-only: admin commands seal secrets with the real master key.
    build_with(AwsSettings::for_admin(env)?, false).await
}

/// The SDK's configuration loader with the project's one TLS stack: an HTTPS client on rustls
/// with `ring` (the SDK's default client would link aws-lc-rs as a second crypto library). Every
/// SDK configuration in the project starts here; the caller may add a region, then `load()`.
pub fn sdk_loader() -> aws_config::ConfigLoader {
    use aws_smithy_http_client::tls::{Provider, rustls_provider::CryptoMode};
    let https = aws_smithy_http_client::Builder::new().tls_provider(Provider::Rustls(CryptoMode::Ring)).build_https();
    aws_config::defaults(aws_config::BehaviorVersion::latest()).http_client(https)
}

async fn build_with(aws: AwsSettings, publish_only_allowed: bool) -> Result<Deployment, Error> {
    use crate::hub_secret::{PUBLIC_VAR, VAR, load, load_public};
    let config = sdk_loader().load().await;
    let settings = Settings::from_env()?;
    let store = DynamoStore::new(aws_sdk_dynamodb::Client::new(&config), &aws.table).with_shards(aws.store_shards());
    let queue = SqsPushQueue::new(aws_sdk_sqs::Client::new(&config), &aws.push_queue_url);
    match (env(VAR), env(PUBLIC_VAR)) {
        // The discovery function: given only the public keys, it can publish them and sign
        // nothing. It seals nothing either: its master key is a fresh random one, never stored.
        (None, Some(public)) if publish_only_allowed && settings.ed25519_seed.is_none() => {
            let keys = load_public(&config, &public).await?;
            let master = MasterKey::generate(&ma2h_core::ports::OsRandom);
            Ok(assemble_keys(settings, &aws, store, queue, master, keys))
        }
        (secret, _) => Ok(assemble(load(settings, &config, secret).await?, &aws, store, queue)?),
    }
}

/// Put the Hub together over already-built clients (tests pass moto-backed ones).
pub fn assemble(
    settings: Settings,
    aws: &AwsSettings,
    store: DynamoStore,
    queue: SqsPushQueue,
) -> Result<Deployment, ConfigError> {
    // Lambda has no data directory: both keys come from configuration (the Secrets Manager
    // secret named by MA2H_HUB_SECRET, or the environment).
    let master = settings.master_key.as_ref().ok_or(ConfigError::Missing("MA2H_MASTER_KEY"))?;
    let master_key = MasterKey::from_base64(&master.0)
        .map_err(|e| ConfigError::Invalid { var: "MA2H_MASTER_KEY", reason: e.to_string() })?;
    let seed_text = settings.ed25519_seed.as_ref().ok_or(ConfigError::Missing("MA2H_ED25519_SEED"))?;
    let keys = HubKeys::from_config(&seed_text.0, &settings.ed25519_previous)?;
    Ok(assemble_keys(settings, aws, store, queue, master_key, keys))
}

fn assemble_keys(
    settings: Settings,
    aws: &AwsSettings,
    store: DynamoStore,
    queue: SqsPushQueue,
    master_key: MasterKey,
    keys: HubKeys,
) -> Deployment {
    // Writers may be other Lambda instances: a long-poll re-reads the store on an interval.
    let changes = Arc::new(PollingChanges { interval: aws.long_poll_interval });
    let hub = Hub::new(Arc::new(store.clone()), settings, master_key, keys, changes, Arc::new(queue.clone()));
    Deployment { hub, store, queue }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| (*v).to_owned())
    }

    #[test]
    fn a_function_needs_the_queue_and_the_admin_commands_do_not() {
        let e = AwsSettings::from_vars(vars(&[])).unwrap_err().to_string();
        assert!(e.contains("MA2H_PUSH_QUEUE_URL"), "{e}");
        let admin = AwsSettings::for_admin(vars(&[("MA2H_TABLE", "t")])).unwrap();
        assert_eq!((admin.table.as_str(), admin.push_queue_url.as_str()), ("t", ""));
        let f =
            AwsSettings::from_vars(vars(&[("MA2H_PUSH_QUEUE_URL", "http://q"), ("MA2H_DYNAMODB_LIST_SHARDS", "8")]))
                .unwrap();
        assert_eq!((f.long_poll_interval, f.list_shards, f.shards), (Duration::from_millis(500), 8, 128));
    }

    #[test]
    fn every_bad_aws_variable_is_named_at_once() {
        let e =
            AwsSettings::from_vars(vars(&[("MA2H_LONG_POLL_INTERVAL_MS", "0"), ("MA2H_DYNAMODB_LIST_SHARDS", "0")]))
                .unwrap_err()
                .to_string();
        for name in ["MA2H_LONG_POLL_INTERVAL_MS", "MA2H_DYNAMODB_LIST_SHARDS", "MA2H_PUSH_QUEUE_URL"] {
            assert!(e.contains(name), "{name} missing from {e}");
        }
    }
}
