//! The hostile client against the real wrapper and fake daemon binaries:
//! a long seeded run of random and malformed lines, and a few handcrafted
//! lines whose fate is known exactly.

use harness::scenario::Setup;
use harness::scenario::hostile::{HostileConfig, LineKind, run_hostile, run_hostile_lines};
use harness::{BridgeMode, Judged, WrapperCommand};
use mcp_oracle::MAX_OVERSIZED_ID_BYTES;

fn wrapper() -> WrapperCommand {
    WrapperCommand::this_workspace()
}

#[test]
fn twenty_thousand_hostile_lines_are_each_answered_as_owed() {
    let cfg = HostileConfig {
        lines: 20_000,
        seed: 0x5eed_2026,
        setup: Setup::mode(BridgeMode::Fixed),
        ..HostileConfig::default()
    };
    let report = run_hostile(&wrapper(), &cfg).expect("the hostile run runs");
    eprintln!("{report}");

    // Passing covers every id answered as owed, nothing but responses on
    // stdout, every valid request served, and a live wrapper of flat RSS.
    assert!(report.passed(), "{report}");
    assert_eq!(report.lines_sent, cfg.lines, "{report}");
    assert_eq!(report.answered_once, report.expected_answers, "{report}");
    assert_eq!(report.valid_ok, report.valid_sent, "{report}");
    // The mix really was hostile: every kind of line, some over the cap.
    assert!(report.lines_by_kind.len() >= 17, "{report}");
    assert!(report.oversized_lines > 0, "{report}");
    assert!(report.valid_sent > 1000, "{report}");
    if cfg!(target_os = "linux") {
        assert!(report.rss_growth_kib.is_some(), "{report}");
    }
}

#[test]
fn handcrafted_lines_get_exactly_the_answers_the_rule_predicts() {
    let cap = 1024;
    let pad = "p".repeat(cap);
    // Too long for the wrapper to keep while it discards an oversized line.
    let long_id = "i".repeat(MAX_OVERSIZED_ID_BYTES);
    let lines: Vec<Vec<u8>> = [
        // Recoverable ids of each type: answered once, with that id.
        r#"{"jsonrpc":"2.0","id":"s-1","method":"ping"}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":-7,"method":"tools/list"}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":2.5,"method":"no/such/method"}"#.to_owned(),
        r#"{"jsonrpc":"1.0","id":"bad-version","method":"ping"}"#.to_owned(),
        r#"{"id":"no-method"}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":"bad-params","method":"tools/call","params":[1]}"#.to_owned(),
        format!(r#"{{"jsonrpc":"2.0","id":"over-cap","method":"ping","pad":"{pad}"}}"#),
        // Over the cap with the id last, as the TypeScript SDK writes it.
        format!(r#"{{"jsonrpc":"2.0","method":"ping","pad":"{pad}","id":"late-id"}}"#),
        // A client response: at most one answer.
        r#"{"jsonrpc":"2.0","id":"client-reply","result":{}}"#.to_owned(),
        // No recoverable id: at most one id:null error each.
        r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":"dup-null","method":"ping","id":null}"#.to_owned(),
        // An envelope member given twice: which id was meant is unknown.
        r#"{"jsonrpc":"2.0","id":"dup-first","method":"ping","id":"dup-last"}"#.to_owned(),
        r#"[{"jsonrpc":"2.0","id":"in-batch","method":"ping"}]"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":"cut","method":"pi"#.to_owned(),
        format!(r#"{{"jsonrpc":"2.0","id":"{long_id}","pad":"{pad}"}}"#),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned(),
        String::new(),
    ]
    .into_iter()
    .map(String::into_bytes)
    .chain([b"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"ping\"}".to_vec()])
    .collect();

    let cfg = HostileConfig {
        max_line_bytes: cap,
        warmup_lines: 0,
        setup: Setup::mode(BridgeMode::Fixed),
        ..HostileConfig::default()
    };
    let report = run_hostile_lines(&wrapper(), &cfg, &lines).expect("the lines run");
    eprintln!("{report}");
    assert_eq!(
        report.lines_by_kind.get(&LineKind::Handcrafted),
        Some(&lines.len())
    );
    assert_eq!(report.expected_answers, 8, "{report}");
    assert_eq!(report.answered_once, 8, "{report}");
    assert_eq!(report.oversized_lines, 3, "{report}");
    assert_eq!(report.optional_lines, 1, "{report}");
    assert_eq!(
        report.optional_answered, 0,
        "a client response is ignored: {report}"
    );
    // Every line without an id but the notification and the blank line is
    // an error the wrapper reports with id null.
    assert_eq!(report.no_id_lines, 9, "{report}");
    assert_eq!(report.null_id_errors, 7, "{report}");
    assert!(report.passed(), "{report}");
}
