//! `ChildGuard`: kill-on-drop, signals and timed waits, on real processes.

use std::os::unix::process::ExitStatusExt;
use std::process::Command;
use std::time::Duration;

use devkit::error::DevkitError;
use devkit::process::{ChildGuard, GroupGuard, Signal};
use nix::errno::Errno;
use nix::sys::signal::kill;
use nix::unistd::Pid;

fn sleeper() -> ChildGuard {
    ChildGuard::spawn(Command::new("sleep").arg("1000")).expect("sleep starts")
}

fn is_gone(pid: u32) -> bool {
    kill(Pid::from_raw(pid as i32), None) == Err(Errno::ESRCH)
}

#[test]
fn dropping_the_guard_kills_and_reaps_the_child() {
    let guard = sleeper();
    let pid = guard.pid();
    assert!(!is_gone(pid));
    drop(guard);
    assert!(is_gone(pid), "pid {pid} outlived its guard");
}

#[test]
fn a_panic_does_not_leak_the_child() {
    let (tx, rx) = std::sync::mpsc::channel();
    let result = std::panic::catch_unwind(move || {
        let guard = sleeper();
        tx.send(guard.pid()).unwrap();
        panic!("test failure while the child runs");
    });
    assert!(result.is_err());
    let pid = rx.recv().unwrap();
    assert!(is_gone(pid));
}

#[test]
fn signal_reaches_the_child() {
    let mut guard = sleeper();
    guard.signal(Signal::SIGTERM).unwrap();
    let status = guard.wait_exit(Duration::from_secs(10)).unwrap();
    assert_eq!(status.signal(), Some(Signal::SIGTERM as i32));
}

#[test]
fn an_exited_child_is_never_signalled() {
    let mut guard = ChildGuard::spawn(&mut Command::new("true")).unwrap();
    assert!(guard.wait_exit(Duration::from_secs(10)).unwrap().success());
    assert!(matches!(
        guard.signal(Signal::SIGTERM),
        Err(DevkitError::AlreadyExited { .. })
    ));
}

#[test]
fn wait_timeout_reports_a_running_child() {
    let mut guard = sleeper();
    assert_eq!(guard.wait_timeout(Duration::from_millis(10)).unwrap(), None);
    assert!(matches!(
        guard.wait_exit(Duration::from_millis(10)),
        Err(DevkitError::ExitTimeout { .. })
    ));
    assert_eq!(guard.try_wait().unwrap(), None);
    let status = guard.kill().unwrap();
    assert_eq!(status.signal(), Some(Signal::SIGKILL as i32));
}

#[test]
fn a_signal_to_the_group_reaches_what_the_leader_started() {
    use std::io::{BufRead, BufReader, Read};
    use std::process::Stdio;

    // The shell and the `sleep` it starts share the shell's stdout, so the
    // pipe ends only when both have exited; "up" says the sleep runs.
    let mut group = GroupGuard::spawn(
        Command::new("sh")
            .args(["-c", "sleep 600 & echo up; wait"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null()),
    )
    .expect("sh starts");
    let stdout = group.leader().child_mut().stdout.take().expect("piped");
    let mut reader = BufReader::new(stdout);
    let mut line = String::new();
    reader.read_line(&mut line).expect("the shell's first line");
    assert_eq!(line.trim(), "up");

    group.signal_group(Signal::SIGTERM);

    let status = group.leader().wait_exit(Duration::from_secs(10)).unwrap();
    assert_eq!(status.signal(), Some(Signal::SIGTERM as i32));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut rest = Vec::new();
        let _ = tx.send(reader.read_to_end(&mut rest).map(|_| rest));
    });
    let end = rx.recv_timeout(Duration::from_secs(10));
    assert!(
        matches!(end, Ok(Ok(ref rest)) if rest.is_empty()),
        "the sleep the shell started still holds the pipe: {end:?}"
    );
}
