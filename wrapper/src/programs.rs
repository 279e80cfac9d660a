//! Finding the iai-mcp CLIs (`iai`, `iai-mcp`) on disk: a step of its
//! own, taken once when the wrapper starts, after its settings are
//! resolved.
//!
//! A program given as a path is used as it stands. A bare name is looked
//! for in the installation's directories first (where the installation's
//! Python is, and where this binary is: `pip install` of the wrapper's
//! wheel into iai-mcp's environment puts it beside the CLIs), then on
//! `PATH`, because hosts rarely start their servers with the user's shell
//! `PATH`. On Windows a bare name stands for a `.exe` file (`iai` is
//! `iai.exe`), as pip installs console programs there.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use crate::platform::Platform;

/// The directories of an iai-mcp installation, searched for bare program
/// names before `PATH`, and the platform whose file names apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installation {
    dirs: Vec<PathBuf>,
    platform: Platform,
}

impl Default for Installation {
    /// No directories of its own: bare names are looked for on `PATH`.
    fn default() -> Self {
        Installation::new([])
    }
}

impl Installation {
    /// An installation spread over `dirs`, searched in this order, with
    /// this platform's program file names.
    pub fn new(dirs: impl IntoIterator<Item = PathBuf>) -> Self {
        Installation::for_platform(Platform::current(), dirs)
    }

    /// An installation spread over `dirs`, whose programs are named as on
    /// `platform`.
    pub fn for_platform(platform: Platform, dirs: impl IntoIterator<Item = PathBuf>) -> Self {
        let mut unique: Vec<PathBuf> = Vec::new();
        for dir in dirs {
            if !unique.contains(&dir) {
                unique.push(dir);
            }
        }
        Installation {
            dirs: unique,
            platform,
        }
    }

    /// The directories, in search order.
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// Where `program` is, if it is anywhere: as given when it has a
    /// directory part, else the first of the installation's directories,
    /// then of `PATH`, that holds a file of that name (with `.exe` added
    /// on Windows).
    pub fn locate(&self, program: &OsStr) -> Option<PathBuf> {
        let as_given = Path::new(program);
        if as_given.components().count() > 1 {
            return as_given.is_file().then(|| as_given.to_path_buf());
        }
        let file_name = self.platform.program_file_name(program);
        let path = std::env::var_os("PATH").unwrap_or_default();
        self.dirs
            .iter()
            .cloned()
            .chain(std::env::split_paths(&path))
            .map(|dir| dir.join(&file_name))
            .find(|candidate| candidate.is_file())
    }

    /// `program` as it should be started: where it was found, else as
    /// given (starting it then reports it missing).
    pub fn run_as(&self, program: &OsStr) -> OsString {
        self.locate(program)
            .map_or_else(|| program.to_owned(), PathBuf::into_os_string)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_names_are_found_in_the_installation_first() {
        let first = tempfile::tempdir().expect("tempdir");
        let second = tempfile::tempdir().expect("tempdir");
        std::fs::write(second.path().join("iai"), "").expect("write");
        // Programs named as on Unix (no `.exe`), whatever runs the test.
        let installation = Installation::for_platform(
            Platform::Linux,
            [first.path().to_path_buf(), second.path().to_path_buf()],
        );
        assert_eq!(
            installation.locate(OsStr::new("iai")),
            Some(second.path().join("iai"))
        );
        std::fs::write(first.path().join("iai"), "").expect("write");
        assert_eq!(
            installation.locate(OsStr::new("iai")),
            Some(first.path().join("iai"))
        );
        assert_eq!(
            installation.locate(OsStr::new("no-such-program-anywhere")),
            None
        );
        assert_eq!(
            installation.run_as(OsStr::new("no-such-program-anywhere")),
            "no-such-program-anywhere"
        );
    }

    #[test]
    fn windows_names_are_found_as_exe_files_in_scripts() {
        let venv = tempfile::tempdir().expect("tempdir");
        let scripts = venv.path().join("Scripts");
        std::fs::create_dir(&scripts).expect("mkdir");
        // A file without the suffix is not what Windows would start.
        std::fs::write(scripts.join("iai-mcp"), "").expect("write");
        std::fs::write(scripts.join("iai.exe"), "").expect("write");
        std::fs::write(scripts.join("iai-mcp.exe"), "").expect("write");
        let installation = Installation::for_platform(
            Platform::Windows,
            Platform::Windows.program_dirs(venv.path()),
        );
        assert_eq!(
            installation.locate(OsStr::new("iai")),
            Some(scripts.join("iai.exe"))
        );
        assert_eq!(
            installation.locate(OsStr::new("iai-mcp")),
            Some(scripts.join("iai-mcp.exe"))
        );
        assert_eq!(
            installation.locate(OsStr::new("iai.exe")),
            Some(scripts.join("iai.exe"))
        );
        // The same directory on Linux holds no `iai`.
        let linux = Installation::for_platform(Platform::Linux, [scripts.clone()]);
        assert_eq!(linux.locate(OsStr::new("iai")), None);
        assert_eq!(
            linux.locate(OsStr::new("iai-mcp")),
            Some(scripts.join("iai-mcp"))
        );
    }

    #[test]
    fn a_path_is_taken_as_given() {
        let dir = tempfile::tempdir().expect("tempdir");
        let program = dir.path().join("iai");
        assert_eq!(Installation::default().locate(program.as_os_str()), None);
        std::fs::write(&program, "").expect("write");
        assert_eq!(
            Installation::default().locate(program.as_os_str()),
            Some(program)
        );
        let twice = Installation::new([dir.path().to_path_buf(), dir.path().to_path_buf()]);
        assert_eq!(twice.dirs().len(), 1);
    }
}
