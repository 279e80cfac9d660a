//! Building a wheel with maturin (`pyproject.toml` at the workspace root).
//!
//! For this machine's own target the stable toolchain builds as usual. For
//! another target, rustup's nightly cargo drives the compiler unpacked from
//! Debian's packages ([`toolchain::cross_compiler`]) with
//! `-Z build-std=std,panic_abort`, in `target/cross` so the host build is
//! left alone and each target's std stays cached between runs. zig links
//! Linux targets against glibc 2.17 (`manylinux2014`) and macOS targets
//! without an SDK; MinGW-w64's gcc links Windows.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use devkit::bins::workspace_root;
use devkit::format::format_bytes;

use super::error::DistError;
use super::platform::{Os, Platform};
use super::progress::step;
use super::toolchain::{self, CrossCompiler, Nightly, prepend_paths};

/// The distribution's name on the package index, as in `pyproject.toml`.
pub const DISTRIBUTION: &str = "iai-mcp-wrapper";
/// The manylinux policy Linux wheels are built for.
pub const MANYLINUX: &str = "manylinux2014";

/// The tools a build runs with.
#[derive(Debug, Clone)]
pub struct Tools {
    /// The workspace's target directory.
    pub target_dir: PathBuf,
    /// The virtual environment with maturin and zig.
    pub venv: PathBuf,
    /// For another target than this machine's: the compiler and rustup's
    /// nightly cargo.
    pub cross: Option<CrossTools>,
}

/// What building for another target needs.
#[derive(Debug, Clone)]
pub struct CrossTools {
    /// The compiler with std's sources.
    pub compiler: CrossCompiler,
    /// rustup's nightly toolchain (its cargo).
    pub nightly: Nightly,
}

impl CrossTools {
    /// The environment a cross cargo runs in: the unpacked compiler as
    /// `RUSTC` with its libraries (and nightly's, for `rust-objcopy`),
    /// nightly's cargo first on `PATH` after `first`, nightly features
    /// allowed, `target/cross` as the target directory, and no incremental
    /// caches (a cross build is a check, not an edit loop, and those
    /// caches take gigabytes per target).
    pub fn apply(&self, command: &mut Command, first: &[&Path], target_dir: &Path) {
        let mut path: Vec<&Path> = first.to_vec();
        path.push(&self.nightly.bin);
        let lib_dir = self.compiler.lib_dir();
        command
            .env("PATH", prepend_paths(&path, "PATH"))
            .env("RUSTC", self.compiler.rustc())
            .env(
                "LD_LIBRARY_PATH",
                prepend_paths(&[&lib_dir, &self.nightly.lib], "LD_LIBRARY_PATH"),
            )
            .env("RUSTC_BOOTSTRAP", "1")
            .env("CARGO_INCREMENTAL", "0")
            .env("CARGO_TARGET_DIR", cross_target_dir(target_dir))
            .env(
                "CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER",
                "x86_64-w64-mingw32-gcc",
            );
    }
}

/// Where cross builds put their artefacts (std included), apart from the
/// host's.
pub fn cross_target_dir(target_dir: &Path) -> PathBuf {
    target_dir.join("cross")
}

/// The cargo flags that build std for the target.
pub const BUILD_STD: [&str; 2] = ["-Z", "build-std=std,panic_abort"];

/// A wheel [`build`] wrote.
#[derive(Debug, Clone)]
pub struct BuiltWheel {
    /// The wheel file.
    pub path: PathBuf,
    /// The platform it was built for.
    pub platform: Platform,
    /// Its size in bytes.
    pub size: u64,
    /// How long maturin took.
    pub build_time: Duration,
}

impl fmt::Display for BuiltWheel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "wheel: {} ({}, built in {:.0} s)",
            self.path.display(),
            format_bytes(self.size),
            self.build_time.as_secs_f64()
        )
    }
}

/// Builds the wheel for `platform` into `target/wheels/<triple>/` and
/// returns where it is. maturin's and cargo's progress goes to standard
/// error.
pub fn build(platform: Platform, tools: &Tools) -> Result<BuiltWheel, DistError> {
    let out = tools.target_dir.join("wheels").join(platform.triple());
    remove_wheels(&out)?;
    let venv_bin = devkit::pyenv::venv_bin(&tools.venv);
    let mut maturin = Command::new(devkit::pyenv::venv_program(&tools.venv, "maturin"));
    maturin
        .current_dir(workspace_root())
        .args(["build", "--release", "--locked", "--target"])
        .arg(platform.triple())
        .arg("--out")
        .arg(&out)
        .args(maturin_flags(platform))
        .stdin(Stdio::null())
        .stdout(stderr_stdio())
        .stderr(Stdio::inherit());
    match &tools.cross {
        Some(cross) => {
            // maturin runs zig as `python -m ziglang`: the environment's
            // python must come first.
            cross.apply(&mut maturin, &[&venv_bin], &tools.target_dir);
            maturin.args(BUILD_STD);
        }
        None => {
            maturin.env("PATH", prepend_paths(&[&venv_bin], "PATH"));
        }
    }
    let started = Instant::now();
    step(&format!("maturin build for {platform}"), || {
        let status = maturin
            .status()
            .map_err(|e| DistError::io("starting maturin", e))?;
        if status.success() {
            Ok(())
        } else if platform.os() == Os::Windows {
            Err(DistError::WrapperDoesNotCompile {
                target: platform.triple().to_owned(),
            })
        } else {
            Err(DistError::tool(
                format!("maturin build for {platform}"),
                format!("{status} (its output is above)"),
            ))
        }
    })?;
    let build_time = started.elapsed();
    let path = match wheels_in(&out)?.as_slice() {
        [one] => one.clone(),
        found => {
            return Err(DistError::Unexpected(format!(
                "expected one wheel in {} after maturin, found {}",
                out.display(),
                found.len()
            )));
        }
    };
    let size = std::fs::metadata(&path)
        .map_err(|e| DistError::io(format!("reading {}", path.display()), e))?
        .len();
    Ok(BuiltWheel {
        path,
        platform,
        size,
        build_time,
    })
}

/// The tools for `platform`: cross ones unless it is `host`. Missing
/// Debian packages are named before anything is downloaded.
pub fn tools_for(
    platforms: &[Platform],
    host: Platform,
    target_dir: &Path,
    python: &Path,
) -> Result<Tools, DistError> {
    let mut packages: Vec<&str> = platforms
        .iter()
        .flat_map(|p| p.build_packages().iter().copied())
        .collect();
    packages.dedup();
    toolchain::require_packages(&packages, "linking the wheels asked for")?;
    let venv = toolchain::python_tools(target_dir, python)?;
    let cross = if platforms.iter().any(|&p| p != host) {
        let nightly = toolchain::nightly()?;
        let compiler = step("the cross compiler (Debian's rustc-web)", || {
            toolchain::cross_compiler(target_dir, &nightly)
        })?;
        Some(CrossTools { compiler, nightly })
    } else {
        None
    };
    Ok(Tools {
        target_dir: target_dir.to_path_buf(),
        venv,
        cross,
    })
}

/// The tools for building `platforms` on `host`.
pub fn tools(
    platforms: &[Platform],
    host: Platform,
    python: &Path,
    target_dir: &Path,
) -> Result<Tools, DistError> {
    tools_for(platforms, host, target_dir, python)
}

/// Builds `platform`'s wheel with `tools`, natively when it is `host`'s.
pub fn build_one(
    platform: Platform,
    host: Platform,
    tools: &Tools,
) -> Result<BuiltWheel, DistError> {
    if platform == host {
        let native = Tools {
            cross: None,
            ..tools.clone()
        };
        build(platform, &native)
    } else {
        build(platform, tools)
    }
}

/// The extra maturin flags for `platform`: zig links every target but
/// Windows, and glibc targets are tagged `manylinux2014`.
fn maturin_flags(platform: Platform) -> Vec<&'static str> {
    let mut flags = Vec::new();
    if platform.linked_by_zig() {
        flags.push("--zig");
    }
    if platform.os() == Os::Linux {
        flags.extend(["--compatibility", MANYLINUX]);
    }
    flags
}

/// The wrapper's wheels in `dir` (none if it does not exist).
pub fn wheels_in(dir: &Path) -> Result<Vec<PathBuf>, DistError> {
    let prefix = format!("{}-", DISTRIBUTION.replace('-', "_"));
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(DistError::io(format!("listing {}", dir.display()), e)),
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".whl"))
        })
        .collect();
    found.sort();
    Ok(found)
}

/// Removes the wrapper's wheels from `dir`, so that the one maturin writes
/// is the only one there.
fn remove_wheels(dir: &Path) -> Result<(), DistError> {
    for old in wheels_in(dir)? {
        std::fs::remove_file(&old)
            .map_err(|e| DistError::io(format!("removing {}", old.display()), e))?;
    }
    Ok(())
}

/// This process's standard error, for a child's standard output: progress
/// stays off the standard output, which carries the report.
pub fn stderr_stdio() -> Stdio {
    Stdio::from(std::io::stderr())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zig_links_all_but_windows_and_linux_is_manylinux2014() {
        assert_eq!(
            maturin_flags(Platform::LinuxAarch64),
            ["--zig", "--compatibility", MANYLINUX]
        );
        assert_eq!(maturin_flags(Platform::MacosArm64), ["--zig"]);
        assert!(maturin_flags(Platform::WindowsX86_64).is_empty());
    }
}
