//! Running push attempts so that deliveries are independent (issue 13 item 6): a receiver that
//! stalls delays only its own pushes.
//!
//! - [`HostSlots`] caps the attempts in flight per callback host (`MA2H_PUSH_PER_HOST`).
//! - [`run_worker`] (the local Hub) keeps up to `MA2H_PUSH_MAX_IN_FLIGHT` attempts running and
//!   claims more the moment one ends — never "a batch, then wait for the whole batch". A push
//!   whose host is at its cap is put back for a second ([`WhenBusy::Defer`]) instead of holding
//!   a slot while it waits.
//! - The `deliver` Lambda runs its SQS batch concurrently and waits for a host slot
//!   ([`WhenBusy::Wait`]): its batch is small and another container serves the next one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::Hub;
use crate::ports::{PushSender, WakeWorker};

/// What an attempt does when its callback host already has its share of attempts in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenBusy {
    /// Put the push back for a moment (recorded, not counted as an attempt).
    Defer,
    /// Wait for a slot of that host.
    Wait,
}

/// Attempts in flight per callback host.
#[derive(Debug)]
pub struct HostSlots {
    per_host: usize,
    hosts: Mutex<HashMap<String, Arc<Semaphore>>>,
}

impl HostSlots {
    pub fn new(per_host: usize) -> Self {
        Self { per_host: per_host.max(1), hosts: Mutex::default() }
    }

    /// A slot for `host`, or `None` when it is at its cap and `when` is [`WhenBusy::Defer`].
    pub async fn claim(&self, host: &str, when: WhenBusy) -> Option<OwnedSemaphorePermit> {
        let semaphore = {
            let mut hosts = self.hosts.lock().expect("host slots poisoned");
            if hosts.len() > 1024 {
                // forget idle hosts (no permit out, nobody waiting)
                hosts.retain(|_, s| Arc::strong_count(s) > 1 || s.available_permits() < self.per_host);
            }
            hosts.entry(host.to_owned()).or_insert_with(|| Arc::new(Semaphore::new(self.per_host))).clone()
        };
        match when {
            WhenBusy::Defer => semaphore.try_acquire_owned().ok(),
            WhenBusy::Wait => semaphore.acquire_owned().await.ok(),
        }
    }
}

/// Everything an attempt needs besides the Hub: the sender and the per-host slots.
pub struct Deliverer {
    pub(super) sender: Arc<dyn PushSender>,
    pub(super) slots: HostSlots,
    pub(super) when_busy: WhenBusy,
}

impl Deliverer {
    /// A channel notifier sending through this deliverer's (§9.4-guarded) sender.
    pub fn notifier(&self) -> super::notify::Notifier {
        super::notify::Notifier::new(self.sender.clone())
    }

    pub fn new(hub: &Hub, sender: Arc<dyn PushSender>, when_busy: WhenBusy) -> Self {
        Self { sender, slots: HostSlots::new(hub.settings.push.per_host), when_busy }
    }
}

/// The local delivery worker: keeps up to `max_in_flight` attempts running, refilling a slot as
/// each attempt ends; wakes on a terminal transition's enqueue, and on a short tick for retries
/// and for obligations left pending by a crash (§3.1).
pub async fn run_worker(hub: Hub, deliverer: Arc<Deliverer>, wake: Arc<WakeWorker>) {
    let max_in_flight = hub.settings.push.max_in_flight.max(1);
    let mut in_flight = tokio::task::JoinSet::new();
    loop {
        let free = max_in_flight - in_flight.len();
        if free > 0 {
            match super::push::claim_due(&hub, free).await {
                Ok(due) => {
                    for (account, id) in due {
                        let (hub, deliverer) = (hub.clone(), deliverer.clone());
                        in_flight.spawn(async move { deliverer.attempt(&hub, &account, &id).await });
                    }
                }
                Err(e) => tracing::error!(error = %e, "claiming due pushes failed"),
            }
        }
        tokio::select! {
            Some(joined) = in_flight.join_next(), if !in_flight.is_empty() => match joined {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => tracing::error!(error = %e, "push attempt failed"),
                Err(e) => tracing::error!(error = %e, "push task panicked"),
            },
            () = wake.0.notified() => {}
            () = tokio::time::sleep(Duration::from_millis(200)) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_busy_host_defers_while_another_host_still_gets_a_slot() {
        let slots = HostSlots::new(2);
        let a1 = slots.claim("a.example", WhenBusy::Defer).await.unwrap();
        let _a2 = slots.claim("a.example", WhenBusy::Defer).await.unwrap();
        assert!(slots.claim("a.example", WhenBusy::Defer).await.is_none());
        assert!(slots.claim("b.example", WhenBusy::Defer).await.is_some());
        drop(a1);
        assert!(slots.claim("a.example", WhenBusy::Defer).await.is_some());
    }

    #[tokio::test]
    async fn a_waiting_claim_gets_the_slot_that_is_released() {
        let slots = Arc::new(HostSlots::new(1));
        let held = slots.claim("a.example", WhenBusy::Wait).await.unwrap();
        let s2 = slots.clone();
        let waiter = tokio::spawn(async move { s2.claim("a.example", WhenBusy::Wait).await.is_some() });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished());
        drop(held);
        assert!(waiter.await.unwrap());
    }
}
