//! Clippy for another target: the wrapper's library and binary linted as
//! they are compiled for it (for Windows, every `cfg(windows)` line that
//! a Linux clippy never sees), with Debian's clippy for the cross compiler
//! ([`toolchain::cross_clippy`]) and `-Z build-std`.
//!
//! The wrapper's tests are not linted for another target: they drive the
//! binary through the harness, which is Unix-only.

use std::process::{Command, Stdio};

use super::build::{self, BUILD_STD, CrossTools};
use super::error::DistError;
use super::platform::Platform;
use super::progress::step;
use super::toolchain;

/// The cargo arguments after `clippy`: the wrapper's library and binary
/// for `platform`, every warning an error.
pub fn clippy_args(platform: Platform) -> Vec<&'static str> {
    let mut args = vec![
        "--locked",
        "-p",
        "iai-mcp-wrapper",
        "--lib",
        "--bins",
        "--target",
        platform.triple(),
    ];
    args.extend(BUILD_STD);
    args.extend(["--", "-D", "warnings"]);
    args
}

/// Runs clippy on the wrapper for `platform` with `cross`; cargo's output
/// goes to standard error. Fails when clippy finds anything.
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
        .stdout(build::stderr_stdio()?);
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
    fn the_wrapper_is_linted_for_the_target_with_warnings_denied() {
        let args = clippy_args(Platform::WindowsX86_64);
        assert_eq!(
            args.join(" "),
            "--locked -p iai-mcp-wrapper --lib --bins --target x86_64-pc-windows-gnu -Z build-std=std,panic_abort -- -D warnings"
        );
    }
}
