//! `McpClient` against small scripted processes (`sh`, `cat`): id matching,
//! out-of-order replies, defect recording, timeouts and end of file.

use std::process::{Command, Stdio};
use std::time::Duration;

use devkit::process::ChildGuard;
use harness::{ClientError, McpClient};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(10);

/// Starts `sh -c script` with piped stdio and a client on it.
fn scripted(script: &str) -> (ChildGuard, McpClient) {
    let mut guard = ChildGuard::spawn(
        Command::new("sh")
            .arg("-c")
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped()),
    )
    .expect("sh starts");
    let client = McpClient::attach(guard.child_mut()).expect("stdio is piped");
    (guard, client)
}

#[test]
fn replies_are_matched_by_id_whatever_their_order() {
    let (_child, mut client) = scripted(
        r#"read -r a; read -r b
           printf '%s\n' '{"jsonrpc":"2.0","method":"notifications/message","params":{}}' \
                         '{"jsonrpc":"2.0","id":"b","result":"second"}' \
                         '{"jsonrpc":"2.0","id":"a","result":"first"}'
           cat >/dev/null"#,
    );
    for id in ["a", "b"] {
        let params = json!({});
        client
            .send_request_with_id(json!(id), "tools/list", params)
            .unwrap();
    }
    for (id, result) in [("a", "first"), ("b", "second")] {
        let response = client.wait_response(&json!(id), WAIT).unwrap();
        assert_eq!(response["result"], result);
    }
    let notification = client.next_unmatched().expect("the notification was kept");
    assert_eq!(notification["method"], "notifications/message");
    assert_eq!(client.next_unmatched(), None);
    assert!(client.defects().is_empty());
}

#[test]
fn request_assigns_increasing_integer_ids() {
    let (_child, mut client) = scripted(
        r#"while read -r line; do
             id=${line#*\"id\":}; id=${id%%,*}
             printf '{"jsonrpc":"2.0","id":%s,"result":{"seen_id":%s}}\n' "$id" "$id"
           done"#,
    );
    let first = client.request("ping", json!({}), WAIT).unwrap();
    let second = client.request("ping", json!({}), WAIT).unwrap();
    assert_eq!(first["id"], 1);
    assert_eq!(second["id"], 2);
    assert_eq!(second["result"]["seen_id"], 2);
}

#[test]
fn non_json_lines_and_a_final_fragment_are_defects() {
    let (_child, mut client) = scripted(
        r#"printf 'not json\n[1,2]\n\n{"jsonrpc":"2.0","id":1,"result":{}}\n{"partial":'"#,
    );
    let response = client.wait_response(&json!(1), WAIT).unwrap();
    assert_eq!(response["result"], json!({}));
    assert!(client.wait_stdout_closed(WAIT));

    let defects = client.defects();
    assert_eq!(defects.len(), 4, "{defects:#?}");
    assert!(defects[0].contains("not JSON") && defects[0].contains("not json"));
    assert!(defects[1].contains("not an object"));
    assert!(defects[2].contains("not JSON"));
    assert!(defects[3].contains("partial line") && defects[3].contains("partial"));
}

#[test]
fn send_raw_writes_bytes_unchanged() {
    let (_child, mut client) = scripted("cat");
    client.send_raw(b"{\"a\":1}\n{\"b\"").unwrap();
    client.close_stdin();
    assert_eq!(client.recv_any(WAIT).unwrap(), json!({"a": 1}));
    assert!(client.wait_stdout_closed(WAIT));
    let defects = client.defects();
    assert_eq!(defects.len(), 1, "{defects:#?}");
    assert!(defects[0].contains(r#"{\"b\""#), "{defects:#?}");
    assert!(matches!(
        client.send_line("{}"),
        Err(ClientError::StdinClosed)
    ));
}

#[test]
fn no_reply_is_a_typed_timeout_and_end_of_file_is_closed() {
    let (_child, mut client) = scripted("cat >/dev/null");
    let err = client
        .request("tools/list", json!({}), Duration::from_millis(20))
        .unwrap_err();
    assert!(matches!(err, ClientError::Timeout { .. }), "{err:?}");
    assert!(matches!(
        client.recv_any(Duration::from_millis(20)),
        Err(ClientError::Timeout { .. })
    ));

    client.close_stdin();
    let err = client.wait_response(&json!(1), WAIT).unwrap_err();
    assert!(matches!(err, ClientError::Closed { .. }), "{err:?}");
}

#[test]
fn initialize_sends_the_handshake_and_the_initialized_notification() {
    // Answers initialize with the request itself as the result, then echoes
    // the next line (the notification).
    let (_child, mut client) = scripted(
        r#"read -r init; printf '{"jsonrpc":"2.0","id":1,"result":%s}\n' "$init"
           read -r note; printf '%s\n' "$note"; cat >/dev/null"#,
    );
    let response = client.initialize("2025-03-26").unwrap();
    let request = &response["result"];
    assert_eq!(request["method"], "initialize");
    assert_eq!(request["params"]["protocolVersion"], "2025-03-26");
    assert_eq!(request["params"]["clientInfo"]["name"], "harness");
    let note = client.recv_any(WAIT).unwrap();
    assert_eq!(note["method"], "notifications/initialized");
    assert_eq!(note.get("id"), None);
}

#[test]
fn initialize_error_is_reported_without_notification() {
    let (_child, mut client) = scripted(
        r#"read -r init; printf '{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"no"}}\n'
           read -r next; printf '%s\n' "$next""#,
    );
    let err = client.initialize("1999-01-01").unwrap_err();
    assert!(
        matches!(&err, ClientError::ErrorResponse(r) if r["error"]["code"] == -32602),
        "{err:?}"
    );
    // The next thing the server reads is ours, not a notification.
    client.send_line(r#"{"marker":true}"#).unwrap();
    assert_eq!(client.recv_any(WAIT).unwrap(), json!({"marker": true}));
}

#[test]
fn call_tool_sends_name_and_arguments() {
    let (_child, mut client) = scripted(
        r#"read -r req; printf '{"jsonrpc":"2.0","id":1,"result":%s}\n' "$req"; cat >/dev/null"#,
    );
    let response = client
        .call_tool("topology", json!({"k": [1]}), WAIT)
        .unwrap();
    let request: &Value = &response["result"];
    assert_eq!(request["method"], "tools/call");
    assert_eq!(
        request["params"],
        json!({"name": "topology", "arguments": {"k": [1]}})
    );
}
