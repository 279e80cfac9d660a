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

use super::daemon_state::DaemonRun;
use super::verdict::{self, Verdict, Verdicts};
use super::wake::{ProbeRule, daemon_answers};
use crate::bridge::LinkStatus;
use crate::files::{self, LockedFile};
use crate::log_names::{self as event, millis};
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
    /// How long the probe's verdict stands for later sessions of the same
    /// daemon run.
    pub verdict_max_age: Duration,
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

/// How long a session waits for another wrapper's doctor run before it
/// runs its own: that run is bounded by [`PROBE_LIMIT`].
const TURN_WAIT: Duration = Duration::from_secs(6);

/// How often a session waiting for another wrapper's doctor run looks
/// whether its turn has come.
const TURN_POLL: Duration = Duration::from_millis(50);

/// What one doctor probe found.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Probe {
    /// It exited 0.
    Healthy {
        /// How long it ran.
        elapsed: Duration,
    },
    /// It exited with another code, or without one.
    Problem {
        /// The code, or how it ended.
        exit: String,
        /// The code, when it had one (what a verdict keeps).
        code: Option<i32>,
        /// How long it ran.
        elapsed: Duration,
    },
    /// The program is not installed.
    Skipped(String),
    /// It did not complete (killed at its limit, could not start).
    Failed(String),
}

/// Where a session's verdict came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// The doctor ran for this session.
    Ran,
    /// Another session of the same daemon run reached it.
    Kept,
}

impl Source {
    fn as_str(self) -> &'static str {
        match self {
            Source::Ran => "ran",
            Source::Kept => "kept",
        }
    }
}

/// The doctor's verdict for a session that has just started: the one kept
/// for the daemon's current run when it stands, else `iai-mcp doctor` run
/// (by one session per run, the others waiting for its verdict) and its
/// verdict kept. On a failing verdict one warning line goes to stderr,
/// whichever session reached it. With no daemon run recorded in `store`'s
/// state file, or a state directory that cannot be written, the doctor
/// runs for this session, as iai-mcp's own wrapper does.
pub async fn probe_for_session(config: &DoctorConfig, state_dir: &Path, store: Option<&Path>) {
    let run = match store {
        Some(store) => {
            let store = store.to_path_buf();
            tokio::task::spawn_blocking(move || verdict::current_run(&store))
                .await
                .ok()
                .flatten()
        }
        None => None,
    };
    let Some(run) = run else {
        report(config, &run_probe(config).await, Source::Ran);
        return;
    };
    let verdicts = Verdicts::in_state_dir(state_dir);
    let give_up = tokio::time::Instant::now() + TURN_WAIT;
    loop {
        let turn = {
            let verdicts = verdicts.clone();
            let run = run.clone();
            let max_age = config.verdict_max_age;
            tokio::task::spawn_blocking(move || take_turn(&verdicts, &run, max_age))
                .await
                .unwrap_or_else(|e| Turn::Unusable(e.to_string()))
        };
        match turn {
            Turn::Kept(verdict) => {
                report(config, &kept_probe(&verdict), Source::Kept);
                return;
            }
            Turn::Ours(lock) => {
                let probe = run_probe(config).await;
                // Kept before it is told, so that a session that has told
                // its verdict has left it for the next one.
                keep(&verdicts, &run, &probe).await;
                drop(lock);
                report(config, &probe, Source::Ran);
                return;
            }
            Turn::Unusable(why) => {
                tracing::debug!(reason = %why, "doctor verdicts unusable; running the doctor");
                report(config, &run_probe(config).await, Source::Ran);
                return;
            }
            Turn::Taken if tokio::time::Instant::now() >= give_up => {
                report(config, &run_probe(config).await, Source::Ran);
                return;
            }
            Turn::Taken => tokio::time::sleep(TURN_POLL).await,
        }
    }
}

/// What a session finds when it looks for a verdict.
enum Turn {
    /// A verdict that stands for the run.
    Kept(Verdict),
    /// No such verdict, and the right to run the doctor (held until
    /// dropped).
    Ours(LockedFile),
    /// Another wrapper is running the doctor.
    Taken,
    /// The verdicts' directory cannot be used.
    Unusable(String),
}

/// Looks for a verdict that stands for `run`, else takes the turn to reach
/// one (looking again once it is held: the wrapper that had it may have
/// just kept one).
fn take_turn(verdicts: &Verdicts, run: &DaemonRun, max_age: Duration) -> Turn {
    let standing = |verdicts: &Verdicts| {
        verdicts
            .kept()
            .filter(|v| v.stands_for(run, SystemTime::now(), max_age))
    };
    if let Some(verdict) = standing(verdicts) {
        return Turn::Kept(verdict);
    }
    match verdicts.try_turn() {
        Ok(Some(lock)) => match standing(verdicts) {
            Some(verdict) => Turn::Kept(verdict),
            None => Turn::Ours(lock),
        },
        Ok(None) => Turn::Taken,
        Err(e) => Turn::Unusable(e.to_string()),
    }
}

/// Keeps what `probe` found for `run`, when it is a verdict (the doctor
/// exited with a code); a run that did not complete leaves the next
/// session to try again.
async fn keep(verdicts: &Verdicts, run: &DaemonRun, probe: &Probe) {
    let exit = match probe {
        Probe::Healthy { .. } => 0,
        Probe::Problem {
            code: Some(code), ..
        } => *code,
        Probe::Problem { code: None, .. } | Probe::Skipped(_) | Probe::Failed(_) => return,
    };
    let verdict = Verdict {
        run: run.clone(),
        exit,
        checked_at: verdict::seconds(SystemTime::now()),
    };
    let verdicts = verdicts.clone();
    let kept = tokio::task::spawn_blocking(move || verdicts.keep(&verdict)).await;
    if let Ok(Err(e)) | Err(e) = kept.map_err(std::io::Error::other) {
        tracing::debug!(error = %e, "the doctor's verdict could not be kept");
    }
}

/// What a kept verdict says, as a probe.
fn kept_probe(verdict: &Verdict) -> Probe {
    if verdict.exit == 0 {
        Probe::Healthy {
            elapsed: Duration::ZERO,
        }
    } else {
        Probe::Problem {
            exit: verdict.exit.to_string(),
            code: Some(verdict.exit),
            elapsed: Duration::ZERO,
        }
    }
}

/// Runs `iai-mcp doctor` once, killed at [`PROBE_LIMIT`].
async fn run_probe(config: &DoctorConfig) -> Probe {
    let command = config.command(&["doctor"], PROBE_LIMIT);
    match process::run(&command).await {
        Ok(out) if out.status.success() => Probe::Healthy {
            elapsed: out.elapsed,
        },
        Ok(out) => Probe::Problem {
            exit: exit_text(out.status),
            code: out.status.code(),
            elapsed: out.elapsed,
        },
        Err(e @ RunError::NotFound(_)) => Probe::Skipped(e.to_string()),
        Err(e) => Probe::Failed(e.to_string()),
    }
}

/// Logs what the probe found (`doctor_run`, mode `probe`): a warning line
/// for a failing verdict, whether this session ran the doctor or another
/// session of the same daemon run did.
fn report(config: &DoctorConfig, probe: &Probe, source: Source) {
    let verdict = source.as_str();
    let shown = config.command(&["doctor"], PROBE_LIMIT).display();
    match probe {
        Probe::Healthy { elapsed } => tracing::info!(
            event = event::DOCTOR_RUN,
            mode = "probe",
            outcome = "healthy",
            verdict,
            command = %shown,
            elapsed_ms = millis(*elapsed),
            "`{shown}`: healthy"
        ),
        Probe::Problem { exit, elapsed, .. } => tracing::warn!(
            event = event::DOCTOR_RUN,
            mode = "probe",
            outcome = "problem",
            verdict,
            command = %shown,
            exit = %exit,
            elapsed_ms = millis(*elapsed),
            "`{shown}` reports a problem (exit {exit}); run it for details. Memory tools may answer in degraded mode."
        ),
        Probe::Skipped(reason) => tracing::info!(
            event = event::DOCTOR_RUN,
            mode = "probe",
            outcome = "skipped",
            verdict,
            command = %shown,
            reason = %reason,
            "doctor probe skipped"
        ),
        Probe::Failed(reason) => tracing::warn!(
            event = event::DOCTOR_RUN,
            mode = "probe",
            outcome = "failed",
            verdict,
            command = %shown,
            reason = %reason,
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
    let Some(mut file) = files::try_lock_exclusive(stamp)? else {
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
