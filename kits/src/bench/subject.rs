//! Starting the things the bench measures and putting the one client on
//! them: a wrapper child process (client on its stdin/stdout), or the fake
//! daemon's socket directly (the floor).
//!
//! A wrapper runs in the environment [`WrapperProcess`](harness::wrapper::WrapperProcess)
//! gives it (scratch `HOME`, state and store directories, the daemon socket)
//! with `IAI_MCP_BRIDGE_MODE`, `IAI_MCP_RECONNECT_TEST_DELAY_MS` and
//! `IAI_MCP_LOG` removed, so each wrapper runs with its own defaults and no
//! race widener. The bench spawns it itself because its transport, not
//! [`McpClient`](harness::client::McpClient)'s reader thread, must own stdout.

use std::fs::File;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{ChildStderr, Command};
use std::time::Duration;

use devkit::error::DevkitError;
use devkit::process::{CapturedOutput, ChildGuard};
use devkit::tempdir::short_tempdir;
use harness::client::ClientError;
use harness::daemon::DaemonEndpoint;
use harness::error::HarnessError;
use harness::wrapper::{WrapperCommand, isolated_command};
use tempfile::TempDir;

use super::transport::{RequestTemplate, RequestWriter, Response, ResponseReader};
use super::watchdog::{Abort, Watchdog};

/// Environment variables removed from every wrapper's environment (the
/// wrapper's defaults apply, whatever the developer's shell exports).
const REMOVED_ENV: [&str; 3] = [
    "IAI_MCP_BRIDGE_MODE",
    "IAI_MCP_RECONNECT_TEST_DELAY_MS",
    "IAI_MCP_LOG",
];

/// The client's two halves and the id counter: everything a phase needs.
/// Both are [`File`]s, so the kernel counts their `read(2)` and `write(2)`
/// in `/proc/PID/io` (it does not count `recv(2)` and `send(2)`).
#[derive(Debug)]
pub struct Channel {
    /// The read half.
    pub reader: ResponseReader<File>,
    /// The write half.
    pub writer: RequestWriter<File>,
    next_id: u64,
}

impl Channel {
    /// Reserves `count` consecutive ids and returns the first.
    pub fn take_ids(&mut self, count: usize) -> u64 {
        let first = self.next_id;
        self.next_id += count as u64;
        first
    }

    /// Sends one request of `template` and waits for its response.
    pub fn call(&mut self, template: &RequestTemplate) -> Result<Response, ClientError> {
        let id = self.take_ids(1);
        self.writer.send(template, id)?;
        self.reader.response_to(id)
    }

    /// The last line read, as printable text, shortened for messages.
    pub fn last_line_excerpt(&self) -> String {
        const MAX_CHARS: usize = 240;
        let text = String::from_utf8_lossy(self.reader.last_line());
        let mut short: String = text.chars().take(MAX_CHARS).collect();
        if text.chars().count() > MAX_CHARS {
            short.push('…');
        }
        short
    }
}

/// A [`Channel`] and the [`Watchdog`] that bounds its waits.
#[derive(Debug)]
pub struct Session {
    channel: Channel,
    watchdog: Watchdog,
}

impl Session {
    fn new(
        reader: impl Into<OwnedFd>,
        writer: impl Into<OwnedFd>,
        timeout: Duration,
        abort: Abort,
    ) -> Self {
        let channel = Channel {
            reader: ResponseReader::new(File::from(reader.into())),
            writer: RequestWriter::new(File::from(writer.into())),
            next_id: 1,
        };
        let watchdog = Watchdog::new(channel.reader.progress(), timeout, abort);
        Self { channel, watchdog }
    }

    /// Runs `phase` on the channel under the watchdog (see
    /// [`Watchdog::guard`]).
    pub fn guarded<T>(
        &mut self,
        what: &str,
        phase: impl FnOnce(&mut Channel) -> Result<T, HarnessError>,
    ) -> Result<T, HarnessError> {
        let Self { channel, watchdog } = self;
        watchdog.guard(what, || phase(channel))
    }

    /// Lines read that were not responses.
    pub fn skipped_lines(&self) -> u64 {
        self.channel.reader.skipped_lines()
    }
}

/// A session straight on the fake daemon's socket: the floor.
pub fn connect_floor(socket: &Path, timeout: Duration) -> Result<Session, HarnessError> {
    let stream = UnixStream::connect(socket)
        .map_err(|e| HarnessError::io(format!("connecting to {}", socket.display()), e))?;
    let clone = |what: &str| {
        stream
            .try_clone()
            .map_err(|e| HarnessError::io(format!("cloning the floor socket for {what}"), e))
    };
    let reader = clone("reading")?;
    let abort = Abort::Shutdown(clone("the watchdog")?);
    Ok(Session::new(reader, stream, timeout, abort))
}

/// A wrapper's scratch directories and the command that starts it in
/// them; the directories are removed when this, or the [`WrapperChild`] it
/// started, drops.
#[derive(Debug)]
pub struct WrapperEnv {
    command: Command,
    program: String,
    _scratch: TempDir,
}

impl WrapperEnv {
    /// Prepares `cmd` to dial `socket`, in fresh scratch directories; with
    /// no socket, a path where nothing listens (inside its scratch
    /// directory): a cold start with no daemon present.
    pub fn new(cmd: &WrapperCommand, socket: Option<&Path>) -> Result<Self, HarnessError> {
        let scratch = short_tempdir()?;
        let absent = scratch.path().join("absent.sock");
        let socket = socket.unwrap_or(&absent);
        let home = scratch.path().join("home");
        let state_dir = home.join(".iai-mcp");
        let store_dir = scratch.path().join("store");
        let endpoint = DaemonEndpoint::Unix(socket.to_path_buf());
        let mut command = isolated_command(cmd, &endpoint, &home, &state_dir, &store_dir)?;
        for key in REMOVED_ENV {
            command.env_remove(key);
        }
        command.envs(cmd.env.iter().map(|(k, v)| (k, v)));
        Ok(Self {
            command,
            program: cmd.display(),
            _scratch: scratch,
        })
    }

    /// Sets `key` to `value` in the wrapper's environment, over what the
    /// harness and the command itself set (another wrapper ignores a
    /// setting it does not know).
    pub fn set_env(&mut self, key: &str, value: &str) {
        self.command.env(key, value);
    }

    /// Starts the wrapper, and puts a session on its stdio; the scratch
    /// directories live as long as the child. Only `fork`/`exec` happen
    /// here, so a caller can time from just before this call.
    pub fn spawn(mut self, timeout: Duration) -> Result<(WrapperChild, Session), HarnessError> {
        let mut guard = ChildGuard::spawn(&mut self.command).map_err(|e| match e {
            DevkitError::Spawn { source, .. } => DevkitError::Spawn {
                program: self.program.clone(),
                source,
            },
            other => other,
        })?;
        let child = guard.child_mut();
        let stdin = child.stdin.take().ok_or(ClientError::NotPiped("stdin"))?;
        let stdout = child.stdout.take().ok_or(ClientError::NotPiped("stdout"))?;
        let stderr_pipe = child.stderr.take();
        let session = Session::new(stdout, stdin, timeout, Abort::Kill(guard.pid()));
        let child = WrapperChild {
            stderr_pipe,
            stderr: None,
            guard,
            _scratch: self._scratch,
        };
        Ok((child, session))
    }
}

/// A running wrapper: its stderr, and the guard that kills it on drop.
/// Its [`Session`] is held apart, and must be dropped first (that closes
/// the wrapper's stdin and stdout).
#[derive(Debug)]
pub struct WrapperChild {
    /// Not read until [`capture_stderr`](Self::capture_stderr) (starting
    /// the reader thread is left out of cold-start timings); the pipe
    /// holds what the wrapper writes meanwhile.
    stderr_pipe: Option<ChildStderr>,
    stderr: Option<CapturedOutput>,
    // Field order is drop order: kill and reap the process, then remove
    // its directories.
    guard: ChildGuard,
    _scratch: TempDir,
}

impl WrapperChild {
    /// The wrapper's pid.
    pub fn pid(&self) -> u32 {
        self.guard.pid()
    }

    /// Starts draining stderr (a no-op when already started).
    pub fn capture_stderr(&mut self) -> &CapturedOutput {
        let pipe = &mut self.stderr_pipe;
        self.stderr.get_or_insert_with(|| match pipe.take() {
            Some(pipe) => CapturedOutput::spawn(pipe, "bench-wrapper"),
            None => CapturedOutput::spawn(std::io::empty(), "bench-wrapper"),
        })
    }

    /// Everything the wrapper wrote to stderr so far (its log).
    pub fn stderr_text(&mut self) -> String {
        self.capture_stderr().text()
    }

    /// The last bytes of the wrapper's stderr, for error messages; waits
    /// briefly for a wrapper that has exited to finish writing.
    pub fn stderr_tail(&mut self) -> String {
        let captured = self.capture_stderr();
        captured.wait_eof(Duration::from_millis(200));
        captured.tail(1024).trim().to_owned()
    }

    /// Closes stdin and stdout (drops `session`) and gives the wrapper
    /// `grace` to exit on its own (the way MCP clients stop servers); it is
    /// killed on drop if it has not.
    pub fn close(&mut self, session: Session, grace: Duration) {
        drop(session);
        let _ = self.guard.wait_timeout(grace);
    }
}
