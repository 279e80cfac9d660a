//! `FakeDaemon` handle against the real `fake-daemon` binary: start, stats,
//! drop, seen/log, quit, kill-on-drop.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;

use devkit::tempdir::{short_tempdir, socket_path_in};
use harness::daemon::{Command, StartupOrder};
use harness::{FakeDaemon, HarnessError};
use nix::errno::Errno;
use nix::sys::signal::kill;
use nix::unistd::Pid;
use serde_json::{Value, json};
use tempfile::TempDir;

/// A raw client connection to the daemon socket.
struct Conn {
    writer: UnixStream,
    reader: BufReader<UnixStream>,
}

impl Conn {
    fn open(daemon: &FakeDaemon) -> Self {
        let writer = UnixStream::connect(daemon.socket_path()).expect("daemon accepts");
        let reader = BufReader::new(writer.try_clone().unwrap());
        Self { writer, reader }
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.writer, "{message}").unwrap();
    }

    /// Sends a request and returns the daemon's reply line, parsed.
    fn call(&mut self, id: u64, method: &str) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {"x": 1}}));
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        serde_json::from_str(&line).expect("the reply is JSON")
    }
}

/// A fake daemon in a fresh directory (kept alive with it).
fn start() -> (TempDir, FakeDaemon) {
    let dir = short_tempdir().unwrap();
    let daemon = FakeDaemon::spawn(&socket_path_in(dir.path())).unwrap();
    (dir, daemon)
}

/// The daemon's conns, accepted, requests and controls counters.
fn counts(daemon: &FakeDaemon) -> [u64; 4] {
    let s = daemon.stats().unwrap();
    [u64::from(s.conns), s.accepted, s.requests, s.controls]
}

#[test]
fn serves_requests_and_reports_them() {
    let (_dir, daemon) = start();
    assert!(
        daemon.socket_path().exists(),
        "BOUND means the socket exists"
    );
    assert_eq!(counts(&daemon), [0, 0, 0, 0]);

    let mut conn = Conn::open(&daemon);
    // A control message gets no reply; the request after it proves it was
    // read, since one connection is served in order.
    conn.send(&json!({"type": "session_open", "session_id": "s", "ts": "2026-01-01T00:00:00Z"}));
    let reply = conn.call(7, "topology");
    assert_eq!(
        reply,
        json!({"jsonrpc": "2.0", "id": 7, "result": {"ok": true, "method": "topology", "fake_daemon": true}})
    );

    assert_eq!(counts(&daemon), [1, 1, 1, 1]);
    assert_eq!(daemon.seen().unwrap(), ["session_open", "topology"]);
    let log = daemon.request_log().unwrap();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0]["method"], "topology");
    assert_eq!(log[0]["params"], json!({"x": 1}));
}

#[test]
fn drop_closes_accepted_connections_and_keeps_listening() {
    let (_dir, daemon) = start();
    let mut conn = Conn::open(&daemon);
    conn.call(1, "topology");

    daemon.drop_connections().unwrap();
    let mut rest = Vec::new();
    let read = conn.reader.read_to_end(&mut rest);
    assert!(
        matches!(read, Ok(0)) || read.is_err(),
        "the connection is closed: {read:?} {rest:?}"
    );

    let mut again = Conn::open(&daemon);
    assert_eq!(again.call(2, "topology")["id"], 2);
    assert_eq!(daemon.stats().unwrap().accepted, 2);
}

#[test]
fn unknown_commands_are_reported_not_fatal() {
    let (_dir, daemon) = start();
    assert_eq!(
        daemon.command("FROBNICATE").unwrap(),
        "ERR unknown command: FROBNICATE"
    );
    // An order of TCP only, on a Unix socket: refused, and the handle says
    // so rather than taking the refusal for the acknowledgement.
    let tcp_only = Command::Up {
        order: Some(StartupOrder::TokenThenPort {
            pause: std::time::Duration::ZERO,
        }),
    };
    daemon.down().unwrap();
    assert!(matches!(
        daemon.carry_out(tcp_only),
        Err(HarnessError::UnexpectedAck { .. })
    ));
    daemon.up().unwrap();
    assert!(matches!(
        daemon.command("TWO\nLINES"),
        Err(HarnessError::InvalidCommand(_))
    ));
    // Still in step: the next command gets its own answer.
    daemon.drop_connections().unwrap();
    assert_eq!(daemon.stats().unwrap().conns, 0);
}

#[test]
fn quit_exits_cleanly_and_removes_the_socket() {
    let (_dir, daemon) = start();
    let socket = daemon.socket_path().to_path_buf();
    let status = daemon.quit().unwrap();
    assert!(status.success(), "{status}");
    assert!(!socket.exists());
    assert!(matches!(
        daemon.send(Command::Stats),
        Err(HarnessError::DaemonExited { .. })
    ));
}

#[test]
fn dropping_the_handle_kills_the_daemon() {
    let (_dir, daemon) = start();
    let pid = daemon.pid();
    assert_eq!(kill(Pid::from_raw(pid as i32), None), Ok(()));
    drop(daemon);
    assert_eq!(kill(Pid::from_raw(pid as i32), None), Err(Errno::ESRCH));
}

#[test]
fn a_daemon_that_cannot_bind_is_an_error() {
    let err = FakeDaemon::spawn(std::path::Path::new("/nonexistent-dir/d.sock")).unwrap_err();
    assert!(
        matches!(
            err,
            HarnessError::DaemonExited { .. } | HarnessError::UnexpectedAck { .. }
        ),
        "{err:?}"
    );
}

#[test]
fn handles_can_be_shared_or_moved_between_threads() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<FakeDaemon>();
    send::<harness::WrapperProcess>();
    send::<harness::McpClient>();
}
