//! The daemon connection's descriptor, read and written with plain
//! `read(2)` and `write(2)` on the runtime thread.
//!
//! The driver owns the connection and writes to it itself: every line the
//! bridge queued during one turn of the driver goes out in one `write`. A
//! reader task frames what arrives, reading whatever the socket holds at
//! each wake-up.
//!
//! Reading goes through tokio's pipe receiver, which makes exactly that
//! call on any stream descriptor (a socket as well as a pipe) and takes a
//! read that returns less than asked for as the sign that the descriptor is
//! drained, so the next wait goes straight to the reactor instead of
//! through a read that would fail with `EAGAIN`. Writing is a plain
//! non-blocking `write` on the descriptor; only when the socket is full
//! does the [`Writer`] register with the reactor to wait for room (and
//! write through that registration, so that a write refused again clears
//! the readiness it waits on), and it leaves again once everything is
//! written. A descriptor registered for
//! writing all the time would wake the wrapper each time the daemon reads
//! (the kernel reports new room as an event), one wasted wake-up per call.
//!
//! Tokio's socket types would use `recv(2)`/`send(2)`, which the kernel
//! leaves out of the per-process counters (`/proc/PID/io`) the benchmark
//! reads; with `read`/`write` every call the wrapper makes on either side
//! is counted.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, OwnedFd};

use tokio::net::unix::pipe;

use crate::transport::DaemonStream;

/// Splits a connection (already non-blocking) into the reading end for the
/// reader task and the writing end for the driver; must be called inside
/// the runtime. The connection closes when both are dropped.
pub fn split(stream: DaemonStream) -> io::Result<(pipe::Receiver, Writer)> {
    let fd: OwnedFd = stream.into_fd()?;
    let reading = fd.as_fd().try_clone_to_owned()?;
    Ok((
        pipe::Receiver::from_owned_fd_unchecked(reading)?,
        Writer {
            file: File::from(fd),
            waiter: None,
        },
    ))
}

/// The writing end of a connection.
#[derive(Debug)]
pub struct Writer {
    file: File,
    /// Registered with the reactor while the socket is full.
    waiter: Option<pipe::Sender>,
}

impl Writer {
    /// Writes as much of `bytes` as the socket takes now (`WouldBlock`
    /// when it takes nothing: then [`Writer::blocked`] has what to wait
    /// on). Once everything queued is written, call [`Writer::idle`].
    pub fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        // While registered, write through the registration: a `WouldBlock`
        // there clears the readiness the last wake-up reported, so the next
        // wait sleeps until the daemon reads again instead of returning at
        // once forever.
        if let Some(waiter) = &self.waiter {
            return waiter.try_write(bytes);
        }
        match (&self.file).write(bytes) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let fd = self.file.as_fd().try_clone_to_owned()?;
                self.waiter = Some(pipe::Sender::from_owned_fd_unchecked(fd)?);
                Err(e)
            }
            other => other,
        }
    }

    /// Nothing is left to write: stop watching for room.
    pub fn idle(&mut self) {
        self.waiter = None;
    }

    /// What to wait on for room, while a write is held back.
    pub fn blocked(&self) -> Option<&pipe::Sender> {
        self.waiter.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn writes_and_reads_a_socket_through_the_reactor() {
        let (ours, mut theirs) = tokio::net::UnixStream::pair().expect("a socket pair");
        let (mut reader, mut writer) = split(DaemonStream::Unix(ours)).expect("registered");
        assert_eq!(writer.write(b"ping\n").expect("written"), 5);
        assert!(writer.blocked().is_none());
        let mut got = [0u8; 5];
        theirs.read_exact(&mut got).await.expect("read");
        assert_eq!(&got, b"ping\n");
        theirs.write_all(b"pong\n").await.expect("sent");
        drop(theirs);
        let mut text = String::new();
        reader.read_to_string(&mut text).await.expect("read to EOF");
        assert_eq!(text, "pong\n");
    }

    #[tokio::test]
    async fn a_full_socket_is_waited_on_until_it_drains() {
        let (ours, mut theirs) = tokio::net::UnixStream::pair().expect("a socket pair");
        let (_reader, mut writer) = split(DaemonStream::Unix(ours)).expect("registered");
        let chunk = vec![b'x'; 64 * 1024];
        let mut written = 0;
        loop {
            match writer.write(&chunk) {
                Ok(n) => written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("{e}"),
            }
        }
        let waiter = writer.blocked().expect("waiting for room");
        let mut sink = vec![0u8; written];
        theirs.read_exact(&mut sink).await.expect("drained");
        waiter.writable().await.expect("room again");
        assert!(writer.write(b"more").expect("written") > 0);
        writer.idle();
        assert!(writer.blocked().is_none());
    }

    /// A socket filled again after a wake-up must put the next wait to
    /// sleep; a readiness left set would spin the driver until the daemon
    /// reads.
    #[tokio::test]
    async fn a_socket_full_again_after_room_waits_again() {
        let (ours, mut theirs) = tokio::net::UnixStream::pair().expect("a socket pair");
        let (_reader, mut writer) = split(DaemonStream::Unix(ours)).expect("registered");
        let fill = |writer: &mut Writer| {
            let chunk = vec![b'x'; 64 * 1024];
            let mut written = 0;
            loop {
                match writer.write(&chunk) {
                    Ok(n) => written += n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return written,
                    Err(e) => panic!("{e}"),
                }
            }
        };
        let written = fill(&mut writer);
        let mut sink = vec![0u8; written];
        theirs.read_exact(&mut sink).await.expect("drained");
        writer
            .blocked()
            .expect("registered")
            .writable()
            .await
            .expect("room");
        assert!(fill(&mut writer) > 0, "the room was used");
        let waiter = writer.blocked().expect("still registered");
        let mut wait = std::pin::pin!(waiter.writable());
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        assert!(
            wait.as_mut().poll(&mut cx).is_pending(),
            "a full socket reported room"
        );
    }
}
