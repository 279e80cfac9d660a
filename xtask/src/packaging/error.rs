//! What can go wrong while building, checking or running the wheels: the
//! error every module of the packaging returns, in a module of its own so
//! that each imports it beside the others, not from their parent.

use devkit::error::DevkitError;

/// A distribution task that could not be carried out (a check that ran and
/// failed is a row of a report, not an error).
#[derive(Debug, thiserror::Error)]
pub enum DistError {
    /// The dev kit's helpers (Python environments, commands, building
    /// binaries).
    #[error(transparent)]
    Devkit(#[from] DevkitError),
    /// A file or directory could not be read or written.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
    /// A Debian package this machine needs is not installed.
    #[error(
        "missing Debian package(s) {missing} ({why}); install with: sudo apt-get install -y {missing}"
    )]
    MissingPackages {
        /// The packages, space-separated.
        missing: String,
        /// What needs them.
        why: String,
    },
    /// A target this task does not know.
    #[error("unknown target {given:?}: expected one of {known}, or all")]
    UnknownTarget {
        /// What was asked for.
        given: String,
        /// The targets known, comma-separated.
        known: String,
    },
    /// An external program failed or could not start.
    #[error("{what} failed: {detail}")]
    Tool {
        /// What the program was doing.
        what: String,
        /// Its exit status and the end of its output, or why it did not run.
        detail: String,
    },
    /// The wrapper does not compile for a target whose toolchain works.
    #[error(
        "the wrapper does not compile for {target} (cargo's errors are above); the toolchain and linker for it work: `cargo xtask cross-check --target {target} --probe-only` builds and runs a std-only program with them"
    )]
    WrapperDoesNotCompile {
        /// The target triple.
        target: String,
    },
    /// Something built is not what it should be (no wheel, two wheels).
    #[error("{0}")]
    Unexpected(String),
}

impl DistError {
    /// An I/O error while doing `what`.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        DistError::Io {
            what: what.into(),
            source,
        }
    }

    /// A failed program, with `detail`.
    pub fn tool(what: impl Into<String>, detail: impl Into<String>) -> Self {
        DistError::Tool {
            what: what.into(),
            detail: detail.into(),
        }
    }
}
