//! The daemon connection's descriptor, read and written with plain
//! `read(2)` and `write(2)` on the runtime thread.
//!
//! The driver owns the connection and writes to it itself: every line the
//! bridge queued during one turn of the driver goes out in one `write`. A
//! reader task frames what arrives, reading whatever the socket holds at
//! each wake-up.
//!
//! Tokio's pipe types are what drive the descriptor: they make exactly
//! those calls on any stream descriptor they are given (a socket as well as
//! a pipe), and a read that returns less than asked for tells them the
//! descriptor is drained, so the next wait goes straight to the reactor
//! instead of through a read that would fail with `EAGAIN`. Tokio's socket
//! types would use `recv(2)`/`send(2)` instead, which the kernel leaves out
//! of the per-process counters (`/proc/PID/io`) the benchmark reads; with
//! `read`/`write` every call the wrapper makes on either side is counted.

use std::io;
use std::os::fd::{AsFd, OwnedFd};

use tokio::net::unix::pipe;

use crate::transport::DaemonStream;

/// Splits a connection (already non-blocking) into the reading end for the
/// reader task and the writing end for the driver; must be called inside
/// the runtime. The connection closes when both are dropped.
pub fn split(stream: DaemonStream) -> io::Result<(pipe::Receiver, pipe::Sender)> {
    let fd: OwnedFd = stream.into_fd()?;
    let reading = fd.as_fd().try_clone_to_owned()?;
    Ok((
        pipe::Receiver::from_owned_fd_unchecked(reading)?,
        pipe::Sender::from_owned_fd_unchecked(fd)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn writes_and_reads_a_socket_through_the_reactor() {
        let (ours, mut theirs) = tokio::net::UnixStream::pair().expect("a socket pair");
        let (mut reader, writer) = split(DaemonStream::Unix(ours)).expect("registered");
        writer.writable().await.expect("writable");
        assert_eq!(writer.try_write(b"ping\n").expect("written"), 5);
        let mut got = [0u8; 5];
        theirs.read_exact(&mut got).await.expect("read");
        assert_eq!(&got, b"ping\n");
        theirs.write_all(b"pong\n").await.expect("sent");
        drop(theirs);
        let mut text = String::new();
        reader.read_to_string(&mut text).await.expect("read to EOF");
        assert_eq!(text, "pong\n");
    }
}
