//! Getting the tools a wheel is built with, on a Debian machine whose
//! rustup has only the x86_64 Linux standard library and cannot download
//! others.
//!
//! - maturin and zig: from the package registry, into a virtual
//!   environment under the target directory ([`python_tools`]).
//! - For another target: a Rust compiler whose sysroot carries the
//!   standard library's sources, so that cargo's `-Z build-std` can build
//!   std for any target. Debian's `rustc-web` packages are such a compiler;
//!   they are downloaded with `apt-get download` (the versions apt offers)
//!   and unpacked with `dpkg -x` under the target directory, never
//!   installed ([`cross_compiler`]). rustup's nightly cargo drives it
//!   ([`nightly`]).
//! - Linkers, emulators: Debian packages that must be installed;
//!   [`require_packages`] says which are missing and how to get them.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use devkit::pyenv::{ensure_venv, run};

use super::error::DistError;
use super::progress::step;

/// The maturin release that builds the wheels.
pub const MATURIN: &str = "maturin==1.16.0";
/// The zig toolchain maturin links Linux and macOS targets with (the
/// package registry's `ziglang`).
pub const ZIGLANG: &str = "ziglang==0.15.2";

/// The Debian packages whose files make the cross compiler, and the
/// prefixes of the dependencies of theirs that must come along (the
/// compiler's own libraries: std, LLVM).
const COMPILER_PACKAGES: [&str; 2] = ["rustc-web", "rust-web-src"];
const COMPILER_DEPENDENCY_PREFIXES: [&str; 4] =
    ["rustc-web", "rust-web-src", "libstd-rust-web", "libllvm"];

/// The host triple the cross compiler is unpacked for: the Debian packages
/// are amd64 ones.
const HOST: &str = "x86_64-unknown-linux-gnu";

/// The virtual environment with maturin and zig, created or reused under
/// `target_dir` (`wheel/venv`) with `python`.
pub fn python_tools(target_dir: &Path, python: &Path) -> Result<PathBuf, DistError> {
    let venv = target_dir.join("wheel").join("venv");
    step(
        &format!("{MATURIN} and {ZIGLANG} in {}", venv.display()),
        || {
            ensure_venv(
                &venv,
                || Ok(python.to_path_buf()),
                &[MATURIN, ZIGLANG],
                "installing maturin and zig",
            )
            .map(drop)
        },
    )?;
    Ok(venv)
}

/// Fails with the list of `packages` that are not installed (and the
/// `apt-get install` line that installs them); `why` says what needs them.
pub fn require_packages(packages: &[&str], why: &str) -> Result<(), DistError> {
    let missing: Vec<&str> = packages
        .iter()
        .copied()
        .filter(|p| !package_installed(p))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(DistError::MissingPackages {
            missing: missing.join(" "),
            why: why.to_owned(),
        })
    }
}

/// Whether dpkg says `package` is installed.
fn package_installed(package: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", package])
        .stderr(Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success() && o.stdout.ends_with(b"install ok installed"))
}

/// rustup's nightly toolchain: its cargo drives the cross builds
/// (`-Z build-std` is a nightly flag), and its `rust-objcopy` strips
/// Mach-O binaries.
#[derive(Debug, Clone)]
pub struct Nightly {
    /// The directory of its `cargo`, put first on `PATH` for maturin.
    pub bin: PathBuf,
    /// Its sysroot's `lib` directory (its LLVM, for `rust-objcopy`).
    pub lib: PathBuf,
    /// Its `rust-objcopy`.
    pub objcopy: PathBuf,
}

/// Finds rustup's nightly toolchain.
pub fn nightly() -> Result<Nightly, DistError> {
    let missing = |detail: String| {
        DistError::tool(
            "finding rustup's nightly toolchain (install it with `rustup toolchain install nightly --profile minimal`)",
            detail,
        )
    };
    let sysroot = run(
        Command::new("rustup").args(["run", "nightly", "rustc", "--print", "sysroot"]),
        "asking rustup for the nightly sysroot",
    )
    .map_err(|e| missing(devkit::bins::error_chain(&e)))?;
    let sysroot = PathBuf::from(sysroot.trim());
    let nightly = Nightly {
        bin: sysroot.join("bin"),
        lib: sysroot.join("lib"),
        objcopy: sysroot
            .join("lib/rustlib")
            .join(HOST)
            .join("bin/rust-objcopy"),
    };
    if !nightly.bin.join("cargo").is_file() {
        return Err(missing(format!("no cargo in {}", nightly.bin.display())));
    }
    Ok(nightly)
}

/// A Rust compiler unpacked from Debian's packages, with the standard
/// library's sources in its sysroot.
#[derive(Debug, Clone)]
pub struct CrossCompiler {
    /// Where the packages were unpacked (`usr/bin/rustc` is in it).
    pub root: PathBuf,
    /// The packages, as `name=version`.
    pub packages: Vec<String>,
}

impl CrossCompiler {
    /// The `rustc` executable.
    pub fn rustc(&self) -> PathBuf {
        self.root.join("usr/bin/rustc")
    }

    /// The directory of its shared libraries (`LD_LIBRARY_PATH`).
    pub fn lib_dir(&self) -> PathBuf {
        self.root.join("usr/lib/x86_64-linux-gnu")
    }

    /// Where rustc looks for `rust-objcopy` (to strip Mach-O binaries).
    fn tool_dir(&self) -> PathBuf {
        self.root.join("usr/lib/rustlib").join(HOST).join("bin")
    }
}

/// The marker naming the packages a compiler directory was unpacked from.
const MARKER: &str = ".packages";

/// The cross compiler under `target_dir` (`cross-toolchain/`): reused when
/// a previous run unpacked it, else downloaded and unpacked now, with
/// nightly's `rust-objcopy` copied beside it.
pub fn cross_compiler(target_dir: &Path, nightly: &Nightly) -> Result<CrossCompiler, DistError> {
    if !cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        return Err(DistError::Unexpected(
            "cross builds unpack Debian's amd64 compiler packages: they need an x86_64 Linux (Debian) machine".to_owned(),
        ));
    }
    let root = target_dir.join("cross-toolchain");
    let marker = root.join(MARKER);
    if let Ok(listed) = std::fs::read_to_string(&marker) {
        let compiler = CrossCompiler {
            packages: listed.lines().map(str::to_owned).collect(),
            root: root.clone(),
        };
        if compiler.rustc().is_file() {
            eprintln!(
                "cargo xtask: cross compiler reused: {} ({})",
                root.display(),
                compiler.packages.join(", ")
            );
            return Ok(compiler);
        }
    }
    require_packages(&["apt", "dpkg"], "downloading and unpacking the compiler")?;
    let packages = step("resolving Debian's rustc-web packages", resolve_packages)?;
    if root.exists() {
        std::fs::remove_dir_all(&root)
            .map_err(|e| DistError::io(format!("removing {}", root.display()), e))?;
    }
    let debs = target_dir.join("cross-toolchain-debs");
    std::fs::create_dir_all(&debs)
        .map_err(|e| DistError::io(format!("creating {}", debs.display()), e))?;
    let names: Vec<&str> = packages.iter().map(|p| p.name.as_str()).collect();
    step(&format!("apt-get download {}", names.join(" ")), || {
        run(
            Command::new("apt-get")
                .arg("download")
                .args(&names)
                .current_dir(&debs),
            "apt-get download",
        )
        .map_err(DistError::from)
    })?;
    step(&format!("unpacking into {}", root.display()), || {
        unpack_debs(&debs, &root)
    })?;
    std::fs::remove_dir_all(&debs)
        .map_err(|e| DistError::io(format!("removing {}", debs.display()), e))?;
    let compiler = CrossCompiler {
        root,
        packages: packages
            .iter()
            .map(|p| format!("{}={}", p.name, p.version))
            .collect(),
    };
    if !compiler.rustc().is_file() {
        return Err(DistError::Unexpected(format!(
            "the unpacked packages hold no {}",
            compiler.rustc().display()
        )));
    }
    add_objcopy(&compiler, nightly)?;
    let listed: String = compiler.packages.iter().map(|p| format!("{p}\n")).collect();
    std::fs::write(&marker, listed)
        .map_err(|e| DistError::io(format!("writing {}", marker.display()), e))?;
    Ok(compiler)
}

/// The Debian package of clippy for the cross compiler.
const CLIPPY_PACKAGE: &str = "rust-web-clippy";

/// Debian's clippy for `compiler` (the `rust-web-clippy` of the same
/// version as its `rustc-web`), unpacked beside it once: its
/// `cargo-clippy`, which runs the `clippy-driver` beside it as cargo's
/// workspace wrapper.
pub fn cross_clippy(target_dir: &Path, compiler: &CrossCompiler) -> Result<PathBuf, DistError> {
    let cargo_clippy = compiler.root.join("usr/bin/cargo-clippy");
    if cargo_clippy.is_file() && compiler.root.join("usr/bin/clippy-driver").is_file() {
        return Ok(cargo_clippy);
    }
    let version = compiler
        .packages
        .iter()
        .find_map(|p| p.strip_prefix("rustc-web="))
        .ok_or_else(|| {
            DistError::Unexpected(format!(
                "no rustc-web among the compiler's packages ({})",
                compiler.packages.join(", ")
            ))
        })?;
    let debs = target_dir.join("cross-clippy-debs");
    std::fs::create_dir_all(&debs)
        .map_err(|e| DistError::io(format!("creating {}", debs.display()), e))?;
    let package = format!("{CLIPPY_PACKAGE}={version}");
    step(&format!("apt-get download {package}"), || {
        run(
            Command::new("apt-get")
                .args(["download", &package])
                .current_dir(&debs),
            "apt-get download",
        )
        .map_err(DistError::from)
    })?;
    unpack_debs(&debs, &compiler.root)?;
    std::fs::remove_dir_all(&debs)
        .map_err(|e| DistError::io(format!("removing {}", debs.display()), e))?;
    if cargo_clippy.is_file() {
        Ok(cargo_clippy)
    } else {
        Err(DistError::Unexpected(format!(
            "{package} holds no {}",
            cargo_clippy.display()
        )))
    }
}

/// A Debian package and the version apt offers.
#[derive(Debug, Clone, PartialEq, Eq)]
struct DebPackage {
    name: String,
    version: String,
}

/// The compiler's packages and the dependencies of theirs it needs, with
/// the versions apt offers now.
fn resolve_packages() -> Result<Vec<DebPackage>, DistError> {
    let mut names: Vec<String> = COMPILER_PACKAGES.map(str::to_owned).to_vec();
    let mut next = 0;
    while next < names.len() {
        let output = run(
            Command::new("apt-cache").args([
                "depends",
                "--no-recommends",
                "--no-suggests",
                "--no-conflicts",
                "--no-breaks",
                "--no-replaces",
                "--no-enhances",
                &names[next],
            ]),
            &format!("apt-cache depends {}", names[next]),
        )?;
        for dependency in compiler_dependencies(&output) {
            if !names.contains(&dependency) {
                names.push(dependency);
            }
        }
        next += 1;
    }
    names
        .into_iter()
        .map(|name| {
            let policy = run(
                Command::new("apt-cache").args(["policy", &name]),
                &format!("apt-cache policy {name}"),
            )?;
            let version = candidate_version(&policy).ok_or_else(|| {
                DistError::Unexpected(format!(
                    "apt offers no version of {name} (is the security archive in apt's sources? run `sudo apt-get update`)"
                ))
            })?;
            Ok(DebPackage { name, version })
        })
        .collect()
}

/// The dependencies named in `apt-cache depends` output that belong to the
/// compiler (std, LLVM, its sources).
fn compiler_dependencies(depends: &str) -> Vec<String> {
    depends
        .lines()
        .filter_map(|line| {
            line.trim()
                .trim_start_matches('|')
                .strip_prefix("Depends: ")
        })
        .map(str::trim)
        .filter(|name| {
            COMPILER_DEPENDENCY_PREFIXES
                .iter()
                .any(|prefix| name.starts_with(prefix))
        })
        .map(str::to_owned)
        .collect()
}

/// The `Candidate:` of `apt-cache policy` output, unless it is `(none)`.
fn candidate_version(policy: &str) -> Option<String> {
    policy
        .lines()
        .find_map(|line| line.trim().strip_prefix("Candidate: "))
        .map(str::trim)
        .filter(|v| !v.is_empty() && *v != "(none)")
        .map(str::to_owned)
}

/// `dpkg -x` of every `.deb` in `debs` into `root`.
fn unpack_debs(debs: &Path, root: &Path) -> Result<(), DistError> {
    let entries = std::fs::read_dir(debs)
        .map_err(|e| DistError::io(format!("listing {}", debs.display()), e))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "deb"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(DistError::Unexpected(format!(
            "apt-get download left no .deb in {}",
            debs.display()
        )));
    }
    for deb in files {
        run(
            Command::new("dpkg").arg("-x").arg(&deb).arg(root),
            &format!("dpkg -x {}", deb.display()),
        )?;
    }
    Ok(())
}

/// Copies nightly's `rust-objcopy` where the unpacked rustc looks for it:
/// Debian's compiler lacks it, and the release profile's `strip` needs it
/// for Mach-O.
fn add_objcopy(compiler: &CrossCompiler, nightly: &Nightly) -> Result<(), DistError> {
    let dir = compiler.tool_dir();
    std::fs::create_dir_all(&dir)
        .map_err(|e| DistError::io(format!("creating {}", dir.display()), e))?;
    let to = dir.join("rust-objcopy");
    std::fs::copy(&nightly.objcopy, &to).map_err(|e| {
        DistError::io(
            format!("copying {} to {}", nightly.objcopy.display(), to.display()),
            e,
        )
    })?;
    Ok(())
}

/// `paths` joined for a `PATH`-like variable, then the inherited value of
/// `variable`.
pub fn prepend_paths(paths: &[&Path], variable: &str) -> OsString {
    let inherited = std::env::var_os(variable).unwrap_or_default();
    let dirs = paths
        .iter()
        .map(|p| p.to_path_buf())
        .chain(std::env::split_paths(&inherited));
    std::env::join_paths(dirs).unwrap_or(inherited)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_compilers_own_dependencies_come_along() {
        let depends = "rustc-web\n  Depends: libc6\n  Depends: libstd-rust-web-dev\n |Depends: gcc\n  Depends: libllvm22\n  Depends: <libc-dev>\n";
        assert_eq!(
            compiler_dependencies(depends),
            ["libstd-rust-web-dev", "libllvm22"]
        );
    }

    #[test]
    fn the_candidate_is_what_apt_offers() {
        let policy = "rustc-web:\n  Installed: (none)\n  Candidate: 1.96.0+dfsg1-1~deb12u2\n  Version table:\n";
        assert_eq!(
            candidate_version(policy).as_deref(),
            Some("1.96.0+dfsg1-1~deb12u2")
        );
        assert_eq!(candidate_version("x:\n  Candidate: (none)\n"), None);
    }

    // Asks dpkg, which only a Debian-family Linux has.
    #[cfg(target_os = "linux")]
    #[test]
    fn an_installed_package_is_found_and_a_missing_one_named() {
        assert!(require_packages(&["dpkg"], "test").is_ok());
        let err = require_packages(&["dpkg", "no-such-package-iai"], "a test").unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("sudo apt-get install -y no-such-package-iai"),
            "{text}"
        );
        assert!(!text.contains("install -y dpkg"), "{text}");
    }
}
