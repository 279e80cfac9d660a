//! The benchmarks, beside the floor, and the session starts against the
//! end-to-end kit's release.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use devkit::bins::{self, Profile};
use devkit::rows::verdict_code;
use harness::WrapperCommand;
use kits::bench::{self, BenchConfig};
use kits::cli::bench::BenchArgs;
use kits::e2e::{Release, pyenv};

/// Measures, prints the Markdown table and writes `target/bench/`.
pub fn bench(args: &BenchArgs) -> Result<ExitCode> {
    if Profile::of_current_exe() != Profile::Release {
        eprintln!(
            "bench: not a release build; run it as `cargo xtask bench` for figures that mean something"
        );
    }
    let mut config = BenchConfig::new(
        WrapperCommand::try_this_workspace()?,
        bins::try_fake_daemon_bin()?,
    );
    config.amounts.calls = args.calls;
    config.amounts.cold_starts = args.cold_starts;
    config.amounts.recoveries = args.recoveries;
    config.amounts.outages = args.outages;
    config.amounts.away_ms = (args.away_secs.max(0.0) * 1000.0).round() as u64;
    config.amounts.herds = args.herds.clone();
    config.amounts.herd_rounds = args.herd_rounds;
    config.amounts.herd_away_ms = (args.herd_away_secs.max(0.0) * 1000.0).round() as u64;
    config.progress = true;
    for compare in &args.compare {
        config.compare.push(BenchConfig::parse_compare(compare)?);
    }
    let out_dir = bins::target_dir().join("bench");
    if args.session_starts_only {
        std::fs::create_dir_all(&out_dir)
            .with_context(|| format!("creating {}", out_dir.display()))?;
        session_starts(args, &config.wrapper, &out_dir)?;
        return Ok(ExitCode::SUCCESS);
    }
    let report = bench::run(&config).context("running the benchmarks")?;
    report.write_files(&out_dir)?;
    println!("{}", report.to_markdown());
    println!("report: {}", out_dir.join("bench.md").display());
    session_starts(args, &config.wrapper, &out_dir)?;
    Ok(verdict_code(
        !args.strict || report.all_targets_pass(&["wrapper"]),
    ))
}

/// The session-start phase, when asked for and the end-to-end kit's
/// environment is there: its table printed and written to
/// `session-starts.md` in `out_dir`.
fn session_starts(args: &BenchArgs, wrapper: &WrapperCommand, out_dir: &Path) -> Result<()> {
    if args.session_starts == 0 {
        return Ok(());
    }
    let work_dir = bins::target_dir().join("e2e");
    let release = Release::pinned();
    let root = release.e2e_venv(&work_dir);
    if !root.join("bin/python").is_file() {
        println!(
            "session starts: skipped (no {}; `cargo xtask e2e` makes it)",
            root.display()
        );
        return Ok(());
    }
    let py = pyenv::ensure(&root, None, &release, pyenv::Contents::Kit)
        .context("the end-to-end kit's environment")?;
    let subjects = bench::session_start::subjects(&py, wrapper, Some(&args.node))?;
    let series = bench::session_start::measure(&py, &subjects, args.session_starts);
    let table = bench::session_start::to_markdown(&series, release.as_str());
    println!("{table}");
    let file = out_dir.join("session-starts.md");
    std::fs::write(&file, &table).with_context(|| format!("writing {}", file.display()))?;
    println!("report: {}", file.display());
    Ok(())
}
