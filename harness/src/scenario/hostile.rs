//! The hostile client: tens of thousands of random and malformed lines on
//! the wrapper's stdin, interleaved with valid requests, checked black-box
//! against what the wrapper promises (SECURITY.md: it trusts nothing its
//! client sends).
//!
//! Every line is judged from its bytes alone ([`expected_reply`]): a line
//! with a recoverable request id is answered exactly once, with that id; a
//! client response at most once; lines without an id get at most one
//! `id: null` error each. Stdout must carry only JSON-RPC responses, every
//! valid request must succeed (the fake daemon is healthy), and the wrapper
//! must stay alive with flat resident memory.
//!
//! At most [`HostileConfig::in_flight`] lines owing an answer are
//! outstanding at once, and the client drains stdout all along, so neither
//! pipe can fill up. The lines come from a seeded generator, so a failing
//! run is replayed exactly with the same seed and line count.

mod lines;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::time::{Duration, Instant};

use clap::Args;
use devkit::bins::error_chain;
use devkit::format::{format_growth, format_kib, format_ms, serialize_ms};
use mcp_oracle::{Expect, expected_reply};
use serde::Serialize;
use serde_json::Value;

use super::declaration::{Scenario, Scoring};
use super::live::{
    LiveSession, MAX_SAMPLES, WrapperOutput, collect_unsolicited, env_ms, or_na, problems_text,
};
use super::property::{Cause, Check, Checks, Judged, Prop};
use super::settings;
use super::setup::Setup;
use crate::client::ClientError;
use crate::error::HarnessError;
use crate::footprint::{Footprint, growth};
use crate::wrapper::WrapperCommand;

use lines::Line;
pub use lines::LineKind;

/// `IAI_MCP_CALL_TIMEOUT_MS` of the run: well below the default
/// [`HostileConfig::stall_timeout`].
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// How much of a line a sample quotes.
const EXCERPT_BYTES: usize = 120;

/// Parameters of the hostile client: its settings (the `hostile` command's
/// flags) and its fixed bounds; `Default` is every value declared here.
#[derive(Debug, Clone, Args)]
pub struct HostileConfig {
    /// Lines to send (valid requests included).
    #[arg(long, default_value_t = 20_000)]
    pub lines: usize,
    /// Seed of the line generator (the same seed sends the same bytes).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Most lines owing an answer outstanding at once.
    #[arg(long, default_value_t = 32, value_parser = settings::count(1..))]
    pub in_flight: usize,
    /// The wrapper's line cap (IAI_MCP_MAX_LINE_BYTES); lines are generated
    /// below, at and above it.
    #[arg(long, default_value_t = 65_536, value_name = "BYTES",
          value_parser = settings::count(64..))]
    pub max_line_bytes: usize,
    /// Lines sent (and answered) before the first memory sample, so the
    /// wrapper's buffers and allocator have reached their working size.
    #[arg(skip = 2_000_usize)]
    pub warmup_lines: usize,
    /// Growth of `VmRSS` between the two samples that still counts as flat,
    /// in KiB. Generous on purpose (the default is 8 MiB): allocator
    /// behaviour varies between runs, and a leak worth finding grows with
    /// the line count far beyond it.
    #[arg(skip = 8_u64 * 1024)]
    pub rss_growth_limit_kib: u64,
    /// How long to wait for a reply when the window of lines in flight is
    /// full (or at the end) before giving up on the missing ones; keep it
    /// above the wrapper's call timeout in this run (10 s).
    #[arg(skip = Duration::from_secs(15))]
    pub stall_timeout: Duration,
    /// How long to watch stdout for late or duplicate replies at the end.
    #[arg(skip = Duration::from_millis(300))]
    pub settle: Duration,
    /// The wrapper's bridge mode and the fake daemon.
    #[arg(skip)]
    pub setup: Setup,
}

impl Default for HostileConfig {
    fn default() -> Self {
        settings::defaults()
    }
}

/// The hostile client.
#[derive(Debug, Clone, Copy)]
pub struct Hostile;

impl Scenario for Hostile {
    const NAME: &'static str = "hostile";
    const ABOUT: &'static str = "Hostile client: random and malformed lines (seeded) among valid requests; every request answered once, stdout only JSON-RPC, memory flat";
    type Config = HostileConfig;
    type Args = HostileConfig;
    type Report = HostileReport;

    fn setup(cfg: &mut HostileConfig) -> &mut Setup {
        &mut cfg.setup
    }

    fn run(cmd: &WrapperCommand, cfg: &HostileConfig) -> Result<HostileReport, HarnessError> {
        run_hostile(cmd, cfg)
    }

    fn scored(scoring: &Scoring) -> Vec<HostileConfig> {
        vec![HostileConfig {
            lines: scoring.hostile_lines,
            ..HostileConfig::default()
        }]
    }
}

/// What a hostile run measured.
#[derive(Debug, Clone, Default, Serialize)]
pub struct HostileReport {
    /// The generator's seed (`None` for a run of given lines).
    pub seed: Option<u64>,
    /// The line cap the wrapper ran with.
    pub max_line_bytes: usize,
    /// The window of lines owing an answer.
    pub in_flight: usize,
    /// Lines sent.
    pub lines_sent: usize,
    /// Bytes sent, newlines included.
    pub bytes_sent: u64,
    /// Lines sent, by kind.
    pub lines_by_kind: BTreeMap<LineKind, usize>,
    /// Lines longer than the cap.
    pub oversized_lines: usize,
    /// Valid requests sent (`tools/call` of real tools, `ping`,
    /// `tools/list`).
    pub valid_sent: usize,
    /// Valid requests that succeeded.
    pub valid_ok: usize,
    /// Valid requests answered with an error (must be 0).
    pub valid_failed: usize,
    /// Lines owing exactly one answer with their id (valid ones included).
    pub expected_answers: usize,
    /// Of those, answered exactly once.
    pub answered_once: usize,
    /// Of those, never answered (must be 0).
    pub unanswered: usize,
    /// Lines answered more than once, of any kind (must be 0).
    pub answered_more_than_once: usize,
    /// Response-shaped lines with an id (may be answered once).
    pub optional_lines: usize,
    /// Of those, answered.
    pub optional_answered: usize,
    /// Lines with no recoverable id.
    pub no_id_lines: usize,
    /// Errors with `id: null` received (at most `no_id_lines`).
    pub null_id_errors: usize,
    /// Responses with `id: null` that were not errors (must be 0).
    pub null_id_results: usize,
    /// Responses whose id belongs to no line sent (must be 0).
    pub unknown_id_replies: usize,
    /// Stdout messages that are JSON objects but not JSON-RPC 2.0 responses
    /// (must be 0).
    pub not_responses: usize,
    /// The wrapper's memory and descriptors after the warm-up.
    pub start: Footprint,
    /// The same at the end.
    pub end: Footprint,
    /// `VmRSS` growth from start to end, in KiB.
    pub rss_growth_kib: Option<i64>,
    /// The growth that still counts as flat, in KiB.
    pub rss_growth_limit_kib: u64,
    /// Whether the wrapper was still running at the end.
    pub wrapper_alive: bool,
    /// Why the run stopped early, if it did: the wrapper stopped answering
    /// or went away (must be `None`).
    pub stalled: Option<String>,
    /// From the first line to the last answer.
    #[serde(rename = "duration_ms", serialize_with = "serialize_ms")]
    pub duration: Duration,
    /// A few offending lines and replies, with their line numbers.
    pub samples: Vec<String>,
    /// Its stdout defects and the end of its stderr.
    #[serde(flatten)]
    pub output: WrapperOutput,
}

impl Judged for HostileReport {
    fn checks(&self) -> Vec<Check> {
        let mut checks = Checks::default();
        checks.zero(
            Prop::AnsweredOnce,
            self.unanswered,
            Cause::NoAnswer,
            "lines with a request id never answered",
        );
        checks.zero(
            Prop::AnsweredOnce,
            self.answered_more_than_once,
            Cause::AnsweredTwice,
            "lines answered more than once",
        );
        checks.zero(
            Prop::AnsweredOnce,
            self.unknown_id_replies,
            Cause::AnsweredTwice,
            "responses to ids never sent",
        );
        checks.expect(
            Prop::AnsweredOnce,
            self.null_id_errors <= self.no_id_lines,
            Cause::AnsweredTwice,
            format!(
                "{} id:null errors for {} lines without a recoverable id",
                self.null_id_errors, self.no_id_lines
            ),
        );
        checks.zero(
            Prop::StdoutJson,
            self.null_id_results,
            Cause::NotJson,
            "id:null responses that are not errors",
        );
        checks.zero(
            Prop::StdoutJson,
            self.not_responses,
            Cause::NotJson,
            "stdout messages that are not responses",
        );
        checks.stdout_clean(&self.output.defects);
        checks.zero(
            Prop::StaysUp,
            self.valid_failed,
            Cause::Other,
            "valid requests failed among the hostile lines",
        );
        checks.rss_flat(self.rss_growth_kib, self.rss_growth_limit_kib);
        checks.alive(self.wrapper_alive, self.stalled.as_deref());
        checks.into_vec()
    }
}

impl fmt::Display for HostileReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let seed = self
            .seed
            .map_or_else(|| "given lines".to_owned(), |s| format!("seed {s}"));
        writeln!(
            f,
            "{} ({seed}, {} lines, {:.1} MiB, cap {} bytes, {} in flight, {})",
            if self.passed() { "PASS" } else { "FAIL" },
            self.lines_sent,
            self.bytes_sent as f64 / (1024.0 * 1024.0),
            self.max_line_bytes,
            self.in_flight,
            format_ms(self.duration),
        )?;
        let kinds: Vec<String> = self
            .lines_by_kind
            .iter()
            .map(|(kind, n)| format!("{kind} {n}"))
            .collect();
        writeln!(
            f,
            "  lines: {} (over the cap {})",
            kinds.join(", "),
            self.oversized_lines
        )?;
        writeln!(
            f,
            "  valid requests: {} sent, {} ok, {} failed",
            self.valid_sent, self.valid_ok, self.valid_failed
        )?;
        writeln!(
            f,
            "  with a request id: {} owed an answer, {} answered once, {} unanswered, {} answered more than once",
            self.expected_answers,
            self.answered_once,
            self.unanswered,
            self.answered_more_than_once
        )?;
        writeln!(
            f,
            "  client responses: {} sent, {} answered; without an id: {} lines, {} id:null errors, {} id:null results",
            self.optional_lines,
            self.optional_answered,
            self.no_id_lines,
            self.null_id_errors,
            self.null_id_results
        )?;
        writeln!(
            f,
            "  stdout: {} defects, {} non-responses, {} replies to unknown ids",
            self.output.defects.len(),
            self.not_responses,
            self.unknown_id_replies
        )?;
        writeln!(
            f,
            "  wrapper RSS: start {}, end {}, growth {} (flat: below {}); fds {} -> {}; alive: {}",
            format_kib(self.start.rss_kib),
            format_kib(self.end.rss_kib),
            format_growth(self.rss_growth_kib),
            format_kib(Some(self.rss_growth_limit_kib)),
            or_na(self.start.fds),
            or_na(self.end.fds),
            if self.wrapper_alive { "yes" } else { "no" },
        )?;
        for sample in &self.samples {
            writeln!(f, "  e.g. {sample}")?;
        }
        write!(f, "  problems: {}", problems_text(&self.problems()))
    }
}

/// Bookkeeping of one line that carries an id.
#[derive(Debug)]
struct Owed {
    /// The line's number (0-based) in the run.
    line: usize,
    kind: LineKind,
    /// Whether an answer is owed (else: at most one is allowed).
    required: bool,
    answers: u32,
    /// The start of the line, for samples.
    excerpt: String,
}

/// The running bookkeeping of a hostile run.
struct Tally {
    /// Lines with an id, by the canonical JSON text of the id.
    owed: HashMap<String, Owed>,
    /// Required answers still outstanding.
    outstanding: usize,
    report: HostileReport,
}

impl Tally {
    fn sample(&mut self, text: String) {
        if self.report.samples.len() < MAX_SAMPLES {
            self.report.samples.push(text);
        }
    }

    /// Registers line `n` before it is sent.
    fn register(&mut self, n: usize, kind: LineKind, line: &[u8], expect: &Expect) {
        *self.report.lines_by_kind.entry(kind).or_default() += 1;
        self.report.lines_sent += 1;
        self.report.bytes_sent += line.len() as u64 + 1;
        if line.len() > self.report.max_line_bytes {
            self.report.oversized_lines += 1;
        }
        if kind == LineKind::Valid {
            self.report.valid_sent += 1;
        }
        let (id, required) = match expect {
            Expect::Exactly(id) => (id, true),
            Expect::AtMostOnce(id) => (id, false),
            Expect::NoId => {
                self.report.no_id_lines += 1;
                return;
            }
        };
        if required {
            self.report.expected_answers += 1;
            self.outstanding += 1;
        } else {
            self.report.optional_lines += 1;
        }
        let owed = Owed {
            line: n,
            kind,
            required,
            answers: 0,
            excerpt: excerpt(line),
        };
        if let Some(previous) = self.owed.insert(id.to_string(), owed) {
            // The generator keeps ids unique; handcrafted lines may not.
            self.sample(format!(
                "line {n} reuses the id {id} of line {}; answers to it cannot be told apart",
                previous.line
            ));
        }
    }

    /// Books one message from the wrapper's stdout.
    fn receive(&mut self, message: &Value) {
        let quote = || excerpt(message.to_string().as_bytes());
        let is_response = message.get("jsonrpc") == Some(&Value::String("2.0".into()))
            && message.get("method").is_none()
            && message.get("result").is_some() != message.get("error").is_some();
        let Some(id) = message.get("id").filter(|_| is_response) else {
            self.report.not_responses += 1;
            self.sample(format!("not a JSON-RPC response on stdout: {}", quote()));
            return;
        };
        if id.is_null() {
            if message.get("error").is_some() {
                self.report.null_id_errors += 1;
            } else {
                self.report.null_id_results += 1;
                self.sample(format!("id:null result: {}", quote()));
            }
            return;
        }
        let Some(owed) = self.owed.get_mut(&id.to_string()) else {
            self.report.unknown_id_replies += 1;
            self.sample(format!("reply to an id never sent: {}", quote()));
            return;
        };
        owed.answers += 1;
        let (line, kind, answers, required) = (owed.line, owed.kind, owed.answers, owed.required);
        let line_excerpt = owed.excerpt.clone();
        if answers > 1 {
            self.sample(format!(
                "line {line} ({kind}) answered {answers} times: {line_excerpt}"
            ));
            return;
        }
        if required {
            self.outstanding -= 1;
        }
        if kind == LineKind::Valid {
            let failed = message.get("error").is_some()
                || message["result"].get("isError") == Some(&Value::Bool(true));
            if failed {
                self.report.valid_failed += 1;
                self.sample(format!(
                    "valid line {line} failed: {} <- {line_excerpt}",
                    quote()
                ));
            } else {
                self.report.valid_ok += 1;
            }
        }
    }

    /// Final counts over every line with an id.
    fn finish(&mut self) {
        let mut owed: Vec<&Owed> = self.owed.values().collect();
        owed.sort_by_key(|o| o.line);
        let mut missing = Vec::new();
        for o in owed {
            match (o.required, o.answers) {
                (true, 0) => {
                    self.report.unanswered += 1;
                    if missing.len() < MAX_SAMPLES / 2 {
                        missing.push(format!(
                            "line {} ({}) never answered: {}",
                            o.line, o.kind, o.excerpt
                        ));
                    }
                }
                (true, 1) => self.report.answered_once += 1,
                (false, 1) => self.report.optional_answered += 1,
                (_, 0) => {}
                (required, _) => {
                    self.report.answered_more_than_once += 1;
                    self.report.optional_answered += usize::from(!required);
                }
            }
        }
        for text in missing {
            self.sample(text);
        }
    }
}

/// The start of `bytes`, printable, for samples.
fn excerpt(bytes: &[u8]) -> String {
    let cut = &bytes[..bytes.len().min(EXCERPT_BYTES)];
    let mut text = format!("{:?}", String::from_utf8_lossy(cut));
    if bytes.len() > EXCERPT_BYTES {
        text.push_str(&format!("… ({} bytes)", bytes.len()));
    }
    text
}

/// Runs the hostile client against the wrapper started by `cmd`, with
/// `cfg.lines` lines from the seeded generator.
pub fn run_hostile(
    cmd: &WrapperCommand,
    cfg: &HostileConfig,
) -> Result<HostileReport, HarnessError> {
    let mut generator = lines::LineGen::new(cfg.seed, cfg.max_line_bytes);
    let source = (0..cfg.lines).map(move |_| generator.next_line());
    run(cmd, cfg, Some(cfg.seed), source)
}

/// Runs the same checks on the given lines (each without its newline, all
/// counted as [`LineKind::Handcrafted`]); the generator, `cfg.lines` and
/// `cfg.seed` are not used.
pub fn run_hostile_lines(
    cmd: &WrapperCommand,
    cfg: &HostileConfig,
    lines: &[Vec<u8>],
) -> Result<HostileReport, HarnessError> {
    let source = lines.iter().map(|line| Line {
        kind: LineKind::Handcrafted,
        bytes: line.clone(),
    });
    run(cmd, cfg, None, source)
}

/// Sends `source` through a fresh wrapper and reports what came back.
fn run(
    cmd: &WrapperCommand,
    cfg: &HostileConfig,
    seed: Option<u64>,
    source: impl Iterator<Item = Line>,
) -> Result<HostileReport, HarnessError> {
    let mut session = start_wrapper(cmd, cfg)?;
    let mut tally = Tally {
        owed: HashMap::new(),
        outstanding: 0,
        report: HostileReport {
            seed,
            max_line_bytes: cfg.max_line_bytes,
            in_flight: cfg.in_flight.max(1),
            rss_growth_limit_kib: cfg.rss_growth_limit_kib,
            ..HostileReport::default()
        },
    };
    let started = Instant::now();
    let sending = send_lines(&mut session, &mut tally, cfg, source);
    tally.report.stalled = sending.stalled;
    tally.report.duration = started.elapsed();
    for message in collect_unsolicited(&mut session.wrapper, cfg.settle) {
        tally.receive(&message);
    }
    record_footprint(&mut tally.report, &mut session, sending.warm);
    tally.finish();
    Ok(session.conclude(tally.report, |r| &mut r.output))
}

/// Starts the fake daemon and the wrapper with the line cap under test.
fn start_wrapper(cmd: &WrapperCommand, cfg: &HostileConfig) -> Result<LiveSession, HarnessError> {
    // The call timeout bounds how long any forwarded call can take, so a
    // request the daemon never answers shows as a failed call, not a stall.
    let env = [
        ("IAI_MCP_MAX_LINE_BYTES", cfg.max_line_bytes.to_string()),
        env_ms("IAI_MCP_CALL_TIMEOUT_MS", CALL_TIMEOUT),
    ];
    LiveSession::start(cmd, &cfg.setup, &env)
}

/// What sending the lines left behind.
struct Sending {
    /// The wrapper's footprint once the warm-up lines were answered (none
    /// with fewer lines than the warm-up).
    warm: Option<Footprint>,
    /// Why sending stopped before every answer owed came, if it did.
    stalled: Option<String>,
}

/// Sends every line once the window of answers owed has room for it, and
/// samples the footprint after the warm-up; then waits for the last
/// answers owed.
fn send_lines(
    session: &mut LiveSession,
    tally: &mut Tally,
    cfg: &HostileConfig,
    source: impl Iterator<Item = Line>,
) -> Sending {
    let mut warm = None;
    let send_all = || -> Result<(), String> {
        for (n, line) in source.enumerate() {
            if n == cfg.warmup_lines {
                warm = Some(sample_after_warmup(session, tally, cfg.stall_timeout)?);
            }
            send_line(session, tally, cfg, n, line)?;
        }
        wait_outstanding(session, tally, 0, cfg.stall_timeout)
            .map_err(|why| format!("at the end: {why}"))
    };
    let stalled = send_all().err();
    Sending { warm, stalled }
}

/// Waits for the warm-up lines' answers, books what arrives while the
/// wrapper settles, and samples its footprint.
fn sample_after_warmup(
    session: &mut LiveSession,
    tally: &mut Tally,
    stall: Duration,
) -> Result<Footprint, String> {
    wait_outstanding(session, tally, 0, stall)
        .map_err(|why| format!("after the warm-up: {why}"))?;
    // Messages arriving while the wrapper settles are booked.
    let quiet = Duration::from_millis(100);
    for message in collect_unsolicited(&mut session.wrapper, quiet) {
        tally.receive(&message);
    }
    Ok(Footprint::sample(session.wrapper.pid()))
}

/// Sends line `n` once the window has room for it (a line owing an answer
/// takes a place in it), and books the messages already there.
fn send_line(
    session: &mut LiveSession,
    tally: &mut Tally,
    cfg: &HostileConfig,
    n: usize,
    line: Line,
) -> Result<(), String> {
    let Line {
        kind,
        bytes: mut line,
    } = line;
    let expect = expected_reply(&line, cfg.max_line_bytes);
    let limit = tally.report.in_flight - usize::from(matches!(expect, Expect::Exactly(_)));
    wait_outstanding(session, tally, limit, cfg.stall_timeout)
        .map_err(|why| format!("before line {n}: {why}"))?;
    tally.register(n, kind, &line, &expect);
    line.push(b'\n');
    session
        .wrapper
        .send_raw(&line)
        .map_err(|e| format!("sending line {n}: {}", error_chain(&e)))?;
    while let Some(message) = session.wrapper.next_unmatched() {
        tally.receive(&message);
    }
    Ok(())
}

/// Records the footprint at the end beside the one after the warm-up (the
/// end's own, with fewer lines than the warm-up: nothing to compare), and
/// whether the wrapper is still running.
fn record_footprint(
    report: &mut HostileReport,
    session: &mut LiveSession,
    warm: Option<Footprint>,
) {
    let end = Footprint::sample(session.wrapper.pid());
    let start = warm.unwrap_or(end);
    (report.start, report.end) = (start, end);
    report.rss_growth_kib = growth(start.rss_kib, end.rss_kib);
    report.wrapper_alive = matches!(session.wrapper.try_wait(), Ok(None));
}

/// Receives until at most `limit` required answers are outstanding, giving
/// up when nothing arrives for `stall`; `Err` says why.
fn wait_outstanding(
    session: &mut LiveSession,
    tally: &mut Tally,
    limit: usize,
    stall: Duration,
) -> Result<(), String> {
    while tally.outstanding > limit {
        match session.wrapper.recv_any(stall) {
            Ok(message) => tally.receive(&message),
            Err(ClientError::Timeout { .. }) => {
                return Err(format!(
                    "no reply for {} while {} answers were owed",
                    format_ms(stall),
                    tally.outstanding
                ));
            }
            Err(e) => return Err(error_chain(&e)),
        }
    }
    Ok(())
}
