//! Property tests of the protocol layer, in process: arbitrary lines (bytes
//! that are not UTF-8, truncated JSON, deep nesting, huge numbers, wrong
//! types, duplicate keys, batches, ids of every JSON type, long strings)
//! mixed with valid requests go through the real stdio loop; every line
//! carrying a request id gets exactly one response with that id, no line
//! gets more than one, nothing panics, and every output line is a valid
//! JSON-RPC response.

use std::collections::HashMap;
use std::time::Duration;

use harness::scenario::hostile::{Expect, expected_reply};
use iai_mcp_wrapper::bridge::{self, Backoff, Bridge, BridgeMode, DriverConfig, Policy, Timings};
use iai_mcp_wrapper::call::Caller;
use iai_mcp_wrapper::degraded::{Degraded, DegradedConfig};
use iai_mcp_wrapper::mcp::server::{ServerConfig, serve};
use iai_mcp_wrapper::programs::Installation;
use iai_mcp_wrapper::transport::Endpoint;
use proptest::prelude::*;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

const MAX_LINE: usize = 4096;

fn id_strategy() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e300f64..1e300).prop_map(|f| json!(f)),
        "[a-z0-9]{0,12}".prop_map(Value::from),
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        Just(json!({"nested": 1})),
        Just(json!([1, 2])),
    ]
}

fn method_strategy() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!("ping")),
        Just(json!("tools/list")),
        Just(json!("initialize")),
        Just(json!("server/discover")),
        Just(json!("no/such/method")),
        Just(json!("tools/call")),
        Just(json!(17)),
        Just(Value::Null),
    ]
}

fn params_strategy() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        Just(None),
        Just(Some(json!({}))),
        Just(Some(json!({"name": "topology", "arguments": {}}))),
        Just(Some(json!({"name": "nope"}))),
        Just(Some(json!({"name": 5}))),
        Just(Some(json!({"name": "topology", "arguments": [1]}))),
        Just(Some(json!([1, 2, 3]))),
        Just(Some(
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}})
        )),
        Just(Some(
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "1999-01-01"}})
        )),
        Just(Some(json!({"protocolVersion": "2025-06-18"}))),
        "[a-z]{0,5000}".prop_map(|s| Some(json!({ "text": s }))),
    ]
}

/// A structured JSON-RPC-ish object: fields present or absent at random.
fn message_strategy() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::option::of(id_strategy()),
        prop::option::of(method_strategy()),
        params_strategy(),
        prop_oneof![
            Just(Some(json!("2.0"))),
            Just(Some(json!("1.0"))),
            Just(None)
        ],
        any::<bool>(),
    )
        .prop_map(|(id, method, params, version, id_last)| {
            let mut m = serde_json::Map::new();
            if let Some(v) = version {
                m.insert("jsonrpc".into(), v);
            }
            // Some clients (the TypeScript SDK) put the id last.
            if !id_last && let Some(id) = &id {
                m.insert("id".into(), id.clone());
            }
            if let Some(method) = method {
                m.insert("method".into(), method);
            }
            if let Some(p) = params {
                m.insert("params".into(), p);
            }
            if id_last && let Some(id) = id {
                m.insert("id".into(), id);
            }
            serde_json::to_vec(&Value::Object(m)).expect("serializable")
        })
}

fn line_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => message_strategy(),
        1 => prop::collection::vec(any::<u8>().prop_filter("no newline", |b| *b != b'\n'), 0..64),
        1 => message_strategy().prop_map(|mut l| { let n = l.len() / 2; l.truncate(n); l }),
        1 => (1usize..3000).prop_map(|d| {
            let mut l = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":".to_vec();
            l.extend(std::iter::repeat_n(b'[', d));
            l.extend(std::iter::repeat_n(b']', d));
            l.push(b'}');
            l
        }),
        1 => Just(b"{\"jsonrpc\":\"2.0\",\"id\":1e999999,\"method\":\"ping\"}".to_vec()),
        1 => Just(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"id\":4,\"method\":\"ping\"}".to_vec()),
        1 => Just(b"[{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}]".to_vec()),
        1 => Just(b"[]".to_vec()),
        1 => (MAX_LINE..MAX_LINE * 3).prop_map(|n| {
            let mut l = b"{\"jsonrpc\":\"2.0\",\"id\":\"big\",\"method\":\"ping\",\"params\":{\"x\":\"".to_vec();
            l.extend(std::iter::repeat_n(b'x', n));
            l.extend_from_slice(b"\"}}");
            l
        }),
        1 => (MAX_LINE..MAX_LINE * 3).prop_map(|n| {
            let mut l = b"{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"params\":{\"x\":\"".to_vec();
            l.extend(std::iter::repeat_n(b'x', n));
            l.extend_from_slice(b"\"},\"id\":\"big-last\"}");
            l
        }),
    ]
}

fn run(lines: &[Vec<u8>]) -> Vec<Value> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let dir = tempfile::Builder::new()
            .prefix("pp")
            .tempdir_in("/tmp")
            .expect("tempdir");
        let timings = Timings {
            connect_wait: Duration::from_millis(100),
            backoff: Backoff::new(Duration::from_millis(10), Duration::from_millis(20))
                .expect("valid"),
            ..Timings::default()
        };
        let policy = Policy::new(BridgeMode::Fixed, timings).expect("valid");
        let socket = dir.path().join("absent.sock");
        let (handle, driver) = bridge::spawn(
            Bridge::new(policy, socket.display().to_string(), 1),
            DriverConfig {
                endpoint: Endpoint::Unix(socket),
                connect_timeout: Duration::from_secs(1),
                probe_timeout: Duration::from_secs(1),
                max_line_bytes: MAX_LINE,
            },
        );
        let mut input = Vec::new();
        for line in lines {
            input.extend_from_slice(line);
            input.push(b'\n');
        }
        let (out_writer, mut out_reader) = tokio::io::duplex(1 << 16);
        let reader = tokio::spawn(async move {
            let mut out = Vec::new();
            out_reader.read_to_end(&mut out).await.map(|_| out)
        });
        let config = ServerConfig {
            max_line_bytes: MAX_LINE,
            shutdown_grace: Duration::from_secs(5),
        };
        serve(
            &input[..],
            out_writer,
            Caller::new(
                handle.clone(),
                Degraded::new(
                    DegradedConfig {
                        enabled: false,
                        ..DegradedConfig::default()
                    },
                    &Installation::default(),
                ),
            ),
            (),
            config,
            std::future::pending(),
        )
        .await;
        handle.shutdown().await;
        driver.await.expect("driver");
        let out = reader.await.expect("join").expect("read");
        out.split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).expect("every output line is JSON"))
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_request_id_gets_exactly_one_response(
        lines in prop::collection::vec(line_strategy(), 1..40)
    ) {
        let responses = run(&lines);
        // The hostile-client scenario's oracle decides what each line is owed.
        let mut expected: HashMap<String, usize> = HashMap::new();
        let mut optional: HashMap<String, usize> = HashMap::new();
        let mut anonymous = 0usize;
        for line in &lines {
            match expected_reply(line, MAX_LINE) {
                Expect::Exactly(id) => *expected.entry(id.to_string()).or_default() += 1,
                Expect::AtMostOnce(id) => *optional.entry(id.to_string()).or_default() += 1,
                Expect::NoId => anonymous += 1,
            }
        }
        let mut got: HashMap<String, usize> = HashMap::new();
        let mut nulls = 0usize;
        for r in &responses {
            let obj = r.as_object().expect("object");
            prop_assert_eq!(obj.get("jsonrpc"), Some(&json!("2.0")));
            prop_assert!(obj.contains_key("id"), "id present: {}", r);
            prop_assert!(
                obj.contains_key("result") ^ obj.contains_key("error"),
                "exactly one of result/error: {}", r
            );
            if let Some(e) = obj.get("error") {
                prop_assert!(e["code"].is_i64() && e["message"].is_string(), "{}", r);
            }
            match &r["id"] {
                Value::Null => nulls += 1,
                id => *got.entry(id.to_string()).or_default() += 1,
            }
        }
        for (id, owed) in &expected {
            let extra = optional.get(id).copied().unwrap_or(0);
            let answered = got.get(id).copied().unwrap_or(0);
            prop_assert!(
                (*owed..=owed + extra).contains(&answered),
                "id {}: {} answers for {} owed", id, answered, owed
            );
        }
        for (id, answered) in &got {
            let allowed = expected.get(id).copied().unwrap_or(0)
                + optional.get(id).copied().unwrap_or(0);
            prop_assert!(*answered <= allowed, "id {}: {} answers, {} allowed", id, answered, allowed);
        }
        prop_assert!(nulls <= anonymous, "{} null-id responses for {} lines", nulls, anonymous);
    }
}
