//! The conversation of one host run, held on the kit's thread: each turn
//! the host sends the stand-in is answered with the script's next call,
//! asked under the id `call_{step}`, once the result of the call before
//! it came back under its own id. A call left unanswered past the kit's
//! per-call deadline, a turn without the asked call's result, or a host
//! past its time ends the run at once, saying which call.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use devkit::reap::Reaped;
use harness::error::HarnessError;

use super::host::Host;
use super::script::{AFTER_RESTART, CAPTURE, Script, record_id};
use super::servers::ServerCommand;
use super::standin::{ModelTool, Reply, Turn};
use super::transcript::{Restarted, Step, Transcript};

/// How often the host's end and the deadlines are looked at while no turn
/// comes.
const LOOK_EVERY: Duration = Duration::from_millis(100);

/// How long a host run may take before it is ended and failed.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// From the host's start to its first model request.
    pub first_turn: Duration,
    /// From a call asked to the turn that brings its result.
    pub per_call: Duration,
    /// The whole run.
    pub whole: Duration,
}

impl Default for Limits {
    /// 90 s to the first request (a cold start of a host on a busy
    /// machine), 30 s a call (a call takes well under a second; the
    /// daemon's restart is done before the call after it is asked), 240 s
    /// in all.
    fn default() -> Self {
        Limits {
            first_turn: Duration::from_secs(90),
            per_call: Duration::from_secs(30),
            whole: Duration::from_secs(240),
        }
    }
}

/// Restarts the daemon between two calls.
pub type Restart<'a> = &'a mut dyn FnMut() -> Result<Restarted, HarnessError>;

/// How a host run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// The host exited (and everything it started is gone).
    Exited(std::process::ExitStatus),
    /// It never sent a turn within the first-turn limit.
    NeverCalled,
    /// The call of this step was not answered within the per-call limit.
    Unanswered(usize),
    /// The host's turn after the call of this step carried no result for
    /// it.
    Lost(usize),
    /// The whole run's limit passed; the call then waited for, if any.
    Hung(Option<usize>),
}

/// A call asked and not yet answered.
#[derive(Debug, Clone, Copy)]
struct Asked {
    step: usize,
    at: Instant,
}

/// One conversation.
pub struct Conversation<'a> {
    /// The calls to ask.
    pub script: &'a Script,
    /// The command the host starts the server with.
    pub server: &'a ServerCommand,
    /// Its time limits.
    pub limits: Limits,
    /// Restarts the daemon before [`AFTER_RESTART`].
    pub restart: Restart<'a>,
    /// When the host was started.
    pub started: Instant,
    asked: Option<Asked>,
}

impl<'a> Conversation<'a> {
    /// A conversation with the host started at `started`.
    pub fn new(
        script: &'a Script,
        server: &'a ServerCommand,
        limits: Limits,
        restart: Restart<'a>,
        started: Instant,
    ) -> Self {
        Conversation {
            script,
            server,
            limits,
            restart,
            started,
            asked: None,
        }
    }

    /// Answers turns until the host ends or a limit passes.
    pub fn hold(
        &mut self,
        host: &mut Reaped,
        turns: &mpsc::Receiver<Turn>,
        transcript: &mut Transcript,
    ) -> Ended {
        loop {
            if let Ok(turn) = turns.recv_timeout(LOOK_EVERY)
                && let Some(ended) = self.answer(turn, host.pid(), transcript)
            {
                return ended;
            }
            if let Ok(Some(status)) = host.try_wait() {
                return Ended::Exited(status);
            }
            if let Some(ended) = self.past_a_limit(transcript) {
                return ended;
            }
        }
    }

    /// The limit passed now, if any.
    fn past_a_limit(&self, transcript: &Transcript) -> Option<Ended> {
        let elapsed = self.started.elapsed();
        if transcript.first_turn.is_none() && elapsed > self.limits.first_turn {
            return Some(Ended::NeverCalled);
        }
        if let Some(asked) = self.asked
            && asked.at.elapsed() > self.limits.per_call
        {
            return Some(Ended::Unanswered(asked.step));
        }
        (elapsed > self.limits.whole).then(|| Ended::Hung(self.asked.map(|a| a.step)))
    }

    /// Records a turn and replies with the next call; an end when the turn
    /// lacks the result of the call asked.
    fn answer(&mut self, turn: Turn, root: u32, transcript: &mut Transcript) -> Option<Ended> {
        transcript.turns += 1;
        for server in self.server.servers_under(root) {
            if !transcript.servers.contains(&server) {
                transcript.servers.push(server);
            }
        }
        if transcript.first_turn.is_none() {
            transcript.first_turn = Some(self.started.elapsed());
            transcript.offered = turn.offered.clone();
        }
        let next = match self.asked {
            None if transcript.steps.is_empty() => 0,
            None => {
                // The script is done; the host asked again.
                let _ = turn.reply.send(Reply::Text("Done.".to_owned()));
                return None;
            }
            Some(asked) => {
                let id = Step::call_id(asked.step);
                let Some(result) = turn.results.iter().find(|r| r.call_id == id) else {
                    let _ = turn.reply.send(Reply::Text("Done.".to_owned()));
                    return Some(Ended::Lost(asked.step));
                };
                transcript.steps[asked.step].result = Some(result.clone());
                asked.step + 1
            }
        };
        if next == AFTER_RESTART && transcript.restart.is_none() {
            transcript.restart = Some((self.restart)().map_err(|e| e.to_string()));
        }
        self.ask(next, &turn, transcript);
        None
    }

    /// Replies to `turn` with the call of `step`, or with a final text
    /// once the script is done.
    fn ask(&mut self, step: usize, turn: &Turn, transcript: &mut Transcript) {
        let captured = transcript
            .step(CAPTURE)
            .and_then(|s| s.result.as_ref())
            .and_then(|r| record_id(&r.text));
        let Some(planned) = self.script.call(step, captured.as_deref()) else {
            self.asked = None;
            let _ = turn.reply.send(Reply::Text("Done.".to_owned()));
            return;
        };
        let call_id = Step::call_id(step);
        let reply = Reply::Call {
            id: call_id.clone(),
            tool: offered_as(turn, planned.tool),
            input: planned.args.clone(),
        };
        transcript.steps.push(Step {
            planned,
            call_id,
            result: None,
        });
        self.asked = Some(Asked {
            step,
            at: Instant::now(),
        });
        let _ = turn.reply.send(reply);
    }
}

/// The offered tool that is the server's `tool`, as this turn's host named
/// it (found among the offered ones, so a host that renames tools gets a
/// call it can route, or, failing that, the name it used before).
fn offered_as(turn: &Turn, tool: &str) -> ModelTool {
    turn.offered
        .iter()
        .find(|t| Host::is_server_tool(t) && t.name.ends_with(tool))
        .cloned()
        .unwrap_or_else(|| ModelTool::flat(tool))
}
