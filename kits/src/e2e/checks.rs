//! The checks of the end-to-end kit, each against the real daemon.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use devkit::bins::error_chain;
use devkit::command::output_within;
use devkit::format::last_lines;
use devkit::rows::Row;
use harness::error::HarnessError;
use harness::scenario::race::{RaceOutcome, classify};
use harness::scenario::wrapper_log::{self, LogEvent};
use harness::wrapper::{BridgeMode, WrapperCommand, WrapperOptions, WrapperProcess};
use serde::Deserialize;
use serde_json::{Value, json};

use super::address::DaemonAddress;
use super::daemon::RealDaemon;
use super::fidelity::{self, Presented};
use super::listing::{self, PROTOCOL};
use super::proxy::HoldingProxy;
use super::pyenv::PyEnv;
use super::release::Release;
use super::stop::Stop;
use super::wait::poll;

/// Bound on any single reply (a safety net, not a measurement).
const REPLY: Duration = Duration::from_secs(60);

const SDK_CHECK: &str = include_str!("../../e2e/sdk_check.py");
/// How long `iai-mcp-wrapper --check` may take.
const CHECK_LIMIT: Duration = Duration::from_secs(60);
/// How long one run of `sdk_check.py` may take (21 calls, a CLI fallback
/// among them, each bounded by the SDK's own wait).
const SDK_LIMIT: Duration = Duration::from_secs(300);

/// What the restart check measured.
#[derive(Debug, Clone, Copy)]
struct Restarted {
    /// From starting the daemon to its socket accepting a connection.
    start_to_rebind: Duration,
    /// From the socket accepting to the waiting call's answer.
    rebind_to_answer: Duration,
    /// The same call straight to the daemon afterwards (`None`: it
    /// failed there).
    own: Option<Duration>,
    /// Connect attempts the wrapper logged as failed after the daemon was
    /// started.
    failed_dials: usize,
}

/// A duration in milliseconds, for the rows' text.
fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// The calls `sdk_check.py` made, and the tools it listed.
pub(super) type SdkRun = (Vec<SdkCall>, Vec<String>);

/// What every check needs.
#[derive(Debug)]
pub struct Kit<'a> {
    /// The Python environment.
    pub py: &'a PyEnv,
    /// The wrapper binary under test.
    pub wrapper: &'a Path,
    /// Node.js, for the release's own wrapper.
    pub node: &'a Path,
    /// The iai-pme release under test (its daemon, CLIs and own wrapper).
    pub release: &'a Release,
}

/// One `sdk_check.py` line: a call, or the summary that ends the run.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum SdkLine {
    Summary { tools: Vec<String> },
    Call(SdkCall),
}

/// One call `sdk_check.py` made.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct SdkCall {
    case: String,
    tool: String,
    ok: bool,
    error: Option<String>,
    source: Option<String>,
    text: Option<String>,
    ms: f64,
}

impl Kit<'_> {
    /// This workspace's wrapper in the daemon's environment, with options
    /// `tune` changes, initialized.
    pub(super) fn ours(
        &self,
        real: &RealDaemon,
        endpoint: Option<PathBuf>,
        tune: impl FnOnce(WrapperOptions) -> WrapperOptions,
    ) -> Result<WrapperProcess, HarnessError> {
        let opts = tune(real.wrapper_options(endpoint, self.py));
        let mut w = WrapperProcess::spawn(&WrapperCommand::new(self.wrapper), &opts)?;
        w.initialize(PROTOCOL)?;
        Ok(w)
    }

    /// This workspace's wrapper in the daemon's environment, not yet
    /// initialized.
    fn ours_uninitialized(&self, real: &RealDaemon) -> Result<WrapperProcess, HarnessError> {
        let opts = real.wrapper_options(None, self.py);
        WrapperProcess::spawn(&WrapperCommand::new(self.wrapper), &opts)
    }

    /// The release's own Node wrapper in the daemon's environment,
    /// initialized (as [`theirs_spawned`](Self::theirs_spawned) starts it).
    fn theirs(
        &self,
        real: &RealDaemon,
        endpoint: Option<PathBuf>,
    ) -> Result<WrapperProcess, HarnessError> {
        let mut w = self.theirs_spawned(real, endpoint)?;
        w.initialize(PROTOCOL)?;
        Ok(w)
    }

    /// The release's own wrapper in the daemon's environment, not yet
    /// initialized.
    fn theirs_uninitialized(&self, real: &RealDaemon) -> Result<WrapperProcess, HarnessError> {
        self.theirs_spawned(real, None)
    }

    /// The release's own wrapper started: its degraded mode uses the real
    /// `iai`; `iai-mcp` is kept off its `PATH` so that its own auto-heal
    /// never restarts the kit's daemon. On TCP it is given the port and
    /// token file ([`RealDaemon::node_wrapper_endpoint`]).
    fn theirs_spawned(
        &self,
        real: &RealDaemon,
        endpoint: Option<PathBuf>,
    ) -> Result<WrapperProcess, HarnessError> {
        let index = self.py.bundled_wrapper()?;
        let node_endpoint = real.node_wrapper_endpoint(endpoint.clone())?;
        let mut opts = real.wrapper_options(endpoint, self.py);
        opts.endpoint = node_endpoint;
        opts.extra_env
            .retain(|(k, _)| k != "PATH" && k != "IAI_MCP_ADMIN_CLI");
        let cmd = WrapperCommand {
            args: vec![index.into()],
            ..WrapperCommand::new(self.node)
        };
        WrapperProcess::spawn(&cmd, &opts)
    }

    /// What the model reads, field by field against the release's own
    /// wrapper: `initialize`'s server name, version and instructions, and
    /// `tools/list` (see [`fidelity`] for the two things that may differ).
    pub fn listing(&self, real: &RealDaemon) -> Row {
        let release = self.release.as_str();
        let check = format!("initialize and tools/list exactly {release}'s own");
        let presented = |w: Result<WrapperProcess, HarnessError>| {
            let mut w = w?;
            let initialize = w.initialize(PROTOCOL)?;
            let tools = listing::listed_tools(&mut w, REPLY)?;
            Ok::<_, HarnessError>(Presented::from_replies(&initialize, tools))
        };
        let both = presented(self.ours_uninitialized(real))
            .and_then(|ours| Ok((ours, presented(self.theirs_uninitialized(real))?)));
        let (ours, theirs) = match both {
            Ok(both) => both,
            Err(e) => return Row::judged(check, false, error_chain(&e)),
        };
        let mismatches = fidelity::compare(&ours, &theirs, release);
        if mismatches.is_empty() && !theirs.tools.is_empty() {
            let detail = format!(
                "{} tools in the same order, every member equal; instructions equal ({} characters); serverInfo {} {}; output schemas the release's plus the contract's extensions only",
                theirs.tools.len(),
                theirs
                    .instructions
                    .as_str()
                    .map_or(0, |i| i.chars().count()),
                ours.server_name,
                ours.server_version,
            );
            return Row::judged(check, true, detail);
        }
        let mut lines: Vec<String> = mismatches.iter().map(ToString::to_string).collect();
        if theirs.tools.is_empty() {
            lines.push("the release's own wrapper listed no tools".to_owned());
        }
        Row::judged(check, false, lines.join("\n"))
    }

    /// `--check` against the live daemon.
    pub fn check_flag(&self, real: &RealDaemon) -> Row {
        let mut check = Command::new(self.wrapper);
        check.arg("--check").envs(real.wrapper_env(self.py));
        let output = output_within(&mut check, "`iai-mcp-wrapper --check`", CHECK_LIMIT)
            .map_err(HarnessError::from);
        // The release installed beside the wrapper is the one served and
        // the one whose daemon runs: both named, neither a warning.
        let release = format!("[ok] daemon release {} ", self.release);
        let served = format!(
            "[ok] tools and instructions served: iai-mcp {}'s own, read from {}",
            self.release,
            self.py.root.display()
        );
        Row::outcome("--check against the live daemon", output, |out| {
            let text = &out.stdout;
            let ok = out.status.success()
                && text.contains("[ok] daemon at")
                && text.contains(&release)
                && text.contains(&served);
            let detail = if ok {
                let line = |start: &str| {
                    text.lines()
                        .find(|l| l.starts_with(start))
                        .unwrap_or("")
                        .to_owned()
                };
                format!(
                    "{}; {}; {}",
                    line("[ok] tools and instructions served"),
                    line("[ok] daemon at"),
                    line(release.trim_end())
                )
            } else {
                format!("{}: {text}", out.status)
            };
            (ok, detail)
        })
    }

    /// The wrapper learns the daemon's release after connecting: the
    /// release whose tools it serves, logged at info with no warning.
    pub fn daemon_release(&self, real: &RealDaemon) -> Row {
        let check = "the daemon's release, learnt after connecting";
        let run = || -> Result<Vec<LogEvent>, HarnessError> {
            let mut w = self.ours(real, None, |o| {
                o.env(wrapper_log::JSON_EVENTS.0, wrapper_log::JSON_EVENTS.1)
            })?;
            ok_result(&w.call_tool("topology", json!({}), REPLY)?)?;
            let learnt = || {
                Ok(
                    wrapper_log::events_named(&w.stderr_text(), wrapper_log::DAEMON_RELEASE)
                        .any(|e| e.daemon.is_some()),
                )
            };
            let why = || "the wrapper logged no daemon_release event with a release".to_owned();
            poll(REPLY, 20, learnt, why)?;
            Ok(wrapper_log::events_named(&w.stderr_text(), wrapper_log::DAEMON_RELEASE).collect())
        };
        Row::outcome(check, run(), |events| {
            let warnings = events
                .iter()
                .filter(|e| e.level.as_deref() == Some("WARN"))
                .count();
            let learnt = events.iter().find_map(|e| e.daemon.clone());
            let first_level = events.iter().find_map(|e| e.level.clone());
            let ok = learnt.as_deref() == Some(self.release.as_str())
                && first_level.as_deref() == Some("INFO")
                && warnings == 0;
            let detail = format!(
                "daemon {}, logged at {}; {warnings} warning(s) on stderr",
                learnt.as_deref().unwrap_or("unknown"),
                first_level.as_deref().unwrap_or("?"),
            );
            (ok, detail)
        })
    }

    /// Runs `sdk_check.py MODE` against the wrapper.
    fn sdk(&self, real: &RealDaemon, mode: &str) -> Result<SdkRun, HarnessError> {
        let env = real.wrapper_env(self.py);
        self.sdk_with(real, mode, &[self.wrapper.into()], env)
    }

    /// Runs `sdk_check.py MODE` with the SDK starting `argv` in `env`: the
    /// calls it made and the tools it listed.
    pub(super) fn sdk_with(
        &self,
        real: &RealDaemon,
        mode: &str,
        argv: &[OsString],
        env: Vec<(OsString, OsString)>,
    ) -> Result<SdkRun, HarnessError> {
        let script = real.scratch().join("sdk_check.py");
        std::fs::write(&script, SDK_CHECK)
            .map_err(|e| HarnessError::io("writing sdk_check.py", e))?;
        let mut sdk = Command::new(self.py.program("python"));
        sdk.arg(&script).arg(mode).args(argv).envs(env);
        let output = output_within(&mut sdk, &format!("sdk_check.py {mode}"), SDK_LIMIT)?;
        let mut calls = Vec::new();
        for line in output.stdout.lines() {
            match serde_json::from_str(line) {
                Ok(SdkLine::Summary { tools }) => return Ok((calls, tools)),
                Ok(SdkLine::Call(call)) => calls.push(call),
                // JSON of another shape is a call that cannot be read: failed.
                Err(e) if serde_json::from_str::<Value>(line).is_ok() => calls.push(SdkCall {
                    case: "unreadable line".to_owned(),
                    tool: "?".to_owned(),
                    ok: false,
                    error: Some(format!("{e}: {line}")),
                    source: None,
                    text: None,
                    ms: 0.0,
                }),
                Err(_) => {}
            }
        }
        Err(HarnessError::Scenario(format!(
            "the SDK run did not finish ({}): {}",
            output.status,
            last_lines(&output.stderr, 8, " / ")
        )))
    }

    /// Every tool called through the official SDK, results validated.
    pub fn sdk_live(&self, real: &RealDaemon) -> Row {
        let check = "SDK calls every tool, results validate";
        let (calls, listed) = match self.sdk(real, "live") {
            Ok(run) => run,
            Err(e) => return Row::judged(check, false, error_chain(&e)),
        };
        let failure = |c: &SdkCall| {
            format!(
                "{} ({}): {}",
                c.case,
                c.tool,
                c.error.as_deref().unwrap_or("")
            )
        };
        let mut failed: Vec<String> = calls.iter().filter(|c| !c.ok).map(failure).collect();
        let uncalled: Vec<&String> = listed
            .iter()
            .filter(|t| !calls.iter().any(|c| &c.tool == *t))
            .collect();
        if !uncalled.is_empty() {
            failed.push(format!("never called: {uncalled:?}"));
        }
        if !failed.is_empty() || calls.is_empty() {
            return Row::judged(check, false, failed.join("\n"));
        }
        let sdk = super::pyenv::MCP_SDK.trim_start_matches("mcp==");
        let detail = format!(
            "mcp {sdk}: listed {} tools; {} calls, every structuredContent valid (SDK and jsonschema)",
            listed.len(),
            calls.len()
        );
        Row::judged(check, true, detail)
    }

    /// A call made while the daemon is stopped, which waits through its
    /// restart under a connected wrapper: answered by the daemon, and
    /// timed from the daemon's rebind (its socket accepting again) to the
    /// answer, the figure the bench's outage phase gives against the fake
    /// daemon.
    pub fn restart(&self, real: &mut RealDaemon) -> Row {
        let check = "daemon restart mid-session, waiting call answered";
        Row::outcome(check, self.restart_once(real), |r| {
            let own = r
                .own
                .map_or("n/a".to_owned(), |own| format!("{:.1} ms", ms(own)));
            let detail = format!(
                "memory_recall sent while the daemon was stopped, answered by it {:.1} ms after its socket \
                 accepted again ({:.1} s after it was started; the same call on a connection of its own then took {own}); \
                 the wrapper's failed dials meanwhile: {}",
                ms(r.rebind_to_answer),
                r.start_to_rebind.as_secs_f64(),
                r.failed_dials
            );
            (true, detail)
        })
    }

    /// The restart check's steps: a connected wrapper; the daemon stopped;
    /// a call sent; the daemon started, its socket watched until it
    /// accepts while the call waits; then the same call straight to the
    /// daemon, for its own time.
    fn restart_once(&self, real: &mut RealDaemon) -> Result<Restarted, HarnessError> {
        // A connect wait well past a cold start, so the call waits for the
        // daemon rather than going to the CLI.
        let mut w = self.ours(real, None, |o| {
            o.env("IAI_MCP_CONNECT_WAIT_MS", "60000")
                .env(wrapper_log::JSON_EVENTS.0, wrapper_log::JSON_EVENTS.1)
        })?;
        ok_result(&w.call_tool("topology", json!({}), REPLY)?)?;
        real.stop();
        let id = json!("restart");
        let arguments = json!({"cue": "billing"});
        let params = json!({"name": "memory_recall", "arguments": arguments});
        w.send_request_with_id(id.clone(), "tools/call", params)?;
        let (started, started_wall) = (Instant::now(), SystemTime::now());
        real.spawn_daemon()?;
        let (rebound, reply, answered) = std::thread::scope(|scope| {
            let daemon: &RealDaemon = real;
            let watch = scope.spawn(|| daemon.wait_accepting(super::daemon::READY_TIMEOUT));
            let reply = w.wait_response(&id, REPLY);
            let answered = Instant::now();
            let rebound = watch.join().unwrap_or_else(|_| {
                Err(HarnessError::Scenario(
                    "the socket watch panicked".to_owned(),
                ))
            });
            (rebound, reply, answered)
        });
        let (rebound, reply) = (rebound?, reply?);
        real.wait_ready(super::daemon::READY_TIMEOUT)?;
        let result = ok_result(&reply)?;
        if result.get("_source").is_some() {
            return Err(HarnessError::Scenario(format!(
                "answered by the CLI, not the daemon: {result}"
            )));
        }
        let own_started = Instant::now();
        let own = real
            .rpc("memory_recall", arguments)
            .ok()
            .map(|_| own_started.elapsed());
        let failed_dials = wrapper_log::event_times(&w.stderr_text(), wrapper_log::CONNECT_FAILED)
            .filter(|&at| at >= started_wall)
            .count();
        Ok(Restarted {
            start_to_rebind: rebound.saturating_duration_since(started),
            rebind_to_answer: answered.saturating_duration_since(rebound),
            own,
            failed_dials,
        })
    }

    /// Text outside ASCII, captured through the wrapper and listed back by
    /// it: the daemon writes such text as `\uXXXX` escapes, and the model
    /// must read the characters.
    pub fn characters(&self, real: &RealDaemon) -> Row {
        let check = "non-ASCII text read back as characters";
        let text = format!("Café ☕ in 東京, naïve résumé {}", unique());
        let run = || -> Result<Value, HarnessError> {
            let mut w = self.ours(real, None, |o| o)?;
            ok_result(&w.call_tool("memory_capture", json!({"text": text}), REPLY)?)?;
            let saved = || Ok(stored(real, &text)? > 0);
            poll(REPLY, 20, saved, || "the daemon never stored it".to_owned())?;
            let reply = w.call_tool("episodes_recent", json!({"n": 500}), REPLY)?;
            ok_result(&reply)?;
            Ok(reply)
        };
        Row::outcome(check, run(), |reply| {
            let shown = reply["result"]["content"][0]["text"].as_str().unwrap_or("");
            let listed = reply["result"]["structuredContent"]["turns"]
                .as_array()
                .is_some_and(|turns| turns.iter().any(|t| t["literal_surface"] == text));
            match (shown.contains(&text), listed) {
                (true, true) => (
                    true,
                    format!("{text:?} in the text and in structuredContent"),
                ),
                (in_text, _) => (
                    false,
                    format!(
                        "in the text: {in_text}, in structuredContent: {listed}; text starts {:?}",
                        shown.chars().take(120).collect::<String>()
                    ),
                ),
            }
        })
    }

    /// The V3-05 race with a daemon restart as the drop.
    pub fn race(&self, real: &mut RealDaemon) -> Vec<Row> {
        [
            (BridgeMode::Fixed, RaceOutcome::Ok),
            (BridgeMode::Prefix, RaceOutcome::DaemonUnreachable),
        ]
        .into_iter()
        .map(|(mode, expected)| {
            let check = format!("V3-05 race, daemon restart as the drop ({mode})");
            Row::outcome(check, self.race_once(real, mode), |(outcome, latency)| {
                let detail = format!(
                    "racing call 50 ms after the drop: {outcome} after {:.0} ms (expected {})",
                    latency.as_secs_f64() * 1000.0,
                    expected.label()
                );
                (outcome == expected, detail)
            })
        })
        .collect()
    }

    fn race_once(
        &self,
        real: &mut RealDaemon,
        mode: BridgeMode,
    ) -> Result<(RaceOutcome, Duration), HarnessError> {
        // A connect wait well past a cold start, so a slow restart cannot
        // pass for the bug.
        let mut w = self.ours(real, None, |o| {
            o.mode(mode)
                .reconnect_delay_ms(1000)
                .env("IAI_MCP_CONNECT_WAIT_MS", "30000")
                .env(wrapper_log::JSON_EVENTS.0, wrapper_log::JSON_EVENTS.1)
        })?;
        ok_result(&w.call_tool("topology", json!({}), REPLY)?)?;
        real.begin_stop(Stop::Graceful);
        // The drop is when the wrapper sees its connection close.
        let closed = || {
            Ok(
                wrapper_log::events_named(&w.stderr_text(), wrapper_log::CONNECTION_LOST)
                    .next()
                    .is_some(),
            )
        };
        let why = || "the wrapper never saw the connection close".to_owned();
        poll(REPLY, 5, closed, why)?;
        std::thread::sleep(Duration::from_millis(50));
        w.send_request_with_id(
            json!("race"),
            "tools/call",
            json!({"name": "topology", "arguments": {}}),
        )?;
        let sent = Instant::now();
        real.wait_stopped();
        real.spawn_daemon()?;
        let reply = w.wait_response(&json!("race"), REPLY);
        let latency = sent.elapsed();
        real.wait_ready(super::daemon::READY_TIMEOUT)?;
        let outcome = reply.map_or(RaceOutcome::Timeout, |r| classify(&r));
        Ok((outcome, latency))
    }

    /// A capture the daemon stored but whose reply was lost when it died:
    /// stored once by this wrapper, and (for reference) how often by
    /// the release's own.
    pub fn capture_once(&self, real: &mut RealDaemon) -> Vec<Row> {
        let check = "capture stored, reply lost, daemon killed: stored once";
        let ours = Row::outcome(check, self.lost_reply(real, true), |(copies, answer)| {
            let detail = format!("stored {copies}x; the wrapper answered: {answer}");
            (copies == 1 && answer.contains("may have stored it"), detail)
        });
        let theirs = match self.lost_reply(real, false) {
            Ok((copies, answer)) => format!("stored {copies}x; its wrapper answered: {answer}"),
            Err(e) => error_chain(&e),
        };
        let reference = format!("same, {}'s own wrapper (reference)", self.release);
        vec![ours, Row::info(reference, theirs)]
    }

    fn lost_reply(
        &self,
        real: &mut RealDaemon,
        ours: bool,
    ) -> Result<(usize, String), HarnessError> {
        let proxy_path = real
            .scratch()
            .join(if ours { "p1.sock" } else { "p2.sock" });
        let proxy_address = DaemonAddress::new(&proxy_path, real.address().transport());
        let proxy = HoldingProxy::start(&proxy_address, real.address())?;
        let mut w = if ours {
            self.ours(real, Some(proxy_path.clone()), |o| o)?
        } else {
            self.theirs(real, Some(proxy_path.clone()))?
        };
        ok_result(&w.call_tool("topology", json!({}), REPLY)?)?;
        let text = format!(
            "The deploy of release {} waits for the database migration.",
            unique()
        );
        proxy.hold();
        w.send_request_with_id(
            json!("capture"),
            "tools/call",
            json!({"name": "memory_capture", "arguments": {"text": text}}),
        )?;
        let held = || Ok(stored(real, &text)? > 0 && proxy.held() > 0);
        let why = || "the daemon never stored the capture".to_owned();
        poll(REPLY, 20, held, why)?;
        real.kill();
        proxy.shutdown();
        let reply = w.wait_response(&json!("capture"), REPLY)?;
        let answer = match ok_result(&reply) {
            Ok(result) => format!(
                "success, _source {}",
                result["_source"].as_str().unwrap_or("(none)")
            ),
            Err(_) => reply["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or("")
                .to_owned(),
        };
        drop(w);
        real.start_daemon()?;
        Ok((stored(real, &text)?, answer))
    }

    /// The degraded answers with the daemon stopped, and the capture made
    /// then stored once.
    pub fn degraded(&self, real: &mut RealDaemon) -> Vec<Row> {
        let check = "daemon stopped: CLI answers, results validate";
        real.stop();
        let calls = match self.sdk(real, "degraded") {
            Ok((calls, _)) => calls,
            Err(e) => return vec![Row::judged(check, false, error_chain(&e))],
        };
        let bad: Vec<String> = calls
            .iter()
            .filter(|c| !c.ok || c.source.is_none())
            .map(|c| {
                format!(
                    "{}: {}",
                    c.tool,
                    c.error.as_deref().unwrap_or("no _source marker")
                )
            })
            .collect();
        let times: Vec<String> = calls
            .iter()
            .map(|c| format!("{} {:.2} s", c.tool, c.ms / 1000.0))
            .collect();
        let detail = if bad.is_empty() {
            format!("5 tools answered with _source; {}", times.join(", "))
        } else {
            bad.join("\n")
        };
        let answered = Row::judged(check, bad.is_empty() && calls.len() == 5, detail);
        let text = calls.iter().find_map(|c| c.text.clone());
        let copies = real.start_daemon().and_then(|_| {
            let text = text.ok_or_else(|| HarnessError::Scenario("no capture was made".into()))?;
            stored(real, &text)
        });
        let check = "capture made while stopped stored once";
        let once = Row::outcome(check, copies, |n| {
            (n == 1, format!("stored {n}x, seen by the restarted daemon"))
        });
        vec![answered, once]
    }

    /// The auto-heal: the daemon stopped, the wrapper's `doctor --auto`
    /// brings it back; the doctor probe warns once meanwhile.
    pub fn heal(&self, real: &mut RealDaemon) -> Row {
        let check = "doctor warns, doctor --auto restarts the daemon";
        let mut run = || -> Result<String, HarnessError> {
            real.stop();
            let stopped = Instant::now();
            let mut w = self.ours(real, None, |o| {
                o.env("IAI_MCP_DOCTOR", "on")
                    .env("IAI_MCP_HEAL_AFTER_MS", "2000")
                    .env(wrapper_log::JSON_EVENTS.0, wrapper_log::JSON_EVENTS.1)
            })?;
            let why = || {
                let stderr = w.stderr_tail(800);
                format!("the daemon never came back; wrapper stderr: {stderr}")
            };
            poll(REPLY, 50, || Ok(real.answers()), why)?;
            let healed = stopped.elapsed();
            ok_result(&w.call_tool("topology", json!({}), REPLY)?)?;
            let stderr = w.stderr_text();
            let warnings = wrapper_log::events_named(&stderr, wrapper_log::DOCTOR_RUN)
                .filter(|run| {
                    run.mode.as_deref() == Some("probe")
                        && run.outcome.as_deref() == Some("problem")
                })
                .count();
            if warnings != 1 {
                let doctor: Vec<&str> = stderr
                    .lines()
                    .filter(|line| line.contains(wrapper_log::DOCTOR_RUN))
                    .collect();
                return Err(HarnessError::Scenario(format!(
                    "{warnings} doctor warnings on stderr (expected 1); the doctor's events: {doctor:?}"
                )));
            }
            Ok(format!(
                "one doctor warning; daemon answering {:.1} s after the stop (heal after 2 s); next call succeeded",
                healed.as_secs_f64()
            ))
        };
        Row::outcome(check, run(), |detail| (true, detail))
    }
}

/// The `structuredContent` of a successful `tools/call` response.
pub(super) fn ok_result(reply: &Value) -> Result<Value, HarnessError> {
    let result = &reply["result"];
    if result.is_object() && result.get("isError") != Some(&Value::Bool(true)) {
        Ok(result["structuredContent"].clone())
    } else {
        Err(HarnessError::Scenario(format!("the call failed: {reply}")))
    }
}

/// How many of the store's recent user turns carry exactly `text`.
fn stored(real: &RealDaemon, text: &str) -> Result<usize, HarnessError> {
    let recent = real
        .rpc("episodes_recent", json!({"n": 500}))
        .map_err(|e| HarnessError::Scenario(format!("episodes_recent failed: {e}")))?;
    Ok(recent["turns"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["literal_surface"] == text)
        .count())
}

/// A short token unique to this run.
fn unique() -> String {
    format!("{:08x}", fastrand::u32(..))
}
