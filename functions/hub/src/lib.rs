//! The local Hub: the shared Router and use cases on an embedded SQLite store. `main.rs` only
//! parses the command line and calls into here; integration tests call the same functions.

pub mod admin;
pub mod app;
pub mod bootstrap;
pub mod metrics;
pub mod server;
