//! The daemon connection's stream, its halves, and writing without
//! waiting, per platform: a Unix socket or TCP where there are Unix
//! sockets (one of two tokio streams, as `tokio_util`'s `Either`, which
//! reads and writes as whichever it holds), TCP alone elsewhere.

use std::io;

use tokio::net::TcpStream;
#[cfg(unix)]
use tokio::net::UnixStream;
#[cfg(unix)]
use tokio_util::either::Either;

/// One connection to the daemon: a Unix socket (left) or TCP (right).
#[cfg(unix)]
pub type DaemonStream = Either<UnixStream, TcpStream>;
/// One connection to the daemon (TCP: there are no Unix sockets here).
#[cfg(not(unix))]
pub type DaemonStream = TcpStream;

/// The half of a connection the bridge reads replies from.
#[cfg(unix)]
pub type DaemonReader = Either<tokio::net::unix::OwnedReadHalf, tokio::net::tcp::OwnedReadHalf>;
/// The half of a connection the bridge reads replies from.
#[cfg(not(unix))]
pub type DaemonReader = tokio::net::tcp::OwnedReadHalf;

/// The half of a connection the bridge writes requests to, without
/// waiting ([`try_write`]), waiting for room only when it is full
/// ([`writable`]).
#[cfg(unix)]
pub type DaemonWriter = Either<tokio::net::unix::OwnedWriteHalf, tokio::net::tcp::OwnedWriteHalf>;
/// The half of a connection the bridge writes requests to.
#[cfg(not(unix))]
pub type DaemonWriter = tokio::net::tcp::OwnedWriteHalf;

/// A TCP connection (its token already sent).
pub fn tcp(stream: TcpStream) -> DaemonStream {
    #[cfg(unix)]
    return Either::Right(stream);
    #[cfg(not(unix))]
    return stream;
}

/// A Unix socket connection.
#[cfg(unix)]
pub fn unix(stream: UnixStream) -> DaemonStream {
    Either::Left(stream)
}

/// Splits a connection into its reading and writing halves; it closes
/// when both are dropped.
pub fn split(stream: DaemonStream) -> (DaemonReader, DaemonWriter) {
    #[cfg(unix)]
    return match stream {
        Either::Left(unix) => {
            let (read, write) = unix.into_split();
            (Either::Left(read), Either::Left(write))
        }
        Either::Right(tcp) => {
            let (read, write) = tcp.into_split();
            (Either::Right(read), Either::Right(write))
        }
    };
    #[cfg(not(unix))]
    return stream.into_split();
}

/// Writes as much of `bytes` as the socket takes now; `WouldBlock` when it
/// takes nothing (then [`writable`] says when to try again).
pub fn try_write(writer: &DaemonWriter, bytes: &[u8]) -> io::Result<usize> {
    #[cfg(unix)]
    return match writer {
        Either::Left(unix) => unix.try_write(bytes),
        Either::Right(tcp) => tcp.try_write(bytes),
    };
    #[cfg(not(unix))]
    return writer.try_write(bytes);
}

/// Completes when the socket may take more.
pub async fn writable(writer: &DaemonWriter) -> io::Result<()> {
    #[cfg(unix)]
    return match writer {
        Either::Left(unix) => unix.writable().await,
        Either::Right(tcp) => tcp.writable().await,
    };
    #[cfg(not(unix))]
    return writer.writable().await;
}
