//! Installing a host from the npm registry, at one version, into a
//! directory of its own under `target/hosts/npm/` (reused while it holds
//! a working binary). Nothing else is fetched: no account, no network
//! beyond the registry `npm` is configured with.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use harness::error::HarnessError;

use super::host::{Host, HostVersion};
use super::reap::run_bounded;

/// How long `npm install` of one host may take.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(300);
/// How long asking the registry or a host's `--version` may take.
const QUERY_TIMEOUT: Duration = Duration::from_secs(60);

/// A host ready to run.
#[derive(Debug, Clone)]
pub struct Installed {
    /// The host.
    pub host: Host,
    /// The version installed.
    pub version: String,
    /// The program to run.
    pub program: PathBuf,
    /// What the program says with `--version`.
    pub reports: String,
    /// How long installing took (`None`: reused).
    pub installed_in: Option<Duration>,
}

/// Installs `host` at `version` under `root` (unless already there), and
/// checks the program runs.
pub fn ensure(root: &Path, host: Host, version: &HostVersion) -> Result<Installed, HarnessError> {
    let version = match version {
        HostVersion::Exact(v) => v.clone(),
        HostVersion::Latest => latest(root, host)?,
    };
    let dir = root.join(format!("{}-{version}", host.name()));
    let program = dir.join("node_modules/.bin").join(host.program());
    let mut installed_in = None;
    if version_of(&program).is_err() {
        let started = Instant::now();
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .map_err(|e| HarnessError::io(format!("creating {}", dir.display()), e))?;
        let spec = format!("{}@{version}", host.package());
        let mut npm = Command::new("npm");
        npm.args([
            "install",
            "--no-audit",
            "--no-fund",
            "--no-save",
            "--loglevel=error",
        ])
        .arg("--prefix")
        .arg(&dir)
        .arg(&spec)
        .current_dir(&dir);
        quiet_npm(&mut npm, root);
        run_bounded(&mut npm, INSTALL_TIMEOUT, &format!("npm install {spec}"))?;
        installed_in = Some(started.elapsed());
    }
    let reports = version_of(&program).map_err(|why| {
        HarnessError::Scenario(format!(
            "{host} {version} installed, but its program does not run: {why}"
        ))
    })?;
    if !reports.contains(&version) {
        return Err(HarnessError::Scenario(format!(
            "{} --version says {reports:?}, not {version}",
            program.display()
        )));
    }
    Ok(Installed {
        host,
        version,
        program,
        reports,
        installed_in,
    })
}

/// The version the registry tags `latest`.
fn latest(root: &Path, host: Host) -> Result<String, HarnessError> {
    let mut npm = Command::new("npm");
    npm.args(["view", host.package(), "version"]);
    quiet_npm(&mut npm, root);
    let out = run_bounded(
        &mut npm,
        QUERY_TIMEOUT,
        &format!("npm view {}", host.package()),
    )?;
    let version = out.trim().to_owned();
    if version.is_empty() {
        return Err(HarnessError::Scenario(format!(
            "the registry named no latest version of {}",
            host.package()
        )));
    }
    Ok(version)
}

/// Keeps `npm`'s cache and logs under `root`'s parent (`target/hosts`)
/// instead of the user's home, and its update check off.
fn quiet_npm(npm: &mut Command, root: &Path) {
    let cache = root.parent().unwrap_or(root).join("npm-cache");
    npm.env("npm_config_cache", &cache)
        .env("npm_config_logs_dir", cache.join("_logs"))
        .env("npm_config_update_notifier", "false");
}

/// What `program --version` prints, first line.
fn version_of(program: &Path) -> Result<String, String> {
    if !program.exists() {
        return Err(format!("{} is missing", program.display()));
    }
    let mut command = Command::new(program);
    command.arg("--version").stdin(Stdio::null());
    // A scratch HOME: some hosts write their state even for --version.
    let home = program
        .ancestors()
        .nth(3)
        .map_or_else(std::env::temp_dir, |dir| dir.join("version-home"));
    let _ = std::fs::create_dir_all(&home);
    command.env("HOME", &home).env("CODEX_HOME", &home);
    run_bounded(
        &mut command,
        QUERY_TIMEOUT,
        &format!("{} --version", program.display()),
    )
    .map(|out| out.lines().next().unwrap_or("").trim().to_owned())
    .map_err(|e| e.to_string())
}
