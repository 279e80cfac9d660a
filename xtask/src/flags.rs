//! `cargo xtask`'s command line, declared once: xtask's own tasks, a
//! variant each with its options, and every other task passed on to the
//! binary that runs it with its arguments as given, so that each option is
//! declared by the binary that reads it (`cargo xtask TASK --help` prints
//! the binary's help). xtask knows of the others only which binary runs
//! them ([`Runner`]); their lists are the binaries' own (`cargo xtask
//! help` prints the harness's).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, CommandFactory, Parser, Subcommand};
use devkit::bins::{self, WorkspaceBin};

use crate::codegen::SurfaceArgs;
use crate::fuzz::FuzzArgs;

/// Builds the workspace's binaries, then runs the task. `--release` (any
/// task of the harness or the kits) builds and runs the release binaries;
/// `bench` always does.
#[derive(Debug, Parser)]
#[command(
    name = "cargo xtask",
    bin_name = "cargo xtask",
    arg_required_else_help = true
)]
pub struct Xtask {
    /// The task.
    #[command(subcommand)]
    pub task: Task,
}

/// Every task: xtask's own, then those of the harness and the kits.
#[derive(Debug, Subcommand)]
pub enum Task {
    /// Build and check the Python wheel: this machine's, or --target TRIPLE
    /// (repeatable) or all
    Wheel(WheelArgs),
    /// Run a cross-built wheel's binary here: arm64 Linux under qemu-user,
    /// Windows under Wine
    CrossCheck(CrossCheckArgs),
    /// Clippy on every target of the workspace as compiled for --target
    /// TRIPLE (Debian's clippy for the cross compiler)
    CrossClippy(CrossClippyArgs),
    /// Run the libFuzzer targets in fuzz/ (nightly toolchain and cargo-fuzz)
    Fuzz(FuzzArgs),
    /// How release --iai-pme VERSION's tool surface differs from the
    /// wrapper's table; --write rewrites the table
    Surface(SurfaceArgs),
    /// A task of the harness or the kits, and its arguments as given.
    #[command(external_subcommand)]
    Elsewhere(Vec<OsString>),
}

/// Build the Python wheels that carry the wrapper's binary, then check each
/// as built (platform tags, files, the binary as its platform's loader
/// reads it; on this machine's own platform `--version` from a fresh
/// environment with no Rust on PATH).
#[derive(Debug, Args)]
pub struct WheelArgs {
    /// The Rust target to build for: x86_64-unknown-linux-gnu,
    /// aarch64-unknown-linux-gnu, aarch64-apple-darwin, x86_64-apple-darwin,
    /// x86_64-pc-windows-gnu, or all; repeatable (default: this machine's).
    /// Another target than this machine's is built with a compiler
    /// unpacked from Debian's rustc-web packages and rustup's nightly cargo.
    #[arg(long, value_name = "TRIPLE")]
    pub target: Vec<String>,
    /// The Python interpreter for the build and check environments
    /// (default: python3).
    #[arg(long)]
    pub python: Option<PathBuf>,
}

/// Run a cross-built wheel's binary on this machine: arm64 Linux under
/// qemu-user (the smoke scenario, then the wrapper's tests), Windows under
/// Wine (a std-only probe, the smoke scenario over TCP, then the wrapper's
/// unit tests built for Windows).
#[derive(Debug, Args)]
pub struct CrossCheckArgs {
    /// aarch64-unknown-linux-gnu or x86_64-pc-windows-gnu (repeatable), or
    /// all of those that can run here.
    #[arg(long, value_name = "TRIPLE", required = true)]
    pub target: Vec<String>,
    /// Windows: only build and run the std-only probe (the toolchain, the
    /// linker, Wine and the test-only DLL), not the wrapper.
    #[arg(long)]
    pub probe_only: bool,
    /// The smoke run only, not the wrapper's tests (arm64 Linux) or unit
    /// tests (Windows).
    #[arg(long)]
    pub no_tests: bool,
    /// The Python interpreter for the build tools (default: python3).
    #[arg(long)]
    pub python: Option<PathBuf>,
}

/// Run clippy, every warning an error, on every target of the workspace
/// (libraries, binaries, tests) as compiled for another target (its `cfg`
/// lines for that platform included), with the cross compiler and
/// Debian's clippy for it.
#[derive(Debug, Args)]
pub struct CrossClippyArgs {
    /// Any target `wheel` builds but this machine's (repeatable), or all.
    #[arg(long, value_name = "TRIPLE", required = true)]
    pub target: Vec<String>,
    /// The Python interpreter for the build tools (default: python3).
    #[arg(long)]
    pub python: Option<PathBuf>,
}

/// The binary that runs a task xtask passes on: the kits binary for the
/// real-daemon and host kits and the bench, the harness binary for every
/// other task (the race, the scorecard, the sweep, one per scenario).
///
/// Each binary declares its own tasks; xtask names only the kits' few, so
/// that a new scenario is the harness's alone. The test
/// `each_task_goes_to_the_binary_that_declares_it` (below) holds
/// [`KITS_TASKS`] to the kits binary's own list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Runner {
    /// The binary.
    pub bin: WorkspaceBin,
}

/// The tasks the kits binary runs.
pub const KITS_TASKS: [&str; 3] = ["bench", "e2e", "hosts"];

impl Runner {
    /// The runner of the task `name`.
    pub fn of(name: &str) -> Runner {
        let bin = if KITS_TASKS.contains(&name) {
            bins::KITS
        } else {
            bins::HARNESS
        };
        Runner { bin }
    }
}

/// What `cargo xtask --help` says of the tasks it passes on.
const PASSED_ON: &str = "\
Every other task is run by a binary of the workspace with its arguments as
given (cargo xtask TASK --help prints its options):
  bench, e2e, hosts    the kits binary: the benchmarks, the real iai-mcp
                       daemon, the real MCP hosts
  any other            the harness binary: race, score, sweep and a task
                       per scenario; cargo xtask help lists them";

/// xtask's command line: its own tasks, and a word on the others.
/// `help` is not clap's here: it goes to the harness binary, whose help
/// lists its tasks.
pub fn command() -> clap::Command {
    Xtask::command()
        .disable_help_subcommand(true)
        .after_help(PASSED_ON)
}

#[cfg(test)]
mod tests {
    use clap::FromArgMatches;

    use super::*;

    /// The task `args` (after `cargo xtask`) parse into.
    fn parse(args: &[&str]) -> Task {
        let matches = command()
            .try_get_matches_from(std::iter::once("cargo xtask").chain(args.iter().copied()))
            .unwrap_or_else(|e| panic!("{args:?}: {e}"));
        Xtask::from_arg_matches(&matches).unwrap().task
    }

    /// What a passed-through task hands its binary.
    fn passed(args: &[&str]) -> Vec<String> {
        match parse(args) {
            Task::Elsewhere(words) => words
                .iter()
                .map(|w| w.to_string_lossy().into_owned())
                .collect(),
            other => panic!("{args:?} is xtask's own: {other:?}"),
        }
    }

    /// The commands a binary's `--help` lists, `help` left out.
    #[cfg(unix)]
    fn commands_of(bin: &WorkspaceBin) -> Vec<String> {
        let path = bins::locate(bin).expect("the binary is built");
        let output = std::process::Command::new(&path)
            .arg("--help")
            .output()
            .expect("run --help");
        assert!(output.status.success(), "{}: {output:?}", path.display());
        let help = String::from_utf8(output.stdout).expect("UTF-8 help");
        help.lines()
            .skip_while(|line| *line != "Commands:")
            .skip(1)
            .take_while(|line| line.starts_with("  "))
            .filter_map(|line| line.split_whitespace().next())
            .filter(|name| *name != "help")
            .map(str::to_owned)
            .collect()
    }

    // The kits binary declares the benchmarks and the hosts kit on Unix
    // only, as the kits are (kits/src/lib.rs).
    #[cfg(unix)]
    #[test]
    fn each_task_goes_to_the_binary_that_declares_it() {
        let kits = commands_of(&bins::KITS);
        let mut expected = KITS_TASKS.map(str::to_owned).to_vec();
        expected.sort();
        let mut listed = kits.clone();
        listed.sort();
        assert_eq!(listed, expected, "the kits binary's own tasks");
        let harness = commands_of(&bins::HARNESS);
        for task in ["race", "score", "sweep", "soak", "smoke"] {
            assert!(
                harness.iter().any(|name| name == task),
                "{task}: {harness:?}"
            );
        }
        let own = Xtask::command();
        let own: Vec<&str> = own.get_subcommands().map(|task| task.get_name()).collect();
        for task in harness.iter().chain(&kits) {
            assert!(!own.contains(&task.as_str()), "{task} is xtask's own too");
            assert_eq!(
                Runner::of(task).bin,
                if kits.contains(task) {
                    bins::KITS
                } else {
                    bins::HARNESS
                },
                "{task}"
            );
        }
    }

    #[test]
    fn help_lists_the_own_tasks_and_says_where_the_others_go() {
        let help = command().render_help().to_string();
        for task in ["wheel", "cross-check", "cross-clippy", "fuzz"] {
            assert!(
                help.lines()
                    .any(|line| line.split_whitespace().next() == Some(task)),
                "{task} in\n{help}"
            );
        }
        assert!(help.contains("cargo xtask help lists them"), "{help}");
        assert!(matches!(parse(&["help"]), Task::Elsewhere(words) if words == ["help"]));
    }

    #[test]
    fn the_ci_invocations_parse_as_before() {
        assert!(matches!(parse(&["wheel"]), Task::Wheel(args) if args.target.is_empty()));
        assert!(matches!(
            parse(&["wheel", "--target", "aarch64-unknown-linux-gnu", "--target", "x86_64-apple-darwin"]),
            Task::Wheel(args) if args.target.len() == 2
        ));
        assert!(matches!(
            parse(&["cross-clippy", "--target", "x86_64-pc-windows-gnu"]),
            Task::CrossClippy(args) if args.target == ["x86_64-pc-windows-gnu"]
        ));
        assert!(matches!(
            parse(&["cross-check", "--target", "x86_64-pc-windows-gnu", "--probe-only"]),
            Task::CrossCheck(args) if args.probe_only && !args.no_tests
        ));
        assert!(
            matches!(parse(&["fuzz", "--seconds", "20"]), Task::Fuzz(args) if args.seconds == 20)
        );
        assert_eq!(
            passed(&["soak", "--seconds", "30"]),
            ["soak", "--seconds", "30"]
        );
        assert_eq!(
            passed(&["race", "--release", "--mode", "fixed"]),
            ["race", "--release", "--mode", "fixed"]
        );
        assert_eq!(passed(&["e2e"]), ["e2e"]);
        assert_eq!(passed(&["hosts", "--help"]), ["hosts", "--help"]);
        assert_eq!(Runner::of("bench").bin, bins::KITS);
        assert_eq!(Runner::of("smoke").bin, bins::HARNESS);
        assert_eq!(Runner::of("frobnicate").bin, bins::HARNESS);
    }
}
