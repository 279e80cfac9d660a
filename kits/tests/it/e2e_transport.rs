//! The end-to-end kit reaches the daemon as the release's clients do on
//! each system: on Windows over loopback TCP with the token first, on Unix
//! over its socket. Both are run here against the fake daemon, which
//! listens either way and refuses a TCP client without the token; the
//! holding proxy is run over each too.

use std::io::{BufRead, BufReader, Write};
use std::time::{Duration, Instant};

use devkit::bins::fake_daemon_bin;
use devkit::tempdir::short_tempdir;
use harness::FakeDaemon;
use kits::e2e::address::{Connection, DaemonAddress, Transport};
use kits::e2e::proxy::HoldingProxy;
use serde_json::{Value, json};

/// The transports this system's daemon could listen on.
fn transports() -> Vec<Transport> {
    if cfg!(unix) {
        vec![Transport::Unix, Transport::Tcp]
    } else {
        vec![Transport::Tcp]
    }
}

/// Sends request `id` and reads one line back (none: the connection
/// ended first).
fn ask(connection: &mut Connection, id: u64) -> Option<Value> {
    let request = json!({"jsonrpc": "2.0", "id": id, "method": "topology", "params": {}});
    writeln!(connection, "{request}").expect("the request is written");
    let mut line = String::new();
    let mut reader = BufReader::new(connection.try_clone().expect("a second handle"));
    match reader.read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(serde_json::from_str(&line).expect("a JSON reply")),
    }
}

#[test]
fn a_connection_is_answered_on_each_transport() {
    for transport in transports() {
        let dir = short_tempdir().expect("tempdir");
        let base = dir.path().join("d.sock");
        let _daemon = FakeDaemon::spawn_on(&fake_daemon_bin(), &base, transport)
            .expect("the fake daemon starts");
        let address = DaemonAddress::new(&base, transport);
        let mut connection = address.connect().expect("connects");
        connection
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("a read timeout");
        let reply = ask(&mut connection, 1).expect("a reply");
        assert_eq!(reply["id"], 1, "{transport}: {reply}");
        assert_eq!(
            reply["result"]["method"], "topology",
            "{transport}: {reply}"
        );
    }
}

#[test]
fn a_tcp_connection_without_the_token_is_refused() {
    let dir = short_tempdir().expect("tempdir");
    let base = dir.path().join("d.sock");
    let _daemon = FakeDaemon::spawn_on(&fake_daemon_bin(), &base, Transport::Tcp)
        .expect("the fake daemon starts");
    // `dial` sends nothing first: the request line stands where the token
    // should be.
    let mut connection = DaemonAddress::new(&base, Transport::Tcp)
        .dial()
        .expect("dials");
    connection
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("a read timeout");
    assert_eq!(ask(&mut connection, 1), None);
}

#[test]
fn the_proxy_passes_requests_then_holds_replies_on_each_transport() {
    for transport in transports() {
        let dir = short_tempdir().expect("tempdir");
        let base = dir.path().join("d.sock");
        let _daemon = FakeDaemon::spawn_on(&fake_daemon_bin(), &base, transport)
            .expect("the fake daemon starts");
        let upstream = DaemonAddress::new(&base, transport);
        let at = DaemonAddress::new(dir.path().join("p.sock"), transport);
        let proxy = HoldingProxy::start(&at, &upstream).expect("the proxy starts");
        // Through the proxy as a wrapper would: on TCP its port and the
        // daemon's token, from the proxy's own files.
        let mut connection = at.connect().expect("connects to the proxy");
        connection
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("a read timeout");
        let reply = ask(&mut connection, 1).expect("a reply through the proxy");
        assert_eq!(reply["id"], 1, "{transport}: {reply}");

        proxy.hold();
        let request = json!({"jsonrpc": "2.0", "id": 2, "method": "topology", "params": {}});
        writeln!(connection, "{request}").expect("the request is written");
        let deadline = Instant::now() + Duration::from_secs(30);
        // The proxy counts what it holds; nothing tells when it does.
        while proxy.held() == 0 {
            assert!(Instant::now() < deadline, "{transport}: no reply was held");
            std::thread::sleep(Duration::from_millis(1));
        }
        proxy.shutdown();
        let mut rest = String::new();
        let read = BufReader::new(connection).read_line(&mut rest);
        assert!(
            matches!(read, Ok(0)),
            "{transport}: the held reply reached the client: {read:?} {rest:?}"
        );
        let files = at.tcp_files();
        for file in [at.path(), &files.port, &files.token] {
            assert!(!file.exists(), "{transport}: {} is left", file.display());
        }
    }
}
