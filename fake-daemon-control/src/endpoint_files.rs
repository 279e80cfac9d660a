//! Where a daemon given a path publishes a TCP endpoint: iai-mcp's
//! convention, which the fake daemon follows. Given `PATH` (its
//! `IAI_DAEMON_SOCKET_PATH`), a daemon listening on loopback TCP writes its
//! port to `PATH.port` and the token every client sends first to
//! `PATH.token`. The fake daemon writes them; the harness and the kits read
//! them.

use std::path::{Path, PathBuf};

/// The port and token files beside a daemon's path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpEndpointFiles {
    /// `PATH.port`: the port, in decimal.
    pub port: PathBuf,
    /// `PATH.token`: the token a client sends as its first line.
    pub token: PathBuf,
}

impl TcpEndpointFiles {
    /// The files beside `path`.
    pub fn beside(path: &Path) -> Self {
        TcpEndpointFiles {
            port: with_suffix(path, ".port"),
            token: with_suffix(path, ".token"),
        }
    }
}

/// `path` with `suffix` appended to its file name (`d.sock` + `.port` is
/// `d.sock.port`).
pub fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_are_named_after_the_whole_path() {
        let files = TcpEndpointFiles::beside(Path::new("/run/x/d.sock"));
        assert_eq!(files.port, Path::new("/run/x/d.sock.port"));
        assert_eq!(files.token, Path::new("/run/x/d.sock.token"));
    }
}
