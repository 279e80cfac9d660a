//! `cargo xtask soak`: builds the wrapper and the fake daemon, then runs the
//! harness's soak against them in fixed mode and exits 0 only if it passed.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use harness::bins::{self, Profile};
use harness::scenario::soak::{SoakConfig, run_soak, seed_from_clock};
use harness::{BridgeMode, WrapperCommand};

/// Arguments of `cargo xtask soak`.
#[derive(Debug, Args)]
pub struct SoakArgs {
    /// How long calls keep flowing, in seconds (the warm-up checkpoint and
    /// the final drain come on top).
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    seconds: u64,
    /// Seed of the fault schedule and the call mix (default: from the
    /// clock); the report prints it so a run can be repeated.
    #[arg(long)]
    seed: Option<u64>,
    /// Calls kept in flight.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..))]
    concurrency: u64,
    /// Build and run the release binaries.
    #[arg(long)]
    release: bool,
    /// Print the report as JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// Builds, soaks, prints the report; `ExitCode::SUCCESS` only if it passed.
pub fn run(args: &SoakArgs) -> Result<ExitCode> {
    let profile = if args.release {
        Profile::Release
    } else {
        Profile::Dev
    };
    let built = bins::cargo_build(&[bins::WRAPPER, bins::FAKE_DAEMON], &profile, false)?;
    let cmd = WrapperCommand::new(&built[0]);
    let seed = args.seed.unwrap_or_else(seed_from_clock);
    let cfg = SoakConfig {
        duration: Duration::from_secs(args.seconds),
        seed,
        concurrency: usize::try_from(args.concurrency).context("--concurrency")?,
        mode: Some(BridgeMode::Fixed),
        fake_daemon_bin: Some(built[1].clone()),
        ..SoakConfig::default()
    };
    eprintln!(
        "soak: {} s against {} (fixed mode), seed {seed}",
        args.seconds,
        cmd.display()
    );
    let report = run_soak(&cmd, &cfg).context("soak")?;
    if args.json {
        println!("{}", report.to_json_pretty());
    } else {
        println!("{report}");
        println!(
            "replay: cargo xtask soak --seconds {} --seed {seed}{}",
            args.seconds,
            if args.release { " --release" } else { "" }
        );
    }
    Ok(if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
