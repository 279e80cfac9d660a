//! `cargo xtask`: builds the workspace's binaries, then runs the `harness`
//! binary with the task's arguments, so every option is declared once, by
//! the harness (`cargo xtask race --help` prints its help).
//!
//! `--release` (any task) builds and runs the release binaries; `bench`
//! always does. Two tasks do more here: `wheel` builds and checks the
//! Python wheel (the harness's [`wheel`] module) and runs no harness
//! command; `e2e` and `hosts` build the same wheel first and name it to
//! the harness in [`WHEEL_ENV`], so the end-to-end and hosts kits test the
//! binary the wheel installs.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

use clap::Parser;
use harness::bins::{self, Profile, error_chain};
use harness::e2e::wheel::{self, WHEEL_ENV, WheelConfig};

mod codegen;
mod fuzz;

/// The main tasks, and what each is for (any harness command is accepted).
const TASKS: [(&str, &str); 10] = [
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
        "the wrapper's wheel against the real iai-mcp 3.3.0 daemon, or --iai-pme VERSION's (Python 3.11+, Node.js)",
    ),
    (
        "hosts",
        "Claude Code, Codex CLI and opencode start the wheel's wrapper on the real daemon, offline; writes target/hosts/",
    ),
    (
        "surface",
        "how release --iai-pme VERSION's tool surface differs from the wrapper's table; --write rewrites the table",
    ),
    (
        "wheel",
        "build the Python wheel (manylinux2014 on Linux), check it, print where it is",
    ),
    (
        "fuzz",
        "run the libFuzzer targets in fuzz/ (nightly toolchain and cargo-fuzz)",
    ),
];

/// Build the Python wheel that carries the wrapper's binary, then check it
/// as a user gets it (fresh environment, platform tags, newest glibc
/// needed, `--version` with no Rust on PATH).
#[derive(Debug, Parser)]
#[command(name = "cargo xtask wheel", bin_name = "cargo xtask wheel")]
struct WheelArgs {
    /// The Rust target to build for, e.g. aarch64-unknown-linux-gnu or
    /// aarch64-apple-darwin (default: this machine's); it must be
    /// installed (`rustup target add`).
    #[arg(long, value_name = "TRIPLE")]
    target: Option<String>,
    /// The Python interpreter for the build and check environments
    /// (default: python3).
    #[arg(long)]
    python: Option<PathBuf>,
}

fn main() -> ExitCode {
    let mut args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let Some(task) = args.first().and_then(|t| t.to_str()).map(str::to_owned) else {
        return usage();
    };
    if task.starts_with('-') {
        return usage();
    }
    if task == "wheel" {
        return wheel_task(WheelArgs::parse_from(&args));
    }
    if task == "fuzz" {
        return fuzz_task(fuzz::FuzzArgs::parse_from(&args));
    }
    if task == "surface" {
        return codegen::surface_task(codegen::SurfaceArgs::parse_from(&args));
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
    let mut harness = Command::new(&built[2]);
    harness.args(&args);
    if task == "e2e" || task == "hosts" {
        match wheel::build(&wheel_config(None, None)) {
            Ok(built) => {
                eprintln!("cargo xtask: {built}");
                harness.env(WHEEL_ENV, &built.path);
            }
            Err(e) => {
                eprintln!("cargo xtask: building the wheel: {}", error_chain(&e));
                return ExitCode::FAILURE;
            }
        }
    }
    let error = harness.exec();
    eprintln!("cargo xtask: cannot run {}: {error}", built[2].display());
    ExitCode::FAILURE
}

/// `cargo xtask wheel`: builds, checks, prints the report; exit 0 when
/// every check passed.
fn wheel_task(args: WheelArgs) -> ExitCode {
    let cfg = wheel_config(args.target, args.python);
    let report = wheel::build(&cfg).and_then(|built| wheel::check(built, &cfg));
    match report {
        Ok(report) => {
            println!("{report}");
            if report.passed() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("cargo xtask wheel: {}", error_chain(&e));
            ExitCode::FAILURE
        }
    }
}

/// `cargo xtask fuzz`: runs the targets, prints a row for each; exit 0
/// when none found anything.
fn fuzz_task(args: fuzz::FuzzArgs) -> ExitCode {
    // xtask lives one level below the workspace root.
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    match fuzz::run(&args, &root) {
        Ok(outcomes) => {
            print!("{}", fuzz::report(&outcomes));
            let crashed = outcomes
                .iter()
                .any(|o| matches!(o, fuzz::Outcome::Ran(run) if !run.crashes.is_empty()));
            let failed = outcomes
                .iter()
                .any(|o| matches!(o, fuzz::Outcome::Failed { .. }));
            if crashed {
                eprintln!(
                    "cargo xtask fuzz: inputs that break an invariant are in fuzz/regressions/; `cargo test -p fuzz-checks` fails on them until they are fixed"
                );
            }
            if crashed || failed {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            eprintln!("cargo xtask fuzz: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The wheel's settings, in this workspace's target directory.
fn wheel_config(target: Option<String>, python: Option<PathBuf>) -> WheelConfig {
    WheelConfig {
        target_dir: bins::target_dir(),
        target,
        python,
    }
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
