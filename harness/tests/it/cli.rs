//! The `harness` binary's command line.

use assert_cmd::Command;
use predicates::prelude::*;

fn harness() -> Command {
    Command::cargo_bin("harness").expect("the harness binary is built")
}

#[test]
fn bad_arguments_and_a_broken_setup_exit_with_2_and_say_why() {
    let missing = "FAKE_DAEMON_BIN=/nonexistent/fake-daemon is not a file";
    for (args, says) in [
        (&["race", "--mode", "sideways"][..], "invalid bridge mode"),
        (&["race", "--runs", "0"][..], "--runs"),
        (
            &["race", "--wrapper-cmd", "'unterminated"],
            "unterminated single quote",
        ),
        (&["race", "--wrapper-cmd", "true"], missing),
    ] {
        harness()
            .args(args)
            .env("FAKE_DAEMON_BIN", "/nonexistent/fake-daemon")
            .assert()
            .code(2)
            .stderr(predicate::str::contains(says));
    }
}

#[test]
fn scenarios_are_listed_with_their_options() {
    let help = |args: &[&str]| {
        let assert = harness().args(args).assert().success();
        String::from_utf8_lossy(&assert.get_output().stdout).into_owned()
    };
    let top = help(&["--help"]);
    for (scenario, options) in [
        ("race", "--runs --delay-ms --offset-ms"),
        (
            "sweep",
            "--delay-ms --from-ms --to-ms --step-ms --runs --jobs --seed --out-dir",
        ),
        (
            "storm",
            "--drops --concurrency --delay-ms --drop-interval-ms",
        ),
        (
            "down-up",
            "--connect-wait-ms --rate-window-ms --backoff-max-ms",
        ),
        ("hang", "--call-timeout-ms"),
        ("herd", "--wrappers --down-ms --max-dial-fraction"),
        ("hostile", "--lines --seed --in-flight --max-line-bytes"),
        ("soak", "--seconds --seed --concurrency --delay-ms"),
        ("smoke", "--reply-bound-ms"),
    ] {
        assert!(top.contains(scenario), "--help lacks {scenario}");
        let stdout = help(&[scenario, "--help"]);
        let common = ["--wrapper-cmd", "--mode", "--json"];
        for option in options.split_whitespace().chain(common) {
            assert!(stdout.contains(option), "{scenario} --help lacks {option}");
        }
    }
}
