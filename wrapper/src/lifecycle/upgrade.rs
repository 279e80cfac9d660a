//! Following the installed release across an upgrade under the running
//! wrapper (`pip install -U iai-pme`, `iai-mcp self-update`).
//!
//! The `site-packages` directory of the release served is watched
//! ([`DirWatch`]: the directory itself, so a package's files replaced or
//! its metadata directory renamed is one "look now"). Once the directory
//! has been quiet for a moment, or when the daemon says it is another
//! release than the one served, the installed release is read again. A new
//! surface is served when the installed files and the daemon agree: the
//! daemon reports the new release, or no daemon is connected (the next one
//! to start is the one installed). Until then the old surface stays, since
//! the new one may name methods the old daemon lacks, and the disagreement
//! is logged once (`surface_pending`). Calls in flight keep the tool they
//! were routed with; the server tells the client the list changed.
//!
//! The built-in table is never switched to in the middle of a session: a
//! release that cannot be read while it is being replaced is read again at
//! the next change.
//!
//! Each status answer is logged (`daemon_release`, [`release::log`])
//! beside the release served once the answer has been weighed, so that a
//! daemon restarted as the release just installed is not warned about.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::release::{self, QueryError, Warned};
use crate::bridge::{LinkStatus, StatusAnswer};
use crate::dir_watch::{DirEvent, DirWatch};
use crate::log_names as event;
use crate::surface::{self, Finder, Origin, Surface};

/// How long `site-packages` must be quiet before the release is read
/// again: an installer writes many files in a row.
const SETTLE: Duration = Duration::from_millis(500);

/// The longest an upgrade that keeps writing delays the reading.
const SETTLE_AT_MOST: Duration = Duration::from_secs(3);

/// What is known of the daemon now, for deciding whether to switch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Daemon {
    /// No daemon is connected.
    Absent,
    /// The connected daemon is this release.
    Release(String),
    /// A daemon is connected but has not said (or cannot say) which
    /// release it is.
    Unknown,
}

impl Daemon {
    /// The daemon as the bridge knows it now: absent unless connected, and
    /// then the release its connection's status answer names.
    pub fn now(link: &LinkStatus, answer: Option<&StatusAnswer>) -> Daemon {
        if !link.connected {
            return Daemon::Absent;
        }
        let release = answer
            .filter(|answer| answer.connection == link.connects)
            .and_then(|answer| answer.status.as_ref().ok())
            .and_then(|status| status.release().ok());
        match release {
            Some(release) => Daemon::Release(release.to_owned()),
            None => Daemon::Unknown,
        }
    }

    /// Whether a surface of release `version` may be served beside it.
    pub fn agrees_with(&self, version: &str) -> bool {
        match self {
            Daemon::Absent => true,
            Daemon::Release(release) => release == version,
            Daemon::Unknown => false,
        }
    }
}

/// A surface read from the installed files and not served yet.
struct Pending {
    surface: Surface,
    /// The disagreement was logged.
    told: bool,
}

/// Keeps `served` the installed release's surface until the bridge is
/// gone, and logs each status answer beside it (see the module
/// documentation). `answers` and `link` are the bridge's.
pub async fn follow(
    finder: Finder,
    served: watch::Sender<Arc<Surface>>,
    mut answers: watch::Receiver<Option<StatusAnswer>>,
    mut link: watch::Receiver<LinkStatus>,
) {
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let _watch = site_packages(&served.borrow()).and_then(|dir| {
        let mut watch = DirWatch::new(move |event| {
            let _ = events_tx.send(event);
        })
        .ok()?;
        match watch.watch(&dir) {
            Ok(()) => Some(watch),
            Err(error) => {
                tracing::debug!(%error, "the installed release's directory cannot be watched");
                None
            }
        }
    });
    let mut pending: Option<Pending> = None;
    let mut warned = Warned::default();
    loop {
        let mut answered = false;
        let read_again = tokio::select! {
            Some(event) = events.recv() => {
                if let DirEvent::Failed(error) = event {
                    tracing::debug!(%error, "the watch of the installed release broke");
                }
                settle(&mut events).await;
                true
            }
            changed = answers.changed() => {
                if changed.is_err() {
                    return;
                }
                answered = true;
                // A daemon of another release than the one served: the
                // release installed may have changed unseen.
                let daemon = Daemon::now(&link.borrow(), answers.borrow_and_update().as_ref());
                matches!(&daemon, Daemon::Release(r) if r != served.borrow().version())
            }
            changed = link.changed() => {
                if changed.is_err() {
                    return;
                }
                false
            }
        };
        if read_again {
            pending = read_installed(&finder, &served, pending).await;
        }
        let daemon = Daemon::now(&link.borrow(), answers.borrow().as_ref());
        pending = decide(pending, &daemon, &served);
        if answered {
            let outcome = answers.borrow().as_ref().map(|answer| {
                answer
                    .status
                    .clone()
                    .and_then(|status| status.release().map(str::to_owned))
                    .map_err(QueryError::from)
            });
            if let Some(outcome) = outcome {
                let served = served.borrow().version().to_owned();
                release::log(&outcome, &served, &mut warned);
            }
        }
    }
}

/// Waits until no event has come for [`SETTLE`] (at most
/// [`SETTLE_AT_MOST`] in all).
async fn settle(events: &mut mpsc::UnboundedReceiver<DirEvent>) {
    let until = Instant::now() + SETTLE_AT_MOST;
    loop {
        let quiet = tokio::time::timeout(SETTLE, events.recv());
        match tokio::time::timeout_at(until, quiet).await {
            Ok(Ok(Some(_))) => continue,
            Ok(Ok(None)) | Ok(Err(_)) | Err(_) => return,
        }
    }
}

/// Reads the installed release again, off the runtime's thread: what is
/// pending from now on (nothing when it is what is served, or when it
/// cannot be read as a release).
async fn read_installed(
    finder: &Finder,
    served: &watch::Sender<Arc<Surface>>,
    pending: Option<Pending>,
) -> Option<Pending> {
    let finder = finder.clone();
    let Ok(read) = tokio::task::spawn_blocking(move || finder.load()).await else {
        return pending;
    };
    if read.is_builtin() {
        tracing::debug!(
            surface = %read.describe(),
            "the installed release cannot be read now; keeping the tools served"
        );
        return pending;
    }
    if same_release(&read, &served.borrow()) {
        return None;
    }
    match pending {
        Some(pending) if same_release(&pending.surface, &read) => Some(pending),
        _ => Some(Pending {
            surface: read,
            told: false,
        }),
    }
}

/// Whether two surfaces are one release's, read from one file, alike.
fn same_release(a: &Surface, b: &Surface) -> bool {
    let bundle = |s: &Surface| match s.origin() {
        Origin::Release { bundle, .. } => Some(bundle.clone()),
        Origin::BuiltIn { .. } => None,
    };
    a.version() == b.version()
        && bundle(a) == bundle(b)
        && a.listing() == b.listing()
        && a.instructions() == b.instructions()
}

/// Serves what is pending if the daemon agrees; else says so, once.
fn decide(
    pending: Option<Pending>,
    daemon: &Daemon,
    served: &watch::Sender<Arc<Surface>>,
) -> Option<Pending> {
    let mut pending = pending?;
    if daemon.agrees_with(pending.surface.version()) {
        let from = served.borrow().version().to_owned();
        tracing::info!(
            event = event::SURFACE_CHANGED,
            from = from.as_str(),
            to = pending.surface.version(),
            "the installed iai-mcp release changed from {from} to {}: serving its tools",
            pending.surface.version()
        );
        surface::log(&pending.surface);
        served.send_replace(Arc::new(pending.surface));
        return None;
    }
    if !pending.told {
        let daemon = match daemon {
            Daemon::Release(release) => release.as_str(),
            Daemon::Absent | Daemon::Unknown => "unknown",
        };
        let installed = pending.surface.version();
        let serving = served.borrow().version().to_owned();
        tracing::warn!(
            event = event::SURFACE_PENDING,
            installed,
            daemon,
            served = serving.as_str(),
            "iai-mcp {installed} is installed but the daemon runs {daemon}: the tools served stay \
             {serving}'s until the daemon runs {installed} (restart it)"
        );
        pending.told = true;
    }
    Some(pending)
}

/// The `site-packages` directory of the release `surface` was read from:
/// the directory above the `iai_mcp` package.
fn site_packages(surface: &Surface) -> Option<PathBuf> {
    match surface.origin() {
        Origin::Release { bundle, .. } => Some(bundle.parent()?.parent()?.parent()?.to_path_buf()),
        Origin::BuiltIn { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bridge::{DaemonStatus, StatusError};

    fn status(release: Option<&str>, connection: u64) -> StatusAnswer {
        StatusAnswer {
            connection,
            status: Ok(DaemonStatus {
                version: release.map(str::to_owned),
                daemon_started_at: None,
            }),
        }
    }

    fn link(connected: bool, connects: u64) -> LinkStatus {
        LinkStatus {
            connected,
            connects,
            ..LinkStatus::default()
        }
    }

    #[test]
    fn the_daemon_agrees_when_absent_or_of_the_same_release() {
        let answer = status(Some("3.3.0"), 2);
        assert_eq!(Daemon::now(&link(false, 2), Some(&answer)), Daemon::Absent);
        assert_eq!(
            Daemon::now(&link(true, 2), Some(&answer)),
            Daemon::Release("3.3.0".into())
        );
        // An answer from an earlier connection says nothing of this one.
        assert_eq!(Daemon::now(&link(true, 3), Some(&answer)), Daemon::Unknown);
        assert_eq!(
            Daemon::now(&link(true, 2), Some(&status(None, 2))),
            Daemon::Unknown
        );
        let unreadable = StatusAnswer {
            connection: 1,
            status: Err(StatusError::Unreadable),
        };
        assert_eq!(
            Daemon::now(&link(true, 1), Some(&unreadable)),
            Daemon::Unknown
        );
        assert!(Daemon::Absent.agrees_with("3.3.0"));
        assert!(Daemon::Release("3.3.0".into()).agrees_with("3.3.0"));
        assert!(!Daemon::Release("3.2.3".into()).agrees_with("3.3.0"));
        assert!(!Daemon::Unknown.agrees_with("3.3.0"));
    }
}
