//! `--check`: a human-readable report of whether this wrapper can work here.

use std::io::Write;
use std::time::Duration;

use serde_json::{Value, json};

use crate::bridge::wire::{self, Reply};
use crate::config::{Config, Setting};
use crate::degraded::Degraded;
use crate::install;
use crate::lifecycle::{doctor, heartbeat::Heartbeat, release, wake};
use crate::mcp::protocol;
use crate::platform::Platform;
use crate::surface::Surface;
use crate::transport::{OneShot, OneShotError};

/// What the daemon probe found.
#[derive(Debug)]
pub enum Probe {
    /// Connected and got a JSON-RPC response.
    Answered,
    /// Connected, but no valid response came in time.
    Silent(String),
    /// Could not connect.
    Unreachable(String),
}

/// How long the probe's one call may take in all, connect included.
const PROBE_BUDGET: Duration = Duration::from_secs(3);

/// The probe's request id: the answer is the line carrying it.
const PROBE_ID: u64 = 1;

/// Connect to the daemon and make one read-only call (`topology`), as the
/// bridge would, on a connection of its own ([`OneShot::ask`]): any
/// JSON-RPC response to it, result or error, shows the daemon answers.
pub async fn probe(config: &Config) -> Probe {
    let request = wire::request_line(PROBE_ID, "topology", &json!({}));
    let answered = OneShot::new(&config.daemon.endpoint, PROBE_BUDGET)
        .ask(
            &request,
            config.session.max_line_bytes,
            |line| match wire::read_reply(line) {
                Reply::Message { id, .. } => (id == Some(Value::from(PROBE_ID))).then_some(()),
                Reply::NotJson | Reply::Unroutable | Reply::Control => None,
            },
        )
        .await;
    match answered {
        Ok(()) => Probe::Answered,
        Err(OneShotError::Unreachable(e)) => Probe::Unreachable(e.to_string()),
        Err(e) => Probe::Silent(e.to_string()),
    }
}

/// Print the report to `out`, `settings` (every setting in effect) among
/// it; returns whether the daemon answered.
pub async fn report(
    config: &Config,
    settings: &[Setting],
    out: &mut impl Write,
) -> std::io::Result<bool> {
    writeln!(out, "{}", protocol::description())?;
    let surface = config.surface_finder().load();
    let mark = if surface.is_builtin() { "warn" } else { "ok" };
    writeln!(
        out,
        "[{mark}] tools and instructions served: {}",
        surface.describe()
    )?;
    let answered = daemon(config, surface.version(), out).await?;
    writeln!(out, "settings in effect:")?;
    for setting in settings {
        writeln!(out, "  {setting}")?;
    }
    bridge(config, out)?;
    let cli = Degraded::new(config.cli.degraded.clone(), &config.cli.installation);
    degraded_mode(config, out)?;
    doctor(config, out)?;
    missing_cli(config, &cli, out)?;
    tool_table(&surface, &cli, out)?;
    state_files(config, out)?;
    hosts(out).await?;
    Ok(answered)
}

/// The daemon: whether it answers, and which release it is beside the one
/// whose tools are served (`served`). Returns whether it answered.
async fn daemon(config: &Config, served: &str, out: &mut impl Write) -> std::io::Result<bool> {
    let probe = probe(config).await;
    let (mark, detail, answered) = match &probe {
        Probe::Answered => ("ok", "reachable, answers JSON-RPC".to_owned(), true),
        Probe::Silent(why) => ("FAIL", format!("accepts connections but {why}"), false),
        Probe::Unreachable(why) => ("FAIL", format!("not reachable: {why}"), false),
    };
    writeln!(
        out,
        "[{mark}] daemon at {}: {detail}",
        config.daemon.endpoint
    )?;
    if !answered {
        writeln!(out, "       {}", config.daemon.endpoint.hint())?;
    }
    // A daemon that cannot be reached is not dialled a second time.
    let found = match &probe {
        Probe::Unreachable(why) => release::unknown(&format!("not reachable: {why}"), served),
        _ => release::summarize(
            &release::query(&config.daemon.endpoint, release::STATUS_BUDGET).await,
            served,
        ),
    };
    let mark = if found.matches { "ok" } else { "warn" };
    writeln!(out, "[{mark}] daemon release {}", found.text)?;
    Ok(answered)
}

/// What the bridge's settings mean together, and the MCP revisions spoken.
fn bridge(config: &Config, out: &mut impl Write) -> std::io::Result<()> {
    writeln!(
        out,
        "protocol: legacy (initialize) {}; modern (per-request _meta) {}",
        protocol::LEGACY_VERSIONS.join(", "),
        protocol::MODERN_VERSION
    )?;
    writeln!(
        out,
        "fallback wait: {:?} for memory tools the CLI can answer (a daemon lost less than the connect wait ago is waited for in full)",
        config.bridge.policy.timings().fallback_wait
    )
}

/// Degraded mode: on or off, the CLIs it runs and where they are looked
/// for, what it passes them.
fn degraded_mode(config: &Config, out: &mut impl Write) -> std::io::Result<()> {
    let d = &config.cli.degraded;
    if d.enabled {
        let found = |program: &std::ffi::OsStr| match config.cli.installation.locate(program) {
            Some(path) => path.display().to_string(),
            None => format!("{} (not found)", program.to_string_lossy()),
        };
        writeln!(
            out,
            "degraded mode: on; cli {}, admin cli {}, bank-recall {}, limit {:?} per command",
            found(&d.cli),
            found(&d.admin_cli),
            if d.bank_fallback { "on" } else { "off" },
            d.limit
        )?;
    } else {
        writeln!(out, "degraded mode: off")?;
    }
    for (key, value) in &d.env {
        writeln!(
            out,
            "  passed to CLI runs: {}={}",
            key.to_string_lossy(),
            value.to_string_lossy()
        )?;
    }
    let dirs: Vec<String> = config
        .cli
        .installation
        .dirs()
        .iter()
        .map(|dir| dir.display().to_string())
        .chain(std::iter::once("PATH".to_owned()))
        .collect();
    writeln!(out, "CLIs looked for in: {}", dirs.join(", "))
}

/// A warning when degraded mode is on but its CLI is nowhere to be found.
fn missing_cli(config: &Config, cli: &Degraded, out: &mut impl Write) -> std::io::Result<()> {
    let d = &config.cli.degraded;
    if d.enabled && !cli.serves("memory_recall") {
        writeln!(
            out,
            "       {:?} was not found: degraded mode is off until it is installed or IAI_MCP_CLI names it",
            d.cli
        )?;
    }
    Ok(())
}

/// The doctor: when it runs, and when it heals.
fn doctor(config: &Config, out: &mut impl Write) -> std::io::Result<()> {
    let dr = &config.cli.doctor.clone().located(&config.cli.installation);
    if !dr.enabled {
        return writeln!(out, "doctor: off");
    }
    writeln!(
        out,
        "doctor: `{} doctor` after initialized; `{} doctor --auto` after {:?} down (at most every {} h, stamp {})",
        dr.admin_cli.to_string_lossy(),
        dr.admin_cli.to_string_lossy(),
        dr.heal_after,
        doctor::HEAL_COOLDOWN.as_secs() / 3600,
        doctor::stamp_path(&config.daemon.state_dir).display()
    )
}

/// Every tool served, whether it reads or writes, and whether the CLI
/// answers it while the daemon is down.
fn tool_table(surface: &Surface, cli: &Degraded, out: &mut impl Write) -> std::io::Result<()> {
    writeln!(out, "tools ({}):", surface.tools().len())?;
    for tool in surface.tools() {
        let kind = match tool.access() {
            crate::bridge::Access::Read => "reads",
            crate::bridge::Access::Write => "writes",
        };
        let degraded = if cli.serves(&tool.name) {
            ", CLI answers it while the daemon is down"
        } else {
            ""
        };
        writeln!(out, "  {:<26} {kind}{degraded}", tool.name)?;
    }
    Ok(())
}

/// The heartbeat and wake files, and what the wake-up runs on this
/// platform.
fn state_files(config: &Config, out: &mut impl Write) -> std::io::Result<()> {
    writeln!(
        out,
        "heartbeat: {} (every {:?})",
        Heartbeat::dir(&config.daemon.state_dir)
            .join("heartbeat-<pid>-<uuid>.json")
            .display(),
        config.session.heartbeat_interval
    )?;
    writeln!(
        out,
        "wake signal (when the daemon does not answer 3 probes at start): {}",
        wake::signal_path(&config.daemon.state_dir).display()
    )?;
    let settings = wake::WakeSettings::new(config.cli.store.clone());
    if wake::WakePlan::for_platform(settings.platform) == wake::WakePlan::WakeFileThenLaunchd {
        writeln!(
            out,
            "then, unless the daemon's process is alive: {} {}",
            settings.programs.launchctl.display(),
            wake::kickstart_args(settings.uid)
                .iter()
                .map(|a| a.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" ")
        )?;
    }
    Ok(())
}

/// Which wrapper the MCP hosts' iai-mcp entries start, with a warning when
/// it is not this binary (re-running iai-mcp's installer puts its own
/// wrapper back).
async fn hosts(out: &mut impl Write) -> std::io::Result<()> {
    let home = Platform::current().profile_dir(|name| std::env::var_os(name));
    let (Some(home), Ok(exe)) = (
        home,
        std::env::current_exe().and_then(|exe| crate::real_path::canonicalize(&exe)),
    ) else {
        return Ok(());
    };
    writeln!(out, "host configurations:")?;
    let request = install::Request {
        action: install::Action::Status,
        hosts: Vec::new(),
        dry_run: true,
        exe,
    };
    let places = install::hosts::Places::from_env(std::path::Path::new(&home));
    let mut listing = Vec::new();
    let found = install::execute(&request, &places, &mut listing).await?;
    for line in String::from_utf8_lossy(&listing).lines() {
        writeln!(out, "  {line}")?;
    }
    if found.elsewhere > 0 {
        writeln!(
            out,
            "[warn] {} of {} iai-mcp entries above do not start this binary: run `iai-mcp-wrapper install` (again after each `iai-mcp capture-hooks install`)",
            found.elsewhere, found.entries
        )?;
    }
    Ok(())
}
