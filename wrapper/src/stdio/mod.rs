//! stdin and stdout as async streams.
//!
//! `tokio::io::stdin()`/`stdout()` perform every read, write and flush on
//! tokio's blocking thread pool, so each message crosses threads several
//! times; measured, that hand-off cost several times the daemon round trip.
//! On Unix, where MCP clients give their servers pipes or socket pairs, the
//! wrapper drives those from the runtime thread instead ([`polled`]).
//! Anything else (a terminal, a regular file, and every standard handle on
//! Windows, whose anonymous pipes the reactor cannot watch) keeps tokio's
//! portable blocking implementation.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

#[cfg(unix)]
pub mod polled;

/// The process's standard input: reactor-driven when possible.
#[derive(Debug)]
pub enum Input {
    /// A pipe or socket, read on the runtime thread.
    #[cfg(unix)]
    Polled(polled::PolledInput),
    /// Anything else, through tokio's blocking-pool reader.
    Blocking(tokio::io::Stdin),
}

/// The process's standard output: reactor-driven when possible.
#[derive(Debug)]
pub enum Output {
    /// A pipe or socket, written on the runtime thread.
    #[cfg(unix)]
    Polled(polled::PolledOutput),
    /// Anything else, through tokio's blocking-pool writer.
    Blocking(tokio::io::Stdout),
}

/// Standard input as an async stream (call inside the runtime).
pub fn input() -> Input {
    #[cfg(unix)]
    if let Some(polled) = polled::input() {
        return Input::Polled(polled);
    }
    Input::Blocking(tokio::io::stdin())
}

/// Standard output as an async stream (call inside the runtime).
pub fn output() -> Output {
    #[cfg(unix)]
    if let Some(polled) = polled::output() {
        return Output::Polled(polled);
    }
    Output::Blocking(tokio::io::stdout())
}

impl AsyncRead for Input {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            #[cfg(unix)]
            Input::Polled(s) => Pin::new(s).poll_read(cx, buf),
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
            #[cfg(unix)]
            Output::Polled(s) => Pin::new(s).poll_write(cx, buf),
            Output::Blocking(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            #[cfg(unix)]
            Output::Polled(s) => Pin::new(s).poll_flush(cx),
            Output::Blocking(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            #[cfg(unix)]
            Output::Polled(s) => Pin::new(s).poll_shutdown(cx),
            Output::Blocking(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}
