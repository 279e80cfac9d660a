//! What a race run found: how the racing call ended, the run's report,
//! and how the report judges itself.

use std::fmt;
use std::time::Duration;

use devkit::format::{format_ms, serialize_ms, serialize_opt_ms};
use serde::Serialize;
use serde_json::Value;

use super::config::{EOF_EXIT_BOUND, TOOL};
use crate::scenario::outcome::CallOutcome;
use crate::scenario::property::{Cause, Check, Checks, Judged, Prop};
use crate::wrapper::BridgeMode;

/// How the racing call ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum RaceOutcome {
    /// A result without `isError`: the wrapper bridged the race.
    Ok,
    /// The response mentions `daemon_unreachable`: the V3-05 bug.
    DaemonUnreachable,
    /// Any other failure (`isError`, a JSON-RPC error, the wrapper gone).
    OtherError(String),
    /// No response within the call timeout.
    Timeout,
}

impl RaceOutcome {
    /// A short, stable name, as in JSON reports.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::DaemonUnreachable => "daemon_unreachable",
            Self::OtherError(_) => "other_error",
            Self::Timeout => "timeout",
        }
    }
}

impl fmt::Display for RaceOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::OtherError(detail) => write!(f, "other_error ({detail})"),
            other => f.write_str(other.label()),
        }
    }
}

/// Classifies a `tools/call` response.
///
/// Like the seed test, any mention of `daemon_unreachable` in the serialized
/// response counts as the bug, whatever its shape; otherwise an `isError`
/// result or a JSON-RPC error is another error, and a result is success.
pub fn classify(response: &Value) -> RaceOutcome {
    if response.to_string().contains("daemon_unreachable") {
        return RaceOutcome::DaemonUnreachable;
    }
    match CallOutcome::from_response(response) {
        CallOutcome::Ok => RaceOutcome::Ok,
        CallOutcome::RpcError(error) => RaceOutcome::OtherError(format!("JSON-RPC error {error}")),
        CallOutcome::ToolError(text) => RaceOutcome::OtherError(format!("isError: {text}")),
        _ => RaceOutcome::OtherError(format!("response without result or error: {response}")),
    }
}

/// What one race run measured.
#[derive(Debug, Clone, Serialize)]
pub struct RaceReport {
    /// The bridge mode the wrapper ran in (`None`: not set).
    pub mode: Option<BridgeMode>,
    /// Where the fake daemon listened: a socket path or `tcp://host:port`.
    pub endpoint: String,
    /// How the racing call ended.
    pub outcome: RaceOutcome,
    /// Time from sending the racing call to its response (or timeout).
    #[serde(rename = "racing_latency_ms", serialize_with = "serialize_ms")]
    pub racing_latency: Duration,
    /// The racing call's whole response, when there was one.
    pub racing_response: Option<Value>,
    /// Calls after the race until one succeeded (`None`: none in time).
    pub recovery_calls: Option<u32>,
    /// Time from the drop to the first successful call after the race.
    #[serde(rename = "recovered_after_ms", serialize_with = "serialize_opt_ms")]
    pub recovered_after: Option<Duration>,
    /// Daemon connections after recovery (`None`: no recovery).
    pub conns_after: Option<u32>,
    /// The second drop, when the run made one.
    pub second_drop: Option<SecondDrop>,
    /// Results checked against the tool's `outputSchema` (`None`: none).
    pub output_schema: Option<SchemaCheck>,
    /// Time to exit once stdin closed (`None`: not within [`EOF_EXIT_BOUND`]).
    #[serde(rename = "exit_after_eof_ms", serialize_with = "serialize_opt_ms")]
    pub exit_after_eof: Option<Duration>,
    /// Stdout framing defects seen during the run.
    pub defects: Vec<String>,
    /// The end of the wrapper's stderr, when the race or recovery failed.
    pub wrapper_stderr_tail: Option<String>,
}

/// Results checked against the tool's `outputSchema`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SchemaCheck {
    /// Successful results checked.
    pub validated: u32,
    /// Why the first one that did not validate did not.
    pub mismatch: Option<String>,
}

/// A second drop after the wrapper recovered from the first.
#[derive(Debug, Clone, Serialize)]
pub struct SecondDrop {
    /// How the call racing the second reconnect ended.
    pub outcome: RaceOutcome,
    /// Its response, when there was one.
    pub racing_response: Option<Value>,
    /// Whether a call succeeded afterwards.
    pub served_after: bool,
    /// Connections the daemon held after that.
    pub conns_after: Option<u32>,
}

impl Judged for RaceReport {
    fn checks(&self) -> Vec<Check> {
        let mut checks = Checks::default();
        let racing = RacingCall::judge(&self.outcome, self.racing_response.as_ref());
        let latency = format_ms(self.racing_latency);
        checks.judge(
            Prop::ReconnectCall,
            racing.failure,
            format!("{} after {latency}", racing.words),
        );
        checks.expect(
            Prop::Recovers,
            self.recovered_after.is_some(),
            Cause::Died,
            match self.recovered_after {
                Some(after) => format!("answering again {} after the drop", format_ms(after)),
                None => "no call succeeded after the drop".to_owned(),
            },
        );
        if let Some(conns) = self.conns_after {
            checks.one_connection(conns);
        }
        if let Some(second) = &self.second_drop {
            let racing = RacingCall::judge(&second.outcome, second.racing_response.as_ref());
            let (failure, after) = if second.served_after {
                (racing.failure, "served after it")
            } else {
                (Some(Cause::Died), "no call succeeded after it")
            };
            let figure = format!("racing call: {}; {after}", racing.words);
            checks.judge(Prop::SecondDrop, failure, figure);
            if let Some(conns) = second.conns_after {
                checks.one_connection(conns);
            }
        }
        if let Some(schema) = &self.output_schema {
            checks.judge(
                Prop::OutputSchema,
                schema.mismatch.as_ref().map(|_| Cause::SchemaMismatch),
                match &schema.mismatch {
                    None => format!(
                        "{} {TOOL} results valid against its outputSchema",
                        schema.validated
                    ),
                    Some(why) => format!("a {TOOL} result does not validate: {why}"),
                },
            );
        }
        checks.expect(
            Prop::ExitsOnEof,
            self.exit_after_eof.is_some(),
            Cause::Other,
            match self.exit_after_eof {
                Some(after) => format!("exited {} after stdin closed", format_ms(after)),
                None => format!(
                    "still running {} after stdin closed",
                    format_ms(EOF_EXIT_BOUND)
                ),
            },
        );
        checks.stdout_clean(&self.defects);
        checks.into_vec()
    }
}

/// How a racing call is judged.
struct RacingCall {
    /// Why it failed (`None`: it succeeded).
    failure: Option<Cause>,
    /// How it ended, in words: `ok`, or the failure's own text.
    words: String,
}

impl RacingCall {
    /// Judges a racing call by its outcome and response. A refusal is
    /// V3-05 (the daemon was up all along); `socket closed` means the call
    /// was written to the dying connection.
    fn judge(outcome: &RaceOutcome, response: Option<&Value>) -> Self {
        if *outcome == RaceOutcome::Ok {
            return Self {
                failure: None,
                words: "ok".to_owned(),
            };
        }
        let cause = if *outcome == RaceOutcome::Timeout {
            Cause::NoAnswer
        } else {
            Cause::of_text(&response.map(Value::to_string).unwrap_or_default(), true)
        };
        let text = response.and_then(|r| {
            r["result"]["content"][0]["text"]
                .as_str()
                .map(str::to_owned)
                .or_else(|| r.get("error").map(Value::to_string))
        });
        Self {
            failure: Some(cause),
            words: text.unwrap_or_else(|| outcome.to_string()),
        }
    }
}

impl fmt::Display for RaceReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "outcome={} latency={} conns_after={} defects={}",
            self.outcome,
            format_ms(self.racing_latency),
            self.conns_after
                .map_or_else(|| "n/a (no recovery)".to_owned(), |c| c.to_string()),
            self.defects.len()
        )
    }
}
