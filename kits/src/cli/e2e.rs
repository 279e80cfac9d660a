//! The end-to-end kit's command line.

use std::path::PathBuf;

use clap::Args;

use crate::e2e::Release;

/// Check the wrapper against the real iai-mcp daemon (3.3.0, or the
/// release --iai-pme names).
#[derive(Debug, Args)]
pub struct E2eArgs {
    /// The iai-pme release to run against (its daemon, CLIs and own
    /// wrapper). Another release than the pinned one is installed in
    /// target/e2e/VERSION/venv with its own dependencies.
    #[arg(long, value_name = "VERSION", default_value_t = Release::pinned())]
    pub iai_pme: Release,
    /// Install the release alone, in target/e2e/VERSION/on-pinned, on the
    /// pinned release's dependencies (refused when it declares others):
    /// megabytes instead of an environment of its own.
    #[arg(long)]
    pub on_pinned_deps: bool,
    /// The Python 3.11 or 3.12 interpreter to build the environment with
    /// (default: the first on PATH).
    #[arg(long)]
    pub python: Option<PathBuf>,
    /// The Node.js binary that runs the release's own wrapper for
    /// comparison.
    #[arg(long, default_value = "node")]
    pub node: PathBuf,
}
