//! The scorecard: every scenario against each wrapper, one table.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use devkit::bins;
use devkit::rows::verdict_code;
use harness::scenario::race::RaceConfig;
use harness::score::{PREFIX_CONTRACT_FAILURES, ScoreConfig, run_score};
use harness::wrapper::Subject;
use harness::{BridgeMode, WrapperCommand};

/// Run every scenario against each wrapper and print one table of
/// properties by wrapper.
#[derive(Debug, Args)]
pub struct ScoreArgs {
    /// A wrapper command line to score (repeatable; one column each), run
    /// without a bridge mode. Default: this workspace's iai-mcp-wrapper in
    /// prefix and fixed mode.
    #[arg(long, value_name = "CMD")]
    wrapper_cmd: Vec<String>,
    /// How many race runs, and how long a soak.
    #[command(flatten)]
    amounts: ScoreConfig,
    /// Where to write score.json and score.html [default: target/score].
    #[arg(long, value_name = "DIR")]
    out_dir: Option<PathBuf>,
}

/// Scores the wrappers `args` name.
pub fn score(args: &ScoreArgs) -> Result<ExitCode> {
    let subjects = if args.wrapper_cmd.is_empty() {
        let cmd = WrapperCommand::try_this_workspace()?;
        Subject::modes(&cmd, &[BridgeMode::Prefix, BridgeMode::Fixed])
    } else {
        let mut subjects = Vec::new();
        for line in &args.wrapper_cmd {
            let cmd = WrapperCommand::parse_shell_words(line)?;
            subjects.push(Subject::command(cmd, None));
        }
        subjects
    };
    let cfg = ScoreConfig {
        subjects,
        ..args.amounts.clone()
    };
    run_config(&cfg, args.out_dir.clone())
}

/// Scores `subjects` with the race timing of `race` (the `race --all`
/// entry).
pub fn score_subjects(
    subjects: Vec<Subject>,
    race: RaceConfig,
    out_dir: Option<PathBuf>,
) -> Result<ExitCode> {
    let cfg = ScoreConfig {
        subjects,
        race: RaceConfig {
            second_drop: true,
            ..race
        },
        ..ScoreConfig::default()
    };
    run_config(&cfg, out_dir)
}

fn run_config(cfg: &ScoreConfig, out_dir: Option<PathBuf>) -> Result<ExitCode> {
    let card = run_score(cfg, |what| eprintln!("score: {what}"));
    println!("{card}");
    for line in card.verdicts() {
        println!("{line}");
    }
    let dir = out_dir.unwrap_or_else(|| bins::target_dir().join("score"));
    let files = card.write(&dir)?;
    println!(
        "report: {}\npage:   {}",
        files.json.display(),
        files.html.display()
    );
    // This workspace's wrapper is judged: fixed holds everything, prefix
    // fails exactly the contract properties it exists to break. Other
    // wrappers are reported on.
    let judged = cfg.subjects.iter().all(|s| s.mode.is_some());
    let expected = cfg.subjects.iter().all(|s| match s.mode {
        Some(BridgeMode::Prefix) => card.failed_contract(&s.label) == PREFIX_CONTRACT_FAILURES,
        _ => card.failed(&s.label).is_empty(),
    }) && card.errors().next().is_none();
    Ok(verdict_code(expected || !judged))
}
