//! The real iai-mcp 3.3.0 daemon, run offline: its own `HOME` and store in a
//! short temporary directory, its encryption key created with the
//! package's own CLI, and a deterministic embedding server on loopback.
//!
//! The daemon is reached where it listens on this system
//! ([`DaemonAddress`]: its Unix socket, or loopback TCP with its port and
//! token files on Windows) and stopped as this system stops it ([`stop`]).
//! Every process started here is stopped when the handle drops, including
//! a daemon that `iai-mcp doctor --auto` respawned on its own (found
//! through the pid the daemon records in its store).

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use devkit::command::run_within;
use devkit::format::last_lines;
use devkit::process::{ChildGuard, GroupGuard};
use devkit::tempdir::short_tempdir;
use harness::daemon::DaemonEndpoint;
use harness::error::HarnessError;
use harness::wrapper::WrapperOptions;
use serde_json::{Value, json};
use tempfile::TempDir;

use super::address::{DaemonAddress, Transport};
use super::pyenv::PyEnv;
use super::stop::{self, Stop, is_daemon};
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

/// How often [`RealDaemon::wait_accepting`] tries the endpoint: the
/// precision of the restart check's figure.
pub const ACCEPT_POLL: Duration = Duration::from_micros(250);
/// How long one dial of [`RealDaemon::wait_accepting`] may wait for a TCP
/// connect (a loopback connect is answered in microseconds; a closed port
/// on Windows takes seconds to refuse).
const ACCEPT_DIAL_LIMIT: Duration = Duration::from_millis(100);
/// How long a stopping daemon may take before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(20);

const EMBED_STUB: &str = include_str!("../../e2e/embed_stub.py");

/// A real daemon and everything it needs.
#[derive(Debug)]
pub struct RealDaemon {
    env: Vec<(OsString, OsString)>,
    python: PathBuf,
    home: PathBuf,
    address: DaemonAddress,
    store: PathBuf,
    log: PathBuf,
    daemon: Option<GroupGuard>,
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
        let address = DaemonAddress::native(store.join(".daemon.sock"));
        let path = std::env::var_os("PATH").unwrap_or_default();
        let search =
            std::env::join_paths(std::iter::once(py.bin()).chain(std::env::split_paths(&path)))
                .map_err(|e| {
                    HarnessError::Scenario(format!("PATH with {}: {e}", py.bin().display()))
                })?;
        let url = format!("http://127.0.0.1:{port}/embed");
        let mut env: Vec<(OsString, OsString)> = [
            ("HOME", home.clone().into_os_string()),
            ("IAI_MCP_STORE", store.clone().into_os_string()),
            ("IAI_DAEMON_SOCKET_PATH", address.path().into()),
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
        if cfg!(windows) {
            // Python finds the home directory there, not in HOME.
            env.push(("USERPROFILE".into(), home.clone().into_os_string()));
        }
        let mut daemon = Self {
            env,
            python,
            log: dir.path().join("daemon.log"),
            home,
            address,
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

    /// Where the daemon listens.
    pub fn address(&self) -> &DaemonAddress {
        &self.address
    }

    /// A directory for the run's own files.
    pub fn scratch(&self) -> &Path {
        self.dir.path()
    }

    /// The daemon's log (its standard output and error).
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// The daemon's command line: the environment's Python running the
    /// daemon's module, as iai-mcp's service definitions start it.
    pub fn daemon_command(&self) -> [OsString; 3] {
        [
            self.python.clone().into_os_string(),
            "-m".into(),
            "iai_mcp.daemon".into(),
        ]
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
    /// the endpoint at `path` (the daemon's unless given): the wrapper is
    /// given the path as `IAI_DAEMON_SOCKET_PATH`, as the daemon is, and
    /// finds the port and token files beside it where the daemon listens
    /// on TCP.
    pub fn wrapper_options(&self, path: Option<PathBuf>, py: &PyEnv) -> WrapperOptions {
        let path = path.unwrap_or_else(|| self.address.path().to_path_buf());
        let mut opts = WrapperOptions::at(DaemonEndpoint::Unix(path));
        opts.home = Some(self.home.clone());
        opts.state_dir = Some(self.store.clone());
        opts.store_dir = Some(self.store.clone());
        opts.extra_env = self.wrapper_env(py);
        opts.extra_env
            .retain(|(k, _)| k != "IAI_DAEMON_SOCKET_PATH");
        opts
    }

    /// How the release's own Node wrapper is told where the endpoint at
    /// `path` (the daemon's unless given) is: the path itself, except on
    /// TCP, where it takes a path for a named pipe and needs the port and
    /// the token file instead (the port read now: it follows no restart).
    pub fn node_wrapper_endpoint(
        &self,
        path: Option<PathBuf>,
    ) -> Result<DaemonEndpoint, HarnessError> {
        let path = path.unwrap_or_else(|| self.address.path().to_path_buf());
        let address = DaemonAddress::new(&path, self.address.transport());
        match address.transport() {
            Transport::Unix => Ok(DaemonEndpoint::Unix(path)),
            Transport::Tcp => {
                let port = address.port().map_err(|e| {
                    HarnessError::io(format!("the port beside {}", path.display()), e)
                })?;
                Ok(DaemonEndpoint::Tcp {
                    port,
                    token_path: address.tcp_files().token,
                })
            }
        }
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
        if let Some(group) = &mut self.daemon
            && matches!(group.leader().try_wait(), Ok(None))
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
        let [program, args @ ..] = self.daemon_command();
        let mut command = Command::new(program);
        command
            .args(args)
            .envs(self.env.iter().cloned())
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err);
        self.daemon = Some(GroupGuard::spawn(&mut command)?);
        Ok(())
    }

    /// Waits until the daemon answers a `topology` call.
    pub fn wait_ready(&self, timeout: Duration) -> Result<(), HarnessError> {
        // Nothing to wait on but the endpoint itself.
        let why = || {
            let log = self.log_tail();
            format!("the daemon did not answer within {timeout:?}; its log ends:\n{log}")
        };
        poll(timeout, 50, || Ok(self.answers()), why)
    }

    /// Waits until the daemon's endpoint accepts a connection, trying every
    /// [`ACCEPT_POLL`], and returns the instant it first did: the daemon's
    /// rebind as a client sees it. Unlike [`wait_ready`](Self::wait_ready)
    /// nothing is sent, so the daemon's own start-up work is not waited
    /// for.
    pub fn wait_accepting(&self, timeout: Duration) -> Result<Instant, HarnessError> {
        let give_up = Instant::now() + timeout;
        loop {
            if self.address.dial_within(Some(ACCEPT_DIAL_LIMIT)).is_ok() {
                return Ok(Instant::now());
            }
            if Instant::now() >= give_up {
                let log = self.log_tail();
                return Err(HarnessError::Scenario(format!(
                    "the daemon's endpoint accepted nothing within {timeout:?}; its log ends:\n{log}"
                )));
            }
            // The pace of the watch, not a synchronisation.
            std::thread::sleep(ACCEPT_POLL);
        }
    }

    /// Whether the daemon answers now.
    pub fn answers(&self) -> bool {
        self.rpc("topology", json!({})).is_ok()
    }

    /// One JSON-RPC call on a connection of its own; the result, or the
    /// error object as an `Err`.
    pub fn rpc(&self, method: &str, params: Value) -> Result<Value, String> {
        let call = || -> std::io::Result<Value> {
            let mut stream = self.address.connect()?;
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

    /// Stops the daemon as a service manager would ([`Stop::Graceful`]),
    /// and waits for it (and any daemon `doctor --auto` started) to exit.
    pub fn stop(&mut self) {
        self.begin_stop(Stop::Graceful);
        self.wait_stopped();
    }

    /// Kills the daemon ([`Stop::Crash`]), and reaps it.
    pub fn kill(&mut self) {
        self.begin_stop(Stop::Crash);
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

    /// Stops the daemon (and any daemon `doctor --auto` started) without
    /// waiting.
    pub fn begin_stop(&mut self, how: Stop) {
        if let Some(group) = &mut self.daemon {
            stop::stop_group(group, how);
        }
        for pid in self.adopted_daemons() {
            stop::stop_process(pid, how);
        }
    }

    /// Waits until every daemon of the store has exited, killing any that
    /// takes longer than 20 s (`STOP_TIMEOUT`).
    pub fn wait_stopped(&mut self) {
        if let Some(mut group) = self.daemon.take()
            && !matches!(group.leader().wait_timeout(STOP_TIMEOUT), Ok(Some(_)))
        {
            let _ = group.kill();
        }
        for pid in self.adopted_daemons() {
            if poll(STOP_TIMEOUT, 20, || Ok(!is_daemon(pid)), String::new).is_err() {
                stop::stop_process(pid, Stop::Crash);
            }
        }
    }

    /// Daemons of this store that are not our child (respawned by
    /// `doctor --auto`), from the pids the daemon records.
    fn adopted_daemons(&self) -> Vec<u32> {
        let own = self.daemon.as_ref().map(GroupGuard::pid);
        let mut pids = Vec::new();
        for (file, key) in [(".daemon-state.json", "daemon_pid"), (".locked", "pid")] {
            let pid = std::fs::read_to_string(self.store.join(file))
                .ok()
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                .and_then(|v| v[key].as_u64())
                .and_then(|p| u32::try_from(p).ok());
            if let Some(pid) = pid.filter(|p| is_daemon(*p) && !pids.contains(p) && Some(*p) != own)
            {
                pids.push(pid);
            }
        }
        pids
    }
}

impl Drop for RealDaemon {
    fn drop(&mut self) {
        self.stop();
    }
}
