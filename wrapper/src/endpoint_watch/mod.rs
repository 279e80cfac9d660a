//! Watching the daemon's endpoint while the daemon is away, so that the
//! bridge dials when the endpoint appears instead of polling for it.
//!
//! What is watched is the directory of each file the endpoint is made of
//! ([`Endpoint::watched_files`]: the socket, or the port and token files),
//! through [`DirWatch`]: the directory itself, never its entries. Where that
//! directory does not exist yet, its nearest existing ancestor is watched,
//! and the watch moves down as the missing directories are created (and
//! back up when one is deleted).
//!
//! An event says only "something changed here": the watch then looks at
//! the endpoint's files itself ([`look::Sighting`]) and tells the driver
//! that the endpoint appeared only when what it sees is news: a socket
//! that was not there (or was another file), or, on TCP, a port file
//! written with a port while the token file holds a token. That follows
//! the daemon's own order (token, listen, port), so an empty file, or a
//! token without a new port, dials nothing. A look also follows every
//! move of the watch, and, as a floor under events the platform may never
//! deliver (Wine, network file systems, a directory created while the
//! watch moved), every `floor` while the watch lasts.
//!
//! The watch runs on a thread of its own, so no file-system call runs on
//! the runtime's thread. The driver receives only [`Notice`]s. A watch
//! that cannot be set, or that breaks, says so once
//! ([`Notice::Unavailable`]) and ends: the bridge then polls on its
//! backoff.

mod look;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::mpsc as std_mpsc;
use std::time::Duration;

use tokio::sync::mpsc;

pub use self::look::Sighting;
use crate::dir_watch::{DirEvent, DirWatch, WatchError as DirWatchError};
use crate::transport::Endpoint;

/// How often the endpoint is looked at, events or not, while watched, by
/// default: a missed event costs at most this long.
pub const DEFAULT_FLOOR: Duration = Duration::from_secs(30);

/// What the watch tells the driver.
#[derive(Debug)]
pub enum Notice {
    /// The watch is set, on these directories (at start, and after each
    /// move).
    Armed {
        /// The directories watched.
        directories: Vec<PathBuf>,
    },
    /// The endpoint appeared or changed: the daemon may be back.
    Appeared,
    /// The endpoint was there when the watch was set or moved: it may have
    /// appeared before the watch could see it.
    Present,
    /// The watch looked at the endpoint (after a change in a watched
    /// directory, or at the floor) and saw this; an [`Notice::Appeared`]
    /// follows when it was news.
    Looked(Look),
    /// No watch can be set, or it broke: the watch has ended.
    Unavailable(WatchError),
}

/// One look the watch took, for the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Look {
    /// Why it looked.
    pub why: LookCause,
    /// The endpoint looked dialable.
    pub ready: bool,
    /// It appeared or changed since the last look.
    pub news: bool,
}

/// Why the watch looked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LookCause {
    /// Something changed in a watched directory.
    Event,
    /// The floor: no event for a whole `floor`.
    Floor,
}

impl LookCause {
    /// Its name in the log.
    pub fn as_str(self) -> &'static str {
        match self {
            LookCause::Event => "event",
            LookCause::Floor => "floor",
        }
    }
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
    /// The directories could not be watched, or the watch broke.
    #[error(transparent)]
    Directories(#[from] DirWatchError),
    /// The watch is turned off by the settings.
    #[error("the endpoint watch is turned off")]
    Off,
}

/// The watch on one endpoint; dropping it ends the watch.
#[derive(Debug)]
pub struct EndpointWatch {
    notices: mpsc::UnboundedReceiver<Notice>,
    stop: std_mpsc::Sender<Input>,
}

impl EndpointWatch {
    /// Starts watching `endpoint`, looking at it at least every `floor`.
    /// The first notice is [`Notice::Armed`] or [`Notice::Unavailable`].
    pub fn start(endpoint: &Endpoint, floor: Duration) -> Self {
        let endpoint = endpoint.clone();
        let (notices_tx, notices) = mpsc::unbounded_channel();
        let (input_tx, input) = std_mpsc::channel();
        let events = input_tx.clone();
        let spawned = std::thread::Builder::new()
            .name("endpoint-watch".into())
            .spawn(move || run(&endpoint, floor, events, input, notices_tx));
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
    /// News from the directory watch.
    Dir(DirEvent),
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
    fn rearm(&mut self, watch: &mut DirWatch) -> Result<bool, WatchError> {
        let wanted = self.wanted()?;
        if wanted == self.directories {
            return Ok(false);
        }
        for gone in self.directories.difference(&wanted) {
            watch.unwatch(gone);
        }
        for dir in wanted.difference(&self.directories) {
            watch.watch(dir)?;
        }
        self.directories = wanted;
        Ok(true)
    }

    fn notice(&self) -> Notice {
        Notice::Armed {
            directories: self.directories.iter().cloned().collect(),
        }
    }
}

/// The watch thread: arms, looks, then looks again at every event and
/// every `floor` until the owner is gone or the watch breaks.
fn run(
    endpoint: &Endpoint,
    floor: Duration,
    events: std_mpsc::Sender<Input>,
    input: std_mpsc::Receiver<Input>,
    notices: mpsc::UnboundedSender<Notice>,
) {
    let files = endpoint.watched_files();
    if files.is_empty() {
        let _ = notices.send(Notice::Unavailable(WatchError::NothingToWatch));
        return;
    }
    let watch = DirWatch::new(move |event| {
        let _ = events.send(Input::Dir(event));
    });
    let mut watch = match watch {
        Ok(watch) => watch,
        Err(error) => {
            let _ = notices.send(Notice::Unavailable(error.into()));
            return;
        }
    };
    let mut armed = Armed {
        files,
        directories: BTreeSet::new(),
    };
    if let Err(error) = armed.rearm(&mut watch) {
        let _ = notices.send(Notice::Unavailable(error));
        return;
    }
    let mut seen = Sighting::of(endpoint);
    let mut told = vec![armed.notice()];
    if seen.is_ready() {
        told.push(Notice::Present);
    }
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
        told = match input.recv_timeout(floor) {
            Ok(Input::Dir(DirEvent::Changed)) => look_again(
                endpoint,
                &mut armed,
                &mut watch,
                &mut seen,
                LookCause::Event,
            ),
            Err(std_mpsc::RecvTimeoutError::Timeout) => look_again(
                endpoint,
                &mut armed,
                &mut watch,
                &mut seen,
                LookCause::Floor,
            ),
            Ok(Input::Dir(DirEvent::Failed(error))) => {
                vec![Notice::Unavailable(error.into())]
            }
            Ok(Input::Stop) | Err(std_mpsc::RecvTimeoutError::Disconnected) => return,
        };
    }
}

/// After an event (or at the floor): move the watch if directories came or
/// went, then look at the endpoint; what changed since the last look is
/// what the driver is told.
fn look_again(
    endpoint: &Endpoint,
    armed: &mut Armed,
    watch: &mut DirWatch,
    seen: &mut Sighting,
    why: LookCause,
) -> Vec<Notice> {
    let mut told = Vec::new();
    match armed.rearm(watch) {
        Err(error) => return vec![Notice::Unavailable(error)],
        Ok(true) => told.push(armed.notice()),
        Ok(false) => {}
    }
    let now = Sighting::of(endpoint);
    let news = now.is_news_after(seen);
    told.push(Notice::Looked(Look {
        why,
        ready: now.is_ready(),
        news,
    }));
    if news {
        told.push(Notice::Appeared);
    }
    *seen = now;
    told
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
}
