//! Faults on the daemon side, through the real binaries: garbage lines, a
//! response sliced into single bytes, a response cut short then closed, an
//! oversized response, replies with unknown ids, duplicate replies, and a
//! reply to a cancelled request. No crash, the right error for the affected
//! call only, nothing lost, nothing but MCP on stdout.

use crate::common;
use crate::common::{
    JSON_LOG, REPLY, error_text, events_named, eventually, ok_method, pair, send_call, topology,
};
use serde_json::json;

fn daemon_holds(p: &common::Pair, method: &str, n: usize) {
    eventually("daemon received the calls", || {
        let log = p.daemon.request_log().ok()?;
        (log.iter().filter(|r| r["method"] == method).count() >= n).then_some(())
    });
}

fn connected_pair(extra: &[(&str, &str)]) -> common::Pair {
    let mut p = pair(extra);
    p.wrapper.initialize("2025-06-18").expect("initialize");
    assert_eq!(ok_method(&topology(&mut p.wrapper)), "topology");
    // The warm-up call must be answered before a one-shot fault is armed,
    // or the fault could hit it instead of the test's call.
    // Two replies written: the baseline call and the warm-up call.
    eventually("warm-up answered", || {
        let stats = p.daemon.stats().ok()?;
        (stats.requests >= 2).then_some(())
    });
    p
}

/// The daemon holds the bridge's one connection. Waited for: after a
/// reconnect the wrapper asks the daemon its release on a side connection
/// of its own, which closes once answered.
fn one_connection(p: &common::Pair) {
    eventually("one daemon connection", || {
        (p.daemon.stats().ok()?.conns == 1).then_some(())
    });
}

/// Ends the session: stdin closed, a clean exit, nothing unexpected on
/// stdout. Its stderr is then complete, so log events can be checked
/// after it.
fn finish(p: &mut common::Pair) {
    p.wrapper.close_stdin();
    assert_eq!(p.wrapper.wait_exit(REPLY).expect("exit").code(), Some(0));
    let extra = p.wrapper.next_unmatched();
    assert!(extra.is_none(), "unexpected extra message: {extra:?}");
    assert!(p.wrapper.defects().is_empty(), "{:?}", p.wrapper.defects());
}

#[test]
fn a_garbage_streak_fails_only_the_oldest_call() {
    let mut p = connected_pair(&[JSON_LOG]);
    p.daemon.garbage(3).expect("garbage");
    assert_eq!(
        ok_method(&topology(&mut p.wrapper)),
        "topology",
        "3 lines: no effect"
    );
    p.daemon.hang().expect("hang");
    send_call(&mut p.wrapper, "old", "topology", json!({}));
    send_call(&mut p.wrapper, "new", "schema_list", json!({}));
    daemon_holds(&p, "schema_list", 1);
    p.daemon.garbage(4).expect("garbage");
    let old = p.wrapper.wait_response(&json!("old"), REPLY).expect("old");
    assert!(error_text(&old).starts_with("error: parse_error:"), "{old}");
    p.daemon.resume().expect("resume");
    let new = p.wrapper.wait_response(&json!("new"), REPLY).expect("new");
    assert_eq!(ok_method(&new), "schema_list");
    finish(&mut p);
    let streaks = events_named(&p.wrapper, "daemon_parse_error_streak");
    assert_eq!(streaks.len(), 1, "{streaks:?}");
    assert_eq!(streaks[0]["lines"], 4, "{streaks:?}");
}

#[test]
fn a_response_sliced_into_single_bytes_arrives_whole() {
    let mut p = connected_pair(&[]);
    p.daemon.slice(1).expect("slice");
    for _ in 0..3 {
        assert_eq!(ok_method(&topology(&mut p.wrapper)), "topology");
    }
    finish(&mut p);
}

#[test]
fn a_cut_response_replays_a_read_and_fails_a_write() {
    let mut p = connected_pair(&[]);
    p.daemon.cut().expect("cut");
    assert_eq!(
        ok_method(&topology(&mut p.wrapper)),
        "topology",
        "the read is re-sent on the new connection"
    );
    p.daemon.cut().expect("cut");
    let r = p
        .wrapper
        .call_tool(
            "memory_capture",
            json!({"text": "a write that must not repeat"}),
            REPLY,
        )
        .expect("reply");
    let text = error_text(&r);
    assert!(
        text.starts_with("error: daemon_unreachable: socket closed (code -32002)"),
        "{text}"
    );
    assert!(text.contains("may have stored it"), "{text}");
    let log = p.daemon.request_log().expect("log");
    assert_eq!(
        log.iter()
            .filter(|r| r["method"] == "memory_capture")
            .count(),
        1,
        "the write ran once"
    );
    assert_eq!(ok_method(&topology(&mut p.wrapper)), "topology");
    one_connection(&p);
    finish(&mut p);
}

#[test]
fn an_oversized_response_fails_that_call_only() {
    let mut p = connected_pair(&[("IAI_MCP_MAX_LINE_BYTES", "4096")]);
    p.daemon.oversize(100_000).expect("oversize");
    let r = topology(&mut p.wrapper);
    assert!(
        error_text(&r).starts_with("error: response_too_large"),
        "{r}"
    );
    assert_eq!(ok_method(&topology(&mut p.wrapper)), "topology");
    finish(&mut p);
}

#[test]
fn replies_with_unknown_ids_and_duplicate_replies_are_ignored() {
    let mut p = connected_pair(&[]);
    p.daemon.stray().expect("stray");
    p.daemon.duplicate().expect("duplicate");
    assert_eq!(ok_method(&topology(&mut p.wrapper)), "topology");
    p.daemon.stray().expect("stray");
    assert_eq!(ok_method(&topology(&mut p.wrapper)), "topology");
    finish(&mut p);
}

#[test]
fn a_reply_to_a_cancelled_request_is_dropped() {
    let mut p = connected_pair(&[]);
    p.daemon.hang().expect("hang");
    send_call(&mut p.wrapper, "doomed", "topology", json!({}));
    daemon_holds(&p, "topology", 2);
    p.wrapper
        .notify("notifications/cancelled", json!({"requestId": "doomed"}))
        .expect("cancel");
    p.wrapper
        .request("ping", json!({}), REPLY)
        .expect("cancel is in force");
    p.daemon.resume().expect("resume");
    assert_eq!(ok_method(&topology(&mut p.wrapper)), "topology");
    finish(&mut p);
}

#[test]
fn a_read_survives_two_drops_in_a_row_within_its_deadline() {
    let mut p = connected_pair(&[]);
    // The daemon takes the read but does not answer; the connection is
    // dropped under it twice, and each time the read is re-sent.
    p.daemon.hang().expect("hang");
    send_call(&mut p.wrapper, "read", "schema_list", json!({}));
    for received in 1..=2 {
        daemon_holds(&p, "schema_list", received);
        p.daemon.drop_connections().expect("drop");
    }
    daemon_holds(&p, "schema_list", 3);
    p.daemon.resume().expect("resume");
    let r = p
        .wrapper
        .wait_response(&json!("read"), REPLY)
        .expect("answer");
    assert_eq!(ok_method(&r), "schema_list", "{r}");
    finish(&mut p);
}

#[test]
fn a_call_after_the_daemon_returns_does_not_wait_out_the_backoff() {
    let mut p = connected_pair(&[
        JSON_LOG,
        ("IAI_MCP_BACKOFF_INITIAL_MS", "100"),
        ("IAI_MCP_BACKOFF_MAX_MS", "60000"),
        ("IAI_MCP_CONNECT_WAIT_MS", "60000"),
    ]);
    p.daemon.down().expect("down");
    // Four failed attempts: the pause before the fifth is over a second.
    eventually("four failed connect attempts", || {
        let failed = events_named(&p.wrapper, "connect_failed").len();
        (failed >= 4).then_some(())
    });
    p.daemon.up().expect("up");
    assert_eq!(ok_method(&topology(&mut p.wrapper)), "topology");
    finish(&mut p);
    // The socket's appearance brings the attempt (the endpoint watch), or,
    // if the watch had not seen it yet, the call hurries it.
    let hurried = events_named(&p.wrapper, "connect_hurried");
    let appeared = events_named(&p.wrapper, "endpoint_appeared");
    assert!(
        !hurried.is_empty() || !appeared.is_empty(),
        "neither the appearance nor the call brought the attempt forward"
    );
    for e in &hurried {
        assert!(e["earlier_by_ms"].is_u64(), "{hurried:?}");
    }
}

#[test]
fn a_slow_daemon_that_sends_anything_keeps_its_connection_a_silent_one_loses_it() {
    let mut p = connected_pair(&[("IAI_MCP_CALL_TIMEOUT_MS", "1000")]);
    let accepted = |p: &common::Pair| p.daemon.stats().expect("stats").accepted;
    // Slow but alive: the call times out, but a line arrived meanwhile.
    p.daemon.hang().expect("hang");
    send_call(&mut p.wrapper, "slow", "schema_list", json!({}));
    daemon_holds(&p, "schema_list", 1);
    let before = accepted(&p);
    p.daemon.stray().expect("stray");
    let slow = p
        .wrapper
        .wait_response(&json!("slow"), REPLY)
        .expect("answer");
    assert!(error_text(&slow).contains("daemon_timeout"), "{slow}");
    p.daemon.resume().expect("resume");
    assert_eq!(ok_method(&topology(&mut p.wrapper)), "topology");
    assert_eq!(accepted(&p), before, "the connection was kept");
    // Silent: nothing at all for the whole call timeout.
    p.daemon.hang().expect("hang");
    send_call(&mut p.wrapper, "silent", "schema_list", json!({}));
    let silent = p
        .wrapper
        .wait_response(&json!("silent"), REPLY)
        .expect("answer");
    assert!(error_text(&silent).contains("daemon_timeout"), "{silent}");
    p.daemon.resume().expect("resume");
    assert_eq!(ok_method(&topology(&mut p.wrapper)), "topology");
    assert!(accepted(&p) > before, "the silent connection was replaced");
    one_connection(&p);
    finish(&mut p);
}
