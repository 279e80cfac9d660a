//! The Python wheel that carries the wrapper's binary, as users of iai-mcp
//! install it (`pip install`, beside `iai-pme`).
//!
//! [`build`] runs maturin (`pyproject.toml` at the workspace root) in a
//! virtual environment of its own under the target directory, with zig as
//! the linker for Linux targets, so that the binary asks for no glibc newer
//! than 2.17 (`manylinux2014`) whatever the build machine's is. [`check`]
//! then looks at the wheel as a user gets it: installed into a fresh
//! environment, its platform tags, the newest glibc its binary needs
//! ([`glibc`](super::glibc)), and `--version` run with no Rust toolchain on
//! `PATH`. `cargo xtask wheel` does both; `cargo xtask e2e` builds the
//! same way and names the wheel in [`WHEEL_ENV`] for the kit to install.

use std::ffi::OsString;
use std::fmt;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::glibc::{GlibcNeeds, GlibcVersion, needed_glibc};
use super::pyenv::{create_venv, ensure_venv, run};
use super::{Row, Verdict, write_rows};
use crate::bins::workspace_root;
use crate::error::HarnessError;
use crate::format::format_bytes;

/// The maturin release that builds the wheel.
pub const MATURIN: &str = "maturin==1.16.0";
/// The zig toolchain maturin links Linux targets with (PyPI's `ziglang`).
pub const ZIGLANG: &str = "ziglang==0.15.2";
/// The distribution's name on the package index, as in `pyproject.toml`.
pub const DISTRIBUTION: &str = "iai-mcp-wrapper";
/// The executable the wheel installs.
pub const EXECUTABLE: &str = "iai-mcp-wrapper";
/// The environment variable through which `cargo xtask e2e` tells the kit
/// which wheel to install and test.
pub const WHEEL_ENV: &str = "IAI_WRAPPER_WHEEL";
/// The manylinux policy Linux wheels are built for.
pub const MANYLINUX: &str = "manylinux2014";
/// The newest glibc that policy allows.
const GLIBC_CEILING: [u32; 2] = [2, 17];
/// The version the wheel must carry: the workspace's, which the harness
/// shares.
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// What to build, and where.
#[derive(Debug, Clone)]
pub struct WheelConfig {
    /// The workspace's target directory: the tools' environment goes to
    /// `wheel/venv` in it, the wheel to `wheels/<target>/`.
    pub target_dir: PathBuf,
    /// The Rust target triple to build for (default: this machine's).
    pub target: Option<String>,
    /// The Python interpreter for the environments (default: `python3`).
    pub python: Option<PathBuf>,
}

impl WheelConfig {
    /// The interpreter the environments are made with.
    fn interpreter(&self) -> PathBuf {
        self.python
            .clone()
            .unwrap_or_else(|| PathBuf::from("python3"))
    }
}

/// A wheel [`build`] wrote.
#[derive(Debug, Clone)]
pub struct BuiltWheel {
    /// The wheel file.
    pub path: PathBuf,
    /// The Rust target triple it was built for.
    pub target: String,
    /// Its size in bytes.
    pub size: u64,
    /// How long maturin took.
    pub build_time: Duration,
    /// How long installing maturin and zig took (`None`: reused).
    pub tools_installed_in: Option<Duration>,
}

impl fmt::Display for BuiltWheel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tools = match self.tools_installed_in {
            Some(d) => format!(
                "{MATURIN} and {ZIGLANG} installed in {:.0} s",
                d.as_secs_f64()
            ),
            None => "tools reused".to_owned(),
        };
        write!(
            f,
            "wheel: {} ({}, built in {:.0} s; {tools})",
            self.path.display(),
            format_bytes(self.size),
            self.build_time.as_secs_f64()
        )
    }
}

/// Builds the wheel for `cfg.target` with maturin and returns where it is.
/// maturin's and cargo's progress goes to standard error.
pub fn build(cfg: &WheelConfig) -> Result<BuiltWheel, HarnessError> {
    let target = match &cfg.target {
        Some(t) => t.clone(),
        None => host_triple()?,
    };
    let tools = cfg.target_dir.join("wheel").join("venv");
    let tools_installed_in = ensure_venv(
        &tools,
        || Ok(cfg.interpreter()),
        &[MATURIN, ZIGLANG],
        "installing maturin and zig",
    )?;
    let out = cfg.target_dir.join("wheels").join(&target);
    remove_wheels(&out)?;
    let started = Instant::now();
    let mut maturin = Command::new(tools.join("bin").join("maturin"));
    maturin
        .current_dir(workspace_root())
        // maturin runs zig as `python -m ziglang`: the environment's python.
        .env("PATH", path_with_first(&tools.join("bin")))
        .args(["build", "--release", "--locked", "--target", &target])
        .arg("--out")
        .arg(&out)
        .args(linux_flags(&target))
        .stdin(Stdio::null())
        .stdout(stderr_stdio()?)
        .stderr(Stdio::inherit());
    let status = maturin.status().map_err(|source| HarnessError::Spawn {
        program: "maturin".to_owned(),
        source,
    })?;
    if !status.success() {
        return Err(HarnessError::Build {
            package: DISTRIBUTION.to_owned(),
            detail: format!("maturin build exited with {status} (its output is above)"),
        });
    }
    let build_time = started.elapsed();
    let path = match wheels_in(&out)?.as_slice() {
        [one] => one.clone(),
        found => {
            return Err(HarnessError::Build {
                package: DISTRIBUTION.to_owned(),
                detail: format!(
                    "expected one wheel in {} after maturin, found {}",
                    out.display(),
                    found.len()
                ),
            });
        }
    };
    let size = std::fs::metadata(&path)
        .map_err(|e| HarnessError::io(format!("reading {}", path.display()), e))?
        .len();
    Ok(BuiltWheel {
        path,
        target,
        size,
        build_time,
        tools_installed_in,
    })
}

/// The extra maturin flags for `target`: a glibc target is linked by zig
/// against glibc 2.17 and tagged `manylinux2014`.
fn linux_flags(target: &str) -> Vec<&'static str> {
    if target.ends_with("-linux-gnu") {
        vec!["--zig", "--compatibility", MANYLINUX]
    } else {
        Vec::new()
    }
}

/// What [`check`] found, with the wheel it looked at.
#[derive(Debug, Clone)]
pub struct WheelReport {
    /// The wheel.
    pub wheel: BuiltWheel,
    /// One row per property, in the order checked.
    pub rows: Vec<Row>,
}

impl WheelReport {
    /// Whether no check failed.
    pub fn passed(&self) -> bool {
        self.rows.iter().all(|r| r.verdict != Verdict::Fail)
    }
}

impl fmt::Display for WheelReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_rows(f, &self.rows)?;
        writeln!(f, "{}", self.wheel)?;
        let failed = self.rows.iter().filter(|r| r.verdict == Verdict::Fail);
        write!(
            f,
            "verdict: {} ({} checks, {} failed)",
            if self.passed() { "PASS" } else { "FAIL" },
            self.rows.len(),
            failed.count()
        )
    }
}

/// Installs `wheel` into a fresh environment (`wheel/check-venv` in the
/// target directory, made anew each time) and checks what a user gets:
/// the platform tags, the newest glibc the installed binary needs, and
/// that it answers `--version` with no Rust toolchain on `PATH`. A wheel
/// for another platform, which pip will not install here, is unpacked by
/// pip into a directory of that environment instead and not run.
pub fn check(wheel: BuiltWheel, cfg: &WheelConfig) -> Result<WheelReport, HarnessError> {
    let venv = cfg.target_dir.join("wheel").join("check-venv");
    if venv.exists() {
        std::fs::remove_dir_all(&venv)
            .map_err(|e| HarnessError::io(format!("removing {}", venv.display()), e))?;
    }
    create_venv(&cfg.interpreter(), &venv)?;
    let host = host_triple()?;
    let runs_here = host == wheel.target;
    let (binary, site) = if runs_here {
        (install(&venv, &wheel.path)?, None)
    } else {
        let site = venv.join("foreign");
        (unpack(&venv, &wheel.path, &site)?, Some(site))
    };
    let wheel_file = installed_wheel_file(&venv, site.as_deref())?;
    let version = if runs_here {
        version_row(&venv, &binary)?
    } else {
        Row::info(
            VERSION_CHECK,
            format!(
                "not run: built for {}, this machine is {host}",
                wheel.target
            ),
        )
    };
    let rows = vec![
        tags_row(&wheel, &wheel_file),
        glibc_row(&wheel.target, &binary)?,
        version,
    ];
    Ok(WheelReport { wheel, rows })
}

/// Prints the `WHEEL` file of the distribution its first argument names,
/// found on the paths given after it (default: the interpreter's own).
const WHEEL_FILE_SCRIPT: &str = "\
import importlib.metadata as m, sys
where = {'path': sys.argv[2:]} if len(sys.argv) > 2 else {}
for d in m.distributions(name=sys.argv[1], **where):
    print(d.read_text('WHEEL'))
";

/// What pip put in `*.dist-info/WHEEL` of the installed distribution (in
/// `site` if given, else where the environment's python finds it).
fn installed_wheel_file(venv: &Path, site: Option<&Path>) -> Result<String, HarnessError> {
    let mut python = Command::new(venv.join("bin").join("python"));
    python
        .args(["-c", WHEEL_FILE_SCRIPT, DISTRIBUTION])
        .args(site);
    run(&mut python, "reading the installed wheel's WHEEL file")
}

/// Unpacks a wheel for another platform as pip would install it, into
/// `dir` (pip's `--target`, with the wheel's own platform tags), and
/// returns the executable it put in `dir/bin`.
fn unpack(venv: &Path, wheel: &Path, dir: &Path) -> Result<PathBuf, HarnessError> {
    let name = wheel.file_name().unwrap_or_default().to_string_lossy();
    let tags = platform_tags(&name)
        .ok_or_else(|| HarnessError::Scenario(format!("{name} is not a wheel file name")))?;
    let mut pip = Command::new(venv.join("bin").join("python"));
    pip.args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
    ])
    .args(["--no-index", "--no-deps", "--only-binary=:all:"]);
    for tag in &tags {
        pip.args(["--platform", tag]);
    }
    pip.arg("--target").arg(dir).arg(wheel);
    run(
        &mut pip,
        &format!("unpacking {name} into {}", dir.display()),
    )?;
    let binary = dir.join("bin").join(EXECUTABLE);
    if binary.is_file() {
        Ok(binary)
    } else {
        Err(HarnessError::Scenario(format!(
            "unpacking {name} put no {EXECUTABLE} in {}",
            dir.join("bin").display()
        )))
    }
}

/// Installs `wheel` (alone, from the file) into the environment `venv`,
/// replacing any copy of the same version, and returns the executable it
/// put in the environment's `bin/`.
pub fn install(venv: &Path, wheel: &Path) -> Result<PathBuf, HarnessError> {
    run(
        Command::new(venv.join("bin").join("python"))
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
    let binary = venv.join("bin").join(EXECUTABLE);
    if binary.is_file() {
        Ok(binary)
    } else {
        Err(HarnessError::Scenario(format!(
            "installing {} put no {EXECUTABLE} in {}",
            wheel.display(),
            venv.join("bin").display()
        )))
    }
}

/// The platform tags of the file name, and whether they are the
/// `manylinux2014` ones a glibc target must have and the installed
/// `WHEEL` file lists the same.
fn tags_row(wheel: &BuiltWheel, installed_wheel_file: &str) -> Row {
    let check = "platform tag";
    let name = wheel
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let Some(tags) = platform_tags(&name) else {
        return Row::judged(check, false, format!("{name} is not a wheel file name"));
    };
    let listed: Vec<&str> = installed_wheel_file
        .lines()
        .filter_map(|l| l.strip_prefix("Tag: "))
        .filter_map(|t| t.rsplit('-').next())
        .collect();
    let detail = format!(
        "{} (installed WHEEL: {})",
        tags.join("."),
        listed.join(", ")
    );
    let agree = listed.len() == tags.len() && tags.iter().all(|t| listed.contains(&t.as_str()));
    if !wheel.target.ends_with("-linux-gnu") {
        return Row::judged(check, agree, detail);
    }
    let arch = arch_of(&wheel.target);
    let expected = [
        format!("manylinux2014_{arch}"),
        format!("manylinux_2_17_{arch}"),
    ];
    let ok = agree && expected.iter().all(|t| tags.contains(t));
    Row::judged(check, ok, detail)
}

/// The newest glibc the installed binary needs, against 2.17.
fn glibc_row(target: &str, binary: &Path) -> Result<Row, HarnessError> {
    let check = "newest glibc the binary needs";
    let ceiling = GlibcVersion::new(&GLIBC_CEILING);
    let size = std::fs::metadata(binary)
        .map_err(|e| HarnessError::io(format!("reading {}", binary.display()), e))?
        .len();
    let size = format_bytes(size);
    Ok(match needed_glibc(binary)? {
        GlibcNeeds::Elf(Some(newest)) => Row::judged(
            check,
            newest <= ceiling,
            format!("GLIBC_{newest} (at most {ceiling} allowed); binary {size}"),
        ),
        GlibcNeeds::Elf(None) => Row::judged(
            check,
            true,
            format!("none (no glibc symbol versions); binary {size}"),
        ),
        GlibcNeeds::NotElf => Row::info(
            check,
            format!("not an ELF binary ({target}): no glibc; binary {size}"),
        ),
    })
}

/// The check [`version_row`] makes.
const VERSION_CHECK: &str = "--version from a fresh venv, no Rust on PATH";

/// `--version` of the installed binary, with the environment's `bin/`
/// first on `PATH` (as when it is activated) and every directory holding
/// `cargo`, `rustc` or `rustup` left out.
fn version_row(venv: &Path, binary: &Path) -> Result<Row, HarnessError> {
    let check = VERSION_CHECK;
    let inherited = std::env::var_os("PATH").unwrap_or_default();
    let (kept, dropped): (Vec<PathBuf>, Vec<PathBuf>) =
        std::env::split_paths(&inherited).partition(|dir| !holds_rust(dir));
    let path = std::env::join_paths(std::iter::once(venv.join("bin")).chain(kept))
        .map_err(|e| HarnessError::Scenario(format!("building PATH: {e}")))?;
    let mut command = Command::new(binary);
    command.arg("--version").env_clear().env("PATH", &path);
    if let Some(home) = std::env::var_os("HOME") {
        command.env("HOME", home);
    }
    let output = run(&mut command, &format!("`{} --version`", binary.display()));
    let mut dropped: Vec<String> = dropped.iter().map(|d| d.display().to_string()).collect();
    dropped.dedup();
    let without = if dropped.is_empty() {
        "no Rust directory was on PATH".to_owned()
    } else {
        format!("PATH without {}", dropped.join(", "))
    };
    Ok(match output {
        Ok(stdout) => {
            let said = stdout.trim().to_owned();
            // `iai-mcp-wrapper 1.0.0`, then what release it stands in for.
            let expected = format!("{EXECUTABLE} {VERSION}");
            let names_the_release = said
                .strip_prefix(&expected)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(','));
            if names_the_release {
                Row::judged(check, true, format!("{said:?}; {without}"))
            } else {
                let why = format!("{said:?}, expected \"{expected}\" first; {without}");
                Row::judged(check, false, why)
            }
        }
        Err(e) => Row::judged(check, false, format!("{e}; {without}")),
    })
}

/// Whether `dir` holds a Rust toolchain's programs.
fn holds_rust(dir: &Path) -> bool {
    ["cargo", "rustc", "rustup"]
        .iter()
        .any(|p| dir.join(p).is_file())
}

/// The platform tags of a wheel file name
/// (`name-version[-build]-python-abi-platform.whl`), split at the dots.
fn platform_tags(file_name: &str) -> Option<Vec<String>> {
    let stem = file_name.strip_suffix(".whl")?;
    let parts: Vec<&str> = stem.split('-').collect();
    if parts.len() < 5 {
        return None;
    }
    let platform = parts.last()?;
    Some(platform.split('.').map(str::to_owned).collect())
}

/// The architecture of a target triple (`x86_64` of
/// `x86_64-unknown-linux-gnu`), as wheel tags name it.
fn arch_of(target: &str) -> &str {
    target.split('-').next().unwrap_or(target)
}

/// This machine's target triple, as `cargo -vV` says it (`host: ...`).
pub fn host_triple() -> Result<String, HarnessError> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let output = run(
        Command::new(&cargo).arg("-vV"),
        "asking cargo for the host triple",
    )?;
    output
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(|t| t.trim().to_owned())
        .ok_or_else(|| HarnessError::Scenario(format!("`cargo -vV` named no host:\n{output}")))
}

/// The wrapper's wheels in `dir` (none if it does not exist).
fn wheels_in(dir: &Path) -> Result<Vec<PathBuf>, HarnessError> {
    let prefix = format!("{}-", DISTRIBUTION.replace('-', "_"));
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(HarnessError::io(format!("listing {}", dir.display()), e)),
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
fn remove_wheels(dir: &Path) -> Result<(), HarnessError> {
    for old in wheels_in(dir)? {
        std::fs::remove_file(&old)
            .map_err(|e| HarnessError::io(format!("removing {}", old.display()), e))?;
    }
    Ok(())
}

/// The inherited `PATH` with `first` before it.
fn path_with_first(first: &Path) -> OsString {
    let inherited = std::env::var_os("PATH").unwrap_or_default();
    let dirs = std::iter::once(first.to_path_buf()).chain(std::env::split_paths(&inherited));
    std::env::join_paths(dirs).unwrap_or(inherited)
}

/// This process's standard error, for a child's standard output: progress
/// stays off the standard output, which carries the report.
fn stderr_stdio() -> Result<Stdio, HarnessError> {
    std::io::stderr()
        .as_fd()
        .try_clone_to_owned()
        .map(Stdio::from)
        .map_err(|e| HarnessError::io("duplicating standard error", e))
}

/// The workspace's root directory, where `pyproject.toml` is.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platform_tags_come_from_the_file_name() {
        let name = "iai_mcp_wrapper-1.0.0-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl";
        assert_eq!(
            platform_tags(name).unwrap(),
            ["manylinux2014_x86_64", "manylinux_2_17_x86_64"]
        );
        assert_eq!(platform_tags("iai_mcp_wrapper-1.0.0.tar.gz"), None);
        assert_eq!(platform_tags("short-1.0.whl"), None);
    }

    #[test]
    fn a_glibc_wheel_needs_both_manylinux2014_tags() {
        let wheel = |name: &str| BuiltWheel {
            path: PathBuf::from(name),
            target: "x86_64-unknown-linux-gnu".to_owned(),
            size: 0,
            build_time: Duration::ZERO,
            tools_installed_in: None,
        };
        let listed = "Wheel-Version: 1.0\nTag: py3-none-manylinux2014_x86_64\nTag: py3-none-manylinux_2_17_x86_64\n";
        let good =
            wheel("iai_mcp_wrapper-1.0.0-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl");
        assert_eq!(tags_row(&good, listed).verdict, Verdict::Pass);
        let native = wheel("iai_mcp_wrapper-1.0.0-py3-none-manylinux_2_34_x86_64.whl");
        let listed_native = "Tag: py3-none-manylinux_2_34_x86_64\n";
        assert_eq!(tags_row(&native, listed_native).verdict, Verdict::Fail);
        assert_eq!(tags_row(&good, listed_native).verdict, Verdict::Fail);
    }

    #[test]
    fn only_glibc_targets_are_linked_by_zig() {
        assert_eq!(
            linux_flags("aarch64-unknown-linux-gnu"),
            ["--zig", "--compatibility", MANYLINUX]
        );
        assert!(linux_flags("aarch64-apple-darwin").is_empty());
        assert_eq!(arch_of("aarch64-apple-darwin"), "aarch64");
    }

    #[test]
    fn a_directory_with_cargo_holds_rust() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!holds_rust(dir.path()));
        std::fs::write(dir.path().join("cargo"), "").unwrap();
        assert!(holds_rust(dir.path()));
    }
}
