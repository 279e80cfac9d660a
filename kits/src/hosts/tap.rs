//! A recording tap between the wrappers the hosts start and the daemon:
//! a Unix socket of its own that the wrappers dial instead of the
//! daemon's, each connection carried through to the daemon line by line,
//! and every call the daemon answered kept as an [`Exchange`]: method,
//! params, and the result or error the daemon returned. The checks hold
//! what the host sent the model against these: a result counts only when
//! it carries what the daemon returned for that call.
//!
//! While the daemon restarts, the tap is away too ([`Tap::pause`]: its
//! socket removed, its connections closed; [`Tap::resume`]: listening
//! again), so a wrapper meets the outage as it would without the tap.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::Shutdown;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use devkit::sync::lock;
use harness::error::HarnessError;
use serde_json::Value;

/// One call a wrapper made and the daemon answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Exchange {
    /// The connection it was made on, numbered from 0 in the order the
    /// tap accepted them.
    pub connection: usize,
    /// The daemon method.
    pub method: String,
    /// Its params.
    pub params: Value,
    /// The daemon's `result`, or its `error` object.
    pub answer: Result<Value, Value>,
}

/// What the tap's threads share.
#[derive(Debug, Default)]
struct Shared {
    exchanges: Mutex<Vec<Exchange>>,
    connections: AtomicUsize,
    streams: Mutex<Vec<UnixStream>>,
}

/// The listening half, stopped by [`Tap::pause`].
#[derive(Debug)]
struct Listening {
    stop: Arc<AtomicBool>,
    thread: thread::JoinHandle<()>,
}

/// The running tap; it stops when dropped.
#[derive(Debug)]
pub struct Tap {
    path: PathBuf,
    upstream: PathBuf,
    shared: Arc<Shared>,
    listening: Option<Listening>,
}

impl Tap {
    /// Listens on `path`, carrying each connection to `upstream`.
    pub fn start(path: &Path, upstream: &Path) -> Result<Self, HarnessError> {
        let mut tap = Tap {
            path: path.to_path_buf(),
            upstream: upstream.to_path_buf(),
            shared: Arc::default(),
            listening: None,
        };
        tap.resume()?;
        Ok(tap)
    }

    /// The socket the wrappers dial.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many connections the tap has accepted so far: the number the
    /// next one gets.
    pub fn connections(&self) -> usize {
        self.shared.connections.load(Ordering::SeqCst)
    }

    /// Every exchange since the last call, taken.
    pub fn take(&self) -> Vec<Exchange> {
        std::mem::take(&mut *lock(&self.shared.exchanges))
    }

    /// Stops listening (the socket file removed) and closes every
    /// connection.
    pub fn pause(&mut self) {
        if let Some(listening) = self.listening.take() {
            listening.stop.store(true, Ordering::SeqCst);
            // Wake the accepting thread so that it sees the flag; should
            // the socket be gone, the thread is left waiting on a
            // listener no one can reach.
            if UnixStream::connect(&self.path).is_ok() {
                let _ = listening.thread.join();
            }
        }
        let _ = std::fs::remove_file(&self.path);
        for stream in lock(&self.shared.streams).drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }

    /// Listens again (after [`pause`](Self::pause)).
    pub fn resume(&mut self) -> Result<(), HarnessError> {
        if self.listening.is_some() {
            return Ok(());
        }
        let _ = std::fs::remove_file(&self.path);
        let listener = UnixListener::bind(&self.path)
            .map_err(|e| HarnessError::io(format!("binding {}", self.path.display()), e))?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let shared = Arc::clone(&self.shared);
        let upstream = self.upstream.clone();
        let thread = thread::Builder::new()
            .name("hosts-tap".into())
            .spawn(move || accept(&listener, &upstream, &shared, &stopping))
            .map_err(|e| HarnessError::io("starting the tap", e))?;
        self.listening = Some(Listening { stop, thread });
        Ok(())
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        self.pause();
    }
}

/// Accepts connections until told to stop, each carried to `upstream`.
fn accept(listener: &UnixListener, upstream: &Path, shared: &Arc<Shared>, stop: &AtomicBool) {
    for client in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(client) = client else { continue };
        // Closing the client tells the wrapper the daemon is not there.
        let Ok(daemon) = UnixStream::connect(upstream) else {
            continue;
        };
        let connection = shared.connections.fetch_add(1, Ordering::SeqCst);
        if let Err(e) = carry(client, daemon, connection, shared) {
            eprintln!("hosts: the tap could not carry connection {connection}: {e}");
        }
    }
}

/// Carries one connection both ways on two threads, recording calls.
fn carry(
    client: UnixStream,
    daemon: UnixStream,
    connection: usize,
    shared: &Arc<Shared>,
) -> std::io::Result<()> {
    {
        let mut streams = lock(&shared.streams);
        streams.push(client.try_clone()?);
        streams.push(daemon.try_clone()?);
    }
    let asked: Arc<Mutex<HashMap<String, (String, Value)>>> = Arc::default();
    let (client_in, daemon_out) = (client.try_clone()?, daemon.try_clone()?);
    let requests = Arc::clone(&asked);
    thread::spawn(move || {
        relay(client_in, daemon_out, |line| {
            if let Some((id, method, params)) = request_of(line) {
                lock(&requests).insert(id, (method, params));
            }
        });
    });
    let shared = Arc::clone(shared);
    thread::spawn(move || {
        relay(daemon, client, |line| {
            let Some((id, answer)) = response_of(line) else {
                return;
            };
            if let Some((method, params)) = lock(&asked).remove(&id) {
                lock(&shared.exchanges).push(Exchange {
                    connection,
                    method,
                    params,
                    answer,
                });
            }
        });
    });
    Ok(())
}

/// Copies lines from `from` to `to`, showing each to `seen`, until either
/// side closes; then closes `to` for writing.
fn relay(from: UnixStream, mut to: UnixStream, mut seen: impl FnMut(&[u8])) {
    let mut lines = BufReader::new(from);
    let mut line = Vec::new();
    while lines.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
        seen(&line);
        if to.write_all(&line).is_err() {
            break;
        }
        line.clear();
    }
    let _ = to.shutdown(Shutdown::Write);
}

/// `(id, method, params)` of a JSON-RPC request line.
fn request_of(line: &[u8]) -> Option<(String, String, Value)> {
    let value: Value = serde_json::from_slice(line).ok()?;
    let method = value.get("method")?.as_str()?.to_owned();
    let id = value.get("id")?.to_string();
    let params = value.get("params").cloned().unwrap_or(Value::Null);
    Some((id, method, params))
}

/// `(id, result or error)` of a JSON-RPC response line.
fn response_of(line: &[u8]) -> Option<(String, Result<Value, Value>)> {
    let mut value: Value = serde_json::from_slice(line).ok()?;
    let id = value.get("id")?.to_string();
    if let Some(result) = value.get_mut("result") {
        return Some((id, Ok(result.take())));
    }
    let error = value.get_mut("error")?.take();
    Some((id, Err(error)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_responses_are_read_by_their_ids() {
        let (id, method, params) =
            request_of(br#"{"jsonrpc":"2.0","id":7,"method":"topology","params":{}}"#)
                .expect("a request");
        assert_eq!((id.as_str(), method.as_str()), ("7", "topology"));
        assert_eq!(params, serde_json::json!({}));
        assert_eq!(
            response_of(br#"{"jsonrpc":"2.0","id":7,"result":{"n":1}}"#),
            Some(("7".into(), Ok(serde_json::json!({"n": 1}))))
        );
        assert_eq!(
            response_of(br#"{"jsonrpc":"2.0","id":"a","error":{"code":-1}}"#),
            Some(("\"a\"".into(), Err(serde_json::json!({"code": -1}))))
        );
        assert_eq!(request_of(b"not json"), None);
    }
}
