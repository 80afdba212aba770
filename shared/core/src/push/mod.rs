//! Push delivery (§8.3, §9.4): a signed Response to the agent's callback, its durable track,
//! the queue that announces it and the worker that retries it.

pub mod deliver;
pub mod queue;
pub(crate) mod worker;
