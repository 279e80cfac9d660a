//! The seeded fault schedule of the soak: one fault episode at a time on
//! the fake daemon, each undone (where it lasts) before the next begins,
//! with instant faults sometimes striking inside a lasting one.

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::daemon::{Command, FakeDaemon};
use crate::error::HarnessError;
use crate::random::Rng;
use crate::scenario::live::write_serde_name;

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
}

impl fmt::Display for FaultKind {
    /// The kind's snake_case name, as in JSON reports.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_serde_name(self, f)
    }
}

/// Bounds of the schedule.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ScheduleBounds {
    /// Shortest pause between two episodes.
    pub(crate) gap_min: Duration,
    /// Longest pause between two episodes.
    pub(crate) gap_max: Duration,
    /// Longest hold of a lasting fault (`DELAY`, `SLICE`, `DOWN`).
    pub(crate) max_hold: Duration,
    /// Longest `HANG`; kept below the wrapper's call timeout.
    pub(crate) max_hang: Duration,
    /// The daemon's answer delay between `DELAY` episodes.
    pub(crate) base_delay_ms: u64,
}

/// The faults that take effect at once (no undo); they may also strike
/// inside a lasting episode.
const INSTANT: [FaultKind; 5] = [
    FaultKind::Drop,
    FaultKind::Garbage,
    FaultKind::Cut,
    FaultKind::Stray,
    FaultKind::Duplicate,
];

/// Percentage of lasting episodes with instant faults inside them (a drop
/// while hung, garbage while sliced, ...).
const NESTED_PERCENT: u64 = 50;

/// A lasting fault in force.
#[derive(Debug, Clone, Copy)]
struct Active {
    kind: FaultKind,
    /// When it is undone (`next_at` comes earlier only when instant faults
    /// strike inside it).
    until: Instant,
}

/// The fault schedule: what comes next and when, and what was done.
#[derive(Debug)]
pub(crate) struct Schedule {
    rng: Rng,
    bounds: ScheduleBounds,
    next_at: Instant,
    active: Option<Active>,
    started: Instant,
    /// Faults injected, by kind (lasting episodes and instant faults, nested
    /// ones included).
    pub(crate) counts: BTreeMap<FaultKind, u64>,
    /// The most recent commands, as `<seconds since start> s <command>`.
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
        self.millis(self.bounds.gap_min, self.bounds.gap_max)
    }

    fn millis(&mut self, lo: Duration, hi: Duration) -> Duration {
        let ms = self
            .rng
            .between(lo.as_millis() as u64, hi.as_millis() as u64);
        Duration::from_millis(ms)
    }

    /// Acts if it is time: undoes the lasting fault in force, strikes an
    /// instant fault inside it, or begins the next episode.
    pub(crate) fn step(&mut self, daemon: &FakeDaemon, now: Instant) -> Result<(), HarnessError> {
        if now < self.next_at {
            return Ok(());
        }
        if let Some(active) = self.active {
            if now >= active.until {
                self.active = None;
                self.undo(daemon, active.kind)?;
                self.next_at = Instant::now() + self.gap();
            } else {
                let kind = *self.rng.pick(&INSTANT);
                self.begin(daemon, kind)?;
                let next = Instant::now() + self.gap();
                self.next_at = next.min(active.until);
            }
            return Ok(());
        }
        let kind = *self.rng.pick(&FaultKind::ALL);
        let max_hold = match kind {
            FaultKind::Hang => Some(self.bounds.max_hang),
            FaultKind::Delay | FaultKind::Slice | FaultKind::DownUp => Some(self.bounds.max_hold),
            _ => None,
        };
        self.begin(daemon, kind)?;
        match max_hold {
            Some(max) => {
                let held = self.millis(Duration::from_millis(50), max);
                let until = Instant::now() + held;
                let nested = self.rng.percent(NESTED_PERCENT);
                self.active = Some(Active { kind, until });
                self.next_at = if nested {
                    (Instant::now() + self.gap() / 2).min(until)
                } else {
                    until
                };
            }
            None => self.next_at = Instant::now() + self.gap(),
        }
        Ok(())
    }

    /// Sends the command that begins a fault of `kind`, and counts it.
    fn begin(&mut self, daemon: &FakeDaemon, kind: FaultKind) -> Result<(), HarnessError> {
        *self.counts.entry(kind).or_default() += 1;
        let command = match kind {
            FaultKind::Drop => Command::Drop,
            FaultKind::Delay => Command::Delay {
                ms: self.rng.between(self.bounds.base_delay_ms + 10, 400),
            },
            FaultKind::Hang => Command::Hang,
            FaultKind::Garbage => Command::Garbage {
                lines: self.rng.between(1, 8) as u32,
            },
            FaultKind::Slice => Command::Slice {
                bytes: self.rng.between(1, 256) as usize,
            },
            FaultKind::Cut => Command::Cut,
            FaultKind::DownUp => Command::Down,
            FaultKind::Stray => Command::Stray,
            FaultKind::Duplicate => Command::Duplicate,
        };
        self.send(daemon, command)
    }

    /// Undoes the lasting fault in force now, if any, and holds the next
    /// episode off until [`resume`](Self::resume).
    pub(crate) fn quiesce(&mut self, daemon: &FakeDaemon) -> Result<(), HarnessError> {
        if let Some(active) = self.active.take() {
            self.undo(daemon, active.kind)?;
        }
        self.next_at = Instant::now() + Duration::from_secs(24 * 3600);
        Ok(())
    }

    /// Lets the schedule go on after [`quiesce`](Self::quiesce).
    pub(crate) fn resume(&mut self) {
        self.next_at = Instant::now() + self.gap();
    }

    fn undo(&mut self, daemon: &FakeDaemon, kind: FaultKind) -> Result<(), HarnessError> {
        let command = match kind {
            FaultKind::Delay => Command::Delay {
                ms: self.bounds.base_delay_ms,
            },
            FaultKind::Hang => Command::Resume,
            FaultKind::Slice => Command::Slice { bytes: 0 },
            FaultKind::DownUp => Command::Up { order: None },
            _ => return Ok(()),
        };
        self.send(daemon, command)
    }

    /// Sends `command` and expects it carried out, remembering it among the
    /// recent ones.
    fn send(&mut self, daemon: &FakeDaemon, command: Command) -> Result<(), HarnessError> {
        if self.recent.len() == RECENT_COMMANDS {
            self.recent.remove(0);
        }
        self.recent.push(format!(
            "{:.3} s {command}",
            self.started.elapsed().as_secs_f64()
        ));
        daemon.carry_out(command)
    }
}
