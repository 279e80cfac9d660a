//! Whether the daemon's own process is alive, read from what the daemon
//! leaves behind: its pid in the store's state file, and the process title
//! it gives itself. Decisions only: the wake-up ([`super::wake`]) reads the
//! file and runs `ps`, and hands the text here.
//!
//! iai-mcp 3.3.0's daemon writes `{"daemon_pid": <pid>, ...}` to
//! `<store>/.daemon-state.json` and titles its process
//! `iai lilli (iai_mcp.daemon) store=<store, resolved>`. A daemon whose
//! socket does not answer yet but whose process is alive and serves this
//! store is starting (or busy), and must not be started a second time.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The daemon's state file, under its store.
pub const STATE_FILE: &str = ".daemon-state.json";
/// What every daemon's process title contains.
pub const TITLE_MARKER: &str = "iai_mcp.daemon";
/// What precedes the store in the daemon's process title.
const STORE_MARKER: &str = "store=";

/// Path of the daemon's state file for `store`.
pub fn state_file(store: &Path) -> PathBuf {
    store.join(STATE_FILE)
}

/// The daemon's pid, from the state file's text: a positive whole number
/// under `daemon_pid`. `None` for anything else (not JSON, no such member,
/// zero, negative, fractional, or too large for a pid).
pub fn pid_from_state(text: &str) -> Option<u32> {
    let state: serde_json::Value = serde_json::from_str(text).ok()?;
    let pid = state.get("daemon_pid")?.as_u64()?;
    u32::try_from(pid)
        .ok()
        .filter(|pid| *pid > 0 && i32::try_from(*pid).is_ok())
}

/// `ps`'s arguments that print only `pid`'s command line (its title), or
/// nothing and a failure when there is no such process.
pub fn ps_args(pid: u32) -> Vec<OsString> {
    ["-o", "command=", "-p"]
        .into_iter()
        .map(OsString::from)
        .chain([OsString::from(pid.to_string())])
        .collect()
}

/// What a process title says about the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Title {
    /// The daemon of this store, or a daemon that names no store (as
    /// releases before the store was put in the title do).
    DaemonOfThisStore,
    /// A daemon serving another store.
    DaemonOfAnotherStore,
    /// Some other program, which took the pid after the daemon exited.
    NotTheDaemon,
}

/// Reads `ps`'s output for the daemon's pid against `store` (resolved, as
/// the daemon resolves it): the title must name [`TITLE_MARKER`], and the
/// text after `store=`, if there is one, must be `store` itself or start
/// with it and a space.
pub fn read_title(ps_output: &str, store: &Path) -> Title {
    if !ps_output.contains(TITLE_MARKER) {
        return Title::NotTheDaemon;
    }
    let Some(at) = ps_output.find(STORE_MARKER) else {
        return Title::DaemonOfThisStore;
    };
    let claimed = ps_output[at + STORE_MARKER.len()..].trim();
    let store = store.to_string_lossy();
    let same = claimed == store
        || claimed
            .strip_prefix(store.as_ref())
            .is_some_and(|rest| rest.starts_with(' '));
    if same {
        Title::DaemonOfThisStore
    } else {
        Title::DaemonOfAnotherStore
    }
}

/// What was found out about the daemon's process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DaemonProcess {
    /// Alive, and the daemon of this store.
    Alive {
        /// Its pid.
        pid: u32,
    },
    /// Not known to be alive: nothing holds it back from being started.
    NotRunning(NotRunning),
}

/// Why the daemon's process does not count as alive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotRunning {
    /// No store is known (no `IAI_MCP_STORE` and no home directory).
    NoStore,
    /// The state file could not be read (most often: it does not exist).
    StateFileUnreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        error: String,
    },
    /// The state file holds no usable pid.
    NoPid {
        /// The file.
        path: PathBuf,
    },
    /// `ps` did not report on the pid: no such process, or `ps` missing,
    /// failing or too slow.
    PsFailed {
        /// The pid asked about.
        pid: u32,
        /// What happened.
        error: String,
    },
    /// The pid is another program's now.
    NotTheDaemon {
        /// The pid.
        pid: u32,
        /// Its title.
        title: String,
    },
    /// The pid is a daemon of another store.
    AnotherStore {
        /// The pid.
        pid: u32,
        /// Its title.
        title: String,
    },
}

impl DaemonProcess {
    /// The verdict on `ps`'s successful output for `pid`.
    pub fn from_title(pid: u32, ps_output: &str, store: &Path) -> Self {
        let title = ps_output.trim().to_owned();
        match read_title(ps_output, store) {
            Title::DaemonOfThisStore => DaemonProcess::Alive { pid },
            Title::DaemonOfAnotherStore => {
                DaemonProcess::NotRunning(NotRunning::AnotherStore { pid, title })
            }
            Title::NotTheDaemon => {
                DaemonProcess::NotRunning(NotRunning::NotTheDaemon { pid, title })
            }
        }
    }
}

impl std::fmt::Display for NotRunning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotRunning::NoStore => f.write_str("no store is known"),
            NotRunning::StateFileUnreadable { path, error } => {
                write!(f, "{} cannot be read: {error}", path.display())
            }
            NotRunning::NoPid { path } => write!(f, "{} holds no daemon_pid", path.display()),
            NotRunning::PsFailed { pid, error } => {
                write!(f, "ps found no process {pid}: {error}")
            }
            NotRunning::NotTheDaemon { pid, title } => {
                write!(f, "process {pid} is not the daemon ({title:?})")
            }
            NotRunning::AnotherStore { pid, title } => {
                write!(
                    f,
                    "process {pid} is the daemon of another store ({title:?})"
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pid_is_a_positive_whole_daemon_pid() {
        assert_eq!(
            pid_from_state(r#"{"daemon_pid": 4242, "x": 1}"#),
            Some(4242)
        );
        for garbage in [
            "",
            "not json",
            "[4242]",
            "{}",
            r#"{"daemon_pid": null}"#,
            r#"{"daemon_pid": "4242"}"#,
            r#"{"daemon_pid": 0}"#,
            r#"{"daemon_pid": -7}"#,
            r#"{"daemon_pid": 42.5}"#,
            r#"{"daemon_pid": 4294967296}"#,
            r#"{"daemon_pid": 2147483648}"#,
        ] {
            assert_eq!(pid_from_state(garbage), None, "{garbage}");
        }
    }

    #[test]
    fn ps_is_asked_for_the_command_line_only() {
        assert_eq!(ps_args(17), ["-o", "command=", "-p", "17"]);
    }

    #[test]
    fn titles_are_read_as_3_3_0_reads_them() {
        let store = Path::new("/Users/u/.iai-mcp");
        let ours = "iai lilli (iai_mcp.daemon) store=/Users/u/.iai-mcp\n";
        assert_eq!(read_title(ours, store), Title::DaemonOfThisStore);
        assert_eq!(
            read_title(
                "iai lilli (iai_mcp.daemon) store=/Users/u/.iai-mcp --x\n",
                store
            ),
            Title::DaemonOfThisStore
        );
        assert_eq!(
            read_title("python -m iai_mcp.daemon\n", store),
            Title::DaemonOfThisStore,
            "a daemon naming no store counts as this store's"
        );
        assert_eq!(
            read_title(
                "iai lilli (iai_mcp.daemon) store=/Users/u/.iai-mcp-2\n",
                store
            ),
            Title::DaemonOfAnotherStore
        );
        assert_eq!(
            read_title("iai lilli (iai_mcp.daemon) store=/tmp/other\n", store),
            Title::DaemonOfAnotherStore
        );
        assert_eq!(
            read_title("/usr/bin/vim notes\n", store),
            Title::NotTheDaemon
        );
        assert_eq!(read_title("", store), Title::NotTheDaemon);
    }

    #[test]
    fn the_verdict_keeps_what_ps_said() {
        let store = Path::new("/s");
        assert_eq!(
            DaemonProcess::from_title(9, "x iai_mcp.daemon store=/s\n", store),
            DaemonProcess::Alive { pid: 9 }
        );
        assert_eq!(
            DaemonProcess::from_title(9, "sleep 100\n", store),
            DaemonProcess::NotRunning(NotRunning::NotTheDaemon {
                pid: 9,
                title: "sleep 100".into()
            })
        );
    }
}
