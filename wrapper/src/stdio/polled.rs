//! Pipes and sockets given as stdin/stdout, driven by the reactor (Unix).
//!
//! MCP clients give their servers pipes (Python, Rust) or socket pairs
//! (Node's libuv), both of which epoll can watch, so for those the wrapper
//! puts the descriptor in non-blocking mode and drives it from the runtime
//! thread (tokio's `pipe` and `UnixStream` types). The original descriptor
//! flags are restored when the stream is dropped, so a parent sharing the
//! descriptor is left as it was.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::FileTypeExt;
use std::pin::Pin;
use std::task::{Context, Poll};

use nix::fcntl::{FcntlArg, OFlag, fcntl};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::UnixStream;
use tokio::net::unix::pipe;
use tokio_util::either::Either;

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

/// Standard input as a pipe or socket the reactor drives, if it is one:
/// the stream, and the guard that restores the descriptor's flags.
#[derive(Debug)]
pub struct PolledInput {
    stream: Either<pipe::Receiver, UnixStream>,
    _restore: RestoreFlags,
}

/// Standard output as a pipe or socket the reactor drives, if it is one:
/// the stream, and the guard that restores the descriptor's flags.
#[derive(Debug)]
pub struct PolledOutput {
    stream: Either<pipe::Sender, UnixStream>,
    _restore: RestoreFlags,
}

/// Standard input, when it is a pipe or a socket (call inside the runtime).
pub fn input() -> Option<PolledInput> {
    let (fd, is_socket, guard) = pollable(io::stdin())?;
    let stream = if is_socket {
        Either::Right(socket(fd)?)
    } else {
        Either::Left(pipe::Receiver::from_owned_fd(fd).ok()?)
    };
    Some(PolledInput {
        stream,
        _restore: guard,
    })
}

/// Standard output, when it is a pipe or a socket (call inside the
/// runtime).
pub fn output() -> Option<PolledOutput> {
    let (fd, is_socket, guard) = pollable(io::stdout())?;
    let stream = if is_socket {
        Either::Right(socket(fd)?)
    } else {
        Either::Left(pipe::Sender::from_owned_fd(fd).ok()?)
    };
    Some(PolledOutput {
        stream,
        _restore: guard,
    })
}

impl AsyncRead for PolledInput {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for PolledOutput {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}
