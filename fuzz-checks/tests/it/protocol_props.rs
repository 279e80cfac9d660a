//! Property tests of the protocol layer: arbitrary lines (bytes that are
//! not UTF-8, truncated JSON, deep nesting, huge numbers, wrong types,
//! duplicate keys, batches, ids of every JSON type, long strings) mixed
//! with valid requests, through the `mcp_stream` fuzz target's check
//! ([`fuzz_checks::mcp_stream::check`]): the framing, what each line is
//! owed by the hostile-client oracle, and the real stdio loop's output
//! (every line carrying a request id gets exactly one response with that
//! id, no line more than one, every output line a valid JSON-RPC
//! response). The fuzzer searches by coverage; this searches by structure.

use fuzz_checks::mcp_stream::{self, MAX_LINE};
use proptest::prelude::*;
use serde_json::{Value, json};

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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The mcp_stream fuzz target's whole check (framing, the oracle per
    /// line, and the real stdio loop's output) on structured lines.
    #[test]
    fn every_request_id_gets_exactly_one_response(
        lines in prop::collection::vec(line_strategy(), 1..40),
        read_size in any::<u8>(),
    ) {
        let mut input = vec![read_size];
        for line in &lines {
            input.extend_from_slice(line);
            input.push(b'\n');
        }
        mcp_stream::check(&input);
    }
}
