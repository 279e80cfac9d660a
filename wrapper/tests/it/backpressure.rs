//! Backpressure through the real binary, against a daemon written here
//! that behaves like a single-threaded asyncio server: it reads nothing
//! until a backlog of large requests has filled the socket, then answers
//! what each read brought with large replies, and stops reading while the
//! wrapper is slow to take them. The wrapper must keep both directions
//! moving: one that keeps retrying a full socket without reading the
//! daemon's replies (a readiness never cleared) deadlocks with it.

use devkit::tempdir::short_tempdir;
use harness::{WrapperOptions, WrapperProcess};
use std::io::{Read, Write};
use std::os::unix::net::UnixListener;
use std::sync::mpsc;

use std::thread;

use crate::common::{REPLY, send_call, wrapper_cmd};
use serde_json::{Value, json};

/// Calls in the backlog: 300 requests of 10 KB hold several times what a
/// socket buffers, and their 5 KB replies fill the way back.
const CALLS: usize = 300;

#[test]
fn a_socket_full_both_ways_still_answers_every_call() {
    let dir = short_tempdir().expect("tempdir");
    let path = dir.path().join("d.sock");
    let listener = UnixListener::bind(&path).expect("bind");
    let (go, start) = mpsc::channel::<()>();
    let daemon = thread::spawn(move || {
        let (mut stream, _) = listener.accept().expect("accept");
        // The backlog builds up while nothing is read (a wrapper that
        // stopped taking input before it was all sent would hold the test's
        // writes: the bound keeps that a failure rather than a hang).
        let _ = start.recv_timeout(REPLY);
        let mut replies = stream.try_clone().expect("clone");
        let pad = "y".repeat(5_000);
        let (mut answered, mut pending, mut chunk) = (0, Vec::new(), vec![0u8; 64 * 1024]);
        // Reads what the socket holds, then answers every whole line in it
        // with one write, as an asyncio server's transport does.
        while let Ok(n) = stream.read(&mut chunk) {
            if n == 0 {
                break;
            }
            pending.extend_from_slice(&chunk[..n]);
            let mut out = Vec::new();
            while let Some(end) = pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = pending.drain(..=end).collect();
                let request: Value = serde_json::from_slice(&line).expect("a JSON request");
                if request["type"] == "status" {
                    // The question each connection begins with.
                    writeln!(out, r#"{{"ok":true,"state":"WAKE"}}"#).expect("in memory");
                    continue;
                }
                let reply = json!({"jsonrpc": "2.0", "id": request["id"], "result": {"pad": pad}});
                writeln!(out, "{reply}").expect("in memory");
                answered += 1;
            }
            if replies.write_all(&out).is_err() {
                break;
            }
        }
        answered
    });

    let mut wrapper =
        WrapperProcess::spawn(&wrapper_cmd(), &WrapperOptions::new(&path)).expect("spawn wrapper");
    wrapper.initialize("2025-06-18").expect("initialize");
    let cue = "x".repeat(10_000);
    for i in 0..CALLS {
        send_call(
            &mut wrapper,
            &format!("c{i}"),
            "memory_recall",
            json!({ "cue": cue }),
        );
    }
    go.send(()).expect("daemon waiting");
    for i in 0..CALLS {
        let response = wrapper
            .wait_response(&json!(format!("c{i}")), REPLY)
            .unwrap_or_else(|e| panic!("call c{i} unanswered: {e}"));
        assert_eq!(
            response["result"]["structuredContent"]["pad"]
                .as_str()
                .map(str::len),
            Some(5_000),
            "c{i}: {response}"
        );
    }
    wrapper.close_stdin();
    assert_eq!(wrapper.wait_exit(REPLY).expect("exit").code(), Some(0));
    assert_eq!(daemon.join().expect("daemon thread"), CALLS);
    assert!(wrapper.defects().is_empty(), "{:?}", wrapper.defects());
}
