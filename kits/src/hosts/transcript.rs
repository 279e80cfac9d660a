//! What one host run produced, for the checks to judge: the calls the
//! script asked for and the results the host sent back for them (matched
//! by call id), what the daemon answered (through the tap), the server
//! processes the host started, and how the run ended.

use std::time::Duration;

use serde_json::Value;

use super::script::Planned;
use super::servers::ProcessId;
use super::standin::{ModelTool, ToolResult};
use super::tap::Exchange;

/// One call the script asked the host to make.
#[derive(Debug, Clone)]
pub struct Step {
    /// The call.
    pub planned: Planned,
    /// The id it was asked under (`call_{step}`).
    pub call_id: String,
    /// The result the host sent back under that id, if it did.
    pub result: Option<ToolResult>,
}

impl Step {
    /// The id of step `step`'s call.
    pub fn call_id(step: usize) -> String {
        format!("call_{step}")
    }
}

/// The daemon restarted inside the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Restarted {
    /// How long until it answered again.
    pub back: Duration,
    /// The number of the first connection the tap accepted after it.
    pub first_connection: usize,
}

/// A tool call as the host itself reported it (Codex's JSON events).
#[derive(Debug, Clone, PartialEq)]
pub struct HostCall {
    /// The tool, by its MCP name.
    pub tool: String,
    /// Its arguments.
    pub arguments: Value,
    /// Its status (`completed`, `failed`).
    pub status: String,
}

/// What one host run produced.
#[derive(Debug, Clone, Default)]
pub struct Transcript {
    /// What the host's own listing command said about the server.
    pub listed: String,
    /// The tools the first turn offered.
    pub offered: Vec<ModelTool>,
    /// Host start to the first turn that offered the server's tools.
    pub first_turn: Option<Duration>,
    /// Each call asked, in order.
    pub steps: Vec<Step>,
    /// How many turns the host took.
    pub turns: usize,
    /// Every server process seen under the host at its turns, once each.
    pub servers: Vec<ProcessId>,
    /// The daemon's restart, when it was restarted.
    pub restart: Option<Result<Restarted, String>>,
    /// The host's own account of its tool calls, when it gives one.
    pub host_calls: Vec<HostCall>,
    /// Every call the daemon answered during the run.
    pub exchanges: Vec<Exchange>,
    /// How the run ended, when it did not end well: the host hung, never
    /// called the model, left a call unanswered past its deadline, or
    /// exited with an error.
    pub failure: Option<String>,
    /// The whole run's time.
    pub elapsed: Duration,
}

impl Transcript {
    /// Step `step`, if it was asked.
    pub fn step(&self, step: usize) -> Option<&Step> {
        self.steps.get(step)
    }
}
