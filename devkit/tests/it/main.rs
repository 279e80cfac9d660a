//! The dev kit's integration tests, in one binary: a module per area.

// Commands run within a time limit, their process groups killed and
// reaped, some under the subreaper (prctl) and followed through /proc:
// Linux only.
#[cfg(target_os = "linux")]
mod command;
// Signals, exit by signal and liveness by kill(2), on `sleep` and `true`:
// Unix only.
#[cfg(unix)]
mod process;
