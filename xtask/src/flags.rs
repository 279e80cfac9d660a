//! `cargo xtask`'s command line, declared once: xtask's own tasks, a
//! variant each with its options, and every task of the harness and the
//! kits passed through to their binary with its arguments as given, so
//! that each option is declared by the binary that reads it (`cargo xtask
//! TASK --help` prints the binary's help). `cargo xtask --help` lists
//! every task once: xtask's own from this enum, the others from the
//! harness's and the kits' own declarations ([`harness::cli::Cli`],
//! [`kits::cli::Cli`]).

use std::ffi::OsString;
use std::fmt::Write as _;
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
    /// Clippy on the wrapper as compiled for --target TRIPLE (Debian's
    /// clippy for the cross compiler)
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
/// Wine (a std-only probe, then the smoke scenario over TCP).
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
    /// arm64 Linux: the smoke run only, not the wrapper's tests.
    #[arg(long)]
    pub no_tests: bool,
    /// The Python interpreter for the build tools (default: python3).
    #[arg(long)]
    pub python: Option<PathBuf>,
}

/// Run clippy, every warning an error, on the wrapper's library and binary
/// as compiled for another target (its `cfg` lines for that platform
/// included), with the cross compiler and Debian's clippy for it.
#[derive(Debug, Args)]
pub struct CrossClippyArgs {
    /// Any target `wheel` builds but this machine's (repeatable), or all.
    #[arg(long, value_name = "TRIPLE", required = true)]
    pub target: Vec<String>,
    /// The Python interpreter for the build tools (default: python3).
    #[arg(long)]
    pub python: Option<PathBuf>,
}

/// A binary that runs tasks of its own: its commands, and what each is for.
#[derive(Debug)]
pub struct Runner {
    /// The binary.
    pub bin: WorkspaceBin,
    /// Its command line, as declared in its library.
    command: clap::Command,
}

impl Runner {
    /// The harness and the kits, in the order `--help` lists them.
    pub fn all() -> [Runner; 2] {
        [
            Runner {
                bin: bins::HARNESS,
                command: harness::cli::Cli::command(),
            },
            Runner {
                bin: bins::KITS,
                command: kits::cli::Cli::command(),
            },
        ]
    }

    /// The runner whose task `name` is.
    pub fn of(name: &str) -> Option<Runner> {
        Self::all().into_iter().find(|runner| runner.runs(name))
    }

    /// Whether `name` is one of its tasks.
    fn runs(&self, name: &str) -> bool {
        self.tasks().any(|(task, _)| task == name)
    }

    /// Its tasks and what each is for.
    fn tasks(&self) -> impl Iterator<Item = (&str, String)> {
        self.command
            .get_subcommands()
            .filter(|task| task.get_name() != "help")
            .map(|task| {
                let about = task.get_about().map(ToString::to_string);
                (task.get_name(), about.unwrap_or_default())
            })
    }
}

/// xtask's command line, with the tasks of the harness and the kits listed
/// in its help.
pub fn command() -> clap::Command {
    let mut after = String::new();
    for runner in Runner::all() {
        let _ = writeln!(
            after,
            "Tasks of the {} binary (cargo xtask TASK --help for their options):",
            runner.bin.bin
        );
        for (name, about) in runner.tasks() {
            let _ = writeln!(after, "  {name:<12} {about}");
        }
        after.push('\n');
    }
    Xtask::command().after_help(after.trim_end().to_owned())
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

    #[test]
    fn every_task_is_listed_once() {
        let help = command().render_help().to_string();
        let own = Xtask::command();
        let own = own.get_subcommands().map(|task| task.get_name().to_owned());
        let elsewhere = Runner::all().into_iter().flat_map(|runner| {
            runner
                .tasks()
                .map(|(name, _)| name.to_owned())
                .collect::<Vec<_>>()
        });
        let mut names: Vec<String> = own.chain(elsewhere).collect();
        for name in &names {
            let listed = help
                .lines()
                .filter(|line| line.split_whitespace().next() == Some(name.as_str()))
                .count();
            assert_eq!(listed, 1, "{name} in\n{help}");
        }
        let count = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), count, "a task of two binaries");
        for task in [
            "race", "score", "sweep", "soak", "smoke", "bench", "e2e", "hosts",
        ] {
            assert!(names.iter().any(|name| name == task), "{task}");
        }
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
        assert_eq!(Runner::of("bench").map(|r| r.bin.bin), Some("kits"));
        assert_eq!(Runner::of("smoke").map(|r| r.bin.bin), Some("harness"));
        assert!(Runner::of("frobnicate").is_none());
    }
}
