//! The audit ledger (issue 42, docs/design/audit.md): on by default. Its entries are kept for
//! good (no purge yet): message retention never removes them.

use super::Env;

/// How the ledger is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditSettings {
    /// Record security-relevant events (`MA2H_AUDIT`, default on). Off, nothing is recorded —
    /// the DynamoDB writes that would carry an entry stay single writes — and exports hold only
    /// what was recorded before.
    pub enabled: bool,
    /// How often the sweeper seals an account's settled entries with a signed checkpoint
    /// (`MA2H_AUDIT_SEAL_MINUTES`, default 5, 1–1440).
    pub seal_minutes: u32,
}

impl Default for AuditSettings {
    fn default() -> Self {
        Self { enabled: true, seal_minutes: 5 }
    }
}

impl AuditSettings {
    pub(super) fn read(&mut self, e: &mut Env<'_>) {
        e.bool("MA2H_AUDIT", &mut self.enabled);
        e.int("MA2H_AUDIT_SEAL_MINUTES", &mut self.seal_minutes);
        if !(1..=1440).contains(&self.seal_minutes) {
            e.refuse("MA2H_AUDIT_SEAL_MINUTES must be 1–1440");
        }
    }
}
