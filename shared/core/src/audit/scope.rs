//! How an event's audit records reach the store write that commits the event (issue 42, §1 of
//! docs/design/audit.md: "written in the same store write as the event it records").
//!
//! A use case wraps the store call that commits an event in [`with`]; the store adapter, at the
//! write that commits it, reads [`current`]'s records into that very write (SQLite: the same
//! transaction, only when the write changed a row; DynamoDB: the same `TransactWriteItems`) and
//! calls [`Pending::written`] once it has committed. A write that does not commit (a lost
//! compare-and-set, an idempotent replay, an error) leaves the records unwritten, and they are
//! dropped with the scope: an event that did not happen has no entry; one that did has its entry.
//!
//! Why a task-local and not a parameter: the records ride with ~20 store calls across six ports;
//! a parameter on each would touch every caller and every test of those ports, for a value only
//! the adapter's commit point reads. The scope is as narrow as one store call.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use super::store::AuditRecord;

tokio::task_local! {
    static PENDING: Pending;
}

/// The records of the event whose store call is running.
#[derive(Debug, Clone, Default)]
pub struct Pending(Arc<Mutex<Vec<AuditRecord>>>);

impl Pending {
    /// The records not yet written (a copy: a write that may be retried or rolled back reads them
    /// again).
    pub fn records(&self) -> Vec<AuditRecord> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).is_empty()
    }

    /// The write carrying the records committed: no later write of the same call writes them again.
    pub fn written(&self) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clear();
    }
}

/// Run `f` (one store call) with `records` pending for the write that commits the event.
pub async fn with<F: Future>(records: Vec<AuditRecord>, f: F) -> F::Output {
    if records.is_empty() {
        return f.await;
    }
    PENDING.scope(Pending(Arc::new(Mutex::new(records))), f).await
}

/// The pending records of the running store call, if any (for adapters).
pub fn current() -> Option<Pending> {
    PENDING.try_with(|p| p.clone()).ok().filter(|p| !p.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: &str) -> AuditRecord {
        AuditRecord {
            id: id.into(),
            account: ma2h_protocol::ids::AccountId::parse("acct").expect("an account id"),
            shard: 0,
            at: ma2h_protocol::time::from_millis(0),
            kind: "login".into(),
            principal: "admin".into(),
            target: None,
            digest: None,
            detail: Default::default(),
        }
    }

    #[tokio::test]
    async fn records_are_visible_only_inside_the_scope_and_written_once() {
        assert!(current().is_none());
        with(vec![rec("aud_1")], async {
            let p = current().expect("pending inside the scope");
            assert_eq!(p.records().len(), 1);
            // a retried write reads them again
            assert_eq!(p.records().len(), 1);
            p.written();
            assert!(current().is_none(), "written records are not pending any more");
        })
        .await;
        assert!(current().is_none());
    }

    #[tokio::test]
    async fn an_empty_scope_pends_nothing() {
        with(Vec::new(), async { assert!(current().is_none()) }).await;
    }
}
