//! How the scorecard reads for people: the table of properties by
//! wrapper, a verdict line per wrapper, a self-contained HTML page
//! ([`html`]), and the files they are written to.

mod html;

use std::fmt;
use std::path::{Path, PathBuf};

use devkit::table::{Align, table_lines};

use crate::error::HarnessError;
use crate::scenario::property::Kind;
use crate::score::{Cell, Scorecard};

/// Where [`Scorecard::write`] put the scorecard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScoreFiles {
    /// `score.json`.
    pub json: PathBuf,
    /// `score.html`.
    pub html: PathBuf,
}

impl Scorecard {
    /// One verdict line per subject: the contract and policy properties it
    /// failed, with their causes.
    pub fn verdicts(&self) -> Vec<String> {
        self.subjects
            .iter()
            .enumerate()
            .map(|(column, subject)| {
                let failed: Vec<String> = self
                    .rows
                    .iter()
                    .filter_map(|row| {
                        let kind = if row.kind == Kind::Policy {
                            "policy: "
                        } else {
                            ""
                        };
                        let cause = row.cells[column].failure?;
                        Some(format!("{kind}{} ({cause})", row.title))
                    })
                    .collect();
                let errors = match self.errors().filter(|r| &r.subject == subject).count() {
                    0 => String::new(),
                    n => format!("; {n} scenario(s) could not run"),
                };
                if failed.is_empty() {
                    format!("{subject}: PASS, every property held{errors}")
                } else {
                    format!("{subject}: FAIL: {}{errors}", failed.join(", "))
                }
            })
            .collect()
    }

    /// The report as JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// A self-contained HTML page (no external resources).
    pub fn to_html(&self) -> String {
        html::page(self)
    }

    /// Writes `score.json` and `score.html` into `dir`; returns their paths.
    pub fn write(&self, dir: &Path) -> Result<ScoreFiles, HarnessError> {
        std::fs::create_dir_all(dir)
            .map_err(|e| HarnessError::io(format!("creating {}", dir.display()), e))?;
        let json = dir.join("score.json");
        let html = dir.join("score.html");
        for (path, text) in [(&json, self.to_json()), (&html, self.to_html())] {
            std::fs::write(path, text)
                .map_err(|e| HarnessError::io(format!("writing {}", path.display()), e))?;
        }
        Ok(ScoreFiles { json, html })
    }
}

impl fmt::Display for Scorecard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut header = vec!["property".to_owned(), "kind".to_owned()];
        header.extend(self.subjects.iter().cloned());
        let rows: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|row| {
                let mut cells = vec![row.title.to_owned(), row.kind.label().to_owned()];
                cells.extend(row.cells.iter().map(Cell::verdict));
                cells
            })
            .collect();
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        for line in table_lines(&header, &rows, Align::Left) {
            writeln!(f, "{line}")?;
        }
        writeln!(f)?;
        for (column, subject) in self.subjects.iter().enumerate() {
            for row in self
                .rows
                .iter()
                .filter(|r| r.cells[column].failure.is_some())
            {
                writeln!(f, "{subject}: {}: {}", row.title, row.cells[column].figure)?;
            }
        }
        for run in self.errors() {
            writeln!(
                f,
                "{} against {} could not run: {}",
                run.scenario,
                run.subject,
                run.error.as_deref().unwrap_or("")
            )?;
        }
        Ok(())
    }
}
