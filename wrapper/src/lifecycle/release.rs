//! The daemon's release, and whether it is the one whose tools are served.
//!
//! The tools served are those of the iai-mcp release installed beside the
//! wrapper (or the built-in table, 3.3.0's tools). A daemon of another
//! release, such as one left running across an upgrade, or an older one
//! still installed elsewhere, may lack tools that are listed or have tools
//! that are not. The bridge
//! asks the daemon which release it is with the `status` control message
//! as the first line of every connection it makes (docs/CONTRACT.md
//! section 4), so the question costs no connection of its own; each answer
//! is logged ([`log`], from the upgrade follower that weighs it first) and
//! a differing release warned about once
//! (docs/upgrading.md says what to do). `--check` and `iai-mcp-wrapper
//! status` ask the same question on a connection of their own with
//! [`query`].
//!
//! Everything here is best effort and bounded: the one-shot exchange has a
//! time limit and a line-length limit, a failure is logged at debug level
//! only, and nothing here touches the path of an MCP answer.

use std::time::Duration;

use crate::bridge::wire::STATUS_REQUEST;
use crate::bridge::{DaemonStatus, StatusError};
use crate::log_names as event;
use crate::transport::{Endpoint, OneShot, OneShotError};

/// How long one status exchange (connect, ask, answer) may take in all.
pub const STATUS_BUDGET: Duration = Duration::from_secs(2);

/// Longest status answer read, newline excluded; the real daemon's is well
/// under 2 KiB. A longer one is not read further.
pub const MAX_STATUS_LINE: usize = 64 * 1024;

/// Why the daemon's release could not be learnt.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// The exchange itself failed: no connection, no answer in time, the
    /// connection closed, or an answer longer than [`MAX_STATUS_LINE`].
    #[error(transparent)]
    Exchange(#[from] OneShotError),
    /// The answer names no release the wrapper can read.
    #[error(transparent)]
    Answer(#[from] StatusError),
}

/// Asks the daemon at `endpoint` which release it is, within `budget`:
/// one `status` control message on a connection of its own, its first
/// answer line read ([`OneShot::ask`]).
pub async fn query(endpoint: &Endpoint, budget: Duration) -> Result<String, QueryError> {
    OneShot::new(endpoint, budget)
        .ask(STATUS_REQUEST, MAX_STATUS_LINE, |line| {
            Some(release_in(line))
        })
        .await?
}

/// The release named by one status answer line (without its newline).
fn release_in(line: &[u8]) -> Result<String, QueryError> {
    let status = DaemonStatus::read(line)?;
    Ok(status.release()?.to_owned())
}

/// The warning for a daemon of release `daemon` when the tools served are
/// release `served`'s: what differs, what it means for the tools, and what
/// to do.
pub fn mismatch_warning(daemon: &str, served: &str) -> String {
    format!(
        "the iai-mcp daemon is release {daemon}; the tools served are iai-mcp {served}'s: \
         tools the daemon lacks answer with an error, tools it has beyond them are not listed \
         (restart the daemon from the release installed, or see docs/upgrading.md)"
    )
}

/// What a status query found, said for people (`--check`,
/// `iai-mcp-wrapper status`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// The daemon is the release whose tools are served: nothing to warn
    /// about.
    pub matches: bool,
    /// The daemon's release (or why it is unknown) beside the served one's,
    /// e.g. `3.2.3 (tools served: 3.3.0's: differs, see docs/upgrading.md)`.
    pub text: String,
}

/// Says what `outcome` means for the tools served, release `served`'s.
pub fn summarize(outcome: &Result<String, QueryError>, served: &str) -> Summary {
    match outcome {
        Ok(daemon) if daemon == served => Summary {
            matches: true,
            text: format!("{daemon} (tools served: {served}'s)"),
        },
        Ok(daemon) => Summary {
            matches: false,
            text: format!("{daemon} (tools served: {served}'s: differs, see docs/upgrading.md)"),
        },
        Err(e) => unknown(&e.to_string(), served),
    }
}

/// The summary when the release could not be asked: `why` says why.
pub fn unknown(why: &str, served: &str) -> Summary {
    Summary {
        matches: false,
        text: format!("unknown, {why} (tools served: {served}'s)"),
    }
}

/// The differing releases already warned about, so that each is warned
/// about once per process however often the wrapper reconnects.
#[derive(Debug, Default)]
pub struct Warned {
    pairs: Vec<(String, String)>,
}

impl Warned {
    /// Records the daemon's release `daemon` beside the served `served`;
    /// true the first time the pair is seen.
    pub fn first_time(&mut self, daemon: &str, served: &str) -> bool {
        let pair = (daemon.to_owned(), served.to_owned());
        if self.pairs.contains(&pair) {
            return false;
        }
        self.pairs.push(pair);
        true
    }
}

/// Logs what one status answer found as a `daemon_release` event, beside
/// the release whose tools are served (`served`): a warning the first time
/// a daemon of another release is seen, info for the served release or
/// one already warned about, debug when the release is unknown.
pub fn log(outcome: &Result<String, QueryError>, served: &str, warned: &mut Warned) {
    match outcome {
        Ok(daemon) if daemon == served => tracing::info!(
            event = event::DAEMON_RELEASE,
            daemon = daemon.as_str(),
            served,
            "the daemon is release {daemon}, whose tools are served"
        ),
        Ok(daemon) if warned.first_time(daemon, served) => tracing::warn!(
            event = event::DAEMON_RELEASE,
            daemon = daemon.as_str(),
            served,
            "{}",
            mismatch_warning(daemon, served)
        ),
        Ok(daemon) => tracing::info!(
            event = event::DAEMON_RELEASE,
            daemon = daemon.as_str(),
            served,
            "the daemon is still release {daemon} (tools served: {served}'s; warned already)"
        ),
        Err(e) => tracing::debug!(
            event = event::DAEMON_RELEASE,
            served,
            reason = %e,
            "the daemon's release is unknown: {e}"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(unix)]
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    #[test]
    fn the_version_member_is_the_release_and_anything_else_is_unknown() {
        let parsed = |line: &str| release_in(line.as_bytes());
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
                matches!(e, QueryError::Answer(StatusError::NoRelease)),
                no_release,
                "{line}: {e:?}"
            );
        }
        let long = format!(r#"{{"version": "{}"}}"#, "9".repeat(65));
        assert!(matches!(
            parsed(&long),
            Err(QueryError::Answer(StatusError::Unreadable))
        ));
    }

    #[test]
    fn each_differing_release_is_warned_about_once() {
        let mut warned = Warned::default();
        assert!(warned.first_time("3.2.3", "3.3.0"));
        assert!(!warned.first_time("3.2.3", "3.3.0"));
        assert!(warned.first_time("3.4.0", "3.3.0"));
        assert!(!warned.first_time("3.2.3", "3.3.0"));
        // The same daemon beside another surface is news.
        assert!(warned.first_time("3.2.3", "3.4.0"));
    }

    #[test]
    fn the_warning_names_both_releases_and_the_upgrade_page() {
        let text = mismatch_warning("3.2.3", "3.3.0");
        assert!(
            text.starts_with(
                "the iai-mcp daemon is release 3.2.3; the tools served are iai-mcp 3.3.0's"
            ),
            "{text}"
        );
        assert!(text.contains("docs/upgrading.md"), "{text}");
    }

    #[test]
    fn summaries_put_the_daemon_release_beside_the_served_one() {
        let same = summarize(&Ok("3.3.0".to_owned()), "3.3.0");
        assert_eq!(
            (same.matches, same.text.as_str()),
            (true, "3.3.0 (tools served: 3.3.0's)")
        );
        let other = summarize(&Ok("3.2.3".to_owned()), "3.3.0");
        assert_eq!(
            (other.matches, other.text.as_str()),
            (
                false,
                "3.2.3 (tools served: 3.3.0's: differs, see docs/upgrading.md)"
            )
        );
        let unknown = summarize(&Err(QueryError::Answer(StatusError::NoRelease)), "3.0.0");
        assert_eq!(
            unknown.text,
            "unknown, the daemon does not report its release (tools served: 3.0.0's)"
        );
    }

    // A daemon of one answer, on a Unix socket.
    #[cfg(unix)]
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

    #[cfg(unix)]
    #[tokio::test]
    async fn a_status_answer_gives_the_release() {
        let (endpoint, _dir) =
            serve_once(b"{\"ok\":true,\"state\":\"WAKE\",\"version\":\"3.2.3\"}\n".to_vec()).await;
        let release = query(&endpoint, Duration::from_secs(20)).await;
        assert_eq!(release.ok().as_deref(), Some("3.2.3"));
    }

    #[cfg(unix)]
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
