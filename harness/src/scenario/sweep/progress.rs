//! Telling someone how a sweep is going: [`TerminalProgress`] draws a bar
//! on a terminal and prints a plain line per run otherwise (logs, tests).

use std::io::{self, IsTerminal};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::{RunEvent, SweepReport, Tally};
use crate::scenario::format_ms;

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

/// Progress on stderr: a bar on a terminal, plain lines otherwise.
#[derive(Debug)]
pub(crate) struct TerminalProgress {
    bar: Option<ProgressBar>,
    started: Instant,
    planned: usize,
}

impl TerminalProgress {
    /// A bar when stderr is a terminal, plain lines otherwise.
    pub(crate) fn new() -> Self {
        let bar = io::stderr().is_terminal().then(|| {
            let template = "{elapsed_precise} [{bar:30}] {pos}/{len} runs, ETA {eta}  {msg}";
            let style = ProgressStyle::with_template(template).expect("the template is valid");
            let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
            bar.set_style(style.progress_chars("=> "));
            bar
        });
        Self {
            bar,
            started: Instant::now(),
            planned: 0,
        }
    }

    /// The estimated time left after `done` of the planned runs.
    fn eta(&self, done: usize) -> Option<Duration> {
        let left = self.planned.checked_sub(done)?;
        let done = u32::try_from(done).ok().filter(|&d| d > 0)?;
        let left = u32::try_from(left).ok()?;
        Some(self.started.elapsed() / done * left)
    }
}

/// `failures 5 (daemon_unreachable 4, errors 1)`, naming only non-zero
/// kinds.
fn failures(tally: &Tally) -> String {
    let kinds: Vec<String> = [
        ("daemon_unreachable", tally.daemon_unreachable),
        ("other", tally.other_error),
        ("timeout", tally.timeout),
        ("errors", tally.errors),
    ]
    .iter()
    .filter(|(_, n)| *n > 0)
    .map(|(name, n)| format!("{name} {n}"))
    .collect();
    if kinds.is_empty() {
        "failures 0".to_owned()
    } else {
        format!("failures {} ({})", tally.failures(), kinds.join(", "))
    }
}

impl SweepObserver for TerminalProgress {
    fn started(&mut self, planned: usize, jobs: usize) {
        self.started = Instant::now();
        self.planned = planned;
        match &self.bar {
            Some(bar) => {
                bar.set_length(planned as u64);
                bar.reset_eta();
                bar.reset_elapsed();
                bar.enable_steady_tick(Duration::from_millis(250));
            }
            None => eprintln!("sweep: {planned} runs, {jobs} at a time"),
        }
    }

    fn run_done(&mut self, event: &RunEvent<'_>) {
        match &self.bar {
            Some(bar) => {
                bar.set_position(event.done as u64);
                bar.set_message(format!(
                    "{}; last: {} +{} ms: {}",
                    failures(&event.tally),
                    event.subject.label,
                    event.point.offset_ms,
                    event.result.as_ref().map_or("error", |r| r.outcome.label())
                ));
            }
            None => eprintln!(
                "sweep [{}/{}] {} delay {} ms offset {} ms run {}: {}; {}, ETA {}",
                event.done,
                event.planned,
                event.subject.label,
                event.point.delay_ms,
                event.point.offset_ms,
                event.run + 1,
                match event.result {
                    Ok(r) => format!("{} ({})", r.outcome.label(), format_ms(r.racing_latency)),
                    Err(error) => format!("error: {}", super::shorten(error, 200)),
                },
                failures(&event.tally),
                self.eta(event.done)
                    .map_or_else(|| "n/a".to_owned(), |eta| format!("{} s", eta.as_secs())),
            ),
        }
    }

    fn stopping(&mut self, done: usize, planned: usize) {
        let line = format!(
            "sweep: interrupted after {done} of {planned} runs; abandoning the runs in flight \
             (Ctrl-C again to exit at once)"
        );
        match &self.bar {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
    }

    fn finished(&mut self, report: &SweepReport) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
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
