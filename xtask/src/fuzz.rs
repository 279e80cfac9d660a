//! `cargo xtask fuzz`: runs the libFuzzer targets in `fuzz/` with
//! `cargo fuzz` (nightly toolchain), one after the other, each for a set
//! time, and reports what each did.
//!
//! Each target grows its corpus in `target/fuzz/corpus/<target>/`, starting
//! from the seeds kept in `fuzz/seeds/<target>/` (read, never written),
//! with the words of its input in `fuzz/dicts/<target>.dict`; libFuzzer's
//! log goes to `target/fuzz/logs/<target>.log`. An input that
//! breaks an invariant is copied into `fuzz/regressions/<target>/`, where
//! the stable test suite (`fuzz-checks/tests/it/kept_inputs.rs`) runs it from
//! then on: it fails until the bug is fixed, and guards the fix after.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use clap::Args;
use thiserror::Error;

/// Run the fuzz targets (nightly toolchain and cargo-fuzz needed).
#[derive(Debug, Args)]
pub struct FuzzArgs {
    /// Run only this target (default: every target in fuzz/).
    #[arg(long, value_name = "NAME")]
    pub target: Option<String>,
    /// How long each target runs.
    #[arg(long, value_name = "N", default_value_t = 60)]
    pub seconds: u64,
}

/// The longest input libFuzzer makes for each target: room for several
/// lines past the 512-byte cap the stream targets use, and for a whole
/// host file.
fn max_len(target: &str) -> usize {
    if target.starts_with("config_") {
        16 * 1024
    } else {
        8 * 1024
    }
}

/// Why the task could not run.
#[derive(Debug, Error)]
pub enum FuzzError {
    /// `cargo +nightly` or `cargo fuzz` is missing.
    #[error("{0}")]
    Missing(&'static str),
    /// A command could not be run, or failed without finding anything.
    #[error("{0}")]
    Command(String),
    /// Reading or writing a file failed.
    #[error("{0}: {1}")]
    Io(String, #[source] std::io::Error),
}

/// What one target's run came to, read from libFuzzer's log.
#[derive(Debug, Default)]
pub struct TargetRun {
    /// The target.
    pub name: String,
    /// How long it ran, in whole seconds, as libFuzzer says at its end (a
    /// crash ends it early without saying: then inputs run over the rate).
    pub seconds: u64,
    /// Inputs run.
    pub executions: u64,
    /// Inputs per second, on average.
    pub per_second: u64,
    /// Coverage points (edges) reached, libFuzzer's `cov`.
    pub coverage: u64,
    /// Features reached, libFuzzer's `ft`.
    pub features: u64,
    /// Inputs in the corpus at the end.
    pub corpus: u64,
    /// Peak memory, in MB.
    pub peak_rss_mb: u64,
    /// Inputs that broke an invariant, as kept under `fuzz/regressions/`.
    pub crashes: Vec<PathBuf>,
}

/// What became of one target.
#[derive(Debug)]
pub enum Outcome {
    /// It ran; its figures.
    Ran(TargetRun),
    /// It could not run (a build failure, a missing folder, ...).
    Failed {
        /// The target.
        name: String,
        /// Why.
        error: FuzzError,
    },
}

/// `cargo xtask fuzz`: every target is run, whatever became of the ones
/// before it.
pub fn run(args: &FuzzArgs, root: &Path) -> Result<Vec<Outcome>, FuzzError> {
    let fuzz_dir = root.join("fuzz");
    available()?;
    lockfile_current(&fuzz_dir)?;
    let targets = match &args.target {
        Some(name) => vec![name.clone()],
        None => list(&fuzz_dir)?,
    };
    let work = root.join("target/fuzz");
    let mut outcomes = Vec::new();
    for name in &targets {
        eprintln!("cargo xtask fuzz: {name} for {} s", args.seconds);
        outcomes.push(match run_target(name, args.seconds, &fuzz_dir, &work) {
            Ok(run) => Outcome::Ran(run),
            Err(error) => {
                eprintln!("cargo xtask fuzz: {name}: {error}");
                Outcome::Failed {
                    name: name.clone(),
                    error,
                }
            }
        });
    }
    Ok(outcomes)
}

/// The nightly toolchain and cargo-fuzz are both there.
pub fn available() -> Result<(), FuzzError> {
    let works = |args: &[&str]| {
        Command::new("cargo")
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !works(&["+nightly", "--version"]) {
        return Err(FuzzError::Missing(
            "no nightly toolchain (`rustup toolchain install nightly`)",
        ));
    }
    if !works(&["+nightly", "fuzz", "--version"]) {
        return Err(FuzzError::Missing(
            "no cargo-fuzz (`cargo install cargo-fuzz --locked`)",
        ));
    }
    Ok(())
}

/// `fuzz/Cargo.lock` resolves the fuzz crate as it stands: `cargo fuzz run`
/// takes no `--locked` and would rewrite a stale one, so it is checked
/// first, as cargo's `--locked` would.
fn lockfile_current(fuzz_dir: &Path) -> Result<(), FuzzError> {
    let out = Command::new("cargo")
        .args([
            "metadata",
            "--locked",
            "--format-version",
            "1",
            "--manifest-path",
        ])
        .arg(fuzz_dir.join("Cargo.toml"))
        .stdout(Stdio::null())
        .output()
        .map_err(|e| FuzzError::Command(format!("cargo metadata --locked: {e}")))?;
    if out.status.success() {
        return Ok(());
    }
    Err(FuzzError::Command(format!(
        "fuzz/Cargo.lock is not current (`cargo metadata --manifest-path fuzz/Cargo.toml` brings it up to date; commit it): {}",
        String::from_utf8_lossy(&out.stderr).trim_end()
    )))
}

fn list(fuzz_dir: &Path) -> Result<Vec<String>, FuzzError> {
    let out = Command::new("cargo")
        .args(["+nightly", "fuzz", "list", "--fuzz-dir"])
        .arg(fuzz_dir)
        .output()
        .map_err(|e| FuzzError::Command(format!("cargo fuzz list: {e}")))?;
    if !out.status.success() {
        return Err(FuzzError::Command(format!(
            "cargo fuzz list: {}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect())
}

fn run_target(
    name: &str,
    seconds: u64,
    fuzz_dir: &Path,
    work: &Path,
) -> Result<TargetRun, FuzzError> {
    let places = Places::prepare(name, work)?;
    let log = fs::File::create(&places.log)
        .map_err(|e| FuzzError::Io(format!("creating {}", places.log.display()), e))?;
    let status = fuzz_command(name, seconds, fuzz_dir, &places)
        .stdout(Stdio::null())
        .stderr(log)
        .status()
        .map_err(|e| FuzzError::Command(format!("cargo fuzz run {name}: {e}")))?;
    let text = fs::read_to_string(&places.log)
        .map_err(|e| FuzzError::Io(format!("reading {}", places.log.display()), e))?;
    let mut run = read_log(name, &text);
    if run.seconds == 0 {
        // A crash ends the run without "Done ... in N second(s)"; its
        // final stats still give the inputs run and the rate.
        run.seconds = run.executions / run.per_second.max(1);
    }
    for found in &files(&places.artifacts) {
        let kept = keep(name, fuzz_dir, found)?;
        eprintln!(
            "cargo xtask fuzz: {name} found an input that breaks an invariant; kept as {} (log: {})",
            kept.display(),
            places.log.display()
        );
        run.crashes.push(kept);
    }
    if !status.success() && run.crashes.is_empty() {
        return Err(FuzzError::Command(format!(
            "cargo fuzz run {name} failed ({status}); see {}",
            places.log.display()
        )));
    }
    Ok(run)
}

/// Where one target's run keeps its corpus, its artifacts and its log,
/// under `target/fuzz/`.
struct Places {
    corpus: PathBuf,
    artifacts: PathBuf,
    log: PathBuf,
}

impl Places {
    /// The places of target `name` under `work`, made, with whatever an
    /// earlier run left among the artifacts removed (it is kept under
    /// `fuzz/regressions/` already: what is there after this run is this
    /// run's).
    fn prepare(name: &str, work: &Path) -> Result<Places, FuzzError> {
        let corpus = work.join("corpus").join(name);
        let artifacts = work.join("artifacts").join(name);
        let logs = work.join("logs");
        for dir in [&corpus, &artifacts, &logs] {
            fs::create_dir_all(dir)
                .map_err(|e| FuzzError::Io(format!("creating {}", dir.display()), e))?;
        }
        for old in files(&artifacts) {
            fs::remove_file(&old)
                .map_err(|e| FuzzError::Io(format!("removing {}", old.display()), e))?;
        }
        Ok(Places {
            corpus,
            artifacts,
            log: logs.join(format!("{name}.log")),
        })
    }
}

/// `cargo fuzz run` of target `name` for `seconds`, from its corpus and
/// its seeds, with its dictionary if it has one, its artifacts kept in
/// `places`.
fn fuzz_command(name: &str, seconds: u64, fuzz_dir: &Path, places: &Places) -> Command {
    let dict = fuzz_dir.join("dicts").join(format!("{name}.dict"));
    let mut artifact_prefix = places.artifacts.clone().into_os_string();
    artifact_prefix.push("/");
    let mut command = Command::new("cargo");
    command
        .args([
            "+nightly",
            "fuzz",
            "run",
            "--debug-assertions",
            "--fuzz-dir",
        ])
        .arg(fuzz_dir)
        .arg(name)
        .arg(&places.corpus)
        .arg(fuzz_dir.join("seeds").join(name))
        .arg("--")
        .arg(format!("-max_total_time={seconds}"))
        .arg(format!("-max_len={}", max_len(name)))
        .arg("-timeout=10")
        .arg("-rss_limit_mb=2048")
        .arg("-print_final_stats=1")
        .args(dict.is_file().then(|| {
            let mut flag = std::ffi::OsString::from("-dict=");
            flag.push(&dict);
            flag
        }))
        .arg({
            let mut flag = std::ffi::OsString::from("-artifact_prefix=");
            flag.push(&artifact_prefix);
            flag
        });
    command
}

/// The files in `dir`.
fn files(dir: &Path) -> std::collections::BTreeSet<PathBuf> {
    fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

/// Copies a crashing input into `fuzz/regressions/<target>/`.
fn keep(name: &str, fuzz_dir: &Path, found: &Path) -> Result<PathBuf, FuzzError> {
    let dir = fuzz_dir.join("regressions").join(name);
    fs::create_dir_all(&dir)
        .map_err(|e| FuzzError::Io(format!("creating {}", dir.display()), e))?;
    let kept = dir.join(found.file_name().unwrap_or_default());
    fs::copy(found, &kept).map_err(|e| FuzzError::Io(format!("copying {}", found.display()), e))?;
    Ok(kept)
}

/// The figures of a libFuzzer log: the last status line (`#N ... cov: C
/// ft: F corp: U/...`) and the final stats.
fn read_log(name: &str, log: &str) -> TargetRun {
    let mut run = TargetRun {
        name: name.to_owned(),
        ..TargetRun::default()
    };
    let number = |word: &str| -> u64 {
        word.trim_end_matches(|c: char| !c.is_ascii_digit())
            .parse()
            .unwrap_or(0)
    };
    for line in log.lines() {
        if let Some(rest) = line.strip_prefix("Done ")
            && let Some((_, time)) = rest.split_once(" runs in ")
        {
            run.seconds = number(time.split_whitespace().next().unwrap_or(""));
        }
        if line.starts_with('#') {
            let words: Vec<&str> = line.split_whitespace().collect();
            for pair in words.windows(2) {
                match pair[0] {
                    "cov:" => run.coverage = number(pair[1]),
                    "ft:" => run.features = number(pair[1]),
                    "corp:" => run.corpus = number(pair[1].split('/').next().unwrap_or("")),
                    _ => {}
                }
            }
        }
        if let Some((key, value)) = line.strip_prefix("stat::").and_then(|s| s.split_once(':')) {
            let value = number(value.trim());
            match key {
                "number_of_executed_units" => run.executions = value,
                "average_exec_per_sec" => run.per_second = value,
                "peak_rss_mb" => run.peak_rss_mb = value,
                _ => {}
            }
        }
    }
    run
}

/// The report, one row per target.
pub fn report(outcomes: &[Outcome]) -> String {
    let mut out = format!(
        "{:<16} {:>8} {:>12} {:>9} {:>7} {:>7} {:>7} {:>8} crashes\n",
        "target", "seconds", "executions", "exec/s", "cov", "ft", "corpus", "rss MB"
    );
    for outcome in outcomes {
        let run = match outcome {
            Outcome::Ran(run) => run,
            Outcome::Failed { name, error } => {
                out.push_str(&format!("{name:<16} did not run: {error}\n"));
                continue;
            }
        };
        out.push_str(&format!(
            "{:<16} {:>8} {:>12} {:>9} {:>7} {:>7} {:>7} {:>8} {}\n",
            run.name,
            run.seconds,
            run.executions,
            run.per_second,
            run.coverage,
            run.features,
            run.corpus,
            run.peak_rss_mb,
            run.crashes.len()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_figures_come_from_the_last_status_line_and_the_final_stats() {
        let log = "INFO: Seed: 1\n#2\tINITED cov: 10 ft: 11 corp: 3/40b exec/s: 0 rss: 30Mb\n\
                   #4096\tpulse  cov: 120 ft: 300 corp: 25/1200b lim: 40 exec/s: 2048 rss: 41Mb\n\
                   #9000\tDONE   cov: 130 ft: 320 corp: 27/1300b lim: 43 exec/s: 3000 rss: 42Mb\n\
                   Done 9000 runs in 3 second(s)\n\
                   stat::number_of_executed_units: 9000\nstat::average_exec_per_sec:     3000\n\
                   stat::new_units_added:          24\nstat::peak_rss_mb:              42\n";
        let run = read_log("t", log);
        assert_eq!(
            (
                run.seconds,
                run.executions,
                run.per_second,
                run.coverage,
                run.features,
                run.corpus,
                run.peak_rss_mb
            ),
            (3, 9000, 3000, 130, 320, 27, 42)
        );
    }
}
