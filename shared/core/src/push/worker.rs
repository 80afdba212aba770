//! Running push attempts so that deliveries are independent (issue 13 item 6, issue 36): a
//! receiver that stalls delays only its own account's pushes to it.
//!
//! - [`DeliverySlots`] caps the attempts in flight per (account, callback host)
//!   (`MA2H_PUSH_PER_ACCOUNT_HOST`), per callback host over every account (`MA2H_PUSH_PER_HOST`)
//!   and per account over every host (`MA2H_PUSH_PER_ACCOUNT`). So one account's tarpit takes
//!   neither the slots another account needs on the same host (a shared `127.0.0.1`, a shared
//!   SaaS host) nor, spread over many hosts, the worker's global slots.
//! - A push that finds any of its caps full is put back for a second (recorded, not counted as
//!   an attempt) instead of waiting while it holds a slot: on the local worker, and in the
//!   `deliver` Lambda, where waiting would hold up the rest of the SQS batch (the job goes back
//!   to the queue, invisible for that second).
//! - [`run_worker`] (the local Hub) keeps up to `MA2H_PUSH_MAX_IN_FLIGHT` attempts running and
//!   claims more the moment one ends — never "a batch, then wait for the whole batch". Each claim's
//!   size (its window) shrinks by half on each deferral and grows by one per attempt that ran: a backlog
//!   behind one busy receiver is then claimed about as fast as its slots free, instead of every
//!   queued push being read, signed and put back each second (a write each).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::Hub;
use crate::kernel::settings::PushSettings;
use crate::push::queue::{PushSender, WakeWorker};

/// Counting slots per key; idle keys are forgotten once there are many.
#[derive(Debug)]
struct Keyed {
    cap: usize,
    keys: Mutex<HashMap<String, Arc<Semaphore>>>,
}

impl Keyed {
    fn new(cap: usize) -> Self {
        Self { cap: cap.max(1), keys: Mutex::default() }
    }

    fn try_claim(&self, key: String) -> Option<OwnedSemaphorePermit> {
        let semaphore = {
            let mut keys = self.keys.lock().expect("delivery slots poisoned");
            if keys.len() > 1024 {
                // forget idle keys (no permit out)
                keys.retain(|_, s| s.available_permits() < self.cap);
            }
            keys.entry(key).or_insert_with(|| Arc::new(Semaphore::new(self.cap))).clone()
        };
        semaphore.try_acquire_owned().ok()
    }
}

/// Attempts in flight per (account, host), per host and per account.
#[derive(Debug)]
pub struct DeliverySlots {
    account_host: Keyed,
    host: Keyed,
    account: Keyed,
}

/// One attempt's claim on its three caps; released on drop.
#[derive(Debug)]
pub struct Slot {
    _permits: [OwnedSemaphorePermit; 3],
}

impl DeliverySlots {
    pub fn new(settings: &PushSettings) -> Self {
        Self {
            account_host: Keyed::new(settings.per_account_host),
            host: Keyed::new(settings.per_host),
            account: Keyed::new(settings.per_account),
        }
    }

    /// A slot for a push of `account` to `host`, or `None` when any of its caps is full.
    pub fn claim(&self, account: &str, host: &str) -> Option<Slot> {
        // `\n` cannot occur in an account id or a host name: the pair's key is unambiguous.
        let pair = self.account_host.try_claim(format!("{account}\n{host}"))?;
        let host = self.host.try_claim(host.to_owned())?;
        let account = self.account.try_claim(account.to_owned())?;
        Some(Slot { _permits: [pair, host, account] })
    }
}

/// Everything an attempt needs besides the Hub: the sender and the delivery slots.
pub struct Deliverer {
    pub(super) sender: Arc<dyn PushSender>,
    pub(super) slots: DeliverySlots,
}

impl Deliverer {
    /// A channel notifier sending through this deliverer's (§9.4-guarded) sender.
    pub fn notifier(&self) -> crate::channels::sender::Notifier {
        crate::channels::sender::Notifier::new(self.sender.clone())
    }

    pub fn new(hub: &Hub, sender: Arc<dyn PushSender>) -> Self {
        Self { sender, slots: DeliverySlots::new(&hub.settings.push) }
    }
}

/// The local delivery worker: keeps up to `max_in_flight` attempts running, refilling a slot as
/// each attempt ends; wakes on a terminal transition's enqueue, and on a short tick for retries
/// and for obligations left pending by a crash (§3.1).
pub async fn run_worker(hub: Hub, deliverer: Arc<Deliverer>, wake: Arc<WakeWorker>) {
    let max_in_flight = hub.settings.push.max_in_flight.max(1);
    let mut window = max_in_flight;
    let mut in_flight = tokio::task::JoinSet::new();
    loop {
        // The window bounds each claim, not what is in flight: a stalled attempt never holds it.
        let free = (max_in_flight - in_flight.len()).min(window);
        if free > 0 {
            match crate::push::deliver::claim_due(&hub, free).await {
                Ok(due) => {
                    for (account, id) in due {
                        let (hub, deliverer) = (hub.clone(), deliverer.clone());
                        in_flight.spawn(async move { deliverer.attempt_or_defer(&hub, &account, &id).await });
                    }
                }
                Err(e) => tracing::error!(error = %e, "claiming due pushes failed"),
            }
        }
        tokio::select! {
            Some(joined) = in_flight.join_next(), if !in_flight.is_empty() => match joined {
                Ok(Ok((_, deferred))) => window = next_window(window, deferred, max_in_flight),
                Ok(Err(e)) => tracing::error!(error = %e, "push attempt failed"),
                Err(e) => tracing::error!(error = %e, "push task panicked"),
            },
            () = wake.0.notified() => {}
            () = tokio::time::sleep(Duration::from_millis(200)) => window = next_window(window, false, max_in_flight),
        }
    }
}

/// The claim window after an attempt: halved on a deferral, one more after an attempt that ran
/// (or a quiet tick), within `1..=max`.
fn next_window(window: usize, deferred: bool, max: usize) -> usize {
    if deferred { (window / 2).max(1) } else { (window + 1).min(max) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots(per_account_host: usize, per_host: usize, per_account: usize) -> DeliverySlots {
        DeliverySlots::new(&PushSettings { per_account_host, per_host, per_account, ..PushSettings::default() })
    }

    #[test]
    fn the_claim_window_halves_on_a_deferral_and_grows_back_one_at_a_time() {
        assert_eq!(next_window(64, true, 64), 32);
        assert_eq!(next_window(1, true, 64), 1, "never below one");
        assert_eq!(next_window(32, false, 64), 33);
        assert_eq!(next_window(64, false, 64), 64, "never above the cap");
    }

    #[test]
    fn one_accounts_busy_receiver_leaves_another_account_the_same_host() {
        let s = slots(2, 8, 16);
        let a1 = s.claim("a", "127.0.0.1").unwrap();
        let _a2 = s.claim("a", "127.0.0.1").unwrap();
        assert!(s.claim("a", "127.0.0.1").is_none(), "account a is at its cap on that host");
        assert!(s.claim("b", "127.0.0.1").is_some(), "account b still gets the same host");
        assert!(s.claim("a", "other.example").is_some(), "and a gets another host");
        drop(a1);
        assert!(s.claim("a", "127.0.0.1").is_some(), "a released slot is claimable again");
    }

    #[test]
    fn a_host_and_an_account_each_have_a_ceiling_over_the_other_key() {
        let s = slots(2, 3, 4);
        let _held: Vec<Slot> = ["a", "b", "c"].iter().map(|acct| s.claim(acct, "tarpit").unwrap()).collect();
        assert!(s.claim("d", "tarpit").is_none(), "the host's cap over every account");
        let _more: Vec<Slot> = ["h1", "h2", "h3"].iter().map(|h| s.claim("a", h).unwrap()).collect();
        assert!(s.claim("a", "h4").is_none(), "the account's cap over every host (a holds 4)");
        assert!(s.claim("e", "h4").is_some(), "another account is untouched");
    }
}
