//! Checking a wheel as built: its platform tags (the file name's, and the
//! `WHEEL` file's inside), its layout (the one executable, the metadata,
//! nothing else: no stray DLL), its binary as its platform's loader reads
//! it ([`inspect`](super::inspect)), and, for this machine's own platform,
//! `--version` of the binary pip installs into a fresh environment with
//! no Rust toolchain on `PATH`.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

use devkit::pyenv::{create_venv, install_wheel, run};
use devkit::rows::{Row, Verdict, write_rows};
use serde_json::Value;

use super::build::{BuiltWheel, DISTRIBUTION};
use super::error::DistError;
use super::inspect::binary_rows;
use super::platform::Platform;

/// The version the wheel must carry: the workspace's, which xtask shares.
const VERSION: &str = env!("CARGO_PKG_VERSION");

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
        writeln!(f, "== {}", self.wheel.platform)?;
        write_rows(f, &self.rows)?;
        writeln!(f, "{}", self.wheel)?;
        let failed = self.rows.iter().filter(|r| r.verdict == Verdict::Fail);
        write!(
            f,
            "verdict for {}: {} ({} checks, {} failed)",
            self.wheel.platform,
            if self.passed() { "PASS" } else { "FAIL" },
            self.rows.len(),
            failed.count()
        )
    }
}

/// Lists a wheel's members and its `WHEEL` file as JSON, and writes the
/// member named by the third argument to the path in the fourth.
const READ_WHEEL_SCRIPT: &str = "\
import json, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    names = z.namelist()
    wheel = [n for n in names if n.endswith('.dist-info/WHEEL')]
    text = z.read(wheel[0]).decode() if len(wheel) == 1 else ''
    if sys.argv[2] in names:
        with open(sys.argv[3], 'wb') as out:
            out.write(z.read(sys.argv[2]))
print(json.dumps({'names': names, 'wheel': text}))
";

/// What [`read_wheel`] found in a wheel.
#[derive(Debug, Clone)]
pub struct WheelContents {
    /// Every member's name.
    pub names: Vec<String>,
    /// The text of its `*.dist-info/WHEEL` (empty: none, or several).
    pub wheel_file: String,
    /// The executable, written out (`None`: the wheel has none).
    pub binary: Option<PathBuf>,
}

/// The executable's member name in the wheel.
fn executable_member(platform: Platform) -> String {
    format!(
        "{}-{VERSION}.data/scripts/{}",
        DISTRIBUTION.replace('-', "_"),
        platform.executable()
    )
}

/// Reads `wheel` with `python`'s zipfile, writing its executable to
/// `binary`.
pub fn read_wheel(
    python: &Path,
    wheel: &Path,
    platform: Platform,
    binary: &Path,
) -> Result<WheelContents, DistError> {
    let member = executable_member(platform);
    let output = run(
        Command::new(python)
            .args(["-c", READ_WHEEL_SCRIPT])
            .arg(wheel)
            .arg(&member)
            .arg(binary),
        &format!("reading {}", wheel.display()),
    )?;
    let value: Value = serde_json::from_str(output.trim())
        .map_err(|e| DistError::Unexpected(format!("reading {}: {e}", wheel.display())))?;
    let names = value["names"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    Ok(WheelContents {
        names,
        wheel_file: value["wheel"].as_str().unwrap_or_default().to_owned(),
        binary: binary.is_file().then(|| binary.to_path_buf()),
    })
}

/// Checks `wheel`: tags, layout, binary; for `host`'s own platform also
/// `--version` from a fresh environment made with `python`. Scratch files
/// go to `target_dir/wheel`.
pub fn check(
    wheel: BuiltWheel,
    host: Platform,
    python: &Path,
    target_dir: &Path,
) -> Result<WheelReport, DistError> {
    let scratch = target_dir
        .join("wheel")
        .join("check")
        .join(wheel.platform.triple());
    if scratch.exists() {
        std::fs::remove_dir_all(&scratch)
            .map_err(|e| DistError::io(format!("removing {}", scratch.display()), e))?;
    }
    std::fs::create_dir_all(&scratch)
        .map_err(|e| DistError::io(format!("creating {}", scratch.display()), e))?;
    let binary_path = scratch.join(wheel.platform.executable());
    let contents = read_wheel(python, &wheel.path, wheel.platform, &binary_path)?;
    let mut rows = vec![
        tags_row(&wheel, &contents.wheel_file),
        layout_row(wheel.platform, &contents.names),
    ];
    match &contents.binary {
        Some(binary) => {
            let data = std::fs::read(binary)
                .map_err(|e| DistError::io(format!("reading {}", binary.display()), e))?;
            rows.push(Row::info(
                "binary size",
                devkit::format::format_bytes(u64::try_from(data.len()).unwrap_or(u64::MAX)),
            ));
            rows.extend(binary_rows(wheel.platform, &data));
        }
        None => rows.push(Row::judged(
            "binary",
            false,
            format!("no {} in the wheel", executable_member(wheel.platform)),
        )),
    }
    if wheel.platform == host {
        let venv = scratch.join("venv");
        create_venv(python, &venv)?;
        let installed = install_wheel(&venv, &wheel.path)?;
        rows.push(version_row(&venv, &installed)?);
    } else {
        rows.push(Row::info(
            VERSION_CHECK,
            format!(
                "not run here: built for {}, this machine is {host} (`cargo xtask cross-check` runs what can run here)",
                wheel.platform
            ),
        ));
    }
    Ok(WheelReport { wheel, rows })
}

/// The platform tags of the file name, against the platform's, and
/// whether the `WHEEL` file inside lists the same.
fn tags_row(wheel: &BuiltWheel, wheel_file: &str) -> Row {
    let check = "platform tag";
    let name = wheel
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let Some(tags) = platform_tags(&name) else {
        return Row::judged(check, false, format!("{name} is not a wheel file name"));
    };
    let listed: Vec<&str> = wheel_file
        .lines()
        .filter_map(|l| l.strip_prefix("Tag: "))
        .filter_map(|t| t.rsplit('-').next())
        .collect();
    let expected = wheel.platform.wheel_tags();
    let detail = format!(
        "{} (WHEEL lists: {}; expected {})",
        tags.join("."),
        listed.join(", "),
        expected.join(".")
    );
    let agree = listed.len() == tags.len() && tags.iter().all(|t| listed.contains(&t.as_str()));
    Row::judged(check, agree && tags == expected, detail)
}

/// The wheel holds the executable under `.data/scripts/` and otherwise
/// only its `.dist-info` metadata: no library, no DLL, nothing else.
fn layout_row(platform: Platform, names: &[String]) -> Row {
    let check = "files in the wheel";
    let executable = executable_member(platform);
    let dist_info = format!("{}-{VERSION}.dist-info/", DISTRIBUTION.replace('-', "_"));
    let strays: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .filter(|n| *n != executable && !n.starts_with(&dist_info))
        .collect();
    let dlls: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .filter(|n| n.to_ascii_lowercase().ends_with(".dll"))
        .collect();
    let has_executable = names.contains(&executable);
    let has_record = names.contains(&format!("{dist_info}RECORD"));
    let ok = has_executable && has_record && strays.is_empty() && dlls.is_empty();
    let detail = if ok {
        format!(
            "{executable} and {} metadata files in {dist_info}",
            names.len() - 1
        )
    } else {
        format!(
            "executable {}, RECORD {}, other files: {}, DLLs: {}",
            if has_executable { "present" } else { "MISSING" },
            if has_record { "present" } else { "MISSING" },
            if strays.is_empty() {
                "none".to_owned()
            } else {
                strays.join(", ")
            },
            if dlls.is_empty() {
                "none".to_owned()
            } else {
                dlls.join(", ")
            }
        )
    };
    Row::judged(check, ok, detail)
}

/// The check [`version_row`] makes.
const VERSION_CHECK: &str = "--version from a fresh venv, no Rust on PATH";

/// `--version` of the installed binary, with the environment's `bin/`
/// first on `PATH` (as when it is activated) and every directory holding
/// `cargo`, `rustc` or `rustup` left out.
fn version_row(venv: &Path, binary: &Path) -> Result<Row, DistError> {
    let check = VERSION_CHECK;
    let inherited = std::env::var_os("PATH").unwrap_or_default();
    let (kept, dropped): (Vec<PathBuf>, Vec<PathBuf>) =
        std::env::split_paths(&inherited).partition(|dir| !holds_rust(dir));
    let path = std::env::join_paths(std::iter::once(devkit::pyenv::venv_bin(venv)).chain(kept))
        .map_err(|e| DistError::Unexpected(format!("building PATH: {e}")))?;
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
            let expected = format!("{DISTRIBUTION} {VERSION}");
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
        Err(e) => Row::judged(
            check,
            false,
            format!("{}; {without}", devkit::bins::error_chain(&e)),
        ),
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn wheel(name: &str, platform: Platform) -> BuiltWheel {
        BuiltWheel {
            path: PathBuf::from(name),
            platform,
            size: 0,
            build_time: Duration::ZERO,
        }
    }

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
    fn the_tags_must_be_the_platforms_and_agree_with_the_wheel_file() {
        let listed = "Wheel-Version: 1.0\nTag: py3-none-manylinux2014_x86_64\nTag: py3-none-manylinux_2_17_x86_64\n";
        let good = wheel(
            "iai_mcp_wrapper-1.0.0-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
            Platform::LinuxX86_64,
        );
        assert_eq!(tags_row(&good, listed).verdict, Verdict::Pass);
        let native = wheel(
            "iai_mcp_wrapper-1.0.0-py3-none-manylinux_2_34_x86_64.whl",
            Platform::LinuxX86_64,
        );
        let listed_native = "Tag: py3-none-manylinux_2_34_x86_64\n";
        assert_eq!(tags_row(&native, listed_native).verdict, Verdict::Fail);
        assert_eq!(tags_row(&good, listed_native).verdict, Verdict::Fail);
        let mac = wheel(
            "iai_mcp_wrapper-1.0.0-py3-none-macosx_11_0_arm64.whl",
            Platform::MacosArm64,
        );
        let listed_mac = "Tag: py3-none-macosx_11_0_arm64\n";
        assert_eq!(tags_row(&mac, listed_mac).verdict, Verdict::Pass);
        let intel_as_arm = wheel(
            "iai_mcp_wrapper-1.0.0-py3-none-macosx_10_12_x86_64.whl",
            Platform::MacosArm64,
        );
        let listed_intel = "Tag: py3-none-macosx_10_12_x86_64\n";
        assert_eq!(tags_row(&intel_as_arm, listed_intel).verdict, Verdict::Fail);
    }

    #[test]
    fn the_layout_is_the_executable_and_metadata_only() {
        let names = |extra: &[&str]| -> Vec<String> {
            let mut names: Vec<String> = [
                "iai_mcp_wrapper-1.0.0.data/scripts/iai-mcp-wrapper.exe",
                "iai_mcp_wrapper-1.0.0.dist-info/METADATA",
                "iai_mcp_wrapper-1.0.0.dist-info/WHEEL",
                "iai_mcp_wrapper-1.0.0.dist-info/RECORD",
            ]
            .map(str::to_owned)
            .to_vec();
            names.extend(extra.iter().map(|n| (*n).to_owned()));
            names
        };
        let windows = Platform::WindowsX86_64;
        assert_eq!(layout_row(windows, &names(&[])).verdict, Verdict::Pass);
        let with_dll = names(&["iai_mcp_wrapper-1.0.0.data/scripts/bcryptprimitives.dll"]);
        let row = layout_row(windows, &with_dll);
        assert_eq!(row.verdict, Verdict::Fail);
        assert!(row.detail.contains("bcryptprimitives.dll"), "{row:?}");
        assert_eq!(
            layout_row(Platform::LinuxAarch64, &names(&[])).verdict,
            Verdict::Fail,
            "a Linux wheel's executable has no .exe"
        );
    }

    #[test]
    fn a_directory_with_cargo_holds_rust() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!holds_rust(dir.path()));
        std::fs::write(dir.path().join("cargo"), "").unwrap();
        assert!(holds_rust(dir.path()));
    }
}
