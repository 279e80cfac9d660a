//! A Unix-socket proxy between a wrapper and the real daemon that can hold
//! back the daemon's replies.
//!
//! It makes one race deterministic: a write the daemon has already carried
//! out, whose reply the wrapper never gets because the daemon dies first.
//! With [`HoldingProxy::hold`] set, reply lines are kept instead of
//! forwarded; the test kills the daemon, then [`HoldingProxy::shutdown`]
//! closes the wrapper's connection, which then sees only `socket closed`.

use std::io::{BufRead, BufReader, Write};
use std::net::Shutdown;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use devkit::sync::lock;

use harness::error::HarnessError;

#[derive(Debug, Default)]
struct State {
    hold: AtomicBool,
    held: AtomicUsize,
    stopped: AtomicBool,
    clients: Mutex<Vec<UnixStream>>,
}

/// A running proxy; shut down when dropped.
#[derive(Debug)]
pub struct HoldingProxy {
    path: PathBuf,
    state: Arc<State>,
}

impl HoldingProxy {
    /// Listens on `path` and connects every client to `upstream`.
    pub fn start(path: &Path, upstream: &Path) -> Result<Self, HarnessError> {
        let listener = UnixListener::bind(path)
            .map_err(|e| HarnessError::io(format!("binding {}", path.display()), e))?;
        let state = Arc::new(State::default());
        let accepting = Arc::clone(&state);
        let upstream = upstream.to_path_buf();
        thread::Builder::new()
            .name("e2e-proxy".into())
            .spawn(move || accept(&listener, &upstream, &accepting))
            .map_err(|e| HarnessError::io("starting the proxy", e))?;
        Ok(Self {
            path: path.to_path_buf(),
            state,
        })
    }

    /// Keep the daemon's reply lines from now on.
    pub fn hold(&self) {
        self.state.hold.store(true, Ordering::SeqCst);
    }

    /// Reply lines kept so far.
    pub fn held(&self) -> usize {
        self.state.held.load(Ordering::SeqCst)
    }

    /// Close every client connection without delivering what was held, and
    /// stop listening (the socket file is removed).
    pub fn shutdown(&self) {
        if self.state.stopped.swap(true, Ordering::SeqCst) {
            return;
        }
        for client in lock(&self.state.clients).drain(..) {
            let _ = client.shutdown(Shutdown::Both);
        }
        // Wake the accept loop so that it sees the stop flag.
        let _ = UnixStream::connect(&self.path);
        let _ = std::fs::remove_file(&self.path);
    }
}

impl Drop for HoldingProxy {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn accept(listener: &UnixListener, upstream: &Path, state: &Arc<State>) {
    for client in listener.incoming() {
        if state.stopped.load(Ordering::SeqCst) {
            return;
        }
        let Ok(client) = client else { continue };
        let Ok(daemon) = UnixStream::connect(upstream) else {
            continue;
        };
        let (Ok(client_w), Ok(daemon_r), Ok(kept)) =
            (client.try_clone(), daemon.try_clone(), client.try_clone())
        else {
            continue;
        };
        lock(&state.clients).push(kept);
        // Wrapper to daemon: bytes as they come.
        thread::spawn(move || {
            let (mut from, mut to) = (client, daemon);
            let _ = std::io::copy(&mut from, &mut to);
            let _ = to.shutdown(Shutdown::Write);
        });
        // Daemon to wrapper: line by line, so that replies can be held.
        let state = Arc::clone(state);
        thread::spawn(move || {
            let mut to = client_w;
            let mut lines = BufReader::new(daemon_r);
            let mut line = Vec::new();
            while lines.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
                if state.hold.load(Ordering::SeqCst) {
                    state.held.fetch_add(1, Ordering::SeqCst);
                } else if to.write_all(&line).is_err() {
                    break;
                }
                line.clear();
            }
            if !state.hold.load(Ordering::SeqCst) {
                let _ = to.shutdown(Shutdown::Write);
            }
        });
    }
}
