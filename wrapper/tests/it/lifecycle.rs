//! The wrapper's lifecycle around the MCP traffic, through the real
//! binaries with HOME and the state directory in a temporary folder:
//! heartbeat, wake signal, warm-up and graceful exit.

use std::path::Path;

use crate::common::{REPLY, eventually, heartbeats, lonely, modern_meta, pair, read_json};
#[cfg(unix)]
use harness::Signal;
use harness::WrapperProcess;
use serde_json::{Value, json};

/// On Unix, `path` is readable by its owner only (mode 0600); Windows has
/// no mode bits to look at.
fn assert_private(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{}", path.display());
    }
    #[cfg(not(unix))]
    let _ = path;
}

fn is_iso_utc(v: &Value) -> bool {
    v.as_str()
        .is_some_and(|s| s.ends_with('Z') && humantime::parse_rfc3339(s).is_ok())
}

fn the_heartbeat(w: &WrapperProcess) -> (std::path::PathBuf, Value) {
    let state = w.state_dir().to_path_buf();
    eventually("heartbeat file written", || {
        let files = heartbeats(&state);
        let path = files.first()?.clone();
        let body = read_json(&path)?;
        Some((path, body))
    })
}

#[test]
fn heartbeat_has_the_contract_fields_is_private_and_is_refreshed() {
    let mut l = lonely(&[("IAI_MCP_HEARTBEAT_INTERVAL_MS", "20")]);
    let (path, first) = the_heartbeat(&l.wrapper);
    let pid = l.wrapper.pid();
    assert_eq!(first["pid"], pid);
    assert_eq!(first["schema_version"], 1);
    assert_eq!(first["wrapper_version"], env!("CARGO_PKG_VERSION"));
    assert!(is_iso_utc(&first["started_at"]), "{first}");
    assert!(is_iso_utc(&first["last_refresh"]), "{first}");
    let uuid = first["uuid"].as_str().expect("uuid");
    let name = path.file_name().and_then(|n| n.to_str()).expect("name");
    assert_eq!(name, format!("heartbeat-{pid}-{uuid}.json"));
    assert_private(&path);
    let refreshed = eventually("heartbeat refreshed", || {
        let body = read_json(&path)?;
        (body["last_refresh"] != first["last_refresh"]).then_some(body)
    });
    assert_eq!(refreshed["started_at"], first["started_at"]);
    assert_eq!(refreshed["uuid"], first["uuid"]);
    l.wrapper.close_stdin();
    assert!(l.wrapper.wait_exit(REPLY).expect("exit").success());
}

fn heartbeat_removed_on(stop: impl FnOnce(&mut WrapperProcess)) {
    let mut p = pair(&[]);
    p.wrapper.initialize("2025-06-18").expect("initialize");
    p.wrapper
        .call_tool("topology", json!({}), REPLY)
        .expect("connected");
    let (path, _) = the_heartbeat(&p.wrapper);
    stop(&mut p.wrapper);
    let status = p.wrapper.wait_exit(REPLY).expect("exit");
    assert_eq!(status.code(), Some(0), "{}", p.wrapper.stderr_text());
    assert!(!path.exists(), "heartbeat left behind");
    assert!(p.wrapper.defects().is_empty(), "{:?}", p.wrapper.defects());
    // The daemon is untouched: the wrapper never signals it.
    assert!(p.daemon.stats().is_ok(), "daemon still serving");
}

// Signals are Unix's.
#[cfg(unix)]
#[test]
fn sigterm_removes_the_heartbeat_and_exits_zero() {
    heartbeat_removed_on(|w| w.signal(Signal::SIGTERM).expect("signal"));
}

// Signals are Unix's.
#[cfg(unix)]
#[test]
fn sigint_removes_the_heartbeat_and_exits_zero() {
    heartbeat_removed_on(|w| w.signal(Signal::SIGINT).expect("signal"));
}

#[test]
fn eof_removes_the_heartbeat_and_exits_zero() {
    heartbeat_removed_on(WrapperProcess::close_stdin);
}

#[test]
fn wake_signal_is_written_when_no_daemon_listens() {
    let l = lonely(&[]);
    let wake = l.wrapper.state_dir().join("wake.signal");
    let body = eventually("wake.signal written", || read_json(&wake));
    assert_eq!(body["wrapper_pid"], l.wrapper.pid());
    assert!(is_iso_utc(&body["requested_at"]), "{body}");
    let (_, heartbeat) = the_heartbeat(&l.wrapper);
    assert_eq!(body["wrapper_uuid"], heartbeat["uuid"]);
    assert_private(&wake);
}

#[test]
fn wake_signal_is_not_written_when_the_daemon_answers() {
    let mut p = pair(&[]);
    p.wrapper.initialize("2025-06-18").expect("initialize");
    // A successful call proves the first connect attempt has succeeded,
    // which is when the wrapper decides whether to wake the daemon.
    let r = p
        .wrapper
        .call_tool("topology", json!({}), REPLY)
        .expect("call");
    assert!(r["result"].get("isError").is_none(), "{r}");
    assert!(!p.wrapper.state_dir().join("wake.signal").exists());
}

#[test]
fn warm_up_sends_session_open_then_session_start_payload() {
    let mut p = pair(&[]);
    p.wrapper.initialize("2025-06-18").expect("initialize");
    let seen = eventually("session_start_payload received", || {
        let seen = p.daemon.seen().ok()?;
        seen.iter()
            .any(|s| s == "session_start_payload")
            .then_some(seen)
    });
    let open = seen.iter().position(|s| s == "session_open");
    let start = seen.iter().position(|s| s == "session_start_payload");
    assert!(open.is_some() && open < start, "order: {seen:?}");
    assert_eq!(
        seen.iter()
            .filter(|s| *s == "session_start_payload")
            .count(),
        1
    );
    let log = p.daemon.request_log().expect("log");
    let payload = log
        .iter()
        .find(|r| r["method"] == "session_start_payload")
        .expect("logged");
    let (_, heartbeat) = the_heartbeat(&p.wrapper);
    assert_eq!(payload["params"]["session_id"], heartbeat["uuid"]);
}

#[test]
fn first_modern_request_starts_the_warm_up() {
    let mut p = pair(&[]);
    p.wrapper
        .request("tools/list", modern_meta("2026-07-28"), REPLY)
        .expect("list");
    eventually("session_start_payload received", || {
        let seen = p.daemon.seen().ok()?;
        seen.iter()
            .any(|s| s == "session_start_payload")
            .then_some(())
    });
}

#[test]
fn eof_with_a_call_in_flight_answers_it_before_exiting() {
    // The grace period is far longer than the daemon's delay, so the call
    // must be answered by the daemon, not failed at shutdown.
    let mut p = pair(&[("IAI_MCP_SHUTDOWN_GRACE_MS", "20000")]);
    p.wrapper.initialize("2025-06-18").expect("initialize");
    p.wrapper
        .call_tool("topology", json!({}), REPLY)
        .expect("connected");
    p.daemon.delay(300).expect("delay");
    p.wrapper
        .send_request_with_id(
            json!("inflight"),
            "tools/call",
            json!({"name": "topology", "arguments": {}}),
        )
        .expect("send");
    // Close stdin only once the daemon holds the call (baseline + this one).
    eventually("daemon received the call", || {
        let log = p.daemon.request_log().ok()?;
        let calls = log.iter().filter(|r| r["method"] == "topology").count();
        (calls == 2).then_some(())
    });
    p.wrapper.close_stdin();
    let r = p
        .wrapper
        .wait_response(&json!("inflight"), REPLY)
        .expect("answered");
    assert_eq!(
        r["result"]["structuredContent"]["method"], "topology",
        "{r}"
    );
    assert_eq!(p.wrapper.wait_exit(REPLY).expect("exit").code(), Some(0));
}
