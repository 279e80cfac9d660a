//! What a host's session start costs the machine, with the real daemon and
//! the iai-mcp release installed beside the wrapper: not the wrapper's own
//! start alone, but the wrapper and every process it starts (the
//! `iai-mcp doctor` 3.3.0 runs at every session's `initialized`).
//!
//! For each wrapper measured, one run of the real daemon is started in the
//! end-to-end kit's environment (`target/e2e/venv`, made by `cargo xtask
//! e2e`), then a series of session starts one after another, each as a
//! host makes it: the wrapper started, `initialize`, `initialized`,
//! `tools/list`, then left until it has no process below it for
//! [`SETTLED`] (the doctor, if it runs, has ended), then its standard
//! input closed and the process reaped. Measured per session start:
//!
//! - from the spawn to the `tools/list` answer (the cold start with the
//!   release beside: the wrapper reads the release's surface, or its cache
//!   of it);
//! - CPU time of the wrapper and of every process below it that it
//!   reaped, from `getrusage(RUSAGE_CHILDREN)` before and after (exact);
//! - the peak resident memory of the wrapper's process tree, the sum of
//!   `VmRSS` over the tree sampled every [`SAMPLE`] (a sample, not a
//!   high-water mark: a process shorter than the interval can be missed);
//! - the doctor runs, as the distinct children of the wrapper whose
//!   command line has the argument `doctor` (what a doctor starts below
//!   itself is part of its run).
//!
//! Figures only; nothing here passes or fails.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use devkit::reap::{descendants, parent_of};
use harness::error::HarnessError;
use harness::wrapper::{WrapperCommand, WrapperProcess};
use nix::sys::resource::{UsageWho, getrusage};
use serde_json::json;

use super::stats::{Summary, nanos};
use crate::e2e::daemon::RealDaemon;
use crate::e2e::pyenv::PyEnv;

/// Default number of session starts per wrapper.
pub const DEFAULT_SESSION_STARTS: usize = 20;

/// How long a session's process tree must have nothing below the wrapper
/// before the session counts as settled.
pub const SETTLED: Duration = Duration::from_millis(300);

/// The interval of the process tree's samples.
pub const SAMPLE: Duration = Duration::from_millis(5);

/// Longest a session is left to settle (a doctor is killed at 5 s).
const SETTLE_BOUND: Duration = Duration::from_secs(15);

/// Bound on each answer.
const REPLY: Duration = Duration::from_secs(30);

/// The MCP revision the sessions ask for.
const PROTOCOL: &str = "2025-06-18";

/// A wrapper to measure, and how it finds the release beside it.
#[derive(Debug, Clone)]
pub struct SessionSubject {
    /// Its name in the report.
    pub name: String,
    /// How to start it.
    pub cmd: WrapperCommand,
    /// Settings naming the environment's programs to it, as a user's
    /// installation would.
    pub env: Vec<(OsString, OsString)>,
}

/// What one session start cost.
#[derive(Debug, Clone, Copy)]
pub struct SessionCost {
    /// From the spawn to the `tools/list` answer.
    pub to_tools_list: Duration,
    /// CPU time, user and system, of the wrapper and everything it reaped.
    pub cpu: Duration,
    /// The largest sampled resident memory of the process tree, in KiB.
    pub peak_tree_kib: u64,
    /// Doctor processes seen below the wrapper.
    pub doctor_runs: usize,
}

/// One wrapper's series.
#[derive(Debug, Clone)]
pub struct SessionSeries {
    /// The wrapper's name.
    pub name: String,
    /// Each session start, in order; empty when the series failed.
    pub sessions: Vec<SessionCost>,
    /// Why the series stopped early, if it did.
    pub error: Option<String>,
}

impl SessionSeries {
    /// CPU time of all the series' session starts together.
    pub fn total_cpu(&self) -> Duration {
        self.sessions.iter().map(|s| s.cpu).sum()
    }

    /// Doctor runs over the series.
    pub fn doctor_runs(&self) -> usize {
        self.sessions.iter().map(|s| s.doctor_runs).sum()
    }
}

/// Measures `count` session starts of each subject, each subject against
/// a run of the real daemon of its own in `py`.
pub fn measure(py: &PyEnv, subjects: &[SessionSubject], count: usize) -> Vec<SessionSeries> {
    subjects
        .iter()
        .map(|subject| {
            let mut sessions = Vec::new();
            let error = series(py, subject, count, &mut sessions)
                .err()
                .map(|e| devkit::bins::error_chain(&e));
            SessionSeries {
                name: subject.name.clone(),
                sessions,
                error,
            }
        })
        .collect()
}

/// One subject's series against a daemon run of its own; the daemon is
/// stopped when the series ends, on every path.
fn series(
    py: &PyEnv,
    subject: &SessionSubject,
    count: usize,
    sessions: &mut Vec<SessionCost>,
) -> Result<(), HarnessError> {
    let real = RealDaemon::start(py)?;
    for _ in 0..count {
        sessions.push(session_start(&real, py, subject)?);
    }
    Ok(())
}

/// One session start, as a host makes it, and what it cost.
fn session_start(
    real: &RealDaemon,
    py: &PyEnv,
    subject: &SessionSubject,
) -> Result<SessionCost, HarnessError> {
    let mut opts = real.wrapper_options(None, py);
    // The doctor runs, as for a user; each wrapper is pointed at the
    // environment's programs its own way (`subject.env`), and they are on
    // PATH too.
    opts.extra_env.retain(|(key, _)| key != "IAI_MCP_DOCTOR");
    for (key, value) in &subject.env {
        opts = opts.env(key, value);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut paths = vec![py.bin()];
    paths.extend(std::env::split_paths(&path));
    let joined = std::env::join_paths(paths)
        .map_err(|e| HarnessError::Scenario(format!("PATH for the session: {e}")))?;
    opts = opts.env("PATH", joined);
    let before = children_cpu()?;
    let started = Instant::now();
    let mut wrapper = WrapperProcess::spawn(&subject.cmd, &opts)?;
    wrapper.initialize(PROTOCOL)?;
    wrapper.request("tools/list", json!({}), REPLY)?;
    let to_tools_list = started.elapsed();
    let tree = settle(wrapper.pid());
    wrapper.close_stdin();
    if wrapper.wait_exit(REPLY).is_err() {
        wrapper.kill()?;
    }
    let cpu = children_cpu()?.saturating_sub(before);
    Ok(SessionCost {
        to_tools_list,
        cpu,
        peak_tree_kib: tree.peak_kib,
        doctor_runs: tree.doctors.len(),
    })
}

/// What the samples of a session's process tree found.
#[derive(Debug, Default)]
struct TreeSamples {
    peak_kib: u64,
    doctors: BTreeSet<u32>,
}

/// Samples the tree below `pid` until nothing has run below it for
/// [`SETTLED`] (or [`SETTLE_BOUND`] has passed).
fn settle(pid: u32) -> TreeSamples {
    let mut samples = TreeSamples::default();
    let bound = Instant::now() + SETTLE_BOUND;
    let mut quiet_since = Instant::now();
    while Instant::now() < bound {
        let below = descendants(pid);
        let tree_kib: u64 = std::iter::once(pid)
            .chain(below.iter().copied())
            .filter_map(rss_kib)
            .sum();
        samples.peak_kib = samples.peak_kib.max(tree_kib);
        for child in &below {
            // A run is the wrapper's own child; what the doctor starts
            // below itself is part of that run.
            if parent_of(*child) == Some(pid) && names_doctor(*child) {
                samples.doctors.insert(*child);
            }
        }
        if !below.is_empty() {
            quiet_since = Instant::now();
        } else if quiet_since.elapsed() >= SETTLED {
            break;
        }
        std::thread::sleep(SAMPLE);
    }
    samples
}

/// `VmRSS` of `pid`, in KiB.
fn rss_kib(pid: u32) -> Option<u64> {
    harness::footprint::Footprint::sample(pid).rss_kib
}

/// Whether `pid`'s command line has an argument `doctor`.
fn names_doctor(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .is_ok_and(|line| line.split(|b| *b == 0).any(|arg| arg == b"doctor"))
}

/// CPU time, user and system, of this process's reaped children so far.
fn children_cpu() -> Result<Duration, HarnessError> {
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN)
        .map_err(|e| HarnessError::io("getrusage", std::io::Error::from(e)))?;
    let time = |t: nix::sys::time::TimeVal| {
        Duration::from_secs(u64::try_from(t.tv_sec()).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t.tv_usec()).unwrap_or(0))
    };
    Ok(time(usage.user_time()) + time(usage.system_time()))
}

/// The subjects in `py`: the workspace's wrapper, with its settings for
/// the `iai` and `iai-mcp` programs (as iai-mcp's installer writes them
/// into a host's entry), and, with `node`, the release's own Node wrapper,
/// whose one setting names the program it runs `doctor` of (`iai-mcp`,
/// its default).
pub fn subjects(
    py: &PyEnv,
    wrapper: &WrapperCommand,
    node: Option<&Path>,
) -> Result<Vec<SessionSubject>, HarnessError> {
    let program = |name: &str| OsString::from(py.program(name));
    let mut subjects = vec![SessionSubject {
        name: super::config::WRAPPER_NAME.to_owned(),
        cmd: wrapper.clone(),
        env: vec![
            ("IAI_MCP_CLI".into(), program("iai")),
            ("IAI_MCP_ADMIN_CLI".into(), program("iai-mcp")),
        ],
    }];
    if let Some(node) = node {
        subjects.push(SessionSubject {
            name: "node (the release's own)".to_owned(),
            cmd: WrapperCommand {
                args: vec![py.bundled_wrapper()?.into()],
                ..WrapperCommand::new(node)
            },
            env: vec![("IAI_MCP_CLI".into(), program("iai-mcp"))],
        });
    }
    Ok(subjects)
}

/// Nanoseconds as milliseconds, for the table.
fn ms(ns: u64) -> String {
    format!("{:.1} ms", ns as f64 / 1e6)
}

/// The series as a Markdown section.
pub fn to_markdown(series: &[SessionSeries], release: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## Session starts against one run of the real daemon (iai-pme {release} beside the wrapper)\n"
    );
    let _ = writeln!(
        out,
        "| wrapper | session starts | to tools/list p50 | max | CPU per start, children included (mean) | CPU, all starts | peak tree memory (sampled) p50 | max | doctor runs |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|");
    for s in series {
        let mut to_list: Vec<u64> = s.sessions.iter().map(|c| nanos(c.to_tools_list)).collect();
        let summary = Summary::from_samples(&mut to_list);
        let n = s.sessions.len().max(1) as f64;
        let mut peaks: Vec<u64> = s.sessions.iter().map(|c| c.peak_tree_kib).collect();
        peaks.sort_unstable();
        let peak_p50 = peaks
            .get(peaks.len().saturating_sub(1) / 2)
            .copied()
            .unwrap_or(0);
        let peak = peaks.last().copied().unwrap_or(0);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {:.1} ms | {:.0} ms | {:.1} MiB | {:.1} MiB | {} |",
            s.name,
            s.sessions.len(),
            summary.map_or("n/a".to_owned(), |m| ms(m.p50_ns)),
            summary.map_or("n/a".to_owned(), |m| ms(m.max_ns)),
            s.total_cpu().as_secs_f64() * 1000.0 / n,
            s.total_cpu().as_secs_f64() * 1000.0,
            peak_p50 as f64 / 1024.0,
            peak as f64 / 1024.0,
            s.doctor_runs(),
        );
        if let Some(error) = &s.error {
            let _ = writeln!(out, "\n{}: stopped early: {error}\n", s.name);
        }
    }
    out
}
