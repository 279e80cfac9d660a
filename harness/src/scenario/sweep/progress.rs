//! Telling someone how a sweep is going: [`TerminalProgress`] draws a bar
//! on a terminal and prints a plain line per run otherwise (logs, tests).

use std::io::{self, IsTerminal};
use std::time::Duration;

use devkit::format::format_ms;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::results::SweepReport;
use super::runs::RunEvent;
use crate::scenario::race::Tally;

/// Receives the events of a sweep, on the thread that called
/// [`run_sweep`](super::run_sweep). Every method does nothing by default.
pub trait SweepObserver {
    /// The sweep starts `planned` runs, `jobs` at a time.
    fn started(&mut self, _planned: usize, _jobs: usize) {}

    /// A run finished.
    fn run_done(&mut self, _event: &RunEvent<'_>) {}

    /// The stop flag was seen after `done` of `planned` runs: no new run
    /// starts, runs in flight are being abandoned.
    fn stopping(&mut self, _done: usize, _planned: usize) {}

    /// The sweep ended (completely or not).
    fn finished(&mut self, _report: &SweepReport) {}
}

/// Observes nothing.
impl SweepObserver for () {}

/// Progress on stderr: a bar on a terminal, plain lines otherwise (the
/// bar is then hidden but still keeps the count and the estimate).
#[derive(Debug)]
pub struct TerminalProgress {
    bar: ProgressBar,
    plain: bool,
}

impl Default for TerminalProgress {
    fn default() -> Self {
        Self::new()
    }
}

impl TerminalProgress {
    /// A bar when stderr is a terminal, plain lines otherwise.
    pub fn new() -> Self {
        let plain = !io::stderr().is_terminal();
        let template = "{elapsed_precise} [{bar:30}] {pos}/{len} runs, ETA {eta}  {msg}";
        let style = ProgressStyle::with_template(template).expect("the template is valid");
        let bar = if plain {
            ProgressBar::hidden()
        } else {
            ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr())
        };
        bar.set_style(style.progress_chars("=> "));
        Self { bar, plain }
    }
}

/// `failures 5 (daemon_unreachable 4, errors 1)`, naming only non-zero
/// kinds.
fn failures(tally: &Tally) -> String {
    let kinds: Vec<String> = tally
        .failure_kinds()
        .iter()
        .filter(|failed| failed.runs > 0)
        .map(|failed| format!("{} {}", failed.kind, failed.runs))
        .collect();
    if kinds.is_empty() {
        "failures 0".to_owned()
    } else {
        format!("failures {} ({})", tally.failures(), kinds.join(", "))
    }
}

impl SweepObserver for TerminalProgress {
    fn started(&mut self, planned: usize, jobs: usize) {
        self.bar.set_length(planned as u64);
        self.bar.reset();
        if self.plain {
            eprintln!("sweep: {planned} runs, {jobs} at a time");
        } else {
            self.bar.enable_steady_tick(Duration::from_millis(250));
        }
    }

    fn run_done(&mut self, event: &RunEvent<'_>) {
        let (point, failures) = (event.point, failures(&event.tally));
        self.bar.set_position(event.done as u64);
        if !self.plain {
            let outcome = event.result.as_ref().map_or("error", |r| r.outcome.label());
            let subject = &event.subject.label;
            let last = format!("{subject} +{} ms: {outcome}", point.offset_ms);
            return self.bar.set_message(format!("{failures}; last: {last}"));
        }
        let result = match event.result {
            Ok(r) => format!("{} ({})", r.outcome.label(), format_ms(r.racing_latency)),
            Err(error) => format!("error: {}", devkit::format::shorten(error, 200)),
        };
        eprintln!(
            "sweep [{}/{}] {} delay {} ms offset {} ms run {}: {result}; {failures}, ETA {} s",
            event.done,
            event.planned,
            event.subject.label,
            point.delay_ms,
            point.offset_ms,
            event.run + 1,
            self.bar.eta().as_secs(),
        );
    }

    fn stopping(&mut self, done: usize, planned: usize) {
        self.bar.suspend(|| {
            eprintln!(
                "sweep: interrupted after {done} of {planned} runs; abandoning the runs in \
                 flight (Ctrl-C again to exit at once)"
            );
        });
    }

    fn finished(&mut self, report: &SweepReport) {
        self.bar.finish_and_clear();
        eprintln!(
            "sweep: {} of {} runs in {:.1} s{}",
            report.runs_done,
            report.runs_planned,
            report.elapsed.as_secs_f64(),
            if report.partial { " (partial)" } else { "" }
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_name_only_what_happened() {
        assert_eq!(failures(&Tally::default()), "failures 0");
        let tally = Tally {
            ok: 3,
            daemon_unreachable: 4,
            errors: 1,
            ..Tally::default()
        };
        assert_eq!(
            failures(&tally),
            "failures 5 (daemon_unreachable 4, errors 1)"
        );
    }
}
