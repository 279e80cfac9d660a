//! The five checks of one host run, judged from its [`Transcript`].

use serde::Serialize;

use super::host::Host;
use super::script::{AFTER_RESTART, CAPTURE, SEARCH, Script, TOOLS};
use super::session::Transcript;
use super::standin::ToolResult;

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

/// The names of the checks, in order.
pub const CHECKS: [&str; 5] = [
    "connected, 15 tools offered",
    "capture then search finds it",
    "daemon restart, one wrapper",
    "every tool once, error seen",
    "start-up to first model request",
];

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
    let failure = t.failure.as_deref();
    let with_failure = |ok: bool, detail: String| -> (bool, String) {
        match failure {
            Some(why) => (false, format!("{detail}; {why}")),
            None => (ok, detail),
        }
    };
    let mut rows = Vec::new();

    // (1) connected, every tool offered.
    let missing: Vec<&str> = TOOLS
        .iter()
        .filter(|tool| !t.offered.contains(&host.model_tool(tool)))
        .copied()
        .collect();
    let offered = t.offered.iter().filter(|o| Host::is_server_tool(o)).count();
    let (ok, detail) = if t.first_turn.is_none() {
        (
            false,
            format!("`mcp list`: {}; the host never offered tools", t.listed),
        )
    } else {
        // A word of its own: "disconnected" is not "connected".
        let usable = t
            .listed
            .split(|c: char| !c.is_alphanumeric())
            .any(|word| word.eq_ignore_ascii_case(host.listed_as_usable()));
        (
            usable && missing.is_empty(),
            format!(
                "`mcp list`: {}; {offered} server tools offered{}",
                t.listed,
                if missing.is_empty() {
                    String::new()
                } else {
                    format!(", missing {}", missing.join(", "))
                }
            ),
        )
    };
    rows.push(row(CHECKS[0], ok, detail));

    // (2) capture then search.
    let capture = t.results[CAPTURE].as_ref();
    let search = t.results[SEARCH].as_ref();
    let (ok, detail) = match (capture, search) {
        (Some(c), Some(s)) => {
            let found = s.text.contains(&script.text);
            (
                !seen_as_error(host, t, c, CAPTURE, script)
                    && !seen_as_error(host, t, s, SEARCH, script)
                    && found,
                format!(
                    "capture {}; search {} the text{}",
                    outcome(c),
                    if found { "found" } else { "did not find" },
                    if found {
                        String::new()
                    } else {
                        format!(": {}", short(&s.text))
                    }
                ),
            )
        }
        _ => (
            false,
            "the host sent back no capture and search results".to_owned(),
        ),
    };
    let (ok, detail) = with_failure(ok, detail);
    rows.push(row(CHECKS[1], ok, detail));

    // (3) the daemon restarted inside the session.
    let distinct = &t.wrapper_pids;
    let after = t.results[AFTER_RESTART].as_ref();
    let (ok, detail) = match (&t.restart, after) {
        (Some(Ok(back)), Some(result)) => {
            let by_daemon = !seen_as_error(host, t, result, AFTER_RESTART, script)
                && !answered_by_cli(&result.text);
            (
                by_daemon && distinct.len() == 1,
                format!(
                    "daemon back in {:.1} s; next call {}{}; {} wrapper process(es) over {} turns",
                    back.as_secs_f64(),
                    outcome(result),
                    if by_daemon {
                        ""
                    } else {
                        " (not answered by the daemon)"
                    },
                    distinct.len(),
                    t.wrappers.len()
                ),
            )
        }
        (Some(Err(why)), _) => (false, format!("the daemon did not come back: {why}")),
        _ => (false, "the session ended before the restart".to_owned()),
    };
    let (ok, detail) = with_failure(ok, detail);
    rows.push(row(CHECKS[2], ok, detail));

    // (4) every tool once, then a refused call seen as an error.
    let refused = script.refused();
    let failed: Vec<String> = (0..refused)
        .filter_map(|i| {
            let planned = script.call(i, None)?;
            match &t.results[i] {
                None => Some(format!("{} (no result)", planned.tool)),
                Some(r) if seen_as_error(host, t, r, i, script) => {
                    Some(format!("{}: {}", planned.tool, short(&r.text)))
                }
                Some(_) => None,
            }
        })
        .collect();
    let error_seen = t.results[refused]
        .as_ref()
        .is_some_and(|r| seen_as_error(host, t, r, refused, script));
    let answered = t.results[..refused].iter().filter(|r| r.is_some()).count();
    let refused_text = t.results[refused]
        .as_ref()
        .map_or("no result".to_owned(), |r| short(&r.text));
    let (ok, detail) = with_failure(
        failed.is_empty() && error_seen,
        format!(
            "{answered}/{} tools answered{}; the refused call {} as an error ({refused_text})",
            TOOLS.len(),
            if failed.is_empty() {
                String::new()
            } else {
                format!(", failed: {}", failed.join("; "))
            },
            if error_seen { "seen" } else { "NOT seen" }
        ),
    );
    rows.push(row(CHECKS[3], ok, detail));

    // (5) start-up.
    rows.push(match t.first_turn {
        Some(first) => Checked {
            check: CHECKS[4],
            verdict: Verdict::Info,
            detail: format!(
                "{:.2} s (whole run {:.1} s)",
                first.as_secs_f64(),
                t.elapsed.as_secs_f64()
            ),
        },
        None => row(
            CHECKS[4],
            false,
            failure.unwrap_or("no model request").to_owned(),
        ),
    });
    rows
}

/// Whether the host showed the result of step `step` as an error: the
/// mark on the result it sent to the model, or (Codex, whose wire format
/// has no mark) its own event for the call.
fn seen_as_error(
    host: Host,
    t: &Transcript,
    result: &ToolResult,
    step: usize,
    script: &Script,
) -> bool {
    match host {
        Host::Codex => {
            let captured = t.results[CAPTURE]
                .as_ref()
                .and_then(|r| super::script::record_id(&r.text));
            script
                .call(step, captured.as_deref())
                .is_some_and(|planned| {
                    t.host_failed
                        .iter()
                        .any(|(tool, args)| tool == planned.tool && *args == planned.args)
                })
        }
        Host::ClaudeCode | Host::Opencode => result.is_error,
    }
}

/// Whether a result is the wrapper's degraded answer (through the CLI,
/// marked `"_source": "direct-store"` or `"bank-fallback"`) rather than
/// the daemon's.
fn answered_by_cli(text: &str) -> bool {
    text.match_indices("\"_source\"").any(|(at, _)| {
        let after: String = text[at + 9..].chars().take(24).collect();
        after.contains("direct-store") || after.contains("bank-fallback")
    })
}

/// `ok` or `error`.
fn outcome(result: &ToolResult) -> &'static str {
    if result.is_error { "error" } else { "ok" }
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
mod tests {
    use super::*;

    #[test]
    fn a_degraded_answer_is_told_from_the_daemons() {
        assert!(answered_by_cli(
            r#"{"hits": [], "_source": "direct-store"}"#
        ));
        assert!(answered_by_cli(r#"{"_source":"bank-fallback"}"#));
        assert!(!answered_by_cli(r#"{"hits": [{"text": "_source"}]}"#));
    }
}
