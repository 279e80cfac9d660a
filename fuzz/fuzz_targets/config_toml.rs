//! The `config_toml` target: see `fuzz_checks::host_config` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_checks::host_config::check_toml(data));
