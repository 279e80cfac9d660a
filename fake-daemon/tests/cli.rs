//! End-to-end tests of the `fake-daemon` binary: its command line, its
//! stdin command language and what clients see on the socket.
//!
//! Synchronisation is always on something observable: an acknowledgement
//! line, a reply, end of file, or a report (`SEEN`, `STATS`) polled until it
//! shows the expected state. Read timeouts are only a safety net so that a
//! broken daemon fails a test instead of hanging it.
//!
//! Unix only: the daemon's Unix socket is what most of them talk to (the
//! TCP listener, Windows' only one, is driven there by the wrapper's `tcp`
//! tests through the harness).
#![cfg(unix)]

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use assert_cmd::Command;
use fake_daemon_control::StartupStep;
use predicates::prelude::*;
use serde_json::{Value, json};
use tempfile::TempDir;

/// Safety net for every wait: far longer than anything should take.
const PATIENCE: Duration = Duration::from_secs(20);

const BIN: &str = env!("CARGO_BIN_EXE_fake-daemon");

fn socket_dir() -> TempDir {
    tempfile::Builder::new()
        .prefix("fd")
        .tempdir_in("/tmp")
        .expect("temporary directory")
}

/// A JSON-RPC request line.
fn request(id: u64, method: &str) -> String {
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"{method}\",\"params\":{{}}}}\n")
}

/// The exact reply line the daemon sends for `request(id, method)`.
fn reply(id: u64, method: &str) -> String {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"ok\":true,\"method\":\"{method}\",\"fake_daemon\":true}}}}\n"
    )
}

/// A running daemon, killed and reaped when dropped (also on panic).
struct Daemon {
    child: Child,
    stdin: Option<ChildStdin>,
    /// Its stdout: `BOUND`, then acknowledgements.
    lines: mpsc::Receiver<String>,
    /// Its stderr: diagnostics and start-up steps.
    log: mpsc::Receiver<String>,
    path: PathBuf,
    _dir: TempDir,
}

/// Forwards each line `source` yields to the returned channel, from a
/// thread of its own.
fn forward_lines(source: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (sender, lines) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(source).lines() {
            let Ok(line) = line else { break };
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    lines
}

impl Daemon {
    fn start() -> Self {
        Self::start_with(&[])
    }

    fn start_with(options: &[&str]) -> Self {
        Self::start_at(socket_dir(), options)
    }

    fn start_at(dir: TempDir, options: &[&str]) -> Self {
        let daemon = Self::spawn_at(dir, options);
        assert_eq!(daemon.next_line(), "BOUND");
        daemon
    }

    /// Starts the daemon without waiting for `BOUND`.
    fn spawn_at(dir: TempDir, options: &[&str]) -> Self {
        let path = dir.path().join("d.sock");
        let mut child = std::process::Command::new(BIN)
            .args(options)
            .arg(&path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn fake-daemon");
        let stdin = child.stdin.take();
        let lines = forward_lines(child.stdout.take().expect("piped stdout"));
        let log = forward_lines(child.stderr.take().expect("piped stderr"));
        Daemon {
            child,
            stdin,
            lines,
            log,
            path,
            _dir: dir,
        }
    }

    fn next_line(&self) -> String {
        self.lines
            .recv_timeout(PATIENCE)
            .expect("a line from the daemon's stdout")
    }

    /// The next start-up step the daemon logs (other stderr lines skipped).
    fn next_step(&self) -> StartupStep {
        loop {
            let line = self
                .log
                .recv_timeout(PATIENCE)
                .expect("a line from the daemon's stderr");
            if let Some(step) = StartupStep::from_log_line(&line) {
                return step;
            }
        }
    }

    /// Sends one command without waiting for its acknowledgement.
    fn send_command(&mut self, command: &str) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        writeln!(stdin, "{command}").expect("write command");
        stdin.flush().expect("flush command");
    }

    /// Sends one command and returns its acknowledgement.
    fn cmd(&mut self, command: &str) -> String {
        self.send_command(command);
        self.next_line()
    }

    fn stats(&mut self) -> String {
        self.cmd("STATS")
    }

    fn seen(&mut self) -> Value {
        serde_json::from_str(&self.cmd("SEEN")).expect("SEEN is JSON")
    }

    /// Asks `SEEN` until it lists `name` (the daemon has read that request).
    fn wait_until_seen(&mut self, name: &str) {
        let deadline = Instant::now() + PATIENCE;
        while !self.seen()["seen"]
            .as_array()
            .expect("seen list")
            .iter()
            .any(|item| item == name)
        {
            assert!(Instant::now() < deadline, "the daemon never saw {name}");
        }
    }

    fn connect(&self) -> Client {
        Client::connect(&self.path)
    }

    fn signal(&self, name: &str) {
        let status = std::process::Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success());
    }

    fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            assert!(Instant::now() < deadline, "the daemon did not exit");
            thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A client connection with a read timeout as safety net.
struct Client {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl Client {
    fn connect(path: &Path) -> Self {
        let stream = UnixStream::connect(path).expect("connect to the daemon");
        stream
            .set_read_timeout(Some(PATIENCE))
            .expect("set read timeout");
        let writer = stream.try_clone().expect("clone stream");
        Client {
            reader: BufReader::new(stream),
            writer,
        }
    }

    fn send(&mut self, text: &str) {
        self.writer
            .write_all(text.as_bytes())
            .expect("write to the daemon");
    }

    /// The next complete line, newline included.
    fn raw_line(&mut self) -> String {
        let mut line = String::new();
        self.reader.read_line(&mut line).expect("read a line");
        assert!(line.ends_with('\n'), "incomplete line {line:?}");
        line
    }

    fn json(&mut self) -> Value {
        let line = self.raw_line();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"))
    }

    /// Sends a request and checks the exact reply.
    fn round_trip(&mut self, id: u64, method: &str) {
        self.send(&request(id, method));
        assert_eq!(self.raw_line(), reply(id, method));
    }

    /// Everything until end of file; fails on a reset or the timeout.
    fn rest(&mut self) -> Vec<u8> {
        let mut rest = Vec::new();
        self.reader
            .read_to_end(&mut rest)
            .expect("read until end of file");
        rest
    }

    /// True when no byte is waiting to be read right now.
    fn nothing_waiting(&mut self) -> bool {
        if !self.reader.buffer().is_empty() {
            return false;
        }
        self.writer.set_nonblocking(true).expect("nonblocking");
        let mut byte = [0_u8; 1];
        let result = self.reader.get_mut().read(&mut byte);
        self.writer.set_nonblocking(false).expect("blocking");
        matches!(result, Err(ref e) if e.kind() == ErrorKind::WouldBlock)
    }
}

// ---------------------------------------------------------------------------
// Command line
// ---------------------------------------------------------------------------

#[test]
fn help_documents_every_command_and_the_reply_format() {
    let mut assert = Command::cargo_bin("fake-daemon")
        .unwrap()
        .arg("--help")
        .assert()
        .success();
    for word in [
        "DROP",
        "DROPPED",
        "QUIT",
        "STATS conns=",
        "SEEN",
        "LOG",
        "DOWN",
        "OK DOWN",
        "UP",
        "HANG",
        "RESUME",
        "DELAY <ms>",
        "GARBAGE <n>",
        "SLICE <bytes>",
        "CUT",
        "OVERSIZE <bytes>",
        "DUPLICATE",
        "STRAY",
        "BOUND",
        "ERR unknown command",
        "\"fake_daemon\":true",
        "-32700",
        "0600",
    ] {
        assert = assert.stdout(predicate::str::contains(word));
    }
}

#[test]
fn version_is_printed() {
    Command::cargo_bin("fake-daemon")
        .unwrap()
        .arg("--version")
        .assert()
        .success()
        .stdout(format!("fake-daemon {}\n", env!("CARGO_PKG_VERSION")));
}

#[test]
fn missing_socket_path_exits_2() {
    Command::cargo_bin("fake-daemon")
        .unwrap()
        .assert()
        .code(2)
        .stdout("")
        .stderr(predicate::str::contains("missing <socket-path>"));
}

#[test]
fn unknown_option_exits_2() {
    Command::cargo_bin("fake-daemon")
        .unwrap()
        .args(["--frobnicate", "/tmp/x.sock"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown option '--frobnicate'"));
}

#[test]
fn too_long_socket_path_exits_2() {
    let path = format!("/tmp/{}.sock", "x".repeat(120));
    Command::cargo_bin("fake-daemon")
        .unwrap()
        .arg(&path)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("Unix socket paths are limited to"));
    assert!(!Path::new(&path).exists());
}

#[test]
fn refuses_to_remove_a_file_that_is_not_a_socket() {
    let dir = socket_dir();
    let path = dir.path().join("d.sock");
    std::fs::write(&path, "precious").unwrap();
    Command::cargo_bin("fake-daemon")
        .unwrap()
        .arg(&path)
        .assert()
        .code(1)
        .stdout("")
        .stderr(predicate::str::contains("is not a socket"));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "precious");
}

#[test]
fn refused_commands_get_err_and_change_nothing() {
    let dir = socket_dir();
    let path = dir.path().join("d.sock");
    Command::cargo_bin("fake-daemon")
        .unwrap()
        .arg(&path)
        .write_stdin("BOGUS\nbogus thing\nDELAY x\nDELAY\nDROP now\n\nSTATS\nQUIT\n")
        .assert()
        .success()
        .stdout(
            "BOUND\nERR unknown command: BOGUS\nERR unknown command: bogus\n\
             ERR DELAY needs a whole number from 0 to 86400000, not 'x'\nERR DELAY needs <ms>\n\
             ERR DROP takes no argument\nERR empty command\n\
             STATS conns=0 accepted=0 requests=0 controls=0 refused=0 pending=0\n",
        );
}

#[test]
fn quit_exits_0_and_removes_the_socket_file() {
    let dir = socket_dir();
    let path = dir.path().join("d.sock");
    Command::cargo_bin("fake-daemon")
        .unwrap()
        .arg(&path)
        .write_stdin("QUIT\n")
        .assert()
        .success()
        .stdout("BOUND\n");
    assert!(!path.exists());
}

#[test]
fn end_of_stdin_keeps_serving() {
    let mut daemon = Daemon::start();
    daemon.stdin = None;
    let mut client = daemon.connect();
    client.round_trip(1, "topology");
    assert!(
        daemon.child.try_wait().unwrap().is_none(),
        "exited at end of stdin"
    );
    daemon.signal("TERM");
    assert!(daemon.wait_exit().success());
}

#[test]
fn sigterm_removes_the_socket_file_and_exits_0() {
    let mut daemon = Daemon::start();
    let mut client = daemon.connect();
    client.round_trip(1, "topology");
    daemon.signal("TERM");
    assert!(daemon.wait_exit().success());
    assert!(!daemon.path.exists());
    assert!(client.rest().is_empty());
}

#[test]
fn sigint_removes_the_socket_file_and_exits_0() {
    let mut daemon = Daemon::start();
    daemon.signal("INT");
    assert!(daemon.wait_exit().success());
    assert!(!daemon.path.exists());
}

#[test]
fn replaces_a_stale_socket_and_sets_mode_0600() {
    let dir = socket_dir();
    drop(UnixListener::bind(dir.path().join("d.sock")).unwrap());
    let daemon = Daemon::start_at(dir, &[]);
    let mode = std::fs::metadata(&daemon.path)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    daemon.connect().round_trip(1, "topology");
}

// ---------------------------------------------------------------------------
// Socket protocol
// ---------------------------------------------------------------------------

#[test]
fn request_split_across_two_writes_is_answered() {
    let daemon = Daemon::start();
    let mut client = daemon.connect();
    let line = request(41, "memory_recall");
    let (first, second) = line.split_at(17);
    client.send(first);
    client.send(second);
    assert_eq!(client.raw_line(), reply(41, "memory_recall"));
}

#[test]
fn two_requests_in_one_write_are_both_answered() {
    let daemon = Daemon::start();
    let mut client = daemon.connect();
    client.send(&format!(
        "{}{}",
        request(1, "topology"),
        request(2, "schema_list")
    ));
    assert_eq!(client.raw_line(), reply(1, "topology"));
    assert_eq!(client.raw_line(), reply(2, "schema_list"));
}

#[test]
fn ids_are_echoed_exactly() {
    let daemon = Daemon::start();
    let mut client = daemon.connect();
    client.send("{\"jsonrpc\":\"2.0\",\"id\":\"abc-1\",\"method\":\"m\"}\n{\"id\":1.50,\"jsonrpc\":\"2.0\",\"method\":\"m\"}\n");
    assert_eq!(
        client.raw_line(),
        "{\"jsonrpc\":\"2.0\",\"id\":\"abc-1\",\"result\":{\"ok\":true,\"method\":\"m\",\"fake_daemon\":true}}\n"
    );
    assert_eq!(
        client.raw_line(),
        "{\"jsonrpc\":\"2.0\",\"id\":1.50,\"result\":{\"ok\":true,\"method\":\"m\",\"fake_daemon\":true}}\n"
    );
}

#[test]
fn non_json_gets_parse_error_with_null_id() {
    let daemon = Daemon::start();
    let mut client = daemon.connect();
    client.send("this is not json\n");
    let answer = client.json();
    assert_eq!(
        answer,
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "parse error"}})
    );
    assert!(answer.as_object().unwrap().contains_key("id"));
    client.round_trip(2, "topology");
}

#[test]
fn invalid_requests_get_invalid_request_with_recovered_id() {
    let daemon = Daemon::start();
    let mut client = daemon.connect();
    client.send("{\"jsonrpc\":\"2.0\",\"id\":7}\n[1,2]\n");
    let first = client.json();
    assert_eq!(first["id"], 7);
    assert_eq!(first["error"]["code"], -32600);
    let second = client.json();
    assert_eq!(second["id"], Value::Null);
    assert_eq!(second["error"]["code"], -32600);
}

#[test]
fn control_messages_are_counted_and_only_status_is_answered() {
    let mut daemon = Daemon::start();
    let mut client = daemon.connect();
    client.send(
        "{\"type\":\"session_open\",\"session_id\":\"s-1\",\"ts\":\"2026-01-01T00:00:00Z\"}\n",
    );
    client.send("{\"type\":\"pause\"}\n");
    client.send("{\"type\":\"status\"}\n");
    assert_eq!(
        client.raw_line(),
        "{\"ok\":true,\"state\":\"WAKE\",\"version\":\"3.3.0\"}\n"
    );
    client.round_trip(1, "topology");
    assert_eq!(
        daemon.stats(),
        "STATS conns=1 accepted=1 requests=1 controls=3 refused=0 pending=0"
    );
}

#[test]
fn status_reports_the_release_given_or_none() {
    let status = |options: &[&str]| {
        let daemon = Daemon::start_with(options);
        let mut client = daemon.connect();
        client.send("{\"type\":\"status\"}\n");
        client.json()
    };
    assert_eq!(
        status(&["--release", "3.2.3"]),
        json!({"ok": true, "state": "WAKE", "version": "3.2.3"})
    );
    assert_eq!(
        status(&["--no-release"]),
        json!({"ok": true, "state": "WAKE"})
    );
}

#[test]
fn a_hung_daemon_holds_its_status_reply_until_resume() {
    let mut daemon = Daemon::start();
    let mut client = daemon.connect();
    assert_eq!(daemon.cmd("HANG"), "OK HANG");
    client.send("{\"type\":\"status\"}\n");
    daemon.wait_until_seen("status");
    assert!(client.nothing_waiting());
    assert_eq!(daemon.cmd("RESUME"), "OK RESUME");
    assert_eq!(client.json()["version"], "3.3.0");
}

#[test]
fn notifications_get_no_reply_but_are_logged() {
    let mut daemon = Daemon::start();
    let mut client = daemon.connect();
    client.send("{\"jsonrpc\":\"2.0\",\"method\":\"note\"}\n");
    client.round_trip(2, "topology");
    let log: Value = serde_json::from_str(&daemon.cmd("LOG")).unwrap();
    assert_eq!(
        log["requests"][0],
        json!({"method": "note", "params": null})
    );
    assert_eq!(log["requests"][1]["method"], "topology");
}

#[test]
fn oversized_lines_get_an_error_and_are_skipped_to_the_newline() {
    let daemon = Daemon::start_with(&["--max-line-bytes", "64"]);
    let mut client = daemon.connect();
    // A complete oversized line.
    client.send(&format!("{}\n", "a".repeat(200)));
    let error = client.json();
    assert_eq!(
        (error["id"].clone(), error["error"]["code"].clone()),
        (Value::Null, json!(-32600))
    );
    // An oversized line still arriving: the error comes before its end.
    client.send(&"b".repeat(100));
    let error = client.json();
    assert_eq!(error["error"]["code"], -32600);
    client.send(&format!("{}\n{}", "c".repeat(100), request(3, "topology")));
    assert_eq!(client.raw_line(), reply(3, "topology"));
}

#[test]
fn many_concurrent_pipelining_clients_are_all_answered() {
    let mut daemon = Daemon::start();
    let path = daemon.path.clone();
    let workers: Vec<_> = (0..8_u64)
        .map(|worker| {
            let path = path.clone();
            thread::spawn(move || {
                let mut client = Client::connect(&path);
                let batch: String = (0..250)
                    .map(|i| request(worker * 1000 + i, "memory_recall"))
                    .collect();
                client.send(&batch);
                for i in 0..250 {
                    assert_eq!(client.raw_line(), reply(worker * 1000 + i, "memory_recall"));
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("client thread");
    }
    let stats = daemon.stats();
    assert!(
        stats.contains("accepted=8 requests=2000 controls=0"),
        "{stats}"
    );
}

// ---------------------------------------------------------------------------
// Commands
// ---------------------------------------------------------------------------

#[test]
fn drop_closes_every_connection_and_keeps_listening() {
    let mut daemon = Daemon::start();
    let mut first = daemon.connect();
    let mut second = daemon.connect();
    first.round_trip(1, "topology");
    second.round_trip(2, "topology");
    assert_eq!(
        daemon.stats(),
        "STATS conns=2 accepted=2 requests=2 controls=0 refused=0 pending=0"
    );
    assert_eq!(daemon.cmd("DROP"), "DROPPED");
    assert_eq!(
        daemon.stats(),
        "STATS conns=0 accepted=2 requests=2 controls=0 refused=0 pending=0"
    );
    assert!(first.rest().is_empty());
    assert!(second.rest().is_empty());
    let mut third = daemon.connect();
    third.round_trip(3, "topology");
    assert_eq!(
        daemon.stats(),
        "STATS conns=1 accepted=3 requests=3 controls=0 refused=0 pending=0"
    );
}

#[test]
fn seen_lists_methods_and_control_types_in_order() {
    let mut daemon = Daemon::start();
    let mut client = daemon.connect();
    client.send("{\"type\":\"session_open\",\"session_id\":\"s\",\"ts\":\"t\"}\n");
    client.round_trip(1, "session_start_payload");
    client.round_trip(2, "topology");
    assert_eq!(
        daemon.cmd("SEEN"),
        r#"{"seen":["session_open","session_start_payload","topology"]}"#
    );
}

#[test]
fn log_records_method_and_params_of_every_request() {
    let mut daemon = Daemon::start();
    let mut client = daemon.connect();
    client.send("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory_capture\",\"params\":{\"text\":\"remember this\",\"tier\":\"episodic\"}}\n");
    client.json();
    client.send("{\"type\":\"status\"}\n");
    assert_eq!(client.json()["state"], "WAKE");
    client.send(
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"profile_get\",\"params\":{\"knob\":null}}\n",
    );
    client.json();
    let log: Value = serde_json::from_str(&daemon.cmd("LOG")).unwrap();
    let requests = log["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0]["method"], "memory_capture");
    assert_eq!(
        requests[0]["params"],
        json!({"text": "remember this", "tier": "episodic"})
    );
    assert_eq!(requests[1]["method"], "profile_get");
    assert_eq!(requests[1]["params"], json!({"knob": null}));
}

#[test]
fn journal_can_be_switched_off() {
    let mut daemon = Daemon::start_with(&["--journal-bytes", "0"]);
    daemon.connect().round_trip(1, "topology");
    assert_eq!(daemon.cmd("SEEN"), r#"{"seen":[],"dropped":1}"#);
}

#[test]
fn down_unlinks_and_closes_up_binds_again() {
    let mut daemon = Daemon::start();
    let mut client = daemon.connect();
    client.round_trip(1, "topology");
    assert_eq!(daemon.cmd("DOWN"), "OK DOWN");
    assert!(!daemon.path.exists());
    assert!(UnixStream::connect(&daemon.path).is_err());
    assert!(client.rest().is_empty());
    assert_eq!(
        daemon.stats(),
        "STATS conns=0 accepted=1 requests=1 controls=0 refused=0 pending=0"
    );
    assert_eq!(daemon.cmd("DOWN"), "OK DOWN");
    assert_eq!(daemon.cmd("UP"), "OK UP");
    assert_eq!(
        std::fs::metadata(&daemon.path)
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
    daemon.connect().round_trip(2, "topology");
    assert_eq!(daemon.cmd("UP"), "OK UP");
}

#[test]
fn hang_holds_replies_and_resume_releases_them() {
    let mut daemon = Daemon::start();
    let mut client = daemon.connect();
    client.round_trip(1, "warm_up");
    assert_eq!(daemon.cmd("HANG"), "OK HANG");
    client.send(&request(2, "held_one"));
    client.send("not json\n");
    client.send(&request(3, "held_two"));
    daemon.wait_until_seen("held_two");
    assert_eq!(
        daemon.stats(),
        "STATS conns=1 accepted=1 requests=1 controls=0 refused=0 pending=0"
    );
    assert!(client.nothing_waiting());
    assert_eq!(daemon.cmd("RESUME"), "OK RESUME");
    assert_eq!(client.raw_line(), reply(2, "held_one"));
    assert_eq!(client.json()["error"]["code"], -32700);
    assert_eq!(client.raw_line(), reply(3, "held_two"));
    client.round_trip(4, "after");
}

#[test]
fn delay_postpones_replies_without_blocking_other_connections() {
    let mut daemon = Daemon::start();
    let mut slow = daemon.connect();
    let mut fast = daemon.connect();
    // A delay far longer than the test: the slow reply must still be pending.
    assert_eq!(daemon.cmd("DELAY 600000"), "OK DELAY 600000");
    slow.send(&request(1, "slow"));
    daemon.wait_until_seen("slow");
    assert_eq!(daemon.cmd("DELAY 0"), "OK DELAY 0");
    fast.round_trip(2, "fast");
    slow.send(&request(3, "not_delayed"));
    assert_eq!(slow.raw_line(), reply(3, "not_delayed"));
    assert!(slow.nothing_waiting());
    assert_eq!(
        daemon.stats(),
        "STATS conns=2 accepted=2 requests=2 controls=0 refused=0 pending=0"
    );
    // A short delay: the reply does arrive.
    assert_eq!(daemon.cmd("DELAY 20"), "OK DELAY 20");
    fast.round_trip(4, "eventually");
}

#[test]
fn garbage_goes_to_every_live_connection() {
    let mut daemon = Daemon::start();
    let mut clients = [daemon.connect(), daemon.connect()];
    for (id, client) in (1..).zip(clients.iter_mut()) {
        client.round_trip(id, "topology");
    }
    assert_eq!(daemon.cmd("GARBAGE 3"), "OK GARBAGE 3");
    for client in &mut clients {
        for k in 1..=3 {
            let line = client.raw_line();
            assert_eq!(line, format!("garbage line {k}\n"));
            assert!(serde_json::from_str::<Value>(&line).is_err());
        }
        client.round_trip(9, "topology");
    }
}

#[test]
fn slice_writes_replies_in_pieces_that_reassemble() {
    let mut daemon = Daemon::start();
    let mut client = daemon.connect();
    assert_eq!(daemon.cmd("SLICE 7"), "OK SLICE 7");
    client.round_trip(1, "topology");
    assert_eq!(daemon.cmd("OVERSIZE 5000"), "OK OVERSIZE 5000");
    client.send(&request(2, "big"));
    let big = client.json();
    assert_eq!(big["id"], 2);
    assert_eq!(daemon.cmd("SLICE 0"), "OK SLICE 0");
    client.round_trip(3, "topology");
}

#[test]
fn cut_writes_half_a_reply_then_closes() {
    let mut daemon = Daemon::start();
    let mut client = daemon.connect();
    client.round_trip(1, "topology");
    assert_eq!(daemon.cmd("CUT"), "OK CUT");
    client.send(&request(2, "memory_capture"));
    let full = reply(2, "memory_capture");
    let got = client.rest();
    assert_eq!(got, full.as_bytes()[..full.len() / 2]);
    assert!(!got.contains(&b'\n'));
    daemon.connect().round_trip(3, "topology");
}

#[test]
fn oversize_pads_the_next_reply_only() {
    let mut daemon = Daemon::start();
    let mut client = daemon.connect();
    assert_eq!(daemon.cmd("OVERSIZE 100000"), "OK OVERSIZE 100000");
    client.send(&request(7, "topology"));
    let line = client.raw_line();
    assert!(line.len() > 100_000, "{} bytes", line.len());
    let value: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(value["id"], 7);
    assert_eq!(value["result"]["ok"], true);
    assert_eq!(value["result"]["method"], "topology");
    assert!(value["result"]["padding"].is_string());
    client.round_trip(8, "topology");
}

#[test]
fn duplicate_writes_the_next_reply_twice() {
    let mut daemon = Daemon::start();
    let mut client = daemon.connect();
    assert_eq!(daemon.cmd("DUPLICATE"), "OK DUPLICATE");
    client.send(&request(5, "memory_reinforce"));
    assert_eq!(client.raw_line(), reply(5, "memory_reinforce"));
    assert_eq!(client.raw_line(), reply(5, "memory_reinforce"));
    client.round_trip(6, "topology");
}

#[test]
fn stray_sends_a_reply_nobody_asked_for() {
    let mut daemon = Daemon::start();
    let mut client = daemon.connect();
    client.round_trip(1, "topology");
    assert_eq!(daemon.cmd("STRAY"), "OK STRAY");
    let stray = client.json();
    assert_eq!(stray["id"], fake_daemon::STRAY_ID);
    assert_eq!(stray["jsonrpc"], "2.0");
    assert!(stray["result"].is_object());
    client.round_trip(2, "topology");
    assert_eq!(
        daemon.stats(),
        "STATS conns=1 accepted=1 requests=2 controls=0 refused=0 pending=0"
    );
}

/// A TCP client that sends `token` first, then speaks JSON-RPC.
fn tcp_client(port: u16, token: &str) -> std::net::TcpStream {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_read_timeout(Some(PATIENCE)).expect("timeout");
    writeln!(stream, "{token}").expect("token");
    stream
}

fn read_file(path: &Path) -> String {
    std::fs::read_to_string(path)
        .expect("readable")
        .trim()
        .to_owned()
}

#[test]
fn tcp_publishes_port_and_token_checks_the_token_and_renews_it_on_up() {
    let mut daemon = Daemon::start_with(&["--tcp"]);
    let port_file = daemon.path.with_file_name("d.sock.port");
    let token_file = daemon.path.with_file_name("d.sock.token");
    let port: u16 = read_file(&port_file).parse().expect("a port");
    let token = read_file(&token_file);
    assert_eq!(token.len(), 64, "{token}");
    let mode = std::fs::metadata(&token_file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(!daemon.path.exists(), "no Unix socket with --tcp");

    let mut good = tcp_client(port, &token);
    good.write_all(request(1, "topology").as_bytes())
        .expect("write");
    let mut line = String::new();
    BufReader::new(&good).read_line(&mut line).expect("reply");
    assert_eq!(line, reply(1, "topology"));

    let mut bad = tcp_client(port, "wrong");
    bad.write_all(request(2, "topology").as_bytes())
        .expect("write");
    let mut rest = Vec::new();
    let _ = bad.read_to_end(&mut rest);
    assert!(rest.is_empty(), "a wrong token gets nothing");
    assert_eq!(
        daemon.stats(),
        "STATS conns=1 accepted=1 requests=1 controls=0 refused=1 pending=0"
    );

    assert_eq!(daemon.cmd("DOWN"), "OK DOWN");
    assert!(!port_file.exists() && !token_file.exists());
    assert_eq!(daemon.cmd("UP"), "OK UP");
    assert_eq!(read_file(&port_file), port.to_string(), "same port again");
    let renewed = read_file(&token_file);
    assert_ne!(renewed, token, "a fresh token at every start");
    let mut again = tcp_client(port, &renewed);
    again
        .write_all(request(3, "topology").as_bytes())
        .expect("write");
    let mut line = String::new();
    BufReader::new(&again).read_line(&mut line).expect("reply");
    assert_eq!(line, reply(3, "topology"));
}

#[test]
fn a_tcp_connection_still_checking_its_token_is_dropped_too() {
    let mut daemon = Daemon::start_with(&["--tcp"]);
    let port: u16 = read_file(&daemon.path.with_file_name("d.sock.port"))
        .parse()
        .expect("a port");
    let token = read_file(&daemon.path.with_file_name("d.sock.token"));
    let mut early = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    early.set_read_timeout(Some(PATIENCE)).expect("timeout");
    let deadline = Instant::now() + PATIENCE;
    while !daemon.stats().ends_with("pending=1") {
        assert!(Instant::now() < deadline, "the daemon never accepted");
        thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(daemon.cmd("DROP"), "DROPPED");
    // The connection is closed: writing may fail, reading finds the end.
    let _ = writeln!(early, "{token}");
    let _ = early.write_all(request(1, "topology").as_bytes());
    let mut rest = Vec::new();
    let _ = early.read_to_end(&mut rest);
    assert!(
        rest.is_empty(),
        "a connection from before DROP got an answer"
    );
    assert_eq!(
        daemon.stats(),
        "STATS conns=0 accepted=0 requests=0 controls=0 refused=0 pending=0"
    );
}

// ---------------------------------------------------------------------------
// Start-up orders
//
// The daemon logs each step of a start-up once taken and only then pauses,
// so a test reads the step, then looks at the endpoint while the pause
// holds the next step off. The pauses below are far longer than that look.
// ---------------------------------------------------------------------------

/// Between a bind and its listen in these tests.
const GAP: &str = "listen-after=2000";

/// Between two steps of 3.3.0's order in these tests.
const PAUSED_TOKEN_THEN_PORT: &str = "token-then-port=700";

/// Asserts that a dial to the Unix socket at `path` is refused.
fn assert_unix_dial_refused(path: &Path) {
    assert!(path.exists(), "bound: the socket file is there");
    let error = UnixStream::connect(path).expect_err("nothing listens yet");
    assert_eq!(error.kind(), ErrorKind::ConnectionRefused, "{error}");
}

/// Asserts that a dial to loopback TCP `port` is refused.
fn assert_tcp_dial_refused(port: u16) {
    let error = std::net::TcpStream::connect(("127.0.0.1", port)).expect_err("nothing listens yet");
    assert_eq!(error.kind(), ErrorKind::ConnectionRefused, "{error}");
}

/// Sends a request over TCP (token first) and checks the exact reply.
fn tcp_round_trip(port: u16, token: &str, id: u64) {
    let mut stream = tcp_client(port, token);
    stream
        .write_all(request(id, "topology").as_bytes())
        .expect("write");
    let mut line = String::new();
    BufReader::new(&stream).read_line(&mut line).expect("reply");
    assert_eq!(line, reply(id, "topology"));
}

#[test]
fn listen_after_refuses_a_dial_between_bind_and_listen_at_start_and_at_up() {
    let mut daemon = Daemon::spawn_at(socket_dir(), &["--start-up", GAP]);
    assert_eq!(daemon.next_step(), StartupStep::Bound);
    assert_unix_dial_refused(&daemon.path);
    assert_eq!(daemon.next_step(), StartupStep::Listening);
    assert_eq!(daemon.next_line(), "BOUND");
    daemon.connect().round_trip(1, "topology");

    // UP without an order comes up in the order of --start-up.
    assert_eq!(daemon.cmd("DOWN"), "OK DOWN");
    daemon.send_command("UP");
    assert_eq!(daemon.next_step(), StartupStep::Bound);
    assert_unix_dial_refused(&daemon.path);
    assert_eq!(daemon.next_step(), StartupStep::Listening);
    assert_eq!(daemon.next_line(), "OK UP");
    daemon.connect().round_trip(2, "topology");

    // UP with an order comes up in that one, this time only.
    assert_eq!(daemon.cmd("DOWN"), "OK DOWN");
    assert_eq!(daemon.cmd("UP at-once"), "OK UP at-once");
    assert!(daemon.log.try_recv().is_err(), "at-once logs no step");
    daemon.connect().round_trip(3, "topology");
}

#[test]
fn listen_after_on_tcp_publishes_the_port_before_it_listens() {
    let mut daemon = Daemon::start_with(&["--tcp"]);
    let port: u16 = read_file(&daemon.path.with_file_name("d.sock.port"))
        .parse()
        .expect("a port");
    assert_eq!(daemon.cmd("DOWN"), "OK DOWN");
    daemon.send_command(&format!("UP {GAP}"));
    assert_eq!(daemon.next_step(), StartupStep::Bound);
    assert_eq!(
        read_file(&daemon.path.with_file_name("d.sock.port")),
        port.to_string(),
        "the same port, published before the listen"
    );
    let token = read_file(&daemon.path.with_file_name("d.sock.token"));
    assert_tcp_dial_refused(port);
    assert_eq!(daemon.next_step(), StartupStep::Listening);
    assert_eq!(daemon.next_line(), format!("OK UP {GAP}"));
    tcp_round_trip(port, &token, 1);
}

/// What a file holds, for the order of 3.3.0's writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Held {
    Absent,
    Empty,
    Written,
}

/// What the token file and the port file beside `path` hold now.
fn held_beside(path: &Path) -> [Held; 2] {
    ["d.sock.token", "d.sock.port"].map(|name| {
        match std::fs::read_to_string(path.with_file_name(name)) {
            Err(error) if error.kind() == ErrorKind::NotFound => Held::Absent,
            Err(error) => panic!("cannot read {name}: {error}"),
            Ok(text) if text.is_empty() => Held::Empty,
            Ok(_) => Held::Written,
        }
    })
}

/// Each step of 3.3.0's order the daemon logs, with what the token and port
/// files held just after it.
fn token_then_port_steps(daemon: &Daemon) -> Vec<(StartupStep, [Held; 2])> {
    (0..5)
        .map(|_| {
            let step = daemon.next_step();
            (step, held_beside(&daemon.path))
        })
        .collect()
}

/// 3.3.0's order, step by step: the token file empty, then written, with
/// no port file; the listen; the port file empty, then written.
const TOKEN_THEN_PORT: [(StartupStep, [Held; 2]); 5] = [
    (StartupStep::TokenFileEmpty, [Held::Empty, Held::Absent]),
    (StartupStep::TokenWritten, [Held::Written, Held::Absent]),
    (StartupStep::Listening, [Held::Written, Held::Absent]),
    (StartupStep::PortFileEmpty, [Held::Written, Held::Empty]),
    (StartupStep::PortWritten, [Held::Written, Held::Written]),
];

#[test]
fn token_then_port_writes_the_files_in_3_3_0_order_at_start_and_at_up() {
    let mut daemon = Daemon::spawn_at(
        socket_dir(),
        &["--tcp", "--start-up", PAUSED_TOKEN_THEN_PORT],
    );
    assert_eq!(token_then_port_steps(&daemon), TOKEN_THEN_PORT);
    assert_eq!(daemon.next_line(), "BOUND");
    let port: u16 = read_file(&daemon.path.with_file_name("d.sock.port"))
        .parse()
        .expect("a port");
    let token = read_file(&daemon.path.with_file_name("d.sock.token"));
    assert_eq!(token.len(), 64, "{token}");
    tcp_round_trip(port, &token, 1);

    assert_eq!(daemon.cmd("DOWN"), "OK DOWN");
    assert_eq!(held_beside(&daemon.path), [Held::Absent, Held::Absent]);
    daemon.send_command("UP");
    let mut steps = Vec::new();
    for _ in 0..TOKEN_THEN_PORT.len() {
        let step = daemon.next_step();
        steps.push((step, held_beside(&daemon.path)));
        if step == StartupStep::Listening {
            // Listening and answering before the port file says where.
            let renewed = read_file(&daemon.path.with_file_name("d.sock.token"));
            assert_ne!(renewed, token, "a fresh token at every start");
            tcp_round_trip(port, &renewed, 2);
        }
    }
    assert_eq!(steps, TOKEN_THEN_PORT);
    assert_eq!(daemon.next_line(), "OK UP");
    assert_eq!(
        read_file(&daemon.path.with_file_name("d.sock.port")),
        port.to_string()
    );
}

#[test]
fn token_then_port_is_for_tcp_only() {
    Command::cargo_bin("fake-daemon")
        .unwrap()
        .args(["--start-up", "token-then-port=5", "/tmp/x.sock"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "the start-up order token-then-port=5 is for TCP (--tcp) only",
        ));
    let mut daemon = Daemon::start();
    assert_eq!(daemon.cmd("DOWN"), "OK DOWN");
    assert_eq!(
        daemon.cmd("UP token-then-port=5"),
        "ERR the start-up order token-then-port=5 is for TCP (--tcp) only"
    );
    assert!(!daemon.path.exists());
    assert_eq!(daemon.cmd("UP"), "OK UP");
    daemon.connect().round_trip(1, "topology");
}

#[test]
fn a_signal_during_a_start_up_leaves_nothing_behind() {
    let mut daemon = Daemon::spawn_at(socket_dir(), &["--start-up", GAP]);
    assert_eq!(daemon.next_step(), StartupStep::Bound);
    daemon.signal("TERM");
    assert!(daemon.wait_exit().success());
    assert!(!daemon.path.exists(), "the bound socket file is removed");
}
