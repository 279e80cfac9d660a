//! The daemon stops and comes back: calls made while it is down fail
//! cleanly after the connect wait, naming the socket; the wrapper keeps
//! trying without a busy loop (its `connect_failed` log events are
//! counted over a window); once the daemon is back the next call succeeds
//! without restarting the wrapper, which then holds exactly one connection.

use std::fmt;
use std::thread;
use std::time::{Duration, Instant};

use clap::Args;
use devkit::format::{format_ms, serialize_ms, serialize_opt_ms};
use serde::Serialize;
use serde_json::json;

use super::declaration::{Scenario, Scoring};
use super::live::{
    LiveSession, PROBE_TOOL, WrapperOutput, collect_unsolicited, env_ms, or_na, problems_text,
};
use super::outcome::CallOutcome;
use super::property::{Cause, Check, Checks, Judged, Prop};
use super::settings;
use super::setup::Setup;
use super::wrapper_log::{CONNECT_FAILED, JSON_EVENTS, connect_failures};
use crate::error::HarnessError;
use crate::wrapper::{BridgeMode, WrapperCommand};

/// Shortest period between the starts of two recovery calls.
const RECOVERY_RETRY_INTERVAL: Duration = Duration::from_millis(50);

/// Parameters of the down-up scenario: its settings (the `down-up`
/// command's flags) and its fixed bounds; `Default` is every value declared
/// here.
#[derive(Debug, Clone, Args)]
pub struct DownUpConfig {
    /// How long a call waits for a connection (IAI_MCP_CONNECT_WAIT_MS).
    #[arg(long = "connect-wait-ms", default_value = "500", value_name = "MS",
          value_parser = settings::millis())]
    pub connect_wait: Duration,
    /// Calls made while the daemon is down.
    #[arg(long, default_value_t = 2)]
    pub down_calls: u32,
    /// How long the daemon stays down after those calls, while reconnect
    /// attempts are counted.
    #[arg(long = "rate-window-ms", default_value = "2000", value_name = "MS",
          value_parser = settings::millis())]
    pub rate_window: Duration,
    /// IAI_MCP_BACKOFF_INITIAL_MS (unset: the wrapper's default).
    #[arg(long, value_name = "MS")]
    pub backoff_initial_ms: Option<u64>,
    /// IAI_MCP_BACKOFF_MAX_MS (unset: the wrapper's default).
    #[arg(long, value_name = "MS")]
    pub backoff_max_ms: Option<u64>,
    /// Reconnect attempts per second counted as a busy loop.
    // At or above it, over the window, the wrapper counts as busy-looping.
    #[arg(long, default_value_t = 50.0, value_name = "PER_S")]
    pub max_attempt_rate: f64,
    /// How much longer than `connect_wait` the harness waits for any one
    /// call's answer before recording no response.
    #[arg(skip = Duration::from_secs(10))]
    pub call_grace: Duration,
    /// How long after `UP` recovery may take.
    #[arg(skip = Duration::from_secs(10))]
    pub recovery_timeout: Duration,
    /// How long after the first success to wait before counting the
    /// daemon's connections.
    #[arg(skip = Duration::from_millis(250))]
    pub settle: Duration,
    /// The wrapper's bridge mode and the fake daemon.
    #[arg(skip)]
    pub setup: Setup,
}

impl Default for DownUpConfig {
    fn default() -> Self {
        settings::defaults()
    }
}

/// The daemon down, then up.
#[derive(Debug, Clone, Copy)]
pub struct DownUp;

impl Scenario for DownUp {
    const NAME: &'static str = "down-up";
    const ABOUT: &'static str = "The daemon goes down and comes back: calls fail cleanly at the connect deadline, reconnect attempts stay bounded, the next call after the daemon is back succeeds";
    type Config = DownUpConfig;
    type Args = DownUpConfig;
    type Report = DownUpReport;

    fn setup(cfg: &mut DownUpConfig) -> &mut Setup {
        &mut cfg.setup
    }

    fn run(cmd: &WrapperCommand, cfg: &DownUpConfig) -> Result<DownUpReport, HarnessError> {
        run_down_up(cmd, cfg)
    }

    fn scored(scoring: &Scoring) -> Vec<DownUpConfig> {
        vec![DownUpConfig {
            recovery_timeout: scoring.recovery_timeout,
            ..DownUpConfig::default()
        }]
    }
}

/// A call made while the daemon was down.
#[derive(Debug, Clone, Serialize)]
pub struct DownCall {
    /// How it ended (expected: a `daemon_unreachable` tool error).
    pub outcome: CallOutcome,
    /// From sending it to its answer.
    #[serde(rename = "latency_ms", serialize_with = "serialize_ms")]
    pub latency: Duration,
    /// Whether the error text names the daemon's socket path.
    pub names_socket: bool,
}

/// What the down-up scenario measured.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DownUpReport {
    /// The bridge mode the wrapper ran in (`None`: not set).
    pub mode: Option<BridgeMode>,
    /// The daemon socket the wrapper dialled.
    pub socket_path: String,
    /// The connect wait the wrapper was given.
    #[serde(rename = "connect_wait_ms", serialize_with = "serialize_ms")]
    pub connect_wait: Duration,
    /// The calls made while the daemon was down.
    pub down_calls: Vec<DownCall>,
    /// From `DOWN` acknowledged to `UP` sent.
    #[serde(rename = "down_for_ms", serialize_with = "serialize_ms")]
    pub down_for: Duration,
    /// Failed connect attempts the wrapper logged while the daemon was down
    /// (`None`: it logged none, so they cannot be counted).
    pub attempts_while_down: Option<u64>,
    /// The measuring window, at the end of the down time.
    #[serde(rename = "rate_window_ms", serialize_with = "serialize_ms")]
    pub rate_window: Duration,
    /// Failed connect attempts logged in the window.
    pub attempts_in_window: Option<u64>,
    /// Attempts per second in the window.
    pub attempt_rate_per_s: Option<f64>,
    /// The busy-loop threshold in force.
    pub max_attempt_rate: f64,
    /// Calls made after `UP` up to and including the first success.
    pub recovery_calls: u32,
    /// From `UP` acknowledged to the first successful answer.
    #[serde(rename = "up_to_success_ms", serialize_with = "serialize_opt_ms")]
    pub up_to_success: Option<Duration>,
    /// Connections the daemon held at the end (must be 1).
    pub conns_after: u32,
    /// Its stdout defects and the end of its stderr.
    #[serde(flatten)]
    pub output: WrapperOutput,
}

impl Judged for DownUpReport {
    fn checks(&self) -> Vec<Check> {
        let mut checks = Checks::default();
        let calls = self.down_calls.len();
        let waited =
            |c: &&DownCall| c.outcome.is_daemon_unreachable() && c.latency >= self.connect_wait;
        let early = self.down_calls.iter().find(|c| !waited(c));
        checks.judge(
            Prop::ConnectWait,
            early.map(|c| match c.outcome {
                CallOutcome::Ok => Cause::Other,
                ref outcome => Cause::of_call(outcome, false),
            }),
            match early {
                None => format!(
                    "{calls}/{calls} failed with daemon_unreachable after the connect wait of {}",
                    format_ms(self.connect_wait)
                ),
                Some(c) => format!(
                    "a call made while the daemon was down ended after {} (connect wait {}): {}",
                    format_ms(c.latency),
                    format_ms(self.connect_wait),
                    c.outcome
                ),
            },
        );
        let unnamed = self
            .down_calls
            .iter()
            .filter(|c| c.outcome.is_daemon_unreachable() && !c.names_socket)
            .count();
        checks.expect(
            Prop::NamedSocket,
            unnamed == 0,
            Cause::Other,
            format!(
                "{unnamed} of {calls} failures do not name {}",
                self.socket_path
            ),
        );
        checks.expect(
            Prop::BoundedAttempts,
            self.attempt_rate_per_s
                .is_some_and(|r| r < self.max_attempt_rate),
            Cause::Other,
            match self.attempt_rate_per_s {
                None => format!("not measurable: the wrapper logs no `{CONNECT_FAILED}` events"),
                Some(rate) => format!(
                    "{rate:.1} connect attempts/s while down (limit {})",
                    self.max_attempt_rate
                ),
            },
        );
        checks.expect(
            Prop::Recovers,
            self.up_to_success.is_some(),
            Cause::Died,
            match self.up_to_success {
                Some(after) => format!("a call succeeded {} after UP", format_ms(after)),
                None => format!("no call succeeded after UP ({} tried)", self.recovery_calls),
            },
        );
        checks.one_connection(self.conns_after);
        checks.stdout_clean(&self.output.defects);
        checks.into_vec()
    }
}

impl fmt::Display for DownUpReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let calls = self.down_calls.len();
        let unreachable = self
            .down_calls
            .iter()
            .filter(|c| c.outcome.is_daemon_unreachable())
            .count();
        let named = self.down_calls.iter().filter(|c| c.names_socket).count();
        let median = median(self.down_calls.iter().map(|c| c.latency).collect());
        write!(
            f,
            "{}: unreachable {unreachable}/{calls} (socket named {named}/{calls}, after {}), attempts {}, success {} after UP, conns {}; \
             down for {}, attempts while down {}, in the last {} {}; recovery calls {}; defects {}; problems: {}",
            if self.passed() { "PASS" } else { "FAIL" },
            or_na(median.map(format_ms)),
            or_na(self.attempt_rate_per_s.map(|r| format!("{r:.1}/s"))),
            self.up_to_success
                .map_or_else(|| "never".to_owned(), format_ms),
            self.conns_after,
            format_ms(self.down_for),
            or_na(self.attempts_while_down),
            format_ms(self.rate_window),
            or_na(self.attempts_in_window),
            self.recovery_calls,
            self.output.defects.len(),
            problems_text(&self.problems())
        )
    }
}

fn median(mut values: Vec<Duration>) -> Option<Duration> {
    values.sort_unstable();
    match values.len() {
        0 => None,
        n if n % 2 == 1 => Some(values[n / 2]),
        n => Some((values[n / 2 - 1] + values[n / 2]) / 2),
    }
}

/// Runs the down-up scenario once against the wrapper started by `cmd`.
pub fn run_down_up(cmd: &WrapperCommand, cfg: &DownUpConfig) -> Result<DownUpReport, HarnessError> {
    let mut session = LiveSession::start(cmd, &cfg.setup, &wrapper_env(cfg))?;
    let socket_path = session.daemon.endpoint().label();
    let down = while_down(&mut session, cfg, &socket_path)?;
    let up_at = Instant::now();
    let (recovery_calls, up_to_success) = recover(&mut session, cfg, up_at);
    // Late extra connections would show up here.
    collect_unsolicited(&mut session.wrapper, cfg.settle);
    let conns_after = session.daemon.stats()?.conns;

    let attempts_while_down = Some(down.logged_at_end - down.before_down).filter(|&n| n > 0);
    let attempts_in_window = attempts_while_down.map(|_| down.logged_at_end - down.logged_at_start);
    let report = DownUpReport {
        mode: cfg.setup.mode,
        socket_path,
        connect_wait: cfg.connect_wait,
        down_calls: down.calls,
        down_for: up_at - down.down_at,
        attempts_while_down,
        rate_window: down.rate_window,
        attempts_in_window,
        attempt_rate_per_s: attempts_in_window.map(|n| n as f64 / down.rate_window.as_secs_f64()),
        max_attempt_rate: cfg.max_attempt_rate,
        recovery_calls,
        up_to_success,
        conns_after,
        output: WrapperOutput::default(),
    };
    Ok(session.conclude(report, |r| &mut r.output))
}

/// The wrapper's environment: its JSON log, its connect wait and the
/// backoff the config sets.
fn wrapper_env(cfg: &DownUpConfig) -> Vec<(&'static str, String)> {
    let mut env = vec![
        (JSON_EVENTS.0, JSON_EVENTS.1.to_owned()),
        env_ms("IAI_MCP_CONNECT_WAIT_MS", cfg.connect_wait),
    ];
    if let Some(ms) = cfg.backoff_initial_ms {
        env.push(("IAI_MCP_BACKOFF_INITIAL_MS", ms.to_string()));
    }
    if let Some(ms) = cfg.backoff_max_ms {
        env.push(("IAI_MCP_BACKOFF_MAX_MS", ms.to_string()));
    }
    env
}

/// What happened while the daemon was down: the calls made, and the
/// connect failures the wrapper logged before, at the start and at the
/// end of the rate window.
struct Down {
    down_at: Instant,
    calls: Vec<DownCall>,
    before_down: u64,
    logged_at_start: u64,
    logged_at_end: u64,
    rate_window: Duration,
}

/// Takes the daemon down, makes the calls that fail meanwhile, counts the
/// wrapper's connect attempts over the rate window, and brings the daemon
/// back up.
fn while_down(
    session: &mut LiveSession,
    cfg: &DownUpConfig,
    socket_path: &str,
) -> Result<Down, HarnessError> {
    let logged = |s: &LiveSession| connect_failures(&s.wrapper.stderr_text());
    let call_bound = cfg.connect_wait + cfg.call_grace;
    let before_down = logged(session);
    session.daemon.down()?;
    let down_at = Instant::now();
    let mut calls = Vec::new();
    for _ in 0..cfg.down_calls {
        let call = session.call(PROBE_TOOL, json!({}), call_bound);
        calls.push(DownCall {
            names_socket: call.outcome.error_mentions(socket_path),
            outcome: call.outcome,
            latency: call.latency,
        });
    }
    let window_start = Instant::now();
    let logged_at_start = logged(session);
    // The measuring period itself, not a synchronisation.
    thread::sleep(cfg.rate_window);
    let rate_window = window_start.elapsed();
    let logged_at_end = logged(session);
    session.daemon.up()?;
    Ok(Down {
        down_at,
        calls,
        before_down,
        logged_at_start,
        logged_at_end,
        rate_window,
    })
}

/// Calls until one succeeds after the daemon came back at `up_at` (every
/// [`RECOVERY_RETRY_INTERVAL`], within the recovery timeout): how many
/// calls it took, and how long after `up_at` the success came.
fn recover(
    session: &mut LiveSession,
    cfg: &DownUpConfig,
    up_at: Instant,
) -> (u32, Option<Duration>) {
    let call_bound = cfg.connect_wait + cfg.call_grace;
    let deadline = up_at + cfg.recovery_timeout;
    let mut recovery_calls = 0;
    loop {
        let started = Instant::now();
        let left = deadline.saturating_duration_since(started);
        recovery_calls += 1;
        let outcome = session
            .call(PROBE_TOOL, json!({}), call_bound.min(left))
            .outcome;
        if outcome.is_ok() {
            return (recovery_calls, Some(up_at.elapsed()));
        }
        let next = started + RECOVERY_RETRY_INTERVAL;
        if matches!(outcome, CallOutcome::WrapperGone(_)) || next >= deadline {
            return (recovery_calls, None);
        }
        thread::sleep(next.saturating_duration_since(Instant::now()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::live::assert_each_breaks_once;

    fn unreachable(socket: &str) -> CallOutcome {
        CallOutcome::ToolError(format!(
            "error: daemon_unreachable: no connection to the iai-mcp daemon at {socket} within 0.5 s (code -32002)"
        ))
    }

    fn clean_report() -> DownUpReport {
        let call = DownCall {
            outcome: unreachable("/tmp/iaiX/d.sock"),
            latency: Duration::from_millis(501),
            names_socket: true,
        };
        DownUpReport {
            mode: Some(BridgeMode::Fixed),
            socket_path: "/tmp/iaiX/d.sock".into(),
            connect_wait: Duration::from_millis(500),
            down_calls: vec![call.clone(), call],
            down_for: Duration::from_secs(3),
            attempts_while_down: Some(6),
            rate_window: Duration::from_secs(2),
            attempts_in_window: Some(2),
            attempt_rate_per_s: Some(1.0),
            max_attempt_rate: 50.0,
            recovery_calls: 1,
            up_to_success: Some(Duration::from_millis(700)),
            conns_after: 1,
            ..DownUpReport::default()
        }
    }

    #[test]
    fn passes_only_when_every_must_condition_holds() {
        let report = clean_report();
        assert!(report.passed(), "{report}");
        assert!(report.to_string().starts_with(
            "PASS: unreachable 2/2 (socket named 2/2, after 501 ms), attempts 1.0/s, success 700 ms after UP, conns 1; \
             down for 3000 ms, attempts while down 6, in the last 2000 ms 2;"
        ));
        let breakages: [fn(&mut DownUpReport); 7] = [
            |r| r.down_calls[0].outcome = CallOutcome::Ok,
            |r| r.down_calls[1].names_socket = false,
            |r| r.down_calls[0].latency = Duration::from_millis(3),
            |r| r.attempt_rate_per_s = None,
            |r| r.attempt_rate_per_s = Some(400.0),
            |r| r.up_to_success = None,
            |r| r.conns_after = 2,
        ];
        assert_each_breaks_once(clean_report, breakages);
        let json = serde_json::to_value(clean_report()).unwrap();
        assert_eq!(json["down_calls"][0]["latency_ms"], json!(501.0));
        assert_eq!(json["attempt_rate_per_s"], json!(1.0));
    }

    #[test]
    fn median_of_durations() {
        let ms = Duration::from_millis;
        assert_eq!(median(vec![]), None);
        assert_eq!(median(vec![ms(3), ms(1), ms(2)]), Some(ms(2)));
        assert_eq!(median(vec![ms(4), ms(2)]), Some(ms(3)));
    }
}
