//! Watching the daemon's endpoint while the daemon is away, so that the
//! bridge dials when the endpoint appears instead of polling for it.
//!
//! What is watched is the directory of each file the endpoint is made of
//! ([`Endpoint::watched_files`]: the socket, or the port and token files).
//! Watching the directory, not the file, is what sees a socket being
//! created. Where that directory does not exist yet, its nearest existing
//! ancestor is watched, and the watch moves down as the missing
//! directories are created (and back up when one is deleted). Each move
//! is followed by a look at whether a file already exists, so that one
//! created while the watch moved is not missed.
//!
//! The file-system notifications come from the `notify` crate (inotify on
//! Linux, kqueue on macOS, ReadDirectoryChangesW on Windows) on a thread
//! of its own; the watch's own thread classifies them and re-arms, so no
//! file-system call runs on the runtime's thread. The driver receives only
//! [`Notice`]s. A watch that cannot be set, or that breaks, says so once
//! ([`Notice::Unavailable`]) and ends: the bridge then polls on its backoff.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::mpsc as std_mpsc;

use notify::event::{AccessKind, AccessMode};
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;

use crate::transport::Endpoint;

/// What the watch tells the driver.
#[derive(Debug)]
pub enum Notice {
    /// The watch is set, on these directories (at start, and after each
    /// move).
    Armed {
        /// The directories watched.
        directories: Vec<PathBuf>,
    },
    /// A watched file appeared or changed (or events may have been lost):
    /// the daemon may be back.
    Appeared,
    /// A watched file existed when the watch was set or moved: it may have
    /// been created before the watch could see it.
    Present,
    /// No watch can be set, or it broke: the watch has ended.
    Unavailable(WatchError),
}

/// Why the endpoint cannot be watched.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// The endpoint is made of no file (nothing to watch).
    #[error("the endpoint has no file to watch")]
    NothingToWatch,
    /// No directory above the file exists (a relative path whose base is
    /// gone, for one).
    #[error("no existing directory above {}", .0.display())]
    NoDirectory(PathBuf),
    /// The platform's notifications could not be started.
    #[error("file-system notifications are unavailable: {0}")]
    Start(notify::Error),
    /// A directory could not be watched (a watch limit reached, a file
    /// system without notifications).
    #[error("cannot watch {}: {source}", dir.display())]
    Arm {
        /// The directory.
        dir: PathBuf,
        /// The platform's error.
        source: notify::Error,
    },
    /// The notifications reported an error.
    #[error("the file-system watch failed: {0}")]
    Backend(notify::Error),
}

/// The watch on one endpoint; dropping it ends the watch.
#[derive(Debug)]
pub struct EndpointWatch {
    notices: mpsc::UnboundedReceiver<Notice>,
    stop: std_mpsc::Sender<Input>,
}

impl EndpointWatch {
    /// Starts watching `endpoint`. The first notice is
    /// [`Notice::Armed`] or [`Notice::Unavailable`].
    pub fn start(endpoint: &Endpoint) -> Self {
        let files = endpoint.watched_files();
        let (notices_tx, notices) = mpsc::unbounded_channel();
        let (input_tx, input) = std_mpsc::channel();
        let events = input_tx.clone();
        let spawned = std::thread::Builder::new()
            .name("endpoint-watch".into())
            .spawn(move || run(files, events, input, notices_tx.clone()));
        if let Err(error) = spawned {
            // The thread took the sender with it; this receiver then ends.
            tracing::debug!(%error, "the endpoint watch thread could not start");
        }
        EndpointWatch {
            notices,
            stop: input_tx,
        }
    }

    /// The next notice; `None` once the watch has ended.
    pub async fn next(&mut self) -> Option<Notice> {
        self.notices.recv().await
    }
}

impl Drop for EndpointWatch {
    fn drop(&mut self) {
        let _ = self.stop.send(Input::Stop);
    }
}

/// What the watch thread receives.
enum Input {
    /// A notification (or error) from `notify`.
    Fs(notify::Result<notify::Event>),
    /// The owner is gone.
    Stop,
}

/// The files of one endpoint and the directories watched for them.
struct Armed {
    files: Vec<PathBuf>,
    directories: BTreeSet<PathBuf>,
}

impl Armed {
    /// The directories that should be watched now: for each file, its
    /// directory or that directory's nearest existing ancestor.
    fn wanted(&self) -> Result<BTreeSet<PathBuf>, WatchError> {
        self.files
            .iter()
            .map(|file| {
                nearest_directory(file).ok_or_else(|| WatchError::NoDirectory(file.clone()))
            })
            .collect()
    }

    /// Moves the watch to the directories wanted now. Returns whether it
    /// moved.
    fn rearm(&mut self, watcher: &mut RecommendedWatcher) -> Result<bool, WatchError> {
        let wanted = self.wanted()?;
        if wanted == self.directories {
            return Ok(false);
        }
        for gone in self.directories.difference(&wanted) {
            // It may be gone from disk already, and its watch with it.
            let _ = watcher.unwatch(gone);
        }
        for dir in wanted.difference(&self.directories) {
            watcher
                .watch(dir, RecursiveMode::NonRecursive)
                .map_err(|source| WatchError::Arm {
                    dir: dir.clone(),
                    source,
                })?;
        }
        self.directories = wanted;
        Ok(true)
    }

    /// The notices for a watch just set or moved: where it is, and, if a
    /// file exists already, that it appeared (it may have been created
    /// before the watch could see it).
    fn armed(&self) -> Vec<Notice> {
        let mut notices = vec![Notice::Armed {
            directories: self.directories.iter().cloned().collect(),
        }];
        if self.files.iter().any(|f| f.symlink_metadata().is_ok()) {
            notices.push(Notice::Present);
        }
        notices
    }

    /// Whether `event` says a watched file appeared or changed.
    fn touches_a_file(&self, event: &notify::Event) -> bool {
        let kind_counts = match event.kind {
            // A file removed is no news of a daemon; one opened or read (a
            // wrapper reading the port file) is none either.
            EventKind::Remove(_) => false,
            EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
            EventKind::Access(_) => false,
            EventKind::Any | EventKind::Create(_) | EventKind::Modify(_) | EventKind::Other => true,
        };
        kind_counts && event.paths.iter().any(|p| self.files.contains(p))
    }

    /// Whether `event` may change which directories should be watched: it
    /// concerns a watched directory itself, or a directory on the way down
    /// to a file's.
    fn moves_the_watch(&self, event: &notify::Event) -> bool {
        event.paths.iter().any(|path| {
            self.directories.contains(path)
                || self
                    .files
                    .iter()
                    .any(|file| file.parent().is_some_and(|dir| dir.starts_with(path)))
        })
    }
}

/// The watch thread: arms, then turns notifications into notices until
/// the owner is gone or the watch breaks.
fn run(
    files: Vec<PathBuf>,
    events: std_mpsc::Sender<Input>,
    input: std_mpsc::Receiver<Input>,
    notices: mpsc::UnboundedSender<Notice>,
) {
    if files.is_empty() {
        let _ = notices.send(Notice::Unavailable(WatchError::NothingToWatch));
        return;
    }
    let handler = move |event: notify::Result<notify::Event>| {
        let _ = events.send(Input::Fs(event));
    };
    let mut watcher = match RecommendedWatcher::new(handler, notify::Config::default()) {
        Ok(watcher) => watcher,
        Err(error) => {
            let _ = notices.send(Notice::Unavailable(WatchError::Start(error)));
            return;
        }
    };
    let mut armed = Armed {
        files,
        directories: BTreeSet::new(),
    };
    if let Err(error) = armed.rearm(&mut watcher) {
        let _ = notices.send(Notice::Unavailable(error));
        return;
    }
    let mut told = armed.armed();
    loop {
        let mut ended = false;
        for notice in told {
            ended |= matches!(notice, Notice::Unavailable(_));
            if notices.send(notice).is_err() {
                return;
            }
        }
        if ended {
            return;
        }
        told = match input.recv() {
            Ok(Input::Fs(Ok(event))) => classify(&mut armed, &mut watcher, &event),
            Ok(Input::Fs(Err(error))) => vec![Notice::Unavailable(WatchError::Backend(error))],
            Ok(Input::Stop) | Err(_) => return,
        };
    }
}

/// What one notification means (nothing, mostly).
fn classify(
    armed: &mut Armed,
    watcher: &mut RecommendedWatcher,
    event: &notify::Event,
) -> Vec<Notice> {
    if event.need_rescan() {
        // Events were lost: whatever happened, look again.
        return match armed.rearm(watcher) {
            Err(error) => vec![Notice::Unavailable(error)],
            Ok(_) => vec![Notice::Appeared],
        };
    }
    if armed.touches_a_file(event) {
        return vec![Notice::Appeared];
    }
    if !armed.moves_the_watch(event) {
        return Vec::new();
    }
    match armed.rearm(watcher) {
        Err(error) => vec![Notice::Unavailable(error)],
        Ok(false) => Vec::new(),
        Ok(true) => armed.armed(),
    }
}

/// The directory of `file`, or its nearest existing ancestor.
fn nearest_directory(file: &Path) -> Option<PathBuf> {
    let mut dir = file.parent()?;
    loop {
        if dir.is_dir() {
            return Some(dir.to_owned());
        }
        dir = dir.parent()?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_existing_directory_is_watched() {
        let base = tempfile::tempdir().expect("tempdir");
        let file = base.path().join("a/b/daemon.sock");
        assert_eq!(nearest_directory(&file).as_deref(), Some(base.path()));
        std::fs::create_dir_all(base.path().join("a/b")).expect("mkdir");
        assert_eq!(
            nearest_directory(&file),
            Some(base.path().join("a/b")),
            "the file's own directory once it exists"
        );
    }

    #[test]
    fn removals_and_reads_are_no_news_but_creation_and_writes_are() {
        let armed = Armed {
            files: vec![PathBuf::from("/d/daemon.port")],
            directories: BTreeSet::from([PathBuf::from("/d")]),
        };
        let event = |kind| notify::Event::new(kind).add_path(PathBuf::from("/d/daemon.port"));
        use notify::event::{CreateKind, ModifyKind, RemoveKind};
        assert!(armed.touches_a_file(&event(EventKind::Create(CreateKind::File))));
        assert!(armed.touches_a_file(&event(EventKind::Modify(ModifyKind::Any))));
        assert!(
            armed.touches_a_file(&event(EventKind::Access(AccessKind::Close(
                AccessMode::Write
            ))))
        );
        assert!(!armed.touches_a_file(&event(EventKind::Remove(RemoveKind::File))));
        assert!(
            !armed.touches_a_file(&event(EventKind::Access(AccessKind::Open(
                AccessMode::Read
            ))))
        );
        let other = notify::Event::new(EventKind::Create(CreateKind::File))
            .add_path(PathBuf::from("/d/other"));
        assert!(!armed.touches_a_file(&other));
        assert!(!armed.moves_the_watch(&other));
        let gone =
            notify::Event::new(EventKind::Remove(RemoveKind::Folder)).add_path(PathBuf::from("/d"));
        assert!(armed.moves_the_watch(&gone));
    }
}
