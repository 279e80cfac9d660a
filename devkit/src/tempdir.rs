//! Short temporary directories, for Unix socket paths.
//!
//! A Unix socket path must fit in `sun_path` (108 bytes on Linux, 104 on
//! macOS), and `$TMPDIR` on macOS alone is about 50 bytes long, so sockets
//! live in directories created directly under `/tmp` with a short prefix.
//! Windows has no `/tmp` and no such limit (its daemon listens on TCP, its
//! endpoint files are ordinary files): there the directories go in the
//! user's temporary directory.

use std::path::{Path, PathBuf};

use tempfile::TempDir;

use crate::error::DevkitError;

/// Creates a fresh directory `/tmp/iaiXXXXXX` (on Windows, `iaiXXXXXX` in
/// the temporary directory), removed when the returned [`TempDir`] drops.
pub fn short_tempdir() -> Result<TempDir, DevkitError> {
    let base = short_base();
    tempfile::Builder::new()
        .prefix("iai")
        .tempdir_in(&base)
        .map_err(|e| {
            DevkitError::io(
                format!("creating a temporary directory under {}", base.display()),
                e,
            )
        })
}

/// Where [`short_tempdir`] makes its directories.
fn short_base() -> PathBuf {
    if cfg!(unix) {
        PathBuf::from("/tmp")
    } else {
        std::env::temp_dir()
    }
}

/// The conventional socket path inside a scenario's directory: `<dir>/d.sock`.
pub fn socket_path_in(dir: &Path) -> PathBuf {
    dir.join("d.sock")
}
