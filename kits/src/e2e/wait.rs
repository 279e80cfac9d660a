//! Waiting with a time bound for something the kit cannot be told about
//! (the daemon answering, a capture stored, a process gone): the
//! condition is checked every few milliseconds until it holds.

use std::time::{Duration, Instant};

use harness::error::HarnessError;

/// Checks `done` every `every_ms` milliseconds until it holds; past
/// `timeout`, fails with what `why` says.
pub fn poll(
    timeout: Duration,
    every_ms: u64,
    mut done: impl FnMut() -> Result<bool, HarnessError>,
    why: impl FnOnce() -> String,
) -> Result<(), HarnessError> {
    let deadline = Instant::now() + timeout;
    while !done()? {
        if Instant::now() > deadline {
            return Err(HarnessError::Scenario(why()));
        }
        std::thread::sleep(Duration::from_millis(every_ms));
    }
    Ok(())
}
