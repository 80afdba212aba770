//! The in-process [`ChangeFeed`]: long-polls in the local server are woken the moment a
//! transition commits, not by fixed-interval sleeping.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use ma2h_protocol::ids::{AccountId, MessageId};
use tokio::sync::watch;

use crate::mailbox::model::Mailbox;

/// How a long-poll learns that a message changed (§8.2 `?wait=`).
///
/// Subscribe BEFORE reading the store, then wait: a change committed between the read and the
/// wait still wakes the waiter (no lost wake-ups).
pub trait ChangeFeed: Send + Sync + 'static {
    fn subscribe(&self, id: &MessageId) -> Box<dyn Subscription>;
    /// Announce that `id` changed (after the store committed).
    fn publish(&self, id: &MessageId);
    /// Interest in a mailbox: woken when an entry is enqueued (§8.7 `?wait=`).
    fn subscribe_mailbox(&self, mailbox: &Mailbox) -> Box<dyn Subscription>;
    /// Announce an enqueue into `mailbox` (after the store committed).
    fn publish_mailbox(&self, mailbox: &Mailbox);
    /// Interest in anything an operator of `account` sees change: a message listed, resolved,
    /// expired, pushed (the live inbox, issue 39).
    fn subscribe_account(&self, account: &AccountId) -> Box<dyn Subscription>;
    /// Announce a change an operator of `account` sees (after the store committed).
    fn publish_account(&self, account: &AccountId);
    /// The server is shutting down: release every waiter now, and make later waits return at
    /// once, so parked long-polls answer with the current body instead of holding the exit.
    fn close(&self) {}
    /// Whether [`ChangeFeed::close`] was called.
    fn closing(&self) -> bool {
        false
    }
}

/// One pending interest in a message.
#[async_trait]
pub trait Subscription: Send {
    /// Resolve when the message is announced, or after at most `timeout`. Implementations that
    /// cannot be woken across processes (e.g. Lambda) return after a short poll interval instead;
    /// callers re-read the store either way.
    async fn wait(self: Box<Self>, timeout: Duration);
}

/// Wakes waiters in this process. Each watched id has one `watch` channel; publishing fires and
/// retires it. One more channel announces shutdown to every waiter at once.
#[derive(Debug)]
pub struct InProcessChanges {
    channels: Mutex<HashMap<String, watch::Sender<()>>>,
    closing: watch::Sender<bool>,
}

impl Default for InProcessChanges {
    fn default() -> Self {
        Self { channels: Mutex::default(), closing: watch::channel(false).0 }
    }
}

impl InProcessChanges {
    pub fn new() -> Self {
        Self::default()
    }
}

struct WatchSubscription {
    change: watch::Receiver<()>,
    closing: watch::Receiver<bool>,
}

#[async_trait]
impl Subscription for WatchSubscription {
    async fn wait(mut self: Box<Self>, timeout: Duration) {
        // Ok (announced) and Err (sender retired after announcing) both mean "re-read".
        let change = self.change.changed();
        let closing = self.closing.wait_for(|c| *c);
        let _ = tokio::time::timeout(timeout, async {
            tokio::select! {
                _ = change => {}
                _ = closing => {}
            }
        })
        .await;
    }
}

impl InProcessChanges {
    /// One channel per key: message ids (`msg_…`), mailbox keys (`mbx:…`) and accounts
    /// (`acct:…`) never meet.
    fn subscribe_key(&self, key: &str) -> Box<dyn Subscription> {
        let mut map = self.channels.lock().expect("change map poisoned");
        if map.len() > 1024 {
            // Drop channels whose waiters all timed out.
            map.retain(|_, tx| tx.receiver_count() > 0);
        }
        let tx = map.entry(key.to_owned()).or_insert_with(|| watch::channel(()).0);
        Box::new(WatchSubscription { change: tx.subscribe(), closing: self.closing.subscribe() })
    }

    fn publish_key(&self, key: &str) {
        let tx = self.channels.lock().expect("change map poisoned").remove(key);
        if let Some(tx) = tx {
            tx.send_replace(());
        }
    }
}

impl ChangeFeed for InProcessChanges {
    fn subscribe(&self, id: &MessageId) -> Box<dyn Subscription> {
        self.subscribe_key(id.as_str())
    }

    fn publish(&self, id: &MessageId) {
        self.publish_key(id.as_str());
    }

    fn subscribe_mailbox(&self, mailbox: &Mailbox) -> Box<dyn Subscription> {
        self.subscribe_key(&mailbox.key())
    }

    fn publish_mailbox(&self, mailbox: &Mailbox) {
        self.publish_key(&mailbox.key());
    }

    fn subscribe_account(&self, account: &AccountId) -> Box<dyn Subscription> {
        self.subscribe_key(&format!("acct:{account}"))
    }

    fn publish_account(&self, account: &AccountId) {
        self.publish_key(&format!("acct:{account}"));
    }

    fn close(&self) {
        self.closing.send_replace(true);
    }

    fn closing(&self) -> bool {
        *self.closing.borrow()
    }
}

/// A feed for deployments where the writer may be another process (Lambda): waiting is a
/// bounded sleep, so the caller re-polls the store at `interval`.
#[derive(Debug, Clone, Copy)]
pub struct PollingChanges {
    pub interval: Duration,
}

struct Sleep(Duration);

#[async_trait]
impl Subscription for Sleep {
    async fn wait(self: Box<Self>, timeout: Duration) {
        tokio::time::sleep(self.0.min(timeout)).await;
    }
}

impl ChangeFeed for PollingChanges {
    fn subscribe(&self, _id: &MessageId) -> Box<dyn Subscription> {
        Box::new(Sleep(self.interval))
    }
    fn publish(&self, _id: &MessageId) {}
    fn subscribe_mailbox(&self, _mailbox: &Mailbox) -> Box<dyn Subscription> {
        Box::new(Sleep(self.interval))
    }
    fn publish_mailbox(&self, _mailbox: &Mailbox) {}
    fn subscribe_account(&self, _account: &AccountId) -> Box<dyn Subscription> {
        Box::new(Sleep(self.interval))
    }
    fn publish_account(&self, _account: &AccountId) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Instant;

    #[tokio::test]
    async fn a_publish_wakes_a_waiter_before_its_timeout() {
        let feed = Arc::new(InProcessChanges::new());
        let id = MessageId::from_parts(1, 1);
        let sub = feed.subscribe(&id);
        let f2 = feed.clone();
        let id2 = id.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            f2.publish(&id2);
        });
        let start = Instant::now();
        sub.wait(Duration::from_secs(10)).await;
        assert!(start.elapsed() < Duration::from_secs(5));
    }

    #[tokio::test]
    async fn a_publish_between_subscribe_and_wait_is_not_lost() {
        let feed = InProcessChanges::new();
        let id = MessageId::from_parts(1, 1);
        let sub = feed.subscribe(&id);
        feed.publish(&id);
        let start = Instant::now();
        sub.wait(Duration::from_secs(10)).await;
        assert!(start.elapsed() < Duration::from_secs(5));
    }

    #[tokio::test]
    async fn closing_releases_parked_waiters_and_later_waits_return_at_once() {
        let feed = Arc::new(InProcessChanges::new());
        let id = MessageId::from_parts(1, 1);
        let sub = feed.subscribe(&id);
        let f2 = feed.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            f2.close();
        });
        let start = Instant::now();
        sub.wait(Duration::from_secs(30)).await;
        assert!(start.elapsed() < Duration::from_secs(5));
        assert!(feed.closing());
        let start = Instant::now();
        feed.subscribe(&id).wait(Duration::from_secs(30)).await;
        assert!(start.elapsed() < Duration::from_secs(5));
    }

    #[tokio::test]
    async fn an_account_change_wakes_its_watchers_and_no_other_account() {
        let feed = Arc::new(InProcessChanges::new());
        let (a, b) = (AccountId::parse("acme").unwrap(), AccountId::parse("other").unwrap());
        let sub = feed.subscribe_account(&a);
        feed.publish_account(&a);
        let start = Instant::now();
        sub.wait(Duration::from_secs(10)).await;
        assert!(start.elapsed() < Duration::from_secs(5));
        let other = feed.subscribe_account(&b);
        feed.publish_account(&a);
        let start = tokio::time::Instant::now();
        other.wait(Duration::from_millis(200)).await;
        assert!(start.elapsed() >= Duration::from_millis(200), "account b was woken by a's change");
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_publish_the_waiter_times_out() {
        let feed = InProcessChanges::new();
        let id = MessageId::from_parts(1, 1);
        let other = MessageId::from_parts(2, 2);
        let sub = feed.subscribe(&id);
        feed.publish(&other);
        let start = tokio::time::Instant::now();
        sub.wait(Duration::from_secs(3)).await;
        assert!(start.elapsed() >= Duration::from_secs(3));
    }
}
