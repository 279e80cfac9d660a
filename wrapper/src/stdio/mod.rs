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

#[cfg(unix)]
use tokio_util::either::Either;

#[cfg(unix)]
pub mod polled;

/// The process's standard input: on Unix reactor-driven when it is a pipe
/// or socket (left), tokio's blocking-pool reader otherwise (right).
#[cfg(unix)]
pub type Input = Either<polled::PolledInput, tokio::io::Stdin>;
/// The process's standard input, through tokio's blocking-pool reader.
#[cfg(not(unix))]
pub type Input = tokio::io::Stdin;

/// The process's standard output: on Unix reactor-driven when it is a
/// pipe or socket (left), tokio's blocking-pool writer otherwise (right).
#[cfg(unix)]
pub type Output = Either<polled::PolledOutput, tokio::io::Stdout>;
/// The process's standard output, through tokio's blocking-pool writer.
#[cfg(not(unix))]
pub type Output = tokio::io::Stdout;

/// Standard input as an async stream (call inside the runtime).
pub fn input() -> Input {
    #[cfg(unix)]
    return match polled::input() {
        Some(polled) => Either::Left(polled),
        None => Either::Right(tokio::io::stdin()),
    };
    #[cfg(not(unix))]
    return tokio::io::stdin();
}

/// Standard output as an async stream (call inside the runtime).
pub fn output() -> Output {
    #[cfg(unix)]
    return match polled::output() {
        Some(polled) => Either::Left(polled),
        None => Either::Right(tokio::io::stdout()),
    };
    #[cfg(not(unix))]
    return tokio::io::stdout();
}
