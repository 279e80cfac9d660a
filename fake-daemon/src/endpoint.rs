//! Where the daemon listens, and how it comes up there: binding, listening
//! and publishing in a start-up order ([`StartupOrder`]), then the accept
//! loop, which admits Unix connections at once and TCP connections once
//! they sent the token.
//!
//! The endpoint goes from down to bound to listening, and holds what it
//! created at each state, so a start-up stopped half-way (by a signal in a
//! pause) is taken down like a finished one.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use fake_daemon_control::{StartupOrder, StartupStep};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::connection::{self, Socket};
use crate::listener::{self, Accepted, BindError, Bound, Listener, TcpFiles};
use crate::shared::Shared;
use crate::sync::lock;

/// Pause after a failed `accept` (e.g. out of file descriptors) so the loop
/// does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// How long a TCP connection may take to send its token line.
const TOKEN_TIMEOUT: Duration = Duration::from_secs(5);

/// Longest token line accepted.
const MAX_TOKEN_LINE: usize = 256;

/// The daemon's endpoint: a Unix socket path, or on TCP the base of the
/// port and token files, and what is bound there now.
#[derive(Debug)]
pub(crate) struct Endpoint {
    path: PathBuf,
    tcp: bool,
    /// The TCP port, kept across `DOWN`/`UP` (0 before the first bind).
    port: u16,
    state: State,
}

/// What the endpoint holds now.
#[derive(Debug)]
enum State {
    /// Nothing bound.
    Down,
    /// Bound, or its files begun, by a start-up that has not listened yet.
    Bound(Bound),
    /// Listening: the accept loop runs.
    Listening {
        /// The accept loop.
        accept: JoinHandle<()>,
        /// What the start-up created.
        bound: Bound,
    },
}

impl Endpoint {
    /// The endpoint at `path` (with `tcp`, the base of the port and token
    /// files), down.
    pub(crate) fn new(path: PathBuf, tcp: bool) -> Self {
        Endpoint {
            path,
            tcp,
            port: 0,
            state: State::Down,
        }
    }

    /// The socket path (with TCP: the base of the port and token files).
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The TCP port, once bound on TCP.
    pub(crate) fn tcp_port(&self) -> Option<u16> {
        (self.tcp && self.port != 0).then_some(self.port)
    }

    /// Comes up in `order` and accepts connections into `shared`, unless
    /// already up (or coming up).
    pub(crate) async fn up(
        &mut self,
        order: StartupOrder,
        shared: &Arc<Shared>,
    ) -> Result<(), BindError> {
        if !matches!(self.state, State::Down) {
            return Ok(());
        }
        match (self.tcp, order) {
            #[cfg(unix)]
            (false, StartupOrder::AtOnce) => self.unix_at_once(shared),
            #[cfg(unix)]
            (false, StartupOrder::ListenAfter { gap }) => self.unix_listen_after(gap, shared).await,
            #[cfg(unix)]
            (false, order @ StartupOrder::TokenThenPort { .. }) => Err(BindError::TcpOnly(order)),
            #[cfg(not(unix))]
            (false, _) => Err(BindError::NoUnixSockets(self.path.clone())),
            (true, StartupOrder::AtOnce) => self.tcp_at_once(shared),
            (true, StartupOrder::ListenAfter { gap }) => self.tcp_listen_after(gap, shared).await,
            (true, StartupOrder::TokenThenPort { pause }) => {
                self.tcp_token_then_port(pause, shared).await
            }
        }
    }

    /// Stops the accept loop (closing the listener) and removes what the
    /// start-up created: the socket file, or the port and token files.
    pub(crate) async fn down(&mut self) {
        match std::mem::replace(&mut self.state, State::Down) {
            State::Down => {}
            State::Bound(bound) => bound.unlink(),
            State::Listening { accept, bound } => {
                accept.abort();
                // Unlink before awaiting: if a signal cancels this command
                // at the await, the files are already gone.
                bound.unlink();
                let _ = accept.await;
            }
        }
    }

    /// Like [`down`](Self::down), without waiting for the accept loop.
    pub(crate) fn abandon(&mut self) {
        match std::mem::replace(&mut self.state, State::Down) {
            State::Down => {}
            State::Bound(bound) => bound.unlink(),
            State::Listening { accept, bound } => {
                accept.abort();
                bound.unlink();
            }
        }
    }

    /// `at-once` on a Unix socket: bind and listen in one step.
    #[cfg(unix)]
    fn unix_at_once(&mut self, shared: &Arc<Shared>) -> Result<(), BindError> {
        let (listener, socket) = listener::bind(&self.path)?;
        self.state = State::Bound(Bound::Unix(socket));
        self.accept(Listener::Unix(listener), shared);
        Ok(())
    }

    /// `listen-after` on a Unix socket: bind, wait `gap`, listen.
    #[cfg(unix)]
    async fn unix_listen_after(
        &mut self,
        gap: Duration,
        shared: &Arc<Shared>,
    ) -> Result<(), BindError> {
        let (socket, bound) = listener::bind_unlistened(&self.path)?;
        self.state = State::Bound(Bound::Unix(bound));
        report(StartupStep::Bound);
        tokio::time::sleep(gap).await;
        let listener = listener::listen_unix(socket, &self.path)?;
        self.accept(Listener::Unix(listener), shared);
        report(StartupStep::Listening);
        Ok(())
    }

    /// `at-once` on TCP: bind and listen, then write the token file and
    /// the port file, each whole.
    fn tcp_at_once(&mut self, shared: &Arc<Shared>) -> Result<(), BindError> {
        let listener = listener::listen_tcp(&self.path, self.port)?;
        self.publish_tcp(listener.local_addr(), shared)?;
        self.accept(Listener::Tcp(listener), shared);
        Ok(())
    }

    /// Takes the port bound at `address` as this endpoint's, and writes a
    /// fresh token file and the port file beside the path, each whole
    /// (removed on the way down even if writing fails).
    fn publish_tcp(
        &mut self,
        address: std::io::Result<std::net::SocketAddr>,
        shared: &Shared,
    ) -> Result<(), BindError> {
        self.port = listener::port_of(address, &self.path)?;
        let files = TcpFiles::beside(&self.path);
        let token = renew_token(shared);
        let published = files.publish(&token, self.port);
        self.state = State::Bound(Bound::Tcp(files));
        published
    }

    /// `listen-after` on TCP: bind, write the token file and the port file
    /// (each whole), wait `gap`, listen.
    async fn tcp_listen_after(
        &mut self,
        gap: Duration,
        shared: &Arc<Shared>,
    ) -> Result<(), BindError> {
        let socket = listener::bind_tcp_unlistened(&self.path, self.port)?;
        self.publish_tcp(socket.local_addr(), shared)?;
        report(StartupStep::Bound);
        tokio::time::sleep(gap).await;
        let listener = listener::listen_tcp_socket(socket, &self.path)?;
        self.accept(Listener::Tcp(listener), shared);
        report(StartupStep::Listening);
        Ok(())
    }

    /// `token-then-port`, iai-mcp 3.3.0's order: the token file written
    /// empty, the token written into it, bind and listen, the port file
    /// emptied, the port written into it; `pause` between each step and
    /// the next.
    async fn tcp_token_then_port(
        &mut self,
        pause: Duration,
        shared: &Arc<Shared>,
    ) -> Result<(), BindError> {
        let files = TcpFiles::beside(&self.path);
        self.state = State::Bound(Bound::Tcp(files.clone()));
        files.write_token_in_place("")?;
        report(StartupStep::TokenFileEmpty);
        tokio::time::sleep(pause).await;

        let token = renew_token(shared);
        files.write_token_in_place(&token)?;
        report(StartupStep::TokenWritten);
        tokio::time::sleep(pause).await;

        let listener = listener::listen_tcp(&self.path, self.port)?;
        self.port = listener::port_of(listener.local_addr(), &self.path)?;
        self.accept(Listener::Tcp(listener), shared);
        report(StartupStep::Listening);
        tokio::time::sleep(pause).await;

        files.write_port_in_place("")?;
        report(StartupStep::PortFileEmpty);
        tokio::time::sleep(pause).await;

        files.write_port_in_place(&self.port.to_string())?;
        report(StartupStep::PortWritten);
        Ok(())
    }

    /// Starts accepting on `listener`: what the start-up bound becomes the
    /// listening endpoint's.
    fn accept(&mut self, listener: Listener, shared: &Arc<Shared>) {
        self.state = match std::mem::replace(&mut self.state, State::Down) {
            State::Bound(bound) => State::Listening {
                accept: tokio::spawn(accept_loop(listener, Arc::clone(shared))),
                bound,
            },
            // Not reached: every start-up binds before it listens.
            other => other,
        };
    }
}

/// Draws a fresh token and makes it the one TCP connections must send.
fn renew_token(shared: &Shared) -> String {
    let token = listener::new_token();
    *lock(&shared.token) = Some(token.clone());
    token
}

/// Logs a start-up step on stderr, where tests look for it.
fn report(step: StartupStep) {
    eprintln!("fake-daemon: {step}");
}

/// Registers a freshly accepted connection and starts serving it.
fn adopt<S: Socket>(shared: &Arc<Shared>, stream: S) {
    shared.counters.connection_accepted();
    let (commands, receiver) = mpsc::unbounded_channel();
    shared.register(
        |id| tokio::spawn(connection::serve(stream, Arc::clone(shared), id, receiver)),
        commands,
    );
}

async fn accept_loop(listener: Listener, shared: Arc<Shared>) {
    loop {
        match listener.accept().await {
            #[cfg(unix)]
            Ok(Accepted::Unix(stream)) => adopt(&shared, stream),
            Ok(Accepted::Tcp(stream)) => {
                let task = tokio::spawn(authenticate(stream, Arc::clone(&shared)));
                let mut pending = lock(&shared.authenticating);
                pending.retain(|t| !t.is_finished());
                pending.push(task);
            }
            Err(err) => {
                eprintln!("fake-daemon: accept failed: {err}");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
            }
        }
    }
}

/// Admits a TCP connection whose first line is the current token; closes
/// any other (counted as refused).
async fn authenticate(mut stream: TcpStream, shared: Arc<Shared>) {
    let expected = lock(&shared.token).clone();
    let line = tokio::time::timeout(TOKEN_TIMEOUT, read_token_line(&mut stream)).await;
    match (line, expected) {
        (Ok(Some(line)), Some(token)) if line.trim() == token => adopt(&shared, stream),
        _ => shared.counters.connection_refused(),
    }
}

/// Reads one line, byte by byte so that nothing after it is consumed.
async fn read_token_line(stream: &mut TcpStream) -> Option<String> {
    let mut line = Vec::new();
    loop {
        let byte = stream.read_u8().await.ok()?;
        if byte == b'\n' {
            return String::from_utf8(line).ok();
        }
        if line.len() >= MAX_TOKEN_LINE {
            return None;
        }
        line.push(byte);
    }
}
