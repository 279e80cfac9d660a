//! The herd phase: many sessions on one daemon through its restarts.
//!
//! A user runs one wrapper per assistant session, often ten or more, all
//! on one daemon. For each herd size, that many wrappers of each kind
//! (this workspace's, then every `--compare` one) start on one fake
//! daemon, each proven to answer a call, with its structured log on and
//! its endpoint watch's looks logged too (other wrappers ignore both
//! settings). Then the daemon restarts [`Amounts::herd_rounds`] times in
//! each start-up order, in turn: the usual one (bind and listen in one
//! step, `at-once`), and one that binds [`HERD_LISTEN_GAP`] before it
//! listens (`listen-after=50`: a dial in between is refused). A restart:
//!
//! 1. `DOWN`, then a settling pause: the wrappers' first attempts after
//!    the loss;
//! 2. the away window: each wrapper's own wake-ups (its watch's looks,
//!    `endpoint_looked`, and its dials, `connect_attempt`) are counted
//!    from its log;
//! 3. every wrapper sends a call, which waits; half a second later, `UP`
//!    in the order, timed as [`FakeDaemon::up_timed_in`] times it;
//! 4. each answer timed from the listen (the socket seen bound, plus the
//!    gap of `listen-after`: the fake daemon creates the socket file as it
//!    binds); once all are in and a settling pause passed, the daemon's
//!    accepts since `UP` are counted, and the failed dials the wrappers
//!    logged.
//!
//! [`Amounts::herd_rounds`]: super::Amounts::herd_rounds

use std::thread;
use std::time::{Duration, Instant, SystemTime};

use devkit::bins::error_chain;
use devkit::tempdir::{short_tempdir, socket_path_in};
use harness::daemon::{FakeDaemon, StartupOrder, Transport};
use harness::error::HarnessError;
use harness::scenario::outcome::CallOutcome;
use harness::scenario::wrapper_log::{
    CONNECT_ATTEMPT, CONNECT_FAILED, ENDPOINT_LOOKED, JSON_EVENTS, LOOKS_LOGGED, event_times,
    logs_events,
};
use harness::wrapper::{WrapperCommand, WrapperOptions, WrapperProcess};
use serde_json::json;

use super::config::{BenchConfig, TOOL};
use super::results::{HERD_LISTEN_GAP, HerdStats, RestartStats, SubjectKind, SubjectReport};
use super::runner::progress;
use super::stats::{Summary, nanos};
use super::transport::PROTOCOL_VERSION;

/// From `DOWN` to the away window: this workspace's wrapper makes its few
/// quick attempts after the loss (four, well within a second), then
/// awaits the endpoint.
const SETTLE: Duration = Duration::from_secs(2);

/// How long every wrapper's call waits before the daemon comes back.
const WAIT_BEFORE_UP: Duration = Duration::from_millis(500);

/// From the last answer to the daemon's accepts counted: a connection a
/// wrapper makes beside its bridge's after a reconnect would show by then.
const ACCEPTS_SETTLE: Duration = Duration::from_millis(300);

/// The start-up orders a herd's daemon restarts in, in turn.
fn orders() -> [StartupOrder; 2] {
    [
        StartupOrder::AtOnce,
        StartupOrder::ListenAfter {
            gap: HERD_LISTEN_GAP,
        },
    ]
}

/// Runs every herd size for every wrapper of `reports` (found by name in
/// `config`), filling their `herds`; a herd that cannot run is recorded
/// in the report's errors.
pub(super) fn measure(config: &BenchConfig, reports: &mut [SubjectReport]) {
    for &size in &config.amounts.herds {
        for report in reports
            .iter_mut()
            .filter(|r| r.kind == SubjectKind::Wrapper)
        {
            let Some((_, cmd)) = config
                .wrappers()
                .into_iter()
                .find(|(name, _)| *name == report.name)
            else {
                continue;
            };
            progress(
                config,
                &format!(
                    "{}: a herd of {size} through {} restarts in each start-up order",
                    report.name, config.amounts.herd_rounds
                ),
            );
            match herd(config, cmd, size) {
                Ok(stats) => report.herds.push(stats),
                Err(e) => report
                    .errors
                    .push(format!("herd of {size}: {}", error_chain(&e))),
            }
        }
    }
}

/// A herd of `size` wrappers started by `cmd` through its restarts.
fn herd(
    config: &BenchConfig,
    cmd: &WrapperCommand,
    size: usize,
) -> Result<HerdStats, HarnessError> {
    let dir = short_tempdir()?;
    let daemon = FakeDaemon::spawn_on(
        &config.fake_daemon_bin,
        &socket_path_in(dir.path()),
        Transport::Unix,
    )?;
    let mut wrappers = start(config, cmd, &daemon, size)?;
    let away = Duration::from_millis(config.amounts.herd_away_ms);
    let mut restarts: Vec<Restarts> = orders().into_iter().map(Restarts::new).collect();
    let mut windows = Vec::new();
    for _ in 0..config.amounts.herd_rounds {
        for restarts in &mut restarts {
            let restart = restart(config, &daemon, &mut wrappers, restarts.order, away)?;
            windows.push(restart.away);
            restarts.add(restart);
        }
    }
    let logs: Vec<String> = wrappers.iter().map(WrapperProcess::stderr_text).collect();
    for mut wrapper in wrappers {
        wrapper.close_stdin();
        let _ = wrapper.wait_exit(Duration::from_secs(2));
    }
    let _ = daemon.quit();
    Ok(HerdStats {
        wrappers: size,
        away_ms: windows.iter().map(|w| millis(w.length)).sum(),
        wakeups_per_min: per_wrapper_minute(&logs, &windows, &[ENDPOINT_LOOKED, CONNECT_ATTEMPT]),
        dials_per_min: per_wrapper_minute(&logs, &windows, &[CONNECT_ATTEMPT]),
        restarts: restarts.into_iter().map(|r| r.stats(size, &logs)).collect(),
    })
}

/// Starts `size` wrappers on `daemon`, one by one, each initialized and
/// proven to answer a call, then waits for their warm-up.
fn start(
    config: &BenchConfig,
    cmd: &WrapperCommand,
    daemon: &FakeDaemon,
    size: usize,
) -> Result<Vec<WrapperProcess>, HarnessError> {
    let options = WrapperOptions::for_daemon(daemon)
        .env(JSON_EVENTS.0, JSON_EVENTS.1)
        .env(LOOKS_LOGGED.0, LOOKS_LOGGED.1);
    let wrappers = (0..size)
        .map(|index| {
            let mut wrapper = WrapperProcess::spawn(cmd, &options)?;
            wrapper
                .initialize(PROTOCOL_VERSION)
                .and_then(|_| wrapper.call_tool(TOOL, json!({}), config.response_timeout))
                .map_err(|e| {
                    HarnessError::Scenario(format!(
                        "wrapper {index} of the herd did not answer its first call: {}",
                        error_chain(&e)
                    ))
                })?;
            Ok(wrapper)
        })
        .collect::<Result<Vec<_>, HarnessError>>()?;
    if wrappers.iter().any(|w| logs_events(&w.stderr_text())) {
        warmed_up(config, daemon, size)?;
    }
    Ok(wrappers)
}

/// The call this workspace's wrapper makes on its own once a session is
/// initialized (its warm-up).
const WARM_UP_CALL: &str = "session_start_payload";

/// How often [`warmed_up`] asks the daemon what it has seen.
const WARM_UP_POLL: Duration = Duration::from_millis(20);

/// Waits until `daemon` has seen the warm-up call of each of `size`
/// wrappers: one still in flight when the daemon goes down would wait
/// through the outage and keep its wrapper dialling, which the away
/// window would count.
fn warmed_up(config: &BenchConfig, daemon: &FakeDaemon, size: usize) -> Result<(), HarnessError> {
    let give_up = Instant::now() + config.response_timeout;
    loop {
        let seen = daemon.seen()?;
        let warmed = seen.iter().filter(|m| *m == WARM_UP_CALL).count();
        if warmed >= size {
            return Ok(());
        }
        if Instant::now() >= give_up {
            return Err(HarnessError::Scenario(format!(
                "{warmed} of {size} wrappers of the herd made their warm-up call"
            )));
        }
        // The daemon's count has no event to wait on.
        thread::sleep(WARM_UP_POLL);
    }
}

/// A window of the harness's wall clock.
#[derive(Debug, Clone, Copy)]
struct Window {
    from: SystemTime,
    to: SystemTime,
    length: Duration,
}

impl Window {
    /// Whether `at` falls in the window.
    fn holds(&self, at: SystemTime) -> bool {
        (self.from..=self.to).contains(&at)
    }
}

/// What one restart measured.
#[derive(Debug)]
struct Restart {
    /// The away window, before any call was sent.
    away: Window,
    /// From `UP` sent until the last answer came.
    back: Window,
    /// From the listen to the last answer, when every call was answered.
    all_answered: Option<Duration>,
    /// Calls that failed.
    failed_calls: u64,
    /// Connections the daemon accepted from `UP` on.
    accepts: usize,
}

/// Steps 1 to 4 of the module's description, once, in `order`.
fn restart(
    config: &BenchConfig,
    daemon: &FakeDaemon,
    wrappers: &mut [WrapperProcess],
    order: StartupOrder,
    away: Duration,
) -> Result<Restart, HarnessError> {
    daemon.down()?;
    // The wrappers' first attempts after the loss, not a synchronisation.
    thread::sleep(SETTLE);
    let (from, began) = (SystemTime::now(), Instant::now());
    // The window itself.
    thread::sleep(away);
    let away = Window {
        from,
        to: SystemTime::now(),
        length: began.elapsed(),
    };
    let up_sent = SystemTime::now();
    let (rebind, answers) = thread::scope(|scope| {
        let calls: Vec<_> = wrappers
            .iter_mut()
            .map(|wrapper| {
                scope.spawn(move || {
                    let result = wrapper.call_tool(TOOL, json!({}), config.response_timeout);
                    CallOutcome::from_client(result).is_ok().then(Instant::now)
                })
            })
            .collect();
        // The calls wait through the rest of the outage.
        thread::sleep(WAIT_BEFORE_UP);
        let rebind = daemon.up_timed_in(Some(order));
        let answers: Vec<Option<Instant>> = calls
            .into_iter()
            .map(|call| call.join().ok().flatten())
            .collect();
        (rebind, answers)
    });
    let rebind = rebind?;
    let back = Window {
        from: up_sent,
        to: SystemTime::now(),
        length: Duration::ZERO,
    };
    let listened = match order {
        StartupOrder::ListenAfter { gap } => (rebind.bound + gap).min(rebind.acknowledged),
        _ => rebind.bound,
    };
    let answered: Option<Vec<Instant>> = answers.iter().copied().collect();
    // Late extra connections would show up here.
    thread::sleep(ACCEPTS_SETTLE);
    let since_up = micros(up_sent);
    let accepts = daemon
        .accept_times()?
        .into_iter()
        .filter(|&at| at >= since_up)
        .count();
    Ok(Restart {
        away,
        back,
        all_answered: answered.and_then(|times| {
            let last = times.into_iter().max()?;
            Some(last.saturating_duration_since(listened))
        }),
        failed_calls: answers.iter().filter(|a| a.is_none()).count() as u64,
        accepts,
    })
}

/// The restarts made in one start-up order so far.
#[derive(Debug)]
struct Restarts {
    order: StartupOrder,
    made: Vec<Restart>,
}

impl Restarts {
    fn new(order: StartupOrder) -> Self {
        Self {
            order,
            made: Vec::new(),
        }
    }

    fn add(&mut self, restart: Restart) {
        self.made.push(restart);
    }

    /// The figures of these restarts of a herd of `size`, whose wrappers
    /// logged `logs`.
    fn stats(self, size: usize, logs: &[String]) -> RestartStats {
        let mut answered: Vec<u64> = self
            .made
            .iter()
            .filter_map(|r| r.all_answered.map(nanos))
            .collect();
        let accepts: usize = self.made.iter().map(|r| r.accepts).sum();
        let reconnects = (size * self.made.len()) as f64;
        let backs: Vec<Window> = self.made.iter().map(|r| r.back).collect();
        RestartStats {
            order: self.order.to_string(),
            restarts: self.made.len(),
            all_answered: Summary::from_samples(&mut answered),
            failed_calls: self.made.iter().map(|r| r.failed_calls).sum(),
            accepts_per_wrapper: (reconnects > 0.0).then(|| accepts as f64 / reconnects),
            failed_dials: logs.iter().any(|l| logs_events(l)).then(|| {
                logs.iter()
                    .map(|log| {
                        event_times(log, CONNECT_FAILED)
                            .filter(|&at| backs.iter().any(|w| w.holds(at)))
                            .count() as u64
                    })
                    .sum()
            }),
        }
    }
}

/// The events named in `names` the wrappers logged in `windows`, per
/// wrapper per minute of the windows; `None` when no wrapper logs events.
fn per_wrapper_minute(logs: &[String], windows: &[Window], names: &[&str]) -> Option<f64> {
    if logs.is_empty() || !logs.iter().any(|l| logs_events(l)) {
        return None;
    }
    let minutes: f64 = windows.iter().map(|w| w.length.as_secs_f64()).sum::<f64>() / 60.0;
    let events: usize = logs
        .iter()
        .flat_map(|log| names.iter().flat_map(move |name| event_times(log, name)))
        .filter(|&at| windows.iter().any(|w| w.holds(at)))
        .count();
    Some(events as f64 / logs.len() as f64 / minutes.max(f64::EPSILON))
}

/// Microseconds since the Unix epoch, as the fake daemon's `ACCEPTS`
/// reports them.
fn micros(at: SystemTime) -> u64 {
    at.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// Whole milliseconds.
fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::results::{HERD_AT_ONCE, HERD_LISTEN_AFTER};

    #[test]
    fn the_orders_are_named_as_the_targets_name_them() {
        let names = orders().map(|order| order.to_string());
        assert_eq!(names, [HERD_AT_ONCE, HERD_LISTEN_AFTER]);
    }

    #[test]
    fn wake_ups_are_counted_per_wrapper_and_minute_in_the_windows() {
        // 2027-01-15T08:00:00Z, and events within its hour.
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let event = |ms: u64, name: &str| {
            let (minute, second, milli) = (ms / 60_000, ms / 1000 % 60, ms % 1000);
            let at = format!("2027-01-15T08:{minute:02}:{second:02}.{milli:03}000Z");
            format!(r#"{{"timestamp":"{at}","event":"{name}"}}"#)
        };
        let logs = [
            [
                event(0, CONNECT_ATTEMPT),
                event(1_000, ENDPOINT_LOOKED),
                event(2_500, ENDPOINT_LOOKED),
                event(31_000, CONNECT_ATTEMPT),
            ]
            .join("\n"),
            [event(0, CONNECT_ATTEMPT), event(20_000, ENDPOINT_LOOKED)].join("\n"),
        ];
        let windows = [
            Window {
                from: at(500),
                to: at(30_500),
                length: Duration::from_secs(30),
            },
            Window {
                from: at(31_000),
                to: at(61_000),
                length: Duration::from_secs(30),
            },
        ];
        // Four events in the windows, two wrappers, one minute.
        let all = per_wrapper_minute(&logs, &windows, &[ENDPOINT_LOOKED, CONNECT_ATTEMPT]);
        assert_eq!(all, Some(2.0));
        assert_eq!(
            per_wrapper_minute(&logs, &windows, &[CONNECT_ATTEMPT]),
            Some(0.5)
        );
        let silent = ["another wrapper's prose".to_owned()];
        assert_eq!(
            per_wrapper_minute(&silent, &windows, &[CONNECT_ATTEMPT]),
            None
        );
    }
}
