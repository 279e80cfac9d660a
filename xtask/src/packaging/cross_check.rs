//! Running a cross-built wrapper on this machine, where an emulator can:
//! arm64 Linux under qemu-user (`qemu-aarch64-static -L
//! /usr/aarch64-linux-gnu`), Windows under Wine (with the test-only DLL
//! of [`super::winprng`]). macOS binaries cannot run here; the
//! wheel check reads them instead.
//!
//! The binary is the one in the wheel `cargo xtask wheel` builds, run
//! against the native fake daemon through the harness's `smoke` scenario
//! (`--wrapper-cmd` with the emulator first); under qemu the wrapper's own
//! real-process tests then run with that binary too (`IAI_WRAPPER_BIN`
//! and `IAI_WRAPPER_RUNNER`), all of them: the tests that look at the
//! binary's own path compare against `IAI_WRAPPER_BIN`, which qemu-user
//! reports as the running program. Under Wine the wrapper's unit tests run
//! too, built for Windows: they need no process of the workspace, while
//! its integration tests drive native helpers (the fake daemon, the
//! harness) that are not built for Windows here.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use devkit::bins::{self, Profile};
use devkit::rows::{Row, Verdict, write_rows};

use super::build::{self, BUILD_STD, CrossTools, cross_target_dir};
use super::check::read_wheel;
use super::error::DistError;
use super::inspect::pe;
use super::platform::Platform;
use super::progress::step;
use super::{toolchain, winprng};

/// The qemu-user runner for arm64 Linux binaries, with the arm64 glibc
/// Debian's cross compiler package brings.
pub const QEMU_RUNNER: &str = "qemu-aarch64-static -L /usr/aarch64-linux-gnu";

/// The rows of a cross-check, as one table.
#[derive(Debug, Clone)]
pub struct CrossReport {
    /// One row per step, in the order run.
    pub rows: Vec<Row>,
}

impl CrossReport {
    /// Whether no step failed.
    pub fn passed(&self) -> bool {
        self.rows.iter().all(|r| r.verdict != Verdict::Fail)
    }
}

impl fmt::Display for CrossReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_rows(f, &self.rows)?;
        write!(
            f,
            "verdict: {} ({} steps)",
            if self.passed() { "PASS" } else { "FAIL" },
            self.rows.len()
        )
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct CrossCheckConfig {
    /// The platform whose binary runs here.
    pub platform: Platform,
    /// Only the std-only probe (the toolchain, linker and runner), not the
    /// wrapper: for Windows until the wrapper builds there.
    pub probe_only: bool,
    /// Skip the wrapper's tests under the emulator (smoke only).
    pub no_tests: bool,
    /// The Python interpreter for the build tools.
    pub python: PathBuf,
    /// The workspace's target directory.
    pub target_dir: PathBuf,
}

/// Runs what can run here for `cfg.platform` and returns a row per step.
pub fn cross_check(cfg: &CrossCheckConfig, host: Platform) -> Result<Vec<Row>, DistError> {
    let Some(packages) = cfg.platform.run_packages() else {
        return Err(DistError::Unexpected(format!(
            "nothing here runs {} binaries: `cargo xtask wheel --target {}` checks its wheel by reading the binary",
            cfg.platform, cfg.platform
        )));
    };
    toolchain::require_packages(packages, &format!("running {} binaries here", cfg.platform))?;
    let scratch = cfg
        .target_dir
        .join("cross-check")
        .join(cfg.platform.triple());
    std::fs::create_dir_all(&scratch)
        .map_err(|e| DistError::io(format!("creating {}", scratch.display()), e))?;
    let tools = build::tools(&[cfg.platform], host, &cfg.python, &cfg.target_dir)?;
    let mut rows = Vec::new();
    match cfg.platform {
        Platform::WindowsX86_64 => {
            let cross = tools.cross.as_ref().ok_or_else(|| {
                DistError::Unexpected("Windows binaries are always cross-built here".to_owned())
            })?;
            let dll = step("the test-only bcryptprimitives.dll", || {
                winprng::build_dll(&cfg.target_dir)
            })?;
            rows.extend(windows_probe(cfg, cross, &dll, &scratch)?);
            if !cfg.probe_only {
                let wrapper = wrapper_from_wheel(cfg, host, &tools, &scratch)?;
                let staged = winprng::stage(&wrapper, &dll, &scratch.join("run"))?;
                let prefix = winprng::prefix(&cfg.target_dir);
                // `install` runs in the profile of a Wine user of its own,
                // removed afterwards: Wine sets USERPROFILE from the user.
                let profile = winprng::ScratchUser::new(&prefix)?;
                let mut words = profile.words();
                words.extend(winprng::runner_words(&prefix, &staged));
                let layout = ProfileSmoke {
                    dir: profile.dir(),
                    layout: "windows",
                };
                let row = smoke(&words, "tcp", "under Wine", Some(&layout));
                profile.remove()?;
                rows.push(row?);
                if !cfg.no_tests {
                    rows.push(windows_unit_tests(cfg, cross, &dll, &scratch)?);
                }
            }
        }
        Platform::LinuxAarch64 => {
            let wrapper = wrapper_from_wheel(cfg, host, &tools, &scratch)?;
            let mut words: Vec<OsString> =
                QEMU_RUNNER.split_whitespace().map(OsString::from).collect();
            words.push(wrapper.clone().into_os_string());
            rows.push(smoke(&words, "unix", "under qemu-user", None)?);
            if !cfg.no_tests {
                rows.push(wrapper_tests(&wrapper)?);
            }
        }
        _ => {
            let wrapper = wrapper_from_wheel(cfg, host, &tools, &scratch)?;
            rows.push(smoke(
                &[wrapper.into_os_string()],
                "unix",
                "natively",
                None,
            )?);
        }
    }
    Ok(rows)
}

/// Builds the wheel for the platform and writes its executable to
/// `scratch`, ready to run.
fn wrapper_from_wheel(
    cfg: &CrossCheckConfig,
    host: Platform,
    tools: &build::Tools,
    scratch: &Path,
) -> Result<PathBuf, DistError> {
    let built = build::build_one(cfg.platform, host, tools)?;
    let binary = scratch.join(cfg.platform.executable());
    let python = devkit::pyenv::venv_python(&tools.venv);
    let contents = read_wheel(&python, &built.path, cfg.platform, &binary)?;
    let binary = contents.binary.ok_or_else(|| {
        DistError::Unexpected(format!("{} holds no executable", built.path.display()))
    })?;
    make_executable(&binary)?;
    Ok(binary)
}

/// Sets the executable bits zip extraction leaves off (Unix's mode bits:
/// this runs on the Linux machine that cross-checks).
#[cfg(unix)]
fn make_executable(path: &Path) -> Result<(), DistError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| DistError::io(format!("making {} executable", path.display()), e))
}

/// No executable bits to set where there are no mode bits.
#[cfg(not(unix))]
fn make_executable(_path: &Path) -> Result<(), DistError> {
    Ok(())
}

/// A command line for the harness's `--wrapper-cmd`: each word in single
/// quotes.
fn shell_line(words: &[OsString]) -> String {
    words
        .iter()
        .map(|w| {
            let text = w.to_string_lossy();
            // `NAME=value` words stay bare so the harness reads them as
            // environment settings; their values here hold no spaces.
            if text.contains('=') && !text.contains(' ') && !text.starts_with('/') {
                text.into_owned()
            } else {
                format!("'{}'", text.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The scratch profile a smoke run tries `install` in, when the harness's
/// own temporary one will not do.
struct ProfileSmoke {
    /// The directory, as this machine names it.
    dir: PathBuf,
    /// Whose layout (`--profile-layout`).
    layout: &'static str,
}

/// Runs the harness's smoke scenario with the wrapper command `words`
/// over `transport` (with `install` in `profile`); its report goes to
/// standard output.
fn smoke(
    words: &[OsString],
    transport: &str,
    how: &str,
    profile: Option<&ProfileSmoke>,
) -> Result<Row, DistError> {
    let built = step("building the harness and the fake daemon", || {
        bins::cargo_build(&[bins::FAKE_DAEMON, bins::HARNESS], &Profile::Dev, true)
            .map_err(DistError::from)
    })?;
    let line = shell_line(words);
    let mut harness = Command::new(&built[1]);
    harness.args([
        "smoke",
        "--json",
        "--transport",
        transport,
        "--wrapper-cmd",
        &line,
    ]);
    if let Some(profile) = profile {
        harness
            .arg("--profile-dir")
            .arg(&profile.dir)
            .args(["--profile-layout", profile.layout]);
    }
    let output = step(&format!("smoke run {how}"), || {
        harness
            .env(bins::FAKE_DAEMON.env_override, &built[0])
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
            .map_err(|e| DistError::io("starting the harness", e))
    })?;
    let check = format!("smoke {how} ({transport})");
    // The harness exits 0 on another wrapper command (reported on, not
    // judged): its JSON report's `passed` is the verdict. A run of the
    // scenario that could not be carried out exits 2 with no report.
    let stdout = String::from_utf8_lossy(&output.stdout);
    let Ok(report) = serde_json::from_str::<serde_json::Value>(&stdout) else {
        return Ok(Row::judged(
            check,
            false,
            format!(
                "harness smoke --wrapper-cmd {line}: {} with no report",
                output.status
            ),
        ));
    };
    let checks: Vec<String> = report["checks"]
        .as_array()
        .map(|checks| {
            checks
                .iter()
                .map(|c| {
                    let held = if c["failure"].is_null() {
                        "ok"
                    } else {
                        "FAILED"
                    };
                    format!("{held}: {}", c["figure"].as_str().unwrap_or_default())
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(Row::judged(
        check,
        report["passed"] == true,
        format!(
            "{}\n{}",
            report["wrapper"].as_str().unwrap_or(&line),
            checks.join("\n")
        ),
    ))
}

/// The wrapper's integration tests with `wrapper` behind the qemu runner.
fn wrapper_tests(wrapper: &Path) -> Result<Row, DistError> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let mut command = Command::new(cargo);
    command
        .arg("test")
        .arg("--locked")
        .arg("--manifest-path")
        .arg(bins::workspace_root().join("Cargo.toml"))
        .args(["-p", "iai-mcp-wrapper", "--tests", "--no-fail-fast"])
        .env(bins::WRAPPER.env_override, wrapper)
        .env(bins::WRAPPER_RUNNER_ENV, QEMU_RUNNER)
        .stdin(Stdio::null())
        .stdout(build::stderr_stdio());
    let status = step("the wrapper's tests under qemu-user", || {
        command
            .status()
            .map_err(|e| DistError::io("starting cargo test", e))
    })?;
    Ok(Row::judged(
        "the wrapper's tests under qemu-user",
        status.success(),
        format!("cargo test -p iai-mcp-wrapper --tests (every test, none skipped): {status}"),
    ))
}

/// The wrapper's unit tests built for Windows with the cross tools, then
/// run under Wine beside the test-only DLL, every one of them (those gated
/// off Windows with `cfg` are not compiled for it); the row gives libtest's
/// count.
fn windows_unit_tests(
    cfg: &CrossCheckConfig,
    cross: &CrossTools,
    dll: &Path,
    scratch: &Path,
) -> Result<Row, DistError> {
    const CHECK: &str = "the wrapper's unit tests under Wine";
    let exe = step("the wrapper's unit tests built for Windows", || {
        build_unit_tests(cfg.platform, cross, &cfg.target_dir)
    })?;
    let staged = winprng::stage(&exe, dll, &scratch.join("unit-tests"))?;
    let mut command = winprng::command(&winprng::prefix(&cfg.target_dir), &staged);
    let output = step(CHECK, || {
        command
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
            .map_err(|e| DistError::io(format!("starting {}", winprng::WINE64), e))
    })?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let failures: Vec<&str> = stdout
        .lines()
        .filter(|line| line.starts_with("test ") && line.ends_with(" FAILED"))
        .collect();
    let summary = stdout
        .lines()
        .rev()
        .find_map(|line| line.strip_prefix("test result: "))
        .map(str::to_owned);
    let Some(summary) = summary else {
        return Ok(Row::judged(
            CHECK,
            false,
            format!(
                "{}: {} with no libtest summary; stdout ends {:?}",
                staged.display(),
                output.status,
                devkit::format::last_lines(&stdout, 10, "\n")
            ),
        ));
    };
    let mut detail = vec![format!(
        "{summary} (cargo test -p iai-mcp-wrapper --lib, built for {}; none skipped under Wine)",
        cfg.platform
    )];
    detail.extend(failures.iter().map(|line| (*line).to_owned()));
    Ok(Row::judged(
        CHECK,
        output.status.success() && failures.is_empty(),
        detail.join("\n"),
    ))
}

/// Profile settings for the unit tests' build for another target: no
/// optimisation and no debug information anywhere (the workspace's dev
/// profile optimises its dependencies and the harness, which pays off for
/// tests run often here, not for one run under an emulator), so that the
/// build costs minutes less.
const UNIT_TEST_PROFILE: [&str; 5] = [
    "profile.dev.debug=false",
    "profile.dev.package.\"*\".opt-level=0",
    "profile.dev.package.iai-mcp-wrapper.opt-level=0",
    "profile.dev.package.harness.opt-level=0",
    "profile.dev.package.kits.opt-level=0",
];

/// Builds the wrapper's unit tests for `platform` with the cross tools
/// (cargo's messages read for the test executable) and returns it.
fn build_unit_tests(
    platform: Platform,
    cross: &CrossTools,
    target_dir: &Path,
) -> Result<PathBuf, DistError> {
    let mut cargo = Command::new(cross.nightly.bin.join("cargo"));
    cargo
        .arg("test")
        .arg("--manifest-path")
        .arg(bins::workspace_root().join("Cargo.toml"))
        .args(["-p", "iai-mcp-wrapper", "--lib", "--no-run", "--locked"])
        .args(["--target", platform.triple()])
        .args(BUILD_STD)
        .args(["--message-format", "json-render-diagnostics"])
        .stdin(Stdio::null())
        .stderr(Stdio::inherit());
    for setting in UNIT_TEST_PROFILE {
        cargo.args(["--config", setting]);
    }
    cross.apply(&mut cargo, &[], target_dir);
    let output = cargo
        .output()
        .map_err(|e| DistError::io("starting cargo for the unit tests", e))?;
    if !output.status.success() {
        return Err(DistError::tool(
            format!("building the wrapper's unit tests for {platform}"),
            format!("{} (cargo's output is above)", output.status),
        ));
    }
    test_executable(&String::from_utf8_lossy(&output.stdout)).ok_or_else(|| {
        DistError::Unexpected(format!(
            "cargo named no unit-test executable of iai-mcp-wrapper for {platform}"
        ))
    })
}

/// The executable of the library's unit tests among cargo's JSON messages.
fn test_executable(messages: &str) -> Option<PathBuf> {
    messages
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["profile"]["test"] == true)
        .filter(|m| {
            m["target"]["kind"]
                .as_array()
                .is_some_and(|kinds| kinds.iter().any(|k| k == "lib"))
        })
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
}

/// Builds the std-only probe for Windows with the cross tools, reads its
/// imports, and runs it under Wine beside the DLL.
fn windows_probe(
    cfg: &CrossCheckConfig,
    cross: &CrossTools,
    dll: &Path,
    scratch: &Path,
) -> Result<Vec<Row>, DistError> {
    let exe = step("the std-only probe for Windows", || {
        build_probe(cfg.platform, cross, &cfg.target_dir)
    })?;
    let data =
        std::fs::read(&exe).map_err(|e| DistError::io(format!("reading {}", exe.display()), e))?;
    let mut rows: Vec<Row> = pe::rows(cfg.platform, &data)
        .into_iter()
        .map(|row| Row {
            check: format!("probe: {}", row.check),
            ..row
        })
        .collect();
    let staged = winprng::stage(&exe, dll, &scratch.join("probe"))?;
    let prefix = winprng::prefix(&cfg.target_dir);
    let output = step(
        "the probe under Wine (the first run makes the Wine prefix)",
        || {
            winprng::command(&prefix, &staged)
                .stdin(Stdio::null())
                .output()
                .map_err(|e| DistError::io(format!("starting {}", winprng::WINE64), e))
        },
    )?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let ran = output.status.success() && stdout.starts_with("probe ok: windows x86_64");
    rows.push(Row::judged(
        "probe under Wine",
        ran,
        if ran {
            stdout.trim().to_owned()
        } else {
            format!(
                "{}; stdout {:?}; stderr {:?}",
                output.status,
                stdout.trim(),
                String::from_utf8_lossy(&output.stderr).trim()
            )
        },
    ));
    Ok(rows)
}

/// The probe's source (`xtask/assets/probe.rs`).
const PROBE_SOURCE: &str = include_str!("../../assets/probe.rs");

/// Builds the probe for `platform` as a package of its own under the
/// target directory, with the cross tools, and returns the executable.
fn build_probe(
    platform: Platform,
    cross: &CrossTools,
    target_dir: &Path,
) -> Result<PathBuf, DistError> {
    let package = target_dir.join("cross-probe");
    let src = package.join("src");
    std::fs::create_dir_all(&src)
        .map_err(|e| DistError::io(format!("creating {}", src.display()), e))?;
    let manifest = "[package]\nname = \"probe\"\nversion = \"0.1.0\"\nedition = \"2024\"\npublish = false\n\n[workspace]\n\n[profile.release]\npanic = \"abort\"\n";
    for (path, text) in [
        (package.join("Cargo.toml"), manifest),
        (src.join("main.rs"), PROBE_SOURCE),
    ] {
        std::fs::write(&path, text)
            .map_err(|e| DistError::io(format!("writing {}", path.display()), e))?;
    }
    let mut cargo = Command::new(cross.nightly.bin.join("cargo"));
    cargo
        .arg("build")
        .arg("--manifest-path")
        .arg(package.join("Cargo.toml"))
        .args(["--release", "--target", platform.triple()])
        .args(BUILD_STD)
        .stdin(Stdio::null())
        .stdout(build::stderr_stdio());
    cross.apply(&mut cargo, &[], target_dir);
    let status = cargo
        .status()
        .map_err(|e| DistError::io("starting cargo for the probe", e))?;
    if !status.success() {
        return Err(DistError::tool(
            format!("building the probe for {platform}"),
            format!("{status} (cargo's output is above)"),
        ));
    }
    let exe = cross_target_dir(target_dir)
        .join(platform.triple())
        .join("release")
        .join(format!(
            "probe{}",
            if platform.executable().ends_with(".exe") {
                ".exe"
            } else {
                ""
            }
        ));
    if exe.is_file() {
        Ok(exe)
    } else {
        Err(DistError::Unexpected(format!(
            "cargo built no {}",
            exe.display()
        )))
    }
}

#[cfg(test)]
mod tests {
    use devkit::shell::{env_assignment, split_words};

    use super::*;

    #[test]
    fn the_unit_test_executable_is_the_librarys_test_artifact() {
        let messages = [
            r#"{"reason":"compiler-artifact","target":{"name":"iai_mcp_wrapper","kind":["lib"]},"profile":{"test":false},"executable":null}"#,
            r#"{"reason":"compiler-artifact","target":{"name":"iai-mcp-wrapper","kind":["bin"]},"profile":{"test":true},"executable":"/t/deps/bin.exe"}"#,
            r#"{"reason":"compiler-artifact","target":{"name":"iai_mcp_wrapper","kind":["lib"]},"profile":{"test":true},"executable":"/t/deps/iai_mcp_wrapper-1.exe"}"#,
            r#"{"reason":"build-finished","success":true}"#,
        ]
        .join("\n");
        assert_eq!(
            test_executable(&messages),
            Some(PathBuf::from("/t/deps/iai_mcp_wrapper-1.exe"))
        );
        assert_eq!(test_executable("not json\n"), None);
    }

    #[test]
    fn settings_stay_bare_and_paths_are_quoted() {
        let words = [
            OsString::from("WINEPREFIX=/t/wine/prefix"),
            OsString::from("WINEDEBUG=-all"),
            OsString::from("/usr/lib/wine/wine64"),
            OsString::from("/t/a b/iai-mcp-wrapper.exe"),
        ];
        let line = shell_line(&words);
        assert_eq!(
            line,
            "WINEPREFIX=/t/wine/prefix WINEDEBUG=-all '/usr/lib/wine/wine64' '/t/a b/iai-mcp-wrapper.exe'"
        );
        let parsed = split_words(&line).unwrap();
        let settings: Vec<_> = parsed.iter().map_while(|w| env_assignment(w)).collect();
        assert_eq!(settings.len(), 2);
        assert_eq!(
            parsed[2..],
            ["/usr/lib/wine/wine64", "/t/a b/iai-mcp-wrapper.exe"]
        );
    }
}
