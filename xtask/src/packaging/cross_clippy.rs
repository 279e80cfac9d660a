//! Clippy for another target: the whole workspace, every target of every
//! crate (libraries, binaries, unit and integration tests), linted as it
//! is compiled for that target (for Windows, every `cfg(windows)` line a
//! Linux clippy never sees, and every `cfg(unix)` gate that keeps a Unix
//! test off it), with Debian's clippy for the cross compiler
//! ([`toolchain::cross_clippy`]) and `-Z build-std`.

use std::process::{Command, Stdio};

use super::build::{self, BUILD_STD, CrossTools};
use super::error::DistError;
use super::platform::Platform;
use super::progress::step;
use super::toolchain;

/// The cargo arguments after `clippy`: every target of the workspace for
/// `platform`, every warning an error.
pub fn clippy_args(platform: Platform) -> Vec<&'static str> {
    let mut args = vec![
        "--workspace",
        "--all-targets",
        "--locked",
        "--keep-going",
        "--target",
        platform.triple(),
    ];
    args.extend(BUILD_STD);
    args.extend(["--", "-D", "warnings"]);
    args
}

/// Runs clippy on the workspace for `platform` with `cross`; cargo's
/// output goes to standard error. Fails when clippy finds anything.
pub fn clippy(
    platform: Platform,
    cross: &CrossTools,
    target_dir: &std::path::Path,
) -> Result<(), DistError> {
    let cargo_clippy = step("Debian's clippy for the cross compiler", || {
        toolchain::cross_clippy(target_dir, &cross.compiler)
    })?;
    let mut command = Command::new(&cargo_clippy);
    command
        .arg("clippy")
        .args(clippy_args(platform))
        .current_dir(devkit::bins::workspace_root())
        .stdin(Stdio::null())
        .stdout(build::stderr_stdio());
    cross.apply(&mut command, &[], target_dir);
    let status = step(&format!("clippy for {platform}"), || {
        command
            .status()
            .map_err(|e| DistError::io(format!("starting {}", cargo_clippy.display()), e))
    })?;
    if status.success() {
        Ok(())
    } else {
        Err(DistError::tool(
            format!("clippy for {platform}"),
            format!("{status} (its findings are above)"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_target_of_the_workspace_is_linted_with_warnings_denied() {
        let args = clippy_args(Platform::WindowsX86_64);
        assert_eq!(
            args.join(" "),
            "--workspace --all-targets --locked --keep-going --target x86_64-pc-windows-gnu -Z build-std=std,panic_abort -- -D warnings"
        );
    }
}
