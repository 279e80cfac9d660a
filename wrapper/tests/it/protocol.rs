//! The MCP surface of the real wrapper binary: handshake, discovery, the
//! tool list without a daemon, every protocol error, and stdout purity.

use crate::common::{REPLY, lonely, modern_meta, pair, raw_roundtrip};
use serde_json::{Value, json};

#[test]
fn tools_list_serves_the_tool_table_with_no_daemon() {
    let mut l = lonely(&[]);
    let w = &mut l.wrapper;
    let init = w.initialize("2025-06-18").expect("initialize");
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(init["result"]["serverInfo"]["name"], "iai-mcp");
    let list = w
        .request("tools/list", json!({}), REPLY)
        .expect("tools/list");
    let tools = list["result"]["tools"].as_array().expect("tools array");
    // The table itself is checked against iai-mcp 3.3.0 by `cargo xtask
    // e2e`; here: the binary serves exactly it.
    assert_eq!(
        Some(tools),
        iai_mcp_wrapper::surface::Surface::builtin(None)
            .listing()
            .as_array()
    );
    for tool in tools {
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        assert_eq!(tool["outputSchema"]["type"], "object", "{tool}");
        let hints = &tool["annotations"];
        for hint in [
            "readOnlyHint",
            "idempotentHint",
            "destructiveHint",
            "openWorldHint",
        ] {
            assert!(hints[hint].is_boolean(), "{hint} on {tool}");
        }
    }
    assert!(w.defects().is_empty(), "{:?}", w.defects());
}

#[test]
fn tool_call_through_the_daemon_carries_structured_content() {
    let mut p = pair(&[]);
    let w = &mut p.wrapper;
    w.initialize("2025-11-25").expect("initialize");
    let r = w.call_tool("topology", json!({}), REPLY).expect("call");
    let result = &r["result"];
    assert!(result.get("isError").is_none_or(|e| e == false), "{r}");
    assert_eq!(result["structuredContent"]["method"], "topology");
    assert_eq!(result["structuredContent"]["fake_daemon"], true);
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().expect("text"))
        .expect("text block holds the JSON result");
    assert_eq!(text, result["structuredContent"]);
    // profile_get_set routes to profile_get / profile_set.
    let r = w
        .call_tool("profile_get_set", json!({"operation": "get"}), REPLY)
        .expect("call");
    assert_eq!(r["result"]["structuredContent"]["method"], "profile_get");
    let r = w
        .call_tool("profile_get_set", json!({"operation": "drop"}), REPLY)
        .expect("call");
    assert_eq!(r["result"]["isError"], true);
    assert_eq!(
        r["result"]["content"][0]["text"],
        "error: unknown operation drop"
    );
    assert!(w.defects().is_empty(), "{:?}", w.defects());
}

#[test]
fn protocol_errors_get_the_right_codes_and_ids() {
    let mut l = lonely(&[]);
    let w = &mut l.wrapper;
    let cases: [(&[u8], Value, i64); 7] = [
        (b"{this is not json", Value::Null, -32700),
        (b"\xff\xfe\xfd", Value::Null, -32700),
        (br#"{"jsonrpc":"2.0","id":41}"#, json!(41), -32600),
        (
            br#"{"jsonrpc":"1.0","id":"x","method":"ping"}"#,
            json!("x"),
            -32600,
        ),
        (
            br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
            Value::Null,
            -32600,
        ),
        (
            br#"{"jsonrpc":"2.0","id":42,"method":"no/such"}"#,
            json!(42),
            -32601,
        ),
        (
            br#"{"jsonrpc":"2.0","id":43,"method":"tools/call","params":{"arguments":{}}}"#,
            json!(43),
            -32602,
        ),
    ];
    for (line, id, code) in cases {
        let r = raw_roundtrip(w, line);
        assert_eq!(
            r["error"]["code"],
            code,
            "{}: {r}",
            String::from_utf8_lossy(line)
        );
        assert!(r.as_object().expect("object").contains_key("id"), "{r}");
        assert_eq!(r["id"], id, "{r}");
    }
    let r = w
        .request(
            "tools/call",
            json!({"name": "no_such_tool", "arguments": {}}),
            REPLY,
        )
        .expect("reply");
    assert_eq!(r["result"]["isError"], true);
    assert_eq!(
        r["result"]["content"][0]["text"],
        "unknown tool no_such_tool"
    );
    assert!(w.defects().is_empty(), "{:?}", w.defects());
}

#[test]
fn notifications_before_initialize_are_ignored_and_requests_served() {
    let mut l = lonely(&[]);
    let w = &mut l.wrapper;
    w.notify("notifications/initialized", json!({}))
        .expect("notify");
    w.notify("notifications/unknown", json!({"x": 1}))
        .expect("notify");
    let pong = w.request("ping", json!({}), REPLY).expect("ping");
    assert_eq!(
        pong["result"],
        json!({}),
        "served before initialize: {pong}"
    );
    let list = w.request("tools/list", json!({}), REPLY).expect("list");
    assert_eq!(
        list["result"]["tools"].as_array(),
        iai_mcp_wrapper::surface::Surface::builtin(None)
            .listing()
            .as_array()
    );
    w.initialize("2024-11-05").expect("initialize still works");
    assert!(w.next_unmatched().is_none(), "no reply to any notification");
}

#[test]
fn oversized_lines_are_answered_and_the_session_continues() {
    let mut l = lonely(&[("IAI_MCP_MAX_LINE_BYTES", "4096")]);
    let w = &mut l.wrapper;
    let big = "x".repeat(200_000);
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{{"name":"memory_capture","arguments":{{"text":"{big}"}}}}}}"#
    );
    let r = raw_roundtrip(w, line.as_bytes());
    assert_eq!(r["id"], 77, "{r}");
    assert_eq!(r["error"]["code"], -32600);
    let pong = w.request("ping", json!({}), REPLY).expect("ping after");
    assert_eq!(pong["result"], json!({}));
}

#[test]
fn modern_era_requests_and_unsupported_versions() {
    let mut l = lonely(&[]);
    let w = &mut l.wrapper;
    let d = w
        .request("server/discover", modern_meta("2026-07-28"), REPLY)
        .expect("discover");
    assert_eq!(d["result"]["resultType"], "complete");
    let versions = d["result"]["supportedVersions"]
        .as_array()
        .expect("versions");
    assert_eq!(versions.len(), 5);
    assert_eq!(versions[0], "2026-07-28");
    let list = w
        .request("tools/list", modern_meta("2026-07-28"), REPLY)
        .expect("list");
    assert_eq!(list["result"]["resultType"], "complete");
    assert!(list["result"]["ttlMs"].is_u64());
    assert_eq!(list["result"]["cacheScope"], "public");
    let bad = w
        .request("tools/list", modern_meta("1999-01-01"), REPLY)
        .expect("reply");
    assert_eq!(bad["error"]["code"], -32022, "{bad}");
    assert_eq!(bad["error"]["data"]["requested"], "1999-01-01");
    assert_eq!(
        bad["error"]["data"]["supported"],
        d["result"]["supportedVersions"]
    );
    let ping = w
        .request("ping", modern_meta("2026-07-28"), REPLY)
        .expect("reply");
    assert_eq!(ping["error"]["code"], -32601, "no ping in the modern era");
}

#[test]
fn modern_tool_call_is_complete_and_structured() {
    let mut p = pair(&[]);
    let w = &mut p.wrapper;
    let mut params = modern_meta("2026-07-28");
    params["name"] = json!("schema_list");
    params["arguments"] = json!({"domain": "x"});
    let r = w.request("tools/call", params, REPLY).expect("call");
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    assert_eq!(r["result"]["structuredContent"]["method"], "schema_list");
}

#[test]
fn cancelled_calls_get_no_reply_and_others_still_do() {
    let mut p = pair(&[]);
    p.daemon.hang().expect("hang");
    let w = &mut p.wrapper;
    w.initialize("2025-06-18").expect("initialize");
    w.send_request_with_id(
        json!("slow"),
        "tools/call",
        json!({"name": "topology", "arguments": {}}),
    )
    .expect("send");
    w.notify("notifications/cancelled", json!({"requestId": "slow"}))
        .expect("cancel");
    // stdin is read in order: once ping is answered, the cancel is in force.
    w.request("ping", json!({}), REPLY).expect("ping");
    p.daemon.resume().expect("resume");
    let r = w
        .call_tool("topology", json!({}), REPLY)
        .expect("later call");
    assert_eq!(r["result"]["structuredContent"]["method"], "topology");
    w.close_stdin();
    let status = w.wait_exit(REPLY).expect("exit");
    assert!(status.success());
    while let Some(extra) = w.next_unmatched() {
        assert_ne!(
            extra["id"], "slow",
            "a cancelled call was answered: {extra}"
        );
    }
}

#[test]
fn eof_on_stdin_exits_zero() {
    let mut l = lonely(&[]);
    let w = &mut l.wrapper;
    w.initialize("2025-06-18").expect("initialize");
    w.close_stdin();
    let status = w.wait_exit(REPLY).expect("exit");
    assert_eq!(status.code(), Some(0));
    assert!(w.defects().is_empty(), "{:?}", w.defects());
}

/// A client that floods requests and never reads stdout can neither keep
/// the wrapper alive after SIGTERM nor make it buffer without bound.
// Reads the wrapper's input and memory from /proc, then sends SIGTERM.
#[cfg(target_os = "linux")]
#[test]
fn a_client_that_stops_reading_cannot_hold_the_wrapper() {
    use std::io::Write;
    use std::process::Stdio;

    let dir = devkit::tempdir::short_tempdir().expect("tempdir");
    let mut child = crate::common::wrapper_process()
        .env("HOME", dir.path())
        .env("IAI_DAEMON_SOCKET_PATH", dir.path().join("absent.sock"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    let _stdout = child.stdout.take().expect("stdout, never read");
    let pid = child.id();
    let mut guard = devkit::process::ChildGuard::new(child);
    let flood = std::thread::spawn(move || {
        let line = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n";
        for _ in 0..5000 {
            if stdin.write_all(line).is_err() {
                break;
            }
        }
    });
    // Once the wrapper has read some input, its output backs up.
    crate::common::eventually("the wrapper read some requests", || {
        let io = std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?;
        let rchar: u64 = io
            .lines()
            .find_map(|l| l.strip_prefix("rchar: "))?
            .trim()
            .parse()
            .ok()?;
        (rchar > 16 * 1024).then_some(())
    });
    let rss_kb: u64 = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .expect("status")
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("VmRSS");
    assert!(
        rss_kb < 64 * 1024,
        "RSS {rss_kb} kB while the client is not reading"
    );
    guard.signal(harness::Signal::SIGTERM).expect("signal");
    let status = guard
        .wait_exit(REPLY)
        .expect("exits although stdout is full");
    assert_eq!(status.code(), Some(0));
    drop(guard);
    flood.join().expect("flood thread");
}
