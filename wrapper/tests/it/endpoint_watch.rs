//! The endpoint watch through the real binaries: while the daemon is away
//! the wrapper watches where it will listen and dials when it returns, not
//! on a timer. Each fault on the watched path costs exactly what the design
//! says: nothing for the directory deleted and recreated, a regular file at
//! the socket's path, a port file rewritten with garbage, writes among the
//! many other files of the daemon's store; one attempt and its quick
//! retries for a socket that appears but never listens. None loses a call,
//! and the wrapper reconnects when the real daemon returns, the dial
//! brought by its appearance.
//!
//! The daemon's own start-up orders, through the fake daemon's: a daemon
//! that binds, then listens a while later (a dial in between is refused:
//! tried again within milliseconds, never counted as a failure, until it
//! connects); and on TCP, 3.3.0's order (token file emptied, token
//! written, listen, port file emptied, port written), where only the port
//! file's new port dials, once.
//!
//! Counted, never timed: the wrapper logs every dial (`connect_attempt`),
//! every look the watch takes (`endpoint_looked`, at debug level), when it
//! stops dialling (`endpoint_awaited`) and the appearance that brings a
//! dial (`endpoint_appeared`).

use devkit::tempdir::short_tempdir;
#[cfg(unix)]
use harness::daemon::StartupOrder;
use harness::daemon::TcpEndpointFiles;
use harness::{FakeDaemon, Transport, WrapperOptions, WrapperProcess};
use std::path::Path;
use std::time::Duration;

use crate::common;
use crate::common::{
    JSON_LOG, REPLY, events, events_named, eventually, ok_method, send_call, topology,
};
#[cfg(unix)]
use iai_mcp_wrapper::bridge::core::{REFUSED_PAUSE, REFUSED_RETRIES};
use iai_mcp_wrapper::bridge::{
    self, Access, Backoff, Bridge, BridgeMode, DriverConfig, Policy, Request, Timings,
    WatchSettings, report,
};
use iai_mcp_wrapper::transport::{Endpoint, Port};
use serde_json::{Value, json};

/// A fake daemon at `socket` and a wrapper (JSON log at debug level, so
/// that the watch's looks are seen) connected to it, with `env` set.
fn connected_with(socket: &Path, env: &[(&str, &str)]) -> (FakeDaemon, WrapperProcess) {
    let daemon = FakeDaemon::spawn(socket).expect("fake daemon");
    let wrapper = wrapper_for(&daemon, socket, env);
    (daemon, wrapper)
}

/// A wrapper dialling `daemon` at `socket` (with `env` set, for TCP the
/// base of its port and token files), its JSON log at debug level,
/// initialized and proven connected by one call, its warm-up done: the
/// warm-up's `session_start_payload` has reached the daemon, so that no
/// call of the wrapper's own waits through an outage a test makes.
fn wrapper_for(daemon: &FakeDaemon, socket: &Path, env: &[(&str, &str)]) -> WrapperProcess {
    let opts = env.iter().fold(
        WrapperOptions::new(socket)
            .env(JSON_LOG.0, JSON_LOG.1)
            .env("IAI_MCP_LOG", "info,iai_mcp_wrapper::logging::bridge=debug"),
        |opts, (k, v)| opts.env(k, v),
    );
    let mut wrapper = WrapperProcess::spawn(&common::wrapper_cmd(), &opts).expect("spawn wrapper");
    wrapper.initialize("2025-06-18").expect("initialize");
    assert_eq!(ok_method(&topology(&mut wrapper)), "topology");
    eventually("the warm-up's call reached the daemon", || {
        let seen = daemon.seen().expect("SEEN");
        seen.iter()
            .any(|m| m == "session_start_payload")
            .then_some(())
    });
    wrapper
}

fn connected(socket: &Path) -> (FakeDaemon, WrapperProcess) {
    connected_with(socket, &[])
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

/// The position of the first event called `name` from position `from` on
/// that `matches`, once it has been logged.
fn next_event(
    w: &WrapperProcess,
    name: &str,
    from: usize,
    matches: impl Fn(&Value) -> bool,
) -> usize {
    eventually(&format!("{name} after #{from}"), || {
        events(w)
            .iter()
            .enumerate()
            .skip(from)
            .find(|(_, e)| e["event"] == name && matches(e))
            .map(|(i, _)| i)
    })
}

/// Dials logged from position `from` up to (not including) `to`.
fn dials_between(w: &WrapperProcess, from: usize, to: usize) -> usize {
    events(w)
        .iter()
        .take(to)
        .skip(from)
        .filter(|e| e["event"] == "connect_attempt")
        .count()
}

/// Dials logged from position `from` on.
fn dials_since(w: &WrapperProcess, from: usize) -> usize {
    dials_between(w, from, usize::MAX)
}

/// Waits for an `endpoint_watched` event, from position `from` on, whose
/// one directory is `dir`.
fn watched(w: &WrapperProcess, dir: &Path, from: usize) -> usize {
    let expected = format!("{:?}", vec![dir.to_path_buf()]);
    next_event(w, "endpoint_watched", from, |e| {
        e["directories"] == *expected
    })
}

/// Brings the daemon back and checks that the dial that reconnects is the
/// one its appearance brought, and that nothing was dialled between `from`
/// and that appearance.
fn back_with_no_dial_since(daemon: &FakeDaemon, w: &mut WrapperProcess, from: usize) {
    daemon.up().expect("up");
    let appeared = next_event(w, "endpoint_appeared", from, |_| true);
    next_event(w, "connected", appeared, |e| e["reconnect"] == true);
    assert_eq!(
        dials_between(w, from, appeared),
        0,
        "no dial between the fault and the daemon's return"
    );
    assert_eq!(ok_method(&topology(w)), "topology");
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
    let before_up = events(&w).len();
    daemon.up().expect("up");
    let r = w.wait_response(&json!("waits"), REPLY).expect("answered");
    assert_eq!(ok_method(&r), "topology");
    let appeared = next_event(&w, "endpoint_appeared", before_up, |_| true);
    let reconnected = next_event(&w, "connected", before_up, |e| e["reconnect"] == true);
    assert!(
        appeared > lost && appeared < reconnected,
        "the appearance brought the dial"
    );
    assert_eq!(
        dials_between(&w, appeared, reconnected),
        1,
        "one dial after the appearance"
    );
    finish(w);
}

/// Between the fake daemon's bind and its listen in `listen-after`:
/// longer than the dial an appearance brings takes to come (a few
/// milliseconds), shorter than the quick retries of a refusal after an
/// appearance last (126 ms: 2 ms doubled six times).
#[cfg(unix)]
const LISTEN_GAP: Duration = Duration::from_millis(100);

// A dial between bind and listen is refused at once on Unix; Windows
// retries a refused TCP connect for about two seconds before failing it.
#[cfg(unix)]
#[test]
fn a_call_waiting_through_an_outage_is_answered_when_the_daemon_binds_then_listens() {
    let dir = short_tempdir().expect("tempdir");
    let (daemon, mut w) = connected(&dir.path().join("d.sock"));
    daemon.down().expect("down");
    nth_event(&w, "endpoint_watched", 1);
    send_call(&mut w, "waits", "topology", json!({}));
    nth_event(&w, "connection_lost", 1);
    eventually("the call's own dial failed", || {
        (events_named(&w, "connect_failed").len() >= 2).then_some(())
    });
    let before_up = events(&w).len();
    // The socket appears at the bind; a dial before the listen is refused.
    daemon
        .up_in(StartupOrder::ListenAfter { gap: LISTEN_GAP })
        .expect("up: bound, then listening");
    let r = w.wait_response(&json!("waits"), REPLY).expect("answered");
    assert_eq!(ok_method(&r), "topology");

    let appeared = next_event(&w, "endpoint_appeared", before_up, |_| true);
    let reconnected = next_event(&w, "connected", appeared, |e| e["reconnect"] == true);
    let log = events(&w);
    let span = &log[appeared..reconnected];
    // The dials the appearance brought, and how each ended.
    let dials: Vec<&Value> = span
        .iter()
        .filter(|e| e["event"] == "connect_attempt")
        .collect();
    let failed_dial = |dial: &Value| {
        span.iter()
            .find(|e| e["event"] == "connect_failed" && e["conn"] == dial["conn"])
    };
    let (last, refused) = dials.split_last().expect("the appearance brought a dial");
    assert_eq!(
        log[reconnected]["conn"], last["conn"],
        "the last dial connected"
    );
    assert!(
        !refused.is_empty(),
        "the first dial came after the listen: the bind-then-listen gap was not exercised ({} ms)",
        LISTEN_GAP.as_millis()
    );
    let failures = failed_dial(refused[0]).expect("refused")["failures"].clone();
    for (n, dial) in refused.iter().enumerate() {
        let failed = failed_dial(dial).expect("each dial before the last failed");
        let pause = REFUSED_PAUSE * 2u32.pow(n as u32);
        assert_eq!(
            (&failed["failures"], &failed["retry_in_ms"]),
            (&failures, &json!(pause.as_millis() as u64)),
            "refused after the appearance: tried again {} ms later, not counted as a failure: {failed}",
            pause.as_millis()
        );
    }
    assert!(
        refused.len() <= REFUSED_RETRIES as usize,
        "at most {REFUSED_RETRIES} quick retries: {refused:?}"
    );
    finish(w);
}

/// Between the steps of 3.3.0's start-up order on TCP: long enough for
/// the watch to look at each step (it looks within milliseconds of a
/// write).
#[cfg(unix)]
const TOKEN_THEN_PORT_PAUSE: Duration = Duration::from_millis(200);

// Holds the stale port with a socket bound through nix, and relies on a
// refused dial failing at once (Windows retries it for about two seconds).
#[cfg(unix)]
#[test]
fn on_tcp_in_the_daemons_own_order_only_the_new_port_dials_and_once() {
    use nix::sys::socket::{
        AddressFamily, SockFlag, SockType, SockaddrIn, bind, getsockname, socket,
    };
    let dir = short_tempdir().expect("tempdir");
    let base = dir.path().join("d.sock");
    let daemon = FakeDaemon::spawn_on(&devkit::bins::fake_daemon_bin(), &base, Transport::Tcp)
        .expect("fake daemon on TCP");
    // The port from the port file beside the socket path, as on Windows.
    let mut w = wrapper_for(&daemon, &base, &[("IAI_DAEMON_TRANSPORT", "tcp")]);
    daemon.down().expect("down");
    let quiet = nth_event(&w, "endpoint_awaited", 1);

    // The previous run's port file, left behind as 3.3.0 leaves it,
    // naming a port bound where nothing listens: a dial there is refused.
    let stale = socket(
        AddressFamily::Inet,
        SockType::Stream,
        SockFlag::empty(),
        None,
    )
    .expect("socket");
    let fd = std::os::fd::AsRawFd::as_raw_fd(&stale);
    bind(fd, &SockaddrIn::new(127, 0, 0, 1, 0)).expect("bind");
    let stale_port = getsockname::<SockaddrIn>(fd).expect("address").port();
    let written = events(&w).len();
    std::fs::write(
        TcpEndpointFiles::beside(&base).port,
        format!("{stale_port}\n"),
    )
    .expect("the stale port file");
    let seen_stale = next_event(&w, "endpoint_looked", written, |e| e["ready"] == false);

    daemon
        .up_in(StartupOrder::TokenThenPort {
            pause: TOKEN_THEN_PORT_PAUSE,
        })
        .expect("up in 3.3.0's order");
    let appeared = next_event(&w, "endpoint_appeared", seen_stale, |_| true);
    assert!(
        events(&w)[seen_stale..appeared]
            .iter()
            .any(|e| e["event"] == "endpoint_looked" && e["ready"] == true && e["news"] == false),
        "the token written beside the stale port was looked at, and was no news"
    );
    let reconnected = next_event(&w, "connected", appeared, |e| e["reconnect"] == true);
    let log = events(&w);
    assert_eq!(
        dials_between(&w, quiet, appeared),
        0,
        "no dial before the new port was written"
    );
    assert_eq!(
        dials_between(&w, appeared, reconnected),
        1,
        "one dial, when the new port was written"
    );
    assert!(
        log[quiet..reconnected]
            .iter()
            .all(|e| e["event"] != "connect_failed"),
        "no dial failed: the stale port was never dialled"
    );
    assert_eq!(ok_method(&topology(&mut w)), "topology");
    drop(stale);
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
    assert!(back_down > up_there);
    back_with_no_dial_since(&daemon, &mut w, quiet);
    finish(w);
}

#[test]
fn a_regular_file_at_the_socket_path_dials_nothing() {
    let dir = short_tempdir().expect("tempdir");
    let socket = dir.path().join("d.sock");
    let (daemon, mut w) = connected(&socket);
    daemon.down().expect("down");
    let quiet = nth_event(&w, "endpoint_awaited", 1);
    std::fs::write(&socket, b"not a socket\n").expect("write a regular file");
    next_event(&w, "endpoint_looked", quiet, |e| e["ready"] == false);
    std::fs::remove_file(&socket).expect("rm");
    back_with_no_dial_since(&daemon, &mut w, quiet);
    finish(w);
}

// Binds a Unix datagram socket at the path.
#[cfg(unix)]
#[test]
fn a_socket_of_the_wrong_kind_costs_one_attempt() {
    let dir = short_tempdir().expect("tempdir");
    let path = dir.path().join("d.sock");
    let (daemon, mut w) = connected(&path);
    daemon.down().expect("down");
    let quiet = nth_event(&w, "endpoint_awaited", 1);
    // A datagram socket: it exists, and a stream connect to it fails (not
    // refused: nothing will ever listen there).
    let deaf = std::os::unix::net::UnixDatagram::bind(&path).expect("bind");
    let appeared = next_event(&w, "endpoint_appeared", quiet, |_| true);
    let quiet_again = next_event(&w, "endpoint_awaited", appeared, |_| true);
    assert_eq!(dials_between(&w, quiet, quiet_again), 1);
    drop(deaf);
    std::fs::remove_file(&path).expect("rm");
    back_with_no_dial_since(&daemon, &mut w, quiet_again);
    finish(w);
}

// Binds a Unix stream socket that never listens.
#[cfg(unix)]
#[test]
fn a_socket_bound_that_never_listens_costs_one_attempt_and_its_quick_retries() {
    use nix::sys::socket::{AddressFamily, SockFlag, SockType, UnixAddr, bind, socket};
    let dir = short_tempdir().expect("tempdir");
    let path = dir.path().join("d.sock");
    let (daemon, mut w) = connected(&path);
    daemon.down().expect("down");
    let quiet = nth_event(&w, "endpoint_awaited", 1);
    // Bound, never listened on: every connect is refused, as in the
    // moment between a daemon's bind and its listen.
    let bound = socket(
        AddressFamily::Unix,
        SockType::Stream,
        SockFlag::empty(),
        None,
    )
    .expect("socket");
    bind(
        std::os::fd::AsRawFd::as_raw_fd(&bound),
        &UnixAddr::new(&path).expect("address"),
    )
    .expect("bind");
    let appeared = next_event(&w, "endpoint_appeared", quiet, |_| true);
    let quiet_again = next_event(&w, "endpoint_awaited", appeared, |_| true);
    assert_eq!(
        dials_between(&w, quiet, quiet_again),
        1 + REFUSED_RETRIES as usize,
        "the attempt the appearance brought, and its retries while refused"
    );
    drop(bound);
    std::fs::remove_file(&path).expect("rm");
    back_with_no_dial_since(&daemon, &mut w, quiet_again);
    finish(w);
}

#[test]
fn writes_among_the_many_files_of_the_daemons_store_dial_nothing() {
    // The socket's directory as the real ~/.iai-mcp is: many files and
    // directories, written to while the daemon is away.
    let dir = short_tempdir().expect("tempdir");
    let store = dir.path().join("store");
    for n in 0..20 {
        let sub = store.join(format!("sub{n}"));
        std::fs::create_dir_all(&sub).expect("mkdir");
        for m in 0..10 {
            std::fs::write(sub.join(format!("f{m}")), "x").expect("write");
        }
        std::fs::write(store.join(format!("file{n}.json")), "{}").expect("write");
    }
    let (daemon, mut w) = connected(&store.join(".daemon.sock"));
    daemon.down().expect("down");
    let quiet = nth_event(&w, "endpoint_awaited", 1);
    std::fs::write(store.join("file3.json"), "{\"changed\": 1}").expect("write");
    std::fs::write(store.join("new.json"), "{}").expect("write");
    std::fs::create_dir(store.join("newdir")).expect("mkdir");
    std::fs::write(store.join("sub4/f2"), "y").expect("write");
    std::fs::remove_file(store.join("file5.json")).expect("rm");
    // Every write was looked at, none was news.
    let mut from = quiet;
    for _ in 0..3 {
        from = next_event(&w, "endpoint_looked", from, |e| e["news"] == false) + 1;
    }
    back_with_no_dial_since(&daemon, &mut w, quiet);
    finish(w);
}

#[test]
fn the_floor_looks_while_away_and_dials_nothing() {
    let dir = short_tempdir().expect("tempdir");
    let (daemon, mut w) = connected_with(
        &dir.path().join("d.sock"),
        &[("IAI_MCP_ENDPOINT_FLOOR_MS", "100")],
    );
    daemon.down().expect("down");
    let quiet = nth_event(&w, "endpoint_awaited", 1);
    let mut from = quiet;
    for _ in 0..3 {
        from = next_event(&w, "endpoint_looked", from, |e| e["why"] == "floor") + 1;
    }
    back_with_no_dial_since(&daemon, &mut w, quiet);
    finish(w);
}

#[test]
fn with_the_watch_off_the_wrapper_dials_on_its_backoff_and_says_so() {
    let dir = short_tempdir().expect("tempdir");
    let (daemon, mut w) = connected_with(
        &dir.path().join("d.sock"),
        &[("IAI_MCP_ENDPOINT_WATCH", "off")],
    );
    daemon.down().expect("down");
    let off = nth_event(&w, "endpoint_watch_unavailable", 1);
    let said = &events(&w)[off];
    assert_eq!(said["error"], "the endpoint watch is turned off", "{said}");
    // No watch: it dials on the backoff without a call, and never awaits.
    eventually("dials on the backoff", || {
        (dials_since(&w, off) >= 4).then_some(())
    });
    assert!(events_named(&w, "endpoint_watched").is_empty());
    assert!(events_named(&w, "endpoint_awaited").is_empty());
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
    let files = TcpEndpointFiles::beside(&base);
    let port_file = files.port.clone();
    let endpoint = Endpoint::Tcp {
        host: "127.0.0.1".into(),
        port: Port::File(port_file.clone()),
        token: files.token,
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
                reporter: report::unlogged,
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
