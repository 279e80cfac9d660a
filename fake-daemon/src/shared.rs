//! What the daemon handle, the accept loop and the connections share: the
//! counters, fault settings, journal and token, the table of live
//! connections, and the commands the daemon sends them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::faults::Faults;
use crate::journal::Journal;
use crate::stats::Counters;
use crate::sync::lock;

/// What the daemon asks of a live connection. `done` is sent once the
/// effect's bytes are written to the socket (dropped if the connection ends
/// first), so the stdin acknowledgement can wait for the effect.
#[derive(Debug)]
pub(crate) enum ConnCommand {
    /// Write these bytes now (`GARBAGE`, `STRAY`).
    Inject {
        /// The lines to write.
        bytes: Arc<[u8]>,
        /// Signalled once they are written.
        done: oneshot::Sender<()>,
    },
    /// Write the held replies now (`RESUME`).
    Resume {
        /// Signalled once they are written.
        done: oneshot::Sender<()>,
    },
}

/// State shared by the daemon handle, the accept loop and the connections.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) max_line_bytes: usize,
    /// The complete line a `status` control message is answered with.
    pub(crate) status_line: Box<[u8]>,
    pub(crate) counters: Counters,
    pub(crate) faults: Faults,
    pub(crate) journal: Mutex<Journal>,
    connections: Mutex<Connections>,
    /// The token TCP connections must send first (`None` on a Unix socket).
    pub(crate) token: Mutex<Option<String>>,
    /// TCP connections accepted and still checking their token; `DROP` and
    /// `DOWN` close them like the others.
    pub(crate) authenticating: Mutex<Vec<JoinHandle<()>>>,
}

/// The live accepted connections.
#[derive(Debug, Default)]
struct Connections {
    next_id: u64,
    live: HashMap<u64, ConnectionHandle>,
}

#[derive(Debug)]
struct ConnectionHandle {
    task: JoinHandle<()>,
    commands: mpsc::UnboundedSender<ConnCommand>,
}

impl Shared {
    /// Fresh state: no connection, no fault, an empty journal of
    /// `journal_bytes`; `status` control messages get `status_line`.
    pub(crate) fn new(max_line_bytes: usize, journal_bytes: usize, status_line: Vec<u8>) -> Self {
        Shared {
            max_line_bytes,
            status_line: status_line.into_boxed_slice(),
            counters: Counters::default(),
            faults: Faults::default(),
            journal: Mutex::new(Journal::new(journal_bytes)),
            connections: Mutex::new(Connections::default()),
            token: Mutex::new(None),
            authenticating: Mutex::new(Vec::new()),
        }
    }

    /// Connections open now.
    pub(crate) fn live_connections(&self) -> usize {
        lock(&self.connections).live.len()
    }

    /// Enters a connection in the table: `spawn` starts its task with the
    /// id it is registered under; `commands` reaches it.
    pub(crate) fn register(
        &self,
        spawn: impl FnOnce(u64) -> JoinHandle<()>,
        commands: mpsc::UnboundedSender<ConnCommand>,
    ) {
        // Spawning under the lock: the task cannot deregister itself before
        // it is registered.
        let mut connections = lock(&self.connections);
        let id = connections.next_id;
        connections.next_id += 1;
        let task = spawn(id);
        connections
            .live
            .insert(id, ConnectionHandle { task, commands });
    }

    /// Removes a connection from the table (its task is ending).
    pub(crate) fn forget_connection(&self, id: u64) {
        lock(&self.connections).live.remove(&id);
    }

    /// Takes every live connection out of the table (so they stop counting
    /// at once) and stops their tasks without waiting.
    pub(crate) fn abort_connections(&self) -> Vec<JoinHandle<()>> {
        let drained: Vec<ConnectionHandle> = lock(&self.connections)
            .live
            .drain()
            .map(|(_, handle)| handle)
            .collect();
        drained
            .into_iter()
            .map(|handle| {
                handle.task.abort();
                handle.task
            })
            .collect()
    }

    /// Sends a command made by `make` to every live connection and waits
    /// until each has carried it out (or has closed).
    pub(crate) async fn broadcast(&self, make: impl Fn(oneshot::Sender<()>) -> ConnCommand) {
        let senders: Vec<_> = lock(&self.connections)
            .live
            .values()
            .map(|handle| handle.commands.clone())
            .collect();
        let mut pending = Vec::with_capacity(senders.len());
        for sender in senders {
            let (done, finished) = oneshot::channel();
            if sender.send(make(done)).is_ok() {
                pending.push(finished);
            }
        }
        for finished in pending {
            // An error means the connection closed first: nothing to wait for.
            let _ = finished.await;
        }
    }
}
