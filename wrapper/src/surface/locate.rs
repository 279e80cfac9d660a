//! Finding the iai-mcp release installed beside this wrapper: its bundled
//! Node wrapper (`iai_mcp/_wrapper/index.js`, where the release keeps its
//! tool surface) and its package metadata (`iai_pme-*.dist-info`, where its
//! version and the files it installed are listed).
//!
//! A release is looked for in Python environments ("prefixes"): where the
//! setting names one, only there; otherwise, in order, the environment this
//! binary is installed in (the wheel puts it in the `bin/` or `Scripts\`
//! of the environment it is installed into), the one `IAI_MCP_PYTHON`
//! names, and the one the `iai-mcp` program found on disk belongs to
//! (following its symbolic link, as pipx and `uv tool` make them). In each,
//! the places pip installs packages on Linux, macOS and Windows: venvs, the
//! user scheme, Debian's `dist-packages`. All of it is a few `stat` calls
//! and directory listings; nothing is read here but the small metadata
//! files.

use std::path::{Path, PathBuf};

use crate::platform::Platform;

/// The package's directory inside `site-packages`.
const PACKAGE: &str = "iai_mcp";

/// The bundle, inside the package.
const BUNDLE: &str = "_wrapper/index.js";

/// How wheels name the distribution's metadata directory
/// (`iai_pme-3.3.0.dist-info`).
const DIST_INFO_PREFIX: &str = "iai_pme-";

/// Largest metadata file read (`METADATA`, `RECORD`).
const MAX_METADATA_BYTES: u64 = 4 * 1024 * 1024;

/// Where to look for a release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Search {
    /// Only here (the setting): an environment, a `site-packages`
    /// directory, the `iai_mcp` package, or the bundle itself.
    Given(PathBuf),
    /// In these environments, in order.
    Environments(Vec<PathBuf>),
}

/// An installed release, as found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// The bundle.
    pub bundle: PathBuf,
    /// The package's metadata directory, if one names the bundle's
    /// package (none for a bundle given by itself).
    pub dist_info: Option<PathBuf>,
}

/// Why no release was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LocateError {
    /// The setting names a place that holds no release.
    #[error("{0} holds no iai-mcp release (no iai_mcp/_wrapper/index.js)")]
    NotThere(PathBuf),
    /// None of the environments looked in holds one.
    #[error("no iai-mcp release in {}", list(.0))]
    NoneFound(Vec<PathBuf>),
}

fn list(places: &[PathBuf]) -> String {
    if places.is_empty() {
        return "any environment (none to look in)".to_owned();
    }
    places
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

impl Search {
    /// The environments to look in when no setting names one: those of
    /// this binary's directory, of the Python `IAI_MCP_PYTHON` names, and
    /// of the `iai-mcp` program found (each a program's directory; the
    /// environment is its parent when the directory is `bin` or
    /// `Scripts`).
    pub fn around(program_dirs: impl IntoIterator<Item = PathBuf>) -> Search {
        let mut environments: Vec<PathBuf> = Vec::new();
        for dir in program_dirs {
            let environment = environment_of(&dir);
            if !environments.contains(&environment) {
                environments.push(environment);
            }
        }
        Search::Environments(environments)
    }

    /// The release this search finds on `platform`, if any.
    pub fn locate(&self, platform: Platform) -> Result<Installed, LocateError> {
        match self {
            Search::Given(place) => {
                given(place, platform).ok_or_else(|| LocateError::NotThere(place.clone()))
            }
            Search::Environments(environments) => environments
                .iter()
                .find_map(|environment| {
                    site_packages(environment, platform)
                        .into_iter()
                        .find_map(|dir| in_site_packages(&dir))
                })
                .ok_or_else(|| LocateError::NoneFound(environments.clone())),
        }
    }
}

/// The environment a program directory belongs to: its parent for `bin`
/// and `Scripts`, else the directory itself (a Windows Python installed
/// for all users keeps `python.exe` at its root).
fn environment_of(dir: &Path) -> PathBuf {
    let named = |name: &str| {
        dir.file_name()
            .is_some_and(|n| n.to_string_lossy().eq_ignore_ascii_case(name))
    };
    match dir.parent() {
        Some(parent) if named("bin") || named("Scripts") => parent.to_path_buf(),
        _ => dir.to_path_buf(),
    }
}

/// What the setting names: the bundle, the package, a `site-packages`, or
/// an environment.
fn given(place: &Path, platform: Platform) -> Option<Installed> {
    if place.is_file() {
        let package = place.parent()?.parent()?;
        let dist_info = package.parent().and_then(|sp| dist_info_for(sp, place));
        return Some(Installed {
            bundle: place.to_path_buf(),
            dist_info,
        });
    }
    if place.join(BUNDLE).is_file() {
        let bundle = place.join(BUNDLE);
        let dist_info = place.parent().and_then(|sp| dist_info_for(sp, &bundle));
        return Some(Installed { bundle, dist_info });
    }
    in_site_packages(place).or_else(|| {
        site_packages(place, platform)
            .into_iter()
            .find_map(|dir| in_site_packages(&dir))
    })
}

/// The release in one `site-packages` directory, if it holds one.
fn in_site_packages(dir: &Path) -> Option<Installed> {
    let bundle = dir.join(PACKAGE).join(BUNDLE);
    if !bundle.is_file() {
        return None;
    }
    let dist_info = dist_info_for(dir, &bundle);
    Some(Installed { bundle, dist_info })
}

/// The `site-packages` directories of an environment on `platform`, in the
/// order pip's schemes put them: `lib/python3.X/site-packages` (venvs,
/// Unix prefixes and the user scheme), `lib/python/site-packages` (the
/// macOS framework's user scheme), `lib/python3.X/dist-packages`
/// (Debian's), and on Windows `Lib\site-packages` (venvs, installs) and
/// `site-packages` (the user scheme).
pub fn site_packages(environment: &Path, platform: Platform) -> Vec<PathBuf> {
    let mut found = Vec::new();
    if platform == Platform::Windows {
        found.push(environment.join("Lib").join("site-packages"));
        found.push(environment.join("site-packages"));
        return found;
    }
    let lib = environment.join("lib");
    let mut versions: Vec<PathBuf> = std::fs::read_dir(&lib)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.file_name())
        .filter(|name| name.to_string_lossy().starts_with("python3"))
        .map(|name| lib.join(name))
        .collect();
    // Newest first, should several Pythons share a prefix.
    versions.sort_by(|a, b| b.cmp(a));
    for version in &versions {
        found.push(version.join("site-packages"));
    }
    found.push(lib.join("python").join("site-packages"));
    for version in &versions {
        found.push(version.join("dist-packages"));
    }
    found
}

/// The distribution metadata directory in `site_packages` that installed
/// `bundle`: the only `iai_pme-*.dist-info` there, or, among several, the
/// one whose `RECORD` lists the bundle at its present size.
fn dist_info_for(site_packages: &Path, bundle: &Path) -> Option<PathBuf> {
    let candidates: Vec<PathBuf> = std::fs::read_dir(site_packages)
        .ok()?
        .flatten()
        .filter(|entry| {
            let name = entry.file_name().to_string_lossy().to_ascii_lowercase();
            name.starts_with(DIST_INFO_PREFIX) && name.ends_with(".dist-info")
        })
        .map(|entry| entry.path())
        .collect();
    match candidates.as_slice() {
        [] => None,
        [only] => Some(only.clone()),
        several => {
            let size = std::fs::metadata(bundle).ok()?.len();
            several
                .iter()
                .find(|dir| {
                    read_small(&dir.join("RECORD"))
                        .and_then(|record| recorded_bundle(&record))
                        .is_some_and(|entry| entry.size == Some(size))
                })
                .cloned()
        }
    }
}

/// The `Version:` of a distribution's `METADATA`.
pub fn version(dist_info: &Path) -> Option<String> {
    let metadata = read_small(&dist_info.join("METADATA"))?;
    // The headers end at the first blank line; the description follows.
    let version = metadata
        .lines()
        .take_while(|line| !line.is_empty())
        .find_map(|line| line.strip_prefix("Version:"))?
        .trim();
    let plausible = !version.is_empty()
        && version.len() <= 64
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+' | '!'));
    plausible.then(|| version.to_owned())
}

/// What a distribution's `RECORD` says of the bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedBundle {
    /// Its SHA-256, as `RECORD` writes it (URL-safe base64, unpadded).
    pub sha256: Option<String>,
    /// Its size in bytes.
    pub size: Option<u64>,
}

/// The bundle's line of a `RECORD` file (`path,sha256=...,size`).
pub fn recorded_bundle(record: &str) -> Option<RecordedBundle> {
    let path = format!("{PACKAGE}/{BUNDLE}");
    record.lines().find_map(|line| {
        let mut fields = line.split(',');
        let recorded = fields.next()?;
        if recorded != path {
            return None;
        }
        let sha256 = fields
            .next()
            .and_then(|hash| hash.strip_prefix("sha256="))
            .map(str::to_owned);
        let size = fields.next().and_then(|size| size.trim().parse().ok());
        Some(RecordedBundle { sha256, size })
    })
}

/// A metadata file's text, if it is a regular file of at most
/// [`MAX_METADATA_BYTES`].
pub fn read_small(path: &Path) -> Option<String> {
    let metadata = std::fs::metadata(path).ok()?;
    if !metadata.is_file() || metadata.len() > MAX_METADATA_BYTES {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Installs a release's files (an empty bundle, metadata) under
    /// `site_packages`.
    fn install(site_packages: &Path, version: &str) -> PathBuf {
        let wrapper = site_packages.join(PACKAGE).join("_wrapper");
        std::fs::create_dir_all(&wrapper).expect("mkdir");
        std::fs::write(wrapper.join("index.js"), "bundle").expect("write");
        let dist_info = site_packages.join(format!("iai_pme-{version}.dist-info"));
        std::fs::create_dir_all(&dist_info).expect("mkdir");
        std::fs::write(
            dist_info.join("METADATA"),
            format!("Metadata-Version: 2.4\nName: iai-pme\nVersion: {version}\n\nVersion: 0.0.0 in prose\n"),
        )
        .expect("write");
        std::fs::write(
            dist_info.join("RECORD"),
            "iai_mcp/__init__.py,sha256=abc,10\niai_mcp/_wrapper/index.js,sha256=q83vEjRkZDU,6\n",
        )
        .expect("write");
        wrapper.join("index.js")
    }

    #[test]
    fn a_venv_on_each_platform() {
        let root = tempfile::tempdir().expect("tempdir");
        let unix = root.path().join("unix");
        let bundle = install(&unix.join("lib/python3.12/site-packages"), "3.2.3");
        let found = Search::around([unix.join("bin")])
            .locate(Platform::Linux)
            .expect("found");
        assert_eq!(found.bundle, bundle);
        let dist_info = found.dist_info.expect("metadata");
        assert_eq!(version(&dist_info).as_deref(), Some("3.2.3"));

        let windows = root.path().join("win");
        let bundle = install(&windows.join("Lib").join("site-packages"), "3.3.0");
        let found = Search::around([windows.join("Scripts")])
            .locate(Platform::Windows)
            .expect("found");
        assert_eq!(found.bundle, bundle);
        // The Unix layout is not where Windows installs.
        assert!(
            Search::around([unix.join("bin")])
                .locate(Platform::Windows)
                .is_err()
        );
    }

    #[test]
    fn the_user_scheme_and_debian_dist_packages() {
        let root = tempfile::tempdir().expect("tempdir");
        let mac_user = root.path().join("Library/Python/3.11");
        let bundle = install(&mac_user.join("lib/python/site-packages"), "3.1.0");
        let found = Search::around([mac_user.join("bin")])
            .locate(Platform::MacOs)
            .expect("found");
        assert_eq!(found.bundle, bundle);
        let debian = root.path().join("usr/local");
        let bundle = install(&debian.join("lib/python3.11/dist-packages"), "3.0.8");
        let found = Search::around([debian.join("bin")])
            .locate(Platform::Linux)
            .expect("found");
        assert_eq!(found.bundle, bundle);
    }

    #[test]
    fn environments_are_tried_in_order_and_a_setting_is_the_only_place() {
        let root = tempfile::tempdir().expect("tempdir");
        let empty = root.path().join("empty");
        std::fs::create_dir_all(empty.join("bin")).expect("mkdir");
        let second = root.path().join("second");
        let bundle = install(&second.join("lib/python3.11/site-packages"), "3.2.0");
        let found = Search::around([empty.join("bin"), second.join("bin")])
            .locate(Platform::Linux)
            .expect("found");
        assert_eq!(found.bundle, bundle);
        let error = Search::around([empty.join("bin")])
            .locate(Platform::Linux)
            .expect_err("none");
        assert!(error.to_string().contains("empty"), "{error}");

        // The setting may name the environment, site-packages, the
        // package or the bundle.
        let site_packages = second.join("lib/python3.11/site-packages");
        for place in [
            second.clone(),
            site_packages.clone(),
            site_packages.join(PACKAGE),
            bundle.clone(),
        ] {
            let found = Search::Given(place.clone())
                .locate(Platform::Linux)
                .unwrap_or_else(|e| panic!("{}: {e}", place.display()));
            assert_eq!(found.bundle, bundle, "{}", place.display());
            assert!(found.dist_info.is_some(), "{}", place.display());
        }
        assert!(matches!(
            Search::Given(empty.clone()).locate(Platform::Linux),
            Err(LocateError::NotThere(_))
        ));
    }

    #[test]
    fn among_several_metadata_directories_the_one_recording_the_bundle() {
        let root = tempfile::tempdir().expect("tempdir");
        let site_packages = root.path().join("lib/python3.11/site-packages");
        install(&site_packages, "3.2.3");
        // A stale directory left by an interrupted upgrade.
        let stale = site_packages.join("iai_pme-3.0.0.dist-info");
        std::fs::create_dir_all(&stale).expect("mkdir");
        std::fs::write(stale.join("METADATA"), "Version: 3.0.0\n").expect("write");
        std::fs::write(
            stale.join("RECORD"),
            "iai_mcp/_wrapper/index.js,sha256=x,999\n",
        )
        .expect("write");
        let found = Search::around([root.path().join("bin")])
            .locate(Platform::Linux)
            .expect("found");
        assert_eq!(
            found.dist_info.as_deref().and_then(version).as_deref(),
            Some("3.2.3")
        );
    }

    #[test]
    fn records_and_versions_are_read_strictly() {
        assert_eq!(
            recorded_bundle("a,b,1\niai_mcp/_wrapper/index.js,sha256=AbC-_d,572205\n"),
            Some(RecordedBundle {
                sha256: Some("AbC-_d".into()),
                size: Some(572_205)
            })
        );
        assert_eq!(
            recorded_bundle("iai_mcp/_wrapper/index.jsx,sha256=a,1\n"),
            None
        );
        let dir = tempfile::tempdir().expect("tempdir");
        for (metadata, expected) in [
            ("Name: iai-pme\nVersion: 3.3.0\n", Some("3.3.0")),
            ("Name: iai-pme\n\nVersion: 3.3.0\n", None),
            ("Version: 3.3.0; rm -rf\n", None),
            ("", None),
        ] {
            std::fs::write(dir.path().join("METADATA"), metadata).expect("write");
            assert_eq!(version(dir.path()).as_deref(), expected, "{metadata:?}");
        }
        std::fs::remove_file(dir.path().join("METADATA")).expect("rm");
        std::fs::create_dir(dir.path().join("METADATA")).expect("mkdir");
        assert_eq!(version(dir.path()), None, "a directory is no metadata");
    }
}
