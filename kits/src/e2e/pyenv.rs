//! The Python side of the end-to-end kit: a virtual environment with one
//! iai-mcp release (the pinned one unless another is asked for) and, for
//! the kit, the official MCP SDK, installed from the package registry once
//! and reused while the pins hold (the dev kit's [`ensure_venv_pinned`]):
//! for a release with a constraints file in `kits/pins/`, every package at
//! the version the file names, and the environment made anew when the
//! file changes. `cargo xtask surface` uses the same code for an
//! environment with only the release in it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use devkit::command::run_within;
use devkit::error::DevkitError;
use devkit::pyenv::{Pins, ensure_venv, ensure_venv_pinned, installed, real_interpreter};
use harness::error::HarnessError;

use super::release::Release;

/// The official MCP Python SDK used as a client.
pub const MCP_SDK: &str = "mcp==2.3.0";

/// Python versions iai-pme supports (3.3.0 and the releases before it).
const SUPPORTED: [&str; 2] = ["3.11", "3.12"];

/// What goes into an environment besides the release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Contents {
    /// The release with its dependencies and the MCP SDK: everything the
    /// end-to-end kit runs (the daemon, the CLIs, the SDK client).
    Kit,
    /// The release alone, without its dependencies: enough for its bundled
    /// Node wrapper to list its tools, a few megabytes instead of hundreds.
    ReleaseOnly,
}

/// A ready virtual environment.
#[derive(Debug, Clone)]
pub struct PyEnv {
    /// The environment's directory.
    pub root: PathBuf,
    /// The iai-pme release installed in it.
    pub release: Release,
    /// How long installing took (`None`: reused as it was).
    pub installed_in: Option<Duration>,
    /// Whether its versions came from the release's constraints file.
    pub constrained: bool,
    /// Its size on disk, in bytes.
    pub size: u64,
}

impl PyEnv {
    /// The environment's `bin` directory (`Scripts` on Windows).
    pub fn bin(&self) -> PathBuf {
        devkit::pyenv::venv_bin(&self.root)
    }

    /// A program of the environment (`python`, `iai`, `iai-mcp`), with
    /// the platform's executable suffix.
    pub fn program(&self, name: &str) -> PathBuf {
        devkit::pyenv::venv_program(&self.root, name)
    }

    /// The Node wrapper bundled with the installed iai-mcp
    /// (`lib/python3.*/site-packages/iai_mcp/_wrapper/index.js`). Found on
    /// disk rather than by importing `iai_mcp`, which an environment made
    /// with [`Contents::ReleaseOnly`] could not do.
    pub fn bundled_wrapper(&self) -> Result<PathBuf, HarnessError> {
        let found = self
            .site_packages()
            .ok()
            .map(|site| site.join("iai_mcp/_wrapper/index.js"))
            .filter(|path| path.is_file());
        found.ok_or_else(|| {
            HarnessError::Scenario(format!(
                "iai-pme {} in {} has no bundled wrapper (lib/python3.*/site-packages/iai_mcp/_wrapper/index.js)",
                self.release,
                self.root.display()
            ))
        })
    }
}

/// The environment at `root` with `release` and `contents`, created and
/// installed if missing or installed with other pins. `python` overrides
/// the interpreter search (`python3.12`, `python3.11`, `python3`, the first
/// of a supported version).
pub fn ensure(
    root: &Path,
    python: Option<&Path>,
    release: &Release,
    contents: Contents,
) -> Result<PyEnv, HarnessError> {
    let interpreter = || match python {
        Some(p) => Ok(p.to_path_buf()),
        None => find_python(),
    };
    let iai_pme = release.requirement();
    let (requirements, what) = match contents {
        Contents::Kit => (
            vec![iai_pme.as_str(), MCP_SDK],
            format!("installing {iai_pme} and the MCP SDK"),
        ),
        Contents::ReleaseOnly => (
            vec!["--no-deps", iai_pme.as_str()],
            format!("installing {iai_pme} (without its dependencies)"),
        ),
    };
    let constraints = release_constraints(release)?;
    let pins = Pins {
        requirements: &requirements,
        constraints: constraints.as_deref(),
    };
    let installed_in = ensure_venv_pinned(root, interpreter, &pins, &what)?;
    Ok(PyEnv {
        size: dir_size(root),
        root: root.to_path_buf(),
        release: release.clone(),
        installed_in,
        constrained: constraints.is_some(),
    })
}

/// The file in an environment made by [`ensure_on_pinned`] that adds the
/// pinned environment's `site-packages` to its import path.
const BASE_PTH: &str = "iai-e2e-pinned-deps.pth";

/// The environment at `root` with `release` alone (no dependencies)
/// installed, importing everything else from `base`, the pinned release's
/// environment: a `.pth` file in its `site-packages` puts `base`'s after
/// its own. A few megabytes instead of hundreds; the release's own files
/// (its daemon, CLIs, bundled wrapper and metadata) are found first.
/// Refused when the release declares other dependencies than `base`'s
/// release, whose installed packages would then not be its own.
pub fn ensure_on_pinned(
    root: &Path,
    base: &PyEnv,
    release: &Release,
) -> Result<PyEnv, HarnessError> {
    let interpreter = || Ok(base.program("python"));
    let requirement = release.requirement();
    let what = format!(
        "installing {requirement} (without its dependencies, on {}'s)",
        base.release
    );
    let installed_in = ensure_venv(root, interpreter, &["--no-deps", &requirement], &what)?;
    let env = PyEnv {
        size: dir_size(root),
        root: root.to_path_buf(),
        release: release.clone(),
        installed_in,
        // Its dependencies are the pinned environment's, as pinned there.
        constrained: base.constrained,
    };
    let (ours, theirs) = (env.requirements()?, base.requirements()?);
    if ours != theirs {
        return Err(HarnessError::Scenario(format!(
            "iai-pme {} depends on {ours:?}, {} on {theirs:?}: run it in an environment of its own (without --on-pinned-deps)",
            release, base.release
        )));
    }
    let pth = env.site_packages()?.join(BASE_PTH);
    let line = format!("{}\n", base.site_packages()?.display());
    std::fs::write(&pth, line)
        .map_err(|e| HarnessError::io(format!("writing {}", pth.display()), e))?;
    Ok(env)
}

/// The text of `release`'s constraints file, if the release is pinned
/// whole; a listed release without its file is an error.
fn release_constraints(release: &Release) -> Result<Option<String>, HarnessError> {
    if !release.is_constrained() {
        return Ok(None);
    }
    let file = release.constraints_file();
    std::fs::read_to_string(&file).map(Some).map_err(|e| {
        HarnessError::io(
            format!(
                "reading {} (write it with `cargo xtask hosts --refresh-pins`)",
                file.display()
            ),
            e,
        )
    })
}

/// Writes `release`'s constraints file afresh: the release and the MCP SDK
/// installed into a scratch environment under `work_dir` with their
/// dependencies resolved today, and every package pip then lists (pip's
/// own tools apart) written as `NAME==VERSION`. Returns the file.
pub fn refresh_constraints(
    work_dir: &Path,
    python: Option<&Path>,
    release: &Release,
) -> Result<PathBuf, HarnessError> {
    let root = work_dir.join("refresh").join(release.as_str()).join("venv");
    let interpreter = || match python {
        Some(p) => Ok(p.to_path_buf()),
        None => find_python(),
    };
    let requirement = release.requirement();
    let requirements = [requirement.as_str(), MCP_SDK];
    let pins = Pins {
        requirements: &requirements,
        constraints: None,
    };
    let what = format!("installing {requirement} and {MCP_SDK} unconstrained");
    // Always afresh: the point is today's resolution.
    let _ = std::fs::remove_dir_all(&root);
    ensure_venv_pinned(&root, interpreter, &pins, &what)?;
    let mut lines: Vec<String> = installed(&root)?
        .into_iter()
        .filter(|(name, _)| !["pip", "setuptools", "wheel"].contains(&name.as_str()))
        .map(|(name, version)| format!("{name}=={version}"))
        .collect();
    lines.sort();
    let text = format!(
        "# Every package of the iai-pme {release} environment of the end-to-end and\n\
         # hosts kits, at the version installed (pip's --constraint). Written by\n\
         # `cargo xtask hosts --refresh-pins`; do not edit by hand.\n{}\n",
        lines.join("\n")
    );
    let file = release.constraints_file();
    std::fs::write(&file, text)
        .map_err(|e| HarnessError::io(format!("writing {}", file.display()), e))?;
    let _ = std::fs::remove_dir_all(work_dir.join("refresh").join(release.as_str()));
    Ok(file)
}

impl PyEnv {
    /// The environment's `site-packages`: `lib/python3.*/site-packages`,
    /// or `Lib\site-packages` on Windows.
    pub fn site_packages(&self) -> Result<PathBuf, HarnessError> {
        if cfg!(windows) {
            return Ok(self.root.join("Lib").join("site-packages"));
        }
        let lib = self.root.join("lib");
        let found = std::fs::read_dir(&lib)
            .map_err(|e| HarnessError::io(format!("reading {}", lib.display()), e))?
            .filter_map(Result::ok)
            .filter(|entry| entry.file_name().to_string_lossy().starts_with("python"))
            .map(|entry| entry.path().join("site-packages"))
            .find(|path| path.is_dir());
        found.ok_or_else(|| {
            HarnessError::Scenario(format!(
                "{} has no lib/python3.*/site-packages",
                self.root.display()
            ))
        })
    }

    /// The release's declared dependencies (its metadata's
    /// `Requires-Dist` lines), sorted.
    fn requirements(&self) -> Result<Vec<String>, HarnessError> {
        let metadata = self
            .site_packages()?
            .join(format!("iai_pme-{}.dist-info", self.release))
            .join("METADATA");
        let text = std::fs::read_to_string(&metadata)
            .map_err(|e| HarnessError::io(format!("reading {}", metadata.display()), e))?;
        let mut requirements: Vec<String> = text
            .lines()
            .filter_map(|line| line.strip_prefix("Requires-Dist:"))
            .map(|r| r.trim().to_owned())
            .collect();
        requirements.sort();
        Ok(requirements)
    }

    /// What the environment holds and whether it was installed now, for a
    /// report: `installed iai-pme==X and mcp==Y in 40 s` or `reused`.
    pub fn installed(&self, contents: Contents) -> String {
        let what = match contents {
            Contents::Kit => format!("{} and {MCP_SDK}", self.release.requirement()),
            Contents::ReleaseOnly => self.release.requirement(),
        };
        let how = if self.constrained {
            format!(
                "every version from {}",
                self.release
                    .constraints_file()
                    .strip_prefix(devkit::bins::workspace_root())
                    .map_or_else(|_| self.release.constraints_file(), Path::to_path_buf)
                    .display()
            )
        } else {
            "dependencies resolved afresh: no constraints file for this release".to_owned()
        };
        match self.installed_in {
            Some(d) => format!("installed {what} in {:.0} s; {how}", d.as_secs_f64()),
            None => format!("reused; {how}"),
        }
    }
}

/// How long asking an interpreter its version may take.
const QUERY_LIMIT: Duration = Duration::from_secs(30);

/// The first interpreter on `PATH` of a version iai-pme supports (the
/// interpreter it runs, should it be a launcher).
fn find_python() -> Result<PathBuf, DevkitError> {
    // `python` last: on Windows the only name a Python install is sure to
    // have.
    for name in ["python3.12", "python3.11", "python3", "python"] {
        let mut ask = Command::new(name);
        ask.args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"]);
        let Ok(version) = run_within(&mut ask, &format!("{name} --version"), QUERY_LIMIT) else {
            continue;
        };
        if SUPPORTED.contains(&version.trim()) {
            return real_interpreter(Path::new(name));
        }
    }
    Err(DevkitError::Precondition(format!(
        "no Python {} on PATH (iai-pme needs one); pass --python",
        SUPPORTED.join(" or ")
    )))
}

/// Bytes of the regular files under `dir`.
fn dir_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|entry| match entry.file_type() {
            Ok(t) if t.is_dir() => dir_size(&entry.path()),
            Ok(t) if t.is_file() => entry.metadata().map_or(0, |m| m.len()),
            _ => 0,
        })
        .sum()
}
