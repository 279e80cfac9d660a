//! Short temporary directories, for Unix socket paths.
//!
//! A Unix socket path must fit in `sun_path` (108 bytes on Linux, 104 on
//! macOS), and `$TMPDIR` on macOS alone is about 50 bytes long, so sockets
//! live in directories created directly under `/tmp` with a short prefix.

use std::path::{Path, PathBuf};

use tempfile::TempDir;

use crate::error::DevkitError;

/// Creates a fresh directory `/tmp/iaiXXXXXX`, removed when the returned
/// [`TempDir`] drops.
pub fn short_tempdir() -> Result<TempDir, DevkitError> {
    tempfile::Builder::new()
        .prefix("iai")
        .tempdir_in("/tmp")
        .map_err(|e| DevkitError::io("creating a temporary directory under /tmp", e))
}

/// The conventional socket path inside a scenario's directory: `<dir>/d.sock`.
pub fn socket_path_in(dir: &Path) -> PathBuf {
    dir.join("d.sock")
}
