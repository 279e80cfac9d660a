//! The live fault scenarios (storm, down-up, hang) against the real wrapper
//! and fake daemon binaries, in fixed mode.
//!
//! Assertions are about correctness (answers, error texts, connection
//! counts), never about how fast anything was, except that a call must not
//! fail before its own deadline.

use std::time::Duration;

use assert_cmd::Command;
use harness::scenario::Setup;
use harness::scenario::smoke::{SmokeConfig, run_smoke};
use harness::{
    BridgeMode, DownUpConfig, HangConfig, Judged, StormConfig, Transport, WrapperCommand,
    run_down_up, run_hang, run_storm,
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

    // Passing covers every call answered once, no read lost, no write twice,
    // one connection, a clean stdout and a wrapper that stayed.
    assert!(report.passed(), "{report}");
    assert_eq!(report.drops, cfg.drops, "{report}");
    assert_eq!(report.conns_after, 1, "{report}");
    assert_eq!(report.reads_received_over_twice, 0, "{report}");
    assert!(report.reads_ok > 0 && report.writes_ok > 0, "{report}");
    assert!(
        report.replays + report.writes_failed_socket_closed > 0,
        "the drops hit no call in flight: {report}"
    );
}

#[test]
fn down_up_fails_calls_naming_the_socket_then_recovers_without_a_restart() {
    let cfg = DownUpConfig {
        setup: Setup::mode(BridgeMode::Fixed),
        rate_window: Duration::from_secs(1),
        ..DownUpConfig::default()
    };
    let report = run_down_up(&wrapper(), &cfg).expect("down-up runs");

    // Passing covers failures after the connect wait naming the socket, a
    // measured and bounded attempt rate, recovery and a clean stdout.
    assert!(report.passed(), "{report}");
    assert_eq!(report.down_calls.len(), 2, "{report}");
    for call in &report.down_calls {
        let text = call.outcome.error_text().expect("a failure has a text");
        assert!(text.contains("IAI_DAEMON_SOCKET_PATH"), "{text}");
    }
    assert_eq!(report.conns_after, 1, "{report}");
}

#[test]
fn hang_times_out_at_the_deadline_then_recovers_on_resume() {
    let cfg = HangConfig {
        setup: Setup::mode(BridgeMode::Fixed),
        ..HangConfig::default()
    };
    let report = run_hang(&wrapper(), &cfg).expect("hang runs");

    // Passing covers `daemon_timeout` no earlier than the deadline, the
    // silent connection replaced, success after RESUME and no stray answer.
    assert!(report.passed(), "{report}");
    assert!(!report.hung_outcome.is_daemon_unreachable(), "{report}");
    assert_eq!(report.late_answers, 0, "{report}");
    assert_eq!(report.conns_after, 1, "{report}");
}

#[test]
fn smoke_passes_on_both_transports_with_a_wrong_token_and_install_in_a_scratch_profile() {
    for transport in [Transport::Unix, Transport::Tcp] {
        let cfg = SmokeConfig {
            setup: Setup {
                transport,
                ..Setup::mode(BridgeMode::Fixed)
            },
            ..SmokeConfig::default()
        };
        let report = run_smoke(&wrapper(), &cfg).expect("smoke runs");
        assert!(report.passed(), "{transport}: {report}");
        assert_eq!(report.install.switched, 2, "{report}");
        match (&report.wrong_token, transport) {
            (Some(wrong), Transport::Tcp) => {
                let text = wrong.call.error_text().expect("a failure");
                assert!(
                    text.contains(&format!("token refused, {}", wrong.token_file)),
                    "{text}"
                );
            }
            (None, Transport::Unix) => {}
            (other, _) => panic!("{transport}: wrong token step {other:?}"),
        }
    }
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
