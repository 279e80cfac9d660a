//! One race run that can be abandoned at any moment: every wait (for an
//! answer, the offset, recovery, the connections to settle) is cut into
//! slices of at most [`POLL`] that look at a stop flag, and a raised flag
//! ends the run, its processes killed and reaped as their guards drop. A
//! slice ends as soon as the awaited message arrives, so slicing costs the
//! measured latencies no precision.

use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use devkit::bins::error_chain;
use devkit::tempdir::{short_tempdir, socket_path_in};
use serde_json::{Value, json};

use super::config::{EOF_EXIT_BOUND, PROTOCOL_VERSION, RaceConfig, TOOL};
use super::report::{RaceOutcome, RaceReport, SchemaCheck, SecondDrop, classify};
use crate::client::{ClientError, DEFAULT_TIMEOUT, initialize_params};
use crate::daemon::FakeDaemon;
use crate::error::HarnessError;
use crate::schema::OutputSchema;
use crate::wrapper::{WrapperCommand, WrapperOptions, WrapperProcess};

/// The longest a run waits without looking at its stop flag.
pub const POLL: Duration = Duration::from_millis(20);

/// Pause between two recovery attempts.
const RECOVERY_RETRY_INTERVAL: Duration = Duration::from_millis(50);

/// How much of the wrapper's stderr a report keeps when something failed.
const STDERR_TAIL_BYTES: usize = 1000;

/// Why a wait or a run ended without the awaited answer.
enum Interrupted {
    /// The stop flag was raised.
    Stopped,
    /// The client failed (timeout, wrapper gone, ...).
    Client(ClientError),
    /// The run cannot measure anything.
    Failed(HarnessError),
}

impl From<HarnessError> for Interrupted {
    fn from(error: HarnessError) -> Self {
        Self::Failed(error)
    }
}

/// Runs the race once against the wrapper started by `cmd`, like
/// [`run_race`](crate::scenario::race::run_race), unless `stop` is raised.
///
/// `Ok(None)` when `stop` was raised at any moment, even just before the
/// end: the processes may have seen the same Ctrl-C, so neither the
/// measurement nor the error is trusted. Every child is reaped by then.
pub fn run_race_until_stopped(
    cmd: &WrapperCommand,
    cfg: &RaceConfig,
    stop: &AtomicBool,
) -> Result<Option<RaceReport>, HarnessError> {
    match race(cmd, cfg, stop) {
        _ if stopped(stop) => Ok(None),
        Ok(report) => Ok(Some(report)),
        Err(Interrupted::Stopped) => Ok(None),
        Err(Interrupted::Failed(e)) => Err(e),
        Err(Interrupted::Client(e)) => Err(HarnessError::Scenario(error_chain(&e))),
    }
}

fn stopped(stop: &AtomicBool) -> bool {
    stop.load(Ordering::SeqCst)
}

/// Sleeps until `deadline`, unless `stop` is raised meanwhile.
fn sleep_until(deadline: Instant, stop: &AtomicBool) -> Result<(), Interrupted> {
    while !stopped(stop) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        thread::sleep(left.min(POLL));
    }
    Err(Interrupted::Stopped)
}

/// Requests with string ids, which never collide with the client's own.
struct Requests<'a> {
    wrapper: &'a mut WrapperProcess,
    next_id: u32,
    stop: &'a AtomicBool,
}

impl Requests<'_> {
    fn request(
        &mut self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, Interrupted> {
        if stopped(self.stop) {
            return Err(Interrupted::Stopped);
        }
        self.next_id += 1;
        let id = Value::from(format!("sweep-{}", self.next_id));
        self.wrapper
            .send_request_with_id(id.clone(), method, params)
            .map_err(Interrupted::Client)?;
        let deadline = Instant::now() + timeout;
        loop {
            let remaining = deadline.saturating_duration_since(Instant::now());
            let error = match self.wrapper.wait_response(&id, remaining.min(POLL)) {
                Err(ClientError::Timeout { .. }) if stopped(self.stop) => Interrupted::Stopped,
                Err(ClientError::Timeout { .. }) if remaining > POLL => continue,
                Err(ClientError::Timeout { .. }) => Interrupted::Client(ClientError::Timeout {
                    waiting_for: format!("response to id {id}"),
                    after: timeout,
                }),
                done => return done.map_err(Interrupted::Client),
            };
            return Err(error);
        }
    }

    /// A step before the race: a client error keeps the run from
    /// measuring anything.
    fn step<T>(
        &mut self,
        what: &str,
        step: impl FnOnce(&mut Self) -> Result<T, Interrupted>,
    ) -> Result<T, Interrupted> {
        step(self).map_err(|e| match e {
            Interrupted::Client(e) => precondition(self.wrapper, what, &error_chain(&e)).into(),
            other => other,
        })
    }

    fn call_tool(&mut self, timeout: Duration) -> Result<Value, Interrupted> {
        let params = json!({"name": TOOL, "arguments": {}});
        self.request("tools/call", params, timeout)
    }

    /// The legacy handshake, as [`McpClient::initialize`](crate::client::McpClient::initialize)
    /// does it.
    fn initialize(&mut self, timeout: Duration) -> Result<(), Interrupted> {
        let params = initialize_params(PROTOCOL_VERSION);
        let response = self.request("initialize", params, timeout)?;
        if response.get("result").is_none() {
            return Err(Interrupted::Client(ClientError::ErrorResponse(response)));
        }
        self.wrapper
            .notify("notifications/initialized", json!({}))
            .map_err(Interrupted::Client)
    }
}

/// The run.
fn race(
    cmd: &WrapperCommand,
    cfg: &RaceConfig,
    stop: &AtomicBool,
) -> Result<RaceReport, Interrupted> {
    let dir = short_tempdir().map_err(HarnessError::from)?;
    let socket = socket_path_in(dir.path());
    let daemon = FakeDaemon::spawn_on(&cfg.setup.daemon_bin()?, &socket, cfg.setup.transport)?;
    let endpoint = daemon.endpoint().label();
    let opts = WrapperOptions {
        mode: cfg.setup.mode,
        reconnect_delay_ms: Some(cfg.delay_ms),
        ..WrapperOptions::for_daemon(&daemon)
    };
    let mut wrapper = WrapperProcess::spawn(cmd, &opts)?;
    let mut requests = Requests {
        wrapper: &mut wrapper,
        next_id: 0,
        stop,
    };
    let (schema, baseline) = prepare(&mut requests, cfg.call_timeout)?;
    let first = round(&mut requests, &daemon, cfg)?;
    let second_drop = match (&first.recovery, cfg.second_drop) {
        (Some(_), true) => Some(round(&mut requests, &daemon, cfg)?.into_second_drop()),
        _ => None,
    };
    let output_schema = schema.map(|schema| {
        let results = [Some(&baseline), first.racing_response.as_ref()];
        schema_check(&schema, results.into_iter().flatten())
    });
    let defects = wrapper.defects();
    let exit_after_eof = exit_after_eof(&mut wrapper);
    let failed = first.outcome != RaceOutcome::Ok
        || first.recovery.is_none()
        || second_drop
            .as_ref()
            .is_some_and(|s| s.outcome != RaceOutcome::Ok);
    let wrapper_stderr_tail = failed.then(|| wrapper.stderr_tail(STDERR_TAIL_BYTES));
    let _ = daemon.quit();

    Ok(RaceReport {
        mode: cfg.setup.mode,
        endpoint,
        outcome: first.outcome,
        racing_latency: first.racing_latency,
        racing_response: first.racing_response,
        recovery_calls: first.recovery.map(|r| r.calls),
        recovered_after: first.recovery.map(|r| r.after_drop),
        conns_after: first.conns_after,
        second_drop,
        exit_after_eof,
        output_schema,
        defects,
        wrapper_stderr_tail,
    })
}

/// What comes before the race: `initialize`, `tools/list` (the tool's
/// `outputSchema`, if it has one) and a baseline call, which must
/// succeed, else nothing is measured.
fn prepare(
    requests: &mut Requests<'_>,
    timeout: Duration,
) -> Result<(Option<OutputSchema>, Value), Interrupted> {
    requests.step("initialize", |r| r.initialize(DEFAULT_TIMEOUT))?;
    let list = |r: &mut Requests<'_>| r.request("tools/list", json!({}), timeout);
    let listed = requests.step("tools/list", list)?;
    let schema = OutputSchema::of_tool(&listed, TOOL)
        .map_err(|e| precondition(requests.wrapper, "compiling the listed outputSchema", &e))?;
    let baseline = requests.step("the baseline tools/call", |r| r.call_tool(timeout))?;
    if classify(&baseline) != RaceOutcome::Ok {
        let what = format!("it did not succeed: {baseline}");
        return Err(precondition(requests.wrapper, "the baseline tools/call", &what).into());
    }
    Ok((schema, baseline))
}

/// The successful ones of `results` checked against `schema`.
fn schema_check<'a>(
    schema: &OutputSchema,
    results: impl Iterator<Item = &'a Value>,
) -> SchemaCheck {
    let ok = results.filter(|r| classify(r) == RaceOutcome::Ok);
    let checked: Vec<Result<(), String>> = ok.map(|result| schema.check(result)).collect();
    SchemaCheck {
        validated: checked.len() as u32,
        mismatch: checked.into_iter().find_map(Result::err),
    }
}

/// The end of the session, as a client ends it: stdin closes, and the
/// wrapper must exit by itself within [`EOF_EXIT_BOUND`] (the guards kill
/// it if it does not); how long it took.
fn exit_after_eof(wrapper: &mut WrapperProcess) -> Option<Duration> {
    wrapper.close_stdin();
    let closed_at = Instant::now();
    wrapper
        .wait_exit(EOF_EXIT_BOUND)
        .ok()
        .map(|_| closed_at.elapsed())
}

/// One drop and what followed it.
struct Round {
    outcome: RaceOutcome,
    racing_latency: Duration,
    racing_response: Option<Value>,
    recovery: Option<Recovery>,
    conns_after: Option<u32>,
}

impl Round {
    /// This round, as the second drop of a run.
    fn into_second_drop(self) -> SecondDrop {
        SecondDrop {
            outcome: self.outcome,
            racing_response: self.racing_response,
            served_after: self.recovery.is_some(),
            conns_after: self.conns_after,
        }
    }
}

/// How the wrapper recovered after a drop.
#[derive(Debug, Clone, Copy)]
struct Recovery {
    /// Calls made until one succeeded, that one included.
    calls: u32,
    /// From the drop to the success.
    after_drop: Duration,
}

/// Drops the wrapper's connection, makes the racing call `offset_ms`
/// later, then waits for recovery and counts the daemon's connections.
fn round(
    requests: &mut Requests<'_>,
    daemon: &FakeDaemon,
    cfg: &RaceConfig,
) -> Result<Round, Interrupted> {
    let stop = requests.stop;
    if stopped(stop) {
        return Err(Interrupted::Stopped);
    }
    daemon.drop_connections()?;
    let dropped_at = Instant::now();
    // The scenario's timing parameter: where in the reconnect window the
    // racing call lands.
    sleep_until(dropped_at + Duration::from_millis(cfg.offset_ms), stop)?;

    let sent_at = Instant::now();
    let racing = requests.call_tool(cfg.call_timeout);
    let racing_latency = sent_at.elapsed();
    let (outcome, racing_response) = match racing {
        Ok(response) => (classify(&response), Some(response)),
        Err(Interrupted::Client(ClientError::Timeout { .. })) => (RaceOutcome::Timeout, None),
        Err(Interrupted::Client(e)) => (RaceOutcome::OtherError(error_chain(&e)), None),
        Err(e) => return Err(e),
    };

    let recovery = recover(requests, cfg, dropped_at)?;
    let settled = dropped_at + Duration::from_millis(cfg.delay_ms) + cfg.settle;
    let conns_after = match recovery {
        Some(_) => {
            sleep_until(settled, stop)?;
            Some(daemon.stats()?.conns)
        }
        None => None,
    };
    Ok(Round {
        outcome,
        racing_latency,
        racing_response,
        recovery,
        conns_after,
    })
}

/// Repeats the tool call until one succeeds or time is up (`None`).
fn recover(
    requests: &mut Requests<'_>,
    cfg: &RaceConfig,
    dropped_at: Instant,
) -> Result<Option<Recovery>, Interrupted> {
    let deadline = dropped_at + Duration::from_millis(cfg.delay_ms) + cfg.recovery_timeout;
    let mut calls = 0;
    loop {
        calls += 1;
        let remaining = deadline.saturating_duration_since(Instant::now());
        match requests.call_tool(cfg.call_timeout.min(remaining)) {
            Ok(response) if classify(&response) == RaceOutcome::Ok => {
                return Ok(Some(Recovery {
                    calls,
                    after_drop: dropped_at.elapsed(),
                }));
            }
            Ok(_) | Err(Interrupted::Client(ClientError::Timeout { .. })) => {}
            // The wrapper is gone: no call will ever succeed.
            Err(Interrupted::Client(_)) => return Ok(None),
            Err(e) => return Err(e),
        }
        if Instant::now() + RECOVERY_RETRY_INTERVAL >= deadline {
            return Ok(None);
        }
        sleep_until(Instant::now() + RECOVERY_RETRY_INTERVAL, requests.stop)?;
    }
}

fn precondition(wrapper: &WrapperProcess, step: &str, what: &str) -> HarnessError {
    HarnessError::Scenario(format!(
        "{step} failed: {what}; wrapper stderr (tail): {}",
        wrapper.stderr_tail(STDERR_TAIL_BYTES).trim_end()
    ))
}
