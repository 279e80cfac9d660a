//! What a watch tells its owner: "look now", or that it failed, and the
//! callback a backend tells it through.

use std::path::PathBuf;

/// What a watch reports.
#[derive(Debug)]
pub enum DirEvent {
    /// Something changed in a watched directory, or to one (or events were
    /// lost): look now.
    Changed,
    /// The watch failed: nothing more will be reported.
    Failed(WatchError),
}

/// Why a directory cannot be watched, or a watch stopped.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// The platform's notifications could not be started.
    #[error("file-system notifications are unavailable: {0}")]
    Start(String),
    /// A directory could not be watched (a watch limit reached, a file
    /// system without notifications, no permission).
    #[error("cannot watch {}: {reason}", dir.display())]
    Arm {
        /// The directory.
        dir: PathBuf,
        /// The platform's error.
        reason: String,
    },
    /// The notifications reported an error.
    #[error("the file-system watch failed: {0}")]
    Backend(String),
}

/// The callback a backend reports to.
pub(super) type Report = Box<dyn FnMut(DirEvent) + Send>;
