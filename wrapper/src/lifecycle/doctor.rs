//! `iai-mcp doctor`: a health probe when the session starts, and the
//! auto-heal that restarts a daemon that stays down.
//!
//! On Linux without systemd nothing else brings a stopped daemon back:
//! `iai-mcp doctor --auto` does, by starting it in a session of its own.
//! The wrapper runs it once the daemon has been unreachable for
//! [`DoctorConfig::heal_after`], after checking that the endpoint it
//! actually dials still does not answer by the wake-up's rule (3.3.0's: 3
//! probes of 3 s, 2 s apart, so that a daemon that is only slow to answer
//! or still starting is not restarted), and at most once per
//! [`HEAL_COOLDOWN`] across every wrapper sharing the state directory (a
//! stamp file under an exclusive lock), so that many sessions do not all
//! restart the daemon. Neither the probe nor the heal ever delays an MCP
//! answer: both run as background tasks.

use std::ffi::OsString;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::watch;

use super::wake::{ProbeRule, daemon_answers};
use crate::bridge::LinkStatus;
use crate::files;
use crate::logging::{event, millis};
use crate::process::{self, CliCommand, RunError};
use crate::programs::Installation;
use crate::transport::Endpoint;

/// Whether the probe and the auto-heal run unless configured off.
pub const DEFAULT_ON: bool = true;
/// How long the daemon must stay unreachable before an auto-heal, by
/// default: the default connect wait, so a daemon that is merely restarting
/// is never "healed".
pub const DEFAULT_HEAL_AFTER: Duration = crate::bridge::policy::CONNECT_WAIT;

/// Longest run of `iai-mcp doctor` (the health probe).
pub const PROBE_LIMIT: Duration = Duration::from_secs(5);
/// Longest run of `iai-mcp doctor --auto`.
pub const HEAL_LIMIT: Duration = Duration::from_secs(60);
/// Least time between two auto-heals started by wrappers sharing a state
/// directory (the same damping `doctor --auto` applies to itself).
pub const HEAL_COOLDOWN: Duration = Duration::from_secs(6 * 3600);
/// While the daemon stays down after a heal attempt (made here, skipped for
/// the cooldown, or failed), how often to try again: a long session still
/// heals a daemon that dies hours after the last heal.
pub const HEAL_RETRY: Duration = Duration::from_secs(10 * 60);

/// Settings of the doctor probe and the auto-heal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DoctorConfig {
    /// Whether either runs at all.
    pub enabled: bool,
    /// The `iai-mcp` program.
    pub admin_cli: OsString,
    /// How long the daemon must stay unreachable before a heal.
    pub heal_after: Duration,
    /// Variables set for the commands (store and socket, when configured).
    pub env: Vec<(OsString, OsString)>,
}

impl DoctorConfig {
    /// The same settings with `iai-mcp` looked for in `installation`.
    pub fn located(self, installation: &Installation) -> Self {
        DoctorConfig {
            admin_cli: installation.run_as(&self.admin_cli),
            ..self
        }
    }

    fn command(&self, args: &[&str], limit: Duration) -> CliCommand {
        CliCommand {
            program: self.admin_cli.clone(),
            args: args.iter().map(OsString::from).collect(),
            env: self.env.clone(),
            limit,
        }
    }
}

/// The stamp file that spaces auto-heals out.
pub fn stamp_path(state_dir: &Path) -> PathBuf {
    state_dir.join("doctor-auto.stamp")
}

/// Run `iai-mcp doctor` once; on a failing verdict, write one warning line
/// to stderr. A missing program or a run past the limit is only logged.
pub async fn probe(config: &DoctorConfig) {
    let command = config.command(&["doctor"], PROBE_LIMIT);
    let shown = command.display();
    match process::run(&command).await {
        Ok(out) if out.status.success() => tracing::info!(
            event = event::DOCTOR_RUN,
            mode = "probe",
            outcome = "healthy",
            command = %shown,
            elapsed_ms = millis(out.elapsed),
            "`{shown}`: healthy"
        ),
        Ok(out) => {
            let code = exit_text(out.status);
            tracing::warn!(
                event = event::DOCTOR_RUN,
                mode = "probe",
                outcome = "problem",
                command = %shown,
                exit = %code,
                elapsed_ms = millis(out.elapsed),
                "`{shown}` reports a problem (exit {code}); run it for details. Memory tools may answer in degraded mode."
            );
        }
        Err(e @ RunError::NotFound(_)) => tracing::info!(
            event = event::DOCTOR_RUN,
            mode = "probe",
            outcome = "skipped",
            command = %shown,
            reason = %e,
            "doctor probe skipped"
        ),
        Err(e) => tracing::warn!(
            event = event::DOCTOR_RUN,
            mode = "probe",
            outcome = "failed",
            command = %shown,
            reason = %e,
            "doctor probe did not complete"
        ),
    }
}

/// A process's exit as a log field: its code, or how it ended without one.
fn exit_text(status: std::process::ExitStatus) -> String {
    status
        .code()
        .map_or_else(|| status.to_string(), |code| code.to_string())
}

/// Watch the connection and heal the daemon when it stays down; runs until
/// the wrapper exits.
pub async fn heal_when_down(
    config: DoctorConfig,
    state_dir: PathBuf,
    endpoint: Endpoint,
    mut status: watch::Receiver<LinkStatus>,
) {
    // Failed attempts already counted when the daemon was last seen up.
    let mut seen = 0;
    loop {
        // A down episode starts with a failed attempt while disconnected.
        if status
            .wait_for(|s| !s.connected && s.failed_attempts > seen)
            .await
            .is_err()
        {
            return;
        }
        let mut wait = config.heal_after;
        loop {
            let mut reconnected = status.clone();
            let still_down = tokio::select! {
                () = tokio::time::sleep(wait) => true,
                _ = reconnected.wait_for(|s| s.connected) => false,
            };
            if !still_down {
                break;
            }
            heal(&config, &state_dir, &endpoint).await;
            wait = HEAL_RETRY;
        }
        let Ok(up) = status
            .wait_for(|s| s.connected)
            .await
            .map(|s| s.failed_attempts)
        else {
            return;
        };
        seen = up;
    }
}

/// Whether the daemon at `endpoint` still counts as down: no probe of
/// `rule` connected. `doctor --auto` restarts the daemon, so one slow
/// answer must not be taken for a dead daemon.
async fn still_down(endpoint: &Endpoint, rule: ProbeRule) -> bool {
    !daemon_answers(rule, |limit| async move {
        endpoint.connect(limit).await.is_ok()
    })
    .await
}

/// One heal attempt: probe, claim the cooldown, run `doctor --auto`.
async fn heal(config: &DoctorConfig, state_dir: &Path, endpoint: &Endpoint) {
    let command = config.command(&["doctor", "--auto"], HEAL_LIMIT);
    let shown = command.display();
    if !still_down(endpoint, ProbeRule::default()).await {
        tracing::info!(
            event = event::DOCTOR_RUN,
            mode = "heal",
            outcome = "skipped",
            command = %shown,
            reason = "the daemon answers again",
            %endpoint,
            "daemon answers again; no heal needed"
        );
        return;
    }
    let stamp = stamp_path(state_dir);
    let claimed = {
        let stamp = stamp.clone();
        tokio::task::spawn_blocking(move || claim(&stamp, HEAL_COOLDOWN, SystemTime::now()))
            .await
            .unwrap_or_else(|e| Err(std::io::Error::other(e)))
    };
    match claimed {
        Ok(true) => {}
        Ok(false) => {
            tracing::info!(
                event = event::DOCTOR_RUN,
                mode = "heal",
                outcome = "skipped",
                command = %shown,
                reason = "ran recently, or another wrapper is claiming it",
                stamp = %stamp.display(),
                "auto-heal ran recently (or another wrapper is claiming it); skipped"
            );
            return;
        }
        Err(e) => {
            tracing::warn!(
                event = event::DOCTOR_RUN,
                mode = "heal",
                outcome = "skipped",
                command = %shown,
                reason = %format!("the stamp is unusable: {e}"),
                stamp = %stamp.display(),
                "auto-heal stamp unusable; skipped"
            );
            return;
        }
    }
    tracing::warn!(%endpoint, after = ?config.heal_after, "daemon still unreachable; running `{shown}`");
    match process::run_detached(&command).await {
        Ok(out) if out.status.success() => tracing::info!(
            event = event::DOCTOR_RUN,
            mode = "heal",
            outcome = "healed",
            command = %shown,
            elapsed_ms = millis(out.elapsed),
            "auto-heal finished"
        ),
        Ok(out) => tracing::warn!(
            event = event::DOCTOR_RUN,
            mode = "heal",
            outcome = "problem",
            command = %shown,
            exit = %exit_text(out.status),
            stderr = %out.stderr_tail,
            "auto-heal failed"
        ),
        Err(e) => tracing::warn!(
            event = event::DOCTOR_RUN,
            mode = "heal",
            outcome = "failed",
            command = %shown,
            reason = %e,
            "auto-heal did not run"
        ),
    }
}

/// Take the right to heal now: under an exclusive lock on the stamp file,
/// check that the last heal it records is older than `cooldown`, and
/// record `now`. `Ok(false)` when another wrapper is claiming at this very
/// moment or the last heal is recent. A stamp in the future (the clock was
/// set back) counts as stale, so it cannot block heals for hours.
pub fn claim(stamp: &Path, cooldown: Duration, now: SystemTime) -> std::io::Result<bool> {
    if let Some(dir) = stamp.parent() {
        files::create_private_dir(dir)?;
    }
    let Some(mut file) = lock_stamp(stamp)? else {
        return Ok(false);
    };
    let mut text = String::new();
    file.read_to_string(&mut text)?;
    let secs = |t: SystemTime| t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    if let Ok(last) = text.trim().parse::<u64>()
        && last <= secs(now)
        && secs(now) - last < cooldown.as_secs()
    {
        return Ok(false);
    }
    file.set_len(0)?;
    file.rewind()?;
    writeln!(file, "{}", secs(now))?;
    file.sync_data()?;
    Ok(true)
}

/// The stamp file, open for reading and writing and held exclusively
/// until dropped.
#[cfg(unix)]
type LockedStamp = nix::fcntl::Flock<std::fs::File>;
/// The stamp file, open for reading and writing and held exclusively
/// until dropped.
#[cfg(windows)]
type LockedStamp = std::fs::File;

/// Open the stamp (creating it) under an exclusive lock: `None` when
/// another process holds it. Unix: a non-blocking `flock`.
#[cfg(unix)]
fn lock_stamp(stamp: &Path) -> std::io::Result<Option<LockedStamp>> {
    use nix::fcntl::{Flock, FlockArg};
    let file = files::private_file_options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(stamp)?;
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(locked) => Ok(Some(locked)),
        Err((_, nix::errno::Errno::EWOULDBLOCK)) => Ok(None),
        Err((_, e)) => Err(e.into()),
    }
}

/// Open the stamp (creating it) under an exclusive lock: `None` when
/// another process holds it. Windows: the file opened with no sharing, so
/// every other open fails with a sharing violation while it is held.
#[cfg(windows)]
fn lock_stamp(stamp: &Path) -> std::io::Result<Option<LockedStamp>> {
    use std::os::windows::fs::OpenOptionsExt;
    /// `ERROR_SHARING_VIOLATION`: another process has the file open.
    const SHARING_VIOLATION: i32 = 32;
    let opened = files::private_file_options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .share_mode(0)
        .open(stamp);
    match opened {
        Ok(file) => Ok(Some(file)),
        Err(e) if e.raw_os_error() == Some(SHARING_VIOLATION) => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[tokio::test(start_paused = true)]
    async fn a_daemon_that_binds_between_probes_is_not_healed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("d.sock");
        let endpoint = Endpoint::Unix(path.clone());
        // The first probe finds no socket; the daemon binds during the
        // pause before the second.
        let binds = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            tokio::net::UnixListener::bind(&path).expect("bind")
        });
        let started = tokio::time::Instant::now();
        let probing = still_down(&endpoint, ProbeRule::default());
        let (down, listener) = tokio::join!(probing, binds);
        let _listener = listener.expect("bound");
        assert!(!down, "the second probe connects");
        assert_eq!(started.elapsed(), ProbeRule::default().delay);
    }

    #[cfg(unix)]
    #[tokio::test(start_paused = true)]
    async fn a_daemon_down_through_every_probe_is_down() {
        let dir = tempfile::tempdir().expect("tempdir");
        let endpoint = Endpoint::Unix(dir.path().join("absent.sock"));
        let started = tokio::time::Instant::now();
        assert!(still_down(&endpoint, ProbeRule::default()).await);
        // Three probes, two pauses between them.
        assert_eq!(started.elapsed(), ProbeRule::default().delay * 2);
    }

    #[test]
    fn the_cooldown_allows_one_heal_per_period() {
        let dir = tempfile::tempdir().expect("tempdir");
        let stamp = stamp_path(&dir.path().join("state"));
        let t0 = UNIX_EPOCH + Duration::from_secs(1_000_000);
        let hour = Duration::from_secs(3600);
        assert!(claim(&stamp, HEAL_COOLDOWN, t0).expect("claim"));
        assert!(!claim(&stamp, HEAL_COOLDOWN, t0 + hour).expect("claim"));
        assert!(claim(&stamp, HEAL_COOLDOWN, t0 + 7 * hour).expect("claim"));
        std::fs::write(&stamp, "garbage").expect("write");
        assert!(claim(&stamp, HEAL_COOLDOWN, t0).expect("an unreadable stamp does not block"));
        // The clock set back: a stamp from the future does not block.
        assert!(claim(&stamp, HEAL_COOLDOWN, t0 + 100 * hour).expect("claim"));
        assert!(
            claim(&stamp, HEAL_COOLDOWN, t0).expect("claim"),
            "a stamp in the future is stale"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_held_lock_means_another_wrapper_is_healing() {
        use nix::fcntl::{Flock, FlockArg};
        let dir = tempfile::tempdir().expect("tempdir");
        let stamp = stamp_path(dir.path());
        std::fs::write(&stamp, "").expect("create");
        let held = Flock::lock(
            std::fs::File::open(&stamp).expect("open"),
            FlockArg::LockExclusive,
        )
        .map_err(|(_, e)| e)
        .expect("lock");
        assert!(!claim(&stamp, HEAL_COOLDOWN, SystemTime::now()).expect("claim"));
        drop(held);
        assert!(claim(&stamp, HEAL_COOLDOWN, SystemTime::now()).expect("claim"));
    }
}
