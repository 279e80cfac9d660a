//! The `mcp_stream` target: see `fuzz_checks::mcp_stream` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_checks::mcp_stream::check(data));
