//! The run's report: one line per spec obligation, then the `N passed, M failed` summary.

use serde_json::{Value, json};

/// The outcome of one obligation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    Fail(String),
    /// Not observable in this run; the reason says what would be needed.
    Skip(String),
}

/// One checked obligation.
#[derive(Debug, Clone)]
pub struct Check {
    /// Spec section, e.g. `8.1`.
    pub section: String,
    pub name: String,
    pub outcome: Outcome,
}

impl Check {
    /// The line printed for this check.
    pub fn line(&self) -> String {
        match &self.outcome {
            Outcome::Pass => format!("PASS §{} {}", self.section, self.name),
            Outcome::Fail(why) => format!("FAIL §{} {}: {why}", self.section, self.name),
            Outcome::Skip(why) => format!("SKIP §{} {}: {why}", self.section, self.name),
        }
    }
}

/// Every check of the run, in the order performed. Prints each line as it is recorded unless
/// the report is for `--json`.
#[derive(Debug, Default)]
pub struct Report {
    pub checks: Vec<Check>,
    pub quiet: bool,
}

impl Report {
    pub fn new(quiet: bool) -> Self {
        Self { checks: Vec::new(), quiet }
    }

    /// Record `outcome` for `(section, name)`.
    pub fn record(&mut self, section: &str, name: &str, outcome: Outcome) {
        let check = Check { section: section.to_owned(), name: name.to_owned(), outcome };
        if !self.quiet {
            println!("{}", check.line());
        }
        self.checks.push(check);
    }

    /// Record a pass, or a failure with the first error.
    pub fn result(&mut self, section: &str, name: &str, result: Result<(), String>) {
        self.record(section, name, result.map_or_else(Outcome::Fail, |()| Outcome::Pass));
    }

    pub fn skip(&mut self, section: &str, name: &str, why: &str) {
        self.record(section, name, Outcome::Skip(why.to_owned()));
    }

    fn count(&self, f: impl Fn(&Outcome) -> bool) -> usize {
        self.checks.iter().filter(|c| f(&c.outcome)).count()
    }

    pub fn passed(&self) -> usize {
        self.count(|o| *o == Outcome::Pass)
    }

    pub fn failed(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Fail(_)))
    }

    pub fn skipped(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Skip(_)))
    }

    /// The closing line: `N passed, M failed` (plus `, K skipped` when any were skipped).
    pub fn summary(&self) -> String {
        let mut s = format!("{} passed, {} failed", self.passed(), self.failed());
        if self.skipped() > 0 {
            s.push_str(&format!(", {} skipped", self.skipped()));
        }
        s
    }

    /// The `--json` document.
    pub fn to_json(&self) -> Value {
        let checks: Vec<Value> = self
            .checks
            .iter()
            .map(|c| {
                let (result, reason) = match &c.outcome {
                    Outcome::Pass => ("pass", None),
                    Outcome::Fail(r) => ("fail", Some(r)),
                    Outcome::Skip(r) => ("skip", Some(r)),
                };
                json!({ "section": c.section, "name": c.name, "result": result, "reason": reason })
            })
            .collect();
        json!({
            "checks": checks,
            "passed": self.passed(),
            "failed": self.failed(),
            "skipped": self.skipped(),
        })
    }
}

/// `Err(reason)` unless `cond`.
pub fn ensure(cond: bool, reason: impl FnOnce() -> String) -> Result<(), String> {
    if cond { Ok(()) } else { Err(reason()) }
}
