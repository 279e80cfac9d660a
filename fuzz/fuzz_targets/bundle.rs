//! The `bundle` target: see `fuzz_checks::bundle` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_checks::bundle::check(data));
