//! Agent sessions (§16): the lease-bound addressing scope, its store port, and the operator's
//! durable stop (§16.4.1).

pub mod lease;
pub mod model;
pub mod store;
