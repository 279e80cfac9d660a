//! One exchange with the daemon on a connection of its own: the `--check`
//! probe, the release question and the warm-up's `session_open`.
//!
//! Each opens a connection (on TCP the token goes first, as on every
//! connection), writes one line, closes its writing side (nothing more will
//! be sent, so the daemon may close once it has answered), and reads with
//! the bridge's line codec. One time budget covers the whole exchange,
//! connect included, and at most the size cap plus its newline is read: a
//! daemon that answers without end, or never, costs a bounded wait and
//! bounded memory.

use std::time::Duration;

use futures_util::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::codec::FramedRead;

use super::endpoint::{ConnectError, Endpoint};
use super::stream::DaemonStream;
use crate::codec::{Frame, LineCodec};

/// Why a one-shot exchange got no answer.
#[derive(Debug, thiserror::Error)]
pub enum OneShotError {
    /// No connection could be made.
    #[error("not reachable: {0}")]
    Unreachable(#[from] ConnectError),
    /// Writing the message or reading the answer failed.
    #[error("the exchange failed: {0}")]
    Io(#[from] std::io::Error),
    /// No answer within the budget.
    #[error("no answer within {0:?}")]
    TimedOut(Duration),
    /// The daemon closed the connection before an answer.
    #[error("the daemon closed the connection without answering")]
    Closed,
    /// The daemon closed the connection without sending a byte, where that
    /// is how it turns a client away (on TCP: a wrong token).
    #[error("the daemon closed the connection at once ({0})")]
    ClosedAtOnce(String),
    /// The answer was longer than the size cap.
    #[error("the answer is longer than {0} bytes")]
    TooLong(usize),
}

impl OneShotError {
    /// Whether trying again a little later may succeed: the daemon was not
    /// there, slow or busy, rather than giving an answer too long to read.
    pub fn is_transient(&self) -> bool {
        !matches!(self, OneShotError::TooLong(_))
    }
}

/// One exchange with the daemon at an endpoint, and the time it may take.
#[derive(Debug, Clone, Copy)]
pub struct OneShot<'a> {
    endpoint: &'a Endpoint,
    /// The time the whole exchange may take, connect included.
    budget: Duration,
}

impl<'a> OneShot<'a> {
    /// An exchange with the daemon at `endpoint`, taking at most `budget`
    /// in all.
    pub fn new(endpoint: &'a Endpoint, budget: Duration) -> Self {
        OneShot { endpoint, budget }
    }

    /// Writes `message` (one line, newline included) and returns what
    /// `answer` makes of the first line it accepts; lines it refuses
    /// (`None`) are skipped. At most `max_line` bytes and a newline are
    /// read: a longer answer is [`OneShotError::TooLong`].
    pub async fn ask<T>(
        &self,
        message: &[u8],
        max_line: usize,
        answer: impl FnMut(&[u8]) -> Option<T>,
    ) -> Result<T, OneShotError> {
        self.within_budget(self.ask_unbounded(message, max_line, answer))
            .await
    }

    /// Writes `message` (one line, newline included) and waits for the
    /// daemon to close the connection: it has then read the message.
    /// Whatever it writes back is read and dropped.
    pub async fn tell(&self, message: &[u8]) -> Result<(), OneShotError> {
        self.within_budget(self.tell_unbounded(message)).await
    }

    async fn within_budget<T>(
        &self,
        exchange: impl Future<Output = Result<T, OneShotError>>,
    ) -> Result<T, OneShotError> {
        match tokio::time::timeout(self.budget, exchange).await {
            Ok(outcome) => outcome,
            Err(_) => Err(OneShotError::TimedOut(self.budget)),
        }
    }

    /// Connects, writes `message` and closes the writing side.
    async fn send(&self, message: &[u8]) -> Result<DaemonStream, OneShotError> {
        let mut stream = self.endpoint.connect(self.budget).await?;
        stream.write_all(message).await?;
        stream.shutdown().await?;
        Ok(stream)
    }

    async fn ask_unbounded<T>(
        &self,
        message: &[u8],
        max_line: usize,
        mut answer: impl FnMut(&[u8]) -> Option<T>,
    ) -> Result<T, OneShotError> {
        let stream = self.send(message).await?;
        // One line and its newline at most: a longer answer ends the read
        // at the cap and is reported as too long.
        let cap = u64::try_from(max_line)
            .unwrap_or(u64::MAX)
            .saturating_add(1);
        let mut lines = FramedRead::new(stream.take(cap), LineCodec::new(max_line));
        let mut heard = false;
        let ended = loop {
            match lines.next().await {
                Some(Ok(Frame::Line(line))) => {
                    heard = true;
                    if let Some(value) = answer(&line) {
                        return Ok(value);
                    }
                }
                Some(Ok(Frame::Oversized { .. })) => return Err(OneShotError::TooLong(max_line)),
                Some(Err(e)) => break OneShotError::Io(e),
                None => break OneShotError::Closed,
            }
        };
        // Closed or reset without a word: on TCP, how the daemon turns a
        // wrong token away.
        match self.endpoint.silent_close_reason() {
            Some(reason) if !heard => Err(OneShotError::ClosedAtOnce(reason)),
            _ => Err(ended),
        }
    }

    async fn tell_unbounded(&self, message: &[u8]) -> Result<(), OneShotError> {
        let mut stream = self.send(message).await?;
        let mut sink = [0u8; 256];
        while stream.read(&mut sink).await? > 0 {}
        Ok(())
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use tokio::io::{AsyncBufReadExt, BufReader};
    use tokio::net::UnixListener;

    /// What a stand-in daemon does with the one line it reads.
    enum Then {
        /// Writes these bytes and keeps the connection open.
        Answer(Vec<u8>),
        /// Reads until the wrapper's side is closed, then closes.
        CloseAfterEof,
    }

    /// A daemon at a fresh socket that accepts one connection, reads one
    /// line (which it sends back on `heard`) and does `then`.
    async fn daemon(
        then: Then,
    ) -> (
        Endpoint,
        tempfile::TempDir,
        tokio::sync::oneshot::Receiver<Vec<u8>>,
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("d.sock");
        let listener = UnixListener::bind(&path).expect("bind");
        let (heard_tx, heard) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let (stream, _) = listener.accept().await.expect("accept");
            let mut reader = BufReader::new(stream);
            let mut line = Vec::new();
            let _ = reader.read_until(b'\n', &mut line).await;
            let _ = heard_tx.send(line);
            let mut stream = reader.into_inner();
            match then {
                Then::Answer(bytes) => {
                    let _ = stream.write_all(&bytes).await;
                    std::future::pending::<()>().await;
                }
                Then::CloseAfterEof => {
                    let mut rest = Vec::new();
                    let _ = stream.read_to_end(&mut rest).await;
                }
            }
        });
        (Endpoint::Unix(path), dir, heard)
    }

    fn first_line(line: &[u8]) -> Option<Vec<u8>> {
        Some(line.to_vec())
    }

    #[tokio::test]
    async fn an_answer_line_is_given_to_the_caller() {
        let (endpoint, _dir, heard) = daemon(Then::Answer(b"{\"ok\":true}\n".to_vec())).await;
        let shot = OneShot::new(&endpoint, Duration::from_secs(20));
        let answer = shot.ask(b"{\"type\":\"status\"}\n", 1024, first_line).await;
        assert_eq!(answer.expect("answered"), b"{\"ok\":true}");
        assert_eq!(heard.await.expect("heard"), b"{\"type\":\"status\"}\n");
    }

    #[tokio::test]
    async fn lines_the_caller_refuses_are_skipped() {
        let (endpoint, _dir, _heard) = daemon(Then::Answer(b"noise\n{\"id\":1}\n".to_vec())).await;
        let shot = OneShot::new(&endpoint, Duration::from_secs(20));
        let answer = shot
            .ask(b"{}\n", 1024, |line| {
                line.starts_with(b"{").then(|| line.to_vec())
            })
            .await;
        assert_eq!(answer.expect("answered"), b"{\"id\":1}");
    }

    #[tokio::test]
    async fn an_answer_without_end_is_cut_at_the_cap() {
        let (endpoint, _dir, _heard) = daemon(Then::Answer(vec![b'x'; 4096])).await;
        let shot = OneShot::new(&endpoint, Duration::from_secs(20));
        let outcome = shot.ask(b"{}\n", 1024, first_line).await;
        assert!(
            matches!(outcome, Err(OneShotError::TooLong(1024))),
            "{outcome:?}"
        );
    }

    #[tokio::test]
    async fn a_daemon_that_never_answers_costs_the_budget() {
        let (endpoint, _dir, _heard) = daemon(Then::Answer(Vec::new())).await;
        let shot = OneShot::new(&endpoint, Duration::from_millis(50));
        let outcome = shot.ask(b"{}\n", 1024, first_line).await;
        assert!(
            matches!(outcome, Err(OneShotError::TimedOut(_))),
            "{outcome:?}"
        );
    }

    #[tokio::test]
    async fn a_daemon_that_closes_without_answering_is_closed() {
        let (endpoint, _dir, _heard) = daemon(Then::CloseAfterEof).await;
        let shot = OneShot::new(&endpoint, Duration::from_secs(20));
        let outcome = shot.ask(b"{}\n", 1024, first_line).await;
        assert!(matches!(outcome, Err(OneShotError::Closed)), "{outcome:?}");
    }

    #[tokio::test]
    async fn a_message_told_is_read_before_the_daemon_closes() {
        let (endpoint, _dir, heard) = daemon(Then::CloseAfterEof).await;
        let shot = OneShot::new(&endpoint, Duration::from_secs(20));
        shot.tell(b"{\"type\":\"session_open\"}\n")
            .await
            .expect("told");
        assert_eq!(
            heard.await.expect("heard"),
            b"{\"type\":\"session_open\"}\n"
        );
    }

    #[tokio::test]
    async fn no_daemon_is_unreachable() {
        let dir = tempfile::tempdir().expect("tempdir");
        let endpoint = Endpoint::Unix(dir.path().join("absent.sock"));
        let shot = OneShot::new(&endpoint, Duration::from_secs(20));
        let outcome = shot.tell(b"{}\n").await;
        assert!(
            matches!(outcome, Err(OneShotError::Unreachable(_))),
            "{outcome:?}"
        );
    }
}
