//! External commands run to completion within a time limit: each in a
//! process group of its own, killed with everything in it when the limit
//! passes (or the caller panics), and an error that names the command that
//! ran out of time. The commands the kits and `cargo xtask` run to
//! completion go through [`output_within`] and [`run_within`] (those the
//! hosts kit runs under a subreaper, through [`crate::reap::run_within`]).

use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use crate::error::DevkitError;
use crate::format::last_lines;
use crate::process::{CapturedOutput, GroupGuard};

/// How long a command's output is still read after it exited: a
/// grandchild that inherited its pipes may hold them open.
pub const OUTPUT_GRACE: Duration = Duration::from_secs(2);

/// Lines of a failed command's output kept in its error.
const TAIL_LINES: usize = 15;

/// A command that ran to its end.
#[derive(Debug, Clone)]
pub struct Finished {
    /// How it exited.
    pub status: ExitStatus,
    /// Its standard output, decoded lossily.
    pub stdout: String,
    /// Its standard error, decoded lossily.
    pub stderr: String,
}

impl Finished {
    /// Its standard output when it succeeded; otherwise a
    /// [`DevkitError::Precondition`] saying that `what` failed, with the
    /// end of its standard error (or output).
    pub fn into_stdout(self, what: &str) -> Result<String, DevkitError> {
        if self.status.success() {
            return Ok(self.stdout);
        }
        let said = if self.stderr.trim().is_empty() {
            &self.stdout
        } else {
            &self.stderr
        };
        Err(DevkitError::Precondition(format!(
            "{what} failed ({}):\n{}",
            self.status,
            last_lines(said, TAIL_LINES, "\n")
        )))
    }
}

/// A running command's standard output and error, each read to its end
/// by a thread of its own, so the command never blocks on a full pipe.
#[derive(Debug)]
pub(crate) struct Outputs {
    stdout: CapturedOutput,
    stderr: CapturedOutput,
}

impl Outputs {
    /// Takes `child`'s piped standard output and error (`label` names the
    /// reading threads).
    pub(crate) fn take(child: &mut Child, label: &str) -> Outputs {
        let stdout = child.stdout.take().expect("stdout piped");
        let stderr = child.stderr.take().expect("stderr piped");
        Outputs {
            stdout: CapturedOutput::spawn(stdout, &format!("{label}-stdout")),
            stderr: CapturedOutput::spawn(stderr, &format!("{label}-stderr")),
        }
    }

    /// The error for a command (`what` it does) still running at `limit`,
    /// with the end of its standard error.
    pub(crate) fn timed_out(&self, what: &str, limit: Duration) -> DevkitError {
        DevkitError::TimedOut {
            what: what.to_owned(),
            limit,
            tail: last_lines(&self.stderr.text(), TAIL_LINES, "\n"),
        }
    }

    /// The command ended with `status`: its output, read to the end or for
    /// [`OUTPUT_GRACE`] more.
    pub(crate) fn finished(self, status: ExitStatus) -> Finished {
        self.stdout.wait_eof(OUTPUT_GRACE);
        self.stderr.wait_eof(OUTPUT_GRACE);
        Finished {
            status,
            stdout: self.stdout.text(),
            stderr: self.stderr.text(),
        }
    }
}

/// Runs `command` (`what` it does, for errors) within `limit`, with no
/// standard input, and returns how it ended whatever its exit status. One
/// still running at `limit` is killed with its process group and is a
/// [`DevkitError::TimedOut`] naming it.
pub fn output_within(
    command: &mut Command,
    what: &str,
    limit: Duration,
) -> Result<Finished, DevkitError> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut group = GroupGuard::spawn(command)?;
    let outputs = Outputs::take(group.leader().child_mut(), "command");
    let Some(status) = group.leader().wait_timeout(limit)? else {
        let _ = group.kill();
        return Err(outputs.timed_out(what, limit));
    };
    Ok(outputs.finished(status))
}

/// Runs `command` (`what` it does) to completion within `limit`; its
/// standard output. A command that exits unsuccessfully is a
/// [`DevkitError::Precondition`] with the end of its standard error, one
/// that runs out of time a [`DevkitError::TimedOut`].
pub fn run_within(
    command: &mut Command,
    what: &str,
    limit: Duration,
) -> Result<String, DevkitError> {
    output_within(command, what, limit)?.into_stdout(what)
}
