//! The scorecard: every scenario against each wrapper, one table.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use devkit::bins;
use devkit::rows::verdict_code;
use harness::cli::score::ScoreArgs;
use harness::scenario::RaceTiming;
use harness::scenario::race::RaceConfig;
use harness::score::{PREFIX_CONTRACT_FAILURES, ScoreConfig, run_score};
use harness::wrapper::Subject;
use harness::{BridgeMode, WrapperCommand};

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
        setup: race.setup,
        race_timing: Some(RaceTiming {
            delay_ms: race.delay_ms,
            offset_ms: race.offset_ms,
        }),
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
