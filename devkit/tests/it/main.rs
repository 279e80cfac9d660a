//! The dev kit's integration tests, in one binary: a module per area.

// Commands run within a time limit, their process groups killed and
// reaped (`sh`, `sleep`, signals): Unix only.
#[cfg(unix)]
mod command;
// Signals, exit by signal and liveness by kill(2), on `sleep` and `true`:
// Unix only.
#[cfg(unix)]
mod process;
