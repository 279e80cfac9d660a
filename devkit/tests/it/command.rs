//! Commands run to completion within a limit, with and without the
//! subreaper: a command past its limit is named and killed, and a
//! process a command started in a session of its own is gone when the
//! command under the subreaper ends.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use devkit::bins::{SUBREAPER, locate};
use devkit::command::{output_within, run_within};
use devkit::error::DevkitError;
use devkit::reap::{self, Reaped};

/// Whether `pid` no longer names a live process (gone, or a zombie).
fn is_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

fn subreaper() -> PathBuf {
    locate(&SUBREAPER).expect("the subreaper")
}

#[test]
fn a_command_past_its_limit_is_named_and_killed() {
    let mut sleeper = Command::new("sleep");
    sleeper.arg("600");
    let error = run_within(&mut sleeper, "the long sleep", Duration::from_millis(300))
        .expect_err("sleep 600 does not end within its limit");
    assert!(matches!(error, DevkitError::TimedOut { .. }), "{error:?}");
    let said = error.to_string();
    assert!(
        said.starts_with("the long sleep did not finish within 0 s (killed)"),
        "{said}"
    );
}

#[test]
fn a_failed_command_says_what_it_wrote() {
    let mut failing = Command::new("sh");
    failing.args(["-c", "echo nothing here >&2; exit 3"]);
    let error = run_within(&mut failing, "the failing one", Duration::from_secs(60))
        .expect_err("exit 3 fails");
    let said = error.to_string();
    assert!(
        said.contains("the failing one failed (exit status: 3)"),
        "{said}"
    );
    assert!(said.contains("nothing here"), "{said}");
    let mut talking = Command::new("sh");
    talking.args(["-c", "echo out; exit 1"]);
    let ended = output_within(&mut talking, "talking", Duration::from_secs(60)).expect("it ran");
    assert_eq!(
        (ended.status.code(), ended.stdout.as_str()),
        (Some(1), "out\n")
    );
}

#[test]
fn what_left_the_commands_session_is_gone_when_it_ends_under_the_subreaper() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("escaped.pid");
    // The command starts a process in a session of its own, waits until
    // that process wrote its pid, and exits.
    let script = format!(
        "setsid sh -c 'echo $$ > {file}.tmp; mv {file}.tmp {file}; exec sleep 600' &\n\
         while [ ! -s {file} ]; do :; done\n\
         echo done",
        file = pid_file.display()
    );
    let mut command = Reaped::command(&subreaper(), "sh");
    command.args(["-c", &script]);
    let out = reap::run_within(
        &mut command,
        "the escaping command",
        Duration::from_secs(60),
    )
    .expect("it ran");
    assert_eq!(out, "done\n");
    let escaped: u32 = std::fs::read_to_string(&pid_file)
        .expect("the pid")
        .trim()
        .parse()
        .expect("a pid");
    assert!(is_gone(escaped), "{escaped} outlived the command");
}

#[test]
fn closing_the_control_pipe_ends_everything_below_the_subreaper() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("child.pid");
    let mut command = Reaped::command(&subreaper(), "sh");
    command.args([
        "-c",
        &format!(
            "sh -c 'echo $$ > {file}.tmp; mv {file}.tmp {file}; exec sleep 600' & wait",
            file = pid_file.display()
        ),
    ]);
    let mut reaped = Reaped::spawn(&mut command).expect("started");
    // The grandchild's pid, once written (the loop ends with the run's
    // own limit should it never be).
    let child = loop {
        if let Ok(pid) = std::fs::read_to_string(&pid_file) {
            break pid.trim().parse::<u32>().expect("a pid");
        }
        assert!(
            reaped.try_wait().expect("waited").is_none(),
            "the command ended before its child started"
        );
        std::thread::yield_now();
    };
    assert!(reaped.stop(), "the subreaper finished its work");
    assert!(is_gone(child), "{child} outlived the stop");
}
