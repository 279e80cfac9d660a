//! `cargo xtask`: builds the workspace's binaries, then runs the `harness`
//! binary with the task's arguments (the `kits` binary for its tasks), so
//! every option is declared once, by the binary that runs it (`cargo xtask
//! race --help` prints its help). xtask's own tasks are declared in
//! [`flags`], with which binary runs the others.
//!
//! `--release` (any task of the harness or the kits) builds and runs the
//! release binaries; `bench` always does. Some tasks are xtask's own:
//! `wheel` builds and checks the Python wheels and `cross-check` runs
//! cross-built ones under an emulator (the [`packaging`] module), `fuzz`
//! runs the fuzz targets, `surface` regenerates the tool table (the
//! [`codegen`] module); `e2e` and `hosts` build this machine's wheel first
//! and name it to the kits in [`WHEEL_ENV`], so both kits test the binary
//! the wheel installs; a wheel already named there is tested instead (the
//! hosted Windows job names the msvc wheel maturin built).

use std::ffi::OsString;
#[cfg(unix)]
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

use clap::FromArgMatches;
use devkit::bins::{self, Profile, WHEEL_ENV, error_chain};

mod codegen;
mod flags;
mod fuzz;
mod packaging;

use flags::{CrossCheckArgs, CrossClippyArgs, Runner, Task, WheelArgs, Xtask};
use packaging::platform::platforms_of;

fn main() -> ExitCode {
    let matches = flags::command().get_matches();
    let xtask = match Xtask::from_arg_matches(&matches) {
        Ok(xtask) => xtask,
        Err(e) => e.exit(),
    };
    match xtask.task {
        Task::Wheel(args) => wheel_task(args),
        Task::CrossCheck(args) => cross_check_task(args),
        Task::CrossClippy(args) => cross_clippy_task(args),
        Task::Fuzz(args) => fuzz_task(args),
        Task::Surface(args) => codegen::surface_task(args),
        Task::Elsewhere(args) => run_elsewhere(args),
    }
}

/// A task of the harness or the kits: builds the binaries (release ones
/// for `bench` or with `--release`, which is not passed on), then runs the
/// task's binary in place of this process with the other arguments; `e2e`
/// and `hosts` first build this machine's wheel and name it in
/// [`WHEEL_ENV`], unless the caller named one there already.
fn run_elsewhere(mut args: Vec<OsString>) -> ExitCode {
    let words: Vec<String> = args
        .iter()
        .take(2)
        .map(|word| word.to_string_lossy().into_owned())
        .collect();
    let task = words.first().cloned().unwrap_or_default();
    // `help TASK`: xtask's own task's help here, any other's from the
    // binary that runs it.
    let about = match words.as_slice() {
        [help, named] if help == "help" => Some(named.as_str()),
        _ => None,
    };
    if let Some(own) = about.and_then(|named| {
        let mut command = flags::command();
        command.build();
        command
            .find_subcommand_mut(named)
            .map(|own| own.print_help())
    }) {
        return if own.is_ok() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    }
    let runner = Runner::of(about.unwrap_or(&task));
    let release = task == "bench" || args.iter().any(|a| a == "--release");
    args.retain(|a| a != "--release");
    let profile = if release {
        Profile::Release
    } else {
        Profile::Dev
    };
    let built = match bins::cargo_build(
        &[bins::WRAPPER, bins::FAKE_DAEMON, runner.bin],
        &profile,
        false,
    ) {
        Ok(built) => built,
        Err(e) => {
            eprintln!("cargo xtask: {e}");
            return ExitCode::FAILURE;
        }
    };
    let Some(program) = built.last() else {
        eprintln!("cargo xtask: cargo built no {}", runner.bin.bin);
        return ExitCode::FAILURE;
    };
    let mut command = Command::new(program);
    command.args(&args);
    if (task == "e2e" || task == "hosts")
        && std::env::var_os(WHEEL_ENV).is_some_and(|w| !w.is_empty())
    {
        // A wheel named by the caller (the release's msvc build on
        // Windows, a wheel downloaded from a release) is tested as it is;
        // the kit inherits the variable.
        eprintln!("cargo xtask: testing the wheel {WHEEL_ENV} names");
    } else if task == "e2e" || task == "hosts" {
        match host_wheel() {
            Ok(built) => {
                eprintln!("cargo xtask: {built}");
                command.env(WHEEL_ENV, &built.path);
            }
            Err(e) => {
                eprintln!("cargo xtask: building the wheel: {}", error_chain(&e));
                return ExitCode::FAILURE;
            }
        }
    }
    hand_over(command, program)
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
