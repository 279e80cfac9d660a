//! The five checks of one host run, judged from its [`Transcript`] on
//! positive evidence only: a call counts as answered when the host sent
//! back a result under the call's own id, the tap saw the daemon answer
//! that very call, the result carries what the daemon returned, and the
//! host itself marked it as a success (Claude Code and opencode: no
//! `is_error` on the result; Codex: its event for the call, `completed`).
//! A refused call counts when the daemon refused it, the result carries
//! the daemon's message, and the host marked it as an error. Nothing
//! passes for want of a sign of failure.

use serde::Serialize;
use serde_json::{Value, json};

use super::host::Host;
use super::script::{AFTER_RESTART, CAPTURE, Planned, SEARCH, Script, TOOLS};
use super::tap::Exchange;
use super::transcript::{Step, Transcript};

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// It held.
    Pass,
    /// It did not.
    Fail,
    /// A figure, judged by no one.
    Info,
}

/// One check of one host with one wrapper.
#[derive(Debug, Clone, Serialize)]
pub struct Checked {
    /// Which check.
    pub check: &'static str,
    /// How it came out.
    pub verdict: Verdict,
    /// Figures and, on failure, why.
    pub detail: String,
}

/// The check that the host connected and offered every tool.
pub const CONNECTED: &str = "connected, 15 tools offered";
/// The check of the capture and the search that finds it.
pub const CAPTURE_SEARCH: &str = "capture then search finds it";
/// The check of the daemon's restart inside the session.
pub const RESTART: &str = "daemon restart, one wrapper";
/// The check of every tool and of the refused call.
pub const EVERY_TOOL: &str = "every tool once, error seen";
/// The start-up figure.
pub const STARTUP: &str = "start-up to first model request";

/// The names of the checks, in order.
pub const CHECKS: [&str; 5] = [CONNECTED, CAPTURE_SEARCH, RESTART, EVERY_TOOL, STARTUP];

/// Every check failed for the same reason (the host could not be
/// installed, configured or run).
pub fn all_failed(why: &str) -> Vec<Checked> {
    CHECKS
        .iter()
        .map(|check| Checked {
            check,
            verdict: Verdict::Fail,
            detail: why.to_owned(),
        })
        .collect()
}

/// Judges a run.
pub fn judge(host: Host, script: &Script, t: &Transcript) -> Vec<Checked> {
    let seen = Seen { host, t };
    vec![
        connected(host, t),
        seen.capture_then_search(script),
        seen.restart(),
        seen.every_tool(),
        startup(t),
    ]
}

/// (1) The host's own listing says the server is usable, and its first
/// model request offered every tool under the host's names.
fn connected(host: Host, t: &Transcript) -> Checked {
    if t.first_turn.is_none() {
        let why = format!("`mcp list`: {}; the host never offered tools", t.listed);
        return row(CONNECTED, false, with_failure(why, t));
    }
    let missing: Vec<&str> = TOOLS
        .iter()
        .filter(|tool| !t.offered.contains(&host.model_tool(tool)))
        .copied()
        .collect();
    let offered = t.offered.iter().filter(|o| Host::is_server_tool(o)).count();
    // A word of its own: "disconnected" is not "connected".
    let usable = t
        .listed
        .split(|c: char| !c.is_alphanumeric())
        .any(|word| word.eq_ignore_ascii_case(host.listed_as_usable()));
    let missing_note = if missing.is_empty() {
        String::new()
    } else {
        format!(", missing {}", missing.join(", "))
    };
    let detail = format!(
        "`mcp list`: {}; {offered} server tools offered{missing_note}",
        t.listed
    );
    row(CONNECTED, usable && missing.is_empty(), detail)
}

/// (5) Host start to the first model request that offered the tools.
fn startup(t: &Transcript) -> Checked {
    match t.first_turn {
        Some(first) => Checked {
            check: STARTUP,
            verdict: Verdict::Info,
            detail: format!(
                "{:.2} s (whole run {:.1} s)",
                first.as_secs_f64(),
                t.elapsed.as_secs_f64()
            ),
        },
        None => row(
            STARTUP,
            false,
            t.failure
                .clone()
                .unwrap_or_else(|| "no model request".to_owned()),
        ),
    }
}

/// A run's evidence, read for one host.
struct Seen<'t> {
    host: Host,
    t: &'t Transcript,
}

impl Seen<'_> {
    /// (2) The capture and the search answered by the daemon, the search's
    /// answer holding the captured text and the capture's record id.
    fn capture_then_search(&self, script: &Script) -> Checked {
        let capture = match self.answered(CAPTURE) {
            Ok(exchange) => exchange,
            Err(why) => return row(CAPTURE_SEARCH, false, with_failure(why, self.t)),
        };
        let search = match self.answered(SEARCH) {
            Ok(exchange) => exchange,
            Err(why) => return row(CAPTURE_SEARCH, false, with_failure(why, self.t)),
        };
        let record = capture
            .answer
            .as_ref()
            .ok()
            .and_then(|v| v["record_id"].as_str());
        let found = search
            .answer
            .as_ref()
            .map(Value::to_string)
            .unwrap_or_default();
        let has_text = found.contains(&json_text(&script.text));
        let has_record = record.is_some_and(|id| found.contains(id));
        let detail = format!(
            "capture answered by the daemon (record {}); search answered by the daemon, {} the text{}",
            record.unwrap_or("none"),
            if has_text && has_record {
                "holding the record and"
            } else {
                "NOT holding the record or"
            },
            if has_text && has_record {
                String::new()
            } else {
                format!(": {}", short(&found))
            }
        );
        row(CAPTURE_SEARCH, has_text && has_record, detail)
    }

    /// (3) The call after the restart answered by the daemon on a
    /// connection made after it, and one server process over the session.
    fn restart(&self) -> Checked {
        let restarted = match &self.t.restart {
            Some(Ok(restarted)) => *restarted,
            Some(Err(why)) => {
                return row(
                    RESTART,
                    false,
                    format!("the daemon did not come back: {why}"),
                );
            }
            None => {
                let why = "the session ended before the restart".to_owned();
                return row(RESTART, false, with_failure(why, self.t));
            }
        };
        let after = self.answered(AFTER_RESTART).and_then(|exchange| {
            if exchange.connection >= restarted.first_connection {
                Ok(())
            } else {
                Err(format!(
                    "call_{AFTER_RESTART} was answered on connection {}, made before the restart (first after it: {})",
                    exchange.connection, restarted.first_connection
                ))
            }
        });
        let servers = self.t.servers.len();
        let detail = format!(
            "daemon back in {:.1} s; next call {}; {servers} server process tree(s) over {} turns",
            restarted.back.as_secs_f64(),
            match &after {
                Ok(()) => "answered by the daemon on a new connection".to_owned(),
                Err(why) => with_failure(why.clone(), self.t),
            },
            self.t.turns
        );
        row(RESTART, after.is_ok() && servers == 1, detail)
    }

    /// (4) Every tool answered by the daemon, then the refused call seen
    /// as the daemon's refusal, marked as an error by the host; and the
    /// run ended well.
    fn every_tool(&self) -> Checked {
        let refused = TOOLS.len();
        let problems: Vec<String> = (0..refused)
            .filter_map(|i| self.answered(i).err())
            .collect();
        let refusal = self.refused(refused);
        let answered = refused - problems.len();
        let mut detail = format!(
            "{answered}/{} tools answered by the daemon; the refused call {}",
            TOOLS.len(),
            match &refusal {
                Ok(message) => format!("seen as an error ({})", short(message)),
                Err(why) => format!("NOT seen as the daemon's refusal: {why}"),
            }
        );
        if !problems.is_empty() {
            detail.push_str(&format!("; {}", problems.join("; ")));
        }
        let ok = problems.is_empty() && refusal.is_ok() && self.t.failure.is_none();
        row(EVERY_TOOL, ok, with_failure(detail, self.t))
    }

    /// The daemon's exchange for step `i`, when the evidence shows the
    /// call answered with it; why not otherwise.
    fn answered(&self, i: usize) -> Result<&Exchange, String> {
        let (step, result_text, exchange) = self.seen_at_daemon(i)?;
        let value = match &exchange.answer {
            Ok(value) => value,
            Err(error) => {
                return Err(format!("the daemon refused {}: {error}", name(step)));
            }
        };
        if !carries(result_text, value) {
            return Err(format!(
                "the result of {} is not what the daemon returned: {}",
                name(step),
                short(result_text)
            ));
        }
        match self.mark(step) {
            Mark::Success => Ok(exchange),
            Mark::Error => Err(format!("{} marked as an error by the host", name(step))),
            Mark::Unseen => Err(format!("no account of {} from the host", name(step))),
        }
    }

    /// The daemon's message refusing step `i`, when the evidence shows the
    /// host passed it on as an error; why not otherwise.
    fn refused(&self, i: usize) -> Result<String, String> {
        let (step, result_text, exchange) = self.seen_at_daemon(i)?;
        let message = match &exchange.answer {
            Err(error) => error["message"].as_str().unwrap_or_default().to_owned(),
            Ok(_) => return Err(format!("the daemon answered {}", name(step))),
        };
        if message.is_empty() || !result_text.contains(&message) {
            return Err(format!(
                "the result of {} does not carry the daemon's message {message:?}: {}",
                name(step),
                short(result_text)
            ));
        }
        match self.mark(step) {
            Mark::Error => Ok(message),
            Mark::Success => Err(format!("{} marked as a success by the host", name(step))),
            Mark::Unseen => Err(format!("no account of {} from the host", name(step))),
        }
    }

    /// Step `i`, the text of the result the host sent back under its id,
    /// and the daemon's exchange for its call.
    fn seen_at_daemon(&self, i: usize) -> Result<(&Step, &str, &Exchange), String> {
        let Some(step) = self.t.step(i) else {
            return Err(format!("call_{i} was never asked"));
        };
        let Some(result) = &step.result else {
            return Err(format!("no result came back for {}", name(step)));
        };
        let (method, params) = daemon_call(&step.planned);
        let exchange = self
            .t
            .exchanges
            .iter()
            .find(|e| e.method == method && same_json(&e.params, &params))
            .ok_or_else(|| format!("{} never reached the daemon", name(step)))?;
        Ok((step, &result.text, exchange))
    }

    /// How the host marked step's result.
    fn mark(&self, step: &Step) -> Mark {
        match self.host {
            Host::ClaudeCode | Host::Opencode => match &step.result {
                Some(result) if result.is_error => Mark::Error,
                Some(_) => Mark::Success,
                None => Mark::Unseen,
            },
            Host::Codex => {
                let event = self.t.host_calls.iter().find(|call| {
                    call.tool == step.planned.tool && same_json(&call.arguments, &step.planned.args)
                });
                match event.map(|call| call.status.as_str()) {
                    Some("completed") => Mark::Success,
                    Some("failed") => Mark::Error,
                    _ => Mark::Unseen,
                }
            }
        }
    }
}

/// How the host marked a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mark {
    /// As a success.
    Success,
    /// As an error.
    Error,
    /// Not at all: no result, or no event of the host's for the call.
    Unseen,
}

/// The daemon method and params a wrapper sends for a planned call: the
/// tool's name and its arguments, but for `profile_get_set`, routed by its
/// operation.
pub fn daemon_call(planned: &Planned) -> (String, Value) {
    if planned.tool != "profile_get_set" {
        return (planned.tool.to_owned(), planned.args.clone());
    }
    let knob = planned.args.get("knob").cloned().unwrap_or(Value::Null);
    match planned.args["operation"].as_str() {
        Some("set") => {
            let value = planned.args.get("value").cloned().unwrap_or(Value::Null);
            (
                "profile_set".to_owned(),
                json!({"knob": knob, "value": value}),
            )
        }
        _ => ("profile_get".to_owned(), json!({"knob": knob})),
    }
}

/// Whether `text` holds `value` as JSON (the wrapper's text content is
/// the daemon's result; a host may add words around it, reformat it, or
/// pass on the whole tool result with the text inside it), or wrapped as
/// `{"value": ...}` as `structuredContent` wraps what is not an object.
fn carries(text: &str, value: &Value) -> bool {
    let wrapped = json!({ "value": value });
    json_values_in(text)
        .iter()
        .any(|found| holds(found, value, &wrapped))
}

/// Whether `found`, one of its parts, or JSON text in one of its strings
/// is `value` or `wrapped`.
fn holds(found: &Value, value: &Value, wrapped: &Value) -> bool {
    if same_json(found, value) || same_json(found, wrapped) {
        return true;
    }
    match found {
        Value::Array(items) => items.iter().any(|item| holds(item, value, wrapped)),
        Value::Object(fields) => fields.values().any(|field| holds(field, value, wrapped)),
        Value::String(text) => json_values_in(text)
            .iter()
            .any(|inner| holds(inner, value, wrapped)),
        _ => false,
    }
}

/// Whether `a` and `b` are the same JSON, numbers compared by value: a
/// host written in JavaScript writes the daemon's `1.0` as `1`.
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(xs), Value::Array(ys)) => {
            xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| same_json(x, y))
        }
        (Value::Object(xs), Value::Object(ys)) => {
            xs.len() == ys.len()
                && xs
                    .iter()
                    .all(|(key, x)| ys.get(key).is_some_and(|y| same_json(x, y)))
        }
        _ => a == b,
    }
}

/// Every JSON object or array that starts somewhere in `text` and parses.
fn json_values_in(text: &str) -> Vec<Value> {
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(offset) = text[at..].find(['{', '[']) {
        let start = at + offset;
        let mut values = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
        match values.next() {
            Some(Ok(value)) => {
                found.push(value);
                at = start + values.byte_offset();
            }
            _ => at = start + 1,
        }
    }
    found
}

/// `text` as it appears inside a JSON string (the daemon writes ASCII
/// only, escaping the rest).
fn json_text(text: &str) -> String {
    let quoted = Value::from(text).to_string();
    quoted[1..quoted.len() - 1].to_owned()
}

/// `call_N (tool)`.
fn name(step: &Step) -> String {
    format!("{} ({})", step.call_id, step.planned.tool)
}

/// `detail`, and the run's failure after it if it failed.
fn with_failure(detail: String, t: &Transcript) -> String {
    match &t.failure {
        Some(why) => format!("{detail}; {why}"),
        None => detail,
    }
}

/// The first characters of a result, on one line.
fn short(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut cut: String = flat.chars().take(100).collect();
    if flat.chars().count() > 100 {
        cut.push('…');
    }
    cut
}

/// A judged row.
fn row(check: &'static str, ok: bool, detail: String) -> Checked {
    Checked {
        check,
        verdict: if ok { Verdict::Pass } else { Verdict::Fail },
        detail,
    }
}

#[cfg(test)]
mod tests;
