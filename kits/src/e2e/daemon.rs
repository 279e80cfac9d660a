//! The real iai-mcp 3.3.0 daemon, run offline: its own `HOME` and store in a
//! short temporary directory, its encryption key created with the
//! package's own CLI, and a deterministic embedding server on loopback.
//!
//! Every process started here is stopped when the handle drops, including
//! a daemon that `iai-mcp doctor --auto` respawned on its own (found
//! through the pid the daemon records in its store).

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use devkit::command::run_within;
use devkit::format::last_lines;
use devkit::process::ChildGuard;
use devkit::tempdir::short_tempdir;
use harness::daemon::DaemonEndpoint;
use harness::error::HarnessError;
use harness::footprint::has_ended;
use harness::wrapper::WrapperOptions;
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use serde_json::{Value, json};
use tempfile::TempDir;

use super::pyenv::PyEnv;
use super::wait::poll;

/// Dimension of the stub's vectors (the native model's).
const EMBED_DIM: u32 = 384;
/// The model id the stub and the daemon agree on.
const EMBED_MODEL: &str = "e2e-hash-384";
/// How long a starting daemon may take to answer.
pub const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// How long one of the release's own commands (`iai-mcp crypto init`,
/// `iai-mcp capture-hooks install`) may take.
pub const CLI_LIMIT: Duration = Duration::from_secs(120);

/// How often [`RealDaemon::wait_accepting`] tries the socket: the
/// precision of the restart check's figure.
pub const ACCEPT_POLL: Duration = Duration::from_micros(250);
/// How long a stopping daemon may take before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(20);

const EMBED_STUB: &str = include_str!("../../e2e/embed_stub.py");

/// A real daemon and everything it needs.
#[derive(Debug)]
pub struct RealDaemon {
    env: Vec<(OsString, OsString)>,
    python: PathBuf,
    home: PathBuf,
    socket: PathBuf,
    store: PathBuf,
    log: PathBuf,
    daemon: Option<ChildGuard>,
    _stub: ChildGuard,
    dir: TempDir,
}

impl RealDaemon {
    /// Prepares a fresh store (key created by `iai-mcp crypto init`),
    /// starts the embedding stub and the daemon, and waits until it answers.
    pub fn start(py: &PyEnv) -> Result<Self, HarnessError> {
        let dir = short_tempdir()?;
        let home = dir.path().join("h");
        let store = home.join(".iai-mcp");
        std::fs::create_dir_all(&store)
            .map_err(|e| HarnessError::io(format!("creating {}", store.display()), e))?;
        let stub_path = dir.path().join("embed_stub.py");
        std::fs::write(&stub_path, EMBED_STUB)
            .map_err(|e| HarnessError::io("writing the embedding stub", e))?;
        let python = py.program("python");
        let mut stub = ChildGuard::spawn(
            Command::new(&python)
                .arg(&stub_path)
                .arg(EMBED_MODEL)
                .arg(EMBED_DIM.to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::null()),
        )?;
        let stdout = stub.child_mut().stdout.take().expect("piped");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut first = String::new();
            let _ = BufReader::new(stdout).read_line(&mut first);
            let _ = tx.send(first);
        });
        let first = rx
            .recv_timeout(READY_TIMEOUT)
            .map_err(|_| HarnessError::Scenario("the embedding stub never said its port".into()))?;
        let port = first
            .trim()
            .strip_prefix("PORT ")
            .and_then(|p| p.parse::<u16>().ok())
            .ok_or_else(|| HarnessError::Scenario(format!("embedding stub said {first:?}")))?;
        let socket = store.join(".daemon.sock");
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut search = OsString::from(py.bin());
        search.push(":");
        search.push(path);
        let url = format!("http://127.0.0.1:{port}/embed");
        let env: Vec<(OsString, OsString)> = [
            ("HOME", home.clone().into_os_string()),
            ("IAI_MCP_STORE", store.clone().into_os_string()),
            ("IAI_DAEMON_SOCKET_PATH", socket.clone().into_os_string()),
            ("IAI_MCP_EMBED_PROVIDER", "http".into()),
            ("IAI_MCP_EMBED_URL", url.into()),
            ("IAI_MCP_EMBED_DIM", EMBED_DIM.to_string().into()),
            ("IAI_MCP_EMBED_MODEL_ID", EMBED_MODEL.into()),
            ("IAI_MCP_VERSION_CHECK", "0".into()),
            ("PATH", search),
        ]
        .into_iter()
        .map(|(k, v)| (OsString::from(k), v))
        .collect();
        let mut daemon = Self {
            env,
            python,
            log: dir.path().join("daemon.log"),
            home,
            socket,
            store,
            daemon: None,
            _stub: stub,
            dir,
        };
        let mut init = Command::new(py.program("iai-mcp"));
        init.args(["crypto", "init"])
            .envs(daemon.env.iter().cloned());
        run_within(&mut init, "iai-mcp crypto init", CLI_LIMIT)?;
        daemon.start_daemon()?;
        Ok(daemon)
    }

    /// The environment the daemon and its CLIs run with.
    pub fn env(&self) -> &[(OsString, OsString)] {
        &self.env
    }

    /// The daemon's socket.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// A directory for the run's own files.
    pub fn scratch(&self) -> &Path {
        self.dir.path()
    }

    /// The end of the daemon's log.
    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        last_lines(&log, 15, "\n")
    }

    /// The environment of a wrapper in this daemon's environment, for a
    /// program that starts it (the SDK, `--check`): the same `HOME`, store
    /// and state directory, the real CLIs, the doctor off (steps that want
    /// it turn it on).
    pub fn wrapper_env(&self, py: &PyEnv) -> Vec<(OsString, OsString)> {
        let mut env = self.env.clone();
        env.extend([
            ("IAI_MCP_STATE_DIR".into(), self.store.clone().into()),
            ("IAI_MCP_CLI".into(), py.program("iai").into()),
            ("IAI_MCP_ADMIN_CLI".into(), py.program("iai-mcp").into()),
            ("IAI_MCP_DOCTOR".into(), "off".into()),
        ]);
        env
    }

    /// Options for a wrapper in [`wrapper_env`](Self::wrapper_env), dialling
    /// `endpoint` (the daemon's socket unless given).
    pub fn wrapper_options(&self, endpoint: Option<PathBuf>, py: &PyEnv) -> WrapperOptions {
        let endpoint = endpoint.unwrap_or_else(|| self.socket.clone());
        let mut opts = WrapperOptions::at(DaemonEndpoint::Unix(endpoint));
        opts.home = Some(self.home.clone());
        opts.state_dir = Some(self.store.clone());
        opts.store_dir = Some(self.store.clone());
        opts.extra_env = self.wrapper_env(py);
        opts.extra_env
            .retain(|(k, _)| k != "IAI_DAEMON_SOCKET_PATH");
        opts
    }

    /// Starts the daemon (if not running) and waits until it answers;
    /// returns how long that took.
    pub fn start_daemon(&mut self) -> Result<Duration, HarnessError> {
        let started = Instant::now();
        self.spawn_daemon()?;
        self.wait_ready(READY_TIMEOUT)?;
        Ok(started.elapsed())
    }

    /// Starts the daemon without waiting for it.
    pub fn spawn_daemon(&mut self) -> Result<(), HarnessError> {
        if let Some(child) = &mut self.daemon
            && matches!(child.try_wait(), Ok(None))
        {
            return Ok(());
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|e| HarnessError::io("opening the daemon log", e))?;
        let err = log
            .try_clone()
            .map_err(|e| HarnessError::io("opening the daemon log", e))?;
        let mut command = Command::new(&self.python);
        command
            .args(["-m", "iai_mcp.daemon"])
            .envs(self.env.iter().cloned())
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .process_group(0);
        self.daemon = Some(ChildGuard::spawn(&mut command)?);
        Ok(())
    }

    /// Waits until the daemon answers a `topology` call.
    pub fn wait_ready(&self, timeout: Duration) -> Result<(), HarnessError> {
        // Nothing to wait on but the socket itself.
        let why = || {
            let log = self.log_tail();
            format!("the daemon did not answer within {timeout:?}; its log ends:\n{log}")
        };
        poll(timeout, 50, || Ok(self.answers()), why)
    }

    /// Waits until the daemon's socket accepts a connection, trying every
    /// [`ACCEPT_POLL`], and returns the instant it first did: the daemon's
    /// rebind as a client sees it. Unlike [`wait_ready`](Self::wait_ready)
    /// nothing is sent, so the daemon's own start-up work is not waited
    /// for.
    pub fn wait_accepting(&self, timeout: Duration) -> Result<Instant, HarnessError> {
        let give_up = Instant::now() + timeout;
        loop {
            if UnixStream::connect(&self.socket).is_ok() {
                return Ok(Instant::now());
            }
            if Instant::now() >= give_up {
                let log = self.log_tail();
                return Err(HarnessError::Scenario(format!(
                    "the daemon's socket accepted nothing within {timeout:?}; its log ends:\n{log}"
                )));
            }
            // The pace of the watch, not a synchronisation.
            std::thread::sleep(ACCEPT_POLL);
        }
    }

    /// Whether something answers on the socket now.
    pub fn answers(&self) -> bool {
        self.rpc("topology", json!({})).is_ok()
    }

    /// One JSON-RPC call on a connection of its own; the result, or the
    /// error object as an `Err`.
    pub fn rpc(&self, method: &str, params: Value) -> Result<Value, String> {
        let call = || -> std::io::Result<Value> {
            let mut stream = UnixStream::connect(&self.socket)?;
            stream.set_read_timeout(Some(Duration::from_secs(30)))?;
            let request = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
            writeln!(stream, "{request}")?;
            let mut line = String::new();
            BufReader::new(stream.take(64 << 20)).read_line(&mut line)?;
            Ok(serde_json::from_str(&line)?)
        };
        let mut response = call().map_err(|e| e.to_string())?;
        match response.get_mut("result") {
            Some(result) => Ok(result.take()),
            None => Err(response["error"].to_string()),
        }
    }

    /// Stops the daemon with SIGTERM, as a service manager would, and
    /// waits for it (and any daemon `doctor --auto` started) to exit.
    pub fn stop(&mut self) {
        self.signal(Signal::SIGTERM);
        self.wait_stopped();
    }

    /// Kills the daemon with SIGKILL (a crash), and reaps it.
    pub fn kill(&mut self) {
        self.signal(Signal::SIGKILL);
        self.wait_stopped();
    }

    /// Starts the daemon again if nothing answers, so that one failed check
    /// does not leave the next without a daemon.
    pub fn ensure_running(&mut self) -> Result<(), HarnessError> {
        if !self.answers() {
            self.restart()?;
        }
        Ok(())
    }

    /// Stops the daemon, then starts it again; returns how long until it
    /// answered.
    pub fn restart(&mut self) -> Result<Duration, HarnessError> {
        self.stop();
        self.start_daemon()
    }

    /// Sends `signal` to the daemon (and any daemon `doctor --auto`
    /// started) without waiting.
    pub fn signal(&self, signal: Signal) {
        if let Some(child) = &self.daemon {
            let _ = killpg(Pid::from_raw(child.pid() as i32), signal);
        }
        for pid in self.adopted_daemons() {
            let _ = kill(pid, signal);
        }
    }

    /// Waits until every daemon of the store has exited, killing any that
    /// takes longer than [`STOP_TIMEOUT`].
    pub fn wait_stopped(&mut self) {
        if let Some(mut child) = self.daemon.take()
            && !matches!(child.wait_timeout(STOP_TIMEOUT), Ok(Some(_)))
        {
            let _ = killpg(Pid::from_raw(child.pid() as i32), Signal::SIGKILL);
            let _ = child.kill();
        }
        for pid in self.adopted_daemons() {
            if poll(STOP_TIMEOUT, 20, || Ok(!is_daemon(pid)), String::new).is_err() {
                let _ = kill(pid, Signal::SIGKILL);
            }
        }
    }

    /// Daemons of this store that are not our child (respawned by
    /// `doctor --auto`), from the pids the daemon records.
    fn adopted_daemons(&self) -> Vec<Pid> {
        let own = self.daemon.as_ref().map(|c| Pid::from_raw(c.pid() as i32));
        let mut pids = Vec::new();
        for (file, key) in [(".daemon-state.json", "daemon_pid"), (".locked", "pid")] {
            let pid = std::fs::read_to_string(self.store.join(file))
                .ok()
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                .and_then(|v| v[key].as_i64())
                .and_then(|p| i32::try_from(p).ok())
                .map(Pid::from_raw);
            if let Some(pid) = pid.filter(|p| is_daemon(*p) && !pids.contains(p) && Some(*p) != own)
            {
                pids.push(pid);
            }
        }
        pids
    }
}

/// Whether `pid` is a live iai-mcp daemon (checked by its command line, so
/// a reused pid is never signalled).
fn is_daemon(pid: Pid) -> bool {
    let Some(cmdline) = command_line(pid) else {
        return false;
    };
    let live = u32::try_from(pid.as_raw()).is_ok_and(|pid| !has_ended(pid));
    live && cmdline.contains("iai_mcp.daemon")
}

/// The command line of `pid`: from `/proc` on Linux, from `ps` on macOS,
/// which has no `/proc`.
fn command_line(pid: Pid) -> Option<String> {
    if cfg!(target_os = "linux") {
        let bytes = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        return Some(String::from_utf8_lossy(&bytes).into_owned());
    }
    let output = std::process::Command::new("ps")
        .args(["-o", "command=", "-p"])
        .arg(pid.to_string())
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    (output.status.success() && !text.is_empty()).then_some(text)
}

impl Drop for RealDaemon {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_process_has_a_command_line_and_is_no_daemon() {
        let me = Pid::this();
        let line = command_line(me).expect("this process's command line");
        assert!(!line.is_empty());
        assert!(!is_daemon(me), "{line}");
    }
}
