//! Where the real daemon listens, and a connection to it.
//!
//! iai-mcp's daemon is given one path (`IAI_DAEMON_SOCKET_PATH`) and
//! decides how to listen by platform: a Unix socket at that path, or, on
//! Windows, which has no Unix sockets, loopback TCP on an ephemeral port
//! it writes to `PATH.port`, every connection opening with the token it
//! writes to `PATH.token`. A [`DaemonAddress`] is that path with the
//! transport, so the kit dials the daemon as the release's own clients
//! do on each system; the kit's TCP side is also run on Linux against the
//! fake daemon, which listens either way.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpStream};
#[cfg(unix)]
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use harness::daemon::{TcpEndpointFiles, Transport};

/// A daemon's endpoint as iai-mcp names it: a path, and how the daemon
/// listens there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaemonAddress {
    path: PathBuf,
    transport: Transport,
}

impl DaemonAddress {
    /// The endpoint at `path` listened on as iai-mcp's daemon does on this
    /// system ([`Transport::native`]).
    pub fn native(path: impl Into<PathBuf>) -> Self {
        Self::new(path, Transport::native())
    }

    /// The endpoint at `path` listened on over `transport`.
    pub fn new(path: impl Into<PathBuf>, transport: Transport) -> Self {
        Self {
            path: path.into(),
            transport,
        }
    }

    /// The path the daemon is given: its socket, or the base of its port
    /// and token files.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How the daemon listens.
    pub fn transport(&self) -> Transport {
        self.transport
    }

    /// Where the daemon publishes its TCP port and token (`PATH.port`,
    /// `PATH.token`).
    pub fn tcp_files(&self) -> TcpEndpointFiles {
        TcpEndpointFiles::beside(&self.path)
    }

    /// A connection ready for requests: on TCP the token has been sent.
    pub fn connect(&self) -> io::Result<Connection> {
        let mut connection = self.dial()?;
        if self.transport == Transport::Tcp {
            let token = std::fs::read_to_string(self.tcp_files().token)?;
            connection.write_all(format!("{}\n", token.trim()).as_bytes())?;
        }
        Ok(connection)
    }

    /// A connection on which nothing has been sent, for a proxy whose
    /// client sends the token itself.
    pub fn dial(&self) -> io::Result<Connection> {
        self.dial_within(None)
    }

    /// Like [`dial`](Self::dial), giving up a TCP connect after `limit`
    /// (a Unix socket connect does not wait). Windows retries a connect
    /// to a loopback port nobody listens on for about two seconds, so a
    /// watch for the daemon's return dials with a short limit.
    pub fn dial_within(&self, limit: Option<Duration>) -> io::Result<Connection> {
        match self.transport {
            #[cfg(unix)]
            Transport::Unix => UnixStream::connect(&self.path).map(Connection::Unix),
            #[cfg(not(unix))]
            Transport::Unix => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "this system has no Unix sockets",
            )),
            Transport::Tcp => {
                let address = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port()?));
                match limit {
                    Some(limit) => TcpStream::connect_timeout(&address, limit),
                    None => TcpStream::connect(address),
                }
                .map(Connection::Tcp)
            }
        }
    }

    /// The TCP port the daemon published in its port file.
    pub fn port(&self) -> io::Result<u16> {
        let port_file = self.tcp_files().port;
        let text = std::fs::read_to_string(&port_file)?;
        text.trim().parse().map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{} holds {text:?}, not a port", port_file.display()),
            )
        })
    }
}

/// One connection to a daemon (or to the kit's proxy), over either
/// transport.
#[derive(Debug)]
pub enum Connection {
    /// A Unix socket connection.
    #[cfg(unix)]
    Unix(UnixStream),
    /// A loopback TCP connection.
    Tcp(TcpStream),
}

impl Connection {
    /// A second handle on the same connection (one thread reads, another
    /// writes).
    pub fn try_clone(&self) -> io::Result<Self> {
        match self {
            #[cfg(unix)]
            Connection::Unix(stream) => stream.try_clone().map(Connection::Unix),
            Connection::Tcp(stream) => stream.try_clone().map(Connection::Tcp),
        }
    }

    /// Shuts down reading, writing or both.
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        match self {
            #[cfg(unix)]
            Connection::Unix(stream) => stream.shutdown(how),
            Connection::Tcp(stream) => stream.shutdown(how),
        }
    }

    /// How long a read may wait (none: forever).
    pub fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        match self {
            #[cfg(unix)]
            Connection::Unix(stream) => stream.set_read_timeout(timeout),
            Connection::Tcp(stream) => stream.set_read_timeout(timeout),
        }
    }
}

impl Read for Connection {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            #[cfg(unix)]
            Connection::Unix(stream) => stream.read(buf),
            Connection::Tcp(stream) => stream.read(buf),
        }
    }
}

impl Write for Connection {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            #[cfg(unix)]
            Connection::Unix(stream) => stream.write(buf),
            Connection::Tcp(stream) => stream.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            #[cfg(unix)]
            Connection::Unix(stream) => stream.flush(),
            Connection::Tcp(stream) => stream.flush(),
        }
    }
}
