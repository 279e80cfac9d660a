//! An upgrade under a running wrapper, with real releases: the wrapper
//! serves [`FROM`], `pip install --no-deps` puts [`TO`] in its place while
//! the wrapper runs, and the daemon is restarted as the new release (as a
//! user's `pip install -U iai-pme` followed by a daemon restart). The
//! wrapper must keep serving the old surface while the old daemon runs
//! (and say so: `surface_pending`), then tell the client
//! (`notifications/tools/list_changed`) once the new daemon answers, and
//! from then on present exactly the new release's own surface.
//!
//! Both releases run on the pinned release's dependencies
//! ([`pyenv::ensure_on_pinned`]), in a scratch environment made afresh for
//! every run, since the check changes what is installed in it.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use devkit::bins::error_chain;
use devkit::command::run_within;
use devkit::rows::Row;
use harness::error::HarnessError;
use harness::scenario::wrapper_log::{self, JSON_EVENTS};
use harness::wrapper::{WrapperCommand, WrapperProcess};
use serde_json::json;

use super::config::E2eConfig;
use super::daemon::RealDaemon;
use super::fidelity::{self, Presented};
use super::listing::{PROTOCOL, listed_tools};
use super::pyenv::{self, PyEnv};
use super::release::Release;
use super::subject::tested;
use super::wait::poll;

/// The release served first: its surface differs from [`TO`]'s (it has
/// `camouflaging_status` where 3.3.0 has `claim_check`).
pub const FROM: &str = "3.0.0";

/// The release installed under the running wrapper.
pub const TO: &str = "3.3.0";

/// Bound on each wait of the check (a safety net, not a measurement).
const BOUND: Duration = Duration::from_secs(60);

/// Bound on the `pip install` that upgrades.
const PIP_LIMIT: Duration = Duration::from_secs(300);

/// The log event of an upgrade seen while the daemon runs the old release.
const SURFACE_PENDING: &str = "surface_pending";

/// What the check measured.
struct Upgraded {
    /// From starting the new daemon to the notification read.
    told_after: Duration,
    /// From starting the new daemon to its answering the kit's probe.
    daemon_ready: Duration,
    /// Tools listed before and after.
    before: usize,
    after: usize,
}

/// The check, as a row: `base` is the pinned release's environment; the
/// wrapper under test is installed in the scratch environment as the kit
/// installs it in any ([`tested`]), so that it finds the release
/// beside it there.
pub fn check(cfg: &E2eConfig, base: &PyEnv) -> Row {
    let name = format!("upgrade {FROM} to {TO} under a running wrapper");
    match run(cfg, base) {
        Ok(up) => Row::judged(
            name,
            true,
            format!(
                "surface_pending while the {FROM} daemon ran; the {TO} daemon started: tools/list_changed read {:.2} s after (the daemon answered the kit's probe after {:.2} s); then {TO}'s own initialize and tools/list exactly ({} tools before, {} after)",
                up.told_after.as_secs_f64(),
                up.daemon_ready.as_secs_f64(),
                up.before,
                up.after
            ),
        ),
        Err(e) => Row::judged(name, false, error_chain(&e)),
    }
}

fn run(cfg: &E2eConfig, base: &PyEnv) -> Result<Upgraded, HarnessError> {
    let from: Release = FROM
        .parse()
        .map_err(|e| HarnessError::Scenario(format!("{e}")))?;
    let to: Release = TO
        .parse()
        .map_err(|e| HarnessError::Scenario(format!("{e}")))?;
    let root = cfg.work_dir.join("upgrade").join("on-pinned");
    // Made afresh: the last run left the newer release in it.
    if root.exists() {
        std::fs::remove_dir_all(&root)
            .map_err(|e| HarnessError::io(format!("removing {}", root.display()), e))?;
    }
    let mut env = pyenv::ensure_on_pinned(&root, base, &from)?;
    let wrapper = tested(cfg, &env)?.binary;
    let mut real = RealDaemon::start(&env)?;
    let opts = real
        .wrapper_options(None, &env)
        .env(JSON_EVENTS.0, JSON_EVENTS.1);
    let mut w = WrapperProcess::spawn(&WrapperCommand::new(&wrapper), &opts)?;
    w.initialize(PROTOCOL)?;
    let before = listed_tools(&mut w, BOUND)?;
    w.call_tool("topology", json!({}), BOUND)?;

    install(&env, &to)?;
    env.release = to.clone();
    let pending = || {
        Ok(wrapper_log::events_named(&w.stderr_text(), SURFACE_PENDING)
            .next()
            .is_some())
    };
    poll(BOUND, 50, pending, || {
        format!("no {SURFACE_PENDING} after the upgrade")
    })?;
    let still = listed_tools(&mut w, BOUND)?;
    if still != before {
        return Err(HarnessError::Scenario(format!(
            "the surface changed while the {FROM} daemon still ran"
        )));
    }

    real.stop();
    let started = Instant::now();
    let daemon_ready = real.start_daemon()?;
    // The notification may have come while the kit waited for the daemon
    // to answer its own probe: its arrival is when the client read it.
    let told_after = loop {
        let message = w.recv_any(BOUND.saturating_sub(started.elapsed()))?;
        if message["method"] == "notifications/tools/list_changed" {
            break started.elapsed();
        }
    };
    let initialize = w.initialize(PROTOCOL)?;
    let after = listed_tools(&mut w, BOUND)?;
    let ours = Presented::from_replies(&initialize, after);
    let theirs = own_surface(&env, &real, &cfg.node)?;
    let mismatches = fidelity::compare(&ours, &theirs, TO);
    if !mismatches.is_empty() {
        let lines: Vec<String> = mismatches.iter().map(ToString::to_string).collect();
        return Err(HarnessError::Scenario(format!(
            "after the upgrade: {}",
            lines.join("; ")
        )));
    }
    Ok(Upgraded {
        told_after,
        daemon_ready,
        before: before.len(),
        after: ours.tools.len(),
    })
}

/// `pip install --no-deps` of `release` into `env`, within [`PIP_LIMIT`].
fn install(env: &PyEnv, release: &Release) -> Result<(), HarnessError> {
    let mut pip = Command::new(env.program("python"));
    pip.args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
    ])
    .args(["--no-deps", &release.requirement()]);
    run_within(
        &mut pip,
        &format!("pip install {}", release.requirement()),
        PIP_LIMIT,
    )?;
    Ok(())
}

/// What the release installed in `env` presents through its own wrapper.
fn own_surface(env: &PyEnv, real: &RealDaemon, node: &Path) -> Result<Presented, HarnessError> {
    let mut opts = real.wrapper_options(None, env);
    opts.extra_env
        .retain(|(k, _)| k != "PATH" && k != "IAI_MCP_ADMIN_CLI");
    let cmd = WrapperCommand {
        args: vec![env.bundled_wrapper()?.into()],
        ..WrapperCommand::new(node)
    };
    let mut theirs = WrapperProcess::spawn(&cmd, &opts)?;
    let initialize = theirs.initialize(PROTOCOL)?;
    let tools = listed_tools(&mut theirs, BOUND)?;
    Ok(Presented::from_replies(&initialize, tools))
}
