//! What the bridge tells the log, as values: the core's events and the
//! driver's own steps. The bridge writes no log line itself; whoever
//! builds it gives a [`Reporter`] (the wrapper's is
//! `logging::bridge::report`, which writes each under its stable name),
//! so the bridge depends on no part of the wrapper above it.

use std::path::PathBuf;
use std::time::Duration;

use super::core::{ConnId, Event};
use crate::endpoint_watch::Look;
use crate::transport::Endpoint;

/// One thing the bridge reports.
#[derive(Debug)]
pub enum Report<'a> {
    /// An event of the sans-IO core.
    Core(&'a Event),
    /// A connect attempt begins.
    Dialling {
        /// The attempt.
        conn: ConnId,
        /// Attempts made so far, this one included.
        attempt: u64,
        /// Its time limit.
        timeout: Duration,
    },
    /// The endpoint is watched on these directories.
    Watched {
        /// The directories.
        directories: &'a [PathBuf],
    },
    /// The watch looked at the endpoint.
    Looked(Look),
    /// No watch can be had: dialling on the backoff.
    WatchUnavailable {
        /// Why.
        error: String,
    },
    /// Reading the connection failed (it is lost next).
    ReadFailed {
        /// The connection.
        conn: ConnId,
        /// The error.
        error: &'a std::io::Error,
    },
    /// Writing the connection failed (nothing more is written to it).
    WriteFailed {
        /// The connection.
        conn: ConnId,
        /// The error.
        error: &'a std::io::Error,
    },
}

/// Writes a [`Report`] about the bridge dialling `endpoint`.
pub type Reporter = fn(&Endpoint, &Report<'_>);

/// A reporter that writes nothing (for embedders and tests that keep no
/// log).
pub fn unlogged(_: &Endpoint, _: &Report<'_>) {}
