//! The hosts kit's command.

use std::path::PathBuf;

use clap::Args;

use crate::hosts::host::{Host, HostPin};

/// Claude Code, Codex CLI and opencode, each installed from the npm
/// registry at its pinned version and driven offline against a stand-in
/// model, start the wrapper (installed from its wheel) on the real
/// iai-mcp 3.3.0 daemon.
#[derive(Debug, Args)]
pub struct HostsArgs {
    /// Another version of a host than the pinned one, as NAME=VERSION or
    /// NAME=latest (NAME: claude-code, codex, opencode); repeatable.
    #[arg(long, value_name = "NAME=VERSION")]
    pub host_version: Vec<HostPin>,
    /// Only this host (repeatable; default: all three).
    #[arg(long, value_name = "NAME")]
    pub host: Vec<Host>,
    /// Another wrapper command to run the same checks with, reported on
    /// beside this wrapper (repeatable), e.g. "node /path/index.js".
    #[arg(long, value_name = "CMD")]
    pub wrapper_cmd: Vec<String>,
    /// Also run the checks with the release's own Node wrapper, from the
    /// end-to-end kit's environment.
    #[arg(long)]
    pub release_wrapper: bool,
    /// The Python 3.11 or 3.12 interpreter for the end-to-end environment
    /// (default: the first on PATH).
    #[arg(long)]
    pub python: Option<PathBuf>,
    /// The Node.js binary that runs the release's own wrapper.
    #[arg(long, default_value = "node")]
    pub node: PathBuf,
    /// Also run the wrappers broken on purpose (capture-offline,
    /// mute-third-call, errors-after-first) in front of this wrapper; the
    /// run fails unless each fails at least one check in every host.
    #[arg(long)]
    pub broken_wrappers: bool,
    /// Write the pins afresh and run nothing else: each host's npm
    /// lockfile at its pinned version (kits/pins/npm/) and the constraints
    /// of each constrained iai-pme release (kits/pins/), resolved today.
    #[arg(long)]
    pub refresh_pins: bool,
}
