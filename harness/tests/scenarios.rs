//! The live fault scenarios (storm, down-up, hang) against the real wrapper
//! and fake daemon binaries, in fixed mode.
//!
//! Assertions are about correctness (answers, error texts, connection
//! counts), never about how fast anything was, except that a call must not
//! fail before its own deadline.

use std::time::Duration;

use assert_cmd::Command;
use harness::scenario::Setup;
use harness::scenario::down_up::CONNECT_FAILED_LOG;
use harness::{
    BridgeMode, DownUpConfig, HangConfig, Judged, StormConfig, WrapperCommand, run_down_up,
    run_hang, run_storm,
};
use serde_json::Value;

fn wrapper() -> WrapperCommand {
    WrapperCommand::this_workspace()
}

#[test]
fn storm_answers_every_call_once_replays_reads_and_never_repeats_a_write() {
    let cfg = StormConfig {
        setup: Setup::mode(BridgeMode::Fixed),
        ..StormConfig::default()
    };
    let report = run_storm(&wrapper(), &cfg).expect("the storm runs");

    assert_eq!(report.drops, cfg.drops, "{report}");
    assert_eq!(report.wrapper_gone, None, "{report}");
    assert_eq!(report.answered, report.calls_sent, "{report}");
    assert_eq!(report.unanswered, 0, "{report}");
    assert_eq!(report.answered_more_than_once, 0, "{report}");
    assert_eq!(report.stray_responses, 0, "{report}");
    assert_eq!(report.reads_failed, 0, "{report}");
    assert_eq!(report.writes_failed_other, 0, "{report}");
    assert_eq!(report.dup_writes, 0, "{report}");
    assert_eq!(report.reads_received_over_twice, 0, "{report}");
    assert_eq!(report.conns_after, 1, "{report}");
    assert!(report.defects.is_empty(), "{report}");
    assert!(report.reads_ok > 0 && report.writes_ok > 0, "{report}");
    assert!(
        report.replays + report.writes_failed_socket_closed > 0,
        "the drops hit no call in flight: {report}"
    );
    assert!(report.passed(), "{report}");
}

#[test]
fn down_up_fails_calls_naming_the_socket_then_recovers_without_a_restart() {
    let cfg = DownUpConfig {
        setup: Setup::mode(BridgeMode::Fixed),
        rate_window: Duration::from_secs(1),
        ..DownUpConfig::default()
    };
    let report = run_down_up(&wrapper(), &cfg).expect("down-up runs");

    assert_eq!(report.down_calls.len(), 2, "{report}");
    for call in &report.down_calls {
        assert!(call.outcome.is_daemon_unreachable(), "{report}");
        let text = call.outcome.error_text().expect("a failure has a text");
        assert!(text.contains(&report.socket_path), "{text}");
        assert!(text.contains("IAI_DAEMON_SOCKET_PATH"), "{text}");
        assert!(call.latency >= cfg.connect_wait, "failed early: {report}");
    }
    assert!(
        report.attempts_while_down.is_some_and(|n| n > 0),
        "no `{CONNECT_FAILED_LOG}` lines: {report}"
    );
    let rate = report
        .attempt_rate_per_s
        .expect("the attempt rate is reported");
    assert!(rate.is_finite(), "{report}");
    assert!(report.up_to_success.is_some(), "{report}");
    assert_eq!(report.conns_after, 1, "{report}");
    assert!(report.defects.is_empty(), "{report}");
    assert!(report.passed(), "{report}");
}

#[test]
fn hang_times_out_at_the_deadline_then_recovers_on_resume() {
    let cfg = HangConfig {
        setup: Setup::mode(BridgeMode::Fixed),
        ..HangConfig::default()
    };
    let report = run_hang(&wrapper(), &cfg).expect("hang runs");

    let text = report
        .hung_outcome
        .error_text()
        .unwrap_or_else(|| panic!("the hung call failed with a text: {report}"));
    assert!(text.contains("daemon_timeout"), "{text}");
    assert!(!report.hung_outcome.is_daemon_unreachable(), "{report}");
    assert!(
        report.hung_latency >= cfg.call_timeout,
        "failed before its deadline: {report}"
    );
    assert!(report.resumed_outcome.is_ok(), "{report}");
    assert_eq!(report.late_answers + report.unsolicited, 0, "{report}");
    assert!(
        report.new_connections >= 1,
        "the silent connection is replaced: {report}"
    );
    assert_eq!(report.conns_after, 1, "{report}");
    assert!(report.defects.is_empty(), "{report}");
    assert!(report.passed(), "{report}");
}

#[test]
fn the_binary_runs_a_fault_scenario_and_prints_json() {
    let output = Command::cargo_bin("harness")
        .expect("the harness binary is built")
        .args([
            "hang",
            "--mode",
            "fixed",
            "--call-timeout-ms",
            "200",
            "--json",
        ])
        .output()
        .expect("the harness runs");
    assert!(output.status.success(), "{output:?}");
    let json: Value = serde_json::from_slice(&output.stdout).expect("stdout is one JSON document");
    assert_eq!(json["scenario"], "hang");
    assert_eq!(json["passed"], true, "{json:#}");
    let checks = json["checks"].as_array().expect("checks");
    assert!(!checks.is_empty(), "{json:#}");
    assert!(checks.iter().all(|c| c["failure"].is_null()), "{json:#}");
    assert!(
        checks.iter().any(|c| c["prop"] == "call-deadline"),
        "{json:#}"
    );
    assert_eq!(json["report"]["mode"], "fixed");
    assert_eq!(json["report"]["call_timeout_ms"], 200.0);
    assert_eq!(json["report"]["resumed_outcome"]["kind"], "ok");
}
