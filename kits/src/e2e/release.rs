//! Which iai-pme release a run is about: the pinned one (the release the
//! wrapper's tool table is) or another one named on the command line.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// The release the wrapper's tool table is (`SURFACE_RELEASE` in
/// `wrapper/src/tools/mod.rs`), and the one the kit checks by default.
pub const PINNED: &str = "3.3.0";

/// The releases whose environments are pinned whole: each has a pip
/// constraints file, `kits/pins/iai-pme-VERSION.constraints.txt`, fixing
/// the version of every package its environment holds (its dependencies
/// and the MCP SDK's). Adding a release: a line here, then `cargo xtask
/// hosts --refresh-pins` writes its file. A release not listed is
/// installed with its dependencies resolved afresh, and the report says so.
pub const CONSTRAINED: [&str; 1] = [PINNED];

/// An iai-pme release as pip names it (`3.3.0`, `3.4.0rc1`): digits first,
/// then only ASCII letters, digits and dots, so that it is safe as a
/// requirement and as a directory name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Release(String);

/// A release name that is not of the accepted shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "not an iai-pme release: {0:?} (expected a version such as 3.3.0: a digit first, then letters, digits and dots)"
)]
pub struct BadRelease(pub String);

impl FromStr for Release {
    type Err = BadRelease;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let shaped = s.starts_with(|c: char| c.is_ascii_digit())
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '.')
            && !s.contains("..")
            && !s.ends_with('.');
        if shaped {
            Ok(Release(s.to_owned()))
        } else {
            Err(BadRelease(s.to_owned()))
        }
    }
}

impl Default for Release {
    fn default() -> Self {
        Release::pinned()
    }
}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.0)
    }
}

impl Release {
    /// The pinned release, [`PINNED`].
    pub fn pinned() -> Self {
        Release(PINNED.to_owned())
    }

    /// The version, e.g. `3.3.0`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is the release the tool table is.
    pub fn is_pinned(&self) -> bool {
        self.0 == PINNED
    }

    /// The pip requirement that installs exactly this release.
    pub fn requirement(&self) -> String {
        format!("iai-pme=={}", self.0)
    }

    /// Whether this release's environment is pinned whole ([`CONSTRAINED`]).
    pub fn is_constrained(&self) -> bool {
        CONSTRAINED.contains(&self.0.as_str())
    }

    /// This release's constraints file in the repository (present for a
    /// [`CONSTRAINED`] release).
    pub fn constraints_file(&self) -> PathBuf {
        pins_dir().join(format!("iai-pme-{}.constraints.txt", self.0))
    }

    /// Where the end-to-end kit keeps this release's environment under
    /// `work_dir`: `venv` for the pinned release (the path the docs and
    /// the scorecard name), `<VERSION>/venv` for any other.
    pub fn e2e_venv(&self, work_dir: &Path) -> PathBuf {
        if self.is_pinned() {
            work_dir.join("venv")
        } else {
            work_dir.join(&self.0).join("venv")
        }
    }
}

impl Release {
    /// Where the end-to-end kit keeps this release installed on the pinned
    /// release's dependencies (`--on-pinned-deps`): `<VERSION>/on-pinned`.
    pub fn on_pinned_venv(&self, work_dir: &Path) -> PathBuf {
        work_dir.join(&self.0).join("on-pinned")
    }
}

/// Where the repository keeps the kits' pins: `kits/pins/`.
pub fn pins_dir() -> PathBuf {
    devkit::bins::workspace_root().join("kits/pins")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_and_anything_else_is_refused() {
        for good in ["3.3.0", "3.0.0", "3.4.0rc1", "10.2"] {
            assert_eq!(good.parse::<Release>().unwrap().as_str(), good);
        }
        for bad in [
            "", "latest", ">=3.0", "3.3.0; x", "../3.3.0", "3..0", "3.", "3.3.0/x",
        ] {
            assert!(bad.parse::<Release>().is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn the_pinned_release_keeps_the_documented_environment_path() {
        let work = Path::new("/t/e2e");
        assert_eq!(Release::pinned().e2e_venv(work), work.join("venv"));
        let other: Release = "3.2.3".parse().unwrap();
        assert_eq!(other.e2e_venv(work), work.join("3.2.3/venv"));
        assert_eq!(other.requirement(), "iai-pme==3.2.3");
        assert!(!other.is_pinned() && Release::pinned().is_pinned());
    }

    #[test]
    fn every_constrained_release_has_its_constraints_file() {
        for version in CONSTRAINED {
            let release: Release = version.parse().expect("a release");
            let file = release.constraints_file();
            let text = std::fs::read_to_string(&file).unwrap_or_else(|e| {
                panic!("{}: {e} (cargo xtask hosts --refresh-pins)", file.display())
            });
            let line = format!("iai-pme=={version}");
            assert!(
                text.lines().any(|l| l.trim() == line),
                "{} does not pin {line}",
                file.display()
            );
        }
        assert!(Release::pinned().is_constrained());
    }

    #[test]
    fn pinned_is_the_wrapper_tables_release() {
        let tools = include_str!("../../../wrapper/src/tools/mod.rs");
        let line = format!("pub const SURFACE_RELEASE: &str = \"{PINNED}\";");
        assert!(
            tools.lines().any(|l| l == line),
            "wrapper/src/tools/mod.rs has no line {line}"
        );
    }
}
