//! Watching directories themselves: any change among a directory's
//! entries (one created, written, removed or renamed), or to the directory
//! itself, is reported as "look now", without saying which entry. The
//! watcher's owner then looks at the files it cares about: an event is a
//! hint, never a fact.
//!
//! On macOS each directory is watched through kqueue, on the directory's
//! own descriptor (`EVFILT_VNODE`: writes, deletion, renames), never on its
//! entries: watching a directory of many files costs one descriptor, and a
//! socket (which cannot be opened) is seen appear like any other entry.
//! Elsewhere the `notify` crate watches each directory without recursion
//! (inotify on Linux, ReadDirectoryChangesW on Windows).
//!
//! Events arrive on a thread of the backend's; the owner gives a callback
//! that must not block (it typically forwards to a channel).

mod event;
#[cfg(target_os = "macos")]
mod kqueue;
#[cfg(not(target_os = "macos"))]
mod notify_backend;

use std::path::Path;

pub use self::event::{DirEvent, WatchError};
#[cfg(target_os = "macos")]
use self::kqueue::Backend;
#[cfg(not(target_os = "macos"))]
use self::notify_backend::Backend;

/// A set of watched directories; dropping it ends the watch and its
/// thread.
pub struct DirWatch {
    backend: Backend,
}

impl std::fmt::Debug for DirWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DirWatch")
    }
}

impl DirWatch {
    /// A watch of no directory yet, reporting to `report` from a thread of
    /// its own.
    pub fn new(report: impl FnMut(DirEvent) + Send + 'static) -> Result<DirWatch, WatchError> {
        Ok(DirWatch {
            backend: Backend::new(Box::new(report))?,
        })
    }

    /// Watches `dir` (not its entries' contents, not its subdirectories).
    pub fn watch(&mut self, dir: &Path) -> Result<(), WatchError> {
        self.backend.watch(dir)
    }

    /// Stops watching `dir` (which may be gone already).
    pub fn unwatch(&mut self, dir: &Path) {
        self.backend.unwatch(dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// A generous bound for an event to arrive (a safety net, not a
    /// timing assertion).
    const ARRIVAL: Duration = Duration::from_secs(20);

    fn watch(dir: &Path) -> (DirWatch, mpsc::Receiver<DirEvent>) {
        let (tx, rx) = mpsc::channel();
        let mut watch = DirWatch::new(move |event| {
            let _ = tx.send(event);
        })
        .expect("a watch");
        watch.watch(dir).expect("watched");
        (watch, rx)
    }

    #[test]
    fn an_entry_created_in_the_directory_is_reported() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (_watch, events) = watch(dir.path());
        std::fs::write(dir.path().join("a"), "1").expect("write");
        assert!(matches!(
            events.recv_timeout(ARRIVAL),
            Ok(DirEvent::Changed)
        ));
    }

    #[cfg(unix)]
    #[test]
    fn a_socket_bound_in_the_directory_is_reported() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (_watch, events) = watch(dir.path());
        let _listener =
            std::os::unix::net::UnixListener::bind(dir.path().join("d.sock")).expect("bind");
        assert!(matches!(
            events.recv_timeout(ARRIVAL),
            Ok(DirEvent::Changed)
        ));
    }

    #[test]
    fn a_directory_that_is_not_there_cannot_be_watched() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut watch = DirWatch::new(|_| {}).expect("a watch");
        assert!(matches!(
            watch.watch(&dir.path().join("missing")),
            Err(WatchError::Arm { .. })
        ));
    }
}
