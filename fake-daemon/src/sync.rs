//! Locking that survives a poisoned mutex.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, carrying on if a panicking thread poisoned it: every
/// critical section here leaves the data consistent, and the daemon must
/// never crash.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
