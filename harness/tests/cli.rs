//! The `harness` binary's command line.

use assert_cmd::Command;
use predicates::prelude::*;

fn harness() -> Command {
    Command::cargo_bin("harness").expect("the harness binary is built")
}

#[test]
fn top_level_help_lists_the_race_scenario() {
    harness()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("race"));
}

#[test]
fn an_invalid_mode_is_a_usage_error() {
    harness()
        .args(["race", "--mode", "sideways"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("invalid bridge mode"));
}

#[test]
fn zero_runs_is_a_usage_error() {
    harness().args(["race", "--runs", "0"]).assert().code(2);
}

#[test]
fn an_unparsable_wrapper_command_is_a_harness_error() {
    harness()
        .args(["race", "--wrapper-cmd", "'unterminated"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("unterminated single quote"));
}

#[test]
fn a_missing_override_binary_is_reported() {
    harness()
        .args(["race", "--wrapper-cmd", "true"])
        .env("FAKE_DAEMON_BIN", "/nonexistent/fake-daemon")
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "FAKE_DAEMON_BIN=/nonexistent/fake-daemon is not a file",
        ));
}

#[test]
fn scenarios_are_listed_with_their_options() {
    for (scenario, options) in [
        ("race", &["--runs", "--delay-ms", "--offset-ms"][..]),
        (
            "sweep",
            &[
                "--delay-ms",
                "--from-ms",
                "--to-ms",
                "--step-ms",
                "--runs",
                "--jobs",
                "--seed",
                "--out-dir",
            ][..],
        ),
        (
            "storm",
            &[
                "--drops",
                "--concurrency",
                "--delay-ms",
                "--drop-interval-ms",
            ][..],
        ),
        (
            "down-up",
            &["--connect-wait-ms", "--rate-window-ms", "--backoff-max-ms"][..],
        ),
        ("hang", &["--call-timeout-ms"][..]),
    ] {
        let assert = harness().args([scenario, "--help"]).assert().success();
        let stdout = String::from_utf8_lossy(&assert.get_output().stdout).into_owned();
        for option in options.iter().chain(&["--wrapper-cmd", "--mode", "--json"]) {
            assert!(stdout.contains(option), "{scenario} --help lacks {option}");
        }
    }
}
