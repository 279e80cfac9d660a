//! Python virtual environments and the commands run in them: an
//! environment made once and reused while its pins hold, a wheel installed
//! into one, and a command run to completion with its output, or why it
//! failed with the end of its standard error. The end-to-end and hosts
//! kits install iai-mcp releases with them; `cargo xtask` its build tools
//! and the wheels it checks.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::DevkitError;
use crate::format::last_lines;

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

/// The virtual environment `root` with exactly `requirements` (which may
/// lead with pip options such as `--no-deps`) installed from the package
/// registry (`what` says what they are, for errors):
/// created with the interpreter `interpreter` gives unless a marker in it
/// names the same requirements, in which case it is reused as it is.
/// Returns how long creating it took (`None`: reused).
pub fn ensure_venv(
    root: &Path,
    interpreter: impl FnOnce() -> Result<PathBuf, DevkitError>,
    requirements: &[&str],
    what: &str,
) -> Result<Option<Duration>, DevkitError> {
    let marker = root.join(".iai-e2e-pins");
    let pins: String = requirements.iter().map(|r| format!("{r}\n")).collect();
    if std::fs::read_to_string(&marker).ok().as_deref() == Some(pins.as_str()) {
        return Ok(None);
    }
    let started = Instant::now();
    let interpreter = interpreter()?;
    if root.exists() {
        std::fs::remove_dir_all(root)
            .map_err(|e| DevkitError::io(format!("removing {}", root.display()), e))?;
    }
    create_venv(&interpreter, root)?;
    run(
        Command::new(venv_python(root))
            .args(["-m", "pip", "install", "--quiet"])
            .arg("--disable-pip-version-check")
            .args(requirements),
        what,
    )?;
    std::fs::write(&marker, pins)
        .map_err(|e| DevkitError::io(format!("writing {}", marker.display()), e))?;
    Ok(Some(started.elapsed()))
}

/// A new, empty virtual environment at `root`, made by `interpreter`.
pub fn create_venv(interpreter: &Path, root: &Path) -> Result<(), DevkitError> {
    run(
        Command::new(interpreter).args(["-m", "venv"]).arg(root),
        &format!("creating the virtual environment {}", root.display()),
    )
    .map(drop)
}

/// Runs `command` (`what` it does) to completion; its standard output, or
/// why it failed with the end of its standard error.
pub fn run(command: &mut Command, what: &str) -> Result<String, DevkitError> {
    let output = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| DevkitError::io(what.to_owned(), e))?;
    if output.status.success() {
        return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
    }
    let tail = last_lines(&String::from_utf8_lossy(&output.stderr), 15, "\n");
    Err(DevkitError::Precondition(format!(
        "{what} failed ({}):\n{tail}",
        output.status
    )))
}

/// The executable the wrapper's wheel installs.
pub const WHEEL_EXECUTABLE: &str = "iai-mcp-wrapper";

/// Installs `wheel` (alone, from the file) into the environment `venv`,
/// replacing any copy of the same version, and returns the wrapper
/// executable it put in the environment's `bin/` (`Scripts\` on Windows).
pub fn install_wheel(venv: &Path, wheel: &Path) -> Result<PathBuf, DevkitError> {
    run(
        Command::new(venv_python(venv))
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .args(["--no-index", "--no-deps", "--force-reinstall"])
            .arg(wheel),
        &format!("installing {} into {}", wheel.display(), venv.display()),
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
}
