//! Which processes under a host are the server it started: the process
//! whose command line is the one the host was configured with (the
//! wrapper itself, or a launcher such as a shim or `uv run` with the
//! wrapper below it), counted once with everything below it. Read from
//! `/proc`; a process is known by its pid and its start time, so a pid
//! used again later is another process.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use devkit::reap::{descendants, parent_of};

/// One process, told apart from a later one with the same pid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ProcessId {
    /// Its pid.
    pub pid: u32,
    /// When it started, in clock ticks since boot.
    pub started: u64,
}

impl ProcessId {
    /// The process `pid` now, if it runs.
    pub fn of(pid: u32) -> Option<Self> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // After the command in parentheses: state is the first field,
        // the start time the twentieth.
        let started = stat
            .rsplit_once(')')?
            .1
            .split_whitespace()
            .nth(19)?
            .parse()
            .ok()?;
        Some(ProcessId { pid, started })
    }
}

/// The command a host was configured to start for the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerCommand {
    words: Vec<OsString>,
}

impl ServerCommand {
    /// The program and its arguments, as written in the host's
    /// configuration.
    pub fn new(words: Vec<OsString>) -> Self {
        ServerCommand { words }
    }

    /// Whether a process with the arguments `argv` (and, if known, the
    /// executable `exe`) runs this command: the same words; or the same
    /// arguments with the program named another way (a path the host
    /// resolved, the same file); or the words after an interpreter, as
    /// the kernel runs a script through its `#!` line.
    pub fn runs(&self, argv: &[OsString], exe: Option<&Path>) -> bool {
        let Some((program, args)) = self.words.split_first() else {
            return false;
        };
        if argv == self.words.as_slice() {
            return true;
        }
        if argv.get(1..) == Some(self.words.as_slice()) {
            return true;
        }
        let same_args = argv.get(1..) == Some(args);
        let named = argv
            .first()
            .is_some_and(|first| same_file(Path::new(first), Path::new(program)));
        let executed = exe.is_some_and(|exe| same_file(exe, Path::new(program)));
        same_args && (named || executed)
    }

    /// The servers among the processes below `root`: those running this
    /// command with no such process above them.
    pub fn servers_under(&self, root: u32) -> Vec<ProcessId> {
        let below = descendants(root);
        let running: Vec<u32> = below
            .iter()
            .copied()
            .filter(|pid| self.runs(&argv_of(*pid), exe_of(*pid).as_deref()))
            .collect();
        running
            .iter()
            .copied()
            .filter(|pid| !has_ancestor_in(*pid, &running, root))
            .filter_map(ProcessId::of)
            .collect()
    }
}

/// Whether one of `among` is above `pid`, short of `root`.
fn has_ancestor_in(pid: u32, among: &[u32], root: u32) -> bool {
    let mut at = pid;
    while let Some(parent) = parent_of(at) {
        if parent == root || parent <= 1 {
            return false;
        }
        if among.contains(&parent) {
            return true;
        }
        at = parent;
    }
    false
}

/// The arguments of `pid` (empty when it cannot be read).
fn argv_of(pid: u32) -> Vec<OsString> {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return Vec::new();
    };
    let mut words: Vec<OsString> = cmdline
        .split(|b| *b == 0)
        .map(|word| OsString::from_vec(word.to_vec()))
        .collect();
    if words.last().is_some_and(|w| w.is_empty()) {
        words.pop();
    }
    words
}

/// The executable of `pid`.
fn exe_of(pid: u32) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/exe")).ok()
}

/// Whether `a` and `b` name the same file (or are the same words).
fn same_file(a: &Path, b: &Path) -> bool {
    if a == b {
        return true;
    }
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    #[test]
    fn a_command_is_recognised_as_written_as_resolved_and_behind_its_interpreter() {
        let shim = ServerCommand::new(words(&["/opt/shim", "--flag"]));
        assert!(shim.runs(&words(&["/opt/shim", "--flag"]), None));
        assert!(shim.runs(&words(&["/bin/sh", "/opt/shim", "--flag"]), None));
        assert!(!shim.runs(&words(&["/opt/shim"]), None));
        assert!(!shim.runs(&words(&["/opt/other", "--flag"]), None));
        let sh = ServerCommand::new(words(&["/bin/sh", "-c", "x"]));
        let real_sh = std::fs::canonicalize("/bin/sh").expect("/bin/sh");
        assert!(sh.runs(&words(&["sh", "-c", "x"]), Some(&real_sh)));
        assert!(!sh.runs(&words(&["sh", "-c", "y"]), Some(&real_sh)));
    }

    #[test]
    fn the_start_time_tells_this_process_apart() {
        let me = ProcessId::of(std::process::id()).expect("this process");
        assert_eq!(ProcessId::of(std::process::id()), Some(me));
        assert!(me.started > 0);
    }
}
