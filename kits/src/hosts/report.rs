//! The kit's report: a row per check, host and wrapper, printed as a
//! table and written as JSON. This workspace's wrapper must pass every
//! check; each wrapper broken on purpose must fail at least one check in
//! every host (a broken wrapper that passes everywhere in a host means the
//! kit let it through); other wrappers are reported on.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use devkit::table::{Align, table_lines};
use harness::error::HarnessError;
use serde::Serialize;

use super::host::Host;
use super::judge::{Checked, Verdict};
use super::session::{Role, Subject};

/// One row of the report.
#[derive(Debug, Clone, Serialize)]
pub struct HostRow {
    /// The host, by name.
    pub host: String,
    /// Its version (as asked for when it could not be installed).
    pub version: String,
    /// The wrapper it started.
    pub wrapper: String,
    /// How the wrapper's checks count.
    pub role: Role,
    /// The check.
    #[serde(flatten)]
    pub checked: Checked,
}

impl HostRow {
    /// The rows of one run of `host` at `version` with `subject`.
    pub fn all(host: Host, version: &str, subject: &Subject, checked: Vec<Checked>) -> Vec<Self> {
        checked
            .into_iter()
            .map(|checked| HostRow {
                host: host.to_string(),
                version: version.to_owned(),
                wrapper: subject.label.clone(),
                role: subject.role,
                checked,
            })
            .collect()
    }

    /// The result column: a broken wrapper's failure is what was
    /// expected of it.
    fn result(&self) -> &'static str {
        match (self.checked.verdict, self.role) {
            (Verdict::Pass, _) => "pass",
            (Verdict::Info, _) => "info",
            (Verdict::Fail, Role::MustFail) => "fail (expected)",
            (Verdict::Fail, _) => "FAIL",
        }
    }
}

/// A wrapper broken on purpose, in one host: the checks it failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caught {
    /// The host.
    pub host: String,
    /// The broken wrapper.
    pub wrapper: String,
    /// The checks it failed (none: the kit let it through).
    pub failed: Vec<String>,
}

/// What the kit found.
#[derive(Debug, Clone, Serialize)]
pub struct HostsReport {
    /// Every check of every host with every wrapper.
    pub rows: Vec<HostRow>,
    /// The wrapper binary tested, and its wheel.
    pub subject: String,
    /// The daemon's environment: how it was installed, its pins.
    pub environment: String,
    /// Each host's install: version, time, lockfile.
    pub installs: Vec<String>,
    /// The whole run's time, in seconds.
    pub seconds: f64,
}

impl HostsReport {
    /// Judged checks that failed.
    fn judged_failures(&self) -> usize {
        self.rows
            .iter()
            .filter(|r| r.role == Role::Judged && r.checked.verdict == Verdict::Fail)
            .count()
    }

    /// For each broken wrapper in each host, the checks it failed.
    pub fn caught(&self) -> Vec<Caught> {
        let mut caught: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
        for row in self.rows.iter().filter(|r| r.role == Role::MustFail) {
            let failed = caught
                .entry((row.host.clone(), row.wrapper.clone()))
                .or_default();
            if row.checked.verdict == Verdict::Fail {
                failed.push(row.checked.check.to_owned());
            }
        }
        caught
            .into_iter()
            .map(|((host, wrapper), failed)| Caught {
                host,
                wrapper,
                failed,
            })
            .collect()
    }

    /// Whether no judged check failed and every broken wrapper failed at
    /// least one check in every host.
    pub fn passed(&self) -> bool {
        self.judged_failures() == 0 && self.caught().iter().all(|c| !c.failed.is_empty())
    }

    /// Writes the report as JSON to `path`.
    pub fn write_json(&self, path: &Path) -> Result<(), HarnessError> {
        let json = serde_json::to_string_pretty(self).expect("the report serializes");
        std::fs::write(path, json)
            .map_err(|e| HarnessError::io(format!("writing {}", path.display()), e))
    }
}

impl fmt::Display for HostsReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cells: Vec<[String; 5]> = self
            .rows
            .iter()
            .map(|r| {
                [
                    format!("{} {}", r.host, r.version),
                    r.wrapper.clone(),
                    r.checked.check.to_owned(),
                    r.result().to_owned(),
                    r.checked.detail.replace('\n', " / "),
                ]
            })
            .collect();
        let header = ["host", "wrapper", "check", "result", "detail"];
        for line in table_lines(&header, &cells, Align::Left) {
            writeln!(f, "{line}")?;
        }
        writeln!(f, "{}", self.subject)?;
        writeln!(f, "daemon environment: {}", self.environment)?;
        for install in &self.installs {
            writeln!(f, "{install}")?;
        }
        for caught in self.caught() {
            if caught.failed.is_empty() {
                writeln!(
                    f,
                    "NOT CAUGHT: {} passed every check in {}",
                    caught.wrapper, caught.host
                )?;
            } else {
                writeln!(
                    f,
                    "caught: {} in {} failed {}",
                    caught.wrapper,
                    caught.host,
                    caught.failed.join("; ")
                )?;
            }
        }
        let uncaught = self.caught().iter().filter(|c| c.failed.is_empty()).count();
        write!(
            f,
            "verdict: {} ({} rows, {} judged failed, {uncaught} broken wrapper(s) not caught, {:.0} s)",
            if self.passed() { "PASS" } else { "FAIL" },
            self.rows.len(),
            self.judged_failures(),
            self.seconds
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(wrapper: &str, role: Role, verdict: Verdict) -> HostRow {
        HostRow {
            host: "codex".into(),
            version: "1".into(),
            wrapper: wrapper.into(),
            role,
            checked: Checked {
                check: "a check",
                verdict,
                detail: String::new(),
            },
        }
    }

    fn report(rows: Vec<HostRow>) -> HostsReport {
        HostsReport {
            rows,
            subject: "wrapper: w".into(),
            environment: "reused".into(),
            installs: Vec::new(),
            seconds: 1.0,
        }
    }

    #[test]
    fn a_broken_wrapper_that_passes_fails_the_run() {
        let caught = report(vec![
            row("ours", Role::Judged, Verdict::Pass),
            row("broken: x", Role::MustFail, Verdict::Pass),
            row("broken: x", Role::MustFail, Verdict::Fail),
        ]);
        assert!(caught.passed());
        assert!(caught.to_string().contains("fail (expected)"));
        let let_through = report(vec![
            row("ours", Role::Judged, Verdict::Pass),
            row("broken: x", Role::MustFail, Verdict::Pass),
        ]);
        assert!(!let_through.passed());
        assert!(
            let_through
                .to_string()
                .contains("NOT CAUGHT: broken: x passed every check in codex")
        );
    }

    #[test]
    fn a_judged_failure_fails_and_a_reported_one_does_not() {
        assert!(!report(vec![row("ours", Role::Judged, Verdict::Fail)]).passed());
        assert!(report(vec![row("node", Role::Reported, Verdict::Fail)]).passed());
    }
}
