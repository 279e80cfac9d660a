//! The daemon's release, and whether the tool table describes it.
//!
//! The tool table (`tools/surface.json`) is iai-mcp 3.3.0's
//! ([`tools::SURFACE_RELEASE`]). A daemon of another release, such as one
//! `iai-mcp self-update` installed and restarted under a running wrapper,
//! may lack tools the table lists or have tools it does not. The wrapper
//! asks the daemon which release it is with the `status` control message
//! (docs/CONTRACT.md section 4) on a separate short-lived connection after
//! the first connect and after every reconnect, and warns once per
//! differing release (docs/upgrading.md says what to do). `--check` and
//! `iai-mcp-wrapper status` ask the same question with [`query`].
//!
//! Everything here is best effort and bounded: the exchange has a time
//! limit and a line-length limit, its failure is logged at debug level
//! only, and it never touches the path of an MCP answer.

use std::time::Duration;

use serde::Deserialize;
use tokio::sync::watch;

use crate::bridge::LinkStatus;
use crate::logging::event;
use crate::tools;
use crate::transport::{Endpoint, OneShot, OneShotError};

/// How long one status exchange (connect, ask, answer) may take in all.
pub const STATUS_BUDGET: Duration = Duration::from_secs(2);

/// Longest status answer read, newline excluded; the real daemon's is well
/// under 2 KiB. A longer one is not read further.
pub const MAX_STATUS_LINE: usize = 64 * 1024;

/// Longest release name taken as one (PEP 440 versions are short).
const MAX_RELEASE_LEN: usize = 64;

/// The control message that asks the daemon for its status.
const STATUS_REQUEST: &[u8] = b"{\"type\":\"status\"}\n";

/// Why the daemon's release could not be learnt.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// The exchange itself failed: no connection, no answer in time, the
    /// connection closed, or an answer longer than [`MAX_STATUS_LINE`].
    #[error(transparent)]
    Exchange(#[from] OneShotError),
    /// The answer is not a JSON object whose `version`, if any, is a
    /// string, or its `version` is no plausible release name.
    #[error("the answer is not a status reply the wrapper can read")]
    Unreadable,
    /// The answer has no `version` (a daemon that does not report it).
    #[error("the daemon does not report its release")]
    NoRelease,
}

impl QueryError {
    /// Whether asking again a little later may get an answer: the daemon
    /// was not there, slow or busy (a daemon just restarted by `iai-mcp
    /// self-update` may be all three), rather than an answer it gave.
    pub fn is_transient(&self) -> bool {
        match self {
            QueryError::Exchange(e) => e.is_transient(),
            QueryError::Unreadable | QueryError::NoRelease => false,
        }
    }
}

/// The pauses before asking again after a transient failure, for one
/// connection: the daemon gets about ten seconds in all to answer.
const RETRY_PAUSES: [Duration; 3] = [
    Duration::from_secs(1),
    Duration::from_secs(3),
    Duration::from_secs(5),
];

/// The member of the daemon's status answer the wrapper reads; every other
/// member is skipped.
#[derive(Debug, Deserialize)]
struct StatusReply {
    #[serde(default)]
    version: Option<String>,
}

/// Asks the daemon at `endpoint` which release it is, within `budget`:
/// one `status` control message on a connection of its own, its first
/// answer line read ([`OneShot::ask`]).
pub async fn query(endpoint: &Endpoint, budget: Duration) -> Result<String, QueryError> {
    OneShot::new(endpoint, budget)
        .ask(STATUS_REQUEST, MAX_STATUS_LINE, |line| Some(parse(line)))
        .await?
}

/// The release named by one status answer line (without its newline).
fn parse(line: &[u8]) -> Result<String, QueryError> {
    let reply: StatusReply = serde_json::from_slice(line).map_err(|_| QueryError::Unreadable)?;
    match reply.version {
        None => Err(QueryError::NoRelease),
        Some(v) if v.is_empty() => Err(QueryError::NoRelease),
        Some(v) if v.len() > MAX_RELEASE_LEN || v.chars().any(char::is_control) => {
            Err(QueryError::Unreadable)
        }
        Some(v) => Ok(v),
    }
}

/// Whether `daemon` is the release the tool table describes.
pub fn matches_table(daemon: &str) -> bool {
    daemon == tools::SURFACE_RELEASE
}

/// The warning for a daemon of release `daemon` when it is not the table's:
/// what differs, what it means for the tools, and where to read on.
pub fn mismatch_warning(daemon: &str) -> String {
    format!(
        "the iai-mcp daemon is release {daemon}; this wrapper's tool table describes {table}: \
         tools the daemon lacks answer with an error, tools it added are not listed \
         (update the wrapper; see docs/upgrading.md)",
        table = tools::SURFACE_RELEASE
    )
}

/// What a status query found, said for people (`--check`,
/// `iai-mcp-wrapper status`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// The daemon is the table's release: nothing to warn about.
    pub matches: bool,
    /// The daemon's release (or why it is unknown) beside the table's,
    /// e.g. `3.2.3 (tool table: 3.3.0: differs, see docs/upgrading.md)`.
    pub text: String,
}

/// Says what `outcome` means for this wrapper's tool table.
pub fn summarize(outcome: &Result<String, QueryError>) -> Summary {
    let table = tools::SURFACE_RELEASE;
    match outcome {
        Ok(daemon) if matches_table(daemon) => Summary {
            matches: true,
            text: format!("{daemon} (tool table: {table})"),
        },
        Ok(daemon) => Summary {
            matches: false,
            text: format!("{daemon} (tool table: {table}: differs, see docs/upgrading.md)"),
        },
        Err(e) => unknown(&e.to_string()),
    }
}

/// The summary when the release could not be asked: `why` says why.
pub fn unknown(why: &str) -> Summary {
    Summary {
        matches: false,
        text: format!("unknown, {why} (tool table: {})", tools::SURFACE_RELEASE),
    }
}

/// The differing releases already warned about, so that each is warned
/// about once per process however often the wrapper reconnects.
#[derive(Debug, Default)]
pub struct Warned {
    releases: Vec<String>,
}

impl Warned {
    /// Records `daemon`; true the first time it is seen.
    pub fn first_time(&mut self, daemon: &str) -> bool {
        if self.releases.iter().any(|r| r == daemon) {
            return false;
        }
        self.releases.push(daemon.to_owned());
        true
    }
}

/// Logs what one status query found as a `daemon_release` event: a warning
/// the first time a release other than the table's is seen, info for the
/// table's own release or one already warned about, debug when the release
/// is unknown.
pub fn log(outcome: &Result<String, QueryError>, warned: &mut Warned) {
    let table = tools::SURFACE_RELEASE;
    match outcome {
        Ok(daemon) if matches_table(daemon) => tracing::info!(
            event = event::DAEMON_RELEASE,
            daemon = daemon.as_str(),
            table,
            "the daemon is release {daemon}, the one the tool table describes"
        ),
        Ok(daemon) if warned.first_time(daemon) => tracing::warn!(
            event = event::DAEMON_RELEASE,
            daemon = daemon.as_str(),
            table,
            "{}",
            mismatch_warning(daemon)
        ),
        Ok(daemon) => tracing::info!(
            event = event::DAEMON_RELEASE,
            daemon = daemon.as_str(),
            table,
            "the daemon is still release {daemon} (tool table: {table}; warned already)"
        ),
        Err(e) => tracing::debug!(
            event = event::DAEMON_RELEASE,
            table,
            reason = %e,
            "the daemon's release is unknown: {e}"
        ),
    }
}

/// Asks the daemon's release after every connection the bridge makes (the
/// first, and each reconnect: a restarted daemon may be another release),
/// logging each answer with [`log`]. A query that fails for want of an
/// answer is tried again a few times, over about ten seconds, before the
/// release is logged as unknown. Runs until the bridge is gone.
pub async fn watch(mut status: watch::Receiver<LinkStatus>, endpoint: Endpoint) {
    let mut asked_after = 0;
    let mut warned = Warned::default();
    loop {
        let Ok(connects) = status
            .wait_for(|s| s.connects > asked_after)
            .await
            .map(|s| s.connects)
        else {
            return;
        };
        asked_after = connects;
        let mut outcome = query(&endpoint, STATUS_BUDGET).await;
        for pause in RETRY_PAUSES {
            if !outcome.as_ref().is_err_and(QueryError::is_transient) {
                break;
            }
            // A little jitter, so that many wrappers reconnecting to one
            // restarted daemon do not all ask at once.
            let jitter = Duration::from_millis(fastrand::u64(0..250));
            tokio::time::sleep(pause + jitter).await;
            // A newer connection is asked about in the next round.
            if status.borrow().connects > asked_after {
                break;
            }
            outcome = query(&endpoint, STATUS_BUDGET).await;
        }
        log(&outcome, &mut warned);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    #[test]
    fn the_version_member_is_the_release_and_anything_else_is_unknown() {
        let parsed = |line: &str| parse(line.as_bytes());
        assert_eq!(
            parsed(r#"{"ok": true, "state": "WAKE", "uptime_sec": 1.5, "version": "3.3.0", "pending_digest": null}"#)
                .ok()
                .as_deref(),
            Some("3.3.0")
        );
        for (line, no_release) in [
            (r#"{"ok": true, "state": "WAKE"}"#, true),
            (r#"{"version": null}"#, true),
            (r#"{"version": ""}"#, true),
            (r#"{"version": 3.3}"#, false),
            (r#"{"version": ["3.3.0"]}"#, false),
            (r#"{"version": "3.3.0\n"}"#, false),
            (r#"[1, 2]"#, false),
            ("not json", false),
            ("", false),
        ] {
            let e = parsed(line).expect_err(line);
            assert_eq!(
                matches!(e, QueryError::NoRelease),
                no_release,
                "{line}: {e:?}"
            );
        }
        let long = format!(r#"{{"version": "{}"}}"#, "9".repeat(MAX_RELEASE_LEN + 1));
        assert!(matches!(parsed(&long), Err(QueryError::Unreadable)));
    }

    #[test]
    fn each_differing_release_is_warned_about_once() {
        let mut warned = Warned::default();
        assert!(warned.first_time("3.2.3"));
        assert!(!warned.first_time("3.2.3"));
        assert!(warned.first_time("3.4.0"));
        assert!(!warned.first_time("3.2.3"));
    }

    #[test]
    fn the_warning_names_both_releases_and_the_upgrade_page() {
        let text = mismatch_warning("3.2.3");
        assert!(
            text.starts_with(
                "the iai-mcp daemon is release 3.2.3; this wrapper's tool table describes 3.3.0"
            ),
            "{text}"
        );
        assert!(text.contains("docs/upgrading.md"), "{text}");
        assert!(matches_table(tools::SURFACE_RELEASE));
        assert!(!matches_table("3.2.3"));
    }

    #[test]
    fn summaries_put_the_daemon_release_beside_the_table() {
        let same = summarize(&Ok("3.3.0".to_owned()));
        assert_eq!(
            (same.matches, same.text.as_str()),
            (true, "3.3.0 (tool table: 3.3.0)")
        );
        let other = summarize(&Ok("3.2.3".to_owned()));
        assert_eq!(
            (other.matches, other.text.as_str()),
            (
                false,
                "3.2.3 (tool table: 3.3.0: differs, see docs/upgrading.md)"
            )
        );
        let unknown = summarize(&Err(QueryError::NoRelease));
        assert_eq!(
            unknown.text,
            "unknown, the daemon does not report its release (tool table: 3.3.0)"
        );
    }

    async fn serve_once(answer: Vec<u8>) -> (Endpoint, tempfile::TempDir) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("d.sock");
        let listener = tokio::net::UnixListener::bind(&path).expect("bind");
        tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.expect("accept");
            let mut question = Vec::new();
            let _ = BufReader::new(&mut stream)
                .read_until(b'\n', &mut question)
                .await;
            assert_eq!(question, STATUS_REQUEST);
            let _ = stream.write_all(&answer).await;
            // Keeps the connection open: the wrapper must not need it closed.
            std::future::pending::<()>().await;
        });
        (Endpoint::Unix(path), dir)
    }

    #[tokio::test]
    async fn a_status_answer_gives_the_release() {
        let (endpoint, _dir) =
            serve_once(b"{\"ok\":true,\"state\":\"WAKE\",\"version\":\"3.2.3\"}\n".to_vec()).await;
        let release = query(&endpoint, Duration::from_secs(20)).await;
        assert_eq!(release.ok().as_deref(), Some("3.2.3"));
    }

    #[tokio::test]
    async fn an_answer_that_never_ends_is_cut_at_the_limit() {
        let (endpoint, _dir) = serve_once(vec![b'x'; MAX_STATUS_LINE + 10]).await;
        let outcome = query(&endpoint, Duration::from_secs(20)).await;
        assert!(
            matches!(outcome, Err(QueryError::Exchange(OneShotError::TooLong(_)))),
            "{outcome:?}"
        );
    }
}
