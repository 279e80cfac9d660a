//! How the bridge's reports are written to the log: each under its stable
//! name ([`crate::log_names`], docs/CONTRACT.md section 12), with its
//! fields. The bridge hands its reports here through the
//! [`Reporter`](crate::bridge::report::Reporter) the wrapper gives it.

use crate::bridge::Event;
use crate::bridge::report::Report;
use crate::log_names::{self as event, millis};
use crate::transport::Endpoint;

/// Writes one report of the bridge dialling `endpoint`.
pub fn report(endpoint: &Endpoint, report: &Report<'_>) {
    match report {
        Report::Core(what) => core_event(endpoint, what),
        Report::Dialling {
            conn,
            attempt,
            timeout,
        } => tracing::info!(
            event = event::CONNECT_ATTEMPT,
            conn = conn.0,
            %endpoint,
            attempt = *attempt,
            timeout_ms = millis(*timeout),
            "dialling the daemon"
        ),
        Report::Watched { directories } => tracing::info!(
            event = event::ENDPOINT_WATCHED,
            %endpoint,
            directories = ?directories,
            "watching the daemon's endpoint for its return"
        ),
        Report::Looked(look) => tracing::debug!(
            event = event::ENDPOINT_LOOKED,
            %endpoint,
            why = look.why.as_str(),
            ready = look.ready,
            news = look.news,
            "looked at the daemon's endpoint"
        ),
        Report::WatchUnavailable { error } => tracing::warn!(
            event = event::ENDPOINT_WATCH_UNAVAILABLE,
            %endpoint,
            error = error.as_str(),
            "cannot watch the daemon's endpoint: dialling on the backoff"
        ),
        Report::ReadFailed { conn, error } => {
            tracing::debug!(conn = conn.0, %error, "daemon connection read failed");
        }
        Report::WriteFailed { conn, error } => {
            tracing::debug!(conn = conn.0, %error, "daemon connection write failed");
        }
    }
}

/// One event of the bridge's core: about the connection, or about a
/// call or a line.
fn core_event(endpoint: &Endpoint, what: &Event) {
    match what {
        Event::Appeared { .. }
        | Event::Awaiting { .. }
        | Event::Connected { .. }
        | Event::ConnectionLost { .. }
        | Event::ConnectFailed { .. } => link_event(endpoint, what),
        Event::CallReplayed { .. }
        | Event::ParseStreak { .. }
        | Event::Hurried { .. }
        | Event::Silent { .. }
        | Event::Unmatched { .. } => call_event(endpoint, what),
    }
}

/// One event of the bridge's core about the connection: the endpoint
/// appeared or is awaited, a connection made, lost, or failed.
fn link_event(endpoint: &Endpoint, what: &Event) {
    match what {
        Event::Appeared { dial_in } => tracing::info!(
            event = event::ENDPOINT_APPEARED,
            %endpoint,
            dial_in_ms = millis(*dial_in),
            "the daemon's endpoint appeared: dialling"
        ),
        Event::Awaiting { failures } => tracing::info!(
            event = event::ENDPOINT_AWAITED,
            %endpoint,
            failures = *failures,
            "no further connect attempt until the endpoint appears or a call arrives"
        ),
        Event::Connected { conn, reconnect } => tracing::info!(
            event = event::CONNECTED,
            conn = conn.0,
            %endpoint,
            reconnect,
            "connected to the daemon"
        ),
        Event::ConnectionLost {
            conn,
            replayed,
            failed,
            reconnecting,
        } => tracing::warn!(
            event = event::CONNECTION_LOST,
            conn = conn.0,
            %endpoint,
            replayed,
            failed,
            reconnecting,
            "daemon connection closed"
        ),
        Event::ConnectFailed {
            conn,
            failures,
            error,
            retry_in,
        } => tracing::info!(
            event = event::CONNECT_FAILED,
            conn = conn.0,
            %endpoint,
            %error,
            failures,
            retry_in_ms = retry_in.map(millis),
            "daemon connect failed"
        ),
        // The others are written by `call_event`.
        _ => {}
    }
}

/// One event of the bridge's core about a call or a line: a read sent
/// again, the parse-error streak, a call hurrying the next attempt, a
/// silent connection, a line answering no call.
fn call_event(endpoint: &Endpoint, what: &Event) {
    match what {
        Event::CallReplayed {
            call,
            method,
            sends,
        } => tracing::info!(
            event = event::CALL_REPLAYED,
            call = call.0,
            %method,
            sends,
            "a read lost with its connection was sent again"
        ),
        Event::ParseStreak { lines, call } => tracing::warn!(
            event = event::PARSE_ERROR_STREAK,
            lines,
            failed_call = call.0,
            "the daemon sent lines that are not JSON; the oldest call failed"
        ),
        Event::Hurried { earlier_by } => tracing::info!(
            event = event::CONNECT_HURRIED,
            earlier_by_ms = millis(*earlier_by),
            "a call brought the next daemon connect attempt forward"
        ),
        Event::Silent { conn } => tracing::warn!(
            event = event::DAEMON_SILENT,
            conn = conn.0,
            %endpoint,
            "the daemon sent nothing for a whole call timeout: reconnecting"
        ),
        Event::Unmatched { id } => tracing::debug!(
            event = event::UNMATCHED_REPLY,
            id = id.as_ref().map(|id| id.to_string()),
            "ignored a daemon line with no pending request"
        ),
        // The others are written by `link_event`.
        _ => {}
    }
}
