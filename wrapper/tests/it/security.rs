//! The claims of SECURITY.md that a test can check, through the real
//! binaries.

use std::os::unix::fs::PermissionsExt;

use crate::common::{REPLY, eventually, heartbeats, lonely, pair};
use serde_json::json;

#[test]
fn tool_arguments_and_results_never_reach_the_logs() {
    let secret = "correct horse battery staple 4f1e9a";
    for format in ["text", "json"] {
        let mut p = pair(&[("IAI_MCP_LOG", "trace"), ("IAI_MCP_LOG_FORMAT", format)]);
        p.wrapper.initialize("2025-06-18").expect("initialize");
        let r = p
            .wrapper
            .call_tool("memory_capture", json!({ "text": secret }), REPLY)
            .expect("call");
        assert!(r["result"].get("isError").is_none(), "{r}");
        // Unmatched and duplicate daemon replies are logged too: make some.
        p.daemon.stray().expect("stray");
        p.daemon.duplicate().expect("duplicate");
        p.wrapper
            .call_tool("memory_capture", json!({ "text": secret }), REPLY)
            .expect("call");
        p.wrapper.close_stdin();
        p.wrapper.wait_exit(REPLY).expect("exit");
        let log = p.wrapper.stderr_text();
        assert!(!log.is_empty(), "trace logging produced nothing ({format})");
        assert!(
            !log.contains("battery staple"),
            "secret in the {format} log:\n{log}"
        );
    }
}

#[test]
fn lifecycle_files_are_private_and_their_directory_too() {
    let l = lonely(&[]);
    let state = l.wrapper.state_dir().to_path_buf();
    let wake = state.join("wake.signal");
    eventually("wake.signal written", || wake.exists().then_some(()));
    let files = eventually("heartbeat written", || {
        let files = heartbeats(&state);
        (!files.is_empty()).then_some(files)
    });
    for file in files.iter().chain([&wake]) {
        let mode = std::fs::metadata(file).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{}", file.display());
    }
    let dir_mode = std::fs::metadata(state.join("wrappers"))
        .expect("meta")
        .permissions()
        .mode();
    assert_eq!(dir_mode & 0o077, 0, "wrappers/ is private");
}

// Counts the wrapper's children through /proc: Linux only.
#[cfg(target_os = "linux")]
#[test]
fn with_the_daemon_up_and_the_doctor_off_no_process_is_started_and_the_socket_is_untouched() {
    let mut p = pair(&[("IAI_MCP_DOCTOR", "off")]);
    let socket = p.daemon.socket_path().to_path_buf();
    let before = std::fs::metadata(&socket)
        .expect("socket")
        .permissions()
        .mode();
    p.wrapper.initialize("2025-06-18").expect("initialize");
    p.wrapper
        .call_tool("topology", json!({}), REPLY)
        .expect("call");
    p.daemon.drop_connections().expect("drop");
    p.wrapper
        .call_tool("topology", json!({}), REPLY)
        .expect("call after drop");
    let pid = p.wrapper.pid();
    let children: String = std::fs::read_dir(format!("/proc/{pid}/task"))
        .expect("tasks")
        .filter_map(Result::ok)
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .collect();
    assert!(children.trim().is_empty(), "child processes: {children}");
    let after = std::fs::metadata(&socket)
        .expect("socket")
        .permissions()
        .mode();
    assert_eq!(before, after);
}

#[test]
fn a_socket_served_by_another_user_is_refused_naming_both_uids() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};

    if !nix::unistd::geteuid().is_root() {
        println!("skipped: serving a socket as another user needs root");
        return;
    }
    let dir = devkit::tempdir::short_tempdir().expect("tempdir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let socket = devkit::tempdir::socket_path_in(dir.path());
    let mut daemon = devkit::process::ChildGuard::spawn(
        Command::new(devkit::bins::fake_daemon_bin())
            .arg(&socket)
            .uid(65534)
            .gid(65534)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null()),
    )
    .expect("the daemon starts as nobody");
    let stdout = daemon.child_mut().stdout.take().expect("piped");
    let mut first = String::new();
    BufReader::new(stdout).read_line(&mut first).expect("read");
    assert_eq!(first.trim(), "BOUND", "the daemon listens");

    let output = harness::WrapperCommand::this_workspace()
        .std_command()
        .arg("--check")
        .arg("--socket-path")
        .arg(&socket)
        .env("HOME", dir.path())
        .stdin(Stdio::null())
        .output()
        .expect("--check runs");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(!output.status.success(), "{text}");
    assert!(
        text.contains("is served by uid 65534, not by this user (uid 0)"),
        "{text}"
    );
}
