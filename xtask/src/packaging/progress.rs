//! One line on standard error per step of a distribution task, with the
//! time it took, so a long CI log says where the minutes went.

use std::time::Instant;

/// Runs `work`, then prints `cargo xtask: <what>: done in 12.3 s` (or
/// `failed after ...`) on standard error, and returns what it returned.
/// A line is printed before as well, since a step may run for minutes.
pub fn step<T, E>(what: &str, work: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
    eprintln!("cargo xtask: {what} ...");
    let started = Instant::now();
    let result = work();
    let seconds = started.elapsed().as_secs_f64();
    match &result {
        Ok(_) => eprintln!("cargo xtask: {what}: done in {seconds:.1} s"),
        Err(_) => eprintln!("cargo xtask: {what}: failed after {seconds:.1} s"),
    }
    result
}
