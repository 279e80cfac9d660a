//! What a process costs, read from `/proc` (Linux only; elsewhere every
//! figure is `None` and reports say "n/a").
//!
//! - [`Footprint`]: resident memory (`VmRSS`) and open descriptors now, for
//!   the checks that a wrapper stays flat over a hostile run or a soak.
//! - [`peak_rss_kib`]: the resident high-water mark (`VmHWM`), for the
//!   benchmarks.
//! - CPU time: `utime + stime` of `/proc/<pid>/stat` (all threads), in
//!   clock ticks, so a benchmark phase can report how busy the client, the
//!   subject and the fake daemon were.

use std::fs;
use std::time::{Duration, Instant};

use nix::unistd::{SysconfVar, sysconf};
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
/// parent to reap it.
pub fn has_ended(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

/// `VmHWM` of `pid` in KiB, if readable.
pub fn peak_rss_kib(pid: u32) -> Option<u64> {
    status_kib(pid, "VmHWM:")
}

/// The KiB figure of the `field` line (`VmRSS:`, `VmHWM:`) of
/// `/proc/<pid>/status`, if readable.
fn status_kib(pid: u32, field: &str) -> Option<u64> {
    parse_status_kib(
        &fs::read_to_string(format!("/proc/{pid}/status")).ok()?,
        field,
    )
}

/// Extracts `<field>   1234 kB` from the text of `/proc/<pid>/status`.
fn parse_status_kib(status: &str, field: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(field))?;
    let mut words = line[field.len()..].split_whitespace();
    let value: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") | None => Some(value),
        Some(_) => None,
    }
}

/// CPU time (user + system, all threads) of `/proc/<which>/stat`, in clock
/// ticks; `which` is a pid or `self`.
fn cpu_ticks(which: &str) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{which}/stat")).ok()?;
    parse_stat_ticks(&stat)
}

/// `utime + stime` (fields 14 and 15) from the text of `/proc/<pid>/stat`.
/// The command name (field 2) may contain spaces and parentheses, so fields
/// are counted after its last `)`.
fn parse_stat_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    // `rest` starts at field 3 (state); utime is field 14.
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

fn ticks_per_second() -> Option<f64> {
    match sysconf(SysconfVar::CLK_TCK) {
        Ok(Some(ticks)) if ticks > 0 => Some(ticks as f64),
        _ => None,
    }
}

/// How busy each process was during a phase, in percent of one core
/// (`200` is two cores fully busy). Clock ticks are 10 ms on Linux, so
/// phases shorter than about a second give coarse figures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CpuShare {
    /// The bench process itself (client threads included).
    pub client_pct: Option<f64>,
    /// The wrapper under test (`None` for the floor, which has none).
    pub subject_pct: Option<f64>,
    /// The fake daemon.
    pub daemon_pct: Option<f64>,
}

/// CPU times of the three processes at one instant.
#[derive(Debug, Clone, Copy)]
pub struct CpuSnapshot {
    at: Instant,
    client: Option<u64>,
    subject: Option<u64>,
    daemon: Option<u64>,
}

impl CpuSnapshot {
    /// Reads the CPU times of the bench, the subject (if any) and the
    /// daemon now.
    pub fn take(subject: Option<u32>, daemon: u32) -> Self {
        Self {
            at: Instant::now(),
            client: cpu_ticks("self"),
            subject: subject.and_then(|pid| cpu_ticks(&pid.to_string())),
            daemon: cpu_ticks(&daemon.to_string()),
        }
    }

    /// The CPU time each process used between `self` and the later `end`.
    pub fn usage_until(&self, end: &Self) -> CpuUsage {
        let used = |a: Option<u64>, b: Option<u64>| b?.checked_sub(a?);
        CpuUsage {
            wall: end.at.saturating_duration_since(self.at),
            client: used(self.client, end.client),
            subject: used(self.subject, end.subject),
            daemon: used(self.daemon, end.daemon),
        }
    }
}

/// CPU time used by each process over some wall-clock time, in clock
/// ticks; usages of several slices of a phase add up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuUsage {
    wall: Duration,
    client: Option<u64>,
    subject: Option<u64>,
    daemon: Option<u64>,
}

impl CpuUsage {
    /// Adds another slice; a figure missing from either side is missing
    /// from the sum.
    pub fn add(&mut self, other: &Self) {
        let empty = self.wall.is_zero();
        let sum = |a: Option<u64>, b: Option<u64>| {
            if empty { b } else { Some(a? + b?) }
        };
        self.client = sum(self.client, other.client);
        self.subject = sum(self.subject, other.subject);
        self.daemon = sum(self.daemon, other.daemon);
        self.wall += other.wall;
    }

    /// The usage as shares of one core.
    pub fn share(&self) -> Option<CpuShare> {
        let hz = ticks_per_second()?;
        let wall = self.wall.as_secs_f64();
        if wall <= 0.0 {
            return None;
        }
        let pct = |ticks: Option<u64>| Some(ticks? as f64 / hz / wall * 100.0);
        Some(CpuShare {
            client_pct: pct(self.client),
            subject_pct: pct(self.subject),
            daemon_pct: pct(self.daemon),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_status_fields() {
        let status = "Name:\tx\nVmPeak:\t  9000 kB\nVmHWM:\t    4321 kB\nVmRSS:\t 4000 kB\n";
        assert_eq!(parse_status_kib(status, "VmHWM:"), Some(4321));
        assert_eq!(parse_status_kib(status, "VmRSS:"), Some(4000));
        assert_eq!(parse_status_kib("Name:\tx\n", "VmHWM:"), None);
        assert_eq!(parse_status_kib("VmHWM:\t12 MB\n", "VmHWM:"), None);
    }

    #[test]
    fn parses_stat_ticks_after_the_command_name() {
        let stat = "1234 (a (b) c) S 1 2 3 4 5 6 7 8 9 10 70 30 0 0 20 0 1 0";
        assert_eq!(parse_stat_ticks(stat), Some(100));
        assert_eq!(parse_stat_ticks("1234 (x) S 1 2"), None);
    }

    #[test]
    fn usages_add_up() {
        let slice = |ms, client, subject| CpuUsage {
            wall: Duration::from_millis(ms),
            client: Some(client),
            subject,
            daemon: Some(1),
        };
        let mut total = CpuUsage::default();
        total.add(&slice(500, 10, Some(20)));
        total.add(&slice(500, 30, None));
        assert_eq!(total.wall, Duration::from_secs(1));
        assert_eq!(total.client, Some(40));
        assert_eq!(total.subject, None);
        assert_eq!(total.daemon, Some(2));
        assert!(CpuUsage::default().share().is_none());
    }

    #[test]
    fn footprint_of_this_process_is_readable_on_linux() {
        let me = Footprint::sample(std::process::id());
        if cfg!(target_os = "linux") {
            assert!(me.rss_kib.is_some_and(|k| k > 0), "{me:?}");
            assert!(me.fds.is_some_and(|n| n >= 3), "{me:?}");
        }
    }

    #[test]
    fn growth_is_signed() {
        assert_eq!(growth(Some(10), Some(4)), Some(-6));
        assert_eq!(growth(None, Some(4)), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn reads_this_process() {
        assert!(!has_ended(std::process::id()));
        assert!(peak_rss_kib(std::process::id()).is_some_and(|kib| kib > 0));
        assert!(cpu_ticks("self").is_some());
    }
}
