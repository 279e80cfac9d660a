//! Reports as rows: a check, its [`Verdict`] and a detail, printed as one
//! `check | result | detail` table ([`write_rows`]); a whole report's
//! verdict as a program's exit code ([`verdict_code`]). The end-to-end and
//! hosts kits and `cargo xtask wheel` and `cross-check` report this way.

use std::fmt;
use std::process::ExitCode;

use crate::bins::error_chain;
use crate::table::{Align, table_lines};

/// The verdict of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The wrapper did what it must.
    Pass,
    /// It did not.
    Fail,
    /// A reference figure (the release's own wrapper), judged by no one.
    Info,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "FAIL",
            Verdict::Info => "info",
        })
    }
}

/// One line of the report.
#[derive(Debug, Clone)]
pub struct Row {
    /// What was checked.
    pub check: String,
    /// How it came out.
    pub verdict: Verdict,
    /// Figures and, on failure, why.
    pub detail: String,
}

impl Row {
    /// A check that holds when `ok`.
    pub fn judged(check: impl Into<String>, ok: bool, detail: impl Into<String>) -> Self {
        Row {
            check: check.into(),
            verdict: if ok { Verdict::Pass } else { Verdict::Fail },
            detail: detail.into(),
        }
    }

    /// A check that holds when `outcome` is `Ok` and `verdict` of its value
    /// says so; an error fails it with its chain of causes.
    pub fn outcome<T, E: std::error::Error>(
        check: impl Into<String>,
        outcome: Result<T, E>,
        verdict: impl FnOnce(T) -> (bool, String),
    ) -> Self {
        let (ok, detail) = outcome.map_or_else(|e| (false, error_chain(&e)), verdict);
        Row::judged(check, ok, detail)
    }

    /// A reference figure.
    pub fn info(check: impl Into<String>, detail: impl Into<String>) -> Self {
        Row {
            check: check.into(),
            verdict: Verdict::Info,
            detail: detail.into(),
        }
    }
}

/// The exit code of a verdict: 0 when it passed, 1 when it failed.
pub fn verdict_code(passed: bool) -> ExitCode {
    ExitCode::from(u8::from(!passed))
}

/// The `check | result | detail` table of `rows`, a line each (and one
/// more for each further line of a detail): how every report of rows
/// prints, the kit's and `cargo xtask wheel`'s.
pub fn write_rows(f: &mut fmt::Formatter<'_>, rows: &[Row]) -> fmt::Result {
    let mut cells = Vec::new();
    for row in rows {
        let mut lines = row.detail.lines();
        let first = lines.next().unwrap_or("").to_owned();
        cells.push([row.check.clone(), row.verdict.to_string(), first]);
        cells.extend(lines.map(|line| [String::new(), String::new(), format!("  {line}")]));
    }
    for line in table_lines(&["check", "result", "detail"], &cells, Align::Left) {
        writeln!(f, "{line}")?;
    }
    Ok(())
}
