//! Helpers shared by the wrapper's integration tests: spawn this package's
//! wrapper binary (and the fake daemon) through the harness, in fresh
//! temporary directories, killed on drop.

#![allow(dead_code)]

use std::path::PathBuf;
use std::time::Duration;

use harness::tempdir::short_tempdir;
use harness::{FakeDaemon, WrapperCommand, WrapperOptions, WrapperProcess};
use serde_json::{Value, json};
use tempfile::TempDir;

/// Generous bound for any single reply in tests (a safety net, not a
/// timing assertion).
pub const REPLY: Duration = Duration::from_secs(20);

/// The wrapper binary built for this test run.
pub fn wrapper_cmd() -> WrapperCommand {
    WrapperCommand::new(env!("CARGO_BIN_EXE_iai-mcp-wrapper"))
}

/// A wrapper with no daemon anywhere: its socket path names a file that
/// does not exist in a private temporary directory.
pub struct Lonely {
    pub wrapper: WrapperProcess,
    pub dir: TempDir,
}

/// Start a wrapper whose daemon socket does not exist.
pub fn lonely(extra: &[(&str, &str)]) -> Lonely {
    let dir = short_tempdir().expect("tempdir");
    let mut opts = WrapperOptions::new(dir.path().join("absent.sock"));
    for (k, v) in extra {
        opts = opts.env(k, v);
    }
    let wrapper = WrapperProcess::spawn(&wrapper_cmd(), &opts).expect("spawn wrapper");
    Lonely { wrapper, dir }
}

/// A fake daemon and a wrapper connected to it.
pub struct Pair {
    pub wrapper: WrapperProcess,
    pub daemon: FakeDaemon,
    pub dir: TempDir,
}

/// Start a fake daemon, then a wrapper dialling it.
pub fn pair(extra: &[(&str, &str)]) -> Pair {
    let dir = short_tempdir().expect("tempdir");
    let socket: PathBuf = dir.path().join("d.sock");
    let daemon = FakeDaemon::spawn(&socket).expect("spawn fake daemon");
    let mut opts = WrapperOptions::new(&socket);
    for (k, v) in extra {
        opts = opts.env(k, v);
    }
    let wrapper = WrapperProcess::spawn(&wrapper_cmd(), &opts).expect("spawn wrapper");
    Pair {
        wrapper,
        daemon,
        dir,
    }
}

/// Send one raw line and wait for the next message of any kind.
pub fn raw_roundtrip(wrapper: &mut WrapperProcess, line: &[u8]) -> Value {
    let mut bytes = line.to_vec();
    bytes.push(b'\n');
    wrapper.send_raw(&bytes).expect("write");
    wrapper.recv_any(REPLY).expect("a reply")
}

/// `_meta` of a modern-era request for `version`.
pub fn modern_meta(version: &str) -> Value {
    json!({ "_meta": { "io.modelcontextprotocol/protocolVersion": version } })
}
