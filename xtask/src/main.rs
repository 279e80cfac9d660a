//! `cargo xtask`: builds the workspace's binaries, then runs the `harness`
//! binary with the task's arguments, so every option is declared once, by
//! the harness (`cargo xtask race --help` prints its help).
//!
//! `--release` (any task) builds and runs the release binaries; `bench`
//! always does.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitCode};

use harness::bins::{self, Profile};

/// The main tasks, and what each is for (any harness command is accepted).
const TASKS: [(&str, &str); 6] = [
    (
        "race",
        "show the V3-05 race: prefix mode must fail, fixed mode must pass (--all: the scorecard of both)",
    ),
    (
        "score",
        "every scenario against each --wrapper-cmd (default: this wrapper in both modes)",
    ),
    ("sweep", "map the race window; writes target/race-report/"),
    (
        "soak",
        "calls flowing while the fake daemon misbehaves on a seeded schedule",
    ),
    (
        "bench",
        "release builds, then figures next to the floor; writes target/bench/",
    ),
    (
        "e2e",
        "the wrapper against the real iai-mcp 3.3.0 daemon (Python 3.11+, Node.js)",
    ),
];

fn main() -> ExitCode {
    let mut args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let Some(task) = args.first().and_then(|t| t.to_str()).map(str::to_owned) else {
        return usage();
    };
    if task.starts_with('-') {
        return usage();
    }
    let release = task == "bench" || args.iter().any(|a| a == "--release");
    args.retain(|a| a != "--release");
    let profile = if release {
        Profile::Release
    } else {
        Profile::Dev
    };
    let built = match bins::cargo_build(
        &[bins::WRAPPER, bins::FAKE_DAEMON, bins::HARNESS],
        &profile,
        false,
    ) {
        Ok(built) => built,
        Err(e) => {
            eprintln!("cargo xtask: {e}");
            return ExitCode::FAILURE;
        }
    };
    let error = Command::new(&built[2]).args(&args).exec();
    eprintln!("cargo xtask: cannot run {}: {error}", built[2].display());
    ExitCode::FAILURE
}

fn usage() -> ExitCode {
    eprintln!("usage: cargo xtask TASK [--release] [OPTIONS]\n\ntasks:");
    for (name, what) in TASKS {
        eprintln!("  {name:<10} {what}");
    }
    eprintln!(
        "  (any other harness command: storm, down-up, hang, herd, hostile)\n\nOPTIONS are the harness's: cargo xtask TASK --help"
    );
    ExitCode::from(2)
}
