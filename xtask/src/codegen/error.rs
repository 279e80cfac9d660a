//! What can stop the code generation: the release could not be installed
//! or listed, or a file of the workspace could not be read, understood or
//! written.

use std::io;
use std::path::{Path, PathBuf};

use kits::HarnessError;
use thiserror::Error;

/// Why `cargo xtask surface` could not compare or rewrite.
#[derive(Debug, Error)]
pub enum CodegenError {
    /// Installing the release, or asking its own wrapper for its tools,
    /// failed (the end-to-end kit's error, as it reports it).
    #[error(transparent)]
    Release(#[from] HarnessError),
    /// A file of the workspace could not be read or written.
    #[error("{doing} {}", path.display())]
    Io {
        /// `reading` or `writing`.
        doing: &'static str,
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A file of the workspace is not what the generator edits: a table
    /// that is not a JSON array, a constant declared not exactly once.
    #[error("{}: {why}", path.display())]
    SourceFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
}

impl CodegenError {
    /// An I/O error `doing` something to `path`.
    pub fn io(doing: &'static str, path: &Path, source: io::Error) -> Self {
        Self::Io {
            doing,
            path: path.to_owned(),
            source,
        }
    }

    /// `path` is not what the generator edits, for the reason `why`.
    pub fn source_file(path: &Path, why: impl Into<String>) -> Self {
        Self::SourceFile {
            path: path.to_owned(),
            why: why.into(),
        }
    }
}
