//! Any scenario from the command line: the wrapper to test, the scenario's
//! own settings (declared on its configuration, beside its run), one run,
//! and its judged report, with what the scenario says before it runs and
//! the command that replays it, where it has them (the soak).

use std::process::ExitCode;

use anyhow::{Context, Result};
use harness::cli::scenario::ScenarioTask;
use harness::cli::target::Target;
use harness::scenario::Judgement;
use harness::wrapper::mode_label;
use harness::{BridgeMode, Check, WrapperCommand};
use serde::Serialize;
use serde_json::Value;

/// Runs the scenario `task` names as it says and prints its judged report;
/// returns the exit code.
pub fn run(task: &ScenarioTask) -> Result<ExitCode> {
    let cmd = wrapper_command(&task.target)?;
    let say = |line: &str| eprintln!("{line}");
    let judgement = task
        .scenario
        .run(&task.settings, &cmd, &task.target.setup(), &say)
        .context(task.scenario.name)?;
    print(&judgement, &cmd, &task.target)?;
    Ok(task.target.exit_code(judgement.passed))
}

/// The wrapper `target` names, or this workspace's.
pub fn wrapper_command(target: &Target) -> Result<WrapperCommand> {
    match target.wrapper_cmd {
        Some(_) => Ok(target.command()?),
        None => target
            .command()
            .context("locating this workspace's wrapper"),
    }
}

/// The `--json` output of a scenario.
#[derive(Debug, Serialize)]
struct Output<'a> {
    scenario: &'static str,
    wrapper: String,
    mode: Option<BridgeMode>,
    passed: bool,
    checks: &'a [Check],
    report: &'a Value,
}

/// Prints a judged report: its text, its verdict line and the command that
/// replays it, or one JSON document.
fn print(judgement: &Judgement, cmd: &WrapperCommand, target: &Target) -> Result<()> {
    if target.json {
        let output = Output {
            scenario: judgement.scenario,
            wrapper: cmd.display(),
            mode: target.mode,
            passed: judgement.passed,
            checks: &judgement.checks,
            report: &judgement.report,
        };
        println!("{}", serde_json::to_string_pretty(&output)?);
        return Ok(());
    }
    println!(
        "{} (wrapper: {}, mode {}): {}",
        judgement.scenario,
        cmd.display(),
        mode_label(target.mode),
        judgement.text
    );
    println!("{}", judgement.verdict_line);
    if let Some(replay) = &judgement.replay {
        println!("replay: {replay}");
    }
    Ok(())
}
