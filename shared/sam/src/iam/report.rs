//! What `make test` exercised against what the template grants: one row per grant of every
//! function (effect, action, resource as the template names it), whether any call of the run
//! used it, and — for a grant no call used — the one-line justification from
//! `infra/iam-unused.yaml`. Under-grants (a denied call of a function) and unjustified
//! over-grants (granted, never used, no reason given) fail the check.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::front::Logged;
use super::policy::Grant;

/// One function's grants, as the template names them.
#[derive(Debug, Clone)]
pub struct Granted {
    pub function: String,
    pub grants: Vec<Grant>,
}

/// The report of one run.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// (function, grant key) → used by a call.
    pub rows: Vec<(String, String, bool, Option<String>)>,
    /// Denied calls: (function, action, resource).
    pub denied: BTreeSet<(String, String, String)>,
    /// Grants never used with no justification.
    pub unjustified: Vec<(String, String)>,
    /// Justifications naming a grant the template does not have. (A justified grant a run
    /// happens to use is fine: some paths are timing-dependent — a lazy expiry read before the
    /// sweeper gets to it — and a report must not flake.)
    pub stale: Vec<(String, String)>,
}

/// `infra/iam-unused.yaml`: function → grant key (`action resource`) → why it stays.
pub type Justifications = BTreeMap<String, BTreeMap<String, String>>;

pub fn build(granted: &[Granted], log: &[Logged], justified: &Justifications) -> Report {
    let used: BTreeSet<(String, String)> = log
        .iter()
        .filter(|l| l.allowed)
        .flat_map(|l| l.grants.iter().map(|g| (l.function.clone(), g.clone())))
        .collect();
    let mut report = Report {
        denied: log
            .iter()
            .filter(|l| !l.allowed)
            .map(|l| (l.function.clone(), l.action.clone(), l.resource.clone()))
            .collect(),
        ..Report::default()
    };
    let mut known = BTreeSet::new();
    for f in granted {
        for g in f.grants.iter().filter(|g| g.allow) {
            let key = g.key();
            known.insert((f.function.clone(), key.clone()));
            let was_used = used.contains(&(f.function.clone(), key.clone()));
            let why = justified.get(&f.function).and_then(|m| m.get(&key)).cloned();
            if !was_used && why.is_none() {
                report.unjustified.push((f.function.clone(), key.clone()));
            }
            report.rows.push((f.function.clone(), key, was_used, why));
        }
    }
    for (function, keys) in justified {
        for key in keys.keys() {
            if !known.contains(&(function.clone(), key.clone())) {
                report.stale.push((function.clone(), key.clone()));
            }
        }
    }
    report
}

impl Report {
    /// Whether the run may pass: no denial, every unused grant justified, no stale reason.
    pub fn ok(&self) -> bool {
        self.denied.is_empty() && self.unjustified.is_empty() && self.stale.is_empty()
    }

    /// The Markdown table for docs/iam.md.
    pub fn markdown(&self) -> String {
        let mut out = String::from("| Function | Action | Resource | Exercised by `make test` |\n|---|---|---|---|\n");
        for (function, key, used, why) in &self.rows {
            let (action, resource) = key.split_once(' ').unwrap_or((key, ""));
            let cell = match (used, why) {
                (true, _) => "yes".to_owned(),
                (false, Some(why)) => format!("no — {why}"),
                (false, None) => "**no, and no reason given**".to_owned(),
            };
            let _ = writeln!(out, "| {} | `{action}` | `{resource}` | {cell} |", function.trim_end_matches("Function"));
        }
        out
    }

    /// What is wrong, one line each.
    pub fn problems(&self) -> Vec<String> {
        let mut out: Vec<String> =
            self.denied.iter().map(|(f, a, r)| format!("under-grant: {f} was denied {a} on {r}")).collect();
        out.extend(self.unjustified.iter().map(|(f, k)| {
            format!("over-grant: {f} is granted `{k}` but no call used it — remove it or justify it in infra/iam-unused.yaml")
        }));
        out.extend(self.stale.iter().map(|(f, k)| format!("stale justification: {f} `{k}` is not granted")));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(action: &str, shown: &str) -> Grant {
        Grant { allow: true, action: action.into(), resource: String::new(), shown: shown.into() }
    }

    fn logged(function: &str, action: &str, allowed: bool, grants: &[&str]) -> Logged {
        Logged {
            function: function.into(),
            action: action.into(),
            resource: "arn:x".into(),
            allowed,
            grants: grants.iter().map(|g| (*g).to_owned()).collect(),
        }
    }

    #[test]
    fn denials_unused_grants_and_stale_reasons_fail_and_justified_ones_pass() {
        let granted = vec![Granted {
            function: "SubmitFunction".into(),
            grants: vec![grant("dynamodb:GetItem", "Table"), grant("dynamodb:DeleteItem", "Table")],
        }];
        let used = [logged("SubmitFunction", "dynamodb:GetItem", true, &["dynamodb:GetItem Table"])];
        let r = build(&granted, &used, &Justifications::new());
        assert!(!r.ok());
        assert_eq!(r.unjustified, vec![("SubmitFunction".to_owned(), "dynamodb:DeleteItem Table".to_owned())]);

        let justified: Justifications =
            [("SubmitFunction".to_owned(), [("dynamodb:DeleteItem Table".to_owned(), "why".to_owned())].into())].into();
        let r = build(&granted, &used, &justified);
        assert!(r.ok(), "{:?}", r.problems());
        assert!(r.markdown().contains("| Submit | `dynamodb:DeleteItem` | `Table` | no — why |"), "{}", r.markdown());

        let denied = [used[0].clone(), logged("SubmitFunction", "dynamodb:Query", false, &[])];
        let r = build(&granted, &denied, &justified);
        assert_eq!(r.problems().len(), 1, "{:?}", r.problems());
        assert!(r.problems()[0].starts_with("under-grant: SubmitFunction was denied dynamodb:Query"));

        let stale: Justifications =
            [("SubmitFunction".to_owned(), [("dynamodb:Scan Table".to_owned(), "why".to_owned())].into())].into();
        assert!(!build(&granted, &used, &stale).stale.is_empty(), "a reason for a grant that does not exist is stale");
        let used_anyway: Justifications =
            [("SubmitFunction".to_owned(), [("dynamodb:GetItem Table".to_owned(), "timing".to_owned())].into())].into();
        let r = build(&granted, &used, &used_anyway);
        assert!(r.stale.is_empty() && r.unjustified.len() == 1, "a justified grant a run used is no failure");
    }
}
