//! stdin and stdout as reactor-driven streams.
//!
//! `tokio::io::stdin()`/`stdout()` perform every read, write and flush on
//! tokio's blocking thread pool, so each message crosses threads several
//! times; measured, that hand-off cost several times the daemon round trip.
//! MCP clients give their servers pipes (Python, Rust) or socket pairs
//! (Node's libuv), both of which epoll can watch, so for those the wrapper
//! puts the descriptor in non-blocking mode and drives it from the runtime
//! thread (tokio's `pipe` and `UnixStream` types). Anything else (a
//! terminal, a regular file) keeps tokio's portable blocking implementation.
//! The original descriptor flags are restored when the stream is dropped, so
//! a parent sharing the descriptor is left as it was.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::FileTypeExt;
use std::pin::Pin;
use std::task::{Context, Poll};

use nix::fcntl::{FcntlArg, OFlag, fcntl};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::UnixStream;
use tokio::net::unix::pipe;

/// Puts a standard descriptor's file status flags back as they were when
/// the stream that made it non-blocking is dropped.
#[derive(Debug)]
pub struct RestoreFlags {
    fd: OwnedFd,
    flags: OFlag,
}

impl Drop for RestoreFlags {
    fn drop(&mut self) {
        let _ = fcntl(&self.fd, FcntlArg::F_SETFL(self.flags));
    }
}

/// What kind of descriptor `fd` is, with a duplicate of it and a guard that
/// restores its flags; `None` for kinds the reactor cannot drive.
fn pollable(fd: impl AsFd) -> Option<(OwnedFd, bool, RestoreFlags)> {
    let owned = fd.as_fd().try_clone_to_owned().ok()?;
    let kind = std::fs::File::from(owned.try_clone().ok()?)
        .metadata()
        .ok()?
        .file_type();
    if !(kind.is_fifo() || kind.is_socket()) {
        return None;
    }
    let flags = OFlag::from_bits_truncate(fcntl(&owned, FcntlArg::F_GETFL).ok()?);
    let guard = RestoreFlags {
        fd: owned.try_clone().ok()?,
        flags,
    };
    Some((owned, kind.is_socket(), guard))
}

fn socket(fd: OwnedFd) -> Option<UnixStream> {
    let std = std::os::unix::net::UnixStream::from(fd);
    std.set_nonblocking(true).ok()?;
    UnixStream::from_std(std).ok()
}

/// The process's standard input: reactor-driven when possible.
#[derive(Debug)]
pub enum Input {
    /// A pipe, read on the runtime thread.
    Pipe(pipe::Receiver, RestoreFlags),
    /// A socket (pair), read on the runtime thread.
    Socket(UnixStream, RestoreFlags),
    /// Anything else, through tokio's blocking-pool reader.
    Blocking(tokio::io::Stdin),
}

/// The process's standard output: reactor-driven when possible.
#[derive(Debug)]
pub enum Output {
    /// A pipe, written on the runtime thread.
    Pipe(pipe::Sender, RestoreFlags),
    /// A socket (pair), written on the runtime thread.
    Socket(UnixStream, RestoreFlags),
    /// Anything else, through tokio's blocking-pool writer.
    Blocking(tokio::io::Stdout),
}

/// Standard input as an async stream (call inside the runtime).
pub fn input() -> Input {
    let reactor = pollable(io::stdin()).and_then(|(fd, is_socket, guard)| {
        if is_socket {
            socket(fd).map(|s| Input::Socket(s, guard))
        } else {
            pipe::Receiver::from_owned_fd(fd)
                .ok()
                .map(|p| Input::Pipe(p, guard))
        }
    });
    reactor.unwrap_or_else(|| Input::Blocking(tokio::io::stdin()))
}

/// Standard output as an async stream (call inside the runtime).
pub fn output() -> Output {
    let reactor = pollable(io::stdout()).and_then(|(fd, is_socket, guard)| {
        if is_socket {
            socket(fd).map(|s| Output::Socket(s, guard))
        } else {
            pipe::Sender::from_owned_fd(fd)
                .ok()
                .map(|p| Output::Pipe(p, guard))
        }
    });
    reactor.unwrap_or_else(|| Output::Blocking(tokio::io::stdout()))
}

impl AsyncRead for Input {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Input::Pipe(s, _) => Pin::new(s).poll_read(cx, buf),
            Input::Socket(s, _) => Pin::new(s).poll_read(cx, buf),
            Input::Blocking(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Output {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Output::Pipe(s, _) => Pin::new(s).poll_write(cx, buf),
            Output::Socket(s, _) => Pin::new(s).poll_write(cx, buf),
            Output::Blocking(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Output::Pipe(s, _) => Pin::new(s).poll_flush(cx),
            Output::Socket(s, _) => Pin::new(s).poll_flush(cx),
            Output::Blocking(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Output::Pipe(s, _) => Pin::new(s).poll_shutdown(cx),
            Output::Socket(s, _) => Pin::new(s).poll_shutdown(cx),
            Output::Blocking(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}
