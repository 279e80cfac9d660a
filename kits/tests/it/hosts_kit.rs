//! The hosts kit's own machinery through real processes and sockets: the
//! stand-in model API over TCP, and host runs that go wrong (a host that
//! never calls the model, one whose command line changed) ending within
//! their bound with a named failure and nothing left running.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use harness::footprint::has_ended;
use kits::hosts::host::Host;
use kits::hosts::npm::Installed;
use kits::hosts::reap::WrapperMatch;
use kits::hosts::script::Script;
use kits::hosts::session::{self, Limits, RunSetup, Subject};
use kits::hosts::standin::{ModelTool, Reply, StandIn};
use serde_json::{Value, json};

/// Sends one HTTP request to the stand-in; the status line and the body.
fn post(url: &str, path: &str, body: &str) -> (String, String) {
    let address = url.trim_start_matches("http://");
    let mut stream = TcpStream::connect(address).expect("connect");
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    let (head, body) = response.split_once("\r\n\r\n").expect("a head and a body");
    (
        head.lines().next().unwrap_or("").to_owned(),
        body.to_owned(),
    )
}

/// The `data:` documents of a server-sent event stream.
fn events(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).expect("each event is JSON"))
        .collect()
}

#[test]
fn the_stand_in_hands_turns_to_the_kit_and_streams_its_reply() {
    let (tx, turns) = mpsc::channel();
    let standin = StandIn::start(tx, Host::is_server_tool).expect("stand-in");
    let url = standin.url();
    let kit = std::thread::spawn(move || {
        let turn = turns.recv().expect("a turn");
        let offered = turn.offered.clone();
        let results = turn.results.clone();
        turn.reply
            .send(Reply::Call {
                id: "call_1".into(),
                tool: Host::ClaudeCode.model_tool("topology"),
                input: json!({"k": 1}),
            })
            .expect("reply");
        (offered, results)
    });
    // A request without the server's tools (a session title) is answered
    // at once, without the kit.
    let (status, body) = post(
        &url,
        "/v1/messages",
        &json!({"model": "m", "stream": false, "tools": [{"name": "bash"}]}).to_string(),
    );
    assert!(status.contains("200"), "{status}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).expect("json")["stop_reason"],
        "end_turn"
    );
    // Bad input gets a clear error and the stand-in keeps serving.
    let (status, body) = post(&url, "/v1/messages", "{not json");
    assert!(
        status.contains("400") && body.contains("not JSON"),
        "{status} {body}"
    );
    let request = json!({
        "model": "m", "stream": true,
        "tools": [{"name": "mcp__iai-mcp__topology"}, {"name": "bash"}],
        "messages": [{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "call_0", "content": [{"type": "text", "text": "ok"}]}
        ]}]
    });
    let (status, body) = post(&url, "/v1/messages?beta=true", &request.to_string());
    assert!(status.contains("200"), "{status}");
    let (offered, results) = kit.join().expect("kit thread");
    assert_eq!(offered.len(), 2);
    assert_eq!(results[0].call_id, "call_0");
    let events = events(&body);
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(
        kinds,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    assert_eq!(events[1]["content_block"]["name"], "mcp__iai-mcp__topology");
    assert_eq!(events[2]["delta"]["partial_json"], r#"{"k":1}"#);
    assert_eq!(events[4]["delta"]["stop_reason"], "tool_use");
}

#[test]
fn a_codex_call_goes_out_in_its_namespace() {
    let (tx, turns) = mpsc::channel();
    let standin = StandIn::start(tx, Host::is_server_tool).expect("stand-in");
    let kit = std::thread::spawn(move || {
        let turn = turns.recv().expect("a turn");
        let tool = ModelTool {
            namespace: Some("mcp__iai_mcp".into()),
            name: "topology".into(),
        };
        turn.reply
            .send(Reply::Call {
                id: "c".into(),
                tool,
                input: json!({}),
            })
            .expect("reply");
    });
    let request = json!({"model": "m", "stream": true, "input": [],
        "tools": [{"type": "namespace", "name": "mcp__iai_mcp", "tools": [{"type": "function", "name": "topology"}]}]});
    let (_, body) = post(&standin.url(), "/v1/responses", &request.to_string());
    kit.join().expect("kit thread");
    let done = events(&body)
        .into_iter()
        .find(|e| e["type"] == "response.output_item.done")
        .expect("an output item");
    assert_eq!(done["item"]["namespace"], "mcp__iai_mcp");
    assert_eq!(done["item"]["name"], "topology");
    assert_eq!(done["item"]["call_id"], "c");
}

/// A fake Codex: `mcp list` prints a line; a run does what `run` says.
fn fake_host(dir: &Path, run: &str) -> Installed {
    let program = dir.join("fake-codex");
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = mcp ]; then echo 'iai-mcp /bin/true - enabled'; exit 0; fi\necho $$ > \"$HOME/host.pid\"\n{run}\n"
    );
    std::fs::write(&program, script).expect("write the fake host");
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    Installed {
        host: Host::Codex,
        version: "0.0.0".into(),
        program,
        reports: "fake".into(),
        installed_in: None,
    }
}

/// Runs the fake host with short limits; the failure and the host's pid.
fn run_fake(run: &str) -> (Option<String>, u32) {
    let dir = tempfile::tempdir().expect("tempdir");
    let host = fake_host(dir.path(), run);
    let subject = Subject {
        label: "none".into(),
        judged: false,
        command: vec!["/bin/true".into()],
        matcher: WrapperMatch {
            path: "/nonexistent/wrapper".into(),
        },
        install_over: None,
    };
    let home = dir.path().join("home");
    let setup = RunSetup {
        host: &host,
        subject: &subject,
        home: home.clone(),
        wrapper_env: Vec::new(),
        path_first: Vec::new(),
        limits: Limits {
            first_turn: Duration::from_secs(2),
            whole: Duration::from_secs(30),
        },
    };
    let mut restarts = 0;
    let transcript = session::run(&setup, &Script::new("t"), &mut || {
        restarts += 1;
        Ok(Duration::ZERO)
    })
    .expect("the run itself works");
    assert_eq!(restarts, 0, "no turn, so no restart");
    assert!(
        std::fs::read_to_string(home.join(".codex/config.toml"))
            .expect("config")
            .contains("[mcp_servers.iai-mcp]")
    );
    let pid = std::fs::read_to_string(home.join("host.pid")).expect("the host ran");
    (transcript.failure, pid.trim().parse().expect("a pid"))
}

#[test]
fn a_host_that_never_calls_the_model_is_named_and_killed() {
    let (failure, pid) = run_fake("exec sleep 600");
    let failure = failure.expect("a failure");
    assert!(
        failure.contains("never called the stand-in model within 2 s"),
        "{failure}"
    );
    assert!(has_ended(pid), "the host (pid {pid}) was killed and reaped");
}

#[test]
fn a_host_whose_command_line_changed_fails_with_its_words() {
    let (failure, _) = run_fake("echo \"error: unrecognized subcommand 'exec'\" >&2; exit 2");
    let failure = failure.expect("a failure");
    assert!(failure.contains("exited with exit status: 2"), "{failure}");
    assert!(failure.contains("unrecognized subcommand"), "{failure}");
}
