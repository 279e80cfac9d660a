//! Host processes and what they start: every command runs in a process
//! group of its own and is bounded in time, and the wrapper processes a
//! host started are found (and, at the end, killed) through `/proc`.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use devkit::format::last_lines;
use devkit::process::{CapturedOutput, ChildGuard};
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

use harness::error::HarnessError;

/// A child in a process group of its own: the whole group is killed when
/// this drops, panics included, then the child is reaped.
#[derive(Debug)]
pub struct GroupGuard {
    child: ChildGuard,
}

impl GroupGuard {
    /// Starts `command` as the leader of a new process group.
    pub fn spawn(command: &mut Command) -> Result<Self, HarnessError> {
        command.process_group(0);
        Ok(GroupGuard {
            child: ChildGuard::spawn(command)?,
        })
    }

    /// The leader's pid (also the group's id).
    pub fn pid(&self) -> u32 {
        self.child.pid()
    }

    /// The guarded child.
    pub fn child(&mut self) -> &mut ChildGuard {
        &mut self.child
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Ok(pgid) = i32::try_from(self.child.pid()) {
            // The leader is not reaped yet (the guard below reaps it), so
            // the group id cannot have been reused.
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        }
        let _ = self.child.kill();
    }
}

/// Runs `command` (`what` it is) to completion within `timeout`, in a
/// process group killed on every path; its standard output, or why it
/// failed with the end of its standard error.
pub fn run_bounded(
    command: &mut Command,
    timeout: Duration,
    what: &str,
) -> Result<String, HarnessError> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut group = GroupGuard::spawn(command)?;
    let child = group.child().child_mut();
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let stdout = CapturedOutput::spawn(stdout, "bounded-stdout");
    let stderr = CapturedOutput::spawn(stderr, "bounded-stderr");
    let status = group.child().wait_timeout(timeout)?;
    let Some(status) = status else {
        drop(group);
        return Err(HarnessError::Scenario(format!(
            "{what} did not finish within {} s (killed); its stderr ends:\n{}",
            timeout.as_secs(),
            last_lines(&stderr.text(), 10, "\n")
        )));
    };
    // A grandchild may hold the pipes open; its output is not waited for.
    stdout.wait_eof(Duration::from_secs(2));
    if status.success() {
        return Ok(stdout.text());
    }
    Err(HarnessError::Scenario(format!(
        "{what} failed ({status}):\n{}",
        last_lines(&format!("{}{}", stdout.text(), stderr.text()), 15, "\n")
    )))
}

/// How to recognise a wrapper process: by the program it runs, or (for a
/// command such as `node index.js`) by an argument.
#[derive(Debug, Clone)]
pub struct WrapperMatch {
    /// A path the process's executable or one of its arguments must be.
    pub path: PathBuf,
}

impl WrapperMatch {
    /// Whether the process `pid` runs the wrapper.
    fn matches(&self, pid: u32) -> bool {
        let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok();
        let canonical = std::fs::canonicalize(&self.path).unwrap_or_else(|_| self.path.clone());
        if exe.as_deref() == Some(canonical.as_path()) {
            return true;
        }
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            return false;
        };
        cmdline
            .split(|b| *b == 0)
            .skip(1)
            .map(|arg| PathBuf::from(OsString::from(String::from_utf8_lossy(arg).into_owned())))
            .any(|arg| arg == self.path || arg == canonical)
    }

    /// The live wrapper processes among the descendants of `root`.
    pub fn under(&self, root: u32) -> Vec<u32> {
        descendants(root)
            .into_iter()
            .filter(|pid| self.matches(*pid))
            .collect()
    }

    /// Kills `pids` that still run the wrapper (a pid that now belongs to
    /// another program is left alone).
    pub fn kill_left(&self, pids: &[u32]) {
        for pid in pids {
            if self.matches(*pid)
                && let Ok(raw) = i32::try_from(*pid)
            {
                let _ = kill(Pid::from_raw(raw), Signal::SIGKILL);
            }
        }
    }
}

/// Every live process below `root`, from the parent links in `/proc`.
fn descendants(root: u32) -> Vec<u32> {
    let mut children: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // The parent is the second field after the command in parentheses.
        let parent = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if let Some(parent) = parent {
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
