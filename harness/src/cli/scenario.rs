//! Any scenario from the command line: the wrapper to test, the scenario's
//! own settings (declared on its configuration, beside its run), one run,
//! and its judged report. The soak adds what it is about to run and the
//! command that replays it.

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use devkit::bins::Profile;
use harness::Transport;
use harness::scenario::soak::SoakConfig;
use harness::scenario::{Scenario, Soak};
use harness::wrapper::WrapperCommand;

use super::{Target, print_judged};

/// A scenario's command: which wrapper to test and how to report, then the
/// scenario's settings.
#[derive(Debug, Args)]
pub struct ScenarioArgs<S: Scenario> {
    #[command(flatten)]
    target: Target,
    #[command(flatten)]
    settings: S::Args,
}

/// Runs `S` as `args` say and prints its judged report; returns the exit
/// code.
pub fn run<S: Scenario>(args: ScenarioArgs<S>) -> Result<ExitCode> {
    let cmd = args.target.command()?;
    judged::<S>(&cmd, &args.target, args.settings.into())
}

/// Runs the soak as `args` say, saying first what it runs, and prints its
/// judged report and the command that replays it.
pub fn soak(args: ScenarioArgs<Soak>) -> Result<ExitCode> {
    let cmd = args.target.command()?;
    let cfg = SoakConfig::from(args.settings);
    let seconds = cfg.duration.as_secs();
    eprintln!(
        "soak: {seconds} s against {} over {}, seed {}",
        cmd.display(),
        args.target.transport,
        cfg.seed
    );
    let replay = replay_command(seconds, cfg.seed, args.target.transport);
    let code = judged::<Soak>(&cmd, &args.target, cfg)?;
    if !args.target.json {
        println!("replay: {replay}");
    }
    Ok(code)
}

/// Runs `S` once with `cfg` and the target's setup, and prints its judged
/// report.
fn judged<S: Scenario>(
    cmd: &WrapperCommand,
    target: &Target,
    mut cfg: S::Config,
) -> Result<ExitCode> {
    *S::setup(&mut cfg) = target.setup();
    let report = S::run(cmd, &cfg).context(S::NAME)?;
    print_judged(S::NAME, cmd, target, &report)
}

/// The command that repeats a soak: its length, its seed, its transport
/// and this build's profile.
fn replay_command(seconds: u64, seed: u64, transport: Transport) -> String {
    let mut replay = format!("cargo xtask soak --seconds {seconds} --seed {seed}");
    if transport == Transport::Tcp {
        replay.push_str(" --transport tcp");
    }
    if Profile::of_current_exe() == Profile::Release {
        replay.push_str(" --release");
    }
    replay
}
