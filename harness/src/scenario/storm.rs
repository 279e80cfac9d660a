//! The drop storm: the daemon drops the wrapper's connection again and
//! again while a window of calls is always in flight.
//!
//! What the fixed bridge promises: every call is answered exactly once; a
//! read caught by a drop is re-sent and succeeds; a write caught by a drop
//! fails with `daemon_unreachable: socket closed` and the daemon never sees
//! it twice; afterwards the wrapper holds exactly one connection. Every call
//! carries a unique tag (`storm-<n>`), so the daemon's `LOG` shows writes
//! seen twice and reads replayed. A drop waits until the calls hit by the
//! previous one are answered: a read hit again after its replay fails by
//! design, which would not be a finding.

use std::fmt;
use std::time::{Duration, Instant};

use clap::Args;
use devkit::format::{format_ms, serialize_ms};
use serde::Serialize;
use serde_json::{Value, json};

use super::declaration::{Scenario, Scoring};
use super::live::{
    LiveSession, Pipeline, READ_TOOLS, Sent, ToolCall, WrapperOutput, collect_unsolicited,
    problems_text, tag_numbers,
};
use super::property::{Cause, Check, Checks, Judged, Prop};
use super::settings;
use super::setup::Setup;
use crate::daemon::COMMAND_TIMEOUT;
use crate::error::HarnessError;
use crate::wrapper::{BridgeMode, WrapperCommand};

/// How many failure texts a report keeps.
const MAX_FAILURE_SAMPLES: usize = 8;

/// Parameters of the drop storm: its settings (the `storm` command's
/// flags) and its fixed bounds; `Default` is every value declared here.
#[derive(Debug, Clone, Args)]
pub struct StormConfig {
    /// Number of drops.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub drops: u32,
    /// Calls kept in flight.
    #[arg(long, default_value_t = 8, value_parser = settings::count(1..))]
    pub concurrency: usize,
    /// The daemon's answer delay (its DELAY command), so calls are in flight
    /// when a drop hits.
    #[arg(long = "delay-ms", default_value_t = 20, value_name = "MS")]
    pub daemon_delay_ms: u64,
    /// Time between two drops.
    // Keep it well above the answer delay plus a reconnect, so a replayed
    // read is answered before the next drop.
    #[arg(long = "drop-interval-ms", default_value = "150", value_name = "MS",
          value_parser = settings::millis())]
    pub drop_interval: Duration,
    /// Every N-th call is a write (0: reads only).
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub write_every: u32,
    /// Bound on waiting for the answers still owed after the storm, and on
    /// holding a drop back for calls hit by the previous one.
    #[arg(skip = Duration::from_secs(10))]
    pub drain_timeout: Duration,
    /// How long to watch for late or duplicate answers before counting the
    /// daemon's connections.
    #[arg(skip = Duration::from_millis(250))]
    pub settle: Duration,
    /// The wrapper's bridge mode and the fake daemon.
    #[arg(skip)]
    pub setup: Setup,
}

impl Default for StormConfig {
    fn default() -> Self {
        settings::defaults()
    }
}

/// The drop storm.
#[derive(Debug, Clone, Copy)]
pub struct Storm;

impl Scenario for Storm {
    const NAME: &'static str = "storm";
    const ABOUT: &'static str = "Drop storm: the daemon drops the connection again and again while calls (reads and writes) are kept in flight";
    type Config = StormConfig;
    type Args = StormConfig;
    type Report = StormReport;

    fn setup(cfg: &mut StormConfig) -> &mut Setup {
        &mut cfg.setup
    }

    fn run(cmd: &WrapperCommand, cfg: &StormConfig) -> Result<StormReport, HarnessError> {
        run_storm(cmd, cfg)
    }

    fn scored(_: &Scoring) -> Vec<StormConfig> {
        vec![StormConfig::default()]
    }
}

/// What the drop storm measured.
#[derive(Debug, Clone, Default, Serialize)]
pub struct StormReport {
    /// The bridge mode the wrapper ran in (`None`: not set).
    pub mode: Option<BridgeMode>,
    /// Drops the daemon made.
    pub drops: u32,
    /// Drops made without waiting for every call hit by the previous one
    /// (those calls were still unanswered after `drain_timeout`).
    pub forced_drops: u32,
    /// Calls sent.
    pub calls_sent: usize,
    /// Calls answered at least once.
    pub answered: usize,
    /// Calls answered more than once (must be 0).
    pub answered_more_than_once: usize,
    /// Calls never answered (must be 0).
    pub unanswered: usize,
    /// Responses whose id names no call of ours (must be 0).
    pub stray_responses: usize,
    /// Reads that succeeded.
    pub reads_ok: usize,
    /// Reads that failed other than by a refusal (must be 0).
    pub reads_failed: usize,
    /// Calls refused while the wrapper reconnected: V3-05 (must be 0).
    pub refused: usize,
    /// The cause of the first failed read.
    pub read_failure: Option<Cause>,
    /// The cause of the first refused call or write failed otherwise.
    pub call_failure: Option<Cause>,
    /// Writes that succeeded.
    pub writes_ok: usize,
    /// Writes that failed with `daemon_unreachable: socket closed`.
    pub writes_failed_socket_closed: usize,
    /// Writes that failed any other way but a refusal (must be 0).
    pub writes_failed_other: usize,
    /// Writes reported failed although the daemon received them (the
    /// answer was lost with the connection): at most once, not exactly once.
    pub writes_failed_but_received: usize,
    /// Writes the daemon received more than once (must be 0).
    pub dup_writes: usize,
    /// Reads the daemon received twice: replays it saw both of.
    pub replays: usize,
    /// Reads the daemon received more than twice: lost more than once and
    /// re-sent each time, within their deadline (a figure, not a fault).
    pub reads_received_over_twice: usize,
    /// Connections the daemon held once everything settled (must be 1).
    pub conns_after: u32,
    /// Connections the daemon accepted in all (session-open connections
    /// included).
    pub accepted: u64,
    /// From the first call to the end of sending.
    #[serde(rename = "storm_duration_ms", serialize_with = "serialize_ms")]
    pub storm_duration: Duration,
    /// A few failed calls, as `#n tool: outcome`.
    pub failure_samples: Vec<String>,
    /// Why the wrapper stopped talking, if it did (must be `None`).
    pub wrapper_gone: Option<String>,
    /// Its stdout defects and the end of its stderr.
    #[serde(flatten)]
    pub output: WrapperOutput,
}

impl Judged for StormReport {
    fn checks(&self) -> Vec<Check> {
        let mut checks = Checks::default();
        let (twice, never, stray) = (
            self.answered_more_than_once,
            self.unanswered,
            self.stray_responses,
        );
        checks.expect(
            Prop::AnsweredOnce,
            twice + never + stray == 0,
            if never > 0 {
                Cause::NoAnswer
            } else {
                Cause::AnsweredTwice
            },
            format!(
                "{} calls: {twice} answered twice, {never} never, {stray} stray answers",
                self.calls_sent
            ),
        );
        // Refusals by a wrapper that stopped reconnecting are its death
        // (judged below), not the V3-05 race.
        if self.conns_after > 0 {
            checks.expect(
                Prop::ReconnectCall,
                self.refused + self.writes_failed_other == 0,
            self.call_failure.unwrap_or(Cause::Other),
            format!(
                "{} calls refused while reconnecting, {} writes failed otherwise than `socket closed`",
                self.refused, self.writes_failed_other
            ),
            );
        }
        checks.expect(
            Prop::ReplaysReads,
            self.reads_failed == 0,
            self.read_failure.unwrap_or(Cause::Other),
            format!(
                "{} replays; {} reads lost, {} received over twice",
                self.replays, self.reads_failed, self.reads_received_over_twice
            ),
        );
        checks.zero(
            Prop::NoWriteTwice,
            self.dup_writes,
            Cause::WrittenTwice,
            "writes received twice",
        );
        checks.one_connection(self.conns_after);
        checks.expect(
            Prop::SecondDrop,
            self.wrapper_gone.is_none() && self.conns_after > 0,
            Cause::Died,
            match &self.wrapper_gone {
                None if self.conns_after > 0 => format!("served through {} drops", self.drops),
                None => format!("not connected to the daemon after {} drops", self.drops),
                Some(why) => format!("went away during {} drops: {why}", self.drops),
            },
        );
        checks.stdout_clean(&self.output.defects);
        checks.into_vec()
    }
}

impl fmt::Display for StormReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: drops={} (forced {}) calls={} answered={} twice={} unanswered={} \
             reads ok={} failed={} writes ok={} socket_closed={} other={} \
             failed_but_received={} dup_writes={} replays={} conns_after={} accepted={} \
             duration={} defects={} problems: {}{}",
            if self.passed() { "PASS" } else { "FAIL" },
            self.drops,
            self.forced_drops,
            self.calls_sent,
            self.answered,
            self.answered_more_than_once,
            self.unanswered,
            self.reads_ok,
            self.reads_failed,
            self.writes_ok,
            self.writes_failed_socket_closed,
            self.writes_failed_other,
            self.writes_failed_but_received,
            self.dup_writes,
            self.replays,
            self.conns_after,
            self.accepted,
            format_ms(self.storm_duration),
            self.output.defects.len(),
            problems_text(&self.problems()),
            if self.failure_samples.is_empty() {
                String::new()
            } else {
                format!(
                    "; failures, e.g. {}",
                    self.failure_samples[..self.failure_samples.len().min(3)].join(", ")
                )
            }
        )
    }
}

/// The unique tag of call `n`, carried in one of its arguments.
fn tag(n: usize) -> String {
    format!("storm-{n:06}")
}

/// The call number whose tag appears in `params`, if any.
fn tag_in(params: &Value) -> Option<usize> {
    tag_numbers(&params.to_string(), "storm-", 6).next()
}

/// Call `n` of the storm: every `write_every`-th a write (captures and
/// contradictions in turn), the others reads of [`READ_TOOLS`] in turn,
/// each carrying its tag.
fn call_for(n: usize, write_every: u32) -> ToolCall {
    let every = write_every as usize;
    let tag = tag(n);
    if every > 0 && n % every == every - 1 {
        if (n / every).is_multiple_of(2) {
            let text = format!("storm write {tag}: a memory that must be stored once");
            ToolCall::write("memory_capture", json!({"text": text}))
        } else {
            let id = format!("00000000-0000-4000-8000-{n:012}");
            let fact = format!("{tag} contradicts the earlier record");
            ToolCall::write("memory_contradict", json!({"id": id, "new_fact": fact}))
        }
    } else {
        READ_TOOLS[n % READ_TOOLS.len()].call(tag)
    }
}

/// Sends the storm's next call; `false` when the wrapper is gone.
fn send_next(storm: &mut Pipeline<'_>, write_every: u32) -> bool {
    let call = call_for(storm.calls.len(), write_every);
    storm.send(call)
}

/// Runs the drop storm once against the wrapper started by `cmd`.
pub fn run_storm(cmd: &WrapperCommand, cfg: &StormConfig) -> Result<StormReport, HarnessError> {
    let env = [("IAI_MCP_LOG", "info".to_owned())];
    let mut session = LiveSession::start(cmd, &cfg.setup, &env)?;
    session.daemon.delay(cfg.daemon_delay_ms)?;

    let mut storm = Pipeline::new(&mut session, |_| false);
    let started = storm.started;
    fill(&mut storm, cfg);
    let drops = drop_while_calling(&mut storm, cfg)?;
    let storm_duration = started.elapsed();
    collect_answers_owed(&mut storm, cfg);
    let Pipeline {
        calls, stray, gone, ..
    } = storm;
    let stats = session.daemon.stats()?;
    let received = received_counts(&session, &calls)?;

    let mut report = StormReport {
        mode: cfg.setup.mode,
        drops: drops.made,
        forced_drops: drops.forced,
        calls_sent: calls.len(),
        stray_responses: stray,
        conns_after: stats.conns,
        accepted: stats.accepted,
        storm_duration,
        wrapper_gone: gone,
        ..StormReport::default()
    };
    report.count_calls(&calls, &received);
    Ok(session.conclude(report, |r| &mut r.output))
}

/// Sends the first `cfg.concurrency` calls (fewer if the wrapper stops
/// taking them).
fn fill(storm: &mut Pipeline<'_>, cfg: &StormConfig) {
    for _ in 0..cfg.concurrency {
        if !send_next(storm, cfg.write_every) {
            break;
        }
    }
}

/// The drops the storm made.
struct Drops {
    /// Connection drops made.
    made: u32,
    /// Of those, made before the calls sent before the previous drop's
    /// gate were all answered (the gate held for `drain_timeout`).
    forced: u32,
}

/// Keeps `cfg.concurrency` calls in flight while the daemon drops every
/// connection `cfg.drops` times, `cfg.drop_interval` apart, each drop
/// waiting until the calls sent well before it are answered (at most
/// `cfg.drain_timeout` longer); sends for one more interval after the last
/// drop.
fn drop_while_calling(storm: &mut Pipeline<'_>, cfg: &StormConfig) -> Result<Drops, HarnessError> {
    let mut drops = Drops { made: 0, forced: 0 };
    let mut next_drop = storm.started + cfg.drop_interval;
    // Calls sent before this instant must be answered before the next drop.
    let mut gate: Option<Instant> = None;
    let mut stop_sending: Option<Instant> = None;
    while storm.gone.is_none() {
        let now = Instant::now();
        if stop_sending.is_some_and(|end| now >= end) {
            break;
        }
        if drops.made < cfg.drops && now >= next_drop {
            let open = gate.is_none_or(|g| {
                let mut sent_before = storm.calls.iter().take_while(|c| c.sent_at < g);
                sent_before.all(|c| c.answers > 0)
            });
            let forced = now >= next_drop + cfg.drain_timeout;
            if open || forced {
                drops.forced += u32::from(!open);
                storm.session.daemon.drop_connections()?;
                let at = Instant::now();
                drops.made += 1;
                gate = Some(at + cfg.drop_interval / 2);
                next_drop = at + cfg.drop_interval;
                if drops.made == cfg.drops {
                    stop_sending = Some(at + cfg.drop_interval);
                }
                continue;
            }
        }
        let wake = match stop_sending {
            Some(end) => end,
            None if now < next_drop => next_drop,
            // Held back by the gate: an answer opens it.
            None => next_drop + cfg.drain_timeout,
        };
        if storm.receive_for(wake.saturating_duration_since(now))
            && storm.in_flight < cfg.concurrency
        {
            send_next(storm, cfg.write_every);
        }
    }
    Ok(drops)
}

/// Drains the answers still owed, then reads late and duplicate answers
/// for `cfg.settle`.
fn collect_answers_owed(storm: &mut Pipeline<'_>, cfg: &StormConfig) {
    storm.drain(cfg.drain_timeout);
    for message in collect_unsolicited(&mut storm.session.wrapper, cfg.settle) {
        storm.receive(&message);
    }
}

/// Per call, how often the daemon's journal holds a request of its tool
/// carrying its tag.
fn received_counts(session: &LiveSession, calls: &[Sent]) -> Result<Vec<usize>, HarnessError> {
    let log = session.daemon.request_journal(COMMAND_TIMEOUT)?;
    let mut received = vec![0usize; calls.len()];
    for request in &log.requests {
        if let Some(n) = tag_in(&request.params).filter(|&n| n < calls.len())
            && request.method == calls[n].tool
        {
            received[n] += 1;
        }
    }
    Ok(received)
}

impl StormReport {
    /// Counts every call's answers and how it ended and, by `received`
    /// (per call, how often the daemon got it), double writes and replayed
    /// reads; keeps the first unexpected failures as samples.
    fn count_calls(&mut self, calls: &[Sent], received: &[usize]) {
        for (n, (call, &seen)) in calls.iter().zip(received).enumerate() {
            self.unanswered += usize::from(call.answers == 0);
            self.answered += usize::from(call.answers > 0);
            self.answered_more_than_once += usize::from(call.answers > 1);
            let Some(outcome) = &call.outcome else {
                continue;
            };
            let cause = Cause::of_call(outcome, true);
            match (call.write, outcome.is_ok()) {
                (_, true) if call.write => self.writes_ok += 1,
                (_, true) => self.reads_ok += 1,
                (_, false) if cause == Cause::V305 => {
                    self.refused += 1;
                    self.call_failure.get_or_insert(cause);
                }
                (false, false) => {
                    self.reads_failed += 1;
                    self.read_failure.get_or_insert(cause);
                }
                (true, false) if outcome.is_socket_closed() => {
                    self.writes_failed_socket_closed += 1;
                    self.writes_failed_but_received += usize::from(seen > 0);
                }
                (true, false) => {
                    self.writes_failed_other += 1;
                    self.call_failure.get_or_insert(cause);
                }
            }
            if call.write {
                self.dup_writes += usize::from(seen > 1);
            } else {
                self.replays += usize::from(seen == 2);
                self.reads_received_over_twice += usize::from(seen > 2);
            }
            let expected = outcome.is_ok() || (call.write && outcome.is_socket_closed());
            if !expected && self.failure_samples.len() < MAX_FAILURE_SAMPLES {
                self.failure_samples
                    .push(format!("#{n} {}: {outcome}", call.tool));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::live::assert_each_breaks_once;

    #[test]
    fn tags_round_trip_through_every_tool() {
        let mut writes = Vec::new();
        let mut tools = std::collections::BTreeSet::new();
        for n in 0..24 {
            let call = call_for(n, 3);
            assert_eq!(tag_in(&call.arguments), Some(n), "{call:?}");
            assert_eq!(call.write, n % 3 == 2, "call {n}");
            if call.write {
                writes.push(call.tool);
            }
            tools.insert(call.tool);
        }
        assert_eq!(&writes[..2], ["memory_capture", "memory_contradict"]);
        assert_eq!(tools.len(), 6, "{tools:?}");
        let capture = call_for(2, 3);
        assert_eq!(capture.tool, "memory_capture");
        assert!(capture.arguments["text"].as_str().unwrap().len() >= 12);
        assert!((0..10).all(|n| !call_for(n, 0).write));
    }

    #[test]
    fn tag_in_ignores_lookalikes() {
        assert_eq!(tag_in(&json!({"a": "storm-12"})), None);
        assert_eq!(tag_in(&json!({"a": "storm-x storm-000042"})), Some(42));
        assert_eq!(tag_in(&json!({"session_id": "b1"})), None);
        assert_eq!(tag_in(&Value::Null), None);
    }

    fn clean_report() -> StormReport {
        StormReport {
            mode: Some(BridgeMode::Fixed),
            drops: 5,
            calls_sent: 100,
            answered: 100,
            reads_ok: 60,
            writes_ok: 30,
            writes_failed_socket_closed: 10,
            writes_failed_but_received: 4,
            replays: 12,
            conns_after: 1,
            accepted: 7,
            storm_duration: Duration::from_millis(900),
            ..StormReport::default()
        }
    }

    #[test]
    fn passes_only_when_every_must_condition_holds() {
        let breakages: [fn(&mut StormReport); 10] = [
            |r| r.answered_more_than_once = 1,
            |r| r.unanswered = 1,
            |r| r.reads_failed = 1,
            |r| r.refused = 1,
            |r| r.writes_failed_other = 1,
            |r| r.dup_writes = 1,
            |r| r.conns_after = 2,
            |r| r.conns_after = 0,
            |r| r.output.defects.push("x".into()),
            |r| r.wrapper_gone = Some("eof".into()),
        ];
        assert_each_breaks_once(clean_report, breakages);
        let json = serde_json::to_value(clean_report()).unwrap();
        assert_eq!(json["storm_duration_ms"], json!(900.0));
        assert_eq!(json["mode"], "fixed");
    }
}
