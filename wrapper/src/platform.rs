//! The operating system the wrapper behaves for, as a value.
//!
//! iai-mcp 3.3.0 ships for Linux, macOS and Windows, and does a few things
//! differently on each (how its daemon is supervised and woken, where host
//! configuration files live, whether the daemon listens on a Unix socket
//! or on loopback TCP). Those decisions are made on a [`Platform`] value
//! rather than with `cfg` where they are taken, so every platform's
//! decisions can be tested on any machine; only [`Platform::current`]
//! reads the build target. Unix systems iai-mcp does not ship for (the
//! BSDs, say) behave as Linux does.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// An operating system iai-mcp ships for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Platform {
    /// Linux, and any other Unix but macOS: a systemd user unit supervises
    /// the daemon, which listens on a Unix socket.
    Linux,
    /// macOS: launchd supervises the daemon (`com.iai-mcp.daemon`), which
    /// listens on a Unix socket.
    MacOs,
    /// Windows: a scheduled task supervises the daemon, which listens on
    /// loopback TCP and writes its port and token to files.
    Windows,
}

impl Platform {
    /// The platform this binary was built for.
    pub const fn current() -> Platform {
        if cfg!(target_os = "macos") {
            Platform::MacOs
        } else if cfg!(windows) {
            Platform::Windows
        } else {
            Platform::Linux
        }
    }

    /// Longest Unix socket path in bytes, the terminating NUL left out:
    /// `sun_path` holds 104 bytes on macOS and 108 on Linux (and in
    /// Windows' `afunix.h`, though the wrapper dials TCP there).
    pub fn max_socket_path(self) -> usize {
        match self {
            Platform::MacOs => 103,
            Platform::Linux | Platform::Windows => 107,
        }
    }

    /// The name used in logs and reports.
    pub fn name(self) -> &'static str {
        match self {
            Platform::Linux => "linux",
            Platform::MacOs => "macos",
            Platform::Windows => "windows",
        }
    }

    /// The separator of the paths this platform's users read and write:
    /// `\` on Windows, `/` elsewhere (for messages that show a path, so
    /// that a path made on one platform for another reads as that one's).
    pub fn separator(self) -> char {
        match self {
            Platform::Linux | Platform::MacOs => '/',
            Platform::Windows => '\\',
        }
    }

    /// How the daemon listens when nothing is configured: on a Unix socket,
    /// or (Windows) on loopback TCP with its port and token in files.
    pub fn daemon_transport(self) -> Transport {
        match self {
            Platform::Linux | Platform::MacOs => Transport::UnixSocket,
            Platform::Windows => Transport::Tcp,
        }
    }

    /// The environment variable that names the user's profile directory,
    /// where the daemon's base directory `.iai-mcp` is (for messages).
    pub fn home_variable(self) -> &'static str {
        match self {
            Platform::Linux | Platform::MacOs => "HOME",
            Platform::Windows => "USERPROFILE",
        }
    }

    /// The user's profile directory, as iai-mcp 3.3.0 finds it, from the
    /// environment variables `var` returns (an empty value counts as
    /// unset). Unix: `HOME`. Windows: `USERPROFILE`, else `HOMEDRIVE`
    /// followed by `HOMEPATH`, as Python's `Path.home()` does for the
    /// daemon (Node's `os.homedir()` reads `USERPROFILE` first too);
    /// `HOME` is not read there, so a `HOME` left over from a Unix-like
    /// shell cannot send the wrapper to another directory than the daemon.
    pub fn profile_dir(self, lookup: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
        let var = |name: &str| lookup(name).filter(|value| !value.is_empty());
        match self {
            Platform::Linux | Platform::MacOs => var("HOME").map(PathBuf::from),
            Platform::Windows => var("USERPROFILE").map(PathBuf::from).or_else(|| {
                let mut joined = var("HOMEDRIVE")?;
                joined.push(var("HOMEPATH")?);
                Some(PathBuf::from(joined))
            }),
        }
    }

    /// The file name a bare program name stands for: Windows programs end
    /// in `.exe` (a name that already has an extension is kept).
    pub fn program_file_name(self, name: &OsStr) -> OsString {
        let mut file = name.to_owned();
        if self == Platform::Windows && Path::new(name).extension().is_none() {
            file.push(".exe");
        }
        file
    }

    /// The directories of a Python installation whose interpreter is in
    /// `python_dir` that hold its console programs (`iai`, `iai-mcp`, and
    /// this wrapper when installed by pip): beside the interpreter on
    /// Unix (`venv/bin`); on Windows, beside it (`venv\Scripts`) and in
    /// its `Scripts` directory (a base installation's `python.exe` sits
    /// above it).
    pub fn program_dirs(self, python_dir: &Path) -> Vec<PathBuf> {
        match self {
            Platform::Linux | Platform::MacOs => vec![python_dir.to_owned()],
            Platform::Windows => vec![python_dir.to_owned(), python_dir.join("Scripts")],
        }
    }
}

/// How a daemon is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transport {
    /// A Unix socket.
    UnixSocket,
    /// Loopback TCP, with a token sent first on each connection.
    Tcp,
}

impl Transport {
    /// The word the settings use for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::UnixSocket => "unix",
            Transport::Tcp => "tcp",
        }
    }
}

impl std::fmt::Display for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Transport {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "unix" => Ok(Transport::UnixSocket),
            "tcp" => Ok(Transport::Tcp),
            other => Err(format!("expected unix or tcp, got {other:?}")),
        }
    }
}

impl Default for Platform {
    /// The platform this binary was built for.
    fn default() -> Self {
        Platform::current()
    }
}

impl std::fmt::Display for Platform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_current_platform_is_the_build_target() {
        let expected = if cfg!(target_os = "macos") {
            "macos"
        } else if cfg!(windows) {
            "windows"
        } else {
            "linux"
        };
        assert_eq!(Platform::current().name(), expected);
        assert_eq!(Platform::current().to_string(), expected);
    }

    #[test]
    fn socket_paths_fit_each_platforms_sun_path() {
        assert_eq!(Platform::MacOs.max_socket_path(), 103);
        assert_eq!(Platform::Linux.max_socket_path(), 107);
        assert_eq!(Platform::Windows.max_socket_path(), 107);
    }

    #[test]
    fn transports_are_spelled_unix_and_tcp() {
        for transport in [Transport::UnixSocket, Transport::Tcp] {
            assert_eq!(transport.to_string().parse(), Ok(transport));
        }
        assert!("TCP ".parse::<Transport>().is_err());
    }

    #[test]
    fn only_windows_dials_tcp_by_default() {
        assert_eq!(Platform::Linux.daemon_transport(), Transport::UnixSocket);
        assert_eq!(Platform::MacOs.daemon_transport(), Transport::UnixSocket);
        assert_eq!(Platform::Windows.daemon_transport(), Transport::Tcp);
    }

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn the_profile_is_home_on_unix() {
        let env = vars(&[("HOME", "/home/u"), ("USERPROFILE", "C:\\Users\\u")]);
        assert_eq!(Platform::Linux.profile_dir(&env), Some("/home/u".into()));
        assert_eq!(Platform::MacOs.profile_dir(&env), Some("/home/u".into()));
        assert_eq!(Platform::Linux.profile_dir(vars(&[("HOME", "")])), None);
        assert_eq!(Platform::Linux.profile_dir(vars(&[])), None);
        assert_eq!(Platform::Linux.home_variable(), "HOME");
    }

    #[test]
    fn the_profile_on_windows_is_userprofile_then_homedrive_homepath_never_home() {
        let all = vars(&[
            ("HOME", "/home/u"),
            ("USERPROFILE", "C:\\Users\\u"),
            ("HOMEDRIVE", "D:"),
            ("HOMEPATH", "\\Profiles\\u"),
        ]);
        assert_eq!(
            Platform::Windows.profile_dir(&all),
            Some("C:\\Users\\u".into())
        );
        let no_profile = vars(&[
            ("HOME", "/home/u"),
            ("USERPROFILE", ""),
            ("HOMEDRIVE", "D:"),
            ("HOMEPATH", "\\Profiles\\u"),
        ]);
        assert_eq!(
            Platform::Windows.profile_dir(&no_profile),
            Some("D:\\Profiles\\u".into())
        );
        let half = vars(&[("HOME", "/home/u"), ("HOMEDRIVE", "D:")]);
        assert_eq!(Platform::Windows.profile_dir(&half), None);
        assert_eq!(Platform::Windows.home_variable(), "USERPROFILE");
    }

    #[test]
    fn windows_programs_end_in_exe() {
        let name = |p: Platform, n: &str| p.program_file_name(OsStr::new(n));
        assert_eq!(name(Platform::Windows, "iai"), "iai.exe");
        assert_eq!(name(Platform::Windows, "iai-mcp"), "iai-mcp.exe");
        assert_eq!(name(Platform::Windows, "iai.exe"), "iai.exe");
        assert_eq!(name(Platform::Windows, "iai.cmd"), "iai.cmd");
        assert_eq!(name(Platform::Linux, "iai"), "iai");
        assert_eq!(name(Platform::MacOs, "iai-mcp"), "iai-mcp");
    }

    #[test]
    fn windows_programs_are_beside_python_and_in_scripts() {
        let dir = Path::new("/py");
        assert_eq!(
            Platform::Linux.program_dirs(dir),
            vec![PathBuf::from("/py")]
        );
        assert_eq!(
            Platform::Windows.program_dirs(dir),
            vec![PathBuf::from("/py"), PathBuf::from("/py/Scripts")]
        );
    }
}
