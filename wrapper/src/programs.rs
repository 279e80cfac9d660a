//! Finding the iai-mcp CLIs (`iai`, `iai-mcp`) on disk: a step of its
//! own, taken once when the wrapper starts, after its settings are
//! resolved.
//!
//! A program given as a path is used as it stands. A bare name is looked
//! for in the installation's directories first (where the installation's
//! Python is, and where this binary is: `pip install` of the wrapper's
//! wheel into iai-mcp's environment puts it beside the CLIs), then on
//! `PATH`, because hosts rarely start their servers with the user's shell
//! `PATH`.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// The directories of an iai-mcp installation, searched for bare program
/// names before `PATH`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Installation {
    dirs: Vec<PathBuf>,
}

impl Installation {
    /// An installation spread over `dirs`, searched in this order.
    pub fn new(dirs: impl IntoIterator<Item = PathBuf>) -> Self {
        let mut unique: Vec<PathBuf> = Vec::new();
        for dir in dirs {
            if !unique.contains(&dir) {
                unique.push(dir);
            }
        }
        Installation { dirs: unique }
    }

    /// The directories, in search order.
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// Where `program` is, if it is anywhere: as given when it has a
    /// directory part, else the first of the installation's directories,
    /// then of `PATH`, that holds a file of that name.
    pub fn locate(&self, program: &OsStr) -> Option<PathBuf> {
        let program = Path::new(program);
        if program.components().count() > 1 {
            return program.is_file().then(|| program.to_path_buf());
        }
        let path = std::env::var_os("PATH").unwrap_or_default();
        self.dirs
            .iter()
            .cloned()
            .chain(std::env::split_paths(&path))
            .map(|dir| dir.join(program))
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
        let installation =
            Installation::new([first.path().to_path_buf(), second.path().to_path_buf()]);
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
