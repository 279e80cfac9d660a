//! How a sweep reads for people: the terminal table, one summary line per
//! subject, the chart ([`chart`]), and the files they are written to
//! ([`files`]).

mod chart;
mod files;

use devkit::format::{format_ms, shorten};
use devkit::table::{Align, table_lines};
pub use files::{ReportFiles, default_out_dir};

use crate::scenario::race::RaceSummary;
use crate::scenario::sweep::{PointReport, SweepReport};

impl SweepReport {
    /// The terminal table: one row per subject, delay and offset.
    pub fn table(&self) -> String {
        let header = COLUMNS.map(|column| column.header);
        let rows: Vec<Vec<String>> = self
            .points
            .iter()
            .map(|p| COLUMNS.iter().map(|column| (column.cell)(p)).collect())
            .collect();
        let mut out = if self.partial {
            let (done, planned) = (self.runs_done, self.runs_planned);
            format!("PARTIAL: interrupted after {done} of {planned} runs\n")
        } else {
            String::new()
        };
        let lines = table_lines(&header, &rows, Align::FirstLeft);
        for (i, line) in lines.iter().enumerate() {
            // A blank line between two subjects' rows.
            if i > 2 && self.points[i - 2].subject != self.points[i - 3].subject {
                out.push('\n');
            }
            out.push_str(line);
            out.push('\n');
        }
        out
    }

    /// One line per subject: where in the window its racing calls all
    /// succeeded, where some failed with `daemon_unreachable`, where some
    /// failed otherwise, and how the production point fared.
    pub fn subject_summaries(&self) -> Vec<String> {
        let step = self.config.step_ms;
        let summary = |label: &str| {
            let measured = || self.points_of(label).filter(|p| p.summary.runs > 0);
            let at = |keep: fn(&RaceSummary) -> bool| -> Vec<u64> {
                let window = measured().filter(|p| !p.production && keep(&p.summary));
                window.map(|p| p.offset_ms).collect()
            };
            let mut parts = Vec::new();
            let findings = [
                Finding {
                    what: "every racing call ok",
                    offsets: at(|s| s.tally.ok == s.runs),
                    told_when_none: true,
                },
                Finding {
                    what: "refused (daemon_unreachable, V3-05)",
                    offsets: at(|s| s.tally.daemon_unreachable > s.tally.socket_closed),
                    told_when_none: true,
                },
                Finding {
                    what: "written to the dying connection (socket closed)",
                    offsets: at(|s| s.tally.socket_closed > 0),
                    told_when_none: false,
                },
                Finding {
                    what: "other failures",
                    offsets: at(|s| s.other_failures() > 0),
                    told_when_none: false,
                },
            ];
            for finding in findings {
                if finding.told_when_none || !finding.offsets.is_empty() {
                    let offsets = format_offsets(&finding.offsets, step);
                    parts.push(format!("{} at {offsets}", finding.what));
                }
            }
            let first_error = self
                .points_of(label)
                .flat_map(|p| &p.samples)
                .find(|s| s.outcome == "error")
                .and_then(|s| s.detail.as_deref());
            if let Some(first) = first_error {
                let errors = at(|s| s.tally.errors > 0);
                let at =
                    (!errors.is_empty()).then(|| format!(" at {}", format_offsets(&errors, step)));
                let at = at.unwrap_or_default();
                let first = shorten(first, 160);
                parts.push(format!(
                    "runs the harness could not carry out{at} (first: {first})"
                ));
            }
            let production = measured().filter(|p| p.production);
            let counts: Vec<String> = production
                .map(|p| format!("{}/{} ok", p.summary.tally.ok, p.summary.runs))
                .collect();
            if !counts.is_empty() {
                let counts = counts.join(", ");
                parts.push(format!("without the widener (delay 0): {counts}"));
            }
            let delay = self.config.delay_ms;
            format!("{label} (reconnect delay {delay} ms): {}", parts.join("; "))
        };
        self.subjects.iter().map(|s| summary(&s.label)).collect()
    }
}

/// What a subject's summary says happened where in the window.
struct Finding {
    /// What happened, in words.
    what: &'static str,
    /// The offsets where it did.
    offsets: Vec<u64>,
    /// Whether the summary says so even where it never did (`at none`).
    told_when_none: bool,
}

/// A column of [`SweepReport::table`].
struct Column {
    /// Its header.
    header: &'static str,
    /// A point's cell.
    cell: fn(&PointReport) -> String,
}

/// The columns of [`SweepReport::table`].
const COLUMNS: [Column; 12] = [
    Column {
        header: "subject",
        cell: |p| p.subject.clone(),
    },
    Column {
        header: "delay",
        cell: |p| format!("{} ms", p.delay_ms),
    },
    Column {
        header: "offset",
        cell: |p| format!("{} ms", p.offset_ms),
    },
    Column {
        header: "runs",
        cell: |p| match (p.summary.runs, p.runs_planned as usize) {
            (runs, planned) if runs < planned => format!("{runs}/{planned}"),
            (runs, _) => runs.to_string(),
        },
    },
    Column {
        header: "ok",
        cell: |p| p.summary.tally.ok.to_string(),
    },
    Column {
        header: "unreachable",
        cell: |p| p.summary.tally.daemon_unreachable.to_string(),
    },
    Column {
        header: "other",
        cell: |p| p.summary.tally.other_error.to_string(),
    },
    Column {
        header: "timeout",
        cell: |p| p.summary.tally.timeout.to_string(),
    },
    Column {
        header: "errors",
        cell: |p| p.summary.tally.errors.to_string(),
    },
    Column {
        header: "success",
        cell: |p| {
            let rate = p.success_rate.map(|r| format!("{:.0}%", r * 100.0));
            rate.unwrap_or_else(|| "n/a".to_owned())
        },
    },
    Column {
        header: "median latency",
        cell: |p| {
            let latency = p.summary.median_racing_latency;
            latency.map_or_else(|| "n/a".to_owned(), format_ms)
        },
    },
    Column {
        header: "conns",
        cell: |p| p.summary.conns_after.to_string(),
    },
];

/// Formats offsets as compact ranges for people, given the step between
/// neighbours: `0-400, 700 ms`.
pub fn format_offsets(offsets: &[u64], step_ms: u64) -> String {
    if offsets.is_empty() {
        return "none".to_owned();
    }
    let ranges: Vec<String> = offsets
        .chunk_by(|a, b| *b == a.saturating_add(step_ms))
        .map(|run| match run {
            [first, .., last] => format!("{first}-{last}"),
            _ => run[0].to_string(),
        })
        .collect();
    format!("{} ms", ranges.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::sweep::results::tests::sample_report;

    #[test]
    fn table_has_a_row_per_point_and_marks_partial_reports() {
        let table = sample_report().table();
        assert!(table.starts_with("PARTIAL: interrupted after 19 of 20 runs\n"));
        assert!(table.contains("median latency"));
        assert_eq!(
            table.lines().filter(|l| l.starts_with("prefix ")).count(),
            5
        );
        assert!(
            table
                .lines()
                .any(|l| l.starts_with("fixed ") && l.contains(" 1/2 "))
        );
    }

    #[test]
    fn summaries_name_the_window() {
        let lines = sample_report().subject_summaries();
        assert_eq!(
            lines[0],
            "prefix (reconnect delay 400 ms): every racing call ok at 400 ms; \
             refused (daemon_unreachable, V3-05) at 0-200 ms; runs the harness could not carry out at \
             600 ms (first: boom); without the widener (delay 0): 2/2 ok"
        );
        assert!(
            lines[1].contains("every racing call ok at 0-600 ms"),
            "{}",
            lines[1]
        );
        assert!(
            lines[1].contains("refused (daemon_unreachable, V3-05) at none"),
            "{}",
            lines[1]
        );
        assert!(!lines[1].contains("dying"), "{}", lines[1]);
    }

    #[test]
    fn offsets_are_formatted_as_ranges() {
        assert_eq!(
            format_offsets(&[0, 100, 200, 400, 600, 700], 100),
            "0-200, 400, 600-700 ms"
        );
        assert_eq!(format_offsets(&[], 100), "none");
        assert_eq!(format_offsets(&[50], 650), "50 ms");
    }
}
