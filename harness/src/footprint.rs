//! What a process costs, read from `/proc` (Linux only; elsewhere every
//! figure is `None` and reports say "n/a"): resident memory and descriptors
//! ([`Footprint`]) for the checks that a wrapper stays flat, and the memory
//! high-water mark, CPU time, system calls and context switches
//! ([`peak_rss_kib`], [`Counters`]) for the benchmarks.

use std::fs;
use std::time::{Duration, Instant};

use serde::Serialize;

/// Resident memory and open file descriptors of a process, read from
/// `/proc` (Linux). Elsewhere, or when the process is gone, the figures are
/// `None` and the checks built on them are reported as not made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Footprint {
    /// `VmRSS` of `/proc/<pid>/status`, in KiB.
    pub rss_kib: Option<u64>,
    /// Entries of `/proc/<pid>/fd`.
    pub fds: Option<u64>,
}

impl Footprint {
    /// Samples process `pid` now.
    pub fn sample(pid: u32) -> Self {
        let rss_kib = status_kib(pid, "VmRSS:");
        let fds = fs::read_dir(format!("/proc/{pid}/fd"))
            .ok()
            .map(|entries| entries.filter(Result::is_ok).count() as u64);
        Self { rss_kib, fds }
    }
}

/// Growth from `start` to `end` in KiB (negative when it shrank), if both
/// are known.
pub(crate) fn growth(start: Option<u64>, end: Option<u64>) -> Option<i64> {
    Some(i64::try_from(end?).ok()? - i64::try_from(start?).ok()?)
}

/// Whether process `pid` has ended: gone, or a zombie waiting for its
/// parent to reap it. Read from `/proc` on Linux; elsewhere from what the
/// system's process lister says (`ps`, or `tasklist` on Windows), since
/// there is no `/proc` to read.
pub fn has_ended(pid: u32) -> bool {
    if cfg!(target_os = "linux") {
        match fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => stat
                .rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        }
    } else {
        listed_as_ended(pid)
    }
}

/// [`has_ended`] without `/proc`: `ps -o stat= -p PID` prints nothing for
/// a process that is gone and a state starting with `Z` for a zombie;
/// Windows' `tasklist` lists a live process's pid in quotes. A lister that
/// cannot be run says nothing, so the process is taken to be alive.
fn listed_as_ended(pid: u32) -> bool {
    use std::process::{Command, Stdio};
    let mut command = if cfg!(windows) {
        let mut c = Command::new("tasklist");
        c.args(["/FO", "CSV", "/NH", "/FI"])
            .arg(format!("PID eq {pid}"));
        c
    } else {
        let mut c = Command::new("ps");
        c.args(["-o", "stat=", "-p"]).arg(pid.to_string());
        c
    };
    let Ok(output) = command.stdin(Stdio::null()).stderr(Stdio::null()).output() else {
        return false;
    };
    let listed = String::from_utf8_lossy(&output.stdout);
    if cfg!(windows) {
        !listed.contains(&format!("\"{pid}\""))
    } else {
        let state = listed.trim();
        state.is_empty() || state.starts_with('Z')
    }
}

/// `VmHWM` of `pid` in KiB, if readable.
pub fn peak_rss_kib(pid: u32) -> Option<u64> {
    status_kib(pid, "VmHWM:")
}

/// The KiB figure of the `field` line (`VmRSS:`, `VmHWM:`) of
/// `/proc/<pid>/status`, if readable.
fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    parse_status_kib(&status, field)
}

/// Extracts `<field>   1234 kB` from the text of `/proc/<pid>/status`.
fn parse_status_kib(status: &str, field: &str) -> Option<u64> {
    let mut words = field_words(status, field)?;
    let value: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") | None => Some(value),
        Some(_) => None,
    }
}

/// What a process has done so far, summed over its threads, read from
/// `/proc/<pid>/{stat,io,task/*/status,task/*/schedstat}`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    /// CPU time, nanoseconds: the sum of every thread's `schedstat` (exact),
    /// or `utime + stime` where the kernel keeps none (10 ms resolution).
    pub cpu_ns: u64,
    /// User-mode CPU time (`utime`), clock ticks: coarse, only for the
    /// user/system split.
    pub user_ticks: u64,
    /// Kernel-mode CPU time (`stime`), clock ticks.
    pub system_ticks: u64,
    /// Read-like system calls (`syscr`): those through the kernel's file
    /// read path (`read`, `readv`, `pread64`, `splice`...) on pipes, files
    /// and sockets alike, `EAGAIN` included; not `recv*`, `epoll_*`, `futex`.
    pub read_calls: u64,
    /// Write-like system calls (`syscw`), counted the same way.
    pub write_calls: u64,
    /// Voluntary context switches of every live thread: waits that slept.
    pub voluntary_switches: u64,
    /// Involuntary context switches of every live thread: preemptions.
    pub involuntary_switches: u64,
}

impl Counters {
    /// Reads the counters of `which` (a pid, or `self`); `None` when the
    /// process is gone or `/proc` is not there.
    pub fn read(which: &str) -> Option<Self> {
        let stat = fs::read_to_string(format!("/proc/{which}/stat")).ok()?;
        let (user_ticks, system_ticks) = parse_stat_ticks(&stat)?;
        let io = fs::read_to_string(format!("/proc/{which}/io")).ok()?;
        let mut counters = Self {
            user_ticks,
            system_ticks,
            read_calls: parse_field(&io, "syscr:")?,
            write_calls: parse_field(&io, "syscw:")?,
            ..Self::default()
        };
        let mut schedstat = Some(0u64);
        for task in fs::read_dir(format!("/proc/{which}/task")).ok()?.flatten() {
            let dir = task.path();
            // A thread that ends meanwhile is simply left out.
            if let Ok(status) = fs::read_to_string(dir.join("status")) {
                counters.voluntary_switches +=
                    parse_field(&status, "voluntary_ctxt_switches:").unwrap_or(0);
                counters.involuntary_switches +=
                    parse_field(&status, "nonvoluntary_ctxt_switches:").unwrap_or(0);
            }
            let on_cpu = fs::read_to_string(dir.join("schedstat"))
                .ok()
                .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok());
            schedstat = schedstat.zip(on_cpu).map(|(sum, ns)| sum + ns);
        }
        counters.cpu_ns = match schedstat {
            Some(ns) if ns > 0 => ns,
            _ => {
                let hz = ticks_per_second()?;
                ((user_ticks + system_ticks) as f64 / hz * 1e9) as u64
            }
        };
        Some(counters)
    }

    /// What was done between `earlier` and `self`.
    pub fn since(&self, earlier: &Self) -> Self {
        self.zip(earlier, u64::saturating_sub)
    }

    /// The sum of two stretches of work.
    pub fn plus(&self, other: &Self) -> Self {
        self.zip(other, |a, b| a + b)
    }

    /// `f` of every counter of `self` and the same of `other`.
    fn zip(&self, other: &Self, f: impl Fn(u64, u64) -> u64) -> Self {
        Self {
            cpu_ns: f(self.cpu_ns, other.cpu_ns),
            user_ticks: f(self.user_ticks, other.user_ticks),
            system_ticks: f(self.system_ticks, other.system_ticks),
            read_calls: f(self.read_calls, other.read_calls),
            write_calls: f(self.write_calls, other.write_calls),
            voluntary_switches: f(self.voluntary_switches, other.voluntary_switches),
            involuntary_switches: f(self.involuntary_switches, other.involuntary_switches),
        }
    }

    /// These counters divided over `calls` calls (`None` for no calls).
    pub fn per_call(&self, calls: usize) -> Option<WorkPerCall> {
        if calls == 0 {
            return None;
        }
        let n = calls as f64;
        let ticks = self.user_ticks + self.system_ticks;
        Some(WorkPerCall {
            read_calls: self.read_calls as f64 / n,
            write_calls: self.write_calls as f64 / n,
            voluntary_switches: self.voluntary_switches as f64 / n,
            involuntary_switches: self.involuntary_switches as f64 / n,
            cpu_ns: self.cpu_ns as f64 / n,
            system_share: (ticks > 0).then(|| self.system_ticks as f64 / ticks as f64),
        })
    }
}

/// A process's [`Counters`] over a phase, divided by the calls it made.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct WorkPerCall {
    /// Read-like system calls per call (see [`Counters`]).
    pub read_calls: f64,
    /// Write-like system calls per call.
    pub write_calls: f64,
    /// Voluntary context switches per call.
    pub voluntary_switches: f64,
    /// Involuntary context switches per call.
    pub involuntary_switches: f64,
    /// CPU time per call, nanoseconds.
    pub cpu_ns: f64,
    /// The part of the CPU time spent in the kernel (from the clock-tick
    /// counters; `None` when they did not move).
    pub system_share: Option<f64>,
}

impl WorkPerCall {
    /// Read-like and write-like system calls together, per call.
    pub fn io_calls(&self) -> f64 {
        self.read_calls + self.write_calls
    }
}

/// The words after `field` on its line of `/proc` text.
fn field_words<'a>(text: &'a str, field: &str) -> Option<std::str::SplitWhitespace<'a>> {
    let line = text.lines().find(|l| l.starts_with(field))?;
    Some(line[field.len()..].split_whitespace())
}

/// Parses `<field> <number>` (a trailing unit ignored) from `/proc` text.
fn parse_field(text: &str, field: &str) -> Option<u64> {
    field_words(text, field)?.next()?.parse().ok()
}

/// `(utime, stime)` (fields 14 and 15) from the text of `/proc/<pid>/stat`.
/// The command name (field 2) may contain spaces and parentheses, so fields
/// are counted after its last `)`.
fn parse_stat_ticks(stat: &str) -> Option<(u64, u64)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    // `rest` starts at field 3 (state); utime is field 14.
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some((utime, stime))
}

#[cfg(unix)]
fn ticks_per_second() -> Option<f64> {
    use nix::unistd::{SysconfVar, sysconf};
    match sysconf(SysconfVar::CLK_TCK) {
        Ok(Some(ticks)) if ticks > 0 => Some(ticks as f64),
        _ => None,
    }
}

/// No clock ticks to convert where there is no `/proc` to read them from.
#[cfg(not(unix))]
fn ticks_per_second() -> Option<f64> {
    None
}

/// How busy each process was during a phase, in percent of one core
/// (`200` is two cores fully busy), from [`Counters::cpu_ns`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CpuShare {
    /// The bench process itself (client threads included).
    pub client_pct: Option<f64>,
    /// The wrapper under test (`None` for the floor, which has none).
    pub subject_pct: Option<f64>,
    /// The fake daemon.
    pub daemon_pct: Option<f64>,
}

/// The counters of the three processes at one instant.
#[derive(Debug, Clone, Copy)]
pub struct CpuSnapshot {
    at: Instant,
    /// The bench (client), the subject and the daemon.
    procs: [Option<Counters>; 3],
}

impl CpuSnapshot {
    /// Reads the counters of the bench, the subject (if any) and the
    /// daemon now.
    pub fn take(subject: Option<u32>, daemon: u32) -> Self {
        let read = |pid: u32| Counters::read(&pid.to_string());
        Self {
            at: Instant::now(),
            procs: [Counters::read("self"), subject.and_then(read), read(daemon)],
        }
    }

    /// What each process did between `self` and the later `end`.
    pub fn usage_until(&self, end: &Self) -> CpuUsage {
        CpuUsage {
            wall: end.at.saturating_duration_since(self.at),
            procs: std::array::from_fn(|i| Some(end.procs[i]?.since(&self.procs[i]?))),
        }
    }
}

/// What each process did over some wall-clock time; usages of several
/// slices of a phase add up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuUsage {
    wall: Duration,
    /// The bench (client), the subject and the daemon.
    procs: [Option<Counters>; 3],
}

/// Per-call work of the three processes over a phase.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PhaseWork {
    /// The bench process (the client; the floor's subject).
    pub client: Option<WorkPerCall>,
    /// The wrapper under test (`None` for the floor).
    pub subject: Option<WorkPerCall>,
    /// The fake daemon.
    pub daemon: Option<WorkPerCall>,
}

impl CpuUsage {
    /// Adds another slice; a figure missing from either side is missing
    /// from the sum.
    pub fn add(&mut self, other: &Self) {
        let (mine, theirs) = (self.procs, other.procs);
        self.procs = if self.wall.is_zero() {
            theirs
        } else {
            std::array::from_fn(|i| Some(mine[i]?.plus(&theirs[i]?)))
        };
        self.wall += other.wall;
    }

    /// The usage as shares of one core.
    pub fn share(&self) -> Option<CpuShare> {
        let wall = self.wall.as_secs_f64();
        if wall <= 0.0 {
            return None;
        }
        let [client_pct, subject_pct, daemon_pct] = self
            .procs
            .map(|c| Some(c?.cpu_ns as f64 / 1e9 / wall * 100.0));
        Some(CpuShare {
            client_pct,
            subject_pct,
            daemon_pct,
        })
    }

    /// The usage divided over `calls` calls.
    pub fn per_call(&self, calls: usize) -> Option<PhaseWork> {
        if self.wall.is_zero() {
            return None;
        }
        let [client, subject, daemon] = self.procs.map(|c| c?.per_call(calls));
        Some(PhaseWork {
            client,
            subject,
            daemon,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_text() {
        let status = "Name:\tx\nVmPeak:\t  9000 kB\nVmHWM:\t    4321 kB\nVmRSS:\t 4000 kB\n";
        assert_eq!(parse_status_kib(status, "VmHWM:"), Some(4321));
        assert_eq!(parse_status_kib(status, "VmRSS:"), Some(4000));
        assert_eq!(parse_status_kib("Name:\tx\n", "VmHWM:"), None);
        assert_eq!(parse_status_kib("VmHWM:\t12 MB\n", "VmHWM:"), None);
        // The command name may hold spaces and parentheses.
        let stat = "1234 (a (b) c) S 1 2 3 4 5 6 7 8 9 10 70 30 0 0 20 0 1 0";
        assert_eq!(parse_stat_ticks(stat), Some((70, 30)));
        assert_eq!(parse_stat_ticks("1234 (x) S 1 2"), None);
    }

    #[test]
    fn usages_add_up() {
        let work = |cpu_ns, read_calls| Counters {
            cpu_ns,
            read_calls,
            ..Counters::default()
        };
        let slice = |ms, client, subject| CpuUsage {
            wall: Duration::from_millis(ms),
            procs: [Some(work(client, 1)), subject, Some(work(1, 2))],
        };
        let mut total = CpuUsage::default();
        total.add(&slice(500, 10, Some(work(20, 3))));
        total.add(&slice(500, 30, None));
        assert_eq!(total.wall, Duration::from_secs(1));
        assert_eq!(total.procs, [Some(work(40, 2)), None, Some(work(2, 4))]);
        assert!(CpuUsage::default().share().is_none());
        let per_call = total.per_call(2).expect("a phase");
        assert_eq!(
            per_call.daemon.map(|d| (d.cpu_ns, d.read_calls)),
            Some((1.0, 2.0))
        );
        assert_eq!(per_call.subject, None);
    }

    #[test]
    fn growth_is_signed() {
        assert_eq!(growth(Some(10), Some(4)), Some(-6));
        assert_eq!(growth(None, Some(4)), None);
    }

    #[test]
    fn a_live_process_has_not_ended_and_a_reaped_one_has() {
        assert!(!has_ended(std::process::id()));
        assert!(!listed_as_ended(std::process::id()));
        let mut child = std::process::Command::new(std::env::current_exe().expect("test binary"))
            .arg("--list")
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("the test binary starts");
        let pid = child.id();
        child.wait().expect("reaped");
        assert!(has_ended(pid));
        assert!(listed_as_ended(pid));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn reads_this_process() {
        let me = Footprint::sample(std::process::id());
        assert!(me.rss_kib.is_some_and(|k| k > 0), "{me:?}");
        assert!(me.fds.is_some_and(|n| n >= 3), "{me:?}");
        assert!(!has_ended(std::process::id()));
        assert!(peak_rss_kib(std::process::id()).is_some_and(|kib| kib > 0));
        let before = Counters::read("self").expect("readable");
        std::fs::read_to_string("/proc/self/stat").expect("readable");
        let after = Counters::read("self").expect("readable");
        assert!(after.since(&before).read_calls >= 1);
    }
}
