//! Installing a host from the npm registry, at one version, into a
//! directory of its own under `target/hosts/npm/`.
//!
//! A pinned version is installed from its lockfile, kept in the
//! repository under `kits/pins/npm/HOST-VERSION/` (`package.json` and
//! `package-lock.json`), by `npm install` beside it: every package the
//! lockfile names is installed at the version and integrity it names, on
//! any day. (Not `npm ci`: it refuses a lockfile that lacks an optional
//! native package of another platform, and the registry may not serve
//! every platform's: opencode's macOS and musl packages are missing from
//! it for some releases.) The install is reused while its
//! program reports exactly that version and the lockfile it was made from
//! is the repository's; otherwise it is made anew. A version with no
//! lockfile (`--host-version NAME=latest`, or one not pinned) is
//! installed with `npm install` into `NAME-VERSION-unlocked/`, its tree
//! resolved that day, and the report says so. [`Npm::refresh_lock`]
//! writes a pinned version's lockfile.
//!
//! npm runs with a cleared environment (the dev kit's
//! [`CleanEnv::for_install`]): its `HOME`, cache, logs and temporary files
//! under `target/hosts/`, where the packages' install scripts run too;
//! from this machine only the registry settings, certificates and proxies
//! npm needs, the user's `.npmrc` named explicitly. Every command runs
//! under the subreaper within a time limit.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use devkit::cleanenv::{CleanEnv, Client};
use devkit::reap::{Reaped, run_within};
use harness::error::HarnessError;
use serde_json::json;

use super::host::{Host, HostVersion};
use crate::e2e::release::pins_dir;

/// How long `npm install` of one host may take.
const INSTALL_LIMIT: Duration = Duration::from_secs(300);
/// How long asking the registry, or a host's `--version`, may take.
const QUERY_LIMIT: Duration = Duration::from_secs(60);
/// The copy of the lockfile an install was made from, in its directory.
const INSTALLED_LOCK: &str = ".kit-package-lock.json";

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
    /// Whether it was installed from the repository's lockfile.
    pub locked: bool,
}

/// Where npm and the installs live, and the subreaper they run under.
#[derive(Debug, Clone)]
pub struct Npm {
    /// `target/hosts/npm`: one directory per host and version.
    pub root: PathBuf,
    /// The subreaper every command runs under.
    pub subreaper: PathBuf,
}

impl Npm {
    /// `npm` with `args`, under the subreaper, in the install environment.
    fn command(&self, args: &[&str]) -> std::process::Command {
        let mut npm = Reaped::command(&self.subreaper, "npm");
        npm.args(args);
        self.env().apply(&mut npm);
        npm
    }

    /// npm's environment: cleared, a scratch home, its cache and logs
    /// beside the installs.
    fn env(&self) -> CleanEnv {
        let hosts = self.root.parent().unwrap_or(&self.root);
        let home = hosts.join("npm-home");
        let _ = std::fs::create_dir_all(home.join("tmp"));
        let mut env = CleanEnv::for_install(Client::Npm, &home);
        env.set("TMPDIR", home.join("tmp"));
        env.set("npm_config_cache", hosts.join("npm-cache"));
        env.set("npm_config_logs_dir", hosts.join("npm-cache/_logs"));
        env.set("npm_config_update_notifier", "false");
        env.set("npm_config_fund", "false");
        env.set("npm_config_audit", "false");
        env
    }

    /// Installs `host` at `version` (unless already there as it should
    /// be), and checks that its program reports exactly that version.
    pub fn ensure(&self, host: Host, version: &HostVersion) -> Result<Installed, HarnessError> {
        let version = match version {
            HostVersion::Exact(v) => v.clone(),
            HostVersion::Latest => self.latest(host)?,
        };
        let lock = read_lock(host, &version);
        // An install without the lockfile has a directory of its own, so
        // that trying `latest` does not undo the pinned install.
        let unlocked = if lock.is_some() { "" } else { "-unlocked" };
        let dir = self
            .root
            .join(format!("{}-{version}{unlocked}", host.name()));
        let program = dir.join("node_modules/.bin").join(host.program());
        let installed_from = std::fs::read_to_string(dir.join(INSTALLED_LOCK)).ok();
        let current = self
            .version_of(&program)
            .ok()
            .as_deref()
            .and_then(version_in)
            == Some(&version);
        let mut installed_in = None;
        if !current || installed_from != lock {
            let started = Instant::now();
            self.install(host, &version, &dir, lock.as_deref())?;
            installed_in = Some(started.elapsed());
        }
        let reports = self.version_of(&program).map_err(|why| {
            HarnessError::Scenario(format!(
                "{host} {version} installed, but its program does not run: {why}"
            ))
        })?;
        if version_in(&reports) != Some(version.as_str()) {
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
            locked: lock.is_some(),
        })
    }

    /// Installs into `dir`, made anew: from `lock`, or the version alone
    /// without one.
    fn install(
        &self,
        host: Host,
        version: &str,
        dir: &Path,
        lock: Option<&str>,
    ) -> Result<(), HarnessError> {
        let _ = std::fs::remove_dir_all(dir);
        write(&dir.join("package.json"), &package_json(host, version))?;
        let spec = format!("{}@{version}", host.package());
        let mut npm = match lock {
            Some(lock) => {
                write(&dir.join("package-lock.json"), lock)?;
                self.command(&["install", "--loglevel=error"])
            }
            None => self.command(&["install", "--loglevel=error", "--no-package-lock"]),
        };
        npm.current_dir(dir);
        let what = if lock.is_some() {
            format!(
                "npm install of {spec} from kits/pins/npm/{}-{version}",
                host.name()
            )
        } else {
            format!("npm install {spec}")
        };
        run_within(&mut npm, &what, INSTALL_LIMIT)?;
        if let Some(lock) = lock {
            write(&dir.join(INSTALLED_LOCK), lock)?;
        }
        Ok(())
    }

    /// The version the registry tags `latest`.
    pub fn latest(&self, host: Host) -> Result<String, HarnessError> {
        let mut npm = self.command(&["view", host.package(), "version"]);
        let out = run_within(
            &mut npm,
            &format!("npm view {} version", host.package()),
            QUERY_LIMIT,
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

    /// What `program --version` prints, first line; run in a cleared
    /// environment with a scratch home (some hosts write their state even
    /// for `--version`).
    fn version_of(&self, program: &Path) -> Result<String, String> {
        if !program.exists() {
            return Err(format!("{} is missing", program.display()));
        }
        let home = self.root.join("version-home");
        let _ = std::fs::create_dir_all(&home);
        let mut env = CleanEnv::with_path();
        env.set("HOME", &home);
        env.set("CODEX_HOME", &home);
        let mut command = Reaped::command(&self.subreaper, program);
        command.arg("--version");
        env.apply(&mut command);
        run_within(
            &mut command,
            &format!("{} --version", program.display()),
            QUERY_LIMIT,
        )
        .map(|out| out.lines().next().unwrap_or("").trim().to_owned())
        .map_err(|e| e.to_string())
    }

    /// Writes the lockfile of `host` at `version` into the repository
    /// (`kits/pins/npm/HOST-VERSION/`), resolved today, without
    /// registry addresses, and removes the host's lockfiles of other
    /// versions. Returns the directory.
    pub fn refresh_lock(&self, host: Host, version: &str) -> Result<PathBuf, HarnessError> {
        let scratch = self.root.join("refresh").join(host.name());
        let _ = std::fs::remove_dir_all(&scratch);
        let package = package_json(host, version);
        write(&scratch.join("package.json"), &package)?;
        let mut npm = self.command(&["install", "--package-lock-only", "--loglevel=error"]);
        npm.env("npm_config_omit_lockfile_registry_resolved", "true")
            .current_dir(&scratch);
        let what = format!(
            "npm install --package-lock-only {}@{version}",
            host.package()
        );
        run_within(&mut npm, &what, INSTALL_LIMIT)?;
        let lock = std::fs::read_to_string(scratch.join("package-lock.json"))
            .map_err(|e| HarnessError::io(format!("reading the lockfile {what} wrote"), e))?;
        for stale in lock_dirs_of(host) {
            let _ = std::fs::remove_dir_all(stale);
        }
        let dir = lock_dir(host, version);
        write(&dir.join("package.json"), &package)?;
        write(&dir.join("package-lock.json"), &lock)?;
        let _ = std::fs::remove_dir_all(&scratch);
        Ok(dir)
    }
}

/// The directory of `host`'s lockfile at `version` in the repository.
pub fn lock_dir(host: Host, version: &str) -> PathBuf {
    pins_dir()
        .join("npm")
        .join(format!("{}-{version}", host.name()))
}

/// Every directory of a lockfile of `host`, whatever its version.
fn lock_dirs_of(host: Host) -> Vec<PathBuf> {
    let prefix = format!("{}-", host.name());
    let Ok(entries) = std::fs::read_dir(pins_dir().join("npm")) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .strip_prefix(&prefix)
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
        })
        .map(|e| e.path())
        .collect()
}

/// The repository's lockfile of `host` at `version`, if there is one.
pub fn read_lock(host: Host, version: &str) -> Option<String> {
    std::fs::read_to_string(lock_dir(host, version).join("package-lock.json")).ok()
}

/// The `package.json` that installs exactly `host` at `version`.
pub fn package_json(host: Host, version: &str) -> String {
    let package = json!({
        "name": format!("iai-hosts-{}", host.name()),
        "private": true,
        "description": "One MCP host at one version, for the hosts kit (cargo xtask hosts)",
        "dependencies": { host.package(): version }
    });
    let mut text = serde_json::to_string_pretty(&package).expect("JSON serializes");
    text.push('\n');
    text
}

/// The version a `--version` line names: its first word that starts with
/// a digit and has a dot (`2.1.332 (Claude Code)`, `codex-cli 0.171.0`).
pub fn version_in(line: &str) -> Option<&str> {
    line.split_whitespace()
        .map(|word| word.trim_start_matches('v'))
        .find(|word| word.starts_with(|c: char| c.is_ascii_digit()) && word.contains('.'))
}

/// Writes `text` to `path`, creating its directory.
fn write(path: &Path, text: &str) -> Result<(), HarnessError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| HarnessError::io(format!("creating {}", dir.display()), e))?;
    }
    std::fs::write(path, text)
        .map_err(|e| HarnessError::io(format!("writing {}", path.display()), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_is_read_whole_from_each_hosts_line() {
        assert_eq!(version_in("2.1.332 (Claude Code)"), Some("2.1.332"));
        assert_eq!(version_in("codex-cli 0.171.0"), Some("0.171.0"));
        assert_eq!(version_in("1.18.33"), Some("1.18.33"));
        assert_eq!(version_in("v1.2.3"), Some("1.2.3"));
        assert_eq!(version_in("unknown"), None);
        // Equality, not a prefix: 2.1.3 is not 2.1.328.
        assert_ne!(version_in("2.1.328 (Claude Code)"), Some("2.1.3"));
    }

    #[test]
    fn every_pinned_host_has_its_lockfile_for_exactly_that_version() {
        for host in Host::ALL {
            let version = host.pinned();
            let dir = lock_dir(host, version);
            let lock = read_lock(host, version).unwrap_or_else(|| {
                panic!(
                    "no {} (cargo xtask hosts --refresh-pins)",
                    dir.join("package-lock.json").display()
                )
            });
            let lock: serde_json::Value =
                serde_json::from_str(&lock).expect("the lockfile is JSON");
            let entry = &lock["packages"][format!("node_modules/{}", host.package())];
            assert_eq!(entry["version"], version, "{}", dir.display());
            assert!(
                entry["integrity"].is_string(),
                "{}: no integrity",
                dir.display()
            );
            let package = std::fs::read_to_string(dir.join("package.json")).expect("package.json");
            assert_eq!(package, package_json(host, version), "{}", dir.display());
        }
    }
}
