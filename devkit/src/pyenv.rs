//! Python virtual environments and the commands run in them: an
//! environment made once and reused while its pins hold, a wheel installed
//! into one, and a command run to completion within a time limit with its
//! output, or why it failed with the end of its standard error. The
//! end-to-end and hosts kits install iai-mcp releases with them; `cargo
//! xtask` its build tools and the wheels it checks.
//!
//! pip and venv run with a cleared environment ([`CleanEnv::for_install`]):
//! a scratch `HOME` beside the environment (pip's cache lives there, kept
//! across rebuilds), and from this machine only the registry settings,
//! certificates and proxies pip needs.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::cleanenv::{CleanEnv, Client};
use crate::command::run_within;
use crate::error::DevkitError;

/// The directory of a virtual environment's programs: `bin/`, or
/// `Scripts\` on Windows, where `venv` and pip put them.
pub fn venv_bin(root: &Path) -> PathBuf {
    root.join(if cfg!(windows) { "Scripts" } else { "bin" })
}

/// A program of a virtual environment's (`python`, `pip`, a script pip
/// installed), with the platform's executable suffix (`python.exe` on
/// Windows).
pub fn venv_program(root: &Path, name: &str) -> PathBuf {
    venv_bin(root).join(format!("{name}{}", std::env::consts::EXE_SUFFIX))
}

/// A virtual environment's interpreter: `bin/python`, or
/// `Scripts\python.exe` on Windows.
pub fn venv_python(root: &Path) -> PathBuf {
    venv_program(root, "python")
}

/// How long [`run`] lets a command take.
pub const DEFAULT_LIMIT: Duration = Duration::from_secs(600);
/// How long creating a virtual environment may take.
pub const VENV_LIMIT: Duration = Duration::from_secs(120);
/// How long one `pip install` from the registry may take (iai-pme and its
/// dependencies are about 600 MiB).
pub const PIP_LIMIT: Duration = Duration::from_secs(1200);
/// How long installing one wheel from a file, or listing what an
/// environment holds, may take.
pub const LOCAL_PIP_LIMIT: Duration = Duration::from_secs(180);
/// How long asking an interpreter where it lives may take.
const QUERY_LIMIT: Duration = Duration::from_secs(30);

/// The file in an environment naming what it was made with.
const MARKER: &str = ".iai-e2e-pins";

/// What an environment is made with: requirements, and the constraints
/// that fix every dependency's version.
#[derive(Debug, Clone, Copy)]
pub struct Pins<'a> {
    /// The requirements (which may lead with pip options such as
    /// `--no-deps`).
    pub requirements: &'a [&'a str],
    /// The text of a pip constraints file (`NAME==VERSION` lines), or none.
    pub constraints: Option<&'a str>,
}

impl Pins<'_> {
    /// The marker's text: the requirements, then the constraints.
    fn marker(&self) -> String {
        let mut text: String = self.requirements.iter().map(|r| format!("{r}\n")).collect();
        if let Some(constraints) = self.constraints {
            text.push_str("--- constraints\n");
            text.push_str(constraints);
        }
        text
    }

    /// Every `NAME==VERSION` the requirements and the constraints name.
    pub fn exact(&self) -> Vec<(String, String)> {
        let lines = self
            .requirements
            .iter()
            .copied()
            .chain(self.constraints.into_iter().flat_map(str::lines));
        lines.filter_map(exact_pin).collect()
    }

    /// Whether `installed` (`(name, version)` as [`installed`] lists them)
    /// holds these pins as pip would have installed them: every exact
    /// requirement, and every constrained package that is installed at its
    /// version. A constraint does not ask for a package: one that is not
    /// installed is one this system does not need (a constraints file made
    /// on Linux names keyring's Linux backend, which macOS and Windows
    /// never install).
    pub fn held_by(&self, installed: &[(String, String)]) -> bool {
        let required = self.requirements.iter().copied().filter_map(exact_pin);
        let constrained = self
            .constraints
            .into_iter()
            .flat_map(str::lines)
            .filter_map(exact_pin);
        required.into_iter().all(|pin| installed.contains(&pin))
            && constrained.into_iter().all(|(name, version)| {
                installed
                    .iter()
                    .filter(|(listed, _)| *listed == name)
                    .all(|(_, listed)| *listed == version)
            })
    }
}

/// `(name, version)` of a `NAME==VERSION` line, the name normalised as pip
/// normalises it (lower case, `-` for `_` and `.`).
pub fn exact_pin(line: &str) -> Option<(String, String)> {
    let line = line.split('#').next()?.trim();
    let (name, version) = line.split_once("==")?;
    let version = version.split(';').next()?.trim();
    Some((normalise(name.trim()), version.to_owned()))
}

/// A distribution's name as pip compares names.
fn normalise(name: &str) -> String {
    name.to_ascii_lowercase().replace(['_', '.'], "-")
}

/// The virtual environment `root` with exactly `requirements` installed
/// from the package registry (`what` says what they are, for errors); see
/// [`ensure_venv_pinned`], here with no constraints.
pub fn ensure_venv(
    root: &Path,
    interpreter: impl FnOnce() -> Result<PathBuf, DevkitError>,
    requirements: &[&str],
    what: &str,
) -> Result<Option<Duration>, DevkitError> {
    let pins = Pins {
        requirements,
        constraints: None,
    };
    ensure_venv_pinned(root, interpreter, &pins, what)
}

/// The virtual environment `root` holding `pins`: reused when its marker
/// names the same pins and pip lists them ([`Pins::held_by`]);
/// otherwise made anew with the interpreter `interpreter` gives and
/// installed from the registry (`what` says what, for errors), the
/// constraints applied. Returns how long making it took (`None`: reused).
pub fn ensure_venv_pinned(
    root: &Path,
    interpreter: impl FnOnce() -> Result<PathBuf, DevkitError>,
    pins: &Pins<'_>,
    what: &str,
) -> Result<Option<Duration>, DevkitError> {
    let marker = root.join(MARKER);
    let same_pins = std::fs::read_to_string(&marker).ok() == Some(pins.marker());
    if same_pins && holds(root, pins) {
        return Ok(None);
    }
    let started = Instant::now();
    let interpreter = interpreter()?;
    if root.exists() {
        std::fs::remove_dir_all(root)
            .map_err(|e| DevkitError::io(format!("removing {}", root.display()), e))?;
    }
    create_venv(&interpreter, root)?;
    let mut pip = pip(root);
    pip.args(["install", "--quiet"]).args(pins.requirements);
    if let Some(constraints) = pins.constraints {
        let file = root.join("constraints.txt");
        std::fs::write(&file, constraints)
            .map_err(|e| DevkitError::io(format!("writing {}", file.display()), e))?;
        pip.arg("--constraint").arg(&file);
    }
    run_within(&mut pip, what, PIP_LIMIT)?;
    std::fs::write(&marker, pins.marker())
        .map_err(|e| DevkitError::io(format!("writing {}", marker.display()), e))?;
    Ok(Some(started.elapsed()))
}

/// Whether the environment at `root` holds `pins` ([`Pins::held_by`],
/// from `pip list`).
fn holds(root: &Path, pins: &Pins<'_>) -> bool {
    installed(root).is_ok_and(|listed| pins.held_by(&listed))
}

/// Every distribution installed in the environment `root`, as
/// `(normalised name, version)`.
pub fn installed(root: &Path) -> Result<Vec<(String, String)>, DevkitError> {
    let mut list = pip(root);
    list.args(["list", "--format=freeze"]);
    let what = format!("listing what {} holds", root.display());
    let out = run_within(&mut list, &what, LOCAL_PIP_LIMIT)?;
    Ok(out.lines().filter_map(exact_pin).collect())
}

/// `python -m pip` of the environment `root`, with the install
/// environment: a scratch home beside `root`.
pub fn pip(root: &Path) -> Command {
    let mut pip = Command::new(venv_python(root));
    pip.args(["-m", "pip", "--disable-pip-version-check"]);
    install_env(root).apply(&mut pip);
    pip
}

/// The cleared environment pip runs with for the environment `root`: its
/// `HOME` is `pip-home` beside `root` (pip's cache and anything a build
/// writes), kept when the environment is made anew.
fn install_env(root: &Path) -> CleanEnv {
    let home = root
        .parent()
        .unwrap_or(root)
        .join(format!("{}-pip-home", dir_name(root)));
    let _ = std::fs::create_dir_all(&home);
    CleanEnv::for_install(Client::Pip, &home)
}

/// The last component of `path`, or `venv`.
fn dir_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(|| "venv".to_owned(), |n| n.to_string_lossy().into_owned())
}

/// A new, empty virtual environment at `root`, made by `interpreter` (a
/// launcher such as a version manager's shim is asked for the interpreter
/// it runs, which then runs with the install environment).
pub fn create_venv(interpreter: &Path, root: &Path) -> Result<(), DevkitError> {
    let real = real_interpreter(interpreter)?;
    let mut venv = Command::new(&real);
    venv.args(["-m", "venv"]).arg(root);
    install_env(root).apply(&mut venv);
    run_within(
        &mut venv,
        &format!("creating the virtual environment {}", root.display()),
        VENV_LIMIT,
    )
    .map(drop)
}

/// The interpreter `interpreter` runs (`sys.executable`), asked with this
/// process's environment, which a launcher may need.
pub fn real_interpreter(interpreter: &Path) -> Result<PathBuf, DevkitError> {
    let out = run_within(
        Command::new(interpreter).args(["-c", "import sys; print(sys.executable)"]),
        &format!("asking {} where its interpreter is", interpreter.display()),
        QUERY_LIMIT,
    )?;
    let real = PathBuf::from(out.trim());
    if real.is_absolute() {
        Ok(real)
    } else {
        Err(DevkitError::Precondition(format!(
            "{} names no interpreter: {:?}",
            interpreter.display(),
            out.trim()
        )))
    }
}

/// Runs `command` (`what` it does) to completion within
/// [`DEFAULT_LIMIT`]; its standard output, or why it failed with the end
/// of its standard error ([`run_within`], for a limit of the caller's).
pub fn run(command: &mut Command, what: &str) -> Result<String, DevkitError> {
    run_within(command, what, DEFAULT_LIMIT)
}

/// The executable the wrapper's wheel installs.
pub const WHEEL_EXECUTABLE: &str = "iai-mcp-wrapper";

/// Installs `wheel` (alone, from the file) into the environment `venv`,
/// replacing any copy of the same version, and returns the wrapper
/// executable it put in the environment's `bin/` (`Scripts\` on Windows).
pub fn install_wheel(venv: &Path, wheel: &Path) -> Result<PathBuf, DevkitError> {
    let mut pip = pip(venv);
    pip.args(["install", "--quiet"])
        .args(["--no-index", "--no-deps", "--force-reinstall"])
        .arg(wheel);
    run_within(
        &mut pip,
        &format!("installing {} into {}", wheel.display(), venv.display()),
        LOCAL_PIP_LIMIT,
    )?;
    let binary = venv_program(venv, WHEEL_EXECUTABLE);
    if binary.is_file() {
        Ok(binary)
    } else {
        Err(DevkitError::Precondition(format!(
            "installing {} put no {WHEEL_EXECUTABLE} in {}",
            wheel.display(),
            venv_bin(venv).display()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_are_where_venv_puts_them_on_this_platform() {
        let root = Path::new("env");
        let python = venv_python(root);
        if cfg!(windows) {
            assert_eq!(python, root.join("Scripts").join("python.exe"));
            assert_eq!(
                venv_program(root, WHEEL_EXECUTABLE),
                root.join("Scripts").join("iai-mcp-wrapper.exe")
            );
        } else {
            assert_eq!(python, root.join("bin").join("python"));
            assert_eq!(
                venv_program(root, WHEEL_EXECUTABLE),
                root.join("bin").join("iai-mcp-wrapper")
            );
        }
    }

    #[test]
    fn exact_pins_are_read_as_pip_names_them() {
        assert_eq!(
            exact_pin("Typing_Extensions==4.12.2  # via mcp"),
            Some(("typing-extensions".into(), "4.12.2".into()))
        );
        assert_eq!(
            exact_pin("numpy==2.1.0 ; python_version >= '3.11'"),
            Some(("numpy".into(), "2.1.0".into()))
        );
        assert_eq!(exact_pin("--no-deps"), None);
        assert_eq!(exact_pin("mcp>=2"), None);
    }

    #[test]
    fn constraints_pin_what_is_installed_and_ask_for_nothing() {
        let requirements = ["--no-deps", "iai-pme==3.3.0"];
        let pins = Pins {
            requirements: &requirements,
            constraints: Some("numpy==2.1.0\njeepney==0.9.0\n"),
        };
        let listed = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                .collect()
        };
        // jeepney is Linux's: its absence elsewhere is what pip does.
        assert!(pins.held_by(&listed(&[("iai-pme", "3.3.0"), ("numpy", "2.1.0")])));
        assert!(pins.held_by(&listed(&[
            ("iai-pme", "3.3.0"),
            ("numpy", "2.1.0"),
            ("jeepney", "0.9.0")
        ])));
        // A constrained package at another version, or a requirement
        // missing or at another version, is not the environment asked for.
        assert!(!pins.held_by(&listed(&[("iai-pme", "3.3.0"), ("numpy", "2.2.0")])));
        assert!(!pins.held_by(&listed(&[("numpy", "2.1.0")])));
        assert!(!pins.held_by(&listed(&[("iai-pme", "3.2.3"), ("numpy", "2.1.0")])));
    }

    #[test]
    fn the_marker_changes_with_the_constraints() {
        let requirements = ["iai-pme==3.3.0"];
        let one = Pins {
            requirements: &requirements,
            constraints: Some("numpy==2.1.0\n"),
        };
        let other = Pins {
            constraints: Some("numpy==2.1.1\n"),
            ..one
        };
        assert_ne!(one.marker(), other.marker());
        assert_eq!(
            one.exact(),
            [
                ("iai-pme".to_owned(), "3.3.0".to_owned()),
                ("numpy".to_owned(), "2.1.0".to_owned())
            ]
        );
    }
}
