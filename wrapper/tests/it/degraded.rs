//! Degraded mode through the real binaries: with the daemon unreachable the
//! five memory tools are answered by the CLI (here the `fake-iai` stand-in,
//! which logs every run), a write reaches the CLI only if it never reached
//! the daemon, and the CLI runs under the spawning rules of SECURITY.md.

use devkit::tempdir::{short_tempdir, socket_path_in};
use harness::{FakeDaemon, WrapperOptions, WrapperProcess};

use std::path::{Path, PathBuf};

use crate::common::{REPLY, error_text, eventually, process_ended, send_call, wrapper_cmd};
use serde_json::{Value, json};
use tempfile::TempDir;

/// A wrapper whose daemon is `endpoint`'s, with the fake CLI logging to a
/// file in `dir`.
struct Setup {
    wrapper: WrapperProcess,
    log: PathBuf,
    store: PathBuf,
    _dir: TempDir,
}

fn start(daemon: Option<&FakeDaemon>, env: &[(&str, &str)]) -> Setup {
    let dir = short_tempdir().expect("tempdir");
    let log = dir.path().join("cli.log");
    let store = dir.path().join("store");
    let mut opts = match daemon {
        Some(daemon) => WrapperOptions::for_daemon(daemon),
        None => WrapperOptions::new(socket_path_in(dir.path())),
    }
    .cli(devkit::bins::fake_cli_bin())
    .env("FAKE_IAI_LOG", &log)
    .env("IAI_MCP_LOG", "info")
    // The doctor has tests of its own; here the log holds degraded runs.
    .env("IAI_MCP_DOCTOR", "off");
    opts.store_dir = Some(store.clone());
    for (k, v) in env {
        opts = opts.env(k, v);
    }
    let mut wrapper = WrapperProcess::spawn(&wrapper_cmd(), &opts).expect("spawn wrapper");
    wrapper.initialize("2025-06-18").expect("initialize");
    Setup {
        wrapper,
        log,
        store,
        _dir: dir,
    }
}

/// The runs the fake CLI logged.
fn runs(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("log lines are JSON"))
        .collect()
}

fn argv(run: &Value) -> Vec<&str> {
    run["argv"]
        .as_array()
        .expect("argv")
        .iter()
        .map(|a| a.as_str().expect("string"))
        .collect()
}

fn runs_of(log: &Path, sub: &str) -> usize {
    runs(log)
        .iter()
        .filter(|r| argv(r).first() == Some(&sub))
        .count()
}

fn structured(reply: &Value) -> &Value {
    assert!(
        reply["result"].get("isError").is_none(),
        "expected success: {reply}"
    );
    &reply["result"]["structuredContent"]
}

fn call(s: &mut Setup, tool: &str, arguments: Value) -> Value {
    s.wrapper.call_tool(tool, arguments, REPLY).expect("reply")
}

#[test]
fn a_down_daemon_is_answered_through_the_cli_with_every_argument_it_takes() {
    let mut s = start(None, &[("IAI_MCP_CONNECT_WAIT_MS", "2000")]);

    let recall = call(
        &mut s,
        "memory_recall",
        json!({"cue": "-why postgres", "budget_tokens": 600}),
    );
    assert_eq!(structured(&recall)["_source"], "direct-store");
    assert_eq!(
        structured(&recall)["hits"][0]["literal_surface"],
        "-why postgres"
    );

    let capture = call(
        &mut s,
        "memory_capture",
        json!({"text": "we chose postgres for the warehouse", "session_id": "s1", "tier": "semantic"}),
    );
    let c = structured(&capture);
    assert_eq!(c["status"], "inserted");
    assert_eq!(c["record_id"], "00000000-0000-4000-8000-00000000c0de");
    assert_eq!(c["_source"], "direct-store");
    assert!(
        c["reason"]
            .as_str()
            .expect("reason")
            .contains("not applied: tier"),
        "{c}"
    );

    for (tool, args) in [
        ("episodes_recent", json!({"n": 3, "session_id": "s1"})),
        ("memory_search", json!({"query": "Warehouse::load", "k": 4})),
        (
            "memory_temporal_recall",
            json!({"cue": "postgres", "as_of": "2026-11-30T00:00:00Z", "limit": 2}),
        ),
    ] {
        let reply = call(&mut s, tool, args);
        assert_eq!(
            structured(&reply)["_source"],
            "direct-store",
            "{tool}: {reply}"
        );
    }

    // A tool without a degraded path fails after its connect wait.
    let reply = call(&mut s, "topology", json!({}));
    assert!(error_text(&reply).contains("daemon_unreachable"), "{reply}");

    let logged: Vec<Vec<String>> = runs(&s.log)
        .iter()
        .map(|r| argv(r).into_iter().map(str::to_owned).collect())
        .collect();
    let expected: Vec<Vec<&str>> = vec![
        vec!["recall", "--json", "--limit", "2", "--", "-why postgres"],
        vec![
            "capture",
            "--json",
            "--session-id=s1",
            "--",
            "we chose postgres for the warehouse",
        ],
        vec!["last", "--json", "--n", "3", "--session=s1"],
        vec!["search", "--json", "--limit", "4", "--", "Warehouse::load"],
        vec![
            "temporal-recall",
            "--json",
            "--limit",
            "2",
            "--as-of=2026-11-30T00:00:00Z",
            "--",
            "postgres",
        ],
    ];
    assert_eq!(logged, expected);
    for run in runs(&s.log) {
        assert_eq!(run["store"], s.store.display().to_string(), "{run}");
    }
    assert!(s.wrapper.defects().is_empty(), "{:?}", s.wrapper.defects());
}

#[test]
fn a_capture_lost_after_reaching_the_daemon_is_never_handed_to_the_cli() {
    let dir = short_tempdir().expect("tempdir");
    let daemon = FakeDaemon::spawn(&socket_path_in(dir.path())).expect("daemon");
    let mut s = start(Some(&daemon), &[("IAI_MCP_CONNECT_WAIT_MS", "500")]);
    // Warm-up answered, then the daemon stops answering: the capture is
    // written to it and held.
    eventually("warm-up answered", || {
        (daemon.stats().ok()?.requests >= 1).then_some(())
    });
    daemon.hang().expect("hang");
    send_call(
        &mut s.wrapper,
        "cap",
        "memory_capture",
        json!({"text": "a decision that must be stored once"}),
    );
    eventually("the daemon holds the capture", || {
        let log = daemon.request_log().ok()?;
        log.iter()
            .any(|r| r["method"] == "memory_capture")
            .then_some(())
    });
    // The daemon goes away with the capture in flight.
    daemon.down().expect("down");
    let reply = s
        .wrapper
        .wait_response(&json!("cap"), REPLY)
        .expect("reply");
    let text = error_text(&reply);
    assert!(
        text.starts_with("error: daemon_unreachable: socket closed"),
        "{text}"
    );
    assert!(text.contains("may have stored it"), "{text}");
    assert_eq!(
        runs_of(&s.log, "capture"),
        0,
        "the CLI must not store it again"
    );

    // A capture made while the daemon is down never reached it: the CLI
    // stores it, once.
    let reply = call(
        &mut s,
        "memory_capture",
        json!({"text": "a capture made while the daemon is down"}),
    );
    assert_eq!(structured(&reply)["_source"], "direct-store");
    assert_eq!(runs_of(&s.log, "capture"), 1);
    let daemon_captures = daemon
        .request_log()
        .expect("log")
        .iter()
        .filter(|r| r["method"] == "memory_capture")
        .count();
    assert_eq!(daemon_captures, 1, "the daemon saw only the first capture");
}

#[test]
fn a_capture_killed_at_its_limit_may_have_been_stored_and_is_not_retried() {
    let mut s = start(
        None,
        &[
            ("FAKE_IAI_HANG", "capture"),
            ("IAI_MCP_CLI_TIMEOUT_MS", "300"),
        ],
    );
    let reply = call(
        &mut s,
        "memory_capture",
        json!({"text": "this capture hangs in the CLI"}),
    );
    let text = error_text(&reply);
    assert!(text.contains("may have been stored"), "{text}");
    assert_eq!(runs_of(&s.log, "capture"), 1);
    // The hung CLI was killed: its process is gone.
    let pid = runs(&s.log)[0]["pid"].as_i64().expect("pid");
    eventually("the killed CLI ended", || process_ended(pid).then_some(()));
}

#[test]
fn recall_tries_the_bank_after_iai_unless_told_not_to_and_stops_at_a_refusal() {
    let mut s = start(None, &[("FAKE_IAI_FAIL", "recall")]);
    let reply = call(&mut s, "memory_recall", json!({"cue": "postgres"}));
    assert_eq!(structured(&reply)["_source"], "bank-fallback");
    let bank = runs(&s.log)
        .into_iter()
        .find(|r| argv(r)[0] == "bank-recall")
        .expect("bank-recall ran");
    assert_eq!(
        argv(&bank),
        ["bank-recall", "--query=postgres", "--limit", "20", "--json"]
    );

    let mut s = start(
        None,
        &[("FAKE_IAI_FAIL", "recall"), ("IAI_MCP_BANK_FALLBACK", "0")],
    );
    let reply = call(&mut s, "memory_recall", json!({"cue": "postgres"}));
    let text = error_text(&reply);
    assert!(text.contains("degraded mode: `"), "{text}");
    assert_eq!(runs_of(&s.log, "bank-recall"), 0);

    let mut s = start(None, &[("FAKE_IAI_REFUSE", "recall")]);
    let reply = call(&mut s, "memory_recall", json!({"cue": "postgres"}));
    let text = error_text(&reply);
    assert!(
        text.contains("refused: embedder identity mismatch"),
        "{text}"
    );
    assert_eq!(runs_of(&s.log, "bank-recall"), 0);
}

#[test]
fn cli_output_that_is_not_json_never_reaches_stdout() {
    let mut s = start(None, &[("FAKE_IAI_GARBAGE", "search")]);
    let reply = call(&mut s, "memory_search", json!({"query": "x"}));
    let text = error_text(&reply);
    assert!(text.contains("printed no JSON object"), "{text}");
    assert!(!text.contains("this is not json"), "{text}");
    assert!(s.wrapper.defects().is_empty(), "{:?}", s.wrapper.defects());
}

#[test]
fn shell_syntax_in_arguments_stays_inert() {
    let dir = short_tempdir().expect("tempdir");
    let marker = dir.path().join("pwned");
    let cue = format!("$(touch {m}); `touch {m}`; touch {m}", m = marker.display());
    let mut s = start(None, &[]);
    let reply = call(&mut s, "memory_recall", json!({"cue": cue}));
    assert_eq!(
        structured(&reply)["hits"][0]["literal_surface"],
        cue.as_str()
    );
    assert!(!marker.exists(), "an argument was run by a shell");
}

#[test]
fn degraded_mode_off_leaves_the_cli_alone() {
    let mut s = start(
        None,
        &[
            ("IAI_MCP_DEGRADED", "off"),
            ("IAI_MCP_CONNECT_WAIT_MS", "300"),
        ],
    );
    let reply = call(&mut s, "memory_recall", json!({"cue": "postgres"}));
    assert!(error_text(&reply).contains("daemon_unreachable"), "{reply}");
    assert!(runs(&s.log).is_empty(), "{:?}", runs(&s.log));
}

#[test]
fn a_restarting_daemon_answers_instead_of_the_cli() {
    let dir = short_tempdir().expect("tempdir");
    let daemon = FakeDaemon::spawn(&socket_path_in(dir.path())).expect("daemon");
    let mut s = start(
        Some(&daemon),
        &[
            ("IAI_MCP_FALLBACK_WAIT_MS", "100"),
            ("IAI_MCP_CONNECT_WAIT_MS", "20000"),
        ],
    );
    let first = call(&mut s, "memory_recall", json!({"cue": "before"}));
    assert_eq!(structured(&first)["fake_daemon"], true);
    daemon.down().expect("down");
    send_call(
        &mut s.wrapper,
        "during",
        "memory_recall",
        json!({"cue": "during the restart"}),
    );
    // The restart takes several fallback waits: the period under test.
    std::thread::sleep(std::time::Duration::from_millis(600));
    daemon.up().expect("up");
    let reply = s
        .wrapper
        .wait_response(&json!("during"), REPLY)
        .expect("reply");
    assert_eq!(structured(&reply)["fake_daemon"], true, "{reply}");
    assert_eq!(runs_of(&s.log, "recall"), 0, "no stale fallback");
}

#[test]
fn without_a_cli_calls_wait_for_the_daemon_as_before() {
    let dir = short_tempdir().expect("tempdir");
    let opts = WrapperOptions::new(socket_path_in(dir.path()))
        .cli(dir.path().join("no-such-iai"))
        .env("IAI_MCP_CONNECT_WAIT_MS", "400")
        .env("IAI_MCP_DOCTOR", "off");
    let mut w = WrapperProcess::spawn(&wrapper_cmd(), &opts).expect("spawn");
    w.initialize("2025-06-18").expect("initialize");
    let reply = w
        .call_tool("memory_recall", json!({"cue": "x"}), REPLY)
        .expect("reply");
    let text = error_text(&reply);
    assert!(
        text.contains("within 0.4 s"),
        "waited the connect wait: {text}"
    );
    assert!(!text.contains("degraded mode"), "{text}");
}

#[test]
fn a_capture_cut_short_by_exit_may_have_been_stored() {
    let mut s = start(
        None,
        &[
            ("FAKE_IAI_HANG", "capture"),
            ("IAI_MCP_CLI_TIMEOUT_MS", "60000"),
        ],
    );
    send_call(
        &mut s.wrapper,
        "cap",
        "memory_capture",
        json!({"text": "cut short by the exit"}),
    );
    eventually("the CLI capture started", || {
        (runs_of(&s.log, "capture") == 1).then_some(())
    });
    s.wrapper.close_stdin();
    let reply = s
        .wrapper
        .wait_response(&json!("cap"), REPLY)
        .expect("reply");
    let text = error_text(&reply);
    assert!(
        text.contains("shutting down") && text.contains("may have been stored"),
        "{text}"
    );
    let pid = runs(&s.log)[0]["pid"].as_i64().expect("pid");
    eventually("the CLI ended with the wrapper", || {
        process_ended(pid).then_some(())
    });
}
