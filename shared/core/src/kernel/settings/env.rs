//! Reading `MA2H_*` variables: each named once at its read, one parser per kind (integer,
//! size, bool, duration, list, secret), and every bad value collected, so start-up names all
//! of them at once instead of the first.

use std::str::FromStr;
use std::time::Duration;

use super::{Secret, SettingsError};

/// Looks a variable up by name.
type Lookup<'a> = Box<dyn Fn(&str) -> Option<String> + 'a>;

/// The variables of one start-up and the problems found so far.
pub struct Env<'a> {
    get: Lookup<'a>,
    problems: Vec<String>,
}

impl<'a> Env<'a> {
    /// Over a lookup; a value is trimmed and an empty one counts as unset.
    pub fn new(get: impl Fn(&str) -> Option<String> + 'a) -> Self {
        Self { get: Box::new(get), problems: Vec::new() }
    }

    /// The value of `name`, trimmed; `None` when unset or blank.
    pub fn raw(&self, name: &str) -> Option<String> {
        (self.get)(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
    }

    /// Record a problem with `name`'s value.
    fn problem(&mut self, name: &str, what: impl std::fmt::Display) {
        self.problems.push(format!("{name} {what}"));
    }

    /// Record a problem already phrased with its variables' names.
    pub fn refuse(&mut self, what: &str) {
        self.problems.push(what.to_owned());
    }

    /// Parse `name` with `parse` into `into`; a failure is recorded as `name` + its message.
    pub fn parse<T>(&mut self, name: &str, into: &mut T, parse: impl FnOnce(&str) -> Result<T, String>) {
        if let Some(v) = self.raw(name) {
            match parse(&v) {
                Ok(x) => *into = x,
                Err(why) => self.problem(name, format_args!("{why}, got `{v}`")),
            }
        }
    }

    /// A non-negative integer.
    pub fn int<T: FromStr>(&mut self, name: &str, into: &mut T) {
        self.parse(name, into, |v| v.parse().map_err(|_| "must be a non-negative integer".into()));
    }

    /// A number of bytes (a non-negative integer).
    pub fn size(&mut self, name: &str, into: &mut usize) {
        self.parse(name, into, |v| v.parse().map_err(|_| "must be a number of bytes".into()));
    }

    /// `true`/`false` (also `1`/`0`, `yes`/`no`, `on`/`off`).
    pub fn bool(&mut self, name: &str, into: &mut bool) {
        self.parse(name, into, |v| match v.to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => Ok(true),
            "0" | "false" | "no" | "off" => Ok(false),
            _ => Err("must be true or false".into()),
        });
    }

    /// A whole number in the unit the variable's name ends with (`_MS`, `_SECONDS`, `_HOURS`,
    /// `_DAYS`).
    pub fn duration(&mut self, name: &str, into: &mut Duration) {
        let (unit_ms, unit): (u64, &str) = match name.rsplit('_').next() {
            Some("MS") => (1, "milliseconds"),
            Some("SECONDS") => (1000, "seconds"),
            Some("HOURS") => (3_600_000, "hours"),
            Some("DAYS") => (86_400_000, "days"),
            _ => unreachable!("a duration variable names its unit: {name}"),
        };
        self.parse(name, into, |v| {
            v.parse::<u64>()
                .ok()
                .and_then(|n| n.checked_mul(unit_ms))
                .map(Duration::from_millis)
                .ok_or_else(|| format!("must be a whole number of {unit}"))
        });
    }

    /// A comma-separated list (blank items dropped); `None` when unset.
    pub fn list(&self, name: &str) -> Option<Vec<String>> {
        self.raw(name).map(|v| v.split(',').map(|x| x.trim().to_owned()).filter(|x| !x.is_empty()).collect())
    }

    /// A value never printed.
    pub fn secret(&self, name: &str) -> Option<Secret> {
        self.raw(name).map(Secret)
    }

    /// `Ok` when nothing was wrong, else every problem, one per variable.
    pub fn finish(self) -> Result<(), SettingsError> {
        match self.problems.is_empty() {
            true => Ok(()),
            false => Err(SettingsError(self.problems.join("; "))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> Env<'static> {
        Env::new(|k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| (*v).to_owned()))
    }

    #[test]
    fn every_bad_variable_is_named_not_only_the_first() {
        let mut e = env(&[("MA2H_A", "x"), ("MA2H_B_MS", "-1"), ("MA2H_C", "maybe")]);
        let (mut a, mut b, mut c) = (1u32, Duration::ZERO, false);
        e.int("MA2H_A", &mut a);
        e.duration("MA2H_B_MS", &mut b);
        e.bool("MA2H_C", &mut c);
        let err = e.finish().unwrap_err().0;
        for name in ["MA2H_A must", "MA2H_B_MS must be a whole number of milliseconds", "MA2H_C must be true"] {
            assert!(err.contains(name), "{name} in {err}");
        }
        assert_eq!((a, b, c), (1, Duration::ZERO, false), "a bad value leaves the default");
    }

    #[test]
    fn durations_take_their_unit_from_the_name_and_blanks_are_unset() {
        let mut e = env(&[("MA2H_X_SECONDS", " 3 "), ("MA2H_Y_HOURS", "2"), ("MA2H_Z_MS", " ")]);
        let (mut x, mut y, mut z) = (Duration::ZERO, Duration::ZERO, Duration::from_millis(7));
        e.duration("MA2H_X_SECONDS", &mut x);
        e.duration("MA2H_Y_HOURS", &mut y);
        e.duration("MA2H_Z_MS", &mut z);
        assert!(e.finish().is_ok());
        assert_eq!((x, y, z), (Duration::from_secs(3), Duration::from_secs(7200), Duration::from_millis(7)));
    }

    #[test]
    fn booleans_read_one_way_everywhere() {
        for (v, want) in [("1", true), ("TRUE", true), ("on", true), ("no", false), ("0", false)] {
            let pairs: &'static [(&str, &str)] = Box::leak(Box::new([("MA2H_FLAG", v)]));
            let mut e = env(pairs);
            let mut b = !want;
            e.bool("MA2H_FLAG", &mut b);
            assert!(e.finish().is_ok());
            assert_eq!(b, want, "{v}");
        }
    }
}
