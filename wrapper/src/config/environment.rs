//! What settings are resolved against besides the flags, and how a path
//! setting is read.

use std::path::PathBuf;

use crate::platform::Platform;

/// What the settings are resolved against, besides the flags: read by the
/// binary from its process, given by tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Environment {
    /// The user's profile directory (`$HOME`; on Windows `%USERPROFILE%`,
    /// see [`Platform::profile_dir`]), where the daemon's base directory
    /// is by default.
    pub home: Option<PathBuf>,
    /// The directory of this binary as it was started (a wheel installed
    /// into iai-mcp's environment puts it beside the CLIs).
    pub wrapper_dir: Option<PathBuf>,
    /// The directory of this binary with symbolic links followed (pipx and
    /// `uv tool` start it through a link in `~/.local/bin`; the real file
    /// is in the environment it was installed into).
    pub real_wrapper_dir: Option<PathBuf>,
    /// Whose conventions apply (default endpoint, program file names).
    pub platform: Platform,
}

/// A path setting's value, if one was given (empty means unset).
pub(super) fn given(value: Option<String>) -> Option<PathBuf> {
    value.filter(|v| !v.is_empty()).map(PathBuf::from)
}
