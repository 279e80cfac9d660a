//! The `daemon_replies` target: see `fuzz_checks::daemon_replies` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_checks::daemon_replies::check(data));
