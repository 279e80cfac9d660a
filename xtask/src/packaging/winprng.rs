//! What running Rust programs under Wine 8.0 takes: the test-only
//! `bcryptprimitives.dll` stand-in (source: `xtask/assets/bcryptprimitives.c`),
//! built with MinGW-w64's gcc into the target directory, and the Wine
//! command line. The DLL is put beside a binary in a scratch directory for
//! a run; it is never part of a wheel (the wheel check fails one that
//! holds a DLL).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use devkit::pyenv::run;

use super::error::DistError;

/// The stand-in's C source.
const SOURCE: &str = include_str!("../../assets/bcryptprimitives.c");
/// The DLL's file name: the one Rust's std imports `ProcessPrng` from.
pub const DLL: &str = "bcryptprimitives.dll";
/// Wine's 64-bit loader as Debian's `wine64` installs it (not on `PATH`).
pub const WINE64: &str = "/usr/lib/wine/wine64";

/// Builds the DLL into `target_dir/wine/` (again each time: it takes a
/// fraction of a second) and returns its path.
pub fn build_dll(target_dir: &Path) -> Result<PathBuf, DistError> {
    let dir = target_dir.join("wine");
    std::fs::create_dir_all(&dir)
        .map_err(|e| DistError::io(format!("creating {}", dir.display()), e))?;
    let source = dir.join("bcryptprimitives.c");
    std::fs::write(&source, SOURCE)
        .map_err(|e| DistError::io(format!("writing {}", source.display()), e))?;
    let dll = dir.join(DLL);
    run(
        Command::new("x86_64-w64-mingw32-gcc")
            .args(["-shared", "-O2", "-o"])
            .arg(&dll)
            .arg(&source)
            .arg("-ladvapi32"),
        "building the test-only bcryptprimitives.dll with x86_64-w64-mingw32-gcc",
    )?;
    Ok(dll)
}

/// Copies `exe` and the DLL into `dir` (made if missing) and returns the
/// copy of `exe`.
pub fn stage(exe: &Path, dll: &Path, dir: &Path) -> Result<PathBuf, DistError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| DistError::io(format!("creating {}", dir.display()), e))?;
    let copy = |from: &Path| -> Result<PathBuf, DistError> {
        let to = dir.join(from.file_name().unwrap_or_default());
        std::fs::copy(from, &to).map_err(|e| {
            DistError::io(format!("copying {} to {}", from.display(), to.display()), e)
        })?;
        Ok(to)
    };
    copy(dll)?;
    copy(exe)
}

/// The Wine prefix the runs share, under the target directory (made on
/// first use: Wine's own set-up takes a while once).
pub fn prefix(target_dir: &Path) -> PathBuf {
    target_dir.join("wine").join("prefix")
}

/// The words that run `exe` under Wine with `prefix`, as a wrapper command
/// line for the harness (`NAME=value` words first).
pub fn runner_words(prefix: &Path, exe: &Path) -> Vec<OsString> {
    let mut prefix_word = OsString::from("WINEPREFIX=");
    prefix_word.push(prefix);
    vec![
        prefix_word,
        OsString::from("WINEDEBUG=-all"),
        OsString::from(WINE64),
        exe.as_os_str().to_owned(),
    ]
}

/// A Wine user of its own for one run, whose profile directory
/// (`C:\\users\\<name>` in the prefix) is a scratch profile: Wine sets
/// `USERPROFILE` and `APPDATA` from the user name (the Unix `USER`),
/// whatever the environment says.
#[derive(Debug)]
pub struct ScratchUser {
    name: String,
    prefix: PathBuf,
}

impl ScratchUser {
    /// A user named after this process, its profile directory not yet
    /// there (one left by an earlier run of the same pid is removed).
    pub fn new(prefix: &Path) -> Result<Self, DistError> {
        let user = ScratchUser {
            name: format!("smoke{}", std::process::id()),
            prefix: prefix.to_path_buf(),
        };
        user.remove()?;
        Ok(user)
    }

    /// Its profile directory, as this machine names it.
    pub fn dir(&self) -> PathBuf {
        self.prefix.join("drive_c").join("users").join(&self.name)
    }

    /// The wrapper command's words that make Wine run as this user.
    pub fn words(&self) -> Vec<OsString> {
        ["USER", "LOGNAME"]
            .iter()
            .map(|variable| OsString::from(format!("{variable}={}", self.name)))
            .collect()
    }

    /// Removes its profile directory.
    pub fn remove(&self) -> Result<(), DistError> {
        let dir = self.dir();
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(DistError::io(format!("removing {}", dir.display()), e)),
        }
    }
}

/// `exe` run under Wine with `prefix`, as a process command.
pub fn command(prefix: &Path, exe: &Path) -> Command {
    let mut command = Command::new(WINE64);
    command
        .arg(exe)
        .env("WINEPREFIX", prefix)
        .env("WINEDEBUG", "-all");
    command
}
