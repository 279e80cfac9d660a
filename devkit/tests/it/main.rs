//! The dev kit's integration tests, in one binary: a module per area.

// Signals, exit by signal and liveness by kill(2), on `sleep` and `true`:
// Unix only.
#[cfg(unix)]
mod process;
