//! `judge()` on made-up transcripts: one that passes for each host, then
//! one for each way each check can fail, each expected to fail that check
//! by name (and, where the way concerns one host's marks, in that host).

use std::time::Duration;

use serde_json::{Value, json};

use super::*;
use crate::hosts::script::{MISSING_RECORD, Script};
use crate::hosts::servers::ProcessId;
use crate::hosts::standin::ToolResult;
use crate::hosts::transcript::{HostCall, Restarted, Step, Transcript};

const RECORD: &str = "5f0c6a52-1b9e-4c1f-9d55-0a4b6c2e7d11";
const REFUSAL: &str = "unknown record 00000000-0000-4000-8000-000000000000";

fn script() -> Script {
    Script::new("judged")
}

/// What the daemon answers step `i` of `script` with.
fn daemon_answer(script: &Script, i: usize) -> Result<Value, Value> {
    match i {
        CAPTURE => Ok(json!({"record_id": RECORD, "stored": true})),
        SEARCH => Ok(json!({"hits": [{"id": RECORD, "text": script.text}]})),
        15 => Err(json!({"code": -32001, "message": REFUSAL})),
        _ => Ok(json!({"tool": i, "ok": true})),
    }
}

/// A run in which every call was answered by the daemon and passed on as
/// it should be, in `host`'s way.
fn passing(host: Host) -> Transcript {
    let script = script();
    let mut t = Transcript {
        listed: format!("✔ {}", host.listed_as_usable()),
        offered: TOOLS.iter().map(|tool| host.model_tool(tool)).collect(),
        first_turn: Some(Duration::from_millis(900)),
        turns: 17,
        servers: vec![ProcessId {
            pid: 42,
            started: 7,
        }],
        restart: Some(Ok(Restarted {
            back: Duration::from_secs(2),
            first_connection: 1,
        })),
        elapsed: Duration::from_secs(6),
        ..Transcript::default()
    };
    for i in 0..script.len() {
        let planned = script.call(i, Some(RECORD)).expect("a call");
        let answer = daemon_answer(&script, i);
        let (method, params) = daemon_call(&planned);
        t.exchanges.push(Exchange {
            connection: if i < AFTER_RESTART { 0 } else { 1 },
            method,
            params,
            answer: answer.clone(),
        });
        let (text, is_error) = match &answer {
            Ok(value) => (value.to_string(), false),
            Err(error) => (
                format!(
                    "error: {} (code -32001)",
                    error["message"].as_str().unwrap()
                ),
                true,
            ),
        };
        if host == Host::Codex {
            t.host_calls.push(HostCall {
                tool: planned.tool.to_owned(),
                arguments: planned.args.clone(),
                status: if is_error { "failed" } else { "completed" }.to_owned(),
            });
        }
        let call_id = Step::call_id(i);
        let result = ToolResult {
            call_id: call_id.clone(),
            text: if host == Host::Codex {
                format!("Wall time: 0.0100 seconds\nOutput:\n{text}")
            } else {
                text
            },
            is_error: is_error && host != Host::Codex,
        };
        t.steps.push(Step {
            planned,
            call_id,
            result: Some(result),
        });
    }
    t
}

fn verdict_of(host: Host, t: &Transcript, check: &str) -> (Verdict, String) {
    let rows = judge(host, &script(), t);
    let row = rows.iter().find(|r| r.check == check).expect("the check");
    (row.verdict, row.detail.clone())
}

/// Asserts that `check` fails in `host` once `spoil` has changed a
/// passing run, and that the detail says `why`.
fn fails(host: Host, check: &str, why: &str, spoil: impl FnOnce(&mut Transcript)) {
    let mut t = passing(host);
    spoil(&mut t);
    let (verdict, detail) = verdict_of(host, &t, check);
    assert_eq!(verdict, Verdict::Fail, "{host}: {check} passed: {detail}");
    assert!(
        detail.contains(why),
        "{host}: {check}: {detail:?} lacks {why:?}"
    );
}

/// Asserts `fails` in every host.
fn fails_everywhere(check: &str, why: &str, spoil: impl Fn(&mut Transcript)) {
    for host in Host::ALL {
        fails(host, check, why, &spoil);
    }
}

#[test]
fn a_good_run_passes_every_check_in_every_host() {
    for host in Host::ALL {
        let rows = judge(host, &script(), &passing(host));
        let verdicts: Vec<Verdict> = rows.iter().map(|r| r.verdict).collect();
        assert_eq!(
            verdicts,
            [
                Verdict::Pass,
                Verdict::Pass,
                Verdict::Pass,
                Verdict::Pass,
                Verdict::Info
            ],
            "{host}: {rows:#?}"
        );
    }
}

#[test]
fn connected_fails_when_not_listed_usable_a_tool_is_missing_or_none_was_offered() {
    fails_everywhere(CONNECTED, "`mcp list`: ✘ disconnected", |t| {
        t.listed = "✘ disconnected".into();
    });
    fails_everywhere(CONNECTED, "missing topology", |t| {
        t.offered.retain(|o| !o.name.ends_with("topology"));
    });
    fails_everywhere(CONNECTED, "never offered tools", |t| {
        t.first_turn = None;
        t.offered.clear();
    });
}

#[test]
fn capture_then_search_fails_on_each_missing_piece_of_evidence() {
    fails_everywhere(CAPTURE_SEARCH, "no result came back for call_0", |t| {
        t.steps[CAPTURE].result = None;
    });
    // A capture answered without reaching the daemon.
    fails_everywhere(
        CAPTURE_SEARCH,
        "call_0 (memory_capture) never reached the daemon",
        |t| {
            t.exchanges.retain(|e| e.method != "memory_capture");
        },
    );
    fails_everywhere(CAPTURE_SEARCH, "is not what the daemon returned", |t| {
        let made_up = json!({"record_id": "made-up", "stored": true}).to_string();
        t.steps[CAPTURE].result.as_mut().unwrap().text = made_up;
    });
    fails_everywhere(CAPTURE_SEARCH, "NOT holding the record", |t| {
        let search = t.exchanges.iter_mut().find(|e| e.method == "memory_search");
        search.unwrap().answer = Ok(json!({"hits": []}));
        t.steps[SEARCH].result.as_mut().unwrap().text = json!({"hits": []}).to_string();
    });
    fails_everywhere(CAPTURE_SEARCH, "the daemon refused call_1", |t| {
        let search = t.exchanges.iter_mut().find(|e| e.method == "memory_search");
        search.unwrap().answer = Err(json!({"code": -1, "message": "no"}));
    });
    fails_everywhere(CAPTURE_SEARCH, "call_1 was never asked", |t| {
        t.steps.truncate(1);
    });
}

#[test]
fn results_are_matched_by_their_ids_not_their_places() {
    // The host sent the search's result back under the capture's id and
    // the other way round: each step now holds the other's content.
    fails_everywhere(
        CAPTURE_SEARCH,
        "call_0 (memory_capture) is not what the daemon returned",
        |t| {
            let (capture, search) = (t.steps[CAPTURE].clone(), t.steps[SEARCH].clone());
            t.steps[CAPTURE].result = search.result;
            t.steps[SEARCH].result = capture.result;
        },
    );
}

#[test]
fn the_hosts_marks_are_read_in_each_hosts_way() {
    for host in [Host::ClaudeCode, Host::Opencode] {
        fails(
            host,
            CAPTURE_SEARCH,
            "call_0 (memory_capture) marked as an error",
            |t| {
                t.steps[CAPTURE].result.as_mut().unwrap().is_error = true;
            },
        );
        fails(
            host,
            EVERY_TOOL,
            "call_15 (memory_contradict) marked as a success",
            |t| {
                t.steps[15].result.as_mut().unwrap().is_error = false;
            },
        );
    }
    // Codex: no event for a call is no evidence, either way.
    fails(
        Host::Codex,
        CAPTURE_SEARCH,
        "no account of call_0 (memory_capture)",
        |t| {
            t.host_calls.retain(|c| c.tool != "memory_capture");
        },
    );
    fails(
        Host::Codex,
        EVERY_TOOL,
        "no account of call_15 (memory_contradict)",
        |t| {
            t.host_calls.retain(|c| c.status != "failed");
        },
    );
    fails(
        Host::Codex,
        EVERY_TOOL,
        "call_7 (profile_get_set) marked as an error",
        |t| {
            let call = t
                .host_calls
                .iter_mut()
                .find(|c| c.tool == "profile_get_set");
            call.unwrap().status = "failed".into();
        },
    );
}

#[test]
fn the_restart_fails_without_the_daemon_back_a_new_connection_or_one_server() {
    fails_everywhere(RESTART, "the daemon did not come back: no socket", |t| {
        t.restart = Some(Err("no socket".into()));
    });
    fails_everywhere(RESTART, "the session ended before the restart", |t| {
        t.restart = None;
    });
    fails_everywhere(RESTART, "made before the restart", |t| {
        t.restart = Some(Ok(Restarted {
            back: Duration::from_secs(1),
            first_connection: 5,
        }));
    });
    fails_everywhere(RESTART, "no result came back for call_2", |t| {
        t.steps[AFTER_RESTART].result = None;
    });
    fails_everywhere(RESTART, "2 server process tree(s)", |t| {
        t.servers.push(ProcessId {
            pid: 43,
            started: 9,
        });
    });
    fails_everywhere(RESTART, "0 server process tree(s)", |t| {
        t.servers.clear();
    });
}

#[test]
fn every_tool_fails_on_an_unanswered_tool_a_missing_refusal_or_a_bad_end() {
    fails_everywhere(EVERY_TOOL, "14/15 tools answered", |t| {
        t.steps[11].result = None;
    });
    fails_everywhere(
        EVERY_TOOL,
        "call_11 (topology) never reached the daemon",
        |t| {
            t.exchanges.retain(|e| e.method != "topology");
        },
    );
    fails_everywhere(
        EVERY_TOOL,
        "NOT seen as the daemon's refusal: the daemon answered",
        |t| {
            let refused = t
                .exchanges
                .iter_mut()
                .find(|e| e.params["id"] == MISSING_RECORD);
            refused.unwrap().answer = Ok(json!({}));
        },
    );
    fails_everywhere(EVERY_TOOL, "does not carry the daemon's message", |t| {
        t.steps[15].result.as_mut().unwrap().text = "error: something else".into();
    });
    fails_everywhere(EVERY_TOOL, "exited with exit status: 1", |t| {
        t.failure = Some("claude exited with exit status: 1".into());
    });
    fails_everywhere(EVERY_TOOL, "call_15 was never asked", |t| {
        t.steps.truncate(15);
    });
}

#[test]
fn a_call_reaches_the_daemon_with_its_numbers_written_another_way() {
    // A host in JavaScript passes `confidence_min: 0.0` on as `0`.
    for host in Host::ALL {
        let mut t = passing(host);
        let schema = t.exchanges.iter_mut().find(|e| e.method == "schema_list");
        schema.unwrap().params = json!({"confidence_min": 0});
        let rows = judge(host, &script(), &t);
        assert_eq!(rows[3].verdict, Verdict::Pass, "{host}: {}", rows[3].detail);
    }
}

#[test]
fn startup_fails_without_a_model_request() {
    fails_everywhere(STARTUP, "never called the stand-in", |t| {
        t.first_turn = None;
        t.failure = Some("codex never called the stand-in model within 90 s".into());
    });
}

#[test]
fn json_is_found_inside_words_and_compared_as_values() {
    let text = "Wall time: 0.1 seconds\nOutput:\n{\"b\": [1, 2], \"a\": \"\\u00e9\"} [";
    assert!(carries(text, &json!({"a": "é", "b": [1, 2]})));
    assert!(!carries(text, &json!({"a": "e", "b": [1, 2]})));
    assert!(carries("[3]", &json!([3])));
    // Written back by JavaScript: 1.0 is 1, and still the same number.
    assert!(carries(r#"{"cos": 1}"#, &json!({"cos": 1.0})));
    assert!(!carries(r#"{"cos": 1}"#, &json!({"cos": 1.5})));
    assert!(carries("{\"value\": 3}", &json!(3)));
    assert!(json_values_in("no json { here").is_empty());
    // The whole tool result passed on, the daemon's answer as its text.
    let passed_on = json!({"content": [{"type": "text", "text": "{\"n\": 1}"}]}).to_string();
    assert!(carries(&passed_on, &json!({"n": 1})));
    assert!(!carries(&passed_on, &json!({"n": 2})));
}

#[test]
fn profile_calls_are_routed_by_their_operation() {
    let planned = Planned {
        tool: "profile_get_set",
        args: json!({"operation": "get"}),
    };
    assert_eq!(
        daemon_call(&planned),
        ("profile_get".to_owned(), json!({"knob": null}))
    );
    let planned = Planned {
        tool: "profile_get_set",
        args: json!({"operation": "set", "knob": "k", "value": 1}),
    };
    assert_eq!(
        daemon_call(&planned),
        ("profile_set".to_owned(), json!({"knob": "k", "value": 1}))
    );
}

/// Asserts that `check` failed in `host` on `t`, saying `why`.
fn failed(host: Host, t: &Transcript, check: &str, why: &str) {
    let (verdict, detail) = verdict_of(host, t, check);
    assert_eq!(verdict, Verdict::Fail, "{host}: {check} passed: {detail}");
    assert!(
        detail.contains(why),
        "{host}: {check}: {detail:?} lacks {why:?}"
    );
}

#[test]
fn capture_offline_fails_capture_then_search_in_every_host() {
    // The capture answered with a made-up record, never reaching the
    // daemon.
    for host in Host::ALL {
        let mut t = passing(host);
        t.exchanges.retain(|e| e.method != "memory_capture");
        let made_up = json!({"record_id": crate::hosts::broken::MADE_UP_RECORD, "stored": true});
        t.steps[CAPTURE].result.as_mut().unwrap().text = made_up.to_string();
        let never = "call_0 (memory_capture) never reached the daemon";
        failed(host, &t, CAPTURE_SEARCH, never);
        failed(host, &t, EVERY_TOOL, never);
    }
}

#[test]
fn mute_third_call_fails_the_restart_and_every_tool_in_every_host() {
    // The third call (call_2, after the restart) never reached the
    // daemon nor came back; the run was ended at its deadline.
    for host in Host::ALL {
        let mut t = passing(host);
        t.steps.truncate(AFTER_RESTART + 1);
        t.steps[AFTER_RESTART].result = None;
        t.exchanges.truncate(AFTER_RESTART);
        t.host_calls.truncate(AFTER_RESTART);
        t.failure = Some("call_2 (memory_recall) not answered within 30 s of being asked".into());
        failed(
            host,
            &t,
            RESTART,
            "no result came back for call_2 (memory_recall)",
        );
        failed(
            host,
            &t,
            EVERY_TOOL,
            "call_2 (memory_recall) not answered within 30 s",
        );
        let (verdict, _) = verdict_of(host, &t, CAPTURE_SEARCH);
        assert_eq!(
            verdict,
            Verdict::Pass,
            "{host}: the first two calls were answered"
        );
    }
}

#[test]
fn errors_after_first_fails_capture_then_search_and_every_tool_in_every_host() {
    // The daemon answered every call; every answer after the first came
    // back as an error.
    for host in Host::ALL {
        let mut t = passing(host);
        for step in &mut t.steps[SEARCH..] {
            let result = step.result.as_mut().unwrap();
            result.text = "error: broken on purpose".into();
            result.is_error = host != Host::Codex;
        }
        for call in t.host_calls.iter_mut().skip(SEARCH) {
            call.status = "failed".into();
        }
        let spoiled = "the result of call_1 (memory_search) is not what the daemon returned";
        failed(host, &t, CAPTURE_SEARCH, spoiled);
        failed(host, &t, EVERY_TOOL, spoiled);
        failed(
            host,
            &t,
            RESTART,
            "call_2 (memory_recall) is not what the daemon returned",
        );
    }
}
