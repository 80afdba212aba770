//! The audit ledger (issue 42, docs/design/audit.md): on by default, kept for its own retention —
//! message retention never removes an entry.

use super::Env;

/// How the ledger is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditSettings {
    /// Record security-relevant events (`MA2H_AUDIT`, default on). Off, nothing is recorded —
    /// the DynamoDB writes that would carry an entry stay single writes — and exports hold only
    /// what was recorded before.
    pub enabled: bool,
    /// How long sealed entries are kept (`MA2H_AUDIT_RETENTION_DAYS`, default 400, at least 1):
    /// once a day the sweeper prunes what the last checkpoint older than that covers, and that
    /// checkpoint becomes the ledger's anchor (exports from the beginning start at it).
    pub retention_days: u32,
    /// How often the sweeper seals an account's settled entries with a signed checkpoint
    /// (`MA2H_AUDIT_SEAL_MINUTES`, default 5, 1–1440).
    pub seal_minutes: u32,
}

impl Default for AuditSettings {
    fn default() -> Self {
        Self { enabled: true, retention_days: 400, seal_minutes: 5 }
    }
}

impl AuditSettings {
    pub(super) fn read(&mut self, e: &mut Env<'_>) {
        e.bool("MA2H_AUDIT", &mut self.enabled);
        e.int("MA2H_AUDIT_SEAL_MINUTES", &mut self.seal_minutes);
        e.int("MA2H_AUDIT_RETENTION_DAYS", &mut self.retention_days);
        if self.retention_days == 0 {
            e.refuse("MA2H_AUDIT_RETENTION_DAYS must be at least 1");
        }
        if !(1..=1440).contains(&self.seal_minutes) {
            e.refuse("MA2H_AUDIT_SEAL_MINUTES must be 1–1440");
        }
    }
}
