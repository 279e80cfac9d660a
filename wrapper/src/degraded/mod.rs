//! Degraded mode: answering memory tools through the iai CLI while the
//! daemon cannot be reached.
//!
//! iai-mcp ships CLIs that read and write the store directly. While the
//! daemon is down, five tools can still be answered through them:
//! `memory_recall` (`iai recall`, then `iai-mcp bank-recall`),
//! `memory_capture` (`iai capture`), `episodes_recent` (`iai last`),
//! `memory_search` (`iai search`) and `memory_temporal_recall`
//! (`iai temporal-recall`). [`plan`] turns a call's arguments into those
//! commands, keeping every argument the CLI can take; [`Degraded::answer`] runs them
//! and shapes the output as the tool's result, marked with `_source`.
//!
//! When a call may be answered here is not decided here: the bridge core
//! decides it ([`crate::bridge::Failure::fallback`]), because only it knows
//! whether a write ever reached the daemon. A capture that did is never
//! handed to the CLI, which would store it a second time (the CLI skips the
//! daemon's near-duplicate check).

mod config;
mod plan;

use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::Semaphore;

pub use config::{
    DEFAULT_ADMIN_CLI, DEFAULT_BANK_FALLBACK, DEFAULT_CLI, DEFAULT_LIMIT, DEFAULT_ON,
    DegradedConfig,
};
pub use plan::{Plan, Shape, Step, plan, serves as has_plan_for};

use crate::log_names::{self as event, millis};
use crate::process::{self, RunError};
use crate::programs::Installation;

/// Most CLI runs at once: each loads the store (and maybe an embedder), so
/// a burst of calls while the daemon is down queues rather than forks a
/// crowd of interpreters.
pub const MAX_RUNS: usize = 4;

/// Degraded mode as the wrapper runs it: the settings with the programs
/// found on disk, whether the `iai` program was found at all, and the limit
/// on runs at once.
#[derive(Debug)]
pub struct Degraded {
    config: DegradedConfig,
    available: bool,
    runs: Semaphore,
}

impl Degraded {
    /// Degraded mode with `config`, its programs looked for in
    /// `installation`; when its `iai` program cannot be found it serves
    /// nothing, so calls wait for the daemon as they would without it.
    pub fn new(config: DegradedConfig, installation: &Installation) -> Self {
        let cli = installation.locate(&config.cli);
        let available = config.enabled && cli.is_some();
        if config.enabled && !available {
            tracing::info!(
                event = event::DEGRADED_UNAVAILABLE,
                cli = %config.cli.to_string_lossy(),
                "degraded mode off: the iai CLI was not found"
            );
        }
        let config = DegradedConfig {
            cli: cli.map_or(config.cli, Into::into),
            admin_cli: installation.run_as(&config.admin_cli),
            ..config
        };
        Degraded {
            config,
            available,
            runs: Semaphore::new(MAX_RUNS),
        }
    }

    /// Whether a call of `tool` can be answered in degraded mode.
    pub fn serves(&self, tool: &str) -> bool {
        self.available && plan::serves(tool)
    }

    /// Answer a call of `tool` with `arguments` through the CLI, once one
    /// of the [`MAX_RUNS`] slots is free (waiting at most one run's limit).
    pub async fn answer(
        &self,
        tool: &str,
        arguments: &Map<String, Value>,
    ) -> Result<Value, DegradedError> {
        let Ok(Ok(_slot)) = tokio::time::timeout(self.config.limit, self.runs.acquire()).await
        else {
            return Err(DegradedError::Busy(MAX_RUNS));
        };
        answer(&self.config, tool, arguments).await
    }
}

/// Why degraded mode could not answer.
#[derive(Debug, thiserror::Error)]
pub enum DegradedError {
    /// The arguments leave nothing the CLI could do (e.g. no cue).
    #[error("{0}")]
    Unusable(String),
    /// Every run slot stayed taken for a whole run's limit.
    #[error("{0} CLI runs already under way")]
    Busy(usize),
    /// Every command was tried and none gave an answer.
    #[error("{}", .0.join("; "))]
    Failed(Vec<String>),
    /// A write ran past its limit and was killed: it may or may not have
    /// been stored, and is not tried again.
    #[error("`{command}` was killed after {limit:?}; it may have been stored")]
    Unknown {
        /// The command, for the message.
        command: String,
        /// The limit it ran past.
        limit: Duration,
    },
    /// The store refused the request outright (embedder misconfiguration):
    /// no other command can answer it either.
    #[error("`{command}` refused: {message}")]
    Refused {
        /// The command, for the message.
        command: String,
        /// The CLI's reason.
        message: String,
    },
}

/// JSON-RPC code iai-mcp uses for "the embedder refused": the store is
/// misconfigured, and no degraded path can answer.
pub const EMBEDDER_REFUSAL: i64 = -32011;

/// Answer a call of `tool` with `arguments` through the CLI.
async fn answer(
    config: &DegradedConfig,
    tool: &str,
    arguments: &Map<String, Value>,
) -> Result<Value, DegradedError> {
    let plan = plan(config, tool, arguments).map_err(DegradedError::Unusable)?;
    let mut failures = Vec::new();
    for step in &plan.steps {
        let shown = step.command.display();
        let output = match process::run(&step.command).await {
            Ok(output) => output,
            Err(RunError::TimedOut(..)) if plan.writes => {
                return Err(DegradedError::Unknown {
                    command: shown,
                    limit: step.command.limit,
                });
            }
            Err(e) => {
                failures.push(format!("`{shown}`: {e}"));
                continue;
            }
        };
        let parsed = parse_json(&output.stdout);
        if !output.status.success() {
            if let Some(message) = parsed.as_ref().and_then(refusal) {
                return Err(DegradedError::Refused {
                    command: shown,
                    message,
                });
            }
            let why = if output.stderr_tail.is_empty() {
                String::new()
            } else {
                format!(": {}", last_line(&output.stderr_tail))
            };
            failures.push(format!("`{shown}` failed ({}){why}", output.status));
            continue;
        }
        match parsed {
            Some(Value::Object(result)) => {
                tracing::info!(
                    event = event::DEGRADED_ANSWER,
                    tool,
                    command = %shown,
                    elapsed_ms = millis(output.elapsed),
                    "answered in degraded mode"
                );
                return Ok(step.shape.apply(result, &plan.not_applied));
            }
            _ => failures.push(format!("`{shown}` printed no JSON object")),
        }
    }
    Err(DegradedError::Failed(failures))
}

/// The CLI's JSON answer: the whole output, or else its last line that is
/// a JSON value (a stray log line before the answer is tolerated).
fn parse_json(stdout: &[u8]) -> Option<Value> {
    if let Ok(value) = serde_json::from_slice(stdout) {
        return Some(value);
    }
    stdout
        .split(|b| *b == b'\n')
        .rev()
        .filter(|line| !line.iter().all(u8::is_ascii_whitespace))
        .find_map(|line| serde_json::from_slice(line).ok())
}

/// The refusal message, if the CLI reported an embedder refusal.
fn refusal(doc: &Value) -> Option<String> {
    (doc.get("error_code").and_then(Value::as_i64) == Some(EMBEDDER_REFUSAL)).then(|| {
        doc.get("error")
            .and_then(Value::as_str)
            .unwrap_or("embedder refused")
            .to_owned()
    })
}

fn last_line(text: &str) -> &str {
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_is_taken_whole_or_from_the_last_json_line() {
        assert_eq!(parse_json(b"{\"a\":1}\n"), Some(json!({"a": 1})));
        assert_eq!(
            parse_json(b"loading model...\n{\"a\":2}\n\n"),
            Some(json!({"a": 2}))
        );
        assert_eq!(parse_json(b"no json here\n"), None);
        assert_eq!(parse_json(b""), None);
    }

    #[test]
    fn refusals_are_recognised_by_code() {
        assert_eq!(
            refusal(&json!({"error_code": -32011, "error": "identity mismatch"})),
            Some("identity mismatch".into())
        );
        assert_eq!(refusal(&json!({"error_code": -32001})), None);
    }
}
