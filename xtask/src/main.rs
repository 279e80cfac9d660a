//! `cargo xtask`: builds the workspace's binaries, then runs the `harness`
//! binary with the task's arguments (the `kits` binary for `e2e`, `hosts`
//! and `bench`), so every option is declared once, by the binary that
//! runs it (`cargo xtask race --help` prints its help).
//!
//! `--release` (any task) builds and runs the release binaries; `bench`
//! always does. Some tasks are xtask's own: `wheel` builds and checks the
//! Python wheels and `cross-check` runs cross-built ones under an emulator
//! (the [`packaging`] module), `fuzz` runs the fuzz targets, `surface`
//! regenerates the tool table (the [`codegen`] module); `e2e` and `hosts`
//! build this machine's wheel first and name it to the kits in
//! [`WHEEL_ENV`], so both kits test the binary the wheel installs.

use std::ffi::OsString;
#[cfg(unix)]
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

use clap::Parser;
use devkit::bins::{self, Profile, WHEEL_ENV, error_chain};

// The code generation installs a release with the end-to-end kit's code,
// which is Unix only (see the kits crate).
#[cfg(unix)]
mod codegen;
mod fuzz;
mod packaging;

use packaging::platform::platforms_of;

/// The tasks the `kits` binary runs; the `harness` binary runs every other
/// task that is not xtask's own.
const KIT_TASKS: [&str; 3] = ["bench", "e2e", "hosts"];

/// The main tasks, and what each is for (any harness command is accepted).
const TASKS: [(&str, &str); 12] = [
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
        "build and check the Python wheel: this machine's, or --target TRIPLE (repeatable) or all",
    ),
    (
        "cross-check",
        "run a cross-built wheel's binary here: arm64 Linux under qemu-user, Windows under Wine",
    ),
    (
        "cross-clippy",
        "clippy on every target of the workspace as compiled for --target TRIPLE (Debian's clippy for the cross compiler)",
    ),
    (
        "fuzz",
        "run the libFuzzer targets in fuzz/ (nightly toolchain and cargo-fuzz)",
    ),
];

/// Build the Python wheels that carry the wrapper's binary, then check each
/// as built (platform tags, files, the binary as its platform's loader
/// reads it; on this machine's own platform `--version` from a fresh
/// environment with no Rust on PATH).
#[derive(Debug, Parser)]
#[command(name = "cargo xtask wheel", bin_name = "cargo xtask wheel")]
struct WheelArgs {
    /// The Rust target to build for: x86_64-unknown-linux-gnu,
    /// aarch64-unknown-linux-gnu, aarch64-apple-darwin, x86_64-apple-darwin,
    /// x86_64-pc-windows-gnu, or all; repeatable (default: this machine's).
    /// Another target than this machine's is built with a compiler
    /// unpacked from Debian's rustc-web packages and rustup's nightly cargo.
    #[arg(long, value_name = "TRIPLE")]
    target: Vec<String>,
    /// The Python interpreter for the build and check environments
    /// (default: python3).
    #[arg(long)]
    python: Option<PathBuf>,
}

/// Run a cross-built wheel's binary on this machine: arm64 Linux under
/// qemu-user (the smoke scenario, then the wrapper's tests), Windows under
/// Wine (a std-only probe, the smoke scenario over TCP, then the wrapper's
/// unit tests built for Windows).
#[derive(Debug, Parser)]
#[command(name = "cargo xtask cross-check", bin_name = "cargo xtask cross-check")]
struct CrossCheckArgs {
    /// aarch64-unknown-linux-gnu or x86_64-pc-windows-gnu (repeatable), or
    /// all of those that can run here.
    #[arg(long, value_name = "TRIPLE", required = true)]
    target: Vec<String>,
    /// Windows: only build and run the std-only probe (the toolchain, the
    /// linker, Wine and the test-only DLL), not the wrapper.
    #[arg(long)]
    probe_only: bool,
    /// The smoke run only, not the wrapper's tests (arm64 Linux) or unit
    /// tests (Windows).
    #[arg(long)]
    no_tests: bool,
    /// The Python interpreter for the build tools (default: python3).
    #[arg(long)]
    python: Option<PathBuf>,
}

/// Run clippy, every warning an error, on every target of the workspace
/// (libraries, binaries, tests) as compiled for another target (its `cfg`
/// lines for that platform included), with the cross compiler and
/// Debian's clippy for it.
#[derive(Debug, Parser)]
#[command(
    name = "cargo xtask cross-clippy",
    bin_name = "cargo xtask cross-clippy"
)]
struct CrossClippyArgs {
    /// Any target `wheel` builds but this machine's (repeatable), or all.
    #[arg(long, value_name = "TRIPLE", required = true)]
    target: Vec<String>,
    /// The Python interpreter for the build tools (default: python3).
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
    if task == "cross-check" {
        return cross_check_task(CrossCheckArgs::parse_from(&args));
    }
    if task == "cross-clippy" {
        return cross_clippy_task(CrossClippyArgs::parse_from(&args));
    }
    if task == "fuzz" {
        return fuzz_task(fuzz::FuzzArgs::parse_from(&args));
    }
    if task == "surface" {
        #[cfg(unix)]
        return codegen::surface_task(codegen::SurfaceArgs::parse_from(&args));
        #[cfg(not(unix))]
        {
            eprintln!("cargo xtask surface: Unix only, as the end-to-end kit it uses is");
            return ExitCode::FAILURE;
        }
    }
    let release = task == "bench" || args.iter().any(|a| a == "--release");
    args.retain(|a| a != "--release");
    let profile = if release {
        Profile::Release
    } else {
        Profile::Dev
    };
    let runner = if KIT_TASKS.contains(&task.as_str()) {
        bins::KITS
    } else {
        bins::HARNESS
    };
    let built =
        match bins::cargo_build(&[bins::WRAPPER, bins::FAKE_DAEMON, runner], &profile, false) {
            Ok(built) => built,
            Err(e) => {
                eprintln!("cargo xtask: {e}");
                return ExitCode::FAILURE;
            }
        };
    let mut runner = Command::new(&built[2]);
    runner.args(&args);
    if task == "e2e" || task == "hosts" {
        match host_wheel() {
            Ok(built) => {
                eprintln!("cargo xtask: {built}");
                runner.env(WHEEL_ENV, &built.path);
            }
            Err(e) => {
                eprintln!("cargo xtask: building the wheel: {}", error_chain(&e));
                return ExitCode::FAILURE;
            }
        }
    }
    hand_over(runner, &built[2])
}

/// Becomes `runner` (`exec`), so that signals and the exit status are its
/// own; returns only when it could not be started.
#[cfg(unix)]
fn hand_over(mut runner: Command, program: &std::path::Path) -> ExitCode {
    let error = runner.exec();
    eprintln!("cargo xtask: cannot run {}: {error}", program.display());
    ExitCode::FAILURE
}

/// Where there is no `exec` (Windows): runs `runner` to its end and exits
/// with its exit code.
#[cfg(not(unix))]
fn hand_over(mut runner: Command, program: &std::path::Path) -> ExitCode {
    match runner.status() {
        Ok(status) => status
            .code()
            .and_then(|code| u8::try_from(code).ok())
            .map_or(ExitCode::FAILURE, ExitCode::from),
        Err(error) => {
            eprintln!("cargo xtask: cannot run {}: {error}", program.display());
            ExitCode::FAILURE
        }
    }
}

/// `cargo xtask wheel`: builds and checks each wheel, prints the reports;
/// exit 0 when every wheel was built and passed every check.
fn wheel_task(args: WheelArgs) -> ExitCode {
    let python = args.python.unwrap_or_else(|| PathBuf::from("python3"));
    let outcomes = packaging::host_platform()
        .and_then(|host| Ok((host, platforms_of(&args.target, host)?)))
        .and_then(|(host, platforms)| {
            packaging::build_and_check(&platforms, host, &python, &bins::target_dir())
        });
    let outcomes = match outcomes {
        Ok(outcomes) => outcomes,
        Err(e) => {
            eprintln!("cargo xtask wheel: {}", error_chain(&e));
            return ExitCode::FAILURE;
        }
    };
    let mut passed = true;
    for outcome in &outcomes {
        match &outcome.result {
            Ok(report) => {
                println!("{report}\n");
                passed &= report.passed();
            }
            Err(e) => {
                println!("== {}\nnot built: {}\n", outcome.platform, error_chain(e));
                passed = false;
            }
        }
    }
    if outcomes.len() > 1 {
        for outcome in &outcomes {
            let verdict = match &outcome.result {
                Ok(report) if report.passed() => "PASS",
                Ok(_) => "FAIL",
                Err(_) => "NOT BUILT",
            };
            println!("{:<28} {verdict}", outcome.platform.triple());
        }
    }
    if passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// `cargo xtask cross-check`: runs each target's binary here, prints a
/// table of what ran; exit 0 when everything passed.
fn cross_check_task(args: CrossCheckArgs) -> ExitCode {
    let python = args.python.unwrap_or_else(|| PathBuf::from("python3"));
    let run = || -> Result<Vec<devkit::rows::Row>, packaging::error::DistError> {
        let host = packaging::host_platform()?;
        let mut platforms = platforms_of(&args.target, host)?;
        if args.target.iter().any(|t| t == "all") {
            platforms.retain(|p| *p != host && p.run_packages().is_some());
        }
        let mut rows = Vec::new();
        for platform in platforms {
            let cfg = packaging::cross_check::CrossCheckConfig {
                platform,
                probe_only: args.probe_only,
                no_tests: args.no_tests,
                python: python.clone(),
                target_dir: bins::target_dir(),
            };
            rows.extend(packaging::cross_check::cross_check(&cfg, host)?);
        }
        Ok(rows)
    };
    match run() {
        Ok(rows) => {
            let report = packaging::cross_check::CrossReport { rows };
            println!("{report}");
            if report.passed() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("cargo xtask cross-check: {}", error_chain(&e));
            ExitCode::FAILURE
        }
    }
}

/// `cargo xtask cross-clippy`: clippy for each target in turn; exit 0 when
/// it found nothing anywhere.
fn cross_clippy_task(args: CrossClippyArgs) -> ExitCode {
    let python = args.python.unwrap_or_else(|| PathBuf::from("python3"));
    let run = || -> Result<(), packaging::error::DistError> {
        let host = packaging::host_platform()?;
        let mut platforms = platforms_of(&args.target, host)?;
        platforms.retain(|p| *p != host);
        let target_dir = bins::target_dir();
        let tools = packaging::build::tools(&platforms, host, &python, &target_dir)?;
        let Some(cross) = tools.cross.as_ref() else {
            return Err(packaging::error::DistError::Unexpected(
                "no target but this machine's: run `cargo clippy` for it".to_owned(),
            ));
        };
        for platform in platforms {
            packaging::cross_clippy::clippy(platform, cross, &target_dir)?;
            println!("clippy for {}: clean", platform.triple());
        }
        Ok(())
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cargo xtask cross-clippy: {}", error_chain(&e));
            ExitCode::FAILURE
        }
    }
}

/// This machine's wheel, built (not checked) for `cargo xtask e2e`.
fn host_wheel() -> Result<packaging::build::BuiltWheel, packaging::error::DistError> {
    let host = packaging::host_platform()?;
    let python = PathBuf::from("python3");
    let target_dir = bins::target_dir();
    let tools = packaging::build::tools(&[host], host, &python, &target_dir)?;
    packaging::build::build_one(host, host, &tools)
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

fn usage() -> ExitCode {
    eprintln!("usage: cargo xtask TASK [--release] [OPTIONS]\n\ntasks:");
    for (name, what) in TASKS {
        eprintln!("  {name:<10} {what}");
    }
    eprintln!(
        "  (any other harness command: storm, down-up, hang, herd, hostile, smoke)\n\nOPTIONS are the harness's (the kits' for bench, e2e and hosts): cargo xtask TASK --help"
    );
    ExitCode::from(2)
}
