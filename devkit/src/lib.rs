//! The maintainers' dev kit: what the harness, the kits and `cargo xtask`
//! each need to run programs and report on them, so that none of them
//! depends on another for it.
//!
//! It uses only threads and `std::process` (no async runtime).
//!
//! - [`bins`]: finding or building the workspace's binaries, the target
//!   directory, the workspace's root.
//! - [`process`]: kill-on-drop child ownership (of a child, or of a
//!   process group), signals, timed waits, output capture.
//! - [`command`]: a command run to completion within a time limit, named
//!   when it runs out of it.
//! - [`cleanenv`]: the explicit environment of an install or a host: what
//!   the registries' clients need of this machine, nothing else.
//! - [`reap`]: a child subreaper, so that every process a command started
//!   is gone when it ends, those that left its process group included.
//! - [`pyenv`]: Python virtual environments, a wheel installed into one,
//!   and a command run to completion with its output or why it failed.
//! - [`shell`]: command lines split into words as a shell splits them.
//! - [`tempdir`]: short temporary directories for Unix sockets.
//! - [`rows`]: reports as rows of checks with a verdict each.
//! - [`mod@format`] and [`table`]: figures and plain-text tables for people.
//! - [`sync`]: locking that survives a panicking holder.
//! - [`error`]: what can go wrong in all of these.

pub mod bins;
pub mod cleanenv;
pub mod command;
pub mod error;
pub mod format;
pub mod process;
pub mod pyenv;
// A child subreaper: prctl, waitpid and /proc, Unix only.
#[cfg(unix)]
pub mod reap;
pub mod rows;
pub mod shell;
pub mod sync;
pub mod table;
pub mod tempdir;
