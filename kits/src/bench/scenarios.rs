//! The measured phases, each a plain loop over one [`Channel`].
//!
//! The sequential and pipelined phases return raw observations (a [`Run`]:
//! samples, counts), which add up over a phase's slices; the runner turns
//! the sums into figures. Recovery runs in one go and returns its figures.
//! A failed *call* (a JSON-RPC error or an MCP tool error) is an
//! observation and is counted; a broken *stream* (the subject exited, or
//! stopped answering and was stopped by the watchdog) is an error that
//! ends the phase.

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use devkit::bins::error_chain;
use harness::client::ClientError;
use harness::daemon::FakeDaemon;
use harness::error::HarnessError;
use harness::wrapper::WrapperCommand;
use serde_json::json;

use super::results::RecoveryStats;
use super::stats::{Summary, nanos};
use super::subject::{Channel, WrapperEnv};
use super::transport::{INITIALIZED, RequestTemplate, initialize_template};

/// Pause between two attempts while waiting for a subject to answer a call
/// successfully.
const RETRY_PAUSE: Duration = Duration::from_millis(10);

/// Pause before each recovery attempt, so the previous reconnect and any
/// background work it started have settled.
const RECOVERY_SETTLE: Duration = Duration::from_millis(20);

/// How many failed recovery responses are kept as examples.
const FAILURE_EXAMPLES: usize = 3;

/// Makes one call of `template`; an error response is
/// [`ClientError::ErrorResponse`].
fn call_ok(io: &mut Channel, template: &RequestTemplate) -> Result<(), HarnessError> {
    if io.call(template)?.success {
        return Ok(());
    }
    let value = serde_json::from_slice(io.reader.last_line())
        .unwrap_or_else(|_| serde_json::Value::String(io.last_line_excerpt()));
    Err(ClientError::ErrorResponse(value).into())
}

/// Sends `initialize` (`template`, see [`initialize_template`]) and then
/// `notifications/initialized`; returns when the `initialize` response was
/// read. An error response is [`ClientError::ErrorResponse`].
pub fn initialize(io: &mut Channel, template: &RequestTemplate) -> Result<Instant, HarnessError> {
    call_ok(io, template)?;
    let answered = Instant::now();
    io.writer.send_raw(INITIALIZED)?;
    Ok(answered)
}

/// Calls until one call succeeds, for at most `within`: a wrapper may still
/// be connecting to the daemon (this workspace's waits for the connection;
/// others may fail fast until it is up).
pub fn wait_ready(
    io: &mut Channel,
    template: &RequestTemplate,
    within: Duration,
) -> Result<(), HarnessError> {
    let start = Instant::now();
    loop {
        if io.call(template)?.success {
            return Ok(());
        }
        if start.elapsed() >= within {
            return Err(HarnessError::Scenario(format!(
                "no call succeeded within {within:?}; last response: {}",
                io.last_line_excerpt()
            )));
        }
        thread::sleep(RETRY_PAUSE);
    }
}

/// What [`sequential`] or [`pipelined`] observed; the runs of the slices
/// of a phase add up.
#[derive(Debug, Clone, Default)]
pub struct Run {
    /// Calls made (and answered).
    pub calls: usize,
    /// Calls answered with an error.
    pub failures: usize,
    /// Latency of each successful call, in nanoseconds, in call order
    /// (sequential runs).
    pub samples: Vec<u64>,
    /// Responses whose id was not one of the run's, or came twice
    /// (pipelined runs).
    pub stray: usize,
    /// From the first request written to the last response read
    /// (pipelined runs).
    pub elapsed: Duration,
}

impl Run {
    /// Adds the figures of `other`.
    pub fn add(&mut self, other: Self) {
        self.calls += other.calls;
        self.failures += other.failures;
        self.samples.extend(other.samples);
        self.stray += other.stray;
        self.elapsed += other.elapsed;
    }
}

/// `calls` calls one after the other, each timed from just before its
/// request is written to just after its response is parsed.
pub fn sequential(
    io: &mut Channel,
    template: &RequestTemplate,
    calls: usize,
) -> Result<Run, HarnessError> {
    let mut run = Run {
        calls,
        samples: Vec::with_capacity(calls),
        ..Run::default()
    };
    for _ in 0..calls {
        let start = Instant::now();
        let response = io.call(template)?;
        let elapsed = start.elapsed();
        if response.success {
            run.samples.push(nanos(elapsed));
        } else {
            run.failures += 1;
        }
    }
    Ok(run)
}

/// `calls` calls with up to `depth` in flight: a writer thread sends a
/// request whenever fewer than `depth` are unanswered, and this thread reads
/// responses (in whatever order they come) and hands the writer a permit
/// for each.
pub fn pipelined(
    io: &mut Channel,
    template: &RequestTemplate,
    calls: usize,
    depth: usize,
) -> Result<Run, HarnessError> {
    let depth = depth.max(1);
    let first = io.take_ids(calls);
    let Channel { reader, writer, .. } = io;
    // Permits in the channel + requests unanswered <= depth, so sends on
    // the channel never block.
    let (permits, permit_rx) = mpsc::sync_channel::<()>(depth);
    for _ in 0..depth.min(calls) {
        // The receiver is alive: this cannot fail.
        let _ = permits.send(());
    }
    let start = Instant::now();
    thread::scope(|scope| {
        let sender = thread::Builder::new()
            .name("bench-writer".to_owned())
            .spawn_scoped(scope, move || -> Result<(), ClientError> {
                for offset in 0..calls as u64 {
                    if permit_rx.recv().is_err() {
                        // The reader gave up; its error is the one reported.
                        return Ok(());
                    }
                    writer.send(template, first + offset)?;
                }
                Ok(())
            })
            .map_err(|e| HarnessError::io("starting the bench writer thread", e))?;
        // Owned by this closure, so an early return drops it and unblocks
        // the writer before the scope joins it.
        let permits = permits;
        let mut answered = vec![false; calls];
        let mut run = Run {
            calls,
            ..Run::default()
        };
        let mut received = 0;
        while received < calls {
            let response = reader.next_response()?;
            let slot = response
                .id
                .and_then(|id| id.checked_sub(first))
                .and_then(|offset| usize::try_from(offset).ok())
                .filter(|&offset| offset < calls && !answered[offset]);
            let Some(offset) = slot else {
                run.stray += 1;
                continue;
            };
            answered[offset] = true;
            received += 1;
            if !response.success {
                run.failures += 1;
            }
            let _ = permits.send(());
        }
        run.elapsed = start.elapsed();
        drop(permits);
        let sent = sender
            .join()
            .map_err(|_| HarnessError::Scenario("the bench writer thread panicked".to_owned()))?;
        sent.map(|()| run).map_err(Into::into)
    })
}

/// `attempts` times: `DROP` on the daemon, then a call at once, timed to its
/// response. A wrapper that fails the call instead of waiting for its
/// reconnect gets a failure recorded; if it does not reconnect within
/// `ready_within`, the attempts stop ([`RecoveryStats::abandoned`]).
pub fn recovery(
    io: &mut Channel,
    template: &RequestTemplate,
    daemon: &FakeDaemon,
    attempts: usize,
    ready_within: Duration,
) -> Result<RecoveryStats, HarnessError> {
    let mut stats = RecoveryStats::default();
    let (mut from_drop, mut from_dropped_ack) = (Vec::new(), Vec::new());
    for _ in 0..attempts {
        match wait_ready(io, template, ready_within) {
            Ok(()) => {}
            Err(HarnessError::Scenario(why)) => {
                stats.abandoned = Some(format!(
                    "gave up after {} of {attempts} attempts: {why}",
                    stats.attempts
                ));
                break;
            }
            Err(e) => return Err(e),
        }
        thread::sleep(RECOVERY_SETTLE);
        let dropped = Instant::now();
        daemon.drop_connections()?;
        let acknowledged = Instant::now();
        let response = io.call(template)?;
        let done = Instant::now();
        stats.attempts += 1;
        if response.success {
            from_drop.push(nanos(done - dropped));
            from_dropped_ack.push(nanos(done - acknowledged));
        } else {
            stats.failures += 1;
            if stats.failure_examples.len() < FAILURE_EXAMPLES {
                stats.failure_examples.push(io.last_line_excerpt());
            }
        }
    }
    stats.from_drop = Summary::from_samples(&mut from_drop);
    stats.from_dropped_ack = Summary::from_samples(&mut from_dropped_ack);
    Ok(stats)
}

/// When a cold start's answers came, from just before the spawn.
#[derive(Debug, Clone, Copy)]
pub struct ColdStart {
    /// The `initialize` answer.
    pub initialized: Duration,
    /// The `tools/list` answer.
    pub listed: Duration,
}

/// Starts `cmd` with no daemon listening and times the `initialize` and
/// `tools/list` answers from just before the spawn; the process is killed
/// afterwards, and a failure carries its stderr.
pub fn cold_start(cmd: &WrapperCommand, timeout: Duration) -> Result<ColdStart, HarnessError> {
    let env = WrapperEnv::new(cmd, None)?;
    let init = initialize_template();
    let list = RequestTemplate::new("tools/list", &json!({}));
    let start = Instant::now();
    let (mut child, mut session) = env.spawn(timeout)?;
    let result = session.guarded("a cold start", |io| {
        let initialized = initialize(io, &init)? - start;
        call_ok(io, &list)?;
        Ok(ColdStart {
            initialized,
            listed: start.elapsed(),
        })
    });
    result.map_err(|e| {
        HarnessError::Scenario(format!(
            "cold start of `{}`: {}; its stderr: {}",
            cmd.display(),
            error_chain(&e),
            child.stderr_tail()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Write};
    use std::os::unix::net::UnixStream;

    use crate::bench::subject::connect_floor;

    /// A tiny in-process "daemon": answers each request line on `stream`
    /// with a response to the same id, failing every `fail_every`-th.
    fn echo_server(stream: UnixStream, fail_every: u64) {
        let mut out = stream.try_clone().unwrap();
        for (n, line) in BufReader::new(stream).lines().enumerate() {
            let Ok(line) = line else { return };
            let value: serde_json::Value = serde_json::from_str(&line).unwrap();
            let id = &value["id"];
            let reply = if fail_every > 0 && (n as u64 + 1).is_multiple_of(fail_every) {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": 1, "message": "no"}})
            } else {
                json!({"jsonrpc": "2.0", "id": id, "result": {"ok": true}})
            };
            if writeln!(out, "{reply}").is_err() {
                return;
            }
        }
    }

    #[test]
    fn phases_count_calls_and_failures_over_a_socket() {
        let dir = devkit::tempdir::short_tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let server = thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            echo_server(stream, 10);
        });
        let mut session = connect_floor(&path, Duration::from_secs(10)).unwrap();
        let template = RequestTemplate::daemon_call("topology");
        let run = session
            .guarded("test", |io| sequential(io, &template, 50))
            .unwrap();
        assert_eq!((run.samples.len(), run.failures), (45, 5));
        for depth in [1, 8, 64] {
            let run = session
                .guarded("test", |io| pipelined(io, &template, 200, depth))
                .unwrap();
            assert_eq!((run.calls, run.failures, run.stray), (200, 20, 0));
        }
        session
            .guarded("test", |io| {
                wait_ready(io, &template, Duration::from_secs(1))
            })
            .unwrap();
        drop(session);
        server.join().unwrap();
    }
}
