//! From a tool call to CLI commands, and from their output back to the
//! tool's result.
//!
//! Arguments are passed as argv words, option values attached with `=` and
//! free text after `--`, so that a cue or a text starting with a dash is
//! never read as an option.

use std::ffi::OsString;

use serde_json::{Map, Value};

use super::config::DegradedConfig;
use crate::process::CliCommand;

/// The tools degraded mode answers.
const SERVED: [&str; 5] = [
    "memory_recall",
    "memory_capture",
    "episodes_recent",
    "memory_search",
    "memory_temporal_recall",
];

/// How many characters of a capture the daemon keeps; the CLI gets no
/// more (a longer argument could exceed the system's argv limit).
const MAX_CAPTURE_CHARS: usize = 8000;

/// Tokens per recalled hit, to turn a token budget into a hit count.
const TOKENS_PER_HIT: i64 = 300;

/// Hits asked of `iai-mcp bank-recall`.
const BANK_LIMIT: u32 = 20;

/// Marker of an answer read from the store by the `iai` CLI.
pub const DIRECT_STORE: &str = "direct-store";
/// Marker of an answer from `iai-mcp bank-recall`.
pub const BANK_FALLBACK: &str = "bank-fallback";

/// Whether `tool` has a degraded path.
pub fn serves(tool: &str) -> bool {
    SERVED.contains(&tool)
}

/// The commands to try for one call, in order, until one answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The commands.
    pub steps: Vec<Step>,
    /// The call writes: a command killed at its limit may have stored it,
    /// and nothing is tried after it.
    pub writes: bool,
    /// Arguments given that the CLI cannot take (reported in a capture's
    /// `reason`).
    pub not_applied: Vec<String>,
}

/// One command and how to read its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The command.
    pub command: CliCommand,
    /// How its JSON answer becomes the tool's result.
    pub shape: Shape,
}

/// How a CLI answer becomes the tool's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// The answer as it is, marked `_source: direct-store`.
    Direct,
    /// The answer as it is, marked `_source: bank-fallback`.
    Bank,
    /// `iai capture`'s `{id, status}` as `memory_capture`'s `{status,
    /// record_id, reason}`, marked `_source: direct-store`.
    Capture,
}

impl Shape {
    /// Shape `result`; `not_applied` lists arguments the CLI could not take.
    pub fn apply(self, mut result: Map<String, Value>, not_applied: &[String]) -> Value {
        let source = match self {
            Shape::Direct | Shape::Capture => DIRECT_STORE,
            Shape::Bank => BANK_FALLBACK,
        };
        if self == Shape::Capture {
            let id = result.remove("id");
            if !result.contains_key("record_id") {
                let record = match id {
                    Some(Value::String(id)) if id != "?" && !id.is_empty() => Value::String(id),
                    _ => Value::Null,
                };
                result.insert("record_id".into(), record);
            }
            let stored = result.get("status").and_then(Value::as_str) != Some("skipped");
            let mut reason = if stored {
                "stored by the iai CLI while the daemon was unreachable".to_owned()
            } else {
                "skipped by the iai CLI while the daemon was unreachable".to_owned()
            };
            if !not_applied.is_empty() {
                reason.push_str("; not applied: ");
                reason.push_str(&not_applied.join(", "));
            }
            if let Some(Value::String(own)) = result.get("reason") {
                reason = format!("{own}; {reason}");
            }
            result.insert("reason".into(), Value::String(reason));
        }
        result.insert("_source".into(), source.into());
        Value::Object(result)
    }
}

/// The plan for a call of `tool`, or why the CLI cannot answer it.
pub fn plan(
    config: &DegradedConfig,
    tool: &str,
    args: &Map<String, Value>,
) -> Result<Plan, String> {
    match tool {
        "memory_recall" => recall(config, args),
        "memory_capture" => capture(config, args),
        "episodes_recent" => Ok(episodes_recent(config, args)),
        "memory_search" => search(config, args),
        "memory_temporal_recall" => Ok(temporal_recall(config, args)),
        other => Err(format!("{other} has no degraded mode")),
    }
}

/// `memory_recall`: `iai recall` with the token budget turned into a hit
/// count, then, when configured, `iai-mcp bank-recall`.
fn recall(config: &DegradedConfig, args: &Map<String, Value>) -> Result<Plan, String> {
    let cue = text(args, "cue").ok_or("memory_recall needs a non-empty cue")?;
    let limit = integer(args, "budget_tokens")
        .unwrap_or(1500)
        .clamp(1, 1_000_000);
    let limit = (limit + TOKENS_PER_HIT - 1) / TOKENS_PER_HIT;
    let mut steps = vec![direct(iai(
        config,
        words(["recall", "--json", "--limit", &limit.to_string(), "--", cue]),
    ))];
    if config.bank_fallback {
        steps.push(Step {
            command: admin(
                config,
                words([
                    "bank-recall",
                    &format!("--query={cue}"),
                    "--limit",
                    &BANK_LIMIT.to_string(),
                    "--json",
                ]),
            ),
            shape: Shape::Bank,
        });
    }
    Ok(Plan::reading(steps))
}

/// `memory_capture`: `iai capture` with the text cut to what the daemon
/// keeps; the arguments the CLI cannot take are reported.
fn capture(config: &DegradedConfig, args: &Map<String, Value>) -> Result<Plan, String> {
    let Some(Value::String(text)) = args.get("text") else {
        return Err("memory_capture needs a text".into());
    };
    let text: String = text.chars().take(MAX_CAPTURE_CHARS).collect();
    let mut argv = words(["capture", "--json"]);
    if let Some(session) = text_arg(args, "session_id") {
        argv.push(format!("--session-id={session}").into());
    }
    argv.push("--".into());
    argv.push(text.into());
    Ok(Plan {
        steps: vec![Step {
            command: iai(config, argv),
            shape: Shape::Capture,
        }],
        writes: true,
        not_applied: capture_not_applied(args),
    })
}

/// `episodes_recent`: `iai last`, for one session when one is named.
fn episodes_recent(config: &DegradedConfig, args: &Map<String, Value>) -> Plan {
    let n = integer(args, "n").unwrap_or(10);
    let mut argv = words(["last", "--json", "--n", &n.to_string()]);
    if let Some(session) = text_arg(args, "session_id") {
        argv.push(format!("--session={session}").into());
    }
    Plan::reading(vec![direct(iai(config, argv))])
}

/// `memory_search`: `iai search`.
fn search(config: &DegradedConfig, args: &Map<String, Value>) -> Result<Plan, String> {
    let query = text(args, "query").ok_or("memory_search needs a non-empty query")?;
    let k = integer(args, "k").unwrap_or(8);
    Ok(Plan::reading(vec![direct(iai(
        config,
        words(["search", "--json", "--limit", &k.to_string(), "--", query]),
    ))]))
}

/// `memory_temporal_recall`: `iai temporal-recall`, with the time bounds
/// and the cue given.
fn temporal_recall(config: &DegradedConfig, args: &Map<String, Value>) -> Plan {
    let limit = integer(args, "limit").unwrap_or(10);
    let mut argv = words(["temporal-recall", "--json", "--limit", &limit.to_string()]);
    if let Some(at) = text_arg(args, "as_of") {
        argv.push(format!("--as-of={at}").into());
    }
    if let Some(since) = text_arg(args, "changed_since") {
        argv.push(format!("--changed-since={since}").into());
    }
    if let Some(cue) = text(args, "cue") {
        argv.push("--".into());
        argv.push(cue.into());
    }
    Plan::reading(vec![direct(iai(config, argv))])
}

impl Plan {
    /// A plan that only reads: its steps tried in order, every argument
    /// applied.
    fn reading(steps: Vec<Step>) -> Self {
        Plan {
            steps,
            writes: false,
            not_applied: Vec::new(),
        }
    }
}

/// A step whose answer is used as it is ([`Shape::Direct`]).
fn direct(command: CliCommand) -> Step {
    Step {
        command,
        shape: Shape::Direct,
    }
}

/// The `iai` CLI run with `args`, with the configured environment and time
/// limit.
fn iai(config: &DegradedConfig, args: Vec<OsString>) -> CliCommand {
    CliCommand {
        program: config.cli.clone(),
        args,
        env: config.env.clone(),
        limit: config.limit,
    }
}

/// The `iai-mcp` admin CLI run with `args`, with the configured
/// environment and time limit.
fn admin(config: &DegradedConfig, args: Vec<OsString>) -> CliCommand {
    CliCommand {
        program: config.admin_cli.clone(),
        args,
        env: config.env.clone(),
        limit: config.limit,
    }
}

fn words<const N: usize>(items: [&str; N]) -> Vec<OsString> {
    items.into_iter().map(OsString::from).collect()
}

/// A string argument with something in it.
fn text<'a>(args: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    args.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
}

/// A string argument, passed on as given when it is a non-empty string.
fn text_arg<'a>(args: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    args.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// An integer argument (a float with no fraction counts).
fn integer(args: &Map<String, Value>, key: &str) -> Option<i64> {
    let value = args.get(key)?;
    value.as_i64().or_else(|| {
        value
            .as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 1e15)
            .map(|f| f as i64)
    })
}

/// The capture arguments `iai capture` cannot take, when they ask for
/// something other than what it does anyway.
fn capture_not_applied(args: &Map<String, Value>) -> Vec<String> {
    const DEFAULTS: [(&str, &str); 4] = [
        ("tier", "episodic"),
        ("role", "user"),
        ("epistemic_status", "unknown"),
        ("salience_level", "unflagged"),
    ];
    args.iter()
        .filter(|(key, value)| match key.as_str() {
            "text" | "session_id" => false,
            key => match DEFAULTS.iter().find(|(k, _)| *k == key) {
                Some((_, default)) => value.as_str() != Some(default),
                None => !matches!(value, Value::Null) && value.as_str() != Some(""),
            },
        })
        .map(|(key, _)| key.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config() -> DegradedConfig {
        DegradedConfig {
            env: vec![("IAI_MCP_STORE".into(), "/s".into())],
            ..DegradedConfig::default()
        }
    }

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().expect("object").clone()
    }

    fn argv(plan: &Plan, step: usize) -> Vec<String> {
        std::iter::once(&plan.steps[step].command.program)
            .chain(&plan.steps[step].command.args)
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn recall_asks_iai_then_the_bank_with_the_cue_never_as_an_option() {
        let p = plan(
            &config(),
            "memory_recall",
            &args(json!({"cue": "-h why", "budget_tokens": 900})),
        )
        .expect("plan");
        assert_eq!(
            argv(&p, 0),
            ["iai", "recall", "--json", "--limit", "3", "--", "-h why"]
        );
        assert_eq!(
            argv(&p, 1),
            [
                "iai-mcp",
                "bank-recall",
                "--query=-h why",
                "--limit",
                "20",
                "--json"
            ]
        );
        assert_eq!(p.steps[1].shape, Shape::Bank);
        assert!(!p.writes);
        assert_eq!(p.steps[0].command.env, config().env);
        let no_bank = DegradedConfig {
            bank_fallback: false,
            ..config()
        };
        let p = plan(&no_bank, "memory_recall", &args(json!({"cue": "x"}))).expect("plan");
        assert_eq!(p.steps.len(), 1);
        assert_eq!(argv(&p, 0)[4], "5", "default budget 1500 is 5 hits");
        for (budget, hits) in [(i64::MAX, "3334"), (-5, "1"), (0, "1")] {
            let p = plan(
                &no_bank,
                "memory_recall",
                &args(json!({"cue": "x", "budget_tokens": budget})),
            )
            .expect("plan");
            assert_eq!(argv(&p, 0)[4], hits, "budget {budget}");
        }
        assert!(plan(&config(), "memory_recall", &args(json!({"cue": "  "}))).is_err());
    }

    #[test]
    fn capture_keeps_text_and_session_and_names_what_it_cannot_apply() {
        let p = plan(
            &config(),
            "memory_capture",
            &args(json!({
                "text": "--directive is not an option here",
                "session_id": "s-1",
                "tier": "semantic",
                "role": "user",
                "cue": "c",
                "salience_level": "unflagged",
                "goal": ""
            })),
        )
        .expect("plan");
        assert_eq!(
            argv(&p, 0),
            [
                "iai",
                "capture",
                "--json",
                "--session-id=s-1",
                "--",
                "--directive is not an option here"
            ]
        );
        assert!(p.writes);
        assert_eq!(p.not_applied, ["tier", "cue"]);
        let long = "é".repeat(9000);
        let p = plan(&config(), "memory_capture", &args(json!({"text": long}))).expect("plan");
        let last = p.steps[0].command.args.last().expect("text");
        assert_eq!(last.to_string_lossy().chars().count(), 8000);
        assert!(plan(&config(), "memory_capture", &args(json!({"text": 5}))).is_err());
    }

    #[test]
    fn reads_map_their_arguments() {
        let p = plan(
            &config(),
            "episodes_recent",
            &args(json!({"n": 3.0, "session_id": "abc"})),
        )
        .expect("plan");
        assert_eq!(
            argv(&p, 0),
            ["iai", "last", "--json", "--n", "3", "--session=abc"]
        );
        let p = plan(&config(), "episodes_recent", &args(json!({"n": "many"}))).expect("plan");
        assert_eq!(argv(&p, 0), ["iai", "last", "--json", "--n", "10"]);
        let p = plan(
            &config(),
            "memory_search",
            &args(json!({"query": "Foo::bar"})),
        )
        .expect("plan");
        assert_eq!(
            argv(&p, 0),
            ["iai", "search", "--json", "--limit", "8", "--", "Foo::bar"]
        );
        let p = plan(
            &config(),
            "memory_temporal_recall",
            &args(
                json!({"as_of": "2026-01-01T00:00:00Z", "changed_since": "2025-01-01", "limit": 4}),
            ),
        )
        .expect("plan");
        assert_eq!(
            argv(&p, 0),
            [
                "iai",
                "temporal-recall",
                "--json",
                "--limit",
                "4",
                "--as-of=2026-01-01T00:00:00Z",
                "--changed-since=2025-01-01"
            ]
        );
        let p = plan(
            &config(),
            "memory_temporal_recall",
            &args(json!({"cue": "x"})),
        )
        .expect("plan");
        assert_eq!(argv(&p, 0)[5..], ["--", "x"]);
        assert!(plan(&config(), "topology", &Map::new()).is_err());
        assert!(serves("memory_search") && !serves("memory_contradict"));
    }

    #[test]
    fn capture_answers_take_the_tool_result_shape() {
        let shaped = Shape::Capture.apply(
            args(json!({"id": "97e9-1", "status": "inserted", "_source": "x"})),
            &["tier".to_owned()],
        );
        assert_eq!(
            shaped,
            json!({
                "status": "inserted",
                "record_id": "97e9-1",
                "reason": "stored by the iai CLI while the daemon was unreachable; not applied: tier",
                "_source": "direct-store"
            })
        );
        let skipped = Shape::Capture.apply(args(json!({"id": "?", "status": "skipped"})), &[]);
        assert_eq!(skipped["record_id"], Value::Null);
        assert!(
            skipped["reason"]
                .as_str()
                .expect("reason")
                .starts_with("skipped")
        );
        let bank = Shape::Bank.apply(args(json!({"hits": []})), &[]);
        assert_eq!(bank["_source"], "bank-fallback");
    }
}
