//! The socket file: checking the path, binding it like the real daemon does
//! (stale socket removed first, mode 0600) and removing it again on the way
//! out, but only while it is still the socket this process created.

use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use thiserror::Error;
use tokio::net::UnixListener;

/// Longest socket path the system accepts, in bytes: `sun_path` holds 108
/// bytes on Linux and 104 on the BSDs and macOS, including the final NUL.
pub const MAX_SOCKET_PATH_BYTES: usize = if cfg!(target_os = "linux") { 107 } else { 103 };

/// A socket path that cannot work, found before trying to bind.
#[derive(Debug, Error)]
pub enum SocketPathError {
    /// The path is empty.
    #[error("the socket path is empty")]
    Empty,
    /// The path does not fit in a Unix socket address.
    #[error(
        "socket path {} is {len} bytes long, but Unix socket paths are limited to {max} bytes on this system; choose a shorter path",
        path.display()
    )]
    TooLong {
        /// The path given.
        path: PathBuf,
        /// Its length in bytes.
        len: usize,
        /// The limit, [`MAX_SOCKET_PATH_BYTES`].
        max: usize,
    },
}

/// Failure to set up the listening socket.
#[derive(Debug, Error)]
pub enum BindError {
    /// The path is unusable.
    #[error(transparent)]
    Path(#[from] SocketPathError),
    /// Something other than a socket is in the way; the daemon only ever
    /// removes a stale socket, never a regular file or directory.
    #[error("{} exists and is not a socket; refusing to remove it", .0.display())]
    NotASocket(PathBuf),
    /// The stale socket could not be removed.
    #[error("cannot remove stale socket {}: {source}", path.display())]
    RemoveStale {
        /// The socket path.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// `bind`/`listen` failed.
    #[error("cannot bind {}: {source}", path.display())]
    Bind {
        /// The socket path.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// The socket's mode could not be set to 0600.
    #[error("cannot set mode 0600 on {}: {source}", path.display())]
    Chmod {
        /// The socket path.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
}

/// Checks that `path` can name a Unix socket.
pub fn check_socket_path(path: &Path) -> Result<(), SocketPathError> {
    let len = path.as_os_str().len();
    if len == 0 {
        return Err(SocketPathError::Empty);
    }
    if len > MAX_SOCKET_PATH_BYTES {
        return Err(SocketPathError::TooLong {
            path: path.to_owned(),
            len,
            max: MAX_SOCKET_PATH_BYTES,
        });
    }
    Ok(())
}

/// The socket file this process bound, identified by device and inode so
/// that [`BoundSocket::unlink`] never removes a socket somebody else bound at
/// the same path later.
#[derive(Debug)]
pub(crate) struct BoundSocket {
    path: PathBuf,
    identity: Option<(u64, u64)>,
}

impl BoundSocket {
    /// Removes the socket file if it is still the one bound here.
    pub(crate) fn unlink(&self) {
        let ours = std::fs::symlink_metadata(&self.path)
            .is_ok_and(|meta| Some((meta.dev(), meta.ino())) == self.identity);
        if !ours {
            return;
        }
        if let Err(err) = std::fs::remove_file(&self.path) {
            eprintln!("fake-daemon: cannot remove {}: {err}", self.path.display());
        }
    }
}

/// Binds `path`: removes a stale socket there, binds and listens, and sets
/// mode 0600 like the real daemon. Must run inside a Tokio runtime.
pub(crate) fn bind(path: &Path) -> Result<(UnixListener, BoundSocket), BindError> {
    check_socket_path(path)?;
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => std::fs::remove_file(path)
            .or_else(ignore_not_found)
            .map_err(|source| BindError::RemoveStale {
                path: path.to_owned(),
                source,
            })?,
        Ok(_) => return Err(BindError::NotASocket(path.to_owned())),
        Err(_) => {}
    }
    let listener = UnixListener::bind(path).map_err(|source| BindError::Bind {
        path: path.to_owned(),
        source,
    })?;
    let identity = std::fs::symlink_metadata(path)
        .ok()
        .map(|meta| (meta.dev(), meta.ino()));
    let bound = BoundSocket {
        path: path.to_owned(),
        identity,
    };
    if let Err(source) = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)) {
        bound.unlink();
        return Err(BindError::Chmod {
            path: path.to_owned(),
            source,
        });
    }
    Ok((listener, bound))
}

fn ignore_not_found(err: io::Error) -> io::Result<()> {
    match err.kind() {
        io::ErrorKind::NotFound => Ok(()),
        _ => Err(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_length_is_checked() {
        assert!(matches!(
            check_socket_path(Path::new("")),
            Err(SocketPathError::Empty)
        ));
        let longest = "x".repeat(MAX_SOCKET_PATH_BYTES);
        assert!(check_socket_path(Path::new(&longest)).is_ok());
        let err = check_socket_path(Path::new(&format!("{longest}x"))).unwrap_err();
        assert!(err.to_string().contains("limited to"), "{err}");
    }
}
