//! Helpers shared by the wrapper's integration tests: spawn this package's
//! wrapper binary (and the fake daemon) through the harness, in fresh
//! temporary directories, killed on drop.

use std::path::PathBuf;
use std::time::Duration;

use devkit::tempdir::short_tempdir;
use harness::{FakeDaemon, WrapperCommand, WrapperOptions, WrapperProcess};
use serde_json::{Value, json};
use tempfile::TempDir;

/// Generous bound for any single reply in tests (a safety net, not a
/// timing assertion).
pub const REPLY: Duration = Duration::from_secs(20);

/// The wrapper binary built for this test run, or the one
/// `IAI_WRAPPER_BIN` names, behind `IAI_WRAPPER_RUNNER`'s runner if set
/// (see [`WrapperCommand::under_test`]).
pub fn wrapper_cmd() -> WrapperCommand {
    WrapperCommand::under_test(env!("CARGO_BIN_EXE_iai-mcp-wrapper"))
}

/// [`wrapper_cmd`] as a process command, for tests that drive the process
/// themselves.
pub fn wrapper_process() -> std::process::Command {
    wrapper_cmd().std_command()
}

/// A wrapper with no daemon anywhere: its socket path names a file that
/// does not exist in a private temporary directory.
pub struct Lonely {
    pub wrapper: WrapperProcess,
    pub dir: TempDir,
}

/// Start a wrapper whose daemon socket does not exist.
pub fn lonely(extra: &[(&str, &str)]) -> Lonely {
    let dir = short_tempdir().expect("tempdir");
    let mut opts = WrapperOptions::new(dir.path().join("absent.sock"));
    for (k, v) in extra {
        opts = opts.env(k, v);
    }
    let wrapper = WrapperProcess::spawn(&wrapper_cmd(), &opts).expect("spawn wrapper");
    Lonely { wrapper, dir }
}

/// A fake daemon and a wrapper connected to it.
pub struct Pair {
    pub wrapper: WrapperProcess,
    pub daemon: FakeDaemon,
    /// Holds the socket's directory for as long as the pair lives.
    _dir: TempDir,
}

/// Start a fake daemon, then a wrapper dialling it.
pub fn pair(extra: &[(&str, &str)]) -> Pair {
    let dir = short_tempdir().expect("tempdir");
    let socket: PathBuf = dir.path().join("d.sock");
    let daemon = FakeDaemon::spawn(&socket).expect("spawn fake daemon");
    let mut opts = WrapperOptions::new(&socket);
    for (k, v) in extra {
        opts = opts.env(k, v);
    }
    let wrapper = WrapperProcess::spawn(&wrapper_cmd(), &opts).expect("spawn wrapper");
    Pair {
        wrapper,
        daemon,
        _dir: dir,
    }
}

/// Send one raw line and wait for the next message of any kind.
pub fn raw_roundtrip(wrapper: &mut WrapperProcess, line: &[u8]) -> Value {
    let mut bytes = line.to_vec();
    bytes.push(b'\n');
    wrapper.send_raw(&bytes).expect("write");
    wrapper.recv_any(REPLY).expect("a reply")
}

/// `_meta` of a modern-era request for `version`.
pub fn modern_meta(version: &str) -> Value {
    json!({ "_meta": { "io.modelcontextprotocol/protocolVersion": version } })
}

/// Check `probe` every few milliseconds until it yields a value; panics
/// with `what` after `REPLY`. For conditions with no event to wait on (a
/// file appearing, a counter in another process).
pub fn eventually<T>(what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = std::time::Instant::now() + REPLY;
    loop {
        if let Some(value) = probe() {
            return value;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never happened: {what}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The environment setting that makes the wrapper write its log as JSON
/// events, which tests read instead of its prose.
pub const JSON_LOG: (&str, &str) = ("IAI_MCP_LOG_FORMAT", "json");

/// The wrapper's log events so far, from a wrapper started with
/// [`JSON_LOG`]: every complete stderr line must be one JSON object.
pub fn events(w: &WrapperProcess) -> Vec<Value> {
    let text = w.stderr_text();
    let complete = match text.rfind('\n') {
        Some(end) => &text[..end],
        None => "",
    };
    complete
        .lines()
        .map(|line| {
            let event: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("a log line that is not JSON ({e}): {line}"));
            assert!(
                event.is_object(),
                "a log line that is not an object: {line}"
            );
            event
        })
        .collect()
}

/// The events called `name` so far.
pub fn events_named(w: &WrapperProcess, name: &str) -> Vec<Value> {
    events(w)
        .into_iter()
        .filter(|event| event["event"] == name)
        .collect()
}

/// The heartbeat files under a state directory.
pub fn heartbeats(state_dir: &std::path::Path) -> Vec<PathBuf> {
    std::fs::read_dir(state_dir.join("wrappers"))
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("heartbeat-") && n.ends_with(".json"))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Read and parse a JSON file, if it exists and is complete.
pub fn read_json(path: &std::path::Path) -> Option<Value> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// The daemon method echoed by a successful fake-daemon result.
pub fn ok_method(r: &Value) -> &str {
    assert!(
        r["result"].get("isError").is_none(),
        "expected success: {r}"
    );
    r["result"]["structuredContent"]["method"]
        .as_str()
        .expect("method")
}

/// The text of a tool error result.
pub fn error_text(r: &Value) -> &str {
    assert_eq!(r["result"]["isError"], true, "expected a tool error: {r}");
    r["result"]["content"][0]["text"].as_str().expect("text")
}

/// Calls `topology` and waits for the reply.
pub fn topology(w: &mut WrapperProcess) -> Value {
    w.call_tool("topology", json!({}), REPLY).expect("reply")
}

/// Whether process `pid` (as the fake CLI logs it) has ended.
pub fn process_ended(pid: i64) -> bool {
    u32::try_from(pid).is_ok_and(harness::footprint::has_ended)
}

/// Sends a `tools/call` of `tool` with id `id`, without waiting.
pub fn send_call(w: &mut WrapperProcess, id: &str, tool: &str, arguments: Value) {
    w.send_request_with_id(
        json!(id),
        "tools/call",
        json!({ "name": tool, "arguments": arguments }),
    )
    .expect("send");
}
