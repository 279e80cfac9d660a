//! How the end-to-end kit is run: the release, where its environment
//! lives and where its dependencies come from, the binaries.

use std::path::PathBuf;

use harness::error::HarnessError;

use super::pyenv::{self, Contents};
use super::release::Release;

/// How to run the kit.
#[derive(Debug, Clone)]
pub struct E2eConfig {
    /// Where the virtual environments live (kept between runs): the pinned
    /// release's in `venv`, another's in `<VERSION>/venv`
    /// ([`Release::e2e_venv`]).
    pub work_dir: PathBuf,
    /// The iai-pme release whose daemon, CLIs and own wrapper are used.
    pub release: Release,
    /// The wrapper binary under test, unless [`WHEEL_ENV`](devkit::bins::WHEEL_ENV)
    /// names a wheel to install and test instead.
    pub wrapper: PathBuf,
    /// The Python interpreter to build the environment with (default: the
    /// first supported one on `PATH`).
    pub python: Option<PathBuf>,
    /// The Node.js binary that runs the release's own wrapper.
    pub node: PathBuf,
    /// Where the release's dependencies come from.
    pub deps: Deps,
}

/// Where a release's dependencies come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Deps {
    /// Its own environment, with everything it declares installed
    /// afresh (about 660 MB for a 3.x release).
    #[default]
    Own,
    /// The pinned release's environment: the release alone is installed
    /// in a small environment that imports the rest from the pinned one
    /// ([`pyenv::ensure_on_pinned`]); only for a release that declares
    /// the same dependencies, the cheap way CI covers other releases.
    Pinned,
}

impl E2eConfig {
    /// The environment the checks run in, made ready.
    pub(super) fn environment(&self) -> Result<pyenv::PyEnv, HarnessError> {
        let python = self.python.as_deref();
        match self.deps {
            Deps::Own => pyenv::ensure(
                &self.release.e2e_venv(&self.work_dir),
                python,
                &self.release,
                Contents::Kit,
            ),
            Deps::Pinned => {
                let pinned = Release::pinned();
                let base = pyenv::ensure(
                    &pinned.e2e_venv(&self.work_dir),
                    python,
                    &pinned,
                    Contents::Kit,
                )?;
                pyenv::ensure_on_pinned(
                    &self.release.on_pinned_venv(&self.work_dir),
                    &base,
                    &self.release,
                )
            }
        }
    }

    /// Where the kit keeps the environment it makes ready for the
    /// checks.
    pub fn venv(&self) -> PathBuf {
        match self.deps {
            Deps::Own => self.release.e2e_venv(&self.work_dir),
            Deps::Pinned => self.release.on_pinned_venv(&self.work_dir),
        }
    }
}
