//! The daemon's release, through the real binaries: the wrapper asks the
//! fake daemon (`--release`) which release it is on each connection,
//! warns once per release other than the one whose tools it serves (here
//! the built-in table's: no release is installed beside the test binary;
//! also across daemon restarts), stays quiet for that one, and `--check`
//! and `status` show both releases.

use devkit::tempdir::short_tempdir;
use harness::{FakeDaemon, Transport, WrapperOptions, WrapperProcess};

use std::path::{Path, PathBuf};

use crate::common;
use crate::common::{JSON_LOG, REPLY, events_named, eventually, wrapper_cmd};
use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

/// The release whose tools the wrapper serves here: the built-in table's.
const SERVED: &str = "3.3.0";

/// The start of the warning for a daemon of release `daemon`.
fn warning_for(daemon: &str) -> String {
    format!("the iai-mcp daemon is release {daemon}; the tools served are iai-mcp {SERVED}'s")
}

/// A fake daemon on `socket` reporting `options` (`--release X`,
/// `--no-release`, or nothing for the default).
fn daemon(socket: &Path, transport: Transport, options: &[&str]) -> FakeDaemon {
    let program = devkit::bins::try_fake_daemon_bin().expect("fake-daemon binary");
    FakeDaemon::spawn_with(&program, socket, transport, options).expect("spawn fake daemon")
}

fn wrapper(opts: WrapperOptions, env: &[(&str, &str)]) -> WrapperProcess {
    let opts = env.iter().fold(opts, |opts, (k, v)| opts.env(k, v));
    WrapperProcess::spawn(&wrapper_cmd(), &opts).expect("spawn wrapper")
}

/// Waits until the wrapper has logged `count` `daemon_release` events and
/// returns them all.
fn release_events(w: &WrapperProcess, count: usize) -> Vec<Value> {
    eventually(&format!("{count} daemon_release events"), || {
        let found = events_named(w, "daemon_release");
        (found.len() >= count).then_some(found)
    })
}

/// Ends the wrapper by closing its stdin and waits for it to exit 0, so
/// that its log is complete.
fn finish(w: &mut WrapperProcess) {
    w.close_stdin();
    assert_eq!(w.wait_exit(REPLY).expect("exit").code(), Some(0));
}

#[test]
fn another_release_is_warned_about_once_per_release_across_daemon_restarts() {
    let dir = short_tempdir().expect("tempdir");
    let socket: PathBuf = dir.path().join("d.sock");
    let first = daemon(&socket, Transport::native(), &["--release", "3.2.3"]);
    let mut w = wrapper(WrapperOptions::new(&socket), &[JSON_LOG]);

    let found = release_events(&w, 1);
    let warned = &found[0];
    assert_eq!(warned["level"], "WARN", "{warned}");
    assert_eq!(warned["daemon"], "3.2.3", "{warned}");
    assert_eq!(warned["served"], SERVED, "{warned}");
    let message = warned["message"].as_str().expect("message");
    assert!(message.starts_with(&warning_for("3.2.3")), "{message}");
    assert!(message.contains("docs/upgrading.md"), "{message}");

    // The daemon restarts as the same release: asked again, not warned
    // about again.
    drop(first);
    let second = daemon(&socket, Transport::native(), &["--release", "3.2.3"]);
    let found = release_events(&w, 2);
    assert_eq!(found[1]["level"], "INFO", "{}", found[1]);
    assert_eq!(found[1]["daemon"], "3.2.3", "{}", found[1]);

    // It restarts as yet another release (another self-update): that one
    // is warned about too.
    drop(second);
    let _third = daemon(&socket, Transport::native(), &["--release", "3.4.0"]);
    let found = release_events(&w, 3);
    assert_eq!(found[2]["level"], "WARN", "{}", found[2]);
    assert_eq!(found[2]["daemon"], "3.4.0", "{}", found[2]);

    finish(&mut w);
    let warnings: Vec<Value> = events_named(&w, "daemon_release")
        .into_iter()
        .filter(|e| e["level"] == "WARN")
        .collect();
    let named = |release: &str| warnings.iter().filter(|e| e["daemon"] == release).count();
    assert_eq!(
        (warnings.len(), named("3.2.3"), named("3.4.0")),
        (2, 1, 1),
        "{warnings:?}"
    );
}

#[test]
fn the_text_log_warns_once_in_words_naming_both_releases() {
    let dir = short_tempdir().expect("tempdir");
    let socket = dir.path().join("d.sock");
    let daemon = daemon(&socket, Transport::native(), &["--release", "3.2.3"]);
    let mut w = wrapper(WrapperOptions::new(&socket), &[("IAI_MCP_LOG", "info")]);
    let warning = warning_for("3.2.3");
    eventually("the warning in the log", || {
        w.stderr_text().contains(&warning).then_some(())
    });
    // A reconnect asks again; the answer is logged, the warning is not
    // repeated.
    daemon.drop_connections().expect("drop");
    eventually("the second answer in the log", || {
        w.stderr_text()
            .contains("the daemon is still release 3.2.3")
            .then_some(())
    });
    finish(&mut w);
    let text = w.stderr_text();
    assert_eq!(text.matches(&warning).count(), 1, "{text}");
    let line = text
        .lines()
        .find(|line| line.contains(&warning))
        .expect("the warning line");
    assert!(line.contains("WARN"), "{line}");
    assert!(
        line.contains(
            "tools the daemon lacks answer with an error, tools it has beyond them are not listed (restart the daemon from the release installed, or see docs/upgrading.md)"
        ),
        "{line}"
    );
    assert!(
        text.lines()
            .all(|line| serde_json::from_str::<Value>(line).is_err()),
        "{text}"
    );
}

#[test]
fn the_served_release_is_logged_as_info_and_never_warned_about() {
    let dir = short_tempdir().expect("tempdir");
    let socket = dir.path().join("d.sock");
    let daemon = daemon(&socket, Transport::native(), &[]);
    let mut w = wrapper(WrapperOptions::new(&socket), &[JSON_LOG]);
    let found = release_events(&w, 1);
    assert_eq!(found[0]["level"], "INFO", "{}", found[0]);
    assert_eq!(found[0]["daemon"], SERVED, "{}", found[0]);
    assert_eq!(found[0]["served"], SERVED, "{}", found[0]);
    daemon.drop_connections().expect("drop");
    release_events(&w, 2);
    finish(&mut w);
    let events = events_named(&w, "daemon_release");
    assert!(events.iter().all(|e| e["level"] == "INFO"), "{events:?}");
    assert!(
        !w.stderr_text().contains("the tools served are"),
        "{}",
        w.stderr_text()
    );
}

#[test]
fn a_daemon_that_names_no_release_is_a_debug_event_and_no_warning() {
    let dir = short_tempdir().expect("tempdir");
    let socket = dir.path().join("d.sock");
    let _daemon = daemon(&socket, Transport::native(), &["--no-release"]);
    let mut w = wrapper(
        WrapperOptions::new(&socket),
        &[JSON_LOG, ("IAI_MCP_LOG", "debug")],
    );
    let found = release_events(&w, 1);
    assert_eq!(found[0]["level"], "DEBUG", "{}", found[0]);
    assert!(found[0].get("daemon").is_none(), "{}", found[0]);
    assert_eq!(found[0]["served"], SERVED, "{}", found[0]);
    assert!(found[0]["reason"].is_string(), "{}", found[0]);
    finish(&mut w);
    assert!(
        events_named(&w, "daemon_release")
            .iter()
            .all(|e| e["level"] == "DEBUG")
    );
}

#[test]
fn a_daemon_too_busy_to_answer_at_first_answers_on_the_same_connection_later() {
    let dir = short_tempdir().expect("tempdir");
    let socket: PathBuf = dir.path().join("d.sock");
    let d = daemon(&socket, Transport::native(), &["--release", "3.2.3"]);
    // Nothing is answered: the status question waits on the connection.
    assert_eq!(d.command("HANG").expect("hang").trim(), "OK HANG");
    let mut w = wrapper(WrapperOptions::new(&socket), &[JSON_LOG]);
    // session_open, then the question on the bridge's connection.
    eventually("the release asked", || {
        (d.stats().expect("stats").controls >= 2).then_some(())
    });
    assert!(
        events_named(&w, "daemon_release").is_empty(),
        "nothing is logged while the question is unanswered"
    );
    assert_eq!(d.command("RESUME").expect("resume").trim(), "OK RESUME");
    let found = release_events(&w, 1);
    assert_eq!(found[0]["level"], "WARN", "{}", found[0]);
    assert_eq!(found[0]["daemon"], "3.2.3", "{}", found[0]);
    let stats = d.stats().expect("stats");
    assert_eq!(
        (stats.controls, stats.accepted),
        (2, 2),
        "asked once, on the bridge's connection: {stats:?}"
    );
    finish(&mut w);
}

#[test]
fn the_release_is_asked_over_tcp_with_the_token() {
    let dir = short_tempdir().expect("tempdir");
    let daemon = daemon(
        &dir.path().join("d.sock"),
        Transport::Tcp,
        &["--release", "3.2.3"],
    );
    let mut w = wrapper(WrapperOptions::for_daemon(&daemon), &[JSON_LOG]);
    let found = release_events(&w, 1);
    assert_eq!(
        (&found[0]["level"], &found[0]["daemon"]),
        (&Value::from("WARN"), &Value::from("3.2.3")),
        "{}",
        found[0]
    );
    finish(&mut w);
    assert_eq!(daemon.stats().expect("stats").refused, 0);
}

/// The wrapper binary with a private home, dialling `socket`.
fn command(home: &Path, socket: &Path) -> Command {
    let mut cmd = Command::from_std(common::wrapper_process());
    cmd.env("HOME", home)
        .env("IAI_DAEMON_SOCKET_PATH", socket)
        .env_remove("IAI_MCP_STATE_DIR")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("CODEX_HOME")
        .env_remove("IAI_MCP_CODEX_HOME")
        .env_remove("IAI_MCP_OPENCLAW_HOME");
    cmd
}

#[test]
fn check_and_status_show_the_daemon_release_beside_the_served_one() {
    let dir = short_tempdir().expect("tempdir");
    let same = dir.path().join("same.sock");
    let other = dir.path().join("other.sock");
    let _same = daemon(&same, Transport::native(), &[]);
    let _other = daemon(&other, Transport::native(), &["--release", "3.2.3"]);

    command(dir.path(), &same)
        .arg("--check")
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "\n[ok] daemon release 3.3.0 (tools served: 3.3.0's)\n",
        ));
    // A differing release is a warning: the daemon still answers.
    command(dir.path(), &other)
        .arg("--check")
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "\n[warn] daemon release 3.2.3 (tools served: 3.3.0's: differs, see docs/upgrading.md)\n",
        ));
    command(dir.path(), &dir.path().join("absent.sock"))
        .arg("--check")
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "\n[warn] daemon release unknown, not reachable: ",
        ));

    command(dir.path(), &same)
        .arg("status")
        .assert()
        .stdout(predicate::str::contains(
            "\ndaemon release  3.3.0 (tools served: 3.3.0's)\n",
        ));
    command(dir.path(), &other)
        .arg("status")
        .assert()
        .stdout(predicate::str::contains(
            "\ndaemon release  3.2.3 (tools served: 3.3.0's: differs, see docs/upgrading.md)\n",
        ));
    command(dir.path(), &dir.path().join("absent.sock"))
        .arg("status")
        .assert()
        .stdout(predicate::str::contains(
            "\ndaemon release  unknown, not reachable: ",
        ));
}
