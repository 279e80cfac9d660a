//! The wrapper's integration tests, in one binary so that the wrapper and
//! the harness are linked once: a module per area, each driving the real
//! binaries through the harness. The bridge model checker keeps its own
//! binary (`tests/interleavings/`): it runs without the libtest harness.
//!
//! The fake daemon listens as the real one does on the system the tests run
//! on (`harness::Transport::native`): a Unix socket, or TCP with its port
//! and token files on Windows. A module or test that is about Unix itself
//! is gated with `cfg` and says why beside it.

// A daemon that stops reading, built on a Unix listener of its own.
#[cfg(unix)]
mod backpressure;
mod cli;
mod common;
mod daemon_faults;
mod degraded;
mod doctor;
mod endpoint_watch;
// Fixtures laid out under HOME (Windows reads USERPROFILE and APPDATA),
// with modes, symlinks and owners; Windows' host paths are the unit tests'
// (install::hosts) and `install` runs under Wine in `cargo xtask cross-check`.
#[cfg(unix)]
mod install;
mod lifecycle;
mod logging;
mod protocol;
mod race;
mod release;
// SECURITY.md's claims are about Unix modes, umask and owners.
#[cfg(unix)]
mod security;
mod settings_doc;
mod surface;
mod tcp;
// macOS's wake-up against sh stand-ins for launchctl and ps, /bin/ps and a
// Unix socket; every platform's wake plan is the unit tests' (lifecycle::wake).
#[cfg(unix)]
mod wake;
