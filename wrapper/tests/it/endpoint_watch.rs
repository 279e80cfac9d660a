//! The endpoint watch through the real binaries: while the daemon is away
//! the wrapper watches where it will listen and dials when it returns, not
//! on a timer. Faults on the watched path (its directory deleted and
//! recreated, the socket replaced by a regular file, a socket that appears
//! but refuses, a port file rewritten with garbage) cost a bounded number
//! of dials, lose no call, and leave the wrapper able to reconnect when the
//! real daemon returns.
//!
//! "Bounded" is counted, never timed: the wrapper logs `endpoint_awaited`
//! when it stops dialling, and every dial as `connect_attempt`; between an
//! `endpoint_awaited` and the next fault there must be none.

use devkit::tempdir::short_tempdir;
use harness::{FakeDaemon, Transport, WrapperOptions, WrapperProcess};
use std::path::{Path, PathBuf};

use std::time::Duration;

use crate::common;
use crate::common::{
    JSON_LOG, REPLY, events, events_named, eventually, ok_method, send_call, topology,
};
use iai_mcp_wrapper::bridge::{
    self, Access, Backoff, Bridge, BridgeMode, DriverConfig, Policy, Request, Timings,
    WatchSettings,
};
use iai_mcp_wrapper::transport::{Endpoint, Port};
use serde_json::json;

/// Most dials one fault may cost: the quick retries after each
/// appearance the fault's file-system events announce (creating and
/// writing a file is up to three events).
const DIALS_PER_FAULT: usize = 3 * iai_mcp_wrapper::bridge::core::WATCHED_RETRIES as usize;

/// A fake daemon at `socket` and a wrapper (JSON log) connected to it.
fn connected(socket: &Path) -> (FakeDaemon, WrapperProcess) {
    let daemon = FakeDaemon::spawn(socket).expect("fake daemon");
    let opts = WrapperOptions::new(socket).env(JSON_LOG.0, JSON_LOG.1);
    let mut wrapper = WrapperProcess::spawn(&common::wrapper_cmd(), &opts).expect("spawn wrapper");
    wrapper.initialize("2025-06-18").expect("initialize");
    assert_eq!(ok_method(&topology(&mut wrapper)), "topology");
    (daemon, wrapper)
}

/// The position in the log of the `n`-th event called `name` (1-based),
/// once it has been logged.
fn nth_event(w: &WrapperProcess, name: &str, n: usize) -> usize {
    eventually(&format!("{name} #{n}"), || {
        events(w)
            .iter()
            .enumerate()
            .filter(|(_, e)| e["event"] == name)
            .nth(n - 1)
            .map(|(i, _)| i)
    })
}

/// Dials logged from position `from` on.
fn dials_since(w: &WrapperProcess, from: usize) -> usize {
    events(w)
        .iter()
        .skip(from)
        .filter(|e| e["event"] == "connect_attempt")
        .count()
}

/// Waits for an `endpoint_watched` event, from position `from` on, whose
/// one directory is `dir`.
fn watched(w: &WrapperProcess, dir: &Path, from: usize) -> usize {
    let expected = format!("{:?}", vec![dir.to_path_buf()]);
    eventually(&format!("endpoint_watched on {expected}"), || {
        events(w)
            .iter()
            .enumerate()
            .skip(from)
            .find(|(_, e)| e["event"] == "endpoint_watched" && e["directories"] == *expected)
            .map(|(i, _)| i)
    })
}

fn finish(mut w: WrapperProcess) {
    w.close_stdin();
    assert_eq!(w.wait_exit(REPLY).expect("exit").code(), Some(0));
    assert!(w.defects().is_empty(), "{:?}", w.defects());
}

#[test]
fn a_call_waiting_through_an_outage_is_answered_when_the_socket_appears() {
    let dir = short_tempdir().expect("tempdir");
    let (daemon, mut w) = connected(&dir.path().join("d.sock"));
    daemon.down().expect("down");
    nth_event(&w, "endpoint_watched", 1);
    send_call(&mut w, "waits", "topology", json!({}));
    // The call has dialled once and failed: it waits now.
    let lost = nth_event(&w, "connection_lost", 1);
    eventually("the call's own dial failed", || {
        (events_named(&w, "connect_failed").len() >= 2).then_some(())
    });
    daemon.up().expect("up");
    let r = w.wait_response(&json!("waits"), REPLY).expect("answered");
    assert_eq!(ok_method(&r), "topology");
    let appeared = nth_event(&w, "endpoint_appeared", 1);
    assert!(appeared > lost, "the appearance brought the dial");
    finish(w);
}

#[test]
fn the_socket_directory_deleted_and_recreated_is_followed_without_a_dial() {
    let dir = short_tempdir().expect("tempdir");
    let run = dir.path().join("run");
    std::fs::create_dir(&run).expect("mkdir");
    let (daemon, mut w) = connected(&run.join("d.sock"));
    daemon.down().expect("down");
    let quiet = nth_event(&w, "endpoint_awaited", 1);
    std::fs::remove_dir_all(&run).expect("rm -r");
    let up_there = watched(&w, dir.path(), quiet);
    std::fs::create_dir(&run).expect("mkdir again");
    let back_down = watched(&w, &run, up_there + 1);
    assert_eq!(
        dials_since(&w, quiet),
        0,
        "no dial while the watch moved up and back down"
    );
    assert!(back_down > up_there);
    daemon.up().expect("up");
    eventually("reconnected", || {
        events_named(&w, "connected")
            .iter()
            .any(|e| e["reconnect"] == true)
            .then_some(())
    });
    assert_eq!(ok_method(&topology(&mut w)), "topology");
    finish(w);
}

#[test]
fn a_socket_replaced_by_a_regular_file_costs_a_few_dials_and_no_call() {
    let dir = short_tempdir().expect("tempdir");
    let socket = dir.path().join("d.sock");
    let (daemon, mut w) = connected(&socket);
    daemon.down().expect("down");
    let quiet = nth_event(&w, "endpoint_awaited", 1);
    std::fs::write(&socket, b"not a socket\n").expect("write a regular file");
    let quiet_again = nth_event(&w, "endpoint_awaited", 2);
    let dials = dials_since(&w, quiet);
    assert!(
        (1..=DIALS_PER_FAULT).contains(&dials),
        "{dials} dials for one regular file"
    );
    // A call meanwhile is not lost: it waits for the daemon.
    send_call(&mut w, "waits", "topology", json!({}));
    eventually("the call's dial failed", || {
        (dials_since(&w, quiet_again) >= 1).then_some(())
    });
    std::fs::remove_file(&socket).expect("rm");
    daemon.up().expect("up");
    let r = w.wait_response(&json!("waits"), REPLY).expect("answered");
    assert_eq!(ok_method(&r), "topology");
    finish(w);
}

#[test]
fn a_socket_that_appears_but_refuses_costs_a_few_dials() {
    let dir = short_tempdir().expect("tempdir");
    let path = dir.path().join("d.sock");
    let (daemon, mut w) = connected(&path);
    daemon.down().expect("down");
    let quiet = nth_event(&w, "endpoint_awaited", 1);
    // A socket of the wrong kind: it exists, and every stream connect to
    // it fails.
    let deaf = std::os::unix::net::UnixDatagram::bind(&path).expect("bind");
    nth_event(&w, "endpoint_awaited", 2);
    let dials = dials_since(&w, quiet);
    assert!(
        (1..=DIALS_PER_FAULT).contains(&dials),
        "{dials} dials for one deaf socket"
    );
    drop(deaf);
    std::fs::remove_file(&path).expect("rm");
    daemon.up().expect("up");
    eventually("reconnected", || {
        events_named(&w, "connected")
            .iter()
            .any(|e| e["reconnect"] == true)
            .then_some(())
    });
    assert_eq!(ok_method(&topology(&mut w)), "topology");
    finish(w);
}

/// The bridge itself (this package's library, in this process) against the
/// fake daemon over TCP with the port taken from its port file, as a
/// wrapper dials where there are no Unix sockets: a port file rewritten
/// with garbage is no news and dials nothing; a call meanwhile dials on
/// its own and is answered once the daemon is back.
#[test]
fn a_port_file_rewritten_with_garbage_dials_nothing_and_the_daemon_is_found_again() {
    let dir = short_tempdir().expect("tempdir");
    let base = dir.path().join("d.sock");
    let daemon = FakeDaemon::spawn_on(&devkit::bins::fake_daemon_bin(), &base, Transport::Tcp)
        .expect("fake daemon on TCP");
    let port_file = with_suffix(&base, ".port");
    let endpoint = Endpoint::Tcp {
        host: "127.0.0.1".into(),
        port: Port::File(port_file.clone()),
        token: with_suffix(&base, ".token"),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let timings = Timings {
            backoff: Backoff::new(Duration::from_millis(50), Duration::from_secs(2))
                .expect("backoff"),
            ..Timings::default()
        };
        let policy = Policy::new(BridgeMode::Fixed, timings).expect("policy");
        let (handle, driver) = bridge::spawn(
            Bridge::new(policy, endpoint.to_string(), 5),
            DriverConfig {
                endpoint,
                connect_timeout: Duration::from_secs(5),
                probe_timeout: Duration::from_secs(1),
                max_line_bytes: 1 << 20,
                watch: WatchSettings::default(),
            },
        );
        let read = || Request {
            method: "topology".into(),
            params: json!({}),
            access: Access::Read,
            fallback: false,
        };
        assert!(handle.call(read()).await.is_ok(), "connected");
        let mut status = handle.status();
        daemon.down().expect("down");
        let quiet = *within(
            "awaits the port file",
            tokio::time::timeout(
                REPLY,
                status.wait_for(|s| !s.connected && s.awaiting_endpoint),
            )
            .await,
        )
        .expect("status");
        std::fs::write(&port_file, "garbage\n").expect("rewrite the port file");
        // A call dials on its own; the garbage dialled nothing before it.
        let waiting = tokio::spawn({
            let handle = handle.clone();
            async move { handle.call(read()).await }
        });
        let dialled = *within(
            "the call dialled",
            tokio::time::timeout(
                REPLY,
                status.wait_for(|s| s.failed_attempts > quiet.failed_attempts),
            )
            .await,
        )
        .expect("status");
        assert!(!dialled.connected);
        std::fs::remove_file(&port_file).expect("rm the garbage");
        daemon.up().expect("up");
        let outcome = within(
            "the call answered",
            tokio::time::timeout(REPLY, waiting).await,
        )
        .expect("the call task");
        assert!(outcome.is_ok(), "{outcome:?}");
        handle.shutdown().await;
        driver.await.expect("the driver ends");
    });
}

/// What a bounded wait gave, or a failure naming `what` never happened.
fn within<T>(what: &str, outcome: Result<T, tokio::time::error::Elapsed>) -> T {
    outcome.unwrap_or_else(|_| panic!("never happened: {what}"))
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}
