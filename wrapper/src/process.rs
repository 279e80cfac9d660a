//! Running one CLI command as a child process, safely.
//!
//! The command is an argv (never a shell line), its standard input is
//! empty, its output is captured (standard output up to a bound, for
//! parsing; the tail of standard error, for messages) and never reaches the
//! wrapper's own stdout. It is killed when it outlives its limit or when the
//! caller stops waiting for it (the wrapper exiting, a cancelled call). It
//! stays in the wrapper's process group, so a client that ends its server's
//! group ends it too. A run is over when the program exits: output still
//! unread then gets [`DRAIN_GRACE`] to arrive, so a descendant the program
//! left holding its pipes (a daemon it started) never holds up the answer.
//! On Windows, where a console program started by a process without a
//! console opens a window of its own, children start without one
//! ([`Console`]).

use std::ffi::OsString;
use std::io;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

/// Most standard output kept from one run; a CLI answer is far smaller.
pub const MAX_STDOUT: usize = 8 * 1024 * 1024;
/// How long output may keep arriving after the program exited.
pub const DRAIN_GRACE: Duration = Duration::from_millis(200);
/// Bytes of standard error kept (the end of it) for messages.
pub const STDERR_TAIL: usize = 2048;

/// One command to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliCommand {
    /// The program (looked up on `PATH` when it has no slash).
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Variables set for it on top of the wrapper's environment.
    pub env: Vec<(OsString, OsString)>,
    /// Longest run allowed.
    pub limit: Duration,
}

impl CliCommand {
    /// The command as one line, for messages and logs (quoting is for
    /// reading, not for a shell: nothing here is ever run by one).
    pub fn display(&self) -> String {
        std::iter::once(&self.program)
            .chain(&self.args)
            .map(|a| {
                let a = a.to_string_lossy();
                if a.is_empty() || a.contains(char::is_whitespace) {
                    format!("{a:?}")
                } else {
                    a.into_owned()
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// What a finished run produced.
#[derive(Debug, Clone)]
pub struct CliOutput {
    /// How it exited.
    pub status: ExitStatus,
    /// Its standard output (at most [`MAX_STDOUT`] bytes).
    pub stdout: Vec<u8>,
    /// The end of its standard error.
    pub stderr_tail: String,
    /// How long it ran.
    pub elapsed: Duration,
}

/// Why a run produced no output to use.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The program does not exist (or is not on `PATH`).
    #[error("{0} was not found")]
    NotFound(String),
    /// The program could not be started.
    #[error("{program} could not be started: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// The cause.
        source: io::Error,
    },
    /// It ran past its limit and was killed: whatever it was doing may or
    /// may not have happened.
    #[error("{0} did not finish within {1:?} and was killed")]
    TimedOut(String, Duration),
    /// Its output could not be read.
    #[error("reading the output of {program} failed: {source}")]
    Read {
        /// The program.
        program: String,
        /// The cause.
        source: io::Error,
    },
}

/// How a child stands towards the wrapper's console on Windows. Unix has
/// no consoles: there both keep the child in the wrapper's process group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Console {
    /// Without a console window: nothing flashes on the user's screen.
    Hidden,
    /// Detached from the wrapper's console, in a process group of its
    /// own: what it starts (a daemon) outlives the console being closed
    /// and is not sent the console's Ctrl-C.
    Detached,
}

/// `CREATE_NO_WINDOW`, a process creation flag of Windows.
#[cfg(any(windows, test))]
pub const CREATE_NO_WINDOW: u32 = 0x0800_0000;
/// `DETACHED_PROCESS`, a process creation flag of Windows.
#[cfg(any(windows, test))]
pub const DETACHED_PROCESS: u32 = 0x0000_0008;
/// `CREATE_NEW_PROCESS_GROUP`, a process creation flag of Windows.
#[cfg(any(windows, test))]
pub const CREATE_NEW_PROCESS_GROUP: u32 = 0x0000_0200;

// Used where children are started on Windows, and tested everywhere.
#[cfg(any(windows, test))]
impl Console {
    /// The process creation flags that give a child this standing on
    /// Windows.
    pub fn creation_flags(self) -> u32 {
        match self {
            Console::Hidden => CREATE_NO_WINDOW,
            // A detached process has no console at all, so no window
            // either (Windows ignores CREATE_NO_WINDOW beside it).
            Console::Detached => DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP,
        }
    }
}

/// Run `command` to completion (or to its limit), without a console
/// window on Windows.
pub async fn run(command: &CliCommand) -> Result<CliOutput, RunError> {
    run_with(command, Console::Hidden).await
}

/// Run `command` as [`run`] does, detached from the wrapper's console on
/// Windows (for `iai-mcp doctor --auto`, which may start the daemon).
pub async fn run_detached(command: &CliCommand) -> Result<CliOutput, RunError> {
    run_with(command, Console::Detached).await
}

async fn run_with(command: &CliCommand, console: Console) -> Result<CliOutput, RunError> {
    let program = command.program.to_string_lossy().into_owned();
    let started = Instant::now();
    let mut spawning = Command::new(&command.program);
    spawning
        .args(&command.args)
        .envs(command.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(windows)]
    spawning.creation_flags(console.creation_flags());
    #[cfg(not(windows))]
    let _ = console;
    let mut child = spawning.spawn().map_err(|source| match source.kind() {
        io::ErrorKind::NotFound => RunError::NotFound(program.clone()),
        _ => RunError::Spawn {
            program: program.clone(),
            source,
        },
    })?;
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let mut out = Vec::new();
    let mut tail = Vec::new();
    let status = {
        let mut reading = std::pin::pin!(async {
            tokio::join!(read_bounded(stdout, &mut out), read_tail(stderr, &mut tail))
        });
        let exited = async {
            let mut drained = false;
            let status = tokio::select! {
                status = child.wait() => status,
                _ = &mut reading => {
                    drained = true;
                    child.wait().await
                }
            };
            if !drained {
                let _ = tokio::time::timeout(DRAIN_GRACE, &mut reading).await;
            }
            status
        };
        tokio::time::timeout(command.limit, exited).await
    };
    // Dropping `child` on the way out kills it (kill_on_drop) if it still runs.
    let status = status
        .map_err(|_| RunError::TimedOut(program.clone(), command.limit))?
        .map_err(|source| RunError::Read { program, source })?;
    Ok(CliOutput {
        status,
        stdout: out,
        stderr_tail: String::from_utf8_lossy(&tail).trim().to_owned(),
        elapsed: started.elapsed(),
    })
}

/// Reads `pipe` into `out`, keeping at most [`MAX_STDOUT`] bytes and
/// discarding the rest so that the child never blocks on a full pipe.
async fn read_bounded(pipe: Option<impl AsyncRead + Unpin>, out: &mut Vec<u8>) {
    let Some(pipe) = pipe else { return };
    let mut limited = pipe.take(MAX_STDOUT as u64);
    if limited.read_to_end(out).await.is_err() {
        return;
    }
    let mut rest = limited.into_inner();
    let mut sink = [0u8; 8192];
    while rest.read(&mut sink).await.is_ok_and(|n| n > 0) {}
}

/// Reads `pipe`, keeping its last [`STDERR_TAIL`] bytes in `tail`.
async fn read_tail(pipe: Option<impl AsyncRead + Unpin>, tail: &mut Vec<u8>) {
    let Some(mut pipe) = pipe else { return };
    let mut buf = [0u8; 4096];
    while let Ok(n) = pipe.read(&mut buf).await {
        if n == 0 {
            break;
        }
        tail.extend_from_slice(&buf[..n]);
        if tail.len() > STDERR_TAIL {
            tail.drain(..tail.len() - STDERR_TAIL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The runs below are sh scripts (a FIFO, `sleep`, a descendant killed
    // with kill(2)): Unix only.
    #[cfg(unix)]
    fn sh(script: &str, limit: Duration) -> CliCommand {
        CliCommand {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
            env: vec![("IAI_TEST_VALUE".into(), "from-env".into())],
            limit,
        }
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn captures_stdout_and_the_end_of_stderr() {
        let out = run(&sh(
            "echo \"$IAI_TEST_VALUE\"; echo oops >&2; exit 3",
            Duration::from_secs(10),
        ))
        .await
        .expect("ran");
        assert_eq!(out.stdout, b"from-env\n");
        assert_eq!(out.stderr_tail, "oops");
        assert_eq!(out.status.code(), Some(3));
    }

    #[tokio::test]
    async fn a_missing_program_is_reported_by_name() {
        let err = run(&CliCommand {
            program: "/nonexistent/iai".into(),
            args: vec![],
            env: vec![],
            limit: Duration::from_secs(1),
        })
        .await
        .unwrap_err();
        assert!(
            matches!(err, RunError::NotFound(ref p) if p == "/nonexistent/iai"),
            "{err}"
        );
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_run_past_its_limit_is_killed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fifo = dir.path().join("held");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600))
            .expect("mkfifo");
        // The program holds the FIFO open for writing until it dies: the
        // reader sees end of file exactly when it is gone.
        let script = format!("exec sleep 1000 > {}", fifo.display());
        let reader = tokio::task::spawn_blocking(move || {
            use std::io::Read;
            let mut held = std::fs::File::open(&fifo).expect("open fifo");
            let mut sink = Vec::new();
            held.read_to_end(&mut sink).expect("read fifo");
        });
        let err = run(&sh(&script, Duration::from_millis(300)))
            .await
            .unwrap_err();
        assert!(matches!(err, RunError::TimedOut(..)), "{err}");
        // Bounded only so that a broken kill fails instead of hanging.
        tokio::time::timeout(Duration::from_secs(60), reader)
            .await
            .expect("the program was killed")
            .expect("reader");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_descendant_holding_the_pipes_does_not_hold_up_the_answer() {
        // The descendant outlives any limit: only the program's own exit
        // can end the run in time.
        let out = run(&sh(
            "sleep 1000 & echo $! >&2; echo '{\"ok\":true}'",
            Duration::from_secs(10),
        ))
        .await
        .expect("answered when the program exited");
        let descendant: i32 = out.stderr_tail.parse().expect("its pid");
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(descendant),
            nix::sys::signal::Signal::SIGKILL,
        );
        assert_eq!(out.stdout, b"{\"ok\":true}\n");
        assert!(out.status.success());
    }

    #[test]
    fn windows_children_get_no_window_and_doctor_auto_leaves_the_console() {
        assert_eq!(Console::Hidden.creation_flags(), 0x0800_0000);
        let detached = Console::Detached.creation_flags();
        assert_eq!(detached & DETACHED_PROCESS, DETACHED_PROCESS);
        assert_eq!(
            detached & CREATE_NEW_PROCESS_GROUP,
            CREATE_NEW_PROCESS_GROUP
        );
    }

    #[test]
    fn display_quotes_words_with_spaces() {
        let c = CliCommand {
            program: "iai".into(),
            args: vec!["recall".into(), "two words".into()],
            env: vec![],
            limit: Duration::from_secs(1),
        };
        assert_eq!(c.display(), "iai recall \"two words\"");
    }
}
