//! The scorecard through the real binaries: this workspace's wrapper in
//! both modes. Fixed holds every property; prefix fails exactly the
//! contract properties its one-reconnect, refuse-while-reconnecting
//! design breaks, each with its cause.

use std::time::Duration;

use harness::scenario::RaceTiming;
use harness::score::{PREFIX_CONTRACT_FAILURES, ScoreConfig, run_score};
use harness::wrapper::Subject;
use harness::{BridgeMode, Cause, Prop, WrapperCommand};

#[test]
fn the_scorecard_tells_the_fixed_wrapper_from_the_pre_fix_one() {
    let cmd = WrapperCommand::this_workspace();
    let cfg = ScoreConfig {
        subjects: Subject::modes(&cmd, &[BridgeMode::Prefix, BridgeMode::Fixed]),
        race_runs: 1,
        setup: Default::default(),
        race_timing: Some(RaceTiming {
            delay_ms: 400,
            offset_ms: 50,
        }),
        hostile_lines: 500,
        soak: Duration::from_secs(2),
        // The pre-fix mode never recovers; the fixed one does in
        // milliseconds. A short bound keeps the test quick.
        recovery_timeout: Duration::from_secs(3),
    };
    let card = run_score(&cfg, |_| {});
    assert_eq!(card.errors().count(), 0, "{card}");
    assert_eq!(card.failed("fixed"), [], "{card}");

    assert_eq!(
        card.failed_contract("prefix"),
        PREFIX_CONTRACT_FAILURES,
        "{card}"
    );
    assert_eq!(
        PREFIX_CONTRACT_FAILURES,
        [Prop::ReconnectCall, Prop::SecondDrop, Prop::Recovers]
    );
    let row = |prop: Prop| card.rows.iter().find(|r| r.prop == prop).expect("row");
    let cause = |prop: Prop| row(prop).cells[0].failure;
    assert_eq!(cause(Prop::ReconnectCall), Some(Cause::V305), "{card}");
    assert_eq!(cause(Prop::Recovers), Some(Cause::Died), "{card}");
    for prop in [Prop::OutputSchema, Prop::SpreadDials] {
        let checked = row(prop).cells.iter().all(|c| c.checks > 0);
        assert!(checked, "{prop:?}: {card}");
    }
    // The herd ran with its 50 wrappers, and the pre-fix ones never came
    // back after the daemon's restart.
    let herd = |subject: &str| {
        card.runs
            .iter()
            .find(|r| r.scenario == "herd" && r.subject == subject)
            .expect("herd run")
    };
    assert!(herd("fixed").checks.iter().all(|c| c.held()), "{card}");
    assert!(
        herd("prefix")
            .checks
            .iter()
            .any(|c| c.prop == Prop::Recovers && c.failure == Some(Cause::Died)),
        "{card}"
    );
    assert!(card.to_html().contains("FAIL (V3-05)"));
    let json: serde_json::Value = serde_json::from_str(&card.to_json()).expect("json");
    assert_eq!(json["subjects"], serde_json::json!(["prefix", "fixed"]));
}
