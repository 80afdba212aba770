//! The shared kernel every feature stands on: the [`hub::Hub`] value (ports plus settings),
//! authentication, credentials, the clock, errors, sealed secrets, signing keys, change
//! notification, metrics and telemetry.

pub mod auth;
pub mod changes;
pub mod clock;
pub mod credential_cache;
pub mod credentials;
pub mod display;
pub mod error;
pub mod hub;
pub mod keys;
pub mod metrics;
pub mod rate;
pub mod secrets;
pub mod settings;
