//! The daemon over loopback TCP with a token, through the real binaries:
//! the fake daemon listens as iai-mcp does where there are no Unix sockets
//! (ephemeral port, fresh token at every start), and everything the bridge
//! guarantees on a Unix socket holds there too.

use devkit::tempdir::{short_tempdir, socket_path_in};
use harness::scenario::Setup;
use harness::{
    BridgeMode, DaemonEndpoint, DownUpConfig, FakeDaemon, Judged, RaceConfig, RaceOutcome,
    StormConfig, Transport, WrapperOptions, WrapperProcess, run_down_up, run_race, run_storm,
};

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common;
use crate::common::{error_text, ok_method, topology, wrapper_cmd};

fn tcp_daemon(dir: &std::path::Path) -> FakeDaemon {
    FakeDaemon::spawn_on(
        &devkit::bins::fake_daemon_bin(),
        &socket_path_in(dir),
        Transport::Tcp,
    )
    .expect("fake daemon on TCP")
}

#[test]
fn the_race_over_tcp_fails_before_the_fix_and_passes_after_it() {
    for (mode, expected) in [
        (BridgeMode::Fixed, RaceOutcome::Ok),
        (BridgeMode::Prefix, RaceOutcome::DaemonUnreachable),
    ] {
        let report = run_race(
            &wrapper_cmd(),
            &RaceConfig {
                setup: Setup {
                    mode: Some(mode),
                    transport: Transport::Tcp,
                    ..Setup::default()
                },
                ..RaceConfig::default()
            },
        )
        .expect("scenario ran");
        assert!(report.endpoint.starts_with("tcp://"), "{}", report.endpoint);
        assert_eq!(report.outcome, expected, "{mode}: {report:?}");
        if mode == BridgeMode::Fixed {
            assert_eq!(report.conns_after, Some(1), "{report:?}");
        }
        assert!(report.defects.is_empty(), "{:?}", report.defects);
    }
}

#[test]
fn a_drop_storm_over_tcp_loses_nothing_and_repeats_no_write() {
    let report = run_storm(
        &wrapper_cmd(),
        &StormConfig {
            setup: Setup {
                mode: Some(BridgeMode::Fixed),
                transport: Transport::Tcp,
                ..Setup::default()
            },
            ..StormConfig::default()
        },
    )
    .expect("the storm runs");
    assert_eq!(report.unanswered, 0, "{report}");
    assert_eq!(report.answered_more_than_once, 0, "{report}");
    assert_eq!(report.dup_writes, 0, "{report}");
    assert_eq!(report.reads_failed, 0, "{report}");
    assert_eq!(report.conns_after, 1, "{report}");
    assert!(report.passed(), "{report}");
}

#[test]
fn down_and_up_over_tcp_reads_the_new_token_and_recovers() {
    let cfg = DownUpConfig {
        setup: Setup {
            mode: Some(BridgeMode::Fixed),
            transport: Transport::Tcp,
            ..Setup::default()
        },
        rate_window: Duration::from_millis(500),
        ..DownUpConfig::default()
    };
    let report = run_down_up(&wrapper_cmd(), &cfg).expect("down-up runs");
    for call in &report.down_calls {
        let text = call.outcome.error_text().expect("a failure has a text");
        assert!(text.contains("tcp://127.0.0.1:"), "{text}");
        assert!(text.contains("IAI_DAEMON_TCP_PORT"), "{text}");
    }
    // UP wrote a fresh token: recovering proves the wrapper read it anew.
    assert!(report.up_to_success.is_some(), "{report}");
    assert_eq!(report.conns_after, 1, "{report}");
    assert!(report.passed(), "{report}");
}

#[test]
fn a_missing_token_or_one_open_to_others_is_reported_naming_the_file() {
    let dir = short_tempdir().expect("tempdir");
    let daemon = tcp_daemon(dir.path());
    let DaemonEndpoint::Tcp { port, .. } = daemon.endpoint().clone() else {
        panic!("a TCP daemon");
    };

    let with_token = |token_path: PathBuf| {
        let opts = WrapperOptions::at(DaemonEndpoint::Tcp { port, token_path })
            .env("IAI_MCP_CONNECT_WAIT_MS", "300");
        let mut w = WrapperProcess::spawn(&wrapper_cmd(), &opts).expect("spawn");
        w.initialize("2025-06-18").expect("initialize");
        w
    };

    let missing = dir.path().join("no-such.token");
    let mut w = with_token(missing.clone());
    let reply = topology(&mut w);
    let text = error_text(&reply);
    assert!(text.contains("daemon_unreachable"), "{text}");
    assert!(
        text.contains(&missing.display().to_string()) && text.contains("missing"),
        "{text}"
    );
    drop(w);

    let wrong = dir.path().join("wrong.token");
    std::fs::write(&wrong, "not-the-token\n").expect("write");
    // Open to others first: refused before anything is dialled.
    let mut w = with_token(wrong.clone());
    let reply = topology(&mut w);
    let text = error_text(&reply);
    assert!(text.contains("open to other users"), "{text}");
    drop(w);
    assert_eq!(daemon.stats().expect("stats").refused, 0);
}

#[test]
fn a_wrong_token_fails_the_call_at_its_connect_wait_naming_the_file_and_the_right_one_recovers() {
    let dir = short_tempdir().expect("tempdir");
    let daemon = tcp_daemon(dir.path());
    let DaemonEndpoint::Tcp { port, token_path } = daemon.endpoint().clone() else {
        panic!("a TCP daemon");
    };
    let wrong = dir.path().join("wrong.token");
    std::fs::write(&wrong, "not-the-token\n").expect("write");
    make_private(&wrong);
    let opts = WrapperOptions::at(DaemonEndpoint::Tcp {
        port,
        token_path: wrong.clone(),
    })
    .env("IAI_MCP_CONNECT_WAIT_MS", "1500")
    .env(common::JSON_LOG.0, common::JSON_LOG.1);
    let mut w = WrapperProcess::spawn(&wrapper_cmd(), &opts).expect("spawn");
    w.initialize("2025-06-18").expect("initialize");

    // The daemon closes each connection at once; each is a failed connect
    // naming the token file, and the call fails at its connect wait (not
    // at its call deadline) with that reason.
    let reply = topology(&mut w);
    let text = error_text(&reply);
    let reason = format!("token refused, {}", wrong.display());
    assert!(
        text.starts_with("error: daemon_unreachable: no connection to the iai-mcp daemon"),
        "{text}"
    );
    assert!(text.contains("within 1.5 s"), "{text}");
    assert!(text.contains(&reason), "{text}");
    // Logged before the reply, but stderr is read on its own.
    let failures = common::eventually("a connect_failed event", || {
        let failures = common::events_named(&w, "connect_failed");
        (!failures.is_empty()).then_some(failures)
    });
    for failure in &failures {
        assert_eq!(failure["error"], reason.as_str(), "{failure}");
        // The backoff applies to every refusal: no spin.
        assert!(
            failure["retry_in_ms"].as_u64().is_some_and(|ms| ms > 0),
            "{failure}"
        );
    }
    assert!(common::events_named(&w, "connection_lost").is_empty());
    let stats = daemon.stats().expect("stats");
    assert!(stats.refused >= 1, "{stats:?}");
    assert_eq!(stats.accepted, 0, "{stats:?}");

    // `--check` says so too.
    let check = common::wrapper_process()
        .arg("--check")
        .env("HOME", dir.path())
        .env("IAI_DAEMON_TCP_PORT", port.to_string())
        .env("IAI_DAEMON_TOKEN_PATH", &wrong)
        .env("IAI_MCP_DOCTOR", "off")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("--check");
    let report = String::from_utf8_lossy(&check.stdout);
    assert_eq!(check.status.code(), Some(1), "{report}");
    assert!(
        report.contains(&format!("closed the connection at once ({reason})")),
        "{report}"
    );

    // The wrapper keeps answering, and reads the token file anew at each
    // connect: the right token gets the next call through.
    assert!(
        w.request("tools/list", serde_json::json!({}), common::REPLY)
            .is_ok()
    );
    std::fs::copy(&token_path, &wrong).expect("the right token");
    assert_eq!(ok_method(&topology(&mut w)), "topology");
    assert!(daemon.stats().expect("stats").accepted >= 1);
    w.close_stdin();
    assert!(w.wait_exit(common::REPLY).expect("exit").success());
}

#[test]
fn the_token_never_reaches_the_logs() {
    let dir = short_tempdir().expect("tempdir");
    let daemon = tcp_daemon(dir.path());
    let DaemonEndpoint::Tcp { token_path, .. } = daemon.endpoint().clone() else {
        panic!("a TCP daemon");
    };
    let token = std::fs::read_to_string(&token_path).expect("token");
    let opts = WrapperOptions::for_daemon(&daemon).env("IAI_MCP_LOG", "trace");
    let mut w = WrapperProcess::spawn(&wrapper_cmd(), &opts).expect("spawn");
    w.initialize("2025-06-18").expect("initialize");
    assert_eq!(ok_method(&topology(&mut w)), "topology");
    daemon.drop_connections().expect("drop");
    assert_eq!(ok_method(&topology(&mut w)), "topology");
    w.close_stdin();
    w.wait_exit(common::REPLY).expect("exit");
    let log = w.stderr_text();
    assert!(!log.is_empty(), "trace logging produced nothing");
    assert!(!log.contains(token.trim()), "token in the log:\n{log}");
}

/// A wrapper dialling the daemon as on Windows: port and token read from
/// the files beside `socket_path` (`IAI_DAEMON_TRANSPORT=tcp` applies
/// Windows' rule on any platform).
fn windows_style_wrapper(socket_path: &std::path::Path) -> WrapperProcess {
    let opts = WrapperOptions::new(socket_path)
        .env("IAI_DAEMON_TRANSPORT", "tcp")
        .env("IAI_MCP_CONNECT_WAIT_MS", "1000")
        .env("IAI_MCP_BACKOFF_MAX_MS", "100");
    let mut w = WrapperProcess::spawn(&wrapper_cmd(), &opts).expect("spawn");
    w.initialize("2025-06-18").expect("initialize");
    w
}

/// One `topology` call that fails: its text, checked to be
/// daemon_unreachable and to name `file`.
fn unreachable_naming(w: &mut WrapperProcess, file: &std::path::Path) -> String {
    let reply = topology(w);
    let text = error_text(&reply).to_owned();
    assert!(text.contains("daemon_unreachable"), "{text}");
    assert!(text.contains(&file.display().to_string()), "{text}");
    text
}

#[test]
fn bad_port_and_token_files_beside_the_socket_path_are_named_and_the_wrapper_keeps_answering() {
    let dir = short_tempdir().expect("tempdir");
    let daemon = tcp_daemon(dir.path());
    let DaemonEndpoint::Tcp { port, token_path } = daemon.endpoint().clone() else {
        panic!("a TCP daemon");
    };
    // The wrapper's files are its own copies, so each can be broken.
    let socket = dir.path().join("w.sock");
    let port_file = dir.path().join("w.sock.port");
    let token_file = dir.path().join("w.sock.token");
    let mut w = windows_style_wrapper(&socket);

    let text = unreachable_naming(&mut w, &port_file);
    assert!(text.contains("No such file"), "missing: {text}");

    std::fs::write(&port_file, "not a port\n").expect("write");
    let text = unreachable_naming(&mut w, &port_file);
    assert!(text.contains("is not a port number"), "garbage: {text}");

    std::fs::write(&port_file, "70000\n").expect("write");
    let text = unreachable_naming(&mut w, &port_file);
    assert!(
        text.contains("is not a port number"),
        "out of range: {text}"
    );

    // A port file that cannot be read (a directory in its place).
    std::fs::remove_file(&port_file).expect("remove");
    std::fs::create_dir(&port_file).expect("mkdir");
    let text = unreachable_naming(&mut w, &port_file);
    assert!(text.contains("no daemon port in"), "unreadable: {text}");
    std::fs::remove_dir(&port_file).expect("rmdir");

    std::fs::write(&port_file, format!("{port}\n")).expect("write");
    let text = unreachable_naming(&mut w, &token_file);
    assert!(text.contains("missing"), "no token: {text}");
    assert_eq!(daemon.stats().expect("stats").accepted, 0);

    std::fs::copy(&token_path, &token_file).expect("copy the token");
    make_private(&token_file);
    assert_eq!(ok_method(&topology(&mut w)), "topology");
    let stats = daemon.stats().expect("stats");
    assert!(stats.accepted >= 1, "{stats:?}");
    assert_eq!(stats.refused, 0, "{stats:?}");
    w.close_stdin();
    assert!(w.wait_exit(common::REPLY).expect("exit").success());
}

#[test]
fn the_daemons_own_files_beside_the_socket_path_reach_it_across_a_drop() {
    let dir = short_tempdir().expect("tempdir");
    let socket = socket_path_in(dir.path());
    let daemon = FakeDaemon::spawn_on(&devkit::bins::fake_daemon_bin(), &socket, Transport::Tcp)
        .expect("fake daemon on TCP");
    let mut w = windows_style_wrapper(&socket);
    assert_eq!(ok_method(&topology(&mut w)), "topology");
    daemon.drop_connections().expect("drop");
    assert_eq!(ok_method(&topology(&mut w)), "topology");
    let stats = daemon.stats().expect("stats");
    assert_eq!(
        stats.refused, 0,
        "the token beside the path was sent: {stats:?}"
    );
    assert!(stats.requests >= 2, "both calls reached it: {stats:?}");
}

/// Gives `path` mode 0600, as the wrapper requires of a token file on Unix;
/// Windows has no mode bits (the file is private by its directory).
fn make_private(path: &Path) {
    #[cfg(unix)]
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .expect("chmod");
    #[cfg(not(unix))]
    let _ = path;
}
