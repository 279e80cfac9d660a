//! The seeded fault schedule of the soak: one fault episode at a time on
//! the fake daemon, each undone (where it lasts) before the next begins.

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::daemon::FakeDaemon;
use crate::error::HarnessError;
use crate::scenario::hostile::Rng;

/// The faults the soak injects, one fake daemon command (or pair) each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// `DROP`: close every connection.
    Drop,
    /// `DELAY <ms>`, later back to the soak's base delay.
    Delay,
    /// `HANG`, later `RESUME` (held for less than the call timeout).
    Hang,
    /// `GARBAGE <n>`: non-JSON lines on the connection.
    Garbage,
    /// `SLICE <b>`, later `SLICE 0`: answers written in small pieces.
    Slice,
    /// `CUT`: the next answer is cut in half and the connection closed.
    Cut,
    /// `DOWN`, later `UP`: the daemon stops listening, then comes back.
    DownUp,
    /// `STRAY`: an answer to an id nobody asked for.
    Stray,
    /// `DUPLICATE`: the next answer is written twice.
    Duplicate,
}

impl FaultKind {
    /// Every kind, in the order the schedule draws from.
    pub const ALL: [FaultKind; 9] = [
        Self::Drop,
        Self::Delay,
        Self::Hang,
        Self::Garbage,
        Self::Slice,
        Self::Cut,
        Self::DownUp,
        Self::Stray,
        Self::Duplicate,
    ];

    /// The kind's snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Drop => "drop",
            Self::Delay => "delay",
            Self::Hang => "hang",
            Self::Garbage => "garbage",
            Self::Slice => "slice",
            Self::Cut => "cut",
            Self::DownUp => "down_up",
            Self::Stray => "stray",
            Self::Duplicate => "duplicate",
        }
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Bounds of the schedule.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ScheduleBounds {
    /// Shortest and longest pause between two episodes.
    pub(crate) gap: (Duration, Duration),
    /// Longest hold of a lasting fault (`DELAY`, `SLICE`, `DOWN`).
    pub(crate) max_hold: Duration,
    /// Longest `HANG`; kept below the wrapper's call timeout.
    pub(crate) max_hang: Duration,
    /// The daemon's answer delay between `DELAY` episodes.
    pub(crate) base_delay_ms: u64,
}

/// The fault schedule: what comes next and when, and what was done.
#[derive(Debug)]
pub(crate) struct Schedule {
    rng: Rng,
    bounds: ScheduleBounds,
    next_at: Instant,
    /// The lasting fault in force, to be undone at `next_at`.
    active: Option<FaultKind>,
    started: Instant,
    /// Episodes begun, by kind.
    pub(crate) counts: BTreeMap<FaultKind, u64>,
    /// The most recent commands, as `<seconds since start> <command>`.
    recent: Vec<String>,
}

/// How many recent commands the schedule remembers.
const RECENT_COMMANDS: usize = 24;

impl Schedule {
    /// A schedule drawn from `rng`, whose first episode comes after a gap.
    pub(crate) fn new(rng: Rng, bounds: ScheduleBounds, started: Instant) -> Self {
        let mut schedule = Self {
            rng,
            bounds,
            next_at: started,
            active: None,
            started,
            counts: FaultKind::ALL.iter().map(|&k| (k, 0)).collect(),
            recent: Vec::new(),
        };
        schedule.next_at = started + schedule.gap();
        schedule
    }

    /// When the schedule next needs to act.
    pub(crate) fn next_at(&self) -> Instant {
        self.next_at
    }

    /// The most recent commands sent, oldest first.
    pub(crate) fn recent(&self) -> &[String] {
        &self.recent
    }

    fn gap(&mut self) -> Duration {
        let (lo, hi) = self.bounds.gap;
        self.millis(lo, hi)
    }

    fn millis(&mut self, lo: Duration, hi: Duration) -> Duration {
        Duration::from_millis(
            self.rng
                .between(lo.as_millis() as u64, hi.as_millis() as u64),
        )
    }

    /// Acts if it is time: undoes the active fault, or begins the next
    /// episode.
    pub(crate) fn step(&mut self, daemon: &FakeDaemon, now: Instant) -> Result<(), HarnessError> {
        if now < self.next_at {
            return Ok(());
        }
        if let Some(active) = self.active.take() {
            self.undo(daemon, active)?;
            self.next_at = Instant::now() + self.gap();
            return Ok(());
        }
        let kind = *self.rng.pick(&FaultKind::ALL);
        *self.counts.entry(kind).or_default() += 1;
        let hold = match kind {
            FaultKind::Drop => {
                self.send(daemon, "DROP", "DROPPED")?;
                None
            }
            FaultKind::Delay => {
                let ms = self.rng.between(self.bounds.base_delay_ms + 10, 400);
                self.send(daemon, &format!("DELAY {ms}"), &format!("OK DELAY {ms}"))?;
                Some(self.bounds.max_hold)
            }
            FaultKind::Hang => {
                self.send(daemon, "HANG", "OK HANG")?;
                Some(self.bounds.max_hang)
            }
            FaultKind::Garbage => {
                let n = self.rng.between(1, 8);
                self.send(daemon, &format!("GARBAGE {n}"), &format!("OK GARBAGE {n}"))?;
                None
            }
            FaultKind::Slice => {
                let bytes = self.rng.between(1, 256);
                self.send(
                    daemon,
                    &format!("SLICE {bytes}"),
                    &format!("OK SLICE {bytes}"),
                )?;
                Some(self.bounds.max_hold)
            }
            FaultKind::Cut => {
                self.send(daemon, "CUT", "OK CUT")?;
                None
            }
            FaultKind::DownUp => {
                self.send(daemon, "DOWN", "OK DOWN")?;
                Some(self.bounds.max_hold)
            }
            FaultKind::Stray => {
                self.send(daemon, "STRAY", "OK STRAY")?;
                None
            }
            FaultKind::Duplicate => {
                self.send(daemon, "DUPLICATE", "OK DUPLICATE")?;
                None
            }
        };
        match hold {
            Some(max) => {
                let held = self.millis(Duration::from_millis(50), max);
                self.active = Some(kind);
                self.next_at = Instant::now() + held;
            }
            None => self.next_at = Instant::now() + self.gap(),
        }
        Ok(())
    }

    /// Undoes the active fault now, if any, and holds the next episode off
    /// until [`resume`](Self::resume).
    pub(crate) fn quiesce(&mut self, daemon: &FakeDaemon) -> Result<(), HarnessError> {
        if let Some(active) = self.active.take() {
            self.undo(daemon, active)?;
        }
        self.next_at = Instant::now() + Duration::from_secs(24 * 3600);
        Ok(())
    }

    /// Lets the schedule go on after [`quiesce`](Self::quiesce).
    pub(crate) fn resume(&mut self) {
        self.next_at = Instant::now() + self.gap();
    }

    fn undo(&mut self, daemon: &FakeDaemon, kind: FaultKind) -> Result<(), HarnessError> {
        match kind {
            FaultKind::Delay => {
                let ms = self.bounds.base_delay_ms;
                self.send(daemon, &format!("DELAY {ms}"), &format!("OK DELAY {ms}"))
            }
            FaultKind::Hang => self.send(daemon, "RESUME", "OK RESUME"),
            FaultKind::Slice => self.send(daemon, "SLICE 0", "OK SLICE 0"),
            FaultKind::DownUp => self.send(daemon, "UP", "OK UP"),
            _ => Ok(()),
        }
    }

    fn send(&mut self, daemon: &FakeDaemon, command: &str, ack: &str) -> Result<(), HarnessError> {
        if self.recent.len() == RECENT_COMMANDS {
            self.recent.remove(0);
        }
        self.recent.push(format!(
            "{:.3} s {command}",
            self.started.elapsed().as_secs_f64()
        ));
        daemon.expect_ack(command, ack)
    }
}
