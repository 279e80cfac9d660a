//! Every process a command started gone when it ends, those that left its
//! process group included.
//!
//! A process group is not enough: a program may start a process in a
//! group or session of its own (a daemon, a server a host detaches), and
//! killing the group misses it. So such commands run under the
//! `devkit-subreaper` binary ([`serve`]): it marks itself a child
//! subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`), so that every process
//! below it whose parent dies becomes its child instead of init's, and it
//! starts the command. When the command exits, or when its owner closes
//! the subreaper's standard input (on purpose, or by dying), the subreaper
//! kills every process below it, reaps each, and only then exits. Nothing
//! the command started can outlive it: whatever leaves the tree comes back
//! to it as an orphan.
//!
//! Linux only at run time (`prctl`); it compiles on every Unix, and the
//! subreaper says why it cannot start elsewhere. Not built on Windows.
//!
//! [`Reaped`] is the owner's side: the subreaper started with a control
//! pipe, in a process group of its own (killed too, should the subreaper
//! not finish in time), and [`run_within`], a command run to completion
//! under it within a time limit, as [`crate::command::run_within`] runs
//! one without it.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Read;
use std::path::Path;
use std::process::{ChildStdin, Command, ExitCode, ExitStatus, Stdio};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::Pid;

use crate::command::{Finished, Outputs};
use crate::error::DevkitError;
use crate::process::GroupGuard;

/// How long the subreaper may take to kill and reap everything once asked.
pub const STOP_LIMIT: Duration = Duration::from_secs(10);

/// Every live process below `root`, from the parent links in `/proc`.
pub fn descendants(root: u32) -> Vec<u32> {
    let mut children: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Some(parent) = parent_of(pid) {
            children.entry(parent).or_default().push(pid);
        }
    }
    let mut found = Vec::new();
    let mut todo = vec![root];
    while let Some(pid) = todo.pop() {
        for child in children.get(&pid).into_iter().flatten() {
            found.push(*child);
            todo.push(*child);
        }
    }
    found
}

/// The parent of `pid`, from `/proc/PID/stat`.
pub fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The parent is the second field after the command in parentheses.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(1))
        .and_then(|p| p.parse().ok())
}

/// The subreaper's main: runs `args` (a program and its arguments) as
/// described in the module documentation; the command's exit code (128
/// plus the signal when a signal ended it, 125 when it could not start).
pub fn serve(args: &[OsString]) -> ExitCode {
    let Some((program, rest)) = args.split_first() else {
        eprintln!("devkit-subreaper: usage: devkit-subreaper PROGRAM [ARG]...");
        return ExitCode::from(125);
    };
    if let Err(e) = become_subreaper() {
        eprintln!("devkit-subreaper: cannot become a child subreaper: {e}");
        return ExitCode::from(125);
    }
    let child = Command::new(program)
        .args(rest)
        .stdin(Stdio::null())
        .spawn();
    let child = match child {
        Ok(child) => child,
        Err(e) => {
            eprintln!(
                "devkit-subreaper: cannot start {}: {e}",
                program.to_string_lossy()
            );
            return ExitCode::from(125);
        }
    };
    let command = Pid::from_raw(i32::try_from(child.id()).expect("pids fit in i32"));
    // The owner closes the control pipe (standard input) to stop it all.
    std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut sink);
        kill_below(std::process::id());
        let _ = kill(command, Signal::SIGKILL);
    });
    let code = wait_for(command);
    clear_below();
    ExitCode::from(code)
}

/// Reaps children until `command` has exited; its exit code.
fn wait_for(command: Pid) -> u8 {
    loop {
        match waitpid(None::<Pid>, None) {
            Ok(WaitStatus::Exited(pid, code)) if pid == command => {
                return u8::try_from(code).unwrap_or(1);
            }
            Ok(WaitStatus::Signaled(pid, signal, _)) if pid == command => {
                return 128u8.saturating_add(u8::try_from(signal as i32).unwrap_or(0));
            }
            Err(Errno::ECHILD) => return 1,
            Ok(_) | Err(_) => {}
        }
    }
}

/// Marks this process a child subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`).
#[cfg(target_os = "linux")]
fn become_subreaper() -> Result<(), String> {
    nix::sys::prctl::set_child_subreaper(true).map_err(|e| e.to_string())
}

/// Other systems have no child subreaper of this kind (the hosts kit that
/// needs one runs on Linux).
#[cfg(not(target_os = "linux"))]
fn become_subreaper() -> Result<(), String> {
    Err("child subreapers are Linux's (prctl PR_SET_CHILD_SUBREAPER)".to_owned())
}

/// Kills every process below this one and reaps them all: each killed
/// process's children come back to this subreaper, so the walk is done
/// again until nothing is left.
fn clear_below() {
    let me = std::process::id();
    loop {
        if descendants(me).is_empty() {
            // Reap whatever exited between the walk and now.
            while let Ok(status) = waitpid(None::<Pid>, Some(nix::sys::wait::WaitPidFlag::WNOHANG))
            {
                if status == WaitStatus::StillAlive {
                    break;
                }
            }
            return;
        }
        kill_below(me);
        // At least one child is dying: wait for it.
        if let Err(Errno::ECHILD) = waitpid(None::<Pid>, None) {
            return;
        }
    }
}

/// SIGKILL to every process below `root`.
fn kill_below(root: u32) {
    for pid in descendants(root) {
        if let Ok(raw) = i32::try_from(pid) {
            let _ = kill(Pid::from_raw(raw), Signal::SIGKILL);
        }
    }
}

/// A command running under the subreaper, owned: when this drops (panics
/// included) everything the command started is killed and reaped.
#[derive(Debug)]
pub struct Reaped {
    group: GroupGuard,
    control: Option<ChildStdin>,
}

impl Reaped {
    /// The command `program` under the subreaper `subreaper`: add its
    /// arguments, environment and directory, then [`spawn`](Self::spawn)
    /// it. The environment given is the command's (the subreaper needs
    /// none).
    pub fn command(subreaper: &Path, program: impl Into<OsString>) -> Command {
        let mut command = Command::new(subreaper);
        command.arg(program.into());
        command
    }

    /// Starts `command` (made by [`command`](Self::command)) with its
    /// control pipe, in a process group of its own; standard output and
    /// error as the caller set them.
    pub fn spawn(command: &mut Command) -> Result<Self, DevkitError> {
        command.stdin(Stdio::piped());
        let mut group = GroupGuard::spawn(command)?;
        let control = group.leader().child_mut().stdin.take();
        Ok(Reaped { group, control })
    }

    /// The subreaper's pid: every process the command started is below it.
    pub fn pid(&self) -> u32 {
        self.group.pid()
    }

    /// The command's end, if it has ended (with everything it started).
    pub fn try_wait(&mut self) -> Result<Option<ExitStatus>, DevkitError> {
        self.group.leader().try_wait()
    }

    /// Waits up to `timeout` for the command's end.
    pub fn wait_timeout(&mut self, timeout: Duration) -> Result<Option<ExitStatus>, DevkitError> {
        self.group.leader().wait_timeout(timeout)
    }

    /// The subreaper, for its pipes.
    pub fn child_mut(&mut self) -> &mut std::process::Child {
        self.group.leader().child_mut()
    }

    /// Ends the command and everything it started: the control pipe is
    /// closed, the subreaper kills and reaps all below it; should it not
    /// be done within [`STOP_LIMIT`], its group is killed. Whether the
    /// subreaper finished its work.
    pub fn stop(&mut self) -> bool {
        drop(self.control.take());
        let done = matches!(self.group.leader().wait_timeout(STOP_LIMIT), Ok(Some(_)));
        if !done {
            let _ = self.group.kill();
        }
        done
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Runs `command` (made by [`Reaped::command`]; `what` it does, for
/// errors) to its end under the subreaper within `limit`. Past `limit` the
/// command and everything it started are killed, and the error,
/// [`DevkitError::TimedOut`], names it.
pub fn output_within(
    command: &mut Command,
    what: &str,
    limit: Duration,
) -> Result<Finished, DevkitError> {
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut reaped = Reaped::spawn(command)?;
    let outputs = Outputs::take(reaped.child_mut(), "reaped");
    let Some(status) = reaped.wait_timeout(limit)? else {
        reaped.stop();
        return Err(outputs.timed_out(what, limit));
    };
    Ok(outputs.finished(status))
}

/// [`output_within`], its standard output when it succeeded; a
/// [`DevkitError::Precondition`] with the end of its output otherwise.
pub fn run_within(
    command: &mut Command,
    what: &str,
    limit: Duration,
) -> Result<String, DevkitError> {
    output_within(command, what, limit)?.into_stdout(what)
}
