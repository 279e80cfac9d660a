//! What the fuzz targets check, as plain functions.
//!
//! Each target in `fuzz/fuzz_targets/` hands libFuzzer's bytes to one
//! function here, and each function asserts the invariants of one parser
//! that takes bytes from outside the wrapper (a violation panics, which
//! libFuzzer reports as a crash). The same functions run on stable Rust in
//! this crate's tests, over the seed inputs kept in `fuzz/seeds/` and every
//! input that once found a bug, kept in `fuzz/regressions/`: a fix stays
//! fixed without the nightly toolchain.
//!
//! - [`mcp_stream`]: bytes from an MCP host, through the wrapper's line
//!   framing and dispatch.
//! - [`daemon_replies`]: bytes from the daemon's socket, through the same
//!   framing into the bridge, against calls in flight.
//! - [`host_config`]: a host's configuration file through `install` and
//!   `uninstall`, in each of the three formats.
//! - [`bundle`]: an installed release's bundled Node wrapper, through the
//!   reader of its tool surface.

pub mod bundle;
pub mod daemon_replies;
pub mod host_config;
pub mod jsonrpc;
pub mod mcp_stream;

/// One fuzz target: its name (the file in `fuzz/fuzz_targets/` and the
/// folders in `fuzz/seeds/` and `fuzz/regressions/`) and its check.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// The target's name.
    pub name: &'static str,
    /// Runs one input; panics when an invariant does not hold.
    pub check: fn(&[u8]),
}

/// Every target.
pub const TARGETS: [Target; 6] = [
    Target {
        name: "mcp_stream",
        check: mcp_stream::check,
    },
    Target {
        name: "daemon_replies",
        check: daemon_replies::check,
    },
    Target {
        name: "config_json",
        check: host_config::check_json,
    },
    Target {
        name: "config_jsonc",
        check: host_config::check_jsonc,
    },
    Target {
        name: "config_toml",
        check: host_config::check_toml,
    },
    Target {
        name: "bundle",
        check: bundle::check,
    },
];
