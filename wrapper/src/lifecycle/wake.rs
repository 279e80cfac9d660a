//! Asking a stopped daemon to start, as iai-mcp 3.3.0's wrapper does.
//!
//! When the wrapper's first connect attempt fails, the daemon is probed up
//! to [`ProbeRule::attempts`] times; only if none answers does it count as
//! down. Then the wake file `<state dir>/wake.signal`, which the daemon's
//! supervision watches, is always written. On macOS launchd is asked too,
//! with `launchctl kickstart` (never `-k`, which would kill a daemon that is
//! only slow), unless the daemon's own process is alive and serves this
//! store ([`super::daemon_process`]): then it is starting and is left to
//! it. The wrapper itself never spawns or signals a daemon.
//!
//! What to do is decided on values ([`WakePlan`], [`DaemonProcess`]); the
//! functions here run the probes and programs and write the file. The
//! programs are paths in [`SystemPrograms`], so tests run every platform's
//! sequence against stand-ins.

use std::ffi::OsString;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;
use tokio::sync::watch;
use uuid::Uuid;

use super::daemon_process::{self, DaemonProcess, NotRunning};
use super::daemon_state;
use super::now_iso8601;
use crate::bridge::LinkStatus;
use crate::files;
use crate::log_names as event;
use crate::platform::Platform;
use crate::process::{self, CliCommand};
use crate::transport::Endpoint;

/// The launchd job of the daemon, as iai-mcp's installer names it.
pub const LAUNCHD_LABEL: &str = "com.iai-mcp.daemon";

/// How the daemon is probed before it counts as down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeRule {
    /// Probes made at most; the daemon is down when none answered.
    pub attempts: u32,
    /// How long one probe may take.
    pub timeout: Duration,
    /// The pause between two probes.
    pub delay: Duration,
}

impl Default for ProbeRule {
    /// 3.3.0's rule: 3 probes of 3 s, 2 s apart.
    fn default() -> Self {
        ProbeRule {
            attempts: 3,
            timeout: Duration::from_secs(3),
            delay: Duration::from_secs(2),
        }
    }
}

/// The system programs the wake-up may run, and how long each may take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemPrograms {
    /// `launchctl` (macOS only).
    pub launchctl: PathBuf,
    /// How long `launchctl kickstart` may take before it is killed.
    pub launchctl_limit: Duration,
    /// `ps`, asked for the title of the daemon's pid (macOS only).
    pub ps: PathBuf,
    /// How long `ps` may take before it is killed.
    pub ps_limit: Duration,
}

impl Default for SystemPrograms {
    /// The absolute paths 3.3.0 runs (never looked up on `PATH`), 5 s for
    /// `launchctl` and 2 s for `ps`.
    fn default() -> Self {
        SystemPrograms {
            launchctl: PathBuf::from("/bin/launchctl"),
            launchctl_limit: Duration::from_secs(5),
            ps: PathBuf::from("/bin/ps"),
            ps_limit: Duration::from_secs(2),
        }
    }
}

/// Everything the wake-up needs besides the state directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WakeSettings {
    /// Whose conventions apply.
    pub platform: Platform,
    /// The programs run.
    pub programs: SystemPrograms,
    /// When the daemon counts as down.
    pub probes: ProbeRule,
    /// The daemon's store (its state file and the store its title names).
    pub store: Option<PathBuf>,
    /// The user whose launchd domain (`gui/<uid>`) holds the daemon.
    pub uid: u32,
}

impl WakeSettings {
    /// The settings for this process on this platform, with 3.3.0's rule
    /// and programs.
    pub fn new(store: Option<PathBuf>) -> Self {
        WakeSettings {
            platform: Platform::current(),
            programs: SystemPrograms::default(),
            probes: ProbeRule::default(),
            store,
            uid: current_uid(),
        }
    }
}

/// This process's real user id.
#[cfg(unix)]
fn current_uid() -> u32 {
    nix::unistd::getuid().as_raw()
}

/// There is no launchd domain to name off Unix.
#[cfg(not(unix))]
fn current_uid() -> u32 {
    0
}

/// How a platform wakes a daemon that counts as down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WakePlan {
    /// Write the wake file; its supervision (systemd on Linux, the
    /// scheduled task on Windows) or `iai-mcp doctor --auto` does the rest.
    WakeFile,
    /// Write the wake file, then, unless the daemon's process is alive,
    /// `launchctl kickstart` its job.
    WakeFileThenLaunchd,
}

impl WakePlan {
    /// 3.3.0's plan on `platform`: launchd on macOS only.
    pub fn for_platform(platform: Platform) -> Self {
        match platform {
            Platform::MacOs => WakePlan::WakeFileThenLaunchd,
            Platform::Linux | Platform::Windows => WakePlan::WakeFile,
        }
    }
}

/// `launchctl`'s arguments that start the daemon's job if it is not
/// running, and leave a running one alone.
pub fn kickstart_args(uid: u32) -> Vec<OsString> {
    vec![
        OsString::from("kickstart"),
        OsString::from(format!("gui/{uid}/{LAUNCHD_LABEL}")),
    ]
}

/// Path of the wake file under the state directory.
pub fn signal_path(state_dir: &Path) -> PathBuf {
    state_dir.join("wake.signal")
}

/// Write the wake file atomically.
pub fn write_signal(state_dir: &Path, pid: u32, uuid: Uuid) -> std::io::Result<PathBuf> {
    let path = signal_path(state_dir);
    let body = json!({
        "requested_at": now_iso8601(),
        "wrapper_pid": pid,
        "wrapper_uuid": uuid.to_string(),
    });
    files::write_atomic(&path, body.to_string().as_bytes())?;
    Ok(path)
}

/// What became of the wake file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WakeFile {
    /// Written here.
    Written(PathBuf),
    /// Not written, for this reason.
    Failed(String),
}

/// What was asked of launchd.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kickstart {
    /// Nothing: this platform's plan has no launchd.
    NotInPlan,
    /// Nothing: the daemon's process is alive (starting or busy).
    DaemonAlive {
        /// Its pid.
        pid: u32,
    },
    /// `launchctl kickstart` ran and succeeded.
    Sent {
        /// Why the daemon's process did not count as alive.
        because: NotRunning,
    },
    /// `launchctl kickstart` failed, could not run, or was killed at its
    /// limit.
    Failed {
        /// Why the daemon's process did not count as alive.
        because: NotRunning,
        /// What went wrong.
        error: String,
    },
}

/// Everything a wake-up did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WakeReport {
    /// The wake file.
    pub wake_file: WakeFile,
    /// launchd.
    pub kickstart: Kickstart,
}

/// Probe with `probe` as `rule` says until one answers: `true` as soon as
/// one does, `false` when all failed (the daemon is down). Each probe is
/// cut off at the rule's timeout.
pub async fn daemon_answers<P, F>(rule: ProbeRule, mut probe: P) -> bool
where
    P: FnMut(Duration) -> F,
    F: Future<Output = bool>,
{
    let attempts = rule.attempts.max(1);
    for attempt in 1..=attempts {
        let answered = tokio::time::timeout(rule.timeout, probe(rule.timeout))
            .await
            .unwrap_or(false);
        if answered {
            return true;
        }
        if attempt < attempts {
            tokio::time::sleep(rule.delay).await;
        }
    }
    false
}

/// Wake a daemon that counts as down, following `settings.platform`'s
/// [`WakePlan`]; every step is logged and none can fail the wrapper.
pub async fn wake(settings: &WakeSettings, state_dir: &Path, pid: u32, uuid: Uuid) -> WakeReport {
    let wake_file = match write_signal(state_dir, pid, uuid) {
        Ok(path) => {
            tracing::info!(
                event = event::WAKE_REQUESTED,
                how = "wake_signal",
                outcome = "written",
                path = %path.display(),
                "daemon unreachable; wake signal written"
            );
            WakeFile::Written(path)
        }
        Err(e) => {
            tracing::warn!(
                event = event::WAKE_REQUESTED,
                how = "wake_signal",
                outcome = "failed",
                error = %e,
                "daemon unreachable; wake signal could not be written"
            );
            WakeFile::Failed(e.to_string())
        }
    };
    let kickstart = match WakePlan::for_platform(settings.platform) {
        WakePlan::WakeFile => Kickstart::NotInPlan,
        WakePlan::WakeFileThenLaunchd => match inspect_daemon_process(settings).await {
            DaemonProcess::Alive { pid } => {
                tracing::info!(
                    event = event::WAKE_REQUESTED,
                    how = "launchctl",
                    outcome = "skipped",
                    daemon_pid = pid,
                    "daemon process is alive (starting or busy); not kickstarted"
                );
                Kickstart::DaemonAlive { pid }
            }
            DaemonProcess::NotRunning(because) => kickstart(settings, because).await,
        },
    };
    WakeReport {
        wake_file,
        kickstart,
    }
}

/// Reads the daemon's pid from its state file and asks `ps` about it.
async fn inspect_daemon_process(settings: &WakeSettings) -> DaemonProcess {
    let Some(store) = &settings.store else {
        return DaemonProcess::NotRunning(NotRunning::NoStore);
    };
    let path = daemon_process::state_file(store);
    let StoreFiles { state, resolved } = read_store(store).await;
    let text = match state {
        Ok(text) => text,
        Err(e) => {
            return DaemonProcess::NotRunning(NotRunning::StateFileUnreadable {
                path,
                error: e.to_string(),
            });
        }
    };
    let Some(pid) = daemon_process::pid_from_state(&text) else {
        return DaemonProcess::NotRunning(NotRunning::NoPid { path });
    };
    let ps = CliCommand {
        program: settings.programs.ps.clone().into_os_string(),
        args: daemon_process::ps_args(pid),
        env: Vec::new(),
        limit: settings.programs.ps_limit,
    };
    let failed = |error: String| DaemonProcess::NotRunning(NotRunning::PsFailed { pid, error });
    match process::run(&ps).await {
        Ok(out) if out.status.success() => {
            DaemonProcess::from_title(pid, &String::from_utf8_lossy(&out.stdout), &resolved)
        }
        Ok(out) => failed(format!("ps exited with {}", out.status)),
        Err(e) => failed(e.to_string()),
    }
}

/// What is read from the store before `ps` is asked.
struct StoreFiles {
    /// The state file's text.
    state: std::io::Result<String>,
    /// The store with links resolved, as the daemon names it in its title
    /// (the store as given when it cannot be resolved).
    resolved: PathBuf,
}

/// Reads the state file and resolves the store off the runtime thread (a
/// slow file system must not stall the wrapper).
async fn read_store(store: &Path) -> StoreFiles {
    let store = store.to_owned();
    let fallback = store.clone();
    tokio::task::spawn_blocking(move || {
        let state = daemon_state::read(&daemon_process::state_file(&store));
        let resolved = std::fs::canonicalize(&store).unwrap_or(store);
        StoreFiles { state, resolved }
    })
    .await
    .unwrap_or_else(|e| StoreFiles {
        state: Err(std::io::Error::other(e)),
        resolved: fallback,
    })
}

/// `launchctl kickstart gui/<uid>/com.iai-mcp.daemon`, bounded.
async fn kickstart(settings: &WakeSettings, because: NotRunning) -> Kickstart {
    let command = CliCommand {
        program: settings.programs.launchctl.clone().into_os_string(),
        args: kickstart_args(settings.uid),
        env: Vec::new(),
        limit: settings.programs.launchctl_limit,
    };
    let shown = command.display();
    let error = match process::run(&command).await {
        Ok(out) if out.status.success() => {
            tracing::info!(
                event = event::WAKE_REQUESTED,
                how = "launchctl",
                outcome = "sent",
                command = %shown,
                reason = %because,
                "daemon unreachable and not running; launchctl kickstart sent"
            );
            return Kickstart::Sent { because };
        }
        Ok(out) => format!("exited with {}: {}", out.status, out.stderr_tail.trim()),
        Err(e) => e.to_string(),
    };
    tracing::warn!(
        event = event::WAKE_REQUESTED,
        how = "launchctl",
        outcome = "failed",
        command = %shown,
        reason = %because,
        error = %error,
        "launchctl kickstart failed"
    );
    Kickstart::Failed { because, error }
}

/// After the bridge's first connect attempt: if it failed, probe the
/// endpoint as `settings.probes` says (a connection the bridge made
/// meanwhile counts as an answer) and wake the daemon if none answered.
/// Once per wrapper; `None` when the daemon answered.
pub async fn wake_when_down(
    settings: WakeSettings,
    endpoint: Endpoint,
    mut status: watch::Receiver<LinkStatus>,
    state_dir: PathBuf,
    pid: u32,
    session: Uuid,
) -> Option<WakeReport> {
    let first = status
        .wait_for(|s| s.connects > 0 || s.failed_attempts > 0)
        .await
        .map(|s| *s)
        .ok()?;
    if first.connects > 0 {
        return None;
    }
    let answered = daemon_answers(settings.probes, |limit| {
        let connected = status.borrow().connected;
        let endpoint = &endpoint;
        async move { connected || endpoint.connect(limit).await.is_ok() }
    })
    .await;
    if answered {
        return None;
    }
    Some(wake(&settings, &state_dir, pid, session).await)
}
