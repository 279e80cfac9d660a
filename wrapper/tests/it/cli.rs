//! Command-line behaviour of the wrapper binary: help, version, invalid
//! settings (exit 2 before anything else), and the `--check` report.

use devkit::tempdir::short_tempdir;
use harness::FakeDaemon;

use crate::common;
use assert_cmd::Command;
use predicates::prelude::*;

fn wrapper() -> Command {
    let mut cmd = Command::from_std(common::wrapper_process());
    for var in [
        "IAI_DAEMON_SOCKET_PATH",
        "IAI_MCP_BRIDGE_MODE",
        "IAI_MCP_RECONNECT_TEST_DELAY_MS",
        "IAI_MCP_STATE_DIR",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

#[test]
fn help_documents_every_setting_and_the_prefix_mode_warning() {
    let assert = wrapper().arg("--help").assert().success();
    let out = String::from_utf8_lossy(&assert.get_output().stdout).to_string();
    for needle in [
        "IAI_DAEMON_SOCKET_PATH",
        "IAI_MCP_RECONNECT_TEST_DELAY_MS",
        "IAI_MCP_BRIDGE_MODE",
        "IAI_MCP_STATE_DIR",
        "IAI_MCP_CONNECT_WAIT_MS",
        "IAI_MCP_CALL_TIMEOUT_MS",
        "--check",
        "never use it in production",
    ] {
        assert!(out.contains(needle), "--help lacks {needle}:\n{out}");
    }
}

#[test]
fn version_prints_the_package_version() {
    wrapper()
        .arg("--version")
        .assert()
        .success()
        .stdout(predicate::str::contains(env!("CARGO_PKG_VERSION")));
}

#[test]
fn invalid_settings_exit_2_with_a_clear_message_and_no_stdout() {
    let cases: [(&str, &str, &str); 4] = [
        ("IAI_MCP_BRIDGE_MODE", "sometimes", "sometimes"),
        ("IAI_MCP_RECONNECT_TEST_DELAY_MS", "soon", "soon"),
        ("IAI_MCP_BACKOFF_INITIAL_MS", "0", "backoff"),
        (
            "IAI_DAEMON_SOCKET_PATH",
            "/tmp/this/path/is/far/too/long/for/a/unix/socket/address/because/sun_path/holds/only/about/a/hundred/bytes.sock",
            "limited to",
        ),
    ];
    for (var, value, says) in cases {
        wrapper()
            .env("HOME", "/tmp")
            .env(var, value)
            .write_stdin("")
            .assert()
            .code(2)
            .stdout(predicate::str::is_empty())
            .stderr(predicate::str::contains(says));
    }
}

#[test]
fn empty_environment_values_mean_unset() {
    let dir = short_tempdir().expect("tempdir");
    let mut cmd = wrapper();
    cmd.env("HOME", dir.path());
    for var in [
        "IAI_DAEMON_SOCKET_PATH",
        "IAI_MCP_BRIDGE_MODE",
        "IAI_MCP_RECONNECT_TEST_DELAY_MS",
        "IAI_MCP_STATE_DIR",
        "IAI_MCP_STORE",
        "IAI_MCP_PYTHON",
        "IAI_MCP_CONNECT_WAIT_MS",
        "IAI_MCP_LOG",
    ] {
        cmd.env(var, "");
    }
    cmd.write_stdin("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n")
        .assert()
        .success()
        .stdout(predicate::str::contains("\"result\":{}"));
}

#[test]
fn check_reports_an_absent_daemon_and_exits_1() {
    let dir = short_tempdir().expect("tempdir");
    wrapper()
        .arg("--check")
        .env("HOME", dir.path())
        .env("IAI_DAEMON_SOCKET_PATH", dir.path().join("none.sock"))
        .env("IAI_MCP_CONNECT_WAIT_MS", "2500")
        .args(["--call-timeout-ms", "9000"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("not reachable"))
        .stdout(predicate::str::contains(
            "--connect-wait-ms 2500 (from IAI_MCP_CONNECT_WAIT_MS)",
        ))
        .stdout(predicate::str::contains(
            "--call-timeout-ms 9000 (from the command line)",
        ))
        .stdout(predicate::str::contains("--backoff-max-ms 2000 (default)"))
        .stdout(predicate::str::contains("memory_recall"))
        .stdout(predicate::str::contains("2026-07-28"))
        .stdout(predicate::str::contains("heartbeat"));
}

#[test]
fn check_reports_a_live_daemon_and_exits_0() {
    let dir = short_tempdir().expect("tempdir");
    let socket = dir.path().join("d.sock");
    let _daemon = FakeDaemon::spawn(&socket).expect("daemon");
    wrapper()
        .arg("--check")
        .env("HOME", dir.path())
        .env("IAI_DAEMON_SOCKET_PATH", &socket)
        .assert()
        .success()
        .stdout(predicate::str::contains("reachable, answers JSON-RPC"));
}
