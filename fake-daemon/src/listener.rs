//! Where the daemon listens, bound like the real daemon binds it:
//!
//! - a Unix socket: the path checked, a stale socket removed first, mode
//!   0600, and the file removed again on the way out (only while it is
//!   still the socket this process created);
//! - loopback TCP, as iai-mcp listens where there are no Unix sockets: an
//!   ephemeral port (the same one again after `DOWN`/`UP`), its number
//!   written to `<path>.port` and a fresh random token to `<path>.token`
//!   (mode 0600) at every bind, both removed on the way out. Every TCP
//!   connection must send the token as its first line.
//!
//! Windows has no Unix sockets in tokio: there only TCP binds (`--tcp`), as
//! iai-mcp's daemon does there, and asking for a Unix socket fails with
//! [`BindError::NoUnixSockets`].
//!
//! Binding and listening are separate steps here, so that a start-up order
//! can pause between them (the `endpoint` module).

use std::io::{self, Write};
use std::net::SocketAddr;
#[cfg(unix)]
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use fake_daemon_control::{StartupOrder, TcpEndpointFiles, with_suffix};
use thiserror::Error;
use tokio::net::{TcpListener, TcpSocket, TcpStream};
#[cfg(unix)]
use tokio::net::{UnixListener, UnixSocket, UnixStream};

/// How many connections may wait to be accepted when the daemon listens
/// after a pause (a herd of wrappers dials at once); the system caps it at
/// its own limit.
const BACKLOG: u32 = 1024;

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
    /// `listen` failed after a pause.
    #[error("cannot listen on {}: {source}", path.display())]
    Listen {
        /// The socket path.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// The order exists only on TCP, and the daemon listens on a Unix
    /// socket.
    #[error("the start-up order {0} is for TCP (--tcp) only")]
    TcpOnly(StartupOrder),
    /// The port or token file could not be written.
    #[error("cannot write {}: {source}", path.display())]
    WriteFile {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// A Unix socket was asked for where there are none (Windows).
    #[error(
        "cannot bind {}: no Unix sockets on this system; listen on TCP (--tcp) as iai-mcp does here",
        .0.display()
    )]
    NoUnixSockets(PathBuf),
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
#[cfg(unix)]
#[derive(Debug)]
pub(crate) struct BoundSocket {
    path: PathBuf,
    identity: Option<(u64, u64)>,
}

#[cfg(unix)]
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

/// Binds `path` and listens: removes a stale socket there, binds and
/// listens in one step, and sets mode 0600 like the real daemon. Must run
/// inside a Tokio runtime.
#[cfg(unix)]
pub(crate) fn bind(path: &Path) -> Result<(UnixListener, BoundSocket), BindError> {
    clear_the_way(path)?;
    let listener = UnixListener::bind(path).map_err(|source| BindError::Bind {
        path: path.to_owned(),
        source,
    })?;
    Ok((listener, claim(path)?))
}

/// Binds `path` without listening (a dial now is refused), like [`bind`]
/// otherwise; [`listen_unix`] listens. Must run inside a Tokio runtime.
#[cfg(unix)]
pub(crate) fn bind_unlistened(path: &Path) -> Result<(UnixSocket, BoundSocket), BindError> {
    clear_the_way(path)?;
    let bind_err = |source| BindError::Bind {
        path: path.to_owned(),
        source,
    };
    let socket = UnixSocket::new_stream().map_err(bind_err)?;
    socket.bind(path).map_err(bind_err)?;
    Ok((socket, claim(path)?))
}

/// Listens on a socket [`bind_unlistened`] bound at `path`.
#[cfg(unix)]
pub(crate) fn listen_unix(socket: UnixSocket, path: &Path) -> Result<UnixListener, BindError> {
    socket.listen(BACKLOG).map_err(|source| BindError::Listen {
        path: path.to_owned(),
        source,
    })
}

/// Checks `path` and removes a stale socket there; anything else in the
/// way is refused.
#[cfg(unix)]
fn clear_the_way(path: &Path) -> Result<(), BindError> {
    check_socket_path(path)?;
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => std::fs::remove_file(path)
            .or_else(ignore_not_found)
            .map_err(|source| BindError::RemoveStale {
                path: path.to_owned(),
                source,
            }),
        Ok(_) => Err(BindError::NotASocket(path.to_owned())),
        Err(_) => Ok(()),
    }
}

/// Takes the socket file just bound at `path` as this process's, and sets
/// its mode to 0600.
#[cfg(unix)]
fn claim(path: &Path) -> Result<BoundSocket, BindError> {
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
    Ok(bound)
}

/// A bound listener of either kind.
#[derive(Debug)]
pub(crate) enum Listener {
    /// A Unix socket.
    #[cfg(unix)]
    Unix(UnixListener),
    /// Loopback TCP.
    Tcp(TcpListener),
}

/// An accepted connection of either kind.
#[derive(Debug)]
pub(crate) enum Accepted {
    /// On the Unix socket.
    #[cfg(unix)]
    Unix(UnixStream),
    /// On TCP, token not yet checked.
    Tcp(TcpStream),
}

impl Listener {
    /// The next connection.
    pub(crate) async fn accept(&self) -> io::Result<Accepted> {
        match self {
            #[cfg(unix)]
            Listener::Unix(l) => l.accept().await.map(|(s, _)| Accepted::Unix(s)),
            Listener::Tcp(l) => l.accept().await.map(|(s, _)| {
                let _ = s.set_nodelay(true);
                Accepted::Tcp(s)
            }),
        }
    }
}

/// The files a TCP listener publishes: its port and its token, where
/// iai-mcp's daemon puts them ([`TcpEndpointFiles`]).
#[derive(Debug, Clone)]
pub(crate) struct TcpFiles {
    files: TcpEndpointFiles,
}

impl TcpFiles {
    /// The files beside `base`: `<base>.port` and `<base>.token`.
    pub(crate) fn beside(base: &Path) -> Self {
        TcpFiles {
            files: TcpEndpointFiles::beside(base),
        }
    }

    /// Writes the token, then the port, each whole (a temporary file
    /// renamed over it), so a reader never sees half of either.
    pub(crate) fn publish(&self, token: &str, port: u16) -> Result<(), BindError> {
        write_whole(&self.files.token, token)?;
        write_whole(&self.files.port, &port.to_string())
    }

    /// Writes `text` into the token file itself (created, or emptied
    /// first), as iai-mcp 3.3.0 writes it.
    pub(crate) fn write_token_in_place(&self, text: &str) -> Result<(), BindError> {
        write_in_place(&self.files.token, text)
    }

    /// Writes `text` into the port file itself (created, or emptied first),
    /// as iai-mcp 3.3.0 writes it.
    pub(crate) fn write_port_in_place(&self, text: &str) -> Result<(), BindError> {
        write_in_place(&self.files.port, text)
    }

    /// Removes the port and token files.
    pub(crate) fn unlink(&self) {
        for path in [&self.files.port, &self.files.token] {
            if let Err(err) = std::fs::remove_file(path).or_else(ignore_not_found) {
                eprintln!("fake-daemon: cannot remove {}: {err}", path.display());
            }
        }
    }
}

/// What was bound, for removal on the way out.
#[derive(Debug)]
pub(crate) enum Bound {
    /// The Unix socket file.
    #[cfg(unix)]
    Unix(BoundSocket),
    /// The TCP port and token files.
    Tcp(TcpFiles),
}

impl Bound {
    /// Removes what the bind created.
    pub(crate) fn unlink(&self) {
        match self {
            #[cfg(unix)]
            Bound::Unix(socket) => socket.unlink(),
            Bound::Tcp(files) => files.unlink(),
        }
    }
}

/// A fresh token: 32 random bytes in hex.
pub(crate) fn new_token() -> String {
    (0..32)
        .map(|_| format!("{:02x}", fastrand::u8(..)))
        .collect()
}

/// Binds loopback TCP on `port` (0: any free port) and listens; `base`
/// names the endpoint in errors. Must run inside a Tokio runtime.
pub(crate) fn listen_tcp(base: &Path, port: u16) -> Result<TcpListener, BindError> {
    let bind_err = |source| BindError::Bind {
        path: base.to_owned(),
        source,
    };
    let std_listener = std::net::TcpListener::bind(("127.0.0.1", port)).map_err(bind_err)?;
    std_listener.set_nonblocking(true).map_err(bind_err)?;
    TcpListener::from_std(std_listener).map_err(bind_err)
}

/// Binds loopback TCP on `port` (0: any free port) without listening (a
/// dial now is refused), reusing the address as [`listen_tcp`] does; `base`
/// names the endpoint in errors. Must run inside a Tokio runtime.
pub(crate) fn bind_tcp_unlistened(base: &Path, port: u16) -> Result<TcpSocket, BindError> {
    let bind_err = |source| BindError::Bind {
        path: base.to_owned(),
        source,
    };
    let socket = TcpSocket::new_v4().map_err(bind_err)?;
    socket.set_reuseaddr(true).map_err(bind_err)?;
    socket
        .bind(SocketAddr::from(([127, 0, 0, 1], port)))
        .map_err(bind_err)?;
    Ok(socket)
}

/// Listens on a socket [`bind_tcp_unlistened`] bound for `base`.
pub(crate) fn listen_tcp_socket(socket: TcpSocket, base: &Path) -> Result<TcpListener, BindError> {
    socket.listen(BACKLOG).map_err(|source| BindError::Listen {
        path: base.to_owned(),
        source,
    })
}

/// The port a TCP listener or socket is bound to; `base` names the
/// endpoint in errors.
pub(crate) fn port_of(address: io::Result<SocketAddr>, base: &Path) -> Result<u16, BindError> {
    address
        .map(|address| address.port())
        .map_err(|source| BindError::Bind {
            path: base.to_owned(),
            source,
        })
}

/// Writes `text` to `path` with mode 0600, replacing it whole.
fn write_whole(path: &Path, text: &str) -> Result<(), BindError> {
    let tmp = with_suffix(path, ".tmp");
    let written = write_private(&tmp, text).and_then(|()| std::fs::rename(&tmp, path));
    written.map_err(|source| BindError::WriteFile {
        path: path.to_owned(),
        source,
    })
}

/// Writes `text` into `path` itself with mode 0600: the file is created, or
/// emptied, and then written, so a reader may find it empty between the two.
fn write_in_place(path: &Path, text: &str) -> Result<(), BindError> {
    write_private(path, text).map_err(|source| BindError::WriteFile {
        path: path.to_owned(),
        source,
    })
}

/// Opens `path` for writing (created with mode 0600, or emptied) and writes
/// `text`. Windows has no mode bits: there the directory's access decides.
fn write_private(path: &Path, text: &str) -> io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    options.mode(0o600);
    options
        .open(path)
        .and_then(|mut file| file.write_all(text.as_bytes()))
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
