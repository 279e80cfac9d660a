//! A stand-in for the iai-mcp command-line tools (`iai` and `iai-mcp`),
//! which the wrapper runs in degraded mode and for the doctor.
//!
//! The `fake-iai` binary answers the subcommands the wrapper uses (`recall`,
//! `capture`, `last`, `search`, `temporal-recall`, `bank-recall`, `doctor`)
//! with JSON of the real tools' shape, and can be told to misbehave, so that
//! tests can check what the wrapper runs and how it copes, without Python:
//!
//! | variable | effect |
//! |---|---|
//! | `FAKE_IAI_LOG` | append one JSON line per run: `{"argv": [...], "store": ..., "socket": ...}` |
//! | `FAKE_IAI_FAIL` | comma-separated subcommands that exit 1 with a message on stderr |
//! | `FAKE_IAI_HANG` | comma-separated subcommands that never finish |
//! | `FAKE_IAI_GARBAGE` | comma-separated subcommands that print no JSON |
//! | `FAKE_IAI_REFUSE` | comma-separated subcommands that report an embedder refusal |
//!
//! The log line is written before anything else happens, so a run that hangs
//! or fails is logged too.

use std::collections::HashMap;

use serde_json::{Value, json};

/// What one run does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Behaviour {
    /// Print `stdout`, `stderr`, exit with `code`.
    Exit {
        /// Standard output.
        stdout: String,
        /// Standard error.
        stderr: String,
        /// Exit code.
        code: i32,
    },
    /// Never finish.
    Hang,
}

/// The subcommand: the first argument that is not an option.
pub fn subcommand(argv: &[String]) -> Option<&str> {
    argv.iter()
        .map(String::as_str)
        .find(|a| !a.starts_with('-'))
}

fn listed(env: &HashMap<String, String>, key: &str, sub: &str) -> bool {
    env.get(key)
        .is_some_and(|list| list.split(',').any(|s| s.trim() == sub))
}

/// The log line for a run.
pub fn log_line(argv: &[String], env: &HashMap<String, String>) -> String {
    json!({
        "argv": argv,
        "pid": std::process::id(),
        "store": env.get("IAI_MCP_STORE"),
        "socket": env.get("IAI_DAEMON_SOCKET_PATH"),
    })
    .to_string()
}

/// What a run with `argv` (after the program name) and `env` does.
pub fn behaviour(argv: &[String], env: &HashMap<String, String>) -> Behaviour {
    let Some(sub) = subcommand(argv) else {
        return exit_error("usage: fake-iai <subcommand> ...", 2);
    };
    if listed(env, "FAKE_IAI_HANG", sub) {
        return Behaviour::Hang;
    }
    if listed(env, "FAKE_IAI_FAIL", sub) {
        return exit_error(&format!("{sub} failed (FAKE_IAI_FAIL)"), 1);
    }
    if listed(env, "FAKE_IAI_GARBAGE", sub) {
        return Behaviour::Exit {
            stdout: "this is not json\n".into(),
            stderr: String::new(),
            code: 0,
        };
    }
    if listed(env, "FAKE_IAI_REFUSE", sub) {
        return Behaviour::Exit {
            stdout: json!({"error_code": -32011, "error": "embedder identity mismatch"})
                .to_string(),
            stderr: String::new(),
            code: 1,
        };
    }
    let positional = positional(argv);
    let answer = match sub {
        "recall" => json!({
            "hits": [{"record_id": "00000000-0000-4000-8000-000000000001", "literal_surface": positional, "score": 1.0}],
            "_source": "daemon-down-full",
            "count": 1,
        }),
        "bank-recall" => json!({
            "hits": [], "anti_hits": [], "activation_trace": [], "budget_used": 0,
            "cue_mode": "verbatim", "patterns_observed": [],
        }),
        "capture" => {
            let text = positional.unwrap_or_default();
            if text.trim().chars().count() < 12 {
                json!({"id": "?", "status": "skipped", "_source": "direct-store"})
            } else {
                json!({"id": "00000000-0000-4000-8000-00000000c0de", "status": "inserted", "_source": "direct-store"})
            }
        }
        "last" => json!({"turns": [], "count": 0, "_source": "direct-store"}),
        "search" => json!({"hits": [], "frame": "fake search"}),
        "temporal-recall" => json!({"hits": [], "changed_since_events": [], "count": 0}),
        "doctor" => {
            return Behaviour::Exit {
                stdout: "fake doctor: all checks pass\n".into(),
                stderr: String::new(),
                code: 0,
            };
        }
        other => return exit_error(&format!("unknown subcommand {other}"), 2),
    };
    Behaviour::Exit {
        stdout: format!("{answer}\n"),
        stderr: String::new(),
        code: 0,
    }
}

/// The text after `--`, or else the last argument that is not an option or
/// the subcommand.
fn positional(argv: &[String]) -> Option<String> {
    if let Some(at) = argv.iter().position(|a| a == "--") {
        return argv.get(at + 1).cloned();
    }
    argv.iter().skip(1).rfind(|a| !a.starts_with('-')).cloned()
}

fn exit_error(message: &str, code: i32) -> Behaviour {
    Behaviour::Exit {
        stdout: String::new(),
        stderr: format!("{message}\n"),
        code,
    }
}

/// The JSON of a behaviour's stdout, for tests.
pub fn stdout_json(behaviour: &Behaviour) -> Option<Value> {
    match behaviour {
        Behaviour::Exit { stdout, .. } => serde_json::from_str(stdout).ok(),
        Behaviour::Hang => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn answers_in_the_real_shapes() {
        let env = HashMap::new();
        let capture = behaviour(
            &argv(&["capture", "--json", "--", "a text long enough"]),
            &env,
        );
        assert_eq!(stdout_json(&capture).unwrap()["status"], "inserted");
        let short = behaviour(&argv(&["capture", "--json", "--", "tiny"]), &env);
        assert_eq!(stdout_json(&short).unwrap()["id"], "?");
        let recall = behaviour(
            &argv(&["recall", "--json", "--limit", "5", "--", "-x"]),
            &env,
        );
        assert_eq!(
            stdout_json(&recall).unwrap()["hits"][0]["literal_surface"],
            "-x"
        );
    }

    #[test]
    fn misbehaves_on_request() {
        let env: HashMap<String, String> = [
            ("FAKE_IAI_HANG".to_owned(), "capture".to_owned()),
            ("FAKE_IAI_FAIL".to_owned(), "recall, doctor".to_owned()),
        ]
        .into();
        assert_eq!(
            behaviour(&argv(&["capture", "--", "x"]), &env),
            Behaviour::Hang
        );
        assert!(matches!(
            behaviour(&argv(&["doctor"]), &env),
            Behaviour::Exit { code: 1, .. }
        ));
        assert!(matches!(
            behaviour(&argv(&["last"]), &env),
            Behaviour::Exit { code: 0, .. }
        ));
    }
}
