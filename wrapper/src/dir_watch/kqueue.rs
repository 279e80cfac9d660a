//! The watch on macOS: kqueue, each directory through its own descriptor
//! (`EVFILT_VNODE`), never through its entries. A directory's descriptor
//! reports a write when an entry is created, removed or renamed in it, and
//! its own deletion or renaming; one descriptor per directory however many
//! files it holds.
//!
//! A thread of the backend's waits on the queue and reports; a user event
//! on the same queue tells it to end when the watch is dropped.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;

use nix::errno::Errno;
use nix::sys::event::{EvFlags, EventFilter, FilterFlag, KEvent, Kqueue};

use super::event::{DirEvent, Report, WatchError};

/// The ident of the user event that ends the waiting thread.
const STOP: usize = 0;

/// What a directory's descriptor reports: entries added, removed or
/// renamed (a write to the directory), the directory itself deleted,
/// renamed or its file system unmounted.
fn vnode_flags() -> FilterFlag {
    FilterFlag::NOTE_WRITE
        | FilterFlag::NOTE_EXTEND
        | FilterFlag::NOTE_ATTRIB
        | FilterFlag::NOTE_LINK
        | FilterFlag::NOTE_DELETE
        | FilterFlag::NOTE_RENAME
        | FilterFlag::NOTE_REVOKE
}

/// A kqueue, the directories it watches, and its waiting thread.
pub(super) struct Backend {
    queue: Arc<Kqueue>,
    /// Each watched directory's open descriptor (closing it ends its
    /// watch).
    directories: BTreeMap<PathBuf, File>,
    waiter: Option<JoinHandle<()>>,
}

impl Backend {
    pub(super) fn new(report: Report) -> Result<Backend, WatchError> {
        let queue = Arc::new(Kqueue::new().map_err(|e| WatchError::Start(e.to_string()))?);
        let stop = KEvent::new(
            STOP,
            EventFilter::EVFILT_USER,
            EvFlags::EV_ADD | EvFlags::EV_CLEAR,
            FilterFlag::empty(),
            0,
            0,
        );
        queue
            .kevent(&[stop], &mut [], None)
            .map_err(|e| WatchError::Start(e.to_string()))?;
        let waiting = Arc::clone(&queue);
        let waiter = std::thread::Builder::new()
            .name("dir-watch".into())
            .spawn(move || wait(&waiting, report))
            .map_err(|e| WatchError::Start(e.to_string()))?;
        Ok(Backend {
            queue,
            directories: BTreeMap::new(),
            waiter: Some(waiter),
        })
    }

    pub(super) fn watch(&mut self, dir: &Path) -> Result<(), WatchError> {
        let arm = |reason: String| WatchError::Arm {
            dir: dir.to_path_buf(),
            reason,
        };
        if !dir.is_dir() {
            return Err(arm("not a directory".to_owned()));
        }
        // O_EVTONLY: a descriptor for events only, which does not keep the
        // directory's volume from being unmounted.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_EVTONLY)
            .open(dir)
            .map_err(|e| arm(e.to_string()))?;
        let fd = usize::try_from(file.as_raw_fd()).map_err(|e| arm(e.to_string()))?;
        let event = KEvent::new(
            fd,
            EventFilter::EVFILT_VNODE,
            EvFlags::EV_ADD | EvFlags::EV_ENABLE | EvFlags::EV_CLEAR,
            vnode_flags(),
            0,
            0,
        );
        self.queue
            .kevent(&[event], &mut [], None)
            .map_err(|e| arm(e.to_string()))?;
        self.directories.insert(dir.to_path_buf(), file);
        Ok(())
    }

    pub(super) fn unwatch(&mut self, dir: &Path) {
        // Closing the descriptor removes its event from the queue.
        self.directories.remove(dir);
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        let trigger = KEvent::new(
            STOP,
            EventFilter::EVFILT_USER,
            EvFlags::empty(),
            FilterFlag::NOTE_TRIGGER,
            0,
            0,
        );
        let stopped = self.queue.kevent(&[trigger], &mut [], None).is_ok();
        if let Some(waiter) = self.waiter.take()
            && stopped
        {
            let _ = waiter.join();
        }
    }
}

/// The waiting thread: reports "look now" for every batch of directory
/// events, until the stop event (or an error).
fn wait(queue: &Kqueue, mut report: Report) {
    let empty = KEvent::new(
        0,
        EventFilter::EVFILT_USER,
        EvFlags::empty(),
        FilterFlag::empty(),
        0,
        0,
    );
    let mut events = [empty; 16];
    loop {
        match queue.kevent(&[], &mut events, None) {
            Ok(count) => {
                let got = &events[..count];
                let stop = got
                    .iter()
                    .any(|e| matches!(e.filter(), Ok(EventFilter::EVFILT_USER)));
                if stop {
                    return;
                }
                if !got.is_empty() {
                    report(DirEvent::Changed);
                }
            }
            Err(Errno::EINTR) => {}
            Err(error) => {
                report(DirEvent::Failed(WatchError::Backend(error.to_string())));
                return;
            }
        }
    }
}
