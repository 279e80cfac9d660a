//! Atomic, private file writes for the files the wrapper keeps: the
//! lifecycle files and its own directory in the state directory.
//!
//! On Unix, files are created with mode 0600 and directories with mode
//! 0700. Windows has no mode bits: there the files get the permissions
//! the user's profile directory passes on to them, which only that user
//! (and administrators) can read.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The directory of this wrapper's own files inside the state directory
/// (`~/.iai-mcp/iai-mcp-wrapper`): the cache of a release's surface, the
/// doctor's verdicts. Files whose place iai-mcp fixes (heartbeats,
/// `wake.signal`) stay where it puts them; these stay out of the state
/// directory itself, where every write would wake the wrappers watching it
/// for the daemon's socket.
pub fn own_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("iai-mcp-wrapper")
}

/// Create `dir` and its missing parents, private to this user on Unix.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Options that create a file private to this user (mode 0600); read,
/// write and truncation are left to the caller.
#[cfg(unix)]
pub fn private_file_options() -> OpenOptions {
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = OpenOptions::new();
    options.mode(0o600);
    options
}

/// Options that create a file (with the access rules its directory passes
/// on); read, write and truncation are left to the caller.
#[cfg(not(unix))]
pub fn private_file_options() -> OpenOptions {
    OpenOptions::new()
}

/// Write `contents` to `path` so that readers see either the old file or
/// the whole new one: write a private temporary file beside it, then
/// rename it over the target (on Windows too, `rename` replaces an
/// existing file). Missing parent directories are created private.
pub fn write_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("path has no parent directory"))?;
    create_private_dir(dir)?;
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other("path has no file name"))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = dir.join(tmp_name);
    let written = (|| {
        let mut file = private_file_options()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        file.write_all(contents)?;
        file.sync_data()?;
        fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

/// A file open for reading and writing and held exclusively until dropped
/// (Unix: an `flock`; Windows: the file opened with no sharing).
#[cfg(unix)]
pub type LockedFile = nix::fcntl::Flock<std::fs::File>;
/// A file open for reading and writing and held exclusively until dropped
/// (Unix: an `flock`; Windows: the file opened with no sharing).
#[cfg(windows)]
pub type LockedFile = std::fs::File;

/// Opens `path` (creating it, private) for reading and writing under an
/// exclusive lock, without waiting: `None` when another process holds it.
/// A process that dies holding it lets it go.
#[cfg(unix)]
pub fn try_lock_exclusive(path: &Path) -> std::io::Result<Option<LockedFile>> {
    use nix::fcntl::{Flock, FlockArg};
    let file = private_file_options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(locked) => Ok(Some(locked)),
        Err((_, nix::errno::Errno::EWOULDBLOCK)) => Ok(None),
        Err((_, e)) => Err(e.into()),
    }
}

/// Opens `path` (creating it) for reading and writing under an exclusive
/// lock, without waiting: `None` when another process holds it. The file
/// is opened with no sharing, so every other open fails with a sharing
/// violation while it is held.
#[cfg(windows)]
pub fn try_lock_exclusive(path: &Path) -> std::io::Result<Option<LockedFile>> {
    use std::os::windows::fs::OpenOptionsExt;
    /// `ERROR_SHARING_VIOLATION`: another process has the file open.
    const SHARING_VIOLATION: i32 = 32;
    let opened = private_file_options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .share_mode(0)
        .open(path);
    match opened {
        Ok(file) => Ok(Some(file)),
        Err(e) if e.raw_os_error() == Some(SHARING_VIOLATION) => Ok(None),
        Err(e) => Err(e),
    }
}

// Modes and file replacement as Unix has them.
#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[cfg(unix)]
    #[test]
    fn writes_private_files_and_replaces_whole() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a/b/file.json");
        write_atomic(&path, b"one").expect("write");
        write_atomic(&path, b"two").expect("rewrite");
        assert_eq!(fs::read(&path).expect("read"), b"two");
        let mode = fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let leftovers = fs::read_dir(path.parent().expect("parent"))
            .expect("list")
            .count();
        assert_eq!(leftovers, 1, "no temporary file left behind");
    }
}
