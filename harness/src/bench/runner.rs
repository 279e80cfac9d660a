//! The order of the whole run, and filling each [`SubjectReport`].
//!
//! The figures that are compared with the floor (sequential latency and
//! throughput) are measured *interleaved*: every subject is started and
//! warmed up, then each phase runs in [`BenchConfig::rounds`] slices, and
//! every round gives each subject its slice in turn (floor, wrapper,
//! compared wrappers). Load from other processes, CPU frequency changes and
//! scheduler placement drift over seconds; interleaving spreads that drift
//! over all subjects instead of letting it land on whichever one ran at a
//! bad moment, so the ratios stay meaningful on a busy or virtual machine.
//!
//! Order: cold starts (round-robin over the wrappers, before any load
//! process is started); start every subject, each with its own fresh fake
//! daemon; sequential rounds; for each depth, a warm-up and pipelined
//! rounds; peak RSS; recovery, one wrapper after the other; close.

use std::fs::File;
use std::time::Duration;

use tempfile::TempDir;

use super::report::{
    ColdStartStats, RecoveryStats, SequentialStats, SubjectKind, SubjectReport, ThroughputStats,
};
use super::scenarios::{
    PipelineRun, SequentialRun, cold_start, initialize, pipelined, recovery, sequential, wait_ready,
};
use super::stats::{Summary, nanos};
use super::subject::{Session, WrapperChild, WrapperEnv, connect_floor};
use super::transport::RequestTemplate;
use super::{BenchConfig, FLOOR_NAME, TOOL, WRAPPER_NAME};
use crate::bins::error_chain;
use crate::daemon::FakeDaemon;
use crate::error::HarnessError;
use crate::footprint::{CpuSnapshot, CpuUsage, peak_rss_kib};
use crate::tempdir::{short_tempdir, socket_path_in};
use crate::wrapper::WrapperCommand;

/// How long a subject may take to answer its first call successfully
/// (the real wrapper waits up to 10 s for its daemon connection).
const READY_WITHIN: Duration = Duration::from_secs(15);

/// How long a wrapper gets to exit after its stdin closes before it is
/// killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// How many distinct cold-start failures are described in the errors.
const COLD_START_ERRORS: usize = 2;

/// Measures every subject; the reports come floor first, then the wrapper,
/// then the compared wrappers in order. Only a failure of the floor is an
/// error.
pub fn run_all(config: &BenchConfig) -> Result<Vec<SubjectReport>, HarnessError> {
    let mut wrappers: Vec<(SubjectReport, &WrapperCommand)> =
        std::iter::once((WRAPPER_NAME, &config.wrapper))
            .chain(config.compare.iter().map(|(n, c)| (n.as_str(), c)))
            .map(|(name, cmd)| {
                (
                    SubjectReport::new(name, SubjectKind::Wrapper, cmd.display()),
                    cmd,
                )
            })
            .collect();
    cold_starts(config, &mut wrappers);

    let mut subjects = vec![Subject::floor(config)?];
    for (report, cmd) in wrappers {
        subjects.push(Subject::wrapper(config, report, cmd));
    }
    let mut bench = Bench { config, subjects };
    bench.sequential()?;
    for &depth in &config.depths {
        bench.pipelined(depth)?;
    }
    for subject in bench.live_wrappers() {
        subject.report.peak_rss_kib = subject.pid.and_then(peak_rss_kib);
    }
    bench.recoveries();
    Ok(bench.finish())
}

fn progress(config: &BenchConfig, what: &str) {
    if config.progress {
        eprintln!("bench: {what}");
    }
}

/// `total` split into `rounds` nearly equal slices; slice `round` of them.
fn slice(total: usize, rounds: usize, round: usize) -> usize {
    let rounds = rounds.max(1);
    total / rounds + usize::from(round < total % rounds)
}

/// Cold starts, round-robin over the wrappers so slow drift affects them
/// alike.
fn cold_starts(config: &BenchConfig, wrappers: &mut [(SubjectReport, &WrapperCommand)]) {
    if config.cold_starts == 0 {
        return;
    }
    progress(
        config,
        &format!(
            "{} cold starts per wrapper, no daemon present",
            config.cold_starts
        ),
    );
    let mut samples = vec![(Vec::new(), Vec::new(), Vec::<String>::new(), 0); wrappers.len()];
    for _ in 0..config.cold_starts {
        for ((_, cmd), (initialize, tools_list, messages, failures)) in
            wrappers.iter().zip(samples.iter_mut())
        {
            match cold_start(cmd, config.response_timeout) {
                Ok(sample) => {
                    initialize.push(nanos(sample.initialize));
                    tools_list.push(nanos(sample.tools_list));
                }
                Err(e) => {
                    *failures += 1;
                    let message = error_chain(&e);
                    if messages.len() < COLD_START_ERRORS && !messages.contains(&message) {
                        messages.push(message);
                    }
                }
            }
        }
    }
    for ((report, _), (mut initialize, mut tools_list, messages, failures)) in
        wrappers.iter_mut().zip(samples)
    {
        report.errors.extend(messages.into_iter().map(|m| {
            format!(
                "cold start ({failures} of {} failed): {m}",
                config.cold_starts
            )
        }));
        report.cold_start = Some(ColdStartStats {
            attempts: config.cold_starts,
            failures,
            initialize: Summary::from_samples(&mut initialize),
            tools_list: Summary::from_samples(&mut tools_list),
        });
    }
}

/// The client's connection to a subject.
enum Conn {
    /// Straight on the fake daemon's socket.
    Floor(Session<File, File>),
    /// On a wrapper's stdio.
    Wrapper(WrapperChild),
}

/// Runs `$body` with `$session` bound to the subject's session, whatever
/// its stream types.
macro_rules! on_session {
    ($conn:expr, $session:ident => $body:expr) => {
        match $conn {
            Conn::Floor($session) => $body,
            Conn::Wrapper(child) => {
                let $session = child.session();
                $body
            }
        }
    };
}

/// Sequential figures gathered over the rounds.
#[derive(Default)]
struct SequentialAcc {
    run: SequentialRun,
    calls: usize,
    cpu: CpuUsage,
}

/// Pipelined figures at one depth gathered over the rounds.
#[derive(Default)]
struct PipelineAcc {
    calls: usize,
    failures: usize,
    stray: usize,
    elapsed: Duration,
    cpu: CpuUsage,
}

/// One subject while the bench runs.
struct Subject {
    report: SubjectReport,
    /// `None` once the subject failed (or never started).
    conn: Option<Conn>,
    template: RequestTemplate,
    pid: Option<u32>,
    sequential: SequentialAcc,
    pipelined: Vec<(usize, PipelineAcc)>,
    // Drop order: the connection (above) first, then the daemon, then its
    // directory.
    daemon: Option<FakeDaemon>,
    _dir: Option<TempDir>,
}

impl Subject {
    /// The floor: the client on a fresh fake daemon's socket, warmed up.
    fn floor(config: &BenchConfig) -> Result<Self, HarnessError> {
        let dir = short_tempdir()?;
        let socket = socket_path_in(dir.path());
        let daemon = FakeDaemon::spawn_with(&config.fake_daemon_bin, &socket)?;
        let mut session = connect_floor(&socket, config.response_timeout)?;
        let template = RequestTemplate::daemon_call(TOOL);
        progress(config, &format!("{FLOOR_NAME}: warming up"));
        let warm = session.guarded("the warm-up", |io| {
            wait_ready(io, &template, READY_WITHIN)?;
            sequential(io, &template, config.warmup_calls).map(drop)
        });
        if let Err(e) = warm {
            return Err(floor_failed(&e, &daemon));
        }
        Ok(Self {
            report: SubjectReport::new(
                FLOOR_NAME,
                SubjectKind::Floor,
                format!(
                    "{} (client on its socket)",
                    config.fake_daemon_bin.display()
                ),
            ),
            conn: Some(Conn::Floor(session)),
            template,
            pid: None,
            sequential: SequentialAcc::default(),
            pipelined: Vec::new(),
            daemon: Some(daemon),
            _dir: Some(dir),
        })
    }

    /// A wrapper in front of a fresh fake daemon, initialised and warmed
    /// up; a failure is recorded and leaves the subject without a
    /// connection.
    fn wrapper(config: &BenchConfig, report: SubjectReport, cmd: &WrapperCommand) -> Self {
        let mut subject = Self {
            report,
            conn: None,
            template: RequestTemplate::tool_call(TOOL),
            pid: None,
            sequential: SequentialAcc::default(),
            pipelined: Vec::new(),
            daemon: None,
            _dir: None,
        };
        progress(
            config,
            &format!("{}: starting and warming up", subject.report.name),
        );
        if let Err(e) = subject.start_wrapper(config, cmd) {
            let stderr = match &mut subject.conn {
                Some(Conn::Wrapper(child)) => child.stderr_tail(),
                _ => String::new(),
            };
            subject.conn = None;
            subject.report.errors.push(format!(
                "starting: {}{}",
                error_chain(&e),
                stderr_suffix(&stderr)
            ));
        }
        subject
    }

    fn start_wrapper(
        &mut self,
        config: &BenchConfig,
        cmd: &WrapperCommand,
    ) -> Result<(), HarnessError> {
        let dir = short_tempdir()?;
        let socket = socket_path_in(dir.path());
        self._dir = Some(dir);
        self.daemon = Some(FakeDaemon::spawn_with(&config.fake_daemon_bin, &socket)?);
        let mut child = WrapperEnv::new(cmd, &socket)?.spawn(config.response_timeout)?;
        child.capture_stderr();
        self.pid = Some(child.pid());
        let child = self.conn.insert(Conn::Wrapper(child));
        let template = &self.template;
        on_session!(child, session => session.guarded("initialize and warm-up", |io| {
            initialize(io)?;
            wait_ready(io, template, READY_WITHIN)?;
            sequential(io, template, config.warmup_calls).map(drop)
        }))
    }

    fn daemon_pid(&self) -> Option<u32> {
        self.daemon.as_ref().map(FakeDaemon::pid)
    }

    /// Records `error` and drops the connection (the wrapper is killed).
    /// For the floor the error is returned instead: nothing can be compared
    /// without it.
    fn fail(&mut self, phase: &str, error: &HarnessError) -> Result<(), HarnessError> {
        let stderr = match &mut self.conn {
            Some(Conn::Wrapper(child)) => child.stderr_tail(),
            _ => String::new(),
        };
        if let Some(conn) = &self.conn {
            self.report.skipped_lines += skipped_lines(conn);
        }
        self.conn = None;
        if self.report.kind == SubjectKind::Floor {
            return Err(match &self.daemon {
                Some(daemon) => floor_failed(error, daemon),
                None => HarnessError::Scenario(error_chain(error)),
            });
        }
        self.report.errors.push(format!(
            "{phase}: {}{}",
            error_chain(error),
            stderr_suffix(&stderr)
        ));
        Ok(())
    }
}

fn skipped_lines(conn: &Conn) -> u64 {
    match conn {
        Conn::Floor(session) => session.skipped_lines(),
        Conn::Wrapper(child) => child.skipped_lines(),
    }
}

fn stderr_suffix(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!("; its stderr: {stderr}")
    }
}

fn floor_failed(error: &HarnessError, daemon: &FakeDaemon) -> HarnessError {
    HarnessError::Scenario(format!(
        "the floor (client straight on the fake daemon) failed: {}; daemon stderr: {}",
        error_chain(error),
        daemon.stderr_text().trim()
    ))
}

struct Bench<'a> {
    config: &'a BenchConfig,
    subjects: Vec<Subject>,
}

impl Bench<'_> {
    fn live_wrappers(&mut self) -> impl Iterator<Item = &mut Subject> {
        self.subjects
            .iter_mut()
            .filter(|s| s.report.kind == SubjectKind::Wrapper && s.conn.is_some())
    }

    /// Sequential calls, `rounds` slices per subject, interleaved; each
    /// slice after a short unmeasured warm-up.
    fn sequential(&mut self) -> Result<(), HarnessError> {
        let config = self.config;
        let rounds = config.rounds.max(1);
        let warmup = config.warmup_calls / rounds;
        for round in 0..rounds {
            progress(
                config,
                &format!(
                    "sequential calls, round {}/{rounds}, {} calls per subject",
                    round + 1,
                    slice(config.calls, rounds, round)
                ),
            );
            let calls = slice(config.calls, rounds, round);
            for subject in &mut self.subjects {
                let (pid, daemon) = (subject.pid, subject.daemon_pid());
                let Some(conn) = &mut subject.conn else {
                    continue;
                };
                let template = &subject.template;
                let result = on_session!(conn, session => session.guarded("sequential calls", |io| {
                    sequential(io, template, warmup)?;
                    let before = daemon.map(|d| CpuSnapshot::take(pid, d));
                    let run = sequential(io, template, calls)?;
                    let after = daemon.map(|d| CpuSnapshot::take(pid, d));
                    let cpu = before.zip(after).map(|(b, a)| b.usage_until(&a));
                    Ok((run, cpu))
                }));
                match result {
                    Ok((run, cpu)) => {
                        let acc = &mut subject.sequential;
                        acc.run.samples.extend(run.samples);
                        acc.run.failures += run.failures;
                        acc.calls += calls;
                        if let Some(cpu) = cpu {
                            acc.cpu.add(&cpu);
                        }
                    }
                    Err(e) => subject.fail("sequential calls", &e)?,
                }
            }
        }
        for subject in &mut self.subjects {
            // Only subjects that finished every round get a figure.
            if subject.conn.is_some() && subject.sequential.calls > 0 {
                let acc = std::mem::take(&mut subject.sequential);
                subject.report.sequential = Some(SequentialStats::new(
                    acc.calls,
                    acc.run,
                    acc.cpu.share(),
                    acc.cpu.per_call(acc.calls),
                ));
            }
        }
        Ok(())
    }

    /// Pipelined calls at `depth`: a warm-up per subject, then `rounds`
    /// slices per subject, interleaved.
    fn pipelined(&mut self, depth: usize) -> Result<(), HarnessError> {
        let config = self.config;
        let rounds = config.rounds.max(1);
        let warmup = config.warmup_calls / rounds;
        for subject in &mut self.subjects {
            subject.pipelined.push((depth, PipelineAcc::default()));
        }
        for round in 0..rounds {
            let calls = slice(config.pipelined_calls, rounds, round);
            progress(
                config,
                &format!(
                    "{depth} in flight, round {}/{rounds}, {calls} calls per subject",
                    round + 1
                ),
            );
            for subject in &mut self.subjects {
                let (pid, daemon) = (subject.pid, subject.daemon_pid());
                let Some(conn) = &mut subject.conn else {
                    continue;
                };
                let template = &subject.template;
                let result = on_session!(conn, session => session.guarded("pipelined calls", |io| {
                    if warmup > 0 {
                        pipelined(io, template, warmup, depth)?;
                    }
                    let before = daemon.map(|d| CpuSnapshot::take(pid, d));
                    let run = pipelined(io, template, calls, depth)?;
                    let after = daemon.map(|d| CpuSnapshot::take(pid, d));
                    let cpu = before.zip(after).map(|(b, a)| b.usage_until(&a));
                    Ok((run, cpu))
                }));
                match result {
                    Ok((run, cpu)) => {
                        if let Some((_, acc)) = subject.pipelined.last_mut() {
                            acc.calls += run.calls;
                            acc.failures += run.failures;
                            acc.stray += run.stray;
                            acc.elapsed += run.elapsed;
                            if let Some(cpu) = cpu {
                                acc.cpu.add(&cpu);
                            }
                        }
                    }
                    Err(e) => subject.fail(&format!("pipelined calls, {depth} in flight"), &e)?,
                }
            }
        }
        for subject in &mut self.subjects {
            // Only subjects that finished every round get a figure.
            if subject.conn.is_none() {
                continue;
            }
            if let Some((depth, acc)) = subject.pipelined.pop() {
                let run = PipelineRun {
                    calls: acc.calls,
                    failures: acc.failures,
                    stray: acc.stray,
                    elapsed: acc.elapsed,
                };
                subject.report.pipelined.push(ThroughputStats::new(
                    depth,
                    &run,
                    acc.cpu.share(),
                    acc.cpu.per_call(acc.calls),
                ));
            }
        }
        Ok(())
    }

    /// Recovery, one wrapper after the other (nothing to compare with the
    /// floor here).
    fn recoveries(&mut self) {
        let config = self.config;
        if config.recoveries == 0 {
            return;
        }
        for subject in self.live_wrappers() {
            progress(
                config,
                &format!(
                    "{}: {} recoveries from DROP",
                    subject.report.name, config.recoveries
                ),
            );
            let (Some(Conn::Wrapper(child)), Some(daemon)) = (&mut subject.conn, &subject.daemon)
            else {
                continue;
            };
            let template = &subject.template;
            let result = child.session().guarded("recovery", |io| {
                recovery(io, template, daemon, config.recoveries, READY_WITHIN)
            });
            match result {
                Ok(run) => subject.report.recovery = Some(RecoveryStats::new(run)),
                // Wrappers only: `fail` cannot return an error here.
                Err(e) => {
                    let _ = subject.fail("recovery", &e);
                }
            }
        }
    }

    /// Closes every connection (wrappers get a grace period to exit) and
    /// returns the reports.
    fn finish(self) -> Vec<SubjectReport> {
        self.subjects
            .into_iter()
            .map(|mut subject| {
                if let Some(conn) = &mut subject.conn {
                    subject.report.skipped_lines += skipped_lines(conn);
                    if let Conn::Wrapper(child) = conn {
                        child.close(EXIT_GRACE);
                    }
                }
                subject.report
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_add_up() {
        for (total, rounds) in [(10_000, 5), (7, 3), (2, 5), (0, 4), (5, 0)] {
            let sum: usize = (0..rounds.max(1)).map(|r| slice(total, rounds, r)).sum();
            assert_eq!(sum, total, "{total} in {rounds}");
        }
        assert_eq!(
            (0..3).map(|r| slice(7, 3, r)).collect::<Vec<_>>(),
            [3, 2, 2]
        );
    }
}
