//! What a sweep found, as data (serialized as `sweep.json`); the table,
//! the summaries and the chart that show it are in
//! [`crate::report::sweep`].
//!
//! The JSON is a [`SweepReport`]: its `format` and `version`, whether it is
//! `partial`, the run counts, the `config` and the `subjects`, then one
//! [`PointReport`] per subject and point (by subject, then delay, then
//! offset) with its outcome counts and one [`RunRecord`] per completed run
//! in `samples`. Durations are fractional milliseconds, in fields ending in
//! `_ms`. A point's `runs` counts its completed runs, harness errors
//! included (`ok` + `daemon_unreachable` + `other_error` + `timeout` +
//! `errors`), and `success_rate` is `ok / runs` (`null` without runs).

use std::time::Duration;

use devkit::format::{serialize_ms, serialize_opt_ms};
use serde::Serialize;

use super::config::{Point, SweepConfig};
use super::runs::{Grid, RunResult};
use crate::scenario::race::{RaceConfig, RaceOutcome, RaceSummary};
use crate::wrapper::Subject;

/// The `format` field of the JSON report.
const REPORT_FORMAT: &str = "iai-mcp-race-sweep";

/// The `version` field of the JSON report; raised when fields change
/// meaning or go away (new fields may appear without a new version).
const REPORT_VERSION: u32 = 1;

/// A sweep's results, in grid order.
#[derive(Debug, Clone, Serialize)]
pub struct SweepReport {
    /// Always [`REPORT_FORMAT`].
    format: &'static str,
    /// Always [`REPORT_VERSION`].
    version: u32,
    /// Whether the sweep was stopped before every run was made.
    pub partial: bool,
    /// Runs the sweep was to make.
    pub runs_planned: usize,
    /// Runs made.
    pub runs_done: usize,
    /// Wall time of the sweep.
    #[serde(rename = "elapsed_ms", serialize_with = "serialize_ms")]
    pub(crate) elapsed: Duration,
    /// The settings.
    pub(crate) config: SweepSettings,
    /// The subjects, in report order.
    pub(crate) subjects: Vec<SubjectInfo>,
    /// One entry per subject and point: by subject, then delay, then offset.
    pub(crate) points: Vec<PointReport>,
}

/// The settings of a sweep, as reported.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SweepSettings {
    /// The reconnect delay of the swept points.
    pub delay_ms: u64,
    /// The first offset.
    pub from_ms: u64,
    /// The last offset asked for.
    pub to_ms: u64,
    /// The step between offsets.
    pub step_ms: u64,
    /// The swept offsets.
    pub offsets_ms: Vec<u64>,
    /// Whether the production point (delay 0, offset 0) was added.
    pub production_point: bool,
    /// Runs per subject and point.
    pub runs: u32,
    /// Runs at once.
    pub jobs: usize,
    /// Seed of the run order.
    pub seed: u64,
    /// Bound on each tool call.
    #[serde(rename = "call_timeout_ms", serialize_with = "serialize_ms")]
    pub call_timeout: Duration,
    /// Wait after the delay before counting connections.
    #[serde(rename = "settle_ms", serialize_with = "serialize_ms")]
    pub settle: Duration,
    /// How long after the delay recovery may take.
    #[serde(rename = "recovery_timeout_ms", serialize_with = "serialize_ms")]
    pub recovery_timeout: Duration,
}

/// A subject, as reported.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SubjectInfo {
    /// Its label.
    pub label: String,
    /// The wrapper command line.
    pub wrapper: String,
    /// The bridge mode set (`null`: unset).
    pub mode: Option<crate::wrapper::BridgeMode>,
}

/// What one subject's runs at one point measured.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PointReport {
    /// The subject's label.
    pub subject: String,
    /// The reconnect delay.
    pub delay_ms: u64,
    /// The racing call's offset after the drop.
    pub offset_ms: u64,
    /// Whether this is the production point (delay 0).
    pub production: bool,
    /// Runs planned.
    pub runs_planned: u32,
    /// The subject's mode, the completed runs (harness errors included),
    /// their outcome counts, median latency, connections and defects.
    #[serde(flatten)]
    pub summary: RaceSummary,
    /// `ok / runs`; `None` without runs.
    pub success_rate: Option<f64>,
    /// Every completed run, by run index.
    pub samples: Vec<RunRecord>,
}

/// One completed run, as reported.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct RunRecord {
    /// The run's index among the point's runs, from 0.
    pub run: u32,
    /// `ok`, `daemon_unreachable`, `other_error`, `timeout` or `error`.
    pub outcome: &'static str,
    /// What went wrong, for `other_error` and `error`.
    pub detail: Option<String>,
    /// The racing call's latency (`None` for `error`).
    #[serde(rename = "racing_latency_ms", serialize_with = "serialize_opt_ms")]
    pub racing_latency: Option<Duration>,
    /// Time from the drop to the first successful call after the race.
    #[serde(rename = "recovered_after_ms", serialize_with = "serialize_opt_ms")]
    pub recovered_after: Option<Duration>,
    /// Daemon connections after recovery.
    pub conns_after: Option<u32>,
    /// Stdout framing defects seen.
    pub stdout_defects: usize,
}

impl SweepReport {
    pub(super) fn new(
        cfg: &SweepConfig,
        race: &RaceConfig,
        subjects: &[Subject],
        points: &[Point],
        grid: Grid,
        elapsed: Duration,
    ) -> Self {
        let mut reports = Vec::new();
        let mut runs_done = 0;
        for (subject, by_point) in subjects.iter().zip(grid) {
            for (point, runs) in points.iter().zip(by_point) {
                let report = point_report(subject, *point, cfg.runs, &runs);
                runs_done += report.summary.runs;
                reports.push(report);
            }
        }
        let runs_planned = subjects.len() * points.len() * cfg.runs as usize;
        Self {
            format: REPORT_FORMAT,
            version: REPORT_VERSION,
            partial: runs_done < runs_planned,
            runs_planned,
            runs_done,
            elapsed,
            config: SweepSettings {
                delay_ms: cfg.delay_ms,
                from_ms: cfg.from_ms,
                to_ms: cfg.last_offset_ms(),
                step_ms: cfg.step_ms,
                offsets_ms: cfg.offsets(),
                production_point: cfg.production_point,
                runs: cfg.runs,
                jobs: cfg.jobs,
                seed: cfg.seed,
                call_timeout: race.call_timeout,
                settle: race.settle,
                recovery_timeout: race.recovery_timeout,
            },
            subjects: subjects
                .iter()
                .map(|s| SubjectInfo {
                    label: s.label.clone(),
                    wrapper: s.cmd.display(),
                    mode: s.mode,
                })
                .collect(),
            points: reports,
        }
    }

    /// The points of the subject labelled `label`, in order.
    pub(crate) fn points_of<'a>(
        &'a self,
        label: &'a str,
    ) -> impl Iterator<Item = &'a PointReport> + 'a {
        self.points.iter().filter(move |p| p.subject == label)
    }

    /// The report as pretty-printed JSON (the structure is described in
    /// this module's documentation).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a sweep report always serializes")
    }
}

/// What `subject`'s runs at `point` measured, from its results by run index.
fn point_report(
    subject: &Subject,
    point: Point,
    runs_planned: u32,
    runs: &[Option<RunResult>],
) -> PointReport {
    let done = runs.iter().flatten();
    let summary = RaceSummary::from_runs(subject.mode, done.map(|r| r.as_ref().ok()));
    let samples = (0..).zip(runs).filter_map(|(run, result)| {
        Some(match result.as_ref()? {
            Ok(report) => RunRecord {
                run,
                outcome: report.outcome.label(),
                detail: match &report.outcome {
                    RaceOutcome::OtherError(detail) => Some(detail.clone()),
                    _ => None,
                },
                racing_latency: Some(report.racing_latency),
                recovered_after: report.recovered_after,
                conns_after: report.conns_after,
                stdout_defects: report.defects.len(),
            },
            Err(error) => RunRecord {
                run,
                outcome: "error",
                detail: Some(error.clone()),
                ..RunRecord::default()
            },
        })
    });
    PointReport {
        subject: subject.label.clone(),
        delay_ms: point.delay_ms,
        offset_ms: point.offset_ms,
        production: point.is_production(),
        runs_planned,
        success_rate: (summary.runs > 0).then(|| summary.tally.ok as f64 / summary.runs as f64),
        summary,
        samples: samples.collect(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::scenario::race::tests::report;
    use crate::wrapper::BridgeMode;
    use crate::wrapper::WrapperCommand;

    fn run(outcome: RaceOutcome, latency_ms: u64) -> Option<RunResult> {
        Some(Ok(report(outcome, latency_ms, Some(1))))
    }

    /// A small report as a sweep of prefix and fixed would give, with one
    /// run missing (so partial) and one harness error.
    pub(crate) fn sample_report() -> SweepReport {
        let cfg = SweepConfig {
            subjects: Subject::modes(
                &WrapperCommand::new("/bin/wrapper"),
                &[BridgeMode::Prefix, BridgeMode::Fixed],
            ),
            delay_ms: 400,
            from_ms: 0,
            to_ms: Some(600),
            step_ms: 200,
            runs: 2,
            jobs: 1,
            ..SweepConfig::default()
        };
        let points = cfg.points();
        // Prefix fails inside the window; one prefix run is a harness error
        // and one fixed run is missing.
        let grid_of = |subject: &Subject| -> Vec<Vec<Option<RunResult>>> {
            let prefix = subject.mode == Some(BridgeMode::Prefix);
            let runs = |p: &Point| {
                let ok = !prefix || p.is_production() || p.offset_ms >= p.delay_ms;
                let (outcome, latency) = if ok {
                    (RaceOutcome::Ok, 401 - p.offset_ms.min(400))
                } else {
                    (RaceOutcome::DaemonUnreachable, 1)
                };
                let second = match (prefix, p.offset_ms) {
                    (true, 600) => Some(Err("boom".to_owned())),
                    (false, 200) => None,
                    _ => run(outcome.clone(), latency + 2),
                };
                vec![run(outcome, latency), second]
            };
            points.iter().map(runs).collect()
        };
        let grid: Grid = cfg.subjects.iter().map(grid_of).collect();
        SweepReport::new(
            &cfg,
            &RaceConfig::default(),
            &cfg.subjects,
            &points,
            grid,
            Duration::from_secs(3),
        )
    }

    #[test]
    fn report_lists_points_in_grid_order_with_counts() {
        let report = sample_report();
        assert!(report.partial);
        assert_eq!(report.runs_planned, 2 * 5 * 2);
        assert_eq!(report.runs_done, 19);
        let labels: Vec<(&str, u64, u64)> = report
            .points
            .iter()
            .map(|p| (p.subject.as_str(), p.delay_ms, p.offset_ms))
            .collect();
        let grid = [(0, 0), (400, 0), (400, 200), (400, 400), (400, 600)];
        let expected = ["prefix", "fixed"].map(|s| grid.map(|(d, o)| (s, d, o)));
        assert_eq!(
            labels,
            expected.concat(),
            "by subject, then delay, then offset"
        );
        let p = &report.points[4];
        let t = &p.summary.tally;
        assert_eq!((p.summary.runs, t.ok, t.errors), (2, 1, 1));
        assert_eq!(p.success_rate, Some(0.5));
        assert_eq!(p.samples[1].outcome, "error");
        let p = &report.points[2];
        let s = &p.summary;
        assert_eq!((s.tally.daemon_unreachable, p.success_rate), (2, Some(0.0)));
        assert_eq!(s.median_racing_latency, Some(Duration::from_millis(2)));
        let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
        let point = &json["points"][7];
        assert_eq!(
            (&point["runs"], &point["runs_planned"]),
            (&1.into(), &2.into())
        );
        assert!(point["median_racing_latency_ms"].is_f64());
    }
}
