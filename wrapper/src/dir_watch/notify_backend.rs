//! The watch through the `notify` crate, each directory without recursion:
//! inotify on Linux, ReadDirectoryChangesW on Windows. Which entry an event
//! names is not passed on (see the module above).

use std::path::Path;

use notify::event::{AccessKind, AccessMode};
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use super::event::{DirEvent, Report, WatchError};

/// A `notify` watcher reporting "look now".
pub(super) struct Backend {
    watcher: RecommendedWatcher,
}

impl Backend {
    pub(super) fn new(mut report: Report) -> Result<Backend, WatchError> {
        let handler = move |event: notify::Result<notify::Event>| match event {
            Ok(event) if is_news(&event) => report(DirEvent::Changed),
            Ok(_) => {}
            Err(error) => report(DirEvent::Failed(WatchError::Backend(error.to_string()))),
        };
        let watcher = RecommendedWatcher::new(handler, notify::Config::default())
            .map_err(|e| WatchError::Start(e.to_string()))?;
        Ok(Backend { watcher })
    }

    pub(super) fn watch(&mut self, dir: &Path) -> Result<(), WatchError> {
        if !dir.is_dir() {
            return Err(WatchError::Arm {
                dir: dir.to_path_buf(),
                reason: "not a directory".to_owned(),
            });
        }
        self.watcher
            .watch(dir, RecursiveMode::NonRecursive)
            .map_err(|e| WatchError::Arm {
                dir: dir.to_path_buf(),
                reason: e.to_string(),
            })
    }

    pub(super) fn unwatch(&mut self, dir: &Path) {
        // It may be gone from disk already, and its watch with it.
        let _ = self.watcher.unwatch(dir);
    }
}

/// Whether an event may mean an entry changed: a file opened or read (a
/// wrapper reading the port file, say) is no news; one closed after
/// writing, and everything else, is.
fn is_news(event: &notify::Event) -> bool {
    match event.kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        EventKind::Any
        | EventKind::Create(_)
        | EventKind::Modify(_)
        | EventKind::Remove(_)
        | EventKind::Other => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{CreateKind, RemoveKind};

    #[test]
    fn reads_are_no_news_and_everything_else_is() {
        let news = |kind| is_news(&notify::Event::new(kind));
        assert!(news(EventKind::Create(CreateKind::File)));
        assert!(news(EventKind::Remove(RemoveKind::Folder)));
        assert!(news(EventKind::Access(AccessKind::Close(
            AccessMode::Write
        ))));
        assert!(!news(EventKind::Access(AccessKind::Open(AccessMode::Read))));
        assert!(!news(EventKind::Access(AccessKind::Close(
            AccessMode::Read
        ))));
    }
}
