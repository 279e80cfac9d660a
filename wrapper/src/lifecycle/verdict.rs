//! The doctor's verdict, kept once per run of the daemon, so that every
//! session of that run shows the warning its verdict calls for without
//! running `iai-mcp doctor` again (about 0.7 s of CPU and 100 MB each).
//!
//! The verdict is kept in this wrapper's own directory of the state
//! directory (`iai-mcp-wrapper/doctor/verdict.json`, where a write wakes no
//! watch of `~/.iai-mcp`), with the run it is about: the daemon's pid and
//! start time from its state file ([`DaemonRun`]). A verdict of another
//! run, or older than the bound set, is stale. Sessions starting at once
//! take turns under an exclusive lock (`run.lock` beside it): the first
//! runs the doctor, the others find its verdict once the lock is free.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::daemon_state::{self, DaemonRun};
use crate::files::{self, LockedFile};

/// How long a verdict stands, by default, within one run of the daemon.
pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(3600);

/// Largest verdict file read.
const MAX_VERDICT_FILE: u64 = 64 * 1024;

/// What the doctor said about one run of the daemon.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// The run it is about.
    pub run: DaemonRun,
    /// The doctor's exit code: 0 for healthy, anything else a problem.
    pub exit: i32,
    /// When it was reached, in seconds since the Unix epoch.
    pub checked_at: u64,
}

impl Verdict {
    /// Whether it stands for `run` at `now`: the same run, and reached
    /// less than `max_age` ago (a verdict from the future, the clock set
    /// back, stands no longer).
    pub fn stands_for(&self, run: &DaemonRun, now: SystemTime, max_age: Duration) -> bool {
        let now = seconds(now);
        self.run == *run && self.checked_at <= now && now - self.checked_at < max_age.as_secs()
    }
}

/// Where the verdicts are kept.
#[derive(Debug, Clone)]
pub struct Verdicts {
    dir: PathBuf,
}

impl Verdicts {
    /// The verdicts kept in the state directory `state_dir`.
    pub fn in_state_dir(state_dir: &Path) -> Verdicts {
        Verdicts {
            dir: files::own_dir(state_dir).join("doctor"),
        }
    }

    fn verdict_path(&self) -> PathBuf {
        self.dir.join("verdict.json")
    }

    /// The verdict kept, if it can be read.
    pub fn kept(&self) -> Option<Verdict> {
        let path = self.verdict_path();
        let metadata = std::fs::metadata(&path).ok()?;
        if !metadata.is_file() || metadata.len() > MAX_VERDICT_FILE {
            return None;
        }
        serde_json::from_slice(&std::fs::read(path).ok()?).ok()
    }

    /// Keeps `verdict` (replacing the one kept).
    pub fn keep(&self, verdict: &Verdict) -> std::io::Result<()> {
        let text = serde_json::to_vec(verdict).map_err(std::io::Error::other)?;
        files::write_atomic(&self.verdict_path(), &text)
    }

    /// The right to run the doctor now, if no other wrapper holds it: an
    /// exclusive lock, let go when dropped (or when its holder dies).
    pub fn try_turn(&self) -> std::io::Result<Option<LockedFile>> {
        files::create_private_dir(&self.dir)?;
        files::try_lock_exclusive(&self.dir.join("run.lock"))
    }
}

/// The run of the daemon that the state file in `store` records, if one
/// is recorded.
pub fn current_run(store: &Path) -> Option<DaemonRun> {
    let text = daemon_state::read(&super::daemon_process::state_file(store)).ok()?;
    DaemonRun::from_state(&text)
}

/// Seconds since the Unix epoch (0 before it).
pub fn seconds(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(pid: u32, started: &str) -> DaemonRun {
        DaemonRun {
            daemon_pid: pid,
            daemon_started_at: started.into(),
        }
    }

    #[test]
    fn a_verdict_stands_for_its_own_run_while_it_is_young() {
        let now = UNIX_EPOCH + Duration::from_secs(1_000_000);
        let verdict = Verdict {
            run: run(42, "t1"),
            exit: 1,
            checked_at: seconds(now),
        };
        let hour = Duration::from_secs(3600);
        assert!(verdict.stands_for(&run(42, "t1"), now + hour / 2, hour));
        assert!(!verdict.stands_for(&run(42, "t1"), now + hour, hour));
        assert!(!verdict.stands_for(&run(42, "t2"), now, hour), "restarted");
        assert!(!verdict.stands_for(&run(43, "t1"), now, hour));
        assert!(
            !verdict.stands_for(&run(42, "t1"), now - hour, hour),
            "from the future"
        );
    }

    #[test]
    fn verdicts_are_kept_and_turns_taken_one_at_a_time() {
        let dir = tempfile::tempdir().expect("tempdir");
        let verdicts = Verdicts::in_state_dir(dir.path());
        assert_eq!(verdicts.kept(), None);
        let verdict = Verdict {
            run: run(42, "t1"),
            exit: 0,
            checked_at: 7,
        };
        verdicts.keep(&verdict).expect("kept");
        assert_eq!(verdicts.kept(), Some(verdict));
        let turn = verdicts.try_turn().expect("lockable").expect("free");
        assert!(
            verdicts.try_turn().expect("lockable").is_none(),
            "held by the first"
        );
        drop(turn);
        assert!(verdicts.try_turn().expect("lockable").is_some());
        std::fs::write(verdicts.verdict_path(), "{ broken").expect("write");
        assert_eq!(verdicts.kept(), None, "an unreadable verdict is none");
    }
}
