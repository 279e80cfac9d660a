//! The hosts kit's own machinery through real processes and sockets: the
//! stand-in model API over TCP (sized and chunked bodies), and host runs
//! that go wrong (a host that never calls the model, one whose command
//! line changed, one that leaves a process behind outside its group)
//! ending within their bound with a named failure and nothing left
//! running; the broken wrappers through real pipes; and the server
//! counted as the process tree the host started for its command, a
//! launcher once.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use devkit::bins::{SUBREAPER, locate};
use devkit::process::{CapturedOutput, GroupGuard};
use devkit::reap::Reaped;
use harness::footprint::has_ended;
use kits::hosts::converse::Limits;
use kits::hosts::host::Host;
use kits::hosts::npm::Installed;
use kits::hosts::script::Script;
use kits::hosts::servers::ServerCommand;
use kits::hosts::session::{self, Role, RunSetup, Subject};
use kits::hosts::standin::{ModelTool, Reply, StandIn};
use kits::hosts::transcript::{Restarted, Transcript};
use serde_json::{Value, json};

/// Sends one HTTP request to the stand-in; the status line and the body.
fn post(url: &str, path: &str, body: &str) -> (String, String) {
    let address = url.trim_start_matches("http://");
    let mut stream = TcpStream::connect(address).expect("connect");
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
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

/// What a fake host can do besides `run`'s own commands: `turn BODY`
/// sends one Responses request to the stand-in (the address from the
/// `config.toml` the kit wrote) and prints the answer; `$tools` offers
/// the server's `memory_capture` in Codex's namespace.
const FAKE_HOST_TURN: &str = r#"
port=$(sed -n 's|^base_url = "http://127.0.0.1:\([0-9]*\)/v1"$|\1|p' "$CODEX_HOME/config.toml")
turn() {
    exec 3<>"/dev/tcp/127.0.0.1/$port"
    printf 'POST /v1/responses HTTP/1.1\r\nHost: stand-in\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' "${#1}" "$1" >&3
    cat <&3
    exec 3<&-
}
tools='[{"type":"namespace","name":"mcp__iai_mcp","tools":[{"type":"function","name":"memory_capture"}]}]'
"#;

/// A fake Codex (bash): `mcp list` prints a line; a run does what `run`
/// says, with [`FAKE_HOST_TURN`]'s `turn` at hand.
fn fake_host(dir: &Path, run: &str) -> Installed {
    let program = dir.join("fake-codex");
    let script = format!(
        "#!/bin/bash\nif [ \"$1\" = mcp ]; then echo 'iai-mcp /bin/true - enabled'; exit 0; fi\necho $$ > \"$HOME/host.pid\"\n{FAKE_HOST_TURN}\n{run}\n"
    );
    std::fs::write(&program, script).expect("write the fake host");
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    Installed {
        host: Host::Codex,
        version: "0.0.0".into(),
        program,
        reports: "fake".into(),
        installed_in: None,
        locked: false,
    }
}

/// What a fake host's run left: its failure, the host's pid, and its
/// scratch directory.
struct FakeRun {
    failure: Option<String>,
    transcript: Transcript,
    pid: u32,
    dir: tempfile::TempDir,
}

/// Runs the fake host with short limits; the failure and the host's pid.
fn run_fake(run: &str) -> (Option<String>, u32) {
    let ran = run_fake_in(run);
    (ran.failure, ran.pid)
}

/// Runs the fake host with short limits.
fn run_fake_in(run: &str) -> FakeRun {
    let dir = tempfile::tempdir().expect("tempdir");
    let host = fake_host(dir.path(), run);
    let subject = Subject {
        label: "none".into(),
        role: Role::Reported,
        command: vec!["/bin/true".into()],
        install_over: None,
    };
    let home = dir.path().join("home");
    let setup = RunSetup {
        host: &host,
        subject: &subject,
        home: home.clone(),
        wrapper_env: Vec::new(),
        path_first: Vec::new(),
        subreaper: locate(&SUBREAPER).expect("the subreaper"),
        limits: Limits {
            first_turn: Duration::from_secs(2),
            per_call: Duration::from_secs(2),
            whole: Duration::from_secs(30),
        },
    };
    let mut restarts = 0;
    let transcript = session::run(&setup, &Script::new("t"), &mut || {
        restarts += 1;
        Ok(Restarted {
            back: Duration::ZERO,
            first_connection: 0,
        })
    })
    .expect("the run itself works");
    assert_eq!(restarts, 0, "no turn, so no restart");
    assert!(
        std::fs::read_to_string(home.join(".codex/config.toml"))
            .expect("config")
            .contains("[mcp_servers.iai-mcp]")
    );
    let pid = std::fs::read_to_string(home.join("host.pid")).expect("the host ran");
    FakeRun {
        failure: transcript.failure.clone(),
        transcript,
        pid: pid.trim().parse().expect("a pid"),
        dir,
    }
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

#[test]
fn a_process_that_left_the_hosts_group_is_gone_when_the_run_ends() {
    // The host starts a process in a session of its own (out of its
    // process group, as a daemonising server does), waits until it has
    // written its pid, then never calls the model.
    let escape = "setsid sh -c 'echo $$ > \"$HOME/escaped.tmp\"; mv \"$HOME/escaped.tmp\" \"$HOME/escaped.pid\"; exec sleep 600' &\n\
                  while [ ! -s \"$HOME/escaped.pid\" ]; do :; done\n\
                  exec sleep 600";
    let ran = run_fake_in(escape);
    let failure = ran.failure.expect("a failure");
    assert!(
        failure.contains("never called the stand-in model"),
        "{failure}"
    );
    let escaped = std::fs::read_to_string(ran.dir.path().join("home/escaped.pid"))
        .expect("the escaped process wrote its pid");
    let escaped: u32 = escaped.trim().parse().expect("a pid");
    assert_ne!(escaped, ran.pid);
    assert!(
        has_ended(escaped),
        "the escaped process {escaped} outlived the run"
    );
    assert!(has_ended(ran.pid), "the host {} outlived the run", ran.pid);
}

#[test]
fn the_stand_in_reads_a_chunked_body() {
    let (tx, _turns) = mpsc::channel();
    let standin = StandIn::start(tx, Host::is_server_tool).expect("stand-in");
    let url = standin.url();
    let address = url.trim_start_matches("http://");
    let body = json!({"model": "m", "stream": false, "tools": [{"name": "bash"}]}).to_string();
    let (first, rest) = body.split_at(7);
    let mut stream = TcpStream::connect(address).expect("connect");
    write!(
        stream,
        "POST /v1/messages HTTP/1.1\r\nHost: {address}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n{:x}\r\n{first}\r\n{:x}\r\n{rest}\r\n0\r\n\r\n",
        first.len(),
        rest.len()
    )
    .expect("send");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("end_turn"), "{response}");
    // A chunk size no machine can hold is refused, not a crash.
    let mut stream = TcpStream::connect(address).expect("connect");
    write!(
        stream,
        "POST /v1/messages HTTP/1.1\r\nHost: {address}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nffffffffffffffffff\r\nx\r\n0\r\n\r\n"
    )
    .expect("send");
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    assert!(!response.starts_with("HTTP/1.1 200"), "{response}");
    // And the stand-in still serves.
    let (status, _) = post(&url, "/v1/messages", &body);
    assert!(status.contains("200"), "{status}");
}

#[test]
fn a_call_left_unanswered_ends_the_run_at_the_per_call_deadline_naming_it() {
    // The host takes its first turn, is asked call_0, and never answers.
    let ran = run_fake_in(
        r##"turn '{"model":"m","tools":'"$tools"',"input":[]}' > "$HOME/turn-1"
exec sleep 600"##,
    );
    let failure = ran.failure.expect("a failure");
    assert!(
        failure.contains("call_0 (memory_capture) not answered within 2 s of being asked"),
        "{failure}"
    );
    let asked = std::fs::read_to_string(ran.dir.path().join("home/turn-1")).expect("the answer");
    assert!(asked.contains(r#""call_id":"call_0""#), "{asked}");
    assert!(has_ended(ran.pid), "the host {} outlived the run", ran.pid);
}

#[test]
fn a_result_is_taken_by_its_call_id_and_no_other() {
    // The second turn sends a result, but under another call's id.
    let ran = run_fake_in(
        r##"turn '{"model":"m","tools":'"$tools"',"input":[]}' > /dev/null
turn '{"model":"m","tools":'"$tools"',"input":[{"type":"function_call_output","call_id":"call_9","output":"stored"}]}' > /dev/null
exec sleep 600"##,
    );
    let failure = ran.failure.expect("a failure");
    assert!(
        failure.contains("next request carried no result for call_0 (memory_capture)"),
        "{failure}"
    );
    assert_eq!(ran.transcript.steps.len(), 1);
    assert!(ran.transcript.steps[0].result.is_none());
}

#[test]
fn a_result_under_its_own_id_is_taken_and_the_next_call_asked() {
    let ran = run_fake_in(
        r##"turn '{"model":"m","tools":'"$tools"',"input":[]}' > /dev/null
turn '{"model":"m","tools":'"$tools"',"input":[{"type":"function_call_output","call_id":"call_0","output":"stored"}]}' > "$HOME/turn-2"
exit 0"##,
    );
    assert_eq!(ran.failure, None);
    let steps = &ran.transcript.steps;
    assert_eq!(steps.len(), 2, "{steps:?}");
    assert_eq!(
        steps[0].result.as_ref().map(|r| r.text.as_str()),
        Some("stored")
    );
    let asked = std::fs::read_to_string(ran.dir.path().join("home/turn-2")).expect("the answer");
    assert!(asked.contains(r#""call_id":"call_1""#), "{asked}");
}

#[test]
fn each_broken_wrapper_spoils_what_it_says_through_real_pipes() {
    // `cat` stands for the wrapper: it echoes each request it is given, so
    // what comes back shows what the broken wrapper passed on.
    let calls: String = (1..=3)
        .map(|id| {
            let tool = if id == 1 {
                "memory_capture"
            } else {
                "topology"
            };
            format!(
                "{}\n",
                json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                       "params": {"name": tool, "arguments": {}}})
            )
        })
        .collect();
    let through = |name: &str| -> Vec<Value> {
        // In a group of its own with the `cat` it starts, both killed and
        // reaped on every path.
        let mut wrapper = GroupGuard::spawn(
            std::process::Command::new(env!("CARGO_BIN_EXE_broken-wrapper"))
                .args([name, "--", "cat"])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped()),
        )
        .expect("the broken wrapper started");
        let leader = wrapper.leader().child_mut();
        let out = CapturedOutput::spawn(leader.stdout.take().expect("piped"), "broken-out");
        // Closing its input once the calls are in ends the conversation.
        leader
            .stdin
            .take()
            .expect("piped")
            .write_all(calls.as_bytes())
            .expect("the calls sent");
        // The bounds only keep a broken filter from holding the test.
        let status = wrapper.leader().wait_exit(Duration::from_secs(60));
        assert!(status.expect("the broken wrapper ended").success());
        assert!(out.wait_eof(Duration::from_secs(60)), "its output closed");
        out.text()
            .lines()
            .map(|l| serde_json::from_str(l).expect("JSON lines"))
            .collect()
    };
    let offline = through("capture-offline");
    assert_eq!(offline.len(), 3);
    assert_eq!(offline[0]["id"], 1);
    assert_eq!(
        offline[0]["result"]["structuredContent"]["record_id"],
        kits::hosts::broken::MADE_UP_RECORD
    );
    assert_eq!(
        offline[1]["method"], "tools/call",
        "the rest reach the wrapper"
    );
    let mute = through("mute-third-call");
    let ids: Vec<&Value> = mute.iter().map(|m| &m["id"]).collect();
    assert_eq!(ids, [&json!(1), &json!(2)]);
    let errors = through("errors-after-first");
    assert_eq!(errors[0]["method"], "tools/call");
    assert_eq!(errors[1]["result"]["isError"], true);
    assert_eq!(errors[2]["result"]["isError"], true);
}

/// A launcher as a host is configured to start it, which starts the
/// server below it as a shim or `uv run` does: here itself again, with the
/// same command line, the inner copy starting `sleep` (the wrapper's
/// stand-in) and then saying `ready`.
const LAUNCHER: &str = "#!/bin/sh\n\
    if [ -z \"$INNER\" ]; then INNER=1 /bin/sh \"$0\" & wait\n\
    else sleep 600 & echo ready; wait; fi\n";

/// A fake host (a shell under the subreaper) that starts the launcher
/// `launches` times, each in the background, saying each one's pid.
struct LaunchingHost {
    host: Reaped,
    server: ServerCommand,
    launchers: Vec<u32>,
    lines: std::thread::JoinHandle<()>,
    _dir: tempfile::TempDir,
}

impl LaunchingHost {
    /// Starts the host and returns once every launcher's server runs.
    fn start(launches: usize) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let launcher = dir.path().join("launcher");
        std::fs::write(&launcher, LAUNCHER).expect("write the launcher");
        let command = vec![OsString::from("/bin/sh"), launcher.clone().into()];
        let start_one = format!("/bin/sh '{}' & echo \"launched $!\"; ", launcher.display());
        let mut host = Reaped::command(&locate(&SUBREAPER).expect("the subreaper"), "/bin/sh");
        host.args(["-c", &format!("{}wait", start_one.repeat(launches))])
            .env_remove("INNER")
            .stdout(std::process::Stdio::piped());
        let mut host = Reaped::spawn(&mut host).expect("the host");
        let out = host.child_mut().stdout.take().expect("piped");
        let (tx, said) = mpsc::channel();
        let lines = std::thread::spawn(move || {
            for line in std::io::BufRead::lines(std::io::BufReader::new(out)).map_while(Result::ok)
            {
                let _ = tx.send(line);
            }
        });
        // Each launcher's pid, and a `ready` from each server; the bound
        // only keeps a broken script from holding the test.
        let (mut launchers, mut ready) = (Vec::new(), 0);
        while launchers.len() < launches || ready < launches {
            let line = said
                .recv_timeout(Duration::from_secs(60))
                .expect("the launchers and their servers started");
            match line.strip_prefix("launched ") {
                Some(pid) => launchers.push(pid.parse().expect("a pid")),
                None => {
                    assert_eq!(line, "ready");
                    ready += 1;
                }
            }
        }
        launchers.sort_unstable();
        LaunchingHost {
            host,
            server: ServerCommand::new(command),
            launchers,
            lines,
            _dir: dir,
        }
    }

    /// How many processes under the host have the configured command line.
    fn with_the_command_line(&self) -> usize {
        devkit::reap::descendants(self.host.pid())
            .into_iter()
            .filter(|pid| {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                let words: Vec<OsString> = cmdline
                    .split(|b| *b == 0)
                    .filter(|w| !w.is_empty())
                    .map(|w| OsString::from(String::from_utf8_lossy(w).into_owned()))
                    .collect();
                self.server.runs(&words, None)
            })
            .count()
    }

    /// Ends the host through the subreaper; asserts that every process
    /// that ran under it is gone.
    fn stop(mut self) {
        let below = devkit::reap::descendants(self.host.pid());
        assert!(self.host.stop(), "the subreaper finished its work");
        for pid in below {
            assert!(has_ended(pid), "{pid} outlived the host");
        }
        self.lines.join().expect("the reader of the host's output");
    }
}

#[test]
fn a_server_started_through_a_launcher_counts_once() {
    let host = LaunchingHost::start(1);
    assert!(
        host.with_the_command_line() >= 2,
        "the launcher and the copy it started both carry the command line"
    );
    let servers = host.server.servers_under(host.host.pid());
    let pids: Vec<u32> = servers.iter().map(|s| s.pid).collect();
    assert_eq!(pids, host.launchers, "{servers:?}");
    host.stop();
}

#[test]
fn two_servers_started_by_one_host_count_twice() {
    let host = LaunchingHost::start(2);
    assert!(host.with_the_command_line() >= 4);
    let mut pids: Vec<u32> = host
        .server
        .servers_under(host.host.pid())
        .iter()
        .map(|s| s.pid)
        .collect();
    pids.sort_unstable();
    assert_eq!(pids, host.launchers);
    host.stop();
}
