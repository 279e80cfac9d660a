//! The daemon's state file (`<store>/.daemon-state.json`): reading it
//! safely, and what in it tells one run of the daemon from another.
//!
//! iai-mcp 3.3.0's daemon writes `daemon_pid` and `daemon_started_at` into
//! it at boot, and rewrites the file at every `session_open`: the file
//! changing is no sign of a new run, those two members are.

use std::io::Read;
use std::path::Path;

use serde::Deserialize;

/// Largest state file read; the daemon's holds a few kilobytes.
pub const MAX_STATE_FILE: u64 = 1024 * 1024;

/// The state file's text, at most [`MAX_STATE_FILE`] bytes of it. Only a
/// regular file is opened: opening a FIFO put at its path would wait for a
/// writer, and its reader with it.
pub fn read(path: &Path) -> std::io::Result<String> {
    if !std::fs::metadata(path)?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(MAX_STATE_FILE)
        .read_to_string(&mut text)?;
    Ok(text)
}

/// One run of the daemon: its pid and when it started, as its state file
/// records them.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
pub struct DaemonRun {
    /// The daemon's pid.
    pub daemon_pid: u32,
    /// When it started (ISO-8601, as the daemon wrote it).
    pub daemon_started_at: String,
}

impl DaemonRun {
    /// The run a state file's text records: a positive pid and a
    /// non-empty start time. `None` for anything else (no daemon has
    /// booted, or the file is not the daemon's).
    pub fn from_state(text: &str) -> Option<DaemonRun> {
        let run: DaemonRun = serde_json::from_str::<RunMembers>(text).ok()?.into_run()?;
        Some(run)
    }
}

/// The state file's members that identify a run, each read leniently:
/// every other member is skipped, and one of another type means no run.
#[derive(Deserialize)]
struct RunMembers {
    #[serde(default)]
    daemon_pid: Option<serde_json::Value>,
    #[serde(default)]
    daemon_started_at: Option<serde_json::Value>,
}

impl RunMembers {
    fn into_run(self) -> Option<DaemonRun> {
        let pid = self.daemon_pid?.as_u64()?;
        let pid = u32::try_from(pid).ok().filter(|pid| *pid > 0)?;
        let started = self.daemon_started_at?.as_str()?.to_owned();
        (!started.is_empty() && started.len() <= 64).then_some(DaemonRun {
            daemon_pid: pid,
            daemon_started_at: started,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_its_pid_and_start_time() {
        let run = DaemonRun::from_state(
            r#"{"fsm_state": "WAKE", "daemon_pid": 4242, "daemon_started_at": "2026-12-06T01:02:03+00:00", "sessions": [1, 2]}"#,
        );
        assert_eq!(
            run,
            Some(DaemonRun {
                daemon_pid: 4242,
                daemon_started_at: "2026-12-06T01:02:03+00:00".into()
            })
        );
        for no_run in [
            r#"{"daemon_pid": 4242}"#,
            r#"{"daemon_started_at": "2026-12-06T01:02:03+00:00"}"#,
            r#"{"daemon_pid": 0, "daemon_started_at": "t"}"#,
            r#"{"daemon_pid": "4242", "daemon_started_at": "t"}"#,
            r#"{"daemon_pid": 4242, "daemon_started_at": ""}"#,
            r#"{"daemon_pid": 4242, "daemon_started_at": 17}"#,
            "[]",
            "not json",
            "",
        ] {
            assert_eq!(DaemonRun::from_state(no_run), None, "{no_run}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn only_a_regular_file_is_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fifo = dir.path().join(".daemon-state.json");
        nix::unistd::mkfifo(
            &fifo,
            nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR,
        )
        .expect("mkfifo");
        assert!(read(&fifo).is_err(), "a FIFO is refused, never opened");
        assert!(read(&dir.path().join("absent")).is_err());
    }
}
