//! Packaging: the wrapper's Python wheels for every platform, built,
//! checked and, where this machine can, run.
//!
//! This module builds and checks them ([`build_and_check`]); each child
//! imports only its siblings, never this file, which only uses them.
//!
//! - [`platform`]: the platforms and what each one's wheel must look like.
//! - [`toolchain`]: maturin and zig from the package registry, the cross
//!   compiler from Debian's packages, the Debian packages that must be
//!   installed.
//! - [`build`]: maturin, natively or with `-Z build-std` for another target,
//!   and the tools it needs.
//! - [`check`]: tags, layout, the binary ([`inspect`]: ELF, Mach-O, PE),
//!   `--version` on this machine's own platform.
//! - [`cross_clippy`]: clippy on the wrapper as compiled for another
//!   target.
//! - [`cross_check`]: a cross-built binary run here, under qemu-user or
//!   Wine, through the harness's smoke scenario and the wrapper's tests.
//! - [`winprng`]: the test-only DLL Wine 8.0 needs to run Rust programs.
//! - [`progress`]: one timed line per step on standard error.
//! - [`error`]: what can go wrong in all of these.

pub mod build;
pub mod check;
pub mod cross_check;
pub mod cross_clippy;
pub mod error;
pub mod inspect;
pub mod platform;
pub mod progress;
pub mod toolchain;
pub mod winprng;

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

use devkit::pyenv::run;

use build::{build_one, tools};
use check::WheelReport;
use error::DistError;
use platform::Platform;
use progress::step;

/// This machine's platform, as `cargo -vV` names its host.
pub fn host_platform() -> Result<Platform, DistError> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let output = run(
        Command::new(&cargo).arg("-vV"),
        "asking cargo for the host triple",
    )?;
    let triple = output
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(str::trim)
        .ok_or_else(|| DistError::Unexpected(format!("`cargo -vV` named no host:\n{output}")))?;
    Platform::from_triple(triple)
}

/// How one platform's wheel came out.
#[derive(Debug)]
pub struct WheelOutcome {
    /// The platform.
    pub platform: Platform,
    /// The check's report, or why there was nothing to check.
    pub result: Result<WheelReport, DistError>,
}

/// Builds and checks the wheel of each of `platforms`, one after the
/// other, in `target_dir`; a platform that fails to build does not stop
/// the others. Fails only when the tools cannot be had.
pub fn build_and_check(
    platforms: &[Platform],
    host: Platform,
    python: &Path,
    target_dir: &Path,
) -> Result<Vec<WheelOutcome>, DistError> {
    let tools = tools(platforms, host, python, target_dir)?;
    Ok(platforms
        .iter()
        .map(|&platform| WheelOutcome {
            platform,
            result: build_one(platform, host, &tools).and_then(|built| {
                step(&format!("checking the {platform} wheel"), || {
                    check::check(built, host, python, target_dir)
                })
            }),
        })
        .collect())
}
