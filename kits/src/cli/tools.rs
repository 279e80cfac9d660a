//! The maintainers' tools beside the scenarios: the benchmarks and the
//! end-to-end kit against the real iai-mcp daemon.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use devkit::bins::{self, Profile};
use devkit::rows::verdict_code;
use harness::WrapperCommand;
use kits::bench::{self, BenchConfig};
use kits::e2e::{Deps, E2eConfig, Release, run_e2e};

/// Measure the wrapper against the floor of talking to the fake daemon
/// directly.
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
    /// Outages per wrapper in the outage phase: each round one with a call
    /// sent 100 ms after the rebind, one with a call waiting through it
    /// (0 skips the phase, its away window included).
    #[arg(long, default_value_t = bench::DEFAULT_OUTAGES)]
    outages: usize,
    /// Seconds the daemon stays away in the outage phase's window, where
    /// each wrapper's dials, wake-ups and CPU are counted (per minute).
    #[arg(long, default_value_t = bench::DEFAULT_AWAY.as_secs_f64())]
    away_secs: f64,
    /// Herd sizes, comma-separated: that many wrappers of each kind wait
    /// through one outage on one daemon (`--herds` with no sizes: none).
    #[arg(long, value_delimiter = ',', num_args = 0.., default_values_t = bench::DEFAULT_HERDS)]
    herds: Vec<usize>,
    /// Another wrapper to measure the same way, as NAME=CMD (repeatable),
    /// e.g. --compare "node=node /path/to/mcp-wrapper/dist/index.js".
    #[arg(long, value_name = "NAME=CMD")]
    compare: Vec<String>,
    /// Exit non-zero when a target is missed (off by default: figures are
    /// data, not pass/fail).
    #[arg(long)]
    strict: bool,
    /// Session starts per wrapper against one run of the real daemon, with
    /// the release of the end-to-end kit's environment (target/e2e/venv,
    /// made by `cargo xtask e2e`) beside the wrapper and the release's own
    /// Node wrapper measured the same way; 0 skips the phase, as does a
    /// missing environment.
    #[arg(long, default_value_t = bench::session_start::DEFAULT_SESSION_STARTS)]
    session_starts: usize,
    /// Only the session-start phase (none of the fake daemon's).
    #[arg(long)]
    session_starts_only: bool,
    /// The Node.js binary that runs the release's own wrapper in the
    /// session-start phase.
    #[arg(long, default_value = "node")]
    node: PathBuf,
}

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
    let py = kits::e2e::pyenv::ensure(&root, None, &release, kits::e2e::pyenv::Contents::Kit)
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

/// Check the wrapper against the real iai-mcp daemon (3.3.0, or the
/// release --iai-pme names).
#[derive(Debug, Args)]
pub struct E2eArgs {
    /// The iai-pme release to run against (its daemon, CLIs and own
    /// wrapper). Another release than the pinned one is installed in
    /// target/e2e/VERSION/venv with its own dependencies.
    #[arg(long, value_name = "VERSION", default_value_t = Release::pinned())]
    iai_pme: Release,
    /// Install the release alone, in target/e2e/VERSION/on-pinned, on the
    /// pinned release's dependencies (refused when it declares others):
    /// megabytes instead of an environment of its own.
    #[arg(long)]
    on_pinned_deps: bool,
    /// The Python 3.11 or 3.12 interpreter to build the environment with
    /// (default: the first on PATH).
    #[arg(long)]
    python: Option<PathBuf>,
    /// The Node.js binary that runs the release's own wrapper for
    /// comparison.
    #[arg(long, default_value = "node")]
    node: PathBuf,
}

/// Runs every check and prints the table; exit 0 only if none failed.
pub fn e2e(args: &E2eArgs) -> Result<ExitCode> {
    let cfg = E2eConfig {
        work_dir: bins::target_dir().join("e2e"),
        release: args.iai_pme.clone(),
        wrapper: bins::try_wrapper_bin()?,
        python: args.python.clone(),
        node: args.node.clone(),
        deps: if args.on_pinned_deps {
            Deps::Pinned
        } else {
            Deps::Own
        },
    };
    eprintln!(
        "e2e: {} against iai-mcp {} (environment in {})",
        cfg.wrapper.display(),
        cfg.release,
        cfg.venv().display()
    );
    let report = run_e2e(&cfg).context("the end-to-end kit could not run")?;
    println!("{report}");
    Ok(verdict_code(report.passed()))
}
