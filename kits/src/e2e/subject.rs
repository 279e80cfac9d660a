//! The wrapper binary the checks run: the one a wheel installs, or the
//! one built here.

use std::path::PathBuf;
use std::time::Duration;

use devkit::bins::WHEEL_ENV;
use devkit::command::run_within;
use devkit::pyenv::install_wheel;
use harness::error::HarnessError;

use super::config::E2eConfig;
use super::pyenv;

/// The binary the checks run, and the report's line about it.
#[derive(Debug, Clone)]
pub struct Tested {
    /// The binary.
    pub binary: PathBuf,
    /// `wrapper: PATH (VERSION), installed from WHEEL`, or `..., not from
    /// a wheel`.
    pub line: String,
}

/// How long the wrapper's `--version` may take.
const VERSION_LIMIT: Duration = Duration::from_secs(30);

/// The wheel [`WHEEL_ENV`] names, installed into the environment, or else
/// the configured binary. The hosts kit tests the same binary.
pub fn tested(cfg: &E2eConfig, py: &pyenv::PyEnv) -> Result<Tested, HarnessError> {
    let wheel = std::env::var_os(WHEEL_ENV)
        .filter(|w| !w.is_empty())
        .map(PathBuf::from);
    let (binary, origin) = match wheel {
        Some(wheel) => (
            install_wheel(&py.root, &wheel)?,
            format!("installed from {}", wheel.display()),
        ),
        None => (cfg.wrapper.clone(), "not from a wheel".to_owned()),
    };
    let version = run_within(
        std::process::Command::new(&binary).arg("--version"),
        &format!("`{} --version`", binary.display()),
        VERSION_LIMIT,
    )?;
    let line = format!(
        "wrapper: {} ({}), {origin}",
        binary.display(),
        version.trim()
    );
    Ok(Tested { binary, line })
}
