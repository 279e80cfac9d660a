//! Finding (and if need be building) the binaries under test.
//!
//! Lookup order for each binary, done at most once per process:
//!
//! 1. an explicit path in an environment variable (`IAI_WRAPPER_BIN`,
//!    `FAKE_DAEMON_BIN`, `FAKE_IAI_BIN`, `DEVKIT_SUBREAPER_BIN`), so a
//!    caller that has just built the binaries decides exactly what runs;
//! 2. the target directory of the current executable, where
//!    `cargo test --workspace` has built every binary before any test runs
//!    (after editing the wrapper, run `cargo build --workspace` before a
//!    lone `cargo test -p harness`: a build from a test would lack the
//!    test-only features);
//! 3. failing that, `cargo build -p <package> --bin <bin>` in the profile of
//!    the current executable.

use std::collections::HashMap;
use std::env;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use crate::command::OUTPUT_GRACE;
use crate::error::DevkitError;
use crate::process::{CapturedOutput, ChildGuard};
use crate::sync::lock;

/// How long one `cargo build` may take (a release build of the wrapper
/// from nothing takes minutes on two cores).
const CARGO_BUILD_LIMIT: Duration = Duration::from_secs(2700);

/// A binary target of this workspace, and the environment variable that may
/// override where it is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WorkspaceBin {
    /// The cargo package that contains the binary.
    pub package: &'static str,
    /// The binary target's name.
    pub bin: &'static str,
    /// The environment variable holding an explicit path to the binary.
    pub env_override: &'static str,
}

/// The MCP wrapper under test.
pub const WRAPPER: WorkspaceBin = WorkspaceBin {
    package: "iai-mcp-wrapper",
    bin: "iai-mcp-wrapper",
    env_override: "IAI_WRAPPER_BIN",
};

/// The environment variable naming a runner for the wrapper under test:
/// the words put before its path, such as an emulator
/// (`qemu-aarch64-static -L /usr/aarch64-linux-gnu`), split into words by
/// [`split_words`](crate::shell::split_words) (the harness's
/// `WrapperCommand::under_test` reads it).
pub const WRAPPER_RUNNER_ENV: &str = "IAI_WRAPPER_RUNNER";

/// The environment variable through which `cargo xtask e2e` and `cargo
/// xtask hosts` tell the end-to-end and hosts kits which wheel to install
/// and test.
pub const WHEEL_ENV: &str = "IAI_WRAPPER_WHEEL";

/// The fake iai-mcp daemon.
pub const FAKE_DAEMON: WorkspaceBin = WorkspaceBin {
    package: "fake-daemon",
    bin: "fake-daemon",
    env_override: "FAKE_DAEMON_BIN",
};

/// The stand-in for the `iai` and `iai-mcp` CLIs.
pub const FAKE_CLI: WorkspaceBin = WorkspaceBin {
    package: "fake-daemon",
    bin: "fake-iai",
    env_override: "FAKE_IAI_BIN",
};

/// The `harness` binary (the scenarios), which `cargo xtask` builds and
/// runs.
pub const HARNESS: WorkspaceBin = WorkspaceBin {
    package: "harness",
    bin: "harness",
    env_override: "HARNESS_BIN",
};

/// The `kits` binary (the end-to-end and hosts kits, the benchmarks),
/// which `cargo xtask e2e`, `hosts` and `bench` build and run.
pub const KITS: WorkspaceBin = WorkspaceBin {
    package: "kits",
    bin: "kits",
    env_override: "KITS_BIN",
};

/// The child subreaper the hosts kit runs every host command under
/// ([`crate::reap`]).
pub const SUBREAPER: WorkspaceBin = WorkspaceBin {
    package: "devkit",
    bin: "devkit-subreaper",
    env_override: "DEVKIT_SUBREAPER_BIN",
};

/// A cargo build profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Profile {
    /// The `dev` profile (`target/debug`).
    Dev,
    /// The `release` profile (`target/release`).
    Release,
    /// A custom profile, named as in `Cargo.toml` (`target/<name>`).
    Custom(String),
}

impl Profile {
    /// The profile the current executable was built with, judged from the
    /// directory it runs from (`target/<profile>` or `target/<profile>/deps`);
    /// [`Profile::Dev`] when that directory says nothing.
    pub fn of_current_exe() -> Self {
        target_dir_of_current_exe()
            .and_then(|dir| dir.file_name().map(|n| n.to_string_lossy().into_owned()))
            .map_or(Self::Dev, |name| match name.as_str() {
                "debug" => Self::Dev,
                "release" => Self::Release,
                _ => Self::Custom(name),
            })
    }

    fn cargo_args(&self) -> Vec<String> {
        match self {
            Self::Dev => Vec::new(),
            Self::Release => vec!["--release".to_owned()],
            Self::Custom(name) => vec!["--profile".to_owned(), name.clone()],
        }
    }
}

/// Path of the wrapper binary; panics with an explanation when it can be
/// neither found nor built. Meant for tests; see [`try_wrapper_bin`].
pub fn wrapper_bin() -> PathBuf {
    try_wrapper_bin().unwrap_or_else(|e| panic!("{}", error_chain(&e)))
}

/// Path of the fake daemon binary; panics with an explanation when it can be
/// neither found nor built. Meant for tests; see [`try_fake_daemon_bin`].
pub fn fake_daemon_bin() -> PathBuf {
    try_fake_daemon_bin().unwrap_or_else(|e| panic!("{}", error_chain(&e)))
}

/// Path of the `fake-iai` CLI stand-in; panics with an explanation when it
/// can be neither found nor built. Meant for tests.
pub fn fake_cli_bin() -> PathBuf {
    locate(&FAKE_CLI).unwrap_or_else(|e| panic!("{}", error_chain(&e)))
}

/// Path of the wrapper binary, found or built as described in the module
/// documentation.
pub fn try_wrapper_bin() -> Result<PathBuf, DevkitError> {
    locate(&WRAPPER)
}

/// Path of the fake daemon binary, found or built as described in the module
/// documentation.
pub fn try_fake_daemon_bin() -> Result<PathBuf, DevkitError> {
    locate(&FAKE_DAEMON)
}

/// Finds or builds `bin` as described in the module documentation, caching
/// the answer (success or failure) for the rest of the process.
pub fn locate(bin: &WorkspaceBin) -> Result<PathBuf, DevkitError> {
    static CACHE: OnceLock<Mutex<HashMap<WorkspaceBin, Result<PathBuf, String>>>> = OnceLock::new();
    // Holding the lock across a build makes concurrent tests wait for the one
    // build instead of starting their own.
    let mut cache = lock(CACHE.get_or_init(Default::default));
    if let Some(cached) = cache.get(bin) {
        // A failure is told in full the first time, then by name.
        return cached
            .clone()
            .map_err(|detail| DevkitError::BinaryNotFound {
                bin: bin.bin.to_owned(),
                detail,
            });
    }
    let found = locate_uncached(bin);
    let kept = found.as_ref().map(Clone::clone).map_err(|e| error_chain(e));
    cache.insert(*bin, kept);
    found
}

fn locate_uncached(bin: &WorkspaceBin) -> Result<PathBuf, DevkitError> {
    if let Some(path) = env::var_os(bin.env_override).filter(|v| !v.is_empty()) {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(DevkitError::BinaryNotFound {
                bin: bin.bin.to_owned(),
                detail: format!("{}={} is not a file", bin.env_override, path.display()),
            })
        };
    }
    if let Some(path) = target_dir_of_current_exe()
        .map(|dir| dir.join(format!("{}{}", bin.bin, env::consts::EXE_SUFFIX)))
        .filter(|p| p.is_file())
    {
        return Ok(path);
    }
    let built = cargo_build(&[*bin], &Profile::of_current_exe(), true)?;
    Ok(built
        .into_iter()
        .next()
        .expect("cargo_build returns one path per binary"))
}

/// The workspace's `target` directory, where reports go:
/// `$CARGO_TARGET_DIR` when set, else the parent of the profile directory
/// the current executable runs from, else `target` beside the workspace
/// manifest.
pub fn target_dir() -> PathBuf {
    let from_exe = || {
        let dir = target_dir_of_current_exe()?.parent()?.to_path_buf();
        dir.file_name()
            .is_some_and(|n| n == "target")
            .then_some(dir)
    };
    env::var_os("CARGO_TARGET_DIR")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(from_exe)
        .unwrap_or_else(|| workspace_manifest().with_file_name("target"))
}

/// The manifest of the workspace this crate belongs to, found from the
/// crate's own source location at compile time.
pub(crate) fn workspace_manifest() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("devkit lives one level below the workspace root")
        .join("Cargo.toml")
}

/// The root of the workspace this crate belongs to (its sources: the tool
/// table `cargo xtask surface` reads and rewrites, the wheel's manifest).
pub fn workspace_root() -> PathBuf {
    workspace_manifest()
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// Runs `cargo build` (the `CARGO` of the environment, else `cargo`) for
/// `bins` in `profile` and returns each executable's path, in order; with
/// `quiet`, cargo's output is shown only in the error.
pub fn cargo_build(
    bins: &[WorkspaceBin],
    profile: &Profile,
    quiet: bool,
) -> Result<Vec<PathBuf>, DevkitError> {
    let packages = bins
        .iter()
        .map(|b| b.package)
        .collect::<Vec<_>>()
        .join(", ");
    let cargo = env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let mut command = Command::new(&cargo);
    command
        .arg("build")
        // The lockfile as committed: whoever started this (cargo test,
        // cargo xtask) has already written it if it needed writing.
        .arg("--locked")
        .arg("--manifest-path")
        .arg(workspace_manifest())
        .arg("--message-format=json-render-diagnostics")
        .args(profile.cargo_args())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(if quiet {
            Stdio::piped()
        } else {
            Stdio::inherit()
        });
    for bin in bins {
        command.args(["-p", bin.package, "--bin", bin.bin]);
    }
    // In the caller's process group, so that Ctrl-C at a terminal
    // reaches cargo too.
    let mut build = ChildGuard::spawn(&mut command)?;
    let leader = build.child_mut();
    let stdout = CapturedOutput::spawn(leader.stdout.take().expect("piped"), "cargo-stdout");
    let stderr = leader
        .stderr
        .take()
        .map(|pipe| CapturedOutput::spawn(pipe, "cargo-stderr"));
    let what = format!("cargo build of {packages}");
    let Some(status) = build.wait_timeout(CARGO_BUILD_LIMIT)? else {
        let _ = build.kill();
        return Err(DevkitError::TimedOut {
            what,
            limit: CARGO_BUILD_LIMIT,
            tail: stderr.map(|e| e.tail(2000)).unwrap_or_default(),
        });
    };
    stdout.wait_eof(OUTPUT_GRACE);
    if !status.success() {
        let said = stderr
            .map(|e| {
                e.wait_eof(OUTPUT_GRACE);
                e.text()
            })
            .unwrap_or_default();
        return Err(DevkitError::Build {
            package: packages,
            detail: format!("cargo exited with {status}; {}", said.trim_end()),
        });
    }
    let executables = executables_in_cargo_messages(&stdout.text());
    bins.iter()
        .map(|bin| {
            executables
                .get(bin.bin)
                .cloned()
                .ok_or_else(|| DevkitError::Build {
                    package: bin.package.to_owned(),
                    detail: format!("cargo reported no executable for binary `{}`", bin.bin),
                })
        })
        .collect()
}

/// Maps binary target names to executables from cargo's JSON messages.
fn executables_in_cargo_messages(stdout: &str) -> HashMap<String, PathBuf> {
    let mut found = HashMap::new();
    for line in stdout.lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if message["reason"] != "compiler-artifact" {
            continue;
        }
        let is_bin = message["target"]["kind"]
            .as_array()
            .is_some_and(|kinds| kinds.iter().any(|k| k == "bin"));
        if let (true, Some(name), Some(exe)) = (
            is_bin,
            message["target"]["name"].as_str(),
            message["executable"].as_str(),
        ) {
            found.insert(name.to_owned(), PathBuf::from(exe));
        }
    }
    found
}

/// `target/<profile>` of the current executable, if it runs from there.
fn target_dir_of_current_exe() -> Option<PathBuf> {
    let exe = env::current_exe().ok()?;
    let mut dir = exe.parent()?;
    if dir
        .file_name()
        .is_some_and(|n| n == "deps" || n == "examples")
    {
        dir = dir.parent()?;
    }
    Some(dir.to_path_buf())
}

/// An error and its sources on one line, `a: b: c`.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_bin_executables_in_cargo_messages() {
        let stdout = concat!(
            r#"{"reason":"compiler-artifact","target":{"name":"fake_daemon","kind":["lib"]},"executable":null}"#,
            "\n",
            r#"{"reason":"compiler-artifact","target":{"name":"fake-daemon","kind":["bin"]},"executable":"/t/debug/fake-daemon"}"#,
            "\n",
            "not json\n",
            r#"{"reason":"build-finished","success":true}"#,
            "\n"
        );
        let found = executables_in_cargo_messages(stdout);
        assert_eq!(found.len(), 1);
        assert_eq!(found["fake-daemon"], PathBuf::from("/t/debug/fake-daemon"));
    }

    #[test]
    fn profile_flags() {
        assert!(Profile::Dev.cargo_args().is_empty());
        assert_eq!(Profile::Release.cargo_args(), ["--release"]);
        assert_eq!(
            Profile::Custom("bench".into()).cargo_args(),
            ["--profile", "bench"]
        );
    }
}
