//! `cargo xtask bench`: release builds, then the harness's benchmark engine.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use harness::WrapperCommand;
use harness::bench::{self, BenchConfig};
use harness::bins::{self, Profile};

/// Arguments of `cargo xtask bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Sequential calls measured per subject.
    #[arg(long, default_value_t = bench::DEFAULT_CALLS)]
    calls: usize,
    /// Cold starts per wrapper.
    #[arg(long, default_value_t = bench::DEFAULT_COLD_STARTS)]
    cold_starts: usize,
    /// Recovery measurements per wrapper.
    #[arg(long, default_value_t = bench::DEFAULT_RECOVERIES)]
    recoveries: usize,
    /// Another wrapper to measure the same way, as NAME=CMD (repeatable),
    /// e.g. --compare "node=node /path/to/mcp-wrapper/dist/index.js".
    #[arg(long, value_name = "NAME=CMD")]
    compare: Vec<String>,
    /// Exit non-zero when a target is missed (off by default: figures are
    /// data, not pass/fail).
    #[arg(long)]
    strict: bool,
}

/// Build release binaries, measure, print the Markdown table and write
/// `target/bench/bench.{md,json}`.
pub fn run(args: &BenchArgs, workspace: &Path) -> Result<ExitCode> {
    let built = bins::cargo_build(
        &[bins::WRAPPER, bins::FAKE_DAEMON],
        &Profile::Release,
        false,
    )?;
    let mut config = BenchConfig::new(
        WrapperCommand::new(&built[0]),
        &built[1],
        workspace.join("target").join("bench"),
    );
    config.calls = args.calls;
    config.cold_starts = args.cold_starts;
    config.recoveries = args.recoveries;
    config.progress = true;
    for compare in &args.compare {
        config.compare.push(BenchConfig::parse_compare(compare)?);
    }
    let report = bench::run(&config).context("running the benchmarks")?;
    println!("{}", report.to_markdown());
    println!("report: {}", config.out_dir.join("bench.md").display());
    if args.strict && !report.all_targets_pass(&["wrapper"]) {
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// The workspace root (where `target/` lives).
pub fn workspace_root() -> std::path::PathBuf {
    bins::workspace_manifest()
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}
