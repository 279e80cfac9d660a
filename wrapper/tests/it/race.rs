//! The V3-05 regression (the seed scenario) through the real binaries:
//! initialize, a baseline call, DROP, a racing call 50 ms later while the
//! wrapper's reconnect is held back by 1 s.

use crate::common::wrapper_cmd;
use harness::scenario::Setup;
use harness::{BridgeMode, RaceConfig, RaceOutcome, run_race};

fn race(mode: BridgeMode) -> harness::RaceReport {
    let config = RaceConfig {
        setup: Setup::mode(mode),
        ..RaceConfig::default()
    };
    run_race(&wrapper_cmd(), &config).expect("scenario ran")
}

#[test]
fn fixed_mode_answers_the_racing_call_and_keeps_one_connection() {
    let report = race(BridgeMode::Fixed);
    assert_eq!(report.outcome, RaceOutcome::Ok, "{report:?}");
    assert_eq!(report.conns_after, Some(1), "{report:?}");
    assert!(report.defects.is_empty(), "{:?}", report.defects);
}

#[test]
fn prefix_mode_fails_the_racing_call_with_daemon_unreachable() {
    let report = race(BridgeMode::Prefix);
    assert_eq!(report.outcome, RaceOutcome::DaemonUnreachable, "{report:?}");
    let text = report
        .racing_response
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_default();
    assert!(
        text.contains("daemon_unreachable: bridge not connected"),
        "{text}"
    );
    assert!(report.defects.is_empty(), "{:?}", report.defects);
}
