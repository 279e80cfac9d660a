//! The log for programs (`--log-format json`), through the real binaries:
//! one JSON object per line, with the stable event names and fields the
//! contract lists, for a daemon that is down, one that drops its
//! connection under a call, and one that returns.

use crate::common::{
    JSON_LOG, REPLY, events, events_named, eventually, lonely, ok_method, pair, topology,
};
use serde_json::{Value, json};

#[test]
fn a_down_daemon_is_reported_as_connect_failed_naming_the_endpoint() {
    let l = lonely(&[JSON_LOG]);
    let socket = l.dir.path().join("absent.sock");
    let failed = eventually("a connect_failed event", || {
        events_named(&l.wrapper, "connect_failed")
            .into_iter()
            .next()
    });
    assert_eq!(failed["endpoint"], json!(socket.display().to_string()));
    assert!(
        failed["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{failed}"
    );
    assert_eq!(failed["failures"], 1, "{failed}");
    assert!(failed["retry_in_ms"].is_u64(), "{failed}");
    assert!(
        failed["timestamp"].is_string() && failed["level"] == "INFO",
        "{failed}"
    );
    let attempts = events_named(&l.wrapper, "connect_attempt");
    assert_eq!(attempts[0]["attempt"], 1, "{attempts:?}");
    assert_eq!(attempts[0]["endpoint"], failed["endpoint"], "{attempts:?}");
}

#[test]
fn a_lost_connection_and_the_read_it_replays_are_events() {
    let mut p = pair(&[JSON_LOG]);
    p.wrapper.initialize("2025-06-18").expect("initialize");
    assert_eq!(ok_method(&topology(&mut p.wrapper)), "topology");
    // Logged before the call went out, but stderr is read on its own.
    let connected = eventually("the connection logged", || {
        events_named(&p.wrapper, "connected").into_iter().next()
    });
    assert_eq!(connected["reconnect"], false);

    // The warm-up write must be answered before the daemon hangs, or it
    // too would be lost with the connection (and fail: writes are never
    // re-sent). Two replies written: the baseline call and the warm-up.
    eventually("warm-up answered", || {
        (p.daemon.stats().ok()?.requests >= 2).then_some(())
    });
    // A read held by the daemon when its connection drops is sent again.
    p.daemon.hang().expect("hang");
    p.wrapper
        .send_request_with_id(
            json!("held"),
            "tools/call",
            json!({ "name": "topology", "arguments": {} }),
        )
        .expect("send");
    // The baseline call was the first topology request; the held read is
    // the second.
    eventually("the daemon holds the read", || {
        let log = p.daemon.request_log().ok()?;
        let topologies = log
            .iter()
            .filter(|r| r["method"] == "topology" && r.get("id").is_some_and(|id| !id.is_null()))
            .count();
        (topologies >= 2).then_some(())
    });
    p.daemon.drop_connections().expect("drop");
    let replayed = eventually("the read sent again", || {
        events_named(&p.wrapper, "call_replayed").into_iter().next()
    });
    assert_eq!(replayed["method"], "topology", "{replayed}");
    assert_eq!(replayed["sends"], 2, "{replayed}");
    p.daemon.resume().expect("resume");
    let held = p
        .wrapper
        .wait_response(&json!("held"), REPLY)
        .expect("answer");
    assert_eq!(ok_method(&held), "topology");

    let lost = events_named(&p.wrapper, "connection_lost");
    assert_eq!(lost.len(), 1, "{lost:?}");
    assert_eq!(lost[0]["replayed"], 1, "{lost:?}");
    assert_eq!(lost[0]["failed"], 0, "{lost:?}");
    assert_eq!(lost[0]["reconnecting"], true, "{lost:?}");
    let connected = events_named(&p.wrapper, "connected");
    assert_eq!(
        connected.last().map(|e| &e["reconnect"]),
        Some(&json!(true))
    );

    p.wrapper.close_stdin();
    assert_eq!(p.wrapper.wait_exit(REPLY).expect("exit").code(), Some(0));
    let last = events(&p.wrapper).pop().expect("events");
    assert_eq!(last["event"], "shutting_down", "{last}");
    assert_eq!(last["reason"], "eof", "{last}");
}

#[test]
fn the_text_log_is_the_default_and_holds_no_json() {
    let l = lonely(&[("IAI_MCP_LOG", "info")]);
    let text = eventually("a connect failure in the log", || {
        let text = l.wrapper.stderr_text();
        text.contains("daemon connect failed").then_some(text)
    });
    assert!(
        text.lines()
            .all(|line| serde_json::from_str::<Value>(line).is_err()),
        "{text}"
    );
}
