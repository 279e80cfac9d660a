//! A proxy between a wrapper and the real daemon that can hold back the
//! daemon's replies, listening as the daemon does ([`DaemonAddress`]): on
//! a Unix socket, or on loopback TCP with port and token files of its own
//! (the token is the daemon's, copied: the wrapper's first line is passed
//! on to the daemon like every other byte).
//!
//! It makes one race deterministic: a write the daemon has already carried
//! out, whose reply the wrapper never gets because the daemon dies first.
//! With [`HoldingProxy::hold`] set, reply lines are kept instead of
//! forwarded; the test kills the daemon, then [`HoldingProxy::shutdown`]
//! closes the wrapper's connection, which then sees only `socket closed`.

use std::io::{self, BufRead, BufReader, Write};
use std::net::{Shutdown, TcpListener};
#[cfg(unix)]
use std::os::unix::net::UnixListener;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use devkit::sync::lock;

use harness::error::HarnessError;

use super::address::{Connection, DaemonAddress, Transport};

#[derive(Debug, Default)]
struct State {
    hold: AtomicBool,
    held: AtomicUsize,
    stopped: AtomicBool,
    clients: Mutex<Vec<Connection>>,
}

/// A running proxy; shut down when dropped.
#[derive(Debug)]
pub struct HoldingProxy {
    address: DaemonAddress,
    state: Arc<State>,
}

impl HoldingProxy {
    /// Listens at `address` (over the same transport as `upstream`) and
    /// connects every client to `upstream`.
    pub fn start(address: &DaemonAddress, upstream: &DaemonAddress) -> Result<Self, HarnessError> {
        let listener = Listener::bind(address, upstream)
            .map_err(|e| HarnessError::io(format!("binding {}", address.path().display()), e))?;
        let state = Arc::new(State::default());
        let accepting = Arc::clone(&state);
        let upstream = upstream.clone();
        thread::Builder::new()
            .name("e2e-proxy".into())
            .spawn(move || accept(&listener, &upstream, &accepting))
            .map_err(|e| HarnessError::io("starting the proxy", e))?;
        Ok(Self {
            address: address.clone(),
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
    /// stop listening (the socket file, or the port and token files, are
    /// removed).
    pub fn shutdown(&self) {
        if self.state.stopped.swap(true, Ordering::SeqCst) {
            return;
        }
        for client in lock(&self.state.clients).drain(..) {
            let _ = client.shutdown(Shutdown::Both);
        }
        // Wake the accept loop so that it sees the stop flag.
        let _ = self.address.dial();
        let files = self.address.tcp_files();
        for file in [self.address.path(), &files.port, &files.token] {
            let _ = std::fs::remove_file(file);
        }
    }
}

impl Drop for HoldingProxy {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The proxy's listening end, as the daemon's.
enum Listener {
    #[cfg(unix)]
    Unix(UnixListener),
    Tcp(TcpListener),
}

impl Listener {
    /// Listens at `address`; on TCP on an ephemeral loopback port, with
    /// the port and `upstream`'s token published beside `address`.
    fn bind(address: &DaemonAddress, upstream: &DaemonAddress) -> io::Result<Self> {
        match address.transport() {
            #[cfg(unix)]
            Transport::Unix => UnixListener::bind(address.path()).map(Listener::Unix),
            #[cfg(not(unix))]
            Transport::Unix => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "this system has no Unix sockets",
            )),
            Transport::Tcp => {
                let listener = TcpListener::bind(("127.0.0.1", 0))?;
                let files = address.tcp_files();
                std::fs::copy(upstream.tcp_files().token, &files.token)?;
                std::fs::write(&files.port, listener.local_addr()?.port().to_string())?;
                Ok(Listener::Tcp(listener))
            }
        }
    }

    /// The next client.
    fn accept(&self) -> io::Result<Connection> {
        match self {
            #[cfg(unix)]
            Listener::Unix(listener) => listener.accept().map(|(s, _)| Connection::Unix(s)),
            Listener::Tcp(listener) => listener.accept().map(|(s, _)| Connection::Tcp(s)),
        }
    }
}

fn accept(listener: &Listener, upstream: &DaemonAddress, state: &Arc<State>) {
    loop {
        let client = listener.accept();
        if state.stopped.load(Ordering::SeqCst) {
            return;
        }
        let Ok(client) = client else { continue };
        let Ok(daemon) = upstream.dial() else {
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
